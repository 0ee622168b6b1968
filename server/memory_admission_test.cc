#include "server/memory_admission.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Ticket = MemoryAdmission::Ticket;

const absl::Time kNever = absl::InfiniteFuture();

// Records what an AdmitAsync call was told; keeps the ticket.
struct AsyncResult {
  bool called = false;
  absl::StatusOr<Ticket> result = absl::UnknownError("not called");

  std::function<void(absl::StatusOr<Ticket>)> Done() {
    return [this](absl::StatusOr<Ticket> r) {
      EXPECT_FALSE(called) << "done called twice";
      called = true;
      result = std::move(r);
    };
  }
};

// Waits (without a time limit) until `admission` has `n` waiters in line.
void AwaitWaiting(const MemoryAdmission& admission, int n) {
  while (admission.waiting() != n) std::this_thread::yield();
}

TEST(MemoryAdmissionTest, AdmitsWhatFitsAndTicketsReturnTheirBytes) {
  MemoryAdmission admission(100);
  {
    absl::StatusOr<Ticket> a = admission.Admit(60, kNever);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->bytes(), 60);
    absl::StatusOr<Ticket> b = admission.Admit(40, kNever);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(admission.held(), 100);
    absl::StatusOr<Ticket> zero = admission.Admit(0, kNever);
    ASSERT_TRUE(zero.ok());
    a->Release();
    EXPECT_EQ(a->bytes(), 0);
    EXPECT_EQ(admission.held(), 40);
  }
  EXPECT_EQ(admission.held(), 0);
  EXPECT_EQ(admission.waiting(), 0);
}

TEST(MemoryAdmissionTest, TicketsMove) {
  MemoryAdmission admission(100);
  Ticket t = *admission.Admit(30, kNever);
  Ticket moved(std::move(t));
  EXPECT_EQ(t.bytes(), 0);  // NOLINT(bugprone-use-after-move): moved-from holds nothing
  EXPECT_EQ(moved.bytes(), 30);
  EXPECT_EQ(admission.held(), 30);
  Ticket other = *admission.Admit(50, kNever);
  other = std::move(moved);  // returns other's 50 bytes
  EXPECT_EQ(admission.held(), 30);
  EXPECT_EQ(other.bytes(), 30);
  Ticket empty;
  EXPECT_EQ(empty.bytes(), 0);
  EXPECT_TRUE(empty.Resize(0));
  empty.Release();
}

TEST(MemoryAdmissionTest, RefusesAJobThatCanNeverFit) {
  MemoryAdmission admission(100 << 20, 50 << 20);
  EXPECT_EQ(admission.max_job_bytes(), 50 << 20);
  absl::StatusOr<Ticket> t = admission.Admit((60 << 20) + 1, kNever);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(t.status().message(), AllOf(HasSubstr("62914561 bytes"), HasSubstr("52428800 bytes"),
                                          HasSubstr("the server's memory limit"), HasSubstr("--max-job-mb")));

  MemoryAdmission whole(100);  // no job limit: the capacity is the limit
  EXPECT_EQ(whole.max_job_bytes(), 100);
  t = whole.Admit(101, kNever);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(t.status().message(),
              AllOf(HasSubstr("101 bytes"), HasSubstr("100 bytes"), HasSubstr("--max-server-mb")));

  AsyncResult async;
  EXPECT_EQ(whole.AdmitAsync(101, kNever, async.Done()), 0u);
  ASSERT_TRUE(async.called);  // at once
  EXPECT_EQ(async.result.status().code(), absl::StatusCode::kFailedPrecondition);

  EXPECT_EQ(whole.Admit(-1, kNever).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(whole.held(), 0);
}

TEST(MemoryAdmissionTest, AJobLimitAboveTheCapacityIsTheCapacity) {
  MemoryAdmission admission(100, 1000);
  EXPECT_EQ(admission.max_job_bytes(), 100);
}

TEST(MemoryAdmissionTest, RefusesWhenTheDeadlinePassesWhileWaiting) {
  MemoryAdmission admission(100);
  Ticket held = *admission.Admit(100, kNever);
  // Already past: refused without waiting.
  absl::StatusOr<Ticket> t = admission.Admit(10, absl::Now() - absl::Seconds(1));
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(t.status().message(), "the server is busy: its memory is held by running jobs; retry later");
  // Waits, then refused.
  t = admission.Admit(10, absl::Now() + absl::Milliseconds(20));
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(admission.waiting(), 0);
  // A job that fits is admitted whatever its deadline.
  held.Release();
  EXPECT_TRUE(admission.Admit(10, absl::Now() - absl::Seconds(1)).ok());
}

TEST(MemoryAdmissionTest, AdmitsWaitersInArrivalOrder) {
  MemoryAdmission admission(100);
  std::optional<Ticket> full(*admission.Admit(100, kNever));
  std::vector<char> order;
  std::vector<Ticket> tickets;
  auto record = [&](char name) {
    return [&, name](absl::StatusOr<Ticket> t) {
      ASSERT_TRUE(t.ok()) << t.status();
      order.push_back(name);
      tickets.push_back(*std::move(t));
    };
  };
  EXPECT_NE(admission.AdmitAsync(80, kNever, record('a')), 0u);
  EXPECT_NE(admission.AdmitAsync(10, kNever, record('b')), 0u);
  EXPECT_NE(admission.AdmitAsync(20, kNever, record('c')), 0u);
  EXPECT_EQ(admission.waiting(), 3);
  EXPECT_TRUE(order.empty());
  full.reset();  // frees 100: a (80) and b (10) fit; c (20) would not
  EXPECT_THAT(order, ElementsAre('a', 'b'));
  EXPECT_EQ(admission.held(), 90);
  tickets.front().Release();  // a's 80
  EXPECT_THAT(order, ElementsAre('a', 'b', 'c'));
  EXPECT_EQ(admission.held(), 30);
  EXPECT_EQ(admission.waiting(), 0);
}

TEST(MemoryAdmissionTest, SmallJobsDoNotOvertakeABigOne) {
  MemoryAdmission admission(100);
  std::optional<Ticket> small(*admission.Admit(30, kNever));
  AsyncResult big, later;
  admission.AdmitAsync(100, kNever, big.Done());
  EXPECT_FALSE(big.called);
  // 10 bytes are free many times over, but the big job is first in line.
  admission.AdmitAsync(10, kNever, later.Done());
  EXPECT_FALSE(later.called);
  EXPECT_EQ(admission.Admit(10, absl::Now() - absl::Seconds(1)).status().code(), absl::StatusCode::kResourceExhausted);
  small.reset();
  ASSERT_TRUE(big.called);
  ASSERT_TRUE(big.result.ok());
  EXPECT_FALSE(later.called);
  big.result->Release();
  ASSERT_TRUE(later.called);
  EXPECT_TRUE(later.result.ok());
}

TEST(MemoryAdmissionTest, ABlockingWaiterIsAdmittedWhenBytesAreFreed) {
  MemoryAdmission admission(100);
  std::optional<Ticket> full(*admission.Admit(100, kNever));
  absl::StatusOr<Ticket> got = absl::UnknownError("unset");
  std::thread waiter([&] { got = admission.Admit(70, kNever); });
  AwaitWaiting(admission, 1);
  full.reset();
  waiter.join();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(admission.held(), 70);
}

TEST(MemoryAdmissionTest, ACancelledBlockingWaiterLeavesTheLine) {
  MemoryAdmission admission(100);
  Ticket full = *admission.Admit(100, kNever);
  std::atomic<bool> cancelled{false};
  absl::StatusOr<Ticket> got = absl::UnknownError("unset");
  std::thread waiter([&] { got = admission.Admit(10, kNever, &cancelled); });
  AwaitWaiting(admission, 1);
  cancelled = true;
  admission.WakeWaiters();
  waiter.join();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(admission.waiting(), 0);
  // Already cancelled: refused without waiting.
  EXPECT_EQ(admission.Admit(10, kNever, &cancelled).status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(admission.held(), 100);
}

TEST(MemoryAdmissionTest, ACancelledHeadLetsTheNextWaiterIn) {
  MemoryAdmission admission(100);
  Ticket part = *admission.Admit(50, kNever);
  AsyncResult big, small;
  const MemoryAdmission::WaitId id = admission.AdmitAsync(100, kNever, big.Done());
  admission.AdmitAsync(40, kNever, small.Done());
  EXPECT_FALSE(small.called);
  EXPECT_TRUE(admission.CancelWait(id));
  ASSERT_TRUE(big.called);
  EXPECT_EQ(big.result.status().code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(small.called);  // 40 fits beside 50 once the head is gone
  EXPECT_TRUE(small.result.ok());
  EXPECT_FALSE(admission.CancelWait(id));
  EXPECT_FALSE(admission.CancelWait(0));
}

TEST(MemoryAdmissionTest, ExpireWaitersRefusesAsyncWaitersPastTheirDeadline) {
  MemoryAdmission admission(100);
  Ticket full = *admission.Admit(100, kNever);
  const absl::Time now = absl::Now();
  AsyncResult soon, late;
  admission.AdmitAsync(10, now + absl::Hours(1), soon.Done());
  admission.AdmitAsync(10, now + absl::Hours(3), late.Done());
  EXPECT_EQ(admission.ExpireWaiters(now), 0);
  EXPECT_FALSE(soon.called);
  EXPECT_EQ(admission.ExpireWaiters(now + absl::Hours(2)), 1);
  ASSERT_TRUE(soon.called);
  EXPECT_EQ(soon.result.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(soon.result.status().message(), HasSubstr("its memory is held by running jobs"));
  EXPECT_FALSE(late.called);
  EXPECT_EQ(admission.waiting(), 1);
  full.Release();  // the one left gets in (nothing may wait past the test)
  ASSERT_TRUE(late.called);
  EXPECT_TRUE(late.result.ok());
  late.result->Release();
}

TEST(MemoryAdmissionTest, ResizeReturnsBytesAndNeverGrows) {
  MemoryAdmission admission(100);
  Ticket t = *admission.Admit(100, kNever);
  AsyncResult waiter;
  admission.AdmitAsync(50, kNever, waiter.Done());
  EXPECT_FALSE(t.Resize(101));
  EXPECT_FALSE(t.Resize(-1));
  EXPECT_EQ(t.bytes(), 100);
  EXPECT_TRUE(t.Resize(60));
  EXPECT_FALSE(waiter.called);  // 40 free, 50 needed
  EXPECT_TRUE(t.Resize(50));
  ASSERT_TRUE(waiter.called);
  EXPECT_TRUE(waiter.result.ok());
  EXPECT_EQ(admission.held(), 100);
  EXPECT_TRUE(t.Resize(0));
  EXPECT_EQ(admission.held(), 50);
}

// A running job's ticket grows at once when the bytes are free, within the
// job limit and the capacity, and never waits.
TEST(MemoryAdmissionTest, TryGrowTakesFreeBytesWithinTheLimits) {
  MemoryAdmission admission(100, /*max_job_bytes=*/60);
  Ticket a = *admission.Admit(40, kNever);
  Ticket b = *admission.Admit(30, kNever);
  EXPECT_TRUE(a.TryGrow(20));  // 60: the job limit
  EXPECT_FALSE(a.TryGrow(1));  // past it
  EXPECT_EQ(a.bytes(), 60);
  EXPECT_FALSE(b.TryGrow(11));  // 101 held: past the capacity
  EXPECT_TRUE(b.TryGrow(10));
  EXPECT_EQ(admission.held(), 100);
  EXPECT_FALSE(b.TryGrow(-1));
  a.Release();
  EXPECT_EQ(admission.held(), 40);
  Ticket none;
  EXPECT_FALSE(none.TryGrow(1));
}

// TryAdmit takes free bytes at once or says busy; it never waits.
TEST(MemoryAdmissionTest, TryAdmitTakesFreeBytesOrSaysBusy) {
  MemoryAdmission admission(100, /*max_job_bytes=*/80);
  absl::StatusOr<Ticket> a = admission.TryAdmit(70);
  ASSERT_TRUE(a.ok());
  absl::StatusOr<Ticket> b = admission.TryAdmit(40);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(admission.TryAdmit(81).status().code(), absl::StatusCode::kFailedPrecondition);
  a->Release();
  EXPECT_TRUE(admission.TryAdmit(40).ok());
  EXPECT_EQ(admission.held(), 0);  // the last ticket was not kept
}

TEST(MemoryAdmissionTest, ACallbackMayReleaseAndAdmitAgain) {
  MemoryAdmission admission(100);
  std::optional<Ticket> full(*admission.Admit(100, kNever));
  AsyncResult inner;
  bool outer_called = false;
  admission.AdmitAsync(80, kNever, [&](absl::StatusOr<Ticket> t) {
    outer_called = true;
    ASSERT_TRUE(t.ok());
    t->Release();  // re-enters the admission from its own callback
    admission.AdmitAsync(90, kNever, inner.Done());
  });
  full.reset();
  EXPECT_TRUE(outer_called);
  ASSERT_TRUE(inner.called);
  EXPECT_TRUE(inner.result.ok());
  EXPECT_EQ(admission.held(), 90);
}

TEST(MemoryAdmissionTest, ConcurrentJobsNeverExceedTheCapacity) {
  constexpr int64_t kCapacity = 1000;
  MemoryAdmission admission(kCapacity);
  std::atomic<int64_t> in_use{0};
  std::atomic<int64_t> worst{0};
  std::atomic<int> admitted{0};
  auto use = [&](Ticket& t) {
    const int64_t now = in_use.fetch_add(t.bytes()) + t.bytes();
    int64_t seen = worst.load();
    while (now > seen && !worst.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::yield();
    in_use.fetch_sub(t.bytes());
    admitted.fetch_add(1);
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      std::mt19937 rng(i);
      for (int round = 0; round < 300; ++round) {
        const int64_t bytes = std::uniform_int_distribution<int64_t>(1, kCapacity)(rng);
        if (round % 3 == 0) {
          // Async: the callback may run on another thread (and outlive
          // this iteration's wait, so it shares the notification).
          auto done = std::make_shared<std::promise<void>>();
          std::future<void> finished = done->get_future();
          admission.AdmitAsync(bytes, kNever, [&use, done](absl::StatusOr<Ticket> t) {
            EXPECT_TRUE(t.ok()) << t.status();
            if (t.ok()) {
              use(*t);
              t->Resize(t->bytes() / 2);
            }
            done->set_value();
          });
          finished.wait();
        } else {
          absl::StatusOr<Ticket> t = admission.Admit(bytes, kNever);
          ASSERT_TRUE(t.ok()) << t.status();
          use(*t);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 6 * 300);
  EXPECT_LE(worst.load(), kCapacity);
  EXPECT_EQ(admission.held(), 0);
  EXPECT_EQ(admission.waiting(), 0);
}

TEST(MemoryAdmissionTest, ConcurrentCancelsAndDeadlinesLeaveNothingBehind) {
  MemoryAdmission admission(100);
  std::optional<Ticket> full(*admission.Admit(100, kNever));
  std::atomic<bool> cancelled{false};
  std::vector<std::thread> threads;
  std::atomic<int> cancels{0}, busy{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      const absl::Time deadline = i % 2 == 0 ? kNever : absl::Now() + absl::Milliseconds(5);
      absl::StatusOr<Ticket> t = admission.Admit(60, deadline, &cancelled);
      if (t.status().code() == absl::StatusCode::kCancelled) cancels.fetch_add(1);
      if (t.status().code() == absl::StatusCode::kResourceExhausted) busy.fetch_add(1);
    });
  }
  // The two without a deadline stay until cancelled.
  while (busy.load() < 2) std::this_thread::yield();
  AwaitWaiting(admission, 2);
  cancelled = true;
  admission.WakeWaiters();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(cancels.load(), 2);
  EXPECT_EQ(admission.waiting(), 0);
  full.reset();
  EXPECT_EQ(admission.held(), 0);
}

class MemoryLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("memory_limit_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    files_.cgroup_v2 = (dir_ / "memory.max").string();
    files_.cgroup_v1 = (dir_ / "memory.limit_in_bytes").string();
    files_.meminfo = (dir_ / "meminfo").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

  std::filesystem::path dir_;
  MemoryLimitFiles files_;
};

constexpr int64_t kGiB = int64_t{1} << 30;

TEST_F(MemoryLimitTest, TakesTheSmallerOfTheCgroupLimitAndMemTotal) {
  Write(files_.meminfo, "MemTotal:        8388608 kB\nMemFree:         1234 kB\nMemAvailable:  5000 kB\n");
  EXPECT_EQ(MemoryAvailableBytes(files_), 8 * kGiB);  // no cgroup files
  EXPECT_EQ(DefaultMemoryLimitBytes(files_), 6 * kGiB);

  Write(files_.cgroup_v2, "max\n");
  EXPECT_EQ(MemoryAvailableBytes(files_), 8 * kGiB);
  Write(files_.cgroup_v2, "4294967296\n");
  EXPECT_EQ(MemoryAvailableBytes(files_), 4 * kGiB);
  EXPECT_EQ(DefaultMemoryLimitBytes(files_), 3 * kGiB);
  Write(files_.cgroup_v2, "17179869184\n");  // above MemTotal
  EXPECT_EQ(MemoryAvailableBytes(files_), 8 * kGiB);
}

TEST_F(MemoryLimitTest, FallsBackToCgroupV1AndIgnoresUnlimitedValues) {
  Write(files_.meminfo, "MemFree: 1 kB\nMemTotal: 16777216 kB\n");
  Write(files_.cgroup_v1, "9223372036854771712\n");  // v1's "unlimited"
  EXPECT_EQ(MemoryAvailableBytes(files_), 16 * kGiB);
  Write(files_.cgroup_v1, "2147483648\n");
  EXPECT_EQ(MemoryAvailableBytes(files_), 2 * kGiB);
  Write(files_.cgroup_v2, "max\n");  // v2 present but unlimited: v1 still read
  EXPECT_EQ(MemoryAvailableBytes(files_), 2 * kGiB);
  Write(files_.cgroup_v2, "1073741824\n");  // v2 wins when set
  EXPECT_EQ(MemoryAvailableBytes(files_), 1 * kGiB);
}

TEST_F(MemoryLimitTest, UnreadableOrJunkFilesMeanUnknown) {
  EXPECT_EQ(MemoryAvailableBytes(files_), 0);
  EXPECT_EQ(DefaultMemoryLimitBytes(files_), 0);
  Write(files_.meminfo, "MemTotal: lots\n");
  Write(files_.cgroup_v2, "-5\n");
  EXPECT_EQ(MemoryAvailableBytes(files_), 0);
  Write(files_.cgroup_v2, "3221225472");  // no newline
  EXPECT_EQ(MemoryAvailableBytes(files_), 3 * kGiB);
}

TEST(MemoryLimitRealTest, ThisMachineHasALimit) {
  EXPECT_GT(DefaultMemoryLimitBytes(), 0);
  EXPECT_LE(DefaultMemoryLimitBytes(), MemoryAvailableBytes());
}

}  // namespace
}  // namespace serenity
