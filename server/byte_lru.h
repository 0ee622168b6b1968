// A least-recently-used map bounded by bytes: each entry is counted at the
// bytes its caller says it holds, and beyond the bound the least recently
// used entries go. Entries may belong to owners (a plan cache's tenants)
// whose entries together may hold at most a share of the bound: beyond it
// the owner's own least recently used entries go first, so one owner cannot
// flush the others'. Without owners (all entries of the owner "") and with
// the share left at the whole bound, it is a plain byte-bounded LRU.
//
// Not thread-safe: the caller locks. Keys may be views (absl::string_view)
// of bytes their value owns: an entry's key is dropped with its value.
#ifndef SERENITY_SERVER_BYTE_LRU_H_
#define SERENITY_SERVER_BYTE_LRU_H_

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <list>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"

namespace serenity {

template <typename Key, typename Value>
class ByteLru {
 public:
  // `max_bytes` bounds what all entries hold (0: nothing is kept);
  // `max_bytes_per_owner` (0, or above max_bytes: max_bytes) what the
  // entries of one owner hold.
  explicit ByteLru(int64_t max_bytes, int64_t max_bytes_per_owner = 0)
      : max_bytes_(max_bytes),
        max_bytes_per_owner_(max_bytes_per_owner > 0 ? std::min(max_bytes_per_owner, max_bytes) : max_bytes) {}

  ByteLru(const ByteLru&) = delete;
  ByteLru& operator=(const ByteLru&) = delete;

  // The value under `key`, marked most recently used (among all entries and
  // among its owner's), or null. Valid until the next Put or Erase.
  const Value* Get(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    const typename EntryList::iterator entry = it->second;
    lru_.splice(lru_.begin(), lru_, entry);
    Owner& owner = owners_.find(entry->owner)->second;
    owner.order.splice(owner.order.begin(), owner.order, entry->owner_position);
    return &entry->value;
  }

  // Stores `value` under `key` for `owner`, counted as `bytes`, as the most
  // recently used entry, replacing the entry of an equal key. Then, while
  // the owner holds more than its share, its own least recently used
  // entries go (never the new one), and while all entries hold more than
  // max_bytes, the least recently used ones. An entry larger than an
  // owner's share is not kept, and the entry it would have replaced stays:
  // false then.
  bool Put(const Key& key, Value value, int64_t bytes, const std::string& owner = "") {
    if (bytes > max_bytes_per_owner_) return false;
    auto it = index_.find(key);
    if (it != index_.end()) EraseEntry(it->second);
    lru_.push_front(Entry{key, std::move(value), bytes, owner, {}});
    index_.emplace(lru_.front().key, lru_.begin());
    bytes_ += bytes;
    // `mine` stays valid: node_hash_map's nodes do not move, and the owner
    // keeps its new entry.
    Owner& mine = owners_[owner];
    mine.order.push_front(lru_.begin());
    lru_.begin()->owner_position = mine.order.begin();
    mine.bytes += bytes;
    while (mine.bytes > max_bytes_per_owner_ && mine.order.size() > 1) EraseEntry(mine.order.back());
    while (bytes_ > max_bytes_ && !lru_.empty()) EraseEntry(std::prev(lru_.end()));
    return true;
  }

  // Drops the entry under `key`; false when there is none.
  bool Erase(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    EraseEntry(it->second);
    return true;
  }

  // What all entries hold, and how many there are.
  int64_t bytes() const { return bytes_; }
  int64_t entries() const { return static_cast<int64_t>(lru_.size()); }
  // What the entries of `owner` hold.
  int64_t bytes_of(const std::string& owner) const {
    auto it = owners_.find(owner);
    return it == owners_.end() ? 0 : it->second.bytes;
  }

 private:
  struct Entry;
  using EntryList = std::list<Entry>;
  struct Entry {
    Key key;
    Value value;
    int64_t bytes = 0;
    std::string owner;
    typename std::list<typename EntryList::iterator>::iterator owner_position;  // in its owner's order
  };
  // One owner's entries, most recently used first, and what they hold.
  struct Owner {
    std::list<typename EntryList::iterator> order;
    int64_t bytes = 0;
  };

  void EraseEntry(typename EntryList::iterator entry) {
    bytes_ -= entry->bytes;
    auto owner = owners_.find(entry->owner);
    owner->second.bytes -= entry->bytes;
    owner->second.order.erase(entry->owner_position);
    if (owner->second.order.empty()) owners_.erase(owner);
    index_.erase(entry->key);  // before the entry: the key may be a view of its value
    lru_.erase(entry);
  }

  const int64_t max_bytes_;
  const int64_t max_bytes_per_owner_;
  EntryList lru_;  // most recently used first
  absl::flat_hash_map<Key, typename EntryList::iterator> index_;
  int64_t bytes_ = 0;
  absl::node_hash_map<std::string, Owner> owners_;
};

}  // namespace serenity

#endif  // SERENITY_SERVER_BYTE_LRU_H_
