#include "core/graph/graph.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

TensorSpec T(const std::string& name, int64_t bytes) { return {name, {}, 1, bytes, false}; }
OpSpec O(const std::string& name, std::vector<std::string> in, std::vector<std::string> out) {
  return {name, "Op", std::move(in), std::move(out), 0, 0, {}};
}

GraphSpec Diamond() {
  GraphSpec s;
  s.name = "diamond";
  s.tensors = {T("in", 1), T("x", 2), T("y", 3), T("z", 4), T("out", 5)};
  s.ops = {O("a", {"in"}, {"x"}), O("b", {"x"}, {"y"}), O("c", {"x"}, {"z"}), O("d", {"y", "z"}, {"out"})};
  s.inputs = {"in"};
  s.outputs = {"out"};
  return s;
}

TEST(GraphTest, BuildsEdgesAndConsumers) {
  absl::StatusOr<Graph> g = Graph::Build(Diamond());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_ops(), 4);
  EXPECT_EQ(g->op(3).predecessors, (std::vector<OpId>{1, 2}));
  EXPECT_EQ(g->op(0).successors, (std::vector<OpId>{1, 2}));
  const Tensor& x = g->tensor(*g->FindTensor("x"));
  EXPECT_EQ(x.producer, 0);
  EXPECT_EQ(x.consumers, (std::vector<OpId>{1, 2}));
  EXPECT_TRUE(g->tensor(*g->FindTensor("in")).is_graph_input);
  EXPECT_TRUE(g->tensor(*g->FindTensor("out")).is_graph_output);
  EXPECT_TRUE(IsTopologicalOrder(*g, {0, 2, 1, 3}));
  EXPECT_FALSE(IsTopologicalOrder(*g, {1, 0, 2, 3}));
  EXPECT_FALSE(IsTopologicalOrder(*g, {0, 1, 2}));
}

TEST(GraphTest, ComputesBytesFromShapeAndDtype) {
  GraphSpec s;
  s.tensors = {{"in", {1, 3, 8, 8}, 1, -1, false}, {"out", {2, 5}, 7, -1, false}, {"w", {4}, 10, -1, true}};
  s.ops = {O("a", {"in", "w"}, {"out"})};
  s.inputs = {"in"};
  s.outputs = {"out"};
  absl::StatusOr<Graph> g = Graph::Build(s);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->tensor(0).bytes, 768);
  EXPECT_EQ(g->tensor(1).bytes, 80);
  EXPECT_EQ(g->weight_bytes(), 8);
}

absl::Status BuildError(GraphSpec s) { return Graph::Build(std::move(s)).status(); }

TEST(GraphTest, CheckOrderNamesTheProblem) {
  Graph g = *Graph::Build(Diamond());
  EXPECT_TRUE(CheckOrder(g, {0, 2, 1, 3}).ok());
  EXPECT_THAT(CheckOrder(g, {0, 1}).message(), HasSubstr("lists 2 ops but the graph has 4"));
  EXPECT_THAT(CheckOrder(g, {0, 1, 2, 9}).message(), HasSubstr("op index 9"));
  EXPECT_THAT(CheckOrder(g, {0, 1, 1, 3}).message(), HasSubstr("'b' appears twice"));
  EXPECT_THAT(CheckOrder(g, {0, 3, 1, 2}).message(), HasSubstr("'d' at position 1 runs before 'b'"));
}

TEST(GraphTest, RejectsEmptyGraph) {
  GraphSpec s;
  EXPECT_THAT(BuildError(s).message(), HasSubstr("no ops"));
}

TEST(GraphTest, RejectsCycleAndNamesItsOps) {
  GraphSpec s = Diamond();
  s.ops[0].inputs = {"in", "out"};  // d -> a closes a cycle
  absl::Status status = BuildError(s);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("cycle"));
  EXPECT_THAT(status.message(), HasSubstr("a -> "));
  EXPECT_THAT(status.message(), HasSubstr("d"));
}

TEST(GraphTest, RejectsMissingProducer) {
  GraphSpec s = Diamond();
  s.tensors.push_back(T("ghost", 1));
  s.ops[3].inputs.push_back("ghost");
  EXPECT_THAT(BuildError(s).message(), HasSubstr("'ghost' consumed by op 'd' is never produced"));
}

TEST(GraphTest, RejectsDuplicateProducer) {
  GraphSpec s = Diamond();
  s.ops[2].outputs = {"y"};
  EXPECT_THAT(BuildError(s).message(), HasSubstr("'y' is produced by both op 'b' and op 'c'"));
}

// An op listing one output twice read ops_[its own id] before it was added
// (a garbage name, std::length_error; found by fuzz/fuzz_graph_import). The
// minimized find is the 18-byte serenity.v1.Graph
// "\x12\x09\x0a\x01\x62\x22\x01\x79\x22\x01\x79\x1a\x05\x0a\x01\x79\x20\x01"
// (op "b" with outputs "y", "y"; fuzz/regressions/fuzz_graph_import/), the
// GraphSpec below.
TEST(GraphTest, FuzzRegressionRejectsRepeatedOutputOfOneOp) {
  GraphSpec s = Diamond();
  s.ops[1].outputs = {"y", "y"};
  absl::Status status = BuildError(s);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("op 'b' lists output 'y' twice"));
  // The first op of the graph too (ops_ still empty).
  s = Diamond();
  s.ops[0].outputs = {"x", "x"};
  EXPECT_THAT(BuildError(s).message(), HasSubstr("op 'a' lists output 'x' twice"));
}

TEST(GraphTest, RejectsUndescribedTensorAndDuplicateNames) {
  GraphSpec s = Diamond();
  s.ops[1].outputs = {"nowhere"};
  EXPECT_THAT(BuildError(s).message(), HasSubstr("'nowhere'"));
  s = Diamond();
  s.ops[1].name = "a";
  EXPECT_THAT(BuildError(s).message(), HasSubstr("two ops are named 'a'"));
  s = Diamond();
  s.tensors.push_back(T("x", 9));
  EXPECT_THAT(BuildError(s).message(), HasSubstr("'x' is described twice"));
}

TEST(GraphTest, RejectsProducedGraphInput) {
  GraphSpec s = Diamond();
  s.inputs.push_back("x");
  EXPECT_THAT(BuildError(s).message(), HasSubstr("graph input 'x' is also produced"));
}

TEST(GraphTest, RejectsOverflowingSizes) {
  GraphSpec s = Diamond();
  s.tensors[1] = {"x", {int64_t{1} << 40, int64_t{1} << 30}, 1, -1, false};
  absl::Status status = BuildError(s);
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'x'"));
  s = Diamond();
  s.tensors[1].bytes = INT64_MAX;
  s.tensors[2].bytes = INT64_MAX;
  EXPECT_EQ(BuildError(s).code(), absl::StatusCode::kOutOfRange);
}

TEST(GraphTest, RejectsNegativeDimsAndStrings) {
  GraphSpec s = Diamond();
  s.tensors[1] = {"x", {-1, 3}, 1, -1, false};
  EXPECT_THAT(BuildError(s).message(), HasSubstr("negative dimension"));
  s.tensors[1] = {"x", {3}, 8, -1, false};
  EXPECT_THAT(BuildError(s).message(), HasSubstr("no fixed element size"));
}

// A Graph message Tensor with `bytes: -1` was read as "not given" and sized
// from its shape; an explicit size (has_bytes) must not be negative.
TEST(GraphTest, RejectsNegativeGivenBytesNamingTheTensor) {
  GraphSpec s = Diamond();
  s.tensors[1].bytes = -1;
  s.tensors[1].has_bytes = true;
  absl::Status status = BuildError(s);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'x' has negative bytes -1"));
  s.tensors[1].bytes = INT64_MIN;
  EXPECT_THAT(BuildError(s).message(), HasSubstr("tensor 'x' has negative bytes -9223372036854775808"));
  // A given size of 0 is a size, not "compute it": the shape is not used.
  s.tensors[1] = {"x", {4, 4}, 1, 0, false, true};
  absl::StatusOr<Graph> g = Graph::Build(s);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->tensor(*g->FindTensor("x")).bytes, 0);
  // Without has_bytes, a negative size still means "from shape and dtype".
  s.tensors[1] = {"x", {4, 4}, 1, -1, false, false};
  g = Graph::Build(s);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->tensor(*g->FindTensor("x")).bytes, 64);
}

TEST(GraphTest, RejectsNegativeDimsEvenWhenTheSizeIsGiven) {
  GraphSpec s = Diamond();
  s.tensors[2] = {"y", {2, -3}, 1, 24, false, true};
  absl::Status status = BuildError(s);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'y' has negative dimension -3 (dim 1)"));
  s.tensors[2] = {"y", {-2}, 1, 24, false, false};
  EXPECT_THAT(BuildError(s).message(), HasSubstr("tensor 'y' has negative dimension -2 (dim 0)"));
}

TEST(GraphTest, RejectsNegativeWorkspaceAndMacsNamingTheOp) {
  GraphSpec s = Diamond();
  s.ops[2].workspace_bytes = -8;
  absl::Status status = BuildError(s);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("op 'c' has negative workspace bytes -8"));
  s = Diamond();
  s.ops[1].macs = -5;
  status = BuildError(s);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("op 'b' has negative macs -5"));
  s.ops[1].macs = 5;
  absl::StatusOr<Graph> g = Graph::Build(s);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->total_macs(), 5);
}

// Alternatives (issue 19) are kept as given; bad ones are refused naming
// the op and the alternative.
TEST(GraphTest, KeepsAlternativesAndRefusesBadOnes) {
  GraphSpec spec = Diamond();
  spec.ops[1].alternatives = {{"direct", 30, 0, "nchw", 0}, {"winograd", 10.5, 64, "nchw", 0}};
  absl::StatusOr<Graph> g = Graph::Build(spec);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->op(1).alternatives.size(), 2u);
  EXPECT_EQ(g->op(1).alternatives[1].name, "winograd");
  EXPECT_EQ(g->op(1).alternatives[1].time_us, 10.5);
  EXPECT_EQ(g->op(1).alternatives[1].workspace_bytes, 64);
  const Graph chosen = g->WithWorkspaces({0, 64, 7, 0});
  EXPECT_EQ(chosen.op(1).workspace_bytes, 64);
  EXPECT_EQ(chosen.op(2).workspace_bytes, 7);
  EXPECT_EQ(g->op(1).workspace_bytes, 0);

  const auto refused = [&](std::vector<Primitive> alternatives) {
    GraphSpec bad = Diamond();
    bad.ops[2].alternatives = std::move(alternatives);
    return std::string(Graph::Build(bad).status().message());
  };
  EXPECT_THAT(refused({{"", 1, 0, "", 0}}), HasSubstr("op 'c' has an alternative without a name"));
  EXPECT_THAT(refused({{"a", 1, 0, "", 0}, {"a", 2, 0, "", 0}}), HasSubstr("op 'c' has two alternatives named 'a'"));
  EXPECT_THAT(refused({{"a", -1, 0, "", 0}}), HasSubstr("op 'c' alternative 'a' has time_us -1"));
  EXPECT_THAT(refused({{"a", std::nan(""), 0, "", 0}}), HasSubstr("must be a number from 0 to 1e+12"));
  EXPECT_THAT(refused({{"a", 2e12, 0, "", 0}}), HasSubstr("must be a number from 0 to 1e+12"));
  EXPECT_THAT(refused(std::vector<Primitive>(65, {"a", 1, 0, "", 0})), HasSubstr("op 'c' has 65 alternatives"));
  GraphSpec huge = Diamond();
  huge.ops[2].alternatives = {{"a", 1, int64_t{1} << 62, "", 0}};
  huge.ops[3].alternatives = {{"a", 1, int64_t{1} << 62, "", 0}};
  EXPECT_EQ(Graph::Build(huge).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(refused({{"a", 1, -5, "", 0}}), HasSubstr("op 'c' alternative 'a' has negative bytes"));
  EXPECT_THAT(refused({{"a", 1, 0, "", -5}}), HasSubstr("negative bytes"));
}

// Layout transforms (issue 19, layout_conversions.h): every conversion some
// choice needs must be listed, once, with rates in range.
TEST(GraphTest, ChecksLayoutTransforms) {
  GraphSpec spec = Diamond();  // a -> b, a -> c, b and c -> d
  spec.ops[1].alternatives = {{"k", 1, 0, "nchw", 0}};
  spec.ops[2].alternatives = {{"k", 1, 0, "", 0}};  // any layout: nothing to convert
  spec.ops[3].alternatives = {{"x", 1, 0, "nchw", 0}, {"y", 1, 0, "nhwc", 0}};
  EXPECT_THAT(std::string(Graph::Build(spec).status().message()), HasSubstr("op 'd' may read in layout 'nhwc' tensor"));
  EXPECT_THAT(std::string(Graph::Build(spec).status().message()),
              HasSubstr("which op 'b' may write in layout 'nchw', and layout_transforms has no transform from "
                        "'nchw' to 'nhwc'"));
  spec.layout_transforms = {{"nchw", "nhwc", 100, 1048576}};
  absl::StatusOr<Graph> g = Graph::Build(spec);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->layout_transforms().size(), 1u);
  EXPECT_EQ(g->layout_transforms()[0].to, "nhwc");

  const auto refused = [&](std::vector<LayoutTransform> transforms) {
    GraphSpec bad = spec;
    bad.layout_transforms = std::move(transforms);
    return std::string(Graph::Build(bad).status().message());
  };
  EXPECT_THAT(refused({{"nchw", "nhwc", 1, 0}, {"nchw", "nhwc", 2, 0}}), HasSubstr("is given twice"));
  EXPECT_THAT(refused({{"nchw", "nchw", 1, 0}}), HasSubstr("both layouts must be named and differ"));
  EXPECT_THAT(refused({{"", "nhwc", 1, 0}}), HasSubstr("both layouts must be named and differ"));
  EXPECT_THAT(refused({{"nchw", "nhwc", -1, 0}}), HasSubstr("time_us_per_mb -1: it must be a number from 0 to"));
  EXPECT_THAT(refused({{"nchw", "nhwc", std::nan(""), 0}}), HasSubstr("must be a number from 0 to 1e+06"));
  EXPECT_THAT(refused({{"nchw", "nhwc", 1, 65.0 * 1048576}}), HasSubstr("workspace_bytes_per_mb"));
  // Sizes that fit 64 bits until the converted copies count.
  GraphSpec huge = spec;
  for (TensorSpec& t : huge.tensors) {
    t.bytes = int64_t{1} << 57;
    t.has_bytes = true;
  }
  EXPECT_TRUE(Graph::Build(huge).ok());
  huge.layout_transforms = {{"nchw", "nhwc", 1, 64.0 * 1048576}};
  EXPECT_EQ(Graph::Build(huge).status().code(), absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace serenity
