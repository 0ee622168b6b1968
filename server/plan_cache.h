// The two-tier plan cache: an in-process LRU bounded in bytes, and an
// optional shared Redis (RedisStore) so replicas share results. The shared
// tier is best effort: when it is down, slow or returns garbage the lookup
// counts an error and reports a miss, and the caller computes.
#ifndef SERENITY_SERVER_PLAN_CACHE_H_
#define SERENITY_SERVER_PLAN_CACHE_H_

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "server/metrics.h"
#include "server/redis_store.h"
#include "server/stored_plan.h"

namespace serenity {

class PlanCache {
 public:
  // `max_bytes` bounds the in-process tier (0 disables it); `shared` may be
  // null; `metrics` may be null.
  PlanCache(int64_t max_bytes, std::unique_ptr<RedisStore> shared, ServerMetrics* metrics);

  struct Hit {
    std::shared_ptr<const v1::StoredPlan> stored;
    const char* tier;  // "local" or "shared"
  };

  // The entry for `key` if one answers the request (StoredPlanAnswers),
  // from the local tier first, then the shared one (a shared hit is copied
  // into the local tier).
  std::optional<Hit> Lookup(const PlanKey& key, bool need_complete, double time_limit_seconds);

  // Stores `stored` in both tiers unless an entry at least as good is there.
  void Store(std::shared_ptr<const v1::StoredPlan> stored, const std::string& id);

  // The in-process tier's entry for `id` (marked recently used), or null.
  std::shared_ptr<const v1::StoredPlan> LocalEntry(const std::string& id) { return LocalGet(id); }

  // The entry stored under `plan_id` in either tier (GetPlan), or null.
  std::shared_ptr<const v1::StoredPlan> Get(const std::string& plan_id);

  int64_t local_bytes() const;
  int64_t local_entries() const;

 private:
  struct Entry {
    std::string id;
    std::shared_ptr<const v1::StoredPlan> stored;
    int64_t bytes = 0;
  };

  std::shared_ptr<const v1::StoredPlan> LocalGet(const std::string& id);
  void LocalPut(const std::string& id, std::shared_ptr<const v1::StoredPlan> stored);
  // The shared tier's entry, or null with `outcome` "miss" (absent) or
  // "error" (unavailable, or garbage).
  std::shared_ptr<const v1::StoredPlan> SharedGet(const std::string& id, const char** outcome);
  void LogSharedError(const char* event, const std::string& detail);
  void Record(const char* tier, const char* result);

  const int64_t max_bytes_;
  const std::unique_ptr<RedisStore> shared_;
  ServerMetrics* const metrics_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recently used first
  absl::flat_hash_map<std::string, std::list<Entry>::iterator> index_;
  int64_t bytes_ = 0;
  absl::Time last_shared_log_ = absl::InfinitePast();
  int64_t unlogged_shared_errors_ = 0;
};

}  // namespace serenity

#endif  // SERENITY_SERVER_PLAN_CACHE_H_
