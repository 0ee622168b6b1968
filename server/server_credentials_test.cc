#include "server/server_credentials.h"

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

// Writes `text` to a fresh file in the test's temporary directory.
std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/server_credentials_test_" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

ServerFlags Plaintext() {
  ServerFlags flags;
  flags.plaintext = true;
  return flags;
}

TEST(LoadServerCredentialsTest, PlaintextWithoutTenantsAndARandomSecret) {
  absl::StatusOr<ServerCredentials> first = LoadServerCredentials(Plaintext());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_NE(first->transport, nullptr);
  EXPECT_EQ(first->transport_name, "plaintext");
  EXPECT_FALSE(first->tokens.has_value());
  EXPECT_FALSE(first->tenant_from_certificate);
  EXPECT_THAT(first->plan_id_secret, MatchesRegex("[0-9a-f]{32}"));
  absl::StatusOr<ServerCredentials> second = LoadServerCredentials(Plaintext());
  ASSERT_TRUE(second.ok());
  EXPECT_NE(first->plan_id_secret, second->plan_id_secret);
}

TEST(LoadServerCredentialsTest, ReadsTheTokensAndTheSecret) {
  ServerFlags flags = Plaintext();
  flags.token_file = WriteFile("tokens", "alice token-of-alice-1\nbob token-of-bob-22\n");
  flags.plan_id_secret_file = WriteFile("secret", "  0123456789abcdef-shared\n");
  absl::StatusOr<ServerCredentials> credentials = LoadServerCredentials(flags);
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  ASSERT_TRUE(credentials->tokens.has_value());
  EXPECT_EQ(credentials->tokens->TenantOf("token-of-bob-22"), "bob");
  EXPECT_EQ(credentials->tokens->TenantOf("token-of-nobody"), "");
  EXPECT_EQ(credentials->plan_id_secret, "0123456789abcdef-shared");  // whitespace around it dropped
}

TEST(LoadServerCredentialsTest, RefusesAShortSecretAndABadTokenFile) {
  ServerFlags flags = Plaintext();
  flags.plan_id_secret_file = WriteFile("short_secret", "short\n");
  absl::StatusOr<ServerCredentials> credentials = LoadServerCredentials(flags);
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(credentials.status().message(), HasSubstr("--plan-id-secret-file needs at least 16 characters"));

  flags = Plaintext();
  flags.token_file = WriteFile("bad_tokens", "alice short\n");
  credentials = LoadServerCredentials(flags);
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(credentials.status().message(), HasSubstr("--token-file " + flags.token_file + ": "));
}

TEST(LoadServerCredentialsTest, NamesTheFlagOfAFileItCannotRead) {
  ServerFlags flags;
  flags.tls_cert = "/nonexistent/cert.pem";
  flags.tls_key = "/nonexistent/key.pem";
  absl::StatusOr<ServerCredentials> credentials = LoadServerCredentials(flags);
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(credentials.status().message(), HasSubstr("cannot read the --tls-cert file '/nonexistent/cert.pem'"));

  flags = Plaintext();
  flags.token_file = "/nonexistent/tokens";
  EXPECT_THAT(LoadServerCredentials(flags).status().message(), HasSubstr("--token-file"));
}

TEST(ReadWholeFileTest, ReadsEveryByte) {
  const std::string text("line one\n\0binary\n", 17);
  absl::StatusOr<std::string> read = ReadWholeFile(WriteFile("whole", text), "--x");
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, text);
}

}  // namespace
}  // namespace serenity
