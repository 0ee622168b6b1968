// Runs whole jobs (one RPC's work each) on a fixed set of job threads, with a
// bounded queue in front of them. The parallel parts of a job run on the
// shared ThreadPool it is handed separately; this class only decides which
// jobs run now, which wait, and which are turned away.
#ifndef SERENITY_COMMON_JOB_RUNNER_H_
#define SERENITY_COMMON_JOB_RUNNER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"

namespace serenity {

class JobRunner {
 public:
  // Called whenever the number of queued or running jobs changes (for
  // gauges), under the runner's lock so calls arrive in order: it must be
  // quick and must not call the runner.
  using LoadObserver = std::function<void(int64_t queued, int64_t running)>;

  // Starts `workers` job threads (at least one). At most `max_queued` jobs
  // wait for a thread; more are refused.
  JobRunner(int workers, int64_t max_queued, LoadObserver observer = nullptr);
  // Runs every job already accepted, then joins the threads.
  ~JobRunner();
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  // Queues `job`. ResourceExhausted (naming the limit) when the queue is
  // full, FailedPrecondition once shutting down; the job is then not run.
  // Jobs must not throw.
  absl::Status Submit(std::function<void()> job);

  int64_t queued() const;
  int64_t running() const;
  int workers() const { return static_cast<int>(threads_.size()); }
  int64_t max_queued() const { return max_queued_; }

 private:
  void Work();
  void Notify();  // requires mu_

  const int64_t max_queued_;
  const LoadObserver observer_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  int64_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace serenity

#endif  // SERENITY_COMMON_JOB_RUNNER_H_
