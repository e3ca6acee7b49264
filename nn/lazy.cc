#include "nn/lazy.h"

#include <algorithm>

namespace tandem::nn {

int64_t lazy_channels(const std::string& layer, const Tensor& x, int64_t spatial_dims) {
  TD_CHECK(x.defined() && (x.dim() == spatial_dims + 1 || x.dim() == spatial_dims + 2), "Expected ", spatial_dims + 1,
           "D (unbatched) or ", spatial_dims + 2, "D (batched) input to ", layer, ", but got input of size: ",
           x.defined() ? shape_str(x.sizes()) : std::string("an undefined tensor"));
  return x.dim() == spatial_dims + 2 ? x.size(1) : x.size(0);
}

int64_t lazy_batch_norm_channels(const std::string& layer, const Tensor& x, std::vector<int64_t> ranks) {
  const bool fits = x.defined() && std::find(ranks.begin(), ranks.end(), x.dim()) != ranks.end();
  TD_CHECK(fits, layer, ": expected an input of ", ranks.size() == 1 ? "" : "2 or ", ranks.back(),
           " dims, got ", x.defined() ? shape_str(x.sizes()) : std::string("an undefined tensor"));
  return x.size(1);
}

LazyLinearImpl::LazyLinearImpl(int64_t out_features, bool bias)
    : Lazy("Linear", LinearOptions(kPlaceholder, out_features).bias(bias)) {
  uninitialize();
}

int64_t LazyLinearImpl::input_size_of(const Tensor& x) const {
  TD_CHECK(x.defined() && x.dim() >= 1, name(), ": expected an input of 1 or more dims (features last), got ",
           x.defined() ? shape_str(x.sizes()) : std::string("an undefined tensor"));
  return x.size(-1);
}

}  // namespace tandem::nn
