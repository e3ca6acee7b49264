// tandem::optim in one include: optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, NAdam,
// RAdam, Adadelta, Rprop, ASGD, Adafactor, Muon, LBFGS), learning-rate schedulers, and
// amp::GradScaler for float16 training; swa_utils (AveragedModel, update_bn).
#pragma once

#include "nn/optim/adafactor.h"
#include "nn/optim/adam.h"
#include "nn/optim/adam_variants.h"
#include "nn/optim/classic.h"
#include "nn/optim/grad_scaler.h"
#include "nn/optim/lbfgs.h"
#include "nn/optim/lr_scheduler.h"
#include "nn/optim/muon.h"
#include "nn/optim/optimizer.h"
#include "nn/optim/rmsprop.h"
#include "nn/optim/sgd.h"
#include "nn/optim/swa_utils.h"
