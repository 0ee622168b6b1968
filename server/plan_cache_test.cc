#include "server/plan_cache.h"

#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/plan_proto.h"
#include "gtest/gtest.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

// A stored plan as large in memory as a real one: many repeated fields and
// strings longer than the short-string buffer.
std::shared_ptr<const v1::StoredPlan> BigEntry(int ops, int seed) {
  auto stored = std::make_shared<v1::StoredPlan>();
  stored->set_format(kStoredPlanFormat);
  stored->set_graph(absl::StrCat("graph-", seed));
  v1::Plan& plan = *stored->mutable_plan();
  plan.set_peak_bytes(1000 + seed);
  for (int i = 0; i < ops; ++i) {
    plan.add_order(i);
    plan.add_order_names(absl::StrCat("a/rather/long/op/name/number/", i));
    stored->add_op_names(absl::StrCat("a/rather/long/op/name/number/", i));
    v1::Step* step = plan.add_steps();
    step->set_op(absl::StrCat("a/rather/long/op/name/number/", i));
    step->add_inputs()->set_tensor(absl::StrCat("a/rather/long/tensor/name/", i));
    step->add_outputs()->set_tensor(absl::StrCat("a/rather/long/tensor/name/", i + 1));
  }
  return stored;
}

// --cache-mb bounds what the entries hold in memory (protobuf's own
// estimate), not their serialized size: the entries still held never take
// more than the tier's bytes, and the tier never counts more than its bound.
TEST(PlanCacheTest, TheLocalTierCountsTheMemoryItsEntriesHold) {
  constexpr int64_t kMaxBytes = 4 << 20;
  PlanCache cache(kMaxBytes, nullptr, nullptr);
  constexpr int kEntries = 60;
  for (int i = 0; i < kEntries; ++i) cache.Store(BigEntry(400, i), absl::StrCat("id", i));
  EXPECT_LE(cache.local_bytes(), kMaxBytes);
  int64_t held = 0, serialized = 0;
  int held_entries = 0;
  for (int i = 0; i < kEntries; ++i) {
    std::shared_ptr<const v1::StoredPlan> entry = cache.LocalEntry(absl::StrCat("id", i));
    if (entry == nullptr) continue;
    ++held_entries;
    held += static_cast<int64_t>(entry->SpaceUsedLong());
    serialized += static_cast<int64_t>(entry->ByteSizeLong());
  }
  ASSERT_GT(held_entries, 0);
  ASSERT_LT(held_entries, kEntries);  // the bound evicted some
  EXPECT_EQ(held_entries, cache.local_entries());
  EXPECT_LE(held, cache.local_bytes());
  // What the old accounting by serialized size would have let in.
  EXPECT_GT(held, serialized);
}

// Receipts live beside the plans, under their own names, and count too.
TEST(PlanCacheTest, ReceiptsAreKeptApartFromPlans) {
  PlanCache cache(1 << 20, nullptr, nullptr);
  auto receipt = std::make_shared<v1::PlanReceipt>();
  receipt->set_format(kPlanReceiptFormat);
  receipt->set_tenant("alpha");
  receipt->set_cache_id("id0");
  cache.PutReceipt("id0", receipt);
  EXPECT_EQ(cache.LocalEntry("id0"), nullptr);  // not a plan
  EXPECT_FALSE(cache.Get("id0").has_value());
  ASSERT_NE(cache.GetReceipt("id0"), nullptr);
  EXPECT_EQ(cache.GetReceipt("id0")->tenant(), "alpha");
  EXPECT_EQ(cache.GetReceipt("id1"), nullptr);
  EXPECT_EQ(cache.local_entries(), 1);
  EXPECT_GT(cache.local_bytes(), static_cast<int64_t>(receipt->SpaceUsedLong()));
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

// One tenant storing far more than its share evicts its own entries, not
// another tenant's: the other's plan stays while the heavy one churns.
TEST(PlanCacheTest, ATenantBeyondItsShareEvictsItsOwnEntries) {
  constexpr int64_t kMaxBytes = 4 << 20;
  PlanCache cache(kMaxBytes, nullptr, nullptr, /*max_bytes_per_owner=*/kMaxBytes / 2);
  cache.Store(BigEntry(400, 0), "quiet-plan", {}, "quiet");
  ASSERT_NE(cache.LocalEntry("quiet-plan"), nullptr);
  for (int i = 0; i < 200; ++i) cache.Store(BigEntry(400, i + 1), absl::StrCat("noisy", i), {}, "noisy");
  EXPECT_NE(cache.LocalEntry("quiet-plan"), nullptr);  // never evicted
  EXPECT_LE(cache.local_bytes_of("noisy"), kMaxBytes / 2);
  EXPECT_GT(cache.local_bytes_of("noisy"), kMaxBytes / 4);
  EXPECT_GT(cache.local_bytes_of("quiet"), 0);
  EXPECT_EQ(cache.local_bytes(), cache.local_bytes_of("noisy") + cache.local_bytes_of("quiet"));
  EXPECT_NE(cache.LocalEntry("noisy199"), nullptr);  // its newest stays
  EXPECT_EQ(cache.LocalEntry("noisy0"), nullptr);
  // Without a share, the same stream of stores flushes the quiet entry.
  PlanCache shared(kMaxBytes, nullptr, nullptr);
  shared.Store(BigEntry(400, 0), "quiet-plan", {}, "quiet");
  for (int i = 0; i < 200; ++i) shared.Store(BigEntry(400, i + 1), absl::StrCat("noisy", i), {}, "noisy");
  EXPECT_EQ(shared.LocalEntry("quiet-plan"), nullptr);
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

// Within its share a tenant's entries leave in least-recently-used order:
// one it keeps reading stays while its others go.
TEST(PlanCacheTest, ATenantsShareEvictsItsLeastRecentlyUsedFirst) {
  const int64_t entry = static_cast<int64_t>(BigEntry(100, 0)->SpaceUsedLong());
  PlanCache cache(100 * entry, nullptr, nullptr, /*max_bytes_per_owner=*/5 * entry);
  for (int i = 0; i < 12; ++i) {
    cache.Store(BigEntry(100, i), absl::StrCat("p", i), {}, "t");
    ASSERT_NE(cache.LocalEntry("p0"), nullptr) << i;  // read after every store
  }
  EXPECT_EQ(cache.LocalEntry("p1"), nullptr);
  EXPECT_NE(cache.LocalEntry("p11"), nullptr);
  EXPECT_LE(cache.local_bytes_of("t"), 5 * entry);
  EXPECT_LT(cache.local_entries(), 6);
}

}  // namespace
}  // namespace serenity
