/* sweep: what each way of fitting a training step into memory costs. One chart of step time
   against peak memory for the checkpoint policies, the planner at three budgets and slide mode,
   with the Pareto frontier; then peak memory and step time against the sequence length (the
   "activation explosion" that checkpointing answers).

     build/sweep [--model tiny] [--batch B --seq T --steps N] [--seqs 32,64,128] [--mem-cap SIZE]

   Every run trains the same seeded model on the same tokens; only the way the step is computed
   changes, so every loss must be bitwise equal to policy none's at the same shape (checked: exit 1
   if not). The planner (sc_model_plan_budget) profiles a live model and plans for a budget; its
   plan trains like any other, then 2 steps under an allocator cap of that budget (does it fit?). Peak memory: the allocator's peak allocated bytes, the largest
   over the measured steps (slide: device bytes only). A run the allocator refuses under --mem-cap
   is recorded as OOM. Writes pareto.csv, seq_scaling.csv, pareto.png, seq_scaling.png and
   summary.md into --out DIR. Exit status: 0, 2 for bad flags, 1 for any other failure. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STB_TRUETYPE_IMPLEMENTATION
#define STBTT_STATIC
#include "plot.h"
#include "demo.h"

#define MAXP 16
#define MAXSEQ 12

static const char *usage =
    "usage: sweep [options]\n\n"
    "Step time against peak memory for none, full, every:2, every:4, sqrt and the three selective levels,\n"
    "the budget planner at three budgets and slide mode, with the Pareto frontier; then peak memory\n"
    "and step time against the sequence length for none, full, every:2, selective and slide.\n"
    "Checks that every loss is bitwise equal to none's.\n\n"
    "  --seqs LIST      sequence lengths (default 32,64,128 on the CPU, 256,512,1024,2048 on the GPU)\n"
    "defaults: --steps 10 --batch 4, --seq 128 on the CPU and 1024 on the GPU (--model qwen3-1.7b)\n";

static int take_flag(void *user, const char *f, const char *v)
{
    if (strcmp(f, "--seqs")) return 0;
    *(const char **)user = v;
    return 1;
}

typedef struct point {
    char label[48], policy[64], layout[3 * SC_MAX_LAYERS + 1];
    sc_mode mode;
    int color, marker, oom, n, done, bitwise, frontier; /* bitwise: 1 equal, 0 differs, -1 no reference */
    int capfit;        /* planner runs: 1 fits under a cap of its budget, -1 does not (capmsg says why) */
    char capmsg[400];
    double median, mlo, mhi, mcov, mean, ci, alloc, reserved, saved, budget; /* mlo..mhi: CI of the median */
    float loss[256];
} point;

/* "[RR]AS": brackets around each recomputed segment, else A (keep all), S (selective), M (mlp). */
static void layout_of(const sc_plan *p, char *s)
{
    for (int l = 0; l < p->num_layers; l++) {
        if (p->seg[l] < 0) { *s++ = "ASMQ"[p->keep[l]]; continue; }
        if (p->seg[l] == l) *s++ = '[';
        *s++ = 'R';
        if (l + 1 == p->num_layers || p->seg[l + 1] != p->seg[l]) *s++ = ']';
    }
    *s = 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A distribution-free CI of the median: [x_(j), x_(n+1-j)] of the sorted sample, j the largest
   whose coverage 1 - 2 P(Binomial(n, 1/2) < j) is >= 95%. Below n = 6 none reaches 95%: then
   [min, max], with its lower coverage. Returns the coverage. */
static double median_ci(double *v, int n, double *lo, double *hi)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double pk = pow(0.5, n), tail = pk, cov = 1 - 2 * tail; /* j = 1 */
    int j = 1;
    for (int k = 2; k <= n / 2; k++) {
        pk *= (double)(n - k + 2) / (k - 1); /* P(K = k - 1) */
        if (1 - 2 * (tail + pk) < 0.95) break;
        tail += pk, cov = 1 - 2 * tail, j = k;
    }
    *lo = v[j - 1], *hi = v[n - j];
    return n > 1 ? cov : 0;
}

/* Train one configuration and measure it; ref: none at the same shape, for the bitwise check. */
static point measure(const demo *d, const char *label, const char *policy, const sc_plan *plan, sc_mode mode, int B,
                     int T, int steps, const int32_t *ids, const point *ref, int color)
{
    point p;
    memset(&p, 0, sizeof p);
    snprintf(p.label, sizeof p.label, "%s", label);
    snprintf(p.policy, sizeof p.policy, "%s", policy);
    p.mode = mode, p.color = color, p.bitwise = -1;
    p.marker = mode == SC_MODE_SLIDE ? PL_M_SQUARE : plan ? PL_M_DIAMOND : PL_M_CIRCLE;
    demo_run r = demo_run_make(d, label, plan ? "none" : policy, mode, B, T, steps);
    if (plan) r.plan = *plan; /* a planner's plan: no policy string names it */
    layout_of(&r.plan, p.layout);
    printf("%s, T=%d, %s, plan %s\n", label, T, mode == SC_MODE_SLIDE ? "slide mode" : "resident", p.layout);
    if ((p.oom = demo_train(d, &r, ids, 1))) {
        char *cut = strstr(r.msg, " Largest live:"); /* the first lines of the allocator's report */
        if (cut) *cut = 0;
        printf("  -> out of memory: %s\n", r.msg);
    } else {
        sc_stats s = demo_step_stats(d, &r, demo_wall_ms);
        int first = demo_first_measured(d, &r);
        double v[256];
        p.n = s.n, p.median = s.median, p.mean = s.mean, p.ci = s.ci95;
        for (int i = first; i < r.done; i++) {
            v[i - first] = r.st[i].wall_ms;
            p.alloc = fmax(p.alloc, (double)r.st[i].alloc_peak);
            p.reserved = fmax(p.reserved, (double)r.st[i].reserved_peak);
            p.saved = fmax(p.saved, (double)r.st[i].saved);
        }
        p.mcov = median_ci(v, s.n, &p.mlo, &p.mhi);
    }
    p.done = r.done;
    for (int i = 0; i < p.done; i++) p.loss[i] = r.st[i].loss;
    if (ref && !ref->oom && !p.oom)
        p.bitwise = p.done == ref->done && !memcmp(p.loss, ref->loss, sizeof(float) * (size_t)p.done);
    demo_run_free(&r);
    return p;
}

/* The smallest cap whose usable part (less the allocator margin) holds `need` bytes. */
static size_t cap_for(size_t need, const sc_config *cfg, int B, int T)
{
    size_t c = need;
    while (sc_plan_budget_usable(c, cfg, B, T) < need) c += c / 256 + 4096;
    return c;
}

static const char *fmt_bytes(char *buf, double b, double unit)
{
    snprintf(buf, 32, unit == DEMO_GIB ? "%.2f GiB" : "%.1f MiB", b / unit);
    return buf;
}

#define CSV_COLS "n,median_ms,ci95_ms,mean_ms,median_ci_lo_ms,median_ci_hi_ms,median_ci_coverage,peak_alloc_bytes," \
                 "peak_reserved_bytes,saved_bytes"
/* The measured columns (CSV_COLS), then the bitwise check: OOM runs read OOM, unknowns empty. */
static void csv_point(FILE *f, const point *p)
{
    double v[9] = {p->median, p->ci, p->mean, p->mlo, p->mhi, p->mcov, p->alloc, p->reserved, p->saved};
    fprintf(f, ",%d", p->n);
    for (int i = 0; i < 9; i++)
        if (p->oom) fprintf(f, ",OOM");
        else if (isfinite(v[i])) fprintf(f, i < 6 ? ",%.4f" : ",%.0f", v[i]);
        else fprintf(f, ",");
    fprintf(f, ",%s", p->bitwise < 0 ? "" : p->bitwise ? "1" : "0");
}

/* One panel of pareto.png: the frontier as a staircase, each point inside the panel with the CI
   bar of its median time, and the labels of the points with lab[i]. legend: this panel holds the
   legend's entries. Returns the marker kinds drawn, as bits. */
static int pareto_panel(pl_chart *ch, const point *pt, int np, const int *order, int nf, double unit, const int *lab,
                        int legend)
{
    pl_canvas *c = ch->c;
    double fx[2 * MAXP], fy[2 * MAXP], lx[MAXP], ly[MAXP];
    const char *ll[MAXP];
    int nfl = 0, nl = 0, kinds = 0;
    for (int k = 0; k < nf; k++) { /* the staircase: right, then down */
        if (k) fx[nfl] = pt[order[k]].median, fy[nfl] = fy[nfl - 1], nfl++;
        fx[nfl] = pt[order[k]].median, fy[nfl++] = pt[order[k]].alloc / unit;
    }
    pl_chart_line(ch, fx, fy, nfl, 0x444444, 2, 1, legend && nf > 1 ? "Pareto frontier" : NULL);
    for (int i = 0; i < np; i++) {
        uint32_t col = pl_color(pt[i].color);
        double x = pt[i].median, y = pt[i].alloc / unit, px = pl_chart_px(ch, x), py = pl_chart_py(ch, y);
        double a = pl_chart_px(ch, pt[i].mlo), b = pl_chart_px(ch, pt[i].mhi);
        if (pt[i].oom || !(px >= ch->x0 && px <= ch->x1 && py >= ch->y0 && py <= ch->y1)) continue;
        if (pt[i].n >= 2) {
            pl_clip(c, ch->x0, ch->y0, ch->x1, ch->y1); /* a bar may run out of a zoomed panel */
            pl_line(c, a, py, b, py, 1.5, col), pl_line(c, a, py - 5, a, py + 5, 1.5, col);
            pl_line(c, b, py - 5, b, py + 5, 1.5, col);
            pl_unclip(c);
            pl_mark_add(c, fmax(a, ch->x0), py - 5, fmin(b, ch->x1), py + 5, PL_MARK_DATA, -1);
        }
        pl_chart_markers(ch, &x, &y, 1, col, pt[i].marker, 11, NULL);
        if (pt[i].capfit < 0) pl_chart_markers(ch, &x, &y, 1, 0xcc0000, PL_M_CROSS, 9, NULL), kinds |= 1 << PL_M_CROSS;
        kinds |= 1 << pt[i].marker;
        if (lab[i]) lx[nl] = x, ly[nl] = y, ll[nl++] = pt[i].label;
    }
    pl_chart_labels(ch, lx, ly, ll, nl, 0x222222);
    return kinds;
}

/* pareto.png: every point with the CI of its median time, the frontier as a staircase. When one
   far point (slide mode, typically) squeezes the resident runs into a sliver of the time axis, a
   second panel on the right zooms on them, and the left one labels only the points outside. */
static void pareto_png(const demo *d, const point *pt, int np, const int *order, int nf, int B, int T, double unit)
{
    pl_canvas c;
    pl_chart ch, zc;
    char sub[600], oom[400] = "";
    const point *ok = pt; /* the first run that fitted, for the subtitle */
    for (int i = np - 1; i >= 0; i--) ok = pt[i].oom ? ok : &pt[i];
    double fixed = (double)sc_model_config_fixed_bytes(&d->cfg, &d->mc) / unit, cap = (double)d->o.mem_cap / unit;
    snprintf(sub, sizeof sub, "%s. Markers: median step time of %d steps; bars: its %.0f%% CI (order statistics)",
             demo_setup_line(d, B, T), ok->n, 100 * ok->mcov);
    if (pl_figure(&c, 1200, 600, "Step time vs peak memory: checkpoint policies, planner budgets, slide", sub))
        demo_die(d, "figure");
    double xl = INFINITY, xh = -INFINITY, yl = 0, yh = fmax(fixed, cap);
    double zxl = INFINITY, zxh = -INFINITY, zyl = INFINITY, zyh = -INFINITY; /* the resident runs */
    int nres = 0, lab[MAXP] = {0}, kinds = 0;
    for (int i = 0; i < np; i++) {
        double v[3] = {pt[i].median, pt[i].mlo, pt[i].mhi}, w = pt[i].alloc / unit;
        if (pt[i].oom) {
            size_t u = strlen(oom);
            snprintf(oom + u, sizeof oom - u, "%s%.47s", u ? ", " : "out of memory: ", pt[i].label);
            continue;
        }
        pl_range_of(v, 3, &xl, &xh), pl_range_of(&w, 1, &yl, &yh);
        if (!pt[i].mode) pl_range_of(v, 3, &zxl, &zxh), pl_range_of(&w, 1, &zyl, &zyh), nres++;
    }
    int zoom = nres >= 2 && zxh - zxl < (xh - xl) / 5;
    const char *ytitle = unit == DEMO_GIB ? "peak allocated (GiB)" : "peak allocated (MiB)";
    pl_chart_init(&ch, &c, 95, 95, zoom ? 470 : 1170, 540);
    ch.pad = 0.08; /* room for the labels of the outermost points */
    pl_chart_x(&ch, xl, xh, 0, "step time (ms, median)");
    pl_chart_y(&ch, 0, yh, 0, ytitle);
    pl_chart_axes(&ch);
    pl_chart_hline(&ch, fixed, 0x999999, 1, zoom ? NULL : "weights + grads + AdamW state (resident)");
    if (cap > 0) pl_chart_hline(&ch, cap, 0xcc0000, 1, zoom ? NULL : "--mem-cap");
    pl_chart *lc = &ch; /* the panel that holds the legend */
    if (zoom) {
        pl_chart_init(&zc, &c, 575, 95, 1170, 540);
        zc.pad = 0.08;
        zyl = fmin(zyl, fixed); /* the resident floor, just under the lowest run */
        if (cap > 0 && cap >= zyl && cap <= zyh * 1.05) zyh = fmax(zyh, cap);
        pl_chart_x(&zc, zxl, zxh, 0, "step time (ms, median)");
        pl_chart_y(&zc, zyl, zyh, 0, ytitle);
        pl_chart_axes(&zc);
        pl_chart_hline(&zc, fixed, 0x999999, 1, "weights + grads + AdamW state (resident)");
        if (cap > 0) pl_chart_hline(&zc, cap, 0xcc0000, 1, "--mem-cap");
        /* the zoomed region, outlined on the left panel */
        double bx0 = pl_chart_px(&ch, zc.xlo), bx1 = pl_chart_px(&ch, zc.xhi);
        double by0 = pl_chart_py(&ch, zc.yhi), by1 = pl_chart_py(&ch, zc.ylo);
        pl_rect_outline(&c, bx0 - 3, by0 - 3, bx1 + 3, by1 + 3, 1, 0x888888);
        pl_mark_add(&c, bx0 - 3, by0 - 3, bx1 + 3, by1 + 3, PL_MARK_DATA, -1);
        pl_text(&c, (ch.x0 + ch.x1) / 2, 88, 13, 0x444444, PL_CENTER | PL_BASELINE, "all runs (grey box: zoomed on the right)");
        pl_text(&c, (zc.x0 + zc.x1) / 2, 88, 13, 0x444444, PL_CENTER | PL_BASELINE, "the resident runs, zoomed");
        for (int i = 0; i < np; i++) lab[i] = 1;
        kinds |= pareto_panel(&zc, pt, np, order, nf, unit, lab, 1);
        for (int i = 0; i < np; i++) /* the left panel labels what the zoom does not show */
            lab[i] = !(pt[i].median >= zc.xlo && pt[i].median <= zc.xhi && pt[i].alloc / unit >= zc.ylo &&
                       pt[i].alloc / unit <= zc.yhi);
        kinds |= pareto_panel(&ch, pt, np, order, nf, unit, lab, 0);
        lc = &zc;
    } else {
        for (int i = 0; i < np; i++) lab[i] = 1;
        kinds |= pareto_panel(&ch, pt, np, order, nf, unit, lab, 1);
    }
    if (kinds & 1 << PL_M_CIRCLE) pl_chart_markers(lc, NULL, NULL, 0, 0x666666, PL_M_CIRCLE, 10, "checkpoint policy");
    if (kinds & 1 << PL_M_DIAMOND) pl_chart_markers(lc, NULL, NULL, 0, pl_color(9), PL_M_DIAMOND, 10, "planner at a budget");
    if (kinds & 1 << PL_M_CROSS)
        pl_chart_markers(lc, NULL, NULL, 0, 0xcc0000, PL_M_CROSS, 9, "plan runs out of memory under a cap of its budget");
    if (kinds & 1 << PL_M_SQUARE) pl_chart_markers(lc, NULL, NULL, 0, pl_color(8), PL_M_SQUARE, 10, "slide mode (device bytes)");
    pl_chart_legend(lc);
    if (*oom) pl_text(&c, 95, 590, 14, 0xcc0000, 0, oom);
    if (pl_write_png(&c, demo_path(d, "pareto.png"))) demo_die(d, "writing pareto.png");
    pl_free(&c);
}

static const char *spol[5] = {"none", "full", "every:2", "selective", "slide"};
static const int scol[5] = {0, 1, 2, 5, 8};

/* seq_scaling.png: peak memory (left) and step time (right) against T, a line per policy. */
static void seq_png(const demo *d, point sp[5][MAXSEQ], const int *seq, int ns, int B, double unit)
{
    pl_canvas c;
    char sub[600], lab[MAXSEQ][16];
    const char *sl[MAXSEQ];
    double fixed = (double)sc_model_config_fixed_bytes(&d->cfg, &d->mc) / unit, cap = (double)d->o.mem_cap / unit;
    snprintf(sub, sizeof sub, "%s", demo_setup_line(d, B, 0));
    char *tp = strstr(sub, ", T=0"); /* T varies here */
    if (tp) memmove(tp, tp + 5, strlen(tp + 5) + 1);
    if (pl_figure(&c, 1200, 600, "Activation growth: peak memory and step time vs sequence length", sub))
        demo_die(d, "figure");
    for (int s = 0; s < ns; s++) snprintf(lab[s], 16, "%d", seq[s]), sl[s] = lab[s];
    pl_chart left;
    for (int panel = 0; panel < 2; panel++) {
        pl_chart ch;
        /* y0 115: room above the plots for two rows of legend, should no corner inside be free */
        pl_chart_init(&ch, &c, panel ? 690 : 95, 115, panel ? 1170 : 575, 540);
        pl_chart_x_categories(&ch, ns, sl, "sequence length T (tokens)");
        double lo = 0, hi = panel ? 0 : fmax(fixed, cap);
        for (int k = 0; k < 5; k++)
            for (int s = 0; s < ns; s++) {
                double v = sp[k][s].oom ? NAN : panel ? sp[k][s].mhi : sp[k][s].alloc / unit;
                pl_range_of(&v, 1, &lo, &hi);
            }
        pl_chart_y(&ch, 0, hi, 0, panel ? "step time (ms, median and its CI)" : unit == DEMO_GIB ? "peak allocated (GiB)" : "peak allocated (MiB)");
        pl_chart_axes(&ch);
        if (!panel) pl_chart_hline(&ch, fixed, 0x999999, 1, "weights + grads + AdamW");
        if (!panel && cap > 0) pl_chart_hline(&ch, cap, 0xcc0000, 1, "--mem-cap (x: OOM)");
        for (int k = 0; k < 5; k++) {
            int n = 0, no = 0;
            double xs[MAXSEQ], ys[MAXSEQ], el[MAXSEQ], eh[MAXSEQ], ox[MAXSEQ], oy[MAXSEQ];
            for (int s = 0; s < ns; s++) {
                const point *p = &sp[k][s];
                if (p->oom) ox[no] = s + 0.07 * (k - 2), oy[no++] = cap > 0 ? cap : hi; /* OOM: a cross at the cap */
                else xs[n] = s, el[n] = p->mlo, eh[n] = p->mhi, ys[n++] = panel ? p->median : p->alloc / unit;
            }
            if (panel) pl_chart_errorbars(&ch, xs, el, eh, n, pl_color(scol[k]), 8);
            pl_chart_line(&ch, xs, ys, n, pl_color(scol[k]), 2.5, k == 4, NULL);
            pl_chart_markers(&ch, xs, ys, n, pl_color(scol[k]), k == 4 ? PL_M_SQUARE : PL_M_CIRCLE, 9, spol[k]);
            if (!panel) pl_chart_markers(&ch, ox, oy, no, pl_color(scol[k]), PL_M_CROSS, 12, NULL);
        }
        if (!panel) left = ch;
    }
    pl_chart_legend(&left); /* after both panels: it must not spill onto the right one */
    if (pl_write_png(&c, demo_path(d, "seq_scaling.png"))) demo_die(d, "writing seq_scaling.png");
    pl_free(&c);
}

int main(int argc, char **argv)
{
    const char *seqs = NULL;
    demo d;
    demo_begin(&d, "sweep", argc, argv, usage, take_flag, &seqs);
    int B = d.o.batch ? d.o.batch : 4, T = d.o.seq ? d.o.seq : d.on_gpu ? 1024 : 128, steps = d.o.steps ? d.o.steps : 10;
    if (steps > 256) demo_usage_error(&d, "%s", "--steps: at most 256 for this demo");
    if (T > d.cfg.max_position) demo_usage_error(&d, "--seq %d exceeds the model's %d", T, d.cfg.max_position);
    int seq[MAXSEQ], ns = 0, maxT = T, np = 0, bad = 0;
    char buf[256], b1[32], b2[32];
    snprintf(buf, sizeof buf, "%s", seqs ? seqs : d.on_gpu ? "256,512,1024,2048" : "32,64,128");
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (ns == MAXSEQ) demo_usage_error(&d, "--seqs: at most %d lengths", MAXSEQ);
        seq[ns] = demo_parse_int(&d, "--seqs", tok, 2, d.cfg.max_position);
        maxT = seq[ns] > maxT ? seq[ns] : maxT, ns++;
    }
    if (!ns) demo_usage_error(&d, "%s", "--seqs needs at least one length");
    int32_t *ids = demo_random_tokens(&d, (size_t)B * maxT);
    double unit = d.on_gpu ? DEMO_GIB : DEMO_MIB;

    /* 1. The policies at B x T; none first: it is every other run's reference. */
    static const char *pols[8] = {"none", "full", "every:2", "every:4", "sqrt", "selective", "selective:mlp",
                                  "selective:attn"};
    point pt[MAXP];
    printf("== step time vs peak memory: B=%d T=%d, %d steps per run ==\n", B, T, steps);
    for (; np < 8; np++) pt[np] = measure(&d, pols[np], pols[np], NULL, 0, B, T, steps, ids, np ? pt : NULL, np);
    /* The planner at three budgets (caps) spaced between the smallest it accepts (at least full's
       peak) and the cap whose usable part, less the allocator margin, holds none's peak; one live
       model profiles and plans, then each plan trains from scratch. */
    double lo = pt[1].alloc, hi = pt[0].oom ? (double)d.o.mem_cap : pt[0].alloc;
    if (!pt[1].oom && hi > lo) {
        sc_model *m = NULL;
        sc_plan plan;
        sc_plan_report rep;
        memset(&rep, 0, sizeof rep);
        sc_result rc = sc_model_create(&m, &d.cfg, &d.mc, NULL);
        if (!rc) rc = sc_model_plan_budget(&plan, &rep, m, ids, B, T, (size_t)hi); /* sets rep.min_budget */
        if (!rc || rc == SC_ERROR_INVALID_ARGS) {
            size_t minc = cap_for(rep.min_budget, &d.cfg, B, T);
            lo = fmax(lo, (double)minc);
            if (!pt[0].oom) hi = (double)cap_for((size_t)hi, &d.cfg, B, T);
            for (int k = 1; k <= 3 && lo < hi; k++) {
                size_t budget = (size_t)(lo + (hi - lo) * k / 4);
                char lab[48], pol[64];
                if (sc_model_plan_budget(&plan, &rep, m, ids, B, T, budget)) {
                    printf("planner, budget %s: %s\n", fmt_bytes(b1, (double)budget, unit), sc_last_error());
                    continue;
                }
                snprintf(lab, sizeof lab, "budget %s", fmt_bytes(b1, (double)budget, unit));
                snprintf(pol, sizeof pol, "budget:%zu", budget);
                pt[np] = measure(&d, lab, pol, &plan, 0, B, T, steps, ids, pt, 9);
                pt[np].budget = (double)budget;
                demo capped = d; /* the planner's promise, tested: 2 steps under a cap of the budget */
                if (!capped.mc.mem_cap || budget < capped.mc.mem_cap) capped.mc.mem_cap = budget;
                demo_run chk = demo_run_make(&capped, "  under that cap", "none", 0, B, T, 2);
                chk.plan = plan;
                if ((pt[np].capfit = demo_train(&capped, &chk, ids, 1) ? -1 : 1) < 0) {
                    snprintf(pt[np].capmsg, sizeof pt[np].capmsg, "%.399s", chk.msg);
                    char *cut = strstr(pt[np].capmsg, " Largest live:");
                    if (cut) *cut = 0;
                    printf("  -> under a cap of its budget: out of memory: %s\n", pt[np].capmsg);
                }
                demo_run_free(&chk);
                np++;
            }
        } else printf("planner: %.300s... (no budget runs)\n", sc_last_error());
        sc_model_destroy(m);
    }
    pt[np] = measure(&d, "slide", "none", NULL, SC_MODE_SLIDE, B, T, steps, ids, pt, 8);
    np++;
    /* The Pareto frontier: the points no other point beats in both time and memory, by time. */
    int order[MAXP], nf = 0;
    for (int i = 0; i < np; i++) {
        pt[i].frontier = !pt[i].oom;
        for (int j = 0; j < np && pt[i].frontier; j++)
            if (j != i && !pt[j].oom && pt[j].median <= pt[i].median && pt[j].alloc <= pt[i].alloc &&
                (pt[j].median < pt[i].median || pt[j].alloc < pt[i].alloc))
                pt[i].frontier = 0;
        if (pt[i].frontier) order[nf++] = i;
        for (int j = nf - 1; j > 0 && pt[order[j]].median < pt[order[j - 1]].median; j--)
            { int t = order[j]; order[j] = order[j - 1], order[j - 1] = t; }
    }

    /* 2. Sequence scaling: the runs at T itself are already measured. */
    static point sp[5][MAXSEQ];
    printf("== sequence scaling: B=%d, T in %s ==\n", B, seqs ? seqs : d.on_gpu ? "256,512,1024,2048" : "32,64,128");
    for (int s = 0; s < ns; s++)
        for (int k = 0; k < 5; k++) {
            int reuse = -1;
            for (int i = 0; i < np && seq[s] == T; i++) reuse = strcmp(pt[i].label, spol[k]) ? reuse : i;
            sp[k][s] = reuse >= 0 ? pt[reuse]
                                  : measure(&d, spol[k], k == 4 ? "none" : spol[k], NULL, k == 4, B, seq[s], steps,
                                            ids, k ? &sp[0][s] : NULL, scol[k]);
        }

    FILE *f = demo_csv(&d, "pareto.csv", "policy,label,mode," CSV_COLS ",loss_bitwise_equal_to_none,on_frontier,"
                                         "budget_bytes,fits_under_budget_cap,layout");
    for (int i = 0; i < np; i++) {
        fprintf(f, "%s,%s,%s", pt[i].policy, pt[i].label, pt[i].mode ? "slide" : "resident");
        csv_point(f, &pt[i]);
        fprintf(f, ",%d,", pt[i].frontier);
        if (pt[i].budget > 0) fprintf(f, "%.0f,%d", pt[i].budget, pt[i].capfit > 0);
        else fprintf(f, ",");
        fprintf(f, ",%s\n", pt[i].layout);
        bad |= pt[i].bitwise == 0;
    }
    demo_close(&d, f, "pareto.csv");
    f = demo_csv(&d, "seq_scaling.csv", "policy,mode,seq," CSV_COLS ",loss_bitwise_equal_to_none");
    for (int k = 0; k < 5; k++)
        for (int s = 0; s < ns; s++) {
            fprintf(f, "%s,%s,%d", k == 4 ? "none" : spol[k], k == 4 ? "slide" : "resident", seq[s]);
            csv_point(f, &sp[k][s]);
            fprintf(f, "\n");
            bad |= sp[k][s].bitwise == 0;
        }
    demo_close(&d, f, "seq_scaling.csv");
    pareto_png(&d, pt, np, order, nf, B, T, unit);
    seq_png(&d, sp, seq, ns, B, unit);

    FILE *md = demo_md_begin(&d, "Sweep: step time vs peak memory, and growth with the sequence length",
                             "Every checkpoint policy, the budget planner and slide mode on the same model and tokens. "
                             "Peak memory is the allocator's peak allocated bytes over the measured steps (slide: "
                             "device bytes; its weights, gradients and AdamW state live on the host). Step times: the "
                             "median with a distribution-free CI of the median (order statistics; the CSVs also hold "
                             "the mean and its Student-t 95% CI, ci95_ms). Layout, one letter per layer: [R..] a "
                             "recomputed segment, A keep all, S selective, M selective:mlp, Q selective:attn. The planner's budgets are "
                             "spaced between the smallest it accepts (at least full's peak) and none's peak; each plan is "
                             "measured like the others, then tried for 2 steps under an allocator cap of its budget.",
                             B, T, steps);
    if (!d.on_gpu)
        fprintf(md, "On the CPU backend slide mode's \"device\" is host memory too and its transfers are memcpy: its "
                    "memory shows what a device would hold; its time says nothing about PCIe.\n\n");
    demo_md_figure(md, "pareto.png", "Step time vs peak memory; the dashed staircase is the Pareto frontier.");
    fprintf(md, "| run | layout | step ms: median [CI] | mean ± 95%% CI | peak alloc | saved activations | frontier | "
                "loss bitwise = none |\n|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < np; i++) {
        const point *p = &pt[i];
        if (p->oom) fprintf(md, "| %s | `%s` | OOM | | | | | |\n", p->label, p->layout);
        else fprintf(md, "| %s | `%s` | %.2f [%.2f, %.2f] | %.2f ± %.2f | %s | %s | %s | %s |\n", p->label, p->layout,
                     p->median, p->mlo, p->mhi, p->mean, p->ci, fmt_bytes(b1, p->alloc, unit),
                     fmt_bytes(b2, p->saved, unit), p->frontier ? "yes" : "", p->bitwise < 0 ? (i ? "n/a" : "reference") : p->bitwise ? "yes" : "**NO**");
    }
    for (int i = 0; i < np; i++)
        if (pt[i].budget > 0)
            fprintf(md, "\n- Planner at %s: 2 steps under an allocator cap of that size: %s%s%s", fmt_bytes(b1, pt[i].budget, unit),
                    pt[i].capfit > 0 ? "fitted." : "**out of memory**: ", pt[i].capfit > 0 ? "" : pt[i].capmsg,
                    pt[i].capfit > 0 ? "" : " (the planner counts tensor bytes; the allocator's segments hold more)");
    fprintf(md, "\n\n");
    demo_md_figure(md, "seq_scaling.png", "Peak memory (left) and step time (right) against the sequence length.");
    fprintf(md, "| T | run | step ms: median [CI] | peak alloc | loss bitwise = none |\n|---|---|---|---|---|\n");
    for (int s = 0; s < ns; s++)
        for (int k = 0; k < 5; k++) {
            const point *p = &sp[k][s];
            if (p->oom) fprintf(md, "| %d | %s | OOM | | |\n", seq[s], spol[k]);
            else fprintf(md, "| %d | %s | %.2f [%.2f, %.2f] | %s | %s |\n", seq[s], spol[k], p->median, p->mlo, p->mhi,
                         fmt_bytes(b1, p->alloc, unit), p->bitwise < 0 ? (k ? "n/a" : "reference") : p->bitwise ? "yes" : "**NO**");
        }
    demo_close(&d, md, "summary.md");
    free(ids);
    printf("wrote %s: pareto.csv, seq_scaling.csv, pareto.png, seq_scaling.png, summary.md\n", d.o.out);
    if (bad) fprintf(stderr, "sweep: some losses are not bitwise equal to policy none's (see the CSVs)\n");
    return bad;
}
