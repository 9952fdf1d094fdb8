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
  explicit TaskRunner(int threads, const char* name = "pqcd-aux");
  ~TaskRunner();  // Stop()
  TaskRunner(const TaskRunner&) = delete;
  TaskRunner& operator=(const TaskRunner&) = delete;

  void Post(absl::AnyInvocable<void()> task);
  // Runs what is queued, then joins the threads. Later Posts run inline on the caller.
  void Stop();

 private:
  void Loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<absl::AnyInvocable<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace pqcd::server
