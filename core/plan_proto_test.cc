#include "core/plan_proto.h"

#include <random>

#include "core/graph/canonical_graph.h"
#include "gtest/gtest.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

TEST(PlanRequestTest, GraphSpecToProtoRoundTrips) {
  std::mt19937 rng(83);
  for (int trial = 0; trial < 50; ++trial) {
    const GraphSpec spec = testing::RandomDag(1 + trial % 20, rng);
    const Graph direct = *Graph::Build(spec);
    absl::StatusOr<Graph> through = Graph::Build(GraphSpecFromProto(GraphSpecToProto(spec)));
    ASSERT_TRUE(through.ok()) << through.status();
    EXPECT_EQ(Canonicalize(direct).serialization, Canonicalize(*through).serialization);
    for (OpId u = 0; u < direct.num_ops(); ++u) EXPECT_EQ(direct.op(u).name, through->op(u).name);
  }
}

// Each baseline has its own field of the Baselines message, read back by
// BaselineProto.
TEST(PlanProtoTest, EachBaselineHasItsField) {
  v1::Baselines baselines;
  int64_t peak = 1;
  for (const BaselineInfo& info : BaselineTable())
    MutableBaselineProto(info.baseline, &baselines)->set_peak_bytes(peak++);
  EXPECT_EQ(baselines.file_order().peak_bytes(), 1);
  EXPECT_EQ(baselines.kahn().peak_bytes(), 2);
  EXPECT_EQ(baselines.greedy().peak_bytes(), 3);
  EXPECT_EQ(baselines.inductor().peak_bytes(), 4);
  EXPECT_EQ(baselines.xla().peak_bytes(), 5);
  peak = 1;
  for (const BaselineInfo& info : BaselineTable()) {
    EXPECT_EQ(BaselineProto(info.baseline, baselines).peak_bytes(), peak++) << info.name;
    // The field is named as the baseline.
    EXPECT_NE(v1::Baselines::descriptor()->FindFieldByName(info.name), nullptr) << info.name;
  }
}

// Certificates map to the wire and back, each to its own value, and their
// names come from the one table.
TEST(PlanProtoTest, CertificatesMapOnce) {
  for (Certificate c : {Certificate::kOptimal, Certificate::kBestFound, Certificate::kBaseline}) {
    EXPECT_EQ(CertificateFromProto(CertificateToProto(c)), c) << CertificateName(c);
  }
  EXPECT_EQ(CertificateToProto(Certificate::kOptimal), v1::CERTIFICATE_OPTIMAL);
  EXPECT_EQ(CertificateToProto(Certificate::kBestFound), v1::CERTIFICATE_BEST_FOUND);
  EXPECT_EQ(CertificateToProto(Certificate::kBaseline), v1::CERTIFICATE_BASELINE);
  EXPECT_EQ(CertificateFromProto(v1::CERTIFICATE_UNSPECIFIED), Certificate::kBaseline);
  EXPECT_STREQ(CertificateName(Certificate::kOptimal), "optimal");
  EXPECT_STREQ(CertificateName(Certificate::kBestFound), "best_found");
  EXPECT_STREQ(CertificateName(Certificate::kBaseline), "baseline");
  EXPECT_EQ(BufferKindToProto(BufferKind::kTensor), v1::BUFFER_KIND_TENSOR);
  EXPECT_EQ(BufferKindToProto(BufferKind::kWorkspace), v1::BUFFER_KIND_WORKSPACE);
  EXPECT_EQ(BufferKindToProto(BufferKind::kWeight), v1::BUFFER_KIND_WEIGHT);
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

// A request's memories and pins: alignment 0 means options.alignment, an
// absent offset means anywhere, a negative one is refused.
TEST(PlanProtoTest, MemoriesAndPinsFromTheRequest) {
  v1::PlanOptions request;
  request.set_alignment(32);
  v1::Memory* sram = request.add_memories();
  sram->set_name("sram");
  sram->set_capacity_bytes(4096);
  sram->set_alignment(16);
  v1::Memory* dram = request.add_memories();
  dram->set_name("dram");
  dram->set_capacity_bytes(1 << 20);
  v1::Pin* anywhere = request.add_pins();
  anywhere->set_tensor("x");
  anywhere->set_memory("dram");
  v1::Pin* at = request.add_pins();
  at->set_tensor("y");
  at->set_memory("sram");
  at->set_offset(0);
  absl::StatusOr<PlanOptions> options = PlanOptionsFromProto(request);
  ASSERT_TRUE(options.ok()) << options.status();
  ASSERT_EQ(options->memories.size(), 2u);
  EXPECT_EQ(options->memories[0].alignment, 16);
  EXPECT_EQ(options->memories[1].alignment, 32);
  EXPECT_EQ(options->memories[1].capacity_bytes, 1 << 20);
  ASSERT_EQ(options->pins.size(), 2u);
  EXPECT_EQ(options->pins[0].offset, -1);
  EXPECT_EQ(options->pins[1].offset, 0);
  EXPECT_EQ(options->pins[1].memory, "sram");
  at->set_offset(-64);
  EXPECT_EQ(PlanOptionsFromProto(request).status().code(), absl::StatusCode::kInvalidArgument);
  at->set_offset(0);
  dram->set_alignment(-1);
  EXPECT_EQ(PlanOptionsFromProto(request).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace serenity
