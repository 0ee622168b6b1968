#include "common/command_line.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

struct Flags {
  bool verbose = false;
  std::string name = "x";
  int64_t count = 3;
  double ratio = 0.5;
  std::vector<std::string> dims;
};

FlagSet MakeFlagSet(Flags& f) {
  FlagSet set("prog [flags]", "A test program.");
  set.AddBool("verbose", &f.verbose, "Talk more.");
  set.AddString("name", &f.name, "NAME", "A name.");
  set.AddInt("count", &f.count, "N", "A count.");
  set.AddDouble("ratio", &f.ratio, "R", "A ratio.");
  set.AddRepeated("dim", &f.dims, "K=V", "A dim.");
  return set;
}

TEST(FlagSetTest, ParsesAllForms) {
  Flags f;
  FlagSet set = MakeFlagSet(f);
  ASSERT_TRUE(set.Parse({"a.onnx", "--verbose", "--name", "n", "--count=7", "--ratio", "1.5", "--dim", "b=1",
                         "--dim=c=2", "b.onnx", "--", "--not-a-flag"})
                  .ok());
  EXPECT_TRUE(f.verbose);
  EXPECT_EQ(f.name, "n");
  EXPECT_EQ(f.count, 7);
  EXPECT_DOUBLE_EQ(f.ratio, 1.5);
  EXPECT_EQ(f.dims, (std::vector<std::string>{"b=1", "c=2"}));
  EXPECT_EQ(set.positionals(), (std::vector<std::string>{"a.onnx", "b.onnx", "--not-a-flag"}));
  EXPECT_FALSE(set.help_requested());
}

TEST(FlagSetTest, ReportsBadInput) {
  Flags f;
  FlagSet set = MakeFlagSet(f);
  EXPECT_THAT(set.Parse({"--nope"}).message(), HasSubstr("unknown flag --nope"));
  EXPECT_THAT(set.Parse({"--count", "many"}).message(), HasSubstr("integer"));
  EXPECT_THAT(set.Parse({"--name"}).message(), HasSubstr("needs a value"));
  EXPECT_THAT(set.Parse({"--verbose=maybe"}).message(), HasSubstr("true or false"));
}

TEST(FlagSetTest, HelpListsEveryFlagWithDefaults) {
  Flags f;
  FlagSet set = MakeFlagSet(f);
  ASSERT_TRUE(set.Parse({"--help"}).ok());
  EXPECT_TRUE(set.help_requested());
  std::string help = set.Help();
  for (const char* expected : {"Usage: prog [flags]", "--verbose", "--name NAME", "(default: x)", "--count N",
                               "(default: 3)", "--ratio R", "--dim K=V", "(repeatable)", "--help"}) {
    EXPECT_THAT(help, HasSubstr(expected));
  }
}

// A help text of several lines is indented alike under its flag, whether or
// not its continuation lines carry their own indentation.
TEST(FlagSetTest, HelpIndentsEveryLineOfAFlagsText) {
  bool verbose = false;
  int64_t count = 0;
  FlagSet set("prog", "");
  set.AddBool("verbose", &verbose, "first line\nsecond line");
  set.AddInt("count", &count, "N", "one\n   two");
  EXPECT_THAT(set.Help(), HasSubstr("  --verbose\n      first line\n      second line (default: false)\n"));
  EXPECT_THAT(set.Help(), HasSubstr("  --count N\n      one\n      two (default: 0)\n"));
}

}  // namespace
}  // namespace serenity
