// The two-tier plan cache: an in-process LRU bounded in bytes, and an
// optional shared Redis (RedisStore) so replicas share results. The shared
// tier is best effort: when it is down, slow or returns garbage the lookup
// counts an error and reports a miss, and the caller computes. Beside the
// plans it keeps the receipts of plan_ids (v1::PlanReceipt) for GetPlan.
//
// The in-process tier counts each entry at protobuf's estimate of the
// memory it takes (SpaceUsedLong: the message with its strings and
// repeated fields), plus its key and the LRU's own per-entry overhead, so
// --cache-mb bounds what the entries hold, not their serialized size
// (which is several times smaller).
#ifndef SERENITY_SERVER_PLAN_CACHE_H_
#define SERENITY_SERVER_PLAN_CACHE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "server/byte_lru.h"
#include "server/metrics.h"
#include "server/redis_store.h"
#include "server/stored_plan.h"

namespace serenity {

class PlanCache {
 public:
  // `max_bytes` bounds the in-process tier (0 disables it); `shared` may be
  // null; `metrics` may be null. `max_bytes_per_owner` (0: max_bytes)
  // bounds what the entries one tenant stored hold in the in-process tier:
  // beyond it that tenant's own least recently used entries go first, so
  // one tenant cannot flush the others' plans and receipts.
  PlanCache(int64_t max_bytes, std::unique_ptr<RedisStore> shared, ServerMetrics* metrics,
            int64_t max_bytes_per_owner = 0);

  struct Hit {
    std::shared_ptr<const v1::StoredPlan> stored;
    const char* tier;  // "local" or "shared"
  };

  // Decides whether an entry read from the shared tier may be used (it
  // came from outside the process: the caller checks it against its
  // graph). Entries it refuses count as "error" and are not kept locally.
  using SharedCheck = std::function<bool(const v1::StoredPlan&)>;

  // The entry stored under `id` if it answers the request with `key`
  // (StoredPlanAnswers), from the local tier first, then the shared one (a
  // shared hit that `check` accepts is copied into the local tier).
  // `owner` (the caller's tenant) owns a shared hit copied locally.
  std::optional<Hit> Lookup(const std::string& id, const PlanKey& key, bool need_complete, double time_limit_seconds,
                            const SharedCheck& check, const std::string& owner = "");

  // Stores `stored` under `id` in both tiers unless an entry at least as
  // good is there. A shared entry that `check` refuses does not count (an
  // edited entry claiming a lower peak must not block the true one).
  void Store(std::shared_ptr<const v1::StoredPlan> stored, const std::string& id, const SharedCheck& check = {},
             const std::string& owner = "");

  // The in-process tier's entry for `id` (marked recently used), or null.
  std::shared_ptr<const v1::StoredPlan> LocalEntry(const std::string& id);

  // The entry stored under `id` in either tier, whatever request it
  // answers (GetPlan), or nullopt. A shared entry is not copied locally.
  std::optional<Hit> Get(const std::string& id);

  // Keeps `receipt` under `plan_id` in both tiers (owned locally by its
  // tenant); the shared tier is written only when the local one did not
  // already hold it.
  void PutReceipt(const std::string& plan_id, std::shared_ptr<const v1::PlanReceipt> receipt);

  // The receipt of `plan_id` from either tier (parsed, of the current
  // format), or null.
  std::shared_ptr<const v1::PlanReceipt> GetReceipt(const std::string& plan_id);

  int64_t local_bytes() const;
  int64_t local_entries() const;
  // Bytes the in-process tier holds for `owner`.
  int64_t local_bytes_of(const std::string& owner) const;

 private:
  std::shared_ptr<const google::protobuf::Message> LocalGet(const std::string& key);
  void LocalPut(const std::string& key, std::shared_ptr<const google::protobuf::Message> value,
                const std::string& owner);
  // The shared tier's entry, or null with `outcome` "miss" (absent) or
  // "error" (unavailable, or garbage).
  std::shared_ptr<const v1::StoredPlan> SharedGet(const std::string& id, const char** outcome);
  // The shared tier's `Message` under `key` if it parses and has `format`;
  // null otherwise, with `outcome` as for SharedGet.
  template <typename Message>
  std::shared_ptr<const Message> SharedRead(const std::string& key, uint32_t format, const char** outcome);
  // Writes `value` to the shared tier, logging and counting the outcome.
  void SharedPut(const std::string& key, const google::protobuf::Message& value);
  void LogSharedError(const char* event, const std::string& detail);
  void Record(const char* tier, const char* result);

  const int64_t max_bytes_;
  const std::unique_ptr<RedisStore> shared_;
  ServerMetrics* const metrics_;
  mutable std::mutex mu_;
  // The in-process tier: keyed by the id, or "receipt:" and the plan_id;
  // each entry owned by the tenant that stored it.
  ByteLru<std::string, std::shared_ptr<const google::protobuf::Message>> local_;  // guarded by mu_
  absl::Time last_shared_log_ = absl::InfinitePast();
  int64_t unlogged_shared_errors_ = 0;
};

}  // namespace serenity

#endif  // SERENITY_SERVER_PLAN_CACHE_H_
