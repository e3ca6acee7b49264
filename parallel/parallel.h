// Data parallelism: #include "parallel/parallel.h" (tandem.h includes it).
#pragma once

#include "parallel/comm.h"
#include "parallel/data_parallel.h"
#include "parallel/functions.h"
#include "parallel/parallel_apply.h"
#include "parallel/replicate.h"
#include "parallel/scatter_gather.h"
#include "parallel/sync_batchnorm.h"
