// The service's work without gRPC: read a request, apply the server's
// limits, answer from the plan cache or plan it, and store the result. The
// gRPC layer (scheduler_service.h) only adds threads, deadlines and status
// mapping, so this is tested directly.
#ifndef SERENITY_SERVER_SCHEDULING_BACKEND_H_
#define SERENITY_SERVER_SCHEDULING_BACKEND_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "core/util/executor.h"
#include "serenity/v1/scheduler.pb.h"
#include "server/metrics.h"
#include "server/plan_cache.h"
#include "server/request_memo.h"
#include "server/stored_plan.h"

namespace serenity {

struct BackendOptions {
  // Largest graph accepted, in ops.
  int64_t max_ops = 200000;
  // Longest search one job may run, whatever the request asks.
  double max_job_seconds = 60;
  // Most search states a request may ask for (options.max_search_states);
  // larger asks, and requests that ask none, get this many at most.
  int64_t max_search_states = SearchOptions().max_states;
  // Most bytes one job's planner may charge to its memory account
  // (core/util/memory_account.h; --max-job-mb); 0: no limit.
  int64_t max_job_bytes = 0;
  // Whether tenants share cached plans (stored_plan.h).
  CacheScope cache_scope = CacheScope::kTenant;
  // Mixed into every plan_id (MakePlanId); replicas that share it give the
  // same plan_id to the same request.
  std::string plan_id_secret;
};

// One call's circumstances.
struct CallContext {
  // Seconds before the caller's deadline.
  double seconds_left = std::numeric_limits<double>::infinity();
  // When set and it becomes true, the job stops (the caller went away).
  const std::atomic<bool>* cancelled = nullptr;
  // Who is calling (tenants.h); empty when the server has no tenants.
  std::string tenant;
  // The job's memory: `granted_bytes` already admitted for it (its
  // admission ticket), `grow_memory` (may be empty) asks the server for
  // more, and `build_bytes` of them are taken by the request's message and
  // graph, which the planner does not charge itself (request_scan.h).
  int64_t granted_bytes = 0;
  std::function<bool(int64_t)> grow_memory;
  int64_t build_bytes = 0;
};

class SchedulingBackend {
 public:
  // `executor` runs the parallel parts of searches (may be null); `cache`,
  // `metrics` and `memo` may be null. `memo` answers byte-identical
  // requests (used only together with `cache`).
  SchedulingBackend(Executor* executor, PlanCache* cache, ServerMetrics* metrics, BackendOptions options,
                    RequestMemo* memo = nullptr)
      : executor_(executor), cache_(cache), metrics_(metrics), options_(std::move(options)), memo_(memo) {}
  virtual ~SchedulingBackend() = default;

  const BackendOptions& options() const { return options_; }

  // Answers one request of `call.tenant`: the plan with stats.cache
  // ("miss", "local", "shared") and plan_id set. Only plans of the same
  // tenant answer it unless the cache scope is shared. A repeat of an
  // earlier request's exact bytes from the same tenant is answered from the
  // memo ("local") while the cache holds its plan. `score_only` skips the
  // arena and steps. The search gets the smallest of the request's limit
  // (or the default), the server's max_job_seconds and 80% of
  // `call.seconds_left`; the whole job ends before that deadline (phases
  // that would run past it fall back, and the reply names them). The
  // planner charges its large allocations to a memory account of
  // max_job_bytes drawing on the call's memory (see CallContext).
  // InvalidArgument for bad input (naming the problem, and the limit for
  // graphs that are too large); ResourceExhausted when the job's memory
  // cannot hold what planning needs; Cancelled when `call.cancelled` became
  // true; DeadlineExceeded when no time was left.
  // With options.rewrite (an ONNX request; core/rewrite/choose.h) the plan
  // is the rewritten graph's, with Plan.rewrite; it is planned afresh every
  // time (stats.cache "miss", no plan_id: neither the cache nor the memo
  // holds rewritten plans), the whole job (every site tried) also ends
  // within max_job_seconds plus the phases after a search, and the account
  // is charged the rewrite's copies of the model up front (ResourceExhausted
  // when it cannot hold them).
  // Virtual so that tests can inject failures behind the gRPC layer.
  virtual absl::StatusOr<v1::Plan> Answer(const v1::PlanRequest& request, bool score_only,
                                          const CallContext& call = {});

  // Writes to `reply` the reply to a byte-identical repeat of an earlier
  // request, from the memo alone (microseconds, no import; safe on a gRPC
  // callback thread), and returns true; false, leaving `reply` alone, when
  // Answer must run. Same contract as Answer's reply. `reply` may live on
  // an arena (the copy is made there).
  bool AnswerRepeat(const v1::PlanRequest& request, bool score_only, const CallContext& call, v1::Plan* reply);

  // The plan behind `plan_id` for `call.tenant`, in the names of the request
  // that got that plan_id: only that request's tenant gets it. A plan read
  // from Redis is checked against the request's graph first. NotFound when
  // the cache does not hold it, or another tenant asks (the same answer, so
  // a plan_id reveals nothing to another tenant); InvalidArgument for a
  // malformed id.
  // The job ends by 90% of `call.seconds_left` (a reordered op list's
  // baselines are recomputed within it) and holds at most max_job_bytes.
  absl::StatusOr<v1::Plan> GetPlan(const std::string& plan_id, const CallContext& call = {});

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
  const BackendOptions options_;
  RequestMemo* const memo_;
};

}  // namespace serenity

#endif  // SERENITY_SERVER_SCHEDULING_BACKEND_H_
