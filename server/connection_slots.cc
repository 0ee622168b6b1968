#include "server/connection_slots.h"

#include <algorithm>
#include <deque>
#include <vector>

namespace serenity {
namespace {

// The grants still to announce by the outermost Release running on this
// thread (null outside one). A waiter that releases a slot from its
// OnSlotGranted, as a cancelled stream does, adds the next grant here
// instead of recursing: a long line of such waiters unwinds in a loop.
thread_local std::deque<ConnectionSlots::Waiter*>* pending_grants = nullptr;

}  // namespace

bool ConnectionSlots::TryAcquire(const std::string& connection) { return AcquireOrWait(connection, nullptr); }

bool ConnectionSlots::AcquireOrWait(const std::string& connection, Waiter* waiter) {
  std::lock_guard<std::mutex> lock(mu_);
  // A new entry starts with no slot held, so a refused call never leaves an
  // empty entry behind.
  Connection& entry = connections_[connection];
  if (entry.held < per_connection_) {
    ++entry.held;
    return true;
  }
  if (waiter != nullptr) entry.waiters.push_back(waiter);
  return false;
}

bool ConnectionSlots::CancelWait(const std::string& connection, Waiter* waiter) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = connections_.find(connection);
  if (it == connections_.end()) return false;
  std::deque<Waiter*>& waiters = it->second.waiters;
  auto found = std::find(waiters.begin(), waiters.end(), waiter);
  if (found == waiters.end()) return false;
  waiters.erase(found);
  return true;
}

void ConnectionSlots::Release(const std::string& connection, int64_t count) {
  if (count <= 0) return;
  std::vector<Waiter*> granted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = connections_.find(connection);
    if (it == connections_.end()) return;
    Connection& entry = it->second;
    // A freed slot passes straight to the first waiter: `held` stays.
    while (count > 0 && !entry.waiters.empty()) {
      granted.push_back(entry.waiters.front());
      entry.waiters.pop_front();
      --count;
    }
    entry.held = std::max<int64_t>(0, entry.held - count);
    if (entry.held == 0 && entry.waiters.empty()) connections_.erase(it);
  }
  // Outside the lock: a waiter may release (or take) slots in its callback.
  if (pending_grants != nullptr) {
    pending_grants->insert(pending_grants->end(), granted.begin(), granted.end());
    return;
  }
  std::deque<Waiter*> pending(granted.begin(), granted.end());
  pending_grants = &pending;
  while (!pending.empty()) {
    Waiter* waiter = pending.front();
    pending.pop_front();
    waiter->OnSlotGranted();
  }
  pending_grants = nullptr;
}

int64_t ConnectionSlots::Held(const std::string& connection) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = connections_.find(connection);
  return it == connections_.end() ? 0 : it->second.held;
}

size_t ConnectionSlots::Connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return connections_.size();
}

size_t ConnectionSlots::Waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t waiting = 0;
  for (const auto& [name, entry] : connections_) waiting += entry.waiters.size();
  return waiting;
}

}  // namespace serenity
