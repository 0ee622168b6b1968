// Test support: a private redis-server on a free loopback port, which tests
// can stop and start again on the same port.
#ifndef SERENITY_TESTS_TESTING_REDIS_SERVER_H_
#define SERENITY_TESTS_TESTING_REDIS_SERVER_H_

#include <sys/types.h>

#include <string>
#include <utility>

namespace serenity::testing {

// Who may use the server. Passwords go to redis-server as single arguments,
// so they may hold spaces and quotes (not NUL).
struct RedisServerOptions {
  std::string requirepass;   // the default user's password; empty: none
  std::string acl_user;      // an extra Redis 6+ ACL user with every right; empty: none
  std::string acl_password;  // acl_user's password
};

class RedisServerProcess {
 public:
  RedisServerProcess() = default;
  // A server started with `options` (every Start(), restarts included).
  explicit RedisServerProcess(RedisServerOptions options) : options_(std::move(options)) {}
  ~RedisServerProcess();  // kills the server (SIGKILL)
  RedisServerProcess(const RedisServerProcess&) = delete;
  RedisServerProcess& operator=(const RedisServerProcess&) = delete;

  // Starts /usr/bin/redis-server (no persistence, loopback only) on a free
  // port the first time, on the same port afterwards, and waits until it
  // answers PING (after AUTH with requirepass, when set) and reports its own
  // process id (at most about 10 s, retrying
  // with another port when a first start loses its port to someone else).
  // True at once when it is already running; false when it does not come up.
  bool Start();
  // Stops it: SIGTERM, then waits for it (SIGKILL after 10 s). The port is
  // kept for the next Start().
  void Stop();

  bool running() const { return pid_ > 0; }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  // One attempt to start it on port_.
  bool StartOnce();

  const RedisServerOptions options_{};
  pid_t pid_ = 0;
  int port_ = 0;
};

// A loopback port nobody listens on right now (0 when none can be had).
int FreePort();

}  // namespace serenity::testing

#endif  // SERENITY_TESTS_TESTING_REDIS_SERVER_H_
