/* maxbatch: the largest batch each way of computing the step fits under a memory cap, and the
   throughput it then reaches (GradRecomp's "max batch" table, measured).

     build/maxbatch [--model tiny] [--mem-cap SIZE] [--seq T] [--runs LIST] [--max-batch N]

   For each run (a checkpoint policy, or slide mode with one) we search the batch size B: double
   from B=1 until the allocator refuses memory, then bisect between the last B that fitted and the
   first that did not. Each probe trains 2 steps (the second with the AdamW state allocated) on
   one model kept across the run's probes, and an out-of-memory probe stops cleanly: the process
   never dies, the allocator simply says no. The search assumes that a B that fits implies every smaller B fits.
   At the largest B that fits we train --steps steps and report the median step time and tokens/s
   (B * T / median step). The search stops at --max-batch; when it fits there, the cap was hit,
   not the memory, and the CSV says so (first_oom_batch empty, capped 1).

   Defaults: on the CPU (tiny model) --mem-cap 64MiB, --seq 128, --steps 4; on the GPU --mem-cap
   40GiB, --seq 2048, --steps 6. 40 GiB because qwen3-1.7b's weights, gradients, f32 master
   weights and AdamW state alone take 29 GiB on the device: under 16 GiB only slide mode trains it
   (try --mem-cap 16GiB to see that).

   Writes into --out DIR: maxbatch.csv, maxbatch.png, summary.md.
   Exit status: 0 on success, 2 for bad flags, 1 for any other failure. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STB_TRUETYPE_IMPLEMENTATION
#define STBTT_STATIC
#include "plot.h"
#include "demo.h"

#define MAXR 16

static const char *usage =
    "usage: maxbatch [options]\n\n"
    "Finds, for each run, the largest batch that fits under --mem-cap (doubling, then bisection\n"
    "through the allocator's clean out-of-memory path; 2 steps per probe), then measures the\n"
    "throughput at that batch.\n\n"
    "  --runs LIST       comma-separated checkpoint policies (none, full, every:K, sqrt, selective,\n"
    "                    selective:mlp, layers:...) and slide (slide mode, policy none) or\n"
    "                    slide:POLICY (default none,every:2,sqrt,selective,full,slide,slide:full)\n"
    "  --max-batch N     largest batch tried (default 1024)\n"
    "defaults: --mem-cap 64MiB --seq 128 --steps 4 on the CPU; --mem-cap 40GiB --seq 2048\n"
    "--steps 6 on the GPU (use --model qwen3-1.7b there)\n";

typedef struct mopts {
    const char *runs;
    int max_batch;
} mopts;

static int take_flag(void *user, const char *f, const char *v)
{
    mopts *o = (mopts *)user;
    if (!strcmp(f, "--runs")) o->runs = v;
    else if (!strcmp(f, "--max-batch")) {
        char *end;
        long x = strtol(v, &end, 10);
        if (end == v || *end || x < 1 || x > 65536) {
            fprintf(stderr, "maxbatch: --max-batch needs an integer in [1, 65536], got '%s'\n", v);
            exit(2);
        }
        o->max_batch = (int)x;
    } else return 0;
    return 1;
}

typedef struct result {
    char label[48], policy[64];
    sc_mode mode;
    int max_batch, first_oom, capped, probes, n, late_oom; /* late_oom: fitted a probe, not the longer run */
    double median_ms, tokens_s, tok_lo, tok_hi, peak, reserved; /* tok_lo..hi: slowest and fastest step */
} result;

/* One model kept across the probes of a run: creating a model costs seconds (qwen3-1.7b: random
   init of 1.7 B parameters; in slide mode also pinning 29 GiB of host memory), while the device
   memory probed depends only on B, T, the plan and the model's fixed bytes. Between probes the
   cached device segments are released, so each probe starts from the fixed bytes (weights,
   gradients, optimizer state), as a fresh model after its first step would. */
static sc_model *probe_model;

/* One probe: 2 steps at batch B. 1 when they fit. */
static int fits(const demo *d, result *res, int B, int T, const int32_t *ids)
{
    sc_plan plan;
    if (sc_plan_parse(&plan, res->policy, d->cfg.num_layers)) demo_die(d, "plan");
    sc_result rc = SC_SUCCESS;
    if (!probe_model) {
        sc_model_config mc = d->mc;
        mc.mode = res->mode;
        rc = sc_model_create(&probe_model, &d->cfg, &mc, NULL);
        if (rc && rc != SC_ERROR_OUT_OF_MEMORY) demo_die(d, "creating the model");
    }
    if (probe_model) {
        sc_allocator_empty_cache(sc_model_allocator(probe_model));
        for (int s = 0; s < 2 && !rc; s++) {
            float loss;
            rc = sc_model_step(probe_model, &plan, ids, 1, B, T, 1, &loss);
        }
        sc_result rs = sc_model_sync(probe_model);
        if (!rc) rc = rs;
        if (rc && rc != SC_ERROR_OUT_OF_MEMORY) demo_die(d, "probe");
    }
    int ok = rc == SC_SUCCESS;
    res->probes++;
    printf("  probe B=%-5d %s\n", B, ok ? "fits" : "out of memory");
    return ok;
}

int main(int argc, char **argv)
{
    mopts mo = {"none,every:2,sqrt,selective,full,slide,slide:full", 1024};
    demo d;
    demo_begin(&d, "maxbatch", argc, argv, usage, take_flag, &mo);
    int T = d.o.seq ? d.o.seq : d.on_gpu ? 2048 : 128, steps = d.o.steps ? d.o.steps : d.on_gpu ? 6 : 4;
    if (T > d.cfg.max_position) demo_usage_error(&d, "--seq %d exceeds the model's %d", T, d.cfg.max_position);
    if (!d.o.mem_cap) d.o.mem_cap = d.mc.mem_cap = d.on_gpu ? (size_t)40 << 30 : (size_t)64 << 20;
    if (d.o.batch) demo_usage_error(&d, "%s", "--batch: this demo searches the batch; use --max-batch");
    if (pl_check_font()) return 1;
    double unit = d.mc.mem_cap >= ((size_t)4 << 30) ? DEMO_GIB : DEMO_MIB;
    const char *un = unit == DEMO_GIB ? "GiB" : "MiB";

    result res[MAXR];
    int nr = 0;
    demo_run_spec spec[MAXR];
    nr = demo_parse_runs(&d, mo.runs, spec, MAXR);
    for (int i = 0; i < nr; i++) {
        memset(&res[i], 0, sizeof res[i]);
        snprintf(res[i].label, sizeof res[i].label, "%.*s", (int)sizeof res[i].label - 1, spec[i].label);
        snprintf(res[i].policy, sizeof res[i].policy, "%.*s", (int)sizeof res[i].policy - 1, spec[i].policy);
        res[i].mode = spec[i].mode;
    }
    int32_t *ids = demo_random_tokens(&d, (size_t)mo.max_batch * T);

    for (int i = 0; i < nr; i++) {
        result *r = &res[i];
        printf("== %s: largest B under %.1f %s (T=%d) ==\n", r->label, (double)d.mc.mem_cap / unit, un, T);
        int lo = 0, hi = 0, B = 1;
        for (;;) { /* double until it does not fit (or the search cap) */
            if (!fits(&d, r, B, T, ids)) { hi = B; break; }
            lo = B;
            if (B >= mo.max_batch) break;
            B = B * 2 < mo.max_batch ? B * 2 : mo.max_batch;
        }
        while (hi && hi - lo > 1) { /* bisect (lo fits, hi does not) */
            int mid = lo + (hi - lo) / 2;
            if (fits(&d, r, mid, T, ids)) lo = mid;
            else hi = mid;
        }
        r->first_oom = hi, r->capped = !hi;
        if (probe_model) sc_model_destroy(probe_model); /* before the measured run makes its own */
        probe_model = NULL;
        for (; lo > 0; lo--) { /* measure at lo; should a later step run out of memory, step down */
            demo_run run = demo_run_make(&d, r->label, r->policy, r->mode, lo, T, steps);
            printf("  throughput at B=%d, %d steps\n", lo, steps);
            int oom = demo_train(&d, &run, ids, 1);
            if (!oom) {
                sc_stats s = demo_step_stats(&d, &run, demo_wall_ms);
                r->n = s.n, r->median_ms = s.median, r->tokens_s = (double)lo * T / (s.median / 1000.0);
                r->tok_lo = (double)lo * T / (s.max / 1000.0), r->tok_hi = (double)lo * T / (s.min / 1000.0);
                r->peak = demo_step_max(&d, &run, demo_alloc_peak_gib) * DEMO_GIB; /* exact: a power of 2 */
                r->reserved = demo_step_max(&d, &run, demo_reserved_peak_gib) * DEMO_GIB;
            } else {
                printf("  -> B=%d fitted the 2-step probe but ran out of memory in step %d of %d\n", lo, run.done + 1, steps);
                r->first_oom = lo, r->capped = 0, r->late_oom = r->late_oom ? r->late_oom : lo;
            }
            demo_run_free(&run);
            if (!oom) break;
        }
        r->max_batch = lo;
    }

    /* ---- maxbatch.csv ---- */
    FILE *f = demo_csv(&d, "maxbatch.csv", "policy,mode,mem_cap_bytes,seq,max_batch,first_oom_batch,capped,tokens_per_s,"
                                           "median_ms,n,peak_alloc_bytes,peak_reserved_bytes,probes,tokens_per_s_slowest_step,"
                                           "tokens_per_s_fastest_step,late_oom_batch");
    for (int i = 0; i < nr; i++) {
        result *r = &res[i];
        fprintf(f, "%s,%s,%zu,%d,%d,", r->policy, r->mode ? "slide" : "resident", d.mc.mem_cap, T, r->max_batch);
        if (r->first_oom) fprintf(f, "%d", r->first_oom);
        fprintf(f, ",%d,", r->capped);
        if (r->n) fprintf(f, "%.1f,%.4f,%d,%.0f,%.0f", r->tokens_s, r->median_ms, r->n, r->peak, r->reserved);
        else fprintf(f, ",,0,,");
        fprintf(f, ",%d", r->probes);
        if (r->n) fprintf(f, ",%.1f,%.1f,", r->tok_lo, r->tok_hi);
        else fprintf(f, ",,,");
        if (r->late_oom) fprintf(f, "%d", r->late_oom);
        fprintf(f, "\n");
    }
    demo_close(&d, f, "maxbatch.csv");

    /* ---- maxbatch.png: the largest batch (left) and the throughput there (right) ---- */
    pl_canvas c;
    char sub[600], title[160], txt[MAXR][48];
    const char *cat[MAXR];
    double vb[MAXR], vt[MAXR], hb = 4, ht = 1; /* hb >= 4: integer ticks */
    snprintf(sub, sizeof sub, "%s", demo_setup_line(&d, 0, T)); /* B = 0: it varies here */
    snprintf(title, sizeof title, "Largest batch under a %.0f %s memory cap, and its throughput", (double)d.mc.mem_cap / unit,
             un);
    if (pl_figure(&c, 1200, 600, title, sub)) demo_die(&d, "figure");
    for (int i = 0; i < nr; i++) {
        cat[i] = res[i].label;
        vb[i] = res[i].max_batch, vt[i] = res[i].n ? res[i].tokens_s : 0;
        hb = fmax(hb, vb[i]), ht = fmax(ht, res[i].n ? res[i].tok_hi : 0);
    }
    pl_chart chs[2];
    for (int panel = 0; panel < 2; panel++) {
        pl_chart ch;
        double *v = panel ? vt : vb, vr[MAXR], vs[MAXR]; /* resident and slide bars, in their colours */
        for (int i = 0; i < nr; i++) vr[i] = res[i].mode ? NAN : v[i], vs[i] = res[i].mode ? v[i] : NAN;
        uint32_t cr = pl_color(0), cs = pl_color(8);
        const char *lr = "resident: weights, grads, AdamW on the device", *ls = "slide: they live on the host";
        pl_chart_init(&ch, &c, panel ? 690 : 95, 95, panel ? 1170 : 575, 515);
        pl_chart_x_categories(&ch, nr, cat, NULL);
        pl_chart_y(&ch, 0, panel ? ht * 1.12 : hb * 1.3, 0, /* left: room for the legend */
                   panel ? "tokens / s at that batch (median step)" : "largest batch B that fits");
        pl_chart_axes(&ch);
        pl_chart_bars(&ch, vr, NULL, nr, 1, 0, &cr, panel ? NULL : &lr);
        pl_chart_bars(&ch, vs, NULL, nr, 1, 0, &cs, panel ? NULL : &ls);
        double xi[MAXR], el[MAXR], eh[MAXR];
        for (int i = 0; i < nr; i++) xi[i] = i, el[i] = res[i].n ? res[i].tok_lo : NAN, eh[i] = res[i].n ? res[i].tok_hi : NAN;
        if (panel) pl_chart_errorbars(&ch, xi, el, eh, nr, 0x262626, 10);
        for (int i = 0; i < nr; i++) { /* the value over each bar */
            result *r = &res[i];
            if (!panel) snprintf(txt[i], sizeof txt[i], !r->max_batch ? "none fits" : r->capped ? "%d (search cap)" : "%d",
                                 r->max_batch);
            else if (!r->n) snprintf(txt[i], sizeof txt[i], "n/a");
            else snprintf(txt[i], sizeof txt[i], r->tokens_s >= 1e4 ? "%.3gk" : "%.0f", r->tokens_s >= 1e4 ? r->tokens_s / 1e3 : r->tokens_s);
            double px = pl_chart_px(&ch, i), py = pl_chart_py(&ch, panel && r->n ? eh[i] : v[i]) - 6, box[4];
            pl_text(&c, px, py, 13, 0x222222, PL_CENTER | PL_BASELINE | PL_HALO, txt[i]);
            pl_text_box(&c, px, py, 13, PL_CENTER | PL_BASELINE, txt[i], box);
            pl_mark_add(&c, box[0], box[1], box[2], box[3], PL_MARK_TEXT, -1);
        }
        chs[panel] = ch;
    }
    pl_chart_legend(&chs[0]); /* after both panels: it must not spill onto the right one */
    snprintf(sub, sizeof sub, "The cap bounds the allocator's reserved bytes, as a card's size would. B doubled from 1, then "
             "bisected; each probe trains 2 steps. Throughput: B x T / median of %d steps (bars: slowest to fastest step).",
             steps > d.o.warmup ? steps - d.o.warmup : steps);
    pl_text_fit(&c, 600, 585, 13, 1160, 0x5F5F5F, PL_CENTER | PL_BASELINE, sub);
    if (pl_write_png(&c, demo_path(&d, "maxbatch.png"))) demo_die(&d, "writing maxbatch.png");
    pl_free(&c);

    /* ---- summary.md ---- */
    char intro[1024];
    snprintf(intro, sizeof intro,
             "The largest batch B of T=%d tokens that each run fits under a %.1f %s cap on the allocator, found by "
             "doubling from B=1 and then bisecting (each probe: 2 training steps; an out-of-memory probe stops "
             "cleanly), searched up to B=%d; then %d steps at that B (the first %d left out), tokens/s = B*T / median "
             "step; should that longer run run out of memory, B steps down until it does not. Peak is the allocator's peak allocated bytes (slide: device bytes; weights, gradients and AdamW "
             "state on the host). Resident weights + gradients + optimizer state: %.2f %s.",
             T, (double)d.mc.mem_cap / unit, un, mo.max_batch, steps, d.o.warmup,
             (double)sc_model_config_fixed_bytes(&d.cfg, &d.mc) / unit, un);
    FILE *md = demo_md_begin(&d, "Largest batch under a memory cap", intro, 0, T, steps);
    if (d.mc.mem_cap < ((size_t)1 << 30))
        fprintf(md, "At a cap this small the caching allocator's segment sizes weigh: as PyTorch's, it takes 2 MiB "
                    "segments for requests up to 1 MiB and 20 MiB ones for 1 to 10 MiB, in separate pools, so the peak "
                    "allocated at the largest B can sit well below the cap (compare peak reserved).\n\n");
    demo_md_figure(md, "maxbatch.png", "Largest batch per run (left) and the throughput at that batch (right).");
    fprintf(md, "| run | mode | max B | first OOM B | tokens/s | step ms (median) | peak alloc / reserved (%s) | "
                "probes |\n|---|---|---|---|---|---|---|---|\n", un);
    for (int i = 0; i < nr; i++) {
        result *r = &res[i];
        fprintf(md, "| %s | %s | %d%s | ", r->label, r->mode ? "slide" : "resident", r->max_batch,
                r->capped ? " (search cap)" : "");
        if (r->first_oom) fprintf(md, r->late_oom == r->first_oom ? "%d (in a later step)" : "%d", r->first_oom);
        if (r->n)
            fprintf(md, " | %.0f | %.2f | %.3f / %.3f | %d |\n", r->tokens_s, r->median_ms, r->peak / unit,
                    r->reserved / unit, r->probes);
        else fprintf(md, " | | | | %d |\n", r->probes);
    }
    demo_close(&d, md, "summary.md");
    free(ids);
    printf("wrote %s/maxbatch.csv, maxbatch.png, summary.md\n", d.o.out);
    return 0;
}
