#include "client/levels_file.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

TEST(LevelsFileTest, ReadsLevelsAndSwitchPoints) {
  v1::PlanOptions options;
  ASSERT_TRUE(ParseLevelsJson(R"({"levels": [{"name": "full", "time_us": 100},
                                             {"name": "half", "density": {"w": 0.5}, "time_us": 60.5}],
                                  "switch_points": ["conv2", "add"]})",
                              "f.json", options)
                  .ok());
  ASSERT_EQ(options.levels_size(), 2);
  EXPECT_EQ(options.levels(0).name(), "full");
  EXPECT_TRUE(options.levels(0).density().empty());
  EXPECT_EQ(options.levels(1).density().at("w"), 0.5);
  EXPECT_EQ(options.levels(1).time_us(), 60.5);
  EXPECT_THAT(options.switch_points(), ::testing::ElementsAre("conv2", "add"));
}

std::string Error(const std::string& text) {
  v1::PlanOptions options;
  absl::Status s = ParseLevelsJson(text, "f.json", options);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text;
  return std::string(s.message());
}

TEST(LevelsFileTest, MalformedFilesSayWhat) {
  EXPECT_THAT(Error("{\"levels\": ["), HasSubstr("levels file 'f.json': not JSON: "));
  EXPECT_THAT(Error("[]"), HasSubstr("must hold a JSON object"));
  EXPECT_EQ(Error(R"({"level": []})"), "levels file 'f.json': unknown key 'level' (expected levels, switch_points)");
  EXPECT_EQ(Error(R"({"levels": []})"),
            "levels file 'f.json': \"levels\" must be a non-empty list of levels, densest first");
  EXPECT_EQ(Error(R"({"levels": [3]})"), "levels file 'f.json': levels[0] must be an object {name, density, time_us}");
  EXPECT_EQ(Error(R"({"levels": [{"name": "a", "densty": {}}]})"),
            "levels file 'f.json': levels[0] has unknown key 'densty' (expected name, density, time_us)");
  EXPECT_EQ(Error(R"({"levels": [{"name": "a", "density": {"w": "half"}}]})"),
            "levels file 'f.json': levels[0].density of 'w' must be a number");
  EXPECT_EQ(Error(R"({"levels": [{"name": "a", "time_us": "1"}]})"),
            "levels file 'f.json': levels[0].time_us must be a number");
  EXPECT_EQ(Error(R"({"levels": [{"name": "a"}], "switch_points": [1]})"),
            "levels file 'f.json': \"switch_points\" must be a list of op names");
}

TEST(LevelsFileTest, NestingAndRangesAreCheckedFromTheFileAlone) {
  EXPECT_EQ(
      Error(R"({"levels": [{"name": "a", "density": {"w": 0.25}}, {"name": "b", "density": {"w": 0.5}}]})"),
      "levels file 'f.json': sparsity levels do not nest: 'w' has density 0.5 at level 'b', more than 0.25 at the "
      "denser level 'a' before it");
  EXPECT_EQ(Error(R"({"levels": [{"name": "a", "density": {"w": 2}}]})"),
            "levels file 'f.json': sparsity level 'a': density of 'w' is 2, outside [0, 1]");
  EXPECT_EQ(Error(R"({"levels": [{"name": "a"}, {"name": "a"}]})"),
            "levels file 'f.json': sparsity level 'a' is listed twice");
  EXPECT_EQ(Error(R"({"levels": [{"density": {}}]})"), "levels file 'f.json': sparsity level 0 has no name");
}

TEST(LevelsFileTest, MissingFileIsNotFound) {
  v1::PlanOptions options;
  EXPECT_EQ(ReadLevelsFile("/nonexistent/levels.json", options).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace serenity
