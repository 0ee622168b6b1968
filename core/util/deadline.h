// Deadlines from a start time and a number of seconds that may come from a
// request: unbounded, NaN or negative values do not overflow the clock.
#ifndef SERENITY_CORE_UTIL_DEADLINE_H_
#define SERENITY_CORE_UTIL_DEADLINE_H_

#include <algorithm>
#include <chrono>

namespace serenity {

// `start` plus `seconds` (negative: `start`); the clock's end of time for
// NaN, infinity or anything from 10^9 seconds up.
inline std::chrono::steady_clock::time_point TimeAfter(std::chrono::steady_clock::time_point start, double seconds) {
  if (!(seconds < 1e9)) return std::chrono::steady_clock::time_point::max();
  return start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(std::max(0.0, seconds)));
}

// A search's end from its limit in seconds: none (the clock's end of
// time) when `seconds` is not positive, as SearchOptions::time_limit_seconds.
inline std::chrono::steady_clock::time_point DeadlineIn(double seconds) {
  return seconds > 0 ? TimeAfter(std::chrono::steady_clock::now(), seconds)
                     : std::chrono::steady_clock::time_point::max();
}

}  // namespace serenity

#endif  // SERENITY_CORE_UTIL_DEADLINE_H_
