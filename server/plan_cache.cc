#include "server/plan_cache.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace serenity {

PlanCache::PlanCache(int64_t max_bytes, std::unique_ptr<RedisStore> shared, ServerMetrics* metrics,
                     int64_t max_bytes_per_owner)
    : max_bytes_(max_bytes), shared_(std::move(shared)), metrics_(metrics), local_(max_bytes, max_bytes_per_owner) {}

void PlanCache::Record(const char* tier, const char* result) {
  if (metrics_ != nullptr) metrics_->RecordCacheLookup(tier, result);
}

namespace {

const char kReceiptPrefix[] = "receipt:";

// What one entry of the in-process tier holds: the message's own estimate
// of its memory (with the heap blocks of its strings and repeated fields),
// the key twice (the list entry and the index) and the list node and index
// slot around them.
int64_t LocalEntryBytes(const std::string& key, const google::protobuf::Message& value) {
  constexpr int64_t kOverhead = 64 + 2 * 32 + 48;  // list node, index slot, shared_ptr control block
  return static_cast<int64_t>(value.SpaceUsedLong()) + 2 * static_cast<int64_t>(key.capacity() + 1) + kOverhead;
}

}  // namespace

std::shared_ptr<const google::protobuf::Message> PlanCache::LocalGet(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::shared_ptr<const google::protobuf::Message>* value = local_.Get(key);
  return value == nullptr ? nullptr : *value;
}

std::shared_ptr<const v1::StoredPlan> PlanCache::LocalEntry(const std::string& id) {
  return std::static_pointer_cast<const v1::StoredPlan>(LocalGet(id));
}

void PlanCache::LocalPut(const std::string& key, std::shared_ptr<const google::protobuf::Message> value,
                         const std::string& owner) {
  const int64_t bytes = LocalEntryBytes(key, *value);
  int64_t total, entries;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // An entry larger than its owner's whole share is not kept.
    if (!local_.Put(key, std::move(value), bytes, owner)) return;
    total = local_.bytes();
    entries = local_.entries();
  }
  if (metrics_ != nullptr) metrics_->SetLocalCacheSize(total, entries);
}

template <typename Message>
std::shared_ptr<const Message> PlanCache::SharedRead(const std::string& key, uint32_t format, const char** outcome) {
  *outcome = "miss";
  if (shared_ == nullptr) return nullptr;
  absl::StatusOr<std::optional<std::string>> bytes = shared_->Get(key);
  if (!bytes.ok()) {
    *outcome = "error";
    LogSharedError("cache_shared_unavailable", std::string(bytes.status().message()));
    return nullptr;
  }
  if (!bytes->has_value()) return nullptr;
  auto message = std::make_shared<Message>();
  if (!message->ParseFromString(**bytes) || message->format() != format) {
    *outcome = "error";
    LogSharedError("cache_shared_garbage", absl::StrCat("unreadable entry ", key));
    return nullptr;
  }
  *outcome = "hit";
  return message;
}

std::shared_ptr<const v1::StoredPlan> PlanCache::SharedGet(const std::string& id, const char** outcome) {
  return SharedRead<v1::StoredPlan>(id, kStoredPlanFormat, outcome);
}

void PlanCache::SharedPut(const std::string& key, const google::protobuf::Message& value) {
  absl::Status put = shared_->Put(key, value.SerializeAsString());
  if (!put.ok()) LogSharedError("cache_shared_unavailable", std::string(put.message()));
  if (metrics_ != nullptr) metrics_->RecordSharedWrite(put.ok());
}

void PlanCache::LogSharedError(const char* event, const std::string& detail) {
  // At most one line per ten seconds: a Redis outage must not flood the log.
  const absl::Time now = absl::Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (now - last_shared_log_ < absl::Seconds(10)) {
      ++unlogged_shared_errors_;
      return;
    }
    last_shared_log_ = now;
  }
  Log("warning", event, {{"detail", detail}, {"errors_since_last_line", absl::StrCat(unlogged_shared_errors_)}});
  std::lock_guard<std::mutex> lock(mu_);
  unlogged_shared_errors_ = 0;
}

std::optional<PlanCache::Hit> PlanCache::Lookup(const std::string& id, const PlanKey& key, bool need_complete,
                                                double time_limit_seconds, const SharedCheck& check,
                                                const std::string& owner) {
  if (max_bytes_ > 0) {
    std::shared_ptr<const v1::StoredPlan> local = LocalEntry(id);
    if (local != nullptr && StoredPlanAnswers(*local, key, need_complete, time_limit_seconds)) {
      Record("local", "hit");
      return Hit{std::move(local), "local"};
    }
    Record("local", "miss");
  }
  if (shared_ == nullptr) return std::nullopt;
  const char* outcome;
  std::shared_ptr<const v1::StoredPlan> shared = SharedGet(id, &outcome);
  if (shared == nullptr) {
    Record("shared", outcome);
    return std::nullopt;
  }
  if (!StoredPlanAnswers(*shared, key, need_complete, time_limit_seconds)) {
    Record("shared", "miss");
    return std::nullopt;
  }
  if (check && !check(*shared)) {
    Record("shared", "error");
    LogSharedError("cache_shared_garbage", absl::StrCat("entry ", id, " does not fit its graph"));
    return std::nullopt;
  }
  Record("shared", "hit");
  if (max_bytes_ > 0) LocalPut(id, shared, owner);
  return Hit{std::move(shared), "shared"};
}

void PlanCache::Store(std::shared_ptr<const v1::StoredPlan> stored, const std::string& id, const SharedCheck& check,
                      const std::string& owner) {
  if (max_bytes_ > 0) {
    std::shared_ptr<const v1::StoredPlan> current = LocalEntry(id);
    if (current == nullptr || current->graph() != stored->graph() || StoredPlanIsBetter(*stored, *current)) {
      LocalPut(id, stored, owner);
    }
  }
  if (shared_ != nullptr) {
    const char* outcome;
    std::shared_ptr<const v1::StoredPlan> current = SharedGet(id, &outcome);
    if (current == nullptr || current->graph() != stored->graph() || current->options() != stored->options() ||
        StoredPlanIsBetter(*stored, *current) || (check && !check(*current))) {
      SharedPut(id, *stored);
    }
  }
}

std::optional<PlanCache::Hit> PlanCache::Get(const std::string& id) {
  if (max_bytes_ > 0) {
    std::shared_ptr<const v1::StoredPlan> local = LocalEntry(id);
    if (local != nullptr) return Hit{std::move(local), "local"};
  }
  const char* outcome;
  std::shared_ptr<const v1::StoredPlan> shared = SharedGet(id, &outcome);
  if (shared == nullptr) return std::nullopt;
  return Hit{std::move(shared), "shared"};
}

void PlanCache::PutReceipt(const std::string& plan_id, std::shared_ptr<const v1::PlanReceipt> receipt) {
  const std::string key = kReceiptPrefix + plan_id;
  if (max_bytes_ > 0) {
    if (LocalGet(key) != nullptr) return;
    LocalPut(key, receipt, receipt->tenant());
  }
  if (shared_ != nullptr) SharedPut(key, *receipt);
}

std::shared_ptr<const v1::PlanReceipt> PlanCache::GetReceipt(const std::string& plan_id) {
  const std::string key = kReceiptPrefix + plan_id;
  if (max_bytes_ > 0) {
    std::shared_ptr<const google::protobuf::Message> local = LocalGet(key);
    if (local != nullptr) return std::static_pointer_cast<const v1::PlanReceipt>(local);
  }
  const char* outcome;
  return SharedRead<v1::PlanReceipt>(key, kPlanReceiptFormat, &outcome);
}

int64_t PlanCache::local_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return local_.bytes();
}

int64_t PlanCache::local_bytes_of(const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  return local_.bytes_of(owner);
}

int64_t PlanCache::local_entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return local_.entries();
}

}  // namespace serenity
