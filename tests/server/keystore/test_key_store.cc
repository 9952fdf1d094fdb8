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
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "keystore/key_store.h"
#include "keystore/secret_bytes_testing.h"
#include "spdlog/sinks/ringbuffer_sink.h"
#include "spdlog/spdlog.h"

namespace pqcd::server {
namespace {

namespace fs = std::filesystem;

constexpr int kAlgMlKem768 = 2;  // any int: the store does not interpret it

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

SecretBytes Secret(const std::vector<uint8_t>& v) {
  return SecretBytes(v.data(), v.size());
}

std::vector<uint8_t> ToVec(const SecretBytes& s) {
  return {s.data(), s.data() + s.size()};
}

std::vector<uint8_t> ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteFile(const fs::path& p, const std::string& data,
               fs::perms perms = fs::perms::owner_read | fs::perms::owner_write) {
  {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << data;
  }
  fs::permissions(p, perms);
}

// A fresh directory under $TMPDIR (or /tmp), removed at the end of the test.
class KeyStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/pqcd-keystore-XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    root_ = templ;
    kek_path_ = root_ / "kek.hex";
    WriteFile(kek_path_, std::string(64, 'a') + "\n");  // 0xaa...aa
    options_.data_dir = (root_ / "data").string();
    options_.kek_file = kek_path_.string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  std::unique_ptr<KeyStore> OpenStore(LoadReport* report = nullptr) {
    auto s = KeyStore::Open(options_, report);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  fs::path KeyFile(const std::string& id, uint32_t v) {
    return root_ / "data" / "keys" / (id + ".v" + std::to_string(v) + ".key");
  }

  fs::path root_, kek_path_;
  KeyStoreOptions options_;
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
      ks.Create("alpha", kAlgMlKem768, {1, 2, 3}, Secret(sk1), {{"env", "prod"}}, "alice");
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->version, 1u);
  EXPECT_EQ(created->owner, "alice");
  EXPECT_GT(created->created_unix_ms, 0);
  EXPECT_EQ(ToVec(*created->private_key), sk1);

  auto dup = ks.Create("alpha", kAlgMlKem768, {}, Secret(sk2), {}, "bob");
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists);

  auto v2 = ks.AddVersion("alpha", {4, 5}, Secret(sk2), "alice", false);
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ(v2->version, 2u);
  EXPECT_EQ(v2->algorithm, kAlgMlKem768);
  EXPECT_EQ(v2->labels.at("env"), "prod");

  auto newest = ks.Get("alpha", 0, "alice", false);
  ASSERT_TRUE(newest.ok());
  EXPECT_EQ(newest->version, 2u);
  EXPECT_EQ(ToVec(*newest->private_key), sk2);
  EXPECT_EQ(newest->public_key, (std::vector<uint8_t>{4, 5}));
  auto first = ks.Get("alpha", 1, "alice", false);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(ToVec(*first->private_key), sk1);
  EXPECT_EQ(ks.Get("alpha", 3, "alice", false).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ks.Versions("alpha"), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(ks.Versions("alpha", "alice", false), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(ks.size(), 2u);

  ASSERT_TRUE(ks.Create("beta", 7, {9}, Secret(sk3), {{"env", "dev"}}, "alice").ok());
  EXPECT_EQ(ks.List("alice", false, {}).size(), 2u);
  auto prod = ks.List("alice", false, {{"env", "prod"}});
  ASSERT_EQ(prod.size(), 1u);
  EXPECT_EQ(prod[0].key_id, "alpha");
  EXPECT_EQ(prod[0].version, 2u);
  EXPECT_TRUE(ks.List("alice", false, {{"env", "qa"}}).empty());

  // Version numbers are not reused after deleting the newest one.
  auto del = ks.Delete("alpha", 2, "alice", false);
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(*del, 1u);
  EXPECT_EQ(ks.Versions("alpha"), (std::vector<uint32_t>{1}));
  auto v3 = ks.AddVersion("alpha", {6}, Secret(sk3), "alice", false);
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ(v3->version, 3u);
  EXPECT_EQ(ks.Delete("alpha", 2, "alice", false).status().code(), absl::StatusCode::kNotFound);

  auto all = ks.Delete("alpha", 0, "alice", false);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, 2u);
  EXPECT_EQ(ks.Get("alpha", 0, "alice", false).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(ks.Versions("alpha").empty());
  EXPECT_EQ(ks.size(), 1u);
  // The id is free again and starts over at version 1.
  auto again = ks.Create("alpha", kAlgMlKem768, {}, Secret(sk1), {}, "bob");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->version, 1u);
}

TEST(KeyStoreMemoryTest, OwnershipHidesOtherIdentitiesKeys) {
  auto ks = std::move(*KeyStore::Open(KeyStoreOptions{}));
  ASSERT_TRUE(ks->Create("k", 1, {1}, Secret(RandomBytes(32, 5)), {}, "alice").ok());
  auto code = [](const auto& s) { return s.status().code(); };
  EXPECT_EQ(code(ks->Get("k", 0, "bob", false)), absl::StatusCode::kNotFound);
  EXPECT_EQ(code(ks->Get("k", 1, "bob", false)), absl::StatusCode::kNotFound);
  EXPECT_EQ(code(ks->AddVersion("k", {2}, Secret(RandomBytes(32, 6)), "bob", false)),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(code(ks->Delete("k", 0, "bob", false)), absl::StatusCode::kNotFound);
  // Same message as for a key that does not exist at all.
  EXPECT_EQ(ks->Get("k", 0, "bob", false).status().message(), "key 'k' not found");
  EXPECT_EQ(ks->Get("nope", 0, "bob", false).status().message(), "key 'nope' not found");
  EXPECT_TRUE(ks->List("bob", false, {}).empty());
  EXPECT_TRUE(ks->Versions("k", "bob", false).empty());
  // Create with a taken id: ALREADY_EXISTS whoever asks.
  EXPECT_EQ(code(ks->Create("k", 1, {}, Secret(RandomBytes(32, 7)), {}, "bob")),
            absl::StatusCode::kAlreadyExists);
  // Admin sees and manages everything; the owner stays alice.
  EXPECT_TRUE(ks->Get("k", 0, "root", true).ok());
  EXPECT_EQ(ks->List("root", true, {}).size(), 1u);
  auto v2 = ks->AddVersion("k", {2}, Secret(RandomBytes(32, 8)), "root", true);
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->owner, "alice");
  EXPECT_TRUE(ks->Get("k", 2, "alice", false).ok());
  EXPECT_TRUE(ks->Delete("k", 0, "root", true).ok());
  EXPECT_EQ(ks->size(), 0u);
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
    EXPECT_EQ(ks->Create(id, 1, {}, Secret(RandomBytes(32, 9)), {}, "o").status().code(),
              absl::StatusCode::kInvalidArgument)
        << "id: " << id;
    EXPECT_EQ(ks->Get(id, 0, "o", true).status().code(), absl::StatusCode::kInvalidArgument);
  }
  const std::vector<std::string> good = {"a", "A.b-c_9", "-x", "x.", std::string(128, 'z')};
  for (const auto& id : good) {
    EXPECT_TRUE(ks->Create(id, 1, {}, Secret(RandomBytes(32, 10)), {}, "o").ok()) << id;
  }
  EXPECT_EQ(ks->Create("empty", 1, {}, SecretBytes(), {}, "o").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(KeyStoreMemoryTest, InFlightKeySurvivesDeleteAndIsWipedWhenReleased) {
  ReleaseHookScope hook;
  auto ks = std::move(*KeyStore::Open(KeyStoreOptions{}));
  const auto sk = RandomBytes(64, 11);
  ASSERT_TRUE(ks->Create("k", 1, {}, Secret(sk), {}, "o").ok());
  auto held = ks->Get("k", 0, "o", false);
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(ks->Delete("k", 0, "o", false).ok());
  EXPECT_EQ(g_release_calls.load(), 0);
  EXPECT_EQ(ToVec(*held->private_key), sk);  // the request in flight still has its key
  held->private_key.reset();
  EXPECT_EQ(g_release_calls.load(), 1);
  EXPECT_EQ(g_released_bytes.load(), 64u);
  EXPECT_EQ(g_released_nonzero.load(), 0u);

  // Destroying the store wipes every held key.
  ASSERT_TRUE(ks->Create("a", 1, {}, Secret(sk), {}, "o").ok());
  ASSERT_TRUE(ks->Create("b", 1, {}, Secret(sk), {}, "o").ok());
  ks.reset();
  EXPECT_EQ(g_release_calls.load(), 3);
  EXPECT_EQ(g_released_nonzero.load(), 0u);
}

TEST(KeyStoreMemoryTest, ConcurrentReadersAndWriters) {
  auto ks = std::move(*KeyStore::Open(KeyStoreOptions{}));
  const auto sk = RandomBytes(32, 12);
  ASSERT_TRUE(ks->Create("shared", 1, {}, Secret(sk), {}, "o").ok());
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        auto r = ks->Get("shared", 0, "o", false);
        if (!r.ok() || ToVec(*r->private_key) != sk) bad++;
        (void)ks->List("o", false, {});
      }
    });
  }
  for (int i = 0; i < 200; ++i) {
    std::string id = "k";
    id += std::to_string(i % 10);
    (void)ks->Create(id, 1, {}, Secret(sk), {}, "o");
    (void)ks->AddVersion(id, {}, Secret(sk), "o", false);
    if (i % 3 == 0) (void)ks->Delete(id, 0, "o", false);
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
    auto c = ks->Create("alpha", kAlgMlKem768, pk, Secret(sk1), {{"env", "prod"}, {"team", "x"}},
                        "alice");
    ASSERT_TRUE(c.ok()) << c.status();
    created_ms = c->created_unix_ms;
    ASSERT_TRUE(ks->AddVersion("alpha", {7}, Secret(sk2), "alice", false).ok());
    ASSERT_TRUE(ks->Create("beta", 5, {8}, Secret(sk3), {}, "bob").ok());
    ASSERT_TRUE(ks->Create("gone", 5, {9}, Secret(sk3), {}, "bob").ok());
    EXPECT_TRUE(fs::exists(KeyFile("gone", 1)));
    ASSERT_TRUE(ks->Delete("gone", 0, "bob", false).ok());
    EXPECT_FALSE(fs::exists(KeyFile("gone", 1)));
  }
  LoadReport rep;
  auto ks = OpenStore(&rep);
  ASSERT_TRUE(ks);
  EXPECT_EQ(rep.loaded, 3u);
  EXPECT_EQ(rep.corrupted, 0u);
  EXPECT_TRUE(rep.problems.empty());
  EXPECT_EQ(ks->size(), 3u);
  auto v1 = ks->Get("alpha", 1, "alice", false);
  ASSERT_TRUE(v1.ok()) << v1.status();
  EXPECT_EQ(v1->algorithm, kAlgMlKem768);
  EXPECT_EQ(v1->owner, "alice");
  EXPECT_EQ(v1->public_key, pk);
  EXPECT_EQ(v1->created_unix_ms, created_ms);
  EXPECT_EQ(v1->labels, (std::map<std::string, std::string>{{"env", "prod"}, {"team", "x"}}));
  EXPECT_EQ(ToVec(*v1->private_key), sk1);
  auto v2 = ks->Get("alpha", 0, "alice", false);
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->version, 2u);
  EXPECT_EQ(ToVec(*v2->private_key), sk2);
  EXPECT_EQ(ks->Get("alpha", 0, "bob", false).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ToVec(*ks->Get("beta", 0, "bob", false)->private_key), sk3);
  EXPECT_EQ(ks->Get("gone", 0, "bob", true).status().code(), absl::StatusCode::kNotFound);
  // New versions continue after the persisted ones.
  EXPECT_EQ(ks->AddVersion("alpha", {}, Secret(sk1), "alice", false)->version, 3u);
}

// Version numbers are not reused across restarts: deleting the newest version leaves a
// .retired marker that the next Open reads; the marker goes with a newer version or the whole key.
TEST_F(KeyStoreTest, DeletedNewestVersionNumberIsNotReusedAfterRestart) {
  const auto sk = RandomBytes(32, 24);
  const fs::path keys = root_ / "data" / "keys";
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("k", 5, {}, Secret(sk), {}, "o").ok());
    ASSERT_EQ(ks->AddVersion("k", {}, Secret(sk), "o", false)->version, 2u);
    ASSERT_EQ(ks->AddVersion("k", {}, Secret(sk), "o", false)->version, 3u);
    ASSERT_TRUE(ks->Delete("k", 3, "o", false).ok());
    EXPECT_FALSE(fs::exists(KeyFile("k", 3)));
    EXPECT_TRUE(fs::exists(keys / "k.v3.retired"));
    ASSERT_TRUE(ks->Delete("k", 2, "o", false).ok());  // the marker already covers 3
    EXPECT_TRUE(fs::exists(keys / "k.v3.retired"));
  }
  {
    LoadReport rep;
    auto ks = OpenStore(&rep);
    ASSERT_TRUE(ks);
    EXPECT_EQ(rep.loaded, 1u);
    EXPECT_TRUE(rep.problems.empty());
    auto v = ks->AddVersion("k", {}, Secret(sk), "o", false);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(v->version, 4u);                        // not 2 or 3 again
    EXPECT_FALSE(fs::exists(keys / "k.v3.retired"));  // v4's record carries the number now
    ASSERT_TRUE(ks->Delete("k", 4, "o", false).ok());
    EXPECT_TRUE(fs::exists(keys / "k.v4.retired"));
    ASSERT_TRUE(ks->Delete("k", 0, "o", false).ok());  // the whole key: its id is free again
    EXPECT_FALSE(fs::exists(keys / "k.v4.retired"));
  }
  // A marker left for a key that no longer exists (a crash during a delete) is removed at Open.
  { std::ofstream(keys / "ghost.v7.retired").flush(); }
  LoadReport rep;
  auto ks = OpenStore(&rep);
  ASSERT_TRUE(ks);
  EXPECT_TRUE(rep.problems.empty());
  EXPECT_FALSE(fs::exists(keys / "ghost.v7.retired"));
  EXPECT_EQ(ks->Create("k", 5, {}, Secret(sk), {}, "o")->version, 1u);
  EXPECT_EQ(ks->Create("ghost", 5, {}, Secret(sk), {}, "o")->version, 1u);
}

TEST_F(KeyStoreTest, FilesHoldNoPlaintextPrivateKeyAndArePrivate) {
  const auto sk = RandomBytes(64, 30);
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("k", 1, {}, Secret(sk), {}, "o").ok());
    ASSERT_TRUE(ks->AddVersion("k", {}, Secret(sk), "o", false).ok());
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
  EXPECT_EQ(files, 3u);  // two records + LOCK
  const auto mode = fs::status(KeyFile("k", 1)).permissions();
  EXPECT_EQ(mode & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
  // The same key sealed twice gives different ciphertexts (fresh nonces).
  EXPECT_NE(ReadFile(KeyFile("k", 1)), ReadFile(KeyFile("k", 2)));
}

TEST_F(KeyStoreTest, WrongKekFailsOpenWithClearError) {
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("a", 1, {}, Secret(RandomBytes(32, 40)), {}, "o").ok());
    ASSERT_TRUE(ks->Create("b", 1, {}, Secret(RandomBytes(32, 41)), {}, "o").ok());
  }
  WriteFile(kek_path_, std::string(64, 'b'));
  LoadReport rep;
  auto s = KeyStore::Open(options_, &rep);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("wrong KEK?"), std::string::npos) << s.status();
  EXPECT_EQ(rep.corrupted, 2u);

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
    ASSERT_TRUE(ks->Create("a", 1, {}, Secret(RandomBytes(32, 51)), {}, "o").ok());
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
  const auto sk = RandomBytes(64, 60);
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("k", 1, {}, Secret(sk), {}, "o").ok());
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
      ASSERT_TRUE(ks->Create(id, 1, {1, 2, 3}, Secret(RandomBytes(64, 70)), {}, "o").ok());
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
  ASSERT_EQ(rep.problems.size(), 3u);
  std::string all;
  for (const auto& p : rep.problems) all += p + "\n";
  EXPECT_NE(all.find("flipped.v1.key: authentication failed"), std::string::npos) << all;
  EXPECT_NE(all.find("flipmeta.v1.key: authentication failed"), std::string::npos) << all;
  EXPECT_NE(all.find("short.v1.key: truncated"), std::string::npos) << all;
  EXPECT_TRUE(ks->Get("good", 0, "o", false).ok());
  EXPECT_EQ(ks->Get("flipped", 0, "o", false).status().code(), absl::StatusCode::kNotFound);
  // A damaged record is not silently overwritten by a new key with the same id.
  EXPECT_EQ(ks->Create("short", 1, {}, Secret(RandomBytes(32, 71)), {}, "o").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(KeyStoreTest, EveryRecordCorruptedFailsOpen) {
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("only", 1, {}, Secret(RandomBytes(32, 80)), {}, "o").ok());
  }
  auto raw = ReadFile(KeyFile("only", 1));
  raw.back() ^= 1;  // the tag
  WriteFile(KeyFile("only", 1), std::string(raw.begin(), raw.end()));
  auto s = KeyStore::Open(options_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("wrong KEK?"), std::string::npos);
}

TEST_F(KeyStoreTest, RenamedRecordIsRejected) {
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("a", 1, {}, Secret(RandomBytes(32, 90)), {}, "o").ok());
    ASSERT_TRUE(ks->Create("b", 1, {}, Secret(RandomBytes(32, 91)), {}, "o").ok());
  }
  fs::rename(KeyFile("b", 1), KeyFile("c", 1));
  LoadReport rep;
  auto ks = OpenStore(&rep);
  ASSERT_TRUE(ks);
  EXPECT_EQ(rep.loaded, 1u);
  EXPECT_EQ(rep.corrupted, 1u);
  EXPECT_EQ(ks->Get("c", 0, "o", true).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(KeyStoreTest, LeftoverTempFilesAreIgnoredAndRemoved) {
  {
    auto ks = OpenStore();
    ASSERT_TRUE(ks);
    ASSERT_TRUE(ks->Create("a", 1, {}, Secret(RandomBytes(32, 100)), {}, "o").ok());
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
    if (!(*ks)->Create("durable", 1, {1}, Secret(sk), {}, "o").ok()) _exit(3);
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
  auto r = ks->Get("durable", 0, "o", false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(ToVec(*r->private_key), sk);
  EXPECT_EQ(rep.corrupted, 0u);
}

}  // namespace
}  // namespace pqcd::server
