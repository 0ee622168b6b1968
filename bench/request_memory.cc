// Measures the memory a PlanRequest takes to parse, build and (optionally)
// plan, to calibrate EstimatePlanningBytes (core/request_scan.h).
//
//   serenity-request-memory write FILE --ops N --shape chain|fanout|random [--name-length L]
//   serenity-request-memory measure FILE [--plan ALGORITHM]
//
// `write` serializes a PlanRequest to FILE. `measure` (a fresh process, so
// its peak RSS is its own) reads FILE, scans it, parses it and builds its
// graph (GraphFromRequest), or with --plan runs the whole job
// (ExecutePlanRequest with that algorithm, 2 s, 100,000 search states), and
// prints one line: the shape, the estimate, the peak of live heap bytes
// (every operator new, with its usable size plus an 8-byte chunk header)
// and the growth of the peak RSS (VmHWM) from the start of `measure`, both
// counting the wire bytes held, as a server holds the received message.
#include <malloc.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <new>
#include <random>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/plan_request.h"
#include "core/request_scan.h"
#include "serenity/v1/scheduler.pb.h"
#include "tests/testing/test_graph.h"

namespace {

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

void Count(void* p) {
  const int64_t now = g_live.fetch_add(static_cast<int64_t>(malloc_usable_size(p)) + 8) +
                      static_cast<int64_t>(malloc_usable_size(p)) + 8;
  int64_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
}
void Uncount(void* p) { g_live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)) + 8); }

void* Allocate(size_t n, size_t align = 0) {
  void* p = align > alignof(std::max_align_t) ? aligned_alloc(align, (n + align - 1) / align * align)
                                              : malloc(n == 0 ? 1 : n);
  if (p == nullptr) {
    std::fprintf(stderr, "out of memory\n");
    std::abort();
  }
  Count(p);
  return p;
}
void Free(void* p) {
  if (p == nullptr) return;
  Uncount(p);
  free(p);
}

}  // namespace

void* operator new(size_t n) { return Allocate(n); }
void* operator new[](size_t n) { return Allocate(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return Allocate(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return Allocate(n); }
void* operator new(size_t n, std::align_val_t a) { return Allocate(n, static_cast<size_t>(a)); }
void* operator new[](size_t n, std::align_val_t a) { return Allocate(n, static_cast<size_t>(a)); }
void operator delete(void* p) noexcept { Free(p); }
void operator delete[](void* p) noexcept { Free(p); }
void operator delete(void* p, size_t) noexcept { Free(p); }
void operator delete[](void* p, size_t) noexcept { Free(p); }
void operator delete(void* p, std::align_val_t) noexcept { Free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { Free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { Free(p); }

namespace serenity {
namespace {

// /proc/self/status field in kB, as bytes.
int64_t StatusBytes(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::atoll(line.c_str() + std::strlen(field) + 1) * 1024;
  }
  return -1;
}

std::string Name(const char* prefix, int i, int length) {
  std::string name = absl::StrCat(prefix, i);
  if (static_cast<int>(name.size()) < length) name.insert(0, static_cast<size_t>(length) - name.size(), 'x');
  return name;
}

// chain: t0 -> op0 -> t1 -> ... ; fanout: t0 feeds every op, each writes
// a graph output; random: testing::RandomDag.
GraphSpec MakeSpec(int n, const std::string& shape, int name_length) {
  if (shape == "random") {
    std::mt19937 rng(1);
    return testing::RandomDag(n, rng);
  }
  testing::TestGraph g;
  g.Input(Name("t", 0, name_length), 64);
  for (int i = 0; i < n; ++i) {
    const std::string in = Name("t", shape == "chain" ? i : 0, name_length);
    const std::string out = Name("t", i + 1, name_length);
    g.Op(Name("op", i, name_length), "Relu", {in}, {{out, 64}});
    if (shape == "fanout" || i == n - 1) g.Output(out);
  }
  return g.spec();
}

int Write(const std::string& path, int n, const std::string& shape, int name_length) {
  v1::PlanRequest request;
  *request.mutable_graph() = GraphSpecToProto(MakeSpec(n, shape, name_length));
  request.set_model_name(absl::StrCat(shape, "_", n));
  std::ofstream out(path, std::ios::binary);
  if (!request.SerializeToOstream(&out)) return 1;
  return 0;
}

int Measure(const std::string& path, const std::string& algorithm) {
  const int64_t rss0 = StatusBytes("VmRSS:");
  const int64_t live0 = g_live.load();
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    bytes = ss.str();
  }
  g_peak.store(g_live.load());
  absl::StatusOr<RequestShape> shape = ScanPlanRequest(bytes);
  if (!shape.ok()) {
    std::cerr << shape.status() << "\n";
    return 1;
  }
  int64_t message_bytes = 0;
  {
    v1::PlanRequest request;
    const int64_t before = g_live.load();
    if (!request.ParseFromString(bytes)) return 1;
    message_bytes = g_live.load() - before;
    if (algorithm.empty()) {
      absl::StatusOr<Graph> graph = GraphFromRequest(request);
      if (!graph.ok()) {
        std::cerr << graph.status() << "\n";
        return 1;
      }
    } else {
      request.mutable_options()->set_algorithm(algorithm);
      request.mutable_options()->set_time_limit_seconds(2);
      request.mutable_options()->set_max_search_states(100000);
      absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
      if (!plan.ok()) {
        std::cerr << plan.status() << "\n";
        return 1;
      }
    }
  }
  const int64_t heap = g_peak.load() - live0;
  const int64_t rss = StatusBytes("VmHWM:") - rss0;
  const int64_t estimate = EstimatePlanningBytes(*shape);
  std::printf(
      "ops %lld tensors %lld refs %lld name_bytes %lld wire %lld message %lld | heap_peak %lld rss_growth %lld "
      "estimate %lld | estimate/heap %.2f estimate/rss %.2f\n",
      static_cast<long long>(shape->ops), static_cast<long long>(shape->tensors),
      static_cast<long long>(shape->op_inputs + shape->op_outputs), static_cast<long long>(shape->name_bytes),
      static_cast<long long>(shape->wire_bytes), static_cast<long long>(message_bytes), static_cast<long long>(heap),
      static_cast<long long>(rss), static_cast<long long>(estimate),
      static_cast<double>(estimate) / static_cast<double>(heap),
      static_cast<double>(estimate) / static_cast<double>(rss));
  return 0;
}

}  // namespace
}  // namespace serenity

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s write FILE --ops N --shape S [--name-length L] | measure FILE [--plan ALG]\n",
                 argv[0]);
    return 2;
  }
  const std::string mode = argv[1], path = argv[2];
  int ops = 1000, name_length = 0;
  std::string shape = "chain", algorithm;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--ops")
      ops = std::atoi(value.c_str());
    else if (flag == "--shape")
      shape = value;
    else if (flag == "--name-length")
      name_length = std::atoi(value.c_str());
    else if (flag == "--plan")
      algorithm = value;
    else
      return 2;
  }
  if (mode == "write") return serenity::Write(path, ops, shape, name_length);
  if (mode == "measure") return serenity::Measure(path, algorithm);
  return 2;
}
