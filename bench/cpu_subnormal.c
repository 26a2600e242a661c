/* The host optimizer when its state reaches the subnormal range, where each vector instruction with a subnormal input
   or result costs an x86 core a microcode assist (the library keeps IEEE's subnormals: the device's bits).
     cc -std=c11 -O3 -Wall -Wextra -Werror -fopenmp -I. bench/cpu_subnormal.c -o build/cpu_subnormal -lm
     ./build/cpu_subnormal [--n PARAMS (64M)] [--reps R (7)]
   AdamW, f32 p, m, v (slide's master weights and state), bf16 gradients and bf16 out, all threads. Each scenario
   writes fresh inputs before every run (not timed); the median of R runs. Scenarios: ordinary values; m subnormal with
   g = 0 (a row whose gradients stopped: its first moment decays through the subnormals) and g so small that
   (1 - b2) g^2 underflows, in every lane, in 5% of the rows (runs of 4096), and in 1% or 0.1% of single lanes. */
#define _GNU_SOURCE
#define SLIDECHECK_IMPLEMENTATION
#include "slidecheck.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>

static size_t N = 64000000;
static float *P, *M, *V;
static uint16_t *G, *W;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* kind 0: ordinary; 1: m subnormal, g = 0; 2: g tiny (v's term underflows), m and v small. In a share `frac` of
   runs of `run` elements (1: single lanes), from a fixed generator so both modes see the same inputs. */
static void fill(int kind, double frac, size_t run)
{
    SC__OMP(omp parallel for schedule(static))
    for (long long i = 0; i < (long long)N; i++)
        P[i] = 0.02f, M[i] = 1e-4f, V[i] = 1e-8f, G[i] = sc_f32_to_bf16(1e-3f), W[i] = 0;
    if (!kind) return;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t b = 0; b + run <= N; b += run) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        if ((double)(s >> 11) / 9007199254740992.0 >= frac) continue;
        for (size_t i = b; i < b + run; i++) {
            if (kind == 1) M[i] = 3e-39f, G[i] = 0;
            else G[i] = sc_f32_to_bf16(1e-22f), M[i] = 1e-25f, V[i] = 1e-44f;
        }
    }
}

static double run(int kind, double frac, size_t len, int reps)
{
    double t[64];
    sc_optim_consts k = sc_optim_consts_make(1e-4f, 0.9f, 0.999f, 1e-8f, 0.1f, 100);
    for (int r = 0; r < reps; r++) {
        fill(kind, frac, len);
        double t0 = now_s();
        sc_cpu_adamw_mt(P, M, V, SC_F32, SC_F32, G, SC_BF16, W, N, &k, 0);
        t[r] = now_s() - t0;
    }
    for (int a = 0; a < reps; a++)
        for (int b = a + 1; b < reps; b++)
            if (t[b] < t[a]) { double x = t[a]; t[a] = t[b]; t[b] = x; }
    return (double)N / t[reps / 2] / 1e9;
}

int main(int argc, char **argv)
{
    int reps = 7;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) N = (size_t)atof(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--n PARAMS] [--reps R]\n", argv[0]);
            return 2;
        }
    }
    if (N < 4096 || reps < 1 || reps > 64) {
        fprintf(stderr, "cpu_subnormal: --n >= 4096 and --reps in 1..64\n");
        return 2;
    }
    P = (float *)malloc(N * 4), M = (float *)malloc(N * 4), V = (float *)malloc(N * 4);
    G = (uint16_t *)malloc(N * 2), W = (uint16_t *)malloc(N * 2);
    if (!P || !M || !V || !G || !W) {
        fprintf(stderr, "cpu_subnormal: out of memory for %zu parameters\n", N);
        return 1;
    }
    printf("host AdamW on %zu parameters (f32 p, m, v; bf16 g and out), %s, %d threads; G params/s, median of %d\n", N,
           sc_cpu_optim_isa(), omp_get_max_threads(), reps);
    printf("%-34s %10s %12s\n", "inputs", "G params/s", "/ ordinary");
    struct { int kind; double frac; size_t run; const char *name; } sc[] = {
        {0, 0, 1, "ordinary"},
        {1, 1, 1, "m subnormal, g = 0: every lane"}, {1, 0.05, 4096, "m subnormal, g = 0: 5% of rows"},
        {1, 0.01, 1, "m subnormal, g = 0: 1% of lanes"}, {2, 1, 1, "g^2 underflows: every lane"},
        {2, 0.05, 4096, "g^2 underflows: 5% of rows"}, {2, 0.01, 1, "g^2 underflows: 1% of lanes"},
        {2, 0.001, 1, "g^2 underflows: 0.1% of lanes"}};
    double base = 0;
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
        double r = run(sc[i].kind, sc[i].frac, sc[i].run, reps);
        if (!i) base = r;
        printf("%-34s %10.3f %11.3fx\n", sc[i].name, r, r / base);
    }
    free(P), free(M), free(V), free(G), free(W);
    return 0;
}
