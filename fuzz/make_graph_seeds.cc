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
#include "core/plan_proto.h"
#include "serenity/v1/graph.pb.h"

namespace serenity {
namespace {

// x -> a -> b -> c, or x -> {a, b} -> c (sizes given in bytes).
GraphSpec TinyGraph(bool diamond) {
  GraphSpec spec;
  spec.name = diamond ? "diamond" : "chain";
  spec.tensors = {{"x", {1, 8}, 1, -1, false},
                  {"w", {8, 8}, 1, -1, true},
                  {"ta", {}, 1, 64, false},
                  {"tb", {}, 1, 128, false},
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
    if (Write(out_dir + "/" + spec.name + ".pb", GraphSpecToProto(spec))) ++written;
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
    if (Write(out_dir + "/" + BaseName(argv[i]) + ".pb", GraphSpecToProto(*spec))) ++written;
  }
  std::cout << "wrote " << written << " graph seeds to " << out_dir << "\n";
  return written > 0 ? 0 : 1;
}

}  // namespace
}  // namespace serenity

int main(int argc, char** argv) { return serenity::Main(argc, argv); }
