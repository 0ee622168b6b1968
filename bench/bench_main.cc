// serenity-bench: measurements behind bench/RESULTS.md that the CLI does not
// print.
//   serenity-bench random-orders MODEL.onnx [SAMPLES] [SEED]
//     peaks of random topological orders (at every step a uniformly chosen
//     ready op): percentiles, and the shares that reach the optimum and that
//     fit the greedy and file-order peaks (the paper's Figure 3).
//   serenity-bench arena INSTANCE.csv...
//     arena planning of MiniMalloc-format instances against the lower bound.
//   serenity-bench budget-sweep MODEL.onnx [POINTS]
//     states and time of one feasibility check and of the budgeted DP at
//     budgets from the lower bound to the Kahn peak (the paper's Figure 8).
//   serenity-bench check MODEL.onnx BUDGET [SECONDS] [MAX_STATES]
//     one feasibility check of the whole graph at BUDGET bytes (no split at
//     cut points, default limits 60 s and SearchOptions' state cap): fits, refuted or
//     unknown, with states, time and the memo's bytes.
//   serenity-bench bounds MODEL.onnx
//     the graph's lower bounds on the peak, each with its time: the cone
//     bound (StepLowerBounds), the closure bound, and the pair bound
//     (PairBounds, closure_bound.h) of every segment, its ops ranked by
//     closure bound (the planner ranks by its bounds, then by step in its
//     start order, and pairs only the segments its best order leaves open).
//   serenity-bench plan fanout RELUS [SECONDS] [BYTES]
//   serenity-bench plan layered OPS WIDTH [SECONDS]
//     PlanGraph (server defaults, time limit SECONDS, default 1) of a
//     synthetic graph (tests/testing/test_graph.h: FanOutConcat, LayeredDag):
//     wall time, peak, arena, certificate, per-phase times and fallbacks.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_pool.h"
#include "core/arena/arena_csv.h"
#include "core/arena/arena_planner.h"
#include "core/arena/arena_verifier.h"
#include "core/arena/instance_search.h"
#include "core/graph/reachability.h"
#include "core/memory/closure_bound.h"
#include "core/memory/simulator.h"
#include "core/onnx/onnx_import.h"
#include "core/planner.h"
#include "core/schedule/baselines.h"
#include "core/schedule/budget_search.h"
#include "core/schedule/signature_dp.h"
#include "tests/testing/orders.h"
#include "tests/testing/plan_verifier.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using Clock = std::chrono::steady_clock;

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int64_t Optimum(const BufferModel& buffers) {
  SearchOptions options;
  options.time_limit_seconds = 60;
  MinimizeResult result = MinimizePeak(buffers, GreedyOrder(buffers), LowerBoundBytes(buffers), options);
  if (!result.optimal) {
    std::fprintf(stderr, "warning: optimum not proven (lower bound %lld); using best found %lld\n",
                 static_cast<long long>(result.lower_bound_bytes), static_cast<long long>(result.peak_bytes));
  }
  // Re-simulated independently, so a figure here never rests on the search alone.
  if (!IsTopologicalOrder(buffers.graph(), result.order) ||
      testing::NaivePeak(buffers.graph(), result.order, false, false) != result.peak_bytes) {
    std::fprintf(stderr, "error: the search's order does not re-simulate to its peak\n");
    std::abort();
  }
  return result.peak_bytes;
}

int RandomOrders(const Graph& graph, int samples, unsigned seed) {
  BufferModel buffers(graph, {});
  const int64_t optimum = Optimum(buffers);
  const int64_t greedy = PeakOf(buffers, GreedyOrder(buffers));
  const int64_t file = PeakOf(buffers, FileOrder(graph));
  std::mt19937 rng(seed);
  std::vector<int64_t> peaks;
  peaks.reserve(samples);
  for (int i = 0; i < samples; ++i) peaks.push_back(PeakOf(buffers, testing::RandomTopologicalOrder(graph, rng)));
  std::sort(peaks.begin(), peaks.end());
  auto share = [&](int64_t limit) {
    return 100.0 * static_cast<double>(std::upper_bound(peaks.begin(), peaks.end(), limit) - peaks.begin()) /
           static_cast<double>(samples);
  };
  auto pct = [&](double p) { return static_cast<long long>(peaks[static_cast<size_t>(p * (samples - 1))]); };
  std::printf("| %s | %d | %lld | %lld | %lld | %lld | %lld | %lld | %.2f%% | %.2f%% | %.2f%% |\n",
              graph.name().c_str(), samples, static_cast<long long>(optimum), pct(0), pct(0.10), pct(0.50), pct(0.90),
              pct(1.0), share(optimum), share(greedy), share(file));
  return 0;
}

// MiniMalloc's CSV (id,lower,upper,size; live on [lower, upper)).
int ArenaInstances(int argc, char** argv) {
  // As `serenity-client arena` plans: a chain per core for up to 0.9 s.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(cores);
  InstanceSearchOptions search;
  search.chains = cores;
  search.executor = &pool;
  std::printf(
      "| instance | buffers | lower bound | greedy by size | ours | ours / bound | ms |\n"
      "|---|---:|---:|---:|---:|---:|---:|\n");
  for (int i = 2; i < argc; ++i) {
    absl::StatusOr<ArenaInstance> instance = ParseArenaCsv(testing::ReadFile(argv[i]));
    if (!instance.ok()) {
      std::fprintf(stderr, "%s: %s\n", argv[i], std::string(instance.status().message()).c_str());
      return 1;
    }
    const std::vector<ArenaBuffer>& buffers = instance->buffers;
    const Clock::time_point start = Clock::now();
    absl::StatusOr<ArenaPlan> ours = PlanArenaInstance(buffers, 1, search);
    const double ms = MillisSince(start);
    absl::StatusOr<ArenaPlan> greedy = PlanArenaGreedyBySize(buffers, 1);
    if (!ours.ok() || !greedy.ok() || !VerifyArena(buffers, *ours).ok()) {
      std::fprintf(stderr, "%s: invalid instance or plan\n", argv[i]);
      return 1;
    }
    const int64_t bound = ArenaLowerBound(buffers);
    std::printf("| %s | %zu | %lld | %lld | %lld | %.3f | %.1f |\n", std::filesystem::path(argv[i]).stem().c_str(),
                buffers.size(), static_cast<long long>(bound), static_cast<long long>(greedy->size_bytes),
                static_cast<long long>(ours->size_bytes), static_cast<double>(ours->size_bytes) / bound, ms);
  }
  return 0;
}

int BudgetSweep(const Graph& graph, int points) {
  BufferModel buffers(graph, {});
  const int64_t optimum = Optimum(buffers);
  const int64_t kahn = PeakOf(buffers, KahnOrder(graph));
  const int64_t bound = LowerBoundBytes(buffers);
  std::printf(
      "| budget | budget / optimum | search | search states | search ms | DP states | DP ms |\n"
      "|---:|---:|---|---:|---:|---:|---:|\n");
  for (int i = 0; i < points; ++i) {
    // Budgets from the static lower bound (infeasible below the optimum) to
    // the Kahn peak.
    const int64_t budget = bound + (kahn - bound) * i / std::max(1, points - 1);
    BudgetSearch search(buffers, SearchOptions());
    SearchStats stats;
    std::vector<OpId> order;
    int64_t next = 0;
    Clock::time_point start = Clock::now();
    Feasibility answer = search.Check(budget, Clock::now() + std::chrono::seconds(60), &order, &next, &stats);
    const double search_ms = MillisSince(start);
    const char* verdict = answer == Feasibility::kFeasible     ? "fits"
                          : answer == Feasibility::kInfeasible ? "refuted"
                                                               : "unknown";
    SearchOptions dp_options;
    dp_options.time_limit_seconds = 10;
    start = Clock::now();
    MinimizeResult dp = SignatureDp(buffers, dp_options, budget);
    const double dp_ms = MillisSince(start);
    std::printf("| %lld | %.3f | %s | %lld | %.1f | %lld%s | %.1f |\n", static_cast<long long>(budget),
                static_cast<double>(budget) / static_cast<double>(optimum), verdict,
                static_cast<long long>(stats.states), search_ms, static_cast<long long>(dp.stats.states),
                dp.order.empty() ? " (no answer)" : "", dp_ms);
  }
  return 0;
}

int CheckBudget(const Graph& graph, int64_t budget, double seconds, int64_t max_states) {
  BufferModel buffers(graph, {});
  SearchOptions options;
  options.max_states = max_states;
  BudgetSearch search(buffers, options);
  SearchStats stats;
  std::vector<OpId> order;
  int64_t next = 0;
  const Clock::time_point start = Clock::now();
  const Feasibility answer = search.Check(
      budget, start + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6)), &order, &next, &stats);
  const double ms = MillisSince(start);
  // The order found, re-simulated independently of the search.
  const int64_t found_peak = answer == Feasibility::kFeasible && IsTopologicalOrder(graph, order)
                                 ? testing::NaivePeak(graph, order, false, false)
                                 : INT64_MAX;
  if (answer == Feasibility::kFeasible && found_peak > budget) {
    std::fprintf(stderr, "error: the order found does not fit the budget when re-simulated\n");
    return 1;
  }
  const std::string verdict =
      answer == Feasibility::kFeasible ? "fits (an order with peak " + std::to_string(found_peak) + ")" : "";
  std::printf("%s: budget %lld %s, %lld states, %.1f ms, memo %.1f MB%s\n", graph.name().c_str(),
              static_cast<long long>(budget),
              answer == Feasibility::kFeasible     ? verdict.c_str()
              : answer == Feasibility::kInfeasible ? "refuted"
                                                   : "unknown (limit)",
              static_cast<long long>(stats.states), ms, static_cast<double>(stats.peak_memo_bytes) / 1e6,
              answer == Feasibility::kInfeasible && next != INT64_MAX
                  ? (" (every budget below " + std::to_string(next) + " too)").c_str()
                  : "");
  return 0;
}

int PlanSynthetic(int argc, char** argv) {
  const std::string kind = argc > 2 ? argv[2] : "";
  GraphSpec spec;
  double seconds = 1;
  if (kind == "fanout" && argc > 3) {
    if (argc > 4 && argv[4][0] != '-') seconds = std::stod(argv[4]);
    spec = testing::FanOutConcat(std::stoi(argv[3]), argc > 5 && argv[5][0] != '-' ? std::stoll(argv[5]) : 1024);
  } else if (kind == "layered" && argc > 4) {
    spec = testing::LayeredDag(std::stoi(argv[3]), std::stoi(argv[4]));
    if (argc > 5 && argv[5][0] != '-') seconds = std::stod(argv[5]);
  } else {
    std::fprintf(stderr,
                 "usage: serenity-bench plan fanout RELUS [SECONDS] [BYTES] | plan layered OPS WIDTH [SECONDS]\n");
    return 2;
  }
  absl::StatusOr<Graph> graph = Graph::Build(spec);
  if (!graph.ok()) {
    std::fprintf(stderr, "%s\n", std::string(graph.status().message()).c_str());
    return 1;
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(cores);
  PlanOptions options;
  options.time_limit_seconds = seconds;
  for (int i = 3; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--in-place") options.memory_model.in_place = true;
    if (flag == "--concat-in-place") options.memory_model.concat_in_place = true;
    if (flag == "--alias-views") options.memory_model.alias_views = true;
  }
  const Clock::time_point start = Clock::now();
  absl::StatusOr<Plan> plan = PlanGraph(*graph, options, &pool);
  const double ms = MillisSince(start);
  if (!plan.ok()) {
    std::printf("%s: %s after %.1f ms\n", spec.name.c_str(), plan.status().ToString().c_str(), ms);
    return 1;
  }
  const absl::Status valid = VerifyArena(
      [&] {
        std::vector<ArenaBuffer> buffers;
        for (const BufferLifetimeInfo& b : plan->profile.buffers) {
          buffers.push_back({b.bytes, b.first_step, b.last_step, b.anchor, b.offset_from_anchor});
        }
        return buffers;
      }(),
      plan->arena);
  std::printf("%s: %d ops, %.1f ms, peak %lld, arena %lld (%s), %s\n", spec.name.c_str(), graph->num_ops(), ms,
              static_cast<long long>(plan->profile.peak_bytes), static_cast<long long>(plan->arena.size_bytes),
              valid.ok() ? "verified" : std::string(valid.message()).c_str(), CertificateName(plan->certificate));
  std::printf("  phase_ms:");
  for (const auto& [phase, phase_ms] : plan->phase_ms) std::printf(" %s %.1f", phase.c_str(), phase_ms);
  std::printf("\n  fallbacks:");
  for (const PhaseFallback& f : plan->fallbacks)
    std::printf(" {%s, %s, %s}", f.phase.c_str(), f.reason.c_str(), f.used.c_str());
  std::printf("%s\n", plan->fallbacks.empty() ? " none" : "");
  return valid.ok() ? 0 : 1;
}

// `bounds`: see the top of this file.
int Bounds(const Graph& graph) {
  const BufferModel buffers(graph, MemoryModel{});
  Clock::time_point start = Clock::now();
  const Reachability reach(graph);
  const std::vector<int64_t> cone = StepLowerBounds(buffers, reach);
  const double cone_ms = MillisSince(start);
  start = Clock::now();
  const std::vector<int64_t> closure = ClosureStepLowerBounds(buffers, reach);
  const double closure_ms = MillisSince(start);
  start = Clock::now();
  // The candidates of each segment, paired within it.
  std::vector<std::vector<OpId>> by_segment(reach.num_segments());
  for (OpId u = 0; u < graph.num_ops(); ++u) by_segment[reach.segment_of(u)].push_back(u);
  int64_t pair = 0;
  PairBounds pairs(buffers, reach);
  for (std::vector<OpId>& ops : by_segment) {
    std::stable_sort(ops.begin(), ops.end(), [&](OpId a, OpId b) { return closure[a] > closure[b]; });
    pair = std::max(pair, pairs.Of(ops));
  }
  const double pair_ms = MillisSince(start);
  const int64_t cone_max = cone.empty() ? 0 : *std::max_element(cone.begin(), cone.end());
  const int64_t closure_max = closure.empty() ? 0 : *std::max_element(closure.begin(), closure.end());
  std::printf("| %s | %d | %lld (%.1f ms) | %lld (%.1f ms) | %lld (%.1f ms) |\n", graph.name().c_str(), graph.num_ops(),
              static_cast<long long>(cone_max), cone_ms, static_cast<long long>(closure_max), closure_ms,
              static_cast<long long>(std::max(pair, closure_max)), pair_ms);
  return 0;
}

}  // namespace

// The ONNX model at `path`, named after its file.
absl::StatusOr<Graph> LoadModel(const std::string& path) {
  absl::StatusOr<GraphSpec> spec = OnnxToGraphSpec(testing::ReadFile(path), OnnxImportOptions());
  if (!spec.ok()) return spec.status();
  spec->name = std::filesystem::path(path).stem().string();
  return Graph::Build(*std::move(spec));
}

}  // namespace serenity

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: serenity-bench random-orders MODEL.onnx [SAMPLES] [SEED]\n"
                 "       serenity-bench budget-sweep MODEL.onnx [POINTS]\n"
                 "       serenity-bench check MODEL.onnx BUDGET [SECONDS] [MAX_STATES]\n"
                 "       serenity-bench arena INSTANCE.csv...\n"
                 "       serenity-bench bounds MODEL.onnx\n"
                 "       serenity-bench plan fanout RELUS [SECONDS] [BYTES]\n"
                 "       serenity-bench plan layered OPS WIDTH [SECONDS]\n");
    return 2;
  }
  const std::string command = argv[1];
  if (command == "arena") return serenity::ArenaInstances(argc, argv);
  if (command == "plan") return serenity::PlanSynthetic(argc, argv);
  absl::StatusOr<serenity::Graph> graph = serenity::LoadModel(argv[2]);
  if (!graph.ok()) {
    std::fprintf(stderr, "%s: %s\n", argv[2], std::string(graph.status().message()).c_str());
    return 1;
  }
  if (command == "random-orders") {
    return serenity::RandomOrders(*graph, argc > 3 ? std::stoi(argv[3]) : 10000,
                                  argc > 4 ? static_cast<unsigned>(std::stoul(argv[4])) : 1);
  }
  if (command == "bounds") return serenity::Bounds(*graph);
  if (command == "budget-sweep") return serenity::BudgetSweep(*graph, argc > 3 ? std::stoi(argv[3]) : 8);
  if (command == "check" && argc > 3) {
    return serenity::CheckBudget(*graph, std::stoll(argv[3]), argc > 4 ? std::stod(argv[4]) : 60,
                                 argc > 5 ? std::stoll(argv[5]) : serenity::SearchOptions().max_states);
  }
  std::fprintf(stderr, "unknown command '%s'\n", command.c_str());
  return 2;
}
