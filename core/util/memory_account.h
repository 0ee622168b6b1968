// A per-job memory account: the planner charges its large allocations here
// before making them, so a job that would use more than its share falls back
// to a cheaper method or fails with ResourceExhausted instead of running the
// process out of memory. Only the big, growable structures are charged (the
// search's memo, reachability bitsets, arena co-live lists and searches,
// defragmentation); small per-op vectors are not.
#ifndef SERENITY_CORE_UTIL_MEMORY_ACCOUNT_H_
#define SERENITY_CORE_UTIL_MEMORY_ACCOUNT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "absl/status/status.h"

namespace serenity {

// A thread-safe byte counter with a limit. Shared by every thread of one
// job; owned by the caller.
class MemoryAccount {
 public:
  // Asks a larger pool (e.g. the server's memory admission) for `bytes`
  // more for this account; true when granted. Called with the account's
  // growth lock held, never for a charge that stays within what the pool
  // already granted.
  using Grow = std::function<bool(int64_t bytes)>;

  // `limit_bytes` <= 0: unlimited (charges always succeed, and are counted).
  explicit MemoryAccount(int64_t limit_bytes = 0) : limit_(limit_bytes) {}

  // An account that also draws from a pool: `granted_bytes` are the pool's
  // already (the job's admission ticket); a charge beyond what was granted
  // asks `grow` for more, in steps of at least kGrowStepBytes (less when the
  // limit is nearer), and fails when the pool says no.
  MemoryAccount(int64_t limit_bytes, int64_t granted_bytes, Grow grow)
      : limit_(limit_bytes), granted_(granted_bytes), grow_(std::move(grow)) {}
  static constexpr int64_t kGrowStepBytes = 16 << 20;
  MemoryAccount(const MemoryAccount&) = delete;
  MemoryAccount& operator=(const MemoryAccount&) = delete;

  // Adds `bytes` (>= 0) when the total stays within the limit and returns
  // true; otherwise changes nothing and returns false.
  bool TryCharge(int64_t bytes);
  // Gives back `bytes` charged before.
  void Release(int64_t bytes);

  int64_t limit() const { return limit_; }
  // Bytes the pool has granted this account (granted_bytes plus every
  // grant of `grow`); unused without a pool.
  int64_t granted() const { return granted_.load(std::memory_order_relaxed); }
  bool unlimited() const { return limit_ <= 0; }
  // Bytes charged now, and the most charged at once.
  int64_t used() const { return used_.load(std::memory_order_relaxed); }
  int64_t peak() const { return peak_.load(std::memory_order_relaxed); }

 private:
  // Makes granted_ cover `used` bytes; false when the pool refuses.
  bool Cover(int64_t used);

  const int64_t limit_;
  std::atomic<int64_t> used_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> granted_{0};
  const Grow grow_;
  std::mutex grow_mu_;  // one request to the pool at a time
};

// TryCharge on a possibly null account (null: unlimited, always true).
inline bool TryCharge(MemoryAccount* account, int64_t bytes) { return account == nullptr || account->TryCharge(bytes); }

// ResourceExhausted naming the account's limit, the bytes asked for and
// `what` needed them, e.g. "the search's reachability bitsets".
absl::Status MemoryLimitError(const MemoryAccount* account, int64_t bytes, const std::string& what);

// Holds a charge on an account and releases it when destroyed. Movable; a
// null account holds nothing and every charge succeeds.
class MemoryCharge {
 public:
  explicit MemoryCharge(MemoryAccount* account = nullptr) : account_(account) {}
  ~MemoryCharge() { Reset(); }
  MemoryCharge(MemoryCharge&& other) noexcept : account_(other.account_), bytes_(other.bytes_) { other.bytes_ = 0; }
  MemoryCharge& operator=(MemoryCharge&& other) noexcept;
  MemoryCharge(const MemoryCharge&) = delete;
  MemoryCharge& operator=(const MemoryCharge&) = delete;

  // Charges `bytes` more; false (and nothing charged) when over the limit.
  bool TryAdd(int64_t bytes);
  // Sets the held charge to `bytes` (growing or shrinking it); false and
  // unchanged when growing goes over the limit.
  bool TryResize(int64_t bytes);
  // Releases everything held.
  void Reset();
  int64_t bytes() const { return bytes_; }

 private:
  MemoryAccount* account_;
  int64_t bytes_ = 0;
};

}  // namespace serenity

#endif  // SERENITY_CORE_UTIL_MEMORY_ACCOUNT_H_
