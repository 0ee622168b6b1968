#include "server/request_memo.h"

#include <algorithm>
#include <memory>
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
  const std::shared_ptr<const MemoizedReply>* entry = lru_.Get(request_key);
  return entry == nullptr ? nullptr : *entry;
}

void RequestMemo::Put(std::shared_ptr<const MemoizedReply> entry) {
  // The reply at protobuf's estimate of its memory (SpaceUsedLong), not its
  // serialized size, which is several times smaller.
  // The LRU's own part per entry, estimated as before it was a ByteLru.
  constexpr int64_t kSlotBytes = 2 * (sizeof(std::shared_ptr<const MemoizedReply>) + sizeof(int64_t));
  const int64_t bytes =
      static_cast<int64_t>(2 * entry->request.capacity() + entry->reply.SpaceUsedLong() + entry->key.graph.capacity() +
                           entry->key.options.capacity() + entry->key.id.capacity() + entry->cache_id.capacity() +
                           sizeof(MemoizedReply) + kSlotBytes + 64);
  const absl::string_view key = entry->request;
  std::lock_guard<std::mutex> lock(mu_);
  lru_.Put(key, std::move(entry), bytes);
}

int64_t RequestMemo::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.bytes();
}

int64_t RequestMemo::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.entries();
}

}  // namespace serenity
