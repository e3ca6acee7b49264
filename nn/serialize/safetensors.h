// Checkpoints as safetensors files (https://github.com/huggingface/safetensors), the format
// PyTorch's `safetensors` package reads and writes: save a StateDict, load one back.
//
// A file is an 8-byte little-endian header length N, N bytes of JSON header
//   {"__metadata__": {"key": "value", ...},
//    "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
// then the data section: each tensor's raw little-endian bytes, row-major, at [begin, end).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "nn/state_dict.h"

namespace tandem {

// Writes `state` (tensors in insertion order, and its metadata) to `path`. Tensors on other
// devices or in non-contiguous layouts are written as their contiguous CPU copies. The file is
// written beside `path` under a temporary name, synced, then renamed over `path`: a failure (or a
// crash) part way leaves any existing file at `path` as it was, and no temporary behind.
// Throws tandem::Error naming the path and the cause (the OS error for I/O failures).
void save(const StateDict& state, const std::string& path);

// Reads a safetensors file into CPU tensors, in the order of their data in the file, with its
// metadata. The file is treated as hostile: anything malformed raises tandem::Error naming the
// file and the problem, before any tensor memory is allocated.
StateDict load(const std::string& path);

// The same from bytes in memory; `name_for_errors` stands for the file in messages.
StateDict load_from_memory(const uint8_t* data, size_t size, const std::string& name_for_errors);

namespace safetensors {

// Readers refuse headers longer than this, as the reference implementation does (it bounds what a
// hostile file can make a reader parse and hold).
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

}  // namespace safetensors

}  // namespace tandem
