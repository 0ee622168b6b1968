#include "core/onnx/onnx_export.h"

#include <climits>
#include <exception>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/onnx/serenity_ops.h"
#include "onnx/checker.h"
#include "onnx/onnx_pb.h"

namespace serenity {
namespace {

void SetProp(onnx::ModelProto& model, const std::string& key, const std::string& value) {
  onnx::StringStringEntryProto* entry = model.add_metadata_props();
  entry->set_key(key);
  entry->set_value(value);
}

}  // namespace

absl::StatusOr<std::string> ExportOrderedModel(absl::string_view model_bytes, const v1::Plan& plan) {
  onnx::ModelProto model;
  if (model_bytes.size() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromArray(model_bytes.data(), static_cast<int>(model_bytes.size()))) {
    return absl::InvalidArgumentError("not a valid ONNX model");
  }
  onnx::GraphProto* graph = model.mutable_graph();
  if (plan.order_size() != graph->node_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the plan orders ", plan.order_size(), " ops but the model has ", graph->node_size(), " nodes"));
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  std::vector<bool> taken(graph->node_size(), false);
  for (int32_t index : plan.order()) {
    if (index < 0 || index >= graph->node_size() || taken[index]) {
      return absl::InvalidArgumentError("the plan's order is not a permutation of the model's nodes");
    }
    taken[index] = true;
    *nodes.Add() = graph->node(index);
  }
  graph->mutable_node()->Swap(&nodes);
  // Ops of the serenity domain (serenity.ConvAccumulate) need its opset
  // import, kept when present and added when missing.
  bool uses_serenity = false, imports_serenity = false;
  for (const onnx::NodeProto& node : graph->node()) uses_serenity = uses_serenity || node.domain() == kSerenityDomain;
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    imports_serenity = imports_serenity || opset.domain() == kSerenityDomain;
  }
  if (uses_serenity && !imports_serenity) {
    onnx::OperatorSetIdProto* opset = model.add_opset_import();
    opset->set_domain(kSerenityDomain);
    opset->set_version(kSerenityOpsetVersion);
  }

  // Replace earlier serenity.* metadata.
  google::protobuf::RepeatedPtrField<onnx::StringStringEntryProto> kept;
  for (const onnx::StringStringEntryProto& entry : model.metadata_props()) {
    if (!absl::StartsWith(entry.key(), "serenity.")) *kept.Add() = entry;
  }
  model.mutable_metadata_props()->Swap(&kept);
  SetProp(model, "serenity.peak_bytes", absl::StrCat(plan.peak_bytes()));
  SetProp(model, "serenity.arena_size_bytes", absl::StrCat(plan.arena().size_bytes()));
  SetProp(model, "serenity.alignment", absl::StrCat(plan.arena().alignment()));
  const v1::MemoryModel& memory = plan.memory_model();
  SetProp(model, "serenity.memory_model",
          absl::StrCat("alias_views=", memory.alias_views() ? 1 : 0, ",count_weights=", memory.count_weights() ? 1 : 0,
                       ",in_place=", memory.in_place() ? 1 : 0, ",concat_in_place=", memory.concat_in_place() ? 1 : 0));
  for (const v1::ArenaBuffer& b : plan.arena().buffers()) {
    if (b.kind() == v1::BUFFER_KIND_WORKSPACE) {
      SetProp(model, absl::StrCat("serenity.workspace_offset/", b.tensor()), absl::StrCat(b.offset()));
      continue;
    }
    if (b.kind() != v1::BUFFER_KIND_TENSOR) continue;
    SetProp(model, absl::StrCat("serenity.offset/", b.tensor()), absl::StrCat(b.offset()));
    for (const std::string& alias : b.aliases()) {
      SetProp(model, absl::StrCat("serenity.offset/", alias), absl::StrCat(b.offset()));
    }
  }
  // External data files are referenced, not read: check a copy in which
  // external initializers become typed graph inputs, so a model shipped
  // without its weight files (as in ../shared/bench) can be checked too.
  // So do initializers with no data at all: the weight slices a rewrite
  // (core/rewrite/concat_conv.h) made of a stripped or external weight.
  onnx::ModelProto checked = model;
  google::protobuf::RepeatedPtrField<onnx::TensorProto> internal;
  for (const onnx::TensorProto& init : checked.graph().initializer()) {
    const bool no_data = init.raw_data().empty() && init.float_data_size() == 0 && init.int32_data_size() == 0 &&
                         init.string_data_size() == 0 && init.int64_data_size() == 0 && init.double_data_size() == 0 &&
                         init.uint64_data_size() == 0;
    int64_t elements = 1;
    for (int64_t d : init.dims()) elements *= d;
    if (init.data_location() != onnx::TensorProto::EXTERNAL && !(no_data && elements > 0)) {
      *internal.Add() = init;
      continue;
    }
    bool listed = false;
    for (const onnx::ValueInfoProto& input : checked.graph().input()) listed = listed || input.name() == init.name();
    if (listed) continue;
    onnx::ValueInfoProto* input = checked.mutable_graph()->add_input();
    input->set_name(init.name());
    onnx::TypeProto_Tensor* type = input->mutable_type()->mutable_tensor_type();
    type->set_elem_type(init.data_type());
    type->mutable_shape();  // a scalar has a shape with no dims
    for (int64_t dim : init.dims()) type->mutable_shape()->add_dim()->set_dim_value(dim);
  }
  checked.mutable_graph()->mutable_initializer()->Swap(&internal);
  RegisterSerenityOpSchemas();  // so that the checker validates their nodes
  try {
    onnx::checker::check_model(checked);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("the exported model fails the ONNX checker: ", e.what()));
  }
  return model.SerializeAsString();
}

}  // namespace serenity
