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
  bool color = true;
  set.AddBool("color", &color, "Colour the output.");
  // A switch that is off unless given shows no default; one that is on does.
  EXPECT_THAT(set.Help(), HasSubstr("  --verbose\n      first line\n      second line\n"));
  EXPECT_THAT(set.Help(), HasSubstr("  --color\n      Colour the output. (default: true)\n"));
  EXPECT_THAT(set.Help(), HasSubstr("  --count N\n      one\n      two (default: 0)\n"));
}

TEST(FlagSetTest, BytesTakeUnitSuffixes) {
  int64_t budget = 0, alignment = 64;
  FlagSet set("prog", "");
  set.AddBytes("budget", &budget, "BYTES", "A budget.");
  set.AddBytes("alignment", &alignment, "BYTES", "An alignment.");
  ASSERT_TRUE(set.Parse({"--budget", "2MiB", "--alignment=1K"}).ok());
  EXPECT_EQ(budget, 2 * 1024 * 1024);
  EXPECT_EQ(alignment, 1024);
  ASSERT_TRUE(set.Parse({"--budget=3MB"}).ok());
  EXPECT_EQ(budget, 3000000);
  ASSERT_TRUE(set.Parse({"--budget", "123"}).ok());
  EXPECT_EQ(budget, 123);
  absl::Status bad = set.Parse({"--budget", "2XB"});
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("--budget: '2XB' is not a byte size"));
  EXPECT_THAT(bad.message(), HasSubstr("KiB"));
  EXPECT_THAT(set.Parse({"--budget", "-5"}).message(), HasSubstr("negative"));
}

// The default shown for a bytes flag is its value in bytes, as the flag's
// registration found it.
TEST(FlagSetTest, BytesDefaultShownInBytes) {
  int64_t budget = 2 * 1024 * 1024;
  FlagSet set("prog", "");
  set.AddBytes("budget", &budget, "BYTES", "A budget.");
  EXPECT_THAT(set.Help(), HasSubstr("  --budget BYTES\n      A budget. (default: 2097152)\n"));
}

// A help text that states its own default keeps it alone: no generated
// "(default: X)" after it, in either spelling.
TEST(FlagSetTest, HelpDoesNotDoubleADefaultStatedInTheText) {
  double ratio = 0.9;
  int64_t threads = 2, budget = 0;
  std::string mode = "fast";
  FlagSet set("prog", "");
  set.AddDouble("ratio", &ratio, "R", "A ratio (default 0.9).");
  set.AddInt("threads", &threads, "N", "Worker threads (default: the core count).");
  set.AddBytes("budget", &budget, "BYTES", "A budget (default: 0, none).");
  set.AddString("mode", &mode, "M", "A mode.");
  const std::string help = set.Help();
  EXPECT_THAT(help, HasSubstr("  --ratio R\n      A ratio (default 0.9).\n"));
  EXPECT_THAT(help, HasSubstr("  --threads N\n      Worker threads (default: the core count).\n"));
  EXPECT_THAT(help, HasSubstr("  --budget BYTES\n      A budget (default: 0, none).\n"));
  EXPECT_THAT(help, HasSubstr("  --mode M\n      A mode. (default: fast)\n"));
  EXPECT_THAT(help, ::testing::Not(HasSubstr("(default: 0.9)")));
  EXPECT_THAT(help, ::testing::Not(HasSubstr("(default: 2)")));
}

}  // namespace
}  // namespace serenity
