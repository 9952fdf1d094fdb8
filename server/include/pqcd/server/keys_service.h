// pqc.v1.Keys: manage held keys. Reads (GetPublicKey, List) answer on the gRPC thread (in-memory
// lookups); changes (Import, Rotate, Delete) run on the auxiliary task runner, because they fsync
// the store and Import/Rotate run kernels (key derivation, pairwise check). Every change writes
// one audit line.
#pragma once

#include "pqc/v1/keys.grpc.pb.h"
#include "pqcd/server/service_context.h"

namespace pqcd::server {

class KeysService final : public pqc::v1::Keys::CallbackService {
 public:
  explicit KeysService(ServiceContext* ctx) : ctx_(ctx) {}

  grpc::ServerUnaryReactor* GetPublicKey(grpc::CallbackServerContext* context,
                                         const pqc::v1::GetPublicKeyRequest* request,
                                         pqc::v1::KeyInfo* response) override;
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* context,
                                 const pqc::v1::ListKeysRequest* request,
                                 pqc::v1::ListKeysResponse* response) override;
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* context,
                                   const pqc::v1::DeleteKeyRequest* request,
                                   pqc::v1::DeleteKeyResponse* response) override;
  grpc::ServerUnaryReactor* Import(grpc::CallbackServerContext* context,
                                   const pqc::v1::ImportKeyRequest* request,
                                   pqc::v1::KeyInfo* response) override;
  grpc::ServerUnaryReactor* Rotate(grpc::CallbackServerContext* context,
                                   const pqc::v1::RotateKeyRequest* request,
                                   pqc::v1::KeyInfo* response) override;

 private:
  ServiceContext* ctx_;
};

}  // namespace pqcd::server
