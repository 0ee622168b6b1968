#include "server/scheduling_backend.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/graph/canonical_graph.h"
#include "core/plan_proto.h"
#include "core/util/status_macros.h"

namespace serenity {
namespace {

double MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

absl::StatusOr<v1::Plan> SchedulingBackend::Answer(const v1::PlanRequest& request, bool score_only,
                                                   double seconds_left, const std::atomic<bool>* cancelled) {
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(PreparedRequest prepared, PrepareRequest(request));
  if (prepared.graph.num_ops() > limits_.max_ops) {
    return absl::InvalidArgumentError(absl::StrCat("the graph has ", prepared.graph.num_ops(),
                                                   " ops; this server accepts at most ", limits_.max_ops));
  }
  PlanOptions& options = prepared.options;
  options.score_only = score_only;
  options.cancelled = cancelled;
  double limit = options.time_limit_seconds > 0 ? options.time_limit_seconds : kDefaultTimeLimitSeconds;
  limit = std::min(limit, limits_.max_job_seconds);
  // Keep a fifth of the time left for import, arena planning and the reply.
  const double usable = seconds_left * 0.8;
  if (usable <= 0) return absl::DeadlineExceededError("the call's deadline had passed before planning began");
  limit = std::min(limit, usable);
  options.time_limit_seconds = limit;

  const CanonicalGraph canonical = Canonicalize(prepared.graph);
  const PlanKey key = MakePlanKey(canonical, options);
  if (cache_ != nullptr) {
    std::optional<PlanCache::Hit> hit = cache_->Lookup(key, /*need_complete=*/!score_only, limit);
    if (hit.has_value()) {
      absl::StatusOr<v1::Plan> plan = RemapStoredPlan(*hit->stored, canonical, prepared.graph, options);
      if (plan.ok()) {
        plan->set_plan_id(key.id);
        plan->mutable_stats()->set_cache(hit->tier);
        plan->mutable_stats()->set_total_ms(MillisSince(start));
        return plan;
      }
      // Never trust a cached plan that does not fit: plan afresh.
    }
  }

  ASSIGN_OR_RETURN(v1::Plan plan, ExecutePreparedRequest(prepared, executor_));
  if (metrics_ != nullptr) {
    metrics_->RecordSearch(plan.stats().states_explored(), plan.certificate() == v1::CERTIFICATE_BEST_FOUND,
                           !plan.feasible());
  }
  plan.set_plan_id(key.id);
  if (cache_ != nullptr) {
    cache_->Store(std::make_shared<const v1::StoredPlan>(
                      MakeStoredPlan(key, canonical, prepared.graph, plan, options)),
                  key.id);
  }
  plan.mutable_stats()->set_cache("miss");
  plan.mutable_stats()->set_total_ms(MillisSince(start));
  return plan;
}

absl::StatusOr<v1::Plan> SchedulingBackend::GetPlan(const std::string& plan_id) {
  if (plan_id.size() != 32 || plan_id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return absl::InvalidArgumentError("a plan_id is 32 lowercase hex digits, as returned in Plan.plan_id");
  }
  std::shared_ptr<const v1::StoredPlan> stored = cache_ != nullptr ? cache_->Get(plan_id) : nullptr;
  if (stored == nullptr) {
    return absl::NotFoundError(absl::StrCat("no stored plan ", plan_id, " (never computed here, or evicted)"));
  }
  v1::Plan plan = stored->plan();
  plan.set_plan_id(plan_id);
  return plan;
}

}  // namespace serenity
