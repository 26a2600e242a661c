/* figs.h - figure recipes and CSV writers that several demos share.

   Include it after demo.h. Every recipe takes measured runs (demo_run, after demo_train) and
   draws one PNG with plot.h; it returns 0, or -1 with a message on stderr. Nothing here invents a
   value: a quantity the tracer did not measure is left out and the figure says so.

   Where the numbers come from
     - per-step phase totals and per-(layer, phase) cells: the tracer (sc_tracer_step_get,
       sc_tracer_layer_ms), over the measured steps [demo_first_measured, done);
     - individual spans (the host optimizer's per-layer updates in slide mode, the timeline of one
       step): the tracer's span list (sc_tracer_span_get);
     - memory over time within a step: demo_mem_band / demo_mem_events (host clock).

   Backward "proper" is the BWD phase minus any RECOMPUTE span nested inside a BWD span. This
   build times recompute beside the layer's backward (sibling spans), so nothing is subtracted;
   the code finds out from the spans rather than assuming it. */
#ifndef DEMOS_FIGS_H
#define DEMOS_FIGS_H

#define FIGS_W 1280
#define FIGS_H 720

/* Per-layer quantities. TOTAL = fwd + bwd proper + recompute (the whole backward). */
typedef enum figs_metric { FIGS_FWD, FIGS_BWD, FIGS_RECOMPUTE, FIGS_TOTAL, FIGS_OPT, FIGS_NMETRIC } figs_metric;
static const char *const figs_metric_name[FIGS_NMETRIC] = {"fwd", "bwd", "recompute", "total", "opt"};

/* Phase colours, the same in every figure. */
#define FIGS_C_FWD 0x4C78A8
#define FIGS_C_LOSS 0xB279A2
#define FIGS_C_BWD 0xF58518
#define FIGS_C_REC 0xE45756
#define FIGS_C_OPT 0x54A24B
#define FIGS_C_WAIT 0x9D9D9D
#define FIGS_C_GAP 0xD9D9D9
#define FIGS_C_H2D 0x72B7B2
#define FIGS_C_D2H 0xD4A017

/* ---- spans and per-layer values ------------------------------------------------------------ */

/* Span j (absolute index) of the tracer. */
static sc_tracer_span_info figs__span(const demo_run *r, int64_t j)
{
    sc_tracer_span_info x;
    memset(&x, 0, sizeof x);
    x.parent = -1;
    sc_tracer_span_get(&r->tr, j, &x);
    return x;
}

/* The spans of step s: [*first, *first + *count). */
static void figs__step_spans(const demo_run *r, int s, int64_t *first, int64_t *count)
{
    const sc_step_metrics *m = sc_tracer_step_get(&r->tr, s);
    *first = m ? m->span_first : 0;
    *count = m ? m->span_count : 0;
}

/* Milliseconds of RECOMPUTE spans of step s that run inside a BWD span of `layer` (-2: any). */
static double figs__rec_in_bwd(const demo_run *r, int s, int layer)
{
    int64_t f, n;
    double ms = 0;
    figs__step_spans(r, s, &f, &n);
    for (int64_t j = f; j < f + n; j++) {
        sc_tracer_span_info x = figs__span(r, j);
        if (x.phase != SC_PHASE_RECOMPUTE || !x.counts_phase) continue;
        for (int a = x.parent; a >= 0; a = figs__span(r, a).parent) {
            sc_tracer_span_info p = figs__span(r, a);
            if (p.phase == SC_PHASE_BWD) {
                if (layer == -2 || (p.layer == layer && p.counts_layer)) ms += x.dur_ms;
                break;
            }
        }
    }
    return ms;
}

/* Value of a per-layer metric in step s (ms). OPT is not a per-step cell: see figs_layer_stats. */
DEMO_DEF double figs_layer_value(const demo_run *r, int s, int l, figs_metric k)
{
    double fwd = sc_tracer_layer_ms(&r->tr, s, l, SC_PHASE_FWD);
    double rec = sc_tracer_layer_ms(&r->tr, s, l, SC_PHASE_RECOMPUTE);
    double bwd = sc_tracer_layer_ms(&r->tr, s, l, SC_PHASE_BWD) - figs__rec_in_bwd(r, s, l);
    switch (k) {
    case FIGS_FWD: return fwd;
    case FIGS_BWD: return bwd;
    case FIGS_RECOMPUTE: return rec;
    case FIGS_TOTAL: return fwd + bwd + rec;
    default: return sc_tracer_layer_ms(&r->tr, s, l, SC_PHASE_OPT);
    }
}

/* Statistics of a per-layer metric over the measured steps. FIGS_OPT is per update: every
   optimizer span of layer l (the host optimizer's, in slide mode) handed to a measured step;
   a resident run updates all layers in one fused span (layer -1), so its n is 0. */
DEMO_DEF sc_stats figs_layer_stats(const demo *d, const demo_run *r, int l, figs_metric k)
{
    int first = demo_first_measured(d, r), n = 0, cap = 0;
    double *v = NULL;
    for (int s = first; s < r->done; s++) {
        int64_t f = 0, c = 1;
        if (k == FIGS_OPT) figs__step_spans(r, s, &f, &c);
        for (int64_t j = f; j < f + c; j++) {
            double x;
            if (k != FIGS_OPT) x = figs_layer_value(r, s, l, k);
            else {
                sc_tracer_span_info sp = figs__span(r, j);
                if (sp.phase != SC_PHASE_OPT || sp.layer != l || !sp.counts_layer) continue;
                x = sp.dur_ms;
            }
            if (n == cap) {
                double *w = (double *)realloc(v, sizeof(double) * (size_t)(cap = cap ? 2 * cap : 64));
                if (!w) demo_die(d, "host memory");
                v = w;
            }
            v[n++] = x;
        }
    }
    sc_stats st = sc_stats_compute(v, n);
    free(v);
    return st;
}

/* Step-level time split of step s. The compute stream (stream 0) in exclusive parts that add up
   to the wall time: c[0] fwd, c[1] lm head + loss, c[2] bwd proper, c[3] recompute, c[4]
   optimizer on the compute stream (resident modes), c[5] waits (slide: waiting for an upload),
   c[6] unattributed (wall minus the rest: launch and host gaps). And the work on other streams,
   which runs concurrently and is not part of that sum: busy[0] h2d copies, busy[1] d2h copies,
   busy[2] host optimizer (sums of span durations handed to the step). */
#define FIGS_NCOMP 7
#define FIGS_NBUSY 3
static const char *const figs_comp_name[FIGS_NCOMP] = {"forward", "LM head + loss", "backward", "recompute",
                                                       "optimizer", "waiting for uploads", "idle / unattributed"};
static const uint32_t figs_comp_rgb[FIGS_NCOMP] = {FIGS_C_FWD, FIGS_C_LOSS, FIGS_C_BWD, FIGS_C_REC,
                                                   FIGS_C_OPT, FIGS_C_WAIT, FIGS_C_GAP};
static const char *const figs_busy_name[FIGS_NBUSY] = {"h2d copies", "d2h copies", "host optimizer"};
static const uint32_t figs_busy_rgb[FIGS_NBUSY] = {FIGS_C_H2D, FIGS_C_D2H, 0x2E6B30};

DEMO_DEF void figs_step_split(const demo_run *r, int s, double c[FIGS_NCOMP], double busy[FIGS_NBUSY])
{
    static const int slot[SC_PHASE_COUNT] = {0, 2, 3, 4, -1, -1, 1, 5, -1}; /* fwd bwd rec opt h2d d2h loss other comm */
    int64_t f, n;
    figs__step_spans(r, s, &f, &n);
    for (int i = 0; i < FIGS_NCOMP; i++) c[i] = 0;
    for (int i = 0; i < FIGS_NBUSY; i++) busy[i] = 0;
    for (int64_t j = f; j < f + n; j++) {
        sc_tracer_span_info x = figs__span(r, j);
        if (!x.counts_phase) continue;
        if (x.stream == 0 && slot[x.phase] >= 0) c[slot[x.phase]] += x.dur_ms;
        else if (x.stream != 0 && x.phase == SC_PHASE_H2D) busy[0] += x.dur_ms;
        else if (x.stream != 0 && x.phase == SC_PHASE_D2H) busy[1] += x.dur_ms;
        else if (x.stream != 0 && x.phase == SC_PHASE_OPT) busy[2] += x.dur_ms;
    }
    c[2] -= figs__rec_in_bwd(r, s, -2);
    double sum = 0;
    for (int i = 0; i < 6; i++) sum += c[i];
    c[6] = r->st[s].wall_ms - sum;
}

/* Difference of means b - a with a 95% CI (Welch: unequal variances, Satterthwaite df). */
DEMO_DEF double figs_welch(sc_stats a, sc_stats b, double *ci95)
{
    double va = a.std * a.std / a.n, vb = b.std * b.std / b.n, se = sqrt(va + vb);
    double df = (va + vb) * (va + vb) / (va * va / (a.n - 1) + vb * vb / (b.n - 1));
    *ci95 = a.n > 1 && b.n > 1 && se > 0 ? sc_student_t_quantile(0.975, df) * se : NAN;
    return b.mean - a.mean;
}

/* The measured step whose wall time is closest to the median: "a representative step". */
DEMO_DEF int figs_median_step(const demo *d, const demo_run *r)
{
    sc_stats w = demo_step_stats(d, r, demo_wall_ms);
    int best = demo_first_measured(d, r);
    for (int s = best; s < r->done; s++)
        if (fabs(r->st[s].wall_ms - w.median) < fabs(r->st[best].wall_ms - w.median)) best = s;
    return best;
}

/* ---- CSV ------------------------------------------------------------------------------------- */

/* layer, n, mean_ms, std_ms, ci95_ms, ci_lo, ci_hi for one run and metric. */
DEMO_DEF void figs_write_layer_ci(const demo *d, const demo_run *r, figs_metric k, const char *name)
{
    FILE *f = demo_csv(d, name, "layer,n,mean_ms,std_ms,ci95_ms,ci_lo,ci_hi");
    for (int l = 0; l < d->cfg.num_layers; l++) {
        sc_stats s = figs_layer_stats(d, r, l, k);
        fprintf(f, "%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f\n", l, s.n, s.mean, s.std, s.ci95, s.mean - s.ci95,
                s.mean + s.ci95);
    }
    demo_close(d, f, name);
}

/* Every memory event of every step: run, step, event, t_ms, allocated, reserved, rss (bytes). */
DEMO_DEF void figs_write_mem_trace(const demo *d, demo_run *const *runs, int nr, const char *name)
{
    FILE *f = demo_csv(d, name, "run,step,event,t_ms,allocated_bytes,reserved_bytes,rss_bytes,tag");
    for (int k = 0; k < nr; k++) {
        sc_tracer_mem_event ev;
        for (int64_t i = 0; !sc_tracer_mem_get(&runs[k]->tr, i, &ev); i++)
            if (ev.step >= 0)
                fprintf(f, "\"%s\",%lld,%lld,%.6f,%lld,%lld,%lld,\"%s\"\n", runs[k]->label, (long long)ev.step,
                        (long long)ev.event, ev.t_ms, (long long)ev.allocated, (long long)ev.reserved,
                        (long long)ev.rss, ev.tag);
    }
    demo_close(d, f, name);
}

/* One row per run and step: what demo_train measured, the compute stream's split and the busy
   time of the other streams (figs_step_split), slide mode's bytes and optimizer wait. */
DEMO_DEF void figs_write_steps(const demo *d, demo_run *const *runs, int nr, const char *name)
{
    FILE *f = demo_csv(d, name,
                       "run,step,measured,loss,wall_ms,fwd_ms,loss_ms,bwd_ms,recompute_ms,opt_ms,wait_ms,"
                       "unattributed_ms,h2d_busy_ms,d2h_busy_ms,host_opt_busy_ms,opt_wait_ms,alloc_peak_bytes,"
                       "reserved_peak_bytes,alloc_end_bytes,reserved_end_bytes,rss_peak_bytes,rss_end_bytes,"
                       "saved_bytes,h2d_bytes,d2h_bytes");
    for (int k = 0; k < nr; k++) {
        const demo_run *r = runs[k];
        for (int s = 0; s < r->done; s++) {
            const demo_step *t = &r->st[s];
            double c[FIGS_NCOMP], b[FIGS_NBUSY];
            figs_step_split(r, s, c, b);
            fprintf(f, "\"%s\",%d,%d,%.9g,%.6f", r->label, s, s >= demo_first_measured(d, r), (double)t->loss,
                    t->wall_ms);
            for (int i = 0; i < FIGS_NCOMP; i++) fprintf(f, ",%.6f", c[i]);
            for (int i = 0; i < FIGS_NBUSY; i++) fprintf(f, ",%.6f", b[i]);
            fprintf(f, ",%.6f,%lld,%lld,%lld,%lld,%lld,%lld,%zu,%llu,%llu\n", t->opt_wait_ms,
                    (long long)t->alloc_peak, (long long)t->reserved_peak, (long long)t->alloc_end,
                    (long long)t->reserved_end, (long long)t->rss_peak, (long long)t->rss_end, t->saved,
                    (unsigned long long)t->h2d_bytes, (unsigned long long)t->d2h_bytes);
        }
    }
    demo_close(d, f, name);
}

/* One row per run, step and layer: fwd, bwd proper, recompute, total (ms). */
DEMO_DEF void figs_write_layer_steps(const demo *d, demo_run *const *runs, int nr, const char *name)
{
    FILE *f = demo_csv(d, name, "run,step,measured,layer,fwd_ms,bwd_ms,recompute_ms,total_ms");
    for (int k = 0; k < nr; k++)
        for (int s = 0; s < runs[k]->done; s++)
            for (int l = 0; l < d->cfg.num_layers; l++)
                fprintf(f, "\"%s\",%d,%d,%d,%.6f,%.6f,%.6f,%.6f\n", runs[k]->label, s,
                        s >= demo_first_measured(d, runs[k]), l, figs_layer_value(runs[k], s, l, FIGS_FWD),
                        figs_layer_value(runs[k], s, l, FIGS_BWD), figs_layer_value(runs[k], s, l, FIGS_RECOMPUTE),
                        figs_layer_value(runs[k], s, l, FIGS_TOTAL));
    demo_close(d, f, name);
}

/* One row per run and layer: n, mean, 95% CI half-width of every per-layer metric (the
   optimizer's per update; empty where nothing was measured). */
DEMO_DEF void figs_write_layer_means(const demo *d, demo_run *const *runs, int nr, const char *name)
{
    char head[1024] = "run,layer";
    for (int m = 0; m < FIGS_NMETRIC; m++) {
        size_t u = strlen(head);
        snprintf(head + u, sizeof head - u, ",%s_n,%s_mean_ms,%s_ci95_ms", figs_metric_name[m],
                 figs_metric_name[m], figs_metric_name[m]);
    }
    FILE *f = demo_csv(d, name, head);
    for (int k = 0; k < nr; k++)
        for (int l = 0; l < d->cfg.num_layers; l++) {
            fprintf(f, "\"%s\",%d", runs[k]->label, l);
            for (int m = 0; m < FIGS_NMETRIC; m++) {
                sc_stats s = figs_layer_stats(d, runs[k], l, (figs_metric)m);
                if (s.n) fprintf(f, ",%d,%.6f,%.6f", s.n, s.mean, s.ci95);
                else fprintf(f, ",0,,");
            }
            fprintf(f, "\n");
        }
    demo_close(d, f, name);
}

/* ---- figures ----------------------------------------------------------------------------------- */

/* A canvas with title and subtitle and one chart in the usual place. */
static int figs__open(pl_canvas *c, pl_chart *ch, int w, int h, const char *title, const char *sub)
{
    if (pl_figure(c, w, h, title, sub)) return -1;
    pl_chart_init(ch, c, 110, 100, w - 40, h - 80);
    return 0;
}

static int figs__close(pl_canvas *c, const demo *d, const char *png)
{
    int rc = pl_write_png(c, demo_path(d, png));
    pl_free(c);
    return rc;
}

/* One curve of a per-layer chart: a run's metric, with its 95% CI as error bars. */
typedef struct figs_series {
    const demo_run *r;
    figs_metric k;
    const char *label;
    uint32_t rgb;
    int dashed, marker;
} figs_series;

/* Per-layer mean ± 95% CI (Student's t over the measured steps) of several series. A series
   with no measurement (n == 0 everywhere) is left out. note (may be NULL): a line of text in the
   top left corner of the plot. */
DEMO_DEF int figs_layer_chart(const demo *d, const figs_series *se, int ns, const char *png, const char *title,
                              const char *sub, const char *ytitle, const char *note)
{
    int L = d->cfg.num_layers;
    double *x = (double *)malloc(sizeof(double) * (size_t)L * 4), *m = x + L, *lo = x + 2 * L, *hi = x + 3 * L;
    char **names = (char **)calloc((size_t)L, sizeof(char *));
    if (!x || !names) demo_die(d, "host memory");
    for (int l = 0; l < L; l++)
        if ((names[l] = (char *)malloc(12))) snprintf(names[l], 12, "%d", l);
    pl_canvas c;
    pl_chart ch;
    if (figs__open(&c, &ch, FIGS_W, FIGS_H, title, sub)) return free(x), -1;
    double ylo = 0, yhi = 0, dodge = fmin(0.08, 0.5 / (ns > 1 ? ns : 1));
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            pl_chart_x_categories(&ch, L, (const char *const *)names, "decoder layer");
            pl_chart_y(&ch, 0, yhi * 1.3, 0, ytitle); /* headroom for the legend */
            pl_chart_axes(&ch);
        }
        for (int i = 0; i < ns; i++) {
            int any = 0;
            for (int l = 0; l < L; l++) {
                sc_stats s = figs_layer_stats(d, se[i].r, l, se[i].k);
                x[l] = l + (i - (ns - 1) / 2.0) * dodge; /* side by side, so that the CIs do not hide each other */
                m[l] = s.n ? s.mean : NAN;
                lo[l] = s.n > 1 ? s.mean - s.ci95 : m[l];
                hi[l] = s.n > 1 ? s.mean + s.ci95 : m[l];
                any |= s.n > 0;
            }
            if (!any) continue;
            if (pass == 0) {
                pl_range_of(hi, L, &ylo, &yhi);
                continue;
            }
            pl_chart_errorbars(&ch, x, lo, hi, L, se[i].rgb, 4);
            pl_chart_line(&ch, x, m, L, se[i].rgb, 2, se[i].dashed, se[i].label);
            pl_chart_markers(&ch, x, m, L, se[i].rgb, se[i].marker, 7, NULL);
        }
    }
    if (note) pl_chart_text(&ch, -0.4, yhi * 1.25, 13, 0x333333, PL_LEFT | PL_TOP, note);
    pl_chart_legend(&ch);
    for (int l = 0; l < L; l++) free(names[l]);
    free(names);
    free(x);
    return figs__close(&c, d, png);
}

/* Per-layer difference of means b - a of metric k, bars with Welch 95% CI; the three largest
   increases are labelled. */
DEMO_DEF int figs_layer_delta_chart(const demo *d, const demo_run *a, const demo_run *b, figs_metric k,
                                    const char *png, const char *title, const char *sub, const char *ytitle)
{
    int L = d->cfg.num_layers;
    double *v = (double *)malloc(sizeof(double) * (size_t)L * 3), *e = v + L, *x = v + 2 * L;
    if (!v) demo_die(d, "host memory");
    double lo = 0, hi = 0;
    for (int l = 0; l < L; l++) {
        v[l] = figs_welch(figs_layer_stats(d, a, l, k), figs_layer_stats(d, b, l, k), &e[l]);
        x[l] = l;
        double ends[2] = {v[l] - (isfinite(e[l]) ? e[l] : 0), v[l] + (isfinite(e[l]) ? e[l] : 0)};
        pl_range_of(ends, 2, &lo, &hi);
    }
    pl_canvas c;
    pl_chart ch;
    if (figs__open(&c, &ch, FIGS_W, FIGS_H, title, sub)) return free(v), -1;
    char **names = (char **)calloc((size_t)L, sizeof(char *));
    const char **labs = (const char **)names;
    for (int l = 0; l < L && names; l++) {
        names[l] = (char *)malloc(16);
        if (names[l]) snprintf(names[l], 16, "%d", l);
    }
    pl_chart_x_categories(&ch, L, labs, "decoder layer");
    double pad = (hi - lo) * 0.12 + 1e-9;
    pl_chart_y(&ch, lo < 0 ? lo - pad : 0, hi + pad, 0, ytitle);
    pl_chart_axes(&ch);
    uint32_t col = FIGS_C_REC;
    const char *series = "mean difference, 95% CI (Welch)";
    pl_chart_bars(&ch, v, e, L, 1, 0, &col, &series);
    pl_chart_hline(&ch, 0, 0x444444, 0, NULL);
    /* the three largest means: label them with their values */
    int idx[3] = {-1, -1, -1};
    for (int t = 0; t < 3 && t < L; t++)
        for (int l = 0; l < L; l++) {
            int used = 0;
            for (int u = 0; u < t; u++) used |= idx[u] == l;
            if (!used && (idx[t] < 0 || v[l] > v[idx[t]])) idx[t] = l;
        }
    char tl[3][48];
    const char *tlab[3];
    double tx[3], ty[3];
    int nt = 0;
    for (int t = 0; t < 3 && idx[t] >= 0; t++, nt++) {
        int l = idx[t];
        snprintf(tl[t], sizeof tl[t], "L%d: %+.3g ms", l, v[l]);
        tlab[t] = tl[t], tx[t] = l, ty[t] = v[l] + (isfinite(e[l]) ? e[l] : 0);
    }
    pl_chart_labels(&ch, tx, ty, tlab, nt, 0x222222);
    pl_chart_legend(&ch);
    for (int l = 0; l < L && names; l++) free(names[l]);
    free(names);
    free(v);
    return figs__close(&c, d, png);
}

/* Wall time of every step, one line per run; the warm-up steps are drawn hollow and left out of
   the dashed means. */
DEMO_DEF int figs_step_wall_chart(const demo *d, demo_run *const *runs, int nr, const char *png, const char *title,
                                  const char *sub)
{
    pl_canvas c;
    pl_chart ch;
    if (figs__open(&c, &ch, FIGS_W, FIGS_H, title, sub)) return -1;
    int smax = 1;
    double lo = 0, hi = 0, all = 0;
    for (int k = 0; k < nr; k++) {
        if (runs[k]->done > smax) smax = runs[k]->done;
        for (int s = 0; s < runs[k]->done; s++) {
            if (s >= demo_first_measured(d, runs[k])) pl_range_of(&runs[k]->st[s].wall_ms, 1, &lo, &hi);
            all = fmax(all, runs[k]->st[s].wall_ms);
        }
    }
    /* a slow warm-up (first kernels, first touches) would flatten the measured steps: above
       twice their largest it is written at the top instead of drawn */
    double top = all > 2 * hi ? hi * 1.35 : all * 1.25;
    pl_chart_x(&ch, 0.5, smax + 0.5, 0, "training step");
    pl_chart_y(&ch, 0, top, 0, "step wall time (ms)");
    pl_chart_axes(&ch);
    char lab[8][160]; /* legend labels live until pl_chart_legend */
    for (int k = 0; k < nr && k < 8; k++) {
        const demo_run *r = runs[k];
        int f = demo_first_measured(d, r), n = r->done;
        double *x = (double *)malloc(sizeof(double) * (size_t)(2 * n + 2)), *y = x + n;
        if (!x) demo_die(d, "host memory");
        for (int s = 0; s < n; s++) x[s] = s + 1, y[s] = r->st[s].wall_ms;
        sc_stats w = demo_step_stats(d, r, demo_wall_ms);
        snprintf(lab[k], sizeof lab[k], "%s: mean %.4g ms ± %.2g (95%% CI, n=%d)", r->label, w.mean, w.ci95, w.n);
        pl_chart_line(&ch, x + f, y + f, n - f, pl_color(k), 1.5, 0, NULL);
        pl_chart_markers(&ch, x + f, y + f, n - f, pl_color(k), k % 2 ? PL_M_SQUARE : PL_M_CIRCLE, 7, lab[k]);
        for (int s = 0; s < f; s++) {
            char t[192];
            if (y[s] <= top) continue;
            snprintf(t, sizeof t, "%.64s, warm-up step %d: %.4g ms (off scale)", r->label, s + 1, y[s]);
            pl_chart_text(&ch, x[s] + 0.1, top - (top - 0) * (0.03 + 0.05 * k), 12, pl_color(k), PL_LEFT | PL_TOP, t);
        }
        if (f > 0) pl_chart_markers(&ch, x, y, f, pl_color(k), PL_M_CROSS, 9, k ? NULL : "warm-up steps (not in the stats)");
        pl_chart_hline(&ch, w.mean, pl_color(k), 1, NULL);
        free(x);
    }
    pl_chart_legend(&ch);
    return figs__close(&c, d, png);
}

/* b - a per step (the same step index of two runs), bars; the dashed line is the difference of
   the means over the measured steps, with its Welch 95% CI in the legend. */
DEMO_DEF int figs_step_delta_chart(const demo *d, const demo_run *a, const demo_run *b, const char *png,
                                   const char *title, const char *sub)
{
    int n = a->done < b->done ? a->done : b->done, f = demo_first_measured(d, a);
    if (n <= f) return 0;
    double *v = (double *)malloc(sizeof(double) * (size_t)n);
    char **lab = (char **)calloc((size_t)n, sizeof(char *));
    if (!v || !lab) demo_die(d, "host memory");
    double lo = 0, hi = 0;
    for (int s = f; s < n; s++) {
        v[s - f] = b->st[s].wall_ms - a->st[s].wall_ms;
        pl_range_of(&v[s - f], 1, &lo, &hi);
        lab[s - f] = (char *)malloc(12);
        if (lab[s - f]) snprintf(lab[s - f], 12, "%d", s + 1);
    }
    double ci, dm = figs_welch(demo_step_stats(d, a, demo_wall_ms), demo_step_stats(d, b, demo_wall_ms), &ci);
    pl_canvas c;
    pl_chart ch;
    if (figs__open(&c, &ch, FIGS_W, FIGS_H, title, sub)) return free(v), -1;
    pl_chart_x_categories(&ch, n - f, (const char **)lab, "training step (after the warm-up)");
    double pad = (hi - lo) * 0.12 + 1e-9;
    pl_chart_y(&ch, lo < 0 ? lo - pad : 0, hi + pad, 0, "step wall time difference (ms)");
    pl_chart_axes(&ch);
    uint32_t col = pl_color(1);
    char sl[160], ml[160];
    snprintf(sl, sizeof sl, "%s − %s, per step", b->label, a->label);
    snprintf(ml, sizeof ml, "difference of means: %+.4g ms ± %.2g (95%% CI, Welch)", dm, ci);
    const char *sll = sl;
    pl_chart_bars(&ch, v, NULL, n - f, 1, 0, &col, &sll);
    pl_chart_hline(&ch, 0, 0x444444, 0, NULL);
    pl_chart_hline(&ch, dm, 0x222222, 1, ml);
    pl_chart_legend(&ch);
    for (int s = 0; s < n - f; s++) free(lab[s]);
    free(lab);
    free(v);
    return figs__close(&c, d, png);
}

/* Memory over time within a step: one row of panels per counter (0 GPU allocated, 1 GPU
   reserved, 2 host RSS), each run's mean over the measured steps as a line with a ± 1 std band.
   split = 0: the runs overlaid in one panel per row; split = 1: one column per run, each with
   its own time axis (for runs of very different lengths) and a y axis shared along the row. */
DEMO_DEF int figs_mem_timeline(const demo *d, demo_run *const *runs, int nr, const int *which, int nw, int split,
                               const char *png, const char *title, const char *sub)
{
    const char *ytitle[3] = {d->on_gpu ? "GPU allocated (GiB)" : "device allocated (GiB)",
                             d->on_gpu ? "GPU reserved (GiB)" : "device reserved (GiB)", "host RSS (GiB)"};
    enum { G = 240 };
    double t[G], mean[G], sd[G], lo[G], hi[G], tmax[8] = {0};
    int ncol = split ? nr : 1, H = 125 + 300 * nw, colw = (FIGS_W - 130) / ncol;
    if (nr > 8) nr = 8;
    pl_canvas c;
    if (pl_figure(&c, FIGS_W, H, title, sub)) return -1;
    for (int k = 0; k < nr; k++) {
        demo_mem_band(d, runs[k], 0, G, t, mean, sd);
        tmax[split ? k : 0] = fmax(tmax[split ? k : 0], t[G - 1]);
    }
    for (int p = 0; p < nw; p++) {
        double ylo = 0, yhi = 0, y0 = 110 + 300 * p;
        for (int k = 0; k < nr; k++) {
            demo_mem_band(d, runs[k], which[p], G, t, mean, sd);
            for (int i = 0; i < G; i++) hi[i] = (mean[i] + sd[i]) / DEMO_GIB;
            pl_range_of(hi, G, &ylo, &yhi);
        }
        for (int col = 0; col < ncol; col++) {
            pl_chart ch;
            double x0 = 110 + col * colw + (col ? 30 : 0);
            pl_chart_init(&ch, &c, x0, y0, 110 + (col + 1) * colw - 30, y0 + 215);
            pl_chart_x(&ch, 0, tmax[col] > 0 ? tmax[col] : 1, 0,
                       p == nw - 1 ? "time within the step (ms, host clock)" : "");
            pl_chart_y(&ch, 0, yhi * (split ? 1.12 : 1.3) + 1e-6, 0, col ? "" : ytitle[which[p]]);
            pl_chart_axes(&ch);
            if (split && p == 0)
                pl_text(&c, (ch.x0 + ch.x1) / 2, y0 - 12, 15, pl_color(col), PL_CENTER | PL_BASELINE | PL_BOLD,
                        runs[col]->label);
            char lab[8][128]; /* legend labels live until pl_chart_legend */
            for (int k = split ? col : 0; k < (split ? col + 1 : nr); k++) {
                demo_mem_band(d, runs[k], which[p], G, t, mean, sd);
                for (int i = 0; i < G; i++) {
                    lo[i] = (mean[i] - sd[i]) / DEMO_GIB, hi[i] = (mean[i] + sd[i]) / DEMO_GIB;
                    mean[i] /= DEMO_GIB;
                }
                snprintf(lab[k], sizeof lab[k], "%s (mean ± std)", runs[k]->label);
                pl_chart_band(&ch, t, lo, hi, G, pl_color(k), 0.2, NULL);
                pl_chart_line(&ch, t, mean, G, pl_color(k), 2, k % 2, p || split ? NULL : lab[k]);
            }
            pl_chart_legend(&ch);
        }
    }
    return figs__close(&c, d, png);
}

/* Box plot of every measured step's wall time per run, the steps themselves as dots. */
DEMO_DEF int figs_wall_box(const demo *d, demo_run *const *runs, int nr, const char *png, const char *title,
                           const char *sub)
{
    pl_canvas c;
    pl_chart ch;
    if (figs__open(&c, &ch, FIGS_W / 4 * 3, FIGS_H, title, sub)) return -1;
    const char *lab[8];
    double lo = 0, hi = 0;
    for (int k = 0; k < nr && k < 8; k++) {
        lab[k] = runs[k]->label;
        for (int s = demo_first_measured(d, runs[k]); s < runs[k]->done; s++)
            pl_range_of(&runs[k]->st[s].wall_ms, 1, &lo, &hi);
    }
    double vmin = hi;
    for (int k = 0; k < nr && k < 8; k++)
        for (int s = demo_first_measured(d, runs[k]); s < runs[k]->done; s++)
            vmin = fmin(vmin, runs[k]->st[s].wall_ms);
    /* modes ten times apart (slide vs resident) would flatten the fast ones: use a log axis */
    int logy = vmin > 0 && hi > 8 * vmin;
    double ytext = logy ? hi * 1.9 : hi * 1.07;
    pl_chart_x_categories(&ch, nr, lab, "mode");
    if (logy) pl_chart_y(&ch, vmin / 1.5, hi * 2.6, 1, "step wall time (ms, log scale)");
    else pl_chart_y(&ch, 0, hi * 1.12, 0, "step wall time (ms)");
    pl_chart_axes(&ch);
    for (int k = 0; k < nr; k++) {
        const demo_run *r = runs[k];
        int f = demo_first_measured(d, r), n = r->done - f;
        double *v = (double *)malloc(sizeof(double) * (size_t)(2 * n + 1)), *x = v + n;
        if (!v) demo_die(d, "host memory");
        for (int i = 0; i < n; i++) v[i] = r->st[f + i].wall_ms, x[i] = k + 0.28 + 0.04 * ((i * 7) % 5 - 2);
        pl_chart_box(&ch, k, v, n, 70, pl_color(k));
        pl_chart_markers(&ch, x, v, n, pl_color(k), PL_M_CIRCLE, 5, NULL);
        sc_stats w = demo_step_stats(d, r, demo_wall_ms);
        char t[96];
        snprintf(t, sizeof t, "mean %.4g ± %.2g ms (95%% CI, n=%d)", w.mean, w.ci95, w.n);
        pl_chart_text(&ch, k, ytext, 13, 0x222222, PL_CENTER | PL_BASELINE, t);
        free(v);
    }
    return figs__close(&c, d, png);
}

/* Grouped bars: the largest GPU allocated and reserved and the true peak host RSS over the
   measured steps, per run. */
DEMO_DEF int figs_peak_bars(const demo *d, demo_run *const *runs, int nr, const char *png, const char *title,
                            const char *sub)
{
    double v[3 * 8];
    const char *lab[8], *ser[3] = {d->on_gpu ? "GPU allocated (peak)" : "device allocated (peak)",
                                   d->on_gpu ? "GPU reserved (peak)" : "device reserved (peak)", "host RSS (true peak)"};
    char txt[3 * 8][24];
    const char *tl[3 * 8];
    double tx[3 * 8], hi = 0, lo = 0;
    uint32_t col[3] = {pl_color(0), pl_color(1), pl_color(2)};
    if (nr > 8) nr = 8;
    for (int k = 0; k < nr; k++) {
        lab[k] = runs[k]->label;
        v[3 * k] = demo_step_max(d, runs[k], demo_alloc_peak_gib);
        v[3 * k + 1] = demo_step_max(d, runs[k], demo_reserved_peak_gib);
        v[3 * k + 2] = demo_step_max(d, runs[k], demo_rss_peak_gib);
        pl_range_of(v + 3 * k, 3, &lo, &hi);
        for (int j = 0; j < 3; j++) {
            snprintf(txt[3 * k + j], sizeof txt[0], "%.3g", v[3 * k + j]);
            tl[3 * k + j] = txt[3 * k + j];
            tx[3 * k + j] = k + (j - 1) * 0.8 / 3;
        }
    }
    pl_canvas c;
    pl_chart ch;
    if (figs__open(&c, &ch, FIGS_W, FIGS_H, title, sub)) return -1;
    pl_chart_x_categories(&ch, nr, lab, "mode");
    pl_chart_y(&ch, 0, hi * 1.18, 0, "GiB");
    pl_chart_axes(&ch);
    pl_chart_bars(&ch, v, NULL, nr, 3, 0, col, ser);
    pl_chart_labels(&ch, tx, v, tl, 3 * nr, 0x222222);
    pl_chart_legend(&ch);
    return figs__close(&c, d, png);
}

/* A chart whose y axis is rows of lanes (row 0 at the top), x in ms: the grid lines fall
   between the rows and the numeric y labels are cleared for the lane names. */
static void figs__lanes(pl_chart *ch, pl_canvas *c, double x0, double y0, double x1, double y1, double xmax,
                        int nrow, const char *xtitle)
{
    pl_chart_init(ch, c, x0, y0, x1, y1);
    ch->pad = 0;
    pl_chart_x(ch, 0, xmax, 0, xtitle);
    pl_chart_y(ch, 0, nrow, 0, NULL);
    pl_chart_axes(ch);
    pl_rect(c, 0, y0 - 9, floor(x0) - 1, y1 + 7, 0xFFFFFF);
}

/* Text after the end of a bar at data x; inside the bar's end (white) when it would leave the plot. */
static void figs__bar_text(pl_canvas *c, const pl_chart *ch, double x, double py, double size, const char *t)
{
    double px = pl_chart_px(ch, x);
    if (px + 8 + pl_text_width(c, size, 0, t) <= ch->x1) pl_text(c, px + 8, py, size, 0x222222, PL_LEFT | PL_MIDDLE, t);
    else pl_text(c, px - 8, py, size, 0xFFFFFF, PL_RIGHT | PL_MIDDLE | PL_BOLD, t);
}

/* Pixel rows of lane `row`, from fraction a to b of its height (0 its top). */
static void figs__lane_y(const pl_chart *ch, int row, double a, double b, double *top, double *bottom)
{
    double n = ch->yhi;
    *top = pl_chart_py(ch, n - row - a);
    *bottom = pl_chart_py(ch, n - row - b);
}

/* Where a step's time goes. Top: per run, the mean over the measured steps of the compute
   stream's exclusive parts (they add up to the mean wall time), and under it, lanes for the
   work that runs concurrently on other streams and threads (h2d and d2h copies, the host
   optimizer): their busy time per step, drawn beside the wall bar, never stacked on it.
   Bottom: one representative step (the measured step nearest the median wall) per run as a
   timeline, every span where it ran: overlap is drawn as overlap. */
DEMO_DEF int figs_time_breakdown(const demo *d, demo_run *const *runs, int nr, const char *png, const char *title,
                                 const char *sub)
{
    enum { MAXR = 8 };
    static const char *const lane_name[4] = {"compute", "h2d copies", "d2h copies", "host optimizer"};
    if (nr > MAXR) nr = MAXR;
    double comp[MAXR][FIGS_NCOMP], busy[MAXR][FIGS_NBUSY], wait[MAXR], hi = 0, tmax = 0;
    int lane[MAXR][4], nl = 0, used[FIGS_NCOMP] = {0}, anybusy = 0;
    for (int k = 0; k < nr; k++) {
        const demo_run *r = runs[k];
        int f = demo_first_measured(d, r), n = r->done - f;
        memset(comp[k], 0, sizeof comp[k]);
        memset(busy[k], 0, sizeof busy[k]);
        wait[k] = 0;
        for (int s = f; s < r->done; s++) {
            double c[FIGS_NCOMP], b[FIGS_NBUSY];
            figs_step_split(r, s, c, b);
            for (int i = 0; i < FIGS_NCOMP; i++) comp[k][i] += c[i] / n;
            for (int i = 0; i < FIGS_NBUSY; i++) busy[k][i] += b[i] / n;
            wait[k] += r->st[s].opt_wait_ms / n;
        }
        double tot = 0;
        for (int i = 0; i < FIGS_NCOMP; i++) tot += comp[k][i], used[i] |= comp[k][i] > 0.0005 * comp[k][0];
        hi = fmax(hi, tot);
        for (int i = 0; i < 4; i++) {
            lane[k][i] = i == 0 || busy[k][i - 1] > 0 ? nl++ : -1;
            if (i) hi = fmax(hi, busy[k][i - 1]), anybusy |= busy[k][i - 1] > 0;
        }
        tmax = fmax(tmax, r->st[figs_median_step(d, r)].wall_ms);
    }
    pl_canvas c;
    int W = FIGS_W + 160, X0 = 270, H = 230 + 2 * (60 + 34 * nl);
    if (pl_figure(&c, W, H, title, sub)) return -1;

    /* legend of the colours, above both panels */
    double lx = X0, ly = 84;
    for (int i = 0; i < FIGS_NCOMP + FIGS_NBUSY; i++) {
        int b = i >= FIGS_NCOMP;
        const char *nm = b ? figs_busy_name[i - FIGS_NCOMP] : figs_comp_name[i];
        if (b ? !anybusy : !used[i]) continue;
        if (lx + 40 + pl_text_width(&c, 13, 0, nm) > W - 20) lx = X0, ly += 20; /* wrap */
        lx = pl_legend_item(&c, lx, ly, b ? figs_busy_rgb[i - FIGS_NCOMP] : figs_comp_rgb[i], nm);
    }

    /* top: mean per step; the wall bar, and thinner lanes for the concurrent work */
    pl_chart ch;
    double p0 = ly + 36, p1 = p0 + 34 * nl;
    pl_text(&c, X0, p0 - 8, 14, 0x111111, PL_LEFT | PL_BASELINE | PL_BOLD,
            "Mean per step: the compute stream's phases add up to the wall; concurrent work is shown beside it");
    figs__lanes(&ch, &c, X0, p0 + 8, W - 40, p1, hi * 1.45, nl, "ms per step (mean over the measured steps)");
    for (int k = 0; k < nr; k++) {
        double y0, y1, x = 0;
        figs__lane_y(&ch, lane[k][0], 0.15, 0.85, &y0, &y1);
        for (int i = 0; i < FIGS_NCOMP; i++) {
            if (comp[k][i] <= 0) continue;
            pl_rect(&c, pl_chart_px(&ch, x), y0, pl_chart_px(&ch, x + comp[k][i]), y1, figs_comp_rgb[i]);
            x += comp[k][i];
        }
        sc_stats w = demo_step_stats(d, runs[k], demo_wall_ms);
        pl_text(&c, X0 - 10, (y0 + y1) / 2, 14, 0x111111, PL_RIGHT | PL_MIDDLE | PL_BOLD, runs[k]->label);
        char t[160];
        snprintf(t, sizeof t, "wall %.4g ± %.2g ms (95%% CI, n=%d)", w.mean, w.ci95, w.n);
        figs__bar_text(&c, &ch, x, (y0 + y1) / 2, 13, t);
        for (int i = 1; i < 4; i++) {
            if (lane[k][i] < 0) continue;
            figs__lane_y(&ch, lane[k][i], 0.25, 0.75, &y0, &y1);
            pl_rect(&c, pl_chart_px(&ch, 0), y0, pl_chart_px(&ch, busy[k][i - 1]), y1, figs_busy_rgb[i - 1]);
            pl_textf(&c, X0 - 10, (y0 + y1) / 2, 12, 0x444444, PL_RIGHT | PL_MIDDLE, "%s, concurrent", lane_name[i]);
            char t[192];
            int u = snprintf(t, sizeof t, "busy %.3g ms per step (not added to the wall)", busy[k][i - 1]);
            if (i == 3) snprintf(t + u, sizeof t - (size_t)u, "; the step waited %.3g ms for it", wait[k]);
            figs__bar_text(&c, &ch, busy[k][i - 1], (y0 + y1) / 2, 12, t);
        }
    }

    /* bottom: one step per run, every span where it ran */
    pl_chart tl;
    double q0 = p1 + 110, q1 = q0 + 34 * nl;
    pl_text(&c, X0, q0 - 8, 14, 0x111111, PL_LEFT | PL_BASELINE | PL_BOLD,
            "One representative step per mode (the measured step nearest the median wall), as it ran");
    figs__lanes(&tl, &c, X0, q0 + 8, W - 40, q1, tmax * 1.01, nl, "time within the step (ms)");
    for (int k = 0; k < nr; k++) {
        const demo_run *r = runs[k];
        int s = figs_median_step(d, r);
        const sc_step_metrics *sm = sc_tracer_step_get(&r->tr, s);
        double t0 = (double)(sm->t0_ns - r->tr.t_init_ns) / 1e6, wall = r->st[s].wall_ms, y0, y1;
        for (int i = 0; i < 4; i++) {
            if (lane[k][i] < 0) continue;
            figs__lane_y(&tl, lane[k][i], 0.15, 0.85, &y0, &y1);
            char nm[96];
            snprintf(nm, sizeof nm, i ? "%s" : "%s: step %d", i ? lane_name[i] : r->label, s + 1);
            pl_text(&c, X0 - 10, (y0 + y1) / 2, i ? 12 : 14, i ? 0x444444 : 0x111111,
                    PL_RIGHT | PL_MIDDLE | (i ? 0 : PL_BOLD), nm);
            pl_rect(&c, pl_chart_px(&tl, 0), (y0 + y1) / 2 - 0.5, pl_chart_px(&tl, wall), (y0 + y1) / 2 + 0.5, 0xBBBBBB);
            pl_rect(&c, pl_chart_px(&tl, wall) - 1, y0, pl_chart_px(&tl, wall), y1, 0x555555); /* step end */
        }
        /* spans handed to the steps around s may have run inside it (host threads report late) */
        for (int ss = s - 1; ss <= s + 1; ss++) {
            int64_t f, n;
            if (ss < 0 || ss >= r->done) continue;
            figs__step_spans(r, ss, &f, &n);
            for (int64_t j = f; j < f + n; j++) {
                sc_tracer_span_info x = figs__span(r, j);
                int ln = x.stream == 0 ? 0 : x.phase == SC_PHASE_H2D ? 1 : x.phase == SC_PHASE_D2H ? 2 : 3;
                if (!x.counts_phase || lane[k][ln] < 0) continue;
                double a = fmax(0, x.ts_ms - t0), b = fmin(wall, x.ts_ms - t0 + x.dur_ms);
                if (b <= a) continue;
                static const int comp_of[SC_PHASE_COUNT] = {0, 2, 3, 4, 5, 5, 1, 5, 5};
                uint32_t col = ln ? figs_busy_rgb[ln - 1] : figs_comp_rgb[comp_of[x.phase]];
                figs__lane_y(&tl, lane[k][ln], 0.15, 0.85, &y0, &y1);
                double px0 = pl_chart_px(&tl, a), px1 = pl_chart_px(&tl, b);
                pl_rect(&c, px0, y0, fmax(px1, px0 + 1), y1, col);
            }
        }
    }
    int rc = pl_write_png(&c, demo_path(d, png));
    pl_free(&c);
    return rc;
}

#endif /* DEMOS_FIGS_H */
