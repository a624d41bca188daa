// Where a tensor lives: the CPU or one CUDA device.
// defines: ember::DeviceType, ember::Device
#pragma once

#include <ostream>
#include <string>
#include <string_view>

namespace ember {

enum class DeviceType { CPU, CUDA };

// A device type plus an index ("cpu", "cuda:0"). Cheap value type; compares by type and index.
class Device {
 public:
  Device() = default;  // the CPU
  Device(DeviceType type, int index);
  // Parses "cpu", "cuda" (= cuda:0) and "cuda:N". Throws ember::Error on anything else.
  explicit Device(std::string_view spec);

  static Device cpu() { return Device(); }
  static Device cuda(int index = 0) { return Device(DeviceType::CUDA, index); }

  DeviceType type() const { return type_; }
  int index() const { return index_; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  std::string str() const;  // "cpu", "cuda:1"

  friend bool operator==(const Device&, const Device&) = default;

 private:
  DeviceType type_ = DeviceType::CPU;
  int index_ = 0;
};

std::ostream& operator<<(std::ostream& out, const Device& device);

}  // namespace ember
