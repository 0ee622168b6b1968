// serenity-load: a load generator for serenity-server on loopback. Measures
// throughput and latency percentiles of Plan calls from N concurrent
// clients (each on its own connection), cache cold or warm, and of the
// Score batch stream (one stream per client).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/command_line.h"
#include "grpcpp/grpcpp.h"
#include "serenity/v1/scheduler.grpc.pb.h"

namespace serenity {
namespace {

using Clock = std::chrono::steady_clock;

struct LoadFlags {
  std::string server = "127.0.0.1:50051";
  std::string model;
  std::string mode = "plan";   // plan | score
  std::string cache = "warm";  // warm | cold
  int64_t clients = 1;
  int64_t requests = 1000;  // total, over all clients (plan), or candidates (score)
  double time_limit = 10;
  bool json = false;
};

double Percentile(std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(sorted.size() - 1, static_cast<size_t>(p * static_cast<double>(sorted.size())));
  return sorted[i];
}

std::shared_ptr<grpc::Channel> NewConnection(const std::string& server) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
  args.SetMaxReceiveMessageSize(256 << 20);
  return grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args);
}

int Run(int argc, char** argv) {
  LoadFlags flags;
  FlagSet flag_set("serenity-load --model FILE.onnx [flags]",
                   "Drives a running serenity-server (plaintext) and prints throughput and latency.\n"
                   "plan mode: --clients threads, each on its own connection, send --requests Plan\n"
                   "calls in all, back to back. score mode: --clients Score streams, each on its own\n"
                   "connection, write --requests candidates in all without waiting for results.\n"
                   "--cache cold makes every request's key unique (a different search-state cap far\n"
                   "above what the search uses, so the answer is the same); warm sends the same\n"
                   "request and primes the cache first.");
  flag_set.AddString("server", &flags.server, "HOST:PORT", "Server to load.");
  flag_set.AddString("model", &flags.model, "FILE", "ONNX model every request carries.");
  flag_set.AddString("mode", &flags.mode, "plan|score", "Plan calls, or Score streams.");
  flag_set.AddString("cache", &flags.cache, "warm|cold", "Repeat one key, or a new key per request.");
  flag_set.AddInt("clients", &flags.clients, "N", "Concurrent clients: Plan callers, or Score streams.");
  flag_set.AddInt("requests", &flags.requests, "N", "Requests (plan) or candidates (score) in all.");
  flag_set.AddDouble("time-limit", &flags.time_limit, "S", "Search time limit per request.");
  flag_set.AddBool("json", &flags.json, "Print one JSON object.");
  std::vector<std::string> args(argv + 1, argv + argc);
  absl::Status parsed = flag_set.Parse(args);
  if (flag_set.help_requested()) {
    std::cout << flag_set.Help();
    return 0;
  }
  if (!parsed.ok() || flags.model.empty() || flags.clients < 1 || flags.requests < 1 ||
      (flags.mode != "plan" && flags.mode != "score") || (flags.cache != "warm" && flags.cache != "cold")) {
    std::cerr << "serenity-load: "
              << (parsed.ok() ? "give --model; --clients, --requests >= 1; valid --mode/--cache"
                              : std::string(parsed.message()))
              << "\n";
    return 2;
  }
  std::ifstream in(flags.model, std::ios::binary);
  if (!in) {
    std::cerr << "serenity-load: cannot read " << flags.model << "\n";
    return 2;
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  v1::PlanRequest base;
  base.set_onnx_model(bytes.str());
  base.mutable_options()->set_time_limit_seconds(flags.time_limit);
  // A run-unique offset keeps cold keys cold across runs against one server.
  const int64_t run_salt =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count() %
      1'000'000;
  auto request_for = [&](int64_t i) {
    v1::PlanRequest r = base;
    // A state cap that no search here reaches, below the server's default
    // --max-search-states (32 million; larger asks are lowered to it, and
    // would share one key): part of the key, not of the answer. (The budget
    // would not do: under min_peak one stored plan answers every budget.)
    if (flags.cache == "cold") {
      r.mutable_options()->set_max_search_states(10'000'000 + (run_salt * 1000 + i) % 20'000'000);
    }
    return r;
  };

  std::vector<double> latencies_ms;
  std::mutex mu;
  std::atomic<int64_t> errors{0}, hits{0};
  std::string first_error;  // under mu
  auto record_error = [&](int code, const std::string& message) {
    ++errors;
    std::lock_guard<std::mutex> lock(mu);
    if (first_error.empty()) first_error = absl::StrCat("code ", code, ": ", message);
  };
  std::atomic<int64_t> next{0};
  if (flags.cache == "warm") {  // prime
    auto stub = v1::Scheduler::NewStub(NewConnection(flags.server));
    grpc::ClientContext context;
    v1::Plan plan;
    grpc::Status status = stub->Plan(&context, request_for(0), &plan);
    if (!status.ok()) {
      std::cerr << "serenity-load: priming call failed: " << status.error_message() << "\n";
      return 1;
    }
  }
  const Clock::time_point start = Clock::now();
  if (flags.mode == "plan") {
    std::vector<std::thread> clients;
    for (int64_t c = 0; c < flags.clients; ++c) {
      clients.emplace_back([&] {
        auto stub = v1::Scheduler::NewStub(NewConnection(flags.server));
        std::vector<double> mine;
        for (int64_t i = next++; i < flags.requests; i = next++) {
          const v1::PlanRequest request = request_for(i + 1);
          grpc::ClientContext context;
          context.set_wait_for_ready(true);
          v1::Plan plan;
          const Clock::time_point sent = Clock::now();
          grpc::Status status = stub->Plan(&context, request, &plan);
          mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - sent).count());
          if (!status.ok()) record_error(status.error_code(), status.error_message());
          if (plan.stats().cache() != "miss") ++hits;
        }
        std::lock_guard<std::mutex> lock(mu);
        latencies_ms.insert(latencies_ms.end(), mine.begin(), mine.end());
      });
    }
    for (std::thread& t : clients) t.join();
  } else {
    // One Score stream per client, each on its own connection; the clients
    // share out the candidates as they write them.
    std::vector<std::thread> clients;
    for (int64_t c = 0; c < flags.clients; ++c) {
      clients.emplace_back([&] {
        auto stub = v1::Scheduler::NewStub(NewConnection(flags.server));
        grpc::ClientContext context;
        context.set_wait_for_ready(true);  // a connection still being made is waited for
        auto stream = stub->Score(&context);
        std::mutex sent_mu;
        std::vector<Clock::time_point> sent;  // by the stream's own index
        std::thread writer([&] {
          for (int64_t i = next++; i < flags.requests; i = next++) {
            v1::ScoreRequest candidate;
            *candidate.mutable_request() = request_for(i + 1);
            {
              std::lock_guard<std::mutex> lock(sent_mu);
              sent.push_back(Clock::now());
            }
            if (!stream->Write(candidate)) break;
          }
          stream->WritesDone();
        });
        std::vector<double> mine;
        v1::ScoreResult result;
        while (stream->Read(&result)) {
          Clock::time_point sent_at;
          {
            std::lock_guard<std::mutex> lock(sent_mu);
            sent_at = sent[static_cast<size_t>(result.index())];
          }
          mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - sent_at).count());
          if (result.code() != 0) record_error(result.code(), result.error());
          if (result.cache() != "miss") ++hits;
        }
        writer.join();
        grpc::Status status = stream->Finish();
        if (!status.ok()) std::cerr << "serenity-load: stream ended with " << status.error_message() << "\n";
        std::lock_guard<std::mutex> lock(mu);
        latencies_ms.insert(latencies_ms.end(), mine.begin(), mine.end());
      });
    }
    for (std::thread& t : clients) t.join();
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(latencies_ms.begin(), latencies_ms.end());
  const double p50 = Percentile(latencies_ms, 0.50), p99 = Percentile(latencies_ms, 0.99);
  const double throughput = static_cast<double>(latencies_ms.size()) / seconds;
  if (flags.json) {
    std::cout << absl::StrFormat(
        "{\"mode\":\"%s\",\"cache\":\"%s\",\"clients\":%d,\"requests\":%d,\"errors\":%d,\"cache_hits\":%d,"
        "\"seconds\":%.3f,\"per_second\":%.1f,\"p50_ms\":%.3f,\"p90_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f}\n",
        flags.mode, flags.cache, flags.clients, static_cast<int64_t>(latencies_ms.size()), errors.load(), hits.load(),
        seconds, throughput, p50, Percentile(latencies_ms, 0.90), p99, latencies_ms.empty() ? 0 : latencies_ms.back());
  } else {
    std::cout << absl::StrFormat(
        "%s %s, %d clients: %d requests in %.2f s = %.1f/s; latency p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, "
        "max %.3f ms; %d errors, %d cache hits\n",
        flags.mode, flags.cache, flags.clients, static_cast<int64_t>(latencies_ms.size()), seconds, throughput, p50,
        Percentile(latencies_ms, 0.90), p99, latencies_ms.empty() ? 0 : latencies_ms.back(), errors.load(),
        hits.load());
  }
  if (errors.load() > 0) std::cerr << "serenity-load: first error: " << first_error << "\n";
  return errors.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace serenity

int main(int argc, char** argv) { return serenity::Run(argc, argv); }
