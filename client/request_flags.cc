#include "client/request_flags.h"

#include <algorithm>
#include <climits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/model_file.h"
#include "common/byte_size.h"
#include "core/util/status_macros.h"

namespace serenity {

void AddRequestFlags(FlagSet& flag_set, RequestFlags* flags, bool with_outputs) {
  flag_set.AddBool("alias-views", &flags->alias_views,
                   "Let Reshape/Flatten/Squeeze/Unsqueeze/Identity share their input's buffer.");
  flag_set.AddBool("count-weights", &flags->count_weights,
                   "Count weights as resident for the whole run (excluded by default).");
  flag_set.AddBool("in-place", &flags->in_place,
                   "Let element-wise ops (Relu, Add, BatchNormalization, ...) overwrite an input of the\n"
                   "same size whose last reader they are.");
  flag_set.AddBool("concat-in-place", &flags->concat_in_place,
                   "Let the producers of a Concat's inputs write straight into slices of its output\n"
                   "(channel concats of batch 1 and the like), so the Concat copies nothing.");
  if (with_outputs) {
    flag_set.AddBytes("alignment", &flags->alignment, "BYTES", "Arena offset alignment (16 suits microcontrollers).");
  }
  flag_set.AddBytes("budget", &flags->budget, "BYTES",
                    "Memory budget, e.g. 2MiB; the plan reports whether it fits (default: 0, no budget).");
  flag_set.AddString("budgets", &flags->budgets, "BYTES,...",
                     "With --objective time, instead of --budget: one plan per budget, e.g. 1MiB,2MiB,4MiB,\n"
                     "whose arenas keep tensors at the same offsets where they can; each level lists\n"
                     "the tensors that move from the one before (tightest first works best).");
  flag_set.AddRepeated("dim", &flags->dims, "NAME=VALUE", "Value of a symbolic ONNX dimension, e.g. batch=1.");
  flag_set.AddString("workspace", &flags->workspace_file, "FILE",
                     "JSON object {\"op name\": bytes} of temporary workspace per ONNX op.");
  flag_set.AddDouble("time-limit", &flags->time_limit, "SECONDS",
                     "Search time limit; when it runs out the best order found so far is returned\n"
                     "with certificate best_found and a proven lower bound (default: 0, meaning 10 s).");
  flag_set.AddString("algorithm", &flags->algorithm, "NAME",
                     "auto (exact search; certificate optimal when proven), relaxed (the same\n"
                     "search with the patent's \"seemingly good\" transitions: faster, not exact;\n"
                     "optimal only where the lower bound meets the peak), dp, dp+dc,\n"
                     "dp+dc+asb (the paper's signature DP alone, split at cut points, with\n"
                     "adaptive soft budgeting; exponential in width), exhaustive, best_first\n"
                     "(reference searches for small graphs), baseline (best of the\n"
                     "baselines), file_order, kahn, greedy, inductor or xla (compilers' orders).");
  flag_set.AddDouble("step-time-limit", &flags->step_time_limit, "SECONDS",
                     "Time one budgeted DP may take under --algorithm dp+dc+asb.");
  if (with_outputs) {
    flag_set.AddString("onchip", &flags->onchip, "BYTES,...",
                       "On-chip memory sizes for the off-chip traffic estimate of every order\n"
                       "(Belady eviction), each with an optional unit, e.g. 64KiB,128KiB,256KiB\n"
                       "(default: none; with --memory, the first memory's capacity).");
    flag_set.AddRepeated("memory", &flags->memories, "NAME:CAPACITY[:ALIGNMENT]",
                         "A memory of the device, fastest first (repeat the flag), e.g. --memory sram:256KiB:16\n"
                         "--memory dram:64MiB: every buffer is placed in one, the fast ones holding as many\n"
                         "bytes x steps as fit; the capacities are the budgets (no --budget). Alignment\n"
                         "defaults to --alignment. See docs/memories.md.");
    flag_set.AddRepeated("pin", &flags->pins, "TENSOR=MEMORY[@OFFSET]",
                         "Keep the buffer of TENSOR in MEMORY (at OFFSET when given), e.g. input=sram@0.");
  }
  flag_set.AddInt("max-states", &flags->max_states, "N",
                  "Most search states one search may remember (its memory cap; ~30-50 bytes each).");
  flag_set.AddString("objective", &flags->objective, "NAME",
                     "min_peak, fit: stop at the first order that fits --budget (the minimum\n"
                     "when none fits), or time: one primitive per op and the order, the least\n"
                     "total time within --budget (see --primitives, docs/primitives.md).");
  flag_set.AddString("primitives", &flags->primitives_file, "FILE",
                     "JSON {\"ops\": [{\"op\": NAME, \"alternatives\": [{\"name\", \"time_us\",\n"
                     "\"workspace_bytes\", \"layout\", \"weight_bytes\"}, ...]}], \"layout_transforms\":\n"
                     "[{\"from\", \"to\", \"time_us_per_mb\", \"workspace_bytes_per_mb\"}, ...]}: ways to run\n"
                     "each op named (replacing its workspace; weight_bytes, when not 0, its weights\n"
                     "in that kernel's form, resident with --count-weights) and the cost of converting\n"
                     "between layouts; read with --objective time, --pareto or --max-time-us only.");
  flag_set.AddBool("pareto", &flags->pareto,
                   "Also the (peak, time) frontier of primitive choices and orders (see --primitives):\n"
                   "every undominated plan, each with its order, primitives and arena; without\n"
                   "--objective time, the plan is the frontier's least peak.");
  flag_set.AddInt("max-pareto-points", &flags->max_pareto_points, "N",
                  "Most frontier points --pareto reports, thinned evenly (default 16).");
  flag_set.AddDouble("max-time-us", &flags->max_time_us, "MICROSECONDS",
                     "The least peak whose primitives take at most this in all (with --primitives;\n"
                     "not --time-limit, which is the search's wall clock).");
  flag_set.AddBool("no-catalogue", &flags->no_catalogue,
                   "No built-in alternatives. By default a plan that asks for time gives an ONNX\n"
                   "model's Conv, Gemm and MatMul ops a cost model's (direct, im2col, Winograd;\n"
                   "naive, packed GEMM; docs/primitives.md), except those --primitives names.");
  flag_set.AddBool("primitive-baselines", &flags->primitive_baselines,
                   "With --objective time, --pareto or --max-time-us: also the other ways to choose\n"
                   "primitives, for comparison: fastest / least workspace / one primitive everywhere,\n"
                   "order first, primitives first, the file order, the summed-footprint model\n"
                   "(plan.time.baselines; they take up to half of --time-limit more; docs/primitives.md).");
}

absl::Status FillOptions(const RequestFlags& flags, v1::PlanOptions& options) {
  options.mutable_memory_model()->set_alias_views(flags.alias_views);
  options.mutable_memory_model()->set_count_weights(flags.count_weights);
  options.mutable_memory_model()->set_in_place(flags.in_place);
  options.mutable_memory_model()->set_concat_in_place(flags.concat_in_place);
  options.set_alignment(flags.alignment);
  options.set_memory_budget_bytes(flags.budget);
  options.set_time_limit_seconds(flags.time_limit);
  options.set_algorithm(flags.algorithm);
  options.set_objective(flags.objective);
  options.set_step_time_limit_seconds(flags.step_time_limit);
  options.set_max_search_states(flags.max_states);
  for (absl::string_view size : absl::StrSplit(flags.onchip, ',', absl::SkipEmpty())) {
    absl::StatusOr<int64_t> bytes = ParseByteSize(size);
    if (!bytes.ok()) return absl::InvalidArgumentError(absl::StrCat("--onchip: ", bytes.status().message()));
    if (*bytes <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--onchip takes positive byte counts separated by commas, not '", size, "'"));
    }
    options.add_onchip_bytes(*bytes);
  }
  for (absl::string_view size : absl::StrSplit(flags.budgets, ',', absl::SkipEmpty())) {
    absl::StatusOr<int64_t> bytes = ParseByteSize(size);
    if (!bytes.ok()) return absl::InvalidArgumentError(absl::StrCat("--budgets: ", bytes.status().message()));
    options.add_budgets(*bytes);
  }
  for (const std::string& dim : flags.dims) {
    std::vector<std::string> parts = absl::StrSplit(dim, absl::MaxSplits('=', 1));
    int64_t value = 0;
    if (parts.size() != 2 || parts[0].empty() || !absl::SimpleAtoi(parts[1], &value) || value < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--dim takes NAME=VALUE with VALUE >= 0, not '", dim, "'"));
    }
    (*options.mutable_dim_values())[parts[0]] = value;
  }
  for (const std::string& memory : flags.memories) {
    std::vector<std::string> parts = absl::StrSplit(memory, ':');
    if (parts.size() < 2 || parts.size() > 3 || parts[0].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--memory takes NAME:CAPACITY or NAME:CAPACITY:ALIGNMENT, not '", memory, "'"));
    }
    v1::Memory* m = options.add_memories();
    m->set_name(parts[0]);
    absl::StatusOr<int64_t> capacity = ParseByteSize(parts[1]);
    if (!capacity.ok() || *capacity <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("--memory '", memory, "': the capacity must be a positive size"));
    }
    m->set_capacity_bytes(*capacity);
    if (parts.size() == 3) {
      absl::StatusOr<int64_t> alignment = ParseByteSize(parts[2]);
      if (!alignment.ok() || *alignment <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--memory '", memory, "': the alignment must be a positive size"));
      }
      m->set_alignment(*alignment);
    }
  }
  for (const std::string& pin : flags.pins) {
    const size_t equals = pin.rfind('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == pin.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--pin takes TENSOR=MEMORY or TENSOR=MEMORY@OFFSET, not '", pin, "'"));
    }
    v1::Pin* p = options.add_pins();
    p->set_tensor(pin.substr(0, equals));
    std::vector<std::string> where = absl::StrSplit(pin.substr(equals + 1), absl::MaxSplits('@', 1));
    p->set_memory(where[0]);
    if (where.size() == 2) {
      absl::StatusOr<int64_t> offset = ParseByteSize(where[1]);
      if (!offset.ok() || *offset < 0) {
        return absl::InvalidArgumentError(absl::StrCat("--pin '", pin, "': the offset must be a size >= 0"));
      }
      p->set_offset(*offset);
    }
  }
  options.set_pareto(flags.pareto);
  if (flags.max_pareto_points < 0) return absl::InvalidArgumentError("--max-pareto-points must be at least 1");
  options.set_max_pareto_points(static_cast<int32_t>(std::min<int64_t>(flags.max_pareto_points, INT32_MAX)));
  options.set_max_time_us(flags.max_time_us);
  options.set_no_catalogue(flags.no_catalogue);
  if (flags.primitive_baselines && flags.objective != "time" && !flags.pareto && flags.max_time_us <= 0) {
    return absl::InvalidArgumentError("--primitive-baselines needs --objective time, --pareto or --max-time-us");
  }
  options.set_primitive_baselines(flags.primitive_baselines);
  if (!flags.primitives_file.empty()) RETURN_IF_ERROR(ReadPrimitivesFile(flags.primitives_file, options));
  if (!flags.workspace_file.empty()) return ReadWorkspaceFile(flags.workspace_file, options);
  return absl::OkStatus();
}

}  // namespace serenity
