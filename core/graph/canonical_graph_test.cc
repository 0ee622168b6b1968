#include "core/graph/canonical_graph.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

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

// Checks that the position mappings of two canonical forms pair up equal
// tensors, and ops of the same type and sizes whose inputs and outputs sit
// at the same positions: op_at and tensor_at form an isomorphism.
void ExpectCorrespondence(const Graph& a, const CanonicalGraph& ca, const Graph& b, const CanonicalGraph& cb) {
  ASSERT_EQ(ca.op_at.size(), static_cast<size_t>(a.num_ops()));
  ASSERT_EQ(cb.op_at.size(), static_cast<size_t>(b.num_ops()));
  ASSERT_EQ(ca.tensor_at.size(), static_cast<size_t>(a.num_tensors()));
  ASSERT_EQ(cb.tensor_at.size(), static_cast<size_t>(b.num_tensors()));
  ASSERT_EQ(a.num_ops(), b.num_ops());
  ASSERT_EQ(a.num_tensors(), b.num_tensors());
  std::vector<int> pa(a.num_tensors(), -1), pb(b.num_tensors(), -1);
  for (size_t p = 0; p < ca.tensor_at.size(); ++p) {
    ASSERT_EQ(pa[ca.tensor_at[p]], -1) << "tensor listed twice";
    ASSERT_EQ(pb[cb.tensor_at[p]], -1) << "tensor listed twice";
    pa[ca.tensor_at[p]] = static_cast<int>(p);
    pb[cb.tensor_at[p]] = static_cast<int>(p);
    const Tensor& x = a.tensor(ca.tensor_at[p]);
    const Tensor& y = b.tensor(cb.tensor_at[p]);
    EXPECT_EQ(x.shape, y.shape);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.is_weight, y.is_weight);
    EXPECT_EQ(x.is_graph_input, y.is_graph_input);
    EXPECT_EQ(x.is_graph_output, y.is_graph_output);
  }
  std::vector<bool> seen_a(a.num_ops()), seen_b(b.num_ops());
  for (size_t p = 0; p < ca.op_at.size(); ++p) {
    ASSERT_FALSE(seen_a[ca.op_at[p]]) << "op listed twice";
    ASSERT_FALSE(seen_b[cb.op_at[p]]) << "op listed twice";
    seen_a[ca.op_at[p]] = seen_b[cb.op_at[p]] = true;
    const Op& x = a.op(ca.op_at[p]);
    const Op& y = b.op(cb.op_at[p]);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.workspace_bytes, y.workspace_bytes);
    EXPECT_EQ(x.macs, y.macs);
    ASSERT_EQ(x.inputs.size(), y.inputs.size());
    for (size_t k = 0; k < x.inputs.size(); ++k) EXPECT_EQ(pa[x.inputs[k]], pb[y.inputs[k]]);
    ASSERT_EQ(x.outputs.size(), y.outputs.size());
    for (size_t k = 0; k < x.outputs.size(); ++k) EXPECT_EQ(pa[x.outputs[k]], pb[y.outputs[k]]);
  }
}

// Canonicalizes `spec` and `trials` disguised copies of it and expects the
// same serialization and key and a correspondence every time.
void ExpectSameFormWhenDisguised(const GraphSpec& spec, int trials, std::mt19937& rng) {
  const Graph a = *Graph::Build(spec);
  const CanonicalGraph ca = Canonicalize(a);
  for (int trial = 0; trial < trials; ++trial) {
    const Graph b = *Graph::Build(Disguised(spec, rng));
    const CanonicalGraph cb = Canonicalize(b);
    ASSERT_EQ(ca.serialization, cb.serialization) << spec.name << " trial " << trial;
    ASSERT_EQ(ca.key, cb.key);
    ExpectCorrespondence(a, ca, b, cb);
    if (::testing::Test::HasFailure()) return;
  }
}

// A random DAG with little to tell ops apart: two op types, two tensor
// sizes, graph inputs and a weight read by many ops, repeated inputs. Such
// graphs are full of ties that refinement must break by structure alone.
GraphSpec UniformDag(int num_ops, std::mt19937& rng) {
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  testing::TestGraph g;
  std::vector<std::string> available;
  const int num_inputs = uniform(1, 3);
  for (int i = 0; i < num_inputs; ++i) {
    available.push_back("in" + std::to_string(i));
    g.Input(available.back(), 8);
  }
  g.Weight("w", 8);
  for (int u = 0; u < num_ops; ++u) {
    std::vector<std::string> inputs;
    const int fan_in = uniform(1, 2);
    for (int k = 0; k < fan_in; ++k) {
      const int lo = uniform(0, 1) == 0 ? 0 : std::max(0, static_cast<int>(available.size()) - 3);
      inputs.push_back(available[uniform(lo, static_cast<int>(available.size()) - 1)]);
    }
    if (uniform(0, 4) == 0) inputs.push_back("w");
    std::vector<std::pair<std::string, int64_t>> outputs;
    const int fan_out = uniform(0, 3) == 0 ? 2 : 1;
    for (int k = 0; k < fan_out; ++k) {
      outputs.push_back({"t" + std::to_string(u) + "_" + std::to_string(k), uniform(0, 3) == 0 ? 16 : 8});
    }
    g.Op("op" + std::to_string(u), uniform(0, 2) == 0 ? "B" : "A", inputs, outputs);
    for (const auto& [name, bytes] : outputs) available.push_back(name);
  }
  g.Output(available.back());
  return g.spec();
}

// `copies` identical branches of `depth` ops from one input, joined by a
// Concat or, when `join` is false, each ending in a graph output. Input slots
// tell joined branches apart; separate ones are automorphic, so only
// individualization can order them.
GraphSpec ParallelBranches(int copies, int depth, bool join) {
  testing::TestGraph g;
  g.Input("in", 64);
  std::vector<std::string> joined;
  for (int c = 0; c < copies; ++c) {
    std::string last = "in";
    for (int d = 0; d < depth; ++d) {
      const std::string name = "b" + std::to_string(c) + "_" + std::to_string(d);
      g.Op(name, d % 2 == 0 ? "Conv" : "Relu", {last}, {{name + "_out", 128}});
      last = name + "_out";
    }
    joined.push_back(last);
  }
  if (join) {
    g.Op("concat", "Concat", joined, {{"out", 128 * copies}}).Output("out");
  } else {
    for (const std::string& out : joined) g.Output(out);
  }
  return g.spec();
}

TEST(CanonicalGraphTest, RenamedAndShuffledGraphsHaveTheSameForm) {
  std::mt19937 rng(41);
  for (int trial = 0; trial < 300; ++trial) {
    ExpectSameFormWhenDisguised(testing::RandomDag(1 + trial % 30, rng), 1, rng);
    if (HasFailure()) return;
  }
}

TEST(CanonicalGraphTest, GraphsWithManyTiesHaveTheSameFormWhenShuffled) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    GraphSpec spec = UniformDag(2 + trial % 40, rng);
    spec.name = "uniform" + std::to_string(trial);
    ExpectSameFormWhenDisguised(spec, 5, rng);
    if (HasFailure()) return;
  }
}

TEST(CanonicalGraphTest, RenamingTheGraphKeepsTheForm) {
  testing::TestGraph g;
  g.Input("in", 8).Op("a", "Relu", {"in"}, {{"out", 8}}).Output("out");
  GraphSpec spec = g.spec();
  const CanonicalGraph before = Canonicalize(*Graph::Build(spec));
  spec.name = "another name";
  EXPECT_EQ(Canonicalize(*Graph::Build(spec)).serialization, before.serialization);
}

TEST(CanonicalGraphTest, IdenticalParallelBranchesAreCanonicalToo) {
  std::mt19937 rng(43);
  for (bool join : {false, true}) {
    ExpectSameFormWhenDisguised(ParallelBranches(6, 2, join), 50, rng);
    ExpectSameFormWhenDisguised(ParallelBranches(2, 7, join), 50, rng);
    ExpectSameFormWhenDisguised(ParallelBranches(300, 3, join), 3, rng);
  }
}

TEST(CanonicalGraphTest, NestedSymmetryIsCanonicalToo) {
  // Two identical blocks, each an input read by a Shape op and by three
  // identical Conv-Relu branches ending in graph outputs, all convs sharing
  // one weight: 2 * 3! * 3! automorphisms, and refinement alone splits none
  // of the branches.
  testing::TestGraph g;
  g.Input("in0", 32).Input("in1", 32).Weight("w", 4);
  for (int b = 0; b < 2; ++b) {
    const std::string in = "in" + std::to_string(b);
    g.Op("shape" + std::to_string(b), "Shape", {in}, {{"shape_out" + std::to_string(b), 8}});
    g.Output("shape_out" + std::to_string(b));
    for (int c = 0; c < 3; ++c) {
      const std::string name = std::to_string(b) + std::to_string(c);
      g.Op("conv" + name, "Conv", {in, "w"}, {{"c" + name, 16}});
      g.Op("relu" + name, "Relu", {"c" + name}, {{"r" + name, 16}}).Output("r" + name);
    }
  }
  std::mt19937 rng(44);
  ExpectSameFormWhenDisguised(g.spec(), 100, rng);
}

TEST(CanonicalGraphTest, OpsSharingAGraphInputAreToldApart) {
  // a and b read in0, c reads in1; all else is alike, so only which input
  // they share tells them apart.
  testing::TestGraph g;
  g.Input("in0", 8).Input("in1", 8).Weight("w0", 4).Weight("w1", 4);
  g.Op("a", "Relu", {"in0", "w0"}, {{"ta", 8}}).Output("ta");
  g.Op("b", "Relu", {"in0", "w1"}, {{"tb", 8}}).Output("tb");
  g.Op("c", "Relu", {"in1", "w1"}, {{"tc", 8}}).Output("tc");
  std::mt19937 rng(45);
  ExpectSameFormWhenDisguised(g.spec(), 100, rng);
}

TEST(CanonicalGraphTest, LongChainsAndWideGraphsAreCanonical) {
  testing::TestGraph chain;
  chain.Input("t0", 8);
  for (int u = 0; u < 5000; ++u) {
    chain.Op("op" + std::to_string(u), "Relu", {"t" + std::to_string(u)}, {{"t" + std::to_string(u + 1), 8}});
  }
  chain.Output("t5000");
  std::mt19937 rng(46);
  ExpectSameFormWhenDisguised(chain.spec(), 2, rng);
  ExpectSameFormWhenDisguised(UniformDag(5000, rng), 2, rng);
}

TEST(CanonicalGraphTest, ThousandsOfAutomorphicBranchesCanonicalize) {
  // 5000 automorphic branches need 9999 individualizations (incremental
  // splitting makes that milliseconds; ctest's timeout catches a regression
  // to whole refinement rounds, which took seconds). Every position is
  // filled exactly once.
  const Graph graph = *Graph::Build(ParallelBranches(5000, 2, /*join=*/false));
  const CanonicalGraph canonical = Canonicalize(graph);
  ASSERT_EQ(canonical.op_at.size(), 10000u);
  std::vector<int> seen(graph.num_ops(), 0);
  for (auto op : canonical.op_at) ++seen[op];
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), graph.num_ops());
}

TEST(CanonicalGraphTest, EveryChangeThatMattersChangesTheKey) {
  testing::TestGraph g;
  g.Input("in", 100).Weight("w", 40);
  g.Op("a", "Conv", {"in", "w"}, {{"x", 200}}, 16).Op("b", "Relu", {"in"}, {{"y", 300}});
  g.Op("c", "Add", {"x", "y"}, {{"out", 50}}).Op("d", "Relu", {"y"}, {{"z", 300}});
  g.Output("out").Output("z");
  GraphSpec base = g.spec();
  for (TensorSpec& t : base.tensors) {
    if (t.name == "x") t.shape = {1, 2, 10, 10};  // bytes stay as given
  }
  base.tensors.push_back({"spare", {}, 1, 4, false});  // described, unused
  const CanonicalGraph canonical = Canonicalize(*Graph::Build(base));
  const std::string& key = canonical.key;
  auto tensor = [](GraphSpec& spec, const std::string& name) -> TensorSpec& {
    return *std::find_if(spec.tensors.begin(), spec.tensors.end(), [&](const TensorSpec& t) { return t.name == name; });
  };
  auto op = [](GraphSpec& spec, const std::string& name) -> OpSpec& {
    return *std::find_if(spec.ops.begin(), spec.ops.end(), [&](const OpSpec& o) { return o.name == name; });
  };

  std::vector<std::pair<std::string, GraphSpec>> changed;
  auto change = [&](const std::string& what) -> GraphSpec& { return changed.emplace_back(what, base).second; };
  tensor(change("size"), "y").bytes += 1;
  tensor(change("shape dim"), "x").shape[3] = 11;
  tensor(change("rank"), "x").shape.push_back(1);
  tensor(change("dtype, same bytes"), "y").dtype = 10;
  tensor(change("weight flag"), "spare").is_weight = true;
  change("graph input").inputs.push_back("spare");
  change("graph output").outputs.push_back("y");
  {
    GraphSpec& spec = change("input slots");
    std::swap(op(spec, "c").inputs[0], op(spec, "c").inputs[1]);
  }
  op(change("an edge"), "d").inputs = {"x"};
  op(change("a repeated input"), "c").inputs = {"x", "x"};
  op(change("op type"), "b").type = "Sigmoid";
  op(change("workspace"), "a").workspace_bytes = 17;
  op(change("macs"), "a").macs = 5;
  {
    GraphSpec& spec = change("an output more");
    op(spec, "a").outputs.push_back("spare");
  }
  for (auto& [what, spec] : changed) {
    absl::StatusOr<Graph> graph = Graph::Build(spec);
    ASSERT_TRUE(graph.ok()) << what << ": " << graph.status();
    const CanonicalGraph c = Canonicalize(*graph);
    EXPECT_NE(c.serialization, canonical.serialization) << what;
    EXPECT_NE(c.key, key) << what;
  }
}

TEST(CanonicalGraphTest, DeadTensorsCount) {
  testing::TestGraph g;
  g.Input("in", 8).Op("a", "Relu", {"in"}, {{"out", 8}}).Output("out");
  GraphSpec spec = g.spec();
  const std::string key = Canonicalize(*Graph::Build(spec)).key;
  spec.tensors.push_back({"unused", {}, 1, 4, false});
  const CanonicalGraph with_one = Canonicalize(*Graph::Build(spec));
  EXPECT_NE(with_one.key, key);
  EXPECT_EQ(with_one.tensor_at.size(), 3u);
}

// Keys go into a shared Redis: a change of the hash or the serialization
// must be deliberate (and bump kStoredPlanFormat).
TEST(CanonicalGraphTest, KeysAreStableAcrossVersions) {
  EXPECT_EQ(StableHash128(""), StableHash128(std::string()));
  EXPECT_NE(StableHash128("a"), StableHash128("b"));
  EXPECT_EQ(StableHash128("serenity"), "92cb44e29905fc2f597ff54e61dd1ed3");
  testing::TestGraph g;
  g.Input("in", 8).Op("a", "Relu", {"in"}, {{"out", 8}}).Output("out");
  const std::string key = Canonicalize(g.Build()).key;
  EXPECT_EQ(key.size(), 32u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(key, "77dc53275d9586e41f09d117f5fdb29a");
}

TEST(CanonicalGraphTest, SharedModelsHaveTheSameFormWhenDisguised) {
  const std::vector<std::string> models = testing::OnnxFilesIn(SERENITY_SHARED_DIR "/bench/models");
  ASSERT_FALSE(models.empty());
  std::mt19937 rng(47);
  for (const std::string& model : models) {
    absl::StatusOr<GraphSpec> spec = OnnxToGraphSpec(testing::ReadFile(model), {});
    ASSERT_TRUE(spec.ok()) << model << ": " << spec.status();
    spec->name = model;
    ExpectSameFormWhenDisguised(*spec, 2, rng);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace serenity
