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

// One Conv of a site and how it was split.
struct ConvSplit {
  std::string conv;
  // "conv_sum" (group 1: partial Convs "<conv>/part<i>" over input-channel
  // slices of the weight, the first with the bias, summed by Adds
  // "<conv>/sum<i>"), "conv_accumulate" (group 1: part0 a Conv, the others
  // serenity.ConvAccumulate ops adding into one buffer), "group_concat" (1 < group < channels, each input
  // covering whole groups: partial Convs over output-channel slices of
  // weight and bias joined by a Concat "<conv>/concat"), or "kernel_wise"
  // (depthwise, group = channels: as group_concat, each input's kernels).
  std::string form;
};

// One rewritten site: a Concat whose output reaches only Convs, directly or
// through per-channel ops (pattern.h). Or, form "add_order" (add_chain.h),
// a sum whose operands are added in another order: `conv` names the node
// that wrote the sum, `inputs` are the operands in the new order, and
// concat, channels, weight_slices, pushed and splits are empty.
struct RewriteSite {
  std::string concat;                // the removed Concat node's name
  std::string conv;                  // splits[0].conv
  std::string form;                  // splits[0].form
  std::vector<std::string> inputs;   // the Concat's inputs, in order
  std::vector<int64_t> channels;     // their channel counts
  std::vector<std::string> new_ops;  // the nodes that replace the removed ones, in order
  std::vector<WeightSlice> weight_slices;
  // The per-channel ops pushed through the Concat (each replaced by one copy
  // "<op>/part<i>" per input), producers first.
  std::vector<std::string> pushed;
  std::vector<ConvSplit> splits;  // every Conv split, in node order
  // The order group-1 Convs chain their parts in (indices of `inputs`).
  std::vector<int> chain;
  // What the site took on trust in a stripped model (e.g. a Slice's steps
  // without data taken as positive); ApplyRecipe checks it on a model with
  // the data.
  std::vector<std::string> assumptions;
};

// Sites in the order they were applied (each to the model the previous ones
// produced).
struct RewriteRecipe {
  std::vector<RewriteSite> sites;
};

}  // namespace serenity

#endif  // SERENITY_CORE_REWRITE_RECIPE_H_
