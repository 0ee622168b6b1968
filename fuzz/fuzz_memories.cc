// libFuzzer target: bytes -> a small placement problem (up to 48 buffers,
// 1-4 memories, pins) -> AssignMemories (issue 18) -> an independent check
// of every placement it returns; a refusal must be InvalidArgument or
// FailedPrecondition.
//
// Layout: byte 0 memories (1 + b % 4), byte 1 alignment exponents, then per
// memory 2 bytes of capacity (x 64, so up to 4 MB), then per buffer 6
// bytes: size (2 bytes), first step, length, pin memory (0: none), pin
// offset (0: none, else (b - 1) x 64).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/arena/memories.h"

namespace {

constexpr size_t kMaxBuffers = 48;

[[noreturn]] void Fail(const char* what, size_t i) {
  std::fprintf(stderr, "AssignMemories: %s (buffer %zu)\n", what, i);
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  size_t at = 0;
  const int num_memories = 1 + data[at++] % 4;
  const uint8_t exponents = data[at++];
  std::vector<serenity::MemorySpace> memories;
  for (int m = 0; m < num_memories; ++m) {
    if (at + 2 > size) return 0;
    const int64_t capacity = (int64_t{data[at]} << 8 | data[at + 1]) * 64;
    at += 2;
    memories.push_back({"m" + std::to_string(m), capacity, int64_t{1} << ((exponents >> (2 * m)) & 3) * 2});
  }
  std::vector<serenity::ArenaBuffer> buffers;
  std::vector<serenity::BufferPin> pins;
  std::vector<std::string> names;
  while (at + 6 <= size && buffers.size() < kMaxBuffers) {
    const int64_t bytes = int64_t{data[at]} << 8 | data[at + 1];
    const int32_t first = data[at + 2];
    buffers.push_back({bytes, first, first + data[at + 3] % 32});
    serenity::BufferPin pin;
    if (data[at + 4] != 0) pin.memory = (data[at + 4] - 1) % (num_memories + 1) - 1;  // -1 .. memories-1
    if (data[at + 5] != 0) pin.offset = (int64_t{data[at + 5]} - 1) * 64;
    pins.push_back(pin);
    names.push_back("b" + std::to_string(buffers.size() - 1));
    at += 6;
  }
  absl::StatusOr<serenity::MemoryAssignment> a = serenity::AssignMemories(buffers, names, memories, pins);
  if (!a.ok()) {
    const absl::StatusCode code = a.status().code();
    if (code != absl::StatusCode::kInvalidArgument && code != absl::StatusCode::kFailedPrecondition) {
      std::fprintf(stderr, "unexpected status %s\n", a.status().ToString().c_str());
      __builtin_trap();
    }
    return 0;
  }
  if (a->memory.size() != buffers.size() || a->offsets.size() != buffers.size()) Fail("wrong lengths", 0);
  for (size_t i = 0; i < buffers.size(); ++i) {
    const int m = a->memory[i];
    if (m < 0 || m >= num_memories) Fail("no memory", i);
    const serenity::ArenaBuffer& b = buffers[i];
    const int64_t offset = a->offsets[i];
    if (offset < 0 || offset % memories[m].alignment != 0) Fail("misaligned", i);
    if (offset + b.size > memories[m].capacity_bytes) Fail("past the capacity", i);
    if (pins[i].memory >= 0 && pins[i].memory != m) Fail("pinned memory not held", i);
    if (pins[i].memory >= 0 && pins[i].offset >= 0 && pins[i].offset != offset) Fail("pinned offset not held", i);
    for (size_t j = 0; j < i; ++j) {
      const serenity::ArenaBuffer& o = buffers[j];
      if (a->memory[j] != m || b.size == 0 || o.size == 0) continue;
      if (b.first_step > o.last_step || o.first_step > b.last_step) continue;
      if (offset < a->offsets[j] + o.size && a->offsets[j] < offset + b.size) Fail("overlap", i);
    }
  }
  std::vector<int64_t> byte_steps(num_memories, 0), arena(num_memories, 0);
  std::vector<int> count(num_memories, 0);
  for (size_t i = 0; i < buffers.size(); ++i) {
    const int m = a->memory[i];
    byte_steps[m] += buffers[i].size * (buffers[i].last_step - buffers[i].first_step + 1);
    if (buffers[i].size > 0) arena[m] = std::max(arena[m], a->offsets[i] + buffers[i].size);
    ++count[m];
  }
  for (int m = 0; m < num_memories; ++m) {
    const serenity::MemoryUse& use = a->uses[m];
    if (use.byte_steps != byte_steps[m] || use.arena_bytes != arena[m] || use.buffers != count[m]) {
      Fail("wrong totals", static_cast<size_t>(m));
    }
    if (use.byte_steps > use.byte_steps_bound) Fail("byte-steps above their bound", 0);
  }
  return 0;
}
