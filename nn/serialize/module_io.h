// td::save(module, path) and td::load(module, path), as LibTorch spells them: a module's
// state_dict() in a safetensors file, and back into a module of the same structure.
#pragma once

#include <string>

#include "nn/module.h"

namespace tandem {

void save(const nn::Module& module, const std::string& path);
// Loads into `module` by name; strict: missing or unexpected keys are an error listing them.
nn::Module::LoadResult load(nn::Module& module, const std::string& path, bool strict = true);

}  // namespace tandem
