/* What a CUDA graph's kernel nodes cost when they do almost nothing: the launch floor of a step
   that runs K kernels as one graph.
     nvcc -O3 -std=c++17 -Xcompiler -Wall,-Wextra,-Werror bench/graph_floor.cu -o build/graph_floor
     ./build/graph_floor [--kernels K (938)] [--reps R (20)]
   A graph of K dependent kernels on one stream is captured and launched R times after 3 warm-ups
   (CUDA events around each launch, median). Each kernel reads one value that the kernel before it
   wrote and writes the next, so no two overlap, as a step's kernels on its compute stream. Two
   shapes: one block of 32 threads, and one block of 256 threads on every SM (the grid of a
   small element-wise kernel). Prints csv: blocks,threads,kernels,median_ms,min_ms,max_ms,us_per_kernel */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "ck.h"

/* p[i + 1] = p[i] + 1 by block 0's thread 0; the other threads only start and end */
__global__ void step_kernel(int *p, int i)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) p[i + 1] = p[i] + 1;
}

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [--kernels K (938)] [--reps R (20)]\n", argv0);
    exit(2);
}

int main(int argc, char **argv)
{
    int kernels = 938, reps = 20;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) usage(argv[0]);
        if (!strcmp(argv[i], "--kernels")) kernels = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[++i]);
        else usage(argv[0]);
    }
    if (kernels < 1 || reps < 1) usage(argv[0]);
    cudaDeviceProp prop;
    int dev;
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    int *p;
    CK(cudaMalloc((void **)&p, sizeof(int) * (kernels + 1)));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    printf("# gpu %s, %d SMs; a graph of %d dependent kernels, %d timed launches after 3 warm-ups\n", prop.name,
           prop.multiProcessorCount, kernels, reps);
    printf("blocks,threads,kernels,median_ms,min_ms,max_ms,us_per_kernel\n");
    const int shapes[2][2] = {{1, 32}, {prop.multiProcessorCount, 256}};
    for (const auto &sh : shapes) {
        CK(cudaMemset(p, 0, sizeof(int) * (kernels + 1)));
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < kernels; i++) step_kernel<<<sh[0], sh[1], 0, st>>>(p, i);
        CK(cudaGetLastError());
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        std::vector<double> t;
        for (int r = -3; r < reps; r++) {
            CK(cudaEventRecord(e0, st));
            CK(cudaGraphLaunch(ge, st));
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (r >= 0) t.push_back(ms);
        }
        int last;
        CK(cudaMemcpy(&last, p + kernels, sizeof last, cudaMemcpyDeviceToHost));
        if (last != kernels) {
            fprintf(stderr, "the chain ended at %d, not at %d\n", last, kernels);
            return 1;
        }
        stats r = summarize(t);
        printf("%d,%d,%d,%.4f,%.4f,%.4f,%.3f\n", sh[0], sh[1], kernels, r.med, r.lo, r.hi, r.med * 1e3 / kernels);
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaStreamDestroy(st));
    CK(cudaFree(p));
    return 0;
}
