// The shared tier of the plan cache: a thin, fail-fast Redis client. Every
// problem (Redis down, slow, or answering nonsense) becomes an error status
// within about the timeout; after a failure of the connection, calls fail at
// once until `retry_after` has passed, so an outage never slows requests down.
//
// One connection serves all threads, one call at a time. Each call has one
// deadline, `timeout` after it starts, that bounds the wait for its turn, the
// (re)connect and the command's round trip together. Only resolving a host
// name (getaddrinfo, inside hiredis) is not bounded by it; use an IP address
// where that matters.
#ifndef SERENITY_SERVER_REDIS_STORE_H_
#define SERENITY_SERVER_REDIS_STORE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

struct redisContext;
struct redisReply;

namespace serenity {

struct RedisStoreOptions {
  std::string address;                              // "HOST:PORT", "[IPV6]:PORT"
  absl::Duration timeout = absl::Milliseconds(50);  // connect and each command
  absl::Duration retry_after = absl::Seconds(1);    // fail fast this long after a failure
  int64_t ttl_seconds = 7 * 24 * 3600;              // SET ... EX; 0: no expiry
  std::string key_prefix = "serenity:plan:";
  // When `password` is set, every (re)connection first sends AUTH [username]
  // password (binary-safe), within the deadline of the call that connects.
  // `username` names a Redis 6+ ACL user; empty: the default user ("AUTH
  // password", which requirepass checks). Neither is ever put in a status.
  std::string username;
  std::string password;
};

// Credentials for RedisStoreOptions, as read by ReadRedisCredentials.
struct RedisCredentials {
  std::string username;  // empty: the default user
  std::string password;  // never empty
};

// Reads Redis credentials from the file at `path`. The file holds one line,
// either
//   PASSWORD
// or
//   USERNAME PASSWORD
// Whitespace around the line and around each part is ignored, and so are
// empty lines; with a username, the password is the rest of the line after
// the whitespace that follows the username (it may hold spaces; a password
// alone may not). Errors, which name the path but never quote the file:
// the file cannot be read (the code of its errno, e.g. NotFound or
// PermissionDenied); InvalidArgument when it is empty (or only whitespace),
// holds more than one non-empty line, or is larger than 64 KiB.
absl::StatusOr<RedisCredentials> ReadRedisCredentials(const std::string& path);

class RedisStore {
 public:
  // InvalidArgument for a malformed address, a timeout that is not positive,
  // a negative retry_after or ttl_seconds, or a username without a password.
  // Connects lazily, so a server starts while Redis is down (or refuses the
  // credentials: that shows in the first call).
  static absl::StatusOr<std::unique_ptr<RedisStore>> Create(RedisStoreOptions options);
  ~RedisStore();
  RedisStore(const RedisStore&) = delete;
  RedisStore& operator=(const RedisStore&) = delete;

  // The value under key_prefix + `key`, or nullopt when there is none.
  // Errors:
  //   Unavailable       Redis cannot be reached, closed the connection, or is
  //                     being skipped after a recent failure;
  //   DeadlineExceeded  no complete answer within the timeout;
  //   Unauthenticated   Redis refused the credentials (AUTH failed: wrong
  //                     password or user, or a password given to a Redis
  //                     that wants none), or wants a password and none was
  //                     set (NOAUTH); calls are then skipped with this code
  //                     (not Unavailable) until retry_after has passed, and
  //                     the next call authenticates afresh;
  //   PermissionDenied  the ACL user may not run the command (NOPERM);
  //   Internal          an answer that is not a valid reply to the command
  //                     (protocol garbage, a reply of the wrong type, or a
  //                     Redis error reply such as WRONGTYPE).
  absl::StatusOr<std::optional<std::string>> Get(absl::string_view key);
  // Stores `value` (binary-safe) under key_prefix + `key`, with the expiry
  // ttl_seconds. Errors as for Get.
  absl::Status Put(absl::string_view key, absl::string_view value);

  // Failed calls so far (for metrics).
  int64_t errors() const { return errors_.load(std::memory_order_relaxed); }

 private:
  using Clock = std::chrono::steady_clock;
  struct ReplyDeleter {
    void operator()(redisReply* reply) const;
  };
  using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

  class Turn;

  RedisStore(RedisStoreOptions options, std::string host, int port);

  // The "Locked" functions below require the caller's turn (see Turn in the
  // .cc): the connection belongs to one call at a time.

  // Connects if needed (or reconnects when the server closed an idle
  // connection), and authenticates a new connection when a password is set.
  absl::Status EnsureConnectedLocked(Clock::time_point deadline);
  // Sends AUTH on the new connection and checks the answer.
  absl::Status AuthenticateLocked(Clock::time_point deadline);
  // Sends `command` (a RESP request) on the open connection and reads one
  // reply, all before `deadline`. A failure drops the connection and starts
  // the fail-fast period.
  absl::StatusOr<Reply> ExchangeLocked(const std::string& command, Clock::time_point deadline);
  // EnsureConnectedLocked, then ExchangeLocked.
  absl::StatusOr<Reply> RoundTripLocked(const std::string& command, Clock::time_point deadline);
  // The status for a Redis error reply to `command_name`: Unauthenticated
  // for NOAUTH (which also drops the connection and starts the fail-fast
  // period), PermissionDenied for NOPERM, Internal otherwise.
  absl::Status ErrorReplyLocked(const char* command_name, const redisReply& reply);
  // Drops the connection.
  void DisconnectLocked();
  // Drops the connection and starts the fail-fast period.
  absl::Status FailLocked(absl::Status status);
  // Counts a failed call and passes its status through.
  absl::Status Count(absl::Status status);

  const RedisStoreOptions options_;
  const std::string host_;
  const int port_;
  // A call's turn: waiting for it is bounded by the call's deadline, which a
  // plain mutex would not allow (and std::timed_mutex with a steady clock
  // confuses ThreadSanitizer).
  std::mutex mu_;
  std::condition_variable turn_over_;
  bool busy_ = false;                // guarded by mu_
  redisContext* context_ = nullptr;  // belongs to the call whose turn it is
  Clock::time_point retry_at_{};     // belongs to the call whose turn it is
  bool auth_failed_ = false;         // the last failure was Unauthenticated; as retry_at_
  const std::string auth_command_;   // RESP AUTH request; empty without a password
  std::atomic<int64_t> errors_{0};
};

}  // namespace serenity

#endif  // SERENITY_SERVER_REDIS_STORE_H_
