#include "common/thread_pool.h"

#include <algorithm>
#include <memory>

namespace serenity {

ThreadPool::ThreadPool(int threads) {
  for (int i = 0; i < std::max(1, threads); ++i) workers_.emplace_back([this] { Work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

bool ThreadPool::RunOne(std::unique_lock<std::mutex>& lock) {
  if (queue_.empty()) return false;
  std::function<void()> task = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  task();
  lock.lock();
  return true;
}

void ThreadPool::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (!RunOne(lock) && stopping_) return;
  }
}

void ThreadPool::RunAll(std::vector<std::function<void()>>& tasks) {
  struct Batch {
    std::mutex mu;
    std::condition_variable done;
    size_t left;
  };
  auto batch = std::make_shared<Batch>();
  batch->left = tasks.size();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::function<void()>& task : tasks) {
      queue_.push_back([batch, &task] {
        task();
        std::lock_guard<std::mutex> batch_lock(batch->mu);
        if (--batch->left == 0) batch->done.notify_all();
      });
    }
  }
  wake_.notify_all();
  // Help with queued work instead of idling.
  {
    std::unique_lock<std::mutex> lock(mu_);
    while (RunOne(lock)) {
      std::lock_guard<std::mutex> batch_lock(batch->mu);
      if (batch->left == 0) break;
    }
  }
  std::unique_lock<std::mutex> batch_lock(batch->mu);
  batch->done.wait(batch_lock, [&] { return batch->left == 0; });
}

}  // namespace serenity
