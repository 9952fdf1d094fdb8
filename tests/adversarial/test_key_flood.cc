// A hostile identity against the real pqcd's key store (issue 25, "Keys"): one uid rotates a
// held ML-DSA-87 key (its prepared form is 74 KB of locked memory per version) as fast as it can.
// Its versions must be refused once they pass its share of locked memory, with a message naming
// the flag, while another uid can still hold keys.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "daemon_fixture.h"
#include "gtest/gtest.h"

namespace pqcd::testing {
namespace {

using namespace pqc::v1;
using std::chrono::seconds;

std::unique_ptr<grpc::ClientContext> Ctx() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + seconds(30));
  return ctx;
}

TEST(KeyFlood, RotationFloodStopsAtTheOwnersLockedShare) {
  Daemon d;
  ASSERT_EQ(::chmod(d.dir().path().c_str(), 0755), 0);
  const std::string sock = d.dir() / "s.sock";
  // 1 MiB of locked memory per identity: about 13 ML-DSA-87 versions.
  ASSERT_TRUE(
      d.Start({"--unix", sock, "--unix-mode", "0666", "--locked-memory-per-owner", "1024"}));
  auto channel = grpc::CreateChannel("unix:" + sock, grpc::InsecureChannelCredentials());
  auto crypto = Crypto::NewStub(channel);
  auto keys = Keys::NewStub(channel);
  KeyGenRequest kg;
  kg.set_algorithm(ML_DSA_87);
  kg.set_hold(true);
  kg.set_key_id("flood");
  KeyGenResponse kgr;
  ASSERT_TRUE(crypto->KeyGen(Ctx().get(), kg, &kgr).ok());
  RotateKeyRequest rot;
  rot.set_key_id("flood");
  grpc::Status refused;
  int rotated = 0;
  for (int i = 0; i < 99 && refused.ok(); ++i) {
    KeyInfo info;
    refused = keys->Rotate(Ctx().get(), rot, &info);
    if (refused.ok()) ++rotated;
  }
  ASSERT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << rotated << " rotations";
  EXPECT_NE(refused.error_message().find("--locked-memory-per-owner"), std::string::npos)
      << refused.error_message();
  EXPECT_GE(rotated, 5);
  EXPECT_LE(rotated, 20);
  EXPECT_GE(MetricValue(HttpGet(d.metrics_port(), "/metrics"),
                        "pqcd_held_keys_refused_total{reason=\"quota\"}"),
            1);
  // Another uid still holds keys (without root the test cannot change uid).
  if (::geteuid() == 0) {
    EXPECT_EQ(RunHelperAs(1004, sock, "keygen", "bystander"), "unix:uid:1004") << d.log();
  }
  // The flooding identity's older keys still work, and deleting a version makes room again.
  DeleteKeyRequest del;
  del.set_key_id("flood");
  del.set_version(1);
  DeleteKeyResponse delr;
  ASSERT_TRUE(keys->Delete(Ctx().get(), del, &delr).ok());
  KeyInfo info;
  EXPECT_TRUE(keys->Rotate(Ctx().get(), rot, &info).ok());
  EXPECT_EQ(d.Terminate(), 0);
}

}  // namespace
}  // namespace pqcd::testing
