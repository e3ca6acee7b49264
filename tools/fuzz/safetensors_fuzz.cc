// libFuzzer entry point for the safetensors reader: any bytes must give a StateDict or a
// tandem::Error, never a crash, a leak or an out-of-bounds read. Built by tools/fuzz/build.sh;
// tests/nn/safetensors_corpus_test.cc runs the seed corpus through it on every test run.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/tensor.h"
#include "nn/serialize/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tandem::StateDict state = tandem::load_from_memory(data, size, "fuzz input");
    // What an accepted file promises: its tensors, contiguous on the CPU, tile the data section
    // exactly. A violation is a bug in the reader's checks, so stop as a crash would.
    uint64_t header_size;
    std::memcpy(&header_size, data, 8);
    uint64_t covered = 0;
    for (const auto& [name, tensor] : state) {
      if (!tensor.is_cpu() || !tensor.is_contiguous()) std::abort();
      covered += tensor.nbytes();
    }
    if (covered != size - 8 - header_size) std::abort();
  } catch (const tandem::Error&) {
    // A refused file is the expected outcome for most inputs.
  }
  return 0;
}
