// Test support for the integration tests: the real serenity-server binary
// as a child process on a free loopback port, with its log captured to a
// file; reading its metrics endpoint; running the command-line tools.
#ifndef SERENITY_TESTS_TESTING_SERVER_PROCESS_H_
#define SERENITY_TESTS_TESTING_SERVER_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace serenity::testing {

class ServerProcess {
 public:
  ServerProcess() = default;
  // Kills the server (SIGKILL) if it still runs.
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts `binary` with --port 0 --port-file ... (and --metrics-port 0 when
  // `with_metrics`) plus `args`, and waits until it writes its port (at most
  // 30 s). False when it exits or never serves; log() tells why.
  bool Start(const std::string& binary, const std::vector<std::string>& args, bool with_metrics = false);

  // Sends SIGTERM and waits; returns the wait status (see waitpid).
  int Stop();

  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return pid_; }
  // Everything the server wrote to stdout and stderr so far.
  std::string log() const;

 private:
  pid_t pid_ = 0;
  int port_ = 0;
  int metrics_port_ = 0;
  std::string dir_;
};

// GET http://127.0.0.1:port/path; the body, or "" on any error.
std::string HttpGet(int port, const std::string& path);

// The value of one series (name with its labels, as Prometheus prints it)
// in Prometheus text `text`, or "" when it is not there.
std::string MetricValue(const std::string& text, const std::string& series);

// What a shell command printed (stdout, then stderr) and its exit code (-1
// when it did not exit normally).
struct CommandResult {
  int exit_code = -1;
  std::string output;
};
CommandResult RunCommand(const std::string& command);

}  // namespace serenity::testing

#endif  // SERENITY_TESTS_TESTING_SERVER_PROCESS_H_
