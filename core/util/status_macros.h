// Small helpers for propagating absl::Status through functions that return
// absl::Status or absl::StatusOr<T>. Debian's abseil ships no status_macros.h.
#ifndef SERENITY_CORE_UTIL_STATUS_MACROS_H_
#define SERENITY_CORE_UTIL_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SERENITY_CONCAT_INNER_(a, b) a##b
#define SERENITY_CONCAT_(a, b) SERENITY_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status); returns it from the enclosing function
// when it is not OK.
#define RETURN_IF_ERROR(expr)                            \
  do {                                                   \
    ::absl::Status serenity_status_ = (expr);            \
    if (!serenity_status_.ok()) return serenity_status_; \
  } while (0)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status,
// otherwise moves the value into `lhs` (which may be a declaration).
#define ASSIGN_OR_RETURN(lhs, rexpr) ASSIGN_OR_RETURN_IMPL_(SERENITY_CONCAT_(serenity_statusor_, __LINE__), lhs, rexpr)

#define ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                           \
  if (!statusor.ok()) return statusor.status();      \
  lhs = std::move(statusor).value()

#endif  // SERENITY_CORE_UTIL_STATUS_MACROS_H_
