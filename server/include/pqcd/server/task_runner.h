// A small thread pool for work that must not run on gRPC threads and does not fit the engine's job
// model: key-store I/O (fsync), key management (Import/Rotate), incremental HashStream updates.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"

namespace pqcd::server {

class TaskRunner {
 public:
  // capacity: tasks TryPost lets wait (0: unbounded).
  explicit TaskRunner(int threads, const char* name = "pqcd-aux", size_t capacity = 0);
  ~TaskRunner();  // Stop()
  TaskRunner(const TaskRunner&) = delete;
  TaskRunner& operator=(const TaskRunner&) = delete;

  void Post(absl::AnyInvocable<void()> task);
  // Like Post, but refuses (returns false, task not run) when `capacity` tasks already wait.
  [[nodiscard]] bool TryPost(absl::AnyInvocable<void()> task);
  // Runs what is queued, then joins the threads. Later Posts run inline on the caller.
  void Stop();

 private:
  void Loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<absl::AnyInvocable<void()>> tasks_;
  bool stopping_ = false;
  const size_t capacity_;
  std::vector<std::thread> threads_;
};

}  // namespace pqcd::server
