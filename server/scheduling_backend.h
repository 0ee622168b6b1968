// The service's work without gRPC: read a request, apply the server's
// limits, answer from the plan cache or plan it, and store the result. The
// gRPC layer (scheduler_service.h) only adds threads, deadlines and status
// mapping, so this is tested directly.
#ifndef SERENITY_SERVER_SCHEDULING_BACKEND_H_
#define SERENITY_SERVER_SCHEDULING_BACKEND_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/util/executor.h"
#include "serenity/v1/scheduler.pb.h"
#include "server/metrics.h"
#include "server/plan_cache.h"
#include "server/request_memo.h"

namespace serenity {

struct BackendLimits {
  // Largest graph accepted, in ops.
  int64_t max_ops = 20000;
  // Longest search one job may run, whatever the request asks.
  double max_job_seconds = 60;
};

class SchedulingBackend {
 public:
  // `executor` runs the parallel parts of searches (may be null); `cache`,
  // `metrics` and `memo` may be null. `memo` answers byte-identical
  // requests (used only together with `cache`).
  SchedulingBackend(Executor* executor, PlanCache* cache, ServerMetrics* metrics, BackendLimits limits,
                    RequestMemo* memo = nullptr)
      : executor_(executor), cache_(cache), metrics_(metrics), limits_(limits), memo_(memo) {}
  virtual ~SchedulingBackend() = default;

  // Answers one request: the plan with stats.cache ("miss", "local",
  // "shared") and plan_id set. A repeat of an earlier request's exact bytes
  // is answered from the memo ("local") while the cache holds its plan. `score_only` skips the arena and steps.
  // The search gets the smallest of the request's limit (or the default),
  // the server's max_job_seconds and 80% of `seconds_left` (time before the
  // caller's deadline). InvalidArgument for bad input (naming the problem,
  // and the limit for graphs that are too large); Cancelled when `cancelled`
  // became true; DeadlineExceeded when no time was left.
  // Virtual so that tests can inject failures behind the gRPC layer.
  virtual absl::StatusOr<v1::Plan> Answer(const v1::PlanRequest& request, bool score_only,
                                  double seconds_left = std::numeric_limits<double>::infinity(),
                                  const std::atomic<bool>* cancelled = nullptr);

  // Writes to `reply` the reply to a byte-identical repeat of an earlier
  // request, from the memo alone (microseconds, no import; safe on a gRPC
  // callback thread), and returns true; false, leaving `reply` alone, when
  // Answer must run. Same contract as Answer's reply. `reply` may live on
  // an arena (the copy is made there).
  bool AnswerRepeat(const v1::PlanRequest& request, bool score_only, double seconds_left, v1::Plan* reply);

  // A stored plan by plan_id, as it was first computed. NotFound when the
  // cache does not hold it (or there is no cache); InvalidArgument for a
  // malformed id.
  absl::StatusOr<v1::Plan> GetPlan(const std::string& plan_id);

 private:
  double JobTimeLimit(double request_limit, double seconds_left) const;
  // Writes to `reply` the memoized reply for `request_key` (stats.cache
  // "local", total_ms since `start`) and returns true if the cache still
  // stands behind it; counts a hit, and a miss when `count_miss`.
  bool AnswerFromMemo(const std::string& request_key, bool score_only, double seconds_left,
                      std::chrono::steady_clock::time_point start, bool count_miss, v1::Plan* reply);

  Executor* const executor_;
  PlanCache* const cache_;
  ServerMetrics* const metrics_;
  const BackendLimits limits_;
  RequestMemo* const memo_;
};

}  // namespace serenity

#endif  // SERENITY_SERVER_SCHEDULING_BACKEND_H_
