// Topological orders for property tests: all of them (small graphs), or a
// random one.
#ifndef SERENITY_TESTS_TESTING_ORDERS_H_
#define SERENITY_TESTS_TESTING_ORDERS_H_

#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/graph/graph.h"

namespace serenity::testing {

// Calls `visit` with every topological order of `graph` (n! at worst: keep
// graphs small).
void ForEachTopologicalOrder(const Graph& graph, const std::function<void(const std::vector<OpId>&)>& visit);

// The workspace of every op's step and the total time with `choice` (per
// op its alternative, ignored for ops without), layout conversions
// included (docs/primitives.md), and the weights resident with it (an
// alternative's weight_bytes, when not 0, replacing its op's own weight
// tensors, those no other op reads that are not graph outputs), computed on
// their own for the tests.
struct ChoiceCost {
  std::vector<int64_t> workspace;
  double time = 0;
  int64_t weight_bytes = 0;
};
ChoiceCost CostOfChoice(const Graph& graph, const std::vector<int>& choice);

// The (peak, time) frontier over every topological order and every choice
// of one alternative per op (graph.h's Primitive; an op without
// alternatives runs with its workspace in no time), peaks by the
// independent verifier's NaivePeak with the chosen workspaces (and, with
// `count_weights`, CostOfChoice's weights at every step): by increasing
// peak, each point faster than every point before it. n! x (choices)
// simulations: keep graphs tiny.
std::vector<std::pair<int64_t, double>> BruteForceTimeFrontier(const Graph& graph, bool alias_views, bool in_place,
                                                               bool count_weights = false);

// The least total time of BruteForceTimeFrontier's plans whose peak is at
// most `budget`; infinity when none is.
double BruteForceLeastTime(const Graph& graph, bool alias_views, bool in_place, int64_t budget,
                           bool count_weights = false);

// A uniformly chosen ready op at every step.
std::vector<OpId> RandomTopologicalOrder(const Graph& graph, std::mt19937& rng);

// The whole content of a file ("" when it cannot be read).
std::string ReadFile(const std::string& path);

// The paths of the .onnx files in `dir`, sorted (empty when it cannot be
// read), e.g. the shared benchmark models.
std::vector<std::string> OnnxFilesIn(const std::string& dir);

}  // namespace serenity::testing

#endif  // SERENITY_TESTS_TESTING_ORDERS_H_
