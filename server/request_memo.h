// Replies to byte-identical requests, in front of the plan cache. A NAS
// pipeline re-scoring a candidate or a client retrying sends the very same
// bytes again; for those the ONNX import, the canonical form and the
// remapping of the stored plan are skipped. An entry remembers the stored
// plan it came from and answers only while the plan cache still holds that
// same entry, so a better plan stored later is never hidden behind it.
#ifndef SERENITY_SERVER_REQUEST_MEMO_H_
#define SERENITY_SERVER_REQUEST_MEMO_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/strings/string_view.h"
#include "serenity/v1/scheduler.pb.h"
#include "server/byte_lru.h"
#include "server/stored_plan.h"

namespace serenity {

// The memo's key for `request` of `tenant` answered in score-only mode or
// not: its deterministic serialization (map fields sorted), tagged with the
// mode and the tenant.
std::string RequestMemoKey(const v1::PlanRequest& request, bool score_only, absl::string_view tenant = "");

struct MemoizedReply {
  // RequestMemoKey of the request.
  std::string request;
  // The cache key, the cache's id for it (CachedPlanId) and the stored
  // plan the reply was made from.
  PlanKey key;
  std::string cache_id;
  std::shared_ptr<const v1::StoredPlan> stored;
  // The request's own search time limit (after defaults), for
  // StoredPlanAnswers.
  double request_time_limit_seconds = 0;
  // The reply as sent, with plan_id set.
  v1::Plan reply;
};

class RequestMemo {
 public:
  // `max_bytes` bounds the request and reply bytes held (0 disables it).
  explicit RequestMemo(int64_t max_bytes) : lru_(max_bytes) {}

  // The entry whose request equals `request_key`, marked recently used, or
  // null.
  std::shared_ptr<const MemoizedReply> Find(absl::string_view request_key);

  // Adds `entry`, replacing one with the same request and evicting the
  // least recently used ones beyond the bound. An entry larger than the
  // whole bound is not kept.
  void Put(std::shared_ptr<const MemoizedReply> entry);

  int64_t bytes() const;
  int64_t entries() const;

 private:
  mutable std::mutex mu_;
  // Keyed by a view of the entry's own request string.
  ByteLru<absl::string_view, std::shared_ptr<const MemoizedReply>> lru_;  // guarded by mu_
};

}  // namespace serenity

#endif  // SERENITY_SERVER_REQUEST_MEMO_H_
