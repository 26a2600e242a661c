/* recompute_tradeoff: what activation checkpointing costs in time and saves in memory.

     build/recompute_tradeoff [--model tiny] [--seq 128 --batch 4] [--steps 11]
                              [--device cpu|cuda|auto] [--out runs/recompute_tradeoff]
                              [--policies none,selective,selective:mlp,every:2,full]

   For every checkpoint policy we train the same model (same seed, so the same weights) on the
   same random tokens for a few AdamW steps, and measure each step with the tracer: the time
   spent in forward, recompute, backward and the optimizer, the allocator's peak, and the bytes
   the forward pass kept for backward ("saved activations"). Then we compare the policies:

     - in time: recompute replays part of the forward during backward, so steps get slower;
     - in memory: the replayed activations need not be kept, so fewer bytes are saved and the
       peak drops;
     - in arithmetic: nothing changes. slidecheck replays exactly the same operations, so every
       policy's loss must be bitwise equal to `none`'s. The program checks it.

   It writes, into --out DIR:
     tradeoff.csv          one row per policy (the table printed at the end, in full precision)
     steps.csv             one row per policy and step
     tradeoff.png          left: where a step's time goes; right: saved activations and peak
     memory_timeline.png   allocated bytes over the memory events of the last step, none vs full
     <policy>/             the tracer's files for each policy (step_metrics.csv, mem_trace.csv,
                           layer_metrics.csv, summary.csv, trace.json for Perfetto)

   Exit status: 0 on success, 2 for bad flags, 1 for any other failure (including losses that
   are not bitwise identical across policies). */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"

/* The plotting helper uses stb; we compile stb here, static, so it cannot clash with a copy
   of stb elsewhere in a program that includes this file's code. */
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STB_TRUETYPE_IMPLEMENTATION
#define STBTT_STATIC
#include "plot.h"
#include "demo.h" /* demo_mkdirs */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define MAX_POLICIES 32

/* ---- options ------------------------------------------------------------------------------ */

typedef struct opts {
    const char *model, *device, *out, *policies;
    int seq, batch, steps;
} opts;

static const char *usage =
    "usage: recompute_tradeoff [options]\n"
    "\n"
    "Trains the same model under several activation-checkpointing policies and compares what\n"
    "each costs in step time and saves in memory. Writes tradeoff.csv, steps.csv, tradeoff.png\n"
    "and memory_timeline.png into --out DIR, and the tracer's files into DIR/<policy>/.\n"
    "\n"
    "  --model NAME       built-in model (default tiny; see below)\n"
    "  --seq N            tokens per sequence (default 128 on the CPU, 1024 on CUDA, at most the\n"
    "                     model's max position)\n"
    "  --batch N          sequences per step (default 4)\n"
    "  --steps N          training steps per policy; the first is a warm-up that the medians leave\n"
    "                     out (default 11)\n"
    "  --device D         cpu, cuda or auto (default auto: the GPU when one is usable)\n"
    "  --out DIR          output directory (default runs/recompute_tradeoff)\n"
    "  --policies LIST    comma-separated checkpoint policies (default\n"
    "                     none,selective,selective:mlp,every:2,full); also layers:0-1,3 (its\n"
    "                     commas are kept together), sqrt, budget:SIZE\n"
    "  --help             this text\n";

static void die_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "recompute_tradeoff: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(run 'recompute_tradeoff --help' for usage)\n");
    exit(2);
}

static int mid_line; /* stdout holds a line still being written */

static void die(const char *what)
{
    if (mid_line) printf("\n");
    fflush(stdout);
    fprintf(stderr, "recompute_tradeoff: %s: %s\n", what, sc_last_error());
    exit(1);
}

static int parse_int(const char *flag, const char *v, int lo, int hi)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < lo || x > hi) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s needs an integer in [%d, %d], got '%%s'", flag, lo, hi);
        die_usage(msg, v);
    }
    return (int)x;
}

static void parse_args(opts *o, int argc, char **argv)
{
    o->model = "tiny";
    o->device = "auto";
    o->out = "runs/recompute_tradeoff";
    o->policies = "none,selective,selective:mlp,every:2,full";
    o->seq = o->batch = 0; /* 0: the device's default */
    o->steps = 11;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            printf("%s\nbuilt-in models: %s\n", usage, sc_config_names());
            exit(0);
        }
        if (strncmp(f, "--", 2)) die_usage("unexpected argument '%s'", f);
        if (strcmp(f, "--model") && strcmp(f, "--seq") && strcmp(f, "--batch") && strcmp(f, "--steps") &&
            strcmp(f, "--device") && strcmp(f, "--out") && strcmp(f, "--policies"))
            die_usage("unknown option '%s'", f);
        if (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2)) die_usage("option '%s' needs a value", f);
        const char *v = argv[++i];
        if (!strcmp(f, "--model")) o->model = v;
        else if (!strcmp(f, "--seq")) o->seq = parse_int(f, v, 2, 1 << 20);
        else if (!strcmp(f, "--batch")) o->batch = parse_int(f, v, 1, 1 << 16);
        else if (!strcmp(f, "--steps")) o->steps = parse_int(f, v, 1, 100000);
        else if (!strcmp(f, "--device")) o->device = v;
        else if (!strcmp(f, "--out")) o->out = v;
        else o->policies = v;
    }
    if (strcmp(o->device, "cpu") && strcmp(o->device, "cuda") && strcmp(o->device, "auto"))
        die_usage("--device must be cpu, cuda or auto, not '%s'", o->device);
    if (!*o->out) die_usage("%s", "--out needs a directory");
}

static sc_device pick_device(const char *want)
{
    if (!strcmp(want, "cpu")) return SC_DEVICE_CPU;
#ifdef SLIDECHECK_CUDA
    if (sc_cuda_available() == SC_SUCCESS) return SC_DEVICE_CUDA;
    if (!strcmp(want, "cuda")) die("--device cuda");
#else
    if (!strcmp(want, "cuda")) {
        fprintf(stderr, "recompute_tradeoff: --device cuda: this binary was built without CUDA\n");
        exit(1);
    }
#endif
    return SC_DEVICE_CPU;
}

/* ---- one policy's measurements ------------------------------------------------------------ */

typedef struct step_rec {
    float loss;
    double wall, ph[SC_PHASE_COUNT]; /* ms */
    int64_t peak_alloc;              /* allocator peak during the step, bytes */
    size_t saved;                    /* saved activations after the forward, bytes */
} step_rec;

typedef struct run {
    char policy[128];   /* as given */
    char dir[160];      /* the policy as a directory name */
    sc_plan plan;
    size_t predicted;   /* sc_plan_saved_bytes */
    step_rec *st;
    /* summaries over the measured steps (those after the warm-up) */
    int n;
    double wall, wall_ci, fwd, loss_ms, rec, bwd_proper, opt, other; /* medians, ms */
    int64_t peak;       /* max over the measured steps */
    size_t saved;       /* saved activations of the last step (the same in every step) */
    int bitwise;        /* every step's loss has the baseline's bits */
} run;

/* A policy as a directory name: anything but [A-Za-z0-9.-] becomes '_' ("every:2" -> "every_2"). */
static void sanitise(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < cap; i++) {
        char ch = src[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                 ch == '-';
        dst[i] = ok ? ch : '_';
    }
    dst[i] = 0;
}

/* Split the policy list at commas. A piece that starts with a digit continues the previous
   policy, so "none,layers:0-1,3,full" is none | layers:0-1,3 | full. */
static int split_policies(const char *list, run *runs)
{
    int n = 0;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0) die_usage("empty policy in --policies '%s'", list);
        if (n > 0 && *p >= '0' && *p <= '9') {
            char *d = runs[n - 1].policy;
            size_t dl = strlen(d);
            if (dl + 1 + len >= sizeof runs[0].policy) die_usage("policy too long in '%s'", list);
            d[dl] = ',';
            memcpy(d + dl + 1, p, len);
            d[dl + 1 + len] = 0;
        } else {
            if (n == MAX_POLICIES) die_usage("at most 32 policies, got more in '%s'", list);
            if (len >= sizeof runs[0].policy) die_usage("policy too long in '%s'", list);
            memcpy(runs[n].policy, p, len);
            runs[n].policy[len] = 0;
            n++;
        }
        p = e ? e + 1 : p + len;
    }
    if (n == 0) die_usage("%s", "--policies is empty");
    return n;
}

/* Turn a policy string into a per-layer plan. "budget:SIZE" asks the planner for the plan of
   least (estimated) recompute whose predicted peak fits SIZE; everything else is parsed. */
static void make_plan(run *r, const sc_config *cfg, int B, int T, int act_bytes)
{
    size_t budget;
    int isb = sc_plan_is_budget(r->policy, &budget);
    if (isb < 0) die_usage("bad policy '%s'", r->policy);
    if (isb == 1) {
        sc_layer_cost *costs = (sc_layer_cost *)calloc((size_t)cfg->num_layers, sizeof *costs);
        if (!costs) die("host memory");
        sc_plan_estimate_costs(cfg, B, T, act_bytes, costs);
        size_t fixed = sc_plan_fixed_bytes(cfg, 1, act_bytes, act_bytes);
        if (sc_planner_plan(&r->plan, NULL, cfg, B, T, act_bytes, fixed, costs, budget) != SC_SUCCESS) {
            fprintf(stderr, "recompute_tradeoff: policy '%s': %s\n", r->policy, sc_last_error());
            exit(2);
        }
        free(costs);
    } else if (sc_plan_parse(&r->plan, r->policy, cfg->num_layers) != SC_SUCCESS) {
        fprintf(stderr, "recompute_tradeoff: policy '%s': %s\n", r->policy, sc_last_error());
        exit(2);
    }
    sanitise(r->dir, sizeof r->dir, r->policy);
    r->predicted = sc_plan_saved_bytes(cfg, &r->plan, B, T, act_bytes);
}

/* Train `steps` steps under r's plan and record every step. */
static void train_policy(run *r, const sc_config *cfg, const sc_model_config *mc, const int32_t *ids, int B, int T,
                         int steps, const char *out_dir, char *device_name, size_t device_name_cap)
{
    /* A fresh model: the seed in mc gives every policy the same initial weights. */
    sc_model *m;
    if (sc_model_create(&m, cfg, mc, NULL) != SC_SUCCESS) die("creating the model");

    /* A tracer times the model's spans by phase (fwd, recompute, bwd, opt, ...) and records
       every allocation and free. On the GPU it times with CUDA events. */
    sc_tracer tr;
    sc_tracer_config tc;
    memset(&tc, 0, sizeof tc);
    tc.warmup_steps = 1;
    snprintf(device_name, device_name_cap, "cpu");
    sc_model_tracer_timing(m, &tc);
#ifdef SLIDECHECK_CUDA
    if (sc_model_cuda(m))
        snprintf(device_name, device_name_cap, "cuda (%s)", sc_cuda_device_name(sc_model_cuda(m)));
#endif
    if (sc_tracer_init(&tr, &tc) != SC_SUCCESS) die("tracer");
    sc_model_set_tracer(m, &tr);
    sc_allocator *al = sc_model_allocator(m);

    for (int s = 0; s < steps; s++) {
        step_rec *rec = &r->st[s];
        /* Reset the allocator's peak, so that each step reports its own. */
        sc_allocator_reset_peak(al);
        sc_tracer_step_begin(&tr, 0, s);
        if (sc_model_forward_backward(m, &r->plan, ids, B, T, &rec->loss) != SC_SUCCESS) die("forward/backward");
        rec->saved = sc_model_last_saved_bytes(m);
        if (sc_model_optimizer_step(m) != SC_SUCCESS) die("optimizer step");
        sc_tracer_mem mem = sc_model_tracer_mem(m);
        if (sc_tracer_step_end(&tr, rec->loss, (double)B * T, &mem) != SC_SUCCESS) die("tracer");
        /* The step's phase totals: phase_ms[SC_PHASE_FWD], [SC_PHASE_RECOMPUTE], ... */
        const sc_step_metrics *sm = sc_tracer_step_get(&tr, s);
        rec->wall = sm->wall_ms;
        memcpy(rec->ph, sm->phase_ms, sizeof rec->ph);
        rec->peak_alloc = mem.peak_allocated;
    }

    /* The tracer's own files (mem_trace.csv among them) go to DIR/<policy>/. */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", out_dir, r->dir);
    if (sc_tracer_write_all(&tr, dir) != SC_SUCCESS) die(dir);
    sc_model_set_tracer(m, NULL);
    sc_tracer_uninit(&tr);
    sc_model_destroy(m);
}

static double median_of(const step_rec *st, int first, int n, double (*f)(const step_rec *, int), int nested,
                        double *ci95)
{
    double x[1024];
    double *v = n <= 1024 ? x : (double *)malloc(sizeof(double) * (size_t)n);
    if (!v) die("host memory");
    for (int i = 0; i < n; i++) v[i] = f(&st[first + i], nested);
    sc_stats s = sc_stats_compute(v, n);
    if (v != x) free(v);
    if (ci95) *ci95 = s.ci95;
    return s.median;
}

/* What we take from each step. Phases nest (see trace_decl.h): a recompute span that runs
   inside a backward span counts in both, and then bwd - recompute is the backward proper.
   `nested` says whether that is how this build lays out its spans (found from the sums). */
static double f_wall(const step_rec *s, int nested) { (void)nested; return s->wall; }
static double f_fwd(const step_rec *s, int nested) { (void)nested; return s->ph[SC_PHASE_FWD]; }
static double f_loss(const step_rec *s, int nested) { (void)nested; return s->ph[SC_PHASE_LOSS]; }
static double f_rec(const step_rec *s, int nested) { (void)nested; return s->ph[SC_PHASE_RECOMPUTE]; }
static double f_opt(const step_rec *s, int nested) { (void)nested; return s->ph[SC_PHASE_OPT]; }
static double f_bwdp(const step_rec *s, int nested)
{
    return s->ph[SC_PHASE_BWD] - (nested ? s->ph[SC_PHASE_RECOMPUTE] : 0);
}
static double f_other(const step_rec *s, int nested)
{
    double t = s->wall - s->ph[SC_PHASE_FWD] - s->ph[SC_PHASE_LOSS] - f_bwdp(s, nested) -
               s->ph[SC_PHASE_RECOMPUTE] - s->ph[SC_PHASE_OPT];
    return t > 0 ? t : 0;
}

static double mib(double bytes) { return bytes / 1048576.0; }

/* 3 significant digits or so: 1234, 123, 12.3, 1.23, 0.123 */
static void fmt_num(char *buf, size_t cap, double v)
{
    double a = fabs(v);
    snprintf(buf, cap, "%.*f", a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3, v);
}

/* ---- figures ------------------------------------------------------------------------------- */

static const uint32_t COL_FWD = 0x4C78A8, COL_LOSS = 0x9ECAE9, COL_REC = 0xE45756, COL_BWD = 0x54A24B,
                      COL_OPT = 0xEECA3B, COL_OTHER = 0xBAB0AC, COL_SAVED = 0xF58518, COL_PEAK = 0x8E6C8A;

/* Policy names under the bars of a panel, shrunk to fit their slot. */
static void draw_policy_labels(pl_canvas *c, const run *runs, int n, double x0, double slot, double y)
{
    for (int i = 0; i < n; i++) {
        double size = 13;
        while (size > 8 && pl_text_width(c, size, 0, runs[i].policy) > slot - 6) size -= 0.5;
        pl_text(c, x0 + slot * (i + 0.5), y, size, 0x222222, PL_CENTER | PL_TOP, runs[i].policy);
    }
}

static void bar_value(pl_canvas *c, double x, double y, const char *txt)
{
    pl_text(c, x, y - 5, 12, 0x222222, PL_CENTER | PL_BASELINE, txt);
}

static int plot_tradeoff(const run *runs, int n, int base, const char *path, const char *title, const char *subtitle)
{
    pl_canvas c;
    if (pl_init(&c, 1200, 500)) return -1;
    char buf[64];
    pl_text_fit(&c, 600, 26, 19, 1170, 0x111111, PL_CENTER | PL_MIDDLE | PL_BOLD, title);
    pl_text_fit(&c, 600, 50, 13, 1170, 0x555555, PL_CENTER | PL_MIDDLE, subtitle);

    /* Left panel: where a step's time goes, as stacked bars of median milliseconds. */
    double L0 = 90, L1 = 560, T0 = 118, T1 = 420;
    pl_text(&c, (L0 + L1) / 2, 80, 15, 0x111111, PL_CENTER | PL_MIDDLE | PL_BOLD, "Step time (median ms)");
    const char *seg_name[6] = {"forward", "LM head + loss", "recompute", "backward", "optimizer", "other"};
    const uint32_t seg_col[6] = {COL_FWD, COL_LOSS, COL_REC, COL_BWD, COL_OPT, COL_OTHER};
    double tmax = 0;
    for (int i = 0; i < n; i++) {
        double tot = runs[i].fwd + runs[i].loss_ms + runs[i].rec + runs[i].bwd_proper + runs[i].opt + runs[i].other;
        tmax = fmax(tmax, fmax(tot, runs[i].wall));
    }
    double top = pl_axes_y(&c, L0, T0, L1, T1, tmax * 1.08, "milliseconds per step");
    double slot = (L1 - L0) / n, bw = slot * 0.6;
    for (int i = 0; i < n; i++) {
        const run *r = &runs[i];
        double v[6] = {r->fwd, r->loss_ms, r->rec, r->bwd_proper, r->opt, r->other};
        double xc = L0 + slot * (i + 0.5), y = T1;
        for (int k = 0; k < 6; k++) {
            double h = (T1 - T0) * v[k] / top;
            pl_rect(&c, xc - bw / 2, y - h, xc + bw / 2, y, seg_col[k]);
            if (h >= 15 && bw >= 30) { /* the segment's value inside it, when it fits */
                fmt_num(buf, sizeof buf, v[k]);
                uint32_t ink = (seg_col[k] == COL_LOSS || seg_col[k] == COL_OPT || seg_col[k] == COL_OTHER)
                                   ? 0x222222 : 0xFFFFFF;
                pl_text(&c, xc, y - h / 2, 11, ink, PL_CENTER | PL_MIDDLE, buf);
            }
            if (k < 5 && h > 0.5) pl_line(&c, xc - bw / 2, y - h, xc + bw / 2, y - h, 1, 0xFFFFFF);
            y -= h;
        }
        /* the median step time (the table's number) as a black tick, labelled with its ratio to
           the baseline; the phase medians need not add up to it exactly */
        double yw = T1 - (T1 - T0) * r->wall / top;
        pl_line(&c, xc - bw / 2 - 5, yw, xc + bw / 2 + 5, yw, 2.5, 0x111111);
        snprintf(buf, sizeof buf, "%.0f ms  %.2f\xC3\x97", r->wall, r->wall / runs[base].wall);
        bar_value(&c, xc, fmin(y, yw) - 1, buf);
    }
    draw_policy_labels(&c, runs, n, L0, slot, T1 + 10);
    double lx = L0 - 20; /* the legend, four entries a row */
    for (int k = 0; k < 6; k++) {
        double nx = pl_legend_item(&c, lx, 468 + (k >= 4 ? 18 : 0), seg_col[k], seg_name[k]);
        lx = k == 3 ? L0 - 20 : nx;
    }
    pl_line(&c, lx, 486, lx + 16, 486, 2.5, 0x111111);
    pl_text(&c, lx + 22, 486, 13, 0x222222, PL_LEFT | PL_MIDDLE, "median step time");

    /* Right panel: saved activations (with the closed-form prediction as a black tick) and the
       allocator's peak, in MiB. */
    double R0 = 700, R1 = 1170;
    pl_text(&c, (R0 + R1) / 2, 80, 15, 0x111111, PL_CENTER | PL_MIDDLE | PL_BOLD, "Memory (MiB)");
    double mmax = 0;
    for (int i = 0; i < n; i++) {
        mmax = fmax(mmax, mib((double)runs[i].peak));
        mmax = fmax(mmax, mib((double)runs[i].saved));
    }
    top = pl_axes_y(&c, R0, T0, R1, T1, mmax * 1.08, "MiB");
    slot = (R1 - R0) / n;
    bw = slot * 0.36;
    for (int i = 0; i < n; i++) {
        const run *r = &runs[i];
        double xc = R0 + slot * (i + 0.5);
        double sv = mib((double)r->saved), pv = mib((double)r->predicted), pk = mib((double)r->peak);
        double hs = (T1 - T0) * sv / top, hp = (T1 - T0) * pk / top, hpred = (T1 - T0) * pv / top;
        pl_rect(&c, xc - bw - 1, T1 - hs, xc - 1, T1, COL_SAVED);
        pl_line(&c, xc - bw - 5, T1 - hpred, xc + 3, T1 - hpred, 2.5, 0x111111);
        pl_rect(&c, xc + 1, T1 - hp, xc + bw + 1, T1, COL_PEAK);
        fmt_num(buf, sizeof buf, sv);
        bar_value(&c, xc - bw / 2 - 1, T1 - fmax(hs, hpred) - 1, buf);
        fmt_num(buf, sizeof buf, pk);
        bar_value(&c, xc + bw / 2 + 1, T1 - hp, buf);
    }
    draw_policy_labels(&c, runs, n, R0, slot, T1 + 10);
    lx = pl_legend_item(&c, R0 - 20, 468, COL_SAVED, "saved activations (measured)");
    pl_line(&c, lx, 468, lx + 16, 468, 2.5, 0x111111);
    pl_text(&c, lx + 22, 468, 13, 0x222222, PL_LEFT | PL_MIDDLE, "predicted (sc_plan_saved_bytes)");
    pl_legend_item(&c, R0 - 20, 486, COL_PEAK, "peak allocated in a step");

    int rc = pl_write_png(&c, path);
    pl_free(&c);
    return rc;
}

/* The allocator's `allocated` after each memory event of one step, from the tracer's
   mem_trace.csv (columns step,event,t_ms,allocated_bytes,...). */
typedef struct series {
    double *y; /* MiB */
    int n;
} series;

static int read_mem_series(const char *path, int64_t step, series *s)
{
    s->y = NULL;
    s->n = 0;
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[1024];
    int cap = 0, first = 1;
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        int whole = len > 0 && line[len - 1] == '\n';
        if (first) { first = 0; goto skip; } /* the header */
        char *p = line, *e;
        long long st = strtoll(p, &e, 10);
        if (e == p || *e != ',') goto skip;
        p = e + 1;
        strtoll(p, &e, 10);           /* event kind */
        if (*e != ',') goto skip;
        p = e + 1;
        strtod(p, &e);                /* t_ms */
        if (*e != ',') goto skip;
        p = e + 1;
        long long alloc = strtoll(p, &e, 10);
        if (e == p || st != step) goto skip;
        if (s->n == cap) {
            cap = cap ? cap * 2 : 1024;
            double *y = (double *)realloc(s->y, sizeof(double) * (size_t)cap);
            if (!y) { fclose(f); return -1; }
            s->y = y;
        }
        s->y[s->n++] = mib((double)alloc);
    skip:
        while (!whole && fgets(line, sizeof line, f)) { /* the rest of an over-long line */
            len = strlen(line);
            whole = len > 0 && line[len - 1] == '\n';
        }
    }
    fclose(f);
    return 0;
}

static int plot_timeline(const series *s, const char **names, const uint32_t *cols, int ns, const char *path,
                         const char *title, const char *subtitle)
{
    pl_canvas c;
    if (pl_init(&c, 1200, 500)) return -1;
    pl_text_fit(&c, 600, 26, 19, 1170, 0x111111, PL_CENTER | PL_MIDDLE | PL_BOLD, title);
    pl_text_fit(&c, 600, 50, 13, 1170, 0x555555, PL_CENTER | PL_MIDDLE, subtitle);
    double X0 = 100, X1 = 1160, Y0 = 100, Y1 = 420;
    double ymax = 0;
    int nmax = 1;
    for (int k = 0; k < ns; k++) {
        if (s[k].n > nmax) nmax = s[k].n;
        for (int i = 0; i < s[k].n; i++) ymax = fmax(ymax, s[k].y[i]);
    }
    double top = pl_axes_y(&c, X0, Y0, X1, Y1, ymax * 1.15, "allocated (MiB)");
    /* x axis: memory events of the step, in order */
    double xstep = pl_nice_step(nmax, 10);
    for (int k = 0; k * xstep <= nmax; k++) {
        double x = X0 + (X1 - X0) * (k * xstep) / nmax;
        pl_line(&c, x, Y1, x, Y1 + 5, 1.2, 0x555555);
        pl_textf(&c, x, Y1 + 10, 13, 0x444444, PL_CENTER | PL_TOP, "%.0f", k * xstep);
    }
    pl_text(&c, (X0 + X1) / 2, Y1 + 48, 14, 0x222222, PL_CENTER | PL_MIDDLE,
            "memory event of the last step (each allocation or free)");
    /* the lines first, then the labels, so that no line crosses a label */
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < s[k].n; i++) {
            /* a step line: after event i, allocated holds s.y[i] until event i + 1 */
            double xa = X0 + (X1 - X0) * i / nmax, xb = X0 + (X1 - X0) * (i + 1.0) / nmax;
            double y = Y1 - (Y1 - Y0) * s[k].y[i] / top;
            pl_line(&c, xa, y, xb, y, 1.8, cols[k]);
            if (i + 1 < s[k].n) pl_line(&c, xb, y, xb, Y1 - (Y1 - Y0) * s[k].y[i + 1] / top, 1.8, cols[k]);
        }
    double lx = X0 + 10;
    for (int k = 0; k < ns; k++) {
        int ipk = 0;
        for (int i = 1; i < s[k].n; i++)
            if (s[k].y[i] > s[k].y[ipk]) ipk = i;
        if (s[k].n) { /* mark the peak */
            double x = X0 + (X1 - X0) * (ipk + 0.5) / nmax, y = Y1 - (Y1 - Y0) * s[k].y[ipk] / top;
            pl_line(&c, x - 7, y - 10, x, y - 2, 1.5, cols[k]);
            pl_line(&c, x + 7, y - 10, x, y - 2, 1.5, cols[k]);
            char num[32], lab[160];
            fmt_num(num, sizeof num, s[k].y[ipk]);
            snprintf(lab, sizeof lab, "%s peak %s MiB", names[k], num);
            double hw = pl_text_width(&c, 13, PL_BOLD, lab) / 2 + 4; /* keep the label inside the plot */
            pl_text(&c, fmin(fmax(x, X0 + hw), X1 - hw), y - 14, 13, cols[k],
                    PL_CENTER | PL_BASELINE | PL_BOLD | PL_HALO, lab);
        }
        char lab[160];
        snprintf(lab, sizeof lab, "%s (%d events)", names[k], s[k].n);
        lx = pl_legend_item(&c, lx, Y0 - 20, cols[k], lab); /* the legend above the plot */
    }
    int rc = pl_write_png(&c, path);
    pl_free(&c);
    return rc;
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    opts o;
    parse_args(&o, argc, argv);

    /* 1. The model and the batch. Every policy trains on the same seeded random tokens. */
    sc_config cfg;
    if (sc_config_named(&cfg, o.model) != SC_SUCCESS) {
        fprintf(stderr, "recompute_tradeoff: --model: %s\n", sc_last_error());
        return 2;
    }
    sc_model_config mc = sc_model_config_init();
    mc.device = pick_device(o.device);
    mc.seed = 1234;
    mc.optim = SC_OPTIM_ADAMW;
    mc.lr = 1e-3f;
    int on_gpu = mc.device == SC_DEVICE_CUDA;
    int B = o.batch ? o.batch : 4;
    int T = o.seq ? o.seq : (on_gpu ? 1024 : 128);
    if (!o.seq && T > cfg.max_position) T = cfg.max_position;
    if (T > cfg.max_position) {
        fprintf(stderr, "recompute_tradeoff: --seq %d exceeds the max position of %s (%d)\n", T, cfg.name,
                cfg.max_position);
        return 2;
    }
    int act_bytes = 4; /* fp32 storage: 4 bytes per activation element */
    int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * (size_t)B * (size_t)T);
    if (!ids) die("host memory");
    sc_rng rng = sc_rng_seed(1234 + 77);
    for (int i = 0; i < B * T; i++) ids[i] = (int32_t)(sc_rng_u64(&rng) % (uint64_t)cfg.vocab_size);

    /* 2. Each policy becomes a per-layer plan, with the saved bytes it predicts in closed form.
          All are parsed before any training, so a typo fails at once. */
    static run runs[MAX_POLICIES];
    int np = split_policies(o.policies, runs);
    for (int i = 0; i < np; i++) {
        make_plan(&runs[i], &cfg, B, T, act_bytes);
        runs[i].st = (step_rec *)calloc((size_t)o.steps, sizeof(step_rec));
        if (!runs[i].st) die("host memory");
    }
    /* The baseline is `none` (the first policy when `none` is not in the list). */
    int base = 0;
    for (int i = 0; i < np; i++)
        if (!strcmp(runs[i].policy, "none")) { base = i; break; }

    /* 3. Train each policy and measure every step (into a directory made first, so that a bad
          --out fails before any training). */
    if (demo_mkdirs(o.out)) return 1;
    if (pl_check_font()) return 1; /* the figures need it: fail now rather than after training */
    char device_name[160] = "cpu";
    printf("model %s (%s, %d layers, %.1fM params), B=%d T=%d, %d steps per policy (1 warm-up), AdamW lr %g\n",
           cfg.name, cfg.arch == SC_ARCH_QWEN2 ? "qwen2" : "qwen3", cfg.num_layers,
           (double)sc_config_num_params(&cfg) / 1e6, B, T, o.steps, (double)mc.lr);
    for (int i = 0; i < np; i++) {
        printf("  training with %-16s ...", runs[i].policy);
        fflush(stdout);
        mid_line = 1;
        train_policy(&runs[i], &cfg, &mc, ids, B, T, o.steps, o.out, device_name, sizeof device_name);
        mid_line = 0;
        printf(" loss %.6f -> %.6f\n", (double)runs[i].st[0].loss, (double)runs[i].st[o.steps - 1].loss);
    }
    printf("device: %s, fp32\n\n", device_name);

    /* 4. Summaries over the steps after the warm-up (all steps if there is only one).
          Does this build nest recompute spans inside backward spans? Then the phase totals of a
          step add up to more than its wall time, and bwd - recompute is the backward proper. */
    int first = o.steps > 1 ? 1 : 0, n = o.steps - first, nested = 0;
    for (int i = 0; i < np; i++)
        for (int s = 0; s < o.steps; s++) {
            const step_rec *t = &runs[i].st[s];
            double sum = t->ph[SC_PHASE_FWD] + t->ph[SC_PHASE_LOSS] + t->ph[SC_PHASE_RECOMPUTE] +
                         t->ph[SC_PHASE_BWD] + t->ph[SC_PHASE_OPT];
            if (t->ph[SC_PHASE_RECOMPUTE] > 0 && sum > t->wall * 1.0001 + 1e-3) nested = 1;
        }
    int all_bitwise = 1, all_saved_exact = 1;
    for (int i = 0; i < np; i++) {
        run *r = &runs[i];
        r->n = n;
        r->wall = median_of(r->st, first, n, f_wall, nested, &r->wall_ci);
        r->fwd = median_of(r->st, first, n, f_fwd, nested, NULL);
        r->loss_ms = median_of(r->st, first, n, f_loss, nested, NULL);
        r->rec = median_of(r->st, first, n, f_rec, nested, NULL);
        r->bwd_proper = median_of(r->st, first, n, f_bwdp, nested, NULL);
        r->opt = median_of(r->st, first, n, f_opt, nested, NULL);
        r->other = median_of(r->st, first, n, f_other, nested, NULL);
        r->saved = r->st[o.steps - 1].saved;
        r->peak = 0;
        for (int s = first; s < o.steps; s++)
            if (r->st[s].peak_alloc > r->peak) r->peak = r->st[s].peak_alloc;
        /* The same arithmetic in every policy: each step's loss must have the baseline's bits. */
        r->bitwise = 1;
        for (int s = 0; s < o.steps; s++)
            if (memcmp(&r->st[s].loss, &runs[base].st[s].loss, sizeof(float))) r->bitwise = 0;
        all_bitwise &= r->bitwise;
        for (int s = 0; s < o.steps; s++)
            if (r->st[s].saved != r->predicted) all_saved_exact = 0;
    }

    /* 5. The table. */
    char ratio_head[64];
    snprintf(ratio_head, sizeof ratio_head, "vs %s", runs[base].policy);
    printf("%-16s %12s %15s %14s %9s %22s %10s\n", "policy", "loss step 1", "step ms (n)", "recompute ms",
           ratio_head, "saved MiB meas / pred", "peak MiB");
    for (int i = 0; i < np; i++) {
        const run *r = &runs[i];
        char stepms[32], saved[48];
        snprintf(stepms, sizeof stepms, "%.1f (%d)", r->wall, r->n);
        snprintf(saved, sizeof saved, "%.3f / %.3f", mib((double)r->saved), mib((double)r->predicted));
        printf("%-16s %12.7f %15s %14.1f %8.2fx %22s %10.3f\n", r->policy, (double)r->st[0].loss, stepms, r->rec,
               r->wall / runs[base].wall, saved, mib((double)r->peak));
    }
    printf("\nlosses bitwise identical to %s's (every step, every policy): %s\n", runs[base].policy,
           all_bitwise ? "yes" : "NO");
    printf("saved activations equal the prediction, byte for byte: %s\n", all_saved_exact ? "yes" : "NO");
    printf("medians over %d step%s after the warm-up; backward below means %s\n", n, n == 1 ? "" : "s",
           nested ? "bwd - recompute (recompute runs inside backward spans)"
                  : "bwd (recompute spans run beside backward spans)");

    /* 6. CSV files. */
    char path[4096];
    snprintf(path, sizeof path, "%s/tradeoff.csv", o.out);
    FILE *f = fopen(path, "w");
    if (!f) { fprintf(stderr, "recompute_tradeoff: cannot write %s\n", path); return 1; }
    fprintf(f, "policy,first_step_loss,loss_bitwise_equal,n,median_step_ms,ci95_step_ms,median_fwd_ms,"
               "median_loss_ms,median_recompute_ms,median_bwd_proper_ms,median_opt_ms,median_other_ms,"
               "step_ratio_vs_%s,saved_bytes_measured,saved_bytes_predicted,saved_mib_measured,saved_mib_predicted,"
               "peak_allocated_bytes,peak_allocated_mib\n", runs[base].dir);
    for (int i = 0; i < np; i++) {
        const run *r = &runs[i];
        size_t sv = r->saved;
        fprintf(f, "\"%s\",%.9g,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%zu,%zu,%.6f,%.6f,%lld,%.6f\n",
                r->policy, (double)r->st[0].loss, r->bitwise, r->n, r->wall, r->wall_ci, r->fwd, r->loss_ms, r->rec,
                r->bwd_proper, r->opt, r->other, r->wall / runs[base].wall, sv, r->predicted, mib((double)sv),
                mib((double)r->predicted), (long long)r->peak, mib((double)r->peak));
    }
    if (fclose(f)) { fprintf(stderr, "recompute_tradeoff: cannot write %s\n", path); return 1; }
    snprintf(path, sizeof path, "%s/steps.csv", o.out);
    f = fopen(path, "w");
    if (!f) { fprintf(stderr, "recompute_tradeoff: cannot write %s\n", path); return 1; }
    fprintf(f, "policy,step,loss,wall_ms,fwd_ms,loss_ms,recompute_ms,bwd_ms,opt_ms,peak_allocated_bytes,"
               "saved_bytes\n");
    for (int i = 0; i < np; i++)
        for (int s = 0; s < o.steps; s++) {
            const step_rec *t = &runs[i].st[s];
            fprintf(f, "\"%s\",%d,%.9g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%lld,%zu\n", runs[i].policy, s,
                    (double)t->loss, t->wall, t->ph[SC_PHASE_FWD], t->ph[SC_PHASE_LOSS],
                    t->ph[SC_PHASE_RECOMPUTE], t->ph[SC_PHASE_BWD], t->ph[SC_PHASE_OPT],
                    (long long)t->peak_alloc, t->saved);
        }
    if (fclose(f)) { fprintf(stderr, "recompute_tradeoff: cannot write %s\n", path); return 1; }

    /* 7. Figures. */
    char date[32], title[512], subtitle[512];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d", localtime(&now));
    snprintf(title, sizeof title, "Activation recompute: time vs memory \xE2\x80\x94 %s, B=%d, T=%d, %s fp32, %s",
             cfg.name, B, T, device_name, date);
    snprintf(subtitle, sizeof subtitle,
             "%d layers, %.2fM params, AdamW; medians of %d step%s after a warm-up; ratios are to %s; "
             "losses bitwise identical across policies: %s",
             cfg.num_layers, (double)sc_config_num_params(&cfg) / 1e6, n, n == 1 ? "" : "s", runs[base].policy,
             all_bitwise ? "yes" : "NO");
    snprintf(path, sizeof path, "%s/tradeoff.png", o.out);
    if (plot_tradeoff(runs, np, base, path, title, subtitle)) return 1;

    /* The memory timeline compares none with full (else the first and last policy). */
    int a = base, b = np - 1;
    for (int i = 0; i < np; i++)
        if (!strcmp(runs[i].policy, "full")) b = i;
    series s[2];
    const char *names[2] = {runs[a].policy, runs[b].policy};
    const uint32_t cols[2] = {0x4C78A8, 0xE45756};
    int ns = a == b ? 1 : 2;
    for (int k = 0; k < ns; k++) {
        snprintf(path, sizeof path, "%s/%s/mem_trace.csv", o.out, runs[k ? b : a].dir);
        if (read_mem_series(path, o.steps - 1, &s[k])) {
            fprintf(stderr, "recompute_tradeoff: cannot read %s\n", path);
            return 1;
        }
    }
    snprintf(title, sizeof title, "Allocated memory through one training step \xE2\x80\x94 %s, B=%d, T=%d, %s, %s",
             cfg.name, B, T, device_name, date);
    snprintf(subtitle, sizeof subtitle,
             "step %d of %d; the allocator's allocated bytes after each allocation and free, from %s/%s/mem_trace.csv",
             o.steps, o.steps, o.out, ns == 2 ? "{none,full}" : runs[a].dir);
    snprintf(path, sizeof path, "%s/memory_timeline.png", o.out);
    if (plot_timeline(s, names, cols, ns, path, title, subtitle)) return 1;
    for (int k = 0; k < ns; k++) free(s[k].y);

    printf("\nwrote %s/tradeoff.csv, steps.csv, tradeoff.png, memory_timeline.png\n", o.out);
    printf("      and the tracer's files for each policy in %s/<policy>/ (trace.json opens in Perfetto)\n", o.out);
    for (int i = 0; i < np; i++) free(runs[i].st);
    free(ids);
    if (!all_bitwise) {
        fprintf(stderr, "recompute_tradeoff: losses differ between policies (the library promises equal bits)\n");
        return 1;
    }
    return 0;
}
