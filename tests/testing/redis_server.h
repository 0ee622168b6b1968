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
  ~RedisServerProcess();  // kills the server (SIGKILL)
  RedisServerProcess(const RedisServerProcess&) = delete;
  RedisServerProcess& operator=(const RedisServerProcess&) = delete;

  // Starts /usr/bin/redis-server (no persistence, loopback only) on a free
  // port the first time, on the same port afterwards, and waits until it
  // answers PING and reports its own process id (at most about 10 s, retrying
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

  pid_t pid_ = 0;
  int port_ = 0;
};

// A loopback port nobody listens on right now (0 when none can be had).
int FreePort();

}  // namespace serenity::testing

#endif  // SERENITY_TESTS_TESTING_REDIS_SERVER_H_
