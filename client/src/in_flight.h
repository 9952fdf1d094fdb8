// The lifetime of the client's callback-API work (internal to the client library).
//
// The rule, and why. Each grpc::ClientContext holds a reference to its grpc::Channel. gRPC 1.51 on
// Linux runs callback-API reactions on the threads of one process-wide completion queue, and
// destroying the last grpc::Channel that used the callback API shuts that queue down: it joins
// those threads and frees the queue. If that last reference is dropped on one of those threads (a
// context destroyed after its callback, once the client that made the call was gone), the thread
// joins itself and the queue is freed under it: a double free in the queue's teardown, seen about
// once in five runs of client_test_daemon under ASan. So:
//  - every callback-API operation of a client (async unary call, HashStreamAsync, a batcher's
//    shared stream) holds an InFlight::Ticket from its start until it has destroyed its
//    ClientContext (the Ticket is the operation's first member, so that it is destroyed last);
//  - destroying the client first closes its InFlight: calls in flight are cancelled, and it waits
//    until every Ticket is back. Only then are the channels and stubs dropped, on the thread that
//    destroys the client, never on a gRPC thread.
// A consequence: a client must not be destroyed inside one of its own callbacks (it would wait for
// the callback that is destroying it).
#pragma once

#include <grpcpp/client_context.h>

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <unordered_set>
#include <utility>

namespace pqcd::client::internal {

class InFlight {
 public:
  // One operation's share of the count; giving it back (destroying it) must be the last thing the
  // operation does.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)) {}
    Ticket& operator=(Ticket&& other) noexcept {
      if (this != &other) {
        Release();
        owner_ = std::exchange(other.owner_, nullptr);
      }
      return *this;
    }
    ~Ticket() { Release(); }

   private:
    friend class InFlight;
    explicit Ticket(InFlight* owner) : owner_(owner) {}
    void Release();

    InFlight* owner_ = nullptr;
  };

  InFlight() = default;
  ~InFlight() { Close(); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

  // Counts one operation until its Ticket is destroyed. Allowed while closing (a callback may start
  // the next step of its operation); Close waits for it as well.
  Ticket Begin();

  // The context of a call in flight, so that Close can cancel it; one attached once Close has begun
  // is cancelled at once (its call then ends CANCELLED as soon as it starts). Detach it before it
  // is destroyed. TrackedContext does both.
  void Attach(grpc::ClientContext* ctx);
  void Detach(grpc::ClientContext* ctx);

  // True once Close has begun: no call is retried any more.
  bool closing() const;

  // Cancels the attached contexts and waits until every Ticket is back. Must not run on a thread
  // that holds one of the Tickets (inside a callback of an operation it waits for).
  void Close();

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  size_t live_ = 0;
  bool closing_ = false;
  std::unordered_set<grpc::ClientContext*> contexts_;
};

// A ClientContext attached to an InFlight for its whole life.
class TrackedContext {
 public:
  explicit TrackedContext(InFlight& owner) : owner_(owner) { owner_.Attach(&ctx_); }
  ~TrackedContext() { owner_.Detach(&ctx_); }
  TrackedContext(const TrackedContext&) = delete;
  TrackedContext& operator=(const TrackedContext&) = delete;

  grpc::ClientContext& get() { return ctx_; }

 private:
  InFlight& owner_;
  grpc::ClientContext ctx_;
};

}  // namespace pqcd::client::internal
