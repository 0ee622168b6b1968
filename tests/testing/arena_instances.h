// Arena instances for the tests of the arena planners: small random ones
// with their optimum by brute force, and the shared benchmark's files.
#ifndef SERENITY_TESTS_TESTING_ARENA_INSTANCES_H_
#define SERENITY_TESTS_TESTING_ARENA_INSTANCES_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/arena/arena_csv.h"
#include "core/arena/arena_planner.h"

namespace serenity::testing {

// The least arena size over every order of `buffers` (anchors ignored),
// each buffer placed first-fit: at the lowest multiple of `alignment` clear
// of every placed buffer it shares a step with. Every packing whose buffers
// rest on others or on zero is reached this way, so this is the optimum.
// Factorial time: a handful of buffers only. With `fixed` (one entry per
// buffer, -1: free), the buffers with an offset stay there and only the
// free ones are ordered: the optimum with those offsets kept. Buffers of
// size 0 meet nothing.
int64_t BruteForceArena(const std::vector<ArenaBuffer>& buffers, int64_t alignment,
                        const std::vector<int64_t>& fixed = {});

// `n` buffers small enough for BruteForceArena: first step in 0..6, 0..4
// steps more, size in min_size..12.
std::vector<ArenaBuffer> RandomSmallArenaInstance(int n, int64_t min_size, std::mt19937& rng);

// ../shared/bench/arena/minimalloc/challenging_<name>.csv, parsed.
absl::StatusOr<ArenaInstance> ReadChallengingInstance(const std::string& name);

}  // namespace serenity::testing

#endif  // SERENITY_TESTS_TESTING_ARENA_INSTANCES_H_
