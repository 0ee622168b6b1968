#include "server/plan_messages.h"

#include <future>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace serenity {
namespace {

// Fills a reply the way a memoized one is copied in: many submessages.
void FillReply(v1::Plan* plan, int steps) {
  for (int i = 0; i < steps; ++i) {
    v1::Step* step = plan->add_steps();
    step->set_op("a_long_enough_operator_name_" + std::to_string(i));
  }
  plan->set_peak_bytes(steps);
}

TEST(PlanMessagesTest, MessagesLiveOnTheHoldersArenaAndStartEmpty) {
  PlanMessages::Pool pool;
  auto* holder = pool.AllocateMessages();
  auto* messages = static_cast<PlanMessages*>(holder);
  ASSERT_NE(holder->request(), nullptr);
  ASSERT_NE(holder->response(), nullptr);
  EXPECT_EQ(holder->request()->GetArena(), messages->arena());
  EXPECT_EQ(holder->response()->GetArena(), messages->arena());
  EXPECT_EQ(holder->response()->ByteSizeLong(), 0u);
  holder->Release();
}

TEST(PlanMessagesTest, AReleasedHolderIsReusedWithFreshMessages) {
  PlanMessages::Pool pool(/*max_idle=*/1);
  auto* first = pool.AllocateMessages();
  first->request()->set_model_name("first");
  FillReply(first->response(), 200);  // more than the first block holds
  first->Release();
  EXPECT_EQ(pool.idle(), 1u);
  auto* second = pool.AllocateMessages();
  EXPECT_EQ(second, first);
  EXPECT_EQ(pool.idle(), 0u);
  EXPECT_EQ(second->request()->model_name(), "");
  EXPECT_EQ(second->response()->steps_size(), 0);
  EXPECT_EQ(second->response()->ByteSizeLong(), 0u);
  // Beyond max_idle, released holders are deleted, not kept.
  auto* third = pool.AllocateMessages();
  EXPECT_NE(third, second);
  second->Release();
  third->Release();
  EXPECT_EQ(pool.idle(), 1u);
}

// gRPC hands a holder to whichever thread takes the next call: there too
// the messages go into the arena's first block, not into new blocks.
TEST(PlanMessagesTest, AHolderReusedOnAnotherThreadFillsItsFirstBlock) {
  PlanMessages::Pool pool(/*max_idle=*/1);
  grpc::MessageHolder<v1::PlanRequest, v1::Plan>* first = nullptr;
  std::promise<void> released, reused;
  // The first thread stays alive meanwhile: a new thread could otherwise
  // inherit its thread-local state, and with it its claim on the block.
  std::thread first_thread([&] {
    first = pool.AllocateMessages();
    FillReply(first->response(), 10);
    first->Release();
    released.set_value();
    reused.get_future().wait();
  });
  released.get_future().wait();
  std::thread([&] {
    auto* again = pool.AllocateMessages();
    EXPECT_EQ(again, first);
    google::protobuf::Arena* arena = static_cast<PlanMessages*>(again)->arena();
    const uint64_t before = arena->SpaceAllocated();
    FillReply(again->response(), 10);
    EXPECT_EQ(arena->SpaceAllocated(), before) << "the reply went into a new block";
    again->Release();
  }).join();
  reused.set_value();
  first_thread.join();
}

// Threads allocating, filling and releasing at once each see only their own
// messages (run under ASan and TSan in the suite).
TEST(PlanMessagesTest, ConcurrentCallsKeepTheirMessagesApart) {
  PlanMessages::Pool pool(/*max_idle=*/4);
  std::vector<std::thread> threads;
  std::vector<int> mismatches(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&pool, &mismatches, t] {
      for (int round = 0; round < 500; ++round) {
        auto* holder = pool.AllocateMessages();
        if (holder->response()->steps_size() != 0) ++mismatches[t];
        const int steps = 1 + (t * 7 + round) % 50;
        FillReply(holder->response(), steps);
        holder->request()->set_model_name(std::to_string(t));
        if (holder->response()->steps_size() != steps || holder->request()->model_name() != std::to_string(t)) {
          ++mismatches[t];
        }
        holder->Release();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches, std::vector<int>(8, 0));
  EXPECT_LE(pool.idle(), 4u);
}

}  // namespace
}  // namespace serenity
