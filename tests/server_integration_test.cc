// Starts the real serenity-server on a free loopback port and drives it with
// the real serenity-client and with raw gRPC calls. Every plan is checked by
// the independent verifier against the model imported here.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/arena/arena_csv.h"
#include "core/arena/arena_verifier.h"
#include "core/onnx/onnx_import.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "health.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "onnx/onnx_pb.h"
#include "reflection.grpc.pb.h"
#include "serenity/v1/scheduler.grpc.pb.h"
#include "tests/testing/orders.h"
#include "tests/testing/plan_verifier.h"
#include "tests/testing/server_process.h"

namespace serenity {
namespace {

using testing::CommandResult;
using testing::RunCommand;

using ::testing::HasSubstr;

const std::string kServer = SERENITY_BINARY_DIR "/server/serenity-server";
const std::string kClient = SERENITY_BINARY_DIR "/client/serenity-client";
const std::string kModels = SERENITY_SHARED_DIR "/bench/models/";

// Rebuilds a Plan message from the documented JSON format (every key must
// be there: .at() throws otherwise, failing the test).
v1::Plan PlanFromJson(const nlohmann::json& j) {
  v1::Plan p;
  p.set_model(j.at("model").get<std::string>());
  p.set_nodes(j.at("nodes").get<int>());
  for (int u : j.at("order")) p.add_order(u);
  for (const nlohmann::json& n : j.at("order_names")) p.add_order_names(n.get<std::string>());
  p.set_peak_bytes(j.at("peak_bytes").get<int64_t>());
  p.set_lower_bound_bytes(j.at("lower_bound_bytes").get<int64_t>());
  p.set_weight_bytes(j.at("weight_bytes").get<int64_t>());
  p.set_macs(j.at("macs").get<int64_t>());
  const std::string cert = j.at("certificate").get<std::string>();
  EXPECT_TRUE(cert == "optimal" || cert == "best_found" || cert == "baseline") << cert;
  p.mutable_memory_model()->set_alias_views(j.at("memory_model").at("alias_views").get<bool>());
  p.mutable_memory_model()->set_count_weights(j.at("memory_model").at("count_weights").get<bool>());
  p.mutable_memory_model()->set_in_place(j.at("memory_model").at("in_place").get<bool>());
  p.mutable_memory_model()->set_concat_in_place(j.at("memory_model").at("concat_in_place").get<bool>());
  const nlohmann::json& arena = j.at("arena");
  p.mutable_arena()->set_size_bytes(arena.at("size_bytes").get<int64_t>());
  p.mutable_arena()->set_alignment(arena.at("alignment").get<int64_t>());
  p.mutable_arena()->set_tflite_size_bytes(arena.at("tflite_size_bytes").get<int64_t>());
  for (const nlohmann::json& b : arena.at("buffers")) {
    v1::ArenaBuffer* buffer = p.mutable_arena()->add_buffers();
    buffer->set_tensor(b.at("tensor").get<std::string>());
    const std::string kind = b.at("kind").get<std::string>();
    buffer->set_kind(kind == "workspace" ? v1::BUFFER_KIND_WORKSPACE
                     : kind == "weight"  ? v1::BUFFER_KIND_WEIGHT
                                         : v1::BUFFER_KIND_TENSOR);
    buffer->set_offset(b.at("offset").get<int64_t>());
    buffer->set_size(b.at("size").get<int64_t>());
    buffer->set_first_step(b.at("first_step").get<int>());
    buffer->set_last_step(b.at("last_step").get<int>());
    for (const nlohmann::json& a : b.at("aliases")) buffer->add_aliases(a.get<std::string>());
    buffer->set_slice_of(b.at("slice_of").get<std::string>());
    buffer->set_slice_offset(b.at("slice_offset").get<int64_t>());
  }
  for (const char* name : {"file_order", "kahn", "greedy", "inductor", "xla"}) {
    const nlohmann::json& s = j.at("baselines").at(name);
    const std::string key = name;
    v1::OrderSummary* summary = key == "file_order" ? p.mutable_baselines()->mutable_file_order()
                                : key == "kahn"     ? p.mutable_baselines()->mutable_kahn()
                                : key == "greedy"   ? p.mutable_baselines()->mutable_greedy()
                                : key == "inductor" ? p.mutable_baselines()->mutable_inductor()
                                                    : p.mutable_baselines()->mutable_xla();
    summary->set_peak_bytes(s.at("peak_bytes").get<int64_t>());
    summary->set_arena_bytes(s.at("arena_bytes").get<int64_t>());
    summary->set_arena_bytes_ours(s.at("arena_bytes_ours").get<int64_t>());
  }
  for (const nlohmann::json& s : j.at("steps")) {
    v1::Step* step = p.add_steps();
    step->set_op(s.at("op").get<std::string>());
    for (const nlohmann::json& in : s.at("inputs")) {
      v1::TensorPlacement* t = step->add_inputs();
      t->set_tensor(in.at("tensor").get<std::string>());
      t->set_offset(in.at("offset").get<int64_t>());
    }
    for (const nlohmann::json& out : s.at("outputs")) {
      v1::TensorPlacement* t = step->add_outputs();
      t->set_tensor(out.at("tensor").get<std::string>());
      t->set_offset(out.at("offset").get<int64_t>());
    }
    step->mutable_workspace()->set_offset(s.at("workspace").at("offset").get<int64_t>());
    step->mutable_workspace()->set_size(s.at("workspace").at("size").get<int64_t>());
  }
  EXPECT_EQ(static_cast<int>(j.at("steps").size()), p.nodes());
  EXPECT_GE(j.at("stats").at("solve_ms").get<double>(), 0);
  EXPECT_GE(j.at("stats").at("total_ms").get<double>(), 0);
  EXPECT_FALSE(j.at("stats").at("algorithm").get<std::string>().empty());
  EXPECT_GE(j.at("stats").at("states_explored").get<int64_t>(), 0);
  EXPECT_GE(j.at("stats").at("search_memory_bytes").get<int64_t>(), 0);
  if (cert == "optimal") p.set_certificate(v1::CERTIFICATE_OPTIMAL);
  return p;
}

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    port_file_ = std::filesystem::temp_directory_path() / ("serenity_port_" + std::to_string(getpid()));
    std::filesystem::remove(port_file_);
    pid_ = fork();
    if (pid_ == 0) {
      execl(kServer.c_str(), kServer.c_str(), "--plaintext", "--port", "0", "--port-file", port_file_.c_str(), nullptr);
      _exit(127);
    }
    for (int i = 0; i < 300 && port_ == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::ifstream in(port_file_);
      in >> port_;
    }
    address_ = "127.0.0.1:" + std::to_string(port_);
  }

  static void TearDownTestSuite() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    // A graceful drain exits 0.
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "server exit status " << status;
    std::filesystem::remove(port_file_);
  }

  void SetUp() override { ASSERT_NE(port_, 0) << "server did not start"; }

  std::shared_ptr<grpc::Channel> Channel() { return grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()); }

  static inline pid_t pid_ = 0;
  static inline int port_ = 0;
  static inline std::string address_;
  static inline std::filesystem::path port_file_;
};

struct KnownModel {
  const char* name;
  int64_t proven_optimum;  // from ../shared/bench/README.md
};

TEST_F(ServerTest, PlansSharedModelsThroughTheClient) {
  const KnownModel models[] = {{"darts_v2_cifar10_normal_cell", 1769472},
                               {"nasnet_a_cifar10_reduce_cell", 2211840},
                               {"randwire_ws_cifar10_stage1", 1118208},
                               {"tv_googlenet", 6422528},
                               {"tv_inception_v3", 6083072},
                               {"darts_v2_cifar10", 1345536}};
  for (const KnownModel& m : models) {
    SCOPED_TRACE(m.name);
    const std::string path = kModels + m.name + ".onnx";
    CommandResult r = RunCommand(kClient + " plan " + path + " --server " + address_ + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    v1::Plan plan = PlanFromJson(nlohmann::json::parse(r.output));
    absl::StatusOr<Graph> graph = ImportOnnxModel(testing::ReadFile(path), {});
    ASSERT_TRUE(graph.ok()) << graph.status();
    EXPECT_EQ(plan.model(), m.name);
    absl::Status verified = testing::VerifyPlan(*graph, plan);
    EXPECT_TRUE(verified.ok()) << verified;
    // The search reaches the proven optimum and certifies it.
    EXPECT_EQ(plan.peak_bytes(), m.proven_optimum);
    EXPECT_EQ(plan.certificate(), v1::CERTIFICATE_OPTIMAL);
    EXPECT_LE(plan.peak_bytes(), plan.baselines().file_order().peak_bytes());
    EXPECT_LE(plan.peak_bytes(), plan.baselines().kahn().peak_bytes());
    EXPECT_LE(plan.peak_bytes(), plan.baselines().greedy().peak_bytes());
    EXPECT_LE(plan.peak_bytes(), plan.baselines().inductor().peak_bytes());
    EXPECT_LE(plan.peak_bytes(), plan.baselines().xla().peak_bytes());
  }
}

TEST_F(ServerTest, LocalModeGivesTheServersAnswer) {
  const std::string path = kModels + "nasnet_a_cifar10_normal_cell.onnx";
  for (const std::string flags :
       {"", " --alias-views --count-weights --alignment 16", " --in-place", " --concat-in-place --in-place"}) {
    CommandResult remote = RunCommand(kClient + " plan " + path + " --json --server " + address_ + flags);
    CommandResult local = RunCommand(kClient + " plan " + path + " --json --local" + flags);
    ASSERT_EQ(remote.exit_code, 0) << remote.output;
    ASSERT_EQ(local.exit_code, 0) << local.output;
    nlohmann::json a = nlohmann::json::parse(remote.output), b = nlohmann::json::parse(local.output);
    EXPECT_EQ(a["order"], b["order"]);
    EXPECT_EQ(a["peak_bytes"], b["peak_bytes"]);
    EXPECT_EQ(a["arena"], b["arena"]);
    v1::Plan plan = PlanFromJson(a);
    absl::StatusOr<Graph> graph = ImportOnnxModel(testing::ReadFile(path), {});
    ASSERT_TRUE(graph.ok());
    EXPECT_TRUE(testing::VerifyPlan(*graph, plan).ok()) << testing::VerifyPlan(*graph, plan);
    if (flags.find("alignment") != std::string::npos) {
      EXPECT_EQ(a["arena"]["alignment"], 16);
      EXPECT_EQ(a["memory_model"]["count_weights"], true);
    }
    if (flags.find("concat") != std::string::npos) {
      EXPECT_EQ(a["memory_model"]["concat_in_place"], true);
      int slices = 0;
      for (const nlohmann::json& b : a["arena"]["buffers"])
        slices += b.at("slice_of").get<std::string>().empty() ? 0 : 1;
      EXPECT_GT(slices, 0);  // the cell's Concat of its intermediate nodes
    }
  }
}

TEST_F(ServerTest, TrafficEstimatesThroughTheClient) {
  const std::string path = kModels + "randwire_ws_cifar10_stage1.onnx";
  CommandResult r = RunCommand(kClient + " plan " + path + " --json --onchip 1048576,1118208 --server " + address_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j.at("traffic").size(), 6u);
  EXPECT_EQ(j["traffic"][0].at("order"), "serenity");
  const nlohmann::json& points = j["traffic"][0].at("points");
  ASSERT_EQ(points.size(), 2u);
  EXPECT_GT(points[0].at("read_bytes").get<int64_t>() + points[0].at("write_bytes").get<int64_t>(), 0);
  // At its own peak (the proven optimum) Serenity's order moves nothing.
  EXPECT_EQ(points[1].at("read_bytes").get<int64_t>() + points[1].at("write_bytes").get<int64_t>(), 0);
  EXPECT_TRUE(points[1].at("feasible").get<bool>());
  CommandResult human = RunCommand(kClient + " plan " + path + " --onchip 1000,1118208 --server " + address_);
  EXPECT_THAT(human.output, HasSubstr("off-chip traffic"));
  EXPECT_THAT(human.output, HasSubstr("op too big"));
  CommandResult bad = RunCommand(kClient + " plan " + path + " --local --onchip 12,abc");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.output, HasSubstr("--onchip"));
}

TEST_F(ServerTest, EvaluatesTheCallersOrder) {
  const std::string path = kModels + "randwire_ws_cifar10_stage1.onnx";
  CommandResult kahn = RunCommand(kClient + " plan " + path + " --json --algorithm kahn --server " + address_);
  ASSERT_EQ(kahn.exit_code, 0) << kahn.output;
  nlohmann::json kahn_plan = nlohmann::json::parse(kahn.output);
  const std::string order_file =
      std::filesystem::temp_directory_path() / ("order_" + std::to_string(getpid()) + ".json");
  std::ofstream(order_file) << kahn_plan.at("order_names").dump();
  CommandResult given =
      RunCommand(kClient + " plan " + path + " --json --order " + order_file + " --server " + address_);
  ASSERT_EQ(given.exit_code, 0) << given.output;
  nlohmann::json j = nlohmann::json::parse(given.output);
  EXPECT_EQ(j.at("order"), kahn_plan.at("order"));
  EXPECT_EQ(j.at("peak_bytes"), kahn_plan.at("peak_bytes"));
  EXPECT_EQ(j.at("stats").at("algorithm"), "given");
  EXPECT_EQ(j.at("baselines").at("serenity").at("peak_bytes").get<int64_t>(), 1118208);
  v1::Plan plan = PlanFromJson(j);
  absl::StatusOr<Graph> graph = ImportOnnxModel(testing::ReadFile(path), {});
  ASSERT_TRUE(graph.ok());
  EXPECT_TRUE(testing::VerifyPlan(*graph, plan).ok()) << testing::VerifyPlan(*graph, plan);
  std::ofstream(order_file) << "[\"/nodes.0/Relu\", \"nope\"]";
  CommandResult unknown = RunCommand(kClient + " plan " + path + " --order " + order_file + " --server " + address_);
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.output, HasSubstr("unknown op 'nope'"));
  std::filesystem::remove(order_file);
}

TEST_F(ServerTest, ExportsTheOrderedModel) {
  const std::string path = kModels + "nasnet_a_cifar10_normal_cell.onnx";
  const std::string out = std::filesystem::temp_directory_path() / ("ordered_" + std::to_string(getpid()) + ".onnx");
  CommandResult r = RunCommand(kClient + " plan " + path + " --json --export-ordered " + out + " --server " + address_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  // The exported file, planned in its own file order, has the planned peak.
  CommandResult again = RunCommand(kClient + " plan " + out + " --json --algorithm file_order --local");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(nlohmann::json::parse(again.output).at("peak_bytes"), j.at("peak_bytes"));
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(testing::ReadFile(out)));
  int offsets = 0;
  for (const auto& entry : model.metadata_props()) offsets += entry.key().rfind("serenity.offset/", 0) == 0;
  EXPECT_GE(offsets, static_cast<int>(j.at("arena").at("buffers").size()));
  std::filesystem::remove(out);
}

TEST_F(ServerTest, HumanSummaryAndComparisonTable) {
  const std::string cell = kModels + "darts_v2_cifar10_reduce_cell.onnx";
  CommandResult one = RunCommand(kClient + " plan " + cell + " --server " + address_);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  for (const char* expected : {"darts_v2_cifar10_reduce_cell", "peak", "lower bound", "arena", "file order", "kahn",
                               "greedy", "certificate"}) {
    EXPECT_THAT(one.output, HasSubstr(expected));
  }
  CommandResult table =
      RunCommand(kClient + " plan " + cell + " " + kModels + "tv_squeezenet1_0.onnx --server " + address_);
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_THAT(table.output, HasSubstr("tv_squeezenet1_0"));
  EXPECT_THAT(table.output, HasSubstr("serenity"));
}

TEST_F(ServerTest, BadInputsGetInvalidArgumentAndTheServerKeepsServing) {
  std::unique_ptr<v1::Scheduler::Stub> stub = v1::Scheduler::NewStub(Channel());
  auto call = [&](const v1::PlanRequest& request) {
    grpc::ClientContext context;
    v1::Plan plan;
    return stub->Plan(&context, request, &plan);
  };
  v1::PlanRequest empty;
  grpc::Status s = call(empty);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("no model"));

  v1::PlanRequest garbage;
  garbage.set_onnx_model(std::string("\x12\xff\xff\xff garbage", 12));
  s = call(garbage);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v1::PlanRequest truncated;
  std::string model = testing::ReadFile(kModels + "tv_googlenet.onnx");
  truncated.set_onnx_model(model.substr(0, model.size() / 2));
  s = call(truncated);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v1::PlanRequest cycle;
  v1::Graph* g = cycle.mutable_graph();
  for (const char* t : {"x", "y"}) {
    v1::Tensor* tensor = g->add_tensors();
    tensor->set_name(t);
    tensor->set_bytes(4);
  }
  v1::Op* a = g->add_ops();
  a->set_name("a");
  a->add_inputs("y");
  a->add_outputs("x");
  v1::Op* b = g->add_ops();
  b->set_name("b");
  b->add_inputs("x");
  b->add_outputs("y");
  s = call(cycle);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("cycle"));

  v1::PlanRequest bad_algorithm;
  bad_algorithm.set_onnx_model(testing::ReadFile(kModels + "darts_v2_cifar10_reduce_cell.onnx"));
  bad_algorithm.mutable_options()->set_algorithm("nope");
  s = call(bad_algorithm);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("unknown algorithm"));

  // Still healthy, still planning.
  std::unique_ptr<grpc::health::v1::Health::Stub> health = grpc::health::v1::Health::NewStub(Channel());
  grpc::ClientContext health_context;
  grpc::health::v1::HealthCheckRequest health_request;
  grpc::health::v1::HealthCheckResponse health_response;
  ASSERT_TRUE(health->Check(&health_context, health_request, &health_response).ok());
  EXPECT_EQ(health_response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  bad_algorithm.mutable_options()->set_algorithm("auto");
  EXPECT_TRUE(call(bad_algorithm).ok());
}

TEST_F(ServerTest, SearchEndsBeforeTheCallersDeadline) {
  std::unique_ptr<v1::Scheduler::Stub> stub = v1::Scheduler::NewStub(Channel());
  v1::PlanRequest request;
  request.set_onnx_model(testing::ReadFile(kModels + "randwire_ws_cifar10_stage2.onnx"));
  request.mutable_options()->set_time_limit_seconds(60);  // far beyond the deadline
  request.mutable_options()->set_alignment(32);           // a key no other test plans, so no cache hit
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
  v1::Plan plan;
  grpc::Status status = stub->Plan(&context, request, &plan);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(plan.certificate(), v1::CERTIFICATE_BEST_FOUND);
  EXPECT_LT(plan.stats().solve_ms(), 3000);
  EXPECT_EQ(plan.stats().cache(), "miss");
}

TEST_F(ServerTest, ReflectionListsTheScheduler) {
  auto stub = grpc::reflection::v1alpha::ServerReflection::NewStub(Channel());
  grpc::ClientContext context;
  auto stream = stub->ServerReflectionInfo(&context);
  grpc::reflection::v1alpha::ServerReflectionRequest request;
  request.set_list_services("");
  ASSERT_TRUE(stream->Write(request));
  stream->WritesDone();
  grpc::reflection::v1alpha::ServerReflectionResponse response;
  ASSERT_TRUE(stream->Read(&response));
  std::vector<std::string> names;
  for (const auto& service : response.list_services_response().service()) names.push_back(service.name());
  EXPECT_THAT(names, ::testing::Contains("serenity.v1.Scheduler"));
  EXPECT_THAT(names, ::testing::Contains("grpc.health.v1.Health"));
  while (stream->Read(&response)) {
  }
  EXPECT_TRUE(stream->Finish().ok());
}

TEST(ClientTest, ReportsUsageAndFileErrors) {
  CommandResult missing = RunCommand(kClient + " plan /nonexistent/model.onnx --local");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("cannot open '/nonexistent/model.onnx'"));
  CommandResult unknown_flag = RunCommand(kClient + " plan x.onnx --frobnicate");
  EXPECT_EQ(unknown_flag.exit_code, 2);
  EXPECT_THAT(unknown_flag.output, HasSubstr("unknown flag --frobnicate"));
  CommandResult unknown_command = RunCommand(kClient + " fly");
  EXPECT_EQ(unknown_command.exit_code, 2);
  CommandResult bad_dim = RunCommand(kClient + " plan x.onnx --local --dim batch");
  EXPECT_EQ(bad_dim.exit_code, 2);
  EXPECT_THAT(bad_dim.output, HasSubstr("NAME=VALUE"));
  CommandResult no_server =
      RunCommand(kClient + " plan " + kModels + "tv_squeezenet1_0.onnx --server 127.0.0.1:1 --timeout 5");
  EXPECT_EQ(no_server.exit_code, 1);
  EXPECT_THAT(no_server.output, HasSubstr("--local"));
}

TEST(ClientTest, ArenaCommandPlansMiniMallocInstances) {
  const std::string path = SERENITY_SHARED_DIR "/bench/arena/minimalloc/challenging_C.csv";
  CommandResult r = RunCommand(kClient + " arena " + path + " --json --alignment 64");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  absl::StatusOr<ArenaInstance> instance = ParseArenaCsv(testing::ReadFile(path));
  ASSERT_TRUE(instance.ok());
  ArenaPlan plan;
  plan.alignment = 64;
  plan.size_bytes = j.at("size_bytes").get<int64_t>();
  ASSERT_EQ(j.at("buffers").size(), instance->buffers.size());
  for (size_t i = 0; i < instance->buffers.size(); ++i) {
    EXPECT_EQ(j["buffers"][i].at("id").get<std::string>(), instance->ids[i]);
    plan.offsets.push_back(j["buffers"][i].at("offset").get<int64_t>());
  }
  EXPECT_TRUE(VerifyArena(instance->buffers, plan).ok()) << VerifyArena(instance->buffers, plan);
  EXPECT_EQ(j.at("lower_bound_bytes").get<int64_t>(), 1039360);
  EXPECT_GE(plan.size_bytes, 1039360);
  EXPECT_GE(j.at("solve_ms").get<double>(), 0);

  CommandResult bad = RunCommand(kClient + " arena " + kModels + "tv_googlenet.onnx");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.output, HasSubstr("header"));
  CommandResult help = RunCommand(kClient + " arena --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.output, HasSubstr("--json"));
  EXPECT_THAT(help.output, HasSubstr("--alignment"));
  EXPECT_THAT(help.output, HasSubstr("--time-limit"));
  CommandResult bad_time = RunCommand(kClient + " arena " + path + " --time-limit -1");
  EXPECT_EQ(bad_time.exit_code, 2);
  EXPECT_THAT(bad_time.output, HasSubstr("--time-limit"));
  // No time to search: the greedy placements still give a valid plan.
  CommandResult quick = RunCommand(kClient + " arena " + path + " --json --time-limit 0");
  ASSERT_EQ(quick.exit_code, 0) << quick.output;
  nlohmann::json q = nlohmann::json::parse(quick.output);
  plan.size_bytes = q.at("size_bytes").get<int64_t>();
  for (size_t i = 0; i < instance->buffers.size(); ++i) plan.offsets[i] = q["buffers"][i].at("offset").get<int64_t>();
  EXPECT_TRUE(VerifyArena(instance->buffers, plan).ok()) << VerifyArena(instance->buffers, plan);
}

TEST(ClientTest, HelpExplainsEveryFlag) {
  CommandResult top = RunCommand(kClient + " --help");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_THAT(top.output, HasSubstr("plan MODEL"));
  CommandResult plan = RunCommand(kClient + " plan --help");
  EXPECT_EQ(plan.exit_code, 0);
  for (const char* flag :
       {"--server",          "--local",           "--json",      "--alias-views", "--count-weights",
        "--in-place",        "--concat-in-place", "--alignment", "--budget",      "--dim",
        "--workspace",       "--time-limit",      "--algorithm", "--timeout",     "--objective",
        "--step-time-limit", "--max-states",      "--onchip",    "--order",       "--export-ordered"}) {
    EXPECT_THAT(plan.output, HasSubstr(flag));
  }
  CommandResult server = RunCommand(kServer + " --help");
  EXPECT_EQ(server.exit_code, 0);
  for (const char* flag :
       {"--host", "--port", "--port-file", "--max-message-mb", "--shutdown-grace-seconds", "--threads", "--max-queue",
        "--max-ops", "--max-job-seconds", "--max-jobs-per-connection", "--max-streams-per-connection", "--cache-mb",
        "--redis", "--metrics-port", "--plaintext", "--tls-cert", "--tls-key", "--tls-client-ca", "--token-file"}) {
    EXPECT_THAT(server.output, HasSubstr(flag));
  }
}

}  // namespace
}  // namespace serenity
