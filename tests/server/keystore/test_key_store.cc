// KeyStore / SecretBytes tests: API rules, persistence, corruption handling, durability, hygiene.
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "key_store_test_support.h"
#include "keystore/key_store.h"
#include "keystore/record_codec.h"
#include "keystore/secret_bytes.h"
#include "keystore/secret_bytes_testing.h"
#include "spdlog/sinks/ringbuffer_sink.h"
#include "spdlog/spdlog.h"

namespace pqcd::server {
namespace {

namespace fs = std::filesystem;
using testing::RandomBytes;
using testing::Secret;
using testing::ToVec;
using testing::WriteFile;

constexpr int kAlgMlKem768 = 2;  // any int: the store does not interpret it

std::vector<uint8_t> ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<KeyRecord> ListOf(const KeyStore& ks, const std::string& owner,
                              const std::map<std::string, std::string>& selector = {}) {
  auto page = ks.List(&owner, selector, 1000, "");
  EXPECT_TRUE(page.ok()) << page.status();
  if (!page.ok()) return {};
  EXPECT_TRUE(page->next_page_token.empty());
  return page->keys;
}

// A fresh directory under $TMPDIR (or /tmp), removed at the end of the test.
class KeyStoreTest : public testing::KeyStoreDirTest {
 protected:
  KeyStoreTest() : KeyStoreDirTest('a') {}

  fs::path KeyFile(const std::string& id, uint32_t v, const std::string& owner = "o") {
    return root_ / "data" / "keys" / internal::MakeKeyFileName(owner, id, v);
  }
};

// ---- SecretBytes -------------------------------------------------------------------------------

std::atomic<int> g_release_calls{0};
std::atomic<size_t> g_released_nonzero{0};
std::atomic<size_t> g_released_bytes{0};

void RecordRelease(const uint8_t* data, size_t n) {
  size_t nonzero = 0;
  for (size_t i = 0; i < n; ++i) nonzero += data[i] != 0;
  g_release_calls++;
  g_released_nonzero += nonzero;
  g_released_bytes += n;
}

class ReleaseHookScope {
 public:
  ReleaseHookScope() {
    g_release_calls = 0;
    g_released_nonzero = 0;
    g_released_bytes = 0;
    testing::SetSecretBytesReleaseHook(&RecordRelease);
  }
  ~ReleaseHookScope() { testing::SetSecretBytesReleaseHook(nullptr); }
};

TEST(SecretBytesTest, CopiesMovesAndZeroizes) {
  ReleaseHookScope hook;
  const auto bytes = RandomBytes(100, 1);
  {
    SecretBytes a(bytes.data(), bytes.size());
    EXPECT_EQ(ToVec(a), bytes);
    SecretBytes b(std::move(a));
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(ToVec(b), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
    SecretBytes c(8);
    EXPECT_EQ(ToVec(c), std::vector<uint8_t>(8, 0));
    c = std::move(b);  // releases c's old buffer
    EXPECT_EQ(g_release_calls.load(), 1);
    EXPECT_EQ(ToVec(c), bytes);
  }
  EXPECT_EQ(g_release_calls.load(), 2);
  EXPECT_EQ(g_released_bytes.load(), 108u);
  EXPECT_EQ(g_released_nonzero.load(), 0u) << "buffer not wiped before release";
  SecretBytes empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.data(), nullptr);
}

// With RLIMIT_MEMLOCK at 0 and CAP_IPC_LOCK dropped, mlock fails: SecretBytes keeps working and
// warns exactly once. Runs in a child process so the limit, the capability and the once-flag do not
// leak into other tests.
TEST(SecretBytesTest, MlockFailureWarnsOnceAndKeepsWorking) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizer runtimes turn mlock into a no-op";
#endif
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    struct rlimit lim = {0, 0};
    if (setrlimit(RLIMIT_MEMLOCK, &lim) != 0) _exit(10);
    // Drop CAP_IPC_LOCK from the effective set (root would otherwise ignore the limit).
    __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[2] = {};
    if (syscall(SYS_capget, &hdr, caps) != 0) _exit(13);
    caps[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    if (syscall(SYS_capset, &hdr, caps) != 0) _exit(13);
    auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("child", sink));
    const auto bytes = RandomBytes(5000, 13);
    for (int i = 0; i < 3; ++i) {
      SecretBytes s(bytes.data(), bytes.size());
      if (ToVec(s) != bytes) _exit(11);
    }
    size_t warnings = 0;
    for (const auto& line : sink->last_formatted()) {
      warnings += line.find("mlock failed") != std::string::npos;
    }
    _exit(warnings == 1 ? 0 : 12);
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0)
      << "10: setrlimit, 11: bad contents, 12: not exactly one warning, 13: capget/capset";
}

// ---- in-memory rules ---------------------------------------------------------------------------

TEST(KeyStoreMemoryTest, CreateGetListVersionsDelete) {
  auto opened = KeyStore::Open(KeyStoreOptions{});
  ASSERT_TRUE(opened.ok()) << opened.status();
  KeyStore& ks = **opened;
  EXPECT_FALSE(ks.persistent());

  const auto sk1 = RandomBytes(64, 2), sk2 = RandomBytes(64, 3), sk3 = RandomBytes(64, 4);
  auto created =
      ks.Create("alice", "alpha", kAlgMlKem768, {1, 2, 3}, Secret(sk1), {{"env", "prod"}});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->version, 1u);
  EXPECT_EQ(created->owner, "alice");
  EXPECT_GT(created->created_unix_ms, 0);
  EXPECT_EQ(ToVec(*created->private_key), sk1);

  auto dup = ks.Create("alice", "alpha", kAlgMlKem768, {}, Secret(sk2), {});
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists);

  auto v2 = ks.AddVersion("alice", "alpha", {4, 5}, Secret(sk2));
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ(v2->version, 2u);
  EXPECT_EQ(v2->algorithm, kAlgMlKem768);
  EXPECT_EQ(v2->labels.at("env"), "prod");

  auto newest = ks.Get("alice", "alpha", 0);
  ASSERT_TRUE(newest.ok());
  EXPECT_EQ(newest->version, 2u);
  EXPECT_EQ(ToVec(*newest->private_key), sk2);
  EXPECT_EQ(newest->public_key, (std::vector<uint8_t>{4, 5}));
  auto first = ks.Get("alice", "alpha", 1);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(ToVec(*first->private_key), sk1);
  EXPECT_EQ(ks.Get("alice", "alpha", 3).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ks.Versions("alice", "alpha"), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(ks.size(), 2u);

  ASSERT_TRUE(ks.Create("alice", "beta", 7, {9}, Secret(sk3), {{"env", "dev"}}).ok());
  EXPECT_EQ(ListOf(ks, "alice").size(), 2u);
  auto prod = ListOf(ks, "alice", {{"env", "prod"}});
  ASSERT_EQ(prod.size(), 1u);
  EXPECT_EQ(prod[0].key_id, "alpha");
  EXPECT_EQ(prod[0].version, 2u);
  EXPECT_TRUE(ListOf(ks, "alice", {{"env", "qa"}}).empty());

  // Version numbers are not reused after deleting the newest one.
  auto del = ks.Delete("alice", "alpha", 2);
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(*del, 1u);
  EXPECT_EQ(ks.Versions("alice", "alpha"), (std::vector<uint32_t>{1}));
  auto v3 = ks.AddVersion("alice", "alpha", {6}, Secret(sk3));
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ(v3->version, 3u);
  EXPECT_EQ(ks.Delete("alice", "alpha", 2).status().code(), absl::StatusCode::kNotFound);

  auto all = ks.Delete("alice", "alpha", 0);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, 2u);
  EXPECT_EQ(ks.Get("alice", "alpha", 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(ks.Versions("alice", "alpha").empty());
  EXPECT_EQ(ks.size(), 1u);
  // The id is free again and starts over at version 1.
  auto again = ks.Create("alice", "alpha", kAlgMlKem768, {}, Secret(sk1), {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->version, 1u);
}

// Key ids are per owner: another owner neither sees alice's "k" nor is blocked from its own "k".
TEST(KeyStoreMemoryTest, KeyIdsArePerOwner) {
  auto ks = std::move(*KeyStore::Open(KeyStoreOptions{}));
  const auto sk_a = RandomBytes(32, 5), sk_b = RandomBytes(32, 6);
  ASSERT_TRUE(ks->Create("alice", "k", 1, {1}, Secret(sk_a), {}).ok());
  auto code = [](const auto& s) { return s.status().code(); };
  EXPECT_EQ(code(ks->Get("bob", "k", 0)), absl::StatusCode::kNotFound);
  EXPECT_EQ(code(ks->Get("bob", "k", 1)), absl::StatusCode::kNotFound);
  EXPECT_EQ(code(ks->AddVersion("bob", "k", {2}, Secret(RandomBytes(32, 7)))),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(code(ks->Delete("bob", "k", 0)), absl::StatusCode::kNotFound);
  // Same message as for a key that does not exist at all.
  EXPECT_EQ(ks->Get("bob", "k", 0).status().message(), "key 'k' not found");
  EXPECT_EQ(ks->Get("bob", "nope", 0).status().message(), "key 'nope' not found");
  EXPECT_TRUE(ListOf(*ks, "bob").empty());
  EXPECT_TRUE(ks->Versions("bob", "k").empty());
  // bob may create his own "k": ALREADY_EXISTS only for the same owner.
  auto bob_k = ks->Create("bob", "k", 10, {9}, Secret(sk_b), {});
  ASSERT_TRUE(bob_k.ok()) << bob_k.status();
  EXPECT_EQ(code(ks->Create("bob", "k", 10, {}, Secret(sk_b), {})),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(ToVec(*ks->Get("alice", "k", 0)->private_key), sk_a);
  EXPECT_EQ(ToVec(*ks->Get("bob", "k", 0)->private_key), sk_b);
  EXPECT_EQ(ks->Get("bob", "k", 0)->algorithm, 10);
  EXPECT_EQ(ks->KeyCount("alice"), 1u);
  EXPECT_EQ(ks->KeyCount("bob"), 1u);
  EXPECT_EQ(ks->KeyCount("carol"), 0u);
  auto owners = ks->OwnersOf("k");
  std::sort(owners.begin(), owners.end());
  EXPECT_EQ(owners, (std::vector<std::string>{"alice", "bob"}));
  ASSERT_TRUE(ks->Create("alice", "only", 1, {}, Secret(sk_a), {}).ok());
  // Every owner's keys (nullptr): ordered by (owner, key_id).
  auto all = ks->List(nullptr, {}, 0, "");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->keys.size(), 3u);
  EXPECT_EQ(all->keys[0].owner + "/" + all->keys[0].key_id, "alice/k");
  EXPECT_EQ(all->keys[1].owner + "/" + all->keys[1].key_id, "alice/only");
  EXPECT_EQ(all->keys[2].owner + "/" + all->keys[2].key_id, "bob/k");
  ASSERT_TRUE(ks->Delete("alice", "k", 0).ok());
  EXPECT_TRUE(ks->Get("bob", "k", 0).ok());
  EXPECT_EQ(ks->size(), 2u);
}

TEST(KeyStoreMemoryTest, KeyIdValidation) {
  auto ks = std::move(*KeyStore::Open(KeyStoreOptions{}));
  const std::vector<std::string> bad = {"",
                                        ".hidden",
                                        "a/b",
                                        "a b",
                                        "../x",
                                        "k\n",
                                        "caf\xc3\xa9",
                                        std::string(129, 'x'),
                                        std::string("a\0b", 3)};
  for (const auto& id : bad) {
    EXPECT_EQ(ks->Create("o", id, 1, {}, Secret(RandomBytes(32, 9)), {}).status().code(),
              absl::StatusCode::kInvalidArgument)
        << "id: " << id;
    EXPECT_EQ(ks->Get("o", id, 0).status().code(), absl::StatusCode::kInvalidArgument);
  }
  const std::vector<std::string> good = {"a", "A.b-c_9", "-x", "x.", std::string(128, 'z')};
  for (const auto& id : good) {
    EXPECT_TRUE(ks->Create("o", id, 1, {}, Secret(RandomBytes(32, 10)), {}).ok()) << id;
  }
  EXPECT_EQ(ks->Create("o", "empty", 1, {}, SecretBytes(), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Use (the per-operation lookup) shares the record's key buffers and copies the public key only
// when asked; version 0 is the newest; errors are Get's.
TEST(KeyStoreMemoryTest, UseSharesTheKeyBuffersAndCopiesOnlyWhatIsAsked) {
  auto ks = std::move(*KeyStore::Open(KeyStoreOptions{}));
  const auto sk1 = RandomBytes(64, 13), sk2 = RandomBytes(64, 14);
  ASSERT_TRUE(ks->Create("o", "k", kAlgMlKem768, {1, 2}, Secret(sk1), {{"a", "b"}}).ok());
  ASSERT_TRUE(ks->AddVersion("o", "k", {3, 4}, Secret(sk2)).ok());
  auto newest = ks->Use("o", "k", 0, /*want_public_key=*/false);
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->version, 2u);
  EXPECT_EQ(newest->algorithm, kAlgMlKem768);
  EXPECT_TRUE(newest->public_key.empty());
  EXPECT_EQ(newest->private_key, ks->Get("o", "k", 2)->private_key);  // the same buffer
  EXPECT_EQ(newest->prepared, nullptr);                               // no preparer
  auto v1 = ks->Use("o", "k", 1, /*want_public_key=*/true);
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ(v1->public_key, (std::vector<uint8_t>{1, 2}));
  EXPECT_EQ(ToVec(*v1->private_key), sk1);
  EXPECT_EQ(ks->Use("o", "k", 3, false).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ks->Use("p", "k", 0, false).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ks->Use("o", "..", 0, false).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(KeyStoreMemoryTest, InFlightKeySurvivesDeleteAndIsWipedWhenReleased) {
  ReleaseHookScope hook;
  auto ks = std::move(*KeyStore::Open(KeyStoreOptions{}));
  const auto sk = RandomBytes(64, 11);
  ASSERT_TRUE(ks->Create("o", "k", 1, {}, Secret(sk), {}).ok());
  auto held = ks->Get("o", "k", 0);
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(ks->Delete("o", "k", 0).ok());
  EXPECT_EQ(g_release_calls.load(), 0);
  EXPECT_EQ(ToVec(*held->private_key), sk);  // the request in flight still has its key
  held->private_key.reset();
  EXPECT_EQ(g_release_calls.load(), 1);
  EXPECT_EQ(g_released_bytes.load(), 64u);
  EXPECT_EQ(g_released_nonzero.load(), 0u);

  // Destroying the store wipes every held key.
  ASSERT_TRUE(ks->Create("o", "a", 1, {}, Secret(sk), {}).ok());
  ASSERT_TRUE(ks->Create("o", "b", 1, {}, Secret(sk), {}).ok());
  ks.reset();
  EXPECT_EQ(g_release_calls.load(), 3);
  EXPECT_EQ(g_released_nonzero.load(), 0u);
}

TEST(KeyStoreMemoryTest, ConcurrentReadersAndWriters) {
  auto ks = std::move(*KeyStore::Open(KeyStoreOptions{}));
  const auto sk = RandomBytes(32, 12);
  ASSERT_TRUE(ks->Create("o", "shared", 1, {}, Secret(sk), {}).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        auto r = ks->Get("o", "shared", 0);
        if (!r.ok() || ToVec(*r->private_key) != sk) bad++;
        (void)ListOf(*ks, "o");
      }
    });
  }
  for (int i = 0; i < 200; ++i) {
    std::string id = "k";
    id += std::to_string(i % 10);
    (void)ks->Create("o", id, 1, {}, Secret(sk), {});
    (void)ks->AddVersion("o", id, {}, Secret(sk));
    if (i % 3 == 0) (void)ks->Delete("o", id, 0);
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
}

// ---- persistence -------------------------------------------------------------------------------

TEST_F(KeyStoreTest, PersistenceRoundTrip) {
  const auto sk1 = RandomBytes(64, 20), sk2 = RandomBytes(4896, 21), sk3 = RandomBytes(32, 22);
  const auto pk = RandomBytes(1184, 23);
  int64_t created_ms = 0;
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    EXPECT_TRUE(ks->persistent());
    auto c = ks->Create("alice", "alpha", kAlgMlKem768, pk, Secret(sk1),
                        {{"env", "prod"}, {"team", "x"}});
    ASSERT_TRUE(c.ok()) << c.status();
    created_ms = c->created_unix_ms;
    ASSERT_TRUE(ks->AddVersion("alice", "alpha", {7}, Secret(sk2)).ok());
    ASSERT_TRUE(ks->Create("bob", "beta", 5, {8}, Secret(sk3), {}).ok());
    ASSERT_TRUE(ks->Create("bob", "gone", 5, {9}, Secret(sk3), {}).ok());
    EXPECT_TRUE(fs::exists(KeyFile("gone", 1, "bob")));
    ASSERT_TRUE(ks->Delete("bob", "gone", 0).ok());
    EXPECT_FALSE(fs::exists(KeyFile("gone", 1, "bob")));
  }
  LoadReport rep;
  auto ks = OpenStore(&rep);
  ASSERT_TRUE(ks);
  EXPECT_EQ(rep.loaded, 3u);
  EXPECT_EQ(rep.corrupted, 0u);
  EXPECT_TRUE(rep.problems.empty());
  EXPECT_EQ(ks->size(), 3u);
  auto v1 = ks->Get("alice", "alpha", 1);
  ASSERT_TRUE(v1.ok()) << v1.status();
  EXPECT_EQ(v1->algorithm, kAlgMlKem768);
  EXPECT_EQ(v1->owner, "alice");
  EXPECT_EQ(v1->public_key, pk);
  EXPECT_EQ(v1->created_unix_ms, created_ms);
  EXPECT_EQ(v1->labels, (std::map<std::string, std::string>{{"env", "prod"}, {"team", "x"}}));
  EXPECT_EQ(ToVec(*v1->private_key), sk1);
  auto v2 = ks->Get("alice", "alpha", 0);
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->version, 2u);
  EXPECT_EQ(ToVec(*v2->private_key), sk2);
  EXPECT_EQ(ks->Get("bob", "alpha", 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ToVec(*ks->Get("bob", "beta", 0)->private_key), sk3);
  EXPECT_EQ(ks->Get("bob", "gone", 0).status().code(), absl::StatusCode::kNotFound);
  // New versions continue after the persisted ones.
  EXPECT_EQ(ks->AddVersion("alice", "alpha", {}, Secret(sk1))->version, 3u);
}

// Version numbers are not reused across restarts: the sealed manifest keeps each key's highest
// version; a key deleted as a whole frees its id (it starts again at version 1).
TEST_F(KeyStoreTest, DeletedNewestVersionNumberIsNotReusedAfterRestart) {
  const auto sk = RandomBytes(32, 24);
  const fs::path keys = root_ / "data" / "keys";
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("o", "k", 5, {}, Secret(sk), {}).ok());
    ASSERT_EQ(ks->AddVersion("o", "k", {}, Secret(sk))->version, 2u);
    ASSERT_EQ(ks->AddVersion("o", "k", {}, Secret(sk))->version, 3u);
    ASSERT_TRUE(ks->Delete("o", "k", 3).ok());
    EXPECT_FALSE(fs::exists(KeyFile("k", 3)));
    ASSERT_TRUE(ks->Delete("o", "k", 2).ok());
  }
  {
    LoadReport rep;
    auto ks = OpenStore(&rep);
    ASSERT_TRUE(ks);
    EXPECT_EQ(rep.loaded, 1u);
    EXPECT_TRUE(rep.problems.empty());
    auto v = ks->AddVersion("o", "k", {}, Secret(sk));
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(v->version, 4u);  // not 2 or 3 again
    ASSERT_TRUE(ks->Delete("o", "k", 4).ok());
  }
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    EXPECT_EQ(ks->AddVersion("o", "k", {}, Secret(sk))->version, 5u);
    ASSERT_TRUE(ks->Delete("o", "k", 0).ok());  // the whole key: its id is free again
  }
  LoadReport rep;
  auto ks = OpenStore(&rep);
  ASSERT_TRUE(ks);
  EXPECT_TRUE(rep.problems.empty());
  EXPECT_EQ(ks->Create("o", "k", 5, {}, Secret(sk), {})->version, 1u);
  // Only the records and the manifest are left (no markers).
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(keys)) files += e.is_regular_file();
  EXPECT_EQ(files, 2u);
}

TEST_F(KeyStoreTest, FilesHoldNoPlaintextPrivateKeyAndArePrivate) {
  const auto sk = RandomBytes(64, 30);
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("o", "k", 1, {}, Secret(sk), {}).ok());
    ASSERT_TRUE(ks->AddVersion("o", "k", {}, Secret(sk)).ok());
  }
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(root_ / "data")) {
    if (!e.is_regular_file()) continue;
    ++files;
    const auto raw = ReadFile(e.path());
    // No 8-byte window of the key appears anywhere in any file.
    for (size_t off = 0; off + 8 <= sk.size(); off += 8) {
      EXPECT_EQ(std::search(raw.begin(), raw.end(), sk.begin() + off, sk.begin() + off + 8),
                raw.end())
          << e.path() << " contains private key bytes at key offset " << off;
    }
  }
  EXPECT_EQ(files, 4u);  // two records + the owner's manifest + LOCK
  const auto mode = fs::status(KeyFile("k", 1)).permissions();
  EXPECT_EQ(mode & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
  // The same key sealed twice gives different ciphertexts (fresh nonces).
  EXPECT_NE(ReadFile(KeyFile("k", 1)), ReadFile(KeyFile("k", 2)));
}

// A FIFO planted in place of a record, the MANIFEST or the KEK file does not block Open (it would
// wait for a writer forever, with SIGTERM blocked in the daemon): it is refused as not a regular
// file. Each Open runs with a limit; if it blocks, the test opens the FIFO for writing to free it.
TEST_F(KeyStoreTest, FifosInPlaceOfFilesDoNotBlockOpen) {
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("o", "k", 1, {}, Secret(RandomBytes(32, 45)), {}).ok());
    ASSERT_TRUE(ks->Create("o", "keep", 1, {}, Secret(RandomBytes(32, 46)), {}).ok());
  }
  auto open_bounded = [&](const fs::path& fifo, LoadReport* rep) {
    auto opened = std::async(std::launch::async, [&] { return KeyStore::Open(options_, rep); });
    if (opened.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      ADD_FAILURE() << "KeyStore::Open blocked on the FIFO " << fifo;
      const int w = open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);  // frees the reader
      if (w >= 0) close(w);
    }
    return opened.get();
  };
  auto plant_fifo = [](const fs::path& p) {
    fs::path saved = p;
    saved += ".saved";
    fs::rename(p, saved);
    EXPECT_EQ(mkfifo(p.c_str(), 0600), 0) << p;
    return saved;
  };
  auto restore = [](const fs::path& p, const fs::path& saved) {
    fs::remove(p);
    fs::rename(saved, p);
  };

  // A record: Open goes on without it and says why; the other key is served.
  const fs::path record = KeyFile("k", 1);
  fs::path saved = plant_fifo(record);
  {
    LoadReport rep;
    auto ks = open_bounded(record, &rep);
    if (ks.ok()) {
      EXPECT_EQ((*ks)->Get("o", "k", 1).status().code(), absl::StatusCode::kNotFound);
      EXPECT_TRUE((*ks)->Get("o", "keep", 1).ok());
      EXPECT_FALSE(rep.problems.empty() && rep.missing.empty());
    } else {
      EXPECT_NE(ks.status().message().find("not a regular file"), std::string::npos) << ks.status();
    }
  }
  restore(record, saved);

  // The owner's manifest file: Open fails with the reason.
  const fs::path manifest = root_ / "data" / "keys" / internal::MakeManifestShardName("o");
  ASSERT_TRUE(fs::exists(manifest));
  saved = plant_fifo(manifest);
  {
    auto ks = open_bounded(manifest, nullptr);
    ASSERT_FALSE(ks.ok());
    EXPECT_NE(ks.status().message().find("not a regular file"), std::string::npos) << ks.status();
  }
  restore(manifest, saved);

  // The KEK file: refused with its name.
  saved = plant_fifo(kek_path_);
  {
    auto ks = open_bounded(kek_path_, nullptr);
    ASSERT_FALSE(ks.ok());
    EXPECT_NE(ks.status().message().find("not a regular file"), std::string::npos) << ks.status();
  }
  restore(kek_path_, saved);
  EXPECT_TRUE(OpenStore());
}

TEST_F(KeyStoreTest, WrongKekFailsOpenWithClearError) {
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("o", "a", 1, {}, Secret(RandomBytes(32, 40)), {}).ok());
    ASSERT_TRUE(ks->Create("o", "b", 1, {}, Secret(RandomBytes(32, 41)), {}).ok());
  }
  WriteFile(kek_path_, std::string(64, 'b'));
  LoadReport rep;
  auto s = KeyStore::Open(options_, &rep);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("wrong KEK?"), std::string::npos) << s.status();

  // An empty store opens with any KEK.
  options_.data_dir = (root_ / "other").string();
  EXPECT_TRUE(KeyStore::Open(options_).ok());
}

TEST_F(KeyStoreTest, KekFileFormats) {
  // The same 32 bytes as raw bytes, as hex with CRLF, and as upper-case hex all open the store.
  const auto kek = RandomBytes(32, 50);
  std::string raw(kek.begin(), kek.end()), hex;
  for (uint8_t b : kek) {
    static const char* digits = "0123456789abcdef";
    hex += digits[b >> 4];
    hex += digits[b & 15];
  }
  WriteFile(kek_path_, raw);
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("o", "a", 1, {}, Secret(RandomBytes(32, 51)), {}).ok());
  }
  std::string upper = hex;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  for (const std::string& form : {hex, hex + "\n", hex + "\r\n", upper}) {
    WriteFile(kek_path_, form);
    LoadReport rep;
    auto ks = OpenStore(&rep);
    ASSERT_TRUE(ks);
    EXPECT_EQ(rep.loaded, 1u);
  }
  // Wrong size or bad characters: a clear error that does not echo the contents.
  for (const std::string& form : {std::string(31, 'x'), std::string(33, 'x'), hex.substr(0, 62),
                                  hex + "\n\n", hex.substr(0, 63) + "g", std::string()}) {
    WriteFile(kek_path_, form);
    auto s = KeyStore::Open(options_);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << s.status();
    EXPECT_NE(s.status().message().find("32 raw bytes or 64 hex"), std::string::npos);
    EXPECT_EQ(s.status().message().find(hex.substr(0, 16)), std::string::npos);
  }
  // Missing KEK file / missing option.
  fs::remove(kek_path_);
  EXPECT_EQ(KeyStore::Open(options_).status().code(), absl::StatusCode::kFailedPrecondition);
  options_.kek_file.clear();
  EXPECT_EQ(KeyStore::Open(options_).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(KeyStoreTest, GroupReadableKekWarnsAndNoSecretIsLogged) {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);
  auto logger = std::make_shared<spdlog::logger>("test", sink);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  const std::string hex_kek = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  WriteFile(kek_path_, hex_kek + "\n",
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  options_.allow_shared_kek_file = true;  // otherwise refused (KekFileWithGroupBitsIsRefused)
  const auto sk = RandomBytes(64, 60);
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("o", "k", 1, {}, Secret(sk), {}).ok());
  }
  fs::resize_file(KeyFile("k", 1), 20);
  (void)KeyStore::Open(options_);
  spdlog::set_default_logger(previous);

  bool warned = false;
  const auto lines = sink->last_formatted();
  std::string sk_hex;
  for (uint8_t b : sk) {
    char buf[3];
    std::snprintf(buf, sizeof buf, "%02x", b);
    sk_hex += buf;
  }
  for (const auto& line : lines) {
    if (line.find("group or others") != std::string::npos) warned = true;
    EXPECT_EQ(line.find(hex_kek.substr(0, 8)), std::string::npos) << line;
    EXPECT_EQ(line.find(sk_hex.substr(0, 8)), std::string::npos) << line;
  }
  EXPECT_TRUE(warned);
}

TEST_F(KeyStoreTest, CorruptedAndTruncatedRecordsAreReportedOthersLoad) {
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    for (const char* id : {"good", "flipped", "flipmeta", "short"}) {
      ASSERT_TRUE(ks->Create("o", id, 1, {1, 2, 3}, Secret(RandomBytes(64, 70)), {}).ok());
    }
  }
  auto flip = [](const fs::path& p, size_t from_end) {
    auto raw = ReadFile(p);
    raw[raw.size() - from_end] ^= 0x01;
    WriteFile(p, std::string(raw.begin(), raw.end()));
  };
  flip(KeyFile("flipped", 1), 30);  // inside the ciphertext
  {
    auto raw = ReadFile(KeyFile("flipmeta", 1));
    raw[40] ^= 0x80;  // inside the metadata (AAD)
    WriteFile(KeyFile("flipmeta", 1), std::string(raw.begin(), raw.end()));
  }
  fs::resize_file(KeyFile("short", 1), fs::file_size(KeyFile("short", 1)) / 2);

  LoadReport rep;
  auto ks = OpenStore(&rep);
  ASSERT_TRUE(ks);
  EXPECT_EQ(rep.loaded, 1u);
  EXPECT_EQ(rep.corrupted, 3u);
  EXPECT_EQ(rep.missing.size(), 3u);  // the manifest lists them
  ASSERT_EQ(rep.problems.size(), 6u);
  std::string all;
  for (const auto& p : rep.problems) all += p + "\n";
  EXPECT_NE(all.find("flipped.v1.key: authentication failed"), std::string::npos) << all;
  EXPECT_NE(all.find("flipmeta.v1.key: authentication failed"), std::string::npos) << all;
  EXPECT_NE(all.find("short.v1.key: truncated"), std::string::npos) << all;
  EXPECT_TRUE(ks->Get("o", "good", 0).ok());
  EXPECT_EQ(ks->Get("o", "flipped", 0).status().code(), absl::StatusCode::kNotFound);
  // A damaged record is not silently overwritten by a new key with the same id.
  EXPECT_EQ(ks->Create("o", "short", 1, {}, Secret(RandomBytes(32, 71)), {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// The manifest proves the KEK right: a store whose only record is damaged opens, and reports it.
TEST_F(KeyStoreTest, EveryRecordCorruptedIsReportedNotFatal) {
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("o", "only", 1, {}, Secret(RandomBytes(32, 80)), {}).ok());
  }
  auto raw = ReadFile(KeyFile("only", 1));
  raw.back() ^= 1;  // the tag
  WriteFile(KeyFile("only", 1), std::string(raw.begin(), raw.end()));
  LoadReport rep;
  auto ks = OpenStore(&rep);
  ASSERT_TRUE(ks);
  EXPECT_EQ(rep.loaded, 0u);
  EXPECT_EQ(rep.corrupted, 1u);
  ASSERT_EQ(rep.missing.size(), 1u);
  EXPECT_EQ(rep.missing[0], "owner 'o' key 'only' v1");
}

TEST_F(KeyStoreTest, RenamedRecordIsRejected) {
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("o", "a", 1, {}, Secret(RandomBytes(32, 90)), {}).ok());
    ASSERT_TRUE(ks->Create("o", "b", 1, {}, Secret(RandomBytes(32, 91)), {}).ok());
  }
  fs::rename(KeyFile("b", 1), KeyFile("c", 1));
  LoadReport rep;
  auto ks = OpenStore(&rep);
  ASSERT_TRUE(ks);
  EXPECT_EQ(rep.loaded, 1u);
  EXPECT_EQ(rep.corrupted, 1u);
  EXPECT_EQ(ks->Get("o", "c", 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ks->Get("o", "b", 0).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(KeyStoreTest, LeftoverTempFilesAreIgnoredAndRemoved) {
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("o", "a", 1, {}, Secret(RandomBytes(32, 100)), {}).ok());
  }
  const fs::path tmp = root_ / "data" / "keys" / ".tmp-0123456789abcdef";
  WriteFile(tmp, "PQKS half-written garbage");
  WriteFile(root_ / "data" / "keys" / "README", "not a record");  // ignored, not counted
  LoadReport rep;
  auto ks = OpenStore(&rep);
  ASSERT_TRUE(ks);
  EXPECT_EQ(rep.loaded, 1u);
  EXPECT_EQ(rep.corrupted, 0u);
  EXPECT_EQ(rep.temp_files_removed, 1u);
  EXPECT_FALSE(fs::exists(tmp));
}

TEST_F(KeyStoreTest, SecondOpenOfSameDirectoryIsRefused) {
  auto ks = OpenStore();
  ASSERT_TRUE(ks);
  auto second = KeyStore::Open(options_);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  ks.reset();
  EXPECT_TRUE(KeyStore::Open(options_).ok());
}

// prepare_private_key runs once per version as it enters memory (Create, AddVersion, Open) and
// its result rides along the record; an error refuses Create/AddVersion, an unlocked result is
// dropped and counted, a loaded record that fails to prepare is kept and counted.
TEST_F(KeyStoreTest, VersionsArePreparedOnceAsTheyEnterMemory) {
  std::atomic<int> calls{0};
  // A stand-in for the registry's: the key's bytes reversed, refused for algorithm 99, left
  // unlocked for algorithm 98.
  options_.prepare_private_key = [&calls](int algorithm,
                                          const SecretBytes& sk) -> absl::StatusOr<SecretBytes> {
    ++calls;
    if (algorithm == 99) return absl::InvalidArgumentError("not a key of algorithm 99");
    const bool unlocked = algorithm == 98;
    const bool was = testing::SetMlockFailureForTesting(unlocked);
    SecretBytes out(sk.size());
    testing::SetMlockFailureForTesting(was);
    for (size_t i = 0; i < sk.size(); ++i) out.data()[i] = sk.data()[sk.size() - 1 - i];
    return out;
  };
  auto reversed = [](std::vector<uint8_t> v) {
    std::reverse(v.begin(), v.end());
    return v;
  };
  const auto sk1 = RandomBytes(64, 70), sk2 = RandomBytes(64, 71);
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    auto c = ks->Create("o", "k", kAlgMlKem768, {1}, Secret(sk1), {});
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_NE(c->prepared, nullptr);
    EXPECT_EQ(ToVec(*c->prepared), reversed(sk1));
    ASSERT_TRUE(ks->AddVersion("o", "k", {2}, Secret(sk2)).ok());
    EXPECT_EQ(calls.load(), 2);
    auto g1 = ks->Get("o", "k", 1), g2 = ks->Get("o", "k", 2);
    ASSERT_TRUE(g1.ok() && g2.ok());
    EXPECT_EQ(g1->prepared, c->prepared);  // the same buffer: nothing is prepared per use
    EXPECT_EQ(ToVec(*g2->prepared), reversed(sk2));
    EXPECT_EQ(calls.load(), 2);
    // Refused by the preparer: nothing is stored.
    auto bad = ks->Create("o", "bad", 99, {3}, Secret(sk1), {});
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(bad.status().message()).find("algorithm 99"), std::string::npos);
    EXPECT_EQ(ks->Get("o", "bad", 0).status().code(), absl::StatusCode::kNotFound);
    // Not locked: kept without a prepared form, counted.
    auto loose = ks->Create("o", "loose", 98, {4}, Secret(sk1), {});
    ASSERT_TRUE(loose.ok()) << loose.status();
    EXPECT_EQ(loose->prepared, nullptr);
    EXPECT_EQ(ks->counters().unprepared, 1u);
  }
  // Open prepares every loaded version; the preparer now refuses algorithm 5: that record is kept
  // without a prepared form (it was stored with another preparer) and counted.
  calls = 0;
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    EXPECT_EQ(calls.load(), 3);
    EXPECT_EQ(ToVec(*ks->Get("o", "k", 1)->prepared), reversed(sk1));
    EXPECT_EQ(ToVec(*ks->Get("o", "k", 2)->prepared), reversed(sk2));
    EXPECT_EQ(ks->Get("o", "loose", 0)->prepared, nullptr);
    EXPECT_EQ(ks->counters().unprepared, 1u);
  }
  options_.prepare_private_key = [](int, const SecretBytes&) -> absl::StatusOr<SecretBytes> {
    return absl::InvalidArgumentError("refused");
  };
  auto ks = OpenStore();
  ASSERT_TRUE(ks);
  auto g = ks->Get("o", "k", 2);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->prepared, nullptr);
  EXPECT_EQ(ToVec(*g->private_key), sk2);
  EXPECT_EQ(ks->counters().unprepared, 3u);
}

TEST_F(KeyStoreTest, CreatedKeySurvivesKill9) {
  const auto sk = RandomBytes(64, 110);
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(pipefd[0]);
    auto ks = KeyStore::Open(options_);
    if (!ks.ok()) _exit(2);
    if (!(*ks)->Create("o", "durable", 1, {1}, Secret(sk), {}).ok()) _exit(3);
    if (write(pipefd[1], "ok", 2) != 2) _exit(4);
    for (;;) pause();  // killed by the parent
  }
  close(pipefd[1]);
  char buf[2] = {};
  ssize_t got = 0;
  while (got < 2) {
    const ssize_t r = read(pipefd[0], buf + got, 2 - got);
    if (r <= 0) break;
    got += r;
  }
  kill(pid, SIGKILL);
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  close(pipefd[0]);
  ASSERT_EQ(got, 2) << "child failed before Create returned (exit status " << wstatus << ")";
  EXPECT_TRUE(WIFSIGNALED(wstatus));

  LoadReport rep;
  auto ks = OpenStore(&rep);  // the lock died with the child
  ASSERT_TRUE(ks);
  auto r = ks->Get("o", "durable", 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(ToVec(*r->private_key), sk);
  EXPECT_EQ(rep.corrupted, 0u);
}

}  // namespace
}  // namespace pqcd::server
