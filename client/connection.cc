#include "client/connection.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace serenity {
namespace {

absl::StatusOr<std::string> ReadFlagFile(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read ", flag, " '", path, "'"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

void AddConnectionFlags(FlagSet& flag_set, ConnectionFlags* flags) {
  flag_set.AddString("server", &flags->server, "HOST:PORT", "serenity-server to call.");
  flag_set.AddString("tls-ca", &flags->tls_ca, "PEM",
                     "Use TLS, trusting server certificates signed by this CA (PEM file).");
  flag_set.AddString("tls-cert", &flags->tls_cert, "PEM", "Client certificate for mutual TLS (with --tls-key).");
  flag_set.AddString("tls-key", &flags->tls_key, "PEM", "Client private key for mutual TLS.");
  flag_set.AddString("tls-server-name", &flags->tls_server_name, "NAME",
                     "Check the server certificate against NAME instead of the host in --server.");
  flag_set.AddString("token-file", &flags->token_file, "PATH",
                     "Send 'authorization: Bearer <token>' with the token in PATH (needs --tls-ca,\n"
                     "or --plaintext to send it unencrypted).");
  flag_set.AddBool("plaintext", &flags->plaintext,
                   "Allow --token-file without TLS (the token then crosses the network in the\n"
                   "clear; for loopback and tests). Without --tls-ca the connection is plaintext\n"
                   "either way.");
}

void Connection::Prepare(grpc::ClientContext* context, double timeout_seconds) const {
  if (!bearer_token.empty()) context->AddMetadata("authorization", "Bearer " + bearer_token);
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000)));
}

absl::StatusOr<Connection> Connect(const ConnectionFlags& flags) {
  Connection connection;
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(256 * 1024 * 1024);
  channel_args.SetMaxSendMessageSize(256 * 1024 * 1024);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  const bool tls = !flags.tls_ca.empty();
  if (!tls && (!flags.tls_cert.empty() || !flags.tls_key.empty() || !flags.tls_server_name.empty())) {
    return absl::InvalidArgumentError("--tls-cert, --tls-key and --tls-server-name need --tls-ca");
  }
  if (flags.tls_cert.empty() != flags.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  if (!tls && !flags.token_file.empty() && !flags.plaintext) {
    return absl::InvalidArgumentError(
        "--token-file without --tls-ca would send the token unencrypted; add --tls-ca, or --plaintext to "
        "send it in the clear anyway");
  }
  if (tls) {
    grpc::SslCredentialsOptions ssl;
    absl::StatusOr<std::string> ca = ReadFlagFile(flags.tls_ca, "--tls-ca");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
    if (!flags.tls_cert.empty()) {
      absl::StatusOr<std::string> cert = ReadFlagFile(flags.tls_cert, "--tls-cert");
      absl::StatusOr<std::string> key = ReadFlagFile(flags.tls_key, "--tls-key");
      if (!cert.ok()) return cert.status();
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    credentials = grpc::SslCredentials(ssl);
    if (!flags.tls_server_name.empty()) {
      channel_args.SetSslTargetNameOverride(flags.tls_server_name);
    }
  }
  if (!flags.token_file.empty()) {
    absl::StatusOr<std::string> token = ReadFlagFile(flags.token_file, "--token-file");
    if (!token.ok()) return token.status();
    connection.bearer_token = std::string(absl::StripAsciiWhitespace(*token));
    if (connection.bearer_token.empty()) return absl::InvalidArgumentError("the --token-file is empty");
  }
  connection.channel = grpc::CreateCustomChannel(flags.server, credentials, channel_args);
  return connection;
}

}  // namespace serenity
