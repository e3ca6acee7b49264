// Reading dataset files whole, gzip-compressed or not: what the MNIST and CIFAR-10 readers share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tandem::data::detail {

// The bytes of `path`, inflated if the file starts with the gzip magic (1f 8b), whatever its
// name. Errors (missing or unreadable file, corrupt or truncated gzip data) are tandem::Error
// naming the file.
std::vector<uint8_t> read_file(const std::string& path);

// Whether `path` names an existing regular file.
bool file_exists(const std::string& path);

// `path`, or `path` + ".gz" if only that exists; an error naming both if neither does.
std::string find_file(const std::string& path, const std::string& what);

}  // namespace tandem::data::detail
