// Concat -> Conv channel-wise partition (issue 17):
//
//   conv(concat(x_1..x_k), W, b) = sum_i conv(x_i, W_i) + b
//
// with W_i = W[:, c_i:c_i+n_i] (the input-channel slice x_i meets). A site
// (pattern.h) is a Concat whose output reaches Convs only, directly or
// through per-channel ops (per_channel.h): each per-channel op is copied per
// Concat input, "<op>/part<i>", with its parameters sliced, and each Conv is
// split. The Concat and the replaced ops disappear.
//
// A Conv of group 1, standard form (form "conv_sum"): k partial Convs
// "<conv>/part<i>" (i the Concat input; the first in the chain order
// carries the bias) and a chain of Adds "<conv>/sum<j>" (j = 1..k-1, sum<j>
// adds the j-th part of the chain to the running sum; the last writes the
// Conv's output), in the order first part, second part, sum1, third part,
// sum2, ..., so that each x_i can be freed as soon as its partial is done.
// Accumulate form (RewriteForm::kAccumulate, form "conv_accumulate"): the
// first part is a Conv, each later one a serenity.ConvAccumulate(x_i, W_i,
// previous part) whose output is written into its accumulator's buffer
// (core/onnx/serenity_ops.h), the last writing the Conv's output; the model
// then imports the "serenity" opset, version 1.
//
// Grouped convolutions (1 < group < input channels) are split along whole
// groups only: x_i meets groups [g_i, g_i + n_i/(C/group)) and nothing else,
// so its partial Conv (group n_i/(C/group)) computes the output channels of
// those groups, with the output-channel slice of W and of the bias; the
// partials are then joined by a Concat "<conv>/concat" (form
// "group_concat"). Depthwise convolutions (group = input channels) are the
// kernel-wise partition, the same with each input's kernels (form
// "kernel_wise"). Both forms write these the same way.
//
// Weights: each slice is a new initializer "<W>/<op>/part<i>" (a suffix is
// added while a name is taken). A weight with data is sliced (raw_data by
// the element size of its type; float, double, int32, int64 and uint64
// typed fields element by element); a weight without data (stripped, or
// stored as external data) gives sliced initializers with dims only, so the
// model still imports and plans. An original weight is removed when nothing
// else reads it.
#ifndef SERENITY_CORE_REWRITE_CONCAT_CONV_H_
#define SERENITY_CORE_REWRITE_CONCAT_CONV_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/plan_options.h"
#include "core/rewrite/pattern.h"
#include "core/rewrite/recipe.h"
#include "onnx/onnx_pb.h"

namespace serenity {

// Rewrites `site` of `model` (found by FindConcatConvSites on it), whose
// Concat inputs have `channels` channels each, and returns what was done.
// FailedPrecondition naming the reason, with `model` unchanged, when the
// site cannot be rewritten: fewer than two inputs, `channels` not matching
// the inputs or the weight, a weight that is no initializer or has rank
// below 3, Convs of different ranks, an input covering part of a group, a
// per-channel constant of another channel count, a grouped
// Conv's bias that is no initializer, or weight data that cannot be sliced
// (strings, sizes that do not match the dims).
// `chain` orders the partial Convs of a group-1 Conv (indices of the Concat
// inputs; empty: as the Concat lists them): the first carries the bias, and
// the sum (or accumulation) adds the others in that order, so a caller can
// chain them in the order its schedule makes the inputs. InvalidArgument
// when `chain` is no permutation of the inputs.
// `index`, when given, is ModelIndex::Build of `model`'s graph as it is
// (the caller's, so that it is not built again); stale afterwards.
absl::StatusOr<RewriteSite> ApplyConcatConv(onnx::ModelProto* model, const ConcatConvSite& site,
                                            const std::vector<int64_t>& channels,
                                            RewriteForm form = RewriteForm::kStandard,
                                            const std::vector<int>& chain = {}, const ModelIndex* index = nullptr);

// Returns `slice` of `source`: dims[axis] = end - begin and, when `source`
// has data, the elements whose index along `axis` lies in [begin, end).
// FailedPrecondition for data that cannot be sliced; InvalidArgument for an
// axis or range outside the dims.
absl::StatusOr<onnx::TensorProto> SliceInitializer(const onnx::TensorProto& source, int axis, int64_t begin,
                                                   int64_t end, const std::string& name);

// Applies `recipe` (made by the planner for the same model, possibly
// stripped of its weights) to the serialized model `model_bytes`:
// NameNodesAsImporter, then each site in order, found by its Concat's and
// Conv's names. Weights with data are sliced. InvalidArgument when the
// bytes do not parse or the recipe does not match the model (a node
// missing, other inputs, other new names).
absl::StatusOr<std::string> ApplyRecipe(absl::string_view model_bytes, const RewriteRecipe& recipe);

}  // namespace serenity

#endif  // SERENITY_CORE_REWRITE_CONCAT_CONV_H_
