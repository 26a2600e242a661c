/* figs_sweep.h - build/sweep's figure recipes and CSV writers: the measured point, the CI of a
   median, pareto.png, seq_scaling.png, pareto.csv and seq_scaling.csv.

   Include it after demo.h. demos/sweep.c measures the points and tells the story; this header only
   formats and draws what was measured (bench/sweep_replot.c redraws a
   past run's CSVs with the same pareto_png and seq_png). Peak memory: the allocator's peak
   allocated bytes over the measured steps (slide mode: device bytes only). */
#ifndef DEMOS_FIGS_SWEEP_H
#define DEMOS_FIGS_SWEEP_H

#define MAXP 24
#define MAXSEQ 12

/* One measured run: a policy, a planner's plan or slide mode at one shape. */
typedef struct point {
    char label[48], policy[64], layout[3 * SC_MAX_LAYERS + 1];
    sc_mode mode;
    int color, marker, oom, n, done, bitwise, frontier; /* bitwise: 1 equal, 0 differs, -1 no reference */
    int capfit;        /* planner runs: 1 fits under a cap of its budget, -1 does not (capmsg says why) */
    char capmsg[400];
    double auto_cap, pred_peak, pred_ms; /* --mode auto runs: the cap, sc_plan_auto's predictions */
    char auto_desc[256];               /* and its choice in words */
    double median, mlo, mhi, mcov, mean, ci, alloc, reserved, saved, budget; /* mlo..mhi: CI of the median */
    float loss[256];
} point;

/* "[RR]AS": brackets around each recomputed segment, else A (keep all), S (selective), M (mlp),
   Q (attn), P (proj). */
static void layout_of(const sc_plan *p, char *s)
{
    for (int l = 0; l < p->num_layers; l++) {
        if (p->seg[l] < 0) { *s++ = "ASMQP"[p->keep[l] % SC_KEEP_COUNT]; continue; }
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

/* pareto.csv: one row per point, in the order measured. */
static void pareto_csv(const demo *d, const point *pt, int np)
{
    FILE *f = demo_csv(d, "pareto.csv", "policy,label,mode," CSV_COLS ",loss_bitwise_equal_to_none,on_frontier,"
                                        "budget_bytes,fits_under_budget_cap,layout,auto_cap_bytes,"
                                        "auto_predicted_peak_bytes,auto_predicted_step_ms");
    for (int i = 0; i < np; i++) {
        fprintf(f, "%s,%s,%s", pt[i].policy, pt[i].label, pt[i].mode ? "slide" : "resident");
        csv_point(f, &pt[i]);
        fprintf(f, ",%d,", pt[i].frontier);
        if (pt[i].budget > 0) fprintf(f, "%.0f,%d", pt[i].budget, pt[i].capfit > 0);
        else fprintf(f, ",");
        fprintf(f, ",%s", pt[i].layout);
        if (pt[i].auto_cap > 0) fprintf(f, ",%.0f,%.0f,%.4f\n", pt[i].auto_cap, pt[i].pred_peak, pt[i].pred_ms);
        else fprintf(f, ",,,\n");
    }
    demo_close(d, f, "pareto.csv");
}

/* The sequence-scaling runs, in the order drawn: their policies (slide: slide mode with policy
   none) and palette colours, each the colour of the same run in pareto.png. */
static const char *spol[5] = {"none", "full", "every:2", "selective", "slide"};
static const int scol[5] = {0, 1, 2, 5, 8};

/* seq_scaling.csv: one row per policy and sequence length, policy by policy. */
static void seq_csv(const demo *d, point sp[5][MAXSEQ], const int *seq, int ns)
{
    FILE *f = demo_csv(d, "seq_scaling.csv", "policy,mode,seq," CSV_COLS ",loss_bitwise_equal_to_none");
    for (int k = 0; k < 5; k++)
        for (int s = 0; s < ns; s++) {
            fprintf(f, "%s,%s,%d", k == 4 ? "none" : spol[k], k == 4 ? "slide" : "resident", seq[s]);
            csv_point(f, &sp[k][s]);
            fprintf(f, "\n");
        }
    demo_close(d, f, "seq_scaling.csv");
}

/* --mode auto's points (colour -1): a colour of their own, the palette's ten being taken */
#define PARETO_AUTO_RGB 0x111111

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
        uint32_t col = pt[i].color < 0 ? PARETO_AUTO_RGB : pl_color(pt[i].color);
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
    if (pl_figure(&c, 1200, 600, "Step time vs peak memory: checkpoint policies, planner budgets, slide, --mode auto", sub))
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
    if (kinds & 1 << PL_M_TRIANGLE)
        pl_chart_markers(lc, NULL, NULL, 0, PARETO_AUTO_RGB, PL_M_TRIANGLE, 11, "--mode auto under a cap (its own choice)");
    if (kinds & 1 << PL_M_CROSS)
        pl_chart_markers(lc, NULL, NULL, 0, 0xcc0000, PL_M_CROSS, 9, "plan runs out of memory under a cap of its budget");
    if (kinds & 1 << PL_M_SQUARE) pl_chart_markers(lc, NULL, NULL, 0, pl_color(8), PL_M_SQUARE, 10, "slide mode (device bytes)");
    pl_chart_legend(lc);
    if (*oom) pl_text(&c, 95, 590, 14, 0xcc0000, 0, oom);
    if (pl_write_png(&c, demo_path(d, "pareto.png"))) demo_die(d, "writing pareto.png");
    pl_free(&c);
}

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
            /* later policies drawn thinner and smaller: where two coincide (full and every:2 at
               this batch), the one beneath shows around the one above */
            pl_chart_line(&ch, xs, ys, n, pl_color(scol[k]), 4.0 - 0.6 * k, k == 4, NULL);
            pl_chart_markers(&ch, xs, ys, n, pl_color(scol[k]), k == 4 ? PL_M_SQUARE : PL_M_CIRCLE,
                             k == 4 ? 9 : 13 - 2 * k, spol[k]);
            if (!panel) pl_chart_markers(&ch, ox, oy, no, pl_color(scol[k]), PL_M_CROSS, 12, NULL);
        }
        if (!panel) left = ch;
    }
    pl_chart_legend(&left); /* after both panels: it must not spill onto the right one */
    if (pl_write_png(&c, demo_path(d, "seq_scaling.png"))) demo_die(d, "writing seq_scaling.png");
    pl_free(&c);
}

#endif /* DEMOS_FIGS_SWEEP_H */
