// A fixed-size thread pool that implements core's Executor.
#ifndef SERENITY_COMMON_THREAD_POOL_H_
#define SERENITY_COMMON_THREAD_POOL_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/util/executor.h"

namespace serenity {

class ThreadPool final : public Executor {
 public:
  // Starts `threads` workers (at least one).
  explicit ThreadPool(int threads);
  // Finishes queued work, then joins the workers.
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Queues every task and waits for all of them. The calling thread helps
  // run them, so nested use from inside a task cannot deadlock.
  void RunAll(std::vector<std::function<void()>>& tasks) override;

  int size() const { return static_cast<int>(workers_.size()); }

 private:
  void Work();
  bool RunOne(std::unique_lock<std::mutex>& lock);

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace serenity

#endif  // SERENITY_COMMON_THREAD_POOL_H_
