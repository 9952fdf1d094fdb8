#include "pqcd/server/crypto_service.h"

#include "crypto_calls.h"

namespace pqcd::server {

CryptoService::CryptoService(ServiceContext* ctx)
    : ctx_(ctx), hash_watch_(std::make_unique<HashStreamWatch>()) {}

CryptoService::~CryptoService() = default;

void CryptoService::StartCoreServing(CoreQueues* queues) {
  const CryptoServing serving{ctx_, this, queues, hash_watch_.get()};
  for (int q = 0; q < queues->size(); ++q) {
    PostUnaryCalls(serving, q);
    PostStream(serving, q);
    PostHashStream(serving, q);
  }
}

}  // namespace pqcd::server
