#include "client/model_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

v1::Graph SmallGraph() {
  v1::Graph graph;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(name: "g"
           ops { name: "relu" type: "Relu" inputs: "x" outputs: "y" }
           tensors { name: "x" bytes: 64 }
           tensors { name: "y" bytes: 64 }
           inputs: "x"
           outputs: "y")pb",
      &graph));
  return graph;
}

std::string OnnxBytes() {
  return testing::ReadFile(SERENITY_SHARED_DIR "/bench/models/nasnet_a_cifar10_normal_cell.onnx");
}

TEST(DetectModelFormatTest, TellsTheThreeFormatsApart) {
  std::string text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(SmallGraph(), &text));
  EXPECT_EQ(*DetectModelFormat(text), ModelFormat::kGraphText);
  EXPECT_EQ(*DetectModelFormat("# a comment\n" + text), ModelFormat::kGraphText);
  EXPECT_EQ(*DetectModelFormat(SmallGraph().SerializeAsString()), ModelFormat::kGraphBinary);
  EXPECT_EQ(*DetectModelFormat(OnnxBytes()), ModelFormat::kOnnx);
}

TEST(DetectModelFormatTest, RefusesEmptyAndUnrecognisedBytes) {
  for (const std::string& bytes : {std::string(), std::string(" \n\t")}) {
    absl::StatusOr<ModelFormat> format = DetectModelFormat(bytes);
    EXPECT_EQ(format.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(format.status().message(), HasSubstr("empty"));
  }
  // Not text format, and not wire format with a Graph's or ModelProto's fields.
  for (const std::string& bytes :
       {std::string("hello, world {"), std::string("\x08\x07", 2), std::string("\xff\xff\xff", 3)}) {
    absl::StatusOr<ModelFormat> format = DetectModelFormat(bytes);
    EXPECT_EQ(format.status().code(), absl::StatusCode::kInvalidArgument) << bytes;
    EXPECT_THAT(format.status().message(), HasSubstr("expected an ONNX model or a serenity.v1.Graph"));
  }
}

// ReadModelFile("-") reads standard input: the same request as from the file.
class StdinTest : public ::testing::Test {
 protected:
  absl::StatusOr<v1::PlanRequest> ReadFromStdin(const std::string& bytes) {
    // One file per test: CTest runs the tests of this binary as parallel processes.
    const std::string path = ::testing::TempDir() + "/model_file_test_stdin_" +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::ofstream(path, std::ios::binary) << bytes;
    EXPECT_NE(std::freopen(path.c_str(), "rb", stdin), nullptr);
    std::cin.clear();
    return ReadModelFile("-");
  }
};

TEST_F(StdinTest, ReadsEachFormat) {
  absl::StatusOr<v1::PlanRequest> binary = ReadFromStdin(SmallGraph().SerializeAsString());
  ASSERT_TRUE(binary.ok()) << binary.status();
  EXPECT_EQ(binary->model_name(), "stdin");
  EXPECT_EQ(binary->graph().SerializeAsString(), SmallGraph().SerializeAsString());

  std::string text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(SmallGraph(), &text));
  absl::StatusOr<v1::PlanRequest> from_text = ReadFromStdin(text);
  ASSERT_TRUE(from_text.ok()) << from_text.status();
  EXPECT_EQ(from_text->graph().ops(0).type(), "Relu");

  const std::string path = ::testing::TempDir() + "/model_file_test_reads_each_format.onnx";
  std::ofstream(path, std::ios::binary) << OnnxBytes();
  absl::StatusOr<v1::PlanRequest> from_file = ReadModelFile(path);
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  absl::StatusOr<v1::PlanRequest> onnx = ReadFromStdin(OnnxBytes());
  ASSERT_TRUE(onnx.ok()) << onnx.status();
  EXPECT_FALSE(onnx->onnx_model().empty());
  EXPECT_EQ(onnx->onnx_model(), from_file->onnx_model());
}

TEST_F(StdinTest, EmptyStdinIsAClearError) {
  absl::StatusOr<v1::PlanRequest> request = ReadFromStdin("");
  EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(request.status().message(), HasSubstr("standard input: empty"));
  request = ReadFromStdin("not a model");
  EXPECT_THAT(request.status().message(), HasSubstr("standard input: not a model"));
}

}  // namespace
}  // namespace serenity
