// serenity-server's credentials, read from the files its flags name: the
// transport's (TLS, mutual TLS, or none with --plaintext), the tenants'
// tokens, and the secret mixed into plan_ids.
#ifndef SERENITY_SERVER_SERVER_CREDENTIALS_H_
#define SERENITY_SERVER_SERVER_CREDENTIALS_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"
#include "server/server_flags.h"
#include "server/tenants.h"

namespace serenity {

struct ServerCredentials {
  // For the listening port: TLS (requiring client certificates with
  // --tls-client-ca) or insecure (--plaintext).
  std::shared_ptr<grpc::ServerCredentials> transport;
  // "tls", "mtls" or "plaintext", for the log.
  std::string transport_name;
  // The tenants' tokens (--token-file), when calls must carry one.
  std::optional<TenantTokens> tokens;
  // Without tokens and with --tls-client-ca: a call's tenant is its client
  // certificate's subject.
  bool tenant_from_certificate = false;
  // --plan-id-secret-file's secret (at least 16 characters, whitespace
  // around it dropped), or a random one for this process.
  std::string plan_id_secret;
};

// Reads the credentials of sanitized `flags` (SanitizeServerFlags):
// InvalidArgument naming the flag when a file cannot be read or is not
// valid. Makes gRPC credentials, which may start gRPC's threads.
absl::StatusOr<ServerCredentials> LoadServerCredentials(const ServerFlags& flags);

// The whole of the file at `path`; InvalidArgument naming `what` (the flag)
// when it cannot be read.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path, const char* what);

}  // namespace serenity

#endif  // SERENITY_SERVER_SERVER_CREDENTIALS_H_
