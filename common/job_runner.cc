#include "common/job_runner.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace serenity {

JobRunner::JobRunner(int workers, int64_t max_queued, LoadObserver observer)
    : max_queued_(std::max<int64_t>(0, max_queued)), observer_(std::move(observer)) {
  for (int i = 0; i < std::max(1, workers); ++i) threads_.emplace_back([this] { Work(); });
}

JobRunner::~JobRunner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

absl::Status JobRunner::Submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return absl::FailedPreconditionError("the server is shutting down");
    // Room for one job per thread plus the queue.
    const int64_t outstanding = running_ + static_cast<int64_t>(queue_.size());
    if (outstanding >= static_cast<int64_t>(threads_.size()) + max_queued_) {
      return absl::ResourceExhaustedError(absl::StrCat("the server is busy: ", running_, " jobs running and ",
                                                       queue_.size(), " queued (the queue holds ", max_queued_,
                                                       "); retry later"));
    }
    queue_.push_back(std::move(job));
    Notify();
  }
  wake_.notify_one();
  return absl::OkStatus();
}

int64_t JobRunner::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

int64_t JobRunner::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

void JobRunner::Notify() {
  if (observer_) observer_(static_cast<int64_t>(queue_.size()), running_);
}

void JobRunner::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    Notify();
    lock.unlock();
    job();
    job = nullptr;  // destroy captures outside the lock
    lock.lock();
    --running_;
    Notify();
  }
}

}  // namespace serenity
