#include "tests/testing/arena_brute_force.h"

#include <algorithm>
#include <numeric>

namespace serenity::testing {

int64_t BruteForceArena(const std::vector<ArenaBuffer>& buffers, int64_t alignment) {
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  int64_t best = INT64_MAX;
  do {
    std::vector<int64_t> offsets(buffers.size(), -1);
    int64_t size = 0;
    for (size_t i : order) {
      int64_t offset = 0;
      for (bool moved = true; moved;) {
        moved = false;
        for (size_t j = 0; j < buffers.size(); ++j) {
          if (offsets[j] < 0 || buffers[j].last_step < buffers[i].first_step ||
              buffers[i].last_step < buffers[j].first_step) {
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

}  // namespace serenity::testing
