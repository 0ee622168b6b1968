// Seed generator for fuzz_graph_import: converts ONNX models to binary
// serenity.v1.Graph messages.
//
//   make_graph_seeds OUT_DIR MODEL.onnx...
//
// writes OUT_DIR/<model basename>.pb for every model that imports, plus two
// tiny hand-made graphs (a chain and a diamond). Exit status 1 when nothing
// could be written.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/onnx/onnx_import.h"
#include "serenity/v1/graph.pb.h"

namespace serenity {
namespace {

v1::Graph ToProto(const GraphSpec& spec) {
  v1::Graph g;
  g.set_name(spec.name);
  for (const OpSpec& op : spec.ops) {
    v1::Op* o = g.add_ops();
    o->set_name(op.name);
    o->set_type(op.type);
    for (const std::string& in : op.inputs) o->add_inputs(in);
    for (const std::string& out : op.outputs) o->add_outputs(out);
    o->set_workspace_bytes(op.workspace_bytes);
    o->set_macs(op.macs);
  }
  for (const TensorSpec& tensor : spec.tensors) {
    v1::Tensor* t = g.add_tensors();
    t->set_name(tensor.name);
    for (int64_t d : tensor.shape) t->add_shape(d);
    t->set_dtype(tensor.dtype);
    if (tensor.bytes >= 0) t->set_bytes(tensor.bytes);
    t->set_is_weight(tensor.is_weight);
  }
  for (const std::string& in : spec.inputs) g.add_inputs(in);
  for (const std::string& out : spec.outputs) g.add_outputs(out);
  return g;
}

// x -> a -> b -> c, or x -> {a, b} -> c (sizes given in bytes).
GraphSpec TinyGraph(bool diamond) {
  GraphSpec spec;
  spec.name = diamond ? "diamond" : "chain";
  spec.tensors = {{"x", {1, 8}, 1, -1, false}, {"w", {8, 8}, 1, -1, true},
                  {"ta", {}, 1, 64, false},   {"tb", {}, 1, 128, false},
                  {"y", {1, 8}, 1, -1, false}};
  spec.inputs = {"x"};
  spec.outputs = {"y"};
  if (diamond) {
    spec.ops = {{"a", "MatMul", {"x", "w"}, {"ta"}, 0, 64},
                {"b", "Relu", {"x"}, {"tb"}, 16, 0},
                {"c", "Add", {"ta", "tb"}, {"y"}, 0, 0}};
  } else {
    spec.ops = {{"a", "MatMul", {"x", "w"}, {"ta"}, 0, 64},
                {"b", "Relu", {"ta"}, {"tb"}, 16, 0},
                {"c", "Reshape", {"tb"}, {"y"}, 0, 0}};
  }
  return spec;
}

bool Write(const std::string& path, const v1::Graph& graph) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !graph.SerializeToOstream(&out)) {
    std::cerr << "cannot write " << path << "\n";
    return false;
  }
  return true;
}

std::string BaseName(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: make_graph_seeds OUT_DIR MODEL.onnx...\n";
    return 2;
  }
  const std::string out_dir = argv[1];
  int written = 0;
  for (bool diamond : {false, true}) {
    GraphSpec spec = TinyGraph(diamond);
    if (Write(out_dir + "/" + spec.name + ".pb", ToProto(spec))) ++written;
  }
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in && !in.eof()) {
      std::cerr << "cannot read " << argv[i] << "\n";
      continue;
    }
    absl::StatusOr<GraphSpec> spec = OnnxToGraphSpec(bytes, OnnxImportOptions());
    if (!spec.ok()) {
      std::cerr << argv[i] << ": " << spec.status() << "\n";
      continue;
    }
    if (Write(out_dir + "/" + BaseName(argv[i]) + ".pb", ToProto(*spec))) ++written;
  }
  std::cout << "wrote " << written << " graph seeds to " << out_dir << "\n";
  return written > 0 ? 0 : 1;
}

}  // namespace
}  // namespace serenity

int main(int argc, char** argv) { return serenity::Main(argc, argv); }
