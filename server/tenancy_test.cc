// Tenants of one backend: their plans, plan_ids and names stay apart, and
// what comes back from Redis is checked before it is used.
#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/plan_proto.h"
#include "gtest/gtest.h"
#include "server/redis_store.h"
#include "server/scheduling_backend.h"
#include "tests/testing/plan_verifier.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

// `spec` with every op and tensor name and the model name prefixed.
GraphSpec Prefixed(GraphSpec spec, const std::string& prefix) {
  auto rename = [&](std::string* name) {
    if (!name->empty()) *name = prefix + *name;
  };
  rename(&spec.name);
  for (TensorSpec& t : spec.tensors) rename(&t.name);
  for (OpSpec& o : spec.ops) {
    rename(&o.name);
    for (std::string& in : o.inputs) rename(&in);
    for (std::string& out : o.outputs) rename(&out);
  }
  for (std::string& in : spec.inputs) rename(&in);
  for (std::string& out : spec.outputs) rename(&out);
  return spec;
}

v1::PlanRequest RequestFor(const GraphSpec& spec) {
  v1::PlanRequest request;
  *request.mutable_graph() = GraphSpecToProto(spec);
  request.set_model_name(spec.name);
  return request;
}

CallContext Tenant(const std::string& tenant) {
  CallContext call;
  call.tenant = tenant;
  return call;
}

// Every name `plan` carries, model included.
std::set<std::string> NamesIn(const v1::Plan& plan) {
  std::set<std::string> names = {plan.model()};
  names.insert(plan.order_names().begin(), plan.order_names().end());
  for (const v1::ArenaBuffer& b : plan.arena().buffers()) {
    names.insert(b.tensor());
    names.insert(b.aliases().begin(), b.aliases().end());
  }
  for (const v1::Step& step : plan.steps()) {
    names.insert(step.op());
    for (const v1::TensorPlacement& p : step.inputs()) names.insert(p.tensor());
    for (const v1::TensorPlacement& p : step.outputs()) names.insert(p.tensor());
  }
  names.erase("");
  return names;
}

// True when every name in `plan` starts with `prefix`.
bool OnlyNamesWith(const v1::Plan& plan, const std::string& prefix) {
  for (const std::string& name : NamesIn(plan)) {
    if (name.rfind(prefix, 0) != 0) return false;
  }
  return true;
}

class TenancyTest : public ::testing::TestWithParam<CacheScope> {};

// Two tenants plan the same structure under their own private names. Each
// sees only its own names, in Plan and in GetPlan; a plan_id of one tenant
// is NOT_FOUND for the other; under the tenant scope the second tenant's
// plan is computed afresh (stats.cache reveals nothing), under the shared
// scope it is the first one's, renamed.
TEST_P(TenancyTest, TenantsSeeOnlyTheirOwnNames) {
  const CacheScope scope = GetParam();
  PlanCache cache(64 << 20, nullptr, nullptr);
  RequestMemo memo(8 << 20);
  BackendOptions options;
  options.cache_scope = scope;
  options.plan_id_secret = "a test secret, 16+ characters";
  SchedulingBackend backend(nullptr, &cache, nullptr, options, &memo);
  std::mt19937 rng(41);
  GraphSpec structure = testing::RandomDag(12, rng);
  structure.name = "model";
  const v1::PlanRequest alpha_request = RequestFor(Prefixed(structure, "alpha_private/"));
  const v1::PlanRequest beta_request = RequestFor(Prefixed(structure, "beta_private/"));

  absl::StatusOr<v1::Plan> alpha = backend.Answer(alpha_request, false, Tenant("alpha"));
  absl::StatusOr<v1::Plan> beta = backend.Answer(beta_request, false, Tenant("beta"));
  ASSERT_TRUE(alpha.ok() && beta.ok()) << alpha.status() << beta.status();
  EXPECT_EQ(alpha->stats().cache(), "miss");
  EXPECT_EQ(beta->stats().cache(), scope == CacheScope::kTenant ? "miss" : "local");
  EXPECT_TRUE(OnlyNamesWith(*alpha, "alpha_private/"));
  EXPECT_TRUE(OnlyNamesWith(*beta, "beta_private/"));
  EXPECT_NE(alpha->plan_id(), beta->plan_id());
  EXPECT_TRUE(testing::VerifyPlan(*GraphFromRequest(beta_request), *beta).ok());

  // Each tenant's plan_id, for each tenant.
  absl::StatusOr<v1::Plan> alpha_get = backend.GetPlan(alpha->plan_id(), Tenant("alpha"));
  absl::StatusOr<v1::Plan> beta_get = backend.GetPlan(beta->plan_id(), Tenant("beta"));
  ASSERT_TRUE(alpha_get.ok() && beta_get.ok()) << alpha_get.status() << beta_get.status();
  EXPECT_TRUE(OnlyNamesWith(*alpha_get, "alpha_private/"));
  EXPECT_TRUE(OnlyNamesWith(*beta_get, "beta_private/"));
  EXPECT_EQ(beta_get->model(), "beta_private/" + structure.name);
  EXPECT_EQ(beta_get->plan_id(), beta->plan_id());
  EXPECT_EQ(beta_get->peak_bytes(), beta->peak_bytes());
  EXPECT_TRUE(testing::VerifyPlan(*GraphFromRequest(beta_request), *beta_get).ok());
  for (const auto& [id, tenant] :
       {std::pair{alpha->plan_id(), "beta"}, std::pair{beta->plan_id(), "alpha"}, std::pair{alpha->plan_id(), ""}}) {
    absl::StatusOr<v1::Plan> other = backend.GetPlan(id, Tenant(tenant));
    EXPECT_EQ(other.status().code(), absl::StatusCode::kNotFound) << tenant;
    // The same words as for an id never issued.
    EXPECT_EQ(other.status().message(), absl::StrCat("no stored plan ", id, " (never computed here, or evicted)"));
  }
  // A repeat from the same tenant is memoized; the other tenant's repeat of
  // the very same bytes is not answered from it.
  EXPECT_EQ(backend.Answer(alpha_request, false, Tenant("alpha"))->plan_id(), alpha->plan_id());
  absl::StatusOr<v1::Plan> alpha_bytes_from_beta = backend.Answer(alpha_request, false, Tenant("beta"));
  ASSERT_TRUE(alpha_bytes_from_beta.ok());
  EXPECT_NE(alpha_bytes_from_beta->plan_id(), alpha->plan_id());
  if (scope == CacheScope::kTenant) {
    EXPECT_EQ(alpha_bytes_from_beta->stats().cache(), "local");  // beta's own plan
  }
}

INSTANTIATE_TEST_SUITE_P(Scopes, TenancyTest, ::testing::Values(CacheScope::kTenant, CacheScope::kShared),
                         [](const auto& info) { return info.param == CacheScope::kTenant ? "Tenant" : "Shared"; });

// A shared-tier entry edited in Redis (a lower peak and a reversed order) is
// neither served by Plan nor by GetPlan on another replica: Plan computes
// afresh and replaces it, GetPlan says NOT_FOUND.
TEST(TenancySharedTierTest, EditedRedisEntriesAreRefusedOnEveryPath) {
  testing::RedisServerProcess redis;
  ASSERT_TRUE(redis.Start());
  auto make_cache = [&] {
    RedisStoreOptions redis_options;
    redis_options.address = redis.address();
    redis_options.timeout = absl::Seconds(2);
    return std::make_unique<PlanCache>(64 << 20, *RedisStore::Create(redis_options), nullptr);
  };
  RedisStoreOptions raw_options;
  raw_options.address = redis.address();
  raw_options.timeout = absl::Seconds(2);
  std::unique_ptr<RedisStore> raw = *RedisStore::Create(raw_options);
  BackendOptions options;
  options.plan_id_secret = "a shared secret of the replicas";
  std::mt19937 rng(43);
  const GraphSpec spec = testing::RandomDag(14, rng);
  const v1::PlanRequest request = RequestFor(spec);
  const Graph graph = *GraphFromRequest(request);
  const std::string cache_id = MakePlanKey(Canonicalize(graph), *PlanOptionsFromProto(request.options())).id;

  std::unique_ptr<PlanCache> first_cache = make_cache();
  SchedulingBackend first(nullptr, first_cache.get(), nullptr, options);
  absl::StatusOr<v1::Plan> computed = first.Answer(request, false);
  ASSERT_TRUE(computed.ok()) << computed.status();
  ASSERT_GT(computed->peak_bytes(), 1);

  // Edit the stored plan in Redis: peak 1, order reversed.
  auto edit = [&] {
    absl::StatusOr<std::optional<std::string>> bytes = raw->Get(cache_id);
    ASSERT_TRUE(bytes.ok() && bytes->has_value());
    v1::StoredPlan stored;
    ASSERT_TRUE(stored.ParseFromString(**bytes));
    stored.mutable_plan()->set_peak_bytes(1);
    std::reverse(stored.mutable_plan()->mutable_order()->begin(), stored.mutable_plan()->mutable_order()->end());
    ASSERT_TRUE(raw->Put(cache_id, stored.SerializeAsString()).ok());
  };
  edit();
  {
    std::unique_ptr<PlanCache> cache = make_cache();
    SchedulingBackend other(nullptr, cache.get(), nullptr, options);
    EXPECT_EQ(other.GetPlan(computed->plan_id()).status().code(), absl::StatusCode::kNotFound);
    absl::StatusOr<v1::Plan> again = other.Answer(request, false);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->stats().cache(), "miss");
    EXPECT_EQ(again->peak_bytes(), computed->peak_bytes());
    EXPECT_TRUE(testing::VerifyPlan(graph, *again).ok());
  }
  // The recomputed plan replaced the edited one: a third replica hits it.
  {
    std::unique_ptr<PlanCache> cache = make_cache();
    SchedulingBackend third(nullptr, cache.get(), nullptr, options);
    absl::StatusOr<v1::Plan> got = third.GetPlan(computed->plan_id());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->peak_bytes(), computed->peak_bytes());
    EXPECT_TRUE(testing::VerifyPlan(graph, *got).ok());
    absl::StatusOr<v1::Plan> hit = third.Answer(request, false);
    ASSERT_TRUE(hit.ok());
    EXPECT_EQ(hit->stats().cache(), "shared");
  }
}

}  // namespace
}  // namespace serenity
