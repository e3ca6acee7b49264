// StateDict: named tensors in order, plus string metadata: what a module's state_dict(), an
// optimizer's state and a checkpoint file hold.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace tandem {

class StateDict {
 public:
  using Item = std::pair<std::string, Tensor>;

  // Adds a tensor under a new name; a repeated name is an error.
  void insert(const std::string& name, const Tensor& tensor);
  bool contains(const std::string& name) const;
  const Tensor* find(const std::string& name) const;  // null if absent
  const Tensor& at(const std::string& name) const;    // throws tandem::Error naming the key if absent
  std::vector<std::string> keys() const;
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<Item>::const_iterator begin() const { return items_.begin(); }
  std::vector<Item>::const_iterator end() const { return items_.end(); }

  // Free-form string metadata (safetensors' "__metadata__").
  std::map<std::string, std::string> metadata;

 private:
  std::vector<Item> items_;
  std::map<std::string, size_t> index_;
};

}  // namespace tandem
