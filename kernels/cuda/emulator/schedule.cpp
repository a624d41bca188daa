#include "ember/kernels/cuda/emulator/schedule.h"

#include <cstdlib>
#include <stdexcept>

namespace ember::emu {

namespace {

thread_local std::optional<ScheduleSetting> override_setting;

}  // namespace

ScheduleSetting parse_schedule(std::string_view text) {
  if (text == "forward") return {Schedule::Forward};
  if (text == "reverse") return {Schedule::Reverse};
  if (text == "run-ahead") return {Schedule::RunAhead};
  if (text == "random") return {Schedule::Random, 1};
  if (text.starts_with("random:")) {
    const std::string digits(text.substr(7));
    char* end = nullptr;
    const unsigned long long seed = std::strtoull(digits.c_str(), &end, 10);
    if (!digits.empty() && *end == '\0') return {Schedule::Random, seed};
  }
  throw std::invalid_argument("expected forward, reverse, random, random:SEED or run-ahead, got '" +
                              std::string(text) + "'");
}

std::string to_string(const ScheduleSetting& setting) {
  switch (setting.order) {
    case Schedule::Forward: return "forward";
    case Schedule::Reverse: return "reverse";
    case Schedule::Random: return "random:" + std::to_string(setting.seed);
    case Schedule::RunAhead: return "run-ahead";
  }
  return "?";
}

ScheduleSetting schedule() {
  if (override_setting) return *override_setting;
  const char* text = std::getenv("EMBER_EMU_SCHEDULE");
  if (text == nullptr || *text == '\0') return {};
  try {
    return parse_schedule(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("EMBER_EMU_SCHEDULE: ") + e.what());
  }
}

void set_schedule(std::optional<ScheduleSetting> setting) { override_setting = setting; }

}  // namespace ember::emu
