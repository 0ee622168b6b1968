#include "server/byte_lru.h"

#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using Lru = ByteLru<std::string, int>;

TEST(ByteLruTest, GetsWhatWasPut) {
  Lru lru(100);
  EXPECT_EQ(lru.Get("a"), nullptr);
  EXPECT_TRUE(lru.Put("a", 1, 10));
  EXPECT_TRUE(lru.Put("b", 2, 20));
  ASSERT_NE(lru.Get("a"), nullptr);
  EXPECT_EQ(*lru.Get("a"), 1);
  EXPECT_EQ(*lru.Get("b"), 2);
  EXPECT_EQ(lru.bytes(), 30);
  EXPECT_EQ(lru.entries(), 2);
}

TEST(ByteLruTest, EvictsTheLeastRecentlyUsedBeyondTheBound) {
  Lru lru(100);
  lru.Put("a", 1, 40);
  lru.Put("b", 2, 40);
  lru.Put("c", 3, 40);  // 120 > 100: "a" goes
  EXPECT_EQ(lru.Get("a"), nullptr);
  EXPECT_NE(lru.Get("b"), nullptr);
  EXPECT_NE(lru.Get("c"), nullptr);
  EXPECT_EQ(lru.bytes(), 80);
  lru.Put("d", 4, 90);  // only "d" fits
  EXPECT_EQ(lru.entries(), 1);
  EXPECT_EQ(lru.bytes(), 90);
  EXPECT_NE(lru.Get("d"), nullptr);
}

TEST(ByteLruTest, GetMarksTheEntryRecentlyUsed) {
  Lru lru(100);
  lru.Put("a", 1, 40);
  lru.Put("b", 2, 40);
  ASSERT_NE(lru.Get("a"), nullptr);  // now "b" is the least recently used
  lru.Put("c", 3, 40);
  EXPECT_NE(lru.Get("a"), nullptr);
  EXPECT_EQ(lru.Get("b"), nullptr);
  EXPECT_NE(lru.Get("c"), nullptr);
}

TEST(ByteLruTest, PutReplacesAnEqualKeyAndCountsItsNewSize) {
  Lru lru(100);
  lru.Put("a", 1, 40);
  lru.Put("b", 2, 40);
  EXPECT_TRUE(lru.Put("a", 7, 10));  // replaced, and now the most recently used
  EXPECT_EQ(*lru.Get("a"), 7);
  EXPECT_EQ(lru.entries(), 2);
  EXPECT_EQ(lru.bytes(), 50);
  lru.Put("c", 3, 50);  // 100: all stay
  EXPECT_EQ(lru.entries(), 3);
  lru.Put("d", 4, 10);  // 110: "b", the least recently used, goes
  EXPECT_EQ(lru.Get("b"), nullptr);
  EXPECT_NE(lru.Get("a"), nullptr);
}

TEST(ByteLruTest, AnOversizedEntryIsNotKeptAndLeavesTheOldOne) {
  Lru lru(100);
  lru.Put("a", 1, 40);
  lru.Put("b", 2, 40);
  EXPECT_FALSE(lru.Put("a", 9, 101));
  EXPECT_EQ(*lru.Get("a"), 1);
  EXPECT_NE(lru.Get("b"), nullptr);
  EXPECT_EQ(lru.bytes(), 80);
  EXPECT_TRUE(lru.Put("c", 3, 100));  // exactly the bound: kept, alone
  EXPECT_EQ(lru.entries(), 1);
}

TEST(ByteLruTest, ABoundOfZeroKeepsNothing) {
  Lru lru(0);
  EXPECT_FALSE(lru.Put("a", 1, 1));
  EXPECT_EQ(lru.Get("a"), nullptr);
  EXPECT_EQ(lru.entries(), 0);
}

TEST(ByteLruTest, EraseDropsAnEntry) {
  Lru lru(100);
  lru.Put("a", 1, 40, "t");
  EXPECT_TRUE(lru.Erase("a"));
  EXPECT_FALSE(lru.Erase("a"));
  EXPECT_EQ(lru.Get("a"), nullptr);
  EXPECT_EQ(lru.bytes(), 0);
  EXPECT_EQ(lru.bytes_of("t"), 0);
}

TEST(ByteLruTest, AnOwnerBeyondItsShareEvictsItsOwnEntriesFirst) {
  Lru lru(100, 50);
  lru.Put("x1", 1, 30, "x");
  lru.Put("y1", 2, 30, "y");
  lru.Put("y2", 3, 20, "y");          // y holds 50: its share
  ASSERT_NE(lru.Get("y1"), nullptr);  // y's least recently used is now y2
  lru.Put("y3", 4, 10, "y");          // y beyond its share: y2 goes, not x1 (the oldest overall)
  EXPECT_EQ(lru.Get("y2"), nullptr);
  EXPECT_NE(lru.Get("x1"), nullptr);
  EXPECT_NE(lru.Get("y1"), nullptr);
  EXPECT_NE(lru.Get("y3"), nullptr);
  EXPECT_EQ(lru.bytes_of("y"), 40);
  EXPECT_EQ(lru.bytes_of("x"), 30);
  EXPECT_EQ(lru.bytes(), 70);
  EXPECT_FALSE(lru.Put("x2", 5, 51, "x"));  // larger than a share
  EXPECT_EQ(lru.bytes_of("x"), 30);
}

TEST(ByteLruTest, AnOwnerWithinItsShareStillYieldsToTheWholeBound) {
  Lru lru(100, 60);
  lru.Put("x1", 1, 50, "x");
  lru.Put("y1", 2, 40, "y");
  lru.Put("z1", 3, 30, "z");  // 120 > 100: x1, the least recently used overall, goes
  EXPECT_EQ(lru.Get("x1"), nullptr);
  EXPECT_EQ(lru.bytes_of("x"), 0);
  EXPECT_EQ(lru.bytes(), 70);
}

// Keys may be views of bytes their value owns (RequestMemo's requests).
TEST(ByteLruTest, KeysMayBeViewsIntoTheirValues) {
  ByteLru<absl::string_view, std::shared_ptr<const std::string>> lru(100);
  auto a = std::make_shared<const std::string>("request a");
  lru.Put(*a, a, 40);
  a.reset();  // the entry keeps it, and its key with it
  const std::string probe = "request a";
  ASSERT_NE(lru.Get(probe), nullptr);
  EXPECT_EQ(**lru.Get(probe), "request a");
  auto replacement = std::make_shared<const std::string>("request a");
  lru.Put(*replacement, replacement, 30);  // replaces: the old key's bytes are read before they go
  EXPECT_EQ(lru.Get(probe)->get(), replacement.get());
  auto b = std::make_shared<const std::string>("request b");
  lru.Put(*b, b, 80);  // evicts "request a"
  EXPECT_EQ(lru.Get(probe), nullptr);
  EXPECT_EQ(lru.entries(), 1);
}

}  // namespace
}  // namespace serenity
