// The shared tier of the plan cache: a thin, fail-fast Redis client. Every
// problem (Redis down, slow, or answering nonsense) becomes an error status
// within about the timeout; after a failure, calls fail at once until
// `retry_after` has passed, so an outage never slows requests down.
#ifndef SERENITY_SERVER_REDIS_STORE_H_
#define SERENITY_SERVER_REDIS_STORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

struct redisContext;

namespace serenity {

struct RedisStoreOptions {
  std::string address;                                  // "HOST:PORT"
  absl::Duration timeout = absl::Milliseconds(50);      // connect and each command
  absl::Duration retry_after = absl::Seconds(1);        // fail fast this long after a failure
  int64_t ttl_seconds = 7 * 24 * 3600;                  // expiry of stored values; 0: none
  std::string key_prefix = "serenity:plan:";
};

class RedisStore {
 public:
  // InvalidArgument for a malformed address. Connects lazily, so a server
  // starts while Redis is down.
  static absl::StatusOr<std::unique_ptr<RedisStore>> Create(RedisStoreOptions options);
  ~RedisStore();
  RedisStore(const RedisStore&) = delete;
  RedisStore& operator=(const RedisStore&) = delete;

  // The value under `key`, or nullopt when there is none. Unavailable when
  // Redis cannot be reached (or is being skipped after a failure), Internal
  // for a reply of the wrong kind.
  absl::StatusOr<std::optional<std::string>> Get(absl::string_view key);
  // Stores `value` under `key` (binary-safe), with the configured expiry.
  absl::Status Put(absl::string_view key, absl::string_view value);

  // Failed calls so far.
  int64_t errors() const { return errors_.load(); }

 private:
  RedisStore(RedisStoreOptions options, std::string host, int port);
  // Connects if needed; requires mu_.
  absl::Status EnsureConnectedLocked();
  // Drops the connection and starts the fail-fast period; requires mu_.
  absl::Status FailLocked(absl::Status status);

  const RedisStoreOptions options_;
  const std::string host_;
  const int port_;
  std::mutex mu_;
  redisContext* context_ = nullptr;
  absl::Time retry_at_ = absl::InfinitePast();
  std::atomic<int64_t> errors_{0};
};

}  // namespace serenity

#endif  // SERENITY_SERVER_REDIS_STORE_H_
