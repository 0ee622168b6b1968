#include "core/sparsity/nested_sparsity.h"

#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace serenity {
namespace {

// A [4, 2, 3, 3] float32 convolution weight: 4 rows x 18 cols, 72 elements,
// 288 bytes.
WeightMatrix Conv() { return WeightMatrix{"conv.w", 4, 18, 4, 288}; }
// A [4] float32 bias: 4 rows x 1 col, 16 bytes.
WeightMatrix Bias() { return WeightMatrix{"conv.b", 4, 1, 4, 16}; }

TEST(WeightMatricesOfTest, RowsAreTheFirstDimensionColsTheRest) {
  GraphSpec spec;
  spec.tensors = {{"x", {1, 2, 5, 5}},
                  {"w", {4, 2, 3, 3}, 1, -1, true},
                  {"b", {4}, 1, -1, true},
                  {"s", {}, 10, -1, true},  // float16 scalar
                  {"y", {1, 4, 3, 3}}};
  spec.ops = {{"conv", "Conv", {"x", "w", "b", "s"}, {"y"}, 0, 0, {}}};
  spec.inputs = {"x"};
  spec.outputs = {"y"};
  absl::StatusOr<Graph> graph = Graph::Build(spec);
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<WeightMatrix> w = WeightMatricesOf(*graph);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].name, "w");
  EXPECT_EQ(w[0].rows, 4);
  EXPECT_EQ(w[0].cols, 18);
  EXPECT_EQ(w[0].element_bytes, 4);
  EXPECT_EQ(w[0].dense_bytes, 288);
  EXPECT_EQ(w[1].rows, 4);  // 1-D: one column
  EXPECT_EQ(w[1].cols, 1);
  EXPECT_EQ(w[2].rows, 1);  // scalar: 1 x 1
  EXPECT_EQ(w[2].cols, 1);
  EXPECT_EQ(w[2].element_bytes, 2);
}

TEST(WeightMatricesOfTest, FewerBytesThanElementsIsOneOpaqueElement) {
  GraphSpec spec;
  // int4-like: 8 elements in 4 given bytes.
  spec.tensors = {{"x", {2}}, {"w", {2, 4}, 1, 4, true}, {"y", {2}}};
  spec.ops = {{"op", "MatMul", {"x", "w"}, {"y"}, 0, 0, {}}};
  spec.inputs = {"x"};
  spec.outputs = {"y"};
  absl::StatusOr<Graph> graph = Graph::Build(spec);
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<WeightMatrix> w = WeightMatricesOf(*graph);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].rows, 1);
  EXPECT_EQ(w[0].cols, 1);
  EXPECT_EQ(w[0].element_bytes, 4);
  EXPECT_EQ(w[0].dense_bytes, 4);
}

TEST(CsrBytesTest, HugeCountsSaturate) {
  const WeightMatrix w{"huge", int64_t{1} << 40, int64_t{1} << 20, int64_t{1} << 20, int64_t{1} << 62};
  EXPECT_EQ(CsrBytes(w, 1.0), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(NestedCsrBytes(w, {1.0, 0.5}), std::numeric_limits<int64_t>::max());
  const SparseWeightBytes bytes = CountWeightBytes({{"a", {{"huge", 1.0}}, 0}, {"b", {{"huge", 0.5}}, 0}}, {w});
  EXPECT_EQ(bytes.separate_bytes, std::numeric_limits<int64_t>::max());
}

TEST(CsrBytesTest, HandComputedLevels) {
  const WeightMatrix w = Conv();
  // 0.5 * 72 = 36 nonzeros: values 36*4 + indices 36*4 + pointers 5*4.
  EXPECT_EQ(NonzeroCount(w, 0.5), 36);
  EXPECT_EQ(CsrBytes(w, 0.5), 144 + 144 + 20);
  // 18 nonzeros: 72 + 72 + 20; 9 nonzeros: 36 + 36 + 20.
  EXPECT_EQ(CsrBytes(w, 0.25), 164);
  EXPECT_EQ(CsrBytes(w, 0.125), 92);
  // Dense as CSR: 72 * 8 + 20, more than the 288 dense bytes.
  EXPECT_EQ(CsrBytes(w, 1.0), 596);
  // Nothing kept: only the 5 row pointers.
  EXPECT_EQ(CsrBytes(w, 0.0), 20);
}

TEST(CsrBytesTest, IndexWidthsAreOptions) {
  // 36 nonzeros with int16 indices and int64 pointers: 144 + 72 + 5*8.
  EXPECT_EQ(CsrBytes(Conv(), 0.5, CsrFormat{2, 8}), 144 + 72 + 40);
}

TEST(CsrBytesTest, CountsRoundHalfAwayFromZero) {
  const WeightMatrix w{"v", 5, 1, 4, 20};
  EXPECT_EQ(NonzeroCount(w, 0.5), 3);   // 2.5 -> 3
  EXPECT_EQ(NonzeroCount(w, 0.25), 1);  // 1.25 -> 1
  EXPECT_EQ(NonzeroCount(w, 0.75), 4);  // 3.75 -> 4
}

TEST(NestedCsrBytesTest, DensestValuesOnceAndOnePointerArrayPerLevel) {
  const WeightMatrix w = Conv();
  // Values and indices of the densest level (36 nonzeros) once: 36 * 8 = 288;
  // three row-pointer arrays of 5 int32: 60. Separate copies: 308 + 164 + 92.
  EXPECT_EQ(NestedCsrBytes(w, {0.5, 0.25, 0.125}), 348);
  EXPECT_EQ(CsrBytes(w, 0.5) + CsrBytes(w, 0.25) + CsrBytes(w, 0.125), 564);
  // One level: nested is that level's CSR.
  EXPECT_EQ(NestedCsrBytes(w, {0.25}), CsrBytes(w, 0.25));
}

TEST(CountWeightBytesTest, NamedTensorsSparseOthersDense) {
  const std::vector<WeightMatrix> weights = {Conv(), Bias()};
  const std::vector<SparsityLevel> levels = {{"half", {{"conv.w", 0.5}}, 100}, {"quarter", {{"conv.w", 0.25}}, 60}};
  ASSERT_TRUE(CheckLevels(levels, weights).ok());
  const SparseWeightBytes bytes = CountWeightBytes(levels, weights);
  ASSERT_EQ(bytes.levels.size(), 2u);
  // Values: 36*4 + the bias's 16; 18*4 + 16.
  EXPECT_EQ(bytes.levels[0].dense_bytes, 160);
  EXPECT_EQ(bytes.levels[1].dense_bytes, 88);
  // CSR: 308 + 16; 164 + 16.
  EXPECT_EQ(bytes.levels[0].csr_bytes, 324);
  EXPECT_EQ(bytes.levels[1].csr_bytes, 180);
  EXPECT_EQ(bytes.separate_bytes, 504);
  // Nested: 36*8 + 2*5*4 = 328, plus the bias once.
  EXPECT_EQ(bytes.nested_bytes, 344);
}

TEST(CountWeightBytesTest, ATensorNamedOnlyByASparserLevelIsDenseCsrBefore) {
  const std::vector<WeightMatrix> weights = {Conv()};
  const std::vector<SparsityLevel> levels = {{"dense", {}, 100}, {"half", {{"conv.w", 0.5}}, 60}};
  ASSERT_TRUE(CheckLevels(levels, weights).ok());
  const SparseWeightBytes bytes = CountWeightBytes(levels, weights);
  EXPECT_EQ(bytes.levels[0].dense_bytes, 288);
  EXPECT_EQ(bytes.levels[0].csr_bytes, 596);  // fraction 1 in CSR
  EXPECT_EQ(bytes.levels[1].csr_bytes, 308);
  EXPECT_EQ(bytes.nested_bytes, 72 * 8 + 2 * 20);
}

absl::Status Check(const std::vector<SparsityLevel>& levels) { return CheckLevels(levels, {Conv(), Bias()}); }

TEST(CheckLevelsTest, GrowingDensityNamesBothLevelsTheTensorAndBothDensities) {
  const absl::Status s = Check({{"a", {{"conv.w", 0.25}}, 10}, {"b", {{"conv.w", 0.5}}, 5}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "sparsity levels do not nest: 'conv.w' has density 0.5 at level 'b', more than 0.25 at the denser level "
            "'a' before it");
}

TEST(CheckLevelsTest, ATensorDroppedByASparserLevelIsDenseThereAndBreaksNesting) {
  const absl::Status s = Check({{"a", {{"conv.w", 0.5}}, 10}, {"b", {}, 5}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "sparsity levels do not nest: 'conv.w' has density 1 (not named, dense) at level 'b', more than 0.5 at "
            "the denser level 'a' before it");
}

TEST(CheckLevelsTest, EqualDensitiesNest) {
  EXPECT_TRUE(Check({{"a", {{"conv.w", 0.5}}, 1}, {"b", {{"conv.w", 0.5}}, 1}}).ok());
}

TEST(CheckLevelsTest, OtherErrors) {
  EXPECT_EQ(Check({}).message(), "sparsity levels: the list is empty");
  EXPECT_EQ(Check({{"a", {{"nope", 0.5}}, 1}}).message(),
            "sparsity level 'a' names 'nope', which is not a weight tensor");
  EXPECT_EQ(Check({{"a", {{"conv.w", 1.5}}, 1}}).message(),
            "sparsity level 'a': density of 'conv.w' is 1.5, outside [0, 1]");
  EXPECT_EQ(Check({{"a", {{"conv.w", -0.1}}, 1}}).message(),
            "sparsity level 'a': density of 'conv.w' is -0.1, outside [0, 1]");
  EXPECT_EQ(Check({{"a", {}, 1}, {"a", {}, 1}}).message(), "sparsity level 'a' is listed twice");
  EXPECT_EQ(Check({{"", {}, 1}}).message(), "sparsity level 0 has no name");
  EXPECT_EQ(Check({{"a", {}, -1}}).message(), "sparsity level 'a': time_us -1 is not a time (>= 0)");
}

}  // namespace
}  // namespace serenity
