#include "server/redis_store.h"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace serenity {
namespace {

// Redis's own limit on a bulk string (proto-max-bulk-len); a peer that sends
// more than this in one reply is not a Redis answering GET.
constexpr size_t kMaxReplyBytes = size_t{512} << 20;
// Error replies quoted in statuses are cut to this length.
constexpr size_t kMaxQuotedBytes = 200;
// The largest credentials file ReadRedisCredentials reads.
constexpr size_t kMaxCredentialsFileBytes = 64 << 10;
// Bounds on durations, so that deadlines never overflow.
constexpr absl::Duration kMaxTimeout = absl::Hours(1);
constexpr absl::Duration kMaxRetryAfter = absl::Hours(24);

std::string ErrnoText(int error) { return std::error_code(error, std::generic_category()).message(); }

// A short, printable rendering of bytes that came from the peer.
std::string Quote(const char* data, size_t size) {
  const size_t shown = std::min(size, kMaxQuotedBytes);
  std::string quoted = absl::CHexEscape(absl::string_view(data, shown));
  if (shown < size) absl::StrAppend(&quoted, "...");
  return quoted;
}

// Quote() of an error reply from Redis, with `secret` (when not empty)
// replaced, so that no status ever shows the password.
std::string QuoteRedacted(const char* data, size_t size, const std::string& secret) {
  if (secret.empty()) return Quote(data, size);
  const std::string redacted = absl::StrReplaceAll(absl::string_view(data, size), {{secret, "<password>"}});
  return Quote(redacted.data(), redacted.size());
}

const char* ReplyTypeName(int type) {
  switch (type) {
    case REDIS_REPLY_STRING:
      return "string";
    case REDIS_REPLY_ARRAY:
      return "array";
    case REDIS_REPLY_INTEGER:
      return "integer";
    case REDIS_REPLY_NIL:
      return "nil";
    case REDIS_REPLY_STATUS:
      return "status";
    case REDIS_REPLY_ERROR:
      return "error";
    default:
      return "unknown";
  }
}

// Milliseconds left until `deadline` for poll(), rounded up; 0 when past.
int PollMillis(std::chrono::steady_clock::time_point deadline) {
  const auto left = deadline - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero()) return 0;
  const auto millis = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<decltype(millis)>(millis, 3'600'000));
}

timeval ToTimeval(std::chrono::steady_clock::duration d) {
  const auto micros = std::max<int64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count(), 1000);
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(micros / 1'000'000);
  tv.tv_usec = static_cast<suseconds_t>(micros % 1'000'000);
  return tv;
}

// Waits until `fd` is ready for `events` (or has an error or hang-up, which
// the following read or send reports). DeadlineExceeded when `deadline` passes.
absl::Status WaitFor(int fd, short events, std::chrono::steady_clock::time_point deadline, const char* doing,
                     const std::string& address) {
  for (;;) {
    pollfd p{};
    p.fd = fd;
    p.events = events;
    const int ready = poll(&p, 1, PollMillis(deadline));
    if (ready > 0) return absl::OkStatus();
    if (ready == 0) {
      return absl::DeadlineExceededError(absl::StrCat("Redis at ", address, " timed out ", doing));
    }
    if (errno != EINTR) return absl::UnavailableError(absl::StrCat("poll on Redis socket: ", ErrnoText(errno)));
  }
}

// "HOST:PORT" or "[IPV6]:PORT" -> host and port; false when malformed.
bool ParseAddress(absl::string_view address, std::string* host, int* port) {
  absl::string_view host_part, port_part;
  if (!address.empty() && address.front() == '[') {
    const size_t close = address.find(']');
    if (close == absl::string_view::npos || close + 1 >= address.size() || address[close + 1] != ':') return false;
    host_part = address.substr(1, close - 1);
    port_part = address.substr(close + 2);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == absl::string_view::npos) return false;
    host_part = address.substr(0, colon);
    port_part = address.substr(colon + 1);
    if (host_part.find(':') != absl::string_view::npos) return false;  // IPv6 needs brackets
  }
  if (host_part.empty()) return false;
  for (const char c : host_part) {
    const auto u = static_cast<unsigned char>(c);
    if (std::iscntrl(u) || std::isspace(u) || c == '[' || c == ']' || c == '/') return false;
  }
  if (port_part.empty() || port_part.size() > 5) return false;
  int value = 0;
  for (const char c : port_part) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > 65535) return false;
  *host = std::string(host_part);
  *port = value;
  return true;
}

// The RESP request for a format with %b arguments; empty when hiredis fails.
template <typename... Args>
std::string FormatCommand(const char* format, Args... args) {
  char* raw = nullptr;
  const int length = redisFormatCommand(&raw, format, args...);
  std::string command;
  if (length > 0 && raw != nullptr) command.assign(raw, static_cast<size_t>(length));
  if (raw != nullptr) redisFreeCommand(raw);
  return command;
}

// A pointer %b accepts even for an empty view.
const char* DataOf(absl::string_view bytes) { return bytes.empty() ? "" : bytes.data(); }

// The RESP AUTH request for `options`; empty without a password.
std::string AuthCommand(const RedisStoreOptions& options) {
  if (options.password.empty()) return "";
  if (options.username.empty()) return FormatCommand("AUTH %b", options.password.data(), options.password.size());
  return FormatCommand("AUTH %b %b", options.username.data(), options.username.size(), options.password.data(),
                       options.password.size());
}

}  // namespace

absl::StatusOr<RedisCredentials> ReadRedisCredentials(const std::string& path) {
  const std::string where = absl::StrCat("Redis credentials file '", absl::CHexEscape(path), "'");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    return absl::Status(absl::ErrnoToStatusCode(error), absl::StrCat("cannot open ", where, ": ", ErrnoText(error)));
  }
  std::string content;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      close(fd);
      return absl::Status(absl::ErrnoToStatusCode(error), absl::StrCat("cannot read ", where, ": ", ErrnoText(error)));
    }
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
    if (content.size() > kMaxCredentialsFileBytes) {
      close(fd);
      return absl::InvalidArgumentError(
          absl::StrCat(where, " is larger than ", kMaxCredentialsFileBytes, " bytes; it holds one line"));
    }
  }
  close(fd);
  absl::string_view line;
  int lines = 0;
  for (absl::string_view rest = content; !rest.empty();) {
    const size_t end = rest.find('\n');
    const absl::string_view this_line = absl::StripAsciiWhitespace(rest.substr(0, end));
    rest = end == absl::string_view::npos ? absl::string_view() : rest.substr(end + 1);
    if (this_line.empty()) continue;
    line = this_line;
    ++lines;
  }
  if (lines == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " is empty; it holds one line: PASSWORD, or USERNAME PASSWORD"));
  }
  if (lines > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " holds ", lines, " lines; it holds one line: PASSWORD, or USERNAME PASSWORD"));
  }
  RedisCredentials credentials;
  size_t space = 0;
  while (space < line.size() && !absl::ascii_isspace(static_cast<unsigned char>(line[space]))) ++space;
  if (space == line.size()) {
    credentials.password = std::string(line);
  } else {
    credentials.username = std::string(line.substr(0, space));
    credentials.password = std::string(absl::StripLeadingAsciiWhitespace(line.substr(space)));
  }
  return credentials;
}

// The right to use the connection, held by one call at a time.
class RedisStore::Turn {
 public:
  // Waits for the turn until `deadline`; see acquired().
  Turn(RedisStore* store, Clock::time_point deadline) : store_(store) {
    std::unique_lock<std::mutex> lock(store_->mu_);
    acquired_ = store_->turn_over_.wait_until(lock, deadline, [this] { return !store_->busy_; });
    if (acquired_) store_->busy_ = true;
  }
  ~Turn() {
    if (!acquired_) return;
    {
      std::lock_guard<std::mutex> lock(store_->mu_);
      store_->busy_ = false;
    }
    store_->turn_over_.notify_one();
  }
  Turn(const Turn&) = delete;
  Turn& operator=(const Turn&) = delete;
  bool acquired() const { return acquired_; }

 private:
  RedisStore* const store_;
  bool acquired_ = false;
};

void RedisStore::ReplyDeleter::operator()(redisReply* reply) const {
  if (reply != nullptr) freeReplyObject(reply);
}

absl::StatusOr<std::unique_ptr<RedisStore>> RedisStore::Create(RedisStoreOptions options) {
  std::string host;
  int port = 0;
  if (!ParseAddress(options.address, &host, &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a Redis address is HOST:PORT or [IPV6]:PORT with a port 1..65535, not '",
                     absl::CHexEscape(options.address), "'"));
  }
  if (options.timeout <= absl::ZeroDuration() || options.timeout > kMaxTimeout) {
    return absl::InvalidArgumentError(
        absl::StrCat("the Redis timeout must be positive and at most ", absl::FormatDuration(kMaxTimeout)));
  }
  if (options.retry_after < absl::ZeroDuration() || options.retry_after > kMaxRetryAfter) {
    return absl::InvalidArgumentError(
        absl::StrCat("the Redis retry_after must be between 0 and ", absl::FormatDuration(kMaxRetryAfter)));
  }
  if (options.ttl_seconds < 0) return absl::InvalidArgumentError("the Redis TTL must not be negative");
  if (!options.username.empty() && options.password.empty()) {
    return absl::InvalidArgumentError("a Redis username needs a password");
  }
  if (!options.password.empty() && AuthCommand(options).empty()) {
    return absl::InternalError("cannot format a Redis AUTH");
  }
  return std::unique_ptr<RedisStore>(new RedisStore(std::move(options), std::move(host), port));
}

RedisStore::RedisStore(RedisStoreOptions options, std::string host, int port)
    : options_(std::move(options)), host_(std::move(host)), port_(port), auth_command_(AuthCommand(options_)) {}

RedisStore::~RedisStore() {
  if (context_ != nullptr) redisFree(context_);
}

absl::Status RedisStore::Count(absl::Status status) {
  errors_.fetch_add(1, std::memory_order_relaxed);
  return status;
}

void RedisStore::DisconnectLocked() {
  if (context_ != nullptr) {
    redisFree(context_);
    context_ = nullptr;
  }
}

absl::Status RedisStore::FailLocked(absl::Status status) {
  DisconnectLocked();
  retry_at_ = Clock::now() + absl::ToChronoNanoseconds(options_.retry_after);
  auth_failed_ = status.code() == absl::StatusCode::kUnauthenticated;
  return status;
}

absl::Status RedisStore::EnsureConnectedLocked(Clock::time_point deadline) {
  if (context_ != nullptr) {
    // An idle connection has nothing to read. If it has, the server closed it
    // (a restart, an idle timeout) or sent something unasked: start afresh.
    pollfd p{};
    p.fd = context_->fd;
    p.events = POLLIN;
    if (context_->err == 0 && poll(&p, 1, 0) == 0) return absl::OkStatus();
    DisconnectLocked();
  }
  if (Clock::now() < retry_at_) {
    if (auth_failed_) {
      return absl::UnauthenticatedError(
          absl::StrCat("authentication with Redis at ", options_.address, " failed recently; skipped"));
    }
    return absl::UnavailableError(absl::StrCat("Redis at ", options_.address, " failed recently; skipped"));
  }
  const Clock::duration left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) {
    return absl::DeadlineExceededError(absl::StrCat("no time left to connect to Redis at ", options_.address));
  }
  context_ = redisConnectWithTimeout(host_.c_str(), port_, ToTimeval(left));
  if (context_ == nullptr || context_->err != 0) {
    const std::string why = context_ != nullptr ? context_->errstr : "out of memory";
    return FailLocked(absl::UnavailableError(absl::StrCat("cannot connect to Redis at ", options_.address, ": ", why)));
  }
  // A backstop: the round trip below polls with the call's deadline anyway.
  if (redisSetTimeout(context_, ToTimeval(absl::ToChronoNanoseconds(options_.timeout))) != REDIS_OK) {
    return FailLocked(absl::UnavailableError(absl::StrCat("cannot set the timeout of Redis at ", options_.address)));
  }
  if (!auth_command_.empty()) return AuthenticateLocked(deadline);
  return absl::OkStatus();
}

absl::Status RedisStore::AuthenticateLocked(Clock::time_point deadline) {
  absl::StatusOr<Reply> reply = ExchangeLocked(auth_command_, deadline);
  if (!reply.ok()) return reply.status();
  const redisReply& r = **reply;
  if (r.type == REDIS_REPLY_STATUS && absl::string_view(r.str, r.len) == "OK") return absl::OkStatus();
  const std::string as_user =
      options_.username.empty() ? std::string() : absl::StrCat(" as user '", absl::CHexEscape(options_.username), "'");
  if (r.type == REDIS_REPLY_ERROR) {
    return FailLocked(
        absl::UnauthenticatedError(absl::StrCat("authentication with Redis at ", options_.address, as_user,
                                                " failed: ", QuoteRedacted(r.str, r.len, options_.password))));
  }
  return FailLocked(absl::InternalError(absl::StrCat("garbage from Redis at ", options_.address,
                                                     ": AUTH answered with a reply of type ", ReplyTypeName(r.type))));
}

absl::Status RedisStore::ErrorReplyLocked(const char* command_name, const redisReply& reply) {
  const absl::string_view text(reply.str, reply.len);
  const std::string quoted = QuoteRedacted(reply.str, reply.len, options_.password);
  if (absl::StartsWith(text, "NOAUTH")) {
    // Every command would fail the same way: fail fast until retry_after.
    return FailLocked(absl::UnauthenticatedError(absl::StrCat(
        "Redis at ", options_.address, " requires authentication and ",
        options_.password.empty() ? "no password is set" : "this connection is not authenticated", ": ", quoted)));
  }
  if (absl::StartsWith(text, "NOPERM")) {
    return absl::PermissionDeniedError(
        absl::StrCat("Redis at ", options_.address, " does not allow ", command_name, " for this user: ", quoted));
  }
  // A proper Redis reply (e.g. WRONGTYPE, OOM): the connection stays usable.
  return absl::InternalError(
      absl::StrCat("Redis at ", options_.address, " answered ", command_name, " with an error: ", quoted));
}

absl::StatusOr<RedisStore::Reply> RedisStore::RoundTripLocked(const std::string& command, Clock::time_point deadline) {
  if (absl::Status connected = EnsureConnectedLocked(deadline); !connected.ok()) return connected;
  return ExchangeLocked(command, deadline);
}

absl::StatusOr<RedisStore::Reply> RedisStore::ExchangeLocked(const std::string& command, Clock::time_point deadline) {
  const int fd = context_->fd;
  // Send without blocking and without SIGPIPE (hiredis would write()).
  size_t sent = 0;
  while (sent < command.size()) {
    if (absl::Status ready = WaitFor(fd, POLLOUT, deadline, "taking a command", options_.address); !ready.ok()) {
      return FailLocked(ready);
    }
    const ssize_t n = send(fd, command.data() + sent, command.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return FailLocked(
          absl::UnavailableError(absl::StrCat("cannot send to Redis at ", options_.address, ": ", ErrnoText(errno))));
    }
    sent += static_cast<size_t>(n);
  }
  // Read until hiredis has one complete reply.
  for (;;) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(context_, &raw) != REDIS_OK) {
      return FailLocked(
          absl::InternalError(absl::StrCat("garbage from Redis at ", options_.address, ": ", context_->errstr)));
    }
    if (raw != nullptr) {
      Reply reply(static_cast<redisReply*>(raw));
      if (context_->reader->pos < context_->reader->len) {
        // Bytes nobody asked for: whatever this peer is, its next answer
        // would belong to a different question.
        return FailLocked(absl::InternalError(
            absl::StrCat("garbage from Redis at ", options_.address, ": more than one reply to one command")));
      }
      return reply;
    }
    if (absl::Status ready = WaitFor(fd, POLLIN, deadline, "answering", options_.address); !ready.ok()) {
      return FailLocked(ready);
    }
    if (redisBufferRead(context_) != REDIS_OK) {
      const std::string why = context_->errstr;
      if (context_->err == REDIS_ERR_PROTOCOL || context_->err == REDIS_ERR_OOM) {
        return FailLocked(absl::InternalError(absl::StrCat("garbage from Redis at ", options_.address, ": ", why)));
      }
      return FailLocked(absl::UnavailableError(absl::StrCat("Redis at ", options_.address, " failed: ", why)));
    }
    if (context_->reader->len - context_->reader->pos > kMaxReplyBytes) {
      return FailLocked(absl::InternalError(absl::StrCat("garbage from Redis at ", options_.address,
                                                         ": a reply of more than ", kMaxReplyBytes, " bytes")));
    }
  }
}

absl::StatusOr<std::optional<std::string>> RedisStore::Get(absl::string_view key) {
  const Clock::time_point deadline = Clock::now() + absl::ToChronoNanoseconds(options_.timeout);
  const std::string full = absl::StrCat(options_.key_prefix, key);
  const std::string command = FormatCommand("GET %b", DataOf(full), full.size());
  if (command.empty()) return Count(absl::InternalError("cannot format a Redis GET"));
  Turn turn(this, deadline);
  if (!turn.acquired()) {
    return Count(absl::DeadlineExceededError(absl::StrCat("Redis at ", options_.address, " busy with other calls")));
  }
  absl::StatusOr<Reply> reply = RoundTripLocked(command, deadline);
  if (!reply.ok()) return Count(reply.status());
  const redisReply& r = **reply;
  switch (r.type) {
    case REDIS_REPLY_NIL:
      return std::optional<std::string>();
    case REDIS_REPLY_STRING:
      return std::optional<std::string>(std::string(r.str, r.len));
    case REDIS_REPLY_ERROR:
      return Count(ErrorReplyLocked("GET", r));
    default:
      // Not what Redis answers to GET: do not trust this connection further.
      DisconnectLocked();
      return Count(absl::InternalError(absl::StrCat("garbage from Redis at ", options_.address,
                                                    ": GET answered with a reply of type ", ReplyTypeName(r.type))));
  }
}

absl::Status RedisStore::Put(absl::string_view key, absl::string_view value) {
  const Clock::time_point deadline = Clock::now() + absl::ToChronoNanoseconds(options_.timeout);
  const std::string full = absl::StrCat(options_.key_prefix, key);
  std::string command;
  if (options_.ttl_seconds > 0) {
    const std::string ttl = absl::StrCat(options_.ttl_seconds);
    command = FormatCommand("SET %b %b EX %b", DataOf(full), full.size(), DataOf(value), value.size(), ttl.data(),
                            ttl.size());
  } else {
    command = FormatCommand("SET %b %b", DataOf(full), full.size(), DataOf(value), value.size());
  }
  if (command.empty()) return Count(absl::InternalError("cannot format a Redis SET"));
  Turn turn(this, deadline);
  if (!turn.acquired()) {
    return Count(absl::DeadlineExceededError(absl::StrCat("Redis at ", options_.address, " busy with other calls")));
  }
  absl::StatusOr<Reply> reply = RoundTripLocked(command, deadline);
  if (!reply.ok()) return Count(reply.status());
  const redisReply& r = **reply;
  if (r.type == REDIS_REPLY_STATUS && absl::string_view(r.str, r.len) == "OK") return absl::OkStatus();
  if (r.type == REDIS_REPLY_ERROR) return Count(ErrorReplyLocked("SET", r));
  DisconnectLocked();
  return Count(absl::InternalError(absl::StrCat(
      "garbage from Redis at ", options_.address, ": SET answered with a reply of type ", ReplyTypeName(r.type),
      r.type == REDIS_REPLY_STATUS ? absl::StrCat(" ", Quote(r.str, r.len)) : std::string())));
}

}  // namespace serenity
