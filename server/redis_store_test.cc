#include "server/redis_store.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"
#include "tests/testing/redis_server.h"

namespace serenity {
namespace {

std::unique_ptr<RedisStore> StoreFor(const std::string& address, const std::string& prefix = "test:") {
  RedisStoreOptions options;
  options.address = address;
  options.key_prefix = prefix;
  options.retry_after = absl::Milliseconds(50);
  options.timeout = absl::Milliseconds(200);
  absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return std::move(store).value();
}

TEST(RedisStoreTest, RoundTripsBinaryValuesUnderItsPrefix) {
  testing::RedisServerProcess redis;
  ASSERT_TRUE(redis.Start());
  std::unique_ptr<RedisStore> store = StoreFor(redis.address());
  const std::string value("a\0b\r\n\xff plan", 11);
  ASSERT_TRUE(store->Put("k1", value).ok());
  absl::StatusOr<std::optional<std::string>> got = store->Get("k1");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, value);
  absl::StatusOr<std::optional<std::string>> missing = store->Get("absent");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  // The prefix is part of the real key.
  std::unique_ptr<RedisStore> raw = StoreFor(redis.address(), "");
  absl::StatusOr<std::optional<std::string>> prefixed = raw->Get("test:k1");
  ASSERT_TRUE(prefixed.ok());
  ASSERT_TRUE(prefixed->has_value());
  EXPECT_EQ(**prefixed, value);
  EXPECT_EQ(store->errors(), 0);
}

TEST(RedisStoreTest, RejectsMalformedAddresses) {
  for (const char* address : {"", "localhost", ":6379", "host:0", "host:65536", "host:port"}) {
    RedisStoreOptions options;
    options.address = address;
    EXPECT_EQ(RedisStore::Create(options).status().code(), absl::StatusCode::kInvalidArgument) << address;
  }
}

TEST(RedisStoreTest, FailsFastWhileRedisIsDownAndRecoversAfterwards) {
  testing::RedisServerProcess redis;
  ASSERT_TRUE(redis.Start());
  std::unique_ptr<RedisStore> store = StoreFor(redis.address());
  ASSERT_TRUE(store->Put("k", "v").ok());
  redis.Stop();
  EXPECT_FALSE(store->Get("k").ok());
  EXPECT_FALSE(store->Put("k", "w").ok());
  EXPECT_GE(store->errors(), 2);
  ASSERT_TRUE(redis.Start());
  bool recovered = false;
  for (int i = 0; i < 100 && !recovered; ++i) {
    recovered = store->Put("k", "again").ok();
    if (!recovered) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(recovered);
  absl::StatusOr<std::optional<std::string>> got = store->Get("k");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(**got, "again");
}

// A TCP peer that is not Redis: it answers every connection with `reply`
// (or nothing) and closes after a while.
class FakePeer {
 public:
  explicit FakePeer(std::string reply) : reply_(std::move(reply)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    listen(fd_, 8);
    thread_ = std::thread([this] {
      while (!stop_) {
        int client = accept(fd_, nullptr, nullptr);
        if (client < 0) return;
        char buffer[256];
        (void)!read(client, buffer, sizeof(buffer));
        if (!reply_.empty()) (void)!write(client, reply_.data(), reply_.size());
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        close(client);
      }
    });
  }
  ~FakePeer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  std::string reply_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(RedisStoreTest, GarbageAndSilenceAreErrorsNotCrashes) {
  for (const std::string& reply : {std::string("HELLO THERE\r\n"), std::string(":42\r\n"),
                                   std::string("-ERR wrong\r\n"), std::string("\x01\x02\x03garbage"),
                                   std::string()}) {
    FakePeer peer(reply);
    std::unique_ptr<RedisStore> store = StoreFor(peer.address());
    absl::StatusOr<std::optional<std::string>> got = store->Get("k");
    EXPECT_FALSE(got.ok()) << "reply '" << reply << "'";
    EXPECT_GE(store->errors(), 1);
  }
}

}  // namespace
}  // namespace serenity
