/* The bench programs' CUDA check: a failing runtime call prints where and why, and exits 1. */
#ifndef BENCH_CK_H
#define BENCH_CK_H
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(call)                                                                                              \
    do {                                                                                                      \
        cudaError_t e_ = (call);                                                                              \
        if (e_ != cudaSuccess) {                                                                              \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));            \
            exit(1);                                                                                          \
        }                                                                                                     \
    } while (0)
#endif
