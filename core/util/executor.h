// How core/ runs independent work in parallel without starting threads of
// its own: the caller passes an Executor (the server's pool, the CLI's small
// pool), or none to run everything on the calling thread.
#ifndef SERENITY_CORE_UTIL_EXECUTOR_H_
#define SERENITY_CORE_UTIL_EXECUTOR_H_

#include <functional>
#include <vector>

namespace serenity {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs every task, possibly concurrently, and returns when all finished.
  // Tasks must not throw.
  virtual void RunAll(std::vector<std::function<void()>>& tasks) = 0;
};

// Runs `tasks` on `executor`, or one after another here when it is null.
inline void RunAll(Executor* executor, std::vector<std::function<void()>>& tasks) {
  if (executor != nullptr) {
    executor->RunAll(tasks);
  } else {
    for (std::function<void()>& task : tasks) task();
  }
}

}  // namespace serenity

#endif  // SERENITY_CORE_UTIL_EXECUTOR_H_
