// ember's emulated NCCL: a doorbell in shared memory, a 32-bit counter that a rank rings after
// publishing progress and that waiting ranks sleep on (a Linux futex, process-shared), so that a
// waiting rank costs no CPU and wakes as soon as a peer moves.
// defines: ember::emu::nccl::{ring_doorbell, doorbell_value, sleep_on_doorbell}
#pragma once

#include <chrono>
#include <cstdint>

namespace ember::emu::nccl {

// The doorbell's current value. Read it, then test the condition, then sleep_on_doorbell with
// that value: a ring in between changes the value, so no wake-up is lost.
uint32_t doorbell_value(uint32_t* bell);

// Bumps the counter and wakes every thread of every process sleeping on it.
void ring_doorbell(uint32_t* bell);

// Sleeps until the doorbell's value differs from `seen` or `at_most` has passed (or a spurious
// wake-up: callers re-test their condition in a loop).
void sleep_on_doorbell(uint32_t* bell, uint32_t seen, std::chrono::nanoseconds at_most);

}  // namespace ember::emu::nccl
