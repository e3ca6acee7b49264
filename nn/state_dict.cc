#include "nn/state_dict.h"

namespace tandem {

void StateDict::insert(const std::string& name, const Tensor& tensor) {
  TD_CHECK(!name.empty(), "StateDict: a tensor needs a non-empty name");
  TD_CHECK(tensor.defined(), "StateDict: the tensor for '", name, "' is undefined");
  TD_CHECK(!index_.count(name), "StateDict: the name '", name, "' is already taken");
  index_[name] = items_.size();
  items_.emplace_back(name, tensor);
}

bool StateDict::contains(const std::string& name) const { return index_.count(name) > 0; }

const Tensor* StateDict::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &items_[it->second].second;
}

const Tensor& StateDict::at(const std::string& name) const {
  const Tensor* t = find(name);
  TD_CHECK(t != nullptr, "StateDict: no tensor named '", name, "'");
  return *t;
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [name, tensor] : items_) out.push_back(name);
  return out;
}

}  // namespace tandem
