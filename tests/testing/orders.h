// Topological orders for property tests: all of them (small graphs), or a
// random one.
#ifndef SERENITY_TESTS_TESTING_ORDERS_H_
#define SERENITY_TESTS_TESTING_ORDERS_H_

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace serenity::testing {

// Calls `visit` with every topological order of `graph` (n! at worst: keep
// graphs small).
void ForEachTopologicalOrder(const Graph& graph, const std::function<void(const std::vector<OpId>&)>& visit);

// A uniformly chosen ready op at every step.
std::vector<OpId> RandomTopologicalOrder(const Graph& graph, std::mt19937& rng);

// The whole content of a file ("" when it cannot be read).
std::string ReadFile(const std::string& path);

// The paths of the .onnx files in `dir`, sorted (empty when it cannot be
// read), e.g. the shared benchmark models.
std::vector<std::string> OnnxFilesIn(const std::string& dir);

}  // namespace serenity::testing

#endif  // SERENITY_TESTS_TESTING_ORDERS_H_
