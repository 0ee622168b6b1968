#include "common/byte_size.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

TEST(ParseByteSizeTest, PlainIntegersAreBytes) {
  EXPECT_EQ(*ParseByteSize("0"), 0);
  EXPECT_EQ(*ParseByteSize("4096"), 4096);
  EXPECT_EQ(*ParseByteSize(" 17 "), 17);
  EXPECT_EQ(*ParseByteSize("9223372036854775807"), INT64_MAX);
}

TEST(ParseByteSizeTest, BinaryAndDecimalUnits) {
  EXPECT_EQ(*ParseByteSize("12B"), 12);
  EXPECT_EQ(*ParseByteSize("1K"), 1024);
  EXPECT_EQ(*ParseByteSize("3KiB"), 3072);
  EXPECT_EQ(*ParseByteSize("2M"), 2097152);
  EXPECT_EQ(*ParseByteSize("2MiB"), 2097152);
  EXPECT_EQ(*ParseByteSize("1G"), 1073741824);
  EXPECT_EQ(*ParseByteSize("5GiB"), 5368709120);
  EXPECT_EQ(*ParseByteSize("64KB"), 64000);
  EXPECT_EQ(*ParseByteSize("3MB"), 3000000);
  EXPECT_EQ(*ParseByteSize("2GB"), 2000000000);
  EXPECT_EQ(*ParseByteSize("8 MiB"), 8388608);
  // Case does not matter; b is bytes.
  EXPECT_EQ(*ParseByteSize("1k"), 1024);
  EXPECT_EQ(*ParseByteSize("1kib"), 1024);
  EXPECT_EQ(*ParseByteSize("1kb"), 1000);
  EXPECT_EQ(*ParseByteSize("1mB"), 1000000);
}

TEST(ParseByteSizeTest, FractionsOnlyWhenWholeBytes) {
  EXPECT_EQ(*ParseByteSize("1.5MiB"), 1572864);
  EXPECT_EQ(*ParseByteSize("0.5K"), 512);
  EXPECT_EQ(*ParseByteSize("2.25KB"), 2250);
  EXPECT_EQ(*ParseByteSize("1.0"), 1);
  EXPECT_EQ(*ParseByteSize(".5KiB"), 512);
  EXPECT_THAT(ParseByteSize("0.3K").status().message(), HasSubstr("not a whole number of bytes"));
  EXPECT_THAT(ParseByteSize("1.5").status().message(), HasSubstr("not a whole number of bytes"));
  EXPECT_THAT(ParseByteSize("1.KiB").status().message(), HasSubstr("decimal point"));
}

TEST(ParseByteSizeTest, RefusesWithTheAcceptedSuffixes) {
  for (const char* bad : {"", "-1", "-2MiB", "KiB", "1T", "1 bytes", "1Ki", "0x10", "1,5M", "2MiBs", "1e6"}) {
    absl::StatusOr<int64_t> parsed = ParseByteSize(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("KiB, M, MiB, G, GiB")) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("KB, MB, GB")) << bad;
  }
  EXPECT_THAT(ParseByteSize("-1").status().message(), HasSubstr("negative"));
  EXPECT_THAT(ParseByteSize("1T").status().message(), HasSubstr("unknown unit 'T'"));
}

TEST(ParseByteSizeTest, RefusesOverflow) {
  EXPECT_THAT(ParseByteSize("9223372036854775808").status().message(), HasSubstr("2^63-1"));
  EXPECT_THAT(ParseByteSize("99999999999999999999999").status().message(), HasSubstr("2^63-1"));
  // 2^33 GiB = 2^63 bytes: one past the largest.
  EXPECT_THAT(ParseByteSize("8589934592GiB").status().message(), HasSubstr("2^63-1"));
  EXPECT_EQ(*ParseByteSize("8589934591GiB"), INT64_MAX - (int64_t{1} << 30) + 1);
}

}  // namespace
}  // namespace serenity
