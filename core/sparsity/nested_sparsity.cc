#include "core/sparsity/nested_sparsity.h"

#include <cmath>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/saturating.h"
#include "core/util/status_macros.h"

namespace serenity {
namespace {

// The fraction of `tensor` at `level`: the named one, or 1.
double FractionAt(const SparsityLevel& level, const std::string& tensor) {
  auto it = level.density.find(tensor);
  return it == level.density.end() ? 1.0 : it->second;
}

// A request may describe tensors whose CSR sizes, summed over levels,
// exceed 64 bits: they then read as INT64_MAX (SaturatingAdd/Mul).

std::string DescribeFraction(const SparsityLevel& level, const std::string& tensor) {
  if (level.density.count(tensor) == 0) return "1 (not named, dense)";
  return absl::StrCat(level.density.at(tensor));
}

}  // namespace

std::vector<WeightMatrix> WeightMatricesOf(const Graph& graph) {
  std::vector<WeightMatrix> out;
  for (const Tensor& t : graph.tensors()) {
    if (!t.is_weight) continue;
    WeightMatrix w;
    w.name = t.name;
    w.dense_bytes = t.bytes;
    bool overflow = false;
    if (!t.shape.empty()) {
      w.rows = t.shape[0];
      for (size_t d = 1; d < t.shape.size(); ++d) overflow |= __builtin_mul_overflow(w.cols, t.shape[d], &w.cols);
    }
    int64_t elements = 0;
    overflow |= __builtin_mul_overflow(w.rows, w.cols, &elements);
    if (overflow || elements > t.bytes) {
      // Fewer bytes than elements (a sub-byte type, or a given size that
      // does not match the shape): one opaque 1 x 1 element.
      w.rows = 1;
      w.cols = 1;
      w.element_bytes = t.bytes;
    } else {
      w.element_bytes = elements > 0 ? t.bytes / elements : 0;
    }
    out.push_back(std::move(w));
  }
  return out;
}

namespace {

// CheckLevels, with the weight-name check only when `weights` is given.
absl::Status CheckLevelsAgainst(const std::vector<SparsityLevel>& levels, const std::vector<WeightMatrix>* weights) {
  if (levels.empty()) return absl::InvalidArgumentError("sparsity levels: the list is empty");
  absl::flat_hash_set<std::string> weight_names;
  if (weights != nullptr) {
    for (const WeightMatrix& w : *weights) weight_names.insert(w.name);
  }
  absl::flat_hash_set<std::string> level_names;
  std::set<std::string> named;  // every tensor some level names
  for (size_t l = 0; l < levels.size(); ++l) {
    const SparsityLevel& level = levels[l];
    if (level.name.empty()) return absl::InvalidArgumentError(absl::StrCat("sparsity level ", l, " has no name"));
    if (!level_names.insert(level.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("sparsity level '", level.name, "' is listed twice"));
    }
    if (!std::isfinite(level.time_us) || level.time_us < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("sparsity level '", level.name, "': time_us ", level.time_us, " is not a time (>= 0)"));
    }
    for (const auto& [tensor, fraction] : level.density) {
      if (weights != nullptr && weight_names.count(tensor) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("sparsity level '", level.name, "' names '", tensor, "', which is not a weight tensor"));
      }
      if (!(fraction >= 0 && fraction <= 1)) {
        return absl::InvalidArgumentError(absl::StrCat("sparsity level '", level.name, "': density of '", tensor,
                                                       "' is ", fraction, ", outside [0, 1]"));
      }
      named.insert(tensor);
    }
  }
  // Nesting, over every tensor some level names (the others are 1 throughout).
  for (size_t l = 1; l < levels.size(); ++l) {
    for (const std::string& tensor : named) {
      const double denser = FractionAt(levels[l - 1], tensor);
      const double sparser = FractionAt(levels[l], tensor);
      if (sparser > denser) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sparsity levels do not nest: '", tensor, "' has density ", DescribeFraction(levels[l], tensor),
            " at level '", levels[l].name, "', more than ", DescribeFraction(levels[l - 1], tensor),
            " at the denser level '", levels[l - 1].name, "' before it"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckLevels(const std::vector<SparsityLevel>& levels, const std::vector<WeightMatrix>& weights) {
  return CheckLevelsAgainst(levels, &weights);
}

absl::Status CheckLevelsAlone(const std::vector<SparsityLevel>& levels) { return CheckLevelsAgainst(levels, nullptr); }

absl::Status CheckSparsityOptions(const Graph& graph, const std::vector<SparsityLevel>& levels,
                                  const std::vector<std::string>& switch_points) {
  if (levels.empty()) {
    if (switch_points.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError("switch points need sparsity levels");
  }
  RETURN_IF_ERROR(CheckLevels(levels, WeightMatricesOf(graph)));
  std::vector<std::string> unknown;
  for (const std::string& op : switch_points) {
    if (!graph.FindOp(op).has_value()) unknown.push_back(absl::StrCat("'", op, "'"));
  }
  if (!unknown.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("switch points name ops the graph does not have: ", absl::StrJoin(unknown, ", ")));
  }
  return absl::OkStatus();
}

int64_t NonzeroCount(const WeightMatrix& w, double fraction) {
  return std::llround(fraction * static_cast<double>(w.rows * w.cols));
}

int64_t CsrBytes(const WeightMatrix& w, double fraction, const CsrFormat& format) {
  const int64_t nnz = NonzeroCount(w, fraction);
  return SaturatingAdd(SaturatingMul(nnz, SaturatingAdd(w.element_bytes, format.index_bytes)),
                       SaturatingMul(SaturatingAdd(w.rows, 1), format.pointer_bytes));
}

int64_t NestedCsrBytes(const WeightMatrix& w, const std::vector<double>& fractions, const CsrFormat& format) {
  if (fractions.empty()) return 0;
  const int64_t nnz = NonzeroCount(w, fractions.front());
  return SaturatingAdd(SaturatingMul(nnz, SaturatingAdd(w.element_bytes, format.index_bytes)),
                       SaturatingMul(static_cast<int64_t>(fractions.size()),
                                     SaturatingMul(SaturatingAdd(w.rows, 1), format.pointer_bytes)));
}

SparseWeightBytes CountWeightBytes(const std::vector<SparsityLevel>& levels, const std::vector<WeightMatrix>& weights,
                                   const CsrFormat& format) {
  SparseWeightBytes out;
  out.levels.resize(levels.size());
  for (const WeightMatrix& w : weights) {
    bool named = false;
    std::vector<double> fractions;
    for (const SparsityLevel& level : levels) {
      named = named || level.density.count(w.name) > 0;
      fractions.push_back(FractionAt(level, w.name));
    }
    for (size_t l = 0; l < levels.size(); ++l) {
      LevelWeightBytes& level = out.levels[l];
      level.dense_bytes = SaturatingAdd(
          level.dense_bytes, named ? SaturatingMul(NonzeroCount(w, fractions[l]), w.element_bytes) : w.dense_bytes);
      level.csr_bytes = SaturatingAdd(level.csr_bytes, named ? CsrBytes(w, fractions[l], format) : w.dense_bytes);
    }
    out.nested_bytes = SaturatingAdd(out.nested_bytes, named ? NestedCsrBytes(w, fractions, format) : w.dense_bytes);
  }
  for (const LevelWeightBytes& level : out.levels)
    out.separate_bytes = SaturatingAdd(out.separate_bytes, level.csr_bytes);
  return out;
}

}  // namespace serenity
