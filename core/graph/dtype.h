// Element types, numbered as ONNX's TensorProto.DataType (stable on the
// wire), and their sizes in bytes.
#ifndef SERENITY_CORE_GRAPH_DTYPE_H_
#define SERENITY_CORE_GRAPH_DTYPE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace serenity {

// Returns the size in bytes of one element of ONNX data type `dtype`, or
// InvalidArgument for types without a fixed size (STRING, UNDEFINED) and
// unknown numbers.
absl::StatusOr<int64_t> DtypeSize(int32_t dtype);

// Returns a short lowercase name ("float32", "int64", ...) or "dtype(N)".
std::string DtypeName(int32_t dtype);

// Returns the number of bytes of a tensor with `shape` and `dtype`:
// product(shape) * DtypeSize(dtype). InvalidArgument for negative dims or
// unsized types; OutOfRange when the product overflows 64 bits.
absl::StatusOr<int64_t> TensorBytes(const std::vector<int64_t>& shape, int32_t dtype);

}  // namespace serenity

#endif  // SERENITY_CORE_GRAPH_DTYPE_H_
