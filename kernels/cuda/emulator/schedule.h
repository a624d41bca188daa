// ember's CUDA emulator: the order in which the threads of a block run between barriers, and the
// blocks of a grid. A correct kernel gives the same result under every order; a race (a missing
// __syncthreads, a read of shared memory another thread has not written yet) shows as a
// difference between them.
// defines: ember::emu::{Schedule, ScheduleSetting, schedule, set_schedule, parse_schedule,
//          to_string}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ember::emu {

enum class Schedule {
  Forward,   // threads in ascending order, each until it blocks; blocks in ascending order
  Reverse,   // descending threads, descending blocks
  Random,    // a seeded random ready thread each time; blocks in a seeded random order
  RunAhead,  // warp by warp; the warp that completes a barrier runs on past it first
};

struct ScheduleSetting {
  Schedule order = Schedule::Forward;
  uint64_t seed = 1;  // Random only
};

// "forward", "reverse", "random" or "random:SEED", "run-ahead"; throws std::invalid_argument.
ScheduleSetting parse_schedule(std::string_view text);
std::string to_string(const ScheduleSetting& setting);

// The schedule of launches from this host thread: the one set_schedule gave, else the
// environment's EMBER_EMU_SCHEDULE, else forward. Throws std::invalid_argument naming the
// variable when EMBER_EMU_SCHEDULE cannot be parsed.
ScheduleSetting schedule();
// Overrides EMBER_EMU_SCHEDULE for this host thread (tests loop over every order); nullopt
// returns to the environment's.
void set_schedule(std::optional<ScheduleSetting> setting);

}  // namespace ember::emu
