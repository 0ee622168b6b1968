#include "core/plan_proto.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/onnx/onnx_import.h"
#include "core/onnx/primitive_catalogue.h"
#include "core/util/status_macros.h"

namespace serenity {

Primitive PrimitiveFromProto(const v1::Primitive& p) {
  return {p.name(), p.time_us(), p.workspace_bytes(), p.layout(), p.weight_bytes()};
}

LayoutTransform LayoutTransformFromProto(const v1::LayoutTransform& t) {
  return {t.from_layout(), t.to_layout(), t.time_us_per_mb(), t.workspace_bytes_per_mb()};
}

GraphSpec GraphSpecFromProto(const v1::Graph& graph) {
  GraphSpec spec;
  spec.name = graph.name();
  for (const v1::Tensor& t : graph.tensors()) {
    TensorSpec ts;
    ts.name = t.name();
    ts.shape.assign(t.shape().begin(), t.shape().end());
    ts.dtype = t.dtype() == 0 ? 1 : t.dtype();
    ts.bytes = t.has_bytes() ? t.bytes() : -1;
    ts.has_bytes = t.has_bytes();
    ts.is_weight = t.is_weight();
    spec.tensors.push_back(std::move(ts));
  }
  for (const v1::Op& o : graph.ops()) {
    OpSpec os;
    os.name = o.name();
    os.type = o.type();
    os.inputs.assign(o.inputs().begin(), o.inputs().end());
    os.outputs.assign(o.outputs().begin(), o.outputs().end());
    os.workspace_bytes = o.workspace_bytes();
    os.macs = o.macs();
    for (const v1::Primitive& p : o.alternatives()) os.alternatives.push_back(PrimitiveFromProto(p));
    spec.ops.push_back(std::move(os));
  }
  spec.inputs.assign(graph.inputs().begin(), graph.inputs().end());
  spec.outputs.assign(graph.outputs().begin(), graph.outputs().end());
  for (const v1::LayoutTransform& t : graph.layout_transforms()) {
    spec.layout_transforms.push_back(LayoutTransformFromProto(t));
  }
  return spec;
}

v1::Graph GraphSpecToProto(const GraphSpec& spec) {
  v1::Graph g;
  g.set_name(spec.name);
  for (const TensorSpec& t : spec.tensors) {
    v1::Tensor* tensor = g.add_tensors();
    tensor->set_name(t.name);
    for (int64_t d : t.shape) tensor->add_shape(d);
    tensor->set_dtype(t.dtype);
    if (t.bytes >= 0) tensor->set_bytes(t.bytes);
    tensor->set_is_weight(t.is_weight);
  }
  for (const OpSpec& o : spec.ops) {
    v1::Op* op = g.add_ops();
    op->set_name(o.name);
    op->set_type(o.type);
    for (const std::string& in : o.inputs) op->add_inputs(in);
    for (const std::string& out : o.outputs) op->add_outputs(out);
    op->set_workspace_bytes(o.workspace_bytes);
    op->set_macs(o.macs);
    for (const Primitive& p : o.alternatives) {
      v1::Primitive* alternative = op->add_alternatives();
      alternative->set_name(p.name);
      alternative->set_time_us(p.time_us);
      alternative->set_workspace_bytes(p.workspace_bytes);
      alternative->set_layout(p.layout);
      alternative->set_weight_bytes(p.weight_bytes);
    }
  }
  for (const std::string& in : spec.inputs) g.add_inputs(in);
  for (const std::string& out : spec.outputs) g.add_outputs(out);
  for (const LayoutTransform& t : spec.layout_transforms) {
    v1::LayoutTransform* out = g.add_layout_transforms();
    out->set_from_layout(t.from);
    out->set_to_layout(t.to);
    out->set_time_us_per_mb(t.time_us_per_mb);
    out->set_workspace_bytes_per_mb(t.workspace_bytes_per_mb);
  }
  return g;
}

absl::StatusOr<PlanOptions> PlanOptionsFromProto(const v1::PlanOptions& options) {
  PlanOptions out;
  out.memory_model.alias_views = options.memory_model().alias_views();
  out.memory_model.count_weights = options.memory_model().count_weights();
  out.memory_model.in_place = options.memory_model().in_place();
  out.memory_model.concat_in_place = options.memory_model().concat_in_place();
  if (options.alignment() < 0) return absl::InvalidArgumentError("alignment must not be negative");
  if (options.alignment() > 0) out.alignment = options.alignment();
  if (options.memory_budget_bytes() < 0) {
    return absl::InvalidArgumentError("memory budget must not be negative");
  }
  out.memory_budget_bytes = options.memory_budget_bytes();
  if (options.time_limit_seconds() < 0) return absl::InvalidArgumentError("time limit must not be negative");
  out.time_limit_seconds = options.time_limit_seconds();
  if (!options.algorithm().empty()) {
    ASSIGN_OR_RETURN(out.algorithm, ParseAlgorithm(options.algorithm()));
  }
  if (!options.objective().empty()) {
    ASSIGN_OR_RETURN(out.objective, ParseObjective(options.objective()));
  }
  if (options.step_time_limit_seconds() < 0) {
    return absl::InvalidArgumentError("step time limit must not be negative");
  }
  if (options.step_time_limit_seconds() > 0) out.step_time_limit_seconds = options.step_time_limit_seconds();
  if (options.max_search_states() < 0) return absl::InvalidArgumentError("max_search_states must not be negative");
  if (options.max_search_states() > 0) out.max_search_states = options.max_search_states();
  out.onchip_bytes.assign(options.onchip_bytes().begin(), options.onchip_bytes().end());
  out.rewrite = options.rewrite();
  if (!options.rewrite_form().empty()) {
    ASSIGN_OR_RETURN(out.rewrite_form, ParseRewriteForm(options.rewrite_form()));
  }
  // Nested sparse models (issue 20): checked against the graph by
  // SanitizePlanOptions.
  for (const v1::SparsityLevel& level : options.levels()) {
    SparsityLevel& l = out.levels.emplace_back();
    l.name = level.name();
    l.density.insert(level.density().begin(), level.density().end());
    l.time_us = level.time_us();
  }
  out.switch_points.assign(options.switch_points().begin(), options.switch_points().end());
  // Primitive selection (issue 19): checked by SanitizePlanOptions.
  out.pareto = options.pareto();
  if (options.max_pareto_points() < 0) return absl::InvalidArgumentError("max_pareto_points must not be negative");
  if (options.max_pareto_points() > 0) out.max_pareto_points = options.max_pareto_points();
  out.max_time_us = options.max_time_us();
  out.primitive_baselines = options.primitive_baselines();
  out.budgets.assign(options.budgets().begin(), options.budgets().end());
  // Several memories (issue 18): checked by SanitizePlanOptions.
  for (const v1::Memory& memory : options.memories()) {
    if (memory.alignment() < 0) {
      return absl::InvalidArgumentError(absl::StrCat("memory '", memory.name(), "': alignment must not be negative"));
    }
    out.memories.push_back(
        {memory.name(), memory.capacity_bytes(), memory.alignment() > 0 ? memory.alignment() : out.alignment});
  }
  for (const v1::Pin& pin : options.pins()) {
    if (pin.has_offset() && pin.offset() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", pin.tensor(), "' is pinned at a negative offset (", pin.offset(), ")"));
    }
    out.pins.push_back({pin.tensor(), pin.memory(), pin.has_offset() ? pin.offset() : -1});
  }
  return out;
}

OnnxImportOptions OnnxImportOptionsFromProto(const v1::PlanOptions& options) {
  OnnxImportOptions import;
  for (const auto& [name, value] : options.dim_values()) import.dim_values[name] = value;
  for (const auto& [name, value] : options.workspace_bytes()) import.workspace_bytes[name] = value;
  return import;
}

namespace {

// AsksForTime (plan_options.h) of options as they are on the wire.
bool RequestAsksForTime(const v1::PlanOptions& options) {
  return options.objective() == "time" || options.pareto() || options.max_time_us() > 0;
}

// Gives the ops of `spec` (imported from `model_bytes`) the built-in
// catalogue's alternatives, except those options.primitives names (the
// file's replace them); returns how many ops got some.
absl::StatusOr<int> AddCatalogue(absl::string_view model_bytes, const v1::PlanOptions& options, GraphSpec* spec) {
  ASSIGN_OR_RETURN(std::vector<std::vector<Primitive>> catalogue, CatalogueAlternatives(model_bytes, *spec));
  absl::flat_hash_set<absl::string_view> named;
  for (const v1::OpPrimitives& entry : options.primitives()) named.insert(entry.op());
  int ops = 0;
  for (size_t i = 0; i < spec->ops.size(); ++i) {
    if (catalogue[i].empty() || named.contains(spec->ops[i].name)) continue;
    spec->ops[i].alternatives = std::move(catalogue[i]);
    ++ops;
  }
  return ops;
}

// Replaces the alternatives of the ops options.primitives names.
absl::Status ApplyPrimitives(const v1::PlanOptions& options, GraphSpec* spec) {
  if (!options.layout_transforms().empty() && !RequestAsksForTime(options)) {
    return absl::InvalidArgumentError(
        "layout_transforms are read only with objective time (--objective time --budget BYTES), --pareto or "
        "--max-time-us");
  }
  if (!options.layout_transforms().empty()) {
    spec->layout_transforms.clear();
    for (const v1::LayoutTransform& t : options.layout_transforms()) {
      spec->layout_transforms.push_back(LayoutTransformFromProto(t));
    }
  }
  if (options.primitives().empty()) return absl::OkStatus();
  if (!RequestAsksForTime(options)) {
    return absl::InvalidArgumentError(
        "primitives (--primitives) are read only with objective time (--objective time --budget BYTES), "
        "--pareto or --max-time-us");
  }
  absl::flat_hash_map<std::string, size_t> index;
  for (size_t i = 0; i < spec->ops.size(); ++i) index.emplace(spec->ops[i].name, i);
  absl::flat_hash_set<std::string> seen;
  for (const v1::OpPrimitives& entry : options.primitives()) {
    auto it = index.find(entry.op());
    if (it == index.end()) {
      return absl::InvalidArgumentError(absl::StrCat("primitives name op '", entry.op(), "', which the graph has not"));
    }
    if (!seen.insert(entry.op()).second) {
      return absl::InvalidArgumentError(absl::StrCat("primitives name op '", entry.op(), "' twice"));
    }
    std::vector<Primitive>& alternatives = spec->ops[it->second].alternatives;
    alternatives.clear();
    for (const v1::Primitive& p : entry.alternatives()) alternatives.push_back(PrimitiveFromProto(p));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Graph> GraphFromRequest(const v1::PlanRequest& request, RequestGraphInfo* info) {
  if (info != nullptr) *info = RequestGraphInfo();
  switch (request.model_case()) {
    case v1::PlanRequest::kGraph: {
      if (!request.options().workspace_bytes().empty()) {
        return absl::InvalidArgumentError(
            "options.workspace_bytes applies to ONNX models; a Graph carries workspace bytes per op");
      }
      GraphSpec spec = GraphSpecFromProto(request.graph());
      if (!request.model_name().empty()) spec.name = request.model_name();
      RETURN_IF_ERROR(ApplyPrimitives(request.options(), &spec));
      if (!RequestAsksForTime(request.options())) {
        // Not read: nor checked (a missing layout transform, say, is no
        // reason to refuse a plan of least peak).
        for (OpSpec& op : spec.ops) op.alternatives.clear();
        spec.layout_transforms.clear();
      }
      return Graph::Build(std::move(spec));
    }
    case v1::PlanRequest::kOnnxModel: {
      ASSIGN_OR_RETURN(GraphSpec spec,
                       OnnxToGraphSpec(request.onnx_model(), OnnxImportOptionsFromProto(request.options())));
      if (!request.model_name().empty()) spec.name = request.model_name();
      int catalogue_ops = 0;
      if (RequestAsksForTime(request.options()) && !request.options().no_catalogue()) {
        ASSIGN_OR_RETURN(catalogue_ops, AddCatalogue(request.onnx_model(), request.options(), &spec));
      }
      RETURN_IF_ERROR(ApplyPrimitives(request.options(), &spec));
      ASSIGN_OR_RETURN(Graph graph, Graph::Build(std::move(spec)));
      if (info != nullptr) info->catalogue_ops = catalogue_ops;
      return graph;
    }
    case v1::PlanRequest::MODEL_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("the request carries no model: set graph or onnx_model");
}

namespace {

// The one map between the core's enums and the wire's.
constexpr std::pair<Certificate, v1::Certificate> kCertificateProtos[] = {
    {Certificate::kOptimal, v1::CERTIFICATE_OPTIMAL},
    {Certificate::kBestFound, v1::CERTIFICATE_BEST_FOUND},
    {Certificate::kBaseline, v1::CERTIFICATE_BASELINE},
};

constexpr std::pair<BufferKind, v1::BufferKind> kBufferKindProtos[] = {
    {BufferKind::kTensor, v1::BUFFER_KIND_TENSOR},
    {BufferKind::kWorkspace, v1::BUFFER_KIND_WORKSPACE},
    {BufferKind::kWeight, v1::BUFFER_KIND_WEIGHT},
};

void FillHeader(const Graph& graph, const Plan& plan, const PlanOptions& options, v1::Plan* plan_out) {
  v1::Plan& out = *plan_out;
  out.set_model(graph.name());
  out.set_nodes(graph.num_ops());
  for (OpId u : plan.order) {
    out.add_order(u);
    out.add_order_names(graph.op(u).name);
  }
  out.set_peak_bytes(plan.profile.peak_bytes);
  out.set_lower_bound_bytes(plan.lower_bound_bytes);
  out.set_weight_bytes(graph.weight_bytes());
  out.set_macs(graph.total_macs());
  out.set_certificate(CertificateToProto(plan.certificate));
  out.mutable_memory_model()->set_alias_views(options.memory_model.alias_views);
  out.mutable_memory_model()->set_count_weights(options.memory_model.count_weights);
  out.mutable_memory_model()->set_in_place(options.memory_model.in_place);
  out.mutable_memory_model()->set_concat_in_place(options.memory_model.concat_in_place);
}

}  // namespace

void ApplyBudget(int64_t budget_bytes, v1::Plan* plan) {
  const BudgetFit fit = ApplyBudget(budget_bytes, plan->peak_bytes(), plan->arena().size_bytes());
  plan->set_memory_budget_bytes(budget_bytes);
  plan->set_feasible(fit.feasible);
  if (fit.headroom_bytes.has_value()) {
    plan->set_headroom_bytes(*fit.headroom_bytes);
  } else {
    plan->clear_headroom_bytes();
  }
  plan->set_arena_fits_budget(fit.arena_fits_budget);
}

v1::Certificate CertificateToProto(Certificate certificate) {
  for (const auto& [core, wire] : kCertificateProtos) {
    if (core == certificate) return wire;
  }
  return v1::CERTIFICATE_BASELINE;
}

Certificate CertificateFromProto(v1::Certificate certificate) {
  for (const auto& [core, wire] : kCertificateProtos) {
    if (wire == certificate) return core;
  }
  return Certificate::kBaseline;
}

v1::BufferKind BufferKindToProto(BufferKind kind) {
  for (const auto& [core, wire] : kBufferKindProtos) {
    if (core == kind) return wire;
  }
  return v1::BUFFER_KIND_TENSOR;
}

v1::OrderSummary* MutableBaselineProto(Baseline baseline, v1::Baselines* baselines) {
  switch (baseline) {
    case Baseline::kFileOrder:
      return baselines->mutable_file_order();
    case Baseline::kKahn:
      return baselines->mutable_kahn();
    case Baseline::kGreedy:
      return baselines->mutable_greedy();
    case Baseline::kInductor:
      return baselines->mutable_inductor();
    case Baseline::kXla:
      break;
  }
  return baselines->mutable_xla();
}

const v1::OrderSummary& BaselineProto(Baseline baseline, const v1::Baselines& baselines) {
  switch (baseline) {
    case Baseline::kFileOrder:
      return baselines.file_order();
    case Baseline::kKahn:
      return baselines.kahn();
    case Baseline::kGreedy:
      return baselines.greedy();
    case Baseline::kInductor:
      return baselines.inductor();
    case Baseline::kXla:
      break;
  }
  return baselines.xla();
}

void DropArenaAndSteps(v1::Plan* plan) {
  plan->clear_arena();
  plan->clear_steps();
  plan->clear_moves();
  plan->clear_moved_bytes();
}

namespace {

// The arena and the per-step view (skipped for a score-only plan).
void FillArenaAndSteps(const Graph& graph, const Plan& plan, v1::Plan* plan_out) {
  v1::Plan& out = *plan_out;
  // A buffer's name: its tensor's, or its op's for a workspace.
  auto buffer_name = [&](size_t i) -> const std::string& {
    const BufferLifetimeInfo& b = plan.profile.buffers[i];
    return b.kind == BufferKind::kWorkspace ? graph.op(b.op).name : graph.tensor(b.tensor).name;
  };
  v1::Arena* arena = out.mutable_arena();
  arena->set_size_bytes(plan.arena.size_bytes);
  arena->set_alignment(plan.arena.alignment);
  arena->set_tflite_size_bytes(plan.arena_bytes_tflite);
  for (size_t i = 0; i < plan.profile.buffers.size(); ++i) {
    const BufferLifetimeInfo& b = plan.profile.buffers[i];
    v1::ArenaBuffer* buffer = arena->add_buffers();
    buffer->set_kind(BufferKindToProto(b.kind));
    buffer->set_tensor(buffer_name(i));
    buffer->set_offset(plan.arena.offsets[i]);
    buffer->set_size(b.bytes);
    buffer->set_first_step(b.first_step);
    buffer->set_last_step(b.last_step);
    for (TensorId a : b.aliases) buffer->add_aliases(graph.tensor(a).name);
    if (b.anchor >= 0) {
      buffer->set_slice_of(graph.tensor(b.slice_of).name);
      buffer->set_slice_offset(b.offset_from_anchor);
    }
  }
  // Several memories (issue 18): the same rows, by memory, with offsets
  // within it.
  if (plan.memories.has_value()) {
    for (size_t m = 0; m < plan.memories->uses.size(); ++m) {
      const MemoryUse& use = plan.memories->uses[m];
      v1::MemoryPlacement* placement = out.add_memories();
      placement->set_arena_bytes(use.arena_bytes);
      placement->set_byte_steps(use.byte_steps);
      placement->set_byte_steps_bound(use.byte_steps_bound);
      placement->set_access_bytes(m < plan.memory_access_bytes.size() ? plan.memory_access_bytes[m] : 0);
    }
    for (size_t i = 0; i < plan.profile.buffers.size(); ++i) {
      v1::ArenaBuffer* buffer = out.mutable_memories(plan.memories->memory[i])->add_buffers();
      *buffer = arena->buffers(static_cast<int>(i));
      buffer->set_offset(plan.memories->offsets[i]);
    }
  }

  // Defragmentation moves, named by their buffer's tensor (or op).
  for (const ArenaMove& m : plan.moves) {
    v1::Move* move = out.add_moves();
    move->set_tensor(buffer_name(static_cast<size_t>(m.buffer)));
    move->set_kind(BufferKindToProto(plan.profile.buffers[static_cast<size_t>(m.buffer)].kind));
    move->set_before_step(m.before_step);
    move->set_from_offset(m.from_offset);
    move->set_to_offset(m.to_offset);
    move->set_bytes(m.bytes);
  }
  out.set_moved_bytes(plan.moved_bytes);

  // Per-step view: every tensor's arena offset at that step, through its
  // buffer (after the moves that run before the step).
  std::vector<int> buffer_of(graph.num_tensors(), -1);
  std::vector<int> workspace_buffer(graph.num_ops(), -1);
  for (size_t i = 0; i < plan.profile.buffers.size(); ++i) {
    const BufferLifetimeInfo& b = plan.profile.buffers[i];
    if (b.kind == BufferKind::kWorkspace) {
      workspace_buffer[b.op] = static_cast<int>(i);
      continue;
    }
    buffer_of[b.tensor] = static_cast<int>(i);
    for (TensorId a : b.aliases) buffer_of[a] = static_cast<int>(i);
  }
  std::vector<int64_t> current = plan.arena.offsets;
  size_t next_move = 0;
  auto place = [&](TensorId t, v1::TensorPlacement* p) {
    p->set_tensor(graph.tensor(t).name);
    p->set_offset(current[buffer_of[t]]);
    p->set_size(graph.tensor(t).bytes);
  };
  for (size_t position = 0; position < plan.order.size(); ++position) {
    for (; next_move < plan.moves.size() && plan.moves[next_move].before_step == static_cast<int32_t>(position);
         ++next_move) {
      current[plan.moves[next_move].buffer] = plan.moves[next_move].to_offset;
    }
    const OpId u = plan.order[position];
    const Op& op = graph.op(u);
    v1::Step* step = out.add_steps();
    step->set_op(op.name);
    std::vector<TensorId> seen;
    for (TensorId t : op.inputs) {
      if (buffer_of[t] < 0 || std::find(seen.begin(), seen.end(), t) != seen.end()) continue;  // uncounted weight
      seen.push_back(t);
      place(t, step->add_inputs());
    }
    for (TensorId t : op.outputs) {
      if (buffer_of[t] >= 0) place(t, step->add_outputs());
    }
    step->mutable_workspace()->set_tensor(op.name);
    step->mutable_workspace()->set_size(op.workspace_bytes);
    step->mutable_workspace()->set_offset(
        op.workspace_bytes > 0 && workspace_buffer[u] >= 0 ? current[workspace_buffer[u]] : 0);
  }
}

void FillSummary(const OrderSummary& s, v1::OrderSummary* o) {
  o->set_peak_bytes(s.peak_bytes);
  o->set_arena_bytes(s.arena_bytes);
  o->set_arena_bytes_ours(s.arena_bytes_ours);
  o->mutable_step_bytes()->Assign(s.step_bytes.begin(), s.step_bytes.end());
}

void FillBaselines(const PerBaseline<OrderSummary>& summaries, v1::Baselines* baselines) {
  for (const BaselineInfo& info : BaselineTable()) {
    FillSummary(summaries[info.baseline], MutableBaselineProto(info.baseline, baselines));
  }
}

void FillTraffic(const Graph& graph, const std::string& name, const std::vector<TrafficResult>& points,
                 v1::OrderTraffic* traffic) {
  traffic->set_order(name);
  for (const TrafficResult& r : points) {
    v1::TrafficPoint* point = traffic->add_points();
    point->set_onchip_bytes(r.onchip_bytes);
    point->set_read_bytes(r.read_bytes);
    point->set_write_bytes(r.write_bytes);
    point->set_feasible(r.feasible);
    if (!r.feasible) point->set_infeasible_op(graph.op(r.infeasible_op).name);
  }
}

}  // namespace

v1::Plan PlanToProto(const Graph& graph, const Plan& plan, const PlanOptions& options) {
  v1::Plan out;
  FillHeader(graph, plan, options, &out);
  if (!options.score_only) FillArenaAndSteps(graph, plan, &out);
  for (int m = 0; m < out.memories_size() && m < static_cast<int>(options.memories.size()); ++m) {
    v1::MemoryPlacement* placement = out.mutable_memories(m);
    placement->set_name(options.memories[m].name);
    placement->set_capacity_bytes(options.memories[m].capacity_bytes);
    placement->set_alignment(options.memories[m].alignment);
  }
  out.mutable_step_bytes()->Assign(plan.profile.step_bytes.begin(), plan.profile.step_bytes.end());
  FillBaselines(plan.baselines, out.mutable_baselines());
  if (plan.serenity.has_value()) FillSummary(*plan.serenity, out.mutable_baselines()->mutable_serenity());

  out.mutable_stats()->set_solve_ms(plan.solve_ms);
  out.mutable_stats()->set_total_ms(plan.total_ms);
  out.mutable_stats()->set_algorithm(plan.algorithm);
  out.mutable_stats()->set_states_explored(plan.search_stats.states);
  out.mutable_stats()->set_search_memory_bytes(plan.search_stats.peak_memo_bytes);
  for (const auto& [phase, ms] : plan.phase_ms) (*out.mutable_stats()->mutable_phase_ms())[phase] = ms;
  for (const PhaseFallback& fallback : plan.fallbacks) {
    v1::PhaseFallback* entry = out.add_fallbacks();
    entry->set_phase(fallback.phase);
    entry->set_reason(fallback.reason);
    entry->set_used(fallback.used);
  }
  ApplyBudget(options.memory_budget_bytes, &out);
  for (const auto& [name, points] : plan.traffic) FillTraffic(graph, name, points, out.add_traffic());
  return out;
}

void ReplaceBaselines(const Graph& graph, const BaselineReport& report, v1::Plan* plan) {
  // The baselines' own fallbacks are now those of the report.
  auto* fallbacks = plan->mutable_fallbacks();
  fallbacks->erase(std::remove_if(fallbacks->begin(), fallbacks->end(),
                                  [](const v1::PhaseFallback& f) {
                                    return f.phase() == "baselines" || f.phase() == "baseline_arenas";
                                  }),
                   fallbacks->end());
  for (const PhaseFallback& f : report.fallbacks) {
    v1::PhaseFallback* out = plan->add_fallbacks();
    out->set_phase(f.phase);
    out->set_reason(f.reason);
    out->set_used(f.used);
  }
  FillBaselines(report.baselines, plan->mutable_baselines());
  // Keep the plan's own order's traffic (the first entry), replace the rest.
  if (plan->traffic_size() > 0) {
    v1::OrderTraffic own = plan->traffic(0);
    plan->clear_traffic();
    *plan->add_traffic() = std::move(own);
    for (const auto& [name, points] : report.traffic) FillTraffic(graph, name, points, plan->add_traffic());
  }
}

}  // namespace serenity
