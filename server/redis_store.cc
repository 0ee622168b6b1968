#include "server/redis_store.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace serenity {
namespace {


// Frees a hiredis reply when it goes out of scope.
struct ReplyDeleter {
  void operator()(redisReply* reply) const {
    if (reply != nullptr) freeReplyObject(reply);
  }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

}  // namespace

absl::StatusOr<std::unique_ptr<RedisStore>> RedisStore::Create(RedisStoreOptions options) {
  const size_t colon = options.address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(options.address).substr(colon + 1), &port) || port < 1 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("a Redis address is HOST:PORT with a port 1..65535, not '", options.address, "'"));
  }
  if (options.timeout <= absl::ZeroDuration()) return absl::InvalidArgumentError("the Redis timeout must be positive");
  std::string host = options.address.substr(0, colon);
  return std::unique_ptr<RedisStore>(new RedisStore(std::move(options), std::move(host), port));
}

RedisStore::RedisStore(RedisStoreOptions options, std::string host, int port)
    : options_(std::move(options)), host_(std::move(host)), port_(port) {}

RedisStore::~RedisStore() {
  if (context_ != nullptr) redisFree(context_);
}

absl::Status RedisStore::FailLocked(absl::Status status) {
  ++errors_;
  if (context_ != nullptr) {
    redisFree(context_);
    context_ = nullptr;
  }
  retry_at_ = absl::Now() + options_.retry_after;
  return status;
}

absl::Status RedisStore::EnsureConnectedLocked() {
  if (context_ != nullptr) return absl::OkStatus();
  if (absl::Now() < retry_at_) {
    ++errors_;
    return absl::UnavailableError(absl::StrCat("Redis at ", options_.address, " failed recently; skipped"));
  }
  context_ = redisConnectWithTimeout(host_.c_str(), port_, absl::ToTimeval(options_.timeout));
  if (context_ == nullptr || context_->err != 0) {
    const std::string why = context_ != nullptr ? context_->errstr : "out of memory";
    return FailLocked(absl::UnavailableError(absl::StrCat("cannot connect to Redis at ", options_.address, ": ", why)));
  }
  if (redisSetTimeout(context_, absl::ToTimeval(options_.timeout)) != REDIS_OK) {
    return FailLocked(absl::UnavailableError("cannot set the Redis timeout"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> RedisStore::Get(absl::string_view key) {
  const std::string full = absl::StrCat(options_.key_prefix, key);
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = EnsureConnectedLocked(); !s.ok()) return s;
  Reply reply(static_cast<redisReply*>(redisCommand(context_, "GET %b", full.data(), full.size())));
  if (reply == nullptr) {
    return FailLocked(absl::UnavailableError(absl::StrCat("Redis GET failed: ", context_->errstr)));
  }
  switch (reply->type) {
    case REDIS_REPLY_NIL:
      return std::optional<std::string>();
    case REDIS_REPLY_STRING:
      return std::optional<std::string>(std::string(reply->str, reply->len));
    case REDIS_REPLY_ERROR:
      return FailLocked(absl::InternalError(absl::StrCat("Redis GET answered an error: ",
                                                         std::string(reply->str, reply->len))));
    default:
      return FailLocked(absl::InternalError(absl::StrCat("Redis GET answered a reply of type ", reply->type)));
  }
}

absl::Status RedisStore::Put(absl::string_view key, absl::string_view value) {
  const std::string full = absl::StrCat(options_.key_prefix, key);
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = EnsureConnectedLocked(); !s.ok()) return s;
  Reply reply;
  if (options_.ttl_seconds > 0) {
    const std::string ttl = absl::StrCat(options_.ttl_seconds);
    reply.reset(static_cast<redisReply*>(redisCommand(context_, "SET %b %b EX %s", full.data(), full.size(),
                                                      value.data(), value.size(), ttl.c_str())));
  } else {
    reply.reset(static_cast<redisReply*>(
        redisCommand(context_, "SET %b %b", full.data(), full.size(), value.data(), value.size())));
  }
  if (reply == nullptr) {
    return FailLocked(absl::UnavailableError(absl::StrCat("Redis SET failed: ", context_->errstr)));
  }
  if (reply->type != REDIS_REPLY_STATUS) {
    return FailLocked(absl::InternalError(absl::StrCat("Redis SET answered a reply of type ", reply->type)));
  }
  return absl::OkStatus();
}

}  // namespace serenity
