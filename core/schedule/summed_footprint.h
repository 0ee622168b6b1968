// The summed-footprint memory model of primitive selection without
// scheduling (issue 19; Wen et al., "Space and Time Optimal DNN Primitive
// Selection with Integer Linear Programming", PACT 2019 poster): a choice of
// one alternative per op (graph.h's Primitive) needs every activation
// tensor, every op's chosen workspace and (when counted) the weights all at
// once, with no reuse between them. Beside Serenity's own model (the bytes
// live at each step of an order) it is what the poster's ILP minimises time
// under.
//
// Its optimum at a budget, the least total time whose footprint is within
// the budget, is a multiple-choice knapsack: one alternative per op, its
// workspace the weight and its time the cost. With counted weights an
// alternative's weight also has the resident bytes its weight_bytes add
// (primitive_weights.h), above its op's least so that no weight is negative
// (the least of every op counted in the fixed bytes): still exact. It is
// solved exactly by dynamic programming over the ops with alternatives,
// keeping the Pareto list of (weight sum, time) pairs (each pair faster
// than every pair of smaller weight sum) of the ops so far; a list longer
// than a cap is
// thinned (then the result is not proven least). With layouts
// (layout_conversions.h) a choice's footprint and time include its
// conversions, which the knapsack leaves out: its choice is then not
// proven, and feasible only when it fits with them.
#ifndef SERENITY_CORE_SCHEDULE_SUMMED_FOOTPRINT_H_
#define SERENITY_CORE_SCHEDULE_SUMMED_FOOTPRINT_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "core/graph/graph.h"
#include "core/util/memory_account.h"

namespace serenity {

// The bytes of `graph` that every choice counts: each activation tensor
// (every tensor not a weight: graph inputs, outputs and intermediates) once,
// the workspace of every op without alternatives, and with `count_weights`
// Graph::weight_bytes.
int64_t FixedFootprintBytes(const Graph& graph, bool count_weights);

// The summed footprint of `choice` (per op the index of its alternative, -1
// for an op without alternatives): FixedFootprintBytes plus the chosen
// alternatives' workspaces and their layout conversions' copies and, with
// `count_weights`, the bytes their weight_bytes add to the weights
// (PrimitiveWeights::ExtraOf; negative when smaller): the weights counted
// are then ChosenGraph(graph, choice).weight_bytes().
int64_t SummedFootprintBytes(const Graph& graph, const std::vector<int>& choice, bool count_weights);

struct SummedFootprintLimits {
  // Most (weight sum, time) pairs kept after each op; more are thinned to
  // this many (>= 2), evenly spaced, the least and the greatest weight sum
  // kept.
  int64_t max_pairs = int64_t{1} << 14;
  // The search stops here (then not proven); max(): none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // The pairs kept for recovering the choice are charged here (null: not
  // charged); a charge refused stops the search (not proven).
  MemoryAccount* memory = nullptr;
};

struct SummedFootprintChoice {
  // A choice whose summed footprint is within the budget was found.
  bool feasible = false;
  // feasible: no choice within the budget is faster; not feasible: none is
  // within the budget. False when the pairs were thinned or a limit stopped
  // the search.
  bool proven = false;
  // Per op the index of its alternative (-1 without). Not feasible: the
  // choice of least footprint (every op's alternative of least workspace
  // plus added weights; ties: the faster), layout conversions aside.
  std::vector<int> choice;
  double time_us = 0;           // ChoiceTime(choice)
  int64_t footprint_bytes = 0;  // SummedFootprintBytes(choice)
  int64_t max_pairs_kept = 0;   // the longest Pareto list after one op
};

// The least total time of a choice whose summed footprint is at most
// `budget` (int64 max: no budget). When the search was cut short
// (thinned, deadline or memory) the choice is the best found, still within
// the budget, or (nothing found) the least-footprint one.
SummedFootprintChoice LeastTimeWithinFootprint(const Graph& graph, int64_t budget, bool count_weights,
                                               const SummedFootprintLimits& limits = {});

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_SUMMED_FOOTPRINT_H_
