// Export of a planned ONNX model: the original model (weights untouched)
// with its nodes in the planned order and the arena plan in metadata_props.
#ifndef SERENITY_CORE_ONNX_ONNX_EXPORT_H_
#define SERENITY_CORE_ONNX_ONNX_EXPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// Returns `model_bytes` with graph.node permuted into plan.order and these
// metadata_props (replacing earlier serenity.* entries):
//   serenity.peak_bytes, serenity.arena_size_bytes, serenity.alignment
//   serenity.memory_model           "alias_views=0,count_weights=0,in_place=0,
//                                   concat_in_place=0" (each 0 or 1)
//   serenity.offset/<tensor>        arena offset of every activation buffer
//                                   (tensors that share it: its offset; an
//                                   in-place Concat's output: its first
//                                   slice's, the slices following it)
//   serenity.workspace_offset/<op>  arena offset of an op's workspace
// Nodes of the serenity domain (core/onnx/serenity_ops.h) keep it: its
// opset import (domain "serenity", version 1) is kept, or added when a model
// uses the domain without one, and the checker validates them against their
// registered schemas. The result passes onnx::checker::check_model (external weight files are
// referenced, not read, so they need not exist; initializers without data,
// such as a rewrite's slices of a stripped weight, are checked as typed
// inputs, like external ones). InvalidArgument when the
// bytes do not parse, the plan does not match the model's node count, or the
// checker rejects the result.
absl::StatusOr<std::string> ExportOrderedModel(absl::string_view model_bytes, const v1::Plan& plan);

}  // namespace serenity

#endif  // SERENITY_CORE_ONNX_ONNX_EXPORT_H_
