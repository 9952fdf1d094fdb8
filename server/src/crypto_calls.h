// The calls of pqc.v1.Crypto on the core queues (core_queues.h, core_reactor.h), one file per kind:
// unary methods and Batch (crypto_unary.cc), Stream (crypto_stream.cc), HashStream
// (crypto_hash_stream.cc). CryptoService::StartCoreServing (crypto_service.cc) posts the first
// request of each on every queue; each call posts the next one of its method when it arrives.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core_queues.h"
#include "pqcd/server/crypto_service.h"
#include "pqcd/server/service_context.h"

namespace pqcd::server {

// Ends HashStreams that idle or last too long (--hash-stream-idle, --hash-stream-max-duration): a
// thread that looks at every open HashStream a few times per second while any is open.
class HashStreamWatch {
 public:
  // An open HashStream; Check (the watch's thread, under its lock) ends it when it has expired.
  class Watched {
   public:
    virtual void Check(std::chrono::steady_clock::time_point now) = 0;

   protected:
    ~Watched() = default;
  };

  HashStreamWatch();
  ~HashStreamWatch();
  HashStreamWatch(const HashStreamWatch&) = delete;
  HashStreamWatch& operator=(const HashStreamWatch&) = delete;

  void Add(Watched* w);
  void Remove(Watched* w);

 private:
  void Loop();
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<Watched*> open_;
  std::thread thread_;
};

// Where a call is served: the daemon's state, the service whose Request* methods post requests,
// the core queues, and the HashStreams' watch.
struct CryptoServing {
  ServiceContext* ctx;
  internal::CryptoServiceBase* service;
  CoreQueues* queues;
  HashStreamWatch* watch;
};

// Each posts the first call(s) of its kind on `queue`.
void PostUnaryCalls(const CryptoServing& serving, int queue);
void PostStream(const CryptoServing& serving, int queue);
void PostHashStream(const CryptoServing& serving, int queue);

}  // namespace pqcd::server
