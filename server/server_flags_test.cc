#include "server/server_flags.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kGiB = int64_t{1} << 30;

// Flags as a plaintext server on a loopback port would be started.
ServerFlags Plaintext() {
  ServerFlags flags;
  flags.plaintext = true;
  flags.threads = 4;
  return flags;
}

// The message of SanitizeServerFlags on `flags` (which must fail).
std::string Refusal(ServerFlags flags) {
  absl::Status status = SanitizeServerFlags(8 * kGiB, &flags);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  return std::string(status.message());
}

TEST(RegisterServerFlagsTest, ParsesIntoTheStruct) {
  ServerFlags flags;
  FlagSet flag_set("serenity-server [flags]", "");
  RegisterServerFlags(&flags, &flag_set);
  ASSERT_TRUE(flag_set
                  .Parse({"--threads", "3", "--plaintext", "--cache-scope=tenant", "--max-job-seconds", "2.5",
                          "--token-file", "t.txt", "--metrics-port", "0"})
                  .ok());
  EXPECT_EQ(flags.threads, 3);
  EXPECT_TRUE(flags.plaintext);
  EXPECT_EQ(flags.cache_scope, "tenant");
  EXPECT_DOUBLE_EQ(flags.max_job_seconds, 2.5);
  EXPECT_EQ(flags.token_file, "t.txt");
  EXPECT_EQ(flags.metrics_port, 0);
  EXPECT_EQ(flags.port, 50051);  // untouched: its default
  EXPECT_FALSE(flags.version);
  ASSERT_TRUE(flag_set.Parse({"--version"}).ok());
  EXPECT_TRUE(flags.version);
}

TEST(RegisterServerFlagsTest, HelpStatesComputedDefaultsInWords) {
  ServerFlags flags;
  FlagSet flag_set("serenity-server [flags]", "");
  RegisterServerFlags(&flags, &flag_set);
  const std::string help = flag_set.Help();
  EXPECT_THAT(help, HasSubstr("(default: the core count)"));
  EXPECT_THAT(help, HasSubstr("(default: off)"));
  EXPECT_THAT(help, HasSubstr("(default: 3/4 of --max-server-mb / --threads)"));
  EXPECT_THAT(help, HasSubstr("(default: half of --max-queue plus --threads)"));
}

TEST(SanitizeServerFlagsTest, FillsInTheComputedDefaults) {
  ServerFlags flags = Plaintext();
  ASSERT_TRUE(SanitizeServerFlags(8 * kGiB, &flags).ok());
  EXPECT_EQ(flags.max_server_mb, 8192);
  EXPECT_EQ(flags.max_job_mb, (8192 - 8192 / 4) / 4);  // 3/4 of the server's memory over the threads
  EXPECT_EQ(flags.max_jobs_per_tenant, 256 / 2 + 4);   // half of --max-queue plus --threads
  EXPECT_EQ(flags.cache_scope, "shared");              // no tenants
}

TEST(SanitizeServerFlagsTest, KeepsGivenValues) {
  ServerFlags flags = Plaintext();
  flags.max_server_mb = 100;
  flags.max_job_mb = 10;
  flags.max_jobs_per_tenant = 7;
  flags.cache_scope = "shared";
  flags.token_file = "tokens.txt";
  ASSERT_TRUE(SanitizeServerFlags(0, &flags).ok());  // the machine's size is not needed
  EXPECT_EQ(flags.max_server_mb, 100);
  EXPECT_EQ(flags.max_job_mb, 10);
  EXPECT_EQ(flags.max_jobs_per_tenant, 7);
  EXPECT_EQ(flags.cache_scope, "shared");
}

TEST(SanitizeServerFlagsTest, TenantsKeepTheirOwnCacheByDefault) {
  ServerFlags tokens = Plaintext();
  tokens.token_file = "tokens.txt";
  ASSERT_TRUE(SanitizeServerFlags(8 * kGiB, &tokens).ok());
  EXPECT_EQ(tokens.cache_scope, "tenant");

  ServerFlags certificates = Plaintext();
  certificates.plaintext = false;
  certificates.tls_cert = "cert.pem";
  certificates.tls_key = "key.pem";
  certificates.tls_client_ca = "ca.pem";
  ASSERT_TRUE(SanitizeServerFlags(8 * kGiB, &certificates).ok());
  EXPECT_EQ(certificates.cache_scope, "tenant");
}

TEST(SanitizeServerFlagsTest, SmallJobMemoryIsAtLeastOneMegabyte) {
  ServerFlags flags = Plaintext();
  flags.max_server_mb = 4;
  flags.threads = 64;
  ASSERT_TRUE(SanitizeServerFlags(0, &flags).ok());
  EXPECT_EQ(flags.max_job_mb, 1);
}

TEST(SanitizeServerFlagsTest, NeedsTheServerMemoryWhenTheMachineDoesNotTell) {
  ServerFlags flags = Plaintext();
  absl::Status status = SanitizeServerFlags(0, &flags);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("give --max-server-mb"));
}

TEST(SanitizeServerFlagsTest, RefusesValuesOutOfRange) {
  ServerFlags flags = Plaintext();
  flags.port = 65536;
  EXPECT_THAT(Refusal(flags), HasSubstr("--port must be 0..65535"));
  flags = Plaintext();
  flags.threads = 0;
  EXPECT_THAT(Refusal(flags), HasSubstr("--threads"));
  flags = Plaintext();
  flags.max_message_mb = 2048;
  EXPECT_THAT(Refusal(flags), HasSubstr("--max-message-mb"));
  flags = Plaintext();
  flags.max_ops = 0;
  EXPECT_THAT(Refusal(flags), HasSubstr("--max-ops"));
  flags = Plaintext();
  flags.max_server_mb = 3;
  EXPECT_THAT(Refusal(flags), HasSubstr("--max-server-mb must be at least 4"));
  flags = Plaintext();
  flags.max_server_mb = 100;
  flags.max_job_mb = 76;  // above 3/4 of 100
  EXPECT_THAT(Refusal(flags), HasSubstr("--max-job-mb cannot exceed"));
  flags = Plaintext();
  flags.metrics_port = -2;
  EXPECT_THAT(Refusal(flags), HasSubstr("--metrics-port"));
  flags = Plaintext();
  flags.health_port = 70000;
  EXPECT_THAT(Refusal(flags), HasSubstr("--health-port must be 0..65535"));
  flags = Plaintext();
  flags.port = 8081;
  flags.health_port = 8081;
  EXPECT_THAT(Refusal(flags), HasSubstr("--health-port must differ from --port"));
  flags = Plaintext();
  flags.max_connection_age_seconds = -1;
  EXPECT_THAT(Refusal(flags), HasSubstr("--max-connection-age-seconds"));
  flags = Plaintext();
  flags.max_jobs_per_tenant = -1;
  EXPECT_THAT(Refusal(flags), HasSubstr("--max-jobs-per-tenant must be >= 0"));
  flags = Plaintext();
  flags.cache_mb_per_tenant = -1;
  EXPECT_THAT(Refusal(flags), HasSubstr("--cache-mb-per-tenant must be >= 0"));
  flags = Plaintext();
  flags.cache_scope = "global";
  EXPECT_THAT(Refusal(flags), HasSubstr("--cache-scope must be tenant or shared"));
}

TEST(SanitizeServerFlagsTest, RefusesContradictoryTransports) {
  ServerFlags flags = Plaintext();
  flags.plaintext = false;
  EXPECT_THAT(Refusal(flags), HasSubstr("give --tls-cert and --tls-key, or --plaintext"));
  flags.tls_cert = "cert.pem";
  EXPECT_THAT(Refusal(flags), HasSubstr("--tls-cert and --tls-key go together"));
  flags.tls_key = "key.pem";
  flags.plaintext = true;
  EXPECT_THAT(Refusal(flags), HasSubstr("--plaintext contradicts"));
  flags = Plaintext();
  flags.tls_client_ca = "ca.pem";
  EXPECT_THAT(Refusal(flags), HasSubstr("--tls-client-ca needs --tls-cert and --tls-key"));
  flags = Plaintext();
  flags.redis_auth_file = "auth";
  EXPECT_THAT(Refusal(flags), HasSubstr("--redis-auth-file needs --redis"));
}

TEST(CacheBytesOfTest, SharesOutTheCache) {
  ServerFlags flags = Plaintext();
  flags.cache_mb = 64;
  CacheBytes bytes = CacheBytesOf(flags);
  EXPECT_EQ(bytes.memo, (64 << 20) / 8);
  EXPECT_EQ(bytes.plans, (64 << 20) - (64 << 20) / 8);
  EXPECT_EQ(bytes.per_tenant, 0);  // no tenants: no quota

  flags.token_file = "tokens.txt";
  EXPECT_EQ(CacheBytesOf(flags).per_tenant, bytes.plans / 2);
  flags.cache_mb_per_tenant = 5;
  EXPECT_EQ(CacheBytesOf(flags).per_tenant, 5 << 20);
}

}  // namespace
}  // namespace serenity
