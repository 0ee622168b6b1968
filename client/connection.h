// How the CLI reaches a serenity-server: address, TLS (server CA, optional
// client certificate for mutual TLS) and a bearer token, as flags shared by
// every command that calls the server.
#ifndef SERENITY_CLIENT_CONNECTION_H_
#define SERENITY_CLIENT_CONNECTION_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/command_line.h"
#include "grpcpp/grpcpp.h"

namespace serenity {

struct ConnectionFlags {
  std::string server = "127.0.0.1:50051";
  std::string tls_ca;           // PEM of the CA that signed the server; enables TLS
  std::string tls_cert;         // client certificate chain (mutual TLS)
  std::string tls_key;          // client private key
  std::string tls_server_name;  // name to check the server's certificate against
  std::string token_file;       // bearer token sent with every call
  bool plaintext = false;       // allow a token without TLS
};

// Registers --server, --tls-ca, --tls-cert, --tls-key, --tls-server-name,
// --token-file and --plaintext on `flag_set`.
void AddConnectionFlags(FlagSet& flag_set, ConnectionFlags* flags);

// A channel to the server and the token to present. InvalidArgument naming
// the flag for unreadable files or incomplete TLS flags.
struct Connection {
  std::shared_ptr<grpc::Channel> channel;
  std::string bearer_token;  // empty: none

  // Makes `context` ready for one call: the token (if any) in its metadata
  // and a deadline `timeout_seconds` from now.
  void Prepare(grpc::ClientContext* context, double timeout_seconds) const;
};
absl::StatusOr<Connection> Connect(const ConnectionFlags& flags);

}  // namespace serenity

#endif  // SERENITY_CLIENT_CONNECTION_H_
