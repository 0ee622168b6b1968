// Lowering the peak of a long order by re-ordering windows of it (a large
// neighbourhood search). A segment of thousands of ops is too large for one
// exact check below its best peak: the depth-first search gets lost deep in
// it. But the steps of an order depend only on the set run before each, so
// the ops at positions [a, b) can be re-ordered among themselves, by an exact
// depth-first search of that window alone (its own, indexed over the window's
// ops, so that a window of a graph of 10^5 ops costs what one of a small
// graph does), without changing any step outside the window: the set run
// before position b is the same. Each window that fits below the
// peak removes one step at the peak, and the peak drops once none is left.
#ifndef SERENITY_CORE_SCHEDULE_WINDOW_SEARCH_H_
#define SERENITY_CORE_SCHEDULE_WINDOW_SEARCH_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/memory/buffer_model.h"
#include "core/schedule/budget_search.h"

namespace serenity {

struct WindowSearchOptions {
  // Ops in the first window tried around a step at the peak; when no window
  // of that size fits below the peak, windows twice as long are tried, up
  // to max_window_ops.
  int window_ops = 64;
  int max_window_ops = 512;
  // Signatures one check of one window may expand.
  int64_t states_per_check = 20'000;
  // LowerBoundByWindows: ops in the first window around a high step, and
  // at most (twice as many each time), regions at most, and signatures per
  // check.
  int bound_window_ops = 64;
  int bound_max_window_ops = 256;
  int bound_windows = 16;
  int64_t bound_states_per_check = 50'000;
};

// Re-orders windows of `*order` (the ops of one part, in a valid order after
// the ops of `done`) while that lowers the peak over the part's steps and
// the peak is above `floor`, until `deadline` or options.cancelled. Returns
// true when the peak was lowered; `*order` is then a valid order of the
// same ops with a lower peak (its steps outside re-ordered windows are
// unchanged). `stats` counts the windows' checks. Each window's memo is
// charged to search.memory; a refusal ends the windows.
bool LowerPeakByWindows(const BufferModel& buffers, absl::Span<const OpId> done, std::vector<OpId>* order,
                        int64_t floor, const SearchOptions& search, std::chrono::steady_clock::time_point deadline,
                        const WindowSearchOptions& options, SearchStats* stats);

// A bound no order of the whole graph beats, at least `known`: the largest
// least peak, proven by a search of each within options' limits, of windows
// of `order` (the ops of one part, in a valid order after the ops of `done`)
// counted alone. A window counted alone holds, at each of its steps, only
// what any order of the whole graph surely holds there too: the resident
// bytes, the buffers its own ops made and still read, and the buffers made
// before it from their first reader in it to their last (window_search.cc,
// Window::Alone). Windows of options.bound_window_ops consecutive ops and
// longer are centred on the highest steps of `order`, the highest first,
// while `deadline` allows and search.cancelled is not set. Each window's
// memo is charged to search.memory; a refusal leaves that window out.
int64_t LowerBoundByWindows(const BufferModel& buffers, absl::Span<const OpId> done, absl::Span<const OpId> order,
                            int64_t known, const SearchOptions& search, std::chrono::steady_clock::time_point deadline,
                            const WindowSearchOptions& options, SearchStats* stats);

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_WINDOW_SEARCH_H_
