#include "ember/core/device.h"

#include <charconv>

#include "ember/common/error.h"

namespace ember {

Device::Device(DeviceType type, int index) : type_(type), index_(type == DeviceType::CPU ? 0 : index) {
  EMBER_CHECK(index >= 0, "Device: index must be >= 0, got ", index);
}

Device::Device(std::string_view spec) {
  if (spec == "cpu") return;
  if (spec == "cuda") {
    type_ = DeviceType::CUDA;
    return;
  }
  constexpr std::string_view prefix = "cuda:";
  if (spec.substr(0, prefix.size()) == prefix && spec.size() > prefix.size()) {
    std::string_view digits = spec.substr(prefix.size());
    int index = 0;
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (error == std::errc() && end == digits.data() + digits.size() && index >= 0) {
      type_ = DeviceType::CUDA;
      index_ = index;
      return;
    }
  }
  throw Error(detail::str("Device: expected \"cpu\", \"cuda\" or \"cuda:N\", got \"", spec, "\""));
}

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index_); }

std::ostream& operator<<(std::ostream& out, const Device& device) { return out << device.str(); }

}  // namespace ember
