// The version of this build, for --version and the server's build-info
// metric.
#ifndef SERENITY_COMMON_VERSION_H_
#define SERENITY_COMMON_VERSION_H_

#include <string>

namespace serenity {

// The project's version, e.g. "0.4.0" (CMakeLists.txt's project VERSION).
const char* SerenityVersion();

// The commit of the checkout at build time (12 hex digits), or "unknown".
const char* SerenityCommit();

// "<program> <version> (commit <commit>)", the line --version prints.
std::string VersionLine(const std::string& program);

}  // namespace serenity

#endif  // SERENITY_COMMON_VERSION_H_
