#include "pqcd/server/task_runner.h"

#include <pthread.h>

namespace pqcd::server {

TaskRunner::TaskRunner(int threads, const char* name, size_t capacity) : capacity_(capacity) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this] { Loop(); });
    pthread_setname_np(threads_.back().native_handle(), name);
  }
}

TaskRunner::~TaskRunner() {
  Stop();
}

void TaskRunner::Post(absl::AnyInvocable<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      tasks_.push_back(std::move(task));
      cv_.notify_one();
      return;
    }
  }
  task();
}

bool TaskRunner::TryPost(absl::AnyInvocable<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      if (capacity_ != 0 && tasks_.size() >= capacity_) return false;
      tasks_.push_back(std::move(task));
      cv_.notify_one();
      return true;
    }
  }
  task();
  return true;
}

void TaskRunner::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    cv_.notify_all();
  }
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void TaskRunner::Loop() {
  for (;;) {
    absl::AnyInvocable<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace pqcd::server
