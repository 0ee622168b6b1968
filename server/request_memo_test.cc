#include "server/request_memo.h"

#include <string>

#include "gtest/gtest.h"

namespace serenity {
namespace {

std::shared_ptr<const MemoizedReply> Reply(const std::string& request, int padding) {
  auto entry = std::make_shared<MemoizedReply>();
  entry->request = request;
  entry->key.id = "0123456789abcdef0123456789abcdef";
  entry->reply.set_model(std::string(padding, 'm'));
  return entry;
}

TEST(RequestMemoKeyTest, EqualRequestsHaveEqualKeysWhateverTheMapOrder) {
  v1::PlanRequest a;
  a.set_onnx_model("model bytes");
  v1::PlanRequest b = a;
  for (int i = 0; i < 50; ++i) {
    (*a.mutable_options()->mutable_dim_values())["dim" + std::to_string(i)] = i;
    (*b.mutable_options()->mutable_dim_values())["dim" + std::to_string(49 - i)] = 49 - i;
  }
  EXPECT_EQ(RequestMemoKey(a, false), RequestMemoKey(b, false));
  EXPECT_NE(RequestMemoKey(a, false), RequestMemoKey(a, true));
  b.mutable_options()->set_memory_budget_bytes(1);
  EXPECT_NE(RequestMemoKey(a, false), RequestMemoKey(b, false));
  b = a;
  b.set_model_name("other");
  EXPECT_NE(RequestMemoKey(a, false), RequestMemoKey(b, false));
}

TEST(RequestMemoTest, FindsWhatWasPutAndReplacesEqualRequests) {
  RequestMemo memo(1 << 20);
  EXPECT_EQ(memo.Find("a"), nullptr);
  memo.Put(Reply("a", 10));
  memo.Put(Reply("b", 20));
  ASSERT_NE(memo.Find("a"), nullptr);
  EXPECT_EQ(memo.Find("a")->reply.model().size(), 10u);
  const int64_t bytes = memo.bytes();
  memo.Put(Reply("a", 30));
  EXPECT_EQ(memo.entries(), 2);
  // A longer reply takes more: at least its 20 more characters.
  EXPECT_GE(memo.bytes(), bytes + 20);
  EXPECT_EQ(memo.Find("a")->reply.model().size(), 30u);
  EXPECT_EQ(memo.Find("c"), nullptr);
}

TEST(RequestMemoTest, EvictsTheLeastRecentlyUsedWithinItsBytes) {
  RequestMemo probe(1 << 20);
  probe.Put(Reply("r0", 1000));
  const int64_t one = probe.bytes();
  RequestMemo memo(3 * one + one / 2);  // room for three entries
  memo.Put(Reply("r0", 1000));
  memo.Put(Reply("r1", 1000));
  memo.Put(Reply("r2", 1000));
  ASSERT_NE(memo.Find("r0"), nullptr);  // r1 is now the least recently used
  memo.Put(Reply("r3", 1000));
  EXPECT_EQ(memo.entries(), 3);
  EXPECT_LE(memo.bytes(), 3 * one + one / 2);
  EXPECT_EQ(memo.Find("r1"), nullptr);
  EXPECT_NE(memo.Find("r0"), nullptr);
  EXPECT_NE(memo.Find("r2"), nullptr);
  EXPECT_NE(memo.Find("r3"), nullptr);
}

TEST(RequestMemoTest, KeepsNothingLargerThanItsBound) {
  RequestMemo memo(1000);
  memo.Put(Reply("big", 5000));
  EXPECT_EQ(memo.Find("big"), nullptr);
  EXPECT_EQ(memo.bytes(), 0);
  RequestMemo off(0);
  off.Put(Reply("x", 1));
  EXPECT_EQ(off.Find("x"), nullptr);
}

}  // namespace
}  // namespace serenity
