#include "common/log.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(LogTest, FormatsKeyValuePairsInOrder) {
  std::string line = FormatLogLine("info", "plan", {{"request_id", "7"}, {"peak_bytes", "1024"}});
  EXPECT_THAT(line, MatchesRegex("ts=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z level=info event=plan .*"));
  EXPECT_THAT(line, EndsWith(" request_id=7 peak_bytes=1024"));
}

TEST(LogTest, QuotesAndEscapesAwkwardValues) {
  std::string line = FormatLogLine("error", "plan failed",
                                   {{"model", "my model"}, {"error", "bad \"x\"\nnext"}, {"empty", ""}, {"eq", "a=b"}});
  EXPECT_THAT(line, HasSubstr("event=\"plan failed\""));
  EXPECT_THAT(line, HasSubstr("model=\"my model\""));
  EXPECT_THAT(line, HasSubstr("error=\"bad \\\"x\\\"\\nnext\""));
  EXPECT_THAT(line, HasSubstr("empty=\"\""));
  EXPECT_THAT(line, HasSubstr("eq=\"a=b\""));
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace serenity
