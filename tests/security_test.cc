// TLS, mutual TLS and bearer tokens on the real serenity-server, with
// certificates made by openssl for each run.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "health.grpc.pb.h"
#include "serenity/v1/scheduler.grpc.pb.h"
#include "tests/testing/orders.h"
#include "tests/testing/server_process.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kServer = SERENITY_BINARY_DIR "/server/serenity-server";
const std::string kClient = SERENITY_BINARY_DIR "/client/serenity-client";
const std::string kModel = SERENITY_SHARED_DIR "/bench/models/darts_v2_cifar10_reduce_cell.onnx";

int RunShell(const std::string& command, std::string* output = nullptr) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  std::array<char, 4096> buffer;
  size_t n;
  std::string text;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) text.append(buffer.data(), n);
  if (output != nullptr) *output = text;
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A CA, a server certificate for localhost/127.0.0.1 and a client
// certificate, all signed by the CA; and a token file.
class Pki {
 public:
  Pki() {
    dir_ = ::testing::TempDir() + "/serenity_pki_" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    const std::string d = dir_ + "/";
    std::ofstream(d + "san.cnf") << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
    const std::string steps[] = {
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=serenity-test-ca -keyout " + d + "ca.key -out " +
            d + "ca.pem",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout " + d + "server.key -out " + d + "server.csr",
        "openssl x509 -req -in " + d + "server.csr -CA " + d + "ca.pem -CAkey " + d +
            "ca.key -CAcreateserial -days 2 -extfile " + d + "san.cnf -out " + d + "server.pem",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=serenity-test-client -keyout " + d + "client.key -out " + d +
            "client.csr",
        "openssl x509 -req -in " + d + "client.csr -CA " + d + "ca.pem -CAkey " + d +
            "ca.key -CAcreateserial -days 2 -out " + d + "client.pem",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=serenity-other-client -keyout " + d + "client2.key -out " + d +
            "client2.csr",
        "openssl x509 -req -in " + d + "client2.csr -CA " + d + "ca.pem -CAkey " + d +
            "ca.key -CAcreateserial -days 2 -out " + d + "client2.pem",
    };
    for (const std::string& step : steps) {
      std::string output;
      if (RunShell(step, &output) != 0) {
        error_ = step + ": " + output;
        return;
      }
    }
    std::ofstream(d + "token") << "s3cret-token\n";
    std::ofstream(d + "tenants") << "# two tenants; alpha rotates its token\n"
                                 << "alpha alpha-token-old\nalpha alpha-token-new\nbeta beta-token-0001\n";
  }
  ~Pki() { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string read(const std::string& name) const { return testing::ReadFile(path(name)); }
  const std::string& error() const { return error_; }

 private:
  std::string dir_, error_;
};

// Channels dial 127.0.0.1 and check the certificate against "localhost":
// resolving the name would go through c-ares, whose Debian build leaks a few
// bytes that LeakSanitizer reports in the ASan run.
std::shared_ptr<grpc::Channel> TlsChannel(const Pki& pki, const std::string& address, bool client_cert,
                                          const std::string& client = "client") {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = pki.read("ca.pem");
  if (client_cert) {
    ssl.pem_cert_chain = pki.read(client + ".pem");
    ssl.pem_private_key = pki.read(client + ".key");
  }
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("localhost");
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(ssl), args);
}

grpc::Status CallPlan(const std::shared_ptr<grpc::Channel>& channel, const std::string& token) {
  auto stub = v1::Scheduler::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  v1::PlanRequest request;
  request.set_onnx_model(testing::ReadFile(kModel));
  v1::Plan plan;
  grpc::Status status = stub->Plan(&context, request, &plan);
  if (status.ok()) {
    EXPECT_EQ(plan.peak_bytes(), 1'769'472);
  }
  return status;
}

TEST(SecurityTest, TlsWithBearerTokenAdmitsOnlyTokenHoldersButLeavesHealthOpen) {
  Pki pki;
  ASSERT_TRUE(pki.error().empty()) << pki.error();
  testing::ServerProcess server;
  ASSERT_TRUE(server.Start(kServer, {"--tls-cert", pki.path("server.pem"), "--tls-key", pki.path("server.key"),
                                     "--token-file", pki.path("token")}))
      << server.log();
  const std::string address = server.address();
  auto channel = TlsChannel(pki, address, false);
  EXPECT_TRUE(CallPlan(channel, "s3cret-token").ok());
  EXPECT_EQ(CallPlan(channel, "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(CallPlan(channel, "wrong-token").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // Score streams need the token too.
  {
    auto stub = v1::Scheduler::NewStub(channel);
    grpc::ClientContext context;
    auto stream = stub->Score(&context);
    stream->WritesDone();
    v1::ScoreResult result;
    EXPECT_FALSE(stream->Read(&result));
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  // Health checks need no token.
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext health_context;
  grpc::health::v1::HealthCheckRequest health_request;
  grpc::health::v1::HealthCheckResponse health_response;
  ASSERT_TRUE(health->Check(&health_context, health_request, &health_response).ok());
  EXPECT_EQ(health_response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  // A plaintext client cannot talk to a TLS server.
  EXPECT_EQ(CallPlan(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()), "s3cret-token").error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // The CLI speaks TLS with a token too.
  std::string output;
  EXPECT_EQ(RunShell(kClient + " score " + kModel + " --server " + address + " --tls-server-name localhost --tls-ca " +
                         pki.path("ca.pem") + " --token-file " + pki.path("token") + " --json",
                     &output),
            0)
      << output;
  EXPECT_THAT(output, HasSubstr("\"peak_bytes\":1769472"));
  EXPECT_EQ(RunShell(kClient + " plan " + kModel + " --server " + address + " --tls-server-name localhost --tls-ca " +
                         pki.path("ca.pem"),
                     &output),
            1);
  EXPECT_THAT(output, HasSubstr("Bearer"));
}

TEST(SecurityTest, MutualTlsRequiresAClientCertificateFromTheCa) {
  Pki pki;
  ASSERT_TRUE(pki.error().empty()) << pki.error();
  testing::ServerProcess server;
  ASSERT_TRUE(server.Start(kServer, {"--tls-cert", pki.path("server.pem"), "--tls-key", pki.path("server.key"),
                                     "--tls-client-ca", pki.path("ca.pem")}))
      << server.log();
  const std::string address = server.address();
  EXPECT_TRUE(CallPlan(TlsChannel(pki, address, true), "").ok());
  EXPECT_EQ(CallPlan(TlsChannel(pki, address, false), "").error_code(), grpc::StatusCode::UNAVAILABLE);
  std::string output;
  EXPECT_EQ(RunShell(kClient + " plan " + kModel + " --server " + address + " --tls-server-name localhost --tls-ca " +
                         pki.path("ca.pem") + " --tls-cert " + pki.path("client.pem") + " --tls-key " +
                         pki.path("client.key") + " --json",
                     &output),
            0)
      << output;
}

// The CLI does not send a bearer token unencrypted unless told to: without
// --tls-ca, --token-file needs --plaintext.
TEST(SecurityTest, TheClientSendsATokenInTheClearOnlyWithPlaintext) {
  Pki pki;
  ASSERT_TRUE(pki.error().empty()) << pki.error();
  testing::ServerProcess server;
  ASSERT_TRUE(server.Start(kServer, {"--plaintext", "--token-file", pki.path("token")})) << server.log();
  const std::string call =
      kClient + " plan " + kModel + " --server " + server.address() + " --token-file " + pki.path("token") + " --json";
  std::string output;
  EXPECT_EQ(RunShell(call, &output), 2) << output;
  EXPECT_THAT(output, HasSubstr("--plaintext"));
  EXPECT_THAT(output, Not(HasSubstr("peak_bytes")));
  EXPECT_EQ(RunShell(call + " --plaintext", &output), 0) << output;
  EXPECT_THAT(output, HasSubstr("\"peak_bytes\":1769472"));
}

// A three-op chain whose every name starts with `prefix`.
v1::PlanRequest PrivateChain(const std::string& prefix) {
  v1::PlanRequest request;
  request.set_model_name(prefix + "model");
  v1::Graph& graph = *request.mutable_graph();
  for (int i = 0; i <= 3; ++i) {
    v1::Tensor* t = graph.add_tensors();
    t->set_name(prefix + "t" + std::to_string(i));
    t->add_shape(1 + i);
    t->add_shape(256);
  }
  for (int i = 0; i < 3; ++i) {
    v1::Op* op = graph.add_ops();
    op->set_name(prefix + "op" + std::to_string(i));
    op->set_type("Relu");
    op->add_inputs(prefix + "t" + std::to_string(i));
    op->add_outputs(prefix + "t" + std::to_string(i + 1));
  }
  graph.add_inputs(prefix + "t0");
  graph.add_outputs(prefix + "t3");
  return request;
}

struct TenantCall {
  grpc::Status status;
  v1::Plan plan;
};

TenantCall PlanAs(const std::shared_ptr<grpc::Channel>& channel, const std::string& token,
                  const v1::PlanRequest& request) {
  auto stub = v1::Scheduler::NewStub(channel);
  grpc::ClientContext context;
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  TenantCall call;
  call.status = stub->Plan(&context, request, &call.plan);
  return call;
}

TenantCall GetPlanAs(const std::shared_ptr<grpc::Channel>& channel, const std::string& token,
                     const std::string& plan_id) {
  auto stub = v1::Scheduler::NewStub(channel);
  grpc::ClientContext context;
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  v1::GetPlanRequest request;
  request.set_plan_id(plan_id);
  TenantCall call;
  call.status = stub->GetPlan(&context, request, &call.plan);
  return call;
}

// Every op name in `plan`'s order starts with `prefix`, and so does its model.
bool NamedWith(const v1::Plan& plan, const std::string& prefix) {
  if (plan.model().rfind(prefix, 0) != 0 || plan.order_names().empty()) return false;
  for (const std::string& name : plan.order_names()) {
    if (name.rfind(prefix, 0) != 0) return false;
  }
  for (const v1::ArenaBuffer& buffer : plan.arena().buffers()) {
    if (buffer.tensor().rfind(prefix, 0) != 0) return false;
  }
  return true;
}

// Two tenants of one server (tokens from a two-tenant --token-file) plan the
// same structure under private names: the second is not told that the
// structure was planned before, and neither can read the other's plan by
// its plan_id; a tenant's two tokens are one tenant.
TEST(SecurityTest, TenantsByTokenSeeOnlyTheirOwnPlans) {
  Pki pki;
  ASSERT_TRUE(pki.error().empty()) << pki.error();
  testing::ServerProcess server;
  ASSERT_TRUE(server.Start(kServer, {"--plaintext", "--token-file", pki.path("tenants")})) << server.log();
  auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
  const TenantCall alpha = PlanAs(channel, "alpha-token-old", PrivateChain("alpha/"));
  const TenantCall beta = PlanAs(channel, "beta-token-0001", PrivateChain("beta/"));
  ASSERT_TRUE(alpha.status.ok() && beta.status.ok()) << alpha.status.error_message() << beta.status.error_message();
  EXPECT_EQ(alpha.plan.stats().cache(), "miss");
  EXPECT_EQ(beta.plan.stats().cache(), "miss");
  EXPECT_TRUE(NamedWith(beta.plan, "beta/"));
  EXPECT_NE(alpha.plan.plan_id(), beta.plan.plan_id());

  EXPECT_EQ(GetPlanAs(channel, "beta-token-0001", alpha.plan.plan_id()).status.error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(GetPlanAs(channel, "alpha-token-new", beta.plan.plan_id()).status.error_code(),
            grpc::StatusCode::NOT_FOUND);
  const TenantCall beta_get = GetPlanAs(channel, "beta-token-0001", beta.plan.plan_id());
  ASSERT_TRUE(beta_get.status.ok()) << beta_get.status.error_message();
  EXPECT_TRUE(NamedWith(beta_get.plan, "beta/"));
  // alpha's rotated token is alpha too: its own plan, from the cache.
  const TenantCall alpha_get = GetPlanAs(channel, "alpha-token-new", alpha.plan.plan_id());
  ASSERT_TRUE(alpha_get.status.ok()) << alpha_get.status.error_message();
  EXPECT_TRUE(NamedWith(alpha_get.plan, "alpha/"));
  EXPECT_EQ(PlanAs(channel, "alpha-token-new", PrivateChain("alpha/")).plan.stats().cache(), "local");
  EXPECT_EQ(PlanAs(channel, "gamma-token-01", PrivateChain("alpha/")).status.error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

// With mutual TLS and no token file, a tenant is a client certificate's
// subject: another certificate from the same CA is another tenant.
TEST(SecurityTest, TenantsByClientCertificateSeeOnlyTheirOwnPlans) {
  Pki pki;
  ASSERT_TRUE(pki.error().empty()) << pki.error();
  testing::ServerProcess server;
  ASSERT_TRUE(server.Start(kServer, {"--tls-cert", pki.path("server.pem"), "--tls-key", pki.path("server.key"),
                                     "--tls-client-ca", pki.path("ca.pem")}))
      << server.log();
  auto first = TlsChannel(pki, server.address(), true, "client");
  auto second = TlsChannel(pki, server.address(), true, "client2");
  const TenantCall mine = PlanAs(first, "", PrivateChain("first/"));
  ASSERT_TRUE(mine.status.ok()) << mine.status.error_message();
  const TenantCall theirs = PlanAs(second, "", PrivateChain("second/"));
  ASSERT_TRUE(theirs.status.ok()) << theirs.status.error_message();
  EXPECT_EQ(theirs.plan.stats().cache(), "miss");
  EXPECT_TRUE(GetPlanAs(first, "", mine.plan.plan_id()).status.ok());
  EXPECT_EQ(GetPlanAs(second, "", mine.plan.plan_id()).status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(server.log(), HasSubstr("auth=client_certificate"));
}

}  // namespace
}  // namespace serenity
