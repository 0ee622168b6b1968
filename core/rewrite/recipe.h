// The machine-readable record of the rewrites applied to an ONNX model
// (issue 17): enough for a client to apply the same rewrites to its own copy
// of the model, with weights (ApplyRecipe in concat_conv.h). Mirrors the
// serenity.v1.RewriteRecipe message (recipe_proto.h converts).
#ifndef SERENITY_CORE_REWRITE_RECIPE_H_
#define SERENITY_CORE_REWRITE_RECIPE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace serenity {

// A new initializer `name` holding `source`'s elements whose index along
// `axis` lies in [begin, end) (all other axes whole).
struct WeightSlice {
  std::string source;
  int axis = 0;
  int64_t begin = 0;
  int64_t end = 0;
  std::string name;
};

// One rewritten Concat -> Conv site.
struct RewriteSite {
  std::string concat;  // the removed Concat node's name
  std::string conv;    // the replaced Conv node's name
  // "conv_sum" (group 1: partial Convs over input-channel slices of the
  // weight, summed by Adds) or "group_concat" (group > 1, each input covering
  // whole groups: partial Convs over output-channel slices of the weight and
  // bias, joined by a Concat).
  std::string form;
  std::vector<std::string> inputs;   // the Concat's inputs, in order
  std::vector<int64_t> channels;     // their channel counts
  std::vector<std::string> new_ops;  // the nodes that replace the Conv, in order
  std::vector<WeightSlice> weight_slices;
};

// Sites in the order they were applied (each to the model the previous ones
// produced).
struct RewriteRecipe {
  std::vector<RewriteSite> sites;
};

}  // namespace serenity

#endif  // SERENITY_CORE_REWRITE_RECIPE_H_
