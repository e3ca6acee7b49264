// The NCCL collectives in a build without NCCL: never chosen (can_serve is false).
#include "core/error.h"
#include "parallel/nccl.h"

namespace tandem::parallel::nccl {

namespace {
[[noreturn]] void absent(const char* op) { TD_FAIL(op, ": this build of tandem has no NCCL"); }
}  // namespace

bool built_with_nccl() { return false; }
bool can_serve(const std::vector<Tensor>&) { return false; }
void all_reduce(const std::vector<Tensor>&) { absent("nccl::all_reduce"); }
void broadcast(const std::vector<Tensor>&, size_t) { absent("nccl::broadcast"); }
void reduce(const std::vector<Tensor>&, const Tensor&, size_t) { absent("nccl::reduce"); }

}  // namespace tandem::parallel::nccl
