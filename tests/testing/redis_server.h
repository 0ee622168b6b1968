// Test support: a private redis-server on a free loopback port, which tests
// can stop and start again on the same port.
#ifndef SERENITY_TESTS_TESTING_REDIS_SERVER_H_
#define SERENITY_TESTS_TESTING_REDIS_SERVER_H_

#include <sys/types.h>

#include <string>

namespace serenity::testing {

class RedisServerProcess {
 public:
  RedisServerProcess() = default;
  ~RedisServerProcess();  // kills the server
  RedisServerProcess(const RedisServerProcess&) = delete;
  RedisServerProcess& operator=(const RedisServerProcess&) = delete;

  // Starts /usr/bin/redis-server (no persistence) on a free port the first
  // time, on the same port afterwards, and waits until it answers PING (at
  // most 10 s). False when it does not come up.
  bool Start();
  // Stops it (SIGTERM, then waits).
  void Stop();

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  pid_t pid_ = 0;
  int port_ = 0;
};

// A loopback port nobody listens on right now.
int FreePort();

}  // namespace serenity::testing

#endif  // SERENITY_TESTS_TESTING_REDIS_SERVER_H_
