#include "client/json_format.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Keys(const nlohmann::ordered_json& j) {
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  return keys;
}

TEST(JsonFormatTest, Int64ValuesAreNumbersNotStrings) {
  v1::Plan plan;
  plan.set_peak_bytes(int64_t{1} << 62);
  plan.set_headroom_bytes(-(int64_t{1} << 40));
  plan.add_step_bytes(int64_t{5'000'000'000});
  const nlohmann::ordered_json j = MessageToJson(plan);
  ASSERT_TRUE(j["peak_bytes"].is_number_integer());
  EXPECT_EQ(j["peak_bytes"].get<int64_t>(), int64_t{1} << 62);
  EXPECT_EQ(j["headroom_bytes"].get<int64_t>(), -(int64_t{1} << 40));
  ASSERT_TRUE(j["step_bytes"][0].is_number_integer());
  EXPECT_EQ(j["step_bytes"][0].get<int64_t>(), 5'000'000'000);
  // Exact digits in the text: no quotes, no exponent.
  EXPECT_NE(FormatJsonLine(j, false).find("\"peak_bytes\":4611686018427387904,"), std::string::npos);
}

TEST(JsonFormatTest, EnumsAreShortLowerCaseNames) {
  EXPECT_EQ(EnumShortName(v1::CERTIFICATE_UNSPECIFIED), "unspecified");
  EXPECT_EQ(EnumShortName(v1::CERTIFICATE_OPTIMAL), "optimal");
  EXPECT_EQ(EnumShortName(v1::CERTIFICATE_BEST_FOUND), "best_found");
  EXPECT_EQ(EnumShortName(v1::CERTIFICATE_BASELINE), "baseline");
  EXPECT_EQ(EnumShortName(v1::BUFFER_KIND_TENSOR), "tensor");
  EXPECT_EQ(EnumShortName(v1::BUFFER_KIND_WORKSPACE), "workspace");
  EXPECT_EQ(EnumShortName(v1::BUFFER_KIND_WEIGHT), "weight");
  EXPECT_EQ(EnumShortName(static_cast<v1::Certificate>(42)), "42");

  v1::Plan plan;
  plan.set_certificate(v1::CERTIFICATE_BEST_FOUND);
  plan.mutable_arena()->add_buffers()->set_kind(v1::BUFFER_KIND_WORKSPACE);
  plan.add_moves()->set_kind(v1::BUFFER_KIND_WEIGHT);
  nlohmann::ordered_json j = MessageToJson(plan);
  EXPECT_EQ(j["certificate"], "best_found");
  EXPECT_EQ(j["arena"]["buffers"][0]["kind"], "workspace");
  EXPECT_EQ(j["moves"][0]["kind"], "weight");
  // A number the enum does not name (a newer server) stays a number.
  plan.set_certificate(static_cast<v1::Certificate>(42));
  EXPECT_EQ(MessageToJson(plan)["certificate"], 42);
}

TEST(JsonFormatTest, EveryScalarAndRepeatedFieldIsWrittenWithItsDefault) {
  EXPECT_EQ(FormatJsonLine(MessageToJson(v1::TrafficPoint()), false),
            R"({"onchip_bytes":0,"read_bytes":0,"write_bytes":0,"feasible":false,"infeasible_op":""})");
  const nlohmann::ordered_json j = MessageToJson(v1::Plan());
  EXPECT_EQ(j["model"], "");
  EXPECT_EQ(j["nodes"], 0);
  EXPECT_EQ(j["order"], nlohmann::ordered_json::array());
  EXPECT_EQ(j["step_bytes"], nlohmann::ordered_json::array());
  EXPECT_EQ(j["feasible"], false);
  EXPECT_EQ(j["certificate"], "unspecified");
  // Unset sub-messages are left out.
  EXPECT_FALSE(j.contains("arena"));
  EXPECT_FALSE(j.contains("baselines"));
  EXPECT_FALSE(j.contains("stats"));
}

TEST(JsonFormatTest, FieldsComeInFieldNumberOrderUnderTheirProtoNames) {
  EXPECT_THAT(Keys(MessageToJson(v1::Arena())), ElementsAre("size_bytes", "alignment", "buffers", "tflite_size_bytes"));
  EXPECT_THAT(Keys(MessageToJson(v1::Move())),
              ElementsAre("tensor", "before_step", "from_offset", "to_offset", "bytes", "kind"));
  const std::vector<std::string> plan_keys = Keys(MessageToJson(v1::Plan()));
  EXPECT_EQ(plan_keys.front(), "model");
  const auto at = [&](const std::string& key) {
    return std::find(plan_keys.begin(), plan_keys.end(), key) - plan_keys.begin();
  };
  EXPECT_LT(at("steps"), at("step_bytes"));    // 18, 19
  EXPECT_LT(at("step_bytes"), at("plan_id"));  // 19, 20
}

TEST(JsonFormatTest, NestedMessagesAndRepeatedMessages) {
  v1::Plan plan;
  plan.mutable_baselines()->mutable_kahn()->set_peak_bytes(7);
  plan.mutable_baselines()->mutable_kahn()->add_step_bytes(3);
  plan.mutable_baselines()->mutable_kahn()->add_step_bytes(7);
  v1::Step* step = plan.add_steps();
  step->set_op("conv");
  v1::TensorPlacement* in = step->add_inputs();
  in->set_tensor("x");
  in->set_offset(64);
  in->set_size(128);
  step->mutable_workspace()->set_size(0);
  const nlohmann::ordered_json j = MessageToJson(plan);
  EXPECT_EQ(j["baselines"]["kahn"]["peak_bytes"], 7);
  EXPECT_EQ(j["baselines"]["kahn"]["step_bytes"], nlohmann::ordered_json::array({3, 7}));
  EXPECT_EQ(j["baselines"]["kahn"]["arena_bytes"], 0);
  EXPECT_FALSE(j["baselines"].contains("serenity"));  // set only with a given order
  EXPECT_FALSE(j["baselines"].contains("xla"));
  ASSERT_EQ(j["steps"].size(), 1u);
  EXPECT_EQ(j["steps"][0]["op"], "conv");
  EXPECT_EQ(FormatJsonLine(j["steps"][0]["inputs"], false), R"([{"tensor":"x","offset":64,"size":128}])");
  EXPECT_EQ(j["steps"][0]["outputs"], nlohmann::ordered_json::array());
  // A set sub-message with only defaults is still written.
  EXPECT_EQ(FormatJsonLine(j["steps"][0]["workspace"], false), R"({"tensor":"","offset":0,"size":0})");
}

TEST(JsonFormatTest, MapsAreObjectsWithSortedKeys) {
  v1::PlanStats stats;
  (*stats.mutable_phase_ms())["search"] = 2.5;
  (*stats.mutable_phase_ms())["arena"] = 1.25;
  (*stats.mutable_phase_ms())["import"] = 0;
  const nlohmann::ordered_json j = MessageToJson(stats);
  EXPECT_THAT(Keys(j["phase_ms"]), ElementsAre("arena", "import", "search"));
  EXPECT_EQ(j["phase_ms"]["arena"], 1.25);
  EXPECT_TRUE(j["phase_ms"]["import"].is_number());
  EXPECT_EQ(MessageToJson(v1::PlanStats())["phase_ms"], nlohmann::ordered_json::object());
  v1::PlanOptions options;
  (*options.mutable_dim_values())["batch"] = int64_t{1} << 33;
  EXPECT_EQ(MessageToJson(options)["dim_values"]["batch"].get<int64_t>(), int64_t{1} << 33);
}

TEST(JsonFormatTest, DoublesAreNumbers) {
  v1::PlanStats stats;
  stats.set_solve_ms(0.125);
  stats.set_total_ms(1e-3);
  const nlohmann::ordered_json j = MessageToJson(stats);
  ASSERT_TRUE(j["solve_ms"].is_number_float());
  EXPECT_EQ(j["solve_ms"].get<double>(), 0.125);
  EXPECT_EQ(j["total_ms"].get<double>(), 1e-3);
}

TEST(JsonFormatTest, OptionalOneofAndBytesFields) {
  v1::Tensor tensor;
  tensor.set_name("t");
  EXPECT_FALSE(MessageToJson(tensor).contains("bytes"));  // proto3 optional, unset
  tensor.set_bytes(0);
  EXPECT_EQ(MessageToJson(tensor)["bytes"], 0);
  v1::PlanRequest request;
  request.set_onnx_model("abc");
  const nlohmann::ordered_json j = MessageToJson(request);
  EXPECT_EQ(j["onnx_model"], "YWJj");  // base64, as the proto3 mapping writes bytes
  EXPECT_FALSE(j.contains("graph"));   // the other member of the oneof
}

TEST(JsonFormatTest, StatusCodeNamesAreTheCanonicalOnes) {
  EXPECT_EQ(StatusCodeName(0), "OK");
  EXPECT_EQ(StatusCodeName(3), "INVALID_ARGUMENT");
  EXPECT_EQ(StatusCodeName(5), "NOT_FOUND");
  EXPECT_EQ(StatusCodeName(14), "UNAVAILABLE");
  EXPECT_EQ(StatusCodeName(16), "UNAUTHENTICATED");
  EXPECT_EQ(StatusCodeName(17), "UNKNOWN");
  EXPECT_EQ(StatusCodeName(-1), "UNKNOWN");
}

TEST(JsonFormatTest, LinesStartWithTheSchemaVersionAndSource) {
  EXPECT_EQ(FormatJsonLine(ErrorLine("m.onnx", absl::NotFoundError("cannot open 'm.onnx'")), false),
            R"({"schema_version":1,"source":"m.onnx","model":"m.onnx",)"
            R"("error":{"code":"NOT_FOUND","message":"cannot open 'm.onnx'"}})");
  EXPECT_THAT(Keys(JsonLineHeader("-")), ElementsAre("schema_version", "source"));
}

TEST(JsonFormatTest, CompactIsOneLineAndPrettyIsIndented) {
  nlohmann::ordered_json j = JsonLineHeader("a");
  j["list"] = {1, 2};
  const std::string compact = FormatJsonLine(j, false);
  const std::string pretty = FormatJsonLine(j, true);
  EXPECT_EQ(compact.find('\n'), std::string::npos);
  EXPECT_NE(pretty.find("\n  \"source\": \"a\""), std::string::npos);
  EXPECT_EQ(nlohmann::ordered_json::parse(pretty), nlohmann::ordered_json::parse(compact));
  // Names from an ONNX file need not be UTF-8: replaced, never thrown on.
  j["source"] = std::string("bad\xff name");
  EXPECT_NE(FormatJsonLine(j, false).find("bad\xEF\xBF\xBD name"), std::string::npos);
}

}  // namespace
}  // namespace serenity
