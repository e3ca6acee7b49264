// CPU layer norm over the rows of a contiguous [rows, cols] tensor, forward and backward in one
// pass over each row once its statistics are known. Row sums are kept in double (cpu/rows.h); the
// column sums of the backward are taken over fixed blocks of rows and then added in block order,
// so the result does not depend on the number of threads.
#include <cmath>
#include <vector>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/rows.h"

namespace tandem::kernels::cpu {

namespace {

constexpr int64_t kRowBlockElements = 1 << 16;  // elements of a block of rows in the column sums

}  // namespace

void layer_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor& weight,
                const Tensor& bias, double eps) {
  const int64_t rows = mean.numel();
  if (rows == 0) return;
  const int64_t cols = x.numel() / rows;
  dispatch_floating(x.dtype(), "layer_norm", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* src = x.data_ptr<T>();
    const T* w = weight.data_ptr_or_null<T>();
    const T* b = bias.data_ptr_or_null<T>();
    T* dst = out.data_ptr<T>();
    M* row_mean = mean.data_ptr<M>();
    M* row_rstd = rstd.data_ptr<M>();
    parallel_for(0, rows, std::max<int64_t>(1, 16384 / cols), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* in = src + r * cols;
        const double m = row_sum(cols, [&](int64_t k) { return static_cast<M>(in[k]); }) / static_cast<double>(cols);
        const double var = row_sum(cols, [&](int64_t k) {
                             const double d = static_cast<double>(static_cast<M>(in[k])) - m;
                             return d * d;
                           }) /
                           static_cast<double>(cols);
        const M mu = static_cast<M>(m), rs = static_cast<M>(1.0 / std::sqrt(var + eps));
        row_mean[r] = mu;
        row_rstd[r] = rs;
        T* res = dst + r * cols;
        for (int64_t k = 0; k < cols; ++k) {
          M y = (static_cast<M>(in[k]) - mu) * rs;
          if (w) y = y * static_cast<M>(w[k]);
          if (b) y = y + static_cast<M>(b[k]);
          res[k] = static_cast<T>(y);
        }
      }
    });
  });
}

void layer_norm_backward(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias, const Tensor& grad,
                         const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  const int64_t rows = mean.numel();
  const Tensor& param_grad = grad_weight.defined() ? grad_weight : grad_bias;
  const int64_t cols = rows == 0 ? (param_grad.defined() ? param_grad.numel() : 0) : x.numel() / rows;
  if (cols == 0) return;
  dispatch_floating(x.dtype(), "layer_norm_backward", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* g = grad.data_ptr<T>();
    const T* src = x.data_ptr<T>();
    const T* w = weight.data_ptr_or_null<T>();
    const M* row_mean = mean.data_ptr<M>();
    const M* row_rstd = rstd.data_ptr<M>();
    if (grad_x.defined() && rows > 0) {
      T* gx = grad_x.data_ptr<T>();
      parallel_for(0, rows, std::max<int64_t>(1, 16384 / cols), [&](int64_t begin, int64_t end) {
        std::vector<M> gy(static_cast<size_t>(cols)), xhat(static_cast<size_t>(cols));
        for (int64_t r = begin; r < end; ++r) {
          const T* gr = g + r * cols;
          const T* in = src + r * cols;
          const M mu = row_mean[r], rs = row_rstd[r];
          for (int64_t k = 0; k < cols; ++k) {
            gy[k] = w ? static_cast<M>(gr[k]) * static_cast<M>(w[k]) : static_cast<M>(gr[k]);
            xhat[k] = (static_cast<M>(in[k]) - mu) * rs;
          }
          const M a = static_cast<M>(row_sum(cols, [&](int64_t k) { return gy[k]; }) / static_cast<double>(cols));
          const M c =
              static_cast<M>(row_sum(cols, [&](int64_t k) { return gy[k] * xhat[k]; }) / static_cast<double>(cols));
          T* out = gx + r * cols;
          for (int64_t k = 0; k < cols; ++k) out[k] = static_cast<T>(rs * (gy[k] - a - xhat[k] * c));
        }
      });
    }
    if (!grad_weight.defined() && !grad_bias.defined()) return;
    // Column sums: each block of rows sums into its own partials, then blocks are added in order.
    const int64_t block_rows = std::max<int64_t>(1, kRowBlockElements / std::max<int64_t>(cols, 1));
    const int64_t blocks = (rows + block_rows - 1) / block_rows;
    std::vector<double> dw(static_cast<size_t>(blocks * cols)), db(static_cast<size_t>(blocks * cols));
    parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t blk = begin; blk < end; ++blk) {
        double* pw = dw.data() + blk * cols;
        double* pb = db.data() + blk * cols;
        for (int64_t r = blk * block_rows; r < std::min(rows, (blk + 1) * block_rows); ++r) {
          const T* gr = g + r * cols;
          const T* in = src + r * cols;
          const M mu = row_mean[r], rs = row_rstd[r];
          for (int64_t k = 0; k < cols; ++k) {
            const M gk = static_cast<M>(gr[k]);
            pw[k] += static_cast<double>(gk * ((static_cast<M>(in[k]) - mu) * rs));
            pb[k] += static_cast<double>(gk);
          }
        }
      }
    });
    T* gw = grad_weight.defined() ? grad_weight.data_ptr<T>() : nullptr;
    T* gb = grad_bias.defined() ? grad_bias.data_ptr<T>() : nullptr;
    for (int64_t k = 0; k < cols; ++k) {
      double sw = 0, sb = 0;
      for (int64_t blk = 0; blk < blocks; ++blk) {
        sw += dw[blk * cols + k];
        sb += db[blk * cols + k];
      }
      if (gw) gw[k] = static_cast<T>(sw);
      if (gb) gb[k] = static_cast<T>(sb);
    }
  });
}

}  // namespace tandem::kernels::cpu
