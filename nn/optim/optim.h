// tandem::optim in one include: optimizers (SGD, Adam, AdamW, RMSprop, Adagrad) and learning-rate
// schedulers.
#pragma once

#include "nn/optim/adam.h"
#include "nn/optim/lr_scheduler.h"
#include "nn/optim/optimizer.h"
#include "nn/optim/rmsprop.h"
#include "nn/optim/sgd.h"
