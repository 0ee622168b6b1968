#include "server/tenants.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace serenity {
namespace {

bool IsTenantName(absl::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

bool IsToken(absl::string_view token) {
  if (token.size() < 8 || token.size() > 4096) return false;
  for (char c : token) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

// True when a and b are equal, in time that depends only on their lengths.
bool EqualInConstantTime(absl::string_view a, absl::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

}  // namespace

absl::StatusOr<TenantTokens> TenantTokens::Parse(absl::string_view text) {
  struct Line {
    int number;
    std::vector<absl::string_view> fields;
  };
  std::vector<Line> lines;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    lines.push_back({number, absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty())});
  }
  TenantTokens tokens;
  if (lines.size() == 1 && lines[0].fields.size() == 1) {
    if (!IsToken(lines[0].fields[0])) {
      return absl::InvalidArgumentError("the token file's token must be 8-4096 printable characters without spaces");
    }
    tokens.tokens_.emplace_back("default", std::string(lines[0].fields[0]));
    return tokens;
  }
  for (const Line& line : lines) {
    if (line.fields.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat("token file line ", line.number, ": expected 'TENANT TOKEN'"));
    }
    if (!IsTenantName(line.fields[0])) {
      return absl::InvalidArgumentError(
          absl::StrCat("token file line ", line.number, ": a tenant name is 1-64 characters of A-Z a-z 0-9 . _ -"));
    }
    if (!IsToken(line.fields[1])) {
      return absl::InvalidArgumentError(
          absl::StrCat("token file line ", line.number, ": a token is 8-4096 printable characters without spaces"));
    }
    for (const auto& [tenant, token] : tokens.tokens_) {
      if (token == line.fields[1]) {
        return absl::InvalidArgumentError(
            absl::StrCat("token file line ", line.number, ": this token is already given to tenant ", tenant));
      }
    }
    tokens.tokens_.emplace_back(std::string(line.fields[0]), std::string(line.fields[1]));
  }
  if (tokens.tokens_.empty()) return absl::InvalidArgumentError("the token file holds no token");
  return tokens;
}

std::string TenantTokens::TenantOf(absl::string_view token) const {
  std::string tenant;
  for (const auto& [name, expected] : tokens_) {
    if (EqualInConstantTime(expected, token) && tenant.empty()) tenant = name;
  }
  return tenant;
}

std::string CertificateTenant(absl::string_view subject) { return absl::StrCat("x509:", subject); }

}  // namespace serenity
