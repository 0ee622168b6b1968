// Saturating arithmetic for byte and element counts that come from a
// request and may overflow 64 bits: the result is INT64_MAX instead.
#ifndef SERENITY_CORE_UTIL_SATURATING_H_
#define SERENITY_CORE_UTIL_SATURATING_H_

#include <cstdint>
#include <limits>

namespace serenity {

// a + b, or INT64_MAX when that overflows (non-negative operands).
inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t out = 0;
  return __builtin_add_overflow(a, b, &out) ? std::numeric_limits<int64_t>::max() : out;
}

// a * b, or INT64_MAX when that overflows (non-negative operands).
inline int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? std::numeric_limits<int64_t>::max() : out;
}

}  // namespace serenity

#endif  // SERENITY_CORE_UTIL_SATURATING_H_
