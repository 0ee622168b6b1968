// Per-connection job slots: at most `per_connection` jobs (Plan calls and
// Score candidates alike) held at once by the calls of one connection. A
// unary call that finds its connection full is refused; a stream waits in
// line for the next slot its connection frees (first come, first served).
// No gRPC here: a connection is whatever string names it (gRPC's peer).
#ifndef SERENITY_SERVER_CONNECTION_SLOTS_H_
#define SERENITY_SERVER_CONNECTION_SLOTS_H_

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace serenity {

class ConnectionSlots {
 public:
  // Something that waits for a slot: a paused stream.
  class Waiter {
   public:
    // The waiter now holds one slot of its connection (it must Release it
    // once done, even if it no longer wants it). Called without any lock of
    // ConnectionSlots held, on the thread of the call that freed the slot.
    virtual void OnSlotGranted() = 0;

   protected:
    ~Waiter() = default;
  };

  // `per_connection` >= 1.
  explicit ConnectionSlots(int64_t per_connection) : per_connection_(per_connection) {}

  int64_t per_connection() const { return per_connection_; }

  // Takes a slot of `connection` if one is free; false when all are held.
  bool TryAcquire(const std::string& connection);

  // Takes a slot (true), or, when all are held, puts `waiter` in line for
  // the next one freed (false: `waiter->OnSlotGranted()` follows unless
  // CancelWait removes it first). A waiter waits at most once at a time.
  bool AcquireOrWait(const std::string& connection, Waiter* waiter);

  // Takes `waiter` out of the line: true if it was still waiting; false if
  // its slot was already granted (its OnSlotGranted has run or is coming).
  bool CancelWait(const std::string& connection, Waiter* waiter);

  // Frees `count` slots of `connection`, each going to the first waiter in
  // line if any, whose OnSlotGranted runs on this thread before Release
  // returns; when Release is called from an OnSlotGranted, the grants it
  // makes are announced after that callback returns, not inside it.
  void Release(const std::string& connection, int64_t count = 1);

  // Slots of `connection` held now, connections with slots held or
  // waiters, and waiters of all connections (for tests).
  int64_t Held(const std::string& connection) const;
  size_t Connections() const;
  size_t Waiting() const;

 private:
  struct Connection {
    int64_t held = 0;
    std::deque<Waiter*> waiters;  // only while held == per_connection_
  };

  const int64_t per_connection_;
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, Connection> connections_;
};

}  // namespace serenity

#endif  // SERENITY_SERVER_CONNECTION_SLOTS_H_
