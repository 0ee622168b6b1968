// A hash set of fixed-width bitsets (scheduled-op signatures), stored back
// to back in fixed-size blocks: far less memory per entry than a container of
// vectors, and growing never copies them. Membership is exact: a hash hit
// compares the whole bitset. Each slot keeps 32 bits of the hash beside the
// index, so probing rarely reads the blocks and growing never rehashes.
#ifndef SERENITY_CORE_SCHEDULE_SIGNATURE_SET_H_
#define SERENITY_CORE_SCHEDULE_SIGNATURE_SET_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

namespace serenity {

// Allocates arrays of 2 MiB and more on 2 MiB boundaries and asks the kernel
// for transparent huge pages there: the set's index is read at random, and
// with 4 KiB pages nearly every probe of a large index also misses the TLB.
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(size_t n);
  void deallocate(T* p, size_t) { std::free(p); }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const HugePageAllocator<U>&) const {
    return false;
  }
};

class SignatureSet {
 public:
  // Every signature has `words` 64-bit words.
  explicit SignatureSet(size_t words);

  // Inserts `signature` (`words` words); false when it was already present.
  bool Insert(const uint64_t* signature);

  // Removes `signature` if present; true when it was.
  bool Erase(const uint64_t* signature);

  // Signatures present (inserted and not erased).
  size_t size() const { return size_ - erased_; }
  // Bytes held by the arena and the index.
  size_t MemoryBytes() const { return blocks_.size() * kBlockEntries * words_ * 8 + slots_.capacity() * 8; }
  // The most bytes the next Insert may hold at once (a new block, and the
  // old and new index while it grows): charge this before inserting.
  size_t BytesForInsert() const {
    const size_t block = (size_ % kBlockEntries == 0 ? 1 : 0) * kBlockEntries * words_ * 8;
    const bool grows = (size_ + 1) * 4 > slots_.size() * 3;
    return blocks_.size() * kBlockEntries * words_ * 8 + block + slots_.capacity() * 8 * (grows ? 3 : 1);
  }
  // Empties the set and releases its memory.
  void Clear();
  // About the bytes one signature of `words` words takes in a large set:
  // its words in the arena and, the index being 3/8 to 3/4 full, 11-21
  // bytes of slots (16 taken).
  static int64_t BytesPerSignature(size_t words) { return static_cast<int64_t>(words) * 8 + 16; }

 private:
  static constexpr size_t kBlockEntries = 1 << 15;

  // A slot whose entry was erased: probing goes on past it, nothing
  // matches it (no entry has index 0), growing drops it.
  static constexpr uint64_t kErased = uint64_t{0xffffffff} << 32;

  uint64_t Hash(const uint64_t* signature) const;
  // The slot holding `signature`, or the empty slot where it would go.
  size_t Find(const uint64_t* signature, uint64_t tag) const;
  void Grow();
  // The stored signature with this index (0-based).
  const uint64_t* Entry(size_t index) const {
    return blocks_[index / kBlockEntries].get() + (index % kBlockEntries) * words_;
  }

  size_t words_;
  size_t size_ = 0;  // entries stored, erased ones included
  size_t erased_ = 0;
  // size_ signatures back to back, kBlockEntries per block.
  std::vector<std::unique_ptr<uint64_t[]>> blocks_;
  int bits_;  // slots_.size() == 1 << bits_
  // 0: empty; else the hash's upper 32 bits, then 1 + the entry's index in
  // the lower 32. The upper hash bits also pick the home slot.
  std::vector<uint64_t, HugePageAllocator<uint64_t>> slots_;
};

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_SIGNATURE_SET_H_
