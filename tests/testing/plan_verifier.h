// The independent verifier every test relies on (DESIGN.md section 5). It
// re-derives everything from the graph and the plan's order with its own
// naive code, sharing nothing with core/memory or core/arena.
#ifndef SERENITY_TESTS_TESTING_PLAN_VERIFIER_H_
#define SERENITY_TESTS_TESTING_PLAN_VERIFIER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "core/graph/graph.h"
#include "serenity/v1/scheduler.pb.h"

namespace serenity::testing {

// Peak live bytes of `order` under the memory model of DESIGN.md section 2,
// computed step by step from the definitions (quadratic; for tests only).
// `order` must be topological.
// With `concat_in_place`, a Concat whose inputs can be slices of its output
// (batch-1 style layout: all dims before the concat axis are 1; inputs made
// by non-Concat ops, not graph outputs, distinct, not views, not already
// slices of an earlier Concat) allocates nothing and its inputs live until
// the output's last reader. Whatever the switches, the output of a
// serenity::ConvAccumulate (X, W, ACC) of ACC's byte size is written into
// ACC's memory (ACC not a weight): the two share one buffer, live from ACC's
// producer to the last reader of either (or of views of either). Whatever the switches, the output of a
// serenity::ConvAccumulate (X, W, ACC) of ACC's byte size is written into
// ACC's memory (ACC not a weight): the two share one buffer, live from ACC's
// producer to the last reader of either (or of views of either).
int64_t NaivePeak(const Graph& graph, const std::vector<OpId>& order, bool alias_views, bool count_weights,
                  bool in_place = false, bool concat_in_place = false);

// OK when: the order is a topological permutation of the graph's ops and
// order_names match it; peak_bytes equals NaivePeak; lower_bound_bytes <=
// peak; the arena holds one buffer per live activation (and workspace, and
// weight when counted) of the right size whose steps cover its lifetime;
// every offset is aligned (but a Concat's later slices, which must follow
// the earlier ones back to back); no two buffers live at a common step
// overlap;
// size_bytes covers every buffer and is >= peak; baselines' peaks are >= the
// plan's lower bound. Otherwise an error naming the first violation.
// With memories (issue 18), also VerifyMemories.
absl::Status VerifyPlan(const Graph& graph, const v1::Plan& plan);

// OK when the plan has no memories, or: every row of plan.arena is in
// exactly one memory with the same kind, size and steps; every offset there
// is a non-negative multiple of the memory's alignment and ends within its
// capacity; no two buffers of a memory live at a common step overlap; each
// memory's byte_steps and arena_bytes equal its rows', byte_steps <=
// byte_steps_bound, and its access_bytes equal the bytes its rows' ops
// write and read, counted from `graph`. Otherwise an error naming the first
// violation.
absl::Status VerifyMemories(const Graph& graph, const v1::Plan& plan);

}  // namespace serenity::testing

#endif  // SERENITY_TESTS_TESTING_PLAN_VERIFIER_H_
