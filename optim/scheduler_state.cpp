#include "ember/optim/scheduler_state.h"

#include <cmath>

#include "ember/common/error.h"

namespace ember::optim::detail {

Tensor int_state(int64_t value) { return tensor(std::vector<int64_t>{value}); }

void check_keys(const std::string& op, const std::map<std::string, Tensor>& state, const std::set<std::string>& expected) {
  for (const auto& [key, value] : state) {
    EMBER_CHECK(expected.count(key) == 1, op, ": unexpected key \"", key, "\"");
    EMBER_CHECK(value.defined(), op, ": \"", key, "\" is undefined");
  }
  for (const std::string& key : expected) EMBER_CHECK(state.count(key) == 1, op, ": missing key \"", key, "\"");
}

double read_double(const std::string& op, const std::map<std::string, Tensor>& state, const std::string& key) {
  const Tensor& value = state.at(key);
  EMBER_CHECK(value.numel() == 1, op, ": \"", key, "\" must hold one number, got shape ", value.sizes());
  return value.to(Device::cpu(), kFloat64).item<double>();
}

int64_t read_int(const std::string& op, const std::map<std::string, Tensor>& state, const std::string& key) {
  const double v = read_double(op, state, key);
  EMBER_CHECK(std::isfinite(v) && v == std::trunc(v) && std::abs(v) < 9e15, op, ": \"", key,
              "\" must be an integer, got ", v);
  return static_cast<int64_t>(v);
}

std::vector<double> read_doubles(const std::string& op, const std::map<std::string, Tensor>& state,
                                 const std::string& key, size_t count) {
  const Tensor& value = state.at(key);
  EMBER_CHECK(value.dim() == 1 && value.numel() == static_cast<int64_t>(count), op, ": \"", key, "\" must hold ",
              count, " numbers (one per group), got shape ", value.sizes());
  const Tensor cpu = value.to(Device::cpu(), kFloat64).contiguous();
  const double* data = cpu.data<double>();
  return std::vector<double>(data, data + count);
}

}  // namespace ember::optim::detail
