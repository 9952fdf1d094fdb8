// Test helper for test_identity: a fresh process (started after setuid by the test) that talks to
// pqcd over a Unix socket. gRPC must not be used in a forked child of a process that already used
// it, hence a separate program.
//
//   pqcd_identity_helper SOCKET keygen KEY_ID   holds a new ML-KEM-768 key; prints its owner
//   pqcd_identity_helper SOCKET get KEY_ID      prints the owner, or "error <code>"
//   pqcd_identity_helper SOCKET encaps KEY_ID   prints "ok" or "error <code>"
#include <chrono>
#include <iostream>
#include <string>

#include "grpcpp/grpcpp.h"
#include "pqc/v1/crypto.grpc.pb.h"
#include "pqc/v1/keys.grpc.pb.h"

namespace {

void Deadline(grpc::ClientContext* ctx) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
}

int Fail(const grpc::Status& s) {
  std::cout << "error " << s.error_code() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: " << argv[0] << " SOCKET keygen|get|encaps KEY_ID\n";
    return 2;
  }
  const std::string op = argv[2];
  const std::string key_id = argv[3];
  auto channel =
      grpc::CreateChannel(std::string("unix:") + argv[1], grpc::InsecureChannelCredentials());
  auto crypto = pqc::v1::Crypto::NewStub(channel);
  auto keys = pqc::v1::Keys::NewStub(channel);
  if (op == "keygen") {
    pqc::v1::KeyGenRequest req;
    req.set_algorithm(pqc::v1::ML_KEM_768);
    req.set_hold(true);
    req.set_key_id(key_id);
    pqc::v1::KeyGenResponse resp;
    grpc::ClientContext ctx;
    Deadline(&ctx);
    if (auto s = crypto->KeyGen(&ctx, req, &resp); !s.ok()) return Fail(s);
  }
  if (op == "keygen" || op == "get") {
    pqc::v1::GetPublicKeyRequest req;
    req.set_key_id(key_id);
    pqc::v1::KeyInfo info;
    grpc::ClientContext ctx;
    Deadline(&ctx);
    if (auto s = keys->GetPublicKey(&ctx, req, &info); !s.ok()) return Fail(s);
    std::cout << info.owner() << "\n";
    return 0;
  }
  if (op == "encaps") {
    pqc::v1::EncapsRequest req;
    req.mutable_key_ref()->set_key_id(key_id);
    pqc::v1::EncapsResponse resp;
    grpc::ClientContext ctx;
    Deadline(&ctx);
    if (auto s = crypto->Encaps(&ctx, req, &resp); !s.ok()) return Fail(s);
    std::cout << "ok\n";
    return 0;
  }
  std::cerr << "unknown operation " << op << "\n";
  return 2;
}
