#include "core/graph/dtype.h"

#include <vector>

#include "absl/strings/str_cat.h"

namespace serenity {
namespace {

struct DtypeInfo {
  int32_t number;
  int64_t size;  // 0: no fixed size
  const char* name;
};

// ONNX TensorProto.DataType numbering.
constexpr DtypeInfo kDtypes[] = {
    {0, 0, "undefined"},    {1, 4, "float32"},   {2, 1, "uint8"},   {3, 1, "int8"},    {4, 2, "uint16"},
    {5, 2, "int16"},        {6, 4, "int32"},     {7, 8, "int64"},   {8, 0, "string"},  {9, 1, "bool"},
    {10, 2, "float16"},     {11, 8, "float64"},  {12, 4, "uint32"}, {13, 8, "uint64"}, {14, 8, "complex64"},
    {15, 16, "complex128"}, {16, 2, "bfloat16"},
};

const DtypeInfo* Find(int32_t dtype) {
  for (const DtypeInfo& info : kDtypes) {
    if (info.number == dtype) return &info;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<int64_t> DtypeSize(int32_t dtype) {
  const DtypeInfo* info = Find(dtype);
  if (info == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown data type ", dtype));
  }
  if (info->size == 0) {
    return absl::InvalidArgumentError(absl::StrCat("data type ", info->name, " has no fixed element size"));
  }
  return info->size;
}

std::string DtypeName(int32_t dtype) {
  const DtypeInfo* info = Find(dtype);
  return info != nullptr ? info->name : absl::StrCat("dtype(", dtype, ")");
}

absl::StatusOr<int64_t> TensorBytes(const std::vector<int64_t>& shape, int32_t dtype) {
  absl::StatusOr<int64_t> element = DtypeSize(dtype);
  if (!element.ok()) return element.status();
  int64_t bytes = *element;
  for (int64_t dim : shape) {
    if (dim < 0) {
      return absl::InvalidArgumentError(absl::StrCat("negative dimension ", dim));
    }
    if (__builtin_mul_overflow(bytes, dim, &bytes)) {
      return absl::OutOfRangeError("size overflows 64 bits");
    }
  }
  return bytes;
}

}  // namespace serenity
