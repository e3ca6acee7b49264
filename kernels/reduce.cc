// Entry points of the reductions: dims, output dtypes and shapes, empty-input rules.
#include "kernels/reduce.h"

#include <cmath>
#include <limits>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/elementwise.h"
#include "kernels/factory.h"

namespace tandem::kernels {

namespace {

// The dims to fold (all when none are named) and the output's shape.
struct Reduction {
  std::vector<bool> reduced;
  Shape out_shape;
  int64_t fold = 1;
};

Reduction plan(const Tensor& x, IntList dims, bool keepdim, const char* op) {
  check_defined(x, op, "input");
  Reduction r;
  r.reduced = dims.empty() ? std::vector<bool>(x.dim(), true) : dim_mask(dims, x.dim(), op);
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (r.reduced[d]) {
      r.fold *= x.sizes()[d];
      if (keepdim) r.out_shape.push_back(1);
    } else {
      r.out_shape.push_back(x.sizes()[d]);
    }
  }
  return r;
}

Reduction plan_dim(const Tensor& x, int64_t dim, bool keepdim, const char* op) {
  check_defined(x, op, "input");
  int64_t d = wrap_dim(dim, x.dim(), op);
  return plan(x, x.dim() == 0 ? IntList{} : IntList(d), keepdim, op);
}

void check_nonempty(const Tensor& x, const Reduction& r, const char* op) {
  TD_CHECK(r.fold > 0, op, ": cannot reduce over an empty dimension (input shape ", shape_str(x.sizes()),
           "): the operation has no identity");
}

// A fresh output for the reduction, filled by kernel(out, reduced), which calls the backend of x's device.
template <typename Kernel>
Tensor run(const Tensor& x, const Reduction& r, DType out_dtype, Kernel kernel) {
  Tensor out = empty_tensor(r.out_shape, out_dtype, x.device());
  kernel(out, r.reduced);
  return out;
}

DType sum_dtype(DType in, std::optional<DType> dtype) {
  return dtype ? *dtype : is_integral(in, true) ? kInt64 : in;
}

Tensor sum_like(const char* op, const Tensor& x, IntList dims, bool keepdim, std::optional<DType> dtype,
                bool is_mean) {
  Reduction r = plan(x, dims, keepdim, op);
  DType out = sum_dtype(x.dtype(), dtype);
  if (is_mean) {
    TD_CHECK(is_floating(out), op, ": could not infer the output dtype: the input must be floating or a floating "
             "dtype given, got ", x.dtype());
  }
  Tensor in = dtype ? to(x, *dtype) : x;
  return run(x, r, out, [&](const Tensor& o, const std::vector<bool>& red) {
    if (x.is_cuda()) return is_mean ? cuda::mean(o, in, red) : cuda::sum(o, in, red);
    is_mean ? cpu::mean(o, in, red) : cpu::sum(o, in, red);
  });
}

Tensor extremum(const char* op, const Tensor& x, IntList dims, bool keepdim, bool is_max) {
  Reduction r = plan(x, dims, keepdim, op);
  check_nonempty(x, r, op);
  return run(x, r, x.dtype(), [&](const Tensor& o, const std::vector<bool>& red) {
    if (x.is_cuda()) return is_max ? cuda::amax(o, x, red) : cuda::amin(o, x, red);
    is_max ? cpu::amax(o, x, red) : cpu::amin(o, x, red);
  });
}

std::tuple<Tensor, Tensor> arg_extremum(const char* op, const Tensor& x, const Reduction& r, bool is_max,
                                        bool with_values) {
  check_nonempty(x, r, op);
  Tensor values = with_values ? empty_tensor(r.out_shape, x.dtype(), x.device()) : Tensor();
  Tensor indices = run(x, r, kInt64, [&](const Tensor& idx, const std::vector<bool>& red) {
    if (x.is_cuda()) return cuda::arg_reduce(values, idx, x, red, is_max);
    cpu::arg_reduce(values, idx, x, red, is_max);
  });
  return {values, indices};
}

Tensor arg_only(const char* op, const Tensor& x, std::optional<int64_t> dim, bool keepdim, bool is_max) {
  check_defined(x, op, "input");
  if (!dim) {
    Tensor flat = reshape(x, {-1});
    Tensor idx = std::get<1>(arg_extremum(op, flat, plan(flat, {}, false, op), is_max, false));
    return keepdim ? reshape(idx, Shape(x.dim(), 1)) : idx;
  }
  return std::get<1>(arg_extremum(op, x, plan_dim(x, *dim, keepdim, op), is_max, false));
}

Tensor logical(const char* op, const Tensor& x, IntList dims, bool keepdim, bool is_all) {
  Reduction r = plan(x, dims, keepdim, op);
  DType out = x.dtype() == kUInt8 ? kUInt8 : kBool;  // PyTorch keeps uint8
  return run(x, r, out, [&](const Tensor& o, const std::vector<bool>& red) {
    if (x.is_cuda()) return is_all ? cuda::all(o, x, red) : cuda::any(o, x, red);
    is_all ? cpu::all(o, x, red) : cpu::any(o, x, red);
  });
}

// all/any over an empty list of dims reduce nothing, as PyTorch's (sum and the others reduce
// everything there): each element's truth, in logical()'s result dtype.
Tensor truth_each(const char* op, const Tensor& x) {
  check_defined(x, op, "input");
  Tensor truth = ne(x, 0);
  return x.dtype() == kUInt8 ? to(truth, kUInt8) : truth;
}

Tensor var_like(const char* op, const Tensor& x, IntList dims, int64_t correction, bool keepdim, bool take_sqrt) {
  Reduction r = plan(x, dims, keepdim, op);
  TD_CHECK(is_floating(x.dtype()), op, ": only floating tensors are supported, got ", x.dtype());
  TD_CHECK(correction >= 0, op, ": correction must be non-negative, got ", correction);
  return run(x, r, x.dtype(), [&](const Tensor& o, const std::vector<bool>& red) {
    if (x.is_cuda()) return cuda::var(o, x, red, correction, take_sqrt);
    cpu::var(o, x, red, correction, take_sqrt);
  });
}

}  // namespace

Tensor sum(const Tensor& x, std::optional<DType> dtype) { return sum_like("sum", x, {}, false, dtype, false); }
Tensor sum(const Tensor& x, IntList dims, bool keepdim, std::optional<DType> dtype) {
  return sum_like("sum", x, dims, keepdim, dtype, false);
}
Tensor mean(const Tensor& x, std::optional<DType> dtype) { return sum_like("mean", x, {}, false, dtype, true); }
Tensor mean(const Tensor& x, IntList dims, bool keepdim, std::optional<DType> dtype) {
  return sum_like("mean", x, dims, keepdim, dtype, true);
}

Tensor prod(const Tensor& x, std::optional<DType> dtype) {
  Reduction r = plan(x, {}, false, "prod");
  Tensor in = dtype ? to(x, *dtype) : x;
  return run(x, r, sum_dtype(x.dtype(), dtype), [&](const Tensor& o, const std::vector<bool>& red) {
    x.is_cuda() ? cuda::prod(o, in, red) : cpu::prod(o, in, red);
  });
}

Tensor prod(const Tensor& x, int64_t dim, bool keepdim, std::optional<DType> dtype) {
  Reduction r = plan_dim(x, dim, keepdim, "prod");
  Tensor in = dtype ? to(x, *dtype) : x;
  return run(x, r, sum_dtype(x.dtype(), dtype), [&](const Tensor& o, const std::vector<bool>& red) {
    x.is_cuda() ? cuda::prod(o, in, red) : cpu::prod(o, in, red);
  });
}

Tensor max(const Tensor& x) { return extremum("max", x, {}, false, true); }
Tensor min(const Tensor& x) { return extremum("min", x, {}, false, false); }
Tensor amax(const Tensor& x, IntList dims, bool keepdim) { return extremum("amax", x, dims, keepdim, true); }
Tensor amin(const Tensor& x, IntList dims, bool keepdim) { return extremum("amin", x, dims, keepdim, false); }

std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return arg_extremum("max", x, plan_dim(x, dim, keepdim, "max"), true, true);
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return arg_extremum("min", x, plan_dim(x, dim, keepdim, "min"), false, true);
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return arg_only("argmax", x, dim, keepdim, true); }
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return arg_only("argmin", x, dim, keepdim, false); }

Tensor var(const Tensor& x, IntList dims, int64_t correction, bool keepdim) {
  return var_like("var", x, dims, correction, keepdim, false);
}
Tensor std(const Tensor& x, IntList dims, int64_t correction, bool keepdim) {
  return var_like("std", x, dims, correction, keepdim, true);
}

Tensor norm(const Tensor& x, double p, IntList dims, bool keepdim) {
  Reduction r = plan(x, dims, keepdim, "norm");
  TD_CHECK(is_floating(x.dtype()), "norm: only floating tensors are supported, got ", x.dtype());
  TD_CHECK(!std::isnan(p), "norm: p must not be NaN");
  if (std::isinf(p)) check_nonempty(x, r, "norm");
  return run(x, r, x.dtype(), [&](const Tensor& o, const std::vector<bool>& red) {
    x.is_cuda() ? cuda::norm(o, x, red, p) : cpu::norm(o, x, red, p);
  });
}

Tensor logsumexp(const Tensor& x, IntList dims, bool keepdim) {
  check_defined(x, "logsumexp", "input");
  Tensor in = is_floating(x.dtype()) ? x : to(x, kDefaultFloat);
  // max + log(sum(exp(x - max))), with an infinite max replaced by 0 so inf - inf gives no NaN.
  Reduction r = plan(in, dims, true, "logsumexp");
  Tensor maxes =
      r.fold > 0 ? amax(in, dims, true) : zeros(r.out_shape, TensorOptions(in.dtype()).device(in.device()));
  maxes = masked_fill(maxes, eq(abs(maxes), std::numeric_limits<double>::infinity()), 0);
  Tensor out = detail::binary(BinaryOp::Add, log(sum(exp(detail::binary(BinaryOp::Sub, in, maxes)), dims, true)), maxes);
  if (!keepdim) {
    std::vector<bool> mask = dims.empty() ? std::vector<bool>(in.dim(), true) : dim_mask(dims, in.dim(), "logsumexp");
    Shape shape;
    for (int64_t d = 0; d < in.dim(); ++d) {
      if (!mask[d]) shape.push_back(in.sizes()[d]);
    }
    out = view(out, shape);
  }
  return out;
}

Tensor all(const Tensor& x) { return logical("all", x, {}, false, true); }
Tensor all(const Tensor& x, IntList dims, bool keepdim) {
  return dims.empty() ? truth_each("all", x) : logical("all", x, dims, keepdim, true);
}
Tensor any(const Tensor& x) { return logical("any", x, {}, false, false); }
Tensor any(const Tensor& x, IntList dims, bool keepdim) {
  return dims.empty() ? truth_each("any", x) : logical("any", x, dims, keepdim, false);
}

namespace {

Tensor scan(const char* op, const Tensor& x, int64_t dim, std::optional<DType> dtype, bool product) {
  check_defined(x, op, "input");
  int64_t d = wrap_dim(dim, x.dim(), op);
  Tensor in = dtype ? to(x, *dtype) : x;  // as PyTorch: a dtype asked for is the input's, cast first
  Tensor out = empty_tensor(x.sizes(), sum_dtype(x.dtype(), dtype), x.device());
  if (x.is_cuda()) {
    product ? cuda::cumprod(out, in, d) : cuda::cumsum(out, in, d);
  } else {
    product ? cpu::cumprod(out, in, d) : cpu::cumsum(out, in, d);
  }
  return out;
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return scan("cumsum", x, dim, dtype, false);
}
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return scan("cumprod", x, dim, dtype, true);
}

}  // namespace tandem::kernels
