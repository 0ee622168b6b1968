// What the plan cache stores, how a request finds it, and how a stored plan
// is handed to a caller whose graph has other names or another op order.
#ifndef SERENITY_SERVER_STORED_PLAN_H_
#define SERENITY_SERVER_STORED_PLAN_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/graph/canonical_graph.h"
#include "core/graph/graph.h"
#include "core/planner.h"
#include "serenity/v1/stored_plan.pb.h"

namespace serenity {

// Bumped whenever StoredPlan's layout or meaning changes; entries of another
// format are ignored.
inline constexpr uint32_t kStoredPlanFormat = 3;
// Likewise for PlanReceipt.
inline constexpr uint32_t kPlanReceiptFormat = 1;

// The cache key of one request: the canonical graph, the options that change
// the answer, and `id`, a 32-hex-digit hash of both (the reply's plan_id).
// Time limits are not part of it (see StoredPlanAnswers), nor is the memory
// budget under objective min_peak, whose order does not depend on it; the
// request's budget rides along in `memory_budget_bytes`.
struct PlanKey {
  std::string id;
  std::string graph;
  std::string options;
  int64_t memory_budget_bytes = 0;
};

// Builds the key of a request for `graph` (whose canonical form is
// `canonical`) under `options`. A given order is keyed by canonical
// positions, so it survives renaming and permutation too. options.rewrite
// is in the key (only when set, so other keys stay as they were): a plan
// with rewriting never answers a request without, nor the other way.
PlanKey MakePlanKey(const CanonicalGraph& canonical, const PlanOptions& options);

// Whether tenants share cached plans (--cache-scope). Under kTenant a
// tenant's request is answered only from plans computed for that tenant,
// so stats.cache tells nothing about other tenants' requests.
enum class CacheScope { kTenant, kShared };

// The plan cache's id for `key` asked by `tenant`: key.id itself when the
// scope is shared or `tenant` is empty (no tenants), else a hash of both.
std::string CachedPlanId(const PlanKey& key, absl::string_view tenant, CacheScope scope);

// The plan_id of one request's reply: HMAC-SHA256 keyed by `secret` (cut
// to 32 hex digits) of the tenant, the plan's key and every name the reply
// carries (model, ops and tensors, and the caller's op order), so it is
// not derived from the structure alone, not computable without the secret,
// and two tenants, or two namings of one structure, get different ids.
// The same request from the same tenant gets the same id from servers that
// share `secret`.
std::string MakePlanId(absl::string_view secret, absl::string_view tenant, const PlanKey& key,
                       const CanonicalGraph& canonical, const Graph& graph);

// The receipt stored under a plan_id (see v1::PlanReceipt): `request` with
// its model replaced by `graph` as a Graph message, and the state cap the
// server planned it with (`options.max_search_states`, which may be lower
// than the request's), so that it leads to the same key again.
v1::PlanReceipt MakePlanReceipt(absl::string_view tenant, absl::string_view cache_id, const v1::PlanRequest& request,
                                const Graph& graph, const PlanOptions& options);

// OK when `plan` (already in the caller's terms) is consistent with `graph`
// under `options`: its order is topological, its peak and step bytes are
// those of a fresh simulation, and (for a full plan without moves) its
// arena has one buffer per simulated buffer with the same size and
// lifetime, and passes the arena verifier. For plans from outside the
// process (Redis): DataLoss naming the first problem otherwise. A plan's
// certificate and lower bound cannot be checked this cheaply.
absl::Status CheckPlanAgainstGraph(const v1::Plan& plan, const Graph& graph, const PlanOptions& options);

// Packs a plan computed for `graph` into a cache entry.
v1::StoredPlan MakeStoredPlan(const PlanKey& key, const CanonicalGraph& canonical, const Graph& graph,
                              const v1::Plan& plan, const PlanOptions& options);

// True when `stored` may answer a request with `key`: same graph and
// options, a full plan if `need_complete`, and either a proof (optimal or a
// baseline) or a search given at least `time_limit_seconds`. A full plan
// made for another budget answers only when neither budget calls for
// defragmentation moves.
bool StoredPlanAnswers(const v1::StoredPlan& stored, const PlanKey& key, bool need_complete, double time_limit_seconds);

// True when `candidate` should replace `current` in the cache: a lower peak;
// or the same peak with a proof or a full plan that `current` lacks, or
// without the budget-specific moves that `current` has.
bool StoredPlanIsBetter(const v1::StoredPlan& candidate, const v1::StoredPlan& current);

// The stored plan in the caller's terms: op indices, op and tensor names and
// the model name of `graph` (canonical form `canonical`), and its budget
// fields (memory_budget_bytes, feasible, headroom_bytes, arena_fits_budget)
// for the caller's budget. When the caller's
// op list is in another order, the baselines (which depend on it) are
// recomputed for `graph`; the SparsityReport is made for the caller's
// options (sparsity_report.h). Internal when the entry does not fit the graph
// (which exact key equality rules out; checked anyway).
absl::StatusOr<v1::Plan> RemapStoredPlan(const v1::StoredPlan& stored, const CanonicalGraph& canonical,
                                         const Graph& graph, const SanitizedOptions& options);

}  // namespace serenity

#endif  // SERENITY_SERVER_STORED_PLAN_H_
