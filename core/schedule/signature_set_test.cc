#include "core/schedule/signature_set.h"

#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace serenity {
namespace {

// Random inserts and erases against std::set, with enough entries to grow
// the index several times and long probe runs through erased slots.
TEST(SignatureSetTest, InsertAndEraseMatchAnOrderedSet) {
  for (size_t words : {1, 3}) {
    std::mt19937_64 rng(words);
    SignatureSet set(words);
    std::set<std::vector<uint64_t>> model;
    for (int step = 0; step < 200'000; ++step) {
      // Few distinct values, so erased ones come back and collide often.
      std::vector<uint64_t> signature(words, 0);
      signature[rng() % words] = rng() % 30'000;
      if (rng() % 3 == 0) {
        ASSERT_EQ(set.Erase(signature.data()), model.erase(signature) == 1) << "step " << step;
      } else {
        ASSERT_EQ(set.Insert(signature.data()), model.insert(signature).second) << "step " << step;
      }
      ASSERT_EQ(set.size(), model.size());
    }
    // Every present signature is found, every erased one is gone.
    for (const std::vector<uint64_t>& signature : model) ASSERT_FALSE(set.Insert(signature.data()));
    set.Clear();
    EXPECT_EQ(set.size(), 0u);
    std::vector<uint64_t> zero(words, 0);
    EXPECT_FALSE(set.Erase(zero.data()));
    EXPECT_TRUE(set.Insert(zero.data()));
  }
}

}  // namespace
}  // namespace serenity
