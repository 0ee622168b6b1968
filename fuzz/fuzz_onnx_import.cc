// libFuzzer target: bytes as a serialized ONNX ModelProto -> OnnxToGraphSpec
// -> Graph::Build -> (small graphs) PlanGraph, checking the order.
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/graph/graph.h"
#include "core/onnx/onnx_import.h"
#include "fuzz/fuzz_plan_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<serenity::GraphSpec> spec = serenity::OnnxToGraphSpec(bytes, serenity::OnnxImportOptions());
  if (!spec.ok()) return 0;
  absl::StatusOr<serenity::Graph> graph = serenity::Graph::Build(*std::move(spec));
  if (!graph.ok()) return 0;
  serenity::FuzzPlanAndCheck(*graph);
  return 0;
}
