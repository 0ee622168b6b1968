#include "server/connection_slots.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace serenity {
namespace {

// Records the order in which waiters were granted slots.
class RecordingWaiter final : public ConnectionSlots::Waiter {
 public:
  RecordingWaiter(int id, std::vector<int>* log) : id_(id), log_(log) {}
  void OnSlotGranted() override { log_->push_back(id_); }

 private:
  const int id_;
  std::vector<int>* const log_;
};

TEST(ConnectionSlotsTest, RefusesBeyondTheLimitPerConnection) {
  ConnectionSlots slots(2);
  EXPECT_TRUE(slots.TryAcquire("a"));
  EXPECT_TRUE(slots.TryAcquire("a"));
  EXPECT_FALSE(slots.TryAcquire("a"));
  EXPECT_TRUE(slots.TryAcquire("b"));  // another connection has its own
  EXPECT_EQ(slots.Held("a"), 2);
  EXPECT_EQ(slots.Held("b"), 1);
  slots.Release("a");
  EXPECT_TRUE(slots.TryAcquire("a"));
  slots.Release("a", 2);
  slots.Release("b");
  EXPECT_EQ(slots.Connections(), 0u);  // nothing held, nothing kept
}

TEST(ConnectionSlotsTest, FreedSlotsGoToWaitersInTurn) {
  ConnectionSlots slots(1);
  std::vector<int> granted;
  RecordingWaiter first(1, &granted), second(2, &granted), third(3, &granted);
  EXPECT_TRUE(slots.AcquireOrWait("a", &first));
  EXPECT_FALSE(slots.AcquireOrWait("a", &second));
  EXPECT_FALSE(slots.AcquireOrWait("a", &third));
  EXPECT_TRUE(granted.empty());
  EXPECT_EQ(slots.Waiting(), 2u);
  // While streams wait, a unary call finds the connection full.
  EXPECT_FALSE(slots.TryAcquire("a"));
  slots.Release("a");
  EXPECT_EQ(granted, (std::vector<int>{2}));
  EXPECT_EQ(slots.Held("a"), 1);  // passed on, not freed
  EXPECT_FALSE(slots.TryAcquire("a"));
  slots.Release("a");
  EXPECT_EQ(granted, (std::vector<int>{2, 3}));
  EXPECT_EQ(slots.Waiting(), 0u);
  slots.Release("a");
  EXPECT_EQ(slots.Held("a"), 0);
  EXPECT_EQ(slots.Connections(), 0u);
}

TEST(ConnectionSlotsTest, ReleasingSeveralGrantsSeveralWaiters) {
  ConnectionSlots slots(3);
  std::vector<int> granted;
  RecordingWaiter w1(1, &granted), w2(2, &granted);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(slots.TryAcquire("a"));
  EXPECT_FALSE(slots.AcquireOrWait("a", &w1));
  EXPECT_FALSE(slots.AcquireOrWait("a", &w2));
  slots.Release("a", 3);
  EXPECT_EQ(granted, (std::vector<int>{1, 2}));
  EXPECT_EQ(slots.Held("a"), 2);
}

TEST(ConnectionSlotsTest, ACancelledWaiterIsSkipped) {
  ConnectionSlots slots(1);
  std::vector<int> granted;
  RecordingWaiter w1(1, &granted), w2(2, &granted);
  ASSERT_TRUE(slots.TryAcquire("a"));
  EXPECT_FALSE(slots.AcquireOrWait("a", &w1));
  EXPECT_FALSE(slots.AcquireOrWait("a", &w2));
  EXPECT_TRUE(slots.CancelWait("a", &w1));
  EXPECT_FALSE(slots.CancelWait("a", &w1));  // no longer waiting
  slots.Release("a");
  EXPECT_EQ(granted, (std::vector<int>{2}));
  EXPECT_FALSE(slots.CancelWait("a", &w2));  // granted already
  slots.Release("a");
  EXPECT_EQ(slots.Connections(), 0u);
}

// A waiter that gives its slot straight back from its callback (a stream
// cancelled while it waited) hands it on to the next in line.
class ReturningWaiter final : public ConnectionSlots::Waiter {
 public:
  explicit ReturningWaiter(ConnectionSlots* slots) : slots_(slots) {}
  void OnSlotGranted() override {
    ++grants;
    slots_->Release("a");
  }
  int grants = 0;

 private:
  ConnectionSlots* const slots_;
};

TEST(ConnectionSlotsTest, AWaiterMayReleaseFromItsCallback) {
  ConnectionSlots slots(1);
  std::vector<int> granted;
  ReturningWaiter returning(&slots);
  RecordingWaiter next(2, &granted);
  ASSERT_TRUE(slots.TryAcquire("a"));
  EXPECT_FALSE(slots.AcquireOrWait("a", &returning));
  EXPECT_FALSE(slots.AcquireOrWait("a", &next));
  slots.Release("a");
  EXPECT_EQ(returning.grants, 1);
  EXPECT_EQ(granted, (std::vector<int>{2}));
  EXPECT_EQ(slots.Held("a"), 1);
}

// A line of waiters that each give their slot straight back (streams
// cancelled while waiting) is worked through without one stack frame per
// waiter: a quarter of a million of them would overflow the stack.
TEST(ConnectionSlotsTest, ALongLineOfWaitersReleasingFromTheirCallbacksUnwinds) {
  constexpr int kWaiters = 250000;
  ConnectionSlots slots(1);
  std::vector<ReturningWaiter> waiters(kWaiters, ReturningWaiter(&slots));
  ASSERT_TRUE(slots.TryAcquire("a"));
  for (ReturningWaiter& waiter : waiters) ASSERT_FALSE(slots.AcquireOrWait("a", &waiter));
  slots.Release("a");
  for (const ReturningWaiter& waiter : waiters) ASSERT_EQ(waiter.grants, 1);
  EXPECT_EQ(slots.Waiting(), 0u);
  EXPECT_EQ(slots.Connections(), 0u);
}

// Threads taking and releasing slots of a few connections never hold more
// than the limit of one connection at once, and leave nothing behind.
TEST(ConnectionSlotsTest, ConcurrentUseKeepsTheLimit) {
  constexpr int kLimit = 3, kThreads = 8, kRounds = 20000;
  ConnectionSlots slots(kLimit);
  std::atomic<int> holding[2] = {{0}, {0}};
  std::atomic<int> over_limit{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const int c = t % 2;
      const std::string connection = c == 0 ? "x" : "y";
      for (int r = 0; r < kRounds; ++r) {
        if (!slots.TryAcquire(connection)) continue;
        if (holding[c].fetch_add(1) + 1 > kLimit) over_limit.fetch_add(1);
        holding[c].fetch_sub(1);
        slots.Release(connection);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(over_limit.load(), 0);
  EXPECT_EQ(slots.Connections(), 0u);
}

}  // namespace
}  // namespace serenity
