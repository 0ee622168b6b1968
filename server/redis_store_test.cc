#include "server/redis_store.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/redis_server.h"

namespace serenity {
namespace {

using ::absl::StatusCode;
using ::testing::HasSubstr;
using ::testing::Not;

RedisStoreOptions OptionsFor(const std::string& address, const std::string& prefix = "test:") {
  RedisStoreOptions options;
  options.address = address;
  options.key_prefix = prefix;
  options.retry_after = absl::Milliseconds(50);
  // Generous, so that a busy machine causes no spurious errors; the tests of
  // silent peers shorten it.
  options.timeout = absl::Seconds(2);
  return options;
}

std::unique_ptr<RedisStore> StoreFor(const RedisStoreOptions& options) {
  absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(store).value() : nullptr;
}

std::unique_ptr<RedisStore> StoreFor(const std::string& address, const std::string& prefix = "test:") {
  return StoreFor(OptionsFor(address, prefix));
}

// A plain hiredis connection to look at what the store wrote.
struct RawRedis {
  explicit RawRedis(int port) {
    timeval tv{2, 0};
    context = redisConnectWithTimeout("127.0.0.1", port, tv);
  }
  ~RawRedis() {
    if (context != nullptr) redisFree(context);
  }
  bool ok() const { return context != nullptr && context->err == 0; }
  // The reply to an argv-style command (binary-safe).
  redisReply* Command(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> lengths;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lengths.push_back(a.size());
    }
    return static_cast<redisReply*>(
        redisCommandArgv(context, static_cast<int>(args.size()), argv.data(), lengths.data()));
  }
  redisContext* context = nullptr;
};

bool IsOneOf(StatusCode code, std::initializer_list<StatusCode> codes) {
  for (StatusCode c : codes) {
    if (code == c) return true;
  }
  return false;
}

TEST(RedisStoreTest, RoundTripsBinaryValues) {
  testing::RedisServerProcess redis;
  ASSERT_TRUE(redis.Start());
  RedisStoreOptions options = OptionsFor(redis.address());
  options.timeout = absl::Seconds(10);  // megabytes on a busy machine
  std::unique_ptr<RedisStore> store = StoreFor(options);
  ASSERT_NE(store, nullptr);
  constexpr char kValue[] = "a\0b\r\n\xff$3\r\n*1 plan\0";
  const std::string value(kValue, sizeof(kValue) - 1);  // with both NULs
  const absl::Status put = store->Put("k1", value);
  ASSERT_TRUE(put.ok()) << put;
  absl::StatusOr<std::optional<std::string>> got = store->Get("k1");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, value);

  // Binary keys, an empty value, and a value larger than any socket buffer.
  constexpr char kBinaryKey[] = "k\0\r\n key";
  const std::string binary_key(kBinaryKey, sizeof(kBinaryKey) - 1);
  ASSERT_TRUE(store->Put(binary_key, "").ok());
  got = store->Get(binary_key);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, "");
  std::string large(4 << 20, '\0');
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>(i * 7919 % 251);
  const absl::Status put_large = store->Put("large", large);
  ASSERT_TRUE(put_large.ok()) << put_large;
  got = store->Get("large");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_TRUE(**got == large);

  // Overwriting replaces.
  ASSERT_TRUE(store->Put("k1", "second").ok());
  got = store->Get("k1");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(**got, "second");
  EXPECT_EQ(store->errors(), 0);
}

TEST(RedisStoreTest, MissingKeyIsNullopt) {
  testing::RedisServerProcess redis;
  ASSERT_TRUE(redis.Start());
  std::unique_ptr<RedisStore> store = StoreFor(redis.address());
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::optional<std::string>> missing = store->Get("absent");
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_FALSE(missing->has_value());
  EXPECT_EQ(store->errors(), 0);
}

TEST(RedisStoreTest, AppliesTheKeyPrefixAndTheTtl) {
  testing::RedisServerProcess redis;
  ASSERT_TRUE(redis.Start());
  RedisStoreOptions options = OptionsFor(redis.address(), "serenity:plan:");
  options.ttl_seconds = 3600;
  std::unique_ptr<RedisStore> store = StoreFor(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put("k1", "v1").ok());
  options.key_prefix = "other:";
  options.ttl_seconds = 0;
  std::unique_ptr<RedisStore> other = StoreFor(options);
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(other->Put("k1", "v2").ok());

  // Through a store without a prefix ...
  std::unique_ptr<RedisStore> unprefixed = StoreFor(redis.address(), "");
  ASSERT_NE(unprefixed, nullptr);
  absl::StatusOr<std::optional<std::string>> raw = unprefixed->Get("serenity:plan:k1");
  ASSERT_TRUE(raw.ok()) << raw.status();
  ASSERT_TRUE(raw->has_value());
  EXPECT_EQ(**raw, "v1");
  raw = unprefixed->Get("k1");
  ASSERT_TRUE(raw.ok());
  EXPECT_FALSE(raw->has_value());
  // ... and through hiredis directly: the keys, and the expiry of each.
  RawRedis direct(redis.port());
  ASSERT_TRUE(direct.ok());
  std::unique_ptr<redisReply, void (*)(void*)> value(direct.Command({"GET", "other:k1"}), freeReplyObject);
  ASSERT_NE(value, nullptr);
  ASSERT_EQ(value->type, REDIS_REPLY_STRING);
  EXPECT_EQ(std::string(value->str, value->len), "v2");
  std::unique_ptr<redisReply, void (*)(void*)> ttl(direct.Command({"TTL", "serenity:plan:k1"}), freeReplyObject);
  ASSERT_NE(ttl, nullptr);
  ASSERT_EQ(ttl->type, REDIS_REPLY_INTEGER);
  EXPECT_GT(ttl->integer, 3500);
  EXPECT_LE(ttl->integer, 3600);
  std::unique_ptr<redisReply, void (*)(void*)> no_ttl(direct.Command({"TTL", "other:k1"}), freeReplyObject);
  ASSERT_NE(no_ttl, nullptr);
  ASSERT_EQ(no_ttl->type, REDIS_REPLY_INTEGER);
  EXPECT_EQ(no_ttl->integer, -1);  // no expiry
}

TEST(RedisStoreTest, RejectsMalformedAddressesAndOptions) {
  for (const char* address : {"", "localhost", ":6379", "host:", "host:0", "host:65536", "host:port", "host:12a",
                              "host:+80", "host: 80", "host:-1", "host:0000080", "::1:6379", "[::1]6379",
                              "[::1]:", "[]:6379", "ho st:80", "host\n:80", "[::1:6379"}) {
    EXPECT_EQ(RedisStore::Create(OptionsFor(address)).status().code(), StatusCode::kInvalidArgument)
        << "'" << address << "'";
  }
  for (const char* address : {"localhost:6379", "127.0.0.1:1", "redis.example:65535", "[::1]:6379"}) {
    EXPECT_TRUE(RedisStore::Create(OptionsFor(address)).ok()) << address;  // lazy: nothing is contacted
  }
  RedisStoreOptions options = OptionsFor("127.0.0.1:6379");
  options.timeout = absl::ZeroDuration();
  EXPECT_EQ(RedisStore::Create(options).status().code(), StatusCode::kInvalidArgument);
  options.timeout = absl::InfiniteDuration();
  EXPECT_EQ(RedisStore::Create(options).status().code(), StatusCode::kInvalidArgument);
  options = OptionsFor("127.0.0.1:6379");
  options.retry_after = absl::Seconds(-1);
  EXPECT_EQ(RedisStore::Create(options).status().code(), StatusCode::kInvalidArgument);
  options = OptionsFor("127.0.0.1:6379");
  options.ttl_seconds = -5;
  EXPECT_EQ(RedisStore::Create(options).status().code(), StatusCode::kInvalidArgument);
  options = OptionsFor("127.0.0.1:6379");
  options.username = "alice";  // without a password
  absl::Status no_password = RedisStore::Create(options).status();
  EXPECT_EQ(no_password.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(no_password.message(), HasSubstr("username needs a password"));
  options.password = "secret";
  EXPECT_TRUE(RedisStore::Create(options).ok());
}

// A password with a space and a quote: AUTH goes as a RESP bulk string.
constexpr char kPassword[] = "pa ss\"word";

TEST(RedisStoreTest, AuthenticatesWithThePasswordOnEveryConnection) {
  testing::RedisServerProcess redis(testing::RedisServerOptions{kPassword, "", ""});
  ASSERT_TRUE(redis.Start());
  RedisStoreOptions options = OptionsFor(redis.address());
  options.password = kPassword;
  std::unique_ptr<RedisStore> store = StoreFor(options);
  ASSERT_NE(store, nullptr);
  const absl::Status put = store->Put("k", "v");
  ASSERT_TRUE(put.ok()) << put;
  absl::StatusOr<std::optional<std::string>> got = store->Get("k");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->value_or(""), "v");
  // A restart between two calls: the new connection authenticates too.
  redis.Stop();
  ASSERT_TRUE(redis.Start());
  bool recovered = false;
  for (int i = 0; i < 200 && !recovered; ++i) {
    recovered = store->Put("k2", "v2").ok();
    if (!recovered) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(recovered);
  got = store->Get("k2");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->value_or(""), "v2");
  EXPECT_EQ(store->errors(), 0);
}

TEST(RedisStoreTest, WrongPasswordIsUnauthenticatedFailsFastAndIsNotEchoed) {
  testing::RedisServerProcess redis(testing::RedisServerOptions{kPassword, "", ""});
  ASSERT_TRUE(redis.Start());
  RedisStoreOptions options = OptionsFor(redis.address());
  options.password = "wrong-secret-1234";
  options.retry_after = absl::Seconds(30);  // the second call is always inside the window
  std::unique_ptr<RedisStore> store = StoreFor(options);
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::optional<std::string>> got = store->Get("k");
  EXPECT_EQ(got.status().code(), StatusCode::kUnauthenticated) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("authentication with Redis at " + redis.address() + " failed"));
  EXPECT_THAT(got.status().message(), HasSubstr("WRONGPASS"));
  EXPECT_THAT(got.status().message(), Not(HasSubstr("wrong-secret-1234")));
  // Skipped while retry_after lasts, still as an authentication failure and
  // not as an outage.
  const absl::Status put = store->Put("k", "v");
  EXPECT_EQ(put.code(), StatusCode::kUnauthenticated) << put;
  EXPECT_THAT(put.message(), HasSubstr("authentication with Redis at " + redis.address() + " failed recently"));
  EXPECT_THAT(put.message(), HasSubstr("skipped"));
  EXPECT_EQ(store->errors(), 2);

  // After retry_after, it authenticates afresh (and fails again).
  options.retry_after = absl::ZeroDuration();
  store = StoreFor(options);
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(store->Get("k").status().message(), HasSubstr("WRONGPASS"));
  EXPECT_THAT(store->Put("k", "v").message(), HasSubstr("WRONGPASS"));
  EXPECT_EQ(store->errors(), 2);
}

TEST(RedisStoreTest, NoPasswordAgainstAServerThatWantsOneIsUnauthenticated) {
  testing::RedisServerProcess redis(testing::RedisServerOptions{kPassword, "", ""});
  ASSERT_TRUE(redis.Start());
  RedisStoreOptions options = OptionsFor(redis.address());
  options.retry_after = absl::Seconds(30);
  std::unique_ptr<RedisStore> store = StoreFor(options);
  ASSERT_NE(store, nullptr);
  const absl::Status put = store->Put("k", "v");
  EXPECT_EQ(put.code(), StatusCode::kUnauthenticated) << put;
  EXPECT_THAT(put.message(), HasSubstr("requires authentication and no password is set"));
  EXPECT_THAT(put.message(), HasSubstr("NOAUTH"));
  absl::StatusOr<std::optional<std::string>> got = store->Get("k");
  EXPECT_EQ(got.status().code(), StatusCode::kUnauthenticated) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("skipped"));
  EXPECT_EQ(store->errors(), 2);
}

TEST(RedisStoreTest, PasswordForAServerThatWantsNoneIsUnauthenticated) {
  testing::RedisServerProcess redis;
  ASSERT_TRUE(redis.Start());
  RedisStoreOptions options = OptionsFor(redis.address());
  options.password = "unexpected-secret";
  std::unique_ptr<RedisStore> store = StoreFor(options);
  ASSERT_NE(store, nullptr);
  const absl::Status put = store->Put("k", "v");
  EXPECT_EQ(put.code(), StatusCode::kUnauthenticated) << put;
  EXPECT_THAT(put.message(), Not(HasSubstr("unexpected-secret")));
  EXPECT_EQ(store->errors(), 1);
}

TEST(RedisStoreTest, AuthenticatesAsAnAclUser) {
  testing::RedisServerProcess redis(testing::RedisServerOptions{kPassword, "alice", "s3 cret"});
  ASSERT_TRUE(redis.Start());
  RedisStoreOptions options = OptionsFor(redis.address());
  options.username = "alice";
  options.password = "s3 cret";
  std::unique_ptr<RedisStore> store = StoreFor(options);
  ASSERT_NE(store, nullptr);
  const absl::Status put = store->Put("k", "from alice");
  ASSERT_TRUE(put.ok()) << put;
  absl::StatusOr<std::optional<std::string>> got = store->Get("k");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->value_or(""), "from alice");
  EXPECT_EQ(store->errors(), 0);

  // The user's password is not the default user's, nor the other way round,
  // and an unknown user fails too; the message names the user.
  for (const auto& [username, password] : std::vector<std::pair<std::string, std::string>>{
           {"alice", kPassword}, {"", "s3 cret"}, {"mallory", "s3 cret"}}) {
    SCOPED_TRACE(username + " / " + password);
    options.username = username;
    options.password = password;
    store = StoreFor(options);
    ASSERT_NE(store, nullptr);
    got = store->Get("k");
    EXPECT_EQ(got.status().code(), StatusCode::kUnauthenticated) << got.status();
    EXPECT_THAT(got.status().message(), Not(HasSubstr(password)));
    if (!username.empty()) {
      EXPECT_THAT(got.status().message(), HasSubstr("as user '" + username + "'"));
    }
  }
}

TEST(RedisStoreTest, ReadsCredentialsFiles) {
  const std::string path = ::testing::TempDir() + "/redis_store_test_credentials";
  auto read = [&path](const std::string& content) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
    return ReadRedisCredentials(path);
  };
  absl::StatusOr<RedisCredentials> credentials = read("hunter2\n");
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->username, "");
  EXPECT_EQ(credentials->password, "hunter2");
  credentials = read("  alice \t s3 cret  \r\n\n");
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->username, "alice");
  EXPECT_EQ(credentials->password, "s3 cret");
  credentials = read("\n  only-a-password");  // no final newline, an empty line before
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->username, "");
  EXPECT_EQ(credentials->password, "only-a-password");

  for (const std::string& empty : {std::string(), std::string(" \n\t\r\n")}) {
    credentials = read(empty);
    EXPECT_EQ(credentials.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(credentials.status().message(), HasSubstr("'" + path + "' is empty"));
  }
  credentials = read("alice secret-one\nbob secret-two\n");
  EXPECT_EQ(credentials.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(credentials.status().message(), HasSubstr("'" + path + "' holds 2 lines"));
  EXPECT_THAT(credentials.status().message(), Not(HasSubstr("secret")));
  credentials = read(std::string(100 << 10, 'x'));
  EXPECT_EQ(credentials.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(credentials.status().message(), HasSubstr(path));

  std::remove(path.c_str());
  credentials = ReadRedisCredentials(path);
  EXPECT_EQ(credentials.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(credentials.status().message(), HasSubstr("'" + path + "'"));
}

TEST(RedisStoreTest, NobodyListeningIsUnavailableAndFailsFast) {
  const int port = testing::FreePort();
  ASSERT_NE(port, 0);
  RedisStoreOptions options = OptionsFor("127.0.0.1:" + std::to_string(port));
  options.retry_after = absl::Seconds(30);  // the second call is always inside the window
  std::unique_ptr<RedisStore> store = StoreFor(options);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Get("k").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(store->Put("k", "v").code(), StatusCode::kUnavailable);
  absl::StatusOr<std::optional<std::string>> skipped = store->Get("k");
  EXPECT_EQ(skipped.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(skipped.status().message().find("skipped"), absl::string_view::npos) << skipped.status();
  EXPECT_EQ(store->errors(), 3);
}

TEST(RedisStoreTest, FailsWhileRedisIsDownAndRecoversAfterARestart) {
  testing::RedisServerProcess redis;
  ASSERT_TRUE(redis.Start());
  std::unique_ptr<RedisStore> store = StoreFor(redis.address());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put("k", "v").ok());
  redis.Stop();
  absl::StatusOr<std::optional<std::string>> got = store->Get("k");
  EXPECT_FALSE(got.ok());
  EXPECT_TRUE(IsOneOf(got.status().code(), {StatusCode::kUnavailable, StatusCode::kDeadlineExceeded})) << got.status();
  const absl::Status put = store->Put("k", "w");
  EXPECT_FALSE(put.ok());
  EXPECT_TRUE(IsOneOf(put.code(), {StatusCode::kUnavailable, StatusCode::kDeadlineExceeded})) << put;
  EXPECT_GE(store->errors(), 2);

  ASSERT_TRUE(redis.Start());  // same port, empty (no persistence)
  bool recovered = false;
  for (int i = 0; i < 200 && !recovered; ++i) {
    recovered = store->Put("k", "again").ok();
    if (!recovered) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(recovered);
  got = store->Get("k");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, "again");

  // A restart between two calls costs no call: the store notices that the
  // server closed its idle connection and reconnects at once.
  const int64_t errors_before = store->errors();
  redis.Stop();
  ASSERT_TRUE(redis.Start());
  recovered = false;
  for (int i = 0; i < 200 && !recovered; ++i) {
    recovered = store->Put("k2", "v2").ok();
    if (!recovered) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(recovered);
  EXPECT_EQ(store->errors() - errors_before, 0);
}

// A Redis error reply (here WRONGTYPE, for a key holding a list) is Internal
// but leaves the store working, without a fail-fast period.
TEST(RedisStoreTest, ErrorReplyIsInternalAndHarmless) {
  testing::RedisServerProcess redis;
  ASSERT_TRUE(redis.Start());
  RedisStoreOptions options = OptionsFor(redis.address());
  options.retry_after = absl::Seconds(30);
  std::unique_ptr<RedisStore> store = StoreFor(options);
  ASSERT_NE(store, nullptr);
  RawRedis direct(redis.port());
  ASSERT_TRUE(direct.ok());
  std::unique_ptr<redisReply, void (*)(void*)> pushed(direct.Command({"RPUSH", "test:list", "x"}), freeReplyObject);
  ASSERT_NE(pushed, nullptr);
  absl::StatusOr<std::optional<std::string>> got = store->Get("list");
  EXPECT_EQ(got.status().code(), StatusCode::kInternal) << got.status();
  EXPECT_EQ(store->errors(), 1);
  ASSERT_TRUE(store->Put("fine", "yes").ok());
  got = store->Get("fine");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->value_or(""), "yes");
  EXPECT_EQ(store->errors(), 1);
}

TEST(RedisStoreTest, IsSafeToShareBetweenThreads) {
  testing::RedisServerProcess redis;
  ASSERT_TRUE(redis.Start());
  RedisStoreOptions options = OptionsFor(redis.address());
  options.timeout = absl::Seconds(10);  // 8 threads on a busy machine
  std::unique_ptr<RedisStore> store = StoreFor(options);
  ASSERT_NE(store, nullptr);
  constexpr int kThreads = 8;
  constexpr int kRounds = 100;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        const std::string key = "t" + std::to_string(t) + ":" + std::to_string(i);
        const std::string value(static_cast<size_t>(i) * 37, static_cast<char>('a' + t));
        if (!store->Put(key, value).ok()) ++failures;
        absl::StatusOr<std::optional<std::string>> got = store->Get(key);
        if (!got.ok() || !got->has_value() || **got != value) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(store->errors(), 0);
}

// A TCP peer that is not Redis: every connection it accepts is handed to
// `serve` (in its own thread), which should return soon after `stop` is set.
class FakePeer {
 public:
  using Handler = std::function<void(int fd, const std::atomic<bool>& stop)>;

  explicit FakePeer(Handler serve) : serve_(std::move(serve)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0 && listen(fd_, 16) == 0) {
      port_ = ntohs(address.sin_port);
    }
    accepter_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, 20) != 1) continue;
        const int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client < 0) continue;
        std::lock_guard<std::mutex> lock(mu_);
        connections_.emplace_back([this, client] {
          serve_(client, stop_);
          close(client);
        });
      }
    });
  }
  ~FakePeer() {
    stop_ = true;
    accepter_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (std::thread& t : connections_) t.join();
    if (fd_ >= 0) close(fd_);
  }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // Reads the request, answers `reply` (if any), and closes.
  static Handler Answering(std::string reply) {
    return [reply](int fd, const std::atomic<bool>& stop) {
      ReadSome(fd, stop);
      if (!reply.empty()) (void)!send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
    };
  }
  // Reads the request and never answers.
  static Handler Silent() {
    return [](int fd, const std::atomic<bool>& stop) {
      ReadSome(fd, stop);
      WaitForStop(stop, std::chrono::seconds(10));
    };
  }
  // Starts a valid bulk reply and then trickles it a byte at a time, never
  // finishing within the store's timeout.
  static Handler Trickling() {
    return [](int fd, const std::atomic<bool>& stop) {
      ReadSome(fd, stop);
      const std::string head = "$100000\r\n";
      if (send(fd, head.data(), head.size(), MSG_NOSIGNAL) < 0) return;
      for (int i = 0; i < 200 && !stop; ++i) {  // at most 10 s
        if (send(fd, "x", 1, MSG_NOSIGNAL) < 0) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    };
  }

 private:
  static void ReadSome(int fd, const std::atomic<bool>& stop) {
    for (int i = 0; i < 100 && !stop; ++i) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 20) == 1) {
        char buffer[4096];
        (void)!recv(fd, buffer, sizeof(buffer), 0);
        return;
      }
    }
  }
  static void WaitForStop(const std::atomic<bool>& stop, std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!stop && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  Handler serve_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread accepter_;
  std::mutex mu_;
  std::vector<std::thread> connections_;
};

TEST(RedisStoreTest, GarbageIsAnErrorNotACrash) {
  const std::vector<std::string> replies = {
      "HELLO\r\n",                                // not RESP at all
      std::string("\x01\x02\x03\0nonsense", 12),  // with a NUL
      ":42\r\n",                                  // valid RESP, wrong type for GET and SET
      "*2\r\n$1\r\na\r\n$1\r\nb\r\n",             // an array
      "+OK\r\n",                                  // a status for GET
      "$-5\r\n",                                  // a negative bulk length
      "$abc\r\n",                                 // a bulk length that is no number
      "*99999999999999\r\n",                      // an absurd array
      "$3\r\nabc\r\n$3\r\ndef\r\n",               // two replies to one command
      "-ERR no\r\n",                              // an error reply
      "$5\r\nab",                                 // a reply cut short by the close
      "",                                         // closes without a word
  };
  for (const std::string& reply : replies) {
    SCOPED_TRACE(::testing::PrintToString(reply));
    FakePeer peer(FakePeer::Answering(reply));
    ASSERT_NE(peer.port(), 0);
    std::unique_ptr<RedisStore> get_store = StoreFor(peer.address());
    ASSERT_NE(get_store, nullptr);
    absl::StatusOr<std::optional<std::string>> got = get_store->Get("k");
    EXPECT_FALSE(got.ok());
    EXPECT_TRUE(IsOneOf(got.status().code(), {StatusCode::kInternal, StatusCode::kUnavailable})) << got.status();
    EXPECT_EQ(get_store->errors(), 1);
    std::unique_ptr<RedisStore> put_store = StoreFor(peer.address());
    ASSERT_NE(put_store, nullptr);
    const absl::Status put = put_store->Put("k", "v");
    if (reply != "+OK\r\n") {
      EXPECT_FALSE(put.ok());
      EXPECT_TRUE(IsOneOf(put.code(), {StatusCode::kInternal, StatusCode::kUnavailable})) << put;
      EXPECT_EQ(put_store->errors(), 1);
    }
  }
}

// AUTH is the first thing on a new connection, a binary-safe RESP request;
// a peer that answers it with an error quoting the password does not get
// the password into the status.
TEST(RedisStoreTest, SendsAuthFirstAndNeverQuotesThePassword) {
  const std::string password("se\0cr et", 8);
  std::mutex mu;
  std::string first_request;
  FakePeer peer([&](int fd, const std::atomic<bool>& stop) {
    std::string request;
    const std::string expected_end = password + "\r\n";
    for (int i = 0; i < 500 && !stop && request.size() < 4096; ++i) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 20) != 1) continue;
      char buffer[4096];
      const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      request.append(buffer, static_cast<size_t>(n));
      if (request.size() >= expected_end.size() &&
          request.compare(request.size() - expected_end.size(), expected_end.size(), expected_end) == 0) {
        break;
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      if (first_request.empty()) first_request = request;
    }
    const std::string reply = "-ERR bad password " + password + "\r\n";
    (void)!send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
  });
  ASSERT_NE(peer.port(), 0);
  RedisStoreOptions options = OptionsFor(peer.address());
  options.username = "bob";
  options.password = password;
  std::unique_ptr<RedisStore> store = StoreFor(options);
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::optional<std::string>> got = store->Get("k");
  EXPECT_EQ(got.status().code(), StatusCode::kUnauthenticated) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("ERR bad password <password>"));
  EXPECT_THAT(got.status().message(), Not(HasSubstr("cr et")));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(first_request, "*3\r\n$4\r\nAUTH\r\n$3\r\nbob\r\n$8\r\n" + password + "\r\n");
}

// A peer that never answers AUTH costs no more than the call's timeout.
TEST(RedisStoreTest, SilentPeerTimesOutDuringAuth) {
  FakePeer peer(FakePeer::Silent());
  ASSERT_NE(peer.port(), 0);
  RedisStoreOptions options = OptionsFor(peer.address());
  options.timeout = absl::Milliseconds(200);
  options.password = "secret";
  std::unique_ptr<RedisStore> store = StoreFor(options);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Get("k").status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(store->errors(), 1);
}

TEST(RedisStoreTest, GarbageRepliesAreInternal) {
  for (const std::string& reply : {std::string("HELLO\r\n"), std::string(":42\r\n"), std::string("-ERR no\r\n")}) {
    SCOPED_TRACE(reply);
    FakePeer peer(FakePeer::Answering(reply));
    std::unique_ptr<RedisStore> store = StoreFor(peer.address());
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->Get("k").status().code(), StatusCode::kInternal);
  }
}

TEST(RedisStoreTest, SilentPeerTimesOut) {
  FakePeer peer(FakePeer::Silent());
  ASSERT_NE(peer.port(), 0);
  RedisStoreOptions options = OptionsFor(peer.address());
  options.timeout = absl::Milliseconds(200);
  options.retry_after = absl::Seconds(30);
  std::unique_ptr<RedisStore> store = StoreFor(options);
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::optional<std::string>> got = store->Get("k");
  EXPECT_FALSE(got.ok());
  EXPECT_TRUE(IsOneOf(got.status().code(), {StatusCode::kDeadlineExceeded, StatusCode::kUnavailable})) << got.status();
  // Then the store fails fast instead of waiting again.
  EXPECT_EQ(store->Put("k", "v").code(), StatusCode::kUnavailable);
  EXPECT_EQ(store->errors(), 2);
}

// Threads that share a store whose peer never answers all get their errors:
// nobody waits behind the others for longer than about its own timeout.
TEST(RedisStoreTest, ConcurrentCallsToASilentPeerAllReturn) {
  FakePeer peer(FakePeer::Silent());
  ASSERT_NE(peer.port(), 0);
  RedisStoreOptions options = OptionsFor(peer.address());
  options.timeout = absl::Milliseconds(100);
  std::unique_ptr<RedisStore> store = StoreFor(options);
  ASSERT_NE(store, nullptr);
  constexpr int kThreads = 8;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      absl::StatusOr<std::optional<std::string>> got = store->Get("k");
      if (!got.ok() && IsOneOf(got.status().code(), {StatusCode::kDeadlineExceeded, StatusCode::kUnavailable})) {
        ++errors;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(errors.load(), kThreads);
  EXPECT_EQ(store->errors(), kThreads);
}

// A peer that keeps sending a byte now and then must not keep the store
// waiting past its timeout (the timeout bounds the whole call, not each read).
TEST(RedisStoreTest, TricklingPeerTimesOut) {
  FakePeer peer(FakePeer::Trickling());
  ASSERT_NE(peer.port(), 0);
  RedisStoreOptions options = OptionsFor(peer.address());
  options.timeout = absl::Milliseconds(200);
  std::unique_ptr<RedisStore> store = StoreFor(options);
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::optional<std::string>> got = store->Get("k");
  EXPECT_EQ(got.status().code(), StatusCode::kDeadlineExceeded) << got.status();
  EXPECT_EQ(store->errors(), 1);
}

}  // namespace
}  // namespace serenity
