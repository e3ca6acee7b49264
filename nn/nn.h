// td::nn: modules, layers (recurrent and attention ones included), losses, functional forms,
// initializations, gradient clipping and the adaptive softmax.
#pragma once

#include "nn/adaptive.h"
#include "nn/clip_grad.h"
#include "nn/functional.h"
#include "nn/init.h"
#include "nn/layers.h"
#include "nn/lazy.h"
#include "nn/linear_cross_entropy.h"
#include "nn/loss.h"
#include "nn/module.h"
#include "nn/modules.h"
#include "nn/packed_sequence.h"
#include "nn/rnn.h"
#include "nn/state_dict.h"
#include "nn/transformer.h"

namespace tandem::nn {
namespace F = functional;
}
