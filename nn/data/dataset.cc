#include "nn/data/dataset.h"

#include <vector>

namespace tandem::data {

Example Dataset::get_batch(std::span<const int64_t> indices) const {
  TD_CHECK(!indices.empty(), "Dataset::get_batch: no indices (a batch holds at least one example)");
  std::vector<Tensor> data, targets;
  data.reserve(indices.size());
  targets.reserve(indices.size());
  for (int64_t index : indices) {
    Example example = get(index);
    TD_CHECK(example.data.defined() && example.target.defined(), "Dataset::get_batch: example ", index,
             " has an undefined ", example.data.defined() ? "target" : "data", " tensor");
    // td::stack would refuse too, but without saying which examples disagree.
    if (!data.empty()) {
      TD_CHECK(example.data.sizes() == data.front().sizes(), "Dataset::get_batch: example ", index,
               " has data of shape ", shape_str(example.data.sizes()), " but example ", indices.front(), " has ",
               shape_str(data.front().sizes()), "; the examples of a batch must agree in shape");
      TD_CHECK(example.target.sizes() == targets.front().sizes(), "Dataset::get_batch: example ", index,
               " has a target of shape ", shape_str(example.target.sizes()), " but example ", indices.front(), " has ",
               shape_str(targets.front().sizes()), "; the examples of a batch must agree in shape");
    }
    data.push_back(std::move(example.data));
    targets.push_back(std::move(example.target));
  }
  return {stack(data, 0), stack(targets, 0)};
}

TensorDataset::TensorDataset(Tensor data, Tensor targets) : data_(std::move(data)), targets_(std::move(targets)) {
  TD_CHECK(data_.defined() && targets_.defined(), "TensorDataset: the ", data_.defined() ? "targets" : "data",
           " tensor is undefined");
  TD_CHECK(data_.dim() >= 1 && targets_.dim() >= 1,
           "TensorDataset: data and targets need a dim 0 that runs over the examples, but got data of shape ",
           shape_str(data_.sizes()), " and targets of shape ", shape_str(targets_.sizes()));
  TD_CHECK(data_.size(0) == targets_.size(0), "TensorDataset: data has ", data_.size(0), " examples (shape ",
           shape_str(data_.sizes()), ") but targets has ", targets_.size(0), " (shape ", shape_str(targets_.sizes()),
           "); their sizes along dim 0 must agree");
  size_ = data_.size(0);
}

namespace {

void check_index(int64_t index, int64_t size, const char* op) {
  TD_CHECK(index >= 0 && index < size, op, ": index ", index, " is out of range for a dataset of ", size, " examples");
}

}  // namespace

Example TensorDataset::get(int64_t index) const {
  check_index(index, size_, "TensorDataset::get");
  return {data_.select(0, index), targets_.select(0, index)};
}

Example TensorDataset::get_batch(std::span<const int64_t> indices) const {
  TD_CHECK(!indices.empty(), "TensorDataset::get_batch: no indices (a batch holds at least one example)");
  for (int64_t index : indices) check_index(index, size_, "TensorDataset::get_batch");
  std::vector<int64_t> copy(indices.begin(), indices.end());
  Tensor index = tensor(copy);
  return {data_.index_select(0, index.to(data_.device())), targets_.index_select(0, index.to(targets_.device()))};
}

}  // namespace tandem::data
