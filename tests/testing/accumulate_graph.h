// Random graphs with serenity::ConvAccumulate ops, for property tests of the
// accumulation alias (core/memory/buffer_model.h).
#ifndef SERENITY_TESTS_TESTING_ACCUMULATE_GRAPH_H_
#define SERENITY_TESTS_TESTING_ACCUMULATE_GRAPH_H_

#include <random>

#include "core/graph/graph.h"

namespace serenity::testing {

// A random DAG of `num_ops` ops over one or two graph inputs and a weight
// "w": about a third serenity::ConvAccumulate (X, w, ACC) with ACC a recent
// op output (one time in eight a graph input; ACC may have other readers
// and X may be ACC, which the importer refuses but the memory model must
// still count right) and an output of ACC's size; the rest views (Reshape),
// element-wise ops (Relu, Add), Concats of 1-3 distinct recent tensors and
// plain ops of 1-3 inputs and 1-2 outputs, some with workspace. Every
// activation is shaped {1, bytes} (a Concat in four {2, sum}, so that it
// cannot run in place). The last op's output and sometimes another tensor
// are graph outputs.
GraphSpec RandomAccumulateDag(int num_ops, std::mt19937& rng);

}  // namespace serenity::testing

#endif  // SERENITY_TESTS_TESTING_ACCUMULATE_GRAPH_H_
