// WipeMessage (server/src/wipe.h): every bytes/string field of a message
// and of the messages nested in it is zeroed in place; other fields are left alone.
#include <algorithm>
#include <string>

#include "gtest/gtest.h"
#include "pqc/v1/crypto.pb.h"
#include "pqc/v1/keys.pb.h"
#include "wipe.h"

namespace pqcd::server {
namespace {

bool AllZero(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == 0; });
}

TEST(Wipe, NestedBatchMessages) {
  pqc::v1::BatchRequest request;
  auto* decaps = request.add_operations()->mutable_decaps();
  decaps->set_algorithm(pqc::v1::ML_KEM_768);
  decaps->set_private_key(std::string(64, '\x5a'));
  decaps->set_ciphertext(std::string(1088, '\x11'));
  auto* sign = request.add_operations()->mutable_sign();
  sign->set_private_key(std::string(32, '\x33'));
  sign->set_message("attack at dawn");
  sign->set_deterministic(true);
  WipeMessage(request);
  EXPECT_EQ(decaps->private_key().size(), 64u);
  EXPECT_TRUE(AllZero(decaps->private_key()));
  EXPECT_TRUE(AllZero(decaps->ciphertext()));
  EXPECT_TRUE(AllZero(sign->private_key()));
  EXPECT_EQ(sign->message(), std::string(14, '\0'));
  EXPECT_EQ(decaps->algorithm(), pqc::v1::ML_KEM_768);  // not a string: untouched
  EXPECT_TRUE(sign->deterministic());

  pqc::v1::BatchResponse response;
  auto* result = response.add_results();
  result->set_message("ok");
  result->mutable_keygen()->set_private_key(std::string(2400, '\x77'));
  result->mutable_keygen()->set_seed(std::string(64, '\x78'));
  WipeMessage(response);
  EXPECT_TRUE(AllZero(result->keygen().private_key()));
  EXPECT_TRUE(AllZero(result->keygen().seed()));
  EXPECT_TRUE(AllZero(result->message()));
}

TEST(Wipe, RepeatedStringsAndMaps) {
  pqc::v1::ImportKeyRequest request;
  request.set_private_key(std::string(32, '\x01'));
  (*request.mutable_labels())["team"] = "payments";
  WipeMessage(request);
  EXPECT_TRUE(AllZero(request.private_key()));
  for (const auto& [k, v] : request.labels()) EXPECT_TRUE(AllZero(v)) << "label value";
}

}  // namespace
}  // namespace pqcd::server
