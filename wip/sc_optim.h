/* ==========================================================================================
   Host optimizer kernels: AdamW / SGD over f32 or bf16 state, scalar + AVX2 + AVX-512 paths,
   bitwise equal to one another and to CUDA kernels written with __fmul_rn/__fadd_rn/...
   Fragment for the implementation part of slidecheck.h (after sc_f32_to_bf16/sc_bf16_to_f32
   and sc_dtype_size).
   ========================================================================================== */

#if 0 /* The declarations, to paste into the header's declaration part (kept out of the build here). */
/* Constants of one optimizer step, computed once on the host (the CUDA kernels get the same values). */
typedef struct sc_optim_consts {
    float lr, beta1, beta2, eps, weight_decay;
    float decay;      /* 1.0f - lr * weight_decay */
    float omb1, omb2; /* 1.0f - beta1, 1.0f - beta2 */
    float step;       /* lr / (1 - beta1^t) */
    float bc2s;       /* sqrtf(1 - beta2^t) */
} sc_optim_consts;
/* t >= 1: the step number (AdamW bias correction); SGD ignores it (pass 1). */
SCDEF sc_optim_consts sc_optim_consts_make(float lr, float beta1, float beta2, float eps, float weight_decay, int t);
/* AdamW / SGD over elements [0, n) on the calling thread. p, m, v have dtype pt (SC_F32: float, SC_BF16: uint16_t
   bf16 bits); g has dtype gt; wout (may be NULL) receives the updated p rounded to bf16. Every operation is rounded
   to f32 on its own (no FMA): all paths, and the CUDA kernels, give the same bits. */
SCDEF void sc_cpu_adamw_range(void *p, void *m, void *v, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout,
                              size_t n, const sc_optim_consts *k);
SCDEF void sc_cpu_sgd_range(void *p, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout, size_t n,
                            const sc_optim_consts *k);
/* The same over [0, n) split into fixed chunks over `threads` OpenMP threads (0: all). Bitwise independent of the
   thread count. */
SCDEF void sc_cpu_adamw_mt(void *p, void *m, void *v, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout,
                           size_t n, const sc_optim_consts *k, int threads);
SCDEF void sc_cpu_sgd_mt(void *p, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout, size_t n,
                         const sc_optim_consts *k, int threads);
/* Which path the range functions take on this CPU: "avx512", "avx2" or "scalar". */
SCDEF const char *sc_cpu_optim_isa(void);
/* Test hook (private): forces "avx512", "avx2" or "scalar"; returns 0 if this CPU cannot run it. NULL: automatic. */
SCDEF int sc__cpu_optim_force(const char *isa);
#endif

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SC__OPTIM_X86 1
#include <immintrin.h>
#else
#define SC__OPTIM_X86 0
#endif

/* No a*b+c may become an FMA. gcc in GNU mode (-ffp-contract=fast by default) fuses even _mm*_mul_ps + _mm*_add_ps
   inside a target("avx512f") function, and clang fuses a*b+c within one expression whenever FMA is available (its
   avx512f implies fma), whatever the pragmas say under -ffp-contract=fast. An empty asm that "changes" the product
   hides it from the optimizer, so every product is rounded on its own; it costs no instruction. Elsewhere we rely
   on the compiler not contracting (MSVC does not by default); -ffast-math is not supported. */
#if defined(__GNUC__) && defined(__x86_64__)
#define SC__NOFUSE(x) __asm__("" : "+v"(x))
#elif defined(__GNUC__) && defined(__aarch64__)
#define SC__NOFUSE(x) __asm__("" : "+w"(x))
#else
#define SC__NOFUSE(x) ((void)0)
#endif

static inline float sc__mulf(float a, float b)
{
    float r = a * b;
    SC__NOFUSE(r);
    return r;
}

SCDEF sc_optim_consts sc_optim_consts_make(float lr, float beta1, float beta2, float eps, float weight_decay, int t)
{
    sc_optim_consts c;
    c.lr = lr, c.beta1 = beta1, c.beta2 = beta2, c.eps = eps, c.weight_decay = weight_decay;
    c.decay = 1.0f - sc__mulf(lr, weight_decay);
    c.omb1 = 1.0f - beta1;
    c.omb2 = 1.0f - beta2;
    float bc1 = 1.0f - powf(beta1, (float)t), bc2 = 1.0f - powf(beta2, (float)t);
    c.step = lr / bc1;
    c.bc2s = sqrtf(bc2);
    return c;
}

/* ---- scalar path (also the tail of the vector paths) ---- */
static inline float sc__ld(const void *x, sc_dtype t, size_t i)
{
    return t == SC_BF16 ? sc_bf16_to_f32(((const uint16_t *)x)[i]) : ((const float *)x)[i];
}

static inline void sc__st(void *x, sc_dtype t, size_t i, float f)
{
    if (t == SC_BF16) ((uint16_t *)x)[i] = sc_f32_to_bf16(f);
    else ((float *)x)[i] = f;
}

static void sc__adamw_scalar(void *p, void *m, void *v, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout,
                             size_t i, size_t n, const sc_optim_consts *k)
{
    for (; i < n; i++) {
        float gi = sc__ld(g, gt, i);
        float pd = sc__mulf(sc__ld(p, pt, i), k->decay);
        float mi = sc__mulf(k->beta1, sc__ld(m, pt, i)) + sc__mulf(k->omb1, gi);
        float vi = sc__mulf(k->beta2, sc__ld(v, pt, i)) + sc__mulf(sc__mulf(k->omb2, gi), gi);
        sc__st(m, pt, i, mi);
        sc__st(v, pt, i, vi);
        float pn = pd - sc__mulf(k->step, mi / (sqrtf(vi) / k->bc2s + k->eps)); /* unrounded mi, vi */
        sc__st(p, pt, i, pn);
        if (wout) wout[i] = sc_f32_to_bf16(pn);
    }
}

static void sc__sgd_scalar(void *p, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout, size_t i, size_t n,
                           const sc_optim_consts *k)
{
    for (; i < n; i++) {
        float pi = sc__ld(p, pt, i);
        float pn = pi - sc__mulf(k->lr, sc__ld(g, gt, i) + sc__mulf(k->weight_decay, pi));
        sc__st(p, pt, i, pn);
        if (wout) wout[i] = sc_f32_to_bf16(pn);
    }
}

/* ---- vector paths. The bodies take the dtypes as constants (P, G: bf16?, W: wout?) and are always inlined into a
   switch over the 8 combinations, so each combination gets its own branch-free loop. ---- */
#if SC__OPTIM_X86
#define SC__AVX512 __attribute__((target("avx512f")))
#define SC__AVX2 __attribute__((target("avx2")))
#define SC__INL static inline __attribute__((always_inline))
#define SC__OPTIM_CASES(CALL)                                                                                     \
    switch ((pt == SC_BF16) * 4 + (gt == SC_BF16) * 2 + (wout != NULL)) {                                        \
    case 0: CALL(0, 0, 0); break;                                                                                \
    case 1: CALL(0, 0, 1); break;                                                                                \
    case 2: CALL(0, 1, 0); break;                                                                                \
    case 3: CALL(0, 1, 1); break;                                                                                \
    case 4: CALL(1, 0, 0); break;                                                                                \
    case 5: CALL(1, 0, 1); break;                                                                                \
    case 6: CALL(1, 1, 0); break;                                                                                \
    default: CALL(1, 1, 1); break;                                                                               \
    }

/* AVX-512F, 16 lanes */
SC__AVX512 SC__INL __m512 sc__mul16(__m512 a, __m512 b)
{
    __m512 r = _mm512_mul_ps(a, b);
    SC__NOFUSE(r);
    return r;
}
SC__AVX512 SC__INL __m512 sc__ld16(const void *x, int bf, size_t i)
{
    if (!bf) return _mm512_loadu_ps((const float *)x + i);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)x + i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
SC__AVX512 SC__INL __m256i sc__bf16x16(__m512 f) /* exactly sc_f32_to_bf16 */
{
    __m512i u = _mm512_castps_si512(f), hi = _mm512_srli_epi32(u, 16);
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1))));
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_or_epi32(_mm512_srli_epi32(r, 16), nan, hi, _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}
SC__AVX512 SC__INL void sc__st16(void *x, int bf, size_t i, __m512 f)
{
    if (bf) _mm256_storeu_si256((__m256i *)((uint16_t *)x + i), sc__bf16x16(f));
    else _mm512_storeu_ps((float *)x + i, f);
}

SC__AVX512 SC__INL void sc__adamw16(void *p, void *m, void *v, const void *g, uint16_t *wout, size_t n,
                                     const sc_optim_consts *k, int P, int G, int W)
{
    const __m512 decay = _mm512_set1_ps(k->decay), b1 = _mm512_set1_ps(k->beta1), b2 = _mm512_set1_ps(k->beta2);
    const __m512 omb1 = _mm512_set1_ps(k->omb1), omb2 = _mm512_set1_ps(k->omb2), step = _mm512_set1_ps(k->step);
    const __m512 bc2s = _mm512_set1_ps(k->bc2s), eps = _mm512_set1_ps(k->eps);
    for (size_t i = 0; i + 16 <= n; i += 16) {
        __m512 gi = sc__ld16(g, G, i);
        __m512 pd = sc__mul16(sc__ld16(p, P, i), decay);
        __m512 mi = _mm512_add_ps(sc__mul16(b1, sc__ld16(m, P, i)), sc__mul16(omb1, gi));
        __m512 vi = _mm512_add_ps(sc__mul16(b2, sc__ld16(v, P, i)), sc__mul16(sc__mul16(omb2, gi), gi));
        sc__st16(m, P, i, mi);
        sc__st16(v, P, i, vi);
        __m512 den = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), bc2s), eps);
        __m512 pn = _mm512_sub_ps(pd, sc__mul16(step, _mm512_div_ps(mi, den)));
        sc__st16(p, P, i, pn);
        if (W) _mm256_storeu_si256((__m256i *)(wout + i), sc__bf16x16(pn));
    }
}

SC__AVX512 SC__INL void sc__sgd16(void *p, const void *g, uint16_t *wout, size_t n, const sc_optim_consts *k, int P,
                                   int G, int W)
{
    const __m512 lr = _mm512_set1_ps(k->lr), wd = _mm512_set1_ps(k->weight_decay);
    for (size_t i = 0; i + 16 <= n; i += 16) {
        __m512 pi = sc__ld16(p, P, i);
        __m512 pn = _mm512_sub_ps(pi, sc__mul16(lr, _mm512_add_ps(sc__ld16(g, G, i), sc__mul16(wd, pi))));
        sc__st16(p, P, i, pn);
        if (W) _mm256_storeu_si256((__m256i *)(wout + i), sc__bf16x16(pn));
    }
}

SC__AVX512 static void sc__adamw_avx512(void *p, void *m, void *v, sc_dtype pt, const void *g, sc_dtype gt,
                                        uint16_t *wout, size_t n, const sc_optim_consts *k)
{
#define SC__CALL(P, G, W) sc__adamw16(p, m, v, g, wout, n, k, P, G, W)
    SC__OPTIM_CASES(SC__CALL)
#undef SC__CALL
    sc__adamw_scalar(p, m, v, pt, g, gt, wout, n & ~(size_t)15, n, k);
}

SC__AVX512 static void sc__sgd_avx512(void *p, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout, size_t n,
                                      const sc_optim_consts *k)
{
#define SC__CALL(P, G, W) sc__sgd16(p, g, wout, n, k, P, G, W)
    SC__OPTIM_CASES(SC__CALL)
#undef SC__CALL
    sc__sgd_scalar(p, pt, g, gt, wout, n & ~(size_t)15, n, k);
}

/* AVX2, 8 lanes: the same code with 256-bit registers */
SC__AVX2 SC__INL __m256 sc__mul8(__m256 a, __m256 b)
{
    __m256 r = _mm256_mul_ps(a, b);
    SC__NOFUSE(r);
    return r;
}
SC__AVX2 SC__INL __m256 sc__ld8(const void *x, int bf, size_t i)
{
    if (!bf) return _mm256_loadu_ps((const float *)x + i);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)x + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
SC__AVX2 SC__INL __m128i sc__bf16x8(__m256 f) /* exactly sc_f32_to_bf16 */
{
    __m256i u = _mm256_castps_si256(f), hi = _mm256_srli_epi32(u, 16);
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1))));
    /* |u| > inf, as a signed compare: both sides are below 2^31 */
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    r = _mm256_blendv_epi8(_mm256_srli_epi32(r, 16), _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)); /* all lanes <= 0xffff */
}
SC__AVX2 SC__INL void sc__st8(void *x, int bf, size_t i, __m256 f)
{
    if (bf) _mm_storeu_si128((__m128i *)((uint16_t *)x + i), sc__bf16x8(f));
    else _mm256_storeu_ps((float *)x + i, f);
}

SC__AVX2 SC__INL void sc__adamw8(void *p, void *m, void *v, const void *g, uint16_t *wout, size_t n,
                                  const sc_optim_consts *k, int P, int G, int W)
{
    const __m256 decay = _mm256_set1_ps(k->decay), b1 = _mm256_set1_ps(k->beta1), b2 = _mm256_set1_ps(k->beta2);
    const __m256 omb1 = _mm256_set1_ps(k->omb1), omb2 = _mm256_set1_ps(k->omb2), step = _mm256_set1_ps(k->step);
    const __m256 bc2s = _mm256_set1_ps(k->bc2s), eps = _mm256_set1_ps(k->eps);
    for (size_t i = 0; i + 8 <= n; i += 8) {
        __m256 gi = sc__ld8(g, G, i);
        __m256 pd = sc__mul8(sc__ld8(p, P, i), decay);
        __m256 mi = _mm256_add_ps(sc__mul8(b1, sc__ld8(m, P, i)), sc__mul8(omb1, gi));
        __m256 vi = _mm256_add_ps(sc__mul8(b2, sc__ld8(v, P, i)), sc__mul8(sc__mul8(omb2, gi), gi));
        sc__st8(m, P, i, mi);
        sc__st8(v, P, i, vi);
        __m256 den = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), bc2s), eps);
        __m256 pn = _mm256_sub_ps(pd, sc__mul8(step, _mm256_div_ps(mi, den)));
        sc__st8(p, P, i, pn);
        if (W) _mm_storeu_si128((__m128i *)(wout + i), sc__bf16x8(pn));
    }
}

SC__AVX2 SC__INL void sc__sgd8(void *p, const void *g, uint16_t *wout, size_t n, const sc_optim_consts *k, int P,
                                int G, int W)
{
    const __m256 lr = _mm256_set1_ps(k->lr), wd = _mm256_set1_ps(k->weight_decay);
    for (size_t i = 0; i + 8 <= n; i += 8) {
        __m256 pi = sc__ld8(p, P, i);
        __m256 pn = _mm256_sub_ps(pi, sc__mul8(lr, _mm256_add_ps(sc__ld8(g, G, i), sc__mul8(wd, pi))));
        sc__st8(p, P, i, pn);
        if (W) _mm_storeu_si128((__m128i *)(wout + i), sc__bf16x8(pn));
    }
}

SC__AVX2 static void sc__adamw_avx2(void *p, void *m, void *v, sc_dtype pt, const void *g, sc_dtype gt,
                                    uint16_t *wout, size_t n, const sc_optim_consts *k)
{
#define SC__CALL(P, G, W) sc__adamw8(p, m, v, g, wout, n, k, P, G, W)
    SC__OPTIM_CASES(SC__CALL)
#undef SC__CALL
    sc__adamw_scalar(p, m, v, pt, g, gt, wout, n & ~(size_t)7, n, k);
}

SC__AVX2 static void sc__sgd_avx2(void *p, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout, size_t n,
                                  const sc_optim_consts *k)
{
#define SC__CALL(P, G, W) sc__sgd8(p, g, wout, n, k, P, G, W)
    SC__OPTIM_CASES(SC__CALL)
#undef SC__CALL
    sc__sgd_scalar(p, pt, g, gt, wout, n & ~(size_t)7, n, k);
}
#endif /* SC__OPTIM_X86 */

/* ---- dispatch: the path is chosen once (0: not yet, 1: scalar, 2: avx2, 3: avx512) ---- */
static int sc__optim_path;

static int sc__optim_best(void)
{
#if SC__OPTIM_X86
    if (__builtin_cpu_supports("avx512f")) return 3;
    if (__builtin_cpu_supports("avx2")) return 2;
#endif
    return 1;
}

static int sc__optim_pick(void)
{
#if SC__OPTIM_X86
    /* atomics only so that first calls from several threads are not a data race; the value is idempotent */
    int path = __atomic_load_n(&sc__optim_path, __ATOMIC_RELAXED);
    if (!path) __atomic_store_n(&sc__optim_path, path = sc__optim_best(), __ATOMIC_RELAXED);
    return path;
#else
    return 1;
#endif
}

SCDEF const char *sc_cpu_optim_isa(void)
{
    int path = sc__optim_pick();
    return path == 3 ? "avx512" : path == 2 ? "avx2" : "scalar";
}

SCDEF int sc__cpu_optim_force(const char *isa)
{
    int want = !isa ? sc__optim_best() : !strcmp(isa, "avx512") ? 3 : !strcmp(isa, "avx2") ? 2
             : !strcmp(isa, "scalar") ? 1 : 0;
    if (!want || want > sc__optim_best()) return 0;
    sc__optim_path = want;
    return 1;
}

SCDEF void sc_cpu_adamw_range(void *p, void *m, void *v, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout,
                              size_t n, const sc_optim_consts *k)
{
#if SC__OPTIM_X86
    int path = sc__optim_pick();
    if (path == 3) { sc__adamw_avx512(p, m, v, pt, g, gt, wout, n, k); return; }
    if (path == 2) { sc__adamw_avx2(p, m, v, pt, g, gt, wout, n, k); return; }
#endif
    sc__adamw_scalar(p, m, v, pt, g, gt, wout, 0, n, k);
}

SCDEF void sc_cpu_sgd_range(void *p, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout, size_t n,
                            const sc_optim_consts *k)
{
#if SC__OPTIM_X86
    int path = sc__optim_pick();
    if (path == 3) { sc__sgd_avx512(p, pt, g, gt, wout, n, k); return; }
    if (path == 2) { sc__sgd_avx2(p, pt, g, gt, wout, n, k); return; }
#endif
    sc__sgd_scalar(p, pt, g, gt, wout, 0, n, k);
}

/* ---- multithreaded: fixed chunks, so the split (and, element-wise, the result) never depends on the thread
   count; 64K elements (~1.8 MB of AdamW traffic) keep scheduling overhead negligible. ---- */
#define SC__OPTIM_CHUNK ((size_t)1 << 16)

static int sc__optim_threads(int threads)
{
#ifdef _OPENMP
    return threads > 0 ? threads : omp_get_max_threads();
#else
    (void)threads;
    return 1;
#endif
}

SCDEF void sc_cpu_adamw_mt(void *p, void *m, void *v, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout,
                           size_t n, const sc_optim_consts *k, int threads)
{
    size_t ps = sc_dtype_size(pt), gs = sc_dtype_size(gt);
    long long nc = (long long)((n + SC__OPTIM_CHUNK - 1) / SC__OPTIM_CHUNK);
    int nt = sc__optim_threads(threads);
    (void)nt;
    sc__optim_pick(); /* choose the path before the threads start */
    SC__OMP(omp parallel for num_threads(nt) schedule(static))
    for (long long c = 0; c < nc; c++) {
        size_t o = (size_t)c * SC__OPTIM_CHUNK, len = n - o < SC__OPTIM_CHUNK ? n - o : SC__OPTIM_CHUNK;
        sc_cpu_adamw_range((char *)p + o * ps, (char *)m + o * ps, (char *)v + o * ps, pt, (const char *)g + o * gs,
                           gt, wout ? wout + o : NULL, len, k);
    }
}

SCDEF void sc_cpu_sgd_mt(void *p, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout, size_t n,
                         const sc_optim_consts *k, int threads)
{
    size_t ps = sc_dtype_size(pt), gs = sc_dtype_size(gt);
    long long nc = (long long)((n + SC__OPTIM_CHUNK - 1) / SC__OPTIM_CHUNK);
    int nt = sc__optim_threads(threads);
    (void)nt;
    sc__optim_pick();
    SC__OMP(omp parallel for num_threads(nt) schedule(static))
    for (long long c = 0; c < nc; c++) {
        size_t o = (size_t)c * SC__OPTIM_CHUNK, len = n - o < SC__OPTIM_CHUNK ? n - o : SC__OPTIM_CHUNK;
        sc_cpu_sgd_range((char *)p + o * ps, pt, (const char *)g + o * gs, gt, wout ? wout + o : NULL, len, k);
    }
}
