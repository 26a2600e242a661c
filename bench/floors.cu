/* Transfer floors of this machine: what slide mode's host<->GPU weight stream can reach at best.
     nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_90,code=sm_90 \
          -Xcompiler -Wall,-Wextra,-Werror bench/floors.cu -o build/floors
     ./build/floors [--bytes N (1GiB)] [--reps R (10)] [--chunk N (64MiB)]     sizes take K/M/G, KiB/MiB/GiB suffixes
   Each floor: 2 warm-ups, then R timed reps (CUDA events); the median, min and max of the reps' GB/s (1e9 B/s).
   A rep moves --bytes per direction as consecutive --chunk sized cudaMemcpyAsync calls, as a layer-by-layer stream
   would. both_pinned runs H2D and D2H at once on two streams and counts the bytes of both directions over the wall
   time; the csv column "bytes" is what one rep moves (2 x --bytes for both_pinned). */
#include <cuda_runtime.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <algorithm>
#include <vector>

#include "ck.h"

/* "512MiB", "1GiB", "64M", "1e9": 0 when malformed */
static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v <= 0) return 0;
    double mul = 1;
    const char *u = end;
    if (*u) {
        static const char units[] = "KMGT";
        const char *p = strchr(units, toupper((unsigned char)*u));
        if (!p) return 0;
        int k = (int)(p - units) + 1;
        u++;
        bool bin = !strcasecmp(u, "iB") || !*u; /* a bare K/M/G means binary, as with --chunk 64M */
        if (!bin && strcasecmp(u, "B")) return 0;
        for (int i = 0; i < k; i++) mul *= bin ? 1024.0 : 1000.0;
    }
    return (size_t)(v * mul);
}

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [--bytes N (1GiB)] [--reps R (10)] [--chunk N (64MiB)]\n", argv0);
    exit(2);
}

/* n bytes from src to dst as consecutive chunk sized copies on stream s */
static void stream_copy(char *dst, const char *src, size_t n, size_t chunk, cudaMemcpyKind kind, cudaStream_t s)
{
    for (size_t o = 0; o < n; o += chunk) CK(cudaMemcpyAsync(dst + o, src + o, std::min(chunk, n - o), kind, s));
}

int main(int argc, char **argv)
{
    size_t bytes = (size_t)1 << 30, chunk = (size_t)64 << 20;
    int reps = 10;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) usage(argv[0]);
        if (!strcmp(argv[i], "--bytes")) bytes = parse_size(argv[++i]);
        else if (!strcmp(argv[i], "--chunk")) chunk = parse_size(argv[++i]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[++i]);
        else usage(argv[0]);
        if (!bytes || !chunk || reps < 1) {
            fprintf(stderr, "bad value for %s: %s\n", argv[i - 1], argv[i]);
            exit(2);
        }
    }
    chunk = std::min(chunk, bytes);

    cudaDeviceProp prop;
    int dev;
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    for (char *c = prop.name; *c; c++)
        if (*c == ',') *c = ' '; /* keep the csv parseable */

    /* separate buffers per direction so the concurrent run has no dependency between its two copies */
    fprintf(stderr, "allocating and touching %.2f GiB pinned host memory...\n", 2.0 * (double)bytes / (1 << 30));
    char *h_src, *h_dst, *d_src, *d_dst;
    CK(cudaHostAlloc((void **)&h_src, bytes, cudaHostAllocDefault));
    CK(cudaHostAlloc((void **)&h_dst, bytes, cudaHostAllocDefault));
    memset(h_src, 1, bytes); /* host pages may be committed lazily: pay for that before timing */
    memset(h_dst, 2, bytes);
    CK(cudaMalloc((void **)&d_src, bytes));
    CK(cudaMalloc((void **)&d_dst, bytes));
    CK(cudaMemset(d_src, 3, bytes));
    CK(cudaMemset(d_dst, 4, bytes));
    CK(cudaDeviceSynchronize());

    cudaStream_t sa, sb;
    CK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
    cudaEvent_t t0, ta, tb;
    CK(cudaEventCreate(&t0));
    CK(cudaEventCreate(&ta));
    CK(cudaEventCreate(&tb));

    const char *names[3] = {"h2d_pinned", "d2h_pinned", "both_pinned"};
    stats res[3];
    for (int f = 0; f < 3; f++) {
        std::vector<double> gbs;
        size_t moved = f == 2 ? 2 * bytes : bytes;
        for (int r = -2; r < reps; r++) {
            CK(cudaEventRecord(t0, sa));
            if (f == 0) {
                stream_copy(d_dst, h_src, bytes, chunk, cudaMemcpyHostToDevice, sa);
            } else if (f == 1) {
                stream_copy(h_dst, d_src, bytes, chunk, cudaMemcpyDeviceToHost, sa);
            } else {
                /* sb starts from the same instant as sa; interleave the issue so neither queue waits on the CPU */
                CK(cudaStreamWaitEvent(sb, t0, 0));
                for (size_t o = 0; o < bytes; o += chunk) {
                    size_t n = std::min(chunk, bytes - o);
                    CK(cudaMemcpyAsync(d_dst + o, h_src + o, n, cudaMemcpyHostToDevice, sa));
                    CK(cudaMemcpyAsync(h_dst + o, d_src + o, n, cudaMemcpyDeviceToHost, sb));
                }
            }
            CK(cudaEventRecord(ta, sa));
            CK(cudaEventRecord(tb, f == 2 ? sb : sa));
            CK(cudaEventSynchronize(ta));
            CK(cudaEventSynchronize(tb));
            float ms_a, ms_b;
            CK(cudaEventElapsedTime(&ms_a, t0, ta));
            CK(cudaEventElapsedTime(&ms_b, t0, tb));
            if (r >= 0) gbs.push_back((double)moved / (1e-3 * std::max(ms_a, ms_b)) * 1e-9);
        }
        res[f] = summarize(gbs);
    }

    printf("gpu %s, %zu bytes per direction (%.2f GiB), chunk %zu bytes, %d reps\n\n", prop.name, bytes,
           (double)bytes / (1 << 30), chunk, reps);
    printf("%-12s %12s %10s %10s\n", "floor", "median GB/s", "min GB/s", "max GB/s");
    for (int f = 0; f < 3; f++) printf("%-12s %12.2f %10.2f %10.2f\n", names[f], res[f].med, res[f].lo, res[f].hi);
    printf("\ncsv\nfloor,median_gb_s,min_gb_s,max_gb_s,bytes,reps,gpu\n");
    for (int f = 0; f < 3; f++)
        printf("%s,%.3f,%.3f,%.3f,%zu,%d,%s\n", names[f], res[f].med, res[f].lo, res[f].hi,
               f == 2 ? 2 * bytes : bytes, reps, prop.name);

    CK(cudaEventDestroy(t0));
    CK(cudaEventDestroy(ta));
    CK(cudaEventDestroy(tb));
    CK(cudaStreamDestroy(sa));
    CK(cudaStreamDestroy(sb));
    CK(cudaFree(d_src));
    CK(cudaFree(d_dst));
    CK(cudaFreeHost(h_src));
    CK(cudaFreeHost(h_dst));
    return 0;
}
