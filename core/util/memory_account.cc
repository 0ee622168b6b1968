#include "core/util/memory_account.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace serenity {

bool MemoryAccount::TryCharge(int64_t bytes) {
  if (bytes < 0) bytes = 0;
  int64_t used = used_.load(std::memory_order_relaxed);
  do {
    if (limit_ > 0 && (bytes > limit_ || used > limit_ - bytes)) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  const int64_t now = used + bytes;
  if (grow_ && now > granted_.load(std::memory_order_relaxed) && !Cover(now)) {
    used_.fetch_sub(bytes, std::memory_order_relaxed);
    return false;
  }
  int64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return true;
}

bool MemoryAccount::Cover(int64_t used) {
  std::lock_guard<std::mutex> lock(grow_mu_);
  const int64_t granted = granted_.load(std::memory_order_relaxed);
  if (used <= granted) return true;  // another charge's grant covers it
  const int64_t needed = used - granted;
  int64_t step = std::max(needed, kGrowStepBytes);
  if (limit_ > 0) step = std::min(step, limit_ - granted);
  if (step < needed) return false;
  if (!grow_(step)) {
    if (step == needed || !grow_(needed)) return false;
    step = needed;
  }
  granted_.store(granted + step, std::memory_order_relaxed);
  return true;
}

void MemoryAccount::Release(int64_t bytes) {
  if (bytes > 0) used_.fetch_sub(bytes, std::memory_order_relaxed);
}

absl::Status MemoryLimitError(const MemoryAccount* account, int64_t bytes, const std::string& what) {
  return absl::ResourceExhaustedError(absl::StrCat(what, " need ", bytes, " bytes, over the job's memory budget of ",
                                                   account == nullptr ? 0 : account->limit(), " bytes (",
                                                   account == nullptr ? 0 : account->used(), " in use)"));
}

MemoryCharge& MemoryCharge::operator=(MemoryCharge&& other) noexcept {
  if (this != &other) {
    Reset();
    account_ = other.account_;
    bytes_ = other.bytes_;
    other.bytes_ = 0;
  }
  return *this;
}

bool MemoryCharge::TryAdd(int64_t bytes) {
  if (bytes <= 0) return true;
  if (!TryCharge(account_, bytes)) return false;
  bytes_ += bytes;
  return true;
}

bool MemoryCharge::TryResize(int64_t bytes) {
  bytes = std::max<int64_t>(0, bytes);
  if (bytes > bytes_) return TryAdd(bytes - bytes_);
  if (account_ != nullptr) account_->Release(bytes_ - bytes);
  bytes_ = bytes;
  return true;
}

void MemoryCharge::Reset() {
  if (account_ != nullptr && bytes_ > 0) account_->Release(bytes_);
  bytes_ = 0;
}

}  // namespace serenity
