#include "core/device.h"

#include <charconv>
#include <ostream>

#include "core/error.h"

namespace tandem {

Device::Device(DeviceType type, int index) : type_(type), index_(static_cast<int16_t>(index)) {
  TD_CHECK(type == kCPU || type == kCUDA, "Device: unknown device type ", static_cast<int>(type));
  TD_CHECK(index >= 0 && index < kMaxIndex, "Device: index ", index, " is out of range [0, ", kMaxIndex, ")");
}

Device::Device(const std::string& spec) : type_(kCPU), index_(0) {
  std::string kind = spec, number;
  if (size_t colon = spec.find(':'); colon != std::string::npos) {
    kind = spec.substr(0, colon);
    number = spec.substr(colon + 1);
    TD_CHECK(!number.empty(), "Device: '", spec, "' has no index after ':' (expected e.g. cuda:0)");
  }
  if (kind == "cpu") {
    type_ = kCPU;
  } else if (kind == "cuda") {
    type_ = kCUDA;
  } else {
    TD_FAIL("Device: unknown device type in '", spec, "' (expected cpu, cpu:N, cuda or cuda:N)");
  }
  if (!number.empty()) {
    int index = -1;
    auto [end, err] = std::from_chars(number.data(), number.data() + number.size(), index);
    TD_CHECK(err == std::errc() && end == number.data() + number.size() && index >= 0 && index < kMaxIndex,
             "Device: bad index '", number, "' in '", spec, "' (expected 0 to ", kMaxIndex - 1, ")");
    index_ = static_cast<int16_t>(index);
  }
}

std::string Device::str() const { return detail::str_cat(is_cpu() ? "cpu:" : "cuda:", index_); }

std::ostream& operator<<(std::ostream& out, const Device& device) { return out << device.str(); }
std::ostream& operator<<(std::ostream& out, DeviceType type) { return out << (type == kCPU ? "cpu" : "cuda"); }

std::optional<Device> repeated_device(const std::vector<Device>& devices) {
  for (size_t i = 0; i < devices.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (devices[i] == devices[j]) return devices[i];
    }
  }
  return std::nullopt;
}

std::vector<int> parse_visible_devices(const std::string& spec, int gpus) {
  std::vector<int> map;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    std::string entry = spec.substr(start, comma - start);
    while (!entry.empty() && entry.front() == ' ') entry.erase(entry.begin());
    while (!entry.empty() && entry.back() == ' ') entry.pop_back();
    if (entry.empty() && comma == spec.size() && map.empty()) break;  // "" selects no device
    int gpu = -1;
    auto [end, err] = std::from_chars(entry.data(), entry.data() + entry.size(), gpu);
    TD_CHECK(err == std::errc() && end == entry.data() + entry.size() && gpu >= 0 && gpu < gpus,
             "TANDEM_VISIBLE_DEVICES='", spec, "': entry '", entry, "' is not a GPU number from 0 to ", gpus - 1,
             " (", gpus, " GPUs visible to the CUDA runtime)");
    map.push_back(gpu);
    TD_CHECK(map.size() <= static_cast<size_t>(Device::kMaxIndex), "TANDEM_VISIBLE_DEVICES='", spec,
             "' lists more than ", Device::kMaxIndex, " devices");
    start = comma + 1;
  }
  return map;
}

}  // namespace tandem
