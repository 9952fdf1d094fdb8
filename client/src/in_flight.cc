#include "in_flight.h"

namespace pqcd::client::internal {

void InFlight::Ticket::Release() {
  InFlight* const owner = std::exchange(owner_, nullptr);
  if (owner == nullptr) return;
  // Notified under the lock: Close may destroy the InFlight as soon as it can take the lock again,
  // and nothing here touches it after the unlock.
  std::lock_guard lock(owner->mu_);
  if (--owner->live_ == 0) owner->cv_.notify_all();
}

InFlight::Ticket InFlight::Begin() {
  std::lock_guard lock(mu_);
  ++live_;
  return Ticket(this);
}

void InFlight::Attach(grpc::ClientContext* ctx) {
  std::lock_guard lock(mu_);
  contexts_.insert(ctx);
  if (closing_) ctx->TryCancel();
}

void InFlight::Detach(grpc::ClientContext* ctx) {
  std::lock_guard lock(mu_);
  contexts_.erase(ctx);
}

bool InFlight::closing() const {
  std::lock_guard lock(mu_);
  return closing_;
}

void InFlight::Close() {
  std::unique_lock lock(mu_);
  if (!closing_) {
    closing_ = true;
    // Under the lock, so that no context is destroyed meanwhile (Detach waits). TryCancel never
    // runs a client-side reaction inline: gRPC delivers those on its own threads.
    for (grpc::ClientContext* ctx : contexts_) ctx->TryCancel();
  }
  cv_.wait(lock, [&] { return live_ == 0; });
}

}  // namespace pqcd::client::internal
