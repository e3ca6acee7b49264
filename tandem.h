// tandem: the one header a user includes.  namespace td = tandem;
#pragma once

#include "core/allocator.h"
#include "core/cuda.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/generator.h"
#include "core/scalar.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/elementwise.h"
#include "kernels/factory.h"
#include "kernels/index.h"
#include "kernels/linalg.h"
#include "kernels/nn_ops.h"
#include "kernels/reduce.h"
