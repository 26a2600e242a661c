/* t1m1: resident vs checkpoint vs slide (weight streaming) vs auto, per step and per layer (the
   T1M1 report's experiment).

     build/t1m1 [--model qwen3-1.7b] [--steps 30] [--device cpu|cuda|auto] [--out DIR] [--auto-cap GiB]

   Four ways to train the same model from the same seeded weights on the same tokens:

     resident    everything on the device: weights, gradients, AdamW state (the report's "gpu");
     checkpoint  resident, with full activation recompute (the report's "ckpt");
     slide       weights, gradients and optimizer state on the host; each layer is uploaded to
                 the device just before it runs (with prefetch), its gradients are downloaded, and
                 a host thread runs its AdamW update while the device goes on with the layers below;
     auto        what the library chooses for itself under a device memory cap (sc_plan_auto, as
                 `slidecheck train --mode auto`): resident or slide, the checkpoint plan, how many
                 layers stay on the device, prefetch, head, host threads. The cap: --auto-cap, or
                 halfway between slide's and resident's peak reserved bytes (raised to the smallest
                 cap that any configuration fits, if that is more); the run trains under it.

   In slide mode three kinds of work run beside the compute stream: uploads (h2d), downloads
   (d2h) and the host optimizer. Their busy times overlap the compute, so a step's wall time is
   NOT their sum; fig02 draws them as lanes beside the compute bar and as a timeline of one step.
   The time the step actually waited for the optimizer is measured too (opt_wait_ms).

   All four modes do the same arithmetic, so their losses must be bitwise identical at every
   step; the program checks it and exits 1 if not. Writes into --out DIR: summary.md,
   metrics_iter.csv, metrics_layer.csv, mem_trace.csv, auto_plan.csv and fig01..fig07 PNGs.
   Exit status: 0 success, 2 bad flags, 1 anything else. */
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
    "usage: t1m1 [options]\n"
    "\n"
    "Resident vs checkpoint (full recompute) vs slide (weights streamed from the host, optimizer\n"
    "on host threads) vs auto (the library's choice under a memory cap): step time, where it goes,\n"
    "peak memory and per-layer times. Defaults: on the GPU B=1, T=256 and 30 steps (the T1M1\n"
    "report's setting); on the CPU B=1, T=128, 12 steps.\n\n"
    "  --auto-cap SIZE  auto's device memory cap in GiB, e.g. 12 (or a size such as 40MiB; default:\n"
    "                   halfway between slide's and resident's peak reserved bytes)\n";

static const char *ci(char *buf, sc_stats s, int digits) { return demo_fmt_ci(buf, 64, s, digits); }

int main(int argc, char **argv)
{
    /* 1. Flags, device, the batch. */
    demo_flag auto_cap_flag = {"--auto-cap", NULL};
    demo d;
    demo_begin(&d, "t1m1", argc, argv, usage, demo_take_one, &auto_cap_flag);
    const char *auto_cap = auto_cap_flag.value;
    int B = d.o.batch ? d.o.batch : 1, T = d.o.seq ? d.o.seq : d.on_gpu ? 256 : 128;
    int steps = d.o.steps ? d.o.steps : d.on_gpu ? 30 : 12;
    if (T > d.cfg.max_position) T = d.cfg.max_position;
    int32_t *ids = demo_random_tokens(&d, (size_t)B * T);
    const char *setup = demo_setup_line(&d, B, T);
    printf("t1m1: %s\n", setup);

    /* 2. The three hand-set modes, one after the other, each from the same seed. */
    enum { NR = 4 };
    demo_run r[NR] = {demo_run_make(&d, "resident", "none", SC_MODE_RESIDENT, B, T, steps),
                      demo_run_make(&d, "checkpoint", "full", SC_MODE_RESIDENT, B, T, steps),
                      demo_run_make(&d, "slide", "none", SC_MODE_SLIDE, B, T, steps)};
    demo_run *runs[NR] = {&r[0], &r[1], &r[2], &r[3]};
    for (int k = 0; k < 3; k++)
        if (demo_train(&d, runs[k], ids, 1)) {
            fprintf(stderr, "t1m1: %s does not fit: %s\n", runs[k]->label, runs[k]->msg);
            return 1;
        }

    /* 3. auto: the library's choice under a cap between slide's and resident's peaks. */
    size_t cap = 0;
    char msg[512], capnote[160] = "";
    if (auto_cap) demo_parse_caps(&d, "--auto-cap", auto_cap, &cap, 1);
    else cap = (size_t)((demo_step_max(&d, &r[0], demo_reserved_peak_gib) +
                         demo_step_max(&d, &r[2], demo_reserved_peak_gib)) / 2 * DEMO_GIB);
    sc_plan_auto_result ares;
    if (demo_auto_choose(&d, cap, B, T, ids, &ares, msg, sizeof msg)) {
        if (auto_cap) {
            fprintf(stderr, "t1m1: --auto-cap: %s\n", msg);
            return 1;
        }
        /* the halfway cap is below what any configuration needs (the allocator's margin): the least that fits */
        snprintf(capnote, sizeof capnote, ", the smallest that fits (halfway between slide's and resident's peaks, "
                 "%.4f GiB, fits nothing)", (double)cap / DEMO_GIB);
        cap = ares.min_cap;
        if (demo_auto_choose(&d, cap, B, T, ids, &ares, msg, sizeof msg)) {
            fprintf(stderr, "t1m1: auto: %s\n", msg);
            return 1;
        }
    }
    printf("auto under a cap of %.4f GiB%s:\n  plan: %s  predicted peak %.4f GiB, step %.2f ms\n", (double)cap / DEMO_GIB,
           capnote, ares.desc, (double)ares.peak_bytes / DEMO_GIB, ares.step_ms);
    demo ad;
    r[3] = demo_auto_run(&ad, &d, &ares, "auto", B, T, steps);
    if (demo_train(&ad, &r[3], ids, 1)) {
        fprintf(stderr, "t1m1: auto went out of memory under its cap: %s\n", r[3].msg);
        return 1;
    }
    int bitwise = demo_losses_bitwise(&r[0], &r[1]) && demo_losses_bitwise(&r[0], &r[2]) &&
                  demo_losses_bitwise(&r[0], &r[3]);
    printf("losses of checkpoint, slide and auto bitwise identical to resident's at all %d steps: %s\n", steps,
           bitwise ? "yes" : "NO");

    /* 4. The table: wall, peaks, and for slide the traffic and the concurrent work. */
    sc_stats wall[NR], busy[NR][FIGS_NBUSY], wait[NR];
    double alloc[NR], resv[NR], rss[NR], h2d[NR], d2h[NR];
    for (int k = 0; k < NR; k++) {
        int f = demo_first_measured(&d, &r[k]), n = r[k].done - f;
        wall[k] = demo_step_stats(&d, &r[k], demo_wall_ms);
        alloc[k] = demo_step_max(&d, &r[k], demo_alloc_peak_gib);
        resv[k] = demo_step_max(&d, &r[k], demo_reserved_peak_gib);
        rss[k] = demo_step_max(&d, &r[k], demo_rss_peak_gib);
        double v[FIGS_NBUSY][1024], wv[1024], c[FIGS_NCOMP], b[FIGS_NBUSY];
        h2d[k] = d2h[k] = 0;
        for (int i = 0; i < n && i < 1024; i++) {
            figs_step_split(&r[k], f + i, c, b);
            for (int j = 0; j < FIGS_NBUSY; j++) v[j][i] = b[j];
            wv[i] = r[k].st[f + i].opt_wait_ms;
            h2d[k] += (double)r[k].st[f + i].h2d_bytes / 1e9 / n;
            d2h[k] += (double)r[k].st[f + i].d2h_bytes / 1e9 / n;
        }
        for (int j = 0; j < FIGS_NBUSY; j++) busy[k][j] = sc_stats_compute(v[j], n < 1024 ? n : 1024);
        wait[k] = sc_stats_compute(wv, n < 1024 ? n : 1024);
    }
    char b0[64], b1[64], b2[64], b3[64], b4[64];
    printf("\n%-11s %3s %20s %9s %9s %9s %8s %8s %16s %14s\n", "mode", "n", "step ms (95% CI)", "alloc GiB",
           "resv GiB", "RSS GiB", "h2d GB", "d2h GB", "host opt busy ms", "opt wait ms");
    for (int k = 0; k < NR; k++)
        printf("%-11s %3d %20s %9.3f %9.3f %9.3f %8.3f %8.3f %16s %14s\n", r[k].label, wall[k].n, ci(b0, wall[k], 2),
               alloc[k], resv[k], rss[k], h2d[k], d2h[k], ci(b1, busy[k][2], 2), ci(b2, wait[k], 2));

    printf("auto: predicted peak %.3f GiB, step %.2f ms; measured peak %.3f GiB, median step %.2f ms\n",
           (double)ares.peak_bytes / DEMO_GIB, ares.step_ms, alloc[3], wall[3].median);

    /* 5. CSVs. */
    figs_write_steps(&d, runs, NR, "metrics_iter.csv");
    figs_write_layer_means(&d, runs, NR, "metrics_layer.csv");
    figs_write_mem_trace(&d, runs, NR, "mem_trace.csv");
    FILE *af = demo_csv(&d, "auto_plan.csv", "mem_cap_bytes,mode,device_layers,placement,predicted_peak_bytes,"
                                             "peak_alloc_bytes,predicted_step_ms,median_ms,plan");
    char place[SC_MAX_LAYERS + 1];
    demo_auto_placement(&ares, d.cfg.num_layers, place);
    fprintf(af, "%zu,%s,%d,%s,%zu,%.0f,%.4f,%.4f,", cap, ares.mc.mode == SC_MODE_SLIDE ? "slide" : "resident",
            ares.mc.mode == SC_MODE_SLIDE ? ares.device_layers : d.cfg.num_layers, place, ares.peak_bytes,
            alloc[3] * DEMO_GIB, ares.step_ms, wall[3].median);
    for (const char *p = ares.desc; *p; p++) fputc(*p == ',' ? ';' : *p, af); /* one cell */
    fprintf(af, "\n");
    demo_close(&d, af, "auto_plan.csv");

    /* 6. Figures. */
    char sub[768];
    snprintf(sub, sizeof sub, "%s; %d measured steps per mode", setup, wall[0].n);
    int fail = 0;
    fail |= figs_wall_box(&d, runs, NR, "fig01_wall_distribution.png", "Step wall time per mode", sub);
    fail |= figs_time_breakdown(&d, runs, NR, "fig02_time_breakdown.png", "Where a step's time goes", sub);
    fail |= figs_peak_bars(&d, runs, NR, "fig03_peak_memory.png", "Peak memory per mode", sub);
    int which[3] = {0, 1, 2};
    fail |= figs_mem_timeline(&d, runs, NR, which, 3, 1, "fig04_memory_timeline.png", "Memory within a step, per mode", sub);
    figs_series fw[NR], bw[2 * NR], op[2] = {{&r[2], FIGS_OPT, "slide: host AdamW update of the layer", pl_color(2), 0,
                                              PL_M_TRIANGLE},
                                             {&r[3], FIGS_OPT, "auto: host AdamW update of the layer", pl_color(3), 0,
                                              PL_M_CROSS}};
    int nb = 0, nop = ares.mc.mode == SC_MODE_SLIDE ? 2 : 1; /* auto's own when it chose slide */
    for (int k = 0; k < NR; k++) {
        static char lab[NR][2][96];
        int mk = k == 0 ? PL_M_CIRCLE : k == 1 ? PL_M_SQUARE : k == 2 ? PL_M_TRIANGLE : PL_M_CROSS;
        fw[k] = (figs_series){&r[k], FIGS_FWD, r[k].label, pl_color(k), 0, mk};
        snprintf(lab[k][0], 96, "%.64s: backward", r[k].label);
        snprintf(lab[k][1], 96, "%.64s: recompute", r[k].label);
        bw[nb++] = (figs_series){&r[k], FIGS_BWD, lab[k][0], pl_color(k), 0, mk};
        if (figs_layer_stats(&d, &r[k], 0, FIGS_RECOMPUTE).mean > 0)
            bw[nb++] = (figs_series){&r[k], FIGS_RECOMPUTE, lab[k][1], pl_color(k), 1, PL_M_DIAMOND};
    }
    /* the resident modes update all layers in one fused step: a total per step, no per-layer split */
    char note[256];
    sc_stats fused[2] = {demo_step_stats(&d, &r[0], demo_opt_ms), demo_step_stats(&d, &r[1], demo_opt_ms)};
    snprintf(note, sizeof note, "resident / checkpoint: one fused AdamW update of all parameters, %s / %s ms per step "
             "(mean ± 95%% CI); no per-layer split is measured", ci(b0, fused[0], 3), ci(b1, fused[1], 3));
    fail |= figs_layer_chart(&d, fw, NR, "fig05_layer_forward.png", "Per-layer forward time", sub, "forward (ms)", NULL);
    fail |= figs_layer_chart(&d, bw, nb, "fig06_layer_backward_recompute.png",
                             "Per-layer backward (proper) and recompute time", sub, "ms per layer", NULL);
    fail |= figs_layer_chart(&d, op, nop, "fig07_layer_optimizer.png", "Per-layer optimizer (update) time",
                             sub, "update time per layer (ms; mean ± 95% CI over the updates)", note);
    if (fail) return 1;

    /* 7. summary.md */
    FILE *md = demo_md_begin(&d, "T1M1: resident vs checkpoint vs slide vs auto",
                             "The same model trained four ways from the same weights on the same tokens: "
                             "resident (the report's `gpu`), full activation checkpointing (`ckpt`), slide "
                             "(weights, gradients and AdamW state on the host, layers streamed to the device, "
                             "the optimizer on a host thread), and auto: the configuration the library chooses "
                             "for itself under a device memory cap (`sc_plan_auto`, as `slidecheck train --mode "
                             "auto`), trained under that cap. Means exclude the warm-up; 95% CIs use Student's t.",
                             B, T, steps);
    const char *dev = d.on_gpu ? "GPU" : "device";
    fprintf(md, "| mode | n | step wall ms (95%% CI) | median ms | peak %s alloc GiB | peak %s reserved GiB | "
                "peak RSS GiB | h2d GB/step | d2h GB/step | h2d busy ms | d2h busy ms | host optimizer busy ms | "
                "waited for optimizer ms |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n", dev, dev);
    for (int k = 0; k < NR; k++)
        fprintf(md, "| %s | %d | %s | %.2f | %.3f | %.3f | %.3f | %.3f | %.3f | %s | %s | %s | %s |\n", r[k].label,
                wall[k].n, ci(b0, wall[k], 2), wall[k].median, alloc[k], resv[k], rss[k], h2d[k], d2h[k],
                ci(b1, busy[k][0], 2), ci(b2, busy[k][1], 2), ci(b3, busy[k][2], 2), ci(b4, wait[k], 2));
    fprintf(md, "\nSlide / resident step time: ×%.2f; checkpoint / resident: ×%.2f. Peak %s reserved: slide %.3f GiB "
                "vs resident %.3f GiB. Losses bitwise identical across the four modes at all %d steps: **%s**. "
                "Busy times of copies and the host optimizer overlap the compute and are not part of the wall "
                "time; \"waited for optimizer\" is the part the step spent waiting for it. Peak RSS: true peak "
                "within each step (%s), the largest over the measured steps. The modes run one after another in "
                "one process (resident, checkpoint, slide, auto), each from a freshly created model.\n\n",
            wall[2].mean / wall[0].mean, wall[1].mean / wall[0].mean, dev, resv[2], resv[0], steps,
            bitwise ? "yes" : "NO", sc_tracer_peak_method(&r[0].tr));
    fprintf(md, "**auto** under a cap of %.3f GiB%s chose: %s; layers on the device (D) or streamed (s): `%s`. "
                "Predicted peak %.3f GiB and step %.2f ms; measured peak %.3f GiB and median step %.2f ms "
                "(auto_plan.csv).\n\n", (double)cap / DEMO_GIB, capnote, ares.desc, place,
            (double)ares.peak_bytes / DEMO_GIB, ares.step_ms, alloc[3], wall[3].median);
    demo_md_figure(md, "fig01_wall_distribution.png", "Measured step wall times per mode: box (quartiles, whiskers) and every step as a dot.");
    demo_md_figure(md, "fig02_time_breakdown.png", "Top: the compute stream's mean time per step by phase (adds up to the wall; idle = gaps between traced spans, e.g. waiting on the host); under it, the busy time of the concurrent copies and host optimizer (not added). Bottom: one representative step as a timeline, every span where it ran.");
    demo_md_figure(md, "fig03_peak_memory.png", "Largest per-step peaks over the measured steps: allocator allocated and reserved, and true peak host RSS.");
    demo_md_figure(md, "fig04_memory_timeline.png", "Allocated, reserved and host RSS against time within the step (host clock): mean ± std over the measured steps.");
    demo_md_figure(md, "fig05_layer_forward.png", "Per-layer forward time, mean ± 95% CI over the measured steps.");
    demo_md_figure(md, "fig06_layer_backward_recompute.png", "Per-layer backward proper (solid) and recompute (dashed, checkpoint only), mean ± 95% CI.");
    demo_md_figure(md, "fig07_layer_optimizer.png", "Slide's host AdamW update per layer, mean ± 95% CI over the updates; the resident modes' fused update has no per-layer value (its total is in the subtitle).");
    demo_close(&d, md, "summary.md");
    printf("wrote %s/summary.md, 7 PNGs and 4 CSVs\n", d.o.out);
    for (int k = 0; k < NR; k++) demo_run_free(&r[k]);
    free(ids);
    if (!bitwise) {
        fprintf(stderr, "t1m1: the losses differ between modes (the library promises equal bits)\n");
        return 1;
    }
    return 0;
}
