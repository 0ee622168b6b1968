// Terse construction of small graphs for tests.
#ifndef SERENITY_TESTS_TESTING_TEST_GRAPH_H_
#define SERENITY_TESTS_TESTING_TEST_GRAPH_H_

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/graph/graph.h"

namespace serenity::testing {

// Builds a GraphSpec: tensors are declared with their byte size where they
// first appear (graph inputs, weights, op outputs).
class TestGraph {
 public:
  TestGraph& Input(const std::string& name, int64_t bytes);
  TestGraph& Weight(const std::string& name, int64_t bytes);
  // An op reading `inputs` and writing `outputs` (name, bytes).
  TestGraph& Op(const std::string& name, const std::string& type, std::vector<std::string> inputs,
                std::vector<std::pair<std::string, int64_t>> outputs, int64_t workspace_bytes = 0);
  TestGraph& Output(const std::string& name);
  // Sets the (informational) shape of a declared tensor.
  TestGraph& Shape(const std::string& name, std::vector<int64_t> shape);

  const GraphSpec& spec() const { return spec_; }
  // Graph::Build of the spec; aborts the test binary on error (use spec()
  // with Graph::Build to test errors).
  Graph Build() const;

 private:
  GraphSpec spec_;
};

// A random DAG of `num_ops` ops for property tests: each op reads 1-3 earlier
// tensors (or a graph input), writes 1-2 tensors of random sizes in [1, 100];
// some ops are view ops (Reshape, same size as their input), some element-wise
// (Relu, Add; output the size of the first input), some have workspace, some
// outputs are graph outputs and some are dead.
// With `concats`, every tensor is shaped {1, bytes} and about a quarter of
// the ops are Concats of 1-3 distinct earlier tensors (output shape {1, sum};
// one Concat in four shaped {2, sum} instead, so it cannot run in place).
// Without, the same graphs as ever for a given seed.
GraphSpec RandomDag(int num_ops, std::mt19937& rng, bool concats = false);

// Adds alternatives (graph.h's Primitive, issue 19) to the ops of `spec`:
// each op, but one in `skip_one_in` (0: none skipped), gets `min_count` to
// `max_count` of them named k0, k1, ..., with times 1..max_time_us and
// workspaces 0..max_workspace - 1 bytes, drawn from `rng`.
void AddRandomAlternatives(GraphSpec* spec, std::mt19937& rng, int skip_one_in = 3, int min_count = 1,
                           int max_count = 3, int max_time_us = 40, int64_t max_workspace = 100);

// Gives each alternative of `spec` a layout drawn from "", "A" and "B"
// (every op's alternatives keep distinct names), and the graph transforms
// A to B and B to A with times 0..`max_time_per_mb` - 1 and copies of
// 0..`max_bytes_per_mb` - 1 bytes per MiB (layout_conversions.h).
void AddRandomLayouts(GraphSpec* spec, std::mt19937& rng, int max_time_per_mb = 600000, int max_bytes_per_mb = 2097152);

// Gives about half the ops of `spec` a weight of their own (a weight tensor
// "<op>/w" of 1..`max_bytes` bytes that they read), and about half the
// alternatives of those ops a weight_bytes of 1..2 * `max_bytes`
// (primitive_weights.h); one op in four with alternatives reads a weight
// it shares with another op instead, and states none.
void AddRandomWeights(GraphSpec* spec, std::mt19937& rng, int64_t max_bytes = 60);

// Adds a graph input named `name` of `bytes` that no op reads (live at the
// first step only, whichever op runs it).
void AddUnusedInput(GraphSpec* spec, const std::string& name, int64_t bytes);

// Two branches from one input x (100 bytes): a and b (Convs, 50-byte
// outputs) each with alternatives winograd (10 us, 60 bytes of workspace)
// and direct (30 us, none); c (Relu) reads a's output (10 bytes), d (Add)
// reads c's and b's outputs (10 bytes, the graph output). Both fast
// kernels fit a budget of 230 only when c runs before b.
GraphSpec TwoBranchesWithKernels();

// A chain of `ops` Relus: tensors t0 (the input) .. t<ops> (the output) of
// shape {dim}, float32 (sizes from the shape), ops o0 .. o<ops-1>; short
// names, so that a million ops serialize to under 64 MB.
GraphSpec ReluChain(int ops, int64_t dim = 4);

// A wide fan-out: one input "x" of `bytes`, `relus` Relus each reading x
// (output `bytes`), and one Concat of all their outputs (the graph output).
// relus + 1 ops. Shapes are {1, bytes} ({1, relus * bytes} for the Concat).
GraphSpec FanOutConcat(int relus, int64_t bytes = 1024);

// A layered DAG of `num_ops` ops in layers of `width`: each op reads two ops
// of the layer before (its own column and a neighbour chosen by `seed`;
// the first layer reads the one input) and writes 256 to 4,096 bytes; the
// last layer's outputs are graph outputs.
GraphSpec LayeredDag(int num_ops, int width, unsigned seed = 1);

}  // namespace serenity::testing

#endif  // SERENITY_TESTS_TESTING_TEST_GRAPH_H_
