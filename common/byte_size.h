// Byte counts with unit suffixes, as the command-line flags take them.
#ifndef SERENITY_COMMON_BYTE_SIZE_H_
#define SERENITY_COMMON_BYTE_SIZE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace serenity {

// The suffixes ParseByteSize accepts, for error and help texts.
inline constexpr char kByteSizeSuffixes[] = "B, K, KiB, M, MiB, G, GiB (powers of 1024), KB, MB, GB (powers of 1000)";

// Parses a byte count: a plain non-negative integer is bytes; a number
// followed (optionally after spaces) by a unit multiplies it:
//   B = 1; K, KiB = 1024; M, MiB = 1024^2; G, GiB = 1024^3;
//   KB = 1000; MB = 1000^2; GB = 1000^3.
// Units are matched regardless of case ("k", "kib", "KIB", "mb" are
// accepted; a "b" always means bytes, never bits). Any other unit ("Ki",
// "T", "bytes") is refused.
// A decimal fraction ("1.5MiB", "0.5K") is accepted only when the result is
// a whole number of bytes ("1.5MiB" = 1572864; "0.3K" is refused).
// InvalidArgument, naming the accepted suffixes, for an empty text, a
// negative number, an unknown unit, a fraction that is not whole bytes, or
// a value beyond 2^63-1 bytes.
absl::StatusOr<int64_t> ParseByteSize(absl::string_view text);

}  // namespace serenity

#endif  // SERENITY_COMMON_BYTE_SIZE_H_
