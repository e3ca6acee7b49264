// Tensor: a view (sizes, strides, storage offset, dtype) onto a Storage, shared by handle.
// Copying a Tensor copies the handle, as in PyTorch; views (view, permute, narrow, ...) share
// the storage and see each other's writes.
//
// Only the metadata accessors are defined here (core/tensor.cc). Every other method is declared
// here so that a user writes x.exp() or loss.backward() as in PyTorch, and is defined in
// autograd/tensor_methods.cc, where ops record what backward needs: link //:tandem to use them.
// Code below the autograd layer calls the raw ops of kernels/ instead.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/scalar.h"
#include "core/shape.h"
#include "core/storage.h"
#include "core/tensor_options.h"

namespace tandem {

// Counts in-place writes to a storage's elements; views share it with their base.
struct VersionCounter {
  std::atomic<uint32_t> value{0};
};

struct AutogradMeta;  // autograd/graph.h: requires_grad, grad, grad_fn, hooks
struct Node;          // autograd/graph.h: one op's backward

struct TensorImpl {
  Storage storage;
  Shape sizes;
  Shape strides;  // in elements
  int64_t offset = 0;  // in elements
  DType dtype = kFloat32;
  std::shared_ptr<VersionCounter> version;
  std::shared_ptr<AutogradMeta> autograd;  // null for tensors autograd has never touched
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  // A tensor over `storage` with the given layout; `base` passes on its version counter (views).
  static Tensor make(Storage storage, Shape sizes, Shape strides, int64_t offset, DType dtype,
                     const Tensor* base = nullptr);

  bool defined() const { return impl_ != nullptr; }

  // ---- metadata ----
  const Shape& sizes() const { return impl().sizes; }
  const Shape& shape() const { return impl().sizes; }
  int64_t size(int64_t dim) const;
  const Shape& strides() const { return impl().strides; }
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(impl().sizes.size()); }
  int64_t numel() const;
  DType dtype() const { return impl().dtype; }
  DType scalar_type() const { return impl().dtype; }
  Device device() const { return impl().storage.device(); }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_floating_point() const { return is_floating(dtype()); }
  int64_t storage_offset() const { return impl().offset; }
  size_t element_size() const { return tandem::element_size(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  bool is_contiguous() const;
  const Storage& storage() const { return impl().storage; }
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  std::string str() const;  // the printed form, as PyTorch prints it (with grad_fn=... when recorded)

  // ---- raw access ----
  void* data_ptr() const;
  template <typename T>
  T* data_ptr() const {
    TD_CHECK(dtype_of<T> == dtype(), "data_ptr<", dtype_name(dtype_of<T>), ">: the tensor has dtype ", dtype());
    return static_cast<T*>(data_ptr());
  }
  // data_ptr<T>(), or null for an undefined tensor: an optional operand (a weight, a bias) of a kernel.
  template <typename T>
  T* data_ptr_or_null() const {
    return defined() ? data_ptr<T>() : nullptr;
  }
  // The single element as a Scalar or as T; the tensor must hold exactly one element.
  Scalar item() const;
  template <typename T>
  T item() const {
    return item().to<T>();
  }

  // ---- identity and versions ----
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  bool is_alias_of(const Tensor& other) const { return storage().is_same(other.storage()); }
  uint32_t version() const { return impl().version->value.load(); }
  void bump_version() const { impl().version->value.fetch_add(1); }

  // ---- autograd (autograd/): gradients of floating tensors ----
  bool requires_grad() const;
  Tensor& requires_grad_(bool requires_grad = true);  // leaves only
  Tensor grad() const;                                // undefined until a backward reaches it
  Tensor& mutable_grad();                             // for optimizers: assign, or reset to undefined
  std::shared_ptr<Node> grad_fn() const;              // null for leaves
  bool is_leaf() const;
  // Accumulates d(this)/d(leaf) into every leaf's grad(). `gradient` may be omitted for one element;
  // retain_graph defaults to create_graph.
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  Tensor detach() const;  // same data, no history
  Tensor& detach_();
  void retain_grad();  // keep grad() of a non-leaf
  bool retains_grad() const;
  // Runs hook(grad) whenever a gradient for this tensor is computed; its result (if defined)
  // replaces the gradient. Returns a handle for remove_hook.
  int register_hook(std::function<Tensor(const Tensor&)> hook);
  void remove_hook(int handle);
  uint32_t output_nr() const;

  // ---- views: no data moves ----
  Tensor view(IntList sizes) const;
  Tensor view_as(const Tensor& other) const { return view(other.sizes()); }
  Tensor as_strided(IntList sizes, IntList strides, std::optional<int64_t> offset = std::nullopt) const;
  Tensor permute(IntList dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor narrow_copy(int64_t dim, int64_t start, int64_t length) const;
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const;  // sliding windows (a view)
  Tensor slice(int64_t dim, std::optional<int64_t> start = std::nullopt, std::optional<int64_t> end = std::nullopt,
               int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor expand(IntList sizes) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor unflatten(int64_t dim, IntList sizes) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split_with_sizes(IntList split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;

  // ---- copies and conversions (kernels/) ----
  Tensor reshape(IntList sizes) const;  // a view when the layout allows, else a copy
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;  // reshape of dims start..end
  Tensor contiguous() const;            // itself when already contiguous
  Tensor clone() const;
  Tensor to(DType dtype) const;  // itself when nothing changes
  Tensor to(Device device) const;
  Tensor to(Device device, DType dtype) const;
  Tensor cpu() const { return to(Device(kCPU)); }
  Tensor pin_memory() const;  // a copy in pinned host memory (needs CUDA); no autograd history
  bool is_pinned() const;
  Tensor& copy_(const Tensor& src);  // broadcasts src into this, converting dtype and device
  Tensor& fill_(Scalar value);
  Tensor& zero_();

  // ---- element-wise (kernels/elementwise.h has the free forms and their rules) ----
  Tensor neg() const;
  Tensor abs() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor log1p() const;
  Tensor expm1() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor gelu(const std::string& approximate = "none") const;
  Tensor silu() const;
  Tensor sign() const;
  Tensor reciprocal() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;
  Tensor trunc() const;
  Tensor frac() const;
  Tensor pow(Scalar exponent) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor clamp_min(Scalar min) const;
  Tensor clamp_max(Scalar max) const;
  Tensor& neg_();
  Tensor& abs_();
  Tensor& exp_();
  Tensor& log_();
  Tensor& log1p_();
  Tensor& expm1_();
  Tensor& sqrt_();
  Tensor& rsqrt_();
  Tensor& sin_();
  Tensor& cos_();
  Tensor& tanh_();
  Tensor& sigmoid_();
  Tensor& relu_();
  Tensor& gelu_(const std::string& approximate = "none");
  Tensor& silu_();
  Tensor& sign_();
  Tensor& reciprocal_();
  Tensor& floor_();
  Tensor& ceil_();
  Tensor& round_();
  Tensor& trunc_();
  Tensor& frac_();
  Tensor& pow_(Scalar exponent);
  Tensor& pow_(const Tensor& exponent);
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);

  Tensor add(const Tensor& other, Scalar alpha = 1) const;
  Tensor add(Scalar other, Scalar alpha = 1) const;
  Tensor sub(const Tensor& other, Scalar alpha = 1) const;
  Tensor sub(Scalar other, Scalar alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(Scalar other) const;
  Tensor div(const Tensor& other) const;
  Tensor div(Scalar other) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor& add_(const Tensor& other, Scalar alpha = 1);
  Tensor& add_(Scalar other, Scalar alpha = 1);
  Tensor& sub_(const Tensor& other, Scalar alpha = 1);
  Tensor& sub_(Scalar other, Scalar alpha = 1);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(Scalar other);
  Tensor& div_(const Tensor& other);
  Tensor& div_(Scalar other);
  Tensor eq(const Tensor& other) const;
  Tensor eq(Scalar other) const;
  Tensor ne(const Tensor& other) const;
  Tensor ne(Scalar other) const;
  Tensor lt(const Tensor& other) const;
  Tensor lt(Scalar other) const;
  Tensor le(const Tensor& other) const;
  Tensor le(Scalar other) const;
  Tensor gt(const Tensor& other) const;
  Tensor gt(Scalar other) const;
  Tensor ge(const Tensor& other) const;
  Tensor ge(Scalar other) const;
  Tensor masked_fill(const Tensor& mask, Scalar value) const;
  Tensor& masked_fill_(const Tensor& mask, Scalar value);

  // ---- more element-wise math (autograd/ops.h has the rules) ----
  Tensor tan() const;
  Tensor asin() const;
  Tensor acos() const;
  Tensor atan() const;
  Tensor sinh() const;
  Tensor cosh() const;
  Tensor asinh() const;
  Tensor acosh() const;
  Tensor atanh() const;
  Tensor log2() const;
  Tensor log10() const;
  Tensor exp2() const;
  Tensor erfc() const;
  Tensor erfinv() const;
  Tensor bitwise_not() const;
  Tensor& tan_();
  Tensor& asin_();
  Tensor& acos_();
  Tensor& atan_();
  Tensor& sinh_();
  Tensor& cosh_();
  Tensor& asinh_();
  Tensor& acosh_();
  Tensor& atanh_();
  Tensor& log2_();
  Tensor& log10_();
  Tensor& exp2_();
  Tensor& erfc_();
  Tensor& erfinv_();
  Tensor& bitwise_not_();
  Tensor lgamma() const;
  Tensor digamma() const;
  Tensor polygamma(int64_t n) const;
  Tensor mvlgamma(int64_t p) const;
  Tensor i0() const;
  Tensor& lgamma_();
  Tensor& digamma_();
  Tensor& polygamma_(int64_t n);
  Tensor& mvlgamma_(int64_t p);
  Tensor& i0_();
  Tensor square() const;
  Tensor gcd(const Tensor& other) const;
  Tensor lcm(const Tensor& other) const;
  Tensor nextafter(const Tensor& other) const;
  Tensor igamma(const Tensor& other) const;   // P(self, other)
  Tensor igammac(const Tensor& other) const;  // Q(self, other)
  Tensor ldexp(const Tensor& other) const;
  std::tuple<Tensor, Tensor> frexp() const;
  Tensor true_divide(const Tensor& other) const;
  Tensor& gcd_(const Tensor& other);
  Tensor& lcm_(const Tensor& other);
  Tensor quantile(double q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                  const std::string& interpolation = "linear") const;
  Tensor quantile(const Tensor& q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                  const std::string& interpolation = "linear") const;
  Tensor nanquantile(double q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                     const std::string& interpolation = "linear") const;
  Tensor nanquantile(const Tensor& q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                     const std::string& interpolation = "linear") const;
  Tensor histc(int64_t bins = 100, double min = 0, double max = 0) const;
  Tensor diag_embed(int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1) const;
  Tensor& tril_(int64_t diagonal = 0);
  Tensor& triu_(int64_t diagonal = 0);
  Tensor deg2rad() const;
  Tensor rad2deg() const;
  Tensor logit(std::optional<double> eps = std::nullopt) const;
  Tensor nan_to_num(std::optional<double> nan = std::nullopt, std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt) const;
  Tensor& nan_to_num_(std::optional<double> nan = std::nullopt, std::optional<double> posinf = std::nullopt,
                      std::optional<double> neginf = std::nullopt);
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isposinf() const;
  Tensor isneginf() const;
  Tensor isfinite() const;
  Tensor signbit() const;
  Tensor logical_not() const;
  Tensor logical_and(const Tensor& other) const;
  Tensor logical_or(const Tensor& other) const;
  Tensor logical_xor(const Tensor& other) const;
  Tensor div(const Tensor& other, const std::string& rounding_mode) const;
  Tensor div(Scalar other, const std::string& rounding_mode) const;
  Tensor& div_(const Tensor& other, const std::string& rounding_mode);
  Tensor& div_(Scalar other, const std::string& rounding_mode);
  Tensor floor_divide(const Tensor& other) const;
  Tensor floor_divide(Scalar other) const;
  Tensor& floor_divide_(const Tensor& other);
  Tensor& floor_divide_(Scalar other);
  Tensor remainder(const Tensor& other) const;
  Tensor remainder(Scalar other) const;
  Tensor& remainder_(const Tensor& other);
  Tensor& remainder_(Scalar other);
  Tensor fmod(const Tensor& other) const;
  Tensor fmod(Scalar other) const;
  Tensor& fmod_(const Tensor& other);
  Tensor& fmod_(Scalar other);
  Tensor atan2(const Tensor& other) const;
  Tensor& atan2_(const Tensor& other);
  Tensor hypot(const Tensor& other) const;
  Tensor& hypot_(const Tensor& other);
  Tensor copysign(const Tensor& other) const;
  Tensor copysign(Scalar other) const;
  Tensor& copysign_(const Tensor& other);
  Tensor logaddexp(const Tensor& other) const;
  Tensor xlogy(const Tensor& other) const;
  Tensor xlogy(Scalar other) const;
  Tensor fmax(const Tensor& other) const;
  Tensor fmin(const Tensor& other) const;
  Tensor lerp(const Tensor& end, Scalar weight) const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor& lerp_(const Tensor& end, Scalar weight);
  Tensor& lerp_(const Tensor& end, const Tensor& weight);
  Tensor addcmul(const Tensor& a, const Tensor& b, Scalar value = 1) const;
  Tensor addcdiv(const Tensor& a, const Tensor& b, Scalar value = 1) const;
  Tensor& addcmul_(const Tensor& a, const Tensor& b, Scalar value = 1);
  Tensor& addcdiv_(const Tensor& a, const Tensor& b, Scalar value = 1);
  Tensor bitwise_and(const Tensor& other) const;
  Tensor bitwise_and(Scalar other) const;
  Tensor bitwise_or(const Tensor& other) const;
  Tensor bitwise_or(Scalar other) const;
  Tensor bitwise_xor(const Tensor& other) const;
  Tensor bitwise_xor(Scalar other) const;
  Tensor& bitwise_and_(const Tensor& other);
  Tensor& bitwise_or_(const Tensor& other);
  Tensor& bitwise_xor_(const Tensor& other);
  Tensor& bitwise_and_(Scalar other);
  Tensor& bitwise_or_(Scalar other);
  Tensor& bitwise_xor_(Scalar other);
  Tensor bitwise_left_shift(const Tensor& other) const;
  Tensor bitwise_left_shift(Scalar other) const;
  Tensor bitwise_right_shift(const Tensor& other) const;
  Tensor bitwise_right_shift(Scalar other) const;
  Tensor& bitwise_left_shift_(const Tensor& other);
  Tensor& bitwise_left_shift_(Scalar other);
  Tensor& bitwise_right_shift_(const Tensor& other);
  Tensor& bitwise_right_shift_(Scalar other);
  Tensor clip(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor isclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;

  // ---- reductions (kernels/reduce.h) ----
  Tensor sum(std::optional<DType> dtype = std::nullopt) const;
  Tensor sum(IntList dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(IntList dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor amax(IntList dims = {}, bool keepdim = false) const;
  Tensor amin(IntList dims = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor var(IntList dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor std(IntList dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor norm(double p = 2, IntList dims = {}, bool keepdim = false) const;
  Tensor logsumexp(IntList dims, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(IntList dims, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(IntList dims, bool keepdim = false) const;
  Tensor cumsum(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<DType> dtype = std::nullopt) const;

  // ---- sorting (kernels/sort.h) ----
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false) const;
  Tensor msort() const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true) const;
  std::tuple<Tensor, Tensor> kthvalue(int64_t k, int64_t dim = -1, bool keepdim = false) const;
  Tensor median() const;
  std::tuple<Tensor, Tensor> median(int64_t dim, bool keepdim = false) const;
  Tensor nanmedian() const;
  std::tuple<Tensor, Tensor> nanmedian(int64_t dim, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> cummax(int64_t dim) const;
  std::tuple<Tensor, Tensor> cummin(int64_t dim) const;
  Tensor logcumsumexp(int64_t dim) const;

  // ---- rearranging, joining and indexing (autograd/ops.h has the rules) ----
  Tensor roll(IntList shifts, IntList dims = {}) const;
  Tensor repeat(IntList repeats) const;
  Tensor tile(IntList reps) const;
  Tensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt) const;
  Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim = std::nullopt) const;
  Tensor movedim(IntList source, IntList destination) const;
  Tensor movedim(int64_t source, int64_t destination) const;
  Tensor swapaxes(int64_t dim0, int64_t dim1) const { return transpose(dim0, dim1); }
  Tensor swapdims(int64_t dim0, int64_t dim1) const { return transpose(dim0, dim1); }
  Tensor rot90(int64_t k = 1, IntList dims = {0, 1}) const;
  Tensor fliplr() const;
  Tensor flipud() const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  Tensor diag(int64_t offset = 0) const;
  Tensor trace() const;  // the sum of the main diagonal of a matrix
  Tensor diff(int64_t n = 1, int64_t dim = -1) const;
  Tensor nonzero() const;
  Tensor argwhere() const;
  Tensor masked_select(const Tensor& mask) const;
  Tensor count_nonzero(IntList dims = {}) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source, Scalar alpha = 1) const;
  Tensor index_copy(int64_t dim, const Tensor& index, const Tensor& source) const;
  Tensor index_fill(int64_t dim, const Tensor& index, Scalar value) const;
  Tensor scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                        bool include_self = true) const;
  Tensor& scatter_reduce_(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                          bool include_self = true);
  Tensor index_reduce(int64_t dim, const Tensor& index, const Tensor& source, const std::string& reduce,
                      bool include_self = true) const;
  Tensor& index_reduce_(int64_t dim, const Tensor& index, const Tensor& source, const std::string& reduce,
                        bool include_self = true);
  Tensor& index_add_(int64_t dim, const Tensor& index, const Tensor& source, Scalar alpha = 1);
  Tensor& index_copy_(int64_t dim, const Tensor& index, const Tensor& source);
  Tensor& index_fill_(int64_t dim, const Tensor& index, Scalar value);
  Tensor take(const Tensor& index) const;
  Tensor put(const Tensor& index, const Tensor& source, bool accumulate = false) const;
  Tensor& put_(const Tensor& index, const Tensor& source, bool accumulate = false);
  Tensor take_along_dim(const Tensor& indices, std::optional<int64_t> dim = std::nullopt) const;
  Tensor bincount(const Tensor& weights = Tensor(), int64_t minlength = 0) const;
  Tensor dot(const Tensor& other) const;
  Tensor mv(const Tensor& vec) const;
  Tensor outer(const Tensor& vec2) const;
  Tensor addmv(const Tensor& mat, const Tensor& vec, Scalar beta = 1, Scalar alpha = 1) const;
  Tensor addr(const Tensor& vec1, const Tensor& vec2, Scalar beta = 1, Scalar alpha = 1) const;
  Tensor baddbmm(const Tensor& batch1, const Tensor& batch2, Scalar beta = 1, Scalar alpha = 1) const;
  Tensor addbmm(const Tensor& batch1, const Tensor& batch2, Scalar beta = 1, Scalar alpha = 1) const;
  Tensor nansum(IntList dims = {}, bool keepdim = false) const;
  Tensor nanmean(IntList dims = {}, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> aminmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  std::vector<Tensor> tensor_split(int64_t sections, int64_t dim = 0) const;
  std::vector<Tensor> tensor_split(const std::vector<int64_t>& indices, int64_t dim = 0) const;
  Tensor cross(const Tensor& other, int64_t dim = -1) const;
  Tensor kron(const Tensor& other) const;
  Tensor heaviside(const Tensor& values) const;
  Tensor angle() const;
  // Real tensors only: conj and its relatives are the tensor itself, the flags false.
  Tensor conj() const { return *this; }
  Tensor conj_physical() const { return *this; }
  Tensor resolve_conj() const { return *this; }
  Tensor resolve_neg() const { return *this; }
  bool is_conj() const { return false; }
  bool is_neg() const { return false; }
  bool is_complex() const { return false; }
  Tensor nonzero_static(int64_t size, int64_t fill_value = -1) const;
  Tensor logaddexp2(const Tensor& other) const;
  Tensor sinc() const;
  Tensor float_power(const Tensor& exponent) const;
  Tensor float_power(Scalar exponent) const;
  Tensor masked_scatter(const Tensor& mask, const Tensor& source) const;
  Tensor& masked_scatter_(const Tensor& mask, const Tensor& source);
  Tensor index(const std::vector<Tensor>& indices) const;
  Tensor index_put(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false) const;
  Tensor& index_put_(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false);

  // ---- PyTorch's other names (autograd/ops.h), and more in-place forms ----
  Tensor absolute() const;
  Tensor negative() const;
  Tensor fix() const;
  Tensor sgn() const;
  Tensor arccos() const;
  Tensor arcsin() const;
  Tensor arctan() const;
  Tensor arccosh() const;
  Tensor arcsinh() const;
  Tensor arctanh() const;
  Tensor arctan2(const Tensor& other) const;
  Tensor erf() const;
  Tensor& absolute_();
  Tensor& negative_();
  Tensor& fix_();
  Tensor& sgn_();
  Tensor& arccos_();
  Tensor& arcsin_();
  Tensor& arctan_();
  Tensor& arccosh_();
  Tensor& arcsinh_();
  Tensor& arctanh_();
  Tensor& arctan2_(const Tensor& other);
  Tensor& erf_();
  Tensor divide(const Tensor& other) const;
  Tensor divide(Scalar other) const;
  Tensor divide(const Tensor& other, const std::string& rounding_mode) const;
  Tensor& divide_(const Tensor& other);
  Tensor& divide_(Scalar other);
  Tensor subtract(const Tensor& other, Scalar alpha = 1) const;
  Tensor subtract(Scalar other, Scalar alpha = 1) const;
  Tensor& subtract_(const Tensor& other, Scalar alpha = 1);
  Tensor& subtract_(Scalar other, Scalar alpha = 1);
  Tensor greater(const Tensor& other) const;
  Tensor greater(Scalar other) const;
  Tensor greater_equal(const Tensor& other) const;
  Tensor greater_equal(Scalar other) const;
  Tensor less(const Tensor& other) const;
  Tensor less(Scalar other) const;
  Tensor less_equal(const Tensor& other) const;
  Tensor less_equal(Scalar other) const;
  Tensor not_equal(const Tensor& other) const;
  Tensor not_equal(Scalar other) const;
  Tensor ravel() const;
  Tensor moveaxis(IntList source, IntList destination) const;
  Tensor moveaxis(int64_t source, int64_t destination) const;
  Tensor broadcast_to(IntList sizes) const;
  Tensor dist(const Tensor& other, double p = 2) const;
  Tensor diagflat(int64_t offset = 0) const;
  Tensor pinverse(double rcond = 1e-15) const;
  bool is_nonzero() const;
  bool is_same_size(const Tensor& other) const;
  bool is_signed() const;
  // The composed ops in place: the result written back (a floating result into an integer
  // tensor refused, naming the op).
  Tensor& clamp_min_(Scalar min);
  Tensor& clamp_max_(Scalar max);
  Tensor& clip_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
  Tensor& square_();
  Tensor& sinc_();
  Tensor& deg2rad_();
  Tensor& rad2deg_();
  Tensor& logit_(std::optional<double> eps = std::nullopt);
  Tensor& xlogy_(const Tensor& other);
  Tensor& xlogy_(Scalar other);
  Tensor& ldexp_(const Tensor& other);
  Tensor& igamma_(const Tensor& other);
  Tensor& igammac_(const Tensor& other);
  Tensor multiply(const Tensor& other) const;
  Tensor multiply(Scalar other) const;
  Tensor positive() const;
  Tensor adjoint() const;
  Tensor inverse() const;
  Tensor inner(const Tensor& other) const;
  bool equal(const Tensor& other) const;
  Tensor renorm(double p, int64_t dim, double maxnorm) const;
  std::tuple<Tensor, Tensor> geqrf() const;
  Tensor orgqr(const Tensor& tau) const;
  Tensor ormqr(const Tensor& tau, const Tensor& other, bool left = true, bool transpose = false) const;
  Tensor& renorm_(double p, int64_t dim, double maxnorm);

  // ---- sampling in place (autograd/random_ops.cc), from the generator of the tensor's device ----
  // The old values get a zero gradient; a leaf that requires grad refuses, as for any in-place op.
  Tensor& uniform_(double from = 0, double to = 1);  // floating
  Tensor& normal_(double mean = 0, double std = 1);  // floating
  Tensor& bernoulli_(double p = 0.5);                // 1 with probability p, any dtype
  Tensor& bernoulli_(const Tensor& p);               // p (floating, in [0, 1]) broadcast to this shape
  Tensor& exponential_(double lambd = 1);            // -log(1 - U) / lambd, floating
  Tensor& geometric_(double p);                      // trials up to the first success (>= 1), any dtype
  Tensor& cauchy_(double median = 0, double sigma = 1);  // floating
  Tensor& log_normal_(double mean = 1, double std = 2);  // exp of normal(mean, std), floating
  // Whole numbers uniform in [from, to); without `to`, up to the dtype's largest (for a floating
  // dtype the largest whole number it holds with no gap below: 2^24 for float32). A floating range
  // beyond that gap-free range is refused (PyTorch warns that it will be).
  Tensor& random_(int64_t from, std::optional<int64_t> to);
  Tensor& random_(int64_t to);
  Tensor& random_();

  // ---- linear algebra, softmax, indexing (kernels/) ----
  Tensor mm(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  Tensor matmul(const Tensor& other) const;
  Tensor softmax(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor flip(IntList dims) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src);
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, Scalar value) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src);
  Tensor& scatter_(int64_t dim, const Tensor& index, Scalar value);

  TensorImpl& impl() const {
    TD_CHECK(impl_ != nullptr, "the tensor is undefined (default-constructed)");
    return *impl_;
  }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& out, const Tensor& t);

}  // namespace tandem
