#include "common/version.h"

#include "absl/strings/str_cat.h"
#include "serenity_commit.h"  // generated: SERENITY_GIT_COMMIT

namespace serenity {

const char* SerenityVersion() { return SERENITY_VERSION_STRING; }

const char* SerenityCommit() { return SERENITY_GIT_COMMIT; }

std::string VersionLine(const std::string& program) {
  return absl::StrCat(program, " ", SerenityVersion(), " (commit ", SerenityCommit(), ")");
}

}  // namespace serenity
