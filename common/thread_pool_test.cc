#include "common/thread_pool.h"

#include <atomic>
#include <set>
#include <thread>

#include "gtest/gtest.h"

namespace serenity {
namespace {

TEST(ThreadPoolTest, RunsEveryTaskOnceAndWaits) {
  ThreadPool pool(3);
  std::vector<int> done(100, 0);
  std::vector<std::function<void()>> tasks;
  for (int i = 0; i < 100; ++i) tasks.push_back([&done, i] { done[i] += 1; });
  pool.RunAll(tasks);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(done[i], 1) << i;
}

TEST(ThreadPoolTest, RunsTasksConcurrently) {
  ThreadPool pool(2);
  std::atomic<int> arrived{0};
  std::vector<std::function<void()>> tasks;
  // Each task waits for the other: this only finishes if both run at once.
  for (int i = 0; i < 2; ++i) {
    tasks.push_back([&arrived] {
      ++arrived;
      while (arrived.load() < 2) std::this_thread::yield();
    });
  }
  pool.RunAll(tasks);
  EXPECT_EQ(arrived.load(), 2);
}

TEST(ThreadPoolTest, NestedBatchesDoNotDeadlock) {
  ThreadPool pool(1);
  std::atomic<int> inner{0};
  std::vector<std::function<void()>> outer;
  for (int i = 0; i < 4; ++i) {
    outer.push_back([&pool, &inner] {
      std::vector<std::function<void()>> tasks(3, [&inner] { ++inner; });
      pool.RunAll(tasks);
    });
  }
  pool.RunAll(outer);
  EXPECT_EQ(inner.load(), 12);
}

}  // namespace
}  // namespace serenity
