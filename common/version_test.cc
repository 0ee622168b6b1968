#include "common/version.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using ::testing::MatchesRegex;

TEST(VersionTest, VersionIsDottedNumbers) { EXPECT_THAT(SerenityVersion(), MatchesRegex("[0-9]+\\.[0-9]+\\.[0-9]+")); }

TEST(VersionTest, CommitIsHexOrUnknown) {
  const std::string commit = SerenityCommit();
  EXPECT_TRUE(commit == "unknown" ||
              (commit.size() == 12 && commit.find_first_not_of("0123456789abcdef") == std::string::npos))
      << commit;
}

TEST(VersionTest, LineNamesProgramVersionAndCommit) {
  EXPECT_THAT(VersionLine("serenity-client"),
              MatchesRegex("serenity-client [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit ([0-9a-f]{12}|unknown)\\)"));
}

}  // namespace
}  // namespace serenity
