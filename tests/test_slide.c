/* Slide mode on the CPU backend: every checkpoint policy, SGD and AdamW, f32 and bf16 storage,
   gradient accumulation, tied and untied heads: losses, gradients and weights bitwise equal to
   resident mode step after step (the schedule, copy threads, events and the host optimizer
   thread all run as on the GPU). The delayed update (DPU) against resident mode driven by hand
   with each update a step late; the head kept on the device against resident and plain slide;
   the layers' SGD on the device (slide_device_update) against resident mode.
   Then accumulation against one large batch, and bad input.
   Run from the repository root. */
#ifndef SLIDECHECK_TESTING
#define SLIDECHECK_TESTING 1 /* the sc__ test hooks (the Makefile's test builds define it too) */
#endif
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef struct run_cfg { const char *policy; int bf16, accum, prefetch; sc_optim optim; int head_slice, state_bf16; } run_cfg;
/* dpu: slide's delayed update, and in resident mode its reference by hand; shift: step s trains
   on the ids shifted by s * shift (other rows each step); peek: read the weights back after
   every step; keep: slide keeps the embedding and head on the device; dev: slide updates the
   layers on the device; once: a sliced head goes up whole, once a step */
typedef struct run_x { int dpu, shift, peek, keep, dev, once; } run_x;
/* slide: the layers kept on the device (sc_layer_set_parse's syntax; NULL: none) */
static const char *g_place;
static int g_master;

/* `steps` training steps (then one gradient-only step); losses, final weights and grads out */
static int train(const sc_config *cfg, const float *params, const int32_t *ids, int B, int T, run_cfg rc,
                 sc_mode mode, int steps, float *losses, float *wout, float *gout, const run_x *x)
{
    static const run_x none = {0, 0, 0, 0, 0, 0};
    if (!x) x = &none;
    sc_model_config mc = sc_model_config_init();
    mc.bf16 = rc.bf16;
    mc.optim = rc.optim;
    mc.lr = rc.optim == SC_OPTIM_SGD ? 0.05f : 0.01f;
    mc.weight_decay = 0.1f;
    mc.mode = mode;
    mc.slide_prefetch = rc.prefetch;
    mc.slide_cpu_threads = 2;
    mc.head_slice = rc.head_slice;
    mc.state_bf16 = rc.state_bf16;
    mc.slide_dpu = x->dpu && mode == SC_MODE_SLIDE;
    mc.slide_keep_head = x->keep && mode == SC_MODE_SLIDE;
    mc.slide_device_update = x->dev && mode == SC_MODE_SLIDE;
    mc.slide_head_once = x->once && mode == SC_MODE_SLIDE;
    mc.master_weights = g_master;
    if (g_place && mode == SC_MODE_SLIDE && sc_layer_set_parse(mc.slide_device_layers, g_place, cfg->num_layers) != SC_SUCCESS)
        return 0;
    sc_plan plan;
    sc_model *m;
    if (sc_plan_parse(&plan, rc.policy, cfg->num_layers) != SC_SUCCESS) return 0;
    if (sc_model_create(&m, cfg, &mc, params) != SC_SUCCESS) { printf("  create: %s\n", sc_last_error()); return 0; }
    size_t n = (size_t)rc.accum * B * T, np = sc_config_num_params(cfg);
    int32_t *sid = (int32_t *)malloc(sizeof(int32_t) * n);
    float *gprev = (float *)malloc(4 * np);
    int by_hand = x->dpu && mode == SC_MODE_RESIDENT, ok = sid && gprev;
    for (int s = 0; s <= steps && ok; s++) { /* the last step computes gradients only */
        for (size_t i = 0; i < n; i++) sid[i] = (int32_t)((ids[i] + s * x->shift) % cfg->vocab_size);
        if (!by_hand) {
            ok = sc_model_step(m, &plan, sid, rc.accum, B, T, s < steps, &losses[s]) == SC_SUCCESS;
        } else {
            /* DPU's reference: the gradients of the current weights, then the update from the last
               step's (step 0: none). The CPU backend's gradients are f32 host memory. */
            ok = sc_model_step(m, &plan, sid, rc.accum, B, T, 0, &losses[s]) == SC_SUCCESS &&
                 sc_model_get_grads(m, gout) == SC_SUCCESS;
            if (ok && s > 0) {
                memcpy(m->grads, gprev, 4 * np);
                ok = sc_model_optimizer_step(m) == SC_SUCCESS;
            }
            memcpy(gprev, gout, 4 * np);
        }
        if (ok && x->peek) ok = sc_model_get_params(m, wout) == SC_SUCCESS;
    }
    if (!ok) printf("  step: %s\n", sc_last_error());
    if (ok) ok = sc_model_get_params(m, wout) == SC_SUCCESS && (by_hand || sc_model_get_grads(m, gout) == SC_SUCCESS);
    free(sid);
    free(gprev);
    sc_model_destroy(m);
    return ok;
}

static void compare_x(const char *name, const sc_config *cfg, const float *params, const int32_t *ids, int B, int T,
                      run_cfg rc, const run_x *x)
{
    enum { STEPS = 3 };
    size_t np = sc_config_num_params(cfg);
    float la[STEPS + 1], lb[STEPS + 1];
    float *wa = (float *)malloc(4 * np), *wb = (float *)malloc(4 * np), *ga = (float *)malloc(4 * np),
          *gb = (float *)malloc(4 * np);
    int ok = wa && wb && ga && gb && train(cfg, params, ids, B, T, rc, SC_MODE_RESIDENT, STEPS, la, wa, ga, x) &&
             train(cfg, params, ids, B, T, rc, SC_MODE_SLIDE, STEPS, lb, wb, gb, x);
    if (ok && x && x->keep) { /* and plain slide's */
        float lc[STEPS + 1], *wc = (float *)malloc(4 * np), *gc = (float *)malloc(4 * np);
        run_x px = *x;
        px.keep = 0;
        ok = wc && gc && train(cfg, params, ids, B, T, rc, SC_MODE_SLIDE, STEPS, lc, wc, gc, &px) &&
             !memcmp(lc, lb, sizeof lc) && !memcmp(wc, wb, 4 * np) && !memcmp(gc, gb, 4 * np);
        free(wc); free(gc);
    }
    CHECK(ok && !memcmp(la, lb, sizeof la) && !memcmp(wa, wb, 4 * np) && !memcmp(ga, gb, 4 * np),
          "slide%s == resident%s bitwise: %s %s %s%s %s accum %d prefetch %d head slice %d (losses %.7f -> %.7f, "
          "%zu weights, %zu grads)",
          x && x->dpu ? " + DPU" : x && x->keep ? (x->dev ? " + keep-head + device update" : " + keep-head")
          : x && x->dev ? (x->once ? " + device update + head once" : " + device update")
          : x && x->once ? " + head once" : "",
          x && x->dpu ? " by hand, each update a step late," : x && x->keep ? " == plain slide" : "", name, rc.policy,
          rc.optim == SC_OPTIM_SGD ? "sgd" : "adamw", rc.state_bf16 ? " (bf16 state)" : "",
          rc.bf16 ? "bf16" : "fp32", rc.accum,
          rc.prefetch ? rc.prefetch : 1, rc.head_slice, ok ? la[0] : 0.0f, ok ? la[STEPS] : 0.0f, np, np);
    free(wa); free(wb); free(ga); free(gb);
}

static void compare(const char *name, const sc_config *cfg, const float *params, const int32_t *ids, int B, int T,
                    run_cfg rc)
{
    compare_x(name, cfg, params, ids, B, T, rc, NULL);
}

/* slide with the layers of `place` on the device against resident mode: losses, weights and
   gradients bitwise after 3 steps (then a gradient-only step) */
static void compare_place(const char *name, const sc_config *cfg, const float *params, const int32_t *ids, int B,
                          int T, run_cfg rc, const run_x *x, const char *place, int master)
{
    enum { STEPS = 3 };
    size_t np = sc_config_num_params(cfg);
    float la[STEPS + 1], lb[STEPS + 1];
    float *wa = (float *)malloc(4 * np), *wb = (float *)malloc(4 * np), *ga = (float *)malloc(4 * np),
          *gb = (float *)malloc(4 * np);
    g_master = master;
    int ok = wa && wb && ga && gb && train(cfg, params, ids, B, T, rc, SC_MODE_RESIDENT, STEPS, la, wa, ga, x);
    g_place = place;
    ok = ok && train(cfg, params, ids, B, T, rc, SC_MODE_SLIDE, STEPS, lb, wb, gb, x);
    g_place = NULL;
    g_master = 0;
    CHECK(ok && !memcmp(la, lb, sizeof la) && !memcmp(wa, wb, 4 * np) && !memcmp(ga, gb, 4 * np),
          "slide, layers %s on the device%s%s == resident bitwise: %s %s %s%s %s%s accum %d prefetch %d head slice %d "
          "(losses %.7f -> %.7f)", place, x && x->keep ? " + keep-head" : "", x && x->peek ? " + read-back" : "", name,
          rc.policy, rc.optim == SC_OPTIM_SGD ? "sgd" : "adamw", rc.state_bf16 ? " (bf16 state)" : "",
          rc.bf16 ? "bf16" : "fp32", master ? " master" : "", rc.accum, rc.prefetch ? rc.prefetch : 1, rc.head_slice,
          ok ? la[0] : 0.0f, ok ? la[STEPS] : 0.0f);
    free(wa); free(wb); free(ga); free(gb);
}

static int load_fixture(const char *name, sc_config *cfg, float **params, int32_t **ids, int *B, int *T)
{
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "tests/fixtures/%s", name);
    snprintf(path, sizeof path, "%s/ref.safetensors", dir);
    if (sc_hf_read_config(dir, cfg) != SC_SUCCESS) return 0;
    *params = (float *)malloc(sizeof(float) * sc_config_num_params(cfg));
    return *params && sc_hf_read_params(dir, cfg, *params) == SC_SUCCESS &&
           sc_tokens_read(path, ids, B, T) == SC_SUCCESS;
}

int main(void)
{
    static const char *fixtures[] = {"qwen3_gqa_tied", "qwen2_bias_untied", "qwen3_mha_untied"};
    static const char *policies[] = {"none", "full", "every:2", "layers:1", "selective", "selective:mlp", "selective:attn", "selective:proj", "sqrt"};
    for (int f = 0; f < 3; f++) {
        sc_config cfg;
        float *params = NULL;
        int32_t *ids = NULL, *ids2 = NULL;
        int B, T;
        if (!load_fixture(fixtures[f], &cfg, &params, &ids, &B, &T)) {
            CHECK(0, "load fixture %s: %s", fixtures[f], sc_last_error());
            continue;
        }
        /* two micro-batches: the fixture's batch, then the same shifted by one token id */
        ids2 = (int32_t *)malloc(sizeof(int32_t) * 2 * (size_t)B * T);
        for (int i = 0; i < B * T; i++) { ids2[i] = ids[i]; ids2[B * T + i] = (ids[i] + 1) % cfg.vocab_size; }
        for (int p = 0; p < (int)(sizeof policies / sizeof policies[0]); p++)
            for (int o = 0; o < 2; o++) {
                run_cfg rc = {policies[p], 0, 1, 0, o ? SC_OPTIM_ADAMW : SC_OPTIM_SGD, 0, 0};
                compare(fixtures[f], &cfg, params, ids, B, T, rc);
            }
        run_cfg bf = {"every:2", 1, 1, 0, SC_OPTIM_ADAMW, 0, 0};
        compare(fixtures[f], &cfg, params, ids, B, T, bf);
        run_cfg ac = {"none", 0, 2, 0, SC_OPTIM_ADAMW, 0, 0};
        compare(fixtures[f], &cfg, params, ids2, B, T, ac);
        run_cfg acf = {"full", 1, 2, 2, SC_OPTIM_SGD, 0, 0};
        compare(fixtures[f], &cfg, params, ids2, B, T, acf);
        run_cfg pf = {"selective", 0, 1, cfg.num_layers, SC_OPTIM_ADAMW, 0, 0};
        compare(fixtures[f], &cfg, params, ids, B, T, pf);
        /* AdamW with bf16 m and v */
        run_cfg s1 = {"none", 0, 1, 0, SC_OPTIM_ADAMW, 0, 1}, s2 = {"full", 1, 2, 2, SC_OPTIM_ADAMW, 0, 1},
                s3 = {"selective:attn", 0, 1, 0, SC_OPTIM_ADAMW, 0, 1};
        compare(fixtures[f], &cfg, params, ids, B, T, s1);
        compare(fixtures[f], &cfg, params, ids2, B, T, s2);
        compare(fixtures[f], &cfg, params, ids, B, T, s3);
        {
            /* the option does something: bf16 state moves the weights elsewhere than f32 state, nearby */
            size_t np = sc_config_num_params(&cfg);
            float la[4], lb[4], *wa = (float *)malloc(4 * np), *wb = (float *)malloc(4 * np),
                            *ga = (float *)malloc(4 * np), *gb = (float *)malloc(4 * np);
            run_cfg f32s = {"none", 0, 1, 0, SC_OPTIM_ADAMW, 0, 0};
            int ok = wa && wb && ga && gb && train(&cfg, params, ids, B, T, f32s, SC_MODE_RESIDENT, 3, la, wa, ga, NULL) &&
                     train(&cfg, params, ids, B, T, s1, SC_MODE_RESIDENT, 3, lb, wb, gb, NULL);
            double num = 0, den = 0;
            for (size_t i = 0; ok && i < np; i++) {
                num += ((double)wa[i] - wb[i]) * ((double)wa[i] - wb[i]);
                den += ((double)wa[i] - params[i]) * ((double)wa[i] - params[i]);
            }
            double rel = den > 0 ? sqrt(num / den) : 1; /* against the size of the 3 updates */
            CHECK(ok && memcmp(wa, wb, 4 * np) && rel < 0.05,
                  "%s bf16 AdamW state: weights differ from f32 state's by %.2e of the updates (> 0, < 0.05)",
                  fixtures[f], rel);
            free(wa); free(wb); free(ga); free(gb);
        }
        /* the LM head in vocabulary slices (the last one shorter): per-slice gradients with one
           micro-batch, the whole head's gradient with two */
        int hs = cfg.vocab_size / 3 + 1;
        run_cfg h1 = {"none", 0, 1, 0, SC_OPTIM_SGD, hs, 0}, h2 = {"full", 1, 1, 0, SC_OPTIM_ADAMW, hs, 0},
                h3 = {"every:2", 0, 2, 0, SC_OPTIM_ADAMW, hs, 0};
        compare(fixtures[f], &cfg, params, ids, B, T, h1);
        compare(fixtures[f], &cfg, params, ids, B, T, h2);
        compare(fixtures[f], &cfg, params, ids2, B, T, h3);
        /* an untied head's gradient laid out [final norm | LM head], as slide sums it over NCCL (resident
           mode's bucket): its downloads put each part in its place */
        if (!cfg.tie_embeddings) {
            char nm[96];
            snprintf(nm, sizeof nm, "%s, norm first", fixtures[f]);
            run_cfg n1 = {"none", 0, 1, 0, SC_OPTIM_ADAMW, 0, 0}, n2 = {"full", 1, 2, 2, SC_OPTIM_ADAMW, 0, 0};
            sc__slide_norm_first_force(1);
            compare(nm, &cfg, params, ids, B, T, n1);
            compare(nm, &cfg, params, ids2, B, T, n2);
            sc__slide_norm_first_force(0);
        }
        /* the delayed parameter update against resident mode by hand (other tokens each step) */
        {
            run_x dx = {1, 3, 0, 0, 0, 0};
            static const char *dpol[] = {"none", "full", "every:2"};
            for (int p = 0; p < 3; p++)
                for (int o = 0; o < 2; o++) {
                    sc_optim op = o ? SC_OPTIM_ADAMW : SC_OPTIM_SGD;
                    run_cfg d1 = {dpol[p], 0, 1, 1, op, 0, 0}, d2 = {dpol[p], 0, 2, 2, op, 0, 0},
                            d3 = {dpol[p], 0, 2, 1, op, 0, 0};
                    compare_x(fixtures[f], &cfg, params, ids, B, T, d1, &dx);
                    compare_x(fixtures[f], &cfg, params, ids2, B, T, d2, &dx);
                    compare_x(fixtures[f], &cfg, params, ids2, B, T, d3, &dx);
                }
            run_cfg e1 = {"every:2", 1, 2, 1, SC_OPTIM_ADAMW, 0, 0}, e2 = {"none", 0, 1, 0, SC_OPTIM_SGD, hs, 0},
                    e3 = {"full", 0, 2, 2, SC_OPTIM_ADAMW, hs, 1};
            compare_x(fixtures[f], &cfg, params, ids2, B, T, e1, &dx);
            compare_x(fixtures[f], &cfg, params, ids, B, T, e2, &dx);
            compare_x(fixtures[f], &cfg, params, ids2, B, T, e3, &dx);

            /* it does delay: step 0's loss as without DPU, the later ones not; reading the weights
               back after every step changes nothing */
            enum { S = 3 };
            size_t np = sc_config_num_params(&cfg);
            float la[S + 1], lb[S + 1], lc[S + 1], *wa = (float *)malloc(4 * np), *wb = (float *)malloc(4 * np),
                  *wc = (float *)malloc(4 * np), *ga = (float *)malloc(4 * np), *gb = (float *)malloc(4 * np),
                  *gc = (float *)malloc(4 * np);
            run_cfg rc = {"every:2", 0, 2, 2, SC_OPTIM_ADAMW, 0, 0};
            run_x plain = {0, 3, 0, 0, 0, 0}, peek = {1, 3, 1, 0, 0, 0};
            int ok = wa && wb && wc && ga && gb && gc &&
                     train(&cfg, params, ids2, B, T, rc, SC_MODE_SLIDE, S, la, wa, ga, &plain) &&
                     train(&cfg, params, ids2, B, T, rc, SC_MODE_SLIDE, S, lb, wb, gb, &dx) &&
                     train(&cfg, params, ids2, B, T, rc, SC_MODE_SLIDE, S, lc, wc, gc, &peek);
            int later = 1;
            for (int s = 1; s <= S; s++) later = later && la[s] != lb[s];
            CHECK(ok && la[0] == lb[0] && later && memcmp(wa, wb, 4 * np),
                  "%s DPU delays: step 1 loss %.7f, %.7f without DPU; step %d %.7f vs %.7f", fixtures[f],
                  ok ? lb[0] : 0.0f, ok ? la[0] : 0.0f, S + 1, ok ? lb[S] : 0.0f, ok ? la[S] : 0.0f);
            CHECK(ok && !memcmp(lb, lc, sizeof lb) && !memcmp(wb, wc, 4 * np) && !memcmp(gb, gc, 4 * np),
                  "%s DPU: reading the weights back after every step leaves losses, weights and grads bitwise",
                  fixtures[f]);
            free(wa); free(wb); free(wc); free(ga); free(gb); free(gc);
        }
        /* the embedding and head kept on the device: resident mode's and plain slide's bits */
        {
            run_x kx = {0, 3, 0, 1, 0, 0};
            for (int o = 0; o < 2; o++) {
                sc_optim op = o ? SC_OPTIM_ADAMW : SC_OPTIM_SGD;
                run_cfg k1 = {"none", 0, 1, 1, op, 0, 0}, k2 = {"every:2", 0, 2, 2, op, 0, 0},
                        k3 = {"full", 1, 1, 0, op, 0, 0}, k4 = {"none", 0, 1, 0, op, hs, 0},
                        k5 = {"selective", 0, 2, 0, op, hs, o};
                compare_x(fixtures[f], &cfg, params, ids, B, T, k1, &kx);
                compare_x(fixtures[f], &cfg, params, ids2, B, T, k2, &kx);
                compare_x(fixtures[f], &cfg, params, ids, B, T, k3, &kx);
                compare_x(fixtures[f], &cfg, params, ids, B, T, k4, &kx);
                compare_x(fixtures[f], &cfg, params, ids2, B, T, k5, &kx);
            }
        }
        /* layers kept on the device (weights, gradients, optimizer state): resident mode's bits for
           every placement of the two layers, under several policies, SGD and AdamW, bf16, bf16
           state, accumulation, a kept or sliced head and read-backs after every step */
        {
            static const char *place[] = {"all", "first:1"};
            static const char *ppol[] = {"none", "every:2"};
            run_x px = {0, 3, 0, 0, 0, 0}, pk = {0, 3, 0, 1, 0, 0}, pp = {0, 3, 1, 0, 0, 0};
            for (int q = 0; q < 2; q++) {
                for (int p = 0; p < 2; p++)
                    for (int o = 0; o < 2; o++) {
                        run_cfg c1 = {ppol[p], p & 1, 1, 0, o ? SC_OPTIM_ADAMW : SC_OPTIM_SGD, 0, 0};
                        compare_place(fixtures[f], &cfg, params, ids, B, T, c1, &px, place[q], o);
                    }
                run_cfg c2 = {"every:2", 1, 2, 2, SC_OPTIM_ADAMW, 0, 1}, c3 = {"none", 0, 1, 0, SC_OPTIM_ADAMW, hs, 0},
                        c4 = {"full", 0, 2, 1, SC_OPTIM_SGD, hs, 0};
                compare_place(fixtures[f], &cfg, params, ids2, B, T, c2, &px, place[q], 1);
                compare_place(fixtures[f], &cfg, params, ids, B, T, c3, &pk, place[q], 0);
                compare_place(fixtures[f], &cfg, params, ids2, B, T, c4, &pp, place[q], 0);
                compare_place(fixtures[f], &cfg, params, ids, B, T, c3, &pp, place[q], 0);
            }
        }
        /* the layers' SGD on the device: resident mode's bits under every policy, other tokens each
           step, with accumulation, bf16, a sliced or kept head, a deep prefetch, and reading the
           weights back after every step */
        {
            run_x ux = {0, 3, 0, 0, 1, 0}, upeek = {0, 3, 1, 0, 1, 0}, ukeep = {0, 3, 0, 1, 1, 0};
            run_x once = {0, 3, 0, 0, 0, 1}, uonce = {0, 3, 0, 0, 1, 1};
            static const char *upol[] = {"none", "full", "every:2", "layers:1", "selective", "selective:attn",
                                         "selective:proj", "sqrt"};
            for (int p = 0; p < (int)(sizeof upol / sizeof upol[0]); p++) {
                run_cfg u1 = {upol[p], 0, 1, 0, SC_OPTIM_SGD, 0, 0};
                compare_x(fixtures[f], &cfg, params, ids, B, T, u1, &ux);
            }
            run_cfg u2 = {"every:2", 1, 2, 2, SC_OPTIM_SGD, 0, 0}, u3 = {"none", 0, 1, 0, SC_OPTIM_SGD, hs, 0},
                    u4 = {"full", 1, 2, 1, SC_OPTIM_SGD, hs, 0}, u5 = {"selective", 0, 1, cfg.num_layers, SC_OPTIM_SGD, 0, 0};
            compare_x(fixtures[f], &cfg, params, ids2, B, T, u2, &ux);
            compare_x(fixtures[f], &cfg, params, ids, B, T, u3, &ux);
            compare_x(fixtures[f], &cfg, params, ids2, B, T, u4, &upeek);
            compare_x(fixtures[f], &cfg, params, ids, B, T, u5, &upeek);
            compare_x(fixtures[f], &cfg, params, ids, B, T, u3, &ukeep);
            compare_x(fixtures[f], &cfg, params, ids2, B, T, u2, &ukeep);
            /* the sliced head up once a step: one micro-batch (per-slice gradients), two (the whole
               head's gradient), AdamW on the host, the device update */
            run_cfg o1 = {"full", 0, 1, 1, SC_OPTIM_SGD, hs, 0}, o2 = {"every:2", 1, 2, 2, SC_OPTIM_ADAMW, hs, 0},
                    o3 = {"none", 0, 1, 0, SC_OPTIM_ADAMW, hs, 1};
            compare_x(fixtures[f], &cfg, params, ids, B, T, o1, &once);
            compare_x(fixtures[f], &cfg, params, ids2, B, T, o2, &once);
            compare_x(fixtures[f], &cfg, params, ids, B, T, o3, &once);
            compare_x(fixtures[f], &cfg, params, ids, B, T, o1, &uonce);
            compare_x(fixtures[f], &cfg, params, ids2, B, T, u4, &uonce);
        }
        {
            /* sliced against the whole head (f32): the same loss and gradients to rounding */
            size_t np = sc_config_num_params(&cfg);
            float la[2] = {0, 0}, lb[2] = {0, 0}, *wa = (float *)malloc(4 * np), *wb = (float *)malloc(4 * np),
                            *ga = (float *)malloc(4 * np), *gb = (float *)malloc(4 * np);
            run_cfg whole = {"none", 0, 1, 0, SC_OPTIM_SGD, 0, 0}, sl = whole;
            sl.head_slice = hs;
            int ok = wa && wb && ga && gb && train(&cfg, params, ids, B, T, whole, SC_MODE_RESIDENT, 1, la, wa, ga, NULL) &&
                     train(&cfg, params, ids, B, T, sl, SC_MODE_SLIDE, 1, lb, wb, gb, NULL);
            double num = 0, den = 0;
            for (size_t i = 0; ok && i < np; i++) {
                num += ((double)ga[i] - gb[i]) * ((double)ga[i] - gb[i]);
                den += (double)ga[i] * ga[i];
            }
            double rel = den > 0 ? sqrt(num / den) : 1;
            CHECK(ok && fabs((double)la[0] - lb[0]) <= 1e-6 * fabs((double)la[0]) && rel < 1e-5,
                  "%s head in slices of %d rows vs whole: loss %.8f vs %.8f, gradient rel err %.2e (< 1e-5)",
                  fixtures[f], hs, la[0], lb[0], rel);
            free(wa); free(wb); free(ga); free(gb);
        }

        /* accumulation of 2 x [B, T] against one batch of [2B, T]: the same mean loss, gradients
           summed in another order (equal to rounding, not bitwise) */
        if (f == 0) {
            sc_model *m1, *m2;
            sc_model_config mc = sc_model_config_init();
            sc_plan plan;
            sc_plan_parse(&plan, "none", cfg.num_layers);
            size_t np = sc_config_num_params(&cfg);
            float *g1 = (float *)malloc(4 * np), *g2 = (float *)malloc(4 * np), l1 = 0, l2 = 0;
            int ok = sc_model_create(&m1, &cfg, &mc, params) == SC_SUCCESS &&
                     sc_model_create(&m2, &cfg, &mc, params) == SC_SUCCESS &&
                     sc_model_step(m1, &plan, ids2, 2, B, T, 0, &l1) == SC_SUCCESS &&
                     sc_model_step(m2, &plan, ids2, 1, 2 * B, T, 0, &l2) == SC_SUCCESS;
            double num = 0, den = 0;
            if (ok) {
                sc_model_get_grads(m1, g1);
                sc_model_get_grads(m2, g2);
                for (size_t i = 0; i < np; i++) {
                    num += ((double)g1[i] - g2[i]) * ((double)g1[i] - g2[i]);
                    den += (double)g2[i] * g2[i];
                }
                sc_model_destroy(m1);
                sc_model_destroy(m2);
            }
            double rel = den > 0 ? sqrt(num / den) : 1;
            CHECK(ok && fabs((double)l1 - l2) <= 1e-6 * fabs((double)l2) && rel < 1e-6,
                  "accum 2 x [%d,%d] vs one [%d,%d] batch: loss %.8f vs %.8f, gradient rel err %.2e (< 1e-6)", B, T,
                  2 * B, T, l1, l2, rel);
            free(g1); free(g2);
        }
        free(params); free(ids2);
        sc_tokens_free(ids);
    }

    /* bad input */
    sc_config cfg;
    sc_config_named(&cfg, "tiny");
    sc_model_config mc = sc_model_config_init();
    mc.mode = SC_MODE_SLIDE;
    mc.slide_prefetch = cfg.num_layers + 1;
    sc_model *m = NULL;
    sc_result r = sc_model_create(&m, &cfg, &mc, NULL);
    CHECK(r == SC_ERROR_INVALID_ARGS && strstr(sc_last_error(), "prefetch"), "prefetch %d > %d layers refused: %s",
          mc.slide_prefetch, cfg.num_layers, sc_last_error());
    if (m) sc_model_destroy(m);
    mc.slide_prefetch = 0;
    mc.mode = SC_MODE_RESIDENT;
    mc.slide_dpu = 1;
    m = NULL;
    r = sc_model_create(&m, &cfg, &mc, NULL);
    CHECK(r == SC_ERROR_INVALID_ARGS && strstr(sc_last_error(), "slide"), "slide_dpu in resident mode refused: %s",
          sc_last_error());
    if (m) sc_model_destroy(m);
    {
        /* DPU delays sc_model_step's update only: gradients then sc_model_optimizer_step, twice, is
           resident mode's bit for bit (the next step uploads the working copy it wrote) */
        sc_model *ms = NULL, *mr = NULL;
        size_t np = sc_config_num_params(&cfg);
        float *w1 = (float *)malloc(4 * np), *w2 = (float *)malloc(4 * np), l1[2] = {0, 0}, l2[2] = {0, 0};
        int32_t ti[64];
        for (int i = 0; i < 64; i++) ti[i] = (i * 37) % cfg.vocab_size;
        sc_plan pn;
        sc_plan_parse(&pn, "none", cfg.num_layers);
        sc_model_config a = sc_model_config_init(), b;
        a.optim = SC_OPTIM_ADAMW;
        a.lr = 0.01f;
        b = a;
        b.mode = SC_MODE_SLIDE;
        b.slide_dpu = 1;
        int ok = w1 && w2 && sc_model_create(&mr, &cfg, &a, NULL) == SC_SUCCESS &&
                 sc_model_create(&ms, &cfg, &b, NULL) == SC_SUCCESS;
        for (int s = 0; s < 2 && ok; s++)
            ok = sc_model_forward_backward(mr, &pn, ti, 2, 32, &l1[s]) == SC_SUCCESS &&
                 sc_model_optimizer_step(mr) == SC_SUCCESS &&
                 sc_model_forward_backward(ms, &pn, ti, 2, 32, &l2[s]) == SC_SUCCESS &&
                 sc_model_optimizer_step(ms) == SC_SUCCESS;
        ok = ok && sc_model_get_params(mr, w1) == SC_SUCCESS && sc_model_get_params(ms, w2) == SC_SUCCESS;
        CHECK(ok && !memcmp(l1, l2, sizeof l1) && l1[0] != l1[1] && !memcmp(w1, w2, 4 * np),
              "DPU + sc_model_optimizer_step == resident bitwise (losses %.7f, %.7f)", l2[0], l2[1]);
        if (mr) sc_model_destroy(mr);
        if (ms) sc_model_destroy(ms);
        free(w1); free(w2);
    }
    mc.mode = SC_MODE_SLIDE;
    mc.slide_dpu = 0;
    mc.slide_prefetch = 2;
    mc.mem_cap = 1 << 20;
    m = NULL;
    int32_t ids[64];
    for (int i = 0; i < 64; i++) ids[i] = (i * 37) % cfg.vocab_size;
    sc_plan plan;
    sc_plan_parse(&plan, "full", cfg.num_layers);
    float loss;
    r = sc_model_create(&m, &cfg, &mc, NULL);
    if (r == SC_SUCCESS) r = sc_model_step(m, &plan, ids, 1, 2, 32, 1, &loss);
    size_t need = sc_slide_window_bytes(&cfg, &mc, &plan);
    CHECK(r == SC_ERROR_OUT_OF_MEMORY && strstr(sc_last_error(), "window"),
          "a 1 MiB cap below the %zu-byte window refused up front: %s", need, sc_last_error());
    if (m) sc_model_destroy(m);
    mc.mem_cap = 0;
    r = sc_model_create(&m, &cfg, &mc, NULL);
    ids[5] = cfg.vocab_size;
    if (r == SC_SUCCESS) r = sc_model_step(m, &plan, ids, 1, 2, 32, 1, &loss);
    CHECK(r == SC_ERROR_RANGE, "token id >= vocab in slide mode: %s", sc_last_error());
    ids[5] = 1;
    r = sc_model_step(m, &plan, ids, 0, 2, 32, 1, &loss);
    CHECK(r == SC_ERROR_INVALID_ARGS, "accum 0 refused: %s", sc_last_error());
    r = sc_model_step(m, &plan, ids, 1, 2, 32, 1, &loss);
    sc_slide_info si = sc_model_slide_info(m);
    size_t np = sc_config_num_params(&cfg);
    /* every gradient goes down once (an untied embedding's only through dL/dx_0), plus dL/dx_0 */
    uint64_t down;
    down = (uint64_t)4 * np - (uint64_t)4 * (cfg.tie_embeddings ? 0 : (size_t)cfg.vocab_size * cfg.hidden_size) +
           (uint64_t)4 * 64 * cfg.hidden_size;
    CHECK(r == SC_SUCCESS && si.d2h_bytes == down, "d2h bytes per step %llu == gradients + dL/dx_0 = %llu",
          (unsigned long long)si.d2h_bytes, (unsigned long long)down);
    sc_model_destroy(m);
    {
        /* keep-head: the window counts the kept head's weights, gradients and AdamW state, so a cap
           that plain slide's window fits is refused up front; a step holds exactly that much more
           than plain slide (less the head slot), and only the layers' gradients go down */
        sc_model_config kc = sc_model_config_init(), pc;
        kc.mode = SC_MODE_SLIDE;
        kc.optim = SC_OPTIM_ADAMW;
        kc.slide_prefetch = 2;
        pc = kc;
        kc.slide_keep_head = 1;
        size_t wk = sc_slide_window_bytes(&cfg, &kc, &plan), wp = sc_slide_window_bytes(&cfg, &pc, &plan);
        size_t C = (size_t)cfg.hidden_size, hk = (size_t)cfg.vocab_size * C * (cfg.tie_embeddings ? 1 : 2) + C;
        size_t hn = (size_t)cfg.vocab_size * C + C, ln = (np - hk) / (size_t)cfg.num_layers;
        kc.mem_cap = wk - 1;
        sc_model *mk = NULL, *mp = NULL;
        r = sc_model_create(&mk, &cfg, &kc, NULL);
        if (r == SC_SUCCESS) r = sc_model_step(mk, &plan, ids, 1, 2, 32, 1, &loss);
        CHECK(wp < wk - 1 && r == SC_ERROR_OUT_OF_MEMORY && strstr(sc_last_error(), "kept"),
              "keep-head: a cap of %zu bytes (plain slide's window %zu fits) refused up front: %s", wk - 1, wp,
              sc_last_error());
        if (mk) sc_model_destroy(mk);
        mk = NULL;
        kc.mem_cap = 0;
        {
            /* the gradient ring: one-layer groups ("none") while 4 layers stream get two buffers, so a
               layer's gradients go down while the next layer's backward fills the other; one
               streamed layer (3 on the device) gets one; 2-layer groups ("every:2") get three */
            sc_plan pn1, pe2;
            sc_plan_parse(&pn1, "none", cfg.num_layers);
            sc_plan_parse(&pe2, "every:2", cfg.num_layers);
            sc_model_config k1 = kc, k3 = kc;
            k1.slide_prefetch = k3.slide_prefetch = 1;
            sc_layer_set_parse(k3.slide_device_layers, "first:3", cfg.num_layers);
            /* (the CPU backend: f32 weights, gradients, m and v, 16 bytes a kept parameter) */
            size_t kept = sc__kept_numel(&cfg) * 16, L4 = ln * 4;
            size_t w1 = sc_slide_window_bytes(&cfg, &k1, &pn1), w3 = sc_slide_window_bytes(&cfg, &k3, &pn1);
            size_t we = sc_slide_window_bytes(&cfg, &k1, &pe2);
            CHECK(w1 == 2 * L4 + 2 * L4 + kept && w3 == L4 + L4 + kept + 3 * ln * 16 && we == 3 * L4 + 3 * L4 + kept,
                  "keep-head window: two slots and two gradient buffers (%zu), one and one with one layer streamed "
                  "(%zu), three and three for 2-layer groups (%zu)", w1, w3, we);
        }
        int64_t held[2] = {0, 0};
        sc_slide_info ki;
        memset(&ki, 0, sizeof ki);
        int ok = sc_model_create(&mk, &cfg, &kc, NULL) == SC_SUCCESS && sc_model_create(&mp, &cfg, &pc, NULL) == SC_SUCCESS &&
                 sc_model_step(mk, &plan, ids, 1, 2, 32, 1, &loss) == SC_SUCCESS &&
                 sc_model_step(mp, &plan, ids, 1, 2, 32, 1, &loss) == SC_SUCCESS;
        if (ok) {
            held[0] = sc_allocator_stats(sc_model_allocator(mk)).allocated_bytes[SC_STAT_ALL].current;
            held[1] = sc_allocator_stats(sc_model_allocator(mp)).allocated_bytes[SC_STAT_ALL].current;
            ki = sc_model_slide_info(mk);
        }
        int64_t want = (int64_t)(hk * (4 + 4 + 8)) - (int64_t)(hn * 4);
        CHECK(ok && held[0] - held[1] == want && ki.d2h_bytes == (uint64_t)4 * cfg.num_layers * ln,
              "keep-head holds %lld bytes more than plain slide after an AdamW step (the kept head's weights, "
              "gradients, m and v less the head slot: %lld); d2h %llu == the layers' gradients",
              (long long)(held[0] - held[1]), (long long)want, (unsigned long long)ki.d2h_bytes);
        if (mk) sc_model_destroy(mk);
        if (mp) sc_model_destroy(mp);
        kc.mode = SC_MODE_RESIDENT;
        mk = NULL;
        r = sc_model_create(&mk, &cfg, &kc, NULL);
        CHECK(r == SC_ERROR_INVALID_ARGS, "slide_keep_head in resident mode refused: %s", sc_last_error());
        if (mk) sc_model_destroy(mk);
        kc.mode = SC_MODE_SLIDE;
        kc.slide_dpu = 1;
        mk = NULL;
        r = sc_model_create(&mk, &cfg, &kc, NULL);
        CHECK(r == SC_ERROR_UNSUPPORTED, "slide_keep_head with slide_dpu refused: %s", sc_last_error());
        if (mk) sc_model_destroy(mk);
    }

    {
        /* layers on the device in a 4-layer model: every placement (all, none, first / last K,
           alternating, a range) against resident mode, bitwise, under the policies whose groups
           mix device and streamed layers, with a deep prefetch (fewer streamed layers than slots)
           and the head kept too (every layer and the head on the device: no window block) */
        static const char *place[] = {"all", "none", "first:2", "last:1", "0,2", "1-2", "3"};
        static const char *ppol[] = {"none", "every:3", "layers:1", "sqrt"};
        int32_t pi2[128];
        for (int i = 0; i < 128; i++) pi2[i] = (int32_t)((i * 37 + 11) % cfg.vocab_size);
        for (int q = 0; q < 7; q++) { /* each placement under one policy and one of the two variants:
                                            every pairing is covered over the seven, at a third of the time */
            int p = q % 4;
            run_cfg c1 = {ppol[p], p & 1, 1, 0, (p + q) & 1 ? SC_OPTIM_ADAMW : SC_OPTIM_SGD, 0, 0};
            compare_place("tiny (4 layers)", &cfg, NULL, ids, 2, 32, c1, NULL, place[q], p & 1);
            run_x kx = {0, 5, 0, 1, 0, 0}, peek = {0, 5, 1, 0, 0, 0};
            run_cfg c2 = {"every:2", 1, 2, 4, SC_OPTIM_ADAMW, 0, 1}, c3 = {"full", 0, 2, 3, SC_OPTIM_SGD, 200, 0};
            if (q & 1) compare_place("tiny (4 layers)", &cfg, NULL, pi2, 2, 32, c3, &peek, place[q], 0);
            else compare_place("tiny (4 layers)", &cfg, NULL, pi2, 2, 32, c2, &kx, place[q], 1);
        }
        /* the bytes: the window's prediction grows by the device layers' weights, gradients and
           AdamW state, the allocator holds exactly that much more after a step, and their
           gradients never go down (nor their weights up) */
        sc_model_config pc = sc_model_config_init(), dc;
        pc.mode = SC_MODE_SLIDE;
        pc.optim = SC_OPTIM_ADAMW;
        pc.lr = 0.01f;
        pc.slide_prefetch = 1;
        dc = pc;
        sc_layer_set_parse(dc.slide_device_layers, "0,3", cfg.num_layers);
        sc_plan pn;
        sc_plan_parse(&pn, "none", cfg.num_layers);
        size_t ln = sc__layer_numel(&cfg), npl = sc_config_num_params(&cfg);
        size_t wp = sc_slide_window_bytes(&cfg, &pc, &pn), wd = sc_slide_window_bytes(&cfg, &dc, &pn);
        sc_model *mp = NULL, *md = NULL;
        float l1 = 0, l2 = 0;
        int ok = sc_model_create(&mp, &cfg, &pc, NULL) == SC_SUCCESS && sc_model_create(&md, &cfg, &dc, NULL) == SC_SUCCESS;
        for (int st = 0; st < 2 && ok; st++)
            ok = sc_model_step(mp, &pn, ids, 1, 2, 32, 1, &l1) == SC_SUCCESS &&
                 sc_model_step(md, &pn, ids, 1, 2, 32, 1, &l2) == SC_SUCCESS && l1 == l2;
        sc_slide_info ip, id;
        memset(&ip, 0, sizeof ip);
        memset(&id, 0, sizeof id);
        int64_t held[2] = {0, 0};
        if (ok) {
            sc_model_sync(mp);
            sc_model_sync(md);
            ip = sc_model_slide_info(mp), id = sc_model_slide_info(md);
            held[0] = sc_allocator_stats(sc_model_allocator(md)).allocated_bytes[SC_STAT_ALL].current;
            held[1] = sc_allocator_stats(sc_model_allocator(mp)).allocated_bytes[SC_STAT_ALL].current;
        }
        int64_t want = (int64_t)(2 * ln * (4 + 4 + 8)), want_held = (int64_t)(2 * 4 * sc__allocator_round(4 * ln));
        CHECK(ok && wd - wp == (size_t)want && held[0] - held[1] == want_held && ip.d2h_bytes - id.d2h_bytes == 2 * 4 * ln &&
                  ip.h2d_bytes - id.h2d_bytes >= 2 * 4 * ln && ip.host_update_params - id.host_update_params == 2 * ln &&
                  id.window_bytes - ip.window_bytes == (size_t)want,
              "layers 0,3 on the device: window %zu -> %zu bytes, held %lld bytes more (weights, gradients, m, v in "
              "allocator blocks: %lld); d2h %llu -> %llu, h2d %llu -> %llu, host updates %zu -> %zu parameters", wp, wd,
              (long long)(held[0] - held[1]), (long long)want_held, (unsigned long long)ip.d2h_bytes,
              (unsigned long long)id.d2h_bytes, (unsigned long long)ip.h2d_bytes, (unsigned long long)id.h2d_bytes,
              ip.host_update_params, id.host_update_params);
        /* every layer on the device: no slots, and the window's block only the head's */
        sc_model_config ac = pc;
        sc_layer_set_parse(ac.slide_device_layers, "all", cfg.num_layers);
        size_t hn = (size_t)cfg.vocab_size * cfg.hidden_size + cfg.hidden_size;
        CHECK(sc_slide_window_bytes(&cfg, &ac, &pn) == (size_t)cfg.num_layers * ln * 16 + 2 * 4 * hn,
              "every layer on the device: the window is the layers' %zu bytes and the head's slot and gradients",
              (size_t)cfg.num_layers * ln * 16);
        /* the optimizer state saved and loaded: a resumed run continues bitwise */
        float *wa = (float *)malloc(4 * npl), *wb = (float *)malloc(4 * npl);
        const char *path = "build/test_slide_place_opt.safetensors";
        sc_model *mr = NULL;
        ok = ok && wa && wb && sc_model_save_optimizer(md, path) == SC_SUCCESS && sc_model_get_params(md, wa) == SC_SUCCESS;
        ok = ok && sc_model_create(&mr, &cfg, &dc, wa) == SC_SUCCESS && sc_model_load_optimizer(mr, path) == SC_SUCCESS &&
             sc_model_step(md, &pn, ids, 1, 2, 32, 1, &l1) == SC_SUCCESS &&
             sc_model_step(mr, &pn, ids, 1, 2, 32, 1, &l2) == SC_SUCCESS && sc_model_get_params(md, wa) == SC_SUCCESS &&
             sc_model_get_params(mr, wb) == SC_SUCCESS;
        CHECK(ok && l1 == l2 && !memcmp(wa, wb, 4 * npl),
              "layers 0,3 on the device: the optimizer state saved after 2 steps and loaded into a new model: step 3 "
              "bitwise (loss %.7f)", l2);
        /* saved state equals plain slide's (its m, v from the device layers) */
        sc_model *mq = NULL;
        ok = ok && sc_model_create(&mq, &cfg, &pc, NULL) == SC_SUCCESS;
        for (int st = 0; st < 3 && ok; st++) ok = sc_model_step(mq, &pn, ids, 1, 2, 32, 1, &l1) == SC_SUCCESS;
        const char *path2 = "build/test_slide_place_opt2.safetensors";
        ok = ok && sc_model_save_optimizer(mq, path2) == SC_SUCCESS && sc_model_save_optimizer(mr, path) == SC_SUCCESS;
        int same = ok;
        for (int w = 0; w < 2 && same; w++) {
            sc_safetensors s1, s2;
            int64_t sh[1] = {(int64_t)npl};
            const char *nm = w ? "exp_avg_sq" : "exp_avg";
            same = sc_safetensors_open(&s1, path) == SC_SUCCESS;
            if (!same) break;
            same = sc_safetensors_open(&s2, path2) == SC_SUCCESS;
            if (same) {
                same = sc_safetensors_read_f32(&s1, nm, wa, 1, sh) == SC_SUCCESS &&
                       sc_safetensors_read_f32(&s2, nm, wb, 1, sh) == SC_SUCCESS && !memcmp(wa, wb, 4 * npl);
                sc_safetensors_close(&s2);
            }
            sc_safetensors_close(&s1);
        }
        CHECK(same, "layers 0,3 on the device: the saved AdamW m and v equal plain slide's after 3 steps, bitwise");
        remove(path);
        remove(path2);
        free(wa); free(wb);
        if (mp) sc_model_destroy(mp);
        if (md) sc_model_destroy(md);
        if (mr) sc_model_destroy(mr);
        if (mq) sc_model_destroy(mq);
        /* refused: resident mode, DPU, the device update, clipping */
        const char *what[4] = {"resident mode", "slide_dpu", "slide_device_update", "clip_grad_norm"};
        sc_result wr[4] = {SC_ERROR_INVALID_ARGS, SC_ERROR_UNSUPPORTED, SC_ERROR_UNSUPPORTED, SC_ERROR_UNSUPPORTED};
        for (int i = 0; i < 4; i++) {
            sc_model_config bc = dc;
            if (i == 0) bc.mode = SC_MODE_RESIDENT;
            if (i == 1) bc.slide_dpu = 1;
            if (i == 2) bc.slide_device_update = 1, bc.optim = SC_OPTIM_SGD;
            if (i == 3) bc.clip_grad_norm = 1.0f;
            sc_model *mb = NULL;
            r = sc_model_create(&mb, &cfg, &bc, NULL);
            CHECK(r == wr[i] && strstr(sc_last_error(), "slide_device_layers"), "slide_device_layers with %s refused: %s",
                  what[i], sc_last_error());
            if (mb) sc_model_destroy(mb);
        }
        unsigned char mk[8];
        int okp = sc_layer_set_parse(mk, "first:2", 4) == SC_SUCCESS && mk[0] && mk[1] && !mk[2] && !mk[3] &&
                  sc_layer_set_parse(mk, "last:3", 4) == SC_SUCCESS && !mk[0] && mk[1] && mk[3] &&
                  sc_layer_set_parse(mk, "0,2-3", 4) == SC_SUCCESS && mk[0] && !mk[1] && mk[2] && mk[3] &&
                  sc_layer_set_parse(mk, "none", 4) == SC_SUCCESS && !mk[0] && !mk[3] &&
                  sc_layer_set_parse(mk, "first:5", 4) == SC_ERROR_INVALID_ARGS &&
                  sc_layer_set_parse(mk, "4", 4) == SC_ERROR_INVALID_ARGS && sc_layer_set_parse(mk, "x", 4) == SC_ERROR_INVALID_ARGS;
        CHECK(okp, "sc_layer_set_parse: first:K, last:K, lists, none; out of range and malformed refused (%s)",
              sc_last_error());
    }
    {
        /* the device update moves the updated weights down instead of the gradients (as many bytes
           in f32) and from the second step on skips the upload of the layers still in the slots
           from the last backward; the host optimizer runs for the head and embedding only */
        sc_model_config dc = sc_model_config_init(), hc;
        dc.mode = SC_MODE_SLIDE;
        dc.optim = SC_OPTIM_SGD;
        dc.lr = 0.05f;
        dc.slide_prefetch = 1;
        hc = dc;
        dc.slide_device_update = 1;
        sc_plan pn;
        sc_plan_parse(&pn, "none", cfg.num_layers);
        sc_model *md = NULL, *mh = NULL;
        sc_slide_info di[2], hi[2];
        memset(di, 0, sizeof di);
        memset(hi, 0, sizeof hi);
        float ld = 0, lh = 0;
        int ok = sc_model_create(&md, &cfg, &dc, NULL) == SC_SUCCESS && sc_model_create(&mh, &cfg, &hc, NULL) == SC_SUCCESS;
        for (int s = 0; s < 2 && ok; s++) {
            ok = sc_model_step(md, &pn, ids, 1, 2, 32, 1, &ld) == SC_SUCCESS &&
                 sc_model_step(mh, &pn, ids, 1, 2, 32, 1, &lh) == SC_SUCCESS && ld == lh;
            if (ok) di[s] = sc_model_slide_info(md), hi[s] = sc_model_slide_info(mh);
        }
        size_t ln = sc__layer_numel(&cfg);
        /* two slots (prefetch 1, one layer a group): layers 1 and 0 stay for the next forward */
        CHECK(ok && di[0].h2d_bytes == hi[0].h2d_bytes && hi[1].h2d_bytes - di[1].h2d_bytes == (uint64_t)2 * 4 * ln &&
                  di[1].d2h_bytes == hi[1].d2h_bytes,
              "device update: step 2 uploads %llu bytes (host update %llu: two layers of %zu bytes fewer), d2h %llu "
              "== %llu", (unsigned long long)di[1].h2d_bytes, (unsigned long long)hi[1].h2d_bytes, 4 * ln,
              (unsigned long long)di[1].d2h_bytes, (unsigned long long)hi[1].d2h_bytes);
        float *gg = (float *)malloc(4 * np);
        r = ok ? sc_model_get_grads(md, gg) : SC_ERROR_INVALID_ARGS;
        CHECK(r == SC_ERROR_UNSUPPORTED && strstr(sc_last_error(), "gradient-only"),
              "device update: get_grads after an update step refused: %s", sc_last_error());
        /* a gradient-only step brings them down; then the host's own update (sc_model_optimizer_step)
           makes the slots stale: the next step must upload again and match resident mode */
        sc_model *mr = NULL;
        float lr[4] = {0, 0, 0, 0}, lds[4] = {0, 0, 0, 0};
        sc_model_config rc = sc_model_config_init();
        rc.optim = SC_OPTIM_SGD;
        rc.lr = 0.05f;
        ok = ok && sc_model_create(&mr, &cfg, &rc, NULL) == SC_SUCCESS;
        for (int s = 0; s < 2 && ok; s++) ok = sc_model_step(mr, &pn, ids, 1, 2, 32, 1, &lr[0]) == SC_SUCCESS;
        ok = ok && sc_model_step(md, &pn, ids, 1, 2, 32, 0, &lds[1]) == SC_SUCCESS &&
             sc_model_step(mr, &pn, ids, 1, 2, 32, 0, &lr[1]) == SC_SUCCESS && sc_model_get_grads(md, gg) == SC_SUCCESS &&
             sc_model_optimizer_step(md) == SC_SUCCESS && sc_model_optimizer_step(mr) == SC_SUCCESS &&
             sc_model_step(md, &pn, ids, 1, 2, 32, 1, &lds[2]) == SC_SUCCESS &&
             sc_model_step(mr, &pn, ids, 1, 2, 32, 1, &lr[2]) == SC_SUCCESS &&
             sc_model_step(md, &pn, ids, 1, 2, 32, 1, &lds[3]) == SC_SUCCESS &&
             sc_model_step(mr, &pn, ids, 1, 2, 32, 1, &lr[3]) == SC_SUCCESS;
        float *w1 = (float *)malloc(4 * np), *w2 = (float *)malloc(4 * np);
        ok = ok && w1 && w2 && sc_model_get_params(md, w1) == SC_SUCCESS && sc_model_get_params(mr, w2) == SC_SUCCESS;
        CHECK(ok && !memcmp(lds + 1, lr + 1, 3 * sizeof(float)) && lr[1] != lr[2] && !memcmp(w1, w2, 4 * np),
              "device update, then a gradient-only step and the host's update, then two more steps == resident "
              "bitwise (losses %.7f %.7f %.7f)", lds[1], lds[2], lds[3]);
        free(gg); free(w1); free(w2);
        if (md) sc_model_destroy(md);
        if (mh) sc_model_destroy(mh);
        if (mr) sc_model_destroy(mr);
        {
            /* the sliced head up once: a step uploads the head's rows once instead of twice */
            sc_model_config oc = hc;
            oc.head_slice = cfg.vocab_size / 3 + 1;
            sc_model *ma = NULL, *mb = NULL;
            float la = 0, lb = 0;
            int ok2 = sc_model_create(&ma, &cfg, &oc, NULL) == SC_SUCCESS;
            oc.slide_head_once = 1;
            ok2 = ok2 && sc_model_create(&mb, &cfg, &oc, NULL) == SC_SUCCESS &&
                  sc_model_step(ma, &pn, ids, 1, 2, 32, 1, &la) == SC_SUCCESS &&
                  sc_model_step(mb, &pn, ids, 1, 2, 32, 1, &lb) == SC_SUCCESS;
            sc_slide_info ia = ok2 ? sc_model_slide_info(ma) : di[0], ib = ok2 ? sc_model_slide_info(mb) : di[0];
            uint64_t head = (uint64_t)4 * cfg.vocab_size * cfg.hidden_size;
            CHECK(ok2 && la == lb && ia.h2d_bytes - ib.h2d_bytes == head,
                  "head once: a step uploads %llu bytes, %llu fewer than the sliced head's two passes (the head: %llu)",
                  (unsigned long long)ib.h2d_bytes, (unsigned long long)(ia.h2d_bytes - ib.h2d_bytes),
                  (unsigned long long)head);
            if (ma) sc_model_destroy(ma);
            if (mb) sc_model_destroy(mb);
            /* with the device update too, the head's SGD runs on the device slice by slice and the
               head stays in its slot: the host updates only the final norm (and a tied head's rows the
               tokens touched, whose head gradient goes down instead of the whole head's) */
            sc_model_config ec = oc;
            ec.slide_device_update = 1;
            ma = mb = NULL;
            ok2 = sc_model_create(&ma, &cfg, &ec, NULL) == SC_SUCCESS;
            ec.slide_head_once = 0;
            ok2 = ok2 && sc_model_create(&mb, &cfg, &ec, NULL) == SC_SUCCESS &&
                  sc_model_step(ma, &pn, ids, 1, 2, 32, 1, &la) == SC_SUCCESS &&
                  sc_model_step(mb, &pn, ids, 1, 2, 32, 1, &lb) == SC_SUCCESS;
            ia = ok2 ? sc_model_slide_info(ma) : di[0];
            ib = ok2 ? sc_model_slide_info(mb) : di[0];
            size_t nt = 0, C = (size_t)cfg.hidden_size;
            unsigned char seen[4096] = {0};
            for (int i = 0; i < 64 && cfg.vocab_size <= 4096; i++) nt += !seen[ids[i]], seen[ids[i]] = 1;
            size_t want_host = C * (1 + (cfg.tie_embeddings ? nt : (size_t)cfg.vocab_size));
            CHECK(ok2 && la == lb && ia.host_update_params == want_host &&
                      ia.d2h_bytes + head == ib.d2h_bytes + (cfg.tie_embeddings ? 4 * nt * C : 0),
                  "device update + head once: the host updates %zu parameters (the norm and %zu touched rows: %zu); "
                  "d2h %llu (the head's gradient in slices: %llu, less the head, plus the touched rows)",
                  ia.host_update_params, nt, want_host, (unsigned long long)ia.d2h_bytes, (unsigned long long)ib.d2h_bytes);
            /* and the next steps upload no head: the slot keeps it (the touched rows and the norm go up) */
            float lc = 0;
            ok2 = ok2 && sc_model_step(ma, &pn, ids, 1, 2, 32, 1, &lc) == SC_SUCCESS;
            sc_slide_info ic = ok2 ? sc_model_slide_info(ma) : di[0];
            /* (a tied head's touched rows go up into the slot instead of the embedding rows' staging,
               the same bytes: the embedding is gathered from the slot) */
            CHECK(ok2 && ic.h2d_bytes + head + 2 * 4 * ln == ia.h2d_bytes,
                  "device update + head once, step 2: uploads %llu bytes (step 1 %llu less the head and two "
                  "layers kept in their slots)", (unsigned long long)ic.h2d_bytes, (unsigned long long)ia.h2d_bytes);
            if (ma) sc_model_destroy(ma);
            if (mb) sc_model_destroy(mb);
            mb = NULL;
            oc.head_slice = 0;
            mb = NULL;
            r = sc_model_create(&mb, &cfg, &oc, NULL);
            CHECK(r == SC_ERROR_INVALID_ARGS && strstr(sc_last_error(), "slide_head_once"),
                  "slide_head_once without a sliced head refused: %s", sc_last_error());
            if (mb) sc_model_destroy(mb);
        }
        {
            /* the head kept in its slot between steps, then steps that cannot keep it (two
               micro-batches, gradient-only + the host's update), reading the weights back between:
               resident mode's bits throughout */
            int32_t tw[128];
            for (int i = 0; i < 128; i++) tw[i] = (int32_t)((i * 53 + 7) % cfg.vocab_size);
            sc_model_config kc = dc, rc2 = sc_model_config_init();
            kc.head_slice = cfg.vocab_size / 3 + 1;
            kc.slide_head_once = 1;
            kc.weight_decay = rc2.weight_decay = 0.1f;
            rc2.optim = SC_OPTIM_SGD;
            rc2.lr = 0.05f;
            rc2.head_slice = kc.head_slice;
            sc_model *mk = NULL, *mq = NULL;
            float lk[7], lq[7], *w1 = (float *)malloc(4 * np), *w2 = (float *)malloc(4 * np);
            static const int acc[7] = {1, 1, 2, 1, 1, 1, 1}, upd[7] = {1, 1, 1, 1, 0, 1, 1};
            int ok3 = w1 && w2 && sc_model_create(&mk, &cfg, &kc, NULL) == SC_SUCCESS &&
                      sc_model_create(&mq, &cfg, &rc2, NULL) == SC_SUCCESS;
            for (int s = 0; s < 7 && ok3; s++) {
                const int32_t *x = tw + (s % 2) * 64 / acc[s];
                ok3 = sc_model_step(mk, &pn, x, acc[s], 2 / acc[s], 32, upd[s], &lk[s]) == SC_SUCCESS &&
                      sc_model_step(mq, &pn, x, acc[s], 2 / acc[s], 32, upd[s], &lq[s]) == SC_SUCCESS;
                if (ok3 && !upd[s]) ok3 = sc_model_optimizer_step(mk) == SC_SUCCESS && sc_model_optimizer_step(mq) == SC_SUCCESS;
                if (ok3 && s == 5) ok3 = sc_model_get_params(mk, w1) == SC_SUCCESS;
            }
            ok3 = ok3 && sc_model_get_params(mk, w1) == SC_SUCCESS && sc_model_get_params(mq, w2) == SC_SUCCESS;
            CHECK(ok3 && !memcmp(lk, lq, sizeof lk) && !memcmp(w1, w2, 4 * np),
                  "device update + head kept in its slot, with a 2-micro-batch step, a gradient-only step + host "
                  "update and a read-back between: == resident bitwise (losses %.7f .. %.7f)", lk[0], lk[6]);
            free(w1); free(w2);
            if (mk) sc_model_destroy(mk);
            if (mq) sc_model_destroy(mq);
        }
        {
            /* a step that fails (out of memory in its forward) after steps that kept the head in its
               slot: the host copy gets the slot's rows, so the weights are those of the steps that
               ran (resident mode's after two steps) */
            int32_t tb[256];
            for (int i = 0; i < 256; i++) tb[i] = (int32_t)((i * 37 + 5) % cfg.vocab_size);
            sc_model_config kc = dc, rc3 = sc_model_config_init();
            kc.head_slice = rc3.head_slice = cfg.vocab_size / 3 + 1;
            kc.slide_head_once = 1;
            rc3.optim = SC_OPTIM_SGD;
            rc3.lr = 0.05f;
            sc_model *mk = NULL, *mq = NULL;
            float lk = 0, lq = 0;
            int64_t resv = 0;
            int ok4 = sc_model_create(&mk, &cfg, &kc, NULL) == SC_SUCCESS &&
                      sc_model_step(mk, &pn, tb, 1, 2, 32, 1, &lk) == SC_SUCCESS;
            if (ok4) resv = sc_allocator_stats(sc_model_allocator(mk)).reserved_bytes[SC_STAT_ALL].peak;
            if (mk) sc_model_destroy(mk);
            mk = NULL;
            kc.mem_cap = (size_t)resv + ((size_t)4 << 20);
            ok4 = ok4 && sc_model_create(&mk, &cfg, &kc, NULL) == SC_SUCCESS && sc_model_create(&mq, &cfg, &rc3, NULL) == SC_SUCCESS;
            for (int st = 0; st < 2 && ok4; st++)
                ok4 = sc_model_step(mk, &pn, tb + st, 1, 2, 32, 1, &lk) == SC_SUCCESS &&
                      sc_model_step(mq, &pn, tb + st, 1, 2, 32, 1, &lq) == SC_SUCCESS;
            sc_result big = ok4 ? sc_model_step(mk, &pn, tb, 1, 1, 256, 1, &lk) : SC_SUCCESS;
            float *w1 = (float *)malloc(4 * np), *w2 = (float *)malloc(4 * np);
            ok4 = ok4 && w1 && w2 && sc_model_get_params(mk, w1) == SC_SUCCESS && sc_model_get_params(mq, w2) == SC_SUCCESS;
            CHECK(ok4 && big == SC_ERROR_OUT_OF_MEMORY && !memcmp(w1, w2, 4 * np),
                  "device update + kept head: after a step that ran out of memory (%s) the weights are "
                  "resident mode's after the two steps before, bitwise", big == SC_ERROR_OUT_OF_MEMORY ? "yes" : "no");
            free(w1); free(w2);
            if (mk) sc_model_destroy(mk);
            if (mq) sc_model_destroy(mq);
        }
        /* refused: resident mode, AdamW, DPU */
        sc_model_config bc = dc;
        const char *what[3] = {"resident mode", "AdamW", "DPU"};
        sc_result want[3] = {SC_ERROR_INVALID_ARGS, SC_ERROR_UNSUPPORTED, SC_ERROR_UNSUPPORTED};
        for (int i = 0; i < 3; i++) {
            bc = dc;
            if (i == 0) bc.mode = SC_MODE_RESIDENT;
            if (i == 1) bc.optim = SC_OPTIM_ADAMW;
            if (i == 2) bc.slide_dpu = 1;
            sc_model *mb = NULL;
            r = sc_model_create(&mb, &cfg, &bc, NULL);
            CHECK(r == want[i] && strstr(sc_last_error(), "slide_device_update"), "slide_device_update with %s refused: %s",
                  what[i], sc_last_error());
            if (mb) sc_model_destroy(mb);
        }
    }

    {
        /* reserved against allocated: layers larger than the head, so the gradient buffers count.
           Each layer's gradient download is still running when the next layer's gradient is
           wanted; with a block from the allocator per gradient each such wait took a new segment
           (reserved was 1.68x and 1.45x the peak allocated for the first two). The window is one block
           and its gradient buffers wait for their downloads in stream order. */
        sc_config cfg;
        sc_config_named(&cfg, "tiny");
        cfg.vocab_size = 4096, cfg.hidden_size = 512, cfg.intermediate_size = 1536, cfg.num_layers = 6;
        cfg.num_heads = 8, cfg.num_kv_heads = 4, cfg.head_dim = 64, cfg.tie_embeddings = 0;
        const char *pol[3] = {"none", "every:3", "none"};
        int slice[3] = {0, 0, 1024}, T = 16;
        int32_t ids[16];
        for (int i = 0; i < T; i++) ids[i] = (int32_t)((i * 7919) % cfg.vocab_size);
        for (int v = 0; v < 3; v++) {
            sc_model_config mc = sc_model_config_init();
            mc.mode = SC_MODE_SLIDE;
            mc.slide_cpu_threads = 1;
            mc.head_slice = slice[v];
            sc_plan plan;
            sc_model *m = NULL;
            int ok = sc_plan_parse(&plan, pol[v], cfg.num_layers) == SC_SUCCESS &&
                     sc_model_create(&m, &cfg, &mc, NULL) == SC_SUCCESS;
            sc_memory_stats st;
            memset(&st, 0, sizeof st);
            for (int s = 0; s < 4 && ok; s++) {
                float loss;
                ok = sc_model_step(m, &plan, ids, 1, 1, T, 1, &loss) == SC_SUCCESS;
            }
            if (ok) st = sc_allocator_stats(&m->alloc);
            double ra = (double)st.reserved_bytes[SC_STAT_ALL].peak, al = (double)st.allocated_bytes[SC_STAT_ALL].peak;
            char name[128];
            snprintf(name, sizeof name, "slide %s%s, 4 steps: peak reserved <= 1.15 x peak allocated", pol[v],
                     slice[v] ? ", head in slices" : "");
            check(ok && al > 0 && ra <= 1.15 * al, name, "%s reserved %.1f MiB, allocated %.1f MiB (%.3fx)",
                  ok ? "" : sc_last_error(), ra / 1048576.0, al / 1048576.0, al > 0 ? ra / al : 0.0);
            if (m) sc_model_destroy(m);
        }
    }

    {
        /* A head much wider than a layer: the ring's gradient buffers lie in the head's gradient
           area, and the host optimizer takes the LM head's rows in parts as their bytes land,
           the rows two downloads share last. Resident's bits, tied and untied, AdamW and SGD. */
        for (int tied = 0; tied < 2; tied++) {
            sc_config cfg;
            sc_config_named(&cfg, "tiny");
            cfg.vocab_size = 9000, cfg.hidden_size = 136, cfg.tie_embeddings = tied;
            int32_t wids[64];
            for (int i = 0; i < 64; i++) wids[i] = (int32_t)((i * 7919 + 3) % cfg.vocab_size);
            sc_model_config mc = sc_model_config_init();
            mc.mode = SC_MODE_SLIDE;
            mc.slide_cpu_threads = 2;
            mc.optim = SC_OPTIM_ADAMW;
            sc_plan plan;
            sc_plan_parse(&plan, "none", cfg.num_layers);
            sc_model *m = NULL;
            float loss = 0.0f;
            int split[2 * (SC_MAX_LAYERS + 1)], ns = -1, parts = -1;
            if (sc_model_create(&m, &cfg, &mc, NULL) == SC_SUCCESS && sc_model_step(m, &plan, wids, 1, 2, 32, 1, &loss) == SC_SUCCESS &&
                sc_model_sync(m) == SC_SUCCESS) {
                ns = sc__slide_split_rows(m, split);
                parts = m->sl->head_parts;
            }
            CHECK(ns > 0 && parts > 1, "wide head (%s): the host optimizer takes its rows in %d parts, %d rows shared by two "
                  "downloads", tied ? "tied" : "untied", parts, ns);
            if (m) sc_model_destroy(m);
            run_cfg ra = {"none", 0, 1, 1, SC_OPTIM_ADAMW, 0, 0}, rs = {"full", 1, 1, 2, SC_OPTIM_SGD, 0, 0};
            compare(tied ? "wide head, tied" : "wide head, untied", &cfg, NULL, wids, 2, 32, ra);
            compare(tied ? "wide head, tied" : "wide head, untied", &cfg, NULL, wids, 2, 32, rs);
        }
    }
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
