#include "core/util/memory_account.h"

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
