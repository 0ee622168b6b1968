#include "core/schedule/signature_set.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace serenity {
namespace {

constexpr int kInitialBits = 10;
constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace

template <typename T>
T* HugePageAllocator<T>::allocate(size_t n) {
  const size_t bytes = n * sizeof(T);
  const size_t alignment = bytes >= kHugePage ? kHugePage : alignof(std::max_align_t);
  void* p = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  if (p == nullptr) throw std::bad_alloc();
  // Only advice: without huge pages the memory works the same.
  if (bytes >= kHugePage) madvise(p, bytes, MADV_HUGEPAGE);
  return static_cast<T*>(p);
}

template struct HugePageAllocator<uint64_t>;

SignatureSet::SignatureSet(size_t words) : words_(words), bits_(kInitialBits), slots_(size_t{1} << kInitialBits, 0) {}

void SignatureSet::Clear() {
  // Gives the memory back: a search part that waits for its next check
  // should not hold its last memo.
  size_ = 0;
  erased_ = 0;
  std::vector<std::unique_ptr<uint64_t[]>>().swap(blocks_);
  bits_ = kInitialBits;
  decltype(slots_)(size_t{1} << kInitialBits, 0).swap(slots_);
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

size_t SignatureSet::Find(const uint64_t* signature, uint64_t tag) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = static_cast<size_t>(tag >> (32 - bits_));; i = (i + 1) & mask) {
    const uint64_t slot = slots_[i];
    if (slot == 0) return i;
    // The tag settles most mismatches without touching the arena.
    const uint32_t index = static_cast<uint32_t>(slot);
    if (slot >> 32 == tag && index != 0 && std::memcmp(Entry(index - 1), signature, words_ * 8) == 0) return i;
  }
}

bool SignatureSet::Insert(const uint64_t* signature) {
  if ((size_ + 1) * 4 > slots_.size() * 3) Grow();  // at most 3/4 full
  const uint64_t tag = Hash(signature) >> 32;
  const size_t i = Find(signature, tag);
  if (slots_[i] != 0) return false;
  if (size_ % kBlockEntries == 0) blocks_.emplace_back(new uint64_t[kBlockEntries * words_]);
  std::memcpy(blocks_.back().get() + (size_ % kBlockEntries) * words_, signature, words_ * 8);
  slots_[i] = tag << 32 | static_cast<uint32_t>(++size_);
  return true;
}

bool SignatureSet::Erase(const uint64_t* signature) {
  const size_t i = Find(signature, Hash(signature) >> 32);
  if (slots_[i] == 0) return false;
  slots_[i] = kErased;
  ++erased_;
  return true;
}

void SignatureSet::Grow() {
  ++bits_;
  decltype(slots_) slots(size_t{1} << bits_, 0);
  const size_t mask = slots.size() - 1;
  for (uint64_t slot : slots_) {
    if (slot == 0 || slot == kErased) continue;
    size_t i = static_cast<size_t>((slot >> 32) >> (32 - bits_));
    while (slots[i] != 0) i = (i + 1) & mask;
    slots[i] = slot;
  }
  slots_.swap(slots);
}

}  // namespace serenity
