#include "server/stored_plan.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/arena/arena_verifier.h"
#include "core/memory/simulator.h"
#include "core/plan_request.h"
#include "core/sparsity/sparsity_report.h"
#include "core/util/status_macros.h"
#include "openssl/evp.h"
#include "openssl/hmac.h"

namespace serenity {
namespace {

bool Optimal(const v1::StoredPlan& s) { return s.plan().certificate() == v1::CERTIFICATE_OPTIMAL; }

// True when a full plan's static arena would need defragmentation moves under
// `budget`: the peak fits it but the arena does not.
bool NeedsMoves(const v1::Plan& plan, int64_t budget) {
  return budget > 0 && plan.peak_bytes() <= budget && plan.arena().size_bytes() > budget;
}

}  // namespace

PlanKey MakePlanKey(const CanonicalGraph& canonical, const PlanOptions& options) {
  PlanKey key;
  key.graph = canonical.serialization;
  std::vector<int> position_of(canonical.op_at.size());
  for (size_t p = 0; p < canonical.op_at.size(); ++p) position_of[canonical.op_at[p]] = static_cast<int>(p);
  std::string given;
  for (OpId u : options.given_order) absl::StrAppend(&given, position_of[u], ",");
  std::string onchip;
  for (int64_t bytes : options.onchip_bytes) absl::StrAppend(&onchip, bytes, ",");
  // Every option that changes the answer, except the time limit.
  key.options =
      absl::StrCat("format=", kStoredPlanFormat, ";alias_views=", options.memory_model.alias_views,
                   ";count_weights=", options.memory_model.count_weights, ";in_place=", options.memory_model.in_place,
                   ";concat_in_place=", options.memory_model.concat_in_place,
                   ";budget=", options.objective == Objective::kFit ? absl::StrCat(options.memory_budget_bytes) : "any",
                   ";alignment=", options.alignment, ";algorithm=", AlgorithmName(options.algorithm),
                   ";objective=", ObjectiveName(options.objective),
                   ";step_time_limit=", options.step_time_limit_seconds, ";max_states=", options.max_search_states,
                   ";onchip=", onchip, ";given=", given, options.rewrite ? ";rewrite=1" : "");
  key.id = StableHash128(absl::StrCat(canonical.key, "|", key.options));
  key.memory_budget_bytes = options.memory_budget_bytes;
  return key;
}

std::string CachedPlanId(const PlanKey& key, absl::string_view tenant, CacheScope scope) {
  if (scope == CacheScope::kShared || tenant.empty()) return key.id;
  return StableHash128(absl::StrCat("tenant-scoped|", tenant.size(), ":", tenant, "|", key.id));
}

std::string MakePlanId(absl::string_view secret, absl::string_view tenant, const PlanKey& key,
                       const CanonicalGraph& canonical, const Graph& graph) {
  // Lengths before strings: no two different name lists give one text.
  std::string text =
      absl::StrCat("plan-id|", tenant.size(), ":", tenant, "|", key.id, "|", graph.name().size(), ":", graph.name());
  for (OpId u : canonical.op_at) {
    absl::StrAppend(&text, "|", u, ":", graph.op(u).name.size(), ":", graph.op(u).name);
  }
  for (TensorId t : canonical.tensor_at) {
    absl::StrAppend(&text, "|", graph.tensor(t).name.size(), ":", graph.tensor(t).name);
  }
  // HMAC-SHA256 keyed by the secret (a plain hash with the secret in front
  // could be run backwards from one known id to the state after the
  // secret), cut to 128 bits.
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_size = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac, &mac_size);
  std::string id;
  for (unsigned int i = 0; i < 16 && i < mac_size; ++i) absl::StrAppend(&id, absl::Hex(mac[i], absl::kZeroPad2));
  return id;
}

v1::PlanReceipt MakePlanReceipt(absl::string_view tenant, absl::string_view cache_id, const v1::PlanRequest& request,
                                const Graph& graph, const PlanOptions& options) {
  v1::PlanReceipt receipt;
  receipt.set_format(kPlanReceiptFormat);
  receipt.set_tenant(std::string(tenant));
  receipt.set_cache_id(std::string(cache_id));
  v1::PlanRequest& stored = *receipt.mutable_request();
  stored.set_model_name(request.model_name());
  *stored.mutable_options() = request.options();
  // Folded into the graph below, or not part of the key.
  stored.mutable_options()->clear_dim_values();
  stored.mutable_options()->clear_workspace_bytes();
  stored.mutable_options()->clear_time_limit_seconds();
  stored.mutable_options()->set_max_search_states(options.max_search_states);
  if (request.has_given_order()) *stored.mutable_given_order() = request.given_order();
  v1::Graph& out = *stored.mutable_graph();
  out.set_name(graph.name());
  for (const Tensor& t : graph.tensors()) {
    v1::Tensor* tensor = out.add_tensors();
    tensor->set_name(t.name);
    for (int64_t d : t.shape) tensor->add_shape(d);
    tensor->set_dtype(t.dtype);
    tensor->set_bytes(t.bytes);
    tensor->set_is_weight(t.is_weight);
  }
  for (const Op& o : graph.ops()) {
    v1::Op* op = out.add_ops();
    op->set_name(o.name);
    op->set_type(o.type);
    for (TensorId t : o.inputs) op->add_inputs(graph.tensor(t).name);
    for (TensorId t : o.outputs) op->add_outputs(graph.tensor(t).name);
    op->set_workspace_bytes(o.workspace_bytes);
    op->set_macs(o.macs);
  }
  for (TensorId t : graph.inputs()) out.add_inputs(graph.tensor(t).name);
  for (TensorId t : graph.outputs()) out.add_outputs(graph.tensor(t).name);
  return receipt;
}

absl::Status CheckPlanAgainstGraph(const v1::Plan& plan, const Graph& graph, const PlanOptions& options) {
  std::vector<OpId> order(plan.order().begin(), plan.order().end());
  if (absl::Status valid = CheckOrder(graph, order); !valid.ok()) {
    return absl::DataLossError(absl::StrCat("stored order: ", valid.message()));
  }
  BufferModel buffers(graph, options.memory_model);
  absl::StatusOr<MemoryProfile> profile = Simulate(buffers, order);
  if (!profile.ok()) return absl::DataLossError(absl::StrCat("stored order: ", profile.status().message()));
  if (profile->peak_bytes != plan.peak_bytes()) {
    return absl::DataLossError(
        absl::StrCat("stored peak ", plan.peak_bytes(), " is not the order's peak ", profile->peak_bytes));
  }
  if (!plan.step_bytes().empty() && !std::equal(plan.step_bytes().begin(), plan.step_bytes().end(),
                                                profile->step_bytes.begin(), profile->step_bytes.end())) {
    return absl::DataLossError("stored step bytes are not the order's");
  }
  if (plan.lower_bound_bytes() > plan.peak_bytes()) return absl::DataLossError("stored lower bound above the peak");
  const v1::Arena& arena = plan.arena();
  if (arena.buffers().empty() || plan.moves_size() > 0) return absl::OkStatus();
  if (arena.buffers_size() != static_cast<int>(profile->buffers.size())) {
    return absl::DataLossError("stored arena does not have one buffer per simulated buffer");
  }
  std::vector<ArenaBuffer> lifetimes;
  ArenaPlan offsets;
  offsets.alignment = arena.alignment() > 0 ? arena.alignment() : 1;
  offsets.size_bytes = arena.size_bytes();
  for (int i = 0; i < arena.buffers_size(); ++i) {
    const BufferLifetimeInfo& b = profile->buffers[static_cast<size_t>(i)];
    const v1::ArenaBuffer& stored = arena.buffers(i);
    if (stored.size() != b.bytes || stored.first_step() != b.first_step || stored.last_step() != b.last_step) {
      return absl::DataLossError(absl::StrCat("stored arena buffer ", i, " does not match the simulation"));
    }
    lifetimes.push_back({b.bytes, b.first_step, b.last_step, b.anchor, b.offset_from_anchor});
    offsets.offsets.push_back(stored.offset());
  }
  if (absl::Status verified = VerifyArena(lifetimes, offsets); !verified.ok()) {
    return absl::DataLossError(absl::StrCat("stored arena: ", verified.message()));
  }
  return absl::OkStatus();
}

v1::StoredPlan MakeStoredPlan(const PlanKey& key, const CanonicalGraph& canonical, const Graph& graph,
                              const v1::Plan& plan, const PlanOptions& options) {
  v1::StoredPlan stored;
  stored.set_format(kStoredPlanFormat);
  stored.set_graph(key.graph);
  stored.set_options(key.options);
  *stored.mutable_plan() = plan;
  stored.mutable_plan()->mutable_stats()->clear_cache();
  stored.mutable_plan()->clear_sparsity();  // the request's, not the graph's (issue 20)
  for (OpId u : canonical.op_at) {
    stored.add_op_ids(u);
    stored.add_op_names(graph.op(u).name);
  }
  for (TensorId t : canonical.tensor_at) stored.add_tensor_names(graph.tensor(t).name);
  stored.set_complete(!options.score_only);
  stored.set_time_limit_seconds(TimeLimitOrDefault(options.time_limit_seconds));
  stored.set_memory_budget_bytes(options.memory_budget_bytes);
  return stored;
}

bool StoredPlanAnswers(const v1::StoredPlan& stored, const PlanKey& key, bool need_complete,
                       double time_limit_seconds) {
  if (stored.format() != kStoredPlanFormat || stored.graph() != key.graph || stored.options() != key.options) {
    return false;
  }
  if (need_complete && !stored.complete()) return false;
  if (need_complete && stored.memory_budget_bytes() != key.memory_budget_bytes &&
      (stored.plan().moves_size() > 0 || NeedsMoves(stored.plan(), key.memory_budget_bytes))) {
    return false;
  }
  if (stored.plan().certificate() != v1::CERTIFICATE_BEST_FOUND) return true;
  return stored.time_limit_seconds() >= TimeLimitOrDefault(time_limit_seconds);
}

bool StoredPlanIsBetter(const v1::StoredPlan& candidate, const v1::StoredPlan& current) {
  const int64_t a = candidate.plan().peak_bytes(), b = current.plan().peak_bytes();
  if (a != b) return a < b;
  if (Optimal(candidate) != Optimal(current)) return Optimal(candidate);
  if (candidate.complete() != current.complete()) return candidate.complete();
  // Moves tie an entry to one budget; one without serves every other.
  if ((candidate.plan().moves_size() == 0) != (current.plan().moves_size() == 0)) {
    return candidate.plan().moves_size() == 0;
  }
  // Same answer: a longer search's entry serves more requests.
  return candidate.time_limit_seconds() > current.time_limit_seconds();
}

absl::StatusOr<v1::Plan> RemapStoredPlan(const v1::StoredPlan& stored, const CanonicalGraph& canonical,
                                         const Graph& graph, const SanitizedOptions& options) {
  const int ops = graph.num_ops();
  if (stored.op_ids_size() != ops || static_cast<int>(canonical.op_at.size()) != ops || stored.op_names_size() != ops ||
      stored.tensor_names_size() != graph.num_tensors() ||
      static_cast<int>(canonical.tensor_at.size()) != graph.num_tensors()) {
    return absl::InternalError("a cached plan does not fit the graph it matched");
  }
  std::vector<OpId> op_of(ops, kNoOp);  // stored op id -> caller's op id
  absl::flat_hash_map<std::string, std::string> op_name, tensor_name;
  bool same_op_order = true;
  for (int p = 0; p < ops; ++p) {
    const int stored_id = stored.op_ids(p);
    if (stored_id < 0 || stored_id >= ops || op_of[stored_id] != kNoOp) {
      return absl::InternalError("a cached plan has a broken op mapping");
    }
    op_of[stored_id] = canonical.op_at[p];
    same_op_order = same_op_order && stored_id == canonical.op_at[p];
    op_name[stored.op_names(p)] = graph.op(canonical.op_at[p]).name;
  }
  for (int p = 0; p < graph.num_tensors(); ++p) {
    tensor_name[stored.tensor_names(p)] = graph.tensor(canonical.tensor_at[p]).name;
  }
  auto rename = [](const absl::flat_hash_map<std::string, std::string>& names, std::string* name) {
    auto it = names.find(*name);
    if (it == names.end()) return false;
    *name = it->second;
    return true;
  };

  v1::Plan plan = stored.plan();
  plan.set_model(graph.name());
  const int64_t budget = options->memory_budget_bytes;
  if (stored.memory_budget_bytes() != budget) ApplyBudget(budget, &plan);
  std::vector<OpId> order;
  for (int i = 0; i < plan.order_size(); ++i) {
    const int stored_id = plan.order(i);
    if (stored_id < 0 || stored_id >= ops) return absl::InternalError("a cached plan has a bad op index");
    plan.set_order(i, op_of[stored_id]);
    plan.set_order_names(i, graph.op(op_of[stored_id]).name);
    order.push_back(op_of[stored_id]);
  }
  if (!IsTopologicalOrder(graph, order)) return absl::InternalError("a cached order is not valid for the graph");
  bool names_ok = true;
  for (v1::ArenaBuffer& buffer : *plan.mutable_arena()->mutable_buffers()) {
    names_ok &= rename(buffer.kind() == v1::BUFFER_KIND_WORKSPACE ? op_name : tensor_name, buffer.mutable_tensor());
    for (std::string& alias : *buffer.mutable_aliases()) names_ok &= rename(tensor_name, &alias);
    if (!buffer.slice_of().empty()) names_ok &= rename(tensor_name, buffer.mutable_slice_of());
  }
  for (v1::Step& step : *plan.mutable_steps()) {
    names_ok &= rename(op_name, step.mutable_op());
    for (v1::TensorPlacement& p : *step.mutable_inputs()) names_ok &= rename(tensor_name, p.mutable_tensor());
    for (v1::TensorPlacement& p : *step.mutable_outputs()) names_ok &= rename(tensor_name, p.mutable_tensor());
    names_ok &= rename(op_name, step.mutable_workspace()->mutable_tensor());
  }
  for (v1::Move& move : *plan.mutable_moves()) {
    names_ok &= rename(move.kind() == v1::BUFFER_KIND_WORKSPACE ? op_name : tensor_name, move.mutable_tensor());
  }
  for (v1::OrderTraffic& traffic : *plan.mutable_traffic()) {
    for (v1::TrafficPoint& point : *traffic.mutable_points()) {
      if (!point.infeasible_op().empty()) names_ok &= rename(op_name, point.mutable_infeasible_op());
    }
  }
  if (!names_ok) return absl::InternalError("a cached plan names a tensor or op the graph lacks");
  if (!same_op_order) RETURN_IF_ERROR(RefreshBaselines(graph, options, &plan));
  // The caller's sparsity levels (issue 20): not part of the key, so made
  // afresh for every answer from the stored order and arena.
  AddSparsityReport(graph, options, &plan);
  return plan;
}

}  // namespace serenity
