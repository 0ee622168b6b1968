#include "server/request_memo.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace serenity {

std::string RequestMemoKey(const v1::PlanRequest& request, bool score_only, absl::string_view tenant) {
  // Sized once up front: growing the string as the stream asks for room
  // cost more than the serialization itself. The tenant and its length
  // come first: "<mode><length>:<tenant><request>".
  const size_t size = request.ByteSizeLong();
  const std::string head = absl::StrCat(score_only ? "s" : "p", tenant.size(), ":", tenant);
  std::string key(head.size() + size, '\0');
  std::copy(head.begin(), head.end(), key.begin());
  {
    google::protobuf::io::ArrayOutputStream stream(key.data() + head.size(), static_cast<int>(size));
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
  // The reply at protobuf's estimate of its memory (SpaceUsedLong), not its
  // serialized size, which is several times smaller.
  const int64_t bytes = static_cast<int64_t>(2 * entry->request.capacity() + entry->reply.SpaceUsedLong() +
                                             entry->key.graph.capacity() + entry->key.options.capacity() +
                                             entry->key.id.capacity() + entry->cache_id.capacity() +
                                             sizeof(MemoizedReply) + 2 * sizeof(Slot) + 64);
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
