#!/usr/bin/env bash
# The whole test suite: installs missing packages, builds, and runs every
# test through ctest (unit tests and the integration tests that start the
# real server), then again under the sanitizers. Needs ../shared/ beside this
# checkout: the benchmark models and arena instances that many tests read
# (not part of this repository).
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
  SLOW="$SLOW|SearchEndsBefore|TrafficEstimates|EvaluatesTheCallers|RestartAndClimb"
  # -O1: half the compile time of -O3, and sanitizer reports stay readable.
  SERENITY_BUILD_DIR=build-asan scripts/build.sh -DSERENITY_SANITIZE=ON -DCMAKE_CXX_FLAGS_RELEASE=-O1
  ctest --test-dir build-asan --output-on-failure -j"$(nproc)" --timeout 600 -E "$SLOW"
fi

# The concurrent parts (job runner, thread pool, plan cache and backend, log,
# per-connection job slots, the Plan calls' message pool, memory admission
# and the job's memory account)
# under ThreadSanitizer, in build-tsan. Only these tests: the Debian gRPC and
# protobuf libraries are not instrumented, so TSan on the whole server would
# report their internals. SERENITY_SKIP_SANITIZERS=1 skips it too.
if [ "${SERENITY_SKIP_SANITIZERS:-0}" != 1 ]; then
  TSAN_TESTS=(job_runner_test thread_pool_test log_test scheduling_backend_test connection_slots_test
              plan_messages_test memory_admission_test memory_account_test)
  if [ ! -f build-tsan/build.ninja ]; then
    cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSERENITY_TSAN=ON >/dev/null
  fi
  cmake --build build-tsan -j"$(nproc)" --target "${TSAN_TESTS[@]}"
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    ctest --test-dir build-tsan --output-on-failure -j"$(nproc)" --timeout 600 \
    -R "^(JobRunnerTest|ThreadPoolTest|LogTest|SchedulingBackendTest|ConnectionSlotsTest|PlanMessagesTest|MemoryAdmissionTest|MemoryLimitTest|MemoryLimitRealTest|MemoryAccountTest)\."
fi

# The libFuzzer targets (clang, ASan+UBSan, in build-fuzz) for a bounded time
# each on seed corpora built from the benchmark models in ../shared and
# fuzz/regressions; fails when
# any target crashes. SERENITY_FUZZ_SECONDS sets the time per target
# (default 20), SERENITY_SKIP_FUZZ=1 skips it. The suite fuzzes from a fixed
# seed (SERENITY_FUZZ_ARGS, default -seed=1), so that a run is repeatable up
# to how far it gets in the time; scripts/fuzz.sh alone explores at random.
if [ "${SERENITY_SKIP_FUZZ:-0}" != 1 ]; then
  SERENITY_FUZZ_ARGS="${SERENITY_FUZZ_ARGS:--seed=1}" scripts/fuzz.sh "${SERENITY_FUZZ_SECONDS:-20}"
fi
