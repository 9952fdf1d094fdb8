// pqc.v1.Crypto on the gRPC callback API. Handlers validate, resolve held keys and submit jobs to
// the engine; the engine's completion finishes the call. No crypto runs on a gRPC thread
// (HashStream's incremental updates run on the auxiliary task runner).
#pragma once

#include <memory>

#include "pqc/v1/crypto.grpc.pb.h"
#include "pqcd/server/service_context.h"

namespace pqcd::server {

class HashStreamWatch;

class CryptoService final : public pqc::v1::Crypto::CallbackService {
 public:
  explicit CryptoService(ServiceContext* ctx);
  ~CryptoService() override;

  grpc::ServerUnaryReactor* KeyGen(grpc::CallbackServerContext* context,
                                   const pqc::v1::KeyGenRequest* request,
                                   pqc::v1::KeyGenResponse* response) override;
  grpc::ServerUnaryReactor* Encaps(grpc::CallbackServerContext* context,
                                   const pqc::v1::EncapsRequest* request,
                                   pqc::v1::EncapsResponse* response) override;
  grpc::ServerUnaryReactor* Decaps(grpc::CallbackServerContext* context,
                                   const pqc::v1::DecapsRequest* request,
                                   pqc::v1::DecapsResponse* response) override;
  grpc::ServerUnaryReactor* Sign(grpc::CallbackServerContext* context,
                                 const pqc::v1::SignRequest* request,
                                 pqc::v1::SignResponse* response) override;
  grpc::ServerUnaryReactor* Verify(grpc::CallbackServerContext* context,
                                   const pqc::v1::VerifyRequest* request,
                                   pqc::v1::VerifyResponse* response) override;
  grpc::ServerUnaryReactor* Hash(grpc::CallbackServerContext* context,
                                 const pqc::v1::HashRequest* request,
                                 pqc::v1::HashResponse* response) override;
  grpc::ServerReadReactor<pqc::v1::HashStreamRequest>* HashStream(
      grpc::CallbackServerContext* context, pqc::v1::HashResponse* response) override;
  grpc::ServerUnaryReactor* Batch(grpc::CallbackServerContext* context,
                                  const pqc::v1::BatchRequest* request,
                                  pqc::v1::BatchResponse* response) override;
  grpc::ServerBidiReactor<pqc::v1::StreamRequest, pqc::v1::StreamResponse>* Stream(
      grpc::CallbackServerContext* context) override;

 private:
  template <class Req, class Resp, class Prepare>
  grpc::ServerUnaryReactor* Unary(const char* rpc, grpc::CallbackServerContext* context,
                                  const Req* request, Resp* response, Prepare prepare,
                                  bool secrets);
  ServiceContext* ctx_;
  // Ends HashStreams that idle or last too long (--hash-stream-idle, --hash-stream-max-duration).
  std::unique_ptr<HashStreamWatch> hash_watch_;
};

}  // namespace pqcd::server
