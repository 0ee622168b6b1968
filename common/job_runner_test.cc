#include "common/job_runner.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "gtest/gtest.h"

namespace serenity {
namespace {

// A latch the test opens to let blocked jobs finish.
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    arrived_.notify_all();
    open_cv_.wait(lock, [this] { return open_; });
  }
  void AwaitWaiting(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    arrived_.wait(lock, [&] { return waiting_ >= n; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    open_cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable arrived_, open_cv_;
  int waiting_ = 0;
  bool open_ = false;
};

TEST(JobRunnerTest, RunsEveryAcceptedJobOnce) {
  std::atomic<int> runs{0};
  {
    JobRunner runner(3, 1000);
    for (int i = 0; i < 500; ++i) ASSERT_TRUE(runner.Submit([&runs] { ++runs; }).ok());
  }  // the destructor drains the queue
  EXPECT_EQ(runs.load(), 500);
}

TEST(JobRunnerTest, RefusesJobsBeyondThreadsPlusQueue) {
  Gate gate;
  std::atomic<int> runs{0};
  JobRunner runner(2, 3);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(runner
                    .Submit([&] {
                      gate.Wait();
                      ++runs;
                    })
                    .ok())
        << i;
  }
  gate.AwaitWaiting(2);  // both threads busy, three queued
  EXPECT_EQ(runner.running(), 2);
  EXPECT_EQ(runner.queued(), 3);
  absl::Status refused = runner.Submit([&runs] { runs += 100; });
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("busy"), absl::string_view::npos);
  gate.Open();
  // Wait for the backlog to clear, then there is room again.
  while (runner.running() + runner.queued() > 0) std::this_thread::yield();
  EXPECT_TRUE(runner.Submit([&runs] { ++runs; }).ok());
  while (runs.load() < 6) std::this_thread::yield();
  EXPECT_EQ(runs.load(), 6);
}

TEST(JobRunnerTest, ZeroQueueStillRunsOneJobPerThread) {
  Gate gate;
  JobRunner runner(1, 0);
  ASSERT_TRUE(runner.Submit([&gate] { gate.Wait(); }).ok());
  gate.AwaitWaiting(1);
  EXPECT_EQ(runner.Submit([] {}).code(), absl::StatusCode::kResourceExhausted);
  gate.Open();
}

TEST(JobRunnerTest, ObserverSeesQueueAndRunningCounts) {
  std::mutex mu;
  int64_t max_running = 0, last_running = -1, last_queued = -1;
  Gate gate;
  {
    JobRunner runner(2, 10, [&](int64_t queued, int64_t running) {
      std::lock_guard<std::mutex> lock(mu);
      max_running = std::max(max_running, running);
      last_running = running;
      last_queued = queued;
    });
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(runner.Submit([&gate] { gate.Wait(); }).ok());
    gate.AwaitWaiting(2);
    gate.Open();
  }
  EXPECT_EQ(max_running, 2);
  EXPECT_EQ(last_running, 0);
  EXPECT_EQ(last_queued, 0);
}

}  // namespace
}  // namespace serenity
