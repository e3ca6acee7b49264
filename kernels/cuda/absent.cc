// The CUDA backend in a build without the CUDA toolkit: no tensor can be on a CUDA device, and
// each entry says so if it is reached anyway.
#include "kernels/backend.h"
#include "kernels/cuda/cuda_ops.h"

namespace tandem::kernels::cuda {

namespace {
[[noreturn]] void absent(const char* op) { unsupported_device(op, Device(kCUDA)); }
}  // namespace

void unary(UnaryOp, const Tensor&, const Tensor&) { absent("unary"); }
void binary(BinaryOp, const Tensor&, const Tensor&, const Tensor&, Scalar) { absent("binary"); }
void binary_float_scalar(BinaryOp op, const Tensor&, const Tensor&, Scalar) { absent(op_name(op)); }
void clamp(const Tensor&, const Tensor&, std::optional<Scalar>, std::optional<Scalar>) { absent("clamp"); }
void where(const Tensor&, const Tensor&, const Tensor&, const Tensor&) { absent("where"); }
void addcmul(const Tensor&, const Tensor&, const Tensor&, const Tensor&, double) { absent("addcmul_"); }
void masked_fill(const Tensor&, const Tensor&, Scalar) { absent("masked_fill"); }
void copy(const Tensor&, const Tensor&) { absent("copy"); }
void add_n(const Tensor&, const std::vector<Tensor>&) { absent("add_n"); }
void fill(const Tensor&, Scalar) { absent("fill"); }
void arange(const Tensor&, Scalar, Scalar) { absent("arange"); }
void linspace(const Tensor&, double, double) { absent("linspace"); }
void uniform(const Tensor&, double, double, PhiloxState) { absent("uniform"); }
void normal(const Tensor&, double, double, PhiloxState) { absent("normal"); }
void randint(const Tensor&, int64_t, int64_t, PhiloxState) { absent("randint"); }
void bernoulli(const Tensor&, const Tensor&, PhiloxState) { absent("bernoulli"); }
void poisson(const Tensor&, const Tensor&, PhiloxState) { absent("poisson"); }
void binomial(const Tensor&, const Tensor&, const Tensor&, PhiloxState) { absent("binomial"); }
void standard_gamma(const Tensor&, const Tensor&, double, PhiloxState) { absent("standard_gamma"); }
void dropout(const Tensor&, const Tensor&, const Tensor&, double, double, PhiloxState) { absent("dropout"); }
void keep_scale(const Tensor&, const Tensor&, const Tensor&, double) { absent("dropout_backward"); }
void sum(const Tensor&, const Tensor&, const std::vector<bool>&) { absent("sum"); }
void mean(const Tensor&, const Tensor&, const std::vector<bool>&) { absent("mean"); }
void prod(const Tensor&, const Tensor&, const std::vector<bool>&) { absent("prod"); }
void amax(const Tensor&, const Tensor&, const std::vector<bool>&) { absent("amax"); }
void amin(const Tensor&, const Tensor&, const std::vector<bool>&) { absent("amin"); }
void arg_reduce(const Tensor&, const Tensor&, const Tensor&, const std::vector<bool>&, bool) { absent("arg_reduce"); }
void var(const Tensor&, const Tensor&, const std::vector<bool>&, int64_t, bool) { absent("var"); }
void norm(const Tensor&, const Tensor&, const std::vector<bool>&, double) { absent("norm"); }
void all(const Tensor&, const Tensor&, const std::vector<bool>&) { absent("all"); }
void any(const Tensor&, const Tensor&, const std::vector<bool>&) { absent("any"); }
void cumsum(const Tensor&, const Tensor&, int64_t) { absent("cumsum"); }
void cumprod(const Tensor&, const Tensor&, int64_t) { absent("cumprod"); }
void sort_rows(const Tensor&, const Tensor&, const Tensor&, bool) { absent("sort"); }
void searchsorted_rows(const Tensor&, const Tensor&, const Tensor&, bool) { absent("searchsorted"); }
void scan_rows(RowScan, const Tensor&, const Tensor&, const Tensor&) { absent("scan"); }
void bmm(const Tensor&, const Tensor&, const Tensor&, Scalar, Scalar) { absent("bmm"); }
bool addmm_bias_epilogue(const Tensor&, const Tensor&, const Tensor&, const Tensor&) { absent("addmm"); }
int64_t addmm_bias_epilogue_count() { return 0; }
void index_select(const Tensor&, const Tensor&, int64_t, const Tensor&) { absent("index_select"); }
void gather(const Tensor&, const Tensor&, int64_t, const Tensor&) { absent("gather"); }
void scatter_add(const Tensor&, int64_t, const Tensor&, const Tensor&) { absent("scatter_add"); }
void scatter(const Tensor&, int64_t, const Tensor&, const Tensor&) { absent("scatter"); }
void one_hot(const Tensor&, const Tensor&) { absent("one_hot"); }
void softmax(const Tensor&, const Tensor&, int64_t, bool) { absent("softmax"); }
void max_pool2d(const Tensor&, const Tensor&, const Tensor&, const Pool2d&) { absent("max_pool2d"); }
void avg_pool2d(const Tensor&, const Tensor&, const Pool2d&, bool, std::optional<int64_t>) { absent("avg_pool2d"); }
void avg_pool2d_backward(const Tensor&, const Tensor&, const Pool2d&, bool, std::optional<int64_t>) { absent("avg_pool2d_backward"); }
void im2col(const Tensor&, const Tensor&, const Pool2d&) { absent("im2col"); }
void col2im(const Tensor&, const Tensor&, const Pool2d&) { absent("col2im"); }
bool cudnn_available() { return false; }
void conv2d(const Tensor&, const Tensor&, const Tensor&, const Pool2d&, int64_t) { absent("conv2d"); }
void conv2d_backward_input(const Tensor&, const Tensor&, const Tensor&, const Pool2d&, int64_t) {
  absent("conv2d_backward_input");
}
void conv2d_backward_weight(const Tensor&, const Tensor&, const Tensor&, const Pool2d&, int64_t) {
  absent("conv2d_backward_weight");
}
void layer_norm(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, double) {
  absent("layer_norm");
}
void layer_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                         const Tensor&, const Tensor&) {
  absent("layer_norm_backward");
}
void cross_entropy(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                   const Tensor&, int64_t, double) {
  absent("cross_entropy");
}
void cross_entropy_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                            const Tensor&, int64_t, double) {
  absent("cross_entropy_backward");
}

void lu_factor(const Tensor&, const Tensor&, const Tensor&) { absent("lu_factor"); }
void lu_solve(const Tensor&, const Tensor&, const Tensor&, bool) { absent("lu_solve"); }
void cholesky(const Tensor&, const Tensor&) { absent("cholesky"); }
void triangular_solve(const Tensor&, const Tensor&, bool, bool, bool, bool) { absent("solve_triangular"); }
void qr(const Tensor&, const Tensor&) { absent("qr"); }
void qr_q(const Tensor&, const Tensor&) { absent("qr"); }
void eigh(const Tensor&, const Tensor&, const Tensor&, bool) { absent("eigh"); }
void svd(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&) { absent("svd"); }
void scatter_reduce(const Tensor&, int64_t, const Tensor&, const Tensor&, ScatterReduce) { absent("scatter_reduce"); }

}  // namespace tandem::kernels::cuda
