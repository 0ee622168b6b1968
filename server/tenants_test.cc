#include "server/tenants.h"

#include "gtest/gtest.h"

namespace serenity {
namespace {

TEST(TenantTokensTest, MapsEachTokenToItsTenant) {
  absl::StatusOr<TenantTokens> tokens = TenantTokens::Parse(
      "# tenants\n"
      "alpha  token-alpha-1\n"
      "\n"
      "beta\ttoken-beta-01\n"
      "alpha token-alpha-2\n");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_EQ(tokens->size(), 3u);
  EXPECT_EQ(tokens->TenantOf("token-alpha-1"), "alpha");
  EXPECT_EQ(tokens->TenantOf("token-alpha-2"), "alpha");  // a rotated token
  EXPECT_EQ(tokens->TenantOf("token-beta-01"), "beta");
  EXPECT_EQ(tokens->TenantOf("token-beta-0"), "");  // a prefix is not the token
  EXPECT_EQ(tokens->TenantOf("token-beta-011"), "");
  EXPECT_EQ(tokens->TenantOf(""), "");
}

TEST(TenantTokensTest, ASingleBareTokenIsTheDefaultTenant) {
  absl::StatusOr<TenantTokens> tokens = TenantTokens::Parse("  s3cret-token \n");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_EQ(tokens->TenantOf("s3cret-token"), "default");
}

TEST(TenantTokensTest, RefusesMalformedFilesWithoutEchoingTokens) {
  const char* bad[] = {
      "",                                           // no token
      "# only a comment\n",                         // no token
      "alpha token-alpha-1 extra\n",                // three fields
      "alpha token-alpha-1\nlonely-token\n",        // a bare token among pairs
      "al/pha token-alpha-1\n",                     // bad tenant name
      "alpha short\n",                              // token too short
      "alpha token-alpha-1\nbeta token-alpha-1\n",  // one token, two tenants
  };
  for (const char* text : bad) {
    absl::StatusOr<TenantTokens> tokens = TenantTokens::Parse(text);
    ASSERT_FALSE(tokens.ok()) << text;
    EXPECT_EQ(tokens.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(tokens.status().message()).find("token-alpha-1"), std::string::npos) << tokens.status();
  }
  EXPECT_NE(TenantTokens::Parse("alpha token-alpha-1\nbeta token-alpha-1\n").status().message().find("line 2"),
            absl::string_view::npos);
}

TEST(TenantTokensTest, CertificateTenantsCannotCollideWithTokenTenants) {
  // A token tenant name cannot contain ':' or '=', so no token tenant can
  // pass for a certificate's subject.
  EXPECT_EQ(CertificateTenant("CN=client,O=Example"), "x509:CN=client,O=Example");
  EXPECT_FALSE(TenantTokens::Parse("x509:CN=client token-alpha-1\n").ok());
}

}  // namespace
}  // namespace serenity
