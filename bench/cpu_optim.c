/* Host optimizer kernels against the machine's memory bandwidth.
     cc -std=c11 -O3 -Wall -Wextra -Werror -fopenmp -I. bench/cpu_optim.c -o build/cpu_optim -lm
     ./build/cpu_optim [--n PARAMS (200M)] [--threads T (0: all)] [--reps R (10)] [--isa avx512|avx2|scalar]
   Each kernel: 2 warm-ups, then the median of R timed runs; a fresh gradient is written before every run (not
   timed), all arrays are first touched by the threads that use them. The kernels with a bf16 out (wout) run twice,
   with wout's ordinary stores ("plain") and with non-temporal ones ("stream", the library's default), their runs
   alternating so that both see the same machine. "B/param" and "GB/s" count the bytes the kernel must move (reads +
   writes; the triad a[i] = b[i] + s*c[i] 12 B as STREAM does); "real" adds the read-for-ownership of each line
   written by an ordinary store without being read first (wout +2 B, the triad's a +4 B); "% triad" is real GB/s
   over the plain triad's real GB/s. The streaming triad (12 B real) is the bandwidth with no such reads. As in
   slide mode, p, m and v come from malloc (pageable), g and wout are page-aligned (pinned there). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#define SLIDECHECK_TESTING 1 /* the sc__ test / bench hooks (sc__cpu_*_force, sc__cpu_optim_stream) */
#define SLIDECHECK_IMPLEMENTATION
#include "slidecheck.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#define CHUNK ((size_t)1 << 16) /* as the _mt kernels split, so each thread touches its own pages */

static int nthreads;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* non-zero values in [lo, lo + span) (positive when lo >= 0), per chunk from its own generator */
static void fill(void *x, sc_dtype t, size_t n, float lo, float span, uint64_t seed)
{
    long long nc = (long long)((n + CHUNK - 1) / CHUNK);
    SC__OMP(omp parallel for num_threads(nthreads) schedule(static))
    for (long long c = 0; c < nc; c++) {
        uint64_t s = seed * 0x9e3779b97f4a7c15ull + (uint64_t)c * 0xbf58476d1ce4e5b9ull + 1;
        size_t o = (size_t)c * CHUNK, e = o + CHUNK < n ? o + CHUNK : n;
        for (size_t i = o; i < e; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            float f = lo + span * (float)((double)((s >> 40) | 1) / (double)(1ull << 24));
            if (t == SC_BF16) ((uint16_t *)x)[i] = sc_f32_to_bf16(f);
            else ((float *)x)[i] = f;
        }
    }
}

static void triad(float *a, const float *b, const float *c, size_t n, float s, int stream)
{
    long long nc = (long long)((n + CHUNK - 1) / CHUNK);
    SC__OMP(omp parallel for num_threads(nthreads) schedule(static))
    for (long long k = 0; k < nc; k++) {
        size_t o = (size_t)k * CHUNK, e = o + CHUNK < n ? o + CHUNK : n;
#if defined(__SSE2__)
        if (stream) { /* 16-byte non-temporal stores from a's first aligned element on */
            size_t i = o;
            for (; i < e && ((uintptr_t)(a + i) & 15); i++) a[i] = b[i] + s * c[i];
            __m128 sv = _mm_set1_ps(s);
            for (; i + 4 <= e; i += 4)
                _mm_stream_ps(a + i, _mm_add_ps(_mm_loadu_ps(b + i), _mm_mul_ps(sv, _mm_loadu_ps(c + i))));
            for (; i < e; i++) a[i] = b[i] + s * c[i];
            _mm_sfence();
            continue;
        }
#else
        (void)stream;
#endif
        for (size_t i = o; i < e; i++) a[i] = b[i] + s * c[i];
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    const char *name, *stores; /* stores: "plain" / "stream" for a kernel with a write-only output, else "-" */
    double bytes, real;        /* per parameter: moved, and with the read-for-ownership of write-only lines */
    int group;                 /* kernels of a group share their inputs, their runs alternate */
    double med_s, gps, gbs, rgbs;
} result;

static float *P, *M, *V;
static void *G;
static uint16_t *W;
static size_t N;
static sc_optim_consts K;

#define NK 8
static result res[NK] = {{"adamw p=f32 g=bf16 +wout", "plain", 28, 30, 0, 0, 0, 0, 0},
                         {"adamw p=f32 g=bf16 +wout", "stream", 28, 28, 0, 0, 0, 0, 0},
                         {"adamw f32 (p,m,v,g)", "-", 28, 28, 1, 0, 0, 0, 0},
                         {"sgd p=f32 g=bf16 +wout", "plain", 12, 14, 2, 0, 0, 0, 0},
                         {"sgd p=f32 g=bf16 +wout", "stream", 12, 12, 2, 0, 0, 0, 0},
                         {"sgd p=bf16 g=bf16", "-", 6, 6, 3, 0, 0, 0, 0},
                         {"triad f32 a=b+s*c", "plain", 12, 16, 4, 0, 0, 0, 0},
                         {"streaming triad f32", "stream", 12, 12, 4, 0, 0, 0, 0}};

static void run_kernel(int which, int rep)
{
    sc__cpu_optim_stream(!strcmp(res[which].stores, "stream"));
    switch (which) {
    case 0:
    case 1: sc_cpu_adamw_mt(P, M, V, SC_F32, SC_F32, G, SC_BF16, W, N, &K, nthreads); break;
    case 2: sc_cpu_adamw_mt(P, M, V, SC_F32, SC_F32, G, SC_F32, NULL, N, &K, nthreads); break;
    case 3:
    case 4: sc_cpu_sgd_mt(P, SC_F32, G, SC_BF16, W, N, &K, nthreads); break;
    case 5: sc_cpu_sgd_mt(P, SC_BF16, G, SC_BF16, NULL, N, &K, nthreads); break;
    default: triad(P, M, V, N, rep & 1 ? 0.5f : -0.5f, which == 7); break;
    }
}

static void prepare(int which, int rep) /* fresh gradient (state stays as the previous run left it) */
{
    if (which < 6) fill(G, which == 2 ? SC_F32 : SC_BF16, N, -0.1f, 0.2f, 100 + (uint64_t)rep);
}

static void *page_alloc(size_t bytes) /* as pinned buffers are: page-aligned */
{
    void *p = NULL;
    return posix_memalign(&p, 4096, bytes) ? NULL : p;
}

int main(int argc, char **argv)
{
    size_t n = 200000000;
    int reps = 10;
    const char *isa = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) n = (size_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) nthreads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc) isa = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--n PARAMS] [--threads T] [--reps R] [--isa avx512|avx2|scalar]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
#ifdef _OPENMP
    if (nthreads <= 0) nthreads = omp_get_max_threads();
#else
    nthreads = 1;
#endif
    if (isa && !sc__cpu_optim_force(isa)) {
        fprintf(stderr, "isa %s: not available on this CPU\n", isa);
        return 2;
    }
    N = n;
    P = (float *)malloc(n * 4), M = (float *)malloc(n * 4), V = (float *)malloc(n * 4);
    G = page_alloc(n * 4), W = (uint16_t *)page_alloc(n * 2);
    if (!P || !M || !V || !G || !W) {
        fprintf(stderr, "out of memory for n = %zu (%.1f GB)\n", n, 18e-9 * (double)n);
        return 1;
    }
    K = sc_optim_consts_make(1e-4f, 0.9f, 0.999f, 1e-8f, 0.01f, 10);
    fill(W, SC_BF16, n, 1.0f, 1.0f, 5);
    fill(G, SC_F32, n, -0.1f, 0.2f, 4);

    double *t = (double *)malloc(sizeof(double) * (size_t)reps * NK);
    for (int grp = 0; grp < 5; grp++) {
        int w0 = 0, nw = 0;
        for (int w = 0; w < NK; w++)
            if (res[w].group == grp) w0 = nw ? w0 : w, nw++;
        /* fresh, non-zero state for each group: p ~ U(-1, 1), m small, v > 0 */
        sc_dtype pt = grp == 3 ? SC_BF16 : SC_F32;
        fill(P, pt, n, -1.0f, 2.0f, 1);
        fill(M, SC_F32, n, -1e-3f, 2e-3f, 2);
        fill(V, SC_F32, n, 1e-8f, 1e-6f, 3);
        for (int r = -2; r < reps; r++)
            for (int w = w0; w < w0 + nw; w++) {
                prepare(w, r + 2);
                double t0 = now_s();
                run_kernel(w, r);
                double dt = now_s() - t0;
                if (r >= 0) t[(size_t)w * (size_t)reps + (size_t)r] = dt;
            }
        for (int w = w0; w < w0 + nw; w++) {
            double *tw = t + (size_t)w * (size_t)reps;
            qsort(tw, (size_t)reps, sizeof(double), cmp_d);
            double med = reps & 1 ? tw[reps / 2] : 0.5 * (tw[reps / 2 - 1] + tw[reps / 2]);
            res[w].med_s = med;
            res[w].gps = (double)n / med * 1e-9;
            res[w].gbs = (double)n * res[w].bytes / med * 1e-9;
            res[w].rgbs = (double)n * res[w].real / med * 1e-9;
        }
    }
    sc__cpu_optim_stream(1);
    const char *path = sc_cpu_optim_isa();
    double tr = res[6].rgbs; /* the plain triad's real rate */
    printf("n = %zu params, %d threads, %d reps (median), path %s\n\n", n, nthreads, reps, path);
    printf("%-26s %-6s %7s %5s %10s %8s %8s %8s %8s\n", "kernel", "stores", "B/param", "real", "median ms", "Gparam/s",
           "GB/s", "real GB/s", "% triad");
    for (int w = 0; w < NK; w++)
        printf("%-26s %-6s %7.0f %5.0f %10.2f %8.3f %8.2f %9.2f %7.1f%%\n", res[w].name, res[w].stores, res[w].bytes,
               res[w].real, res[w].med_s * 1e3, res[w].gps, res[w].gbs, res[w].rgbs, 100.0 * res[w].rgbs / tr);
    printf("\nstream / plain (G params/s): adamw +wout %.3fx, sgd +wout %.3fx, triad %.3fx\n", res[1].gps / res[0].gps,
           res[4].gps / res[3].gps, res[7].gps / res[6].gps);
    printf("adamw +wout, real GB/s over the plain / streaming triad's real GB/s: plain %.1f%% / %.1f%%, stream %.1f%% / "
           "%.1f%%\n", 100.0 * res[0].rgbs / tr, 100.0 * res[0].rgbs / res[7].rgbs, 100.0 * res[1].rgbs / tr,
           100.0 * res[1].rgbs / res[7].rgbs);
    printf("\ncsv\nkernel,n,threads,isa,bytes_per_param,median_ms,gparams_s,gb_s,pct_triad,stores,real_bytes_per_param,"
           "real_gb_s,pct_triad_real\n");
    for (int w = 0; w < NK; w++)
        printf("%s,%zu,%d,%s,%.0f,%.3f,%.4f,%.3f,%.1f,%s,%.0f,%.3f,%.1f\n", res[w].name, n, nthreads,
               res[w].group == 4 ? "-" : path, res[w].bytes, res[w].med_s * 1e3, res[w].gps, res[w].gbs,
               100.0 * res[w].gbs / res[6].gbs, res[w].stores, res[w].real, res[w].rgbs, 100.0 * res[w].rgbs / tr);
    free(t), free(P), free(M), free(V), free(G), free(W);
    return 0;
}
