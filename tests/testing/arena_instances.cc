#include "tests/testing/arena_instances.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace serenity::testing {

int64_t BruteForceArena(const std::vector<ArenaBuffer>& buffers, int64_t alignment, const std::vector<int64_t>& fixed) {
  std::vector<int64_t> start = fixed.empty() ? std::vector<int64_t>(buffers.size(), -1) : fixed;
  std::vector<size_t> order;
  int64_t fixed_size = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (start[i] < 0) order.push_back(i);
    if (start[i] >= 0) fixed_size = std::max(fixed_size, start[i] + buffers[i].size);
  }
  int64_t best = INT64_MAX;
  do {
    std::vector<int64_t> offsets = start;
    int64_t size = fixed_size;
    for (size_t i : order) {
      int64_t offset = 0;
      for (bool moved = true; moved;) {
        moved = false;
        for (size_t j = 0; j < buffers.size(); ++j) {
          if (offsets[j] < 0 || buffers[j].last_step < buffers[i].first_step ||
              buffers[i].last_step < buffers[j].first_step || buffers[i].size == 0 || buffers[j].size == 0) {
            continue;
          }
          if (offset < offsets[j] + buffers[j].size && offsets[j] < offset + buffers[i].size) {
            offset = (offsets[j] + buffers[j].size + alignment - 1) / alignment * alignment;
            moved = true;
          }
        }
      }
      offsets[i] = offset;
      size = std::max(size, offset + buffers[i].size);
    }
    best = std::min(best, size);
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

std::vector<ArenaBuffer> RandomSmallArenaInstance(int n, int64_t min_size, std::mt19937& rng) {
  std::vector<ArenaBuffer> buffers;
  for (int i = 0; i < n; ++i) {
    int first = std::uniform_int_distribution<int>(0, 6)(rng);
    int last = first + std::uniform_int_distribution<int>(0, 4)(rng);
    buffers.push_back({std::uniform_int_distribution<int64_t>(min_size, 12)(rng), first, last});
  }
  return buffers;
}

absl::StatusOr<ArenaInstance> ReadChallengingInstance(const std::string& name) {
  const std::string path = std::string(SERENITY_SHARED_DIR "/bench/arena/minimalloc/challenging_") + name + ".csv";
  std::ifstream in(path);
  if (!in.good()) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ParseArenaCsv(text);
}

}  // namespace serenity::testing
