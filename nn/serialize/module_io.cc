#include "nn/serialize/module_io.h"

#include "nn/serialize/safetensors.h"

namespace tandem {

void save(const nn::Module& module, const std::string& path) { save(module.state_dict(), path); }

nn::Module::LoadResult load(nn::Module& module, const std::string& path, bool strict) {
  return module.load_state_dict(load(path), strict);
}

}  // namespace tandem
