/* The CPU model against HF transformers fixtures (tests/fixtures, made by gen_fixtures.py in
   float64), a finite-difference check, bitwise invariance of every checkpoint policy, the
   saved-activation accounting, and bad input. Run from the repository root. */
#define SLIDECHECK_TESTING 1 /* the sc__ test hooks (the Makefile's test builds define it too) */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static double rel_err(const float *a, const float *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)ref[i];
        if (a[i] != a[i]) return INFINITY;
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static const char *fixtures[] = {"qwen3_gqa_tied", "qwen2_bias_untied", "qwen3_mha_untied"};
static const char *policies[] = {"none", "full", "every:2", "every:3", "layers:0", "layers:1-1",
                                 "selective", "selective:mlp", "selective:attn", "selective:proj", "sqrt"};
#define NPOL (int)(sizeof policies / sizeof policies[0])

typedef struct fixture {
    sc_config cfg;
    float *params;
    int32_t *ids;
    int B, T;
    sc_safetensors ref;
} fixture;

static int fixture_load(fixture *f, const char *name)
{
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "tests/fixtures/%s", name);
    snprintf(path, sizeof path, "%s/ref.safetensors", dir);
    memset(f, 0, sizeof *f);
    if (sc_hf_read_config(dir, &f->cfg) != SC_SUCCESS) { printf("  %s\n", sc_last_error()); return 0; }
    f->params = (float *)malloc(sizeof(float) * sc_config_num_params(&f->cfg));
    if (sc_hf_read_params(dir, &f->cfg, f->params) != SC_SUCCESS) { printf("  %s\n", sc_last_error()); return 0; }
    if (sc_tokens_read(path, &f->ids, &f->B, &f->T) != SC_SUCCESS) { printf("  %s\n", sc_last_error()); return 0; }
    if (sc_safetensors_open(&f->ref, path) != SC_SUCCESS) { printf("  %s\n", sc_last_error()); return 0; }
    return 1;
}

static void fixture_free(fixture *f)
{
    free(f->params);
    sc_tokens_free(f->ids);
    sc_safetensors_close(&f->ref);
}

/* One forward/backward; returns loss, fills grads (and logits if non-NULL). */
static int run_fb(const sc_config *cfg, const float *params, const char *policy, int bf16, const int32_t *ids,
                  int B, int T, float *loss, float *grads, float *logits, size_t *saved)
{
    sc_model *m;
    sc_model_config mc = sc_model_config_init();
    mc.keep_logits = logits != NULL;
    mc.bf16 = bf16;
    sc_plan plan;
    if (sc_plan_parse(&plan, policy, cfg->num_layers) != SC_SUCCESS) return 0;
    if (sc_model_create(&m, cfg, &mc, params) != SC_SUCCESS) return 0;
    int ok = sc_model_forward_backward(m, &plan, ids, B, T, loss) == SC_SUCCESS;
    if (ok && grads) sc_model_get_grads(m, grads);
    if (ok && logits) memcpy(logits, sc_model_logits(m), sizeof(float) * (size_t)B * T * cfg->vocab_size);
    if (saved) *saved = sc_model_last_saved_bytes(m);
    sc_model_destroy(m);
    return ok;
}

static void test_fixture(const char *name)
{
    fixture f;
    if (!fixture_load(&f, name)) { CHECK(0, "%s: fixture loads", name); return; }
    const sc_config *c = &f.cfg;
    size_t np = sc_config_num_params(c), nl = (size_t)f.B * f.T * c->vocab_size;
    float *g = (float *)malloc(sizeof(float) * np), *lg = (float *)malloc(sizeof(float) * nl);
    float *rl = (float *)malloc(sizeof(float) * nl), loss, rloss;
    int ok = run_fb(c, f.params, "none", 0, f.ids, f.B, f.T, &loss, g, lg, NULL);
    CHECK(ok, "%s: forward/backward runs", name);
    sc_safetensors_read_f32(&f.ref, "loss", &rloss, 0, NULL);
    sc_safetensors_read_f32(&f.ref, "logits", rl, 0, NULL);
    double el = fabs((double)loss - rloss) / fabs((double)rloss), eg = rel_err(lg, rl, nl);
    CHECK(el <= 1e-5, "%s: loss %.8f vs HF %.8f, rel err %.2e <= 1e-5", name, loss, rloss, el);
    CHECK(eg <= 1e-5, "%s: logits rel err %.2e <= 1e-5", name, eg);
    int npi = sc_config_params(c, NULL, 0);
    sc_param_info *pi = (sc_param_info *)malloc(sizeof(sc_param_info) * (size_t)npi);
    sc_config_params(c, pi, npi);
    double worst = 0;
    const char *worst_name = "";
    int all_present = 1;
    for (int i = 0; i < npi; i++) {
        char key[128];
        snprintf(key, sizeof key, "grad.%s", pi[i].name);
        float *rg = (float *)malloc(sizeof(float) * pi[i].numel);
        if (sc_safetensors_read_f32(&f.ref, key, rg, pi[i].ndim, pi[i].shape) != SC_SUCCESS) all_present = 0;
        double e = rel_err(g + pi[i].offset, rg, pi[i].numel);
        if (e > worst || e != e) { worst = e; worst_name = pi[i].name; }
        free(rg);
    }
    CHECK(all_present && worst <= 1e-4, "%s: every gradient (%d tensors) rel err <= 1e-4; worst %.2e (%s)", name,
          npi, worst, worst_name);

    /* AdamW steps against torch.optim.AdamW in float64 */
    const char *s;
    sc_model_config mc = sc_model_config_init();
    mc.optim = SC_OPTIM_ADAMW;
    mc.lr = (s = sc_safetensors_meta(&f.ref, "lr")) ? (float)atof(s) : 0;
    mc.beta1 = (s = sc_safetensors_meta(&f.ref, "beta1")) ? (float)atof(s) : 0;
    mc.beta2 = (s = sc_safetensors_meta(&f.ref, "beta2")) ? (float)atof(s) : 0;
    mc.eps = (s = sc_safetensors_meta(&f.ref, "eps")) ? (float)atof(s) : 0;
    mc.weight_decay = (s = sc_safetensors_meta(&f.ref, "weight_decay")) ? (float)atof(s) : 0;
    int steps = (s = sc_safetensors_meta(&f.ref, "steps")) ? atoi(s) : 0;
    float rlosses[16], losses[16];
    sc_plan plan;
    sc_plan_parse(&plan, "none", c->num_layers);
    sc_model *m;
    ok = steps > 0 && steps <= 16 && sc_model_create(&m, c, &mc, f.params) == SC_SUCCESS;
    if (ok) {
        for (int k = 0; k < steps && ok; k++)
            ok = sc_model_forward_backward(m, &plan, f.ids, f.B, f.T, &losses[k]) == SC_SUCCESS &&
                 sc_model_optimizer_step(m) == SC_SUCCESS;
        sc_model_get_params(m, g);
        sc_model_destroy(m);
    }
    ok = ok && sc_safetensors_read_f32(&f.ref, "adamw_losses", rlosses, 0, NULL) == SC_SUCCESS;
    double wl = 0;
    for (int k = 0; ok && k < steps; k++) {
        double e = fabs((double)losses[k] - rlosses[k]) / fabs((double)rlosses[k]);
        if (e > wl) wl = e;
    }
    CHECK(ok && wl <= 2e-4, "%s: %d AdamW steps' losses rel err <= 2e-4; worst %.2e (last loss %.6f vs %.6f)", name,
          steps, wl, ok ? losses[steps - 1] : 0.0f, ok ? rlosses[steps - 1] : 0.0f);
    worst = 0;
    for (int i = 0; ok && i < npi; i++) {
        char key[128];
        snprintf(key, sizeof key, "final.%s", pi[i].name);
        float *rw = (float *)malloc(sizeof(float) * pi[i].numel);
        if (sc_safetensors_read_f32(&f.ref, key, rw, pi[i].ndim, pi[i].shape) != SC_SUCCESS) ok = 0;
        double e = rel_err(g + pi[i].offset, rw, pi[i].numel);
        if (e > worst || e != e) { worst = e; worst_name = pi[i].name; }
        free(rw);
    }
    CHECK(ok && worst <= 2e-4, "%s: final weights after AdamW rel err <= 2e-4; worst %.2e (%s)", name, worst,
          worst_name);
    free(pi);
    free(g); free(lg); free(rl);
    fixture_free(&f);
}

/* Every policy gives the bits of `none`: loss, logits and every gradient; and the predicted
   saved bytes equal what the allocator measured. */
static void test_invariance(const char *label, const sc_config *c, const float *params, const int32_t *ids, int B,
                            int T, int bf16)
{
    size_t np = sc_config_num_params(c), nl = (size_t)B * T * c->vocab_size;
    float *g0 = (float *)malloc(sizeof(float) * np), *g = (float *)malloc(sizeof(float) * np);
    float *l0 = (float *)malloc(sizeof(float) * nl), *lg = (float *)malloc(sizeof(float) * nl);
    float loss0, loss;
    size_t saved;
    run_fb(c, params, "none", bf16, ids, B, T, &loss0, g0, l0, &saved);
    for (int p = 0; p < NPOL; p++) {
        sc_plan plan;
        if (sc_plan_parse(&plan, policies[p], c->num_layers) != SC_SUCCESS) continue; /* layer out of range */
        int ok = run_fb(c, params, policies[p], bf16, ids, B, T, &loss, g, lg, &saved);
        int same = ok && !memcmp(&loss, &loss0, sizeof loss) && !memcmp(g, g0, sizeof(float) * np) &&
                   !memcmp(lg, l0, sizeof(float) * nl);
        CHECK(same, "%s%s: policy %-13s loss, logits and all gradients bitwise equal to none", label,
              bf16 ? " bf16" : "", policies[p]);
        size_t pred = sc_plan_saved_bytes(c, &plan, B, T, 4);
        CHECK(ok && pred == saved, "%s%s: policy %-13s predicted saved bytes %zu == measured %zu", label,
              bf16 ? " bf16" : "", policies[p], pred, saved);
    }
    free(g0); free(g); free(l0); free(lg);
}

static sc_config small_config(void)
{
    sc_config c;
    sc_config_named(&c, "tiny");
    c.num_layers = 3; c.vocab_size = 53; c.hidden_size = 24; c.intermediate_size = 40;
    c.num_heads = 4; c.num_kv_heads = 2; c.head_dim = 10; c.max_position = 32; c.init_std = 0.3;
    return c;
}

static void test_finite_difference(int arch)
{
    sc_config c = small_config();
    if (arch == SC_ARCH_QWEN2) { c.arch = SC_ARCH_QWEN2; c.attention_bias = 1; c.qk_norm = 0; c.tie_embeddings = 0; }
    int B = 2, T = 7;
    int32_t ids[14];
    for (int i = 0; i < B * T; i++) ids[i] = (i * 13 + 3) % c.vocab_size;
    size_t np = sc_config_num_params(&c);
    float *p = (float *)malloc(sizeof(float) * np), *g = (float *)malloc(sizeof(float) * np), loss, lp, lm;
    sc_model *m;
    sc_model_config mc = sc_model_config_init();
    sc_model_create(&m, &c, &mc, NULL);
    sc_model_get_params(m, p);
    sc_model_destroy(m);
    sc_rng rng = sc_rng_seed(7);
    for (size_t i = 0; i < np; i++) p[i] += 0.05f * sc_rng_normal(&rng); /* norms and biases off 1 and 0 */
    run_fb(&c, p, "none", 0, ids, B, T, &loss, g, NULL, NULL);
    int npi = sc_config_params(&c, NULL, 0);
    sc_param_info *pi = (sc_param_info *)malloc(sizeof(sc_param_info) * (size_t)npi);
    sc_config_params(&c, pi, npi);
    double worst = 0;
    for (int k = 0; k < npi; k++)
        for (int rep = 0; rep < 2; rep++) {
            size_t idx = pi[k].offset + (size_t)(sc_rng_u64(&rng) % pi[k].numel);
            float save = p[idx], h = 1e-2f;
            p[idx] = save + h; run_fb(&c, p, "none", 0, ids, B, T, &lp, NULL, NULL, NULL);
            p[idx] = save - h; run_fb(&c, p, "none", 0, ids, B, T, &lm, NULL, NULL, NULL);
            p[idx] = save;
            double fd = ((double)lp - lm) / (2.0 * h);
            double e = fabs(fd - g[idx]) / (fabs(fd) + fabs(g[idx]) + 1e-3);
            if (e > worst) worst = e;
        }
    /* central differences in float32 with h = 1e-2: truncation + rounding stay near 1e-2 */
    CHECK(worst < 5e-2, "finite differences (%s, %d parameter tensors x 2 entries): worst symmetric rel err %.2e < 5e-2",
          arch == SC_ARCH_QWEN2 ? "qwen2" : "qwen3", npi, worst);
    free(p); free(g); free(pi);
}

static void test_bad_input(void)
{
    sc_config c = small_config();
    sc_model *m;
    sc_model_config mc = sc_model_config_init();
    sc_model_create(&m, &c, &mc, NULL);
    sc_plan plan;
    sc_plan_parse(&plan, "none", c.num_layers);
    int32_t ids[64];
    float loss;
    for (int i = 0; i < 64; i++) ids[i] = i % c.vocab_size;
    ids[5] = c.vocab_size;
    sc_result r = sc_model_forward_backward(m, &plan, ids, 2, 8, &loss);
    CHECK(r == SC_ERROR_RANGE && strstr(sc_last_error(), "token id 53"), "token id >= vocab rejected: %s",
          sc_last_error());
    ids[5] = -1;
    r = sc_model_forward_backward(m, &plan, ids, 2, 8, &loss);
    CHECK(r == SC_ERROR_RANGE, "negative token id rejected: %s", sc_last_error());
    ids[5] = 0;
    r = sc_model_forward_backward(m, &plan, ids, 1, 33, &loss);
    CHECK(r == SC_ERROR_RANGE && strstr(sc_last_error(), "max_position"), "sequence over max_position rejected: %s",
          sc_last_error());
    r = sc_model_forward_backward(m, &plan, ids, 2, 8, &loss);
    CHECK(r == SC_SUCCESS, "the model still works after rejected inputs");
    sc_model_destroy(m);
    const char *bad[] = {"nonsense", "every:0", "every:-1", "every:x", "layers:1-9", "layers:2-1", "layers:", "layers:1,",
                         "selective:foo"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = sc_plan_parse(&plan, bad[i], c.num_layers);
        CHECK(r == SC_ERROR_INVALID_ARGS, "policy '%s' rejected: %s", bad[i], sc_last_error());
    }
    /* the whole-step CUDA graph: a bad value, and "on" where it cannot be (the CPU backend) */
    mc.cuda_graph = (sc_cuda_graph)3;
    m = NULL;
    r = sc_model_create(&m, &c, &mc, NULL);
    CHECK(r == SC_ERROR_INVALID_ARGS && !m && strstr(sc_last_error(), "cuda_graph"), "cuda_graph 3 rejected: %s",
          sc_last_error());
    mc.cuda_graph = SC_CUDA_GRAPH_ON;
    r = sc_model_create(&m, &c, &mc, NULL);
    CHECK(r == SC_ERROR_UNSUPPORTED && !m && strstr(sc_last_error(), "CUDA graph"),
          "SC_CUDA_GRAPH_ON on the CPU backend rejected: %s", sc_last_error());
    mc.cuda_graph = SC_CUDA_GRAPH_AUTO;
    r = sc_model_create(&m, &c, &mc, NULL);
    CHECK(r == SC_SUCCESS && sc_model_graph_steps(m) == 0, "SC_CUDA_GRAPH_AUTO on the CPU backend: eager, no graph");
    sc_model_destroy(m);
    r = sc_config_named(&c, "qwen9-huge");
    CHECK(r == SC_ERROR_INVALID_ARGS && strstr(sc_last_error(), "qwen9-huge"), "unknown model name rejected: %s",
          sc_last_error());
}

/* A memory cap makes the forward fail cleanly; the model frees what the step held and the next,
   smaller step succeeds: a max-batch search can rely on it. */
static void test_oom_recovery(void)
{
    sc_config c;
    sc_config_named(&c, "tiny");
    sc_model *m;
    sc_model_config mc = sc_model_config_init();
    mc.mem_cap = (size_t)40 << 20;
    CHECK(sc_model_create(&m, &c, &mc, NULL) == SC_SUCCESS, "model under a 40 MiB cap");
    sc_allocator *al = sc_model_allocator(m);
    int64_t fixed = sc_allocator_stats(al).allocated_bytes[SC_STAT_ALL].current;
    sc_plan plan;
    sc_plan_parse(&plan, "none", c.num_layers);
    int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * 8 * 256);
    for (int i = 0; i < 8 * 256; i++) ids[i] = (i * 7 + 1) % c.vocab_size;
    float loss;
    sc_result r = sc_model_forward_backward(m, &plan, ids, 8, 256, &loss);
    sc_memory_stats st = sc_allocator_stats(al);
    CHECK(r == SC_ERROR_OUT_OF_MEMORY && strstr(sc_last_error(), "saved activation") && st.num_ooms == 1,
          "batch 8 x 256 under 40 MiB: out of memory, naming live tags: %.120s...", sc_last_error());
    /* what may stay: weights, grads, and the step's small buffers (ids, targets, row losses, RoPE) */
    const char *keep[] = {"weights", "grad", "input ids", "targets", "row losses", "rope."};
    size_t kept = 0;
    for (int i = 0; i < 6; i++) kept += sc_allocator_live_bytes_tagged(al, keep[i]);
    size_t live = sc_allocator_live_bytes_tagged(al, "");
    CHECK(live == kept && kept - (size_t)fixed < 100000 && st.reserved_bytes[SC_STAT_ALL].current <= (40 << 20),
          "after the OOM no activation or scratch is live (%zu bytes live, %zu of them weights/grads/small buffers) "
          "and reserved <= cap", live, kept);
    r = sc_model_forward_backward(m, &plan, ids, 1, 256, &loss);
    CHECK(r == SC_SUCCESS && loss > 0, "the next step (batch 1) succeeds: loss %.4f", loss);
    free(ids);
    sc_model_destroy(m);
}

/* The layers' backward scratch is one block for a whole backward pass (taken at the first layer's
   backward, freed after the last), resident and slide, one micro-batch and two: taken layer by
   layer, its holes went to the next layer's replay and fragmented a capped device. The peak is
   the planner's either way. */
static void test_backward_scratch(void)
{
    sc_config c;
    sc_config_named(&c, "tiny");
    c.num_layers = 4;
    const int B = 2, T = 32;
    int32_t ids[2 * 2 * 32];
    for (int i = 0; i < 2 * B * T; i++) ids[i] = (i * 37 + 5) % c.vocab_size;
    const char *pols[] = {"full", "selective:proj", "none"};
    for (int slide = 0; slide < 2; slide++)
        for (int accum = 1; accum <= 2; accum++)
            for (int p = 0; p < 3; p++) {
                sc_model_config mc = sc_model_config_init();
                mc.optim = SC_OPTIM_SGD;
                mc.lr = 1e-3f;
                if (slide) mc.mode = SC_MODE_SLIDE;
                sc_plan plan;
                sc_plan_parse(&plan, pols[p], c.num_layers);
                sc_model *m = NULL;
                sc_tracer tr;
                sc_tracer_config tc;
                memset(&tc, 0, sizeof tc);
                sc_result r = sc_model_create(&m, &c, &mc, NULL);
                if (r == SC_SUCCESS) r = sc_tracer_init(&tr, &tc);
                if (r != SC_SUCCESS) {
                    CHECK(0, "model and tracer: %s", sc_last_error());
                    sc_model_destroy(m);
                    continue;
                }
                sc_model_set_tracer(m, &tr);
                float loss;
                sc_tracer_step_begin(&tr, 0, 0);
                r = sc_model_step(m, &plan, ids, accum, B, T, 1, &loss);
                sc_tracer_step_end(&tr, loss, (double)accum * B * T, NULL);
                int taken = 0, freed = 0;
                for (int64_t i = 0; i < sc_tracer_mem_count(&tr); i++) {
                    sc_tracer_mem_event ev;
                    if (sc_tracer_mem_get(&tr, i, &ev) || strcmp(ev.tag, "backward scratch")) continue;
                    taken += ev.delta > 0;
                    freed += ev.delta < 0;
                }
                /* slide runs each layer over every micro-batch in turn: one pass; resident one a micro-batch */
                int want = slide ? 1 : accum;
                CHECK(r == SC_SUCCESS && taken == want && freed == want,
                      "%s %s, %d micro-batch(es): the backward scratch taken %d and freed %d times (want %d): %s",
                      slide ? "slide" : "resident", pols[p], accum, taken, freed, want, r ? sc_last_error() : "ok");
                sc_model_set_tracer(m, NULL);
                sc_tracer_uninit(&tr);
                sc_model_destroy(m);
            }
}

/* ---- CPU matmuls and attention: against a double-precision reference on shapes that are not multiples of the
   tiles, bitwise the same for 1, 2 and 3 threads, and on every ISA path this CPU runs. ---- */
static void fill_rand(float *x, size_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 12345;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = (float)((double)(s >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
    }
}

static void set_threads(int n)
{
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

/* out, dinp, dw (+= onto dw0), dbias (+= onto db0) of one shape with the current path and thread count */
static void mm_run(float *out, float *dinp, float *dw, float *db, const float *x, const float *w, const float *bias,
                   const float *dy, const float *dw0, const float *db0, int N, int IC, int OC)
{
    memcpy(dw, dw0, sizeof(float) * (size_t)OC * IC);
    memcpy(db, db0, sizeof(float) * (size_t)OC);
    sc_cpu_matmul_forward(out, x, w, bias, N, IC, OC);
    sc_cpu_matmul_backward(dinp, dw, db, dy, x, w, N, IC, OC);
}

static void test_cpu_matmul(void)
{
    static const int shp[][3] = {{1, 1, 1}, {1, 7, 33}, {7, 33, 1}, {33, 130, 7}, {130, 7, 33}, {130, 33, 130},
                                 {7, 130, 130}, {97, 300, 70}, {40, 64, 300}, {513, 40, 17}, {3, 600, 5}};
    const char *isas[] = {"avx512", "avx2", "scalar"};
    int nshape = (int)(sizeof shp / sizeof shp[0]);
#ifdef _OPENMP
    int threads0 = omp_get_max_threads();
#endif
    for (int si = 0; si < nshape; si++) {
        int N = shp[si][0], IC = shp[si][1], OC = shp[si][2];
        size_t nx = (size_t)N * IC, ny = (size_t)N * OC, nw = (size_t)OC * IC;
        float *x = (float *)malloc(sizeof(float) * nx), *w = (float *)malloc(sizeof(float) * nw);
        float *bias = (float *)malloc(sizeof(float) * OC), *dy = (float *)malloc(sizeof(float) * ny);
        float *dw0 = (float *)malloc(sizeof(float) * nw), *db0 = (float *)malloc(sizeof(float) * OC);
        float *r[4], *o[4];
        size_t sz[4] = {ny, nx, nw, (size_t)OC};
        for (int k = 0; k < 4; k++) {
            r[k] = (float *)malloc(sizeof(float) * sz[k]);
            o[k] = (float *)malloc(sizeof(float) * sz[k]);
        }
        fill_rand(x, nx, 1 + si), fill_rand(w, nw, 2 + si), fill_rand(bias, OC, 3 + si), fill_rand(dy, ny, 4 + si);
        fill_rand(dw0, nw, 5 + si), fill_rand(db0, OC, 6 + si);
        /* the reference, in double: out = x w^T + b, dinp = dy w, dw = dw0 + dy^T x, db = db0 + sum dy */
        double *ref = (double *)calloc(ny + nx + nw + OC, sizeof(double));
        double *ro = ref, *rx = ro + ny, *rw = rx + nx, *rb = rw + nw;
        for (int n = 0; n < N; n++)
            for (int c = 0; c < OC; c++) {
                double s = bias[c], g = dy[(size_t)n * OC + c];
                for (int i = 0; i < IC; i++) {
                    s += (double)x[(size_t)n * IC + i] * w[(size_t)c * IC + i];
                    rx[(size_t)n * IC + i] += g * w[(size_t)c * IC + i];
                    rw[(size_t)c * IC + i] += g * x[(size_t)n * IC + i];
                }
                ro[(size_t)n * OC + c] = s;
                rb[c] += g;
            }
        for (size_t i = 0; i < nw; i++) rw[i] += dw0[i];
        for (int c = 0; c < OC; c++) rb[c] += db0[c];
        double *rk[4] = {ro, rx, rw, rb};
        const char *what[4] = {"out", "dinp", "dw", "dbias"};
        for (int ii = 0; ii < 3; ii++) {
            if (!sc__cpu_matmul_force(isas[ii])) continue;
            set_threads(1);
            mm_run(r[0], r[1], r[2], r[3], x, w, bias, dy, dw0, db0, N, IC, OC);
            double worst = 0;
            for (int k = 0; k < 4; k++) {
                double num = 0, den = 0;
                for (size_t i = 0; i < sz[k]; i++) {
                    double d = (double)r[k][i] - rk[k][i];
                    num += d * d, den += rk[k][i] * rk[k][i];
                    if (r[k][i] != r[k][i]) num = INFINITY;
                }
                double e = den > 0 ? sqrt(num / den) : sqrt(num);
                if (e > worst) worst = e;
            }
            CHECK(worst <= 2e-6, "matmul %s N=%d IC=%d OC=%d: out, dinp, dw, dbias vs double rel err %.2e <= 2e-6",
                  isas[ii], N, IC, OC, worst);
            for (int t = 2; t <= 3; t++) {
                set_threads(t);
                mm_run(o[0], o[1], o[2], o[3], x, w, bias, dy, dw0, db0, N, IC, OC);
                int same = 1, bad = -1;
                for (int k = 0; k < 4; k++)
                    if (memcmp(o[k], r[k], sizeof(float) * sz[k])) same = 0, bad = k;
                CHECK(same, "matmul %s N=%d IC=%d OC=%d: %d threads bitwise equal to 1 thread%s%s", isas[ii], N, IC,
                      OC, t, same ? "" : "; differs: ", same ? "" : what[bad]);
            }
        }
        sc__cpu_matmul_force(NULL);
        for (int k = 0; k < 4; k++) free(r[k]), free(o[k]);
        free(ref), free(x), free(w), free(bias), free(dy), free(dw0), free(db0);
    }
#ifdef _OPENMP
    set_threads(threads0);
#endif
}

/* attention: the blocked version against the row-by-row one, and bitwise over thread counts */
static void test_cpu_attention(void)
{
    static const int shp[][5] = {{2, 1, 4, 2, 8}, {1, 50, 3, 1, 12}, {2, 97, 4, 2, 48}, {1, 130, 2, 2, 16}};
    const char *isas[] = {"avx512", "avx2", "scalar"};
#ifdef _OPENMP
    int threads0 = omp_get_max_threads();
#endif
    for (int si = 0; si < (int)(sizeof shp / sizeof shp[0]); si++) {
        int B = shp[si][0], T = shp[si][1], H = shp[si][2], KV = shp[si][3], D = shp[si][4];
        int K = (H + KV) * D, Q = (H + 2 * KV) * D, HD = H * D;
        size_t N = (size_t)B * T;
        float *qk = (float *)malloc(sizeof(float) * N * K), *qkv = (float *)malloc(sizeof(float) * N * Q);
        float *dout = (float *)malloc(sizeof(float) * N * HD);
        float *out[3], *lse[3], *dqk[3], *dqkv[3];
        for (int k = 0; k < 3; k++) {
            out[k] = (float *)malloc(sizeof(float) * N * HD), lse[k] = (float *)malloc(sizeof(float) * N * H);
            dqk[k] = (float *)calloc(N * K, sizeof(float)), dqkv[k] = (float *)calloc(N * Q, sizeof(float));
        }
        fill_rand(qk, N * K, 10 + si), fill_rand(qkv, N * Q, 11 + si), fill_rand(dout, N * HD, 12 + si);
        for (size_t i = 0; i < N * K; i++) qk[i] *= 2.0f; /* peakier softmax */
        sc__attention_forward_ref(out[0], lse[0], qk, qkv, B, T, H, KV, D);
        sc__attention_backward_ref(dqk[0], dqkv[0], dout, qk, qkv, out[0], lse[0], B, T, H, KV, D);
        for (int ii = 0; ii < 3; ii++) {
            if (!sc__cpu_matmul_force(isas[ii])) continue;
            set_threads(1);
            sc_cpu_attention_forward(out[1], lse[1], qk, qkv, B, T, H, KV, D);
            sc_cpu_attention_backward(dqk[1], dqkv[1], dout, qk, qkv, out[1], lse[1], B, T, H, KV, D);
            double e = rel_err(out[1], out[0], N * HD), el = rel_err(lse[1], lse[0], N * H);
            double eq = rel_err(dqk[1], dqk[0], N * K), ev = rel_err(dqkv[1], dqkv[0], N * Q);
            double worst = fmax(fmax(e, el), fmax(eq, ev));
            CHECK(worst <= 1e-5, "attention %s B=%d T=%d H=%d KV=%d D=%d: vs row-by-row rel err %.2e <= 1e-5",
                  isas[ii], B, T, H, KV, D, worst);
            for (int t = 2; t <= 3; t++) {
                set_threads(t);
                sc_cpu_attention_forward(out[2], lse[2], qk, qkv, B, T, H, KV, D);
                sc_cpu_attention_backward(dqk[2], dqkv[2], dout, qk, qkv, out[2], lse[2], B, T, H, KV, D);
                int same = !memcmp(out[2], out[1], sizeof(float) * N * HD) &&
                           !memcmp(lse[2], lse[1], sizeof(float) * N * H) &&
                           !memcmp(dqk[2], dqk[1], sizeof(float) * N * K) &&
                           !memcmp(dqkv[2], dqkv[1], sizeof(float) * N * Q);
                CHECK(same, "attention %s T=%d: %d threads bitwise equal to 1 thread", isas[ii], T, t);
            }
        }
        sc__cpu_matmul_force(NULL);
        for (int k = 0; k < 3; k++) free(out[k]), free(lse[k]), free(dqk[k]), free(dqkv[k]);
        free(qk), free(qkv), free(dout);
    }
#ifdef _OPENMP
    set_threads(threads0);
#endif
}

/* the SwiGLU backward that also writes m (what a recompute leaves to it): the bits of the
   separate backward and forward */
static void test_swiglu_remat(void)
{
    const int N = 37, I = 53;
    size_t n = (size_t)N * I;
    float *gu = (float *)malloc(sizeof(float) * 2 * n), *dm = (float *)malloc(sizeof(float) * n);
    float *dgu0 = (float *)malloc(sizeof(float) * 2 * n), *m0 = (float *)malloc(sizeof(float) * n);
    float *dgu1 = (float *)malloc(sizeof(float) * 2 * n), *m1 = (float *)malloc(sizeof(float) * n);
    sc_rng rng = sc_rng_seed(11);
    if (!gu || !dm || !dgu0 || !m0 || !dgu1 || !m1) { CHECK(0, "swiglu remat: host memory"); goto out; }
    for (size_t i = 0; i < 2 * n; i++) gu[i] = 3.0f * sc_rng_normal(&rng);
    for (size_t i = 0; i < n; i++) dm[i] = sc_rng_normal(&rng);
    sc_cpu_swiglu_backward(dgu0, dm, gu, N, I);
    sc_cpu_swiglu_forward(m0, gu, N, I);
    for (size_t i = 0; i < n; i++) m1[i] = NAN;
    for (size_t i = 0; i < 2 * n; i++) dgu1[i] = NAN;
    sc_cpu_swiglu_backward_remat(dgu1, m1, dm, gu, N, I);
    CHECK(!memcmp(dgu0, dgu1, sizeof(float) * 2 * n) && !memcmp(m0, m1, sizeof(float) * n),
          "swiglu_backward_remat: dgate_up and m bitwise equal to swiglu_backward + swiglu_forward (N=%d, I=%d)", N, I);
out:
    free(gu); free(dm); free(dgu0); free(m0); free(dgu1); free(m1);
}

int main(void)
{
    test_oom_recovery();
    test_backward_scratch();
    test_swiglu_remat();
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) test_fixture(fixtures[i]);
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
        fixture f;
        if (!fixture_load(&f, fixtures[i])) { CHECK(0, "%s loads", fixtures[i]); continue; }
        test_invariance(fixtures[i], &f.cfg, f.params, f.ids, f.B, f.T, 0);
        test_invariance(fixtures[i], &f.cfg, f.params, f.ids, f.B, f.T, 1);
        fixture_free(&f);
    }
    {
        sc_config c;
        sc_config_named(&c, "tiny");
        int B = 2, T = 33;
        int32_t ids[66];
        for (int i = 0; i < B * T; i++) ids[i] = (i * 101 + 7) % c.vocab_size;
        test_invariance("tiny", &c, NULL, ids, B, T, 0);
    }
    test_finite_difference(SC_ARCH_QWEN3);
    test_finite_difference(SC_ARCH_QWEN2);
    test_bad_input();
    test_cpu_matmul();
    test_cpu_attention();
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail != 0;
}
