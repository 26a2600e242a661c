/* t1m2: activation recompute off vs on, per step and per layer (the T1M2 report's experiment).

     build/t1m2 [--ckpt full] [--model qwen3-1.7b] [--steps 30] [--device cpu|cuda|auto] [--out DIR]

   We train the same model twice from the same seeded weights on the same tokens: once keeping
   every activation for the backward pass (recompute off, policy `none`), once with activation
   checkpointing (recompute on, --ckpt POLICY, default `full`). The tracer times every step and
   every layer's forward, recompute and backward (CUDA events on the GPU), records every
   allocation and free with the host RSS, and the allocator keeps its peaks. Then we compare:

     - time: step wall time per step and its mean with a Student's t 95% CI; per layer, forward,
       backward proper and recompute, each mean ± 95% CI over the measured steps;
     - memory: the peaks (allocated, reserved, true peak host RSS) and how memory moves within a
       step (mean ± std over the measured steps against time within the step);
     - arithmetic: recompute replays the very same operations, so both runs must produce bitwise
       identical losses at every step. The program checks it and exits 1 if they do not.

   Writes into --out DIR: summary.md, summary.csv, step_metrics.csv, layer_metrics.csv,
   layer_{fwd,bwd,total}_ci_r{0,1}.csv, layer_mean_merged.csv and the PNGs listed in main().
   r0 is recompute off, r1 recompute on. Exit status: 0 success, 2 bad flags, 1 anything else. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STB_TRUETYPE_IMPLEMENTATION
#define STBTT_STATIC
#include "plot.h"

#include "demo.h"
#include "figs.h"

static const char *usage =
    "usage: t1m2 [options]\n"
    "\n"
    "Recompute off vs on: trains the same model twice (checkpoint policy none, then --ckpt) and\n"
    "compares step time, per-layer forward / backward / recompute time and memory. Defaults: on\n"
    "the GPU B=1, T=256 (the T1M2 report's setting), on the CPU B=1, T=128; 30 steps.\n"
    "\n"
    "  --ckpt POLICY    the recompute-on policy: full | every:K | layers:0-3,7 | selective |\n"
    "                   selective:mlp | sqrt (default full)\n";

/* "12.3 ± 0.4" */
static const char *ci(char *buf, sc_stats s) { return demo_fmt_ci(buf, 64, s, 2); }

int main(int argc, char **argv)
{
    /* 1. Flags, device, the batch. */
    demo d;
    demo_flag ckpt_flag = {"--ckpt", "full"};
    demo_begin(&d, "t1m2", argc, argv, usage, demo_take_one, &ckpt_flag);
    const char *ckpt = ckpt_flag.value;
    int B = d.o.batch ? d.o.batch : 1, T = d.o.seq ? d.o.seq : d.on_gpu ? 256 : 128;
    int steps = d.o.steps ? d.o.steps : 30, L = d.cfg.num_layers;
    if (T > d.cfg.max_position) T = d.cfg.max_position;
    int32_t *ids = demo_random_tokens(&d, (size_t)B * T);
    printf("t1m2: %s\n", demo_setup_line(&d, B, T));

    /* 2. Two runs from the same seed: recompute off (r0) and on (r1). */
    char on_label[160];
    snprintf(on_label, sizeof on_label, "recompute on (%s)", ckpt);
    demo_run r0 = demo_run_make(&d, "recompute off", "none", SC_MODE_RESIDENT, B, T, steps);
    demo_run r1 = demo_run_make(&d, on_label, ckpt, SC_MODE_RESIDENT, B, T, steps);
    demo_run *runs[2] = {&r0, &r1};
    for (int k = 0; k < 2; k++)
        if (demo_train(&d, runs[k], ids, 1)) {
            fprintf(stderr, "t1m2: %s does not fit: %s\n", runs[k]->label, runs[k]->msg);
            return 1;
        }

    /* 3. The same arithmetic: every step's loss bit for bit. */
    int bitwise = demo_losses_bitwise(&r0, &r1);
    printf("losses bitwise identical at all %d steps: %s (step 1: %.9g vs %.9g)\n", steps, bitwise ? "yes" : "NO",
           (double)r0.st[0].loss, (double)r1.st[0].loss);

    /* 4. Step-level numbers over the measured steps (after --warmup). */
    sc_stats wall[2], rec[2];
    double alloc[2], resv[2], rss[2];
    for (int k = 0; k < 2; k++) {
        wall[k] = demo_step_stats(&d, runs[k], demo_wall_ms);
        rec[k] = demo_step_stats(&d, runs[k], demo_recompute_ms);
        alloc[k] = demo_step_max(&d, runs[k], demo_alloc_peak_gib);
        resv[k] = demo_step_max(&d, runs[k], demo_reserved_peak_gib);
        rss[k] = demo_step_max(&d, runs[k], demo_rss_peak_gib);
    }
    double dci, dwall = figs_welch(wall[0], wall[1], &dci);
    char b0[64], b1[64];
    printf("\n%-26s %4s %18s %10s %14s %10s %10s %10s\n", "mode", "n", "step ms (95% CI)", "median", "recompute ms",
           "alloc GiB", "resv GiB", "RSS GiB");
    for (int k = 0; k < 2; k++)
        printf("%-26s %4d %18s %10.2f %14s %10.3f %10.3f %10.3f\n", runs[k]->label, wall[k].n, ci(b0, wall[k]),
               wall[k].median, ci(b1, rec[k]), alloc[k], resv[k], rss[k]);
    printf("recompute on - off: %+.2f ms per step (95%% CI ± %.2f, Welch), x%.3f; peak reserved %+.3f GiB\n", dwall,
           dci, wall[1].mean / wall[0].mean, resv[1] - resv[0]);

    /* 5. CSVs. */
    FILE *f = demo_csv(&d, "summary.csv",
                       "mode,policy,n,mean_step_wall_ms,median_step_wall_ms,std_step_wall_ms,ci95_step_wall_ms,"
                       "ci_lo_ms,ci_hi_ms,mean_recompute_ms,ci95_recompute_ms,peak_gpu_alloc_gib,"
                       "peak_gpu_reserved_gib,peak_cpu_rss_gib,loss_first,loss_last,losses_bitwise_equal");
    for (int k = 0; k < 2; k++)
        fprintf(f, "\"%s\",\"%s\",%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.9g,%.9g,%d\n",
                k ? "recompute on" : "recompute off", runs[k]->policy, wall[k].n, wall[k].mean, wall[k].median,
                wall[k].std, wall[k].ci95, wall[k].mean - wall[k].ci95, wall[k].mean + wall[k].ci95, rec[k].mean,
                rec[k].ci95, alloc[k], resv[k], rss[k], (double)runs[k]->st[0].loss,
                (double)runs[k]->st[steps - 1].loss, bitwise);
    demo_close(&d, f, "summary.csv");
    figs_write_steps(&d, runs, 2, "step_metrics.csv");
    figs_write_layer_steps(&d, runs, 2, "layer_metrics.csv");
    static const figs_metric ci_metric[3] = {FIGS_FWD, FIGS_BWD, FIGS_TOTAL};
    for (int m = 0; m < 3; m++)
        for (int k = 0; k < 2; k++) {
            char name[64];
            snprintf(name, sizeof name, "layer_%s_ci_r%d.csv", figs_metric_name[ci_metric[m]], k);
            figs_write_layer_ci(&d, runs[k], ci_metric[m], name);
        }
    f = demo_csv(&d, "layer_mean_merged.csv",
                 "layer,fwd_ms_r0,fwd_ms_r1,bwd_ms_r0,bwd_ms_r1,recompute_ms_r0,recompute_ms_r1,total_ms_r0,"
                 "total_ms_r1,delta_total_ms,delta_total_ci95_ms");
    for (int l = 0; l < L; l++) {
        fprintf(f, "%d", l);
        for (int m = FIGS_FWD; m <= FIGS_TOTAL; m++)
            for (int k = 0; k < 2; k++) fprintf(f, ",%.6f", figs_layer_stats(&d, runs[k], l, (figs_metric)m).mean);
        double c, dt = figs_welch(figs_layer_stats(&d, &r0, l, FIGS_TOTAL), figs_layer_stats(&d, &r1, l, FIGS_TOTAL), &c);
        fprintf(f, ",%.6f,%.6f\n", dt, c);
    }
    demo_close(&d, f, "layer_mean_merged.csv");

    /* 6. Figures. Each has the setup in its subtitle. */
    const char *setup = demo_setup_line(&d, B, T);
    char sub[768];
    snprintf(sub, sizeof sub, "%s; mean ± 95%% CI (Student's t) over %d measured steps", setup, wall[0].n);
    figs_series ser[4] = {{&r0, FIGS_FWD, r0.label, pl_color(0), 0, PL_M_CIRCLE},
                          {&r1, FIGS_FWD, r1.label, pl_color(1), 0, PL_M_SQUARE}};
    static const char *const what[4] = {"forward", "backward (without recompute)", "total (forward + backward + recompute)",
                                        "recompute"};
    static const char *const png[4] = {"layer_fwd_mean_ci.png", "layer_bwd_mean_ci.png", "layer_total_mean_ci.png",
                                       "layer_recompute_mean_ci.png"};
    static const figs_metric met[4] = {FIGS_FWD, FIGS_BWD, FIGS_TOTAL, FIGS_RECOMPUTE};
    int fail = 0;
    for (int i = 0; i < 4; i++) {
        char title[256], yt[128];
        ser[0].k = ser[1].k = met[i];
        snprintf(title, sizeof title, "Per-layer %s time, recompute off vs on", what[i]);
        snprintf(yt, sizeof yt, "%s per layer (ms)", figs_metric_name[met[i]]);
        fail |= figs_layer_chart(&d, ser, 2, png[i], title, sub, yt, NULL);
    }
    fail |= figs_layer_delta_chart(&d, &r0, &r1, FIGS_TOTAL, "layer_delta_total.png",
                                   "Per-layer total time: recompute on − off", sub, "Δ total per layer (ms)");
    fail |= figs_step_wall_chart(&d, runs, 2, "step_wall_ms_compare.png", "Step wall time, recompute off vs on", setup);
    fail |= figs_step_delta_chart(&d, &r0, &r1, "step_wall_ms_delta.png", "Step wall time: recompute on − off", setup);
    char msub[768];
    snprintf(msub, sizeof msub, "%s; mean ± std over %d measured steps", setup, wall[0].n);
    int w_alloc[2] = {0, 2}, w_resv[2] = {1, 2};
    fail |= figs_mem_timeline(&d, runs, 2, w_alloc, 2, 0, "mem_timeline_cpu_gpualloc_compare.png",
                              "Memory within a step: allocated and host RSS, recompute off vs on", msub);
    fail |= figs_mem_timeline(&d, runs, 2, w_resv, 2, 0, "mem_timeline_cpu_gpureserved_compare.png",
                              "Memory within a step: reserved and host RSS, recompute off vs on", msub);
    if (fail) return 1;

    /* 7. summary.md: the setup, the table, the figures with their captions. */
    FILE *md = demo_md_begin(&d, "T1M2: recompute off vs on",
                             "The same model trained twice from the same weights on the same tokens: every "
                             "activation kept (recompute off, policy `none`) against activation checkpointing "
                             "(recompute on). Means exclude the warm-up; 95% CIs use Student's t.",
                             B, T, steps);
    fprintf(md, "| mode | policy | n | mean step wall ms (95%% CI) | median ms | recompute ms | peak %s alloc GiB | "
                "peak %s reserved GiB | peak CPU RSS GiB |\n|---|---|---|---|---|---|---|---|---|\n",
            d.on_gpu ? "GPU" : "device", d.on_gpu ? "GPU" : "device");
    for (int k = 0; k < 2; k++)
        fprintf(md, "| %s | `%s` | %d | %s | %.2f | %s | %.3f | %.3f | %.3f |\n", k ? "recompute on" : "recompute off",
                runs[k]->policy, wall[k].n, ci(b0, wall[k]), wall[k].median, ci(b1, rec[k]), alloc[k], resv[k], rss[k]);
    fprintf(md, "\nRecompute on − off: **%+.2f ms per step** (95%% CI ± %.2f, Welch), ×%.3f; peak allocated %+.3f GiB, "
                "peak reserved %+.3f GiB, peak RSS %+.3f GiB. Losses bitwise identical at all %d steps: **%s**. "
                "Peak RSS is the true peak within each step (%s), the largest over the measured steps%s. "
                "The two runs share one process (off first), each from a freshly created model.\n\n",
            dwall, dci, wall[1].mean / wall[0].mean, alloc[1] - alloc[0], resv[1] - resv[0], rss[1] - rss[0], steps,
            bitwise ? "yes" : "NO", sc_tracer_peak_method(&r0.tr),
            d.on_gpu ? "" : "; on the CPU backend the \"device\" allocator's memory is host memory, inside the RSS");
    static const char *const cap[] = {
        "Per-layer forward time, mean ± 95% CI over the measured steps.",
        "Per-layer backward time proper: the layer's backward without its recompute (shown separately below).",
        "Per-layer total = forward + backward + recompute, mean ± 95% CI.",
        "Per-layer recompute time (replaying the forward inside the backward pass); zero when recompute is off.",
        "Per-layer total time, recompute on − off: difference of means, 95% CI by Welch's t; the top three are labelled.",
        "Wall time of every step (host clock, device synchronised at the step's end); crosses: warm-up; dashed: means.",
        "Per-step wall time difference (same step index), with the difference of means and its Welch 95% CI.",
        "Allocated bytes and host RSS against time within the step (host clock): mean ± std over the measured steps.",
        "Reserved bytes and host RSS against time within the step (host clock): mean ± std over the measured steps."};
    static const char *const pngs[] = {"layer_fwd_mean_ci.png", "layer_bwd_mean_ci.png", "layer_total_mean_ci.png",
                                       "layer_recompute_mean_ci.png", "layer_delta_total.png",
                                       "step_wall_ms_compare.png", "step_wall_ms_delta.png",
                                       "mem_timeline_cpu_gpualloc_compare.png",
                                       "mem_timeline_cpu_gpureserved_compare.png"};
    for (int i = 0; i < 9; i++) demo_md_figure(md, pngs[i], cap[i]);
    demo_close(&d, md, "summary.md");
    printf("wrote %s/summary.md, 9 PNGs and 11 CSVs\n", d.o.out);

    demo_run_free(&r0);
    demo_run_free(&r1);
    free(ids);
    if (!bitwise) {
        fprintf(stderr, "t1m2: the losses differ between recompute off and on (the library promises equal bits)\n");
        return 1;
    }
    return 0;
}
