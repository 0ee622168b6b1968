// libFuzzer target: bytes as a serialized serenity.v1.Graph message ->
// GraphSpecFromProto -> Graph::Build -> (small graphs) PlanGraph, checking
// the order.
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/plan_proto.h"
#include "fuzz/fuzz_plan_check.h"
#include "serenity/v1/graph.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  serenity::v1::Graph message;
  if (size > static_cast<size_t>(INT32_MAX) || !message.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<serenity::Graph> graph = serenity::Graph::Build(serenity::GraphSpecFromProto(message));
  if (!graph.ok()) return 0;
  serenity::FuzzPlanAndCheck(*graph);
  return 0;
}
