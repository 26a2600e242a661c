/* The CPU backend's matmuls and a whole training step of a small byte-level model.
     cc -std=c11 -O3 -Wall -Wextra -Werror -fopenmp -I. bench/cpu_matmul.c -o build/cpu_matmul -lm
     ./build/cpu_matmul [--threads T (0: all)] [--reps R (10)] [--isa avx512|avx2|scalar] [--B 8] [--T 128]
                        [--no-step] [--no-mm] [--big]
   Step: config "tiny" with vocab 256, AdamW, fp32 on the CPU device, policies none and full; one warm-up step,
   then the median of R timed sc_model_forward_backward + sc_model_optimizer_step.
   Matmuls: each shape of that model's step (N = B*T rows) forward, and backward (dX and dW), alone; a warm-up,
   then the median of R. GFLOP/s counts 2*N*IC*OC per forward and twice that per backward. --big adds the shapes
   of qwen3-0.6b at N = 32 (the LM head of 151936 rows included). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#define SLIDECHECK_TESTING 1 /* the sc__ test / bench hooks (sc__cpu_*_force, sc__cpu_optim_stream) */
#define SLIDECHECK_IMPLEMENTATION
#include "slidecheck.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static void fill(float *x, size_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = (float)((double)(s >> 40) / (double)(1ull << 24)) - 0.5f;
    }
}

typedef struct { const char *name; int IC, OC; } shape;

/* time forward and backward (dX + dW) of one shape; returns the seconds of each */
static void bench_shape(const shape *s, int N, int reps, double *tf, double *tb)
{
    size_t ni = (size_t)N * s->IC, no = (size_t)N * s->OC, nw = (size_t)s->IC * s->OC;
    float *x = (float *)malloc(sizeof(float) * ni), *w = (float *)malloc(sizeof(float) * nw);
    float *y = (float *)malloc(sizeof(float) * no), *dy = (float *)malloc(sizeof(float) * no);
    float *dx = (float *)malloc(sizeof(float) * ni), *dw = (float *)calloc(nw, sizeof(float));
    double *t = (double *)malloc(sizeof(double) * (size_t)reps);
    fill(x, ni, 1), fill(w, nw, 2), fill(dy, no, 3);
    sc_cpu_matmul_forward(y, x, w, NULL, N, s->IC, s->OC);
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        sc_cpu_matmul_forward(y, x, w, NULL, N, s->IC, s->OC);
        t[r] = now_s() - t0;
    }
    *tf = median(t, reps);
    sc_cpu_matmul_backward(dx, dw, NULL, dy, x, w, N, s->IC, s->OC);
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        sc_cpu_matmul_backward(dx, dw, NULL, dy, x, w, N, s->IC, s->OC);
        t[r] = now_s() - t0;
    }
    *tb = median(t, reps);
    free(x), free(w), free(y), free(dy), free(dx), free(dw), free(t);
}

static void bench_matmuls(const char *title, const shape *sh, int ns, int N, int reps)
{
    double ff = 0, fb = 0, stf = 0, stb = 0;
    printf("%s, N = %d\n  %-10s %6s %6s %10s %9s %10s %9s\n", title, N, "matmul", "IC", "OC", "fwd ms", "GFLOP/s",
           "bwd ms", "GFLOP/s");
    for (int i = 0; i < ns; i++) {
        double tf, tb, fl = 2.0 * N * sh[i].IC * (double)sh[i].OC;
        bench_shape(&sh[i], N, reps, &tf, &tb);
        printf("  %-10s %6d %6d %10.3f %9.1f %10.3f %9.1f\n", sh[i].name, sh[i].IC, sh[i].OC, tf * 1e3, fl / tf * 1e-9,
               tb * 1e3, 2 * fl / tb * 1e-9);
        ff += fl, fb += 2 * fl, stf += tf, stb += tb;
    }
    printf("  %-24s %10.3f %9.1f %10.3f %9.1f   (all: %.1f GFLOP/s)\n", "total", stf * 1e3, ff / stf * 1e-9,
           stb * 1e3, fb / stb * 1e-9, (ff + fb) / (stf + stb) * 1e-9);
}

static void bench_step(const char *policy, int B, int T, int reps)
{
    sc_config c;
    sc_config_named(&c, "tiny");
    c.vocab_size = 256;
    sc_model_config mc = sc_model_config_init();
    mc.optim = SC_OPTIM_ADAMW;
    mc.lr = 1e-3f;
    sc_plan plan;
    sc_model *m;
    if (sc_plan_parse(&plan, policy, c.num_layers) != SC_SUCCESS || sc_model_create(&m, &c, &mc, NULL) != SC_SUCCESS) {
        printf("step %s: %s\n", policy, sc_last_error());
        return;
    }
    int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * (size_t)B * T);
    uint64_t s = 7;
    for (int i = 0; i < B * T; i++) s ^= s << 13, s ^= s >> 7, s ^= s << 17, ids[i] = (int32_t)(s >> 56);
    double *t = (double *)malloc(sizeof(double) * (size_t)reps);
    float loss = 0, first = 0;
    for (int r = -1; r < reps; r++) {
        double t0 = now_s();
        if (sc_model_forward_backward(m, &plan, ids, B, T, &loss) != SC_SUCCESS ||
            sc_model_optimizer_step(m) != SC_SUCCESS) {
            printf("step %s: %s\n", policy, sc_last_error());
            break;
        }
        if (r >= 0) t[r] = now_s() - t0;
        else first = loss;
    }
    double fl = 0; /* matmul flops of one step: forward, backward 2x; `full` replays the layers' forward */
    {
        int C = c.hidden_size, Q = (c.num_heads + 2 * c.num_kv_heads) * c.head_dim, HD = c.num_heads * c.head_dim;
        double N = (double)B * T, layer = 2 * N * ((double)C * Q + (double)HD * C + 2.0 * C * c.intermediate_size +
                                                  (double)c.intermediate_size * C);
        fl = 3 * (c.num_layers * layer + 2 * N * C * c.vocab_size);
        if (!strcmp(policy, "full")) fl += c.num_layers * layer;
    }
    double med = median(t, reps);
    printf("step tiny/v256 B=%d T=%d policy %-5s: %8.2f ms median (min %.2f)  loss %.6f -> %.6f  "
           "(matmul flops %.2f G, %.1f GFLOP/s if all step time)\n",
           B, T, policy, med * 1e3, t[0] * 1e3, first, loss, fl * 1e-9, fl / med * 1e-9);
    free(t), free(ids);
    sc_model_destroy(m);
}

int main(int argc, char **argv)
{
    int threads = 0, reps = 10, B = 8, T = 128, step = 1, mm = 1, big = 0;
    const char *isa = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc) isa = argv[++i];
        else if (!strcmp(argv[i], "--B") && i + 1 < argc) B = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--T") && i + 1 < argc) T = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-step")) step = 0;
        else if (!strcmp(argv[i], "--no-mm")) mm = 0;
        else if (!strcmp(argv[i], "--big")) big = 1;
        else { fprintf(stderr, "usage: see the top of bench/cpu_matmul.c\n"); return 2; }
    }
    if (reps < 1) reps = 1;
#ifdef _OPENMP
    if (threads > 0) omp_set_num_threads(threads);
    threads = omp_get_max_threads();
#else
    threads = 1;
#endif
    if (isa && !sc__cpu_matmul_force(isa)) { fprintf(stderr, "this CPU cannot run --isa %s\n", isa); return 2; }
    printf("threads %d, matmul isa %s\n", threads, sc_cpu_matmul_isa());
    if (mm) {
        const shape tiny[] = {{"qkv", 128, 384}, {"o", 192, 128}, {"gate_up", 128, 704}, {"down", 352, 128},
                              {"lm_head", 128, 256}};
        bench_matmuls("tiny/v256 shapes", tiny, 5, B * T, reps);
        if (big) {
            const shape q06[] = {{"qkv", 1024, 4096}, {"o", 2048, 1024}, {"gate_up", 1024, 6144},
                                 {"down", 3072, 1024}, {"lm_head", 1024, 151936}};
            bench_matmuls("qwen3-0.6b shapes", q06, 5, 32, reps < 3 ? reps : 3);
        }
    }
    if (step) {
        bench_step("none", B, T, reps);
        bench_step("full", B, T, reps);
    }
    return 0;
}
