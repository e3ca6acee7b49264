// Device: where a tensor's memory lives, a value such as cpu:0, cpu:1 or cuda:0.
// Several CPU devices are real: DataParallel gives each its own worker thread.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace tandem {

enum class DeviceType : int8_t { CPU, CUDA };

inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;

class Device {
 public:
  static constexpr int kMaxIndex = 1024;

  Device(DeviceType type, int index = 0);
  // "cpu", "cpu:1", "cuda", "cuda:0"; a missing index means 0.
  Device(const std::string& spec);
  Device(const char* spec) : Device(std::string(spec)) {}

  DeviceType type() const { return type_; }
  int index() const { return index_; }
  bool is_cpu() const { return type_ == kCPU; }
  bool is_cuda() const { return type_ == kCUDA; }
  std::string str() const;

  friend bool operator==(const Device& a, const Device& b) = default;
  friend auto operator<=>(const Device& a, const Device& b) = default;

 private:
  DeviceType type_;
  int16_t index_;
};

std::ostream& operator<<(std::ostream& out, const Device& device);
// The first device listed a second time in `devices`, if any (a list of devices to run on, one
// task each, must not name one twice).
std::optional<Device> repeated_device(const std::vector<Device>& devices);
std::ostream& operator<<(std::ostream& out, DeviceType type);

// The GPUs behind cuda:0, cuda:1, ... from a TANDEM_VISIBLE_DEVICES value ("1,0", or "0,0" for two
// logical devices on GPU 0), given how many GPUs the CUDA runtime shows; an error names the bad entry.
std::vector<int> parse_visible_devices(const std::string& spec, int gpus);

}  // namespace tandem
