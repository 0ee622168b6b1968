// The optimal arena of a small instance by brute force, for tests of the
// arena searches.
#ifndef SERENITY_TESTS_TESTING_ARENA_BRUTE_FORCE_H_
#define SERENITY_TESTS_TESTING_ARENA_BRUTE_FORCE_H_

#include <cstdint>
#include <vector>

#include "core/arena/arena_planner.h"

namespace serenity::testing {

// The least arena size over every order of `buffers` (anchors ignored),
// each buffer placed first-fit: at the lowest multiple of `alignment` clear
// of every placed buffer it shares a step with. Every packing whose buffers
// rest on others or on zero is reached this way, so this is the optimum.
// Factorial time: a handful of buffers only.
int64_t BruteForceArena(const std::vector<ArenaBuffer>& buffers, int64_t alignment);

}  // namespace serenity::testing

#endif  // SERENITY_TESTS_TESTING_ARENA_BRUTE_FORCE_H_
