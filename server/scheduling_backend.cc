#include "server/scheduling_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "core/graph/canonical_graph.h"
#include "core/plan_request.h"
#include "core/request_scan.h"
#include "core/rewrite/choose.h"
#include "core/util/memory_account.h"
#include "core/util/saturating.h"
#include "core/util/status_macros.h"

namespace serenity {
namespace {

// Requests whose plans the cache cannot hold (see Answer): rewritten,
// placed in several memories, or choosing primitives (the cache's key
// leaves out the alternatives).
bool Uncached(const v1::PlanOptions& options) {
  return options.rewrite() || options.memories_size() > 0 || options.objective() == "time" || options.pareto() ||
         options.max_time_us() > 0;
}

double MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// The end of a job started at `start`: 90% of the caller's time left (the
// rest is for the reply); none without a deadline.
std::chrono::steady_clock::time_point JobDeadline(std::chrono::steady_clock::time_point start, double seconds_left) {
  if (!std::isfinite(seconds_left)) return std::chrono::steady_clock::time_point::max();
  return start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(seconds_left * 0.9));
}

// The memory a rewrite job (options.rewrite: PlanWithRewrites) holds beyond
// the request's message and graph (call.build_bytes) and beyond what its
// plans charge to the job's account themselves. Those plans run one at a
// time (the model as given, one per round of sites, one for the sums), each
// releasing its charges before the next, so planning memory is that of one
// plan of the largest model: not multiplied by the rounds. What is held at
// once is the prepared copy of the ONNX bytes and two models with their
// plans, the best so far and the trial, each parsed, serialized and
// imported: twice EstimateBuildBytes of a model the size of the rewritten
// one. Per Concat input, a rewrite adds for each per-channel op pushed
// through one op, five tensors (its output and up to four parameter slices)
// and six references, and for each Conv split two ops (a partial and an Add
// or ConvAccumulate, or the grouped form's Concat), four tensors (their
// outputs, a weight and a bias slice) and seven references, with names made
// of the site's names (counted at the model's average name length plus 16
// characters each); its slices add at most the payload of the weights and
// constants of the ops split (BoundRewriteGrowth's slice_bytes, a weight
// shared by several sites counted once per reader). Reordering sums adds
// nothing. So the rewritten model is bounded by the original's counts plus
// BoundRewriteGrowth's, and its bytes by twice the original's plus the
// slices and 128 bytes and four names per new op.
int64_t RewriteHeldBytes(const PreparedRequest& prepared) {
  const Graph& graph = prepared.graph;
  int64_t inputs = 0, outputs = 0, name_bytes = 0;
  for (const Op& op : graph.ops()) {
    inputs += static_cast<int64_t>(op.inputs.size());
    outputs += static_cast<int64_t>(op.outputs.size());
    name_bytes += static_cast<int64_t>(op.name.size() + op.type.size());
  }
  for (const Tensor& t : graph.tensors()) name_bytes += static_cast<int64_t>(t.name.size());
  const int64_t names = std::max<int64_t>(1, graph.num_ops() + graph.num_tensors());
  const int64_t name_length = name_bytes / names + 16;
  const int64_t model_bytes = static_cast<int64_t>(prepared.onnx_model.size());
  const RewriteGrowth growth = BoundRewriteGrowth(graph);
  const int64_t new_ops = growth.pushed + 2 * growth.convs;
  RequestShape rewritten;
  rewritten.onnx = true;
  rewritten.ops = graph.num_ops() + new_ops;
  rewritten.tensors = graph.num_tensors() + 5 * growth.pushed + 4 * growth.convs;
  rewritten.op_inputs = inputs + 5 * growth.pushed + 5 * growth.convs;
  rewritten.op_outputs = outputs + growth.pushed + 2 * growth.convs;
  // Names as stored (ops, tensors) and as referenced (inputs, outputs).
  rewritten.name_bytes =
      name_bytes + (inputs + outputs) * name_length + (12 * growth.pushed + 13 * growth.convs) * name_length;
  rewritten.onnx_model_bytes = SaturatingAdd(2 * model_bytes + new_ops * (128 + 4 * name_length), growth.slice_bytes);
  const int64_t one = EstimateBuildBytes(rewritten);
  if (one > (std::numeric_limits<int64_t>::max() - model_bytes) / 2) return std::numeric_limits<int64_t>::max();
  return model_bytes + 2 * one;
}

}  // namespace

// The search time limit of one job: the request's (or the default), capped
// by the server and by 80% of the time before the caller's deadline (the
// rest is for import, arena planning and the reply). Not positive when no
// time is left.
double SchedulingBackend::JobTimeLimit(double request_limit, double seconds_left) const {
  double limit = TimeLimitOrDefault(request_limit);
  limit = std::min(limit, options_.max_job_seconds);
  return std::min(limit, seconds_left * 0.8);
}

bool SchedulingBackend::AnswerFromMemo(const std::string& request_key, bool score_only, double seconds_left,
                                       std::chrono::steady_clock::time_point start, bool count_miss, v1::Plan* reply) {
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
  if (cache_->LocalEntry(memoized->cache_id) != memoized->stored ||
      !StoredPlanAnswers(*memoized->stored, memoized->key, /*need_complete=*/!score_only, limit)) {
    return miss();
  }
  if (metrics_ != nullptr) metrics_->RecordCacheLookup("request", "hit");
  *reply = memoized->reply;
  reply->mutable_stats()->set_cache("local");
  reply->mutable_stats()->set_total_ms(MillisSince(start));
  return true;
}

bool SchedulingBackend::AnswerRepeat(const v1::PlanRequest& request, bool score_only, const CallContext& call,
                                     v1::Plan* reply) {
  // A rewrite or a placement in memories is never memoized (see Answer).
  if (memo_ == nullptr || cache_ == nullptr || call.seconds_left * 0.8 <= 0 || Uncached(request.options())) {
    return false;
  }
  const auto start = std::chrono::steady_clock::now();
  // A miss here is counted by the Answer that follows.
  return AnswerFromMemo(RequestMemoKey(request, score_only, call.tenant), score_only, call.seconds_left, start,
                        /*count_miss=*/false, reply);
}

absl::StatusOr<v1::Plan> SchedulingBackend::Answer(const v1::PlanRequest& request, bool score_only,
                                                   const CallContext& call) {
  const auto start = std::chrono::steady_clock::now();
  if (call.seconds_left * 0.8 <= 0) {
    return absl::DeadlineExceededError("the call's deadline had passed before planning began");
  }
  std::string request_key;
  if (memo_ != nullptr && cache_ != nullptr && !Uncached(request.options())) {
    request_key = RequestMemoKey(request, score_only, call.tenant);
    v1::Plan plan;
    if (AnswerFromMemo(request_key, score_only, call.seconds_left, start, /*count_miss=*/true, &plan)) return plan;
  }

  const auto import_start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(PreparedRequest prepared, PrepareRequest(request));
  const double import_ms = MillisSince(import_start);
  if (prepared.graph.num_ops() > options_.max_ops) {
    return absl::InvalidArgumentError(absl::StrCat("the graph has ", prepared.graph.num_ops(),
                                                   " ops; this server accepts at most ", options_.max_ops));
  }
  SanitizedOptions& options = prepared.options;
  const bool rewrite = options->rewrite;
  options.set_score_only(score_only);
  options.set_cancelled(call.cancelled);
  // The job's time and memory. A rewrite plans the model once per site
  // tried: the whole job also ends by the longest search the server allows
  // one job (max_job_seconds, and the phases after it).
  std::chrono::steady_clock::time_point deadline = JobDeadline(start, call.seconds_left);
  if (rewrite) {
    deadline = std::min(deadline,
                        start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(options_.max_job_seconds + options->finish_seconds)));
  }
  options.set_deadline(deadline);
  std::optional<MemoryAccount> account;
  if (call.grow_memory) {
    account.emplace(options_.max_job_bytes, call.granted_bytes, call.grow_memory);
  } else {
    account.emplace(options_.max_job_bytes);
  }
  if (!account->TryCharge(call.build_bytes)) {
    return MemoryLimitError(&*account, call.build_bytes, "the request's message and graph");
  }
  if (rewrite) {
    // More than a job may ever hold: refused for good (as admission refuses
    // an estimate above the job limit), not to be retried.
    const int64_t held = RewriteHeldBytes(prepared);
    if (options_.max_job_bytes > 0 &&
        held > options_.max_job_bytes - std::min(call.build_bytes, options_.max_job_bytes)) {
      return absl::InvalidArgumentError(
          absl::StrCat("rewriting this model holds about ", held >> 20, " MB beside planning (copies of the model ",
                       "and of the rewritten one), more than a job may hold here with its request (",
                       options_.max_job_bytes >> 20, " MB, --max-job-mb); plan it without rewrite"));
    }
    if (!account->TryCharge(held)) return MemoryLimitError(&*account, held, "the rewrite's copies of the model");
  }
  options.set_memory(&*account);
  // The server's cap, before the key: a capped request is the capped plan.
  options.CapMaxSearchStates(options_.max_search_states);
  const double request_limit = options->time_limit_seconds;
  const double limit = JobTimeLimit(request_limit, call.seconds_left);
  options.set_time_limit_seconds(limit);
  // A rewritten plan is not cached: it describes the rewritten graph, which
  // the cache's entries (a plan of the request's graph, remapped to an
  // isomorphic one's names) cannot hold; so it has no plan_id either. Nor
  // is a plan placed in several memories: its pins name tensors, and the
  // stored plan keeps no placement.
  if (Uncached(request.options())) {
    ASSIGN_OR_RETURN(v1::Plan plan, ExecutePreparedRequest(prepared, executor_));
    (*plan.mutable_stats()->mutable_phase_ms())["import"] = import_ms;
    if (metrics_ != nullptr) {
      metrics_->RecordSearch(plan.stats().states_explored(), plan.certificate() == v1::CERTIFICATE_BEST_FOUND,
                             !plan.feasible());
    }
    plan.mutable_stats()->set_cache("miss");
    plan.mutable_stats()->set_total_ms(MillisSince(start));
    return plan;
  }

  const CanonicalGraph canonical = Canonicalize(prepared.graph);
  const PlanKey key = MakePlanKey(canonical, options);
  const std::string cache_id = CachedPlanId(key, call.tenant, options_.cache_scope);
  const std::string plan_id = MakePlanId(options_.plan_id_secret, call.tenant, key, canonical, prepared.graph);
  // Remembers the reply for a repeat of these exact request bytes, and the
  // plan_id's receipt for GetPlan.
  auto remember = [&](const v1::Plan& plan, std::shared_ptr<const v1::StoredPlan> stored) {
    if (cache_ != nullptr) {
      cache_->PutReceipt(plan_id, std::make_shared<const v1::PlanReceipt>(
                                      MakePlanReceipt(call.tenant, cache_id, request, prepared.graph, options)));
    }
    if (request_key.empty() || stored == nullptr) return;
    auto entry = std::make_shared<MemoizedReply>();
    entry->request = std::move(request_key);
    entry->key = key;
    entry->cache_id = cache_id;
    entry->stored = std::move(stored);
    entry->request_time_limit_seconds = request_limit;
    entry->reply = plan;
    memo_->Put(std::move(entry));
  };
  // An entry from Redis came from outside the process: check it against the
  // graph before using it (the remapped plan is kept for a hit).
  const v1::StoredPlan* checked_entry = nullptr;
  v1::Plan checked_plan;
  auto check_shared = [&](const v1::StoredPlan& stored) {
    absl::StatusOr<v1::Plan> plan = RemapStoredPlan(stored, canonical, prepared.graph, options);
    if (!plan.ok() || !CheckPlanAgainstGraph(*plan, prepared.graph, options).ok()) return false;
    checked_entry = &stored;
    checked_plan = std::move(plan).value();
    return true;
  };
  if (cache_ != nullptr) {
    std::optional<PlanCache::Hit> hit =
        cache_->Lookup(cache_id, key, /*need_complete=*/!score_only, limit, check_shared, call.tenant);
    if (hit.has_value()) {
      absl::StatusOr<v1::Plan> plan = checked_entry == hit->stored.get()
                                          ? absl::StatusOr<v1::Plan>(std::move(checked_plan))
                                          : RemapStoredPlan(*hit->stored, canonical, prepared.graph, options);
      if (plan.ok()) {
        plan->set_plan_id(plan_id);
        // A full entry answering a score: send and keep only the score's part.
        if (score_only) DropArenaAndSteps(&*plan);
        remember(*plan, cache_->LocalEntry(cache_id) == hit->stored ? hit->stored : nullptr);
        plan->mutable_stats()->set_cache(hit->tier);
        plan->mutable_stats()->set_total_ms(MillisSince(start));
        return plan;
      }
      // Never trust a cached plan that does not fit: plan afresh.
    }
  }

  ASSIGN_OR_RETURN(v1::Plan plan, ExecutePreparedRequest(prepared, executor_));
  (*plan.mutable_stats()->mutable_phase_ms())["import"] = import_ms;
  if (metrics_ != nullptr) {
    metrics_->RecordSearch(plan.stats().states_explored(), plan.certificate() == v1::CERTIFICATE_BEST_FOUND,
                           !plan.feasible());
  }
  plan.set_plan_id(plan_id);
  // A plan that fell back for want of time or memory is this call's
  // answer, not the graph's: a later call with more room should do better.
  const bool cut_short = std::any_of(plan.fallbacks().begin(), plan.fallbacks().end(), [](const v1::PhaseFallback& f) {
    return f.reason() == "time_limit" || f.reason() == "memory_limit" || f.reason() == "cancelled";
  });
  // Only a stored plan can be fetched again: no plan_id for the others.
  if (cut_short) plan.clear_plan_id();
  if (cache_ != nullptr && !cut_short) {
    auto stored = std::make_shared<const v1::StoredPlan>(MakeStoredPlan(key, canonical, prepared.graph, plan, options));
    cache_->Store(stored, cache_id, check_shared, call.tenant);
    // Only when the cache kept this plan (it keeps a better one it had).
    remember(plan, cache_->LocalEntry(cache_id) == stored ? stored : nullptr);
  }
  plan.mutable_stats()->set_cache("miss");
  plan.mutable_stats()->set_total_ms(MillisSince(start));
  return plan;
}

absl::StatusOr<v1::Plan> SchedulingBackend::GetPlan(const std::string& plan_id, const CallContext& call) {
  const auto start = std::chrono::steady_clock::now();
  const std::string& tenant = call.tenant;
  if (plan_id.size() != 32 || plan_id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return absl::InvalidArgumentError("a plan_id is 32 lowercase hex digits, as returned in Plan.plan_id");
  }
  const absl::Status not_found =
      absl::NotFoundError(absl::StrCat("no stored plan ", plan_id, " (never computed here, or evicted)"));
  std::shared_ptr<const v1::PlanReceipt> receipt = cache_ != nullptr ? cache_->GetReceipt(plan_id) : nullptr;
  // Another tenant's plan_id gets the same answer as an unknown one.
  if (receipt == nullptr || receipt->tenant() != tenant) return not_found;
  // A receipt edited in Redis must not make this job plan a graph above
  // the server's limit.
  if (receipt->request().graph().ops_size() > options_.max_ops) return not_found;
  absl::StatusOr<PreparedRequest> prepared = PrepareRequest(receipt->request());
  if (!prepared.ok()) return not_found;
  const CanonicalGraph canonical = Canonicalize(prepared->graph);
  const PlanKey key = MakePlanKey(canonical, prepared->options);
  // The job's time and memory, as for Answer.
  prepared->options.set_time_limit_seconds(JobTimeLimit(0, call.seconds_left));
  prepared->options.set_deadline(JobDeadline(start, call.seconds_left));
  prepared->options.set_cancelled(call.cancelled);
  MemoryAccount account(options_.max_job_bytes);
  prepared->options.set_memory(&account);
  // A receipt must name the entry its own request leads to.
  if (CachedPlanId(key, tenant, options_.cache_scope) != receipt->cache_id()) return not_found;
  std::optional<PlanCache::Hit> hit = cache_->Get(receipt->cache_id());
  if (!hit.has_value() || hit->stored->graph() != key.graph || hit->stored->options() != key.options) {
    return not_found;
  }
  absl::StatusOr<v1::Plan> plan = RemapStoredPlan(*hit->stored, canonical, prepared->graph, prepared->options);
  if (plan.ok() && std::string(hit->tier) == "shared") {
    absl::Status checked = CheckPlanAgainstGraph(*plan, prepared->graph, prepared->options);
    if (!checked.ok()) plan = checked;
  }
  if (!plan.ok()) {
    Log("warning", "stored_plan_rejected", {{"plan_id", plan_id}, {"detail", plan.status().ToString()}});
    return not_found;
  }
  plan->set_plan_id(plan_id);
  return plan;
}

}  // namespace serenity
