#include "core/util/memory_account.h"

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace serenity {
namespace {

TEST(MemoryAccountTest, ChargesUpToTheLimitAndRefusesBeyond) {
  MemoryAccount account(100);
  EXPECT_TRUE(account.TryCharge(60));
  EXPECT_FALSE(account.TryCharge(41));
  EXPECT_EQ(account.used(), 60);
  EXPECT_TRUE(account.TryCharge(40));
  EXPECT_FALSE(account.TryCharge(1));
  account.Release(70);
  EXPECT_EQ(account.used(), 30);
  EXPECT_EQ(account.peak(), 100);
  EXPECT_FALSE(account.TryCharge(INT64_MAX));
}

TEST(MemoryAccountTest, ZeroLimitAndNullAreUnlimited) {
  MemoryAccount account(0);
  EXPECT_TRUE(account.unlimited());
  EXPECT_TRUE(account.TryCharge(int64_t{1} << 60));
  EXPECT_EQ(account.peak(), int64_t{1} << 60);
  EXPECT_TRUE(TryCharge(nullptr, int64_t{1} << 62));
  MemoryCharge charge(nullptr);
  EXPECT_TRUE(charge.TryAdd(int64_t{1} << 62));
}

TEST(MemoryAccountTest, ChargeReleasesWhenDestroyedAndResizes) {
  MemoryAccount account(1000);
  {
    MemoryCharge charge(&account);
    EXPECT_TRUE(charge.TryAdd(300));
    EXPECT_TRUE(charge.TryResize(900));
    EXPECT_EQ(account.used(), 900);
    EXPECT_FALSE(charge.TryResize(1001));
    EXPECT_EQ(charge.bytes(), 900);
    EXPECT_TRUE(charge.TryResize(100));
    EXPECT_EQ(account.used(), 100);
    MemoryCharge moved = std::move(charge);
    EXPECT_EQ(charge.bytes(), 0);
    EXPECT_EQ(account.used(), 100);
  }
  EXPECT_EQ(account.used(), 0);
  EXPECT_EQ(account.peak(), 900);
}

TEST(MemoryAccountTest, ConcurrentChargesNeverPassTheLimit) {
  MemoryAccount account(1000);
  std::vector<std::thread> threads;
  std::atomic<int64_t> granted{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        if (account.TryCharge(7)) {
          granted += 7;
          account.Release(7);
          granted -= 7;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_LE(account.peak(), 1000);
  EXPECT_EQ(account.used(), 0);
}

TEST(MemoryAccountTest, ErrorNamesTheBudgetAndTheNeed) {
  MemoryAccount account(4096);
  const absl::Status status = MemoryLimitError(&account, 10000, "the reachability bitsets");
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("4096"), std::string::npos);
  EXPECT_NE(status.message().find("10000"), std::string::npos);
  EXPECT_NE(status.message().find("reachability"), std::string::npos);
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

// A pool of `capacity` bytes that grants what it has.
struct FakePool {
  explicit FakePool(int64_t capacity) : left(capacity) {}
  bool Grow(int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu);
    ++asks;
    if (bytes > left) return false;
    left -= bytes;
    return true;
  }
  std::mutex mu;
  int64_t left;
  int asks = 0;
};

// Charges within the bytes granted up front never ask the pool; beyond
// them the account asks in steps, and a charge the pool cannot cover fails
// and changes nothing, even below the account's own limit.
TEST(MemoryAccountTest, DrawsBeyondItsGrantFromThePool) {
  constexpr int64_t kStep = MemoryAccount::kGrowStepBytes;
  FakePool pool(kStep + 100);
  MemoryAccount account(/*limit_bytes=*/10 * kStep, /*granted_bytes=*/1000,
                        [&pool](int64_t bytes) { return pool.Grow(bytes); });
  EXPECT_TRUE(account.TryCharge(1000));
  EXPECT_EQ(pool.asks, 0);
  EXPECT_TRUE(account.TryCharge(10));  // one step from the pool
  EXPECT_EQ(pool.asks, 1);
  EXPECT_EQ(account.granted(), 1000 + kStep);
  EXPECT_TRUE(account.TryCharge(kStep - 10));  // within the step
  EXPECT_EQ(pool.asks, 1);
  // 200 more: a whole step is not there, the 200 neither (100 left).
  EXPECT_FALSE(account.TryCharge(200));
  EXPECT_EQ(account.used(), 1000 + kStep);
  EXPECT_TRUE(account.TryCharge(100));  // exactly what the pool has left
  EXPECT_EQ(pool.left, 0);
  EXPECT_EQ(account.granted(), account.used());
  account.Release(500);
  EXPECT_TRUE(account.TryCharge(500));  // granted bytes are kept for reuse
}

TEST(MemoryAccountTest, ConcurrentChargesNeverDrawMoreThanThePoolHas) {
  constexpr int64_t kStep = MemoryAccount::kGrowStepBytes;
  FakePool pool(3 * kStep);
  MemoryAccount account(/*limit_bytes=*/0, /*granted_bytes=*/0, [&pool](int64_t bytes) { return pool.Grow(bytes); });
  std::vector<std::thread> threads;
  std::atomic<int64_t> charged{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if (account.TryCharge(kStep / 100)) charged += kStep / 100;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(account.used(), charged.load());
  EXPECT_LE(account.used(), 3 * kStep);
  EXPECT_LE(account.granted(), 3 * kStep);
  EXPECT_GE(account.used(), 3 * kStep - kStep / 100);
}

}  // namespace
}  // namespace serenity
