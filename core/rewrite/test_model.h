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

// A small input widened by k branch Convs to `wide` channels each, joined
// and reduced by a Conv to `out` channels, added to `m` from tensor `in` (of
// `in_channels`) to tensor `y`. With wide >> out the partition lowers the
// peak (the x_i need not be live together); with out >> wide it cannot
// (each partial and the running sum are full-size). With `bn_relu`, the
// Concat reaches the Conv through BatchNormalization and Relu, as in
// DenseNet. `prefix` names everything but `in` and `y`.
inline TestModel& AddBranches(TestModel& m, const std::string& in, const std::string& y, int64_t in_channels, int k,
                              int64_t wide, int64_t out, bool bn_relu = false, const std::string& prefix = "") {
  m.Weight(prefix + "w", {out, k * wide, 1, 1}, false);
  std::vector<std::string> xs;
  for (int i = 0; i < k; ++i) {
    const std::string b = prefix + "b" + std::to_string(i), x = prefix + "x" + std::to_string(i);
    m.Weight(b, {wide, in_channels, 1, 1}, false);
    m.Node("Conv", {in, b}, {x}, prefix + "branch" + std::to_string(i));
    xs.push_back(x);
  }
  TestModel::IntAttr(m.Node("Concat", xs, {prefix + "c"}, prefix + "cat"), "axis", 1);
  std::string c = prefix + "c";
  if (bn_relu) {
    for (const char* p : {"scale", "shift", "mean", "var"}) m.Weight(prefix + p, {k * wide}, false);
    m.Node("BatchNormalization", {c, prefix + "scale", prefix + "shift", prefix + "mean", prefix + "var"},
           {prefix + "n"}, prefix + "bn");
    m.Node("Relu", {prefix + "n"}, {prefix + "r"}, prefix + "relu");
    c = prefix + "r";
  }
  m.Node("Conv", {c, prefix + "w"}, {y}, prefix + "reduce");
  return m;
}

// The same as a whole model: input "in" (1 channel, 8 x 8), output "y";
// nodes "branch<i>", "cat", "reduce".
inline TestModel Branches(int k, int64_t wide, int64_t out, bool bn_relu = false) {
  TestModel m;
  m.Input("in", {1, 1, 8, 8}).Output("y");
  AddBranches(m, "in", "y", 1, k, wide, out, bn_relu);
  return m;
}

// A tail x1 = Relu(in), x<i+1> = Relu(x<i>) (i < 4; "in" of 1 x 4 x 6 x 6)
// summed as written ((x4 + x3) + x2) + x1 into "y" (Adds "add1".."add3"):
// a sum whose operands every order makes in the other order.
inline TestModel ReluTailSummedBackwards() {
  TestModel m;
  m.Input("in", {1, 4, 6, 6}).Output("y");
  m.Node("Relu", {"in"}, {"x1"}, "relu1");
  for (int i = 2; i <= 4; ++i) {
    m.Node("Relu", {"x" + std::to_string(i - 1)}, {"x" + std::to_string(i)}, "relu" + std::to_string(i));
  }
  m.Node("Add", {"x4", "x3"}, {"s1"}, "add1");
  m.Node("Add", {"s1", "x2"}, {"s2"}, "add2");
  m.Node("Add", {"s2", "x1"}, {"y"}, "add3");
  return m;
}

}  // namespace serenity

#endif  // SERENITY_CORE_REWRITE_TEST_MODEL_H_
