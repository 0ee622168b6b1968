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

// The search time limit of one job: the request's (or the default), capped
// by the server and by 80% of the time before the caller's deadline (the
// rest is for import, arena planning and the reply). Not positive when no
// time is left.
double SchedulingBackend::JobTimeLimit(double request_limit, double seconds_left) const {
  double limit = request_limit > 0 ? request_limit : kDefaultTimeLimitSeconds;
  limit = std::min(limit, limits_.max_job_seconds);
  return std::min(limit, seconds_left * 0.8);
}

bool SchedulingBackend::AnswerFromMemo(const std::string& request_key, bool score_only, double seconds_left,
                                       std::chrono::steady_clock::time_point start, bool count_miss,
                                       v1::Plan* reply) {
  auto miss = [&] {
    if (count_miss && metrics_ != nullptr) metrics_->RecordCacheLookup("request", "miss");
    return false;
  };
  std::shared_ptr<const MemoizedReply> memoized = memo_->Find(request_key);
  if (memoized == nullptr) return miss();
  const double limit = JobTimeLimit(memoized->request_time_limit_seconds, seconds_left);
  // Only while the cache still holds the very entry the reply came from (a
  // better plan may have replaced it), and only if that entry answers this
  // call's time limit.
  if (cache_->LocalEntry(memoized->key.id) != memoized->stored ||
      !StoredPlanAnswers(*memoized->stored, memoized->key, /*need_complete=*/!score_only, limit)) {
    return miss();
  }
  if (metrics_ != nullptr) metrics_->RecordCacheLookup("request", "hit");
  *reply = memoized->reply;
  reply->mutable_stats()->set_cache("local");
  reply->mutable_stats()->set_total_ms(MillisSince(start));
  return true;
}

bool SchedulingBackend::AnswerRepeat(const v1::PlanRequest& request, bool score_only, double seconds_left,
                                     v1::Plan* reply) {
  if (memo_ == nullptr || cache_ == nullptr || seconds_left * 0.8 <= 0) return false;
  const auto start = std::chrono::steady_clock::now();
  // A miss here is counted by the Answer that follows.
  return AnswerFromMemo(RequestMemoKey(request, score_only), score_only, seconds_left, start, /*count_miss=*/false,
                        reply);
}

absl::StatusOr<v1::Plan> SchedulingBackend::Answer(const v1::PlanRequest& request, bool score_only,
                                                   double seconds_left, const std::atomic<bool>* cancelled) {
  const auto start = std::chrono::steady_clock::now();
  if (seconds_left * 0.8 <= 0) {
    return absl::DeadlineExceededError("the call's deadline had passed before planning began");
  }
  std::string request_key;
  if (memo_ != nullptr && cache_ != nullptr) {
    request_key = RequestMemoKey(request, score_only);
    v1::Plan plan;
    if (AnswerFromMemo(request_key, score_only, seconds_left, start, /*count_miss=*/true, &plan)) return plan;
  }

  ASSIGN_OR_RETURN(PreparedRequest prepared, PrepareRequest(request));
  if (prepared.graph.num_ops() > limits_.max_ops) {
    return absl::InvalidArgumentError(absl::StrCat("the graph has ", prepared.graph.num_ops(),
                                                   " ops; this server accepts at most ", limits_.max_ops));
  }
  PlanOptions& options = prepared.options;
  options.score_only = score_only;
  options.cancelled = cancelled;
  const double request_limit = options.time_limit_seconds;
  const double limit = JobTimeLimit(request_limit, seconds_left);
  options.time_limit_seconds = limit;

  const CanonicalGraph canonical = Canonicalize(prepared.graph);
  const PlanKey key = MakePlanKey(canonical, options);
  // Remembers the reply for a repeat of these exact request bytes.
  auto memoize = [&](const v1::Plan& plan, std::shared_ptr<const v1::StoredPlan> stored) {
    if (request_key.empty() || stored == nullptr) return;
    auto entry = std::make_shared<MemoizedReply>();
    entry->request = std::move(request_key);
    entry->key = key;
    entry->stored = std::move(stored);
    entry->request_time_limit_seconds = request_limit;
    entry->reply = plan;
    memo_->Put(std::move(entry));
  };
  if (cache_ != nullptr) {
    std::optional<PlanCache::Hit> hit = cache_->Lookup(key, /*need_complete=*/!score_only, limit);
    if (hit.has_value()) {
      absl::StatusOr<v1::Plan> plan = RemapStoredPlan(*hit->stored, canonical, prepared.graph, options);
      if (plan.ok()) {
        plan->set_plan_id(key.id);
        // A full entry answering a score: send and keep only the score's part.
        if (score_only) DropArenaAndSteps(&*plan);
        memoize(*plan, cache_->LocalEntry(key.id) == hit->stored ? hit->stored : nullptr);
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
    auto stored = std::make_shared<const v1::StoredPlan>(MakeStoredPlan(key, canonical, prepared.graph, plan, options));
    cache_->Store(stored, key.id);
    // Only when the cache kept this plan (it keeps a better one it had).
    memoize(plan, cache_->LocalEntry(key.id) == stored ? stored : nullptr);
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
