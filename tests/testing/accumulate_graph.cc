#include "tests/testing/accumulate_graph.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/testing/test_graph.h"

namespace serenity::testing {

GraphSpec RandomAccumulateDag(int num_ops, std::mt19937& rng) {
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  struct Available {
    std::string name;
    int64_t bytes;
    bool made_by_op;
  };
  TestGraph g;
  std::vector<Available> available;
  const int num_inputs = uniform(1, 2);
  for (int i = 0; i < num_inputs; ++i) {
    Available in{absl::StrCat("in", i), uniform(1, 100), false};
    g.Input(in.name, in.bytes);
    available.push_back(in);
  }
  g.Weight("w", uniform(1, 50));
  auto recent = [&](int window) -> const Available& {
    const int size = static_cast<int>(available.size());
    return available[uniform(std::max(0, size - window), size - 1)];
  };
  std::vector<std::pair<std::string, bool>> concat_outputs;  // name, unsliceable
  for (int u = 0; u < num_ops; ++u) {
    const std::string name = absl::StrCat("op", u);
    const std::string out = absl::StrCat(name, "_o0");
    std::vector<const Available*> made;
    for (const Available& a : available) {
      if (a.made_by_op) made.push_back(&a);
    }
    const int kind = uniform(0, 9);
    if (kind <= 2 && (!made.empty() || uniform(0, 7) == 0)) {
      // Prefer recent op outputs as the accumulator, sometimes any tensor.
      const Available& acc =
          made.empty() || uniform(0, 7) == 0
              ? recent(static_cast<int>(available.size()))
              : *made[uniform(std::max(0, static_cast<int>(made.size()) - 3), static_cast<int>(made.size()) - 1)];
      const std::string x = recent(4).name;
      const int64_t bytes = acc.bytes;
      g.Op(name, "serenity::ConvAccumulate", {x, "w", acc.name}, {{out, bytes}});
      available.push_back({out, bytes, true});
      continue;
    }
    if (kind == 3) {
      const Available data = recent(static_cast<int>(available.size()));
      g.Op(name, "Reshape", {data.name}, {{out, data.bytes}});
      available.push_back({out, data.bytes, true});
    } else if (kind == 4 || kind == 5) {
      const Available data = recent(4);
      std::vector<std::string> inputs{data.name};
      if (kind == 5) inputs.push_back(recent(static_cast<int>(available.size())).name);
      g.Op(name, kind == 4 ? "Relu" : "Add", inputs, {{out, data.bytes}});
      available.push_back({out, data.bytes, true});
    } else if (kind == 6) {
      std::vector<std::string> inputs;
      int64_t sum = 0;
      const int fan_in = uniform(1, 3);
      for (int k = 0; k < fan_in; ++k) {
        const Available& pick = recent(5);
        if (std::find(inputs.begin(), inputs.end(), pick.name) != inputs.end()) continue;
        inputs.push_back(pick.name);
        sum += pick.bytes;
      }
      g.Op(name, "Concat", inputs, {{out, sum}});
      concat_outputs.push_back({out, uniform(0, 3) == 0});
      available.push_back({out, sum, true});
    } else {
      std::vector<std::string> inputs;
      const int fan_in = uniform(1, 3);
      for (int k = 0; k < fan_in; ++k) inputs.push_back(recent(uniform(0, 2) == 0 ? 100 : 4).name);
      std::vector<std::pair<std::string, int64_t>> outputs;
      const int fan_out = uniform(0, 4) == 0 ? 2 : 1;
      for (int k = 0; k < fan_out; ++k) outputs.push_back({absl::StrCat(name, "_o", k), uniform(1, 100)});
      g.Op(name, "Op", inputs, outputs, uniform(0, 4) == 0 ? uniform(1, 50) : 0);
      for (const auto& [o, bytes] : outputs) available.push_back({o, bytes, true});
    }
  }
  for (const Available& a : available) g.Shape(a.name, {1, a.bytes});
  for (const auto& [name, unsliceable] : concat_outputs) {
    if (!unsliceable) continue;
    for (const Available& a : available) {
      if (a.name == name) g.Shape(name, {2, a.bytes});
    }
  }
  g.Output(available.back().name);
  if (uniform(0, 2) == 0) g.Output(available[uniform(0, static_cast<int>(available.size()) - 1)].name);
  return g.spec();
}

}  // namespace serenity::testing
