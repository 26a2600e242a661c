/* Host optimizer kernels against the machine's memory bandwidth.
     cc -std=c11 -O3 -Wall -Wextra -Werror -fopenmp -I. bench/cpu_optim.c -o build/cpu_optim -lm
     ./build/cpu_optim [--n PARAMS (200M)] [--threads T (0: all)] [--reps R (10)] [--isa avx512|avx2|scalar]
                       [--candidates]  (AdamW under each candidate change, see candidates(); bench/cpu_optim.sh)
   Each kernel: 2 warm-ups, then the median of R timed runs; a fresh gradient is written before every run (not
   timed), all arrays are first touched by the threads that use them. The kernels with a bf16 out (wout) run twice,
   with wout's ordinary stores ("plain") and with non-temporal ones ("stream", the library's default), their runs
   alternating so that both see the same machine. "B/param" and "GB/s" count the bytes the kernel must move (reads +
   writes; the triad a[i] = b[i] + s*c[i] 12 B as STREAM does); "real" adds the read-for-ownership of each line
   written by an ordinary store without being read first (wout +2 B, the triad's a +4 B); "% triad" is real GB/s
   over the plain triad's real GB/s. The streaming triad (12 B real) is the bandwidth with no such reads. As in
   slide mode, p, m and v come from malloc (pageable), g and wout are page-aligned (pinned there). */
#define _GNU_SOURCE /* clock_gettime under -std=c11; sched_getaffinity, CPU_SET and madvise for --candidates */
#define SLIDECHECK_TESTING 1 /* the sc__ test / bench hooks (sc__cpu_*_force, sc__cpu_optim_stream / _prefetch) */
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
#ifdef __linux__
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>
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

/* ==== --candidates: AdamW in slide mode's mix (p, m, v f32 read and written, g bf16 read, the bf16 working copy
   wout written: 28 B/param) under each candidate cause of a gap to PyTorch's fused CPU AdamW, in one run with the
   candidates' runs alternating (as above, so that all see the same machine). Each changes only how the work is
   split, placed, stored or allocated, never the arithmetic: the end checks every kernel's bits against the
   library's. The "f32 mix" rows move torch's bytes (g f32, no wout: 28 B/param too). ==== */
enum { K_LIB, K_DYN, K_STATIC, K_GUIDED, K_LAYERS };
typedef struct {
    const char *name;
    int kind, threads, set, nt, pin, f32; /* set: see the buffers below; nt: wout streamed; pin: 0 no, 1 compact,
                                             2 physical cores first; f32: torch's mix */
    size_t grab;                          /* K_DYN: elements a dynamic grab; K_LAYERS: elements a call */
    int pf;                               /* the AdamW loops' software prefetch */
    double med, gps;
} cand;

/* set 0: state from malloc, advised not to take huge pages (as slide allocates it where sc_cpu_optim_tune chose
   4 KiB pages), g and wout page-aligned (as slide's pinned g and wout);
   set 1: the state with the library's huge-page hint (slide's default), g and wout of set 0;
   set 2: set 1's state with g and wout huge-page advised too (as if the pinned buffers had huge pages) */
typedef struct { float *p, *m, *v; void *g; uint16_t *w; } bufset;
static bufset B[3];
static void *GF; /* the f32 mix's gradient */

static int omp_tid(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
static int omp_nth(void)
{
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

static void range(float *p, float *m, float *v, const void *g, sc_dtype gt, uint16_t *w, size_t o, size_t len)
{
    sc_cpu_adamw_range(p + o, m + o, v + o, SC_F32, SC_F32, (const char *)g + o * sc_dtype_size(gt), gt,
                       w ? w + o : NULL, len, &K);
}


static void cand_kernel(const cand *c, float *p, float *m, float *v, const void *g, uint16_t *w, size_t n)
{
    sc_dtype gt = c->f32 ? SC_F32 : SC_BF16;
    int T = c->threads;
    (void)T;
    if (c->f32) w = NULL;
    sc__cpu_optim_stream(c->nt);
    int pf_was = sc__cpu_optim_prefetch(c->pf);
    long long nc = (long long)((n + SC__OPTIM_CHUNK - 1) / SC__OPTIM_CHUNK);
    if (c->kind == K_LIB) {
        sc_cpu_adamw_mt(p, m, v, SC_F32, SC_F32, g, gt, w, n, &K, T);
    } else if (c->kind == K_LAYERS) { /* as slide calls it: one sc_cpu_adamw_mt a layer, one after the other */
        for (size_t o = 0; o < n; o += c->grab) {
            size_t len = n - o < c->grab ? n - o : c->grab;
            sc_cpu_adamw_mt(p + o, m + o, v + o, SC_F32, SC_F32, (const char *)g + o * sc_dtype_size(gt), gt,
                            w ? w + o : NULL, len, &K, T);
        }
    } else if (c->kind == K_STATIC) { /* one contiguous range a thread, as at::parallel_for splits */
        SC__OMP(omp parallel num_threads(T))
        {
            size_t per = ((n + (size_t)omp_nth() - 1) / (size_t)omp_nth() + 63) & ~(size_t)63, o = per * (size_t)omp_tid();
            if (o < n) range(p, m, v, g, gt, w, o, n - o < per ? n - o : per);
        }
    } else if (c->kind == K_DYN) {
        long long ng = (long long)((n + c->grab - 1) / c->grab);
        SC__OMP(omp parallel for num_threads(T) schedule(dynamic, 1))
        for (long long q = 0; q < ng; q++) {
            size_t o = (size_t)q * c->grab;
            range(p, m, v, g, gt, w, o, n - o < c->grab ? n - o : c->grab);
        }
    } else if (c->kind == K_GUIDED) {
        SC__OMP(omp parallel for num_threads(T) schedule(guided, 4))
        for (long long q = 0; q < nc; q++) {
            size_t o = (size_t)q * SC__OPTIM_CHUNK;
            range(p, m, v, g, gt, w, o, n - o < SC__OPTIM_CHUNK ? n - o : SC__OPTIM_CHUNK);
        }
    }
    sc__cpu_optim_prefetch(pf_was);
}

/* ---- the machine: the affinity mask, its physical cores and NUMA nodes, the cgroup quota, THP ---- */
#define MAXCPU 4096
static int mask_cpu[MAXCPU], cores_first[MAXCPU], n_mask, n_phys, n_numa;

static long read_long(const char *fmt, int a)
{
    char path[256];
    snprintf(path, sizeof path, fmt, a);
    FILE *f = fopen(path, "r");
    long v = -1;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1) v = -1;
        fclose(f);
    }
    return v;
}

static void read_line(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    snprintf(out, cap, "?");
    if (!f) return;
    if (fgets(out, (int)cap, f)) out[strcspn(out, "\n")] = 0;
    fclose(f);
}

static void machine_scan(void)
{
#ifdef __linux__
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof s, &s) == 0)
        for (int c = 0; c < CPU_SETSIZE && n_mask < MAXCPU; c++)
            if (CPU_ISSET(c, &s)) mask_cpu[n_mask++] = c;
    static long key[MAXCPU];
    static int node_seen[1024];
    int nf = 0;
    for (int i = 0; i < n_mask; i++) { /* first CPU of each physical core, in mask order, then the siblings */
        long k = read_long("/sys/devices/system/cpu/cpu%d/topology/physical_package_id", mask_cpu[i]) * 100000 +
                 read_long("/sys/devices/system/cpu/cpu%d/topology/core_id", mask_cpu[i]);
        int dup = 0;
        for (int j = 0; j < i; j++) dup |= key[j] == k;
        key[i] = k;
        if (!dup) cores_first[nf++] = mask_cpu[i], n_phys++;
        for (int nd = 0; nd < 1024; nd++) {
            char path[128];
            snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/node%d", mask_cpu[i], nd);
            if (!access(path, F_OK)) {
                n_numa += !node_seen[nd], node_seen[nd] = 1;
                break;
            }
        }
    }
    for (int i = 0; i < n_mask; i++) {
        int in = 0;
        for (int j = 0; j < nf; j++) in |= cores_first[j] == mask_cpu[i];
        if (!in) cores_first[nf++] = mask_cpu[i];
    }
#endif
}

/* pin the team of T threads: 0 the whole mask again, 1 thread t on the mask's t-th CPU, 2 physical cores first */
static void pin(int mode, int T)
{
#ifdef __linux__
    if (!n_mask) return;
    (void)T;
    SC__OMP(omp parallel num_threads(T))
    {
        cpu_set_t s;
        CPU_ZERO(&s);
        int t = omp_tid();
        if (mode == 0)
            for (int i = 0; i < n_mask; i++) CPU_SET(mask_cpu[i], &s);
        else CPU_SET(mode == 1 ? mask_cpu[t % n_mask] : cores_first[t % n_mask], &s);
        if (sched_setaffinity(0, sizeof s, &s)) perror("sched_setaffinity");
    }
#else
    (void)mode, (void)T;
#endif
}

static double anon_huge_gib(void) /* this process's memory on transparent huge pages */
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    double kb = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "AnonHugePages:", 14)) kb = atof(line + 14);
    fclose(f);
    return kb / 1048576.0;
}

static void *huge_alloc(size_t bytes) /* 2 MiB-aligned, advised whole */
{
    void *p = NULL;
    if (posix_memalign(&p, (size_t)2 << 20, bytes)) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, (bytes + ((size_t)2 << 20) - 1) & ~(((size_t)2 << 20) - 1), MADV_HUGEPAGE);
#endif
    return p;
}

static int candidates(size_t n, int reps, int T)
{
    machine_scan();
    int lib_t = sc__optim_threads(0);
    if (T <= 0) T = lib_t;
    nthreads = T;
    static cand c[32];
    int nc = 0;
    /* what the library picks on this host: its tuning, timed here as slide mode times it */
    if (sc_cpu_optim_tune(lib_t, 0) != SC_SUCCESS) fprintf(stderr, "%s\n", sc_last_error());
    sc_cpu_optim_tuning tuned = sc_cpu_optim_choice();
#define ADD(nm, kd, th, st, ntv, pn, f, gr) c[nc++] = (cand){nm, kd, th, st, ntv, pn, f, gr, 0, 0, 0}
#define ADDPF(nm, kd, th, st, pf) c[nc++] = (cand){nm, kd, th, st, 1, 0, 0, 0, pf, 0, 0}
    ADD("today", K_LIB, T, 0, 1, 0, 0, 0); /* the loop without prefetch, the state on 4 KiB pages */
    ADD("wout ordinary stores", K_LIB, T, 0, 0, 0, 0, 0);
    if (T > 1) ADD("threads T-1 (slide's)", K_LIB, T - 1, 0, 1, 0, 0, 0);
    if (n_phys > 0 && n_phys < T) ADD("threads = physical cores", K_LIB, n_phys, 0, 1, 0, 0, 0);
    ADD("pinned compact", K_LIB, T, 0, 1, 1, 0, 0);
    if (n_phys > 0 && n_phys < n_mask) ADD("pinned cores first", K_LIB, T, 0, 1, 2, 0, 0);
    ADD("calls of a 1.7B layer", K_LAYERS, T, 0, 1, 0, 0, (size_t)50331648); /* Qwen3-1.7B: 50.3M a layer */
    ADD("static split (torch's)", K_STATIC, T, 0, 1, 0, 0, 0);
    ADD("guided 4 x 64K", K_GUIDED, T, 0, 1, 0, 0, 0);
    ADD("dynamic grabs 64K", K_DYN, T, 0, 1, 0, 0, (size_t)1 << 16);
    ADD("dynamic grabs 1M", K_DYN, T, 0, 1, 0, 0, (size_t)1 << 20);
    ADD("dynamic grabs 4M", K_DYN, T, 0, 1, 0, 0, (size_t)1 << 22);
    ADDPF("prefetch", K_LIB, T, 0, 1);
    ADDPF("prefetch + huge state", K_LIB, T, 1, 1);
    ADD("huge pages: state", K_LIB, T, 1, 1, 0, 0, 0);
    ADD("huge pages: all", K_LIB, T, 2, 1, 0, 0, 0);
    ADD("static + huge state", K_STATIC, T, 1, 1, 0, 0, 0);
    ADDPF("library now", K_LIB, lib_t, tuned.huge_pages, tuned.prefetch);
    ADD("f32 mix: today", K_LIB, T, 0, 1, 0, 1, 0);
    ADD("f32 mix: static split", K_STATIC, T, 0, 1, 0, 1, 0);
    ADD("f32 mix: huge state", K_LIB, T, 1, 1, 0, 1, 0);
#undef ADD

    /* the bits: every kernel from one state and gradient, against the library's range kernel (n odd, wout
       misaligned by one element so that the streaming head runs too) */
    size_t nk = ((size_t)1 << 20) + 1037;
    float *r[4], *x[4];
    uint16_t *gb = (uint16_t *)page_alloc((nk + 1) * 2), *wr = (uint16_t *)page_alloc((nk + 1) * 2),
             *wx = (uint16_t *)page_alloc((nk + 1) * 2);
    for (int i = 0; i < 4; i++) r[i] = (float *)malloc(nk * 4), x[i] = (float *)malloc(nk * 4);
    if (!gb || !wr || !wx || !r[3] || !x[3]) return fprintf(stderr, "out of memory\n"), 1;
    K = sc_optim_consts_make(1e-4f, 0.9f, 0.999f, 1e-8f, 0.01f, 10);
    int bits_ok = 1;
    for (int f = 0; f < 2; f++) {
        fill(r[0], SC_F32, nk, -1.0f, 2.0f, 1), fill(r[1], SC_F32, nk, -1e-3f, 2e-3f, 2);
        fill(r[2], SC_F32, nk, 1e-8f, 1e-6f, 3), fill(r[3], SC_F32, nk, -0.1f, 0.2f, 4);
        fill(gb + 1, SC_BF16, nk, -0.1f, 0.2f, 4);
        const void *g = f ? (const void *)r[3] : (const void *)(gb + 1);
        sc__cpu_optim_stream(1);
        float *pr = (float *)malloc(nk * 4), *mr = (float *)malloc(nk * 4), *vr = (float *)malloc(nk * 4);
        memcpy(pr, r[0], nk * 4), memcpy(mr, r[1], nk * 4), memcpy(vr, r[2], nk * 4);
        sc_cpu_adamw_range(pr, mr, vr, SC_F32, SC_F32, g, f ? SC_F32 : SC_BF16, f ? NULL : wr + 1, nk, &K);
        for (int i = 0; i < nc; i++) {
            if (c[i].f32 != f) continue;
            for (int a = 0; a < 3; a++) memcpy(x[a], r[a], nk * 4);
            memset(wx, 0, (nk + 1) * 2);
            pin(c[i].pin, c[i].threads);
            cand_kernel(&c[i], x[0], x[1], x[2], g, wx + 1, nk);
            int ok = !memcmp(x[0], pr, nk * 4) && !memcmp(x[1], mr, nk * 4) && !memcmp(x[2], vr, nk * 4) &&
                     (f || !memcmp(wx + 1, wr + 1, nk * 2));
            if (!ok) fprintf(stderr, "BITS DIFFER: %s\n", c[i].name);
            bits_ok &= ok;
        }
        pin(0, T);
        free(pr), free(mr), free(vr);
    }
    for (int i = 0; i < 4; i++) free(r[i]), free(x[i]);
    free(gb), free(wr), free(wx);

    /* the big buffers; each first touched by fill's static split over T threads */
    B[0].p = (float *)malloc(n * 4), B[0].m = (float *)malloc(n * 4), B[0].v = (float *)malloc(n * 4);
    if (B[0].p && B[0].m && B[0].v)
        sc__host_huge(B[0].p, n * 4, 0), sc__host_huge(B[0].m, n * 4, 0), sc__host_huge(B[0].v, n * 4, 0);
    B[0].g = page_alloc(n * 2), B[0].w = (uint16_t *)page_alloc(n * 2);
    B[1].p = (float *)malloc(n * 4), B[1].m = (float *)malloc(n * 4), B[1].v = (float *)malloc(n * 4);
    if (B[1].p && B[1].m && B[1].v)
        sc__host_huge(B[1].p, n * 4, 1), sc__host_huge(B[1].m, n * 4, 1), sc__host_huge(B[1].v, n * 4, 1);
    B[1].g = B[0].g, B[1].w = B[0].w;
    B[2] = B[1], B[2].g = huge_alloc(n * 2), B[2].w = (uint16_t *)huge_alloc(n * 2);
    GF = page_alloc(n * 4);
    for (int s = 0; s < 3; s++)
        if (!B[s].p || !B[s].m || !B[s].v || !B[s].g || !B[s].w || !GF) {
            fprintf(stderr, "out of memory for n = %zu (%.1f GB)\n", n, 36e-9 * (double)n);
            return 1;
        }
    for (int s = 0; s < 3; s++) {
        if (s < 2) {
            fill(B[s].p, SC_F32, n, -1.0f, 2.0f, 1), fill(B[s].m, SC_F32, n, -1e-3f, 2e-3f, 2);
            fill(B[s].v, SC_F32, n, 1e-8f, 1e-6f, 3);
        }
        fill(B[s].g, SC_BF16, n, -0.1f, 0.2f, 4), fill(B[s].w, SC_BF16, n, 1.0f, 1.0f, 5);
    }
    fill(GF, SC_F32, n, -0.1f, 0.2f, 4);
    double huge = anon_huge_gib();

    double *t = (double *)malloc(sizeof(double) * (size_t)reps * (size_t)nc);
    for (int rr = -2; rr < reps; rr++)
        for (int i = 0; i < nc; i++) {
            bufset *b = &B[c[i].set];
            void *g = c[i].f32 ? GF : b->g;
            fill(g, c[i].f32 ? SC_F32 : SC_BF16, n, -0.1f, 0.2f, 100 + (uint64_t)(rr + 2));
            pin(c[i].pin, c[i].threads);
            double t0 = now_s();
            cand_kernel(&c[i], b->p, b->m, b->v, g, b->w, n);
            double dt = now_s() - t0;
            if (c[i].pin) pin(0, c[i].threads);
            if (rr >= 0) t[(size_t)i * (size_t)reps + (size_t)rr] = dt;
        }
    for (int i = 0; i < nc; i++) {
        double *ti = t + (size_t)i * (size_t)reps;
        qsort(ti, (size_t)reps, sizeof(double), cmp_d);
        c[i].med = reps & 1 ? ti[reps / 2] : 0.5 * (ti[reps / 2 - 1] + ti[reps / 2]);
        c[i].gps = (double)n / c[i].med * 1e-9;
    }
    sc__cpu_optim_stream(1);

    char thp[128], defrag[128], cpus[64];
    read_line("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp);
    read_line("/sys/kernel/mm/transparent_hugepage/defrag", defrag, sizeof defrag);
#ifdef _OPENMP
    int omp_d = omp_get_max_threads(), quota = sc__cpu_quota();
#else
    int omp_d = 1, quota = 0;
#endif
    snprintf(cpus, sizeof cpus, "%d..%d", n_mask ? mask_cpu[0] : -1, n_mask ? mask_cpu[n_mask - 1] : -1);
    printf("machine: affinity mask %d CPUs (%s), %d physical cores, %d NUMA node(s); OpenMP default %d threads; "
           "cgroup CPU quota %d (0: none); THP enabled: %s; defrag: %s; on huge pages after setup: %.2f GiB\n",
           n_mask, cpus, n_phys, n_numa, omp_d, quota, thp, defrag, huge);
    printf("library picks: sc_cpu_adamw_mt(threads 0) -> %d threads (slide's optimizer: %d), path %s, chunks of %zu "
           "in dynamic grabs of 4, wout streamed; sc_cpu_optim_tune (%d threads, %zu params): %.3f / %.3f G params/s "
           "on 4 KiB pages (prefetch off / on), %.3f / %.3f on huge pages -> prefetch %s, huge pages %s\n",
           lib_t, lib_t > 1 ? lib_t - 1 : 1, sc_cpu_optim_isa(), (size_t)SC__OPTIM_CHUNK, tuned.threads, tuned.n,
           tuned.gparams_s[0][0], tuned.gparams_s[0][1], tuned.gparams_s[1][0], tuned.gparams_s[1][1],
           tuned.prefetch ? "on" : "off", tuned.huge_pages ? "on" : "off");
    printf("bits: %s (every candidate's kernel against sc_cpu_adamw_range, n = %zu, both mixes)\n\n",
           bits_ok ? "all equal" : "DIFFER", nk);
    printf("n = %zu params, T = %d threads, %d reps (median), AdamW, slide mix: p m v f32, g bf16, wout bf16 "
           "(28 B/param); f32 mix: p m v g f32 (28 B/param, torch's)\n\n", n, T, reps);
    printf("%-26s %7s %4s %10s %9s %8s\n", "candidate", "threads", "set", "median ms", "Gparam/s", "vs today");
    double base = c[0].gps, base32 = 0;
    for (int i = 0; i < nc; i++)
        if (c[i].f32 && !base32) base32 = c[i].gps;
    for (int i = 0; i < nc; i++)
        printf("%-26s %7d %4d %10.2f %9.3f %7.3fx\n", c[i].name, c[i].threads, c[i].set, c[i].med * 1e3, c[i].gps,
               c[i].gps / (c[i].f32 ? base32 : base));
    printf("\ncandidates csv\ncandidate,mix,threads,set,n,reps,median_ms,gparams_s,vs_today,bits_ok\n");
    for (int i = 0; i < nc; i++)
        printf("%s,%s,%d,%d,%zu,%d,%.3f,%.4f,%.4f,%d\n", c[i].name, c[i].f32 ? "f32" : "slide", c[i].threads,
               c[i].set, n, reps, c[i].med * 1e3, c[i].gps, c[i].gps / (c[i].f32 ? base32 : base), bits_ok);
    free(t);
    return bits_ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    size_t n = 200000000;
    int reps = 10;
    const char *isa = NULL;
    int cands = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--candidates")) cands = 1;
        else if (!strcmp(argv[i], "--n") && i + 1 < argc) n = (size_t)strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) nthreads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc) isa = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--n PARAMS] [--threads T] [--reps R] [--isa avx512|avx2|scalar] [--candidates]\n",
                    argv[0]);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (isa && !sc__cpu_optim_force(isa)) {
        fprintf(stderr, "isa %s: not available on this CPU\n", isa);
        return 2;
    }
    if (cands) return candidates(n, reps, nthreads);
#ifdef _OPENMP
    if (nthreads <= 0) nthreads = omp_get_max_threads();
#else
    nthreads = 1;
#endif
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
