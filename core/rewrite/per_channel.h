// Per-channel ops pushed through a Concat (issue 17): an op that computes
// each channel of its output from the same channel of its data input alone
// can run on each Concat input separately,
//
//   op(concat(x_1..x_k)) = concat(op_1(x_1), ..., op_k(x_k)),
//
// where op_i is op with its per-channel parameters sliced to x_i's channels.
// The Concat -> Conv partition (concat_conv.h) uses this to reach Convs that
// read a Concat through BatchNormalization, Relu and the like.
#ifndef SERENITY_CORE_REWRITE_PER_CHANNEL_H_
#define SERENITY_CORE_REWRITE_PER_CHANNEL_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "core/rewrite/pattern.h"
#include "onnx/onnx_pb.h"

namespace serenity {

// True when `node` (default domain, one output) treats channels
// independently with `data` as its data input and every other input an
// constant (an initializer or a Constant node's output) or empty:
// element-wise unary ops (Relu, Sigmoid, Clip, ...), BatchNormalization in
// inference mode, Add/Sub/Mul/Div/PRelu/Pow with a constant operand,
// pooling (MaxPool, AveragePool, LpPool and their Global forms), and a
// Slice that leaves the channel axis whole (its axes constant says so, or,
// without its data, the shapes the model states keep the channel count and
// its steps are known to be positive). Binary ops with opset < 7
// broadcasting (broadcast or axis attributes) are not.
// `data` must be read exactly once. Whether a constant's shape really is
// per-channel is checked by PartOfPerChannelOp.
// A Slice whose steps have no data at all (a stripped model) counts when
// the stated shapes keep the channel count; then `assumption` (if not null)
// says so, for the reply: the recipe applied to the model with its data
// checks the steps. `rank_hint` (0: none) is the data's rank when the model
// states no shape for it (the rank of the Convs' weights the data reaches),
// for a Slice's negative axes.
bool IsPerChannelOp(const onnx::NodeProto& node, const std::string& data, const onnx::GraphProto& graph,
                    const ModelIndex& index, std::string* assumption = nullptr, int rank_hint = 0);

// Makes a slice of initializer `source` along `axis`, [begin, end), and
// returns the new initializer's name.
using SliceWeight =
    std::function<absl::StatusOr<std::string>(const onnx::TensorProto& source, int axis, int64_t begin, int64_t end)>;

// The copy of per-channel op `node` (IsPerChannelOp with data input `data`)
// for channels [begin, end) of its `channels` channels, reading `input`
// instead of `data`, named `name`, writing `output`. The data has rank
// `rank` (channels on axis 1). A constant operand is kept whole when it
// broadcasts along the channel axis (no such axis, or size 1 there) and
// sliced with `slice` when it has `channels` there; BatchNormalization's
// four parameters are sliced. FailedPrecondition for a constant of another
// size on the channel axis or a parameter that is no initializer.
absl::StatusOr<onnx::NodeProto> PartOfPerChannelOp(const onnx::NodeProto& node, const onnx::GraphProto& graph,
                                                   const ModelIndex& index, const std::string& data, int rank,
                                                   int64_t channels, int64_t begin, int64_t end,
                                                   const std::string& input, const std::string& name,
                                                   const std::string& output, const SliceWeight& slice);

}  // namespace serenity

#endif  // SERENITY_CORE_REWRITE_PER_CHANNEL_H_
