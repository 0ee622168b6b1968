#include "server/memory_admission.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace serenity {

struct MemoryAdmission::Waiter {
  enum class State { kWaiting, kGranted, kExpired };

  int64_t bytes = 0;
  absl::Time deadline;
  // Async waiters only (owned by the line, deleted when taken out of it).
  WaitId id = 0;
  std::function<void(absl::StatusOr<Ticket>)> done;
  // Blocking waiters only: set by whoever takes them out of the line.
  State state = State::kWaiting;

  bool async() const { return id != 0; }
};

struct MemoryAdmission::Reply {
  std::function<void(absl::StatusOr<Ticket>)> done;
  absl::StatusOr<Ticket> result;
};

// --- Ticket ---

MemoryAdmission::Ticket::Ticket(Ticket&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

MemoryAdmission::Ticket& MemoryAdmission::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = std::exchange(other.owner_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

bool MemoryAdmission::Ticket::Resize(int64_t new_bytes) {
  if (new_bytes < 0 || new_bytes > bytes_) return false;
  const int64_t freed = bytes_ - new_bytes;
  bytes_ = new_bytes;
  if (freed > 0 && owner_ != nullptr) owner_->Free(freed);
  return true;
}

bool MemoryAdmission::Ticket::TryGrow(int64_t more) {
  if (more < 0 || owner_ == nullptr) return false;
  if (more == 0) return true;
  if (!owner_->TryTake(bytes_, more)) return false;
  bytes_ += more;
  return true;
}

void MemoryAdmission::Ticket::Release() {
  MemoryAdmission* owner = std::exchange(owner_, nullptr);
  const int64_t bytes = std::exchange(bytes_, 0);
  if (owner != nullptr && bytes > 0) owner->Free(bytes);
}

// --- MemoryAdmission ---

MemoryAdmission::MemoryAdmission(int64_t capacity_bytes, int64_t max_job_bytes)
    : capacity_(std::max<int64_t>(capacity_bytes, 1)),
      max_job_bytes_(max_job_bytes <= 0 ? capacity_ : std::min(max_job_bytes, capacity_)) {}

MemoryAdmission::~MemoryAdmission() {
  std::deque<Reply> replies;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Waiter* w : line_) {
      if (!w->async()) continue;  // contract: none
      replies.push_back({std::move(w->done), absl::UnavailableError("the server is shutting down")});
      delete w;
    }
    line_.clear();
  }
  Send(&replies);
}

absl::Status MemoryAdmission::CheckFits(int64_t bytes) const {
  if (bytes < 0) return absl::InvalidArgumentError(absl::StrCat("a job cannot need ", bytes, " bytes"));
  if (bytes <= max_job_bytes_) return absl::OkStatus();
  const bool job_limit = max_job_bytes_ < capacity_;
  return absl::FailedPreconditionError(
      absl::StrCat("the request needs an estimated ", bytes, " bytes of memory (", (bytes + (1 << 20) - 1) >> 20,
                   " MB) to plan, more than the server's memory limit ", job_limit ? "for one job" : "",
                   job_limit ? " " : "", "of ", max_job_bytes_, " bytes (", max_job_bytes_ >> 20, " MB, ",
                   job_limit ? "--max-job-mb" : "--max-server-mb", "); send a smaller graph"));
}

absl::StatusOr<MemoryAdmission::Ticket> MemoryAdmission::TryAdmit(int64_t bytes) {
  if (absl::Status fits = CheckFits(bytes); !fits.ok()) return fits;
  if (!TryTake(0, bytes)) {
    std::lock_guard<std::mutex> lock(mu_);
    return Busy();
  }
  return Ticket(this, bytes);
}

bool MemoryAdmission::TryTake(int64_t held_by_ticket, int64_t more) {
  std::lock_guard<std::mutex> lock(mu_);
  if (held_by_ticket > max_job_bytes_ - more || held_ > capacity_ - more) return false;
  held_ += more;
  return true;
}

absl::Status MemoryAdmission::Busy() const {
  // Says nothing of how much others hold: callers may be other tenants.
  return absl::ResourceExhaustedError("the server is busy: its memory is held by running jobs; retry later");
}

void MemoryAdmission::Remove(const Waiter* waiter) { line_.erase(std::find(line_.begin(), line_.end(), waiter)); }

void MemoryAdmission::Pump(absl::Time now, std::deque<Reply>* replies) {
  bool signal = false;
  // Refuse whoever is past the deadline, wherever in the line.
  for (auto it = line_.begin(); it != line_.end();) {
    Waiter* w = *it;
    if (w->deadline > now) {
      ++it;
      continue;
    }
    it = line_.erase(it);
    if (w->async()) {
      replies->push_back({std::move(w->done), Busy()});
      delete w;
    } else {
      w->state = Waiter::State::kExpired;
      signal = true;
    }
  }
  // Admit from the head while the head fits: nobody overtakes it.
  while (!line_.empty() && held_ + line_.front()->bytes <= capacity_) {
    Waiter* w = line_.front();
    line_.pop_front();
    held_ += w->bytes;
    if (w->async()) {
      replies->push_back({std::move(w->done), Ticket(this, w->bytes)});
      delete w;
    } else {
      w->state = Waiter::State::kGranted;
      signal = true;
    }
  }
  if (signal) changed_.notify_all();
}

void MemoryAdmission::Send(std::deque<Reply>* replies) {
  for (Reply& reply : *replies) reply.done(std::move(reply.result));
  replies->clear();
}

void MemoryAdmission::Free(int64_t bytes) {
  std::deque<Reply> replies;
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_ -= bytes;
    Pump(absl::Now(), &replies);
  }
  Send(&replies);
}

absl::StatusOr<MemoryAdmission::Ticket> MemoryAdmission::Admit(int64_t bytes, absl::Time deadline,
                                                               const std::atomic<bool>* cancelled) {
  if (absl::Status fits = CheckFits(bytes); !fits.ok()) return fits;
  constexpr absl::Duration kPoll = absl::Milliseconds(50);
  auto is_cancelled = [cancelled] { return cancelled != nullptr && cancelled->load(std::memory_order_acquire); };
  std::deque<Reply> replies;
  absl::StatusOr<Ticket> result = absl::UnknownError("unset");
  {
    std::unique_lock<std::mutex> lock(mu_);
    Pump(absl::Now(), &replies);
    if (line_.empty() && held_ + bytes <= capacity_) {
      held_ += bytes;
      result = Ticket(this, bytes);
    } else if (is_cancelled()) {
      result = absl::CancelledError("the call was cancelled while waiting for memory");
    } else if (deadline <= absl::Now()) {
      result = Busy();
    } else {
      Waiter w;
      w.bytes = bytes;
      w.deadline = deadline;
      line_.push_back(&w);
      bool left = false;  // took itself out of the line
      while (w.state == Waiter::State::kWaiting) {
        if (is_cancelled()) {
          Remove(&w);
          Pump(absl::Now(), &replies);  // the waiters behind may fit now
          result = absl::CancelledError("the call was cancelled while waiting for memory");
          left = true;
          break;
        }
        // Wake at the deadline, within kPoll when there is a flag to check,
        // and at least daily (a far deadline overflows no clock).
        const absl::Time now = absl::Now();
        const absl::Time wake = std::min(deadline, now + (cancelled != nullptr ? kPoll : absl::Hours(24)));
        changed_.wait_for(lock, absl::ToChronoNanoseconds(wake - now));
        if (w.state == Waiter::State::kWaiting && absl::Now() >= deadline) {
          Remove(&w);
          Pump(absl::Now(), &replies);
          result = Busy();
          left = true;
          break;
        }
      }
      if (!left) {
        if (w.state == Waiter::State::kGranted) {
          result = Ticket(this, bytes);
        } else {
          result = Busy();
        }
      }
    }
  }
  Send(&replies);
  return result;
}

MemoryAdmission::WaitId MemoryAdmission::AdmitAsync(int64_t bytes, absl::Time deadline,
                                                    std::function<void(absl::StatusOr<Ticket>)> done) {
  if (absl::Status fits = CheckFits(bytes); !fits.ok()) {
    done(fits);
    return 0;
  }
  std::deque<Reply> replies;
  WaitId id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Pump(absl::Now(), &replies);
    if (line_.empty() && held_ + bytes <= capacity_) {
      held_ += bytes;
      replies.push_back({std::move(done), Ticket(this, bytes)});
    } else if (deadline <= absl::Now()) {
      replies.push_back({std::move(done), Busy()});
    } else {
      Waiter* w = new Waiter;
      w->bytes = bytes;
      w->deadline = deadline;
      w->id = id = next_id_++;
      w->done = std::move(done);
      line_.push_back(w);
    }
  }
  Send(&replies);
  return id;
}

bool MemoryAdmission::CancelWait(WaitId id) {
  if (id == 0) return false;
  std::deque<Reply> replies;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(line_.begin(), line_.end(), [id](const Waiter* w) { return w->id == id; });
    if (it == line_.end()) return false;
    Waiter* w = *it;
    line_.erase(it);
    replies.push_back({std::move(w->done), absl::CancelledError("the call was cancelled while waiting for memory")});
    delete w;
    Pump(absl::Now(), &replies);
  }
  Send(&replies);
  return true;
}

int MemoryAdmission::ExpireWaiters(absl::Time now) {
  std::deque<Reply> replies;
  int refused = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Waiter* w : line_) refused += w->deadline <= now ? 1 : 0;
    Pump(now, &replies);
  }
  Send(&replies);
  return refused;
}

void MemoryAdmission::WakeWaiters() {
  std::lock_guard<std::mutex> lock(mu_);
  changed_.notify_all();
}

int64_t MemoryAdmission::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

int MemoryAdmission::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(line_.size());
}

// --- Memory limits ---

namespace {

constexpr int64_t kNoLimit = int64_t{1} << 60;

bool ReadFile(const std::string& path, std::string* text) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *text = ss.str();
  return true;
}

// A cgroup limit file: a byte count, or "max". 0 for none.
int64_t CgroupLimit(const std::string& path) {
  std::string text;
  if (!ReadFile(path, &text)) return 0;
  int64_t bytes;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &bytes)) return 0;  // "max" or junk
  if (bytes <= 0 || bytes >= kNoLimit) return 0;
  return bytes;
}

int64_t MemTotal(const std::string& path) {
  std::string text;
  if (!ReadFile(path, &text)) return 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, "MemTotal:")) continue;
    line = absl::StripAsciiWhitespace(line);
    int64_t kb;
    if (!absl::ConsumeSuffix(&line, "kB")) return 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kb) || kb <= 0 || kb >= kNoLimit / 1024) return 0;
    return kb * 1024;
  }
  return 0;
}

}  // namespace

int64_t MemoryAvailableBytes(const MemoryLimitFiles& files) {
  int64_t cgroup = CgroupLimit(files.cgroup_v2);
  if (cgroup == 0) cgroup = CgroupLimit(files.cgroup_v1);
  const int64_t total = MemTotal(files.meminfo);
  if (cgroup == 0) return total;
  if (total == 0) return cgroup;
  return std::min(cgroup, total);
}

int64_t DefaultMemoryLimitBytes(const MemoryLimitFiles& files) { return MemoryAvailableBytes(files) / 4 * 3; }

}  // namespace serenity
