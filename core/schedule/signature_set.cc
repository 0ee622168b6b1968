#include "core/schedule/signature_set.h"

#include <cstring>

namespace serenity {

SignatureSet::SignatureSet(size_t words) : words_(words), slots_(1024, 0) {}

void SignatureSet::Clear() {
  size_ = 0;
  arena_.clear();
  slots_.assign(1024, 0);
}

uint64_t SignatureSet::Hash(const uint64_t* signature) const {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ words_;
  for (size_t i = 0; i < words_; ++i) {
    h ^= signature[i] + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  }
  return h;
}

bool SignatureSet::Insert(const uint64_t* signature) {
  if ((size_ + 1) * 2 > slots_.size()) Grow();
  const size_t mask = slots_.size() - 1;
  for (size_t i = Hash(signature) & mask;; i = (i + 1) & mask) {
    uint32_t slot = slots_[i];
    if (slot == 0) {
      arena_.insert(arena_.end(), signature, signature + words_);
      slots_[i] = static_cast<uint32_t>(++size_);
      return true;
    }
    if (std::memcmp(&arena_[(slot - 1) * words_], signature, words_ * 8) == 0) return false;
  }
}

void SignatureSet::Grow() {
  std::vector<uint32_t> slots(slots_.size() * 2, 0);
  const size_t mask = slots.size() - 1;
  for (uint32_t slot : slots_) {
    if (slot == 0) continue;
    size_t i = Hash(&arena_[(slot - 1) * words_]) & mask;
    while (slots[i] != 0) i = (i + 1) & mask;
    slots[i] = slot;
  }
  slots_.swap(slots);
}

}  // namespace serenity
