/* sc_plan_auto on the CPU backend: at caps where only recompute, only slide and only slide with
   recompute fit, the configuration it picks fits (the allocator's peak stays under the cap, and
   the cap itself holds reserved memory) and trains to the uncapped resident run's weights, bit for
   bit; a cap below every configuration is refused with the smallest cap that fits. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define STEPS 3

/* An odd-sized model whose layers outweigh its head, with AdamW: resident's fixed bytes (16 a
   parameter) are many slide windows, and the activations at B x T are of the same order. */
static void small_config(sc_config *cfg)
{
    sc_config_named(cfg, "tiny");
    cfg->vocab_size = 160, cfg->hidden_size = 96, cfg->intermediate_size = 224, cfg->num_layers = 5;
    cfg->num_heads = 6, cfg->num_kv_heads = 2, cfg->head_dim = 16, cfg->tie_embeddings = 0;
}

static sc_model_config base_config(void)
{
    sc_model_config mc = sc_model_config_init();
    mc.optim = SC_OPTIM_ADAMW;
    mc.lr = 1e-3f;
    return mc;
}

/* Train STEPS steps; the weights into w, the allocator's peaks into *alloc and *resv. */
static sc_result train(const sc_config *cfg, const sc_model_config *mc, const sc_plan *plan, const int32_t *ids, int B,
                       int T, float *w, size_t *alloc, size_t *resv)
{
    sc_model *m = NULL;
    sc_result r = sc_model_create(&m, cfg, mc, NULL);
    for (int s = 0; s < STEPS && r == SC_SUCCESS; s++) {
        float loss;
        r = sc_model_step(m, plan, ids + (size_t)s * B * T, 1, B, T, 1, &loss);
    }
    if (r == SC_SUCCESS) r = sc_model_get_params(m, w);
    if (m) {
        sc_memory_stats st = sc_allocator_stats(sc_model_allocator(m));
        *alloc = (size_t)st.allocated_bytes[SC_STAT_ALL].peak;
        *resv = (size_t)st.reserved_bytes[SC_STAT_ALL].peak;
        sc_model_destroy(m);
    }
    return r;
}

static int plan_recomputes(const sc_plan *p)
{
    for (int l = 0; l < p->num_layers; l++)
        if (p->seg[l] >= 0 || p->keep[l] != SC_KEEP_ALL) return 1;
    return 0;
}

int main(void)
{
    sc_config cfg;
    small_config(&cfg);
    const int B = 2, T = 48, L = cfg.num_layers;
    size_t np = sc_config_num_params(&cfg);
    int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * STEPS * B * T);
    float *w0 = (float *)malloc(4 * np), *w1 = (float *)malloc(4 * np);
    if (!ids || !w0 || !w1) return 1;
    for (int i = 0; i < STEPS * B * T; i++) ids[i] = (int32_t)((i * 7919 + 3) % cfg.vocab_size);
    sc_model_config mc = base_config();

    /* the reference: resident, no cap, no recompute */
    sc_plan none, full;
    sc_plan_parse(&none, "none", L);
    sc_plan_parse(&full, "full", L);
    size_t a0, r0;
    sc_result r = train(&cfg, &mc, &none, ids, B, T, w0, &a0, &r0);
    CHECK(r == SC_SUCCESS, "uncapped resident reference trains: %s", r ? sc_last_error() : "");

    /* the predictions the caps come from (the same functions sc_plan_auto uses) */
    int pb, gb, ab;
    sc_model_config_storage(&mc, &pb, &gb, &ab);
    sc_plan_report rep;
    size_t F = sc_model_config_fixed_bytes(&cfg, &mc);
    sc_plan_evaluate(&rep, &none, &cfg, B, T, ab, F, NULL);
    size_t res_none = rep.peak_bytes;
    sc_plan_evaluate(&rep, &full, &cfg, B, T, ab, F, NULL);
    size_t res_full = rep.peak_bytes; /* at least what any resident plan needs beyond F ... */
    sc_plan tmp;
    sc_planner_plan(&tmp, &rep, &cfg, B, T, ab, F, NULL, (size_t)-1);
    size_t res_min = rep.min_budget;  /* ... exactly: the planner's least peak */
    sc_model_config sc1 = mc;
    sc1.mode = SC_MODE_SLIDE;
    sc1.slide_prefetch = 1;
    sc_plan_evaluate(&rep, &none, &cfg, B, T, ab, sc_slide_window_bytes(&cfg, &sc1, &none), NULL);
    size_t sl_none = rep.peak_bytes; /* slide's least peak without recompute (prefetch 1, head slot) */
    sc_plan_evaluate(&rep, &full, &cfg, B, T, ab, sc_slide_window_bytes(&cfg, &sc1, &full), NULL);
    size_t sl_full = rep.peak_bytes;
    printf("predicted peaks: resident none %zu, full %zu, least %zu; slide none %zu, full %zu\n", res_none, res_full,
           res_min, sl_none, sl_full);
    CHECK(sl_full < sl_none && sl_none < res_min && res_min < res_none,
          "the config separates the three regimes (slide full < slide none < resident least < resident none)");

    /* caps whose usable part (less the allocator margin) sits in each regime */
    struct { const char *name; size_t need; int want_slide, want_recompute, resident_only; } cases[4] = {
        {"resident needs recompute; resident only", (res_min + res_none) / 2, 0, 1, 1},
        {"resident needs recompute, slide does not", (res_min + res_none) / 2, -1, 1, 0},
        {"only slide fits", (sl_none + res_min) / 2, 1, -1, 0},
        {"only slide + recompute fits", (sl_full + sl_none) / 2, 1, 1, 0},
    };
    for (int c = 0; c < 4; c++) {
        size_t cap = sc__auto_cap_for(cases[c].need, &cfg, B, T);
        sc_plan_auto_config ac;
        memset(&ac, 0, sizeof ac);
        ac.mem_cap = cap, ac.B = B, ac.T = T, ac.ids = ids, ac.resident_only = cases[c].resident_only;
        ac.max_device_layers = -1; /* slide_device_layers stays zero in what runs here: the library
                                      does not keep layers on the device yet */
        sc_plan_auto_result res;
        int64_t t0 = sc_tracer_now_ns();
        r = sc_plan_auto(&res, &cfg, &mc, &ac);
        double auto_ms = (double)(sc_tracer_now_ns() - t0) / 1e6;
        char name[1400];
        snprintf(name, sizeof name, "cap %zu (%s): %s", cap, cases[c].name, r ? sc_last_error() : res.desc);
        int slide = res.mc.mode == SC_MODE_SLIDE, rec = plan_recomputes(&res.plan);
        int ok = r == SC_SUCCESS && res.peak_bytes <= sc_plan_budget_usable(cap, &cfg, B, T) &&
                 (cases[c].want_slide < 0 || slide == cases[c].want_slide) &&
                 (cases[c].want_recompute < 0 || rec == cases[c].want_recompute || (c == 1 && slide));
        check(ok, name, "slide %d recompute %d predicted peak %zu", slide, rec, res.peak_bytes);
        if (r != SC_SUCCESS) continue;
        printf("  plan: %s, predicted peak %zu, step %.3f ms (compute %.3f, copies %.3f, host optimizer %.3f), "
               "%d candidates, chosen in %.0f ms\n", res.desc, res.peak_bytes, res.step_ms, res.compute_ms, res.copy_ms,
               res.host_opt_ms, res.candidates, auto_ms);
        int dl = 0;
        for (int l = 0; l < L; l++) dl += res.mc.slide_device_layers[l] != 0;
        CHECK(dl == 0 && res.device_layers == 0 && res.mc.mem_cap == cap && !res.mc.slide_dpu,
              "  no device layers (max_device_layers -1), the cap set, no DPU");
        size_t al, rv;
        memset(w1, 0, 4 * np);
        r = train(&cfg, &res.mc, &res.plan, ids, B, T, w1, &al, &rv);
        /* the prediction counts tensors; the small buffers and rounding are in the cap's margin */
        size_t margin = cap - sc_plan_budget_usable(cap, &cfg, B, T);
        CHECK(r == SC_SUCCESS && al <= cap && rv <= cap && al <= res.peak_bytes + margin,
              "  trains within the cap: peak allocated %zu (predicted %zu + margin %zu), reserved %zu <= cap %zu %s", al,
              res.peak_bytes, margin, rv, cap, r ? sc_last_error() : "");
        CHECK(r == SC_SUCCESS && !memcmp(w0, w1, 4 * np), "  the weights after %d steps are the uncapped resident run's, "
              "bitwise", STEPS);
    }

    {
        /* below everything: refused, naming the smallest cap; that cap is accepted */
        sc_plan_auto_config ac;
        memset(&ac, 0, sizeof ac);
        ac.mem_cap = sl_full / 2, ac.B = B, ac.T = T;
        ac.max_device_layers = -1;
        sc_plan_auto_result res;
        r = sc_plan_auto(&res, &cfg, &mc, &ac);
        char want[32];
        snprintf(want, sizeof want, "%zu bytes", res.min_cap);
        CHECK(r == SC_ERROR_OUT_OF_MEMORY && res.min_cap > ac.mem_cap && strstr(sc_last_error(), want),
              "a cap of %zu refused with the smallest cap %zu in the message: %s", ac.mem_cap, res.min_cap, sc_last_error());
        size_t minc = res.min_cap;
        ac.mem_cap = minc;
        r = sc_plan_auto(&res, &cfg, &mc, &ac);
        CHECK(r == SC_SUCCESS, "the smallest cap named, %zu, is accepted: %s", minc, r ? sc_last_error() : res.desc);
        size_t al = 0, rv = 0;
        memset(w1, 0, 4 * np);
        if (r == SC_SUCCESS) r = train(&cfg, &res.mc, &res.plan, ids, B, T, w1, &al, &rv);
        CHECK(r == SC_SUCCESS && rv <= minc && !memcmp(w0, w1, 4 * np),
              "  and trains there (reserved %zu, allocated %zu) to the resident run's weights, bitwise %s", rv, al,
              r ? sc_last_error() : "");
        ac.mem_cap = minc - 1;
        r = sc_plan_auto(&res, &cfg, &mc, &ac);
        CHECK(r == SC_ERROR_OUT_OF_MEMORY && res.min_cap == minc, "one byte less is refused: %s", sc_last_error());
    }

    {
        /* a kept profile: filled by the first call, then used as it is (a made-up one gives the
           time model's resident step from its own numbers) */
        sc_auto_profile pf;
        memset(&pf, 0, sizeof pf);
        sc_plan_auto_config ac;
        memset(&ac, 0, sizeof ac);
        ac.B = B, ac.T = T, ac.ids = ids, ac.profile = &pf;
        sc_plan_auto_result res;
        r = sc_plan_auto(&res, &cfg, &mc, &ac);
        CHECK(r == SC_SUCCESS && pf.valid && pf.layer_s > 0 && pf.dopt_pps > 0 && pf.h2d_Bps > 0 && pf.serial &&
                  pf.opt_pps == pf.dopt_pps,
              "ac.profile: filled by the call (layer %.3g s, device %.3g params/s, host %.3g, serial %d)", pf.layer_s,
              pf.dopt_pps, pf.opt_pps, pf.serial);
        /* the host's update rate set equal to the device's: else a host measured faster than 1e9
           params/s would make a slide configuration the faster one */
        pf.layer_s = 0.001, pf.rest_s = 0.002, pf.dopt_pps = pf.opt_pps = 1e9;
        r = sc_plan_auto(&res, &cfg, &mc, &ac);
        double want = (0.002 + L * 0.001 + (double)sc_config_num_params(&cfg) / 1e9) * 1e3;
        CHECK(r == SC_SUCCESS && res.mc.mode == SC_MODE_RESIDENT && fabs(res.step_ms - want) <= 1e-9 * want,
              "ac.profile valid: used as it is (predicted %.9f ms, from its numbers %.9f)", res.step_ms, want);
        /* a GPU's profile whose copies and host optimizer take no time: every prefetch depth has the
           same terms, and prefetch 1 is counted SC__AUTO_P1_SLOWER longer, as measured */
        pf.serial = 0, pf.h2d_Bps = pf.d2h_Bps = 1e18, pf.duplex = 0.0, pf.opt_pps = pf.opt_busy_pps = 1e18;
        pf.head_opt_s = 0.0, pf.head_s = 0.001;
        sc_model_config sm = mc;
        sm.mode = SC_MODE_SLIDE;
        ac.max_device_layers = -1;
        sc_plan_auto_result r1, r2;
        sm.slide_prefetch = 1;
        sc_result e1 = sc_plan_auto(&r1, &cfg, &sm, &ac);
        sm.slide_prefetch = 2;
        sc_result e2 = sc_plan_auto(&r2, &cfg, &sm, &ac);
        CHECK(e1 == SC_SUCCESS && e2 == SC_SUCCESS && fabs(r1.step_ms - SC__AUTO_P1_SLOWER * r2.step_ms) <= 1e-9 * r1.step_ms,
              "prefetch 1 predicted %.6f ms, prefetch 2 %.6f: the measured factor %.3f between them", r1.step_ms,
              r2.step_ms, SC__AUTO_P1_SLOWER);
        sm.slide_prefetch = 0;
        r = sc_plan_auto(&res, &cfg, &sm, &ac);
        CHECK(r == SC_SUCCESS && res.mc.slide_prefetch == 2,
              "the depth left open: prefetch 2, the fastest predicted with the least memory (%s)",
              r ? sc_last_error() : res.desc);
    }

    {
        /* no cap: resident without recompute; expert fields kept; device layers in the search */
        sc_plan_auto_config ac;
        memset(&ac, 0, sizeof ac);
        ac.B = B, ac.T = T;
        sc_plan_auto_result res;
        r = sc_plan_auto(&res, &cfg, &mc, &ac);
        CHECK(r == SC_SUCCESS && res.mc.mode == SC_MODE_RESIDENT && !plan_recomputes(&res.plan),
              "no cap: resident, no recompute (%s)", r ? sc_last_error() : res.desc);
        sc_model_config ex = mc;
        ex.mode = SC_MODE_SLIDE;
        ex.slide_prefetch = 2;
        r = sc_plan_auto(&res, &cfg, &ex, &ac);
        CHECK(r == SC_SUCCESS && res.mc.mode == SC_MODE_SLIDE && res.mc.slide_prefetch == 2,
              "mode slide and prefetch 2 set by the caller are kept (%s)", r ? sc_last_error() : res.desc);
        /* device layers in the search: the window's bytes (sc_slide_window_bytes) count them */
        ac.mem_cap = sc__auto_cap_for(sl_none, &cfg, B, T);
        ac.max_device_layers = 0;
        r = sc_plan_auto(&res, &cfg, &ex, &ac);
        int marked = 0;
        for (int l = 0; l < cfg.num_layers; l++) marked += res.mc.slide_device_layers[l] != 0;
        CHECK(r == SC_SUCCESS && res.fixed_bytes == sc_slide_window_bytes(&cfg, &res.mc, &res.plan) &&
                  marked == res.device_layers && (!marked || res.mc.slide_device_layers[0]),
              "device layers in the search: %d chosen (the first ones), F = the window with them (%s)",
              res.device_layers, r ? sc_last_error() : res.desc);
    }

    {
        /* slide with accumulation keeps every micro-batch's saved activations at once (it runs
           each layer over all of them): the predicted peak counts them, the run stays within it */
        const int M = 3;
        sc_model_config ex = mc;
        ex.mode = SC_MODE_SLIDE;
        sc_plan_auto_config ac;
        memset(&ac, 0, sizeof ac);
        ac.B = B, ac.T = T, ac.accum = M, ac.ids = ids, ac.max_device_layers = -1;
        ac.mem_cap = sc__auto_cap_for(sl_none + (size_t)(M - 1) * sl_none / 4, &cfg, B, T);
        sc_plan_auto_result res;
        r = sc_plan_auto(&res, &cfg, &ex, &ac);
        size_t al = 0;
        sc_model *m = NULL;
        if (r == SC_SUCCESS) r = sc_model_create(&m, &cfg, &res.mc, NULL);
        int32_t *mids = (int32_t *)malloc(sizeof(int32_t) * (size_t)M * B * T);
        for (int i = 0; mids && i < M * B * T; i++) mids[i] = ids[i % (STEPS * B * T)];
        for (int s = 0; s < 2 && r == SC_SUCCESS && mids; s++) {
            float loss;
            r = sc_model_step(m, &res.plan, mids, M, B, T, 1, &loss);
        }
        if (m) {
            al = (size_t)sc_allocator_stats(sc_model_allocator(m)).allocated_bytes[SC_STAT_ALL].peak;
            sc_model_destroy(m);
        }
        free(mids);
        /* within 1% above (small buffers the prediction leaves out: 0.2% here) and 3% below */
        CHECK(r == SC_SUCCESS && (double)al <= 1.01 * (double)res.peak_bytes && (double)res.peak_bytes <= 1.03 * (double)al,
              "slide, %d micro-batches a step: peak allocated %zu, predicted %zu (%s)", M, al, res.peak_bytes,
              r ? sc_last_error() : res.desc);
    }

    free(ids);
    free(w0);
    free(w1);
    {
        /* the GPU's host-bound slide step (sc__auto_host_chain), worked by hand. 4 streamed layers,
           each 3 of backward, 1 down, 10 on the host, 1 up, 2 of forward; head and loss 5; the
           GPU's own step 40. Layers land at 4 (3), 7 (2), 10 (1), 13 (0); the host takes 3 at 4
           (done 14), then the lowest landed: 0 (24), 1 (34), 2 (44). The forward may start at
           40 - 4 x 2 - 5 = 27: layer 0 at 27 (ends 29), 1 at 35 (37), 2 at 45 (47), 3 at 47 (49),
           then the head: 54. */
        double t = sc__auto_host_chain(4, 0, 10, 0, 1, 1, 0, 0, 2, 3, 5, 40);
        CHECK(fabs(t - 54.0) < 1e-12, "host-bound step, head kept: %.17g (54 by hand)", t);
        /* a streamed head: its 8 of download come first (layers land at 9, 10, 11, 13), its task
           (30) runs first and ends at max(8, 30); then layers 0..3 in order, done 40, 50, 60, 70;
           the forward ends at 73 (its upload, 4, was there at 34), the head: 78 */
        t = sc__auto_host_chain(4, 0, 10, 30, 1, 1, 8, 4, 2, 3, 5, 40);
        CHECK(fabs(t - 78.0) < 1e-12, "host-bound step, head streamed: %.17g (78 by hand)", t);
        /* a fast host: the GPU's own step */
        t = sc__auto_host_chain(4, 1, 0.5, 0, 0.1, 0.1, 0, 0, 2, 3, 5, 100);
        CHECK(fabs(t - 100.0) < 1e-12, "a host that keeps up: the GPU's step %.17g (100)", t);
        /* over many schedules: never below the GPU's own step, nor below the host's work after
           the first gradient lands plus one layer's forward and the head; and a slower host
           never gives a shorter step */
        sc_rng g = sc_rng_seed(7);
        int bad = 0, n = 0;
        for (int it = 0; it < 2000; it++, n++) {
            int Lr = 2 + (int)(sc_rng_u64(&g) % 27), kr = (int)(sc_rng_u64(&g) % (uint64_t)Lr);
            double u = 0.001 + sc_rng_uniform(&g) * 0.02, uh = sc_rng_uniform(&g) < 0.5 ? 0.0 : sc_rng_uniform(&g) * 0.1;
            double up1 = sc_rng_uniform(&g) * 0.004, d1 = sc_rng_uniform(&g) * 0.004, dh = sc_rng_uniform(&g) * 0.03;
            double hup = sc_rng_uniform(&g) * 0.02, fwd = 0.0005 + sc_rng_uniform(&g) * 0.002;
            double bwd = 2 * fwd + sc_rng_uniform(&g) * 0.002, head = sc_rng_uniform(&g) * 0.03;
            double gpu = (Lr * (fwd + bwd) + head) * (1.0 + sc_rng_uniform(&g));
            double a = sc__auto_host_chain(Lr, kr, u, uh, up1, d1, dh, hup, fwd, bwd, head, gpu);
            double b = sc__auto_host_chain(Lr, kr, 1.5 * u, uh, up1, d1, dh, hup, fwd, bwd, head, gpu);
            double work = (Lr - kr) * u + uh + (uh > 0 ? 0.0 : d1) + up1 + fwd + head;
            if (!(a >= gpu - 1e-12 && a >= work - 1e-12 && b >= a - 1e-12)) bad++;
        }
        CHECK(bad == 0, "host-bound step over %d random schedules: >= the GPU's step and the host's work, and "
              "monotone in the host's time (%d violations)", n, bad);
    }

    printf("%d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
