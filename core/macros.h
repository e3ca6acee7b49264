// Portability macros shared by host and CUDA code.
#pragma once

#if defined(__CUDACC__)
#define TD_HOST_DEVICE __host__ __device__
#else
#define TD_HOST_DEVICE
#endif

#define TD_INLINE TD_HOST_DEVICE inline
