// The calls of pqc.v1.Crypto on the core queues (core_queues.h, core_reactor.h), one file per kind:
// unary methods and Batch (crypto_unary.cc), Stream (crypto_stream.cc), HashStream
// (crypto_hash_stream.cc). Each file lists the methods it serves (CryptoMethod);
// CryptoService::StartCoreServing (crypto_service.cc) posts the first request of each on every
// queue, and each call posts the next one of its method when it arrives. The same lists are what
// the start-up check holds against the proto (CheckServesEveryMethod).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <span>
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

// A method of pqc.v1.Crypto as the daemon serves it: its name in the proto ("KeyGen", also its
// calls' metric label) and what posts its first call on a queue.
struct CryptoMethod {
  const char* name;
  void (*post)(const CryptoServing& serving, int queue);
};

// The methods each file serves: the unary methods and Batch (crypto_unary.cc: their rows), Stream
// (crypto_stream.cc), HashStream (crypto_hash_stream.cc).
std::span<const CryptoMethod> UnaryMethods();
CryptoMethod StreamMethod();
CryptoMethod HashStreamMethod();

}  // namespace pqcd::server
