/* The CUDA bench programs' helpers: a CUDA check (a failing runtime call prints where and why, and
   exits 1), and the median, min and max of a run of timings. */
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

#ifdef __cplusplus
#include <algorithm>
#include <vector>
struct stats {
    double med, lo, hi;
};
static inline stats summarize(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return {n & 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.front(), v.back()};
}
#endif
#endif
