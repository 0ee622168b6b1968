// Who is calling: the tenants of a shared deployment and how a call is
// mapped to one. A tenant is named by the bearer token the call carries
// (--token-file) or, with mutual TLS and no token file, by the subject of
// its client certificate. Plans, plan_ids and cache hits are kept apart by
// tenant (scheduling_backend.h), so one tenant never sees another's names.
#ifndef SERENITY_SERVER_TENANTS_H_
#define SERENITY_SERVER_TENANTS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace serenity {

// The tenants' tokens, as read from a --token-file.
class TenantTokens {
 public:
  // Parses a token file: one `TENANT TOKEN` pair per line (several lines may
  // name the same tenant, which is how a token is rotated: add the new one,
  // move the clients, remove the old one). Blank lines and lines starting
  // with '#' are skipped. A file of one line holding a single token (the
  // older format) gives that token to the tenant "default". Tenant names are
  // 1-64 characters of [A-Za-z0-9._-]; tokens are 8-4096 printable ASCII
  // characters without spaces. InvalidArgument, naming the line (never the
  // token), for anything else, a token given twice, or no token at all.
  static absl::StatusOr<TenantTokens> Parse(absl::string_view text);

  // The tenant whose token `token` is, compared in time independent of
  // where the strings differ (every token is compared); empty if none.
  std::string TenantOf(absl::string_view token) const;

  size_t size() const { return tokens_.size(); }

 private:
  std::vector<std::pair<std::string, std::string>> tokens_;  // (tenant, token)
};

// The tenant of a call authenticated by a client certificate: "x509:"
// followed by the certificate's subject (e.g. "x509:CN=nas-team,O=Example").
std::string CertificateTenant(absl::string_view subject);

}  // namespace serenity

#endif  // SERENITY_SERVER_TENANTS_H_
