// KeyStore's cache and rules are the same over every backend (key_backend.h): the same sequence of
// Create / AddVersion / Get / Use / List / Delete and limit refusals, over the memory and the file
// backend (the PostgreSQL one: tests/server/test_postgres_store.cc).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "key_store_test_support.h"
#include "keystore/key_store.h"

namespace pqcd::server {
namespace {

using testing::RandomBytes;
using testing::Secret;
using testing::ToVec;

constexpr int kAlg = 7;  // any int: the store does not interpret it

class KeyStoreBackendTest : public testing::KeyStoreDirTest,
                            public ::testing::WithParamInterface<std::string> {
 protected:
  KeyStoreBackendTest() : KeyStoreDirTest('c') {}

  void SetUp() override {
    KeyStoreDirTest::SetUp();
    if (GetParam() == "memory") {
      options_.data_dir.clear();
      options_.kek_file.clear();
    }
    options_.max_keys_per_owner = 3;
    options_.max_versions_per_key = 2;
  }

  absl::StatusOr<KeyRecord> Create(KeyStore& ks, const std::string& owner, const std::string& id,
                                   uint32_t seed, std::map<std::string, std::string> labels = {}) {
    return ks.Create(owner, id, kAlg, RandomBytes(32, seed), Secret(RandomBytes(64, seed + 1)),
                     std::move(labels));
  }
};

TEST_P(KeyStoreBackendTest, SameRulesOverEveryBackend) {
  auto ks = OpenStore();
  ASSERT_NE(ks, nullptr);
  EXPECT_EQ(ks->persistent(), GetParam() != "memory");
  EXPECT_STREQ(ks->health().backend, GetParam().c_str());
  EXPECT_TRUE(ks->health().up);

  auto a = Create(*ks, "alice", "k", 1, {{"env", "prod"}});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->version, 1u);
  EXPECT_EQ(Create(*ks, "alice", "k", 2).status().code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(Create(*ks, "bob", "k", 3).ok());  // ids are per owner
  ASSERT_TRUE(Create(*ks, "alice", "j", 4).ok());
  ASSERT_TRUE(Create(*ks, "alice", "i", 5).ok());
  EXPECT_EQ(Create(*ks, "alice", "h", 6).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ks->KeyCount("alice"), 3u);
  EXPECT_EQ(ks->OwnersOf("k"), (std::vector<std::string>{"alice", "bob"}));

  auto v2 = ks->AddVersion("alice", "k", RandomBytes(32, 7), Secret(RandomBytes(64, 8)));
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ(v2->version, 2u);
  EXPECT_EQ(v2->labels, a->labels);  // labels carry over
  EXPECT_EQ(ks->CheckRoomForVersion("alice", "k").code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(
      ks->AddVersion("alice", "k", RandomBytes(32, 9), Secret(RandomBytes(64, 10))).status().code(),
      absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ks->counters().quota_refusals, 3u);
  EXPECT_EQ(ks->AddVersion("alice", "nope", {}, Secret(RandomBytes(64, 11))).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ks->size(), 5u);

  auto newest = ks->Get("alice", "k", 0);
  ASSERT_TRUE(newest.ok());
  EXPECT_EQ(newest->version, 2u);
  auto use = ks->Use("alice", "k", 1, /*want_public_key=*/true);
  ASSERT_TRUE(use.ok());
  EXPECT_EQ(ToVec(*use->private_key), RandomBytes(64, 2));
  EXPECT_EQ(use->public_key, RandomBytes(32, 1));
  EXPECT_EQ(ks->Get("alice", "k", 3).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ks->Get("alice", ".bad", 0).status().code(), absl::StatusCode::kInvalidArgument);

  // Paging over every owner, two keys a page, in (owner, key_id) order.
  std::vector<std::string> seen;
  std::string token;
  do {
    auto page = ks->List(nullptr, {}, 2, token);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const KeyRecord& r : page->keys) seen.push_back(r.owner + "/" + r.key_id);
    token = page->next_page_token;
  } while (!token.empty());
  EXPECT_EQ(seen, (std::vector<std::string>{"alice/i", "alice/j", "alice/k", "bob/k"}));
  const std::string alice = "alice";
  auto prod = ks->List(&alice, {{"env", "prod"}}, 0, "");
  ASSERT_TRUE(prod.ok());
  ASSERT_EQ(prod->keys.size(), 1u);
  EXPECT_EQ(prod->keys[0].version, 2u);
  EXPECT_EQ(ks->List(&alice, {}, 0, "zz").status().code(), absl::StatusCode::kInvalidArgument);

  auto deleted = ks->Delete("alice", "k", 1);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 1u);
  EXPECT_EQ(ks->Versions("alice", "k"), std::vector<uint32_t>{2});
  auto v3 = ks->AddVersion("alice", "k", RandomBytes(32, 12), Secret(RandomBytes(64, 13)));
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ(v3->version, 3u);  // numbers are not reused
  EXPECT_EQ(*ks->Delete("alice", "k", 0), 2u);
  EXPECT_EQ(ks->Delete("alice", "k", 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ks->KeyCount("alice"), 2u);
  auto again = Create(*ks, "alice", "k", 14);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->version, 1u);  // a fully deleted id starts afresh
  EXPECT_EQ(ks->size(), 4u);

  if (!ks->persistent()) return;
  ks.reset();
  LoadReport rep;
  auto reopened = OpenStore(&rep);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(rep.loaded, 4u);
  EXPECT_TRUE(rep.problems.empty());
  EXPECT_EQ(reopened->size(), 4u);
  EXPECT_EQ(reopened->Versions("alice", "k"), std::vector<uint32_t>{1});
  EXPECT_EQ(ToVec(*reopened->Get("bob", "k", 0)->private_key), RandomBytes(64, 4));
}

INSTANTIATE_TEST_SUITE_P(Backends, KeyStoreBackendTest, ::testing::Values("memory", "file"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace pqcd::server
