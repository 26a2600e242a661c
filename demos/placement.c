/* placement: where --mode auto puts the model, cap by cap, and how close its prediction comes.

     build/placement [--model qwen3-1.7b --seq 2048 --batch 4] [--caps 8,16,24,32] [--steps N]

   Given a device memory cap, sc_plan_auto profiles a 2-layer copy of the model for a moment and
   chooses the fastest configuration that fits: resident or slide mode, the checkpoint plan per
   layer, and in slide mode how many of the first layers stay on the device, the prefetch depth,
   the LM head's handling and the host optimizer's threads. This demo asks it at several caps,
   trains each choice for a few steps under its cap, and draws what it chose beside what it
   promised:

     1. resident mode with no recompute, uncapped (unless --mem-cap): the fastest a step can be,
        the floor line of the figure, and the reference for the bits;
     2. the caps: --caps, or five from the smallest cap that any configuration fits to the one
        that holds the uncapped choice (both from sc_plan_auto);
     3. per cap: sc_plan_auto, then `steps` training steps of its choice under an allocator cap
        of that size; its losses must be bitwise equal to resident's (every choice keeps the
        arithmetic), else exit 1.

   Writes placement.png, placement.csv and summary.md into --out DIR. Exit status: 0, 2 for
   bad flags, 1 for any other failure. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STB_TRUETYPE_IMPLEMENTATION
#define STBTT_STATIC
#include "plot.h"
#include "demo.h"

#define MAXCAPS 12

static const char *usage =
    "usage: placement [options]\n\n"
    "What --mode auto chooses under each of several device memory caps (layers on the device or\n"
    "streamed, checkpoint plan, prefetch, LM head, host threads), its predicted step time and peak\n"
    "against the measured ones, and resident mode's step as the floor. Checks that every choice\n"
    "trains with resident's loss bits.\n\n"
    "  --caps LIST      caps in GiB, e.g. 8,16,24,32 (a size such as 40MiB also works; default:\n"
    "                   five from the smallest cap that fits to the one that holds resident mode)\n"
    "defaults: --batch 4, --seq 128 and 4 steps on the CPU, --seq 1024 and 6 steps on the GPU\n";

/* One cap: what auto chose, what it predicted, what the run measured. */
typedef struct cap_row {
    size_t cap;
    int fits, oom;             /* fits: a configuration fits (sc_plan_auto); oom: its run did not */
    sc_plan_auto_result res;
    char msg[512], placement[SC_MAX_LAYERS + 1], layout[SC_MAX_LAYERS + 1];
    double peak, median, mean, ci; /* measured: the largest peak allocated, step ms */
    int n, bitwise;
} cap_row;

/* One letter a layer for the checkpoint plan: R recomputed (in a segment), else what the layer
   keeps: A all, S selective, M selective:mlp, Q selective:attn, P selective:proj. */
static void plan_letters(const sc_plan *p, char *s)
{
    for (int l = 0; l < p->num_layers; l++) s[l] = p->seg[l] >= 0 ? 'R' : "ASMQP"[p->keep[l] % SC_KEEP_COUNT];
    s[p->num_layers] = 0;
}

/* The smallest cap whose usable part (the planner's count, less the allocator's margin) holds
   `need` bytes. */
static size_t cap_for(size_t need, const sc_config *cfg, int B, int T)
{
    size_t c = need;
    while (sc_plan_budget_usable(c, cfg, B, T) < need) c += c / 256 + 4096;
    return c;
}

static const char *fmt_size(char *buf, double b, double unit)
{
    snprintf(buf, 32, unit == DEMO_GIB ? "%.2f GiB" : "%.1f MiB", b / unit);
    return buf;
}

/* placement.png: top, per cap, the layers as a column of cells (D on the device, streamed
   otherwise; the letter is the checkpoint plan) with the LM head on top; bottom, per cap, the
   predicted and measured step times, resident's measured step as the floor line. */
static void placement_png(const demo *d, const cap_row *row, int nc, double floor_ms, int B, int T, int steps,
                          double unit)
{
    const int L = d->cfg.num_layers;
    const uint32_t dev_rgb = pl_color(0), str_rgb = pl_mix(pl_color(1), 0xFFFFFF, 0.35);
    pl_canvas c;
    char sub[700], lab[MAXCAPS][48], b1[32], b2[32];
    const char *cl[MAXCAPS];
    snprintf(sub, sizeof sub, "%s. Each cap: sc_plan_auto's choice, trained %d steps under an allocator cap of that size",
             demo_setup_line(d, B, T), steps);
    if (pl_figure(&c, 1400, 1000, "What --mode auto chooses under a memory cap, and how well it predicts", sub))
        demo_die(d, "figure");
    for (int i = 0; i < nc; i++) snprintf(lab[i], sizeof lab[i], "cap %s", fmt_size(b1, (double)row[i].cap, unit)), cl[i] = lab[i];

    /* top: the placement, one column of cells per cap */
    pl_chart top;
    pl_chart_init(&top, &c, 95, 150, 1370, 500);
    top.pad = 0;
    pl_chart_x_categories(&top, nc, cl, NULL);
    pl_chart_y(&top, -0.5, L + 0.5, 0, "layer (top row: LM head)");
    pl_chart_axes(&top);
    pl_text(&c, 95, 118, 15, 0x222222, PL_BOLD | PL_BASELINE,
            "Placement: each layer on the device for the whole step, or streamed through slide's window");
    for (int i = 0; i < nc; i++) {
        const cap_row *r = &row[i];
        double xc = pl_chart_px(&top, i), slot = pl_chart_px(&top, 1) - pl_chart_px(&top, 0);
        double w = fmin(slot * 0.5, 220), xl = xc - w / 2, xr = xc + w / 2;
        if (!r->fits) {
            pl_text(&c, xc, (top.y0 + top.y1) / 2, 13, 0xcc0000, PL_CENTER | PL_MIDDLE, "no configuration fits");
            continue;
        }
        for (int l = 0; l <= L; l++) { /* l == L: the LM head (and embedding) */
            double ya = pl_chart_py(&top, l - 0.5), yb = pl_chart_py(&top, l + 0.5);
            int on_dev = l < L ? r->placement[l] == 'D' : r->res.mc.mode != SC_MODE_SLIDE || r->res.mc.slide_keep_head;
            pl_rect(&c, xl, yb, xr, ya, on_dev ? dev_rgb : str_rgb);
            pl_rect_alpha(&c, xl, yb - 0.5, xr, yb + 0.5, 0xFFFFFF, 0.9); /* a hairline between layers */
            char t[2] = {l < L ? r->layout[l] : 'H', 0};
            if (ya - yb >= 9) pl_text(&c, xc, (ya + yb) / 2, fmin(12, ya - yb - 1), on_dev ? 0xFFFFFF : 0x333333,
                                      PL_CENTER | PL_MIDDLE, t);
        }
        pl_mark_add(&c, xl, top.y0, xr, top.y1, PL_MARK_DATA, -1);
        /* under the cap's label: the mode, the device layers and head, the peaks */
        char s1[96], s2[96];
        double ty = top.cat_bottom + 16;
        if (r->res.mc.mode == SC_MODE_SLIDE)
            snprintf(s1, sizeof s1, "slide, prefetch %d, %d on device, head %s", r->res.mc.slide_prefetch,
                     r->res.device_layers, r->res.mc.slide_keep_head ? "kept" : r->res.mc.slide_head_once ? "once" : "streamed");
        else snprintf(s1, sizeof s1, "resident");
        snprintf(s2, sizeof s2, "peak: predicted %s, measured %s", fmt_size(b1, (double)r->res.peak_bytes, unit),
                 r->oom ? "OOM" : fmt_size(b2, r->peak, unit));
        pl_text_fit(&c, xc, ty, 12.5, slot - 8, 0x222222, PL_CENTER | PL_MIDDLE | PL_BOLD, s1);
        pl_text_fit(&c, xc, ty + 17, 12, slot - 8, r->oom ? 0xcc0000 : 0x444444, PL_CENTER | PL_MIDDLE, s2);
    }
    /* the key, under the title of the panel */
    double kx = 95, ky = 136;
    pl_rect(&c, kx, ky - 6, kx + 14, ky + 6, dev_rgb);
    pl_text(&c, kx + 20, ky, 12, 0x222222, PL_LEFT | PL_MIDDLE, "on the device");
    kx += 30 + pl_text_width(&c, 12, 0, "on the device");
    pl_rect(&c, kx, ky - 6, kx + 14, ky + 6, str_rgb);
    pl_text(&c, kx + 20, ky, 12, 0x222222, PL_LEFT | PL_MIDDLE, "streamed (host-resident, uploaded as needed)");
    kx += 30 + pl_text_width(&c, 12, 0, "streamed (host-resident, uploaded as needed)");
    pl_text(&c, kx, ky, 12, 0x444444, PL_LEFT | PL_MIDDLE,
            "letters: checkpoint plan, A keep all, S selective, M sel:mlp, Q sel:attn, P sel:proj, R recomputed; H head");

    /* bottom: predicted and measured step time per cap, resident's as the floor */
    pl_chart bot;
    pl_chart_init(&bot, &c, 95, 625, 1370, 935);
    pl_text(&c, 95, 598, 15, 0x222222, PL_BOLD | PL_BASELINE, "Step time: predicted by sc_plan_auto vs measured");
    pl_chart_x_categories(&bot, nc, cl, "device memory cap");
    double v[2 * MAXCAPS], e[2 * MAXCAPS], lo = 0, hi = floor_ms > 0 ? floor_ms : 0;
    for (int i = 0; i < nc; i++) {
        v[2 * i] = row[i].fits ? row[i].res.step_ms : NAN;
        v[2 * i + 1] = row[i].fits && !row[i].oom ? row[i].median : NAN;
        e[2 * i] = NAN, e[2 * i + 1] = row[i].n >= 2 ? row[i].ci : NAN;
        double top_v[2] = {v[2 * i], v[2 * i + 1] + (isfinite(e[2 * i + 1]) ? e[2 * i + 1] : 0)};
        pl_range_of(top_v, 2, &lo, &hi);
    }
    pl_chart_y(&bot, 0, hi * 1.3, 0, "step time (ms)");
    pl_chart_axes(&bot);
    const uint32_t cols[2] = {pl_mix(pl_color(4), 0xFFFFFF, 0.45), pl_color(4)};
    const char *ser[2] = {"predicted (sc_plan_auto)", "measured (median; bar: mean's 95% CI)"};
    pl_chart_bars(&bot, v, e, nc, 2, 0, cols, ser);
    for (int i = 0; i < nc; i++)
        for (int s = 0; s < 2; s++) {
            if (!isfinite(v[2 * i + s])) continue;
            double slot = pl_chart_px(&bot, 1) - pl_chart_px(&bot, 0), x = pl_chart_px(&bot, i) - slot * 0.2 + slot * 0.4 * s;
            char t[32];
            snprintf(t, sizeof t, "%.1f", v[2 * i + s]);
            double py = pl_chart_py(&bot, v[2 * i + s]), inside = bot.y1 - py > 24; /* in the bar when it is tall enough */
            pl_text(&c, x - slot * 0.1, inside ? py + 5 : py - 4, 11, inside ? 0xFFFFFF : 0x222222,
                    PL_CENTER | (inside ? PL_TOP : PL_BASELINE), t);
        }
    if (floor_ms > 0) pl_chart_hline(&bot, floor_ms, 0xcc0000, 1, "resident, no recompute, uncapped: measured (the floor)");
    pl_chart_legend(&bot);
    if (pl_write_png(&c, demo_path(d, "placement.png"))) demo_die(d, "writing placement.png");
    pl_free(&c);
}

int main(int argc, char **argv)
{
    demo_flag caps_opt = {"--caps", NULL};
    demo d;
    demo_begin(&d, "placement", argc, argv, usage, demo_take_one, &caps_opt);
    const char *caps_flag = caps_opt.value;
    int B = d.o.batch ? d.o.batch : 4, T = d.o.seq ? d.o.seq : d.on_gpu ? 1024 : 128;
    int steps = d.o.steps ? d.o.steps : d.on_gpu ? 6 : 4;
    if (T > d.cfg.max_position) demo_usage_error(&d, "--seq %d exceeds the model's %d", T, d.cfg.max_position);
    int32_t *ids = demo_random_tokens(&d, (size_t)B * T);
    double unit = d.on_gpu ? DEMO_GIB : DEMO_MIB;
    char b1[32], b2[32], b3[32];
    printf("placement: %s\n", demo_setup_line(&d, B, T));

    /* 1. Resident, no recompute: the floor, and the reference for the bits. */
    demo_run ref = demo_run_make(&d, "resident", "none", SC_MODE_RESIDENT, B, T, steps);
    double floor_ms = 0;
    if (demo_train(&d, &ref, ids, 1)) printf("  resident: out of memory (no floor line): %.300s\n", ref.msg);
    else floor_ms = demo_step_stats(&d, &ref, demo_wall_ms).median;

    /* 2. The caps: given, or five from the smallest that fits to the one holding the uncapped choice. */
    static cap_row row[MAXCAPS];
    size_t caps[MAXCAPS];
    int nc = 0;
    if (caps_flag) nc = demo_parse_caps(&d, "--caps", caps_flag, caps, MAXCAPS);
    else {
        sc_plan_auto_result top;
        char msg[512];
        if (demo_auto_choose(&d, d.o.mem_cap, B, T, ids, &top, msg, sizeof msg)) {
            fprintf(stderr, "placement: nothing fits --mem-cap: %s\n", msg);
            return 1;
        }
        size_t lo = top.min_cap, hi = d.o.mem_cap ? d.o.mem_cap : cap_for(top.peak_bytes, &d.cfg, B, T);
        nc = hi > lo ? 5 : 1;
        for (int i = 0; i < nc; i++) caps[i] = lo + (size_t)((double)(hi - lo) * i / (nc > 1 ? nc - 1 : 1));
        printf("caps from the smallest that fits (%s) to the one that holds the uncapped choice (%s: %s)\n",
               fmt_size(b1, (double)lo, unit), fmt_size(b2, (double)hi, unit), top.desc);
    }

    /* 3. Per cap: choose, train under the cap, compare. */
    int bad = 0;
    for (int i = 0; i < nc; i++) {
        cap_row *r = &row[i];
        r->cap = caps[i], r->bitwise = -1;
        printf("cap %s: ", fmt_size(b1, (double)r->cap, unit));
        if (demo_auto_choose(&d, r->cap, B, T, ids, &r->res, r->msg, sizeof r->msg)) {
            printf("%s\n", r->msg);
            continue;
        }
        r->fits = 1;
        demo_auto_placement(&r->res, d.cfg.num_layers, r->placement);
        plan_letters(&r->res.plan, r->layout);
        printf("plan: %s  predicted peak %s, step %.2f ms\n", r->res.desc, fmt_size(b2, (double)r->res.peak_bytes, unit),
               r->res.step_ms);
        demo ad;
        char label[48];
        snprintf(label, sizeof label, "auto @ %s", b1);
        demo_run run = demo_auto_run(&ad, &d, &r->res, label, B, T, steps);
        if ((r->oom = demo_train(&ad, &run, ids, 1))) {
            char *cut = strstr(run.msg, " Largest live:"); /* the first lines of the allocator's report */
            if (cut) *cut = 0;
            snprintf(r->msg, sizeof r->msg, "%.500s", run.msg);
            printf("  -> out of memory under its cap: %s\n", r->msg);
        } else {
            sc_stats s = demo_step_stats(&ad, &run, demo_wall_ms);
            r->n = s.n, r->median = s.median, r->mean = s.mean, r->ci = s.ci95;
            r->peak = demo_step_max(&ad, &run, demo_alloc_peak_gib) * DEMO_GIB;
            if (!ref.oom) r->bitwise = demo_losses_bitwise(&run, &ref);
            bad |= r->bitwise == 0;
            printf("  measured: peak %s, median step %.2f ms; losses bitwise = resident's: %s\n",
                   fmt_size(b2, r->peak, unit), r->median, r->bitwise < 0 ? "n/a" : r->bitwise ? "yes" : "NO");
        }
        demo_run_free(&run);
    }

    /* 4. The CSV, the figure, summary.md */
    FILE *f = demo_csv(&d, "placement.csv", "cap_bytes,fits,device_layers,num_layers,placement,layout,"
                                             "predicted_peak_bytes,peak_alloc_bytes,predicted_step_ms,median_ms,"
                                             "mean_ms,ci95_ms,n,loss_bitwise_equal_to_resident,plan");
    for (int i = 0; i < nc; i++) {
        const cap_row *r = &row[i];
        int ndev = 0;
        for (int l = 0; l < d.cfg.num_layers && r->fits; l++) ndev += r->placement[l] == 'D';
        fprintf(f, "%zu,%d,%d,%d,%s,%s,", r->cap, r->fits, ndev, d.cfg.num_layers, r->fits ? r->placement : "",
                r->fits ? r->layout : "");
        if (r->fits) fprintf(f, "%zu,", r->res.peak_bytes);
        else fprintf(f, ",");
        if (r->fits && !r->oom) fprintf(f, "%.0f,%.4f,%.4f,%.4f,%.4f,%d,%s,", r->peak, r->res.step_ms, r->median, r->mean,
                                        isfinite(r->ci) ? r->ci : 0.0, r->n, r->bitwise < 0 ? "" : r->bitwise ? "1" : "0");
        else if (r->fits) fprintf(f, "OOM,%.4f,OOM,OOM,OOM,0,,", r->res.step_ms);
        else fprintf(f, ",,,,,0,,");
        for (const char *p = r->fits ? r->res.desc : r->msg; *p; p++) fputc(*p == ',' ? ';' : *p, f); /* one cell */
        fprintf(f, "\n");
    }
    demo_close(&d, f, "placement.csv");
    placement_png(&d, row, nc, floor_ms, B, T, steps, unit);

    FILE *md = demo_md_begin(&d, "Placement: what --mode auto chooses under a memory cap",
                             "For each device memory cap, `sc_plan_auto` profiles a 2-layer copy of the model and "
                             "chooses the fastest configuration that fits: resident or slide mode, the checkpoint plan "
                             "per layer, and in slide mode how many of the first layers stay on the device, the "
                             "prefetch depth, the LM head's handling and the host optimizer's threads. Each choice then "
                             "trains under an allocator cap of that size; its losses must equal resident mode's bit for "
                             "bit. Peak: the allocator's peak allocated bytes, the largest over the measured steps. "
                             "Step: the median of the measured steps.",
                             B, T, steps);
    if (!d.on_gpu)
        fprintf(md, "On the CPU backend the \"device\" is host memory too and slide's copies are memcpy: the "
                    "placement is what a device of that size would get; the times say nothing about PCIe.\n\n");
    demo_md_figure(md, "placement.png", "Top: per cap, the layers on the device (blue) or streamed (orange), "
                   "letters the checkpoint plan, the LM head on top. Bottom: predicted and measured step time; "
                   "the red line is resident mode's measured step with no cap.");
    if (floor_ms > 0) fprintf(md, "Resident mode, no recompute, uncapped: median step %.2f ms, peak %s.\n\n", floor_ms,
                              fmt_size(b1, demo_step_max(&d, &ref, demo_alloc_peak_gib) * DEMO_GIB, unit));
    else fprintf(md, "Resident mode, no recompute, ran out of memory: no floor.\n\n");
    fprintf(md, "| cap | choice | placement (D device, s streamed) | checkpoints | peak predicted | peak measured | "
                "step ms predicted | step ms measured (median; mean ± 95%% CI) | loss bitwise = resident |\n"
                "|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nc; i++) {
        const cap_row *r = &row[i];
        if (!r->fits) {
            fprintf(md, "| %s | %s | | | | | | | |\n", fmt_size(b1, (double)r->cap, unit), r->msg);
            continue;
        }
        char ci[64];
        fprintf(md, "| %s | %s | `%s` | `%s` | %s | %s | %.2f | %s | %s |\n", fmt_size(b1, (double)r->cap, unit),
                r->res.desc, r->placement, r->layout, fmt_size(b2, (double)r->res.peak_bytes, unit),
                r->oom ? "**OOM**" : fmt_size(b3, r->peak, unit), r->res.step_ms,
                r->oom ? "" : (snprintf(ci, sizeof ci, "%.2f (%.2f ± %.2f)", r->median, r->mean, isfinite(r->ci) ? r->ci : 0.0), ci),
                r->bitwise < 0 ? "n/a" : r->bitwise ? "yes" : "**NO**");
    }
    fprintf(md, "\nCheckpoint letters, one per layer: A keep all, S selective, M selective:mlp, Q selective:attn, "
                "P selective:proj, R recomputed.\n");
    demo_close(&d, md, "summary.md");
    demo_run_free(&ref);
    free(ids);
    printf("wrote %s: placement.csv, placement.png, summary.md\n", d.o.out);
    if (bad) fprintf(stderr, "placement: some losses are not bitwise equal to resident mode's\n");
    return bad;
}
