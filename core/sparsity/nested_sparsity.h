// Nested sparse models (issue 20): sparsity levels of one network, the check
// that they nest, and the bytes their weights take in CSR, one copy per level
// or all levels in one nested CSR store. No planning here (sparsity_report.h
// puts these numbers next to a plan).
//
// Levels are listed densest first. A level gives, per weight tensor, the
// fraction of its elements that are nonzero (a weight tensor it does not name
// is dense, fraction 1). Levels nest: every weight kept at a sparser level is
// kept at the denser ones, so a tensor's fraction may not grow from a level to
// the next sparser one.
//
// Matrix view. A weight tensor of shape [d0, d1, ..., dk] is a matrix of
// rows = d0 and cols = d1 * ... * dk (cols = 1 for a 1-D tensor; a scalar is
// 1 x 1): for a convolution [out, in/groups, kh, kw] one row per output
// channel. A level keeps nnz = llround(fraction * rows * cols) elements
// (rounded to the nearest integer, halves away from zero; llround is
// monotone, so nesting fractions gives nesting counts). Element bytes are the
// tensor's bytes / (rows * cols); a tensor with fewer bytes than elements (a
// sub-byte type, or a given size that does not match its shape) counts as
// one 1 x 1 element of all its bytes. Byte counts saturate at INT64_MAX.
//
// CSR of one level (the usual compressed sparse rows):
//   values         nnz * element bytes
//   column indices nnz * index_bytes          (int32 by default)
//   row pointers   (rows + 1) * pointer_bytes (int32 by default)
// Separate copies: the sum of every level's CSR.
//
// Nested CSR of all levels, one store: the densest level's values and column
// indices once, and one row-pointer array of rows + 1 entries per level:
//   values         nnz_0 * element bytes
//   column indices nnz_0 * index_bytes
//   row pointers   levels * (rows + 1) * pointer_bytes
// Within each row the densest level's nonzeros are ordered by the sparsest
// level that still keeps them: first those the sparsest level keeps, then
// those the next denser level adds, and so on. Because levels nest, each
// level's nonzeros of a row are then a prefix of that row's stored nonzeros,
// which is what lets all levels share one values array. Row pointer array
// p_l of level l is that level's own CSR row pointer (p_l[0] = 0,
// p_l[i+1] - p_l[i] = level l's nonzeros in row i, p_l[rows] = nnz_l);
// p_0 (the densest level's) also marks where each row starts in the shared
// arrays, so level l reads row i from
//   values[p_0[i] .. p_0[i] + (p_l[i+1] - p_l[i])).
// Weight tensors no level names stay dense in every layout (their bytes once
// per copy).
#ifndef SERENITY_CORE_SPARSITY_NESTED_SPARSITY_H_
#define SERENITY_CORE_SPARSITY_NESTED_SPARSITY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/graph/graph.h"

namespace serenity {

// One sparsity level: a name, the nonzero fraction per weight tensor (absent:
// 1), and the time one whole inference takes at this level, in microseconds.
struct SparsityLevel {
  std::string name;
  std::map<std::string, double> density;
  double time_us = 0;
};

// Index widths of the CSR layouts, in bytes.
struct CsrFormat {
  int64_t index_bytes = 4;    // one column index (int32)
  int64_t pointer_bytes = 4;  // one row pointer (int32)
};

// A weight tensor as the CSR layouts see it.
struct WeightMatrix {
  std::string name;
  int64_t rows = 1;
  int64_t cols = 1;
  int64_t element_bytes = 0;
  int64_t dense_bytes = 0;  // the tensor's bytes
};

// The weight tensors of `graph` (is_weight), in tensor order, viewed as
// matrices as the header says.
std::vector<WeightMatrix> WeightMatricesOf(const Graph& graph);

// OK when `levels` is a valid nested level list for `weights`; otherwise
// InvalidArgument naming the problem: no levels; an empty or repeated level
// name; a negative or non-finite time; a tensor that is not one of
// `weights`; a fraction outside [0, 1] (or NaN); a fraction that grows from a
// level to the next sparser one (naming both levels, the tensor and both
// fractions).
absl::Status CheckLevels(const std::vector<SparsityLevel>& levels, const std::vector<WeightMatrix>& weights);

// CheckLevels without a model: every check but whether the named tensors
// are its weights (e.g. for a levels file read before its model).
absl::Status CheckLevelsAlone(const std::vector<SparsityLevel>& levels);

// The sparsity options of a request for `graph`: OK without levels and
// switch points; otherwise CheckLevels against the graph's weights, and
// InvalidArgument for switch points without levels or naming ops the graph
// does not have (all of them named).
absl::Status CheckSparsityOptions(const Graph& graph, const std::vector<SparsityLevel>& levels,
                                  const std::vector<std::string>& switch_points);

// The nonzero count of `w` at `fraction`: llround(fraction * rows * cols).
int64_t NonzeroCount(const WeightMatrix& w, double fraction);

// Bytes of `w` in one level's CSR at `fraction`.
int64_t CsrBytes(const WeightMatrix& w, double fraction, const CsrFormat& format = {});

// Bytes of `w` in the nested CSR of `fractions` (one per level, densest
// first; nested).
int64_t NestedCsrBytes(const WeightMatrix& w, const std::vector<double>& fractions, const CsrFormat& format = {});

// Weight bytes of one level.
struct LevelWeightBytes {
  // Every weight tensor at this level's fraction, values only: nnz * element
  // bytes (a tensor the level does not name: its dense bytes).
  int64_t dense_bytes = 0;
  // A tensor some level names: its CSR at this level's fraction; the others:
  // their dense bytes.
  int64_t csr_bytes = 0;
};

// Weight bytes of every level and of the two ways of storing them all.
struct SparseWeightBytes {
  std::vector<LevelWeightBytes> levels;  // parallel to the levels
  int64_t separate_bytes = 0;            // sum of levels[l].csr_bytes
  int64_t nested_bytes = 0;              // nested CSR of the named tensors + the others dense, once
};

// The byte counts of `levels` (already checked with CheckLevels) over
// `weights`. A tensor some level names is sparse in every level (CSR, with
// fraction 1 where a level does not name it); the others are dense.
SparseWeightBytes CountWeightBytes(const std::vector<SparsityLevel>& levels, const std::vector<WeightMatrix>& weights,
                                   const CsrFormat& format = {});

}  // namespace serenity

#endif  // SERENITY_CORE_SPARSITY_NESTED_SPARSITY_H_
