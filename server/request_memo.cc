#include "server/request_memo.h"

#include <utility>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace serenity {

std::string RequestMemoKey(const v1::PlanRequest& request, bool score_only) {
  // Sized once up front: growing the string as the stream asks for room
  // cost more than the serialization itself.
  const size_t size = request.ByteSizeLong();
  std::string key(1 + size, score_only ? 's' : 'p');
  {
    google::protobuf::io::ArrayOutputStream stream(key.data() + 1, static_cast<int>(size));
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    request.SerializeWithCachedSizes(&coded);
  }
  return key;
}

std::shared_ptr<const MemoizedReply> RequestMemo::Find(absl::string_view request_key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(request_key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->entry;
}

void RequestMemo::Put(std::shared_ptr<const MemoizedReply> entry) {
  const int64_t bytes = static_cast<int64_t>(2 * entry->request.size() + entry->reply.ByteSizeLong() +
                                             entry->key.graph.size() + entry->key.options.size() +
                                             sizeof(MemoizedReply) + 2 * sizeof(Slot));
  if (bytes > max_bytes_) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(entry->request);
  if (it != index_.end()) {
    bytes_ -= it->second->bytes;
    auto slot = it->second;
    index_.erase(it);
    lru_.erase(slot);
  }
  const absl::string_view view = entry->request;
  lru_.push_front(Slot{std::move(entry), bytes});
  index_[view] = lru_.begin();
  bytes_ += bytes;
  while (bytes_ > max_bytes_ && !lru_.empty()) {
    bytes_ -= lru_.back().bytes;
    index_.erase(absl::string_view(lru_.back().entry->request));
    lru_.pop_back();
  }
}

int64_t RequestMemo::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

int64_t RequestMemo::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(lru_.size());
}

}  // namespace serenity
