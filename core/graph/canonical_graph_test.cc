#include "core/graph/canonical_graph.h"

#include <algorithm>
#include <filesystem>
#include <random>

#include "core/onnx/onnx_import.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

// The same graph with every name changed and the op, tensor, input and
// output lists shuffled.
GraphSpec Disguised(GraphSpec spec, std::mt19937& rng) {
  auto rename = [](const std::string& name) { return name.empty() ? name : "x:" + name + ":y"; };
  spec.name = "disguised";
  for (TensorSpec& t : spec.tensors) t.name = rename(t.name);
  for (OpSpec& o : spec.ops) {
    o.name = rename(o.name);
    for (std::string& in : o.inputs) in = rename(in);
    for (std::string& out : o.outputs) out = rename(out);
  }
  for (std::string& in : spec.inputs) in = rename(in);
  for (std::string& out : spec.outputs) out = rename(out);
  std::shuffle(spec.ops.begin(), spec.ops.end(), rng);
  std::shuffle(spec.tensors.begin(), spec.tensors.end(), rng);
  std::shuffle(spec.inputs.begin(), spec.inputs.end(), rng);
  std::shuffle(spec.outputs.begin(), spec.outputs.end(), rng);
  return spec;
}

// Checks that the position mappings of two canonical forms pair up ops of
// the same type whose inputs and outputs sit at the same positions.
void ExpectCorrespondence(const Graph& a, const CanonicalGraph& ca, const Graph& b, const CanonicalGraph& cb) {
  ASSERT_EQ(ca.op_at.size(), cb.op_at.size());
  ASSERT_EQ(ca.tensor_at.size(), cb.tensor_at.size());
  std::vector<int> pa(a.num_tensors()), pb(b.num_tensors());
  for (size_t p = 0; p < ca.tensor_at.size(); ++p) {
    pa[ca.tensor_at[p]] = static_cast<int>(p);
    pb[cb.tensor_at[p]] = static_cast<int>(p);
    EXPECT_EQ(a.tensor(ca.tensor_at[p]).bytes, b.tensor(cb.tensor_at[p]).bytes);
  }
  for (size_t p = 0; p < ca.op_at.size(); ++p) {
    const Op& x = a.op(ca.op_at[p]);
    const Op& y = b.op(cb.op_at[p]);
    EXPECT_EQ(x.type, y.type);
    ASSERT_EQ(x.inputs.size(), y.inputs.size());
    for (size_t k = 0; k < x.inputs.size(); ++k) EXPECT_EQ(pa[x.inputs[k]], pb[y.inputs[k]]);
    ASSERT_EQ(x.outputs.size(), y.outputs.size());
    for (size_t k = 0; k < x.outputs.size(); ++k) EXPECT_EQ(pa[x.outputs[k]], pb[y.outputs[k]]);
  }
}

TEST(CanonicalGraphTest, RenamedAndShuffledGraphsHaveTheSameForm) {
  std::mt19937 rng(41);
  for (int trial = 0; trial < 300; ++trial) {
    const GraphSpec spec = testing::RandomDag(1 + trial % 30, rng);
    const Graph a = *Graph::Build(spec);
    const Graph b = *Graph::Build(Disguised(spec, rng));
    const CanonicalGraph ca = Canonicalize(a), cb = Canonicalize(b);
    ASSERT_EQ(ca.serialization, cb.serialization) << "trial " << trial;
    EXPECT_EQ(ca.key, cb.key);
    ExpectCorrespondence(a, ca, b, cb);
  }
}

TEST(CanonicalGraphTest, IdenticalParallelBranchesAreCanonicalToo) {
  testing::TestGraph g;
  g.Input("in", 64);
  std::vector<std::string> joined;
  for (int branch = 0; branch < 6; ++branch) {
    const std::string b = std::to_string(branch);
    g.Op("conv" + b, "Conv", {"in"}, {{"c" + b, 128}});
    g.Op("relu" + b, "Relu", {"c" + b}, {{"r" + b, 128}});
    joined.push_back("r" + b);
  }
  g.Op("concat", "Concat", joined, {{"out", 768}}).Output("out");
  const Graph a = g.Build();
  const CanonicalGraph ca = Canonicalize(a);
  std::mt19937 rng(43);
  for (int trial = 0; trial < 50; ++trial) {
    GraphSpec spec = g.spec();
    std::shuffle(spec.ops.begin(), spec.ops.end(), rng);
    // Swapping two branches' names is an automorphism.
    const Graph b = *Graph::Build(Disguised(spec, rng));
    const CanonicalGraph cb = Canonicalize(b);
    ASSERT_EQ(ca.serialization, cb.serialization) << "trial " << trial;
    ExpectCorrespondence(a, ca, b, cb);
  }
}

TEST(CanonicalGraphTest, EveryChangeThatMattersChangesTheKey) {
  testing::TestGraph g;
  g.Input("in", 100).Weight("w", 40);
  g.Op("a", "Conv", {"in", "w"}, {{"x", 200}}, 16).Op("b", "Relu", {"in"}, {{"y", 300}});
  g.Op("c", "Add", {"x", "y"}, {{"out", 50}}).Output("out");
  const GraphSpec base = g.spec();
  const std::string key = Canonicalize(*Graph::Build(base)).key;
  EXPECT_EQ(key.size(), 32u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);

  std::vector<GraphSpec> changed(7, base);
  changed[0].tensors[2].bytes += 1;  // a size
  for (TensorSpec& t : changed[1].tensors) {
    if (t.name == "y") t.dtype = 10;  // a dtype (float16), same byte count
  }
  for (OpSpec& o : changed[2].ops) {
    if (o.name == "c") std::swap(o.inputs[0], o.inputs[1]);  // input slots
  }
  for (OpSpec& o : changed[3].ops) {
    if (o.name == "b") o.type = "Sigmoid";  // an op type
  }
  for (OpSpec& o : changed[4].ops) {
    if (o.name == "a") o.workspace_bytes = 17;  // workspace
  }
  changed[5].outputs.push_back("y");  // a graph output
  for (OpSpec& o : changed[6].ops) {
    if (o.name == "b") o.inputs = {"x"};  // an edge
  }
  for (size_t i = 0; i < changed.size(); ++i) {
    absl::StatusOr<Graph> graph = Graph::Build(changed[i]);
    ASSERT_TRUE(graph.ok()) << i << ": " << graph.status();
    EXPECT_NE(Canonicalize(*graph).key, key) << "change " << i;
  }
}

// Keys go into a shared Redis: a change of the hash or the serialization
// must be deliberate (and bump kStoredPlanFormat).
TEST(CanonicalGraphTest, KeysAreStableAcrossVersions) {
  EXPECT_EQ(StableHash128(""), StableHash128(std::string()));
  EXPECT_NE(StableHash128("a"), StableHash128("b"));
  testing::TestGraph g;
  g.Input("in", 8).Op("a", "Relu", {"in"}, {{"out", 8}}).Output("out");
  EXPECT_EQ(Canonicalize(g.Build()).key, "77dc53275d9586e41f09d117f5fdb29a");
}

TEST(CanonicalGraphTest, SharedModelsCanonicalizeConsistently) {
  for (const char* model : {"nasnet_a_cifar10.onnx", "randwire_ws_cifar10_stage2.onnx", "tv_densenet121.onnx"}) {
    absl::StatusOr<Graph> graph =
        ImportOnnxModel(testing::ReadFile(std::string(SERENITY_SHARED_DIR "/bench/models/") + model), {});
    ASSERT_TRUE(graph.ok()) << model << ": " << graph.status();
    const CanonicalGraph c = Canonicalize(*graph);
    EXPECT_EQ(c.op_at.size(), static_cast<size_t>(graph->num_ops()));
    std::vector<OpId> sorted = c.op_at;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < graph->num_ops(); ++i) ASSERT_EQ(sorted[i], i) << model;
    EXPECT_EQ(Canonicalize(*graph).serialization, c.serialization) << model;
  }
}

}  // namespace
}  // namespace serenity
