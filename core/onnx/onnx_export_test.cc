#include "core/onnx/onnx_export.h"

#include "core/onnx/onnx_import.h"
#include "core/plan_request.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "tests/testing/orders.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

TEST(OnnxExportTest, ReordersNodesAndRecordsOffsets) {
  for (const char* name :
       {"darts_v2_cifar10_normal_cell", "randwire_ws_cifar10_stage1", "nasnet_a_cifar10_normal_cell"}) {
    SCOPED_TRACE(name);
    const bool slices = std::string(name).rfind("nasnet", 0) == 0;
    const std::string bytes = testing::ReadFile(std::string(SERENITY_SHARED_DIR "/bench/models/") + name + ".onnx");
    v1::PlanRequest request;
    request.set_onnx_model(bytes);
    request.mutable_options()->mutable_memory_model()->set_concat_in_place(slices);
    absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
    ASSERT_TRUE(plan.ok()) << plan.status();
    absl::StatusOr<std::string> exported = ExportOrderedModel(bytes, *plan);
    ASSERT_TRUE(exported.ok()) << exported.status();

    onnx::ModelProto original, model;
    ASSERT_TRUE(original.ParseFromString(bytes));
    ASSERT_TRUE(model.ParseFromString(*exported));
    ASSERT_EQ(model.graph().node_size(), original.graph().node_size());
    for (int t = 0; t < plan->order_size(); ++t) {
      EXPECT_EQ(model.graph().node(t).SerializeAsString(), original.graph().node(plan->order(t)).SerializeAsString());
    }
    EXPECT_EQ(model.graph().initializer_size(), original.graph().initializer_size());
    // The exported model imports and its file order is the plan's order.
    absl::StatusOr<Graph> reimported = ImportOnnxModel(*exported, {});
    ASSERT_TRUE(reimported.ok());
    v1::PlanRequest again;
    again.set_onnx_model(*exported);
    again.mutable_options()->set_algorithm("file_order");
    again.mutable_options()->mutable_memory_model()->set_concat_in_place(slices);
    absl::StatusOr<v1::Plan> replanned = ExecutePlanRequest(again);
    ASSERT_TRUE(replanned.ok());
    EXPECT_EQ(replanned->peak_bytes(), plan->peak_bytes());
    // Every activation buffer has its offset in the metadata.
    std::map<std::string, std::string> props;
    for (const auto& entry : model.metadata_props()) props[entry.key()] = entry.value();
    EXPECT_EQ(props.at("serenity.arena_size_bytes"), std::to_string(plan->arena().size_bytes()));
    EXPECT_EQ(props.at("serenity.peak_bytes"), std::to_string(plan->peak_bytes()));
    for (const v1::ArenaBuffer& b : plan->arena().buffers()) {
      EXPECT_EQ(props.at("serenity.offset/" + b.tensor()), std::to_string(b.offset()));
      // A later slice sits right after the slices before it, from the
      // offset its Concat output is recorded at.
      if (!b.slice_of().empty()) {
        EXPECT_EQ(std::stoll(props.at("serenity.offset/" + b.slice_of())) + b.slice_offset(), b.offset());
      }
    }
    EXPECT_EQ(props.at("serenity.memory_model"),
              std::string("alias_views=0,count_weights=0,in_place=0,concat_in_place=") + (slices ? "1" : "0"));
  }
}

TEST(OnnxExportTest, RejectsAPlanOfAnotherModel) {
  const std::string bytes = testing::ReadFile(SERENITY_SHARED_DIR "/bench/models/darts_v2_cifar10_reduce_cell.onnx");
  v1::Plan plan;
  plan.add_order(0);
  EXPECT_THAT(ExportOrderedModel(bytes, plan).status().message(), HasSubstr("nodes"));
  EXPECT_EQ(ExportOrderedModel("junk", plan).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace serenity
