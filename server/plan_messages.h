#ifndef SERENITY_SERVER_PLAN_MESSAGES_H_
#define SERENITY_SERVER_PLAN_MESSAGES_H_

#include <memory>
#include <mutex>
#include <vector>

#include "google/protobuf/arena.h"
#include "grpcpp/support/message_allocator.h"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// The request and reply of one Plan call on a protobuf arena. A reply copied
// from the memo is then a run of bump allocations freed at once, instead of
// a malloc and a free for each of its hundreds of submessages. (A plan a job
// computed is copied in, not swapped: it was built on the heap.)
class PlanMessages final : public grpc::MessageHolder<v1::PlanRequest, v1::Plan> {
 public:
  // Both messages are empty and on this holder's arena; Release() hands the
  // holder back to `pool`.
  class Pool;
  explicit PlanMessages(Pool* pool);

  // Destroys the messages and frees the arena's memory but its first block.
  void Free();

  // Frees, then makes both messages anew. Protobuf 3.21 gives the first
  // block to the thread that resets the arena (others allocate blocks of
  // their own), so call it on the thread that will fill the messages.
  void Reset();

  void Release() override;

  google::protobuf::Arena* arena() { return &arena_; }

 private:
  static constexpr size_t kFirstBlockBytes = 64 * 1024;

  Pool* const pool_;
  std::unique_ptr<char[]> first_block_;  // outlives arena_, declared first
  google::protobuf::Arena arena_;
};

// gRPC's allocator for the Plan method: keeps up to `max_idle` released
// holders for reuse, so that a call whose messages fit in the first block
// allocates no arena block at all.
// Thread-safe; must outlive the server.
class PlanMessages::Pool final : public grpc::MessageAllocator<v1::PlanRequest, v1::Plan> {
 public:
  explicit Pool(size_t max_idle = 64) : max_idle_(max_idle) {}
  ~Pool() override;

  grpc::MessageHolder<v1::PlanRequest, v1::Plan>* AllocateMessages() override;

  // Takes back a released holder (PlanMessages::Release calls it).
  void Return(PlanMessages* messages);

  size_t idle() const;

 private:
  const size_t max_idle_;
  mutable std::mutex mu_;
  std::vector<PlanMessages*> idle_;
};

}  // namespace serenity

#endif  // SERENITY_SERVER_PLAN_MESSAGES_H_
