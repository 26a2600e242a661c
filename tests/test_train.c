/* Training features on the CPU: the learning-rate schedules against transformers' formulas
   (values derived by hand), the gradient 2-norm (against a plain f64 sum, in its documented
   order, the same bits for any thread count), sc_clip_scale's edge cases, clipping in the model
   (every policy and slide mode bitwise equal to resident, and equal to clipping by hand before
   sc_cpu_adamw_update), the optimizer state saved and loaded (training goes on with the same
   bits, in either mode; mismatched, foreign and truncated files refused naming the file),
   sc_model_set_lr, and the tracer's training notes. Run from the repository root. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

#define DIR "build/tmp_train_c"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next_u64(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static float frand(void) /* uniform in [-1, 1) */
{
    return (float)((double)(next_u64() >> 40) / (double)(1ull << 23) - 1.0);
}

/* ---- learning-rate schedules ---- */

static int near(double a, double b) { return fabs(a - b) <= 1e-15 * (fabs(b) > 1 ? fabs(b) : 1); }

static void test_lr(void)
{
    /* transformers, num_cycles 0.5 (get_cosine_with_min_lr_schedule_with_warmup):
         step < warmup: step / max(1, warmup)
         else: progress = (step - warmup) / max(1, total - warmup)
               f = 0.5 (1 + cos(pi * 2 * 0.5 * progress)) (1 - min) + min, at least 0
       warmup 3, total 12, min 0.1:
         0 -> 0; 1 -> 1/3; 3 -> progress 0, f = 1;
         7 -> progress 4/9, cos(80 deg) = 0.173648177666930349, 0.5 * 1.173648177666930349 = 0.586824088833465174,
              * 0.9 + 0.1 = 0.628141679950118657;
         11 -> progress 8/9, cos(160 deg) = -0.939692620785908384, 0.5 * 0.060307379214091616 = 0.030153689607045808,
              * 0.9 + 0.1 = 0.127138320646341227;
         12 -> progress 1, cos(180 deg) = -1, f = 0.1 (min_lr_rate) */
    static const struct { int64_t step; double f; } cosine[] = {
        {0, 0.0}, {1, 1.0 / 3.0}, {2, 2.0 / 3.0}, {3, 1.0}, {7, 0.628141679950118657}, {11, 0.127138320646341227}, {12, 0.1}};
    int ok = 1;
    char bad[256] = "";
    for (size_t i = 0; i < sizeof cosine / sizeof cosine[0]; i++) {
        double f = sc_lr_factor(SC_LR_COSINE, cosine[i].step, 3, 12, 0.1);
        if (!near(f, cosine[i].f)) { ok = 0; snprintf(bad, sizeof bad, "step %lld: %.17g, expected %.17g", (long long)cosine[i].step, f, cosine[i].f); }
    }
    check(ok, "cosine, warmup 3, total 12, min ratio 0.1 at steps 0,1,2,3,7,11,12 == transformers' values", "%s", bad);
    /* min ratio 0 (get_cosine_schedule_with_warmup), no warm-up, total 4: 1, cos^2(pi/8) = (1 + cos(pi/4)) / 2 = 0.853553390593273762,
       0.5, 0.146446609406726238, 0 */
    static const double c0[] = {1.0, 0.8535533905932737, 0.5, 0.1464466094067262, 0.0};
    ok = 1;
    for (int s = 0; s <= 4; s++) {
        double f = sc_lr_factor(SC_LR_COSINE, s, 0, 4, 0.0);
        if (!(fabs(f - c0[s]) <= 1e-15)) { ok = 0; snprintf(bad, sizeof bad, "step %d: %.17g, expected %.17g", s, f, c0[s]); }
    }
    check(ok, "cosine without warm-up or floor, total 4: 1, 0.8536, 0.5, 0.1464, 0", "%s", bad);
    /* linear (get_linear_schedule_with_warmup): after warm-up max(0, (total - step) / max(1, total - warmup));
       warmup 3, total 12: 0, 1/3, 2/3, 9/9, (12-7)/9 = 5/9, 1/9, 0, and 0 past the end (not negative) */
    static const struct { int64_t step; double f; } linear[] = {
        {0, 0.0}, {1, 1.0 / 3.0}, {2, 2.0 / 3.0}, {3, 1.0}, {7, 5.0 / 9.0}, {11, 1.0 / 9.0}, {12, 0.0}, {20, 0.0}};
    ok = 1;
    for (size_t i = 0; i < sizeof linear / sizeof linear[0]; i++) {
        double f = sc_lr_factor(SC_LR_LINEAR, linear[i].step, 3, 12, 0.1);
        if (!near(f, linear[i].f)) { ok = 0; snprintf(bad, sizeof bad, "step %lld: %.17g, expected %.17g", (long long)linear[i].step, f, linear[i].f); }
    }
    check(ok, "linear, warmup 3, total 12 at steps 0,1,2,3,7,11,12,20 == transformers' values (min ratio ignored)", "%s", bad);
    /* constant with warm-up (get_constant_schedule_with_warmup): warmup 4: 0, 1/4, 2/4, 3/4, then 1 */
    ok = sc_lr_factor(SC_LR_CONSTANT, 0, 4, 10, 0.5) == 0.0 && sc_lr_factor(SC_LR_CONSTANT, 1, 4, 10, 0.5) == 0.25 &&
         sc_lr_factor(SC_LR_CONSTANT, 2, 4, 10, 0.5) == 0.5 && sc_lr_factor(SC_LR_CONSTANT, 3, 4, 10, 0.5) == 0.75 &&
         sc_lr_factor(SC_LR_CONSTANT, 4, 4, 10, 0.5) == 1.0 && sc_lr_factor(SC_LR_CONSTANT, 99, 4, 10, 0.5) == 1.0;
    check(ok, "constant, warmup 4: 0, 0.25, 0.5, 0.75, 1, ... 1 (exact)", "got %g %g %g", sc_lr_factor(SC_LR_CONSTANT, 1, 4, 10, 0.5),
          sc_lr_factor(SC_LR_CONSTANT, 4, 4, 10, 0.5), sc_lr_factor(SC_LR_CONSTANT, 99, 4, 10, 0.5));
    ok = 1;
    for (int s = 0; s < 3; s++) {
        const sc_lr_schedule sch = (sc_lr_schedule)s;
        ok &= sc_lr_factor(sch, 0, 1, 10, 0.1) == 0.0 && sc_lr_factor(sch, 0, 5, 10, 0.1) == 0.0 &&
              sc_lr_factor(sch, 0, 0, 10, 0.1) == 1.0; /* without warm-up step 0 has the full rate */
    }
    check(ok, "step 0 with warmup 1 or 5 is exactly 0 (every schedule); without warm-up exactly 1", "-");
    /* warm-up as long as the run: total - warmup = 0 counts as 1, no division by zero */
    double fl = sc_lr_factor(SC_LR_LINEAR, 5, 5, 5, 0.0), fc = sc_lr_factor(SC_LR_COSINE, 5, 5, 5, 0.2);
    check(fl == 0.0 && near(fc, 1.0), "warmup == total: linear 0, cosine 1 at the end (finite)", "%g %g", fl, fc);

    sc_lr_schedule s = SC_LR_CONSTANT;
    ok = sc_lr_schedule_parse("cosine", &s) == SC_SUCCESS && s == SC_LR_COSINE &&
         sc_lr_schedule_parse("linear", &s) == SC_SUCCESS && s == SC_LR_LINEAR &&
         sc_lr_schedule_parse("constant", &s) == SC_SUCCESS && s == SC_LR_CONSTANT;
    check(ok, "sc_lr_schedule_parse: constant, linear, cosine", "-");
    s = SC_LR_LINEAR;
    sc_result r1 = sc_lr_schedule_parse("bogus", &s);
    int named = strstr(sc_last_error(), "bogus") != NULL;
    sc_result r2 = sc_lr_schedule_parse("Cosine", &s), r3 = sc_lr_schedule_parse(NULL, &s), r4 = sc_lr_schedule_parse("", &s);
    check(r1 == SC_ERROR_INVALID_ARGS && named && r2 == SC_ERROR_INVALID_ARGS && r3 == SC_ERROR_INVALID_ARGS &&
              r4 == SC_ERROR_INVALID_ARGS && s == SC_LR_LINEAR,
          "sc_lr_schedule_parse refuses bogus (named), Cosine, NULL, \"\" and leaves *out", "%d %d %d %d", r1, r2, r3, r4);
    check(!strcmp(sc_lr_schedule_name(SC_LR_CONSTANT), "constant") && !strcmp(sc_lr_schedule_name(SC_LR_LINEAR), "linear") &&
              !strcmp(sc_lr_schedule_name(SC_LR_COSINE), "cosine") && !strcmp(sc_lr_schedule_name((sc_lr_schedule)7), "?"),
          "sc_lr_schedule_name", "-");
}

/* ---- gradient norm and clip scale ---- */

static double ld(const void *g, sc_dtype t, size_t i)
{
    return t == SC_BF16 ? (double)sc_bf16_to_f32(((const uint16_t *)g)[i]) : (double)((const float *)g)[i];
}
static double tree256(double *s)
{
    for (int w = 128; w >= 1; w >>= 1)
        for (int t = 0; t < w; t++) s[t] = s[t] + s[t + w];
    return s[0];
}
/* The order slidecheck.h documents (the CUDA kernel's): chunks of SC_GRAD_NORM_CHUNK, in each 256
   lanes taking elements r + t for rows r of 256, a halving tree over the lanes; the chunk sums
   into 256 lanes by index mod 256, the same tree. */
static double norm_doc_order(const void *g, sc_dtype t, size_t n)
{
    size_t nc = (n + SC_GRAD_NORM_CHUNK - 1) / SC_GRAD_NORM_CHUNK;
    double top[256] = {0};
    for (size_t c = 0; c < nc; c++) {
        double lane[256] = {0};
        size_t o = c * SC_GRAD_NORM_CHUNK, e = o + SC_GRAD_NORM_CHUNK < n ? o + SC_GRAD_NORM_CHUNK : n;
        for (size_t i = o; i < e; i++) {
            double x = ld(g, t, i);
            lane[(i - o) % 256] = lane[(i - o) % 256] + x * x;
        }
        top[c % 256] = top[c % 256] + tree256(lane);
    }
    return sqrt(tree256(top));
}

static void test_grad_norm(void)
{
    const size_t sizes[] = {1, 255, 65536 + 3, 3 * 65536 + 1000};
    for (int dt = 0; dt < 2; dt++) {
        sc_dtype t = dt ? SC_BF16 : SC_F32;
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            size_t n = sizes[si];
            void *g = malloc(n * sc_dtype_size(t)); /* exactly its size: ASan sees a read past the end */
            for (size_t i = 0; i < n; i++) {
                float f = frand() * (i % 7 == 3 ? 100.0f : 0.01f); /* magnitudes 4 decades apart */
                if (t == SC_BF16) ((uint16_t *)g)[i] = sc_f32_to_bf16(f);
                else ((float *)g)[i] = f;
            }
            double plain = 0.0;
            for (size_t i = 0; i < n; i++) plain += ld(g, t, i) * ld(g, t, i);
            plain = sqrt(plain);
            double n0 = sc_grad_norm(g, t, n, 0), n1 = sc_grad_norm(g, t, n, 1), n2 = sc_grad_norm(g, t, n, 2);
            double n3 = sc_grad_norm(g, t, n, 3), doc = norm_doc_order(g, t, n);
            double rel = fabs(n0 - plain) / plain;
            const char *tn = dt ? "bf16" : "f32";
            CHECK(rel <= 1e-12, "sc_grad_norm %s n=%zu == plain f64 sum of squares: %.17g vs %.17g, rel %.2e <= 1e-12",
                  tn, n, n0, plain, rel);
            CHECK(!memcmp(&n0, &n1, 8) && !memcmp(&n0, &n2, 8) && !memcmp(&n0, &n3, 8),
                  "sc_grad_norm %s n=%zu: the same bits for threads 0, 1, 2, 3 (%.17g %.17g %.17g %.17g)", tn, n, n0, n1,
                  n2, n3);
            CHECK(!memcmp(&n0, &doc, 8), "sc_grad_norm %s n=%zu sums in the documented order (bitwise): %.17g vs %.17g",
                  tn, n, n0, doc);
            free(g);
        }
    }
    float z = 0.0f, big[3] = {3e38f, -3e38f, 4.0f}, bad[5] = {1, 2, NAN, 3, 4}, inf[4] = {1, INFINITY, 2, 3};
    check(sc_grad_norm(&z, SC_F32, 0, 0) == 0.0 && sc_grad_norm(&z, SC_F32, 1, 0) == 0.0, "sc_grad_norm of none / zeros is 0", "-");
    double nb = sc_grad_norm(big, SC_F32, 3, 0), eb = sqrt(2.0 * (double)big[0] * big[0] + 16.0);
    check(fabs(nb - eb) <= 1e-15 * eb, "sc_grad_norm sums in f64: squares of 3e38 do not overflow",
          "%.17g vs %.17g", nb, (double)eb);
    check(isnan(sc_grad_norm(bad, SC_F32, 5, 0)), "sc_grad_norm with a NaN is NaN", "-");
    double ni = sc_grad_norm(inf, SC_F32, 4, 0);
    check(isinf(ni) && ni > 0, "sc_grad_norm with an inf is +inf", "%g", ni);

    /* sc_clip_scale: min(1, C / (norm + 1e-6)), torch's clip_coef clamped at 1 */
    float s1 = sc_clip_scale(0.25, 0.5f), s2 = sc_clip_scale(0.5 - 1e-6, 0.5f), s3 = sc_clip_scale(0.0, 0.5f);
    float s4 = sc_clip_scale(2.0, 0.5f), s5 = sc_clip_scale(NAN, 0.5f), s6 = sc_clip_scale(INFINITY, 0.5f);
    float s7 = sc_clip_scale(0.5, 0.5f);
    check(s1 == 1.0f && s2 == 1.0f && s3 == 1.0f, "sc_clip_scale: ratio >= 1 gives exactly 1 (norm 0.25, C - 1e-6, 0)",
          "%.9g %.9g %.9g", s1, s2, s3);
    check(s4 == (float)(0.5 / (2.0 + 1e-6)) && s4 < 0.25f && s7 == (float)(0.5 / (0.5 + 1e-6)) && s7 < 1.0f,
          "sc_clip_scale: norm 2, C 0.5 -> (float)(0.5 / 2.000001); norm == C -> just under 1", "%.9g %.9g", s4, s7);
    check(isnan(s5), "sc_clip_scale: NaN norm -> NaN (torch multiplies by NaN)", "%g", s5);
    check(s6 == 0.0f && !signbit(s6), "sc_clip_scale: inf norm -> +0", "%g", s6);
}

/* ---- the model ---- */

enum { B = 2, T = 8, ACC = 2, STEPS = 3 };
static sc_config cfg;
static size_t np;
static float *p0;         /* the random initial weights every model starts from */
static int32_t *ids_all;  /* step s trains on ids_all + s * ACC*B*T */

static sc_model_config base_mc(sc_optim opt, float clip, sc_mode mode)
{
    sc_model_config mc = sc_model_config_init();
    mc.optim = opt;
    mc.lr = opt == SC_OPTIM_SGD ? 0.05f : 1e-3f;
    mc.weight_decay = 0.1f;
    mc.clip_grad_norm = clip;
    mc.mode = mode;
    mc.slide_cpu_threads = 2;
    return mc;
}

static sc_model *make(const sc_model_config *mc, const float *params)
{
    sc_model *m = NULL;
    if (sc_model_create(&m, &cfg, mc, params) != SC_SUCCESS) {
        printf("  create: %s\n", sc_last_error());
        return NULL;
    }
    return m;
}

/* steps [s0, s1) of training on m; the norms each update clipped with into norms[s] (if given) */
static int train(sc_model *m, const char *policy, int s0, int s1, float *losses, double *norms)
{
    sc_plan plan;
    if (!m || sc_plan_parse(&plan, policy, cfg.num_layers) != SC_SUCCESS) return 0;
    for (int s = s0; s < s1; s++) {
        float l;
        if (sc_model_step(m, &plan, ids_all + (size_t)s * ACC * B * T, ACC, B, T, 1, &l) != SC_SUCCESS) {
            printf("  step %d: %s\n", s, sc_last_error());
            return 0;
        }
        if (losses) losses[s] = l;
        if (norms) norms[s] = sc_model_grad_norm(m);
    }
    return 1;
}

/* a fresh model from p0 trained `steps` steps; its weights into w */
static int run(const sc_model_config *mc, const char *policy, int steps, float *w, float *losses, double *norms)
{
    sc_model *m = make(mc, p0);
    int ok = train(m, policy, 0, steps, losses, norms) && sc_model_get_params(m, w) == SC_SUCCESS;
    if (m) sc_model_destroy(m);
    return ok;
}

static void test_clip_model(void)
{
    float *wa = (float *)malloc(4 * np), *wb = (float *)malloc(4 * np), *wn = (float *)malloc(4 * np);
    float la[STEPS], lb[STEPS];
    double na[STEPS], nb[STEPS];
    sc_model_config mc = base_mc(SC_OPTIM_ADAMW, 0.5f, SC_MODE_RESIDENT);
    int ok = run(&mc, "none", STEPS, wa, la, na);
    check(ok, "resident AdamW with clip_grad_norm 0.5 trains 3 steps", "%s", sc_last_error());
    check(ok && na[0] > 1.0 && na[STEPS - 1] > 1.0, "the clip bites: every norm > 2 x 0.5 (else this tests nothing)",
          "norms %g %g %g", na[0], na[1], na[2]);
    /* the same with a limit far above the norm: the same bits as no clipping at all */
    sc_model_config off = base_mc(SC_OPTIM_ADAMW, 0.0f, SC_MODE_RESIDENT), high = base_mc(SC_OPTIM_ADAMW, 1e6f, SC_MODE_RESIDENT);
    ok = run(&off, "none", STEPS, wn, NULL, NULL) && run(&high, "none", STEPS, wb, NULL, NULL);
    check(ok && !memcmp(wn, wb, 4 * np), "clip 1e6 (scale 1) == no clipping, bitwise", "-");
    check(ok && memcmp(wn, wa, 4 * np), "clip 0.5 changes the weights against no clipping", "-");

    const char *plans[] = {"full", "every:2"};
    for (int i = 0; i < 2; i++) {
        ok = run(&mc, plans[i], STEPS, wb, lb, nb);
        CHECK(ok && !memcmp(wa, wb, 4 * np) && !memcmp(la, lb, sizeof la) && !memcmp(na, nb, sizeof na),
              "clipping: plan %s == plan none: weights, losses and norms bitwise (ok %d)", plans[i], ok);
    }
    sc_model_config sl = base_mc(SC_OPTIM_ADAMW, 0.5f, SC_MODE_SLIDE);
    const char *splans[] = {"none", "every:2"};
    for (int i = 0; i < 2; i++) {
        ok = run(&sl, splans[i], STEPS, wb, lb, nb);
        CHECK(ok && !memcmp(wa, wb, 4 * np) && !memcmp(la, lb, sizeof la) && !memcmp(na, nb, sizeof na),
              "clipping: slide plan %s == resident: weights, losses and norms bitwise (ok %d; norms %.9g %.9g %.9g)",
              splans[i], ok, nb[0], nb[1], nb[2]);
    }
    sc_model_config ssgd = base_mc(SC_OPTIM_SGD, 0.5f, SC_MODE_SLIDE), rsgd = base_mc(SC_OPTIM_SGD, 0.5f, SC_MODE_RESIDENT);
    ok = run(&rsgd, "none", STEPS, wa, NULL, NULL) && run(&ssgd, "full", STEPS, wb, NULL, NULL);
    check(ok && !memcmp(wa, wb, 4 * np), "clipping with SGD: slide (full) == resident (none), bitwise", "ok %d", ok);

    /* by hand: the gradients of the current weights (a model without clipping, no update), scaled
       by sc_clip_scale(sc_grad_norm) in f32, then sc_cpu_adamw_update; against the clipping model */
    float *p = (float *)malloc(4 * np), *m1 = (float *)calloc(np, 4), *v1 = (float *)calloc(np, 4);
    float *g = (float *)malloc(4 * np);
    memcpy(p, p0, 4 * np);
    sc_plan plan;
    sc_plan_parse(&plan, "none", cfg.num_layers);
    sc_model *cm = make(&mc, p0);
    ok = cm != NULL;
    int norms_ok = 1, gn_ok = 1;
    double mnorm = 0, cnorm = 0;
    for (int s = 0; s < STEPS && ok; s++) {
        sc_model *gm = make(&off, p);
        float l, lc;
        const int32_t *ids = ids_all + (size_t)s * ACC * B * T;
        ok = gm && sc_model_step(gm, &plan, ids, ACC, B, T, 0, &l) == SC_SUCCESS &&
             sc_model_get_grads(gm, g) == SC_SUCCESS;
        if (ok) {
            double gmn = sc_model_grad_norm(gm); /* no clipping: computed on request */
            mnorm = sc_grad_norm(g, SC_F32, np, 0);
            gn_ok &= !memcmp(&gmn, &mnorm, 8);
            float sc = sc_clip_scale(mnorm, 0.5f);
            for (size_t i = 0; i < np; i++) {
                volatile float x = g[i] * sc;
                g[i] = x;
            }
            sc_cpu_adamw_update(p, m1, v1, g, np, mc.lr, 0.9f, 0.999f, 1e-8f, mc.weight_decay, s + 1);
            ok = sc_model_step(cm, &plan, ids, ACC, B, T, 1, &lc) == SC_SUCCESS;
            cnorm = sc_model_grad_norm(cm);
            norms_ok &= !memcmp(&cnorm, &mnorm, 8) && l == lc;
        }
        if (gm) sc_model_destroy(gm);
    }
    ok = ok && sc_model_get_params(cm, wb) == SC_SUCCESS;
    check(ok && !memcmp(p, wb, 4 * np), "clipped AdamW update == g * sc_clip_scale(sc_grad_norm) then sc_cpu_adamw_update, "
          "3 steps bitwise", "ok %d", ok);
    check(ok && norms_ok, "sc_model_grad_norm after a clipped step == sc_grad_norm of the gradients, and the same loss",
          "%.17g vs %.17g", cnorm, mnorm);
    check(ok && gn_ok, "sc_model_grad_norm without clipping == sc_grad_norm(sc_model_get_grads)", "-");
    if (cm) sc_model_destroy(cm);
    free(m1), free(v1);

    /* the norm without clipping in slide mode: the same bits as resident's, at every step; from
       the second the layer tasks sum their chunks beside the updates (asked at steps 1, 2 and 4
       of one slide run, so that a step goes by unasked, and at every step of the others). With
       layers on the device (1 and 2: a streamed layer on either side) and a kept embedding and
       head with layer 0 (device parts side by side), the parts there are summed there and the
       chunks they share with a neighbour on the host. */
    {
        enum { NS = 4 };
        sc_model_config so[NS];
        for (int i = 0; i < NS; i++) so[i] = base_mc(SC_OPTIM_ADAMW, 0.0f, SC_MODE_SLIDE);
        so[2].slide_device_layers[1] = so[2].slide_device_layers[2] = 1;
        so[3].slide_device_layers[0] = 1, so[3].slide_keep_head = 1;
        static const char *what[NS] = {"streamed, asked at steps 1, 2, 4", "streamed", "layers 1, 2 on the device",
                                       "layer 0, embedding and head on the device"};
        sc_model *r = make(&off, p0), *s[NS];
        for (int i = 0; i < NS; i++) s[i] = make(&so[i], p0);
        float *wr = (float *)malloc(4 * np), *ws = (float *)malloc(4 * np);
        for (int i = 0; i < NS; i++) {
            float lr_ = 0, ls = 0;
            int same = r && s[i] && wr && ws, at = 0;
            double nr = NAN, ns = NAN;
            if (i > 0 && r) { sc_model_destroy(r); r = make(&off, p0); same = same && r; }
            for (int k = 0; k < 4 && same; k++) {
                const int32_t *ids = ids_all + (size_t)k * ACC * B * T;
                same = sc_model_step(r, &plan, ids, ACC, B, T, 1, &lr_) == SC_SUCCESS &&
                       sc_model_step(s[i], &plan, ids, ACC, B, T, 1, &ls) == SC_SUCCESS;
                if (!same) break;
                nr = sc_model_grad_norm(r);
                ns = i == 0 && k == 2 ? nr : sc_model_grad_norm(s[i]);
                same = nr > 0 && !memcmp(&nr, &ns, 8) && !memcmp(&lr_, &ls, 4);
                at = k + 1;
            }
            same = same && sc_model_get_params(r, wr) == SC_SUCCESS && sc_model_get_params(s[i], ws) == SC_SUCCESS &&
                   !memcmp(wr, ws, 4 * np);
            char nm[200];
            snprintf(nm, sizeof nm, "sc_model_grad_norm: slide (%s) == resident bitwise at 4 AdamW steps (no clipping), "
                     "the same weights", what[i]);
            check(same, nm, "step %d: %.17g vs %.17g (%s)", at, nr, ns, sc_last_error());
        }
        /* the step's summary counts the host's updates, clipped (they follow the step) or not */
        sc_model_config sc = base_mc(SC_OPTIM_ADAMW, 0.0f, SC_MODE_SLIDE);
        sc.clip_grad_norm = 0.5f;
        sc_model *c = make(&sc, p0);
        float l = 0;
        size_t hs = s[1] ? sc_model_slide_info(s[1]).host_update_params : 0, hc = 0;
        if (c && sc_model_step(c, &plan, ids_all, ACC, B, T, 1, &l) == SC_SUCCESS) hc = sc_model_slide_info(c).host_update_params;
        check(hs == np && hc == np, "slide_info.host_update_params: every parameter, unclipped and clipped", "%zu and %zu of %zu",
              hs, hc, np);
        free(wr), free(ws);
        if (c) sc_model_destroy(c);
        if (r) sc_model_destroy(r);
        for (int i = 0; i < NS; i++)
            if (s[i]) sc_model_destroy(s[i]);
    }

    /* refusals at create */
    sc_model *bad = NULL;
    sc_model_config c1 = base_mc(SC_OPTIM_ADAMW, -1.0f, SC_MODE_RESIDENT), c2 = base_mc(SC_OPTIM_ADAMW, NAN, SC_MODE_RESIDENT);
    sc_result r1 = sc_model_create(&bad, &cfg, &c1, p0);
    int m1ok = strstr(sc_last_error(), "clip_grad_norm") != NULL;
    sc_result r2 = sc_model_create(&bad, &cfg, &c2, p0);
    check(r1 == SC_ERROR_INVALID_ARGS && r2 == SC_ERROR_INVALID_ARGS && m1ok, "clip_grad_norm -1 and NaN refused (named)",
          "%d %d: %s", r1, r2, sc_last_error());
    sc_model_config c3 = base_mc(SC_OPTIM_ADAMW, 0.5f, SC_MODE_SLIDE), c4 = c3, c5 = base_mc(SC_OPTIM_SGD, 0.5f, SC_MODE_SLIDE);
    c3.slide_dpu = 1, c4.slide_keep_head = 1, c5.slide_device_update = 1;
    sc_result r3 = sc_model_create(&bad, &cfg, &c3, p0), r4 = sc_model_create(&bad, &cfg, &c4, p0);
    sc_result r5 = sc_model_create(&bad, &cfg, &c5, p0);
    check(r3 == SC_ERROR_UNSUPPORTED && r4 == SC_ERROR_UNSUPPORTED && r5 == SC_ERROR_UNSUPPORTED,
          "clip_grad_norm with slide_dpu / slide_keep_head / slide_device_update refused", "%d %d %d", r3, r4, r5);
    free(p), free(g), free(wa), free(wb), free(wn);
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) ? -1 : (long)st.st_size;
}
static int copy_prefix(const char *src, const char *dst, long n)
{
    FILE *a = fopen(src, "rb"), *b = fopen(dst, "wb");
    int ok = a && b;
    for (long i = 0; ok && i < n; i++) {
        int c = fgetc(a);
        if (c == EOF) break;
        fputc(c, b);
    }
    if (a) fclose(a);
    if (b && fclose(b)) ok = 0;
    return ok;
}
static int same_file(const char *x, const char *y)
{
    FILE *a = fopen(x, "rb"), *b = fopen(y, "rb");
    int ok = a && b, ca = 0, cb = 1;
    while (ok && (ca = fgetc(a)) == (cb = fgetc(b)))
        if (ca == EOF) break;
    ok = ok && ca == cb;
    if (a) fclose(a);
    if (b) fclose(b);
    return ok;
}

/* load `path` into a fresh model of mc (weights p0); the result, and the message names path */
static sc_result load_into(const sc_config *c, const sc_model_config *mc, const char *path, int *named, int *steps_after)
{
    sc_model *m = NULL;
    if (sc_model_create(&m, c, mc, NULL) != SC_SUCCESS) return SC_ERROR_INVALID_ARGS;
    sc_result r = sc_model_load_optimizer(m, path);
    *named = strstr(sc_last_error(), path) != NULL;
    *steps_after = sc_model_steps_done(m);
    sc_model_destroy(m);
    return r;
}

static void test_save_load(void)
{
    const char *fa = DIR "/adamw_resident.safetensors", *fs = DIR "/adamw_slide.safetensors";
    const char *fg = DIR "/sgd.safetensors", *ft = DIR "/truncated.safetensors";
    float *w2 = (float *)malloc(4 * np), *wa = (float *)malloc(4 * np), *wb = (float *)malloc(4 * np);
    float *wc = (float *)malloc(4 * np);
    sc_model_config mc = base_mc(SC_OPTIM_ADAMW, 0.5f, SC_MODE_RESIDENT), sl = base_mc(SC_OPTIM_ADAMW, 0.5f, SC_MODE_SLIDE);

    /* resident: 2 steps, save, a new model from the weights loads the state; 2 more steps on both */
    sc_model *a = make(&mc, p0);
    int ok = train(a, "none", 0, 2, NULL, NULL) && sc_model_save_optimizer(a, fa) == SC_SUCCESS &&
             sc_model_get_params(a, w2) == SC_SUCCESS;
    check(ok && file_size(fa) > (long)(8 * np) && file_size(DIR "/adamw_resident.safetensors.tmp") < 0,
          "sc_model_save_optimizer writes m and v (> 8 bytes a parameter), no .tmp left", "%s (size %ld)",
          sc_last_error(), file_size(fa));
    sc_model *b = make(&mc, w2);
    ok = ok && b && sc_model_load_optimizer(b, fa) == SC_SUCCESS;
    check(ok && sc_model_steps_done(b) == 2, "load: steps_done 2", "%s, steps %d", sc_last_error(), b ? sc_model_steps_done(b) : -1);
    ok = ok && train(a, "none", 2, 4, NULL, NULL) && train(b, "none", 2, 4, NULL, NULL) &&
         sc_model_get_params(a, wa) == SC_SUCCESS && sc_model_get_params(b, wb) == SC_SUCCESS;
    check(ok && !memcmp(wa, wb, 4 * np) && sc_model_steps_done(a) == 4 && sc_model_steps_done(b) == 4,
          "resident: 2 steps, save, load into a new model, 2 more == 4 uninterrupted steps bitwise (steps_done 4)", "ok %d", ok);
    /* without the state the continuation differs: the test would see a load that did nothing */
    sc_model *c = make(&mc, w2);
    ok = train(c, "none", 2, 4, NULL, NULL) && sc_model_get_params(c, wc) == SC_SUCCESS;
    check(ok && memcmp(wa, wc, 4 * np), "without loading the state the same 2 steps give other weights", "-");
    if (c) sc_model_destroy(c);

    /* slide: the same, saved and loaded in slide mode; and across modes */
    sc_model *s = make(&sl, p0);
    ok = train(s, "every:2", 0, 2, NULL, NULL) && sc_model_save_optimizer(s, fs) == SC_SUCCESS;
    check(ok && same_file(fa, fs), "slide's saved state == resident's, byte for byte", "ok %d", ok);
    sc_model *s2 = make(&sl, w2);
    ok = ok && s2 && sc_model_load_optimizer(s2, fs) == SC_SUCCESS && sc_model_steps_done(s2) == 2 &&
         train(s, "every:2", 2, 4, NULL, NULL) && train(s2, "none", 2, 4, NULL, NULL) &&
         sc_model_get_params(s, wb) == SC_SUCCESS && sc_model_get_params(s2, wc) == SC_SUCCESS;
    check(ok && !memcmp(wa, wb, 4 * np) && !memcmp(wa, wc, 4 * np) && sc_model_steps_done(s2) == 4,
          "slide: save after 2, load into a new slide model, 2 more == uninterrupted (both == resident) bitwise", "ok %d", ok);
    sc_model *x = make(&sl, w2), *y = make(&mc, w2);
    ok = x && y && sc_model_load_optimizer(x, fa) == SC_SUCCESS && sc_model_load_optimizer(y, fs) == SC_SUCCESS &&
         train(x, "none", 2, 4, NULL, NULL) && train(y, "full", 2, 4, NULL, NULL) &&
         sc_model_get_params(x, wb) == SC_SUCCESS && sc_model_get_params(y, wc) == SC_SUCCESS;
    check(ok && !memcmp(wa, wb, 4 * np) && !memcmp(wa, wc, 4 * np),
          "across modes: resident's state into slide and slide's into resident, 2 more steps == uninterrupted", "ok %d", ok);
    if (x) sc_model_destroy(x);
    if (y) sc_model_destroy(y);
    if (s) sc_model_destroy(s);
    if (s2) sc_model_destroy(s2);

    /* bf16 AdamW state (the CPU backend's 2-byte m and v): saved as f32, loaded back, the same bits */
    {
        const char *fb = DIR "/adamw_bf16_state.safetensors";
        sc_model_config bs = mc;
        bs.state_bf16 = 1;
        float *u2 = (float *)malloc(4 * np), *ua = (float *)malloc(4 * np), *ub = (float *)malloc(4 * np);
        sc_model *h1 = make(&bs, p0), *h2 = NULL;
        ok = h1 && u2 && ua && ub && train(h1, "none", 0, 2, NULL, NULL) && sc_model_save_optimizer(h1, fb) == SC_SUCCESS &&
             sc_model_get_params(h1, u2) == SC_SUCCESS && (h2 = make(&bs, u2)) != NULL &&
             sc_model_load_optimizer(h2, fb) == SC_SUCCESS && train(h1, "none", 2, 4, NULL, NULL) &&
             train(h2, "none", 2, 4, NULL, NULL) && sc_model_get_params(h1, ua) == SC_SUCCESS &&
             sc_model_get_params(h2, ub) == SC_SUCCESS;
        check(ok && !memcmp(ua, ub, 4 * np), "bf16 state: 2 steps, save, load into a new model, 2 more == uninterrupted bitwise",
              "%s", sc_last_error());
        const char *fsb = DIR "/adamw_bf16_state_slide.safetensors";
        sc_model_config bsl = sl;
        bsl.state_bf16 = 1;
        sc_model *h3 = make(&bsl, p0);
        ok = h3 && train(h3, "every:2", 0, 2, NULL, NULL) && sc_model_save_optimizer(h3, fsb) == SC_SUCCESS;
        sc_model *h4 = make(&bs, p0);
        ok = ok && h4 && train(h4, "none", 0, 2, NULL, NULL) && sc_model_save_optimizer(h4, fb) == SC_SUCCESS;
        check(ok && same_file(fb, fsb), "bf16 state: resident's saved m and v == slide's, byte for byte", "ok %d", ok);
        if (h3) sc_model_destroy(h3);
        if (h4) sc_model_destroy(h4);
        if (h1) sc_model_destroy(h1);
        if (h2) sc_model_destroy(h2);
        free(u2), free(ua), free(ub);
    }

    /* SGD: only the step count */
    sc_model_config sg = base_mc(SC_OPTIM_SGD, 0.5f, SC_MODE_RESIDENT);
    sc_model *g1 = make(&sg, p0);
    ok = train(g1, "none", 0, 2, NULL, NULL) && sc_model_save_optimizer(g1, fg) == SC_SUCCESS &&
         sc_model_get_params(g1, w2) == SC_SUCCESS;
    sc_model *g2 = make(&sg, w2);
    ok = ok && g2 && sc_model_load_optimizer(g2, fg) == SC_SUCCESS && sc_model_steps_done(g2) == 2 &&
         train(g1, "none", 2, 4, NULL, NULL) && train(g2, "none", 2, 4, NULL, NULL) &&
         sc_model_get_params(g1, wa) == SC_SUCCESS && sc_model_get_params(g2, wb) == SC_SUCCESS;
    check(ok && !memcmp(wa, wb, 4 * np) && file_size(fg) < 4096, "SGD: save / load (the step count only) and 2 more steps bitwise",
          "ok %d, size %ld", ok, file_size(fg));
    if (g1) sc_model_destroy(g1);
    if (g2) sc_model_destroy(g2);

    /* refusals: each names the file and changes nothing */
    int named = 0, st = -1;
    sc_result r = load_into(&cfg, &sg, fa, &named, &st);
    check(r != SC_SUCCESS && named && st == 0, "an SGD model refuses an AdamW state, naming the file", "%d: %s", r, sc_last_error());
    r = load_into(&cfg, &mc, fg, &named, &st);
    check(r != SC_SUCCESS && named && st == 0, "an AdamW model refuses an SGD state, naming the file", "%d: %s", r, sc_last_error());
    sc_config c3 = cfg;
    c3.num_layers = 3;
    snprintf(c3.name, sizeof c3.name, "tiny-3");
    r = load_into(&c3, &mc, fa, &named, &st);
    check(r != SC_SUCCESS && named && st == 0, "a model of another size refuses the state, naming the file", "%d: %s", r,
          sc_last_error());
    sc_model_config sb = mc;
    sb.state_bf16 = 1;
    r = load_into(&cfg, &sb, fa, &named, &st);
    check(r != SC_SUCCESS && named && st == 0, "a bf16-state model refuses an f32 state, naming the file", "%d: %s", r, sc_last_error());
    long full = file_size(fa);
    const long cuts[] = {full - 4, full / 2, 100, 7, 0};
    for (int i = 0; i < 5; i++) {
        copy_prefix(fa, ft, cuts[i]);
        r = load_into(&cfg, &mc, ft, &named, &st);
        CHECK(r != SC_SUCCESS && named && st == 0, "a state cut to %ld of %ld bytes is refused, naming the file: %s",
              cuts[i], full, r != SC_SUCCESS ? sc_last_error() : "(loaded)");
    }
    /* a failed load leaves the model as it was: its next steps are a fresh model's */
    copy_prefix(fa, ft, full - 4);
    sc_model *f1 = make(&mc, p0), *f2 = make(&mc, p0);
    ok = f1 && f2 && sc_model_load_optimizer(f1, ft) != SC_SUCCESS && train(f1, "none", 0, 2, NULL, NULL) &&
         train(f2, "none", 0, 2, NULL, NULL) && sc_model_get_params(f1, wa) == SC_SUCCESS &&
         sc_model_get_params(f2, wb) == SC_SUCCESS;
    check(ok && !memcmp(wa, wb, 4 * np), "after a refused load the model trains as a fresh one (bitwise)", "ok %d", ok);
    if (f1) sc_model_destroy(f1);
    if (f2) sc_model_destroy(f2);
    /* the same for a state whose metadata is right but one tensor is missing (exp_avg_sq), or of
       another length: checked before any tensor is read */
    for (int v = 0; v < 2; v++) {
        sc_safetensors sa;
        ok = sc_safetensors_open(&sa, fa) == SC_SUCCESS;
        float *ea = (float *)malloc(4 * np + 4);
        int64_t shp[1] = {(int64_t)np};
        ok = ok && ea && sc_safetensors_read_f32(&sa, "exp_avg", ea, 1, shp) == SC_SUCCESS;
        const char *kv[12];
        for (int i = 0; ok && i < sa.n_meta && i < 6; i++) kv[2 * i] = sa.meta_keys[i], kv[2 * i + 1] = sa.meta_values[i];
        sc_st_entry e[2] = {{"exp_avg", "F32", 1, {shp[0]}, ea, 1}, {"exp_avg_sq", "F32", 1, {shp[0] - 1}, ea, 1}};
        ok = ok && sc_safetensors_write(ft, e, v + 1, kv, sa.n_meta < 6 ? sa.n_meta : 6) == SC_SUCCESS;
        if (ok) sc_safetensors_close(&sa);
        free(ea);
        f1 = make(&mc, p0), f2 = make(&mc, p0);
        r = ok && f1 ? sc_model_load_optimizer(f1, ft) : SC_SUCCESS;
        int nm = strstr(sc_last_error(), v ? "tensor 'exp_avg_sq': shape" : "tensor 'exp_avg_sq' is missing") != NULL;
        ok = ok && f2 && r != SC_SUCCESS && nm && train(f1, "none", 0, 2, NULL, NULL) && train(f2, "none", 0, 2, NULL, NULL) &&
             sc_model_get_params(f1, wa) == SC_SUCCESS && sc_model_get_params(f2, wb) == SC_SUCCESS;
        check(ok && !memcmp(wa, wb, 4 * np), v ? "a state with exp_avg_sq of another length is refused and changes nothing"
                                               : "a state without exp_avg_sq is refused and changes nothing",
              "ok %d: %s", ok, sc_last_error());
        if (f1) sc_model_destroy(f1);
        if (f2) sc_model_destroy(f2);
    }
    const char *tok = DIR "/tokens.safetensors";
    sc_tokens_write(tok, ids_all, B, T);
    r = load_into(&cfg, &mc, tok, &named, &st);
    check(r != SC_SUCCESS && named, "a safetensors file that is no optimizer state is refused, naming it", "%d: %s", r,
          sc_last_error());
    r = load_into(&cfg, &mc, DIR "/missing.safetensors", &named, &st);
    check(r != SC_SUCCESS && named, "a missing file is refused, naming it", "%d: %s", r, sc_last_error());
    r = a ? sc_model_save_optimizer(a, DIR "/no/such/dir/opt.safetensors") : SC_SUCCESS;
    check(r != SC_SUCCESS && strstr(sc_last_error(), "no/such/dir") != NULL, "save into a missing directory fails, naming it",
          "%d: %s", r, sc_last_error());
    if (a) sc_model_destroy(a);
    if (b) sc_model_destroy(b);
    free(w2), free(wa), free(wb), free(wc);
}

static void test_set_lr(void)
{
    float *w0 = (float *)malloc(4 * np), *w1 = (float *)malloc(4 * np), *wx = (float *)malloc(4 * np);
    for (int mode = 0; mode < 2; mode++) {
        const char *mn = mode ? "slide" : "resident";
        sc_model_config mc = base_mc(SC_OPTIM_ADAMW, 0.5f, mode ? SC_MODE_SLIDE : SC_MODE_RESIDENT);
        sc_model *m = make(&mc, p0);
        int ok = train(m, "none", 0, 1, NULL, NULL) && sc_model_get_params(m, w0) == SC_SUCCESS;
        sc_model_set_lr(m, 0.0f);
        ok = ok && sc_model_lr(m) == 0.0f && train(m, "none", 1, 2, NULL, NULL) && sc_model_get_params(m, w1) == SC_SUCCESS;
        CHECK(ok && !memcmp(w0, w1, 4 * np) && sc_model_steps_done(m) == 2,
              "%s: sc_model_set_lr(0): AdamW with weight decay leaves the weights unchanged (the step still counts)", mn);
        sc_model_set_lr(m, 1e-3f);
        ok = ok && sc_model_lr(m) == 1e-3f && train(m, "none", 2, 3, NULL, NULL) && sc_model_get_params(m, w1) == SC_SUCCESS;
        CHECK(ok && memcmp(w0, w1, 4 * np), "%s: sc_model_set_lr back to 1e-3: the weights move", mn);
        if (m) sc_model_destroy(m);
        /* a model made with lr 1e-2 and set to 1e-3 before each step == one made with 1e-3 */
        sc_model_config hi = mc;
        hi.lr = 1e-2f;
        sc_model *x = make(&mc, p0), *y = make(&hi, p0);
        ok = x && y;
        for (int s = 0; s < 2 && ok; s++) {
            sc_model_set_lr(y, 1e-3f);
            ok = train(x, "none", s, s + 1, NULL, NULL) && train(y, "none", s, s + 1, NULL, NULL);
        }
        ok = ok && sc_model_get_params(x, w1) == SC_SUCCESS && sc_model_get_params(y, wx) == SC_SUCCESS;
        CHECK(ok && !memcmp(w1, wx, 4 * np), "%s: sc_model_set_lr(1e-3) on a model made with 1e-2 == made with 1e-3, bitwise",
              mn);
        if (x) sc_model_destroy(x);
        if (y) sc_model_destroy(y);
    }
    free(w0), free(w1), free(wx);
}

static void test_tracer_note(void)
{
    sc_tracer tr;
    sc_tracer_init(&tr, NULL);
    for (int s = 0; s < 2; s++) {
        sc_tracer_step_begin(&tr, 0, s);
        sc_tracer_step_end(&tr, 1.0, 10, NULL);
    }
    const sc_step_metrics *m0 = sc_tracer_step_get(&tr, 0), *m1 = sc_tracer_step_get(&tr, 1);
    int ok = m0 && m1 && isnan(m0->lr) && isnan(m0->grad_norm) && isnan(m0->val_loss);
    check(ok, "tracer: lr, grad_norm and val_loss are NaN until noted", "-");
    sc_tracer_step_note(&tr, 0, 1e-3, 2.5, NAN);
    sc_tracer_step_note(&tr, 0, NAN, NAN, 3.25);
    sc_tracer_step_note(&tr, 1, 5e-4, NAN, NAN);
    sc_tracer_step_note(&tr, 2, 1.0, 1.0, 1.0);  /* not a step yet: ignored */
    sc_tracer_step_note(&tr, -1, 1.0, 1.0, 1.0);
    sc_tracer_step_note(NULL, 0, 1.0, 1.0, 1.0);
    m0 = sc_tracer_step_get(&tr, 0), m1 = sc_tracer_step_get(&tr, 1);
    ok = m0->lr == 1e-3 && m0->grad_norm == 2.5 && m0->val_loss == 3.25 && m1->lr == 5e-4 && isnan(m1->grad_norm) &&
         isnan(m1->val_loss) && sc_tracer_step_count(&tr) == 2;
    check(ok, "sc_tracer_step_note sets what is not NaN, keeps the rest, ignores steps out of range", "-");
    const char *path = DIR "/step_metrics.csv";
    ok = sc_tracer_write_step_metrics(&tr, path) == SC_SUCCESS;
    char line[4096] = "", row[4096] = "";
    FILE *f = fopen(path, "r");
    ok = ok && f && fgets(line, sizeof line, f) && fgets(row, sizeof row, f);
    if (f) fclose(f);
    size_t ll = strlen(line), rl = strlen(row);
    const char *tail = ",lr,grad_norm,val_loss\n", *vt = ",0.001,2.5,3.25\n";
    ok = ok && ll > strlen(tail) && !strcmp(line + ll - strlen(tail), tail) && rl > strlen(vt) && !strcmp(row + rl - strlen(vt), vt);
    check(ok, "step_metrics.csv ends with lr,grad_norm,val_loss and step 0's values", "header ...%s row ...%s",
          ll > 40 ? line + ll - 40 : line, rl > 40 ? row + rl - 40 : row);
    sc_tracer_uninit(&tr);
}

int main(void)
{
    mkdir("build", 0777);
    mkdir(DIR, 0777);
    test_lr();
    test_grad_norm();
    test_tracer_note();
    if (sc_config_named(&cfg, "tiny") != SC_SUCCESS) {
        CHECK(0, "tiny config: %s", sc_last_error());
    } else {
        np = sc_config_num_params(&cfg);
        p0 = (float *)malloc(4 * np);
        size_t nid = (size_t)(STEPS + 2) * ACC * B * T;
        ids_all = (int32_t *)malloc(sizeof(int32_t) * nid);
        for (size_t i = 0; i < nid; i++) ids_all[i] = (int32_t)(next_u64() % (uint64_t)cfg.vocab_size);
        sc_model *m = NULL;
        sc_model_config mc = sc_model_config_init();
        int ok = sc_model_create(&m, &cfg, &mc, NULL) == SC_SUCCESS && sc_model_get_params(m, p0) == SC_SUCCESS;
        if (m) sc_model_destroy(m);
        check(ok, "tiny model: random initial weights", "%s", sc_last_error());
        if (ok) {
            test_clip_model();
            test_save_load();
            test_set_lr();
        }
        free(p0), free(ids_all);
    }
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail != 0;
}
