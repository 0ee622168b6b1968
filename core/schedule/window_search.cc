#include "core/schedule/window_search.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "core/util/memory_account.h"

namespace serenity {
namespace {

using Clock = std::chrono::steady_clock;

// The ops at positions [a, b) of an order, indexed 0..m-1, with what their
// steps need from the whole graph's model: the buffers they read, counted
// down from the readers left at position a (readers after b never run
// here), the bytes live before a, and the window's own predecessors. Built
// in time proportional to the window, so windows of a graph of 10^5 ops
// cost what windows of a small one do.
class Window {
 public:
  // `position[u]`: u's position in the order, -1 when u ran before it, or
  // INT32_MAX when it runs after the order.
  // `live`: bytes live after order[0, a). `first_step`: a is the very first
  // step (graph inputs nobody reads die after it).
  Window(const BufferModel& buffers, absl::Span<const OpId> order, size_t a, size_t b,
         const std::vector<int32_t>& position, int64_t live, bool first_step)
      : Window(buffers, order, a, b, position, live, first_step, /*alone=*/false) {}

  // The window's ops counted alone, as a relaxation of every order of the
  // whole graph: only the bytes resident throughout are live before them; a
  // buffer made before the window becomes live at its first reader in the
  // window, and any buffer is freed after its last reader in the window
  // (graph outputs stay live). In any order of the whole graph, each of the
  // window's steps holds at least these bytes (the window's ops run in the
  // same relative order, a convex window's predecessors are its own), so
  // the least peak of the window alone bounds the whole graph's.
  static Window Alone(const BufferModel& buffers, absl::Span<const OpId> order, size_t a, size_t b,
                      const std::vector<int32_t>& position) {
    return Window(buffers, order, a, b, position, buffers.resident_bytes(), false, /*alone=*/true);
  }

  Window(Window&&) = default;
  Window& operator=(Window&&) = default;

 private:
  Window(const BufferModel& buffers, absl::Span<const OpId> order, size_t a, size_t b,
         const std::vector<int32_t>& position, int64_t live, bool first_step, bool alone)
      : ops_(order.begin() + static_cast<long>(a), order.begin() + static_cast<long>(b)),
        live_(live),
        first_step_(first_step),
        unused_input_bytes_(buffers.unused_input_bytes()) {
    const int32_t begin = static_cast<int32_t>(a), end = static_cast<int32_t>(b);
    const auto counted = [&](OpId user) { return position[user] >= begin && (!alone || position[user] < end); };
    const int m = static_cast<int>(ops_.size());
    for (int i = 0; i < m; ++i) local_[ops_[i]] = i;
    absl::flat_hash_map<BufferId, int> local_buffer;
    const auto buffer_index = [&](BufferId b) {
      auto [it, inserted] = local_buffer.try_emplace(b, static_cast<int>(remaining_.size()));
      if (inserted) {
        const ActivationBuffer& buffer = buffers.buffers()[b];
        int32_t left = 0;
        for (OpId user : buffer.users) left += counted(user) ? 1 : 0;
        remaining_.push_back(left);
        freeable_.push_back(buffer.live_to_end ? 0 : buffer.bytes);
        // Alone, a buffer made before the window is not live until read.
        const bool made_before = buffer.producer == kNoOp || position[buffer.producer] < begin;
        unread_bytes_.push_back(alone && made_before ? buffer.bytes : 0);
      }
      return it->second;
    };
    ops_info_.resize(m);
    for (int i = 0; i < m; ++i) {
      const OpId u = ops_[i];
      OpInfo& info = ops_info_[i];
      const Op& op = buffers.graph().op(u);
      info.workspace = op.workspace_bytes;
      for (BufferId b : buffers.allocates(u)) {
        const ActivationBuffer& buffer = buffers.buffers()[b];
        info.alloc += buffer.bytes;
        const bool read = std::any_of(buffer.users.begin(), buffer.users.end(), counted);
        if (!read && !buffer.live_to_end) info.dead += buffer.bytes;
      }
      for (BufferId b : buffers.reads(u)) info.reads.push_back(buffer_index(b));
      for (BufferId b : buffers.in_place_inputs(u)) info.in_place.push_back(buffer_index(b));
      info.in_place_bytes = buffers.in_place_bytes(u);
      for (OpId v : op.successors) {
        if (auto it = local_.find(v); it != local_.end()) info.successors.push_back(it->second);
      }
      for (OpId p : op.predecessors) info.indegree += local_.contains(p) ? 1 : 0;
    }
    words_ = (static_cast<size_t>(m) + 63) / 64;
  }

 public:
  // Finds an order of the window whose steps are all at most `budget`, by a
  // depth-first search over the sets run so far (a set that failed is
  // remembered, and fails every smaller budget too, so calls with falling
  // budgets share the memo), with the forced transitions of budget_search.h
  // (a ready op that fits and does not raise the live bytes runs at once).
  // kInfeasible when there is none; kUnknown when `max_states` sets were
  // expanded or `deadline` passed first.
  Feasibility Fit(int64_t budget, int64_t max_states, Clock::time_point deadline, std::vector<OpId>* order) {
    // The sets that failed a budget fail every smaller one, not a larger.
    if (budget > memo_budget_) failed_.clear();
    memo_budget_ = budget;
    budget_ = budget;
    deadline_ = deadline;
    states_left_ = max_states;
    scheduled_.assign(words_, 0);
    indegree_.resize(ops_info_.size());
    ready_.clear();
    for (size_t i = 0; i < ops_info_.size(); ++i) {
      indegree_[i] = ops_info_[i].indegree;
      if (indegree_[i] == 0) ready_.push_back(static_cast<int>(i));
    }
    remaining_now_ = remaining_;
    live_now_ = live_;
    trail_.clear();
    live_trail_.clear();
    if (!Explore()) return states_left_ < 0 ? Feasibility::kUnknown : Feasibility::kInfeasible;
    order->clear();
    for (int i : trail_) order->push_back(ops_[i]);
    return Feasibility::kFeasible;
  }

  // The steps of `window_order` (the window's ops, as Fit returns them);
  // `live_before`, when set, gets the bytes live before each.
  std::vector<int64_t> StepsOf(const std::vector<OpId>& window_order, std::vector<int64_t>* live_before = nullptr) {
    scheduled_.assign(words_, 0);
    remaining_now_ = remaining_;
    live_now_ = live_;
    trail_.clear();
    live_trail_.clear();
    std::vector<int64_t> steps;
    if (live_before != nullptr) live_before->clear();
    for (OpId u : window_order) {
      const int i = local_.at(u);
      if (live_before != nullptr) live_before->push_back(live_now_);
      steps.push_back(StepBytes(i));
      Apply(i);
    }
    return steps;
  }

  int64_t states_expanded() const { return expanded_; }

 private:
  struct OpInfo {
    int64_t alloc = 0, dead = 0, workspace = 0, in_place_bytes = 0;
    std::vector<int> reads, in_place, successors;
    int indegree = 0;
  };

  // Bytes of the buffers i reads that become live with it (Alone only).
  int64_t Unread(const OpInfo& op) const {
    int64_t bytes = 0;
    for (int b : op.reads) {
      if (unread_bytes_[b] != 0 && remaining_now_[b] == remaining_[b]) bytes += unread_bytes_[b];
    }
    return bytes;
  }

  int64_t StepBytes(int i) const {
    const OpInfo& op = ops_info_[i];
    int64_t step = live_now_ + op.alloc + op.workspace + Unread(op);
    for (int b : op.in_place) {
      if (remaining_now_[b] == 1) return step - op.in_place_bytes;
    }
    return step;
  }

  // How running i next changes the live bytes by itself: its outputs that
  // outlive the step, less the inputs whose last reader it is.
  int64_t OwnDelta(int i) const {
    const OpInfo& op = ops_info_[i];
    int64_t delta = op.alloc - op.dead + Unread(op);
    for (int b : op.reads) {
      if (remaining_now_[b] == 1) delta -= freeable_[b];
    }
    return delta;
  }

  // Live bytes after running i next. Graph inputs nobody reads die after
  // the very first step whichever op runs it, so they are no part of
  // OwnDelta (nor of what makes a transition forced).
  int64_t BytesAfter(int i) const {
    return live_now_ + OwnDelta(i) - (first_step_ && trail_.empty() ? unused_input_bytes_ : 0);
  }

  void Apply(int i) {
    live_trail_.push_back(live_now_);
    live_now_ = BytesAfter(i);
    for (int b : ops_info_[i].reads) --remaining_now_[b];
    scheduled_[i / 64] |= uint64_t{1} << (i % 64);
    trail_.push_back(i);
  }

  void Undo() {
    const int i = trail_.back();
    trail_.pop_back();
    for (int b : ops_info_[i].reads) ++remaining_now_[b];
    scheduled_[i / 64] &= ~(uint64_t{1} << (i % 64));
    live_now_ = live_trail_.back();
    live_trail_.pop_back();
  }

  // Runs i and updates the ready list; RunAndReady's undo is UnrunAndUnready.
  void RunAndReady(size_t ready_index) {
    const int i = ready_[ready_index];
    ready_[ready_index] = ready_.back();
    ready_.pop_back();
    Apply(i);
    for (int v : ops_info_[i].successors) {
      if (--indegree_[v] == 0) ready_.push_back(v);
    }
  }
  void UnrunAndUnready() {
    const int i = trail_.back();
    for (int v : ops_info_[i].successors) {
      if (indegree_[v]++ == 0) ready_.erase(std::find(ready_.begin(), ready_.end(), v));
    }
    Undo();
    ready_.push_back(i);
  }

  bool Explore() {
    const size_t mark = trail_.size();
    // Forced transitions.
    for (bool progress = true; progress;) {
      progress = false;
      for (size_t r = 0; r < ready_.size(); ++r) {
        const int i = ready_[r];
        if (StepBytes(i) <= budget_ && OwnDelta(i) <= 0) {
          RunAndReady(r);
          progress = true;
          break;
        }
      }
    }
    const auto unwind = [&] {
      while (trail_.size() > mark) UnrunAndUnready();
    };
    if (trail_.size() == ops_info_.size()) return true;
    if (failed_.contains(scheduled_)) {
      unwind();
      return false;
    }
    if (--states_left_ < 0 || (++expanded_ % 256 == 0 && Clock::now() >= deadline_)) {
      states_left_ = -1;
      unwind();
      return false;
    }
    // Branch on the ready ops that fit, leaving the fewest live bytes first.
    std::vector<std::pair<int64_t, int>> choices;
    for (int i : ready_) {
      if (StepBytes(i) <= budget_) choices.push_back({BytesAfter(i), i});
    }
    std::sort(choices.begin(), choices.end());
    for (const auto& [after, i] : choices) {
      RunAndReady(static_cast<size_t>(std::find(ready_.begin(), ready_.end(), i) - ready_.begin()));
      if (Explore()) return true;
      UnrunAndUnready();
      if (states_left_ < 0) break;
    }
    if (states_left_ >= 0) failed_.insert(scheduled_);
    unwind();
    return false;
  }

  std::vector<OpId> ops_;
  absl::flat_hash_map<OpId, int> local_;  // an op's index in ops_
  std::vector<OpInfo> ops_info_;
  std::vector<int32_t> remaining_;     // readers left of each local buffer at the window's start
  std::vector<int64_t> freeable_;      // bytes freed when its last reader runs
  std::vector<int64_t> unread_bytes_;  // Alone: bytes that become live at its first reader
  int64_t live_ = 0;
  bool first_step_ = false;
  int64_t unused_input_bytes_ = 0;
  size_t words_ = 0;
  // Search state.
  int64_t budget_ = 0;
  int64_t memo_budget_ = -1;
  Clock::time_point deadline_;
  int64_t states_left_ = 0;
  int64_t expanded_ = 0;
  std::vector<uint64_t> scheduled_;
  std::vector<int> indegree_;
  std::vector<int> ready_;
  std::vector<int32_t> remaining_now_;
  int64_t live_now_ = 0;
  std::vector<int> trail_;
  std::vector<int64_t> live_trail_;
  absl::flat_hash_set<std::vector<uint64_t>> failed_;
};

// The most bytes the memo of a window of `ops` ops may hold after
// `states` expanded sets: one signature each, with its vector and slot.
int64_t MemoBytes(size_t ops, int64_t states) { return states * (static_cast<int64_t>((ops + 63) / 64) * 8 + 48); }

// The largest step of each block of kBlock positions, so that the peak and
// where it is are found without scanning every step.
constexpr size_t kBlock = 256;

// Each op's position in `order`: -1 for the ops of `done`, INT32_MAX for the
// ops after the part (they come after every window, so the buffers they
// read stay live through it).
std::vector<int32_t> PositionsOf(const BufferModel& buffers, absl::Span<const OpId> done,
                                 absl::Span<const OpId> order) {
  std::vector<int32_t> position(buffers.graph().num_ops(), INT32_MAX);
  for (OpId u : done) position[u] = -1;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int32_t>(i);
  return position;
}

// The steps of `order` after `done`; `live_before`, when set, gets the
// bytes live before each and after the last.
std::vector<int64_t> StepsAfter(const BufferModel& buffers, absl::Span<const OpId> done, absl::Span<const OpId> order,
                                std::vector<int64_t>* live_before = nullptr) {
  MemoryTracker tracker(buffers);
  for (OpId u : done) tracker.Run(u);
  std::vector<int64_t> steps(order.size());
  if (live_before != nullptr) live_before->assign(order.size() + 1, 0);
  for (size_t i = 0; i < order.size(); ++i) {
    if (live_before != nullptr) (*live_before)[i] = tracker.live_bytes();
    steps[i] = tracker.Run(order[i]);
  }
  if (live_before != nullptr) live_before->back() = tracker.live_bytes();
  return steps;
}

}  // namespace

bool LowerPeakByWindows(const BufferModel& buffers, absl::Span<const OpId> done, std::vector<OpId>* order,
                        int64_t floor, const SearchOptions& search, Clock::time_point deadline,
                        const WindowSearchOptions& options, SearchStats* stats) {
  std::vector<OpId>& ops = *order;
  const size_t n = ops.size();
  if (n == 0) return false;
  std::vector<int32_t> position = PositionsOf(buffers, done, ops);
  // live_before[i]: bytes live after order[0, i); steps[i]: order[i]'s step.
  std::vector<int64_t> live_before;
  std::vector<int64_t> steps = StepsAfter(buffers, done, ops, &live_before);
  std::vector<int64_t> block_max((n + kBlock - 1) / kBlock, 0);
  const auto refresh_blocks = [&](size_t a, size_t b) {
    for (size_t k = a / kBlock; k * kBlock < b; ++k) {
      const size_t end = std::min(n, (k + 1) * kBlock);
      block_max[k] =
          *std::max_element(steps.begin() + static_cast<long>(k * kBlock), steps.begin() + static_cast<long>(end));
    }
  };
  refresh_blocks(0, n);
  const int64_t start_peak = *std::max_element(block_max.begin(), block_max.end());
  std::vector<OpId> window_order, best;
  bool out_of_memory = false;
  while (Clock::now() < deadline && !Cancelled(search) && !out_of_memory) {
    const auto block = std::max_element(block_max.begin(), block_max.end());
    const int64_t peak = *block;
    if (peak <= floor) break;
    const size_t first = static_cast<size_t>(block - block_max.begin()) * kBlock;
    const size_t p =
        static_cast<size_t>(std::find(steps.begin() + static_cast<long>(first), steps.end(), peak) - steps.begin());
    // Windows around p, shortest first: p at their middle, then nearer
    // their end, then nearer their start.
    bool fitted = false;
    for (size_t length = std::min<size_t>(n, std::max(2, options.window_ops)); !fitted && Clock::now() < deadline;
         length = std::min(n, length * 2)) {
      std::vector<size_t> starts;  // near the ends the placements coincide
      for (const double before : {0.5, 0.75, 0.25}) {
        const size_t shift = static_cast<size_t>(before * static_cast<double>(length));
        const size_t a = std::min(p > shift ? p - shift : 0, n - length);
        if (std::find(starts.begin(), starts.end(), a) != starts.end()) continue;
        starts.push_back(a);
        const size_t b = a + length;
        // The window's memo is charged to the job's account; a refusal ends
        // the windows (the order so far is kept).
        MemoryCharge memo(search.memory);
        if (!memo.TryAdd(MemoBytes(length, options.states_per_check))) {
          out_of_memory = true;
          break;
        }
        Window window(buffers, ops, a, b, position, live_before[a], done.empty() && a == 0);
        // Below the peak, then as far below as the window goes.
        best.clear();
        std::vector<int64_t> best_steps, best_lives;
        int64_t budget = peak - 1;
        // The first check is the one that counts; the three below it get a
        // 32nd of its states each (more, or more states, measured slower on
        // 10^5-op layered DAGs: the peak is elsewhere next time).
        for (int check = 0;
             check < 4 && window.Fit(budget, check == 0 ? options.states_per_check : options.states_per_check / 32,
                                     deadline, &window_order) == Feasibility::kFeasible;
             ++check) {
          best = window_order;
          best_steps = window.StepsOf(window_order, &best_lives);
          budget = *std::max_element(best_steps.begin(), best_steps.end()) - 1;
        }
        stats->states += window.states_expanded();
        ++stats->checks;
        if (best.empty()) {
          if (length == n) break;
          continue;
        }
        for (size_t i = a; i < b; ++i) {
          ops[i] = best[i - a];
          position[ops[i]] = static_cast<int32_t>(i);
          steps[i] = best_steps[i - a];
          live_before[i] = best_lives[i - a];
        }
        fitted = true;
        refresh_blocks(a, b);
        break;
      }
      if (fitted || out_of_memory || length == n || length >= static_cast<size_t>(options.max_window_ops)) break;
    }
    if (!fitted) break;  // no window around p fits below the peak
  }
  return *std::max_element(block_max.begin(), block_max.end()) < start_peak;
}

int64_t LowerBoundByWindows(const BufferModel& buffers, absl::Span<const OpId> done, absl::Span<const OpId> order,
                            int64_t known, const SearchOptions& search, Clock::time_point deadline,
                            const WindowSearchOptions& options, SearchStats* stats) {
  const size_t n = order.size();
  if (n == 0) return known;
  const std::vector<int32_t> position = PositionsOf(buffers, done, order);
  const std::vector<int64_t> steps = StepsAfter(buffers, done, order);
  std::vector<std::pair<int64_t, size_t>> by_step(n);  // (-step, position): highest first
  for (size_t i = 0; i < n; ++i) by_step[i] = {-steps[i], i};
  std::sort(by_step.begin(), by_step.end());
  // The least peak of order[a, a + length) counted alone, proven above
  // `known` (else `known`); `*open` when not even `known` was settled.
  std::vector<OpId> found;
  const auto bound_of = [&](size_t a, size_t length, int64_t known, bool* open) {
    *open = true;
    MemoryCharge memo(search.memory);  // as LowerPeakByWindows's
    if (!memo.TryAdd(MemoBytes(length, options.bound_states_per_check))) return known;
    Window window = Window::Alone(buffers, order, a, a + length, position);
    const std::vector<OpId> given(order.begin() + static_cast<long>(a), order.begin() + static_cast<long>(a + length));
    const std::vector<int64_t> steps = window.StepsOf(given);
    int64_t hi = *std::max_element(steps.begin(), steps.end());  // some order of the window alone fits
    // Is there an order within `known`? If not, the least peak lies in
    // (known, hi]: bisect it.
    int64_t lo = known;
    Feasibility answer = window.Fit(lo, options.bound_states_per_check, deadline, &found);
    *open = answer == Feasibility::kUnknown;
    if (answer == Feasibility::kInfeasible) {
      ++lo;
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        answer = window.Fit(mid, options.bound_states_per_check, deadline, &found);
        if (answer == Feasibility::kUnknown) break;
        if (answer == Feasibility::kInfeasible) {
          lo = mid + 1;
        } else {
          const std::vector<int64_t> fitted = window.StepsOf(found);
          hi = *std::max_element(fitted.begin(), fitted.end());
        }
      }
    }
    stats->states += window.states_expanded();
    ++stats->checks;
    return lo;
  };
  const size_t shortest = std::min(n, static_cast<size_t>(std::max(1, options.bound_window_ops)));
  std::vector<size_t> centres;
  int64_t best = known;
  for (const std::pair<int64_t, size_t>& entry : by_step) {
    // Not a structured binding: clang refuses a lambda that captures one.
    const int64_t step = -entry.first;
    const size_t p = entry.second;
    if (static_cast<int>(centres.size()) >= options.bound_windows || Clock::now() >= deadline || Cancelled(search)) {
      break;
    }
    if (step <= best) break;  // no window of steps below the bound raises it
    // One region per centre: none within half the shortest window of another.
    if (std::any_of(centres.begin(), centres.end(), [&](size_t c) { return (c > p ? c - p : p - c) < shortest / 2; })) {
      continue;
    }
    centres.push_back(p);
    // Longer windows hold more of what is live around p, but are harder to
    // settle: they are tried while the shorter one was settled.
    for (size_t length = shortest;; length = std::min(n, length * 2)) {
      const size_t a = std::min(p > length / 2 ? p - length / 2 : 0, n - length);
      bool open = false;
      best = std::max(best, bound_of(a, length, best, &open));
      if (open || length == n || length >= static_cast<size_t>(options.bound_max_window_ops) ||
          Clock::now() >= deadline || Cancelled(search)) {
        break;
      }
    }
  }
  return best;
}

}  // namespace serenity
