#!/usr/bin/env bash
# The whole test suite: installs missing packages, builds, and runs every
# test through ctest (unit tests and the integration tests that start the
# real server), then again under the sanitizers. Needs ../shared/ beside this
# repository.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
ctest --test-dir "${SERENITY_BUILD_DIR:-build}" --output-on-failure -j"$(nproc)" --timeout 600

# The same suite again under AddressSanitizer and UndefinedBehaviorSanitizer
# (a separate build in build-asan), without the slowest property tests, which
# the sanitizers make ten times slower. SERENITY_SKIP_SANITIZERS=1 skips it.
if [ "${SERENITY_SKIP_SANITIZERS:-0}" != 1 ]; then
  SLOW="EqualsBruteForce|PruningRules|MatchesProvenOptima|SharedModelsVerifies|PlansSharedModels"
  SLOW="$SLOW|SearchEndsBefore|TrafficEstimates|EvaluatesTheCallers"
  SERENITY_BUILD_DIR=build-asan scripts/build.sh -DSERENITY_SANITIZE=ON
  ctest --test-dir build-asan --output-on-failure -j"$(nproc)" --timeout 600 -E "$SLOW"
fi
