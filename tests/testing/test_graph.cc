#include "tests/testing/test_graph.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace serenity::testing {

TestGraph& TestGraph::Input(const std::string& name, int64_t bytes) {
  spec_.tensors.push_back({name, {}, 1, bytes, false});
  spec_.inputs.push_back(name);
  return *this;
}

TestGraph& TestGraph::Weight(const std::string& name, int64_t bytes) {
  spec_.tensors.push_back({name, {}, 1, bytes, true});
  return *this;
}

TestGraph& TestGraph::Op(const std::string& name, const std::string& type, std::vector<std::string> inputs,
                         std::vector<std::pair<std::string, int64_t>> outputs, int64_t workspace_bytes) {
  OpSpec op;
  op.name = name;
  op.type = type;
  op.inputs = std::move(inputs);
  op.workspace_bytes = workspace_bytes;
  for (auto& [out, bytes] : outputs) {
    spec_.tensors.push_back({out, {}, 1, bytes, false});
    op.outputs.push_back(out);
  }
  spec_.ops.push_back(std::move(op));
  return *this;
}

TestGraph& TestGraph::Shape(const std::string& name, std::vector<int64_t> shape) {
  for (TensorSpec& t : spec_.tensors) {
    if (t.name == name) t.shape = std::move(shape);
  }
  return *this;
}

TestGraph& TestGraph::Output(const std::string& name) {
  spec_.outputs.push_back(name);
  return *this;
}

Graph TestGraph::Build() const {
  absl::StatusOr<Graph> graph = Graph::Build(spec_);
  if (!graph.ok()) {
    std::cerr << "TestGraph::Build: " << graph.status() << "\n";
    std::abort();
  }
  return *std::move(graph);
}

GraphSpec RandomDag(int num_ops, std::mt19937& rng, bool concats) {
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  TestGraph g;
  std::vector<std::pair<std::string, int64_t>> available;
  const int num_inputs = uniform(1, 2);
  for (int i = 0; i < num_inputs; ++i) {
    std::string name = absl::StrCat("in", i);
    int64_t bytes = uniform(1, 100);
    g.Input(name, bytes);
    available.push_back({name, bytes});
  }
  if (uniform(0, 3) == 0) {
    g.Weight("w", uniform(1, 100));
  }
  for (int u = 0; u < num_ops; ++u) {
    std::string name = absl::StrCat("op", u);
    if (concats && uniform(0, 3) == 0) {
      std::vector<std::string> inputs;
      int64_t sum = 0;
      const int fan_in = uniform(1, 3);
      for (int k = 0; k < fan_in; ++k) {
        int lo = std::max(0, static_cast<int>(available.size()) - 5);
        const auto& pick = available[uniform(lo, static_cast<int>(available.size()) - 1)];
        if (std::find(inputs.begin(), inputs.end(), pick.first) != inputs.end()) continue;
        inputs.push_back(pick.first);
        sum += pick.second;
      }
      const std::string out = absl::StrCat(name, "_o0");
      g.Op(name, "Concat", inputs, {{out, sum}});
      g.Shape(out, {uniform(0, 3) == 0 ? 2 : 1, sum});
      available.push_back({out, sum});
      continue;
    }
    const int kind = uniform(0, 9);
    const bool view = kind <= 1;
    const bool elementwise = kind == 2 || kind == 3;
    std::vector<std::string> inputs;
    std::vector<std::pair<std::string, int64_t>> outputs;
    std::string type = view ? "Reshape" : "Op";
    if (view) {
      const auto& data = available[uniform(0, static_cast<int>(available.size()) - 1)];
      inputs.push_back(data.first);
      outputs.push_back({absl::StrCat(name, "_o0"), data.second});
    } else if (elementwise) {
      // Relu of a recent tensor, or Add of two: the output has the first
      // input's size, so it may run in place.
      int lo = std::max(0, static_cast<int>(available.size()) - 4);
      const auto& data = available[uniform(lo, static_cast<int>(available.size()) - 1)];
      inputs.push_back(data.first);
      type = "Relu";
      if (uniform(0, 1) == 0) {
        inputs.push_back(available[uniform(0, static_cast<int>(available.size()) - 1)].first);
        type = "Add";
      }
      outputs.push_back({absl::StrCat(name, "_o0"), data.second});
    } else {
      const int fan_in = uniform(1, 3);
      for (int k = 0; k < fan_in; ++k) {
        // Prefer recent tensors so graphs have depth, sometimes any tensor.
        int lo = uniform(0, 2) == 0 ? 0 : std::max(0, static_cast<int>(available.size()) - 4);
        inputs.push_back(available[uniform(lo, static_cast<int>(available.size()) - 1)].first);
      }
      if (uniform(0, 5) == 0) {
        for (const TensorSpec& t : g.spec().tensors) {
          if (t.is_weight) inputs.push_back(t.name);
        }
      }
      const int fan_out = uniform(0, 4) == 0 ? 2 : 1;
      for (int k = 0; k < fan_out; ++k) outputs.push_back({absl::StrCat(name, "_o", k), uniform(1, 100)});
    }
    g.Op(name, type, inputs, outputs, uniform(0, 4) == 0 ? uniform(1, 50) : 0);
    for (auto& o : outputs) available.push_back(o);
  }
  if (concats) {
    for (const auto& [tensor, bytes] : available) {
      bool shaped = false;
      for (const TensorSpec& t : g.spec().tensors) shaped = shaped || (t.name == tensor && !t.shape.empty());
      if (!shaped) g.Shape(tensor, {1, bytes});
    }
  }
  // The last op's outputs and sometimes another tensor are graph outputs.
  g.Output(available.back().first);
  if (uniform(0, 2) == 0) g.Output(available[uniform(0, static_cast<int>(available.size()) - 1)].first);
  return g.spec();
}

GraphSpec ReluChain(int ops, int64_t dim) {
  GraphSpec spec;
  spec.tensors.reserve(static_cast<size_t>(ops) + 1);
  spec.ops.reserve(static_cast<size_t>(ops));
  for (int i = 0; i <= ops; ++i) {
    TensorSpec t;
    t.name = absl::StrCat("t", i);
    t.shape = {dim};
    spec.tensors.push_back(std::move(t));
  }
  for (int i = 0; i < ops; ++i) {
    OpSpec op;
    op.name = absl::StrCat("o", i);
    op.type = "Relu";
    op.inputs = {absl::StrCat("t", i)};
    op.outputs = {absl::StrCat("t", i + 1)};
    spec.ops.push_back(std::move(op));
  }
  spec.inputs = {"t0"};
  spec.outputs = {absl::StrCat("t", ops)};
  return spec;
}

GraphSpec FanOutConcat(int relus, int64_t bytes) {
  GraphSpec spec;
  spec.name = absl::StrCat("fanout_", relus);
  spec.tensors.push_back({"x", {1, bytes}, 1, bytes, false});
  spec.inputs.push_back("x");
  OpSpec concat;
  concat.name = "concat";
  concat.type = "Concat";
  for (int i = 0; i < relus; ++i) {
    const std::string out = absl::StrCat("r", i);
    spec.tensors.push_back({out, {1, bytes}, 1, bytes, false});
    OpSpec op;
    op.name = absl::StrCat("relu", i);
    op.type = "Relu";
    op.inputs = {"x"};
    op.outputs = {out};
    spec.ops.push_back(std::move(op));
    concat.inputs.push_back(out);
  }
  spec.tensors.push_back({"y", {1, bytes * relus}, 1, bytes * relus, false});
  concat.outputs = {"y"};
  spec.ops.push_back(std::move(concat));
  spec.outputs.push_back("y");
  return spec;
}

GraphSpec LayeredDag(int num_ops, int width, unsigned seed) {
  std::mt19937 rng(seed);
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  GraphSpec spec;
  spec.name = absl::StrCat("layered_", num_ops, "_", width);
  spec.tensors.push_back({"x", {}, 1, 1024, false});
  spec.inputs.push_back("x");
  std::vector<std::string> previous;
  int made = 0;
  while (made < num_ops) {
    const int layer = std::min(width, num_ops - made);
    std::vector<std::string> current;
    for (int c = 0; c < layer; ++c, ++made) {
      OpSpec op;
      op.name = absl::StrCat("op", made);
      op.type = "Op";
      if (previous.empty()) {
        op.inputs = {"x"};
      } else {
        const int p = static_cast<int>(previous.size());
        op.inputs.push_back(previous[static_cast<size_t>(c % p)]);
        const std::string& other = previous[static_cast<size_t>(uniform(0, p - 1))];
        if (other != op.inputs.front()) op.inputs.push_back(other);
      }
      const std::string out = absl::StrCat(op.name, "_o");
      spec.tensors.push_back({out, {}, 1, 256 * uniform(1, 16), false});
      op.outputs = {out};
      spec.ops.push_back(std::move(op));
      current.push_back(out);
    }
    previous = std::move(current);
  }
  // Tensors nobody reads and the last layer's are outputs (so none is dead).
  std::vector<bool> read(spec.tensors.size(), false);
  absl::flat_hash_map<std::string, size_t> index;
  for (size_t i = 0; i < spec.tensors.size(); ++i) index[spec.tensors[i].name] = i;
  for (const OpSpec& op : spec.ops) {
    for (const std::string& in : op.inputs) read[index[in]] = true;
  }
  for (size_t i = 1; i < spec.tensors.size(); ++i) {
    if (!read[i]) spec.outputs.push_back(spec.tensors[i].name);
  }
  return spec;
}

void AddRandomAlternatives(GraphSpec* spec, std::mt19937& rng, int skip_one_in, int min_count, int max_count,
                           int max_time_us, int64_t max_workspace) {
  for (OpSpec& op : spec->ops) {
    if (skip_one_in > 0 && rng() % skip_one_in == 0) continue;
    const int count = min_count + static_cast<int>(rng() % (max_count - min_count + 1));
    for (int a = 0; a < count; ++a) {
      Primitive p;
      p.name = "k" + std::to_string(a);
      p.time_us = 1 + static_cast<double>(rng() % max_time_us);
      p.workspace_bytes = static_cast<int64_t>(rng() % max_workspace);
      op.alternatives.push_back(p);
    }
  }
}

void AddRandomLayouts(GraphSpec* spec, std::mt19937& rng, int max_time_per_mb, int max_bytes_per_mb) {
  static const char* const kLayouts[] = {"", "A", "B"};
  for (OpSpec& op : spec->ops) {
    for (Primitive& p : op.alternatives) p.layout = kLayouts[rng() % 3];
  }
  for (const auto& [from, to] : {std::pair<const char*, const char*>{"A", "B"}, {"B", "A"}}) {
    spec->layout_transforms.push_back(
        {from, to, static_cast<double>(rng() % max_time_per_mb), static_cast<double>(rng() % max_bytes_per_mb)});
  }
}

void AddRandomWeights(GraphSpec* spec, std::mt19937& rng, int64_t max_bytes) {
  bool shared_added = false;
  for (OpSpec& op : spec->ops) {
    if (rng() % 2 == 0) continue;
    if (!op.alternatives.empty() && rng() % 4 == 0) {
      // A weight two ops read: none of theirs, so no weight_bytes.
      if (!shared_added) {
        spec->tensors.push_back({"shared/w", {}, 1, 1 + static_cast<int64_t>(rng() % max_bytes), true, true});
        shared_added = true;
      }
      op.inputs.push_back("shared/w");
      continue;
    }
    const std::string name = op.name + "/w";
    spec->tensors.push_back({name, {}, 1, 1 + static_cast<int64_t>(rng() % max_bytes), true, true});
    op.inputs.push_back(name);
    for (Primitive& p : op.alternatives) {
      if (rng() % 2 == 0) p.weight_bytes = 1 + static_cast<int64_t>(rng() % (2 * max_bytes));
    }
  }
}

void AddUnusedInput(GraphSpec* spec, const std::string& name, int64_t bytes) {
  spec->tensors.push_back({name, {}, 1, bytes, false, true});
  spec->inputs.push_back(name);
}

GraphSpec TwoBranchesWithKernels() {
  TestGraph t;
  t.Input("x", 100)
      .Op("a", "Conv", {"x"}, {{"ya", 50}})
      .Op("b", "Conv", {"x"}, {{"yb", 50}})
      .Op("c", "Relu", {"ya"}, {{"za", 10}})
      .Op("d", "Add", {"za", "yb"}, {{"out", 10}})
      .Output("out");
  GraphSpec spec = t.spec();
  for (OpSpec& op : spec.ops) {
    if (op.name == "a" || op.name == "b") op.alternatives = {{"winograd", 10, 60, "", 0}, {"direct", 30, 0, "", 0}};
  }
  return spec;
}

}  // namespace serenity::testing
