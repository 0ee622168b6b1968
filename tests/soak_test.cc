// A soak of the real serenity-server with the shared Redis tier: concurrent
// clients mixing valid, invalid, cancelled and deadline-exceeded Plan calls
// and Score streams, while Redis is killed and restarted. At the end every
// valid call got a verified plan, no job is stuck, the server's memory is
// back near its warmed-up level, and it exits 0 (under ASan that includes
// LeakSanitizer's check at exit).
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/plan_proto.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "serenity/v1/scheduler.grpc.pb.h"
#include "tests/testing/orders.h"
#include "tests/testing/plan_verifier.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using testing::MetricValue;

const std::string kServer = SERENITY_BINARY_DIR "/server/serenity-server";
const std::string kModels = SERENITY_SHARED_DIR "/bench/models/";

int64_t ResidentKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

TEST(SoakTest, MixedLoadWithRedisRestartsEndsClean) {
  testing::RedisServerProcess redis;
  ASSERT_TRUE(redis.Start()) << "redis-server did not start";
  testing::ServerProcess server;
  ASSERT_TRUE(server.Start(kServer,
                           {"--plaintext", "--threads", "2", "--max-queue", "256", "--cache-mb", "16", "--redis",
                            redis.address(), "--max-jobs-per-connection", "64"},
                           /*with_metrics=*/true))
      << server.log();
  auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Scheduler::NewStub(channel);

  const std::vector<std::string> models = {"darts_v2_cifar10_reduce_cell.onnx", "darts_v2_imagenet_reduce_cell.onnx",
                                           "darts_v2_cifar10_normal_cell.onnx", "amoebanet_a_cifar10_reduce_cell.onnx",
                                           "tv_squeezenet1_0.onnx"};
  std::vector<v1::PlanRequest> valid;
  for (const std::string& m : models) {
    v1::PlanRequest r;
    r.set_onnx_model(testing::ReadFile(kModels + m));
    r.set_model_name(m);
    valid.push_back(r);
  }
  std::mt19937 graph_rng(99);
  for (int i = 0; i < 20; ++i) {
    v1::PlanRequest r;
    *r.mutable_graph() = GraphSpecToProto(testing::RandomDag(5 + i % 15, graph_rng));
    r.set_model_name("random" + std::to_string(i));
    valid.push_back(r);
  }
  // Warm up: every valid request once, then the baseline memory.
  for (const v1::PlanRequest& r : valid) {
    grpc::ClientContext context;
    v1::Plan plan;
    ASSERT_TRUE(stub->Plan(&context, r, &plan).ok());
  }
  const int64_t warm_kb = ResidentKb(server.pid());

  std::atomic<int> valid_ok{0}, valid_failed{0}, invalid_answered{0}, cut_short{0};
  std::mutex failure_mu;
  std::vector<std::string> failures;
  auto fail = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(failure_mu);
    failures.push_back(what);
  };
  std::vector<std::thread> clients;
  for (int c = 0; c < 12; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(1000 + c);
      auto my_stub = v1::Scheduler::NewStub(channel);
      for (int i = 0; i < 30; ++i) {
        const int kind = static_cast<int>(rng() % 6);
        const v1::PlanRequest& request = valid[rng() % valid.size()];
        grpc::ClientContext context;
        v1::Plan plan;
        if (kind <= 1) {  // valid
          context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
          grpc::Status status = my_stub->Plan(&context, request, &plan);
          if (!status.ok()) {
            ++valid_failed;
            fail(absl::StrCat("valid call failed: ", status.error_message()));
            continue;
          }
          absl::StatusOr<Graph> graph = GraphFromRequest(request);
          absl::Status verified = graph.ok() ? testing::VerifyPlan(*graph, plan) : graph.status();
          if (verified.ok()) {
            ++valid_ok;
          } else {
            fail(absl::StrCat("plan does not verify: ", verified.message()));
          }
        } else if (kind == 2) {  // invalid
          v1::PlanRequest bad = request;
          bad.mutable_options()->set_algorithm("no-such-algorithm");
          grpc::Status status = my_stub->Plan(&context, bad, &plan);
          if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
            ++invalid_answered;
          } else {
            fail(absl::StrCat("invalid call got ", status.error_code()));
          }
        } else if (kind == 3) {  // cancelled mid-call
          v1::PlanRequest slow;
          slow.set_onnx_model(testing::ReadFile(kModels + "randwire_ws_cifar10_stage2.onnx"));
          slow.mutable_options()->set_time_limit_seconds(30);
          slow.mutable_options()->set_alignment(8 + 8 * static_cast<int64_t>(rng() % 4));
          std::thread canceller([&context] {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            context.TryCancel();
          });
          grpc::Status status = my_stub->Plan(&context, slow, &plan);
          canceller.join();
          if (status.error_code() == grpc::StatusCode::CANCELLED || status.ok()) ++cut_short;
        } else if (kind == 4) {  // deadline too short for the search
          v1::PlanRequest slow;
          slow.set_onnx_model(testing::ReadFile(kModels + "randwire_ws_cifar10_stage3.onnx"));
          slow.mutable_options()->set_alignment(8 + 8 * static_cast<int64_t>(rng() % 4));
          context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1 + rng() % 200));
          grpc::Status status = my_stub->Plan(&context, slow, &plan);
          if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED || status.ok()) ++cut_short;
        } else {  // a Score stream mixing valid and invalid candidates
          auto stream = my_stub->Score(&context);
          int sent_valid = 0;
          for (int k = 0; k < 4; ++k) {
            v1::ScoreRequest candidate;
            *candidate.mutable_request() = valid[rng() % valid.size()];
            if (k == 3)
              candidate.mutable_request()->clear_model();
            else
              ++sent_valid;
            stream->Write(candidate);
          }
          stream->WritesDone();
          v1::ScoreResult result;
          int ok = 0, bad = 0;
          while (stream->Read(&result)) (result.code() == 0 ? ok : bad)++;
          grpc::Status status = stream->Finish();
          if (!status.ok() || ok != sent_valid || bad != 1) {
            fail(absl::StrCat("score stream: ", status.error_message(), " ok=", ok, " bad=", bad));
          } else {
            valid_ok += ok;
          }
        }
        if (c == 0 && i == 8) redis.Stop();                                             // Redis dies midway ...
        if (c == 0 && i == 18 && !redis.Start()) fail("redis-server did not restart");  // ... and comes back
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures; first: " << failures.front();
  EXPECT_EQ(valid_failed.load(), 0);
  EXPECT_GT(valid_ok.load(), 50);
  EXPECT_GT(invalid_answered.load(), 0);

  // Calls cut short by their clients stop their searches promptly (the
  // cancelled ones had 30 s limits): within seconds no job is left.
  std::string metrics;
  for (int i = 0; i < 200; ++i) {
    metrics = testing::HttpGet(server.metrics_port(), "/metrics");
    if (MetricValue(metrics, "serenity_jobs_active") == "0" && MetricValue(metrics, "serenity_jobs_queued") == "0")
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(MetricValue(metrics, "serenity_jobs_active"), "0");
  EXPECT_EQ(MetricValue(metrics, "serenity_jobs_queued"), "0");
  // Redis was down for a while: errors were counted.
  EXPECT_NE(MetricValue(metrics, "serenity_cache_lookups_total{result=\"error\",tier=\"shared\"}"), "0");
  // And it serves again: a graph no call has sent is written to the
  // restarted Redis (retried past the second the store skips Redis after a
  // failure).
  const std::string written = "serenity_cache_shared_writes_total{result=\"ok\"}";
  auto count = [](const std::string& value) { return value.empty() ? int64_t{-1} : std::stoll(value); };
  const int64_t writes_before = count(MetricValue(metrics, written));
  ASSERT_GE(writes_before, 0) << "no series " << written;
  bool served_again = false;
  for (int attempt = 0; attempt < 20 && !served_again; ++attempt) {
    v1::PlanRequest fresh;
    *fresh.mutable_graph() = GraphSpecToProto(testing::RandomDag(6, graph_rng));
    grpc::ClientContext context;
    v1::Plan plan;
    ASSERT_TRUE(stub->Plan(&context, fresh, &plan).ok());
    served_again = count(MetricValue(testing::HttpGet(server.metrics_port(), "/metrics"), written)) > writes_before;
    if (!served_again) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(served_again) << "no plan reached the restarted Redis";
  const int64_t end_kb = ResidentKb(server.pid());
#if !defined(__SANITIZE_ADDRESS__)
  // The cache is capped at 16 MB; searches free their memos. Allow for the
  // allocator keeping freed pages. (Under ASan freed memory sits in its
  // quarantine, so resident size says nothing; LeakSanitizer checks the
  // server at exit instead.)
  EXPECT_LT(end_kb, warm_kb + 200 * 1024) << "warm " << warm_kb << " kB, end " << end_kb << " kB";
#endif
  const int status = server.Stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "exit status " << status << "\n" << server.log();
}

}  // namespace
}  // namespace serenity
