// Creating tensors: filled, ranged, from C++ data, around foreign memory, and random.
// dtypes default as in PyTorch: float32 for floating values, int64 for integers.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "core/tensor.h"

namespace tandem {

Tensor empty(IntList sizes, TensorOptions options = {});
Tensor zeros(IntList sizes, TensorOptions options = {});
Tensor ones(IntList sizes, TensorOptions options = {});
// The dtype follows the value (bool, int64 or float32) unless options give one.
Tensor full(IntList sizes, Scalar value, TensorOptions options = {});
Tensor arange(Scalar end, TensorOptions options = {});
Tensor arange(Scalar start, Scalar end, Scalar step = 1, TensorOptions options = {});
Tensor linspace(double start, double end, int64_t steps, TensorOptions options = {});
Tensor eye(int64_t n, int64_t m = -1, TensorOptions options = {});

// The _like forms take sizes, dtype and device from `like` unless options override them.
Tensor empty_like(const Tensor& like, TensorOptions options = {});
Tensor zeros_like(const Tensor& like, TensorOptions options = {});
Tensor ones_like(const Tensor& like, TensorOptions options = {});
Tensor full_like(const Tensor& like, Scalar value, TensorOptions options = {});
Tensor rand_like(const Tensor& like, TensorOptions options = {});
Tensor randn_like(const Tensor& like, TensorOptions options = {});

// Values for tensor(): a number, a (nested) braced list of numbers, or a std::vector.
//   tensor(3.5)  tensor({1, 2, 3})  tensor({{1.f, 2.f}, {3.f, 4.f}})  tensor(std::vector<double>{...})
// Braced numbers give int64 (integers), float32 (any floating value) or bool; a vector keeps
// its element type.
class TensorData {
 public:
  TensorData(Scalar value) : kind_(Kind::Scalar), scalar_(value) {}
  template <typename T>
    requires std::is_arithmetic_v<T>
  TensorData(T value) : TensorData(Scalar(value)) {}
  TensorData(std::initializer_list<TensorData> list);
  template <typename T>
    requires std::is_arithmetic_v<T>
  TensorData(const std::vector<T>& values) : kind_(Kind::Vector), vector_dtype_(dtype_of<T>) {
    vector_bytes_.resize(values.size() * sizeof(T));
    if constexpr (std::is_same_v<T, bool>) {
      for (size_t i = 0; i < values.size(); ++i) vector_bytes_[i] = values[i];
    } else if (!values.empty()) {
      std::memcpy(vector_bytes_.data(), values.data(), vector_bytes_.size());
    }
    sizes_ = {static_cast<int64_t>(values.size())};
  }

  Tensor to_tensor(TensorOptions options) const;

 private:
  enum class Kind { Scalar, List, Vector };
  void flatten_into(std::vector<Scalar>& values) const;
  Kind kind_;
  Scalar scalar_;
  std::vector<TensorData> children_;
  Shape sizes_;
  DType vector_dtype_ = kFloat32;
  std::vector<uint8_t> vector_bytes_;
};

Tensor tensor(const TensorData& data, TensorOptions options = {});

// A tensor over memory owned elsewhere: no copy. `deleter` (may be empty) runs when the last
// tensor using the memory goes. Contiguous unless strides are given.
Tensor from_blob(void* data, IntList sizes, TensorOptions options = {}, std::function<void(void*)> deleter = {});
Tensor from_blob(void* data, IntList sizes, IntList strides, TensorOptions options = {},
                 std::function<void(void*)> deleter = {});

// ---- random: from the Philox stream of the tensor's device's generator (td::manual_seed) ----
Tensor rand(IntList sizes, TensorOptions options = {});   // uniform in [0, 1)
Tensor randn(IntList sizes, TensorOptions options = {});  // standard normal
Tensor randint(int64_t low, int64_t high, IntList sizes, TensorOptions options = {});  // in [low, high)
Tensor randint(int64_t high, IntList sizes, TensorOptions options = {});
Tensor bernoulli(const Tensor& p);           // 1 with probability p[i]; dtype of p
Tensor bernoulli(const Tensor& like, double p);  // shape and dtype of `like`
// In place, as nn::init and dropout use them.
Tensor& uniform_(Tensor& t, double from = 0, double to = 1);
Tensor& normal_(Tensor& t, double mean = 0, double std = 1);
Tensor& bernoulli_(Tensor& t, double p);

namespace kernels {
// The samplers behind td::poisson, td::binomial and td::standard_gamma (autograd/ops.h), without
// their autograd nodes.
Tensor poisson(const Tensor& rates);
Tensor binomial(const Tensor& count, const Tensor& prob);
Tensor standard_gamma(const Tensor& alpha);
}  // namespace kernels

}  // namespace tandem
