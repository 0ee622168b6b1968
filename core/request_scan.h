// The shape of a serialized request (how many ops, tensors, names...) read
// from its wire format without building the message, so a server can refuse
// or queue a request by its size before it spends memory parsing it and
// building its graph (issue 14). The walk reads each byte at most once,
// keeps no copy and allocates nothing per op.
#ifndef SERENITY_CORE_REQUEST_SCAN_H_
#define SERENITY_CORE_REQUEST_SCAN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace serenity {

// What a PlanRequest carries, counted on the wire. For a Graph message the
// counts equal the parsed message's (ops_size(), tensors_size(), ...). For
// an ONNX model they count the ModelProto's graph: ops = graph.node,
// tensors = initializer + sparse_initializer + input + the outputs of all
// nodes (an upper bound of the distinct tensors the import makes: a graph
// input that is also an initializer is counted twice).
struct RequestShape {
  // Size of the serialized message scanned (a ScoreRequest's whole size).
  int64_t wire_bytes = 0;
  // True when the model is onnx_model bytes, false for a Graph (or none).
  bool onnx = false;
  // Graph.ops / GraphProto.node entries.
  int64_t ops = 0;
  // Graph.tensors entries / the ONNX upper bound above.
  int64_t tensors = 0;
  // Graph.inputs and Graph.outputs / GraphProto.input and output entries.
  int64_t graph_inputs = 0;
  int64_t graph_outputs = 0;
  // Tensor names referenced by ops: Op.inputs and Op.outputs /
  // NodeProto.input and output entries.
  int64_t op_inputs = 0;
  int64_t op_outputs = 0;
  // Graph: Tensor.shape entries. ONNX: 0 (shapes come from shape inference).
  int64_t shape_dims = 0;
  // Total length of the graph's strings: graph, op, tensor and value names,
  // op types, and the names ops and the graph's input and output lists
  // refer to.
  int64_t name_bytes = 0;
  // ONNX only: length of the onnx_model bytes, GraphProto.initializer plus
  // sparse_initializer entries, GraphProto.value_info entries, and the
  // bytes of initializer payloads (the data fields of dense initializers on
  // the wire: raw_data, float_data, int32_data, string_data, int64_data,
  // double_data, uint64_data; whole sparse initializers). Payloads are
  // stripped before planning but parsed (copied) with the model.
  int64_t onnx_model_bytes = 0;
  int64_t onnx_initializers = 0;
  int64_t onnx_value_infos = 0;
  int64_t onnx_initializer_bytes = 0;
  // PlanOptions.dim_values + PlanOptions.workspace_bytes entries.
  int64_t option_entries = 0;
  // GivenOrder.indices + GivenOrder.names entries.
  int64_t given_order = 0;
};

// Scans a serialized serenity.v1.PlanRequest. Every byte is checked as the
// protobuf parser would check its structure (tags, wire types, lengths,
// groups and their nesting, the fields walked into); InvalidArgument "the
// request is not a valid serenity.v1.PlanRequest message: ..." otherwise,
// and when the onnx_model bytes are not a valid ONNX ModelProto. Never reads
// outside `bytes`. Inputs the full parse still refuses may pass the scan:
// strings are not checked for UTF-8, and fields that are not walked into
// (options other than the two maps, ONNX attributes, types, functions) are
// only checked to be well framed. Repeated `graph` fields merge and a later
// `onnx_model` replaces an earlier model, as in the parser.
absl::StatusOr<RequestShape> ScanPlanRequest(absl::string_view bytes);

// Scans a serialized serenity.v1.ScoreRequest: the shape of its `request`
// (a PlanRequest; an empty shape without one); wire_bytes is the whole
// ScoreRequest's size. InvalidArgument "the request is not a valid
// serenity.v1.ScoreRequest message: ..." for bad wire data.
absl::StatusOr<RequestShape> ScanScoreRequest(absl::string_view bytes);

// The memory a job needs to hold the received bytes, parse the request,
// build its graph and plan it, in bytes (n = ops, t = tensors, r = op
// inputs + outputs, s = name_bytes, w = wire_bytes):
//   1 MiB + 3 w + 1000 n + 300 t + 64 r + 5 s    message, GraphSpec, Graph
// (3 w: the received bytes, their contiguous copy when they came in several
// slices, and unknown fields the parsed message keeps; the measurements
// below had w once)
//   + 16 n ceil(n / 64)                          reachability bitsets (n^2/4)
//   + 1000 n + 500 t                             planner buffers
//   + 3 onnx_model_bytes + 1500 n for ONNX       (not calibrated)
// Measured with bench/request_memory.cc (peak live heap from every
// operator new, usable size + 8; and peak RSS growth) on Graph requests of
// chains, fan-outs and testing::RandomDag, names of 7-9 or 40 characters:
// the first line is 1.07-1.10 x the heap peak of ParseFromString +
// GraphFromRequest at 10^6 ops (1.49 GB chain, 1.52 GB fan-out, 1.70 GB
// random; 2.27 / 2.46 GB with 40-character names) and 1.1-1.8 x at 10^3.
// With planning (algorithm baseline) the whole is 1.24-2.0 x the peak for
// chains (131.6 MB at 20,000 ops) and fan-outs at 20,000 ops. NOT covered,
// so NOT an upper bound there: the arena planner's co-live lists (up to
// 4,000,000 pairs, about 64 MB; fan-outs of 10^3-10^4 ops measured 2-2.3 x
// the estimate), further per-live-tensor state on graphs with many
// long-lived tensors (RandomDag: 13.2 MB at 10^3 ops, 716 MB at 10^4, 3-15 x
// the estimate; not yet traced), and the search memo (capped by
// PlanOptions.max_search_states). Saturates at INT64_MAX.
int64_t EstimatePlanningBytes(const RequestShape& shape);

// The first and ONNX lines of EstimatePlanningBytes alone: the received
// bytes, the parsed message and the built graph, which the planner's memory
// account (core/util/memory_account.h) does not see. The rest of planning
// memory is charged to that account as it is allocated.
int64_t EstimateBuildBytes(const RequestShape& shape);

}  // namespace serenity

#endif  // SERENITY_CORE_REQUEST_SCAN_H_
