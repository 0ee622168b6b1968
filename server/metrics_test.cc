#include "server/metrics.h"

#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

std::string Exposition(const ServerMetrics& metrics) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, metrics.registry()->Collect());
  return out.str();
}

TEST(ServerMetricsTest, CountsCallsByMethodAndCode) {
  ServerMetrics metrics;
  metrics.RecordCall("Plan", "unary", "OK", 0.002);
  metrics.RecordCall("Plan", "unary", "OK", 0.004);
  metrics.RecordCall("Plan", "unary", "INVALID_ARGUMENT", 0.001);
  const std::string text = Exposition(metrics);
  EXPECT_THAT(text, HasSubstr("grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Plan\","
                              "grpc_service=\"serenity.v1.Scheduler\",grpc_type=\"unary\"} 2"));
  EXPECT_THAT(text, HasSubstr("grpc_code=\"INVALID_ARGUMENT\""));
  EXPECT_THAT(text, HasSubstr("grpc_server_handling_seconds_count{grpc_method=\"Plan\","
                              "grpc_service=\"serenity.v1.Scheduler\",grpc_type=\"unary\"} 3"));
  EXPECT_THAT(text, HasSubstr("# TYPE grpc_server_handling_seconds histogram"));
}

TEST(ServerMetricsTest, ReportsLoadCacheAndSearches) {
  ServerMetrics metrics;
  metrics.SetLoad(3, 2);
  metrics.RecordCacheLookup("local", "hit");
  metrics.RecordCacheLookup("shared", "error");
  metrics.RecordSearch(1000, /*hit_limit=*/true, /*infeasible=*/false);
  metrics.RecordSearch(500, false, true);
  const std::string text = Exposition(metrics);
  EXPECT_THAT(text, HasSubstr("serenity_jobs_queued 3"));
  EXPECT_THAT(text, HasSubstr("serenity_jobs_active 2"));
  EXPECT_THAT(text, HasSubstr("serenity_cache_lookups_total{result=\"hit\",tier=\"local\"} 1"));
  EXPECT_THAT(text, HasSubstr("serenity_cache_lookups_total{result=\"error\",tier=\"shared\"} 1"));
  EXPECT_THAT(text, HasSubstr("serenity_cache_lookups_total{result=\"miss\",tier=\"local\"} 0"));
  EXPECT_THAT(text, HasSubstr("serenity_search_states_explored_total 1500"));
  EXPECT_THAT(text, HasSubstr("serenity_search_timeouts_total 1"));
  EXPECT_THAT(text, HasSubstr("serenity_infeasible_budgets_total 1"));
  EXPECT_THAT(text, HasSubstr("serenity_searches_total 2"));
}

TEST(ServerMetricsTest, ExportsTheBuildsVersionAndCommit) {
  ServerMetrics metrics;
  const std::string text = Exposition(metrics);
  EXPECT_THAT(text, HasSubstr("# TYPE serenity_build_info gauge"));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("serenity_build_info{commit=\"", SerenityCommit(), "\",version=\"",
                                           SerenityVersion(), "\"} 1")));
  EXPECT_THAT(SerenityVersion(), ::testing::MatchesRegex("[0-9]+\\.[0-9]+\\.[0-9]+"));
}

}  // namespace
}  // namespace serenity
