#include "server/server_credentials.h"

#include <fstream>
#include <random>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/util/status_macros.h"
#include "grpcpp/security/server_credentials.h"

namespace serenity {
namespace {

// 32 random hex digits from the system's entropy source.
std::string RandomSecret() {
  std::random_device device;
  std::string secret;
  for (int i = 0; i < 4; ++i) absl::StrAppend(&secret, absl::Hex(device(), absl::kZeroPad8));
  return secret;
}

absl::Status LoadTransport(const ServerFlags& flags, ServerCredentials* credentials) {
  if (!flags.tls()) {
    credentials->transport = grpc::InsecureServerCredentials();
    credentials->transport_name = "plaintext";
    return absl::OkStatus();
  }
  grpc::SslServerCredentialsOptions ssl(flags.tls_client_ca.empty()
                                            ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                            : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  absl::StatusOr<std::string> cert = ReadWholeFile(flags.tls_cert, "--tls-cert");
  absl::StatusOr<std::string> key = ReadWholeFile(flags.tls_key, "--tls-key");
  RETURN_IF_ERROR(cert.status());
  RETURN_IF_ERROR(key.status());
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  if (!flags.tls_client_ca.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadWholeFile(flags.tls_client_ca, "--tls-client-ca"));
  }
  credentials->transport = grpc::SslServerCredentials(ssl);
  credentials->transport_name = flags.tls_client_ca.empty() ? "tls" : "mtls";
  return absl::OkStatus();
}

absl::Status LoadTenants(const ServerFlags& flags, ServerCredentials* credentials) {
  if (!flags.token_file.empty()) {
    ASSIGN_OR_RETURN(const std::string text, ReadWholeFile(flags.token_file, "--token-file"));
    absl::StatusOr<TenantTokens> tokens = TenantTokens::Parse(text);
    if (!tokens.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--token-file ", flags.token_file, ": ", tokens.status().message()));
    }
    credentials->tokens = std::move(tokens).value();
  } else if (!flags.tls_client_ca.empty()) {
    credentials->tenant_from_certificate = true;
  }
  return absl::OkStatus();
}

absl::Status LoadPlanIdSecret(const ServerFlags& flags, ServerCredentials* credentials) {
  if (flags.plan_id_secret_file.empty()) {
    credentials->plan_id_secret = RandomSecret();
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const std::string secret, ReadWholeFile(flags.plan_id_secret_file, "--plan-id-secret-file"));
  credentials->plan_id_secret = std::string(absl::StripAsciiWhitespace(secret));
  if (credentials->plan_id_secret.size() < 16) {
    return absl::InvalidArgumentError("the --plan-id-secret-file needs at least 16 characters");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadWholeFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read the ", what, " file '", path, "'"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

absl::StatusOr<ServerCredentials> LoadServerCredentials(const ServerFlags& flags) {
  ServerCredentials credentials;
  RETURN_IF_ERROR(LoadTransport(flags, &credentials));
  RETURN_IF_ERROR(LoadTenants(flags, &credentials));
  RETURN_IF_ERROR(LoadPlanIdSecret(flags, &credentials));
  return credentials;
}

}  // namespace serenity
