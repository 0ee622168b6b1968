#include "core/request_scan.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/graph/reachability.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {
namespace {

using ::google::protobuf::internal::WireFormatLite;
using ::google::protobuf::io::CodedInputStream;

// Field numbers of onnx.proto (ONNX 1.12; request_scan_test checks them
// against the generated onnx:: classes). core/request_scan does not link
// the ONNX library.
namespace onnx_field {
constexpr int kModelGraph = 7;               // ModelProto.graph
constexpr int kGraphNode = 1;                // GraphProto.node
constexpr int kGraphName = 2;                // GraphProto.name
constexpr int kGraphInitializer = 5;         // GraphProto.initializer
constexpr int kGraphSparseInitializer = 15;  // GraphProto.sparse_initializer
constexpr int kGraphInput = 11;              // GraphProto.input
constexpr int kGraphOutput = 12;             // GraphProto.output
constexpr int kGraphValueInfo = 13;          // GraphProto.value_info
constexpr int kNodeInput = 1;                // NodeProto.input
constexpr int kNodeOutput = 2;               // NodeProto.output
constexpr int kNodeName = 3;                 // NodeProto.name
constexpr int kNodeOpType = 4;               // NodeProto.op_type
constexpr int kValueInfoName = 1;            // ValueInfoProto.name
constexpr int kTensorName = 8;               // TensorProto.name
// TensorProto data fields: float_data, int32_data, string_data, int64_data,
// raw_data, double_data, uint64_data.
constexpr int kTensorDataFields[] = {4, 5, 6, 7, 9, 10, 11};
}  // namespace onnx_field

// Walks one message of a known type. Each walker reads tags until the end
// of the current limit; a field it does not walk into is skipped (checked
// for framing only). Returns false on malformed data, with `why` set.
class Scanner {
 public:
  Scanner(absl::string_view bytes, RequestShape* shape)
      : input_(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size())), shape_(shape) {}

  CodedInputStream& input() { return input_; }
  const std::string& why() const { return why_; }

  bool ScoreRequest();
  bool PlanRequest();

 private:
  // A walker of the message body up to the current limit.
  using Body = bool (Scanner::*)();

  // Reads the length of a length-delimited field and checks that it fits
  // in what is left of the enclosing message.
  bool ReadLength(uint32_t* length) {
    if (!input_.ReadVarint32(length)) return Fail("a length is cut short");
    const int left = input_.BytesUntilLimit();
    if (left < 0 || *length > static_cast<uint32_t>(left)) return Fail("a length runs past the end of its message");
    return true;
  }
  // Skips a length-delimited field's payload, adding its length to `*sum`.
  bool SkipBytes(int64_t* sum = nullptr) {
    uint32_t length;
    if (!ReadLength(&length)) return false;
    if (sum != nullptr) *sum += length;
    return input_.Skip(static_cast<int>(length)) || Fail("a string is cut short");
  }
  // Walks a length-delimited sub-message with `body`.
  bool Message(Body body) {
    uint32_t length;
    if (!ReadLength(&length)) return false;
    if (!input_.IncrementRecursionDepth()) return Fail("messages are nested too deeply");
    const CodedInputStream::Limit limit = input_.PushLimit(static_cast<int>(length));
    const bool ok = (this->*body)();
    input_.PopLimit(limit);
    input_.DecrementRecursionDepth();
    return ok;
  }
  // Reads the next tag: 0 at the end of the current message (true), or a
  // tag (true), or malformed data (false).
  bool NextTag(uint32_t* tag) {
    *tag = input_.ReadTag();
    if (*tag != 0) return WireFormatLite::GetTagFieldNumber(*tag) != 0 || Fail("a field has number 0");
    if (input_.BytesUntilLimit() == 0 && input_.ConsumedEntireMessage()) return true;
    return Fail("a field tag is invalid or cut short");
  }
  bool Skip(uint32_t tag) {
    if (WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_END_GROUP) {
      return Fail("a group ends that was not started");
    }
    return WireFormatLite::SkipField(&input_, tag) || Fail(absl::StrCat("field ", tag >> 3, " is malformed"));
  }
  bool Fail(std::string why) {
    if (why_.empty()) why_ = std::move(why);
    return false;
  }
  static bool Delimited(uint32_t tag) {
    return WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
  }

  bool Graph();
  bool GraphOp();
  bool GraphTensor();
  bool Options();
  bool GivenOrder();
  bool OnnxModel();
  bool OnnxGraph();
  bool OnnxNode();
  bool OnnxValueInfo();
  bool OnnxTensor();
  bool Packed(int64_t* count);
  // A repeated varint field's entry under `tag`, packed or not: counts its
  // values in `count` (a wrong wire type is an unknown field, skipped).
  bool RepeatedVarint(uint32_t tag, int64_t* count);

  CodedInputStream input_;
  RequestShape* shape_;
  std::string why_;
};

bool Scanner::RepeatedVarint(uint32_t tag, int64_t* count) {
  if (Delimited(tag)) return Packed(count);
  // An unpacked value is one entry.
  if (WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_VARINT) ++*count;
  return Skip(tag);
}

// A packed repeated varint field: counts the values (bytes without the
// continuation bit).
bool Scanner::Packed(int64_t* count) {
  uint32_t length;
  if (!ReadLength(&length)) return false;
  const void* data;
  int size;
  uint32_t left = length;
  uint8_t last = 0;
  while (left > 0) {
    if (!input_.GetDirectBufferPointer(&data, &size)) return Fail("a packed field is cut short");
    const int n = static_cast<int>(std::min<uint32_t>(left, static_cast<uint32_t>(size)));
    const uint8_t* p = static_cast<const uint8_t*>(data);
    for (int i = 0; i < n; ++i) *count += (p[i] & 0x80) == 0;
    last = p[n - 1];
    input_.Skip(n);
    left -= static_cast<uint32_t>(n);
  }
  return length == 0 || (last & 0x80) == 0 || Fail("a packed field ends inside a value");
}

bool Scanner::ScoreRequest() {
  for (uint32_t tag; NextTag(&tag);) {
    if (tag == 0) return true;
    if (WireFormatLite::GetTagFieldNumber(tag) == v1::ScoreRequest::kRequestFieldNumber && Delimited(tag)) {
      // Repeated occurrences merge into one PlanRequest: same shape.
      if (!Message(&Scanner::PlanRequest)) return false;
    } else if (!Skip(tag)) {
      return false;
    }
  }
  return false;
}

bool Scanner::PlanRequest() {
  for (uint32_t tag; NextTag(&tag);) {
    if (tag == 0) return true;
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    bool ok;
    if (!Delimited(tag)) {
      ok = Skip(tag);
    } else if (field == v1::PlanRequest::kGraphFieldNumber) {
      if (shape_->onnx) {  // the oneof switches to a new, empty Graph
        RequestShape fresh;
        fresh.option_entries = shape_->option_entries;
        fresh.given_order = shape_->given_order;
        *shape_ = fresh;
      }
      ok = Message(&Scanner::Graph);
    } else if (field == v1::PlanRequest::kOnnxModelFieldNumber) {
      // A later model replaces the earlier one (Graph or ONNX).
      RequestShape fresh;
      fresh.option_entries = shape_->option_entries;
      fresh.given_order = shape_->given_order;
      fresh.onnx = true;
      *shape_ = fresh;
      uint32_t length;
      ok = ReadLength(&length);
      if (ok) {
        shape_->onnx_model_bytes = length;
        const CodedInputStream::Limit limit = input_.PushLimit(static_cast<int>(length));
        ok = OnnxModel();
        input_.PopLimit(limit);
        if (!ok) {
          why_ = absl::StrCat("onnx_model is not a valid ONNX ModelProto: ", why_);
        }
      }
    } else if (field == v1::PlanRequest::kOptionsFieldNumber) {
      ok = Message(&Scanner::Options);
    } else if (field == v1::PlanRequest::kGivenOrderFieldNumber) {
      ok = Message(&Scanner::GivenOrder);
    } else {
      ok = Skip(tag);
    }
    if (!ok) return false;
  }
  return false;
}

bool Scanner::Graph() {
  for (uint32_t tag; NextTag(&tag);) {
    if (tag == 0) return true;
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    bool ok;
    if (!Delimited(tag)) {
      ok = Skip(tag);
    } else if (field == v1::Graph::kOpsFieldNumber) {
      ++shape_->ops;
      ok = Message(&Scanner::GraphOp);
    } else if (field == v1::Graph::kTensorsFieldNumber) {
      ++shape_->tensors;
      ok = Message(&Scanner::GraphTensor);
    } else if (field == v1::Graph::kInputsFieldNumber) {
      ++shape_->graph_inputs;
      ok = SkipBytes(&shape_->name_bytes);
    } else if (field == v1::Graph::kOutputsFieldNumber) {
      ++shape_->graph_outputs;
      ok = SkipBytes(&shape_->name_bytes);
    } else if (field == v1::Graph::kNameFieldNumber) {
      ok = SkipBytes(&shape_->name_bytes);
    } else {
      ok = Skip(tag);
    }
    if (!ok) return false;
  }
  return false;
}

bool Scanner::GraphOp() {
  for (uint32_t tag; NextTag(&tag);) {
    if (tag == 0) return true;
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    bool ok;
    if (!Delimited(tag)) {
      ok = Skip(tag);
    } else if (field == v1::Op::kInputsFieldNumber) {
      ++shape_->op_inputs;
      ok = SkipBytes(&shape_->name_bytes);
    } else if (field == v1::Op::kOutputsFieldNumber) {
      ++shape_->op_outputs;
      ok = SkipBytes(&shape_->name_bytes);
    } else if (field == v1::Op::kNameFieldNumber || field == v1::Op::kTypeFieldNumber) {
      ok = SkipBytes(&shape_->name_bytes);
    } else {
      ok = Skip(tag);
    }
    if (!ok) return false;
  }
  return false;
}

bool Scanner::GraphTensor() {
  for (uint32_t tag; NextTag(&tag);) {
    if (tag == 0) return true;
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    bool ok;
    if (field == v1::Tensor::kShapeFieldNumber) {
      ok = RepeatedVarint(tag, &shape_->shape_dims);
    } else if (field == v1::Tensor::kNameFieldNumber && Delimited(tag)) {
      ok = SkipBytes(&shape_->name_bytes);
    } else {
      ok = Skip(tag);
    }
    if (!ok) return false;
  }
  return false;
}

bool Scanner::Options() {
  for (uint32_t tag; NextTag(&tag);) {
    if (tag == 0) return true;
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    if (Delimited(tag) &&
        (field == v1::PlanOptions::kDimValuesFieldNumber || field == v1::PlanOptions::kWorkspaceBytesFieldNumber)) {
      ++shape_->option_entries;
      if (!SkipBytes(&shape_->name_bytes)) return false;
    } else if (!Skip(tag)) {
      return false;
    }
  }
  return false;
}

bool Scanner::GivenOrder() {
  for (uint32_t tag; NextTag(&tag);) {
    if (tag == 0) return true;
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    bool ok;
    if (field == v1::GivenOrder::kIndicesFieldNumber) {
      ok = RepeatedVarint(tag, &shape_->given_order);
    } else if (field == v1::GivenOrder::kNamesFieldNumber && Delimited(tag)) {
      ++shape_->given_order;
      ok = SkipBytes(&shape_->name_bytes);
    } else {
      ok = Skip(tag);
    }
    if (!ok) return false;
  }
  return false;
}

bool Scanner::OnnxModel() {
  for (uint32_t tag; NextTag(&tag);) {
    if (tag == 0) return true;
    if (WireFormatLite::GetTagFieldNumber(tag) == onnx_field::kModelGraph && Delimited(tag)) {
      // Repeated occurrences merge: their nodes add up.
      if (!Message(&Scanner::OnnxGraph)) return false;
    } else if (!Skip(tag)) {
      return false;
    }
  }
  return false;
}

bool Scanner::OnnxGraph() {
  for (uint32_t tag; NextTag(&tag);) {
    if (tag == 0) return true;
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    bool ok;
    if (!Delimited(tag)) {
      ok = Skip(tag);
    } else if (field == onnx_field::kGraphNode) {
      ++shape_->ops;
      ok = Message(&Scanner::OnnxNode);
    } else if (field == onnx_field::kGraphInitializer) {
      ++shape_->onnx_initializers;
      ++shape_->tensors;
      ok = Message(&Scanner::OnnxTensor);
    } else if (field == onnx_field::kGraphSparseInitializer) {
      ++shape_->onnx_initializers;
      ++shape_->tensors;
      ok = SkipBytes(&shape_->onnx_initializer_bytes);
    } else if (field == onnx_field::kGraphInput) {
      ++shape_->graph_inputs;
      ++shape_->tensors;
      ok = Message(&Scanner::OnnxValueInfo);
    } else if (field == onnx_field::kGraphOutput) {
      ++shape_->graph_outputs;
      ok = Message(&Scanner::OnnxValueInfo);
    } else if (field == onnx_field::kGraphValueInfo) {
      ++shape_->onnx_value_infos;
      ok = Message(&Scanner::OnnxValueInfo);
    } else if (field == onnx_field::kGraphName) {
      ok = SkipBytes(&shape_->name_bytes);
    } else {
      ok = Skip(tag);
    }
    if (!ok) return false;
  }
  return false;
}

bool Scanner::OnnxNode() {
  for (uint32_t tag; NextTag(&tag);) {
    if (tag == 0) return true;
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    bool ok;
    if (!Delimited(tag)) {
      ok = Skip(tag);
    } else if (field == onnx_field::kNodeInput) {
      ++shape_->op_inputs;
      ok = SkipBytes(&shape_->name_bytes);
    } else if (field == onnx_field::kNodeOutput) {
      ++shape_->op_outputs;
      ++shape_->tensors;
      ok = SkipBytes(&shape_->name_bytes);
    } else if (field == onnx_field::kNodeName || field == onnx_field::kNodeOpType) {
      ok = SkipBytes(&shape_->name_bytes);
    } else {
      ok = Skip(tag);
    }
    if (!ok) return false;
  }
  return false;
}

bool Scanner::OnnxValueInfo() {
  for (uint32_t tag; NextTag(&tag);) {
    if (tag == 0) return true;
    const bool ok = WireFormatLite::GetTagFieldNumber(tag) == onnx_field::kValueInfoName && Delimited(tag)
                        ? SkipBytes(&shape_->name_bytes)
                        : Skip(tag);
    if (!ok) return false;
  }
  return false;
}

bool Scanner::OnnxTensor() {
  for (uint32_t tag; NextTag(&tag);) {
    if (tag == 0) return true;
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    bool data = false;
    for (int f : onnx_field::kTensorDataFields) data = data || f == field;
    bool ok;
    if (field == onnx_field::kTensorName && Delimited(tag)) {
      ok = SkipBytes(&shape_->name_bytes);
    } else if (data) {
      const int before = input_.CurrentPosition();
      ok = Skip(tag);
      shape_->onnx_initializer_bytes += input_.CurrentPosition() - before;
    } else {
      ok = Skip(tag);
    }
    if (!ok) return false;
  }
  return false;
}

// Runs `walk` over all of `bytes`.
absl::StatusOr<RequestShape> Scan(absl::string_view bytes, bool (Scanner::*walk)(), absl::string_view type) {
  auto invalid = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("the request is not a valid ", type, " message: ", why));
  };
  if (bytes.size() > static_cast<size_t>(INT_MAX)) return invalid("it is 2 GiB or more");
  RequestShape shape;
  Scanner scanner(bytes, &shape);
  // A limit at the end makes BytesUntilLimit() meaningful at the top level.
  scanner.input().PushLimit(static_cast<int>(bytes.size()));
  if (!(scanner.*walk)()) return invalid(scanner.why());
  shape.wire_bytes = static_cast<int64_t>(bytes.size());
  return shape;
}

}  // namespace

absl::StatusOr<RequestShape> ScanPlanRequest(absl::string_view bytes) {
  return Scan(bytes, &Scanner::PlanRequest, "serenity.v1.PlanRequest");
}

absl::StatusOr<RequestShape> ScanScoreRequest(absl::string_view bytes) {
  return Scan(bytes, &Scanner::ScoreRequest, "serenity.v1.ScoreRequest");
}

namespace {

constexpr double kMaxBytes = static_cast<double>(std::numeric_limits<int64_t>::max());

int64_t Saturated(double bytes) {
  return bytes >= kMaxBytes ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(bytes);
}

// The first and ONNX lines of the estimate (see the header).
double BuildBytes(const RequestShape& shape) {
  constexpr double kFixed = 1 << 20;
  const double ops = static_cast<double>(shape.ops);
  const double tensors = static_cast<double>(shape.tensors);
  const double refs = static_cast<double>(shape.op_inputs + shape.op_outputs);
  // The received bytes, a contiguous copy of them when they came in several
  // slices, and the parsed message's copy of fields it does not know.
  double bytes = kFixed + 3 * static_cast<double>(shape.wire_bytes);
  // The parsed message, the GraphSpec and the Graph.
  bytes += 1000 * ops + 300 * tensors + 64 * refs + 5 * static_cast<double>(shape.name_bytes);
  // ONNX (not calibrated): the ModelProto parsed from the bytes and its
  // shape-inferred copy, and inference's per-node values.
  if (shape.onnx) bytes += 3 * static_cast<double>(shape.onnx_model_bytes) + 1500 * ops;
  return bytes;
}

}  // namespace

int64_t EstimateBuildBytes(const RequestShape& shape) { return Saturated(BuildBytes(shape)); }

int64_t EstimatePlanningBytes(const RequestShape& shape) {
  // Coefficients and their measurements: see the header. Saturates at
  // INT64_MAX instead of overflowing (n^2 for absurd op counts).
  const double ops = static_cast<double>(shape.ops);
  const double tensors = static_cast<double>(shape.tensors);
  double bytes = BuildBytes(shape);
  // Reachability: ancestor and descendant bitsets within the segments
  // between cut points, n * ceil(n / 64) words each for a graph of one
  // segment, never above Reachability::kMaxBitsetBytes in all.
  bytes += std::min(2 * 8 * ops * std::ceil(ops / 64), static_cast<double>(Reachability::kMaxBitsetBytes));
  // The planner's per-op and per-tensor buffers (orders, profiles, arena).
  bytes += 1000 * ops + 500 * tensors;
  return Saturated(bytes);
}

}  // namespace serenity
