#include "tests/testing/redis_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace serenity::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kRedisServer[] = "/usr/bin/redis-server";

// Milliseconds left until `deadline`, for poll(); 0 when past.
int MillisLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// A RESP request of bulk strings (binary-safe).
std::string Resp(const std::vector<std::string>& args) {
  std::string request = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) request += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return request;
}

// True when the Redis on 127.0.0.1:port answers PING with PONG and says its
// process id is `pid` (so it is ours, not someone else's that took the port).
// Authenticates first with `password` unless it is empty. Gives up after
// about half a second.
bool AnswersAs(int port, pid_t pid, const std::string& password) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(500);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = false;
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int error = 0;
    socklen_t length = sizeof(error);
    if (poll(&p, 1, MillisLeft(deadline)) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 &&
        error == 0) {
      rc = 0;
    }
  }
  if (rc == 0) {
    const std::string auth = password.empty() ? "" : Resp({"AUTH", password});
    const std::string expected = password.empty() ? "+PONG\r\n" : "+OK\r\n+PONG\r\n";
    const std::string request = auth + "PING\r\nINFO server\r\n";
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
      const std::string wanted = "\r\nprocess_id:" + std::to_string(pid) + "\r\n";
      std::string answer;
      char buffer[4096];
      while (answer.find(wanted) == std::string::npos && answer.size() < (1 << 20)) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, MillisLeft(deadline)) != 1) break;
        const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
        if (n <= 0) break;
        answer.append(buffer, static_cast<size_t>(n));
      }
      ok = answer.rfind(expected, 0) == 0 && answer.find(wanted) != std::string::npos;
    }
  }
  close(fd);
  return ok;
}

// Waits for `pid` to exit, at most `limit`; true when it did (and is reaped).
bool WaitForExit(pid_t pid, std::chrono::milliseconds limit) {
  const Clock::time_point deadline = Clock::now() + limit;
  for (;;) {
    const pid_t done = waitpid(pid, nullptr, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void Kill(pid_t pid) {
  kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

RedisServerProcess::~RedisServerProcess() {
  if (pid_ > 0) Kill(pid_);
}

bool RedisServerProcess::StartOnce() {
  std::vector<std::string> args = {
      kRedisServer,   "--port", std::to_string(port_), "--bind",  "127.0.0.1",   "--save", "",
      "--appendonly", "no",     "--loglevel",          "warning", "--daemonize", "no"};
  if (!options_.requirepass.empty()) {
    args.insert(args.end(), {"--requirepass", options_.requirepass});
  }
  if (!options_.acl_user.empty()) {
    args.insert(args.end(), {"--user", options_.acl_user, "on", ">" + options_.acl_password, "~*", "+@all"});
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  if (posix_spawn_file_actions_init(&actions) != 0) return false;
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, kRedisServer, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return false;
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    if (AnswersAs(port_, pid, options_.requirepass)) {
      pid_ = pid;
      return true;
    }
    if (WaitForExit(pid, std::chrono::milliseconds(0))) return false;  // it exited: port taken?
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Kill(pid);
  return false;
}

bool RedisServerProcess::Start() {
  if (pid_ > 0) return true;
  const bool fixed_port = port_ != 0;
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (!fixed_port) {
      port_ = FreePort();
      if (port_ == 0) continue;
    }
    if (StartOnce()) return true;
    // On a fixed port a previous server may still be letting go of it.
    if (fixed_port) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (!fixed_port) port_ = 0;
  return false;
}

void RedisServerProcess::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  if (!WaitForExit(pid_, std::chrono::seconds(10))) Kill(pid_);
  pid_ = 0;
}

}  // namespace serenity::testing
