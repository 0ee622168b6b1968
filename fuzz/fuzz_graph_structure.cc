// libFuzzer target: a structure-aware graph generator. The bytes are not
// parsed as a message: they choose a graph family and its parameters, and
// the GraphSpec is built directly, so every input is a valid graph of a
// shape the planner finds hard (thousands of ops, wide fan-outs, dense
// DAGs). Each graph is planned once by PlanGraph (the "auto" search) with a
// short time limit, a cap on the search's states, sometimes a memory budget
// and, half of the time, under a MemoryAccount.
//
// Input layout (bytes past the end read as 0):
//   [0] family: 0 fan-out, 1 chain, 2 dense DAG, 3 layered DAG, 4 mix
//       (value % 5)
//   [1] flags: 1 memory account, 2 memory budget, 4 objective "fit" (with a
//       budget), 8 workspace bytes, 16 weights, 32 alias_views + in_place,
//       64 concat_in_place, 128 count_weights
//   [2] time limit: < 128: 0.2 s; else 0.05 + (b - 128) / 127 * 0.45 s
//   [3] memory account limit: 1 MB * 2^(b / 32) (1 MB .. ~250 MB)
//   [4] memory budget: (sum of all tensor bytes) * 2^-(b / 16)
//   [5] size mode (% 3): 0 every tensor the base size; 1 each tensor its own
//       size; 2 the base size times 1..4
//   [6..7] base size: 2^(u16 / 65535 * 20) bytes (1 byte .. 1 MB)
//   [8] op-type pattern seed
//   then the family's parameters (see the Build* functions), and the rest:
//   per-tensor size bytes (read cyclically; 2^(b / 255 * 20) bytes), and
//   for dense DAGs the edge bitmask.
//
// Checks (each failure prints what failed and the graph's description, then
// traps):
//   - PlanGraph returns OK, InvalidArgument or (only under a memory account)
//     ResourceExhausted; nothing else;
//   - on OK: the order is a topological order of all ops; the arena passes
//     VerifyArena (VerifyMovingArena when defragmentation moved buffers);
//     plan.feasible agrees with the budget;
//   - time: the plan's own total_ms (the planner's clock) is at most
//     1000 * (time limit + finish_seconds) + kSlackMs, or the plan names a
//     fallback (a phase that gave up on the limit); and, fallbacks or not,
//     below 10 * 1000 * (time limit + finish_seconds) + 5000 ms, so a phase
//     that runs away is caught. kSlackMs is 1500 ms because this target is
//     built with ASan and UBSan (2-3x slower than a release build, and the
//     planner's time estimates are for release builds) and shares two cores
//     with other work;
//   - under a memory account: its peak is within its limit.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/arena/arena_verifier.h"
#include "core/arena/defragment.h"
#include "core/graph/graph.h"
#include "core/planner.h"
#include "core/util/memory_account.h"

namespace serenity {
namespace {

// The most ops one input may generate (keeps each input well under a
// second in the sanitizer build).
constexpr int kMaxOps = 5000;
// Allowance over time limit + finish_seconds before a plan without
// fallbacks counts as late (sanitizer build, shared machine).
constexpr double kSlackMs = 1500;
// Hard bound even with fallbacks: kHardFactor * (limit + finish) + kHardMs.
constexpr double kHardFactor = 10;
constexpr double kHardMs = 5000;

// Reads the input from the front; past the end every read is 0.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t U16() {
    const uint16_t hi = Byte();
    return static_cast<uint16_t>(hi << 8 | Byte());
  }
  bool Bit() {
    if (bit_ == 0) {
      bits_ = Byte();
      bit_ = 8;
    }
    --bit_;
    return (bits_ >> bit_) & 1;
  }
  bool exhausted() const { return pos_ >= size_; }
  // The bytes not read yet (used cyclically for per-tensor sizes).
  std::vector<uint8_t> Rest() const {
    return pos_ < size_ ? std::vector<uint8_t>(data_ + pos_, data_ + size_) : std::vector<uint8_t>();
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  uint8_t bits_ = 0;
  int bit_ = 0;
};

// splitmix64: "random-ish" choices seeded from the input.
class Mix {
 public:
  explicit Mix(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint32_t Below(uint32_t n) { return n == 0 ? 0 : static_cast<uint32_t>(Next() % n); }

 private:
  uint64_t state_;
};

int64_t ExpSize(double fraction) {  // fraction in [0, 1] -> 1 .. 2^20 bytes
  return std::max<int64_t>(1, static_cast<int64_t>(std::pow(2.0, fraction * 20)));
}

const char* const kElementwise[] = {"Relu", "Add", "Mul", "Sigmoid", "Gelu", "Clip"};
const char* const kChainTypes[] = {"Relu", "Conv", "Add", "Reshape", "MatMul", "Identity", "Sigmoid", "Pool"};

// Builds the GraphSpec: tensors are [1, bytes] uint8, so a Concat of them
// along axis 1 may be laid out in place.
class Builder {
 public:
  Builder(int size_mode, int64_t base_size, std::vector<uint8_t> size_bytes, uint64_t seed, bool workspace,
          bool weights)
      : size_mode_(size_mode),
        base_size_(base_size),
        size_bytes_(std::move(size_bytes)),
        mix_(seed),
        workspace_(workspace),
        weights_(weights) {}

  // The size of the next new tensor.
  int64_t NextSize() {
    const size_t i = next_size_++;
    const uint8_t b = size_bytes_.empty() ? static_cast<uint8_t>(mix_.Next()) : size_bytes_[i % size_bytes_.size()];
    switch (size_mode_) {
      case 1:
        return ExpSize(b / 255.0);
      case 2:
        return std::min<int64_t>(int64_t{1} << 20, base_size_ * (1 + b % 4));
      default:
        return base_size_;
    }
  }

  std::string Tensor(int64_t bytes, bool is_weight = false) {
    std::string name = absl::StrCat(is_weight ? "w" : "t", spec_.tensors.size());
    TensorSpec t;
    t.name = name;
    t.shape = {1, bytes};
    t.dtype = 2;  // uint8
    t.bytes = bytes;
    t.is_weight = is_weight;
    spec_.tensors.push_back(std::move(t));
    total_bytes_ += bytes;
    return name;
  }

  std::string Input() {
    std::string name = Tensor(NextSize());
    spec_.inputs.push_back(name);
    return name;
  }

  // Adds an op of `type` reading `inputs`; returns its output's name. Its
  // output has `bytes` (< 0: the next size).
  std::string Op(const std::string& type, std::vector<std::string> inputs, int64_t bytes = -1) {
    const int id = static_cast<int>(spec_.ops.size());
    OpSpec op;
    op.name = absl::StrCat("op", id);
    op.type = type;
    if (weights_ && (type == "Conv" || type == "MatMul" || (type == "Add" && mix_.Below(2) == 0))) {
      inputs.push_back(Tensor(NextSize(), /*is_weight=*/true));
    }
    op.inputs = std::move(inputs);
    op.outputs = {Tensor(bytes >= 0 ? bytes : NextSize())};
    if (workspace_ && mix_.Below(3) == 0) op.workspace_bytes = NextSize();
    op.macs = mix_.Below(1000);
    std::string out = op.outputs[0];
    spec_.ops.push_back(std::move(op));
    return out;
  }

  // A chain op after `in`: element-wise and view ops keep the size unless
  // every tensor has its own.
  std::string ChainOp(const std::string& in, int64_t in_bytes, int64_t* out_bytes, uint8_t pattern) {
    const char* type = kChainTypes[(pattern + mix_.Below(3)) % (sizeof(kChainTypes) / sizeof(kChainTypes[0]))];
    const std::string t = type;
    const bool same =
        (t == "Relu" || t == "Reshape" || t == "Identity" || t == "Sigmoid" || t == "Add") && size_mode_ != 1;
    *out_bytes = same ? in_bytes : NextSize();
    return Op(t, {in}, *out_bytes);
  }

  int64_t BytesOf(const std::string& tensor) const {
    for (auto it = spec_.tensors.rbegin(); it != spec_.tensors.rend(); ++it) {
      if (it->name == tensor) return it->bytes;
    }
    return 0;
  }

  // Every activation nobody reads becomes a graph output.
  GraphSpec Finish() {
    std::vector<bool> read(spec_.tensors.size(), false);
    std::vector<std::string> names;
    absl::flat_hash_map<std::string, size_t> index;
    for (size_t i = 0; i < spec_.tensors.size(); ++i) index[spec_.tensors[i].name] = i;
    for (const OpSpec& op : spec_.ops) {
      for (const std::string& in : op.inputs) read[index[in]] = true;
    }
    for (const OpSpec& op : spec_.ops) {
      for (const std::string& out : op.outputs) {
        if (!read[index[out]]) spec_.outputs.push_back(out);
      }
    }
    return std::move(spec_);
  }

  int num_ops() const { return static_cast<int>(spec_.ops.size()); }
  int64_t total_bytes() const { return total_bytes_; }
  Mix& mix() { return mix_; }

 private:
  int size_mode_;
  int64_t base_size_;
  std::vector<uint8_t> size_bytes_;
  size_t next_size_ = 0;
  Mix mix_;
  bool workspace_;
  bool weights_;
  int64_t total_bytes_ = 0;
  GraphSpec spec_;
};

// One input, k element-wise ops on it (optionally after a producer op, so
// the input is an activation), one Concat of their outputs.
std::string FanOut(Builder& b, const std::string& in, int k, uint8_t pattern) {
  std::vector<std::string> branches;
  int64_t total = 0;
  for (int i = 0; i < k; ++i) {
    const char* type = kElementwise[(pattern + i) % (sizeof(kElementwise) / sizeof(kElementwise[0]))];
    branches.push_back(b.Op(type, {in}));
    total += b.BytesOf(branches.back());
  }
  return b.Op("Concat", branches, total);
}

void BuildFanOut(Bytes& bytes, Builder& b, uint8_t pattern, std::string* desc) {
  const int k = 1 + bytes.U16() % (kMaxOps - 2);
  const bool producer = bytes.Byte() & 1;
  std::string in = b.Input();
  if (producer) in = b.Op("Relu", {in}, b.BytesOf(in));
  FanOut(b, in, k, pattern);
  absl::StrAppend(desc, "fan-out k=", k, producer ? " after a producer" : "");
}

void BuildChain(Bytes& bytes, Builder& b, uint8_t pattern, std::string* desc) {
  const int n = 1 + bytes.U16() % kMaxOps;
  std::string t = b.Input();
  int64_t size = b.BytesOf(t);
  for (int i = 0; i < n; ++i) t = b.ChainOp(t, size, &size, static_cast<uint8_t>(pattern + i));
  absl::StrAppend(desc, "chain n=", n);
}

void BuildDense(Bytes& bytes, Builder& b, uint8_t pattern, std::string* desc) {
  const int n = 1 + bytes.Byte() % 60;
  const uint8_t density = bytes.Byte();  // edges past the input's bitmask
  const std::string in = b.Input();
  std::vector<std::string> outs;
  int edges = 0;
  for (int j = 0; j < n; ++j) {
    std::vector<std::string> inputs;
    for (int i = 0; i < j; ++i) {
      const bool edge = bytes.exhausted() ? b.mix().Below(256) < density : bytes.Bit();
      if (edge) inputs.push_back(outs[static_cast<size_t>(i)]);
    }
    edges += static_cast<int>(inputs.size());
    if (inputs.empty()) inputs.push_back(in);
    const char* type = inputs.size() > 1 ? "Concat" : kChainTypes[(pattern + j) % 8];
    outs.push_back(b.Op(type, inputs));
  }
  absl::StrAppend(desc, "dense n=", n, " edges=", edges, " density=", density);
}

void BuildLayered(Bytes& bytes, Builder& b, uint8_t pattern, std::string* desc) {
  int layers = 1 + bytes.Byte() % 80;
  const int width = 1 + bytes.Byte() % 80;
  const int fan_in = 1 + bytes.Byte() % 4;
  const bool ragged = bytes.Byte() & 1;  // layers of 1..width ops
  while (layers * width > kMaxOps) --layers;
  const std::string in = b.Input();
  std::vector<std::string> prev = {in};
  for (int l = 0; l < layers; ++l) {
    const int w = ragged ? 1 + static_cast<int>(b.mix().Below(static_cast<uint32_t>(width))) : width;
    std::vector<std::string> layer;
    for (int i = 0; i < w; ++i) {
      std::vector<std::string> inputs;
      const int d = 1 + static_cast<int>(b.mix().Below(static_cast<uint32_t>(fan_in)));
      for (int e = 0; e < d; ++e) {
        // Mostly near the same position (a little locality), sometimes anywhere.
        const uint32_t p = b.mix().Below(4) == 0 ? b.mix().Below(static_cast<uint32_t>(prev.size()))
                                                 : static_cast<uint32_t>((i + e) % static_cast<int>(prev.size()));
        inputs.push_back(prev[p]);  // a repeat is allowed (an op may read a tensor twice)
      }
      const char* type = kElementwise[(pattern + i + l) % 6];
      layer.push_back(b.Op(inputs.size() > 1 && (i & 1) ? "Concat" : type, inputs));
    }
    prev = std::move(layer);
  }
  absl::StrAppend(desc, "layered ", layers, "x", width, ragged ? " ragged" : "", " fan_in<=", fan_in);
}

// A chain with a fan-out inside: prefix chain, fan-out of k from its end
// into a Concat, suffix chain from the Concat (optionally also reading the
// fan-out's source: a long skip connection).
void BuildMix(Bytes& bytes, Builder& b, uint8_t pattern, std::string* desc) {
  const int chain = bytes.U16() % 2500;
  const int k = 1 + bytes.U16() % 2400;
  const int prefix = chain * bytes.Byte() / 256;
  const bool skip = bytes.Byte() & 1;
  std::string t = b.Input();
  int64_t size = b.BytesOf(t);
  for (int i = 0; i < prefix; ++i) t = b.ChainOp(t, size, &size, static_cast<uint8_t>(pattern + i));
  const std::string source = t;
  t = FanOut(b, source, k, pattern);
  size = b.BytesOf(t);
  for (int i = prefix; i < chain; ++i) {
    if (i == prefix && skip) {
      t = b.Op("Add", {t, source});
      size = b.BytesOf(t);
    } else {
      t = b.ChainOp(t, size, &size, static_cast<uint8_t>(pattern + i));
    }
  }
  absl::StrAppend(desc, "mix chain=", chain, " prefix=", prefix, " k=", k, skip ? " skip" : "");
}

[[noreturn]] void Fail(const std::string& desc, const std::string& what) {
  std::fprintf(stderr, "fuzz_graph_structure: %s\n  graph: %s\n", what.c_str(), desc.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

// SERENITY_FUZZ_VERBOSE=1: print each graph, its times and fallbacks.
const bool verbose = std::getenv("SERENITY_FUZZ_VERBOSE") != nullptr;

void Run(const uint8_t* data, size_t size) {
  Bytes bytes(data, size);
  const int family = bytes.Byte() % 5;
  const uint8_t flags = bytes.Byte();
  const uint8_t time_byte = bytes.Byte();
  const uint8_t account_byte = bytes.Byte();
  const uint8_t budget_byte = bytes.Byte();
  const int size_mode = bytes.Byte() % 3;
  const int64_t base_size = ExpSize(bytes.U16() / 65535.0);
  const uint8_t pattern = bytes.Byte();

  const bool use_account = flags & 1;
  const bool use_budget = flags & 2;
  const bool fit = flags & 4;
  const bool workspace = flags & 8;
  const bool weights = flags & 16;
  MemoryModel model;
  model.alias_views = model.in_place = flags & 32;
  model.concat_in_place = flags & 64;
  model.count_weights = flags & 128;
  const double time_limit = time_byte < 128 ? 0.2 : 0.05 + (time_byte - 128) / 127.0 * 0.45;

  // Per-tensor sizes read the input's tail after this fixed header,
  // cyclically: the family's parameters (and a dense DAG's bitmask) double
  // as size bytes. Choices past the input come from a generator seeded by
  // its first bytes.
  uint64_t seed = 0x5e4e41ULL;
  for (size_t i = 0; i < size && i < 64; ++i) seed = seed * 131 + data[i];
  Builder builder(size_mode, base_size, bytes.Rest(), seed, workspace, weights);
  std::string desc = absl::StrCat("size_mode=", size_mode, " base=", base_size, " flags=", flags, " ");
  switch (family) {
    case 0:
      BuildFanOut(bytes, builder, pattern, &desc);
      break;
    case 1:
      BuildChain(bytes, builder, pattern, &desc);
      break;
    case 2:
      BuildDense(bytes, builder, pattern, &desc);
      break;
    case 3:
      BuildLayered(bytes, builder, pattern, &desc);
      break;
    default:
      BuildMix(bytes, builder, pattern, &desc);
      break;
  }
  const int64_t total_bytes = builder.total_bytes();
  absl::StatusOr<Graph> graph = Graph::Build(builder.Finish());
  if (!graph.ok()) Fail(desc, "the generator made a graph Graph::Build refuses: " + graph.status().ToString());
  if (graph->num_ops() > kMaxOps + 1) Fail(desc, absl::StrCat("too many ops: ", graph->num_ops()));

  PlanOptions options;
  options.memory_model = model;
  options.time_limit_seconds = time_limit;
  options.max_search_states = 100000;
  if (use_budget) {
    options.memory_budget_bytes = std::max<int64_t>(
        1, static_cast<int64_t>(static_cast<double>(total_bytes) * std::pow(2.0, -budget_byte / 16.0)));
    if (fit) options.objective = Objective::kFit;
  }
  const int64_t account_limit = static_cast<int64_t>(std::pow(2.0, 20 + account_byte / 32.0));
  MemoryAccount account(account_limit);
  if (use_account) options.memory = &account;
  absl::StrAppend(&desc, " ops=", graph->num_ops(), " time_limit=", time_limit, " budget=", options.memory_budget_bytes,
                  fit ? " (fit)" : "", " account=", use_account ? account_limit : 0,
                  " model(views+in_place=", model.in_place, " concat=", model.concat_in_place,
                  " weights=", model.count_weights, ")");

  absl::StatusOr<Plan> plan = PlanGraph(*graph, options);
  if (use_account && !account.unlimited() && account.peak() > account.limit()) {
    Fail(desc, absl::StrCat("memory account peak ", account.peak(), " over its limit ", account.limit()));
  }
  if (use_account && account.used() != 0) {
    Fail(desc, absl::StrCat("memory account still holds ", account.used(), " bytes after PlanGraph"));
  }
  if (!plan.ok()) {
    const absl::StatusCode code = plan.status().code();
    if (verbose) std::fprintf(stderr, "%s\n  %s\n", desc.c_str(), plan.status().ToString().c_str());
    if (code == absl::StatusCode::kInvalidArgument) return;
    if (code == absl::StatusCode::kResourceExhausted && use_account) return;
    Fail(desc, "PlanGraph: unexpected status " + plan.status().ToString());
  }
  if (!IsTopologicalOrder(*graph, plan->order)) {
    Fail(desc, "non-topological order: " + CheckOrder(*graph, plan->order).ToString());
  }
  std::vector<ArenaBuffer> lifetimes;
  for (const BufferLifetimeInfo& b : plan->profile.buffers) {
    lifetimes.push_back({b.bytes, b.first_step, b.last_step, b.anchor, b.offset_from_anchor});
  }
  if (plan->moves.empty()) {
    const absl::Status arena = VerifyArena(lifetimes, plan->arena);
    if (!arena.ok()) Fail(desc, "bad arena: " + arena.ToString());
  } else {
    MovingArenaPlan moving;
    moving.plan = plan->arena;
    moving.moves = plan->moves;
    moving.moved_bytes = plan->moved_bytes;
    const absl::Status arena = VerifyMovingArena(lifetimes, moving);
    if (!arena.ok()) Fail(desc, "bad arena with moves: " + arena.ToString());
  }
  const bool feasible = options.memory_budget_bytes == 0 || plan->profile.peak_bytes <= options.memory_budget_bytes;
  if (plan->feasible != feasible) {
    Fail(desc, absl::StrCat("feasible=", plan->feasible, " but peak ", plan->profile.peak_bytes, " and budget ",
                            options.memory_budget_bytes));
  }

  // Within its limit, or a phase fell back (and named it); never far past.
  const double limit_ms = 1000 * (time_limit + options.finish_seconds);
  const double t = plan->total_ms;
  std::string phases;
  for (const auto& [phase, ms] : plan->phase_ms) absl::StrAppend(&phases, " ", phase, "=", ms);
  std::string fallbacks;
  for (const PhaseFallback& f : plan->fallbacks) absl::StrAppend(&fallbacks, " ", f.phase, "/", f.reason, "/", f.used);
  if (verbose) {
    std::fprintf(stderr, "%s\n  total_ms=%.1f (limit %.0f) peak=%lld phases:%s fallbacks:%s account_peak=%lld\n",
                 desc.c_str(), t, limit_ms, static_cast<long long>(plan->profile.peak_bytes), phases.c_str(),
                 fallbacks.c_str(), static_cast<long long>(account.peak()));
  }
  if (t > limit_ms + kSlackMs && plan->fallbacks.empty()) {
    Fail(desc, absl::StrCat("total_ms ", t, " over ", limit_ms, " + ", kSlackMs,
                            " ms with no fallback named; phases:", phases));
  }
  if (t > kHardFactor * limit_ms + kHardMs) {
    Fail(desc, absl::StrCat("total_ms ", t, " over the hard bound ", kHardFactor * limit_ms + kHardMs,
                            " ms; phases:", phases, "; fallbacks:", fallbacks));
  }
}

}  // namespace
}  // namespace serenity

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  serenity::Run(data, size);
  return 0;
}
