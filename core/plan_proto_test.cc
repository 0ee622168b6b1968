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
