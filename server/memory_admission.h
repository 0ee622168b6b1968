// Server-wide memory admission (issue 14): every job first takes a ticket
// for the memory it is estimated to need (EstimatePlanningBytes of its
// request, core/request_scan.h), so that concurrent large requests wait
// their turn, or are refused, instead of all being built at once.
//
// A job that can never fit (its estimate exceeds the per-job limit or the
// whole capacity) is refused at once with FAILED_PRECONDITION, a code a
// client must not retry. Otherwise it waits in one first-come-first-served
// line until its bytes are free: a large job at the head of the line is not
// overtaken by a stream of small ones (a small job waits behind it even when
// it would fit). A job still waiting at its deadline is refused with
// RESOURCE_EXHAUSTED (transient: retry later), a cancelled one with
// CANCELLED. No gRPC here.
#ifndef SERENITY_SERVER_MEMORY_ADMISSION_H_
#define SERENITY_SERVER_MEMORY_ADMISSION_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace serenity {

class MemoryAdmission {
 public:
  // Bytes held by one admitted job; returns them when destroyed (or on
  // Release). Move-only. Must not outlive its MemoryAdmission. A default
  // constructed Ticket holds nothing.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept;
    Ticket& operator=(Ticket&& other) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() { Release(); }

    int64_t bytes() const { return bytes_; }

    // Keeps only `new_bytes` (0 <= new_bytes <= bytes()) and returns the
    // rest, e.g. once the request's message is freed. False, changing
    // nothing, for any other value: a ticket never grows. Waiters the freed
    // bytes admit are told on this thread before Resize returns.
    bool Resize(int64_t new_bytes);

    // Takes `more` bytes (>= 0) at once if the server has them free and the
    // ticket stays within max_job_bytes(); false, changing nothing,
    // otherwise. Never waits, and does not queue behind waiting jobs: a
    // running job's growth (its planner's memory account) is served first,
    // and a refusal makes that job fall back to cheaper methods.
    bool TryGrow(int64_t more);
    // Returns all the bytes now (the destructor then does nothing). Waiters
    // the freed bytes admit are told on this thread before Release returns.
    void Release();

   private:
    friend class MemoryAdmission;
    Ticket(MemoryAdmission* owner, int64_t bytes) : owner_(owner), bytes_(bytes) {}

    MemoryAdmission* owner_ = nullptr;
    int64_t bytes_ = 0;
  };

  // `capacity_bytes` >= 1: the bytes all admitted jobs may hold together
  // (--max-server-mb). `max_job_bytes`: the most one job may hold
  // (--max-job-mb); 0 or more than the capacity means the capacity.
  explicit MemoryAdmission(int64_t capacity_bytes, int64_t max_job_bytes = 0);
  // No Admit may be waiting and no Ticket may be left (then no async waiter
  // is left either; one that were would be refused with UNAVAILABLE).
  ~MemoryAdmission();

  MemoryAdmission(const MemoryAdmission&) = delete;
  MemoryAdmission& operator=(const MemoryAdmission&) = delete;

  // Takes `bytes` (>= 0) for a job, blocking this thread while it waits in
  // line. FAILED_PRECONDITION when `bytes` exceeds max_job_bytes() (naming
  // both numbers, "the server's memory limit" and --max-job-mb; or the
  // capacity and --max-server-mb when that is the smaller): the job can
  // never run here. INVALID_ARGUMENT for negative bytes. RESOURCE_EXHAUSTED
  // "the server is busy: its memory is held by running jobs; retry
  // later" when the bytes are not free by `deadline` (at once when the job
  // would have to wait and the deadline has passed). CANCELLED once
  // `*cancelled` (may be null) is true: the flag is checked when the wait
  // starts, at least every 50 ms while waiting, and at once after
  // WakeWaiters().
  absl::StatusOr<Ticket> Admit(int64_t bytes, absl::Time deadline, const std::atomic<bool>* cancelled = nullptr);

  // Takes `bytes` at once if they are free (CheckFits first), without
  // waiting or queueing behind waiting jobs: for the bytes of a request as
  // received, before its job is queued. RESOURCE_EXHAUSTED (as Admit's)
  // when they are not free.
  absl::StatusOr<Ticket> TryAdmit(int64_t bytes);

  // Identifies an async waiter for CancelWait; 0 for none.
  using WaitId = uint64_t;

  // The non-blocking Admit, for gRPC's callback API. Calls `done` exactly
  // once with the ticket or the refusal of Admit (same codes and messages;
  // CANCELLED through CancelWait, UNAVAILABLE from the destructor):
  //  - at once, on this thread before AdmitAsync returns, when the job is
  //    admitted or refused without waiting (then returns 0);
  //  - otherwise later (returns the waiter's id): on the thread that frees
  //    the bytes that admit it (a Ticket's destructor, Release or Resize),
  //    or on the thread that refuses it: one that examines the line after
  //    its deadline (ExpireWaiters, or any Admit, AdmitAsync, Release,
  //    Resize or CancelWait), or CancelWait's.
  // There is no timer thread: a waiter past its deadline is refused when
  // the line is next examined, so the server should call ExpireWaiters()
  // periodically (e.g. every 100 ms) for a timely answer on an idle server.
  // `done` runs with no lock of this class held: it may Admit, release
  // tickets or call AdmitAsync again.
  WaitId AdmitAsync(int64_t bytes, absl::Time deadline, std::function<void(absl::StatusOr<Ticket>)> done);

  // Takes waiter `id` out of the line and calls its `done` with CANCELLED
  // on this thread: true. False when it is no longer waiting (its `done`
  // has run or is running elsewhere) or for id 0.
  bool CancelWait(WaitId id);

  // Refuses every waiter whose deadline is at or before `now`
  // (RESOURCE_EXHAUSTED; async waiters' `done` runs on this thread), and
  // admits the waiters that this lets through. Returns the waiters
  // refused.
  int ExpireWaiters(absl::Time now = absl::Now());

  // Wakes the blocking Admit calls so they check their cancelled flags now.
  void WakeWaiters();

  // OK when a job of `bytes` could be admitted some day; the
  // FAILED_PRECONDITION (or INVALID_ARGUMENT) of Admit otherwise.
  absl::Status CheckFits(int64_t bytes) const;

  int64_t capacity() const { return capacity_; }
  int64_t max_job_bytes() const { return max_job_bytes_; }
  // Bytes held by admitted jobs, and jobs waiting in line (for metrics and
  // tests).
  int64_t held() const;
  int waiting() const;

 private:
  struct Waiter;
  // A `done` to call once the lock is dropped.
  struct Reply;

  // Takes `more` bytes for a ticket now holding `held_by_ticket`, if free.
  bool TryTake(int64_t held_by_ticket, int64_t more);
  // The callers of Busy, Pump and Remove hold mu_.
  absl::Status Busy() const;
  // Returns bytes to the pool and admits who can go; `replies` collects the
  // async answers to send.
  void Free(int64_t bytes);
  // Refuses the waiters past `now`, then admits waiters from the head of
  // the line while the head fits.
  void Pump(absl::Time now, std::deque<Reply>* replies);
  static void Send(std::deque<Reply>* replies);
  void Remove(const Waiter* waiter);

  const int64_t capacity_;
  const int64_t max_job_bytes_;
  // std::mutex, not absl::Mutex: Debian's abseil is not instrumented, so
  // ThreadSanitizer would not see absl::Mutex order accesses.
  mutable std::mutex mu_;
  std::condition_variable changed_;  // a blocking waiter's state changed, or WakeWaiters
  // Guarded by mu_:
  int64_t held_ = 0;
  std::deque<Waiter*> line_;
  WaitId next_id_ = 1;
};

// Paths DefaultMemoryLimitBytes reads (injectable for tests).
struct MemoryLimitFiles {
  std::string cgroup_v2 = "/sys/fs/cgroup/memory.max";
  std::string cgroup_v1 = "/sys/fs/cgroup/memory/memory.limit_in_bytes";
  std::string meminfo = "/proc/meminfo";
};

// The memory this process may use, in bytes: the smallest of the cgroup
// limit (v2 memory.max, else v1 memory.limit_in_bytes; "max", a value of
// 2^60 or more, or an unreadable file mean no limit) and MemTotal of
// /proc/meminfo. 0 when neither is known.
int64_t MemoryAvailableBytes(const MemoryLimitFiles& files = MemoryLimitFiles());

// The default capacity of the server's MemoryAdmission: 3/4 of
// MemoryAvailableBytes (leaving room for gRPC buffers, the plan cache and
// the search memo, which the estimates leave out); 0 when it is unknown
// (the server then needs an explicit --max-server-mb).
int64_t DefaultMemoryLimitBytes(const MemoryLimitFiles& files = MemoryLimitFiles());

}  // namespace serenity

#endif  // SERENITY_SERVER_MEMORY_ADMISSION_H_
