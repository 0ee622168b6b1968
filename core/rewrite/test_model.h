// Test-only: a small ONNX model builder for the rewrite tests (float
// tensors, NCHW shapes).
#ifndef SERENITY_CORE_REWRITE_TEST_MODEL_H_
#define SERENITY_CORE_REWRITE_TEST_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace serenity {

class TestModel {
 public:
  TestModel() {
    model_.set_ir_version(8);
    onnx::OperatorSetIdProto* opset = model_.add_opset_import();
    opset->set_domain("");
    opset->set_version(13);
    model_.mutable_graph()->set_name("test");
  }
  TestModel& Input(const std::string& name, const std::vector<int64_t>& dims) {
    onnx::ValueInfoProto* v = model_.mutable_graph()->add_input();
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(1);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
    return *this;
  }
  TestModel& Output(const std::string& name) {
    model_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  // A float initializer; with `data`, its values are 0, 1, 2, ... (float_data).
  TestModel& Weight(const std::string& name, const std::vector<int64_t>& dims, bool data = true) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(1);
    int64_t n = 1;
    for (int64_t d : dims) t->add_dims(d), n *= d;
    if (data) {
      for (int64_t i = 0; i < n; ++i) t->add_float_data(static_cast<float>(i));
    }
    return *this;
  }
  onnx::NodeProto* Node(const std::string& type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name) {
    onnx::NodeProto* node = model_.mutable_graph()->add_node();
    node->set_op_type(type);
    node->set_name(name);
    for (const std::string& i : inputs) node->add_input(i);
    for (const std::string& o : outputs) node->add_output(o);
    return node;
  }
  static void IntAttr(onnx::NodeProto* node, const std::string& name, int64_t value) {
    onnx::AttributeProto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }
  onnx::ModelProto& model() { return model_; }
  std::string Bytes() const { return model_.SerializeAsString(); }

 private:
  onnx::ModelProto model_;
};

}  // namespace serenity

#endif  // SERENITY_CORE_REWRITE_TEST_MODEL_H_
