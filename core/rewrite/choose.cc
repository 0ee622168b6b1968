#include "core/rewrite/choose.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/plan_proto.h"
#include "core/rewrite/add_chain.h"
#include "core/rewrite/concat_conv.h"
#include "core/rewrite/follow_order.h"
#include "core/rewrite/pattern.h"
#include "core/util/saturating.h"
#include "core/util/status_macros.h"
#include "google/protobuf/arena.h"
#include "onnx/onnx_pb.h"

namespace serenity {
namespace {

// A round of at most this many sites that does not lower the peak together
// tries each proper subset of them.
constexpr size_t kSubsetSites = 3;

double MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Imports `model`; with `base`, the import of the model it was rewritten
// from, by OnnxModelToGraphSpecFrom (shape inference of the new nodes only).
absl::StatusOr<Graph> Import(const onnx::ModelProto& model, const OnnxImportOptions& import, const std::string& name,
                             const Graph* base = nullptr) {
  ASSIGN_OR_RETURN(GraphSpec spec, base == nullptr ? OnnxModelToGraphSpec(model, import)
                                                   : OnnxModelToGraphSpecFrom(model, import, *base));
  if (!name.empty()) spec.name = name;
  return Graph::Build(std::move(spec));
}

// A model on an arena of its own: the trials copy the model, and a copy
// on an arena is made fast and freed at once.
class ArenaModel {
 public:
  ArenaModel()
      : arena_(std::make_unique<google::protobuf::Arena>(Options())),
        model_(google::protobuf::Arena::CreateMessage<onnx::ModelProto>(arena_.get())) {}
  ArenaModel Copy() const {
    ArenaModel copy;
    copy.model_->CopyFrom(*model_);
    return copy;
  }
  onnx::ModelProto* get() const { return model_; }
  onnx::ModelProto* operator->() const { return model_; }
  onnx::ModelProto& operator*() const { return *model_; }

 private:
  static google::protobuf::ArenaOptions Options() {
    google::protobuf::ArenaOptions options;
    options.start_block_size = 64 << 10;
    options.max_block_size = 1 << 20;
    return options;
  }
  std::unique_ptr<google::protobuf::Arena> arena_;
  onnx::ModelProto* model_;
};

// A site to try: found by names, since node indices shift as sites apply.
struct Candidate {
  std::string concat;
  int64_t bytes = 0;                 // of the Concat's output
  int64_t heat = 0;                  // see PlanWithRewrites (HeatOf)
  std::vector<std::string> inputs;   // the Concat's
  std::vector<std::string> outputs;  // of its Convs
};

// The most bytes live in a plan (its `step_bytes`; `made`, the step that
// makes each tensor, ProductionSteps) from the first of `inputs` made (a
// graph input or weight: step 0) to the last of `outputs`: how much a
// rewrite of what lies between can lower the plan's peak.
int64_t HeatOf(const absl::flat_hash_map<std::string, int>& made, const std::vector<int64_t>& step_bytes,
               const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  int first = static_cast<int>(step_bytes.size()), last = 0;
  for (const std::string& in : inputs) {
    auto it = made.find(in);
    first = std::min(first, it == made.end() ? 0 : it->second);
  }
  for (const std::string& out : outputs) {
    if (auto it = made.find(out); it != made.end()) last = std::max(last, it->second);
  }
  int64_t heat = 0;
  for (int step = first; step <= last && step < static_cast<int>(step_bytes.size()); ++step) {
    heat = std::max(heat, step_bytes[step]);
  }
  return heat;
}

// Why a graph has no Concat -> Conv site: its Concats' readers, counted,
// e.g. "no Concat is read by one Conv alone: 61 by BatchNormalization, 1 by
// GlobalAveragePool".
std::string WhyNoSite(const onnx::GraphProto& graph, const ModelIndex& index) {
  std::map<std::string, int> readers;
  int concats = 0;
  for (const onnx::NodeProto& node : graph.node()) {
    if (node.op_type() != "Concat" || node.output_size() != 1) continue;
    ++concats;
    std::vector<std::string> types;
    for (int reader : index.ConsumersOf(node.output(0))) types.push_back(graph.node(reader).op_type());
    if (index.graph_outputs.contains(node.output(0))) types.push_back("graph output");
    std::sort(types.begin(), types.end());
    ++readers[types.empty() ? "nothing" : absl::StrJoin(types, "+")];
  }
  if (concats == 0) return "no Concat -> Conv site: the graph has no Concat";
  std::vector<std::string> parts;
  for (const auto& [types, count] : readers) parts.push_back(absl::StrCat(count, " read by ", types));
  return absl::StrCat("no Concat -> Conv site: of ", concats, " Concats, ", absl::StrJoin(parts, ", "));
}

}  // namespace

absl::StatusOr<RewrittenPlan> PlanWithRewrites(absl::string_view onnx_bytes, const OnnxImportOptions& import,
                                               const std::string& model_name, const PlanOptions& options,
                                               Executor* executor, const Graph* as_given) {
  const auto start = std::chrono::steady_clock::now();
  ArenaModel model;
  if (onnx_bytes.size() > static_cast<size_t>(INT_MAX) ||
      !model->ParseFromArray(onnx_bytes.data(), static_cast<int>(onnx_bytes.size()))) {
    return absl::InvalidArgumentError("not a valid ONNX model");
  }
  // Named as the importer names them, the nodes import to the same graph.
  NameNodesAsImporter(model->mutable_graph());
  std::optional<Graph> imported;
  if (as_given == nullptr) {
    ASSIGN_OR_RETURN(imported, Import(*model, import, model_name));
  } else {
    imported = *as_given;
  }
  Graph graph = *std::move(imported);
  ASSIGN_OR_RETURN(SanitizedOptions sanitized, SanitizePlanOptions(graph, options));
  // Every plan is scored only; the one kept is completed at the end.
  SanitizedOptions score = sanitized;
  score.set_score_only(true);
  ASSIGN_OR_RETURN(Plan plan, PlanGraph(graph, score, executor));

  RewriteReport report;
  report.peak_bytes_without = plan.profile.peak_bytes;
  report.lower_bound_bytes_without = plan.lower_bound_bytes;
  report.certificate_without = plan.certificate;
  report.ops_before = graph.num_ops();
  report.form = RewriteFormName(options.rewrite_form);
  report.without_ms = MillisSince(start);
  const auto rewrite_start = std::chrono::steady_clock::now();

  // Channel counts and sizes of the original tensors (a rewrite keeps every
  // tensor a later site reads).
  absl::flat_hash_map<std::string, std::pair<int64_t, int64_t>> tensors;  // name -> (dim 1, bytes)
  for (const Tensor& t : graph.tensors()) tensors[t.name] = {t.shape.size() > 1 ? t.shape[1] : 0, t.bytes};
  // The step that makes each tensor in the plan so far.
  absl::flat_hash_map<std::string, int> made = ProductionSteps(graph, plan.order);
  std::vector<Candidate> candidates;
  // The index of `model`, built again when needed after a trial is kept.
  std::optional<ModelIndex> model_index = ModelIndex::Build(model->graph());
  for (const ConcatConvSite& site : FindConcatConvSites(model->graph(), *model_index)) {
    const onnx::NodeProto& concat = model->graph().node(site.concat);
    Candidate candidate;
    candidate.concat = concat.name();
    candidate.bytes = tensors[concat.output(0)].second;
    candidate.inputs.assign(concat.input().begin(), concat.input().end());
    for (int c : site.convs) candidate.outputs.push_back(model->graph().node(c).output(0));
    candidate.heat = HeatOf(made, plan.profile.step_bytes, candidate.inputs, candidate.outputs);
    candidates.push_back(std::move(candidate));
  }
  report.sites_found = static_cast<int>(candidates.size());
  if (candidates.empty()) report.notes.push_back(WhyNoSite(model->graph(), *model_index));
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.bytes > b.bytes; });
  const auto past_deadline = [&] { return std::chrono::steady_clock::now() >= options.deadline; };
  // The best peak so far, and its plan's ops by name (what each trial's
  // search starts from, carried over): the model as given, then each trial
  // kept.
  int64_t best = plan.profile.peak_bytes;
  std::vector<std::string> best_names = OpNamesInOrder(graph, plan.order);
  // Imports and scores a trial model. A trial that fails to import or plan
  // is not kept (a note says why): rewriting never fails a request that
  // plans without it. Only a cancelled call ends the request.
  struct Scored {
    Graph graph;
    Plan plan;
  };
  const auto score_trial = [&](const onnx::ModelProto& trial,
                               absl::string_view what) -> absl::StatusOr<std::optional<Scored>> {
    absl::StatusOr<Graph> trial_graph = Import(trial, import, model_name, &graph);
    if (!trial_graph.ok()) {
      report.notes.push_back(
          absl::StrCat(what, ": not kept, the rewritten model does not import: ", trial_graph.status().message()));
      return std::nullopt;
    }
    // The search starts from the best plan so far, carried over, when that
    // is lower than the baselines: most of the trial's ops are its ops. Its
    // new ops run as soon as they can or only when needed, whichever makes
    // the lower peak (on tv_densenet121 the former was above the plan it
    // came from, the latter at the rewritten graph's optimum).
    PlanHints hints;
    hints.start_candidates = {FollowOrder(*trial_graph, best_names, NewOps::kAsSoonAsReady),
                              FollowOrder(*trial_graph, best_names, NewOps::kWhenNeeded)};
    hints.only_below = best;
    absl::StatusOr<Plan> trial_plan = PlanGraph(*trial_graph, score, executor, hints);
    if (!trial_plan.ok()) {
      if (trial_plan.status().code() == absl::StatusCode::kCancelled) return trial_plan.status();
      report.notes.push_back(
          absl::StrCat(what, ": not kept, the rewritten model does not plan: ", trial_plan.status().message()));
      return std::nullopt;
    }
    return Scored{*std::move(trial_graph), *std::move(trial_plan)};
  };

  // What a trial's plan says against the best peak: a trial is minimised
  // only when it goes below it (PlanHints::only_below).
  const auto outcome = [&](const Plan& trial) -> std::string {
    if (trial.profile.peak_bytes < best) return absl::StrCat("peak ", trial.profile.peak_bytes, " bytes");
    if (trial.lower_bound_bytes >= best) return absl::StrCat("no order below ", best, " bytes");
    return absl::StrCat("peak ", trial.profile.peak_bytes, " bytes, not below ", best,
                        " (not proven the least: a limit or the algorithm stopped first)");
  };
  bool changed = false;
  std::vector<bool> tried(candidates.size(), false);
  // The best plan so far completed (CompletePlan) beside a trial that is
  // likely the last: the subsets of a round that did not lower the peak,
  // and the sums. Such a trial is seldom kept, and the completion is then
  // what the request returns; kept, its plan is completed at the end. With
  // an executor only (the two run at once), and once per best plan.
  std::optional<absl::StatusOr<Plan>> completed;
  const auto beside_completion = [&](const std::function<absl::Status()>& work) -> absl::Status {
    if (executor == nullptr || completed.has_value()) return work();
    Plan scored_plan = plan;
    absl::Status work_status;
    std::vector<std::function<void()>> tasks = {
        [&] { completed = CompletePlan(graph, sanitized, std::move(scored_plan), executor); },
        [&] { work_status = work(); }};
    RunAll(executor, tasks);
    return work_status;
  };
  // Keeps a trial as the best so far. The sites not tried yet are
  // untouched by it: their heat in its plan.
  const auto keep = [&](ArenaModel trial, Scored scored, std::vector<RewriteSite> sites) {
    completed.reset();
    best = scored.plan.profile.peak_bytes;
    model = std::move(trial);
    model_index.reset();
    graph = std::move(scored.graph);
    plan = std::move(scored.plan);
    best_names = OpNamesInOrder(graph, plan.order);
    for (RewriteSite& site : sites) report.recipe.sites.push_back(std::move(site));
    changed = true;
    made = ProductionSteps(graph, plan.order);
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (!tried[c])
        candidates[c].heat = HeatOf(made, plan.profile.step_bytes, candidates[c].inputs, candidates[c].outputs);
    }
  };

  // Applies `candidate` to `*trial`; false with a note when it cannot be.
  // While nothing has been applied to a copy of `model`, its index is
  // `model_index` (the same nodes, in the same places), built once.
  const auto apply = [&](const Candidate& candidate, onnx::ModelProto* trial,
                         std::vector<RewriteSite>* sites) -> absl::StatusOr<bool> {
    std::optional<ModelIndex> built;
    if (sites->empty() && !model_index.has_value()) model_index = ModelIndex::Build(model->graph());
    if (!sites->empty()) built = ModelIndex::Build(trial->graph());
    const ModelIndex& index = sites->empty() ? *model_index : *built;
    std::optional<ConcatConvSite> site =
        MatchConcatConvSite(trial->graph(), index, FindNode(trial->graph(), candidate.concat));
    if (!site.has_value()) return false;  // cannot happen: sites share no node
    std::vector<int64_t> channels;
    for (const std::string& in : trial->graph().node(site->concat).input()) channels.push_back(tensors[in].first);
    // Chain the partial Convs in the order the current plan makes their
    // inputs (graph inputs and weights first), so none is held for the chain.
    const onnx::NodeProto& concat = trial->graph().node(site->concat);
    std::vector<int> chain(concat.input_size());
    for (int i = 0; i < concat.input_size(); ++i) chain[i] = i;
    const auto step = [&](int i) {
      auto it = made.find(concat.input(i));
      return it == made.end() ? -1 : it->second;
    };
    std::stable_sort(chain.begin(), chain.end(), [&](int a, int b) { return step(a) < step(b); });
    absl::StatusOr<RewriteSite> done = ApplyConcatConv(trial, *site, channels, options.rewrite_form, chain, &index);
    if (!done.ok()) {
      if (done.status().code() != absl::StatusCode::kFailedPrecondition) return done.status();
      report.notes.push_back(std::string(done.status().message()));
      return false;
    }
    sites->push_back(*std::move(done));
    return true;
  };

  // Rounds: the sites whose heat reaches the best peak so far, applied
  // together and scored; kept (plan and all) when the peak drops,
  // and then the sites reaching the new peak are next. A site far from the
  // peak is never applied, so the rewritten graph grows only where it helps.
  for (int round = 1; !candidates.empty(); ++round) {
    if (past_deadline()) {
      report.notes.push_back(absl::StrCat("stopped at the deadline before round ", round));
      break;
    }
    std::vector<size_t> chosen;  // the sites not tried yet that reach the best peak
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (!tried[c] && candidates[c].heat >= best) chosen.push_back(c);
    }
    if (chosen.empty()) {
      if (round == 1) {
        const auto peak = std::max_element(plan.profile.step_bytes.begin(), plan.profile.step_bytes.end());
        const OpId at = plan.order[peak - plan.profile.step_bytes.begin()];
        report.notes.push_back(absl::StrCat("none of the ", candidates.size(), " sites is live where the peak is (",
                                            best, " bytes, at op '", graph.op(at).name,
                                            "'): no partition can lower it"));
      }
      break;
    }
    ArenaModel trial = model.Copy();
    std::vector<RewriteSite> sites;
    std::vector<size_t> applied_here;  // the candidates this round applied
    for (size_t c : chosen) {
      tried[c] = true;
      ASSIGN_OR_RETURN(bool applied, apply(candidates[c], trial.get(), &sites));
      if (applied) applied_here.push_back(c);
    }
    if (sites.empty()) continue;
    std::vector<std::string> convs;
    for (const RewriteSite& site : sites) convs.push_back(absl::StrCat("'", site.conv, "'"));
    const std::string what = absl::StrCat("round ", round, ": ", sites.size(), " site", sites.size() == 1 ? "" : "s",
                                          " live where ", best, " bytes were (Conv ", absl::StrJoin(convs, ", "), ")");
    ASSIGN_OR_RETURN(std::optional<Scored> scored, score_trial(*trial, what));
    if (!scored.has_value()) break;
    const int64_t peak = scored->plan.profile.peak_bytes;
    if (peak >= best) {
      const bool subsets = applied_here.size() >= 2 && applied_here.size() <= kSubsetSites;
      report.notes.push_back(
          absl::StrCat(what, ": ", outcome(scored->plan), subsets ? "; trying its subsets" : ": not rewritten"));
      if (!subsets) break;
      // Few sites: every proper subset of them (at most 6 plans); the one
      // with the lowest peak below the best is kept (fewer sites on a tie).
      struct Subset {
        ArenaModel model;
        std::optional<Scored> scored;
        std::vector<RewriteSite> sites;
      };
      std::optional<Subset> kept;
      const uint32_t all = (1u << applied_here.size()) - 1;
      RETURN_IF_ERROR(beside_completion([&]() -> absl::Status {
        for (uint32_t mask = 1; mask < all && !past_deadline(); ++mask) {
          Subset subset{model.Copy(), std::nullopt, {}};
          for (size_t b = 0; b < applied_here.size(); ++b) {
            if ((mask >> b & 1) == 0) continue;
            ASSIGN_OR_RETURN(bool applied, apply(candidates[applied_here[b]], subset.model.get(), &subset.sites));
            (void)applied;  // each applied together above
          }
          std::vector<std::string> names;
          for (const RewriteSite& site : subset.sites) names.push_back(absl::StrCat("'", site.conv, "'"));
          const std::string only = absl::StrCat("round ", round, ": Conv ", absl::StrJoin(names, ", "), " alone");
          ASSIGN_OR_RETURN(std::optional<Scored> scored_subset, score_trial(*subset.model, only));
          if (!scored_subset.has_value()) continue;
          const int64_t subset_peak = scored_subset->plan.profile.peak_bytes;
          report.notes.push_back(absl::StrCat(only, ": ", outcome(scored_subset->plan)));
          if (subset_peak >= best) continue;
          if (kept.has_value() &&
              (subset_peak > kept->scored->plan.profile.peak_bytes ||
               (subset_peak == kept->scored->plan.profile.peak_bytes && subset.sites.size() >= kept->sites.size()))) {
            continue;
          }
          subset.scored = std::move(scored_subset);
          kept = std::move(subset);
        }
        return absl::OkStatus();
      }));
      if (!kept.has_value()) break;
      report.notes.push_back(
          absl::StrCat("round ", round, ": kept ", kept->sites.size(), " of its ", applied_here.size(), " sites"));
      keep(std::move(kept->model), std::move(*kept->scored), std::move(kept->sites));
      continue;
    }
    report.notes.push_back(absl::StrCat(what, ": peak ", peak, " bytes"));
    keep(std::move(trial), std::move(*scored), std::move(sites));
  }

  // Add chains: every sum live where the peak is whose operands the plan so
  // far makes in another order than written is rewritten to add them as
  // they are made; kept, all together, when that lowers the peak.
  if (!past_deadline()) {
    std::vector<std::pair<std::string, std::vector<std::string>>> reorders;  // (sum, operand order)
    int cold = 0;  // sums to reorder that are not live where the peak is
    if (!model_index.has_value()) model_index = ModelIndex::Build(model->graph());
    const std::vector<AddChain> model_chains = FindAddChains(model->graph(), *model_index);
    for (const AddChain& chain : model_chains) {
      std::vector<std::string> order = OrderByFirstAvailable(chain, made);
      if (order == chain.operands) continue;
      if (HeatOf(made, plan.profile.step_bytes, chain.operands, {chain.output}) < best) {
        ++cold;
        continue;
      }
      reorders.emplace_back(chain.output, std::move(order));
    }
    report.sites_found += static_cast<int>(reorders.size()) + cold;
    if (cold > 0) {
      report.notes.push_back(absl::StrCat(cold, " sum", cold == 1 ? "" : "s",
                                          " the plan adds out of order not reordered: not live where the peak is"));
    }
    ArenaModel trial;
    std::vector<RewriteSite> sites;
    std::optional<Scored> scored;
    std::string what;
    if (!reorders.empty()) {
      RETURN_IF_ERROR(beside_completion([&]() -> absl::Status {
        trial = model.Copy();
        const absl::flat_hash_map<std::string, std::vector<int64_t>> shapes = TensorShapes(graph);
        for (const auto& [output, order] : reorders) {
          // Until a sum is reordered the trial is the model as it was (a sum
          // not reordered leaves it unchanged): its chains are the model's.
          std::vector<AddChain> trial_chains;
          if (!sites.empty()) trial_chains = FindAddChains(trial->graph(), ModelIndex::Build(trial->graph()));
          for (const AddChain& chain : sites.empty() ? model_chains : trial_chains) {
            if (chain.output != output) continue;
            absl::StatusOr<RewriteSite> done = ApplyAddChainOrder(trial.get(), chain, order, shapes);
            if (done.ok()) {
              sites.push_back(*std::move(done));
            } else if (done.status().code() == absl::StatusCode::kFailedPrecondition) {
              report.notes.push_back(absl::StrCat("sum '", output, "' not reordered: ", done.status().message()));
            } else {
              return done.status();
            }
          }
        }
        if (sites.empty()) return absl::OkStatus();
        what = absl::StrCat(sites.size(), " sum", sites.size() == 1 ? "" : "s",
                            " reordered to add operands as the plan makes them");
        ASSIGN_OR_RETURN(scored, score_trial(*trial, what));
        return absl::OkStatus();
      }));
    }
    if (scored.has_value() && scored->plan.profile.peak_bytes < best) {
      report.notes.push_back(absl::StrCat(what, ": peak ", scored->plan.profile.peak_bytes, " bytes"));
      keep(std::move(trial), std::move(*scored), std::move(sites));
    } else if (scored.has_value()) {
      report.notes.push_back(absl::StrCat(what, ": ", outcome(scored->plan), ": not rewritten"));
    }
  }
  report.choice = changed ? "peak_rounds" : "none";
  if (completed.has_value()) {
    ASSIGN_OR_RETURN(plan, *std::move(completed));
  } else {
    ASSIGN_OR_RETURN(plan, CompletePlan(graph, sanitized, std::move(plan), executor));
  }
  report.peak_bytes_with = plan.profile.peak_bytes;
  report.ops_after = graph.num_ops();
  report.rewrite_ms = MillisSince(rewrite_start);
  return RewrittenPlan{model->SerializeAsString(), std::move(graph), std::move(plan), std::move(report)};
}

RewriteGrowth BoundRewriteGrowth(const Graph& graph) {
  RewriteGrowth growth;
  const auto is_constant = [&](TensorId t) {
    const Tensor& tensor = graph.tensor(t);
    return tensor.is_weight || (tensor.producer != kNoOp && graph.op(tensor.producer).type == "Constant");
  };
  for (const Op& concat : graph.ops()) {
    if (concat.type != "Concat" || concat.outputs.size() != 1) continue;
    const int64_t n = static_cast<int64_t>(concat.inputs.size());
    std::vector<TensorId> frontier = {concat.outputs[0]};
    absl::flat_hash_set<OpId> seen;
    while (!frontier.empty()) {
      const TensorId t = frontier.back();
      frontier.pop_back();
      for (OpId reader : graph.tensor(t).consumers) {
        if (!seen.insert(reader).second) continue;
        const Op& op = graph.op(reader);
        int64_t constant_bytes = 0;
        for (TensorId in : op.inputs) {
          if (in != t && is_constant(in)) constant_bytes = SaturatingAdd(constant_bytes, graph.tensor(in).bytes);
        }
        if (op.type == "Conv") {
          growth.convs += n;
          growth.slice_bytes = SaturatingAdd(growth.slice_bytes, constant_bytes);
          continue;
        }
        bool per_channel = op.outputs.size() == 1;
        for (TensorId in : op.inputs) per_channel = per_channel && (in == t || is_constant(in));
        if (!per_channel) continue;
        growth.pushed += n;
        growth.slice_bytes = SaturatingAdd(growth.slice_bytes, constant_bytes);
        frontier.push_back(op.outputs[0]);
      }
    }
  }
  return growth;
}

void RewriteReportToProto(const RewriteReport& report, v1::RewriteReport* out) {
  out->set_peak_bytes_without(report.peak_bytes_without);
  out->set_lower_bound_bytes_without(report.lower_bound_bytes_without);
  out->set_certificate_without(CertificateToProto(report.certificate_without));
  out->set_peak_bytes_with(report.peak_bytes_with);
  out->set_ops_before(report.ops_before);
  out->set_ops_after(report.ops_after);
  out->set_sites_found(report.sites_found);
  out->set_sites_applied(static_cast<int32_t>(report.recipe.sites.size()));
  out->set_greedy(report.sites_found > 1);
  out->set_choice(report.choice);
  out->set_form(report.form);
  for (const RewriteSite& site : report.recipe.sites) {
    v1::RewriteSite* s = out->mutable_recipe()->add_sites();
    s->set_concat(site.concat);
    s->set_conv(site.conv);
    s->set_form(site.form);
    for (const std::string& in : site.inputs) s->add_inputs(in);
    for (int64_t c : site.channels) s->add_channels(c);
    for (const std::string& op : site.new_ops) s->add_new_ops(op);
    for (const std::string& op : site.pushed) s->add_pushed(op);
    for (int i : site.chain) s->add_chain(i);
    for (const std::string& a : site.assumptions) s->add_assumptions(a);
    for (const ConvSplit& split : site.splits) {
      v1::ConvSplit* out_split = s->add_splits();
      out_split->set_conv(split.conv);
      out_split->set_form(split.form);
    }
    for (const WeightSlice& w : site.weight_slices) {
      v1::WeightSlice* slice = s->add_weight_slices();
      slice->set_source(w.source);
      slice->set_axis(w.axis);
      slice->set_begin(w.begin);
      slice->set_end(w.end);
      slice->set_name(w.name);
    }
  }
  for (const std::string& note : report.notes) out->add_notes(note);
  out->set_without_ms(report.without_ms);
  out->set_rewrite_ms(report.rewrite_ms);
}

RewriteRecipe RewriteRecipeFromProto(const v1::RewriteRecipe& recipe) {
  RewriteRecipe out;
  for (const v1::RewriteSite& s : recipe.sites()) {
    RewriteSite site;
    site.concat = s.concat();
    site.conv = s.conv();
    site.form = s.form();
    site.inputs.assign(s.inputs().begin(), s.inputs().end());
    site.channels.assign(s.channels().begin(), s.channels().end());
    site.new_ops.assign(s.new_ops().begin(), s.new_ops().end());
    site.pushed.assign(s.pushed().begin(), s.pushed().end());
    site.chain.assign(s.chain().begin(), s.chain().end());
    site.assumptions.assign(s.assumptions().begin(), s.assumptions().end());
    for (const v1::ConvSplit& split : s.splits()) site.splits.push_back({split.conv(), split.form()});
    for (const v1::WeightSlice& w : s.weight_slices()) {
      site.weight_slices.push_back({w.source(), w.axis(), w.begin(), w.end(), w.name()});
    }
    out.sites.push_back(std::move(site));
  }
  return out;
}

}  // namespace serenity
