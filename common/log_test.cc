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

TEST(LogTest, CutsLongValuesAndSaysHowManyBytesWereLeftOut) {
  const std::string huge(5 << 20, 'a');  // a client's 5 MB model name
  std::string line = FormatLogLine("info", "plan", {{"model", huge}, {"request_id", "7"}});
  EXPECT_THAT(line, HasSubstr(" model=\"" + std::string(kMaxLogValueBytes, 'a') + "...(+" +
                              std::to_string(huge.size() - kMaxLogValueBytes) + " bytes)\" request_id=7"));
  EXPECT_LT(line.size(), 2 * kMaxLogValueBytes);
  // The event too.
  line = FormatLogLine("info", huge, {});
  EXPECT_THAT(line, EndsWith("...(+" + std::to_string(huge.size() - kMaxLogValueBytes) + " bytes)\""));
  // A value of exactly the limit is shown whole, without a marker.
  line = FormatLogLine("info", "plan", {{"model", std::string(kMaxLogValueBytes, 'b')}});
  EXPECT_THAT(line, EndsWith(" model=" + std::string(kMaxLogValueBytes, 'b')));
  // The limit counts bytes before escaping: a value of quotes is cut at the
  // limit too, then escaped.
  line = FormatLogLine("info", "plan", {{"q", std::string(kMaxLogValueBytes + 10, '"')}});
  std::string escaped;
  for (size_t i = 0; i < kMaxLogValueBytes; ++i) escaped += "\\\"";
  EXPECT_THAT(line, EndsWith(" q=\"" + escaped + "...(+10 bytes)\""));
}

TEST(LogTest, NeverCutsInsideAUtf8Character) {
  // "x" then 200 two-byte characters: the character at bytes 255..256 would
  // straddle the limit, so the cut comes before it.
  std::string value = "x";
  for (int i = 0; i < 200; ++i) value += "\xc3\xa9";  // é
  ASSERT_EQ(kMaxLogValueBytes, 256u);
  std::string line = FormatLogLine("info", "plan", {{"model", value}});
  std::string kept = "x";
  for (int i = 0; i < 127; ++i) kept += "\xc3\xa9";
  EXPECT_THAT(line, EndsWith(" model=\"" + kept + "...(+146 bytes)\""));
  // Four-byte characters (U+1F600) after 254 ASCII bytes: cut before it.
  value = std::string(254, 'y') + "\xf0\x9f\x98\x80" + "z";
  line = FormatLogLine("info", "plan", {{"model", value}});
  EXPECT_THAT(line, EndsWith(" model=\"" + std::string(254, 'y') + "...(+5 bytes)\""));
}

TEST(LogTest, KeepsValidUtf8AndEscapesBytesThatAreNot) {
  std::string line = FormatLogLine("info", "plan",
                                   {{"ok", "caf\xc3\xa9 \xe2\x82\xac"},
                                    {"bad",
                                     "a\xff"
                                     "b"},
                                    {"truncated", "c\xe2\x82"},
                                    {"surrogate", "\xed\xa0\x80"},
                                    {"overlong", "\xc0\xaf"}});
  EXPECT_THAT(line, HasSubstr(" ok=\"caf\xc3\xa9 \xe2\x82\xac\""));
  EXPECT_THAT(line, HasSubstr(" bad=\"a\\xffb\""));
  EXPECT_THAT(line, HasSubstr(" truncated=\"c\\xe2\\x82\""));
  EXPECT_THAT(line, HasSubstr(" surrogate=\"\\xed\\xa0\\x80\""));
  EXPECT_THAT(line, HasSubstr(" overlong=\"\\xc0\\xaf\""));
}

}  // namespace
}  // namespace serenity
