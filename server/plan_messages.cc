#include "server/plan_messages.h"

namespace serenity {
namespace {

google::protobuf::ArenaOptions FirstBlock(char* block, size_t bytes) {
  google::protobuf::ArenaOptions options;
  options.initial_block = block;
  options.initial_block_size = bytes;
  return options;
}

}  // namespace

PlanMessages::PlanMessages(Pool* pool)
    : pool_(pool), first_block_(new char[kFirstBlockBytes]), arena_(FirstBlock(first_block_.get(), kFirstBlockBytes)) {
  Reset();
}

void PlanMessages::Free() {
  set_request(nullptr);
  set_response(nullptr);
  arena_.Reset();
}

void PlanMessages::Reset() {
  arena_.Reset();
  set_request(google::protobuf::Arena::CreateMessage<v1::PlanRequest>(&arena_));
  set_response(google::protobuf::Arena::CreateMessage<v1::Plan>(&arena_));
}

void PlanMessages::Release() { pool_->Return(this); }

PlanMessages::Pool::~Pool() {
  for (PlanMessages* messages : idle_) delete messages;
}

grpc::MessageHolder<v1::PlanRequest, v1::Plan>* PlanMessages::Pool::AllocateMessages() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      PlanMessages* messages = idle_.back();
      idle_.pop_back();
      messages->Reset();  // on this thread, which gRPC parses the request on
      return messages;
    }
  }
  return new PlanMessages(this);
}

void PlanMessages::Pool::Return(PlanMessages* messages) {
  // Freed outside the lock: it runs the messages' destructors.
  messages->Free();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (idle_.size() < max_idle_) {
      idle_.push_back(messages);
      return;
    }
  }
  delete messages;
}

size_t PlanMessages::Pool::idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  return idle_.size();
}

}  // namespace serenity
