/* Host optimizer kernels: every path (scalar, AVX2, AVX-512), single- and multithreaded, equals a plain scalar
   reference bit for bit, for every dtype combination, and the f32 case equals sc_cpu_adamw/sgd_update. */
#define SLIDECHECK_TESTING 1 /* the sc__ test hooks (the Makefile's test builds define it too) */
#define SLIDECHECK_IMPLEMENTATION
#include "slidecheck.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* sc_cpu_optim_tune: two processes of this host asked to time at the same moment take turns (the
   file lock), so that neither times the host while the other loads it. Run before anything here
   starts OpenMP threads, which a fork does not carry over. */
static void tune_turns(void)
{
    int go[2], res[2];
    pid_t kid[2] = {-1, -1};
    int64_t w[2][2] = {{0, 0}, {0, 0}};
    int ok = pipe(go) == 0 && pipe(res) == 0;
    for (int i = 0; i < 2 && ok; i++) {
        fflush(stdout);
        kid[i] = fork();
        if (kid[i] == 0) { /* wait for the parent's start, tune, send the window */
            char c;
            close(go[1]);
            int64_t m[3] = {i, 0, 0};
            if (read(go[0], &c, 1) == 0 && sc_cpu_optim_tune(2, (size_t)1 << 20) == SC_SUCCESS)
                sc__cpu_optim_tune_window(&m[1], &m[2]);
            _exit(write(res[1], m, sizeof m) == (ssize_t)sizeof m ? 0 : 1);
        }
        ok = kid[i] > 0;
    }
    if (ok) close(go[1]); /* both children start at once */
    for (int i = 0; i < 2 && ok; i++) {
        int64_t m[3];
        ok = read(res[0], m, sizeof m) == (ssize_t)sizeof m && m[0] >= 0 && m[0] < 2;
        if (ok) w[m[0]][0] = m[1], w[m[0]][1] = m[2];
    }
    for (int i = 0; i < 2; i++)
        if (kid[i] > 0) waitpid(kid[i], NULL, 0);
    int timed = ok && w[0][0] > 0 && w[0][1] > w[0][0] && w[1][0] > 0 && w[1][1] > w[1][0];
    int a = timed && w[1][0] < w[0][0], b = !a; /* a: the one that began first */
    CHECK(timed && w[a][1] <= w[b][0],
          "sc_cpu_optim_tune: two processes asked at once time one after the other (0-%.1f ms, then %.1f-%.1f ms)",
          (w[a][1] - w[a][0]) / 1e6, (w[b][0] - w[a][0]) / 1e6, (w[b][1] - w[a][0]) / 1e6);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) /* uniform in [-1, 1) */
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 40) / (double)(1ull << 23) - 1.0);
}

/* The reference: the formula as written, each product through a volatile so that no compiler flag
   (-ffp-contract=fast -mfma) can fuse it into an FMA. */
static float ld(const void *x, sc_dtype t, size_t i)
{
    return t == SC_BF16 ? sc_bf16_to_f32(((const uint16_t *)x)[i]) : ((const float *)x)[i];
}
static void st(void *x, sc_dtype t, size_t i, float f)
{
    if (t == SC_BF16) ((uint16_t *)x)[i] = sc_f32_to_bf16(f);
    else ((float *)x)[i] = f;
}
/* 1: AdamW's m and v in bf16 whatever p's dtype (the state_bf16 option) */
static int s_bf16;
static sc_dtype sdt(sc_dtype pt) { return s_bf16 ? SC_BF16 : pt; }

static float mul(float a, float b)
{
    volatile float r = a * b;
    return r;
}
static void ref_adamw(void *p, void *m, void *v, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout, size_t n,
                      float lr, float b1, float b2, float eps, float wd, int t)
{
    float decay = 1.0f - mul(lr, wd), omb1 = 1.0f - b1, omb2 = 1.0f - b2;
    float step = lr / (1.0f - powf(b1, (float)t)), bc2s = sqrtf(1.0f - powf(b2, (float)t));
    for (size_t i = 0; i < n; i++) {
        float gi = ld(g, gt, i), pd = mul(ld(p, pt, i), decay);
        float mi = mul(b1, ld(m, sdt(pt), i)) + mul(omb1, gi);
        float vi = mul(b2, ld(v, sdt(pt), i)) + mul(mul(omb2, gi), gi);
        st(m, sdt(pt), i, mi);
        st(v, sdt(pt), i, vi);
        float pn = pd - mul(step, mi / (sqrtf(vi) / bc2s + eps));
        st(p, pt, i, pn);
        if (wout) wout[i] = sc_f32_to_bf16(pn);
    }
}
static void ref_sgd(void *p, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout, size_t n, float lr, float wd)
{
    for (size_t i = 0; i < n; i++) {
        float pi = ld(p, pt, i), pn = pi - mul(lr, ld(g, gt, i) + mul(wd, pi));
        st(p, pt, i, pn);
        if (wout) wout[i] = sc_f32_to_bf16(pn);
    }
}

/* sc_cpu_sgd_update / sc_cpu_adamw_update as slidecheck.h had them before these kernels (they now call the _mt
   functions, so comparing with them alone would be circular), verbatim. Plain C, so a build that contracts a*b + c
   into an FMA (clang -mfma, gcc -ffp-contract=fast -mfma, ...) changes them: contracts() detects that. */
static int contracts(void)
{
    volatile float va = 1.0f + 0x1p-12f, vc = -1.0f;
    float a = va, c = vc;
    return a * a + c != 0x1p-11f; /* rounded: 2^-11; fused: 2^-11 + 2^-24 */
}
static void old_sgd(float *p, const float *g, size_t n, float lr, float weight_decay)
{
    for (long long i = 0; i < (long long)n; i++) p[i] -= lr * (g[i] + weight_decay * p[i]);
}
static void old_adamw(float *p, float *m, float *v, const float *g, size_t n, float lr, float beta1, float beta2,
                      float eps, float weight_decay, int t)
{
    float bc1 = 1.0f - powf(beta1, (float)t), bc2 = 1.0f - powf(beta2, (float)t);
    float step = lr / bc1, bc2s = sqrtf(bc2);
    for (long long i = 0; i < (long long)n; i++) {
        float pi = p[i] * (1.0f - lr * weight_decay);
        m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
        v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
        p[i] = pi - step * (m[i] / (sqrtf(v[i]) / bc2s + eps));
    }
}

/* One state: p in pt, m, v in sdt(pt), g in gt, wout. Buffers are malloc'ed at exactly their size, so ASan sees
   overruns. */
typedef struct { void *p, *m, *v, *g; uint16_t *w; } state;
static void fill(void *x, sc_dtype t, size_t n, float scale, int positive)
{
    for (size_t i = 0; i < n; i++) {
        float f = frand() * scale;
        st(x, t, i, positive ? fabsf(f) : f);
    }
}
static state make(sc_dtype pt, sc_dtype gt, size_t n, int with_w)
{
    size_t ps = sc_dtype_size(pt), ss = sc_dtype_size(sdt(pt)), gs = sc_dtype_size(gt), k = n ? n : 1;
    state s = {malloc(k * ps), malloc(k * ss), malloc(k * ss), malloc(k * gs), with_w ? (uint16_t *)malloc(k * 2) : NULL};
    fill(s.p, pt, n, 1.0f, 0);
    fill(s.m, sdt(pt), n, 1e-2f, 0);
    fill(s.v, sdt(pt), n, 1e-4f, 1);
    fill(s.g, gt, n, 1e-1f, 0);
    if (s.w) memset(s.w, 0xab, n * 2);
    return s;
}
static void set(state d, state a, sc_dtype pt, sc_dtype gt, size_t n) /* d = a */
{
    size_t ps = sc_dtype_size(pt), ss = sc_dtype_size(sdt(pt)), gs = sc_dtype_size(gt);
    memcpy(d.p, a.p, n * ps), memcpy(d.m, a.m, n * ss), memcpy(d.v, a.v, n * ss), memcpy(d.g, a.g, n * gs);
    if (d.w) memcpy(d.w, a.w, n * 2);
}
static state copy(state a, sc_dtype pt, sc_dtype gt, size_t n)
{
    state s = make(pt, gt, n, a.w != NULL);
    set(s, a, pt, gt, n);
    return s;
}
static int same(state a, state b, sc_dtype pt, size_t n)
{
    size_t ps = sc_dtype_size(pt), ss = sc_dtype_size(sdt(pt));
    return !memcmp(a.p, b.p, n * ps) && !memcmp(a.m, b.m, n * ss) && !memcmp(a.v, b.v, n * ss) &&
           (!a.w || !memcmp(a.w, b.w, n * 2));
}
static void drop(state s) { free(s.p), free(s.m), free(s.v), free(s.g), free(s.w); }

static const char *dn(sc_dtype t) { return t == SC_BF16 ? "bf16" : "f32"; }

/* One update of a's inputs with p, m, v, g at element `po` and wout at element `wo` past a 64-byte boundary, wout's
   stores ordinary (stream 0) or non-temporal (1); wout and 2 guards each side are first poisoned with a value that
   depends on `stream`, so two runs that agree wrote every element. Results go to x; returns 0 if a guard changed. */
static void *al64(void *raw) { return (void *)(((uintptr_t)raw + 63) & ~(uintptr_t)63); }
static int run_at(int adam, state a, state x, sc_dtype P, sc_dtype G, size_t n, size_t po, size_t wo, int stream,
                  int threads, const sc_optim_consts *k)
{
    size_t ps = sc_dtype_size(P), ss = sc_dtype_size(sdt(P)), gs = sc_dtype_size(G), cap = (n + 64) * 4 + 64;
    void *rp = malloc(cap), *rm = malloc(cap), *rv = malloc(cap), *rg = malloc(cap), *rw = malloc(cap);
    char *p = (char *)al64(rp) + po * ps, *m = (char *)al64(rm) + po * ss, *v = (char *)al64(rv) + po * ss;
    char *g = (char *)al64(rg) + po * gs;
    uint16_t *w = (uint16_t *)al64(rw) + 32 + wo, poison = stream ? 0x5454 : 0xabab;
    memcpy(p, a.p, n * ps), memcpy(m, a.m, n * ss), memcpy(v, a.v, n * ss), memcpy(g, a.g, n * gs);
    for (size_t i = 0; i < n + 4; i++) w[i - 2] = poison;
    int was = sc__cpu_optim_stream(stream);
    if (adam && threads) sc_cpu_adamw_mt(p, m, v, P, sdt(P), g, G, w, n, k, threads);
    else if (adam) sc_cpu_adamw_range(p, m, v, P, sdt(P), g, G, w, n, k);
    else if (threads) sc_cpu_sgd_mt(p, P, g, G, w, n, k, threads);
    else sc_cpu_sgd_range(p, P, g, G, w, n, k);
    sc__cpu_optim_stream(was);
    memcpy(x.p, p, n * ps), memcpy(x.m, m, n * ss), memcpy(x.v, v, n * ss), memcpy(x.w, w, n * 2);
    int ok = w[-2] == poison && w[-1] == poison && w[n] == poison && w[n + 1] == poison;
    free(rp), free(rm), free(rv), free(rg), free(rw);
    return ok;
}

/* 0, ordinary, subnormal, just above FLT_MIN (times a constant below 1: subnormal), or small enough that its square
   underflows; either sign */
static float special(void)
{
    uint32_t u;
    float f;
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    switch ((rng >> 20) % 8) {
    case 0: return 0.0f;
    case 1: u = (uint32_t)(rng >> 41) & 0x7fffffu, u = u ? u : 1u, memcpy(&f, &u, 4); break;
    case 2: f = 0x1p-126f * (1.0f + fabsf(frand())); break;
    case 3: f = 0x1p-70f * frand(); break;
    case 4: f = 0x1p-120f * frand(); break;
    default: return frand() * 1e-2f;
    }
    return (rng >> 60) & 1 ? -f : f;
}

/* Inputs with subnormals in and out, the calling thread's MXCSR set to flush-to-zero and denormals-are-zero (as
   -ffast-math start-up code does): the reference's bits (computed before, with IEEE's defaults), and the caller's
   MXCSR as it was */
static void caller_mxcsr(float lr, float b1, float b2, float eps, float wd)
{
#if SC__OPTIM_X86
    const char *isas[] = {"avx512", "avx2", "scalar"};
    const size_t n = 4099;
    for (int ii = 0; ii < 3; ii++) {
        if (!sc__cpu_optim_force(isas[ii])) continue;
        int ok = 1, kept = 1, flushed = 0;
        for (int pst = 0; pst < 3; pst++)
            for (int gt = 0; gt < 2; gt++)
                for (int adam = 0; adam < 2; adam++) {
                    sc_dtype P = (sc_dtype)(pst == 2), G = (sc_dtype)gt;
                    s_bf16 = pst == 1;
                    state a = make(P, G, n, 1), r = make(P, G, n, 1), x = make(P, G, n, 1);
                    for (size_t i = 0; i < n; i++) {
                        st(a.g, G, i, special()), st(a.p, P, i, special()), st(a.m, sdt(P), i, special());
                        st(a.v, sdt(P), i, fabsf(special()));
                    }
                    sc_optim_consts k = sc_optim_consts_make(lr, b1, b2, eps, wd, 2);
                    set(r, a, P, G, n);
                    if (adam) ref_adamw(r.p, r.m, r.v, P, r.g, G, r.w, n, lr, b1, b2, eps, wd, 2);
                    else ref_sgd(r.p, P, r.g, G, r.w, n, lr, wd);
                    unsigned c0 = _mm_getcsr();
                    _mm_setcsr(c0 | 0x8040u);
                    set(x, a, P, G, n);
                    if (adam) sc_cpu_adamw_range(x.p, x.m, x.v, P, sdt(P), x.g, G, x.w, n, &k);
                    else sc_cpu_sgd_range(x.p, P, x.g, G, x.w, n, &k);
                    kept &= _mm_getcsr() == (c0 | 0x8040u);
                    ok &= same(x, r, P, n);
                    set(x, a, P, G, n); /* the same under FTZ + DAZ in plain C: the inputs do reach subnormals */
                    if (adam) ref_adamw(x.p, x.m, x.v, P, x.g, G, x.w, n, lr, b1, b2, eps, wd, 2);
                    else ref_sgd(x.p, P, x.g, G, x.w, n, lr, wd);
                    flushed += !same(x, r, P, n);
                    _mm_setcsr(c0);
                    drop(a), drop(r), drop(x);
                }
        s_bf16 = 0;
        CHECK(ok && kept && flushed == 12, "%s under a caller's FTZ + DAZ: the reference's bits, the caller's MXCSR "
              "kept (%d of 12 dtype / optimizer cases differ when flushed)", isas[ii], flushed);
    }
    sc__cpu_optim_force(NULL);
#else
    (void)lr, (void)b1, (void)b2, (void)eps, (void)wd;
#endif
}

int main(void)
{
    const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.1f;
    const size_t sizes[] = {0, 1, 7, 31, 33, 1000003};
    const int ts[] = {1, 1000, 2, 10}; /* the large size takes the first two only */
    const char *isas[] = {"avx512", "avx2", "scalar"};

    tune_turns();
    printf("detected path: %s\n", sc_cpu_optim_isa());
    CHECK(sc__cpu_optim_stream(1) == SC__OPTIM_X86, "wout's stores: non-temporal by default on x86");
    sc_optim_consts c = sc_optim_consts_make(lr, b1, b2, eps, wd, 3);
    CHECK(c.decay == 1.0f - lr * wd && c.omb1 == 1.0f - b1 && c.step == lr / (1.0f - powf(b1, 3.0f)) &&
              c.bc2s == sqrtf(1.0f - powf(b2, 3.0f)),
          "sc_optim_consts_make");

    for (int ii = 0; ii < 3; ii++) {
        if (!sc__cpu_optim_force(isas[ii])) {
            printf("SKIP %s: not supported on this CPU\n", isas[ii]);
            continue;
        }
        CHECK(!strcmp(sc_cpu_optim_isa(), isas[ii]), "forced path %s", isas[ii]);
        for (int pst = 0; pst < 3; pst++) /* p f32, p f32 with bf16 state, p bf16 */
            for (int gt = 0; gt < 2; gt++)
                for (int w = 0; w < 2; w++)
                    for (int si = 0; si < 6; si++) {
                        int pt = pst == 2;
                        s_bf16 = pst == 1;
                        size_t n = sizes[si];
                        int ok_a = 1, ok_s = 1;
                        sc_dtype P = (sc_dtype)pt, G = (sc_dtype)gt;
                        state a = make(P, G, n, w), r = make(P, G, n, w), x = make(P, G, n, w);
                        for (int ti = 0; ti < (n > 100000 ? 2 : 4); ti++) {
                            int t = ts[ti];
                            sc_optim_consts k = sc_optim_consts_make(lr, b1, b2, eps, wd, t);
                            drop(a);
                            a = make(P, G, n, w); /* fresh inputs */
                            set(r, a, P, G, n);
                            ref_adamw(r.p, r.m, r.v, P, r.g, G, r.w, n, lr, b1, b2, eps, wd, t);
                            set(x, a, P, G, n);
                            sc_cpu_adamw_range(x.p, x.m, x.v, P, sdt(P), x.g, G, x.w, n, &k);
                            ok_a &= same(x, r, P, n);
                            for (int nt = 1; nt <= 3; nt++) {
                                set(x, a, P, G, n);
                                sc_cpu_adamw_mt(x.p, x.m, x.v, P, sdt(P), x.g, G, x.w, n, &k, nt);
                                ok_a &= same(x, r, P, n);
                            }
                            /* SGD on the same inputs (only p, g, w are used) */
                            set(r, a, P, G, n);
                            ref_sgd(r.p, P, r.g, G, r.w, n, lr, wd);
                            set(x, a, P, G, n);
                            sc_cpu_sgd_range(x.p, P, x.g, G, x.w, n, &k);
                            ok_s &= same(x, r, P, n);
                            for (int nt = 1; nt <= 3; nt++) {
                                set(x, a, P, G, n);
                                sc_cpu_sgd_mt(x.p, P, x.g, G, x.w, n, &k, nt);
                                ok_s &= same(x, r, P, n);
                            }
                            /* bf16 p: the bf16 out is p's own new bits (slide's DPU writes its working
                               copy that way) */
                            if (pt && w) ok_s &= !memcmp(x.w, x.p, n * 2);
                        }
                        drop(a), drop(r), drop(x);
                        CHECK(ok_a, "%s adamw p=%s m,v=%s g=%s wout=%d n=%zu: range, mt(1,2,3) == reference",
                              isas[ii], dn(P), dn(sdt(P)), dn(G), w, n);
                        CHECK(ok_s, "%s sgd   p=%s g=%s wout=%d n=%zu: range, mt(1,2,3) == reference", isas[ii],
                              dn(P), dn(G), w, n);
                    }

        /* wout's ordinary and non-temporal stores: the reference's bits (p, m, v, and every wout element) at each
           offset of wout against a 32-byte boundary, p, m, v, g at the same and at another offset, odd sizes; the
           threaded split over several chunks too */
        {
            const size_t ns[] = {1, 7, 8, 15, 16, 17, 31, 33, 63, 65, 257, 1001, 3 * 65536 + 1001};
            int ok[2] = {1, 1}, runs = 0; /* runs of each kernel */
            for (int pst = 0; pst < 3; pst++)
                for (int gt = 0; gt < 2; gt++)
                    for (size_t si = 0; si < sizeof ns / sizeof ns[0]; si++) {
                        size_t n = ns[si];
                        int big = n > 65536;
                        sc_dtype P = (sc_dtype)(pst == 2), G = (sc_dtype)gt;
                        s_bf16 = pst == 1;
                        sc_optim_consts k = sc_optim_consts_make(lr, b1, b2, eps, wd, 2);
                        state a = make(P, G, n, 1), r = make(P, G, n, 1), x0 = make(P, G, n, 1), x1 = make(P, G, n, 1);
                        for (size_t wo = 0; wo < 16; wo += big ? 5 : 1)
                            for (int same_po = 0; same_po < 2; same_po++)
                                for (int adam = 0; adam < 2; adam++) {
                                    size_t po = same_po ? wo : (wo * 5 + 3) % 16;
                                    int th = big ? 3 : 0;
                                    set(r, a, P, G, n);
                                    if (adam) ref_adamw(r.p, r.m, r.v, P, r.g, G, r.w, n, lr, b1, b2, eps, wd, 2);
                                    else ref_sgd(r.p, P, r.g, G, r.w, n, lr, wd);
                                    int g0 = run_at(adam, a, x0, P, G, n, po, wo, 0, th, &k);
                                    int g1 = run_at(adam, a, x1, P, G, n, po, wo, 1, th, &k);
                                    ok[adam] &= g0 && g1 && same(x0, r, P, n) && same(x1, r, P, n);
                                    runs += adam;
                                }
                        drop(a), drop(r), drop(x0), drop(x1);
                    }
            s_bf16 = 0;
            CHECK(ok[1], "%s adamw wout ordinary == non-temporal stores == reference (%d runs: sizes, offsets)",
                  isas[ii], runs);
            CHECK(ok[0], "%s sgd   wout ordinary == non-temporal stores == reference (%d runs: sizes, offsets)",
                  isas[ii], runs);
        }

        /* software prefetch off (sc_cpu_optim_tune may choose it): the reference's bits, as with it on */
        {
            const size_t ns[] = {33, 4099, 3 * 65536 + 1001};
            int ok = 1, was = sc__cpu_optim_prefetch(0), runs = 0;
            for (int pst = 0; pst < 3; pst++)
                for (int gt = 0; gt < 2; gt++)
                    for (size_t si = 0; si < sizeof ns / sizeof ns[0]; si++, runs++) {
                        size_t n = ns[si];
                        sc_dtype P = (sc_dtype)(pst == 2), G = (sc_dtype)gt;
                        s_bf16 = pst == 1;
                        sc_optim_consts k = sc_optim_consts_make(lr, b1, b2, eps, wd, 4);
                        state a = make(P, G, n, 1), r = copy(a, P, G, n), x = copy(a, P, G, n);
                        ref_adamw(r.p, r.m, r.v, P, r.g, G, r.w, n, lr, b1, b2, eps, wd, 4);
                        sc_cpu_adamw_mt(x.p, x.m, x.v, P, sdt(P), x.g, G, x.w, n, &k, 3);
                        ok &= same(x, r, P, n);
                        drop(a), drop(r), drop(x);
                    }
            s_bf16 = 0;
            CHECK(ok && was == 1 && sc__cpu_optim_prefetch(was) == 0,
                  "%s adamw with software prefetch off == reference (%d dtype / size cases; on by default)", isas[ii],
                  runs);
        }

        s_bf16 = 0;
        /* specials: NaN / inf / huge gradients in vector lanes and in the tail */
        {
            size_t n = 37;
            state a = make(SC_F32, SC_F32, n, 1);
            float *g = (float *)a.g;
            g[3] = NAN, g[17] = INFINITY, g[20] = -INFINITY, g[35] = -NAN, g[8] = 3e38f, g[36] = -3e38f;
            sc_optim_consts k = sc_optim_consts_make(lr, b1, b2, eps, wd, 1);
            state r = copy(a, SC_F32, SC_F32, n), x = copy(a, SC_F32, SC_F32, n);
            ref_sgd(r.p, SC_F32, r.g, SC_F32, r.w, n, lr, wd);
            sc_cpu_sgd_range(x.p, SC_F32, x.g, SC_F32, x.w, n, &k);
            CHECK(same(x, r, SC_F32, n) && isnan(((float *)r.p)[3]), "%s sgd NaN/inf specials", isas[ii]);
            set(r, a, SC_F32, SC_F32, n), set(x, a, SC_F32, SC_F32, n);
            ref_adamw(r.p, r.m, r.v, SC_F32, r.g, SC_F32, r.w, n, lr, b1, b2, eps, wd, 1);
            sc_cpu_adamw_range(x.p, x.m, x.v, SC_F32, SC_F32, x.g, SC_F32, x.w, n, &k);
            CHECK(same(x, r, SC_F32, n) && isnan(((float *)r.p)[3]), "%s adamw NaN/inf specials", isas[ii]);
            drop(r), drop(x), drop(a);
        }
        /* bf16 stores: with lr = wd = 0 SGD stores p (finite) unchanged, so every lane rounds chosen bit patterns
           through sc_f32_to_bf16's rules: ties to even/odd, just below/above half, FLT_MAX -> inf, subnormals, zeros,
           and NaNs (quiet, signaling, negative, payload only in the low bits or all set); inf becomes NaN (inf - 0 * inf) */
        {
            static const uint32_t pat[] = {0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x3f808001u, 0x7f7fffffu, 0xff7fffffu,
                                           0x7f800000u, 0x7fc00000u, 0x7f800001u, 0xffc00001u, 0x7fa00000u, 0x00008000u,
                                           0x80018000u, 0x00000000u, 0x80000000u, 0xc0208000u, 0x3f7fffffu, 0x7fffffffu,
                                           0xffff8001u, 0x7fbfffffu}; /* the last: NaNs that round across the exponent */
            size_t n = 71, np = sizeof pat / sizeof pat[0];
            sc_optim_consts k0 = sc_optim_consts_make(0.0f, b1, b2, eps, 0.0f, 1);
            int ok = 1;
            for (int pt = 0; pt < 2; pt++) {
                sc_dtype P = (sc_dtype)pt;
                state a = make(P, SC_F32, n, 1), r = make(P, SC_F32, n, 1), x = make(P, SC_F32, n, 1);
                for (size_t i = 0; i < n; i++) {
                    uint32_t u = pat[i % np];
                    if (P == SC_F32) memcpy((float *)a.p + i, &u, 4);
                    else ((uint16_t *)a.p)[i] = (uint16_t)(u >> 16);
                }
                set(r, a, P, SC_F32, n), set(x, a, P, SC_F32, n);
                ref_sgd(r.p, P, r.g, SC_F32, r.w, n, 0.0f, 0.0f);
                sc_cpu_sgd_range(x.p, P, x.g, SC_F32, x.w, n, &k0);
                ok &= same(x, r, P, n);
                if (P == SC_F32) ok &= r.w[0] == 0x3f80 && r.w[1] == 0x3f82 && r.w[4] == 0x7f80 && r.w[17] == 0x7fff;
                drop(a), drop(r), drop(x);
            }
            CHECK(ok, "%s bf16 stores: ties, FLT_MAX, NaN payloads, subnormals", isas[ii]);
        }
        /* the f32 kernels of slidecheck.h: the API ones and their old code */
        if (contracts()) {
            printf("SKIP %s: this build fuses a*b + c, so plain-C f32 kernels differ\n", isas[ii]);
        } else {
            size_t n = 100003;
            int t = 7;
            sc_optim_consts k = sc_optim_consts_make(lr, b1, b2, eps, wd, t);
            state a = make(SC_F32, SC_F32, n, 0), x = copy(a, SC_F32, SC_F32, n), r = copy(a, SC_F32, SC_F32, n);
            sc_cpu_adamw_mt(x.p, x.m, x.v, SC_F32, SC_F32, x.g, SC_F32, NULL, n, &k, 0);
            sc_cpu_adamw_update((float *)r.p, (float *)r.m, (float *)r.v, (const float *)r.g, n, lr, b1, b2, eps, wd, t);
            CHECK(same(x, r, SC_F32, n), "%s adamw == sc_cpu_adamw_update (f32)", isas[ii]);
            set(r, a, SC_F32, SC_F32, n);
            old_adamw((float *)r.p, (float *)r.m, (float *)r.v, (const float *)r.g, n, lr, b1, b2, eps, wd, t);
            CHECK(same(x, r, SC_F32, n), "%s adamw == old sc_cpu_adamw_update code (f32)", isas[ii]);
            set(x, a, SC_F32, SC_F32, n), set(r, a, SC_F32, SC_F32, n);
            sc_cpu_sgd_mt(x.p, SC_F32, x.g, SC_F32, NULL, n, &k, 0);
            sc_cpu_sgd_update((float *)r.p, (const float *)r.g, n, lr, wd);
            CHECK(same(x, r, SC_F32, n), "%s sgd == sc_cpu_sgd_update (f32)", isas[ii]);
            set(r, a, SC_F32, SC_F32, n);
            old_sgd((float *)r.p, (const float *)r.g, n, lr, wd);
            CHECK(same(x, r, SC_F32, n), "%s sgd == old sc_cpu_sgd_update code (f32)", isas[ii]);
            drop(a), drop(x), drop(r);
        }
    }
    caller_mxcsr(lr, b1, b2, eps, wd);

    /* sc_cpu_optim_tune: the four pairs timed, the fastest kept unless the pair in use is within 2% of it */
    {
        sc_cpu_optim_tuning t0 = sc_cpu_optim_choice();
        CHECK(!t0.tuned && t0.prefetch == 1 && t0.huge_pages == 1, "sc_cpu_optim_choice before tuning: the defaults "
              "(prefetch on, huge pages on)");
        sc_result r = sc_cpu_optim_tune(2, (size_t)1 << 20);
        sc_cpu_optim_tuning t = sc_cpu_optim_choice();
        double best = 0, mine = t.gparams_s[t.huge_pages][t.prefetch], def = t.gparams_s[1][1];
        int rates = 1;
        for (int h = 0; h < 2; h++)
            for (int f = 0; f < 2; f++) {
                rates &= t.gparams_s[h][f] > 0.0 && t.gparams_s[h][f] < 1e4;
                best = t.gparams_s[h][f] > best ? t.gparams_s[h][f] : best;
            }
        int kept = (t.prefetch && t.huge_pages) ? best < 1.02 * def : mine == best && best >= 1.02 * def;
        CHECK(r == SC_SUCCESS && t.tuned && t.threads == 2 && t.n == ((size_t)1 << 20) && rates && kept,
              "sc_cpu_optim_tune: rates %.2f %.2f %.2f %.2f G params/s ([huge][prefetch]), chose prefetch %d, huge "
              "pages %d", t.gparams_s[0][0], t.gparams_s[0][1], t.gparams_s[1][0], t.gparams_s[1][1], t.prefetch,
              t.huge_pages);
    }
    CHECK(sc__cpu_optim_force("nonsense") == 0 && sc__cpu_optim_force(NULL) == 1, "force hook: reject, reset");
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail != 0;
}
