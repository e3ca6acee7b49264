// tandem: the one header a user includes.  namespace td = tandem;
#pragma once

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/gradcheck.h"
#include "autograd/graph.h"
#include "autograd/ops.h"
#include "core/allocator.h"
#include "core/cuda.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/generator.h"
#include "core/scalar.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/factory.h"
#include "nn/nn.h"
