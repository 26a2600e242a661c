/* --mode auto (sc_plan_auto) against a brute-force sweep of the hand knobs under the same device
   memory caps, in one process:
     make build/auto_sweep                  (with nvcc present it runs on the GPU too)
     build/auto_sweep --device cuda --caps 24GiB --optims adamw --out OUT
   For each cap and optimizer:
     1. auto: sc_plan_auto under the cap; its choice, predicted peak and step, then that
        configuration trained under the cap (mc.mem_cap);
     2. every hand configuration of the knob lists (resident x policy; slide x policy x prefetch x
        head x device layers, and SGD's device update): its predicted peak (sc_plan_evaluate over
        the fixed bytes sc_plan_auto counts, no profile); one predicted not to fit the usable cap
        is listed as such and not run; the rest get sc_plan_auto's predicted step for exactly that
        configuration (every knob set by the caller; see predict()) and are trained under the cap
        in the order of their predicted steps, fastest first;
     3. every run's losses compared, bit for bit, with auto's at each step (the same weights and
        batches: every configuration gives resident mode's bits).
   A run is created with the same host weights (made once), takes 1 warm-up and --steps timed
   steps (one batch each), and reports the median step wall time (the tracer's, with the GPU's
   events, the slide host updates of the last step inside it, as the training tool measures) and
   the allocator's peak allocated and reserved bytes over the run. An out-of-memory run is
   recorded as such. The first sc_plan_auto call of an optimizer profiles a 2-layer copy of the
   model (seconds at the 1.7B shape on a GPU); the later ones reuse that profile
   (sc_plan_auto_config.profile), so that every prediction of the optimizer comes from the same
   measured rates, printed once.
   Slide runs also record their last step's traffic and host updates (sc_slide_info); for auto's
   run the floors of that step are printed beside it: the copies at the profile's bandwidths each
   way, side by side, and the host updates at the host optimizer's rate alone (timed once per
   optimizer over 64 M parameters, slide's dtypes and thread count), with auto / the higher floor.
   Each row also sets the prediction's parts (compute, copies, host optimizer) beside the measured
   phases (medians of the timed steps' fwd, bwd, recompute and opt spans), to show which part of
   the time model a run departs from.
   Writes OUT/sweep.csv (one row per configuration, appended as they finish) and OUT/verdict.txt
   (also printed): per cap and optimizer, auto's step beside the fastest hand configuration's,
   auto / best (target <= 1.10), and the range of predicted / measured step and peak over the
   configurations that ran. --dry-run lists the configurations, their predicted peaks and the
   expected run time without creating any model (any machine: --device cuda plans for the GPU).
   Options: see usage() below. Bad flags exit 2; a failure outside a run exits 1. */
#define SLIDECHECK_IMPLEMENTATION
#include "slidecheck.h"
#include "../demos/machine.h" /* the machine's names, mkdir -p */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define MAXN 32
#define GIB 1073741824.0
#define MIB 1048576.0
/* the time estimate before anything ran (refined as runs finish): a run (create with its host
   state + 1 warm-up + 4 steps) and an sc_plan_auto call, on average (the first profiles, about
   15 s; the others reuse it), at the 1.7B shape on an H100 host (about 20 s a run there); on the
   CPU with tiny both take a fraction of a second */
#define EST_RUN_GPU_S 20.0
#define EST_PRED_GPU_S 0.5
#define EST_RUN_CPU_S 0.3
#define EST_PRED_CPU_S 0.2

static const char *usage_text =
    "usage: auto_sweep [options]\n"
    "  --model NAME          built-in shape (default qwen3-1.7b; tiny for tests): %s\n"
    "  --device D            cpu, cuda or auto (default auto: the GPU when one is usable)\n"
    "  --seq N --batch N     the micro-batch (default 2048 x 4 on the GPU, 64 x 2 on the CPU)\n"
    "  --dtype T             bf16 or f32 (default bf16 on the GPU, f32 on the CPU)\n"
    "  --master-weights      f32 master weights with bf16 (the default with bf16)\n"
    "  --no-master-weights   bf16 weights, gradients and state without an f32 master\n"
    "  --optims LIST         adamw,sgd (default both)\n"
    "  --caps LIST           device memory caps (default 24GiB,16GiB,8GiB; MiB for tiny)\n"
    "  --steps N             timed steps after 1 warm-up (default 4)\n"
    "  --lr X                learning rate (default 1e-4)\n"
    "  --seed N              weights and tokens (default 1234)\n"
    "  --ckpts LIST          checkpoint policies (default none,selective,selective:proj,every:2,full)\n"
    "  --prefetch LIST       slide prefetch depths (default 1,2; those above the layer count dropped)\n"
    "  --heads LIST          slot,keep (slide_keep_head off / on; default both)\n"
    "  --device-layers LIST  none, first:K, max (the most first layers that fit the cap, per configuration),\n"
    "                        quarter, half (L/4, L/2); default none,max\n"
    "  --device-update LIST  off,on: SGD's update on the device (slide; no master weights; default off,on\n"
    "                        where it can run, else off)\n"
    "  --time-limit S        start nothing after S seconds; the rest is listed as skipped (default none)\n"
    "  --dry-run             list the configurations, predicted peaks and the expected time; run nothing\n"
    "  --out DIR             sweep.csv and verdict.txt (default runs/auto_sweep)\n";

static void usage_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "auto_sweep: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(run 'auto_sweep --help' for usage)\n");
    exit(2);
}

static void die(const char *what)
{
    fflush(stdout);
    fprintf(stderr, "auto_sweep: %s: %s\n", what, sc_last_error());
    exit(1);
}

typedef struct dl_spec {
    int kind; /* 0 none, 1 first:K, 2 max, 3 quarter, 4 half */
    int k;
} dl_spec;

typedef struct opts {
    const char *model, *device, *dtype, *out;
    int seq, batch, steps, master, no_master, dry_run;
    double lr, time_limit_s;
    unsigned seed;
    sc_optim optims[2];
    int noptims;
    size_t caps[MAXN];
    char cap_names[MAXN][32];
    int ncaps;
    char ckpts[MAXN][64];
    int nckpts;
    int prefetch[MAXN], nprefetch;
    int heads[2], nheads;
    dl_spec dls[MAXN];
    int ndls;
    int devup[2], ndevup, devup_given;
} opts;

/* ---- flags ------------------------------------------------------------------------------ */

static int parse_int(const char *flag, const char *v, int lo, int hi)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi) usage_error("%s needs an integer in [%d, %d], got '%s'", flag, lo, hi, v);
    return (int)x;
}

/* Split a comma list into tokens (at most MAXN); each passed to fn. */
static void split_list(const char *flag, const char *v, void (*fn)(opts *, const char *, const char *), opts *o)
{
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", v) >= (int)sizeof buf) usage_error("%s: list too long", flag);
    int n = 0;
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        if (++n > MAXN) usage_error("%s: at most %d entries", flag, MAXN);
        fn(o, flag, t);
    }
    if (!n) usage_error("%s: an empty list", flag);
}

static void add_optim(opts *o, const char *flag, const char *t)
{
    sc_optim k;
    if (!strcmp(t, "adamw")) k = SC_OPTIM_ADAMW;
    else if (!strcmp(t, "sgd")) k = SC_OPTIM_SGD;
    else usage_error("%s: adamw or sgd, not '%s'", flag, t);
    for (int i = 0; i < o->noptims; i++)
        if (o->optims[i] == k) usage_error("%s: '%s' twice", flag, t);
    o->optims[o->noptims++] = k;
}

static void add_cap(opts *o, const char *flag, const char *t)
{
    size_t b = 0;
    if (sc_parse_size(t, &b) || !b) usage_error("%s: a size such as 16GiB or 24MiB, not '%s'", flag, t);
    snprintf(o->cap_names[o->ncaps], sizeof o->cap_names[o->ncaps], "%.31s", t);
    o->caps[o->ncaps++] = b;
}

static void add_ckpt(opts *o, const char *flag, const char *t)
{
    sc_plan p;
    /* checked against the model's layers once it is known; here only the syntax */
    if (!strncmp(t, "budget:", 7) || !strncmp(t, "layers:", 7))
        usage_error("%s: '%s': give fixed policies (none, selective, every:K, full, ...)", flag, t);
    if (sc_plan_parse(&p, t, SC_MAX_LAYERS) != SC_SUCCESS) usage_error("%s: '%s': %s", flag, t, sc_last_error());
    snprintf(o->ckpts[o->nckpts++], 64, "%.63s", t);
}

static void add_prefetch(opts *o, const char *flag, const char *t)
{
    o->prefetch[o->nprefetch++] = parse_int(flag, t, 1, 64);
}

static void add_head(opts *o, const char *flag, const char *t)
{
    if (o->nheads >= 2) usage_error("%s: slot and keep at most once each", flag);
    if (!strcmp(t, "slot")) o->heads[o->nheads++] = 0;
    else if (!strcmp(t, "keep")) o->heads[o->nheads++] = 1;
    else usage_error("%s: slot or keep, not '%s'", flag, t);
}

static void add_dl(opts *o, const char *flag, const char *t)
{
    dl_spec d = {0, 0};
    if (!strcmp(t, "none")) d.kind = 0;
    else if (!strcmp(t, "max")) d.kind = 2;
    else if (!strcmp(t, "quarter")) d.kind = 3;
    else if (!strcmp(t, "half")) d.kind = 4;
    else if (!strncmp(t, "first:", 6)) d.kind = 1, d.k = parse_int(flag, t + 6, 1, SC_MAX_LAYERS);
    else usage_error("%s: none, first:K, quarter, half or max, not '%s'", flag, t);
    o->dls[o->ndls++] = d;
}

static void add_devup(opts *o, const char *flag, const char *t)
{
    if (o->ndevup >= 2) usage_error("%s: off and on at most once each", flag);
    if (!strcmp(t, "off")) o->devup[o->ndevup++] = 0;
    else if (!strcmp(t, "on")) o->devup[o->ndevup++] = 1;
    else usage_error("%s: off or on, not '%s'", flag, t);
}

static void parse(opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->model = "qwen3-1.7b", o->device = "auto", o->out = "runs/auto_sweep";
    o->steps = 4, o->lr = 1e-4, o->seed = 1234;
    const char *optims = "adamw,sgd", *caps = "24GiB,16GiB,8GiB", *ckpts = "none,selective,selective:proj,every:2,full";
    /* small enough for one cap and optimizer in ~3 minutes at the 1.7B shape on an H100 (<= ~42
       configurations fit a cap): widen with --prefetch 1,2,4 --device-layers none,quarter,half,max */
    const char *prefetch = "1,2", *heads = "slot,keep", *dls = "none,max", *devup = "off,on";
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            printf(usage_text, sc_config_names());
            exit(0);
        }
        if (!strcmp(f, "--dry-run")) { o->dry_run = 1; continue; }
        if (!strcmp(f, "--master-weights")) { o->master = 1; continue; }
        if (!strcmp(f, "--no-master-weights")) { o->no_master = 1; continue; }
        if (strncmp(f, "--", 2)) usage_error("unexpected argument '%s'", f);
        if (i + 1 >= argc) usage_error("option '%s' needs a value", f);
        const char *v = argv[++i];
        if (!strcmp(f, "--model")) o->model = v;
        else if (!strcmp(f, "--device")) o->device = v;
        else if (!strcmp(f, "--dtype")) o->dtype = v;
        else if (!strcmp(f, "--out")) o->out = v;
        else if (!strcmp(f, "--seq")) o->seq = parse_int(f, v, 2, 1 << 20);
        else if (!strcmp(f, "--batch")) o->batch = parse_int(f, v, 1, 1 << 16);
        else if (!strcmp(f, "--steps")) o->steps = parse_int(f, v, 1, 100000);
        else if (!strcmp(f, "--seed")) o->seed = (unsigned)parse_int(f, v, 0, 1 << 30);
        else if (!strcmp(f, "--lr")) {
            char *end;
            o->lr = strtod(v, &end);
            if (end == v || *end || !(o->lr > 0) || o->lr > 1) usage_error("--lr needs a number in (0, 1], got '%s'", v);
        } else if (!strcmp(f, "--time-limit")) {
            char *end;
            o->time_limit_s = strtod(v, &end);
            if (end == v || *end || !(o->time_limit_s > 0)) usage_error("--time-limit needs seconds > 0, got '%s'", v);
        } else if (!strcmp(f, "--optims")) optims = v;
        else if (!strcmp(f, "--caps")) caps = v;
        else if (!strcmp(f, "--ckpts")) ckpts = v;
        else if (!strcmp(f, "--prefetch")) prefetch = v;
        else if (!strcmp(f, "--heads")) heads = v;
        else if (!strcmp(f, "--device-layers")) dls = v;
        else if (!strcmp(f, "--device-update")) devup = v, o->devup_given = 1;
        else usage_error("unknown option '%s'", f);
    }
    split_list("--optims", optims, add_optim, o);
    split_list("--caps", caps, add_cap, o);
    split_list("--ckpts", ckpts, add_ckpt, o);
    split_list("--prefetch", prefetch, add_prefetch, o);
    split_list("--heads", heads, add_head, o);
    split_list("--device-layers", dls, add_dl, o);
    split_list("--device-update", devup, add_devup, o);
    if (strcmp(o->device, "cpu") && strcmp(o->device, "cuda") && strcmp(o->device, "auto"))
        usage_error("--device must be cpu, cuda or auto, not '%s'", o->device);
    if (o->dtype && strcmp(o->dtype, "f32") && strcmp(o->dtype, "bf16"))
        usage_error("--dtype must be f32 or bf16, not '%s'", o->dtype);
    if (o->master && o->no_master) usage_error("%s", "--master-weights and --no-master-weights exclude each other");
    if (!*o->out) usage_error("%s", "--out needs a directory");
}

/* ---- the machine ------------------------------------------------------------------------ */

static int omp_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* ---- configurations ----------------------------------------------------------------------- */

enum { ST_PENDING, ST_NOFIT, ST_RAN, ST_OOM, ST_FAILED, ST_SKIPPED, ST_NOAUTO };

typedef struct sweep_cfg {
    char name[320];
    sc_model_config mc; /* the base config with the mode, slide fields and mem_cap = the cap */
    sc_plan plan;
    int dl, is_auto;
    size_t pred_peak;   /* predicted peak allocated bytes */
    double pred_ms;     /* sc_plan_auto's predicted step; NAN where none */
    struct pred_parts { double comp, copy, hopt; } part; /* its parts: compute, copies, host optimizer (ms) */
    char pred_note[320];
    int status, n, bitwise;
    double median_ms, seconds;
    double phase_ms[4]; /* medians of the timed steps' fwd, bwd, recompute and opt spans (ms) */
    size_t peak_alloc, peak_resv;
    /* slide: the last step's traffic and host updates (sc_slide_info) */
    uint64_t h2d, d2h;
    size_t hparams;
    double hopt_ms;
    float *losses;      /* 1 + steps */
    char msg[256];
} sweep_cfg;

/* a configuration's prediction, kept for the same configuration at a later cap */
struct pred_memo {
    sc_optim optim;
    char name[320];
    double ms;
    struct pred_parts part;
    size_t peak;
    char note[320];
};

typedef struct sweep {
    opts o;
    sc_config cfg;
    sc_model_config base;
    int B, T, on_gpu, bf16, can_devup;
    const int32_t *ids;
    const float *params;
    FILE *csv;
    double t0, run_s, pred_s; /* elapsed clock start; time spent in runs and in predictions */
    int runs_done, preds_done, runs_left, preds_left;
    char device_name[160], versions[512], date[32];
    sc_auto_profile prof[2]; /* by optimizer (SGD, AdamW): the first sc_plan_auto's, reused after */
    double alone_pps[2];     /* by optimizer: the host optimizer alone (host_rate_alone); 0 not yet */
    /* predictions made so far, by optimizer and configuration: one serves every cap */
    struct pred_memo *memo;
    int nmemo, memo_cap;
} sweep;

static double now_s(void) { return (double)sc_tracer_now_ns() * 1e-9; }

static void fmt_time(char *buf, size_t cap, double s)
{
    if (s < 60) snprintf(buf, cap, "%.0fs", s);
    else if (s < 3600) snprintf(buf, cap, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(buf, cap, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

static void fmt_bytes(char *buf, size_t cap, size_t b)
{
    if (b >= ((size_t)1 << 30)) snprintf(buf, cap, "%.3f GiB", (double)b / GIB);
    else snprintf(buf, cap, "%.2f MiB", (double)b / MIB);
}

/* The predicted peak sc_plan_auto counts for a configuration: the planner's peak over the fixed
   bytes (resident: weights, gradients, master, AdamW state; slide: the window with the device
   layers), without a profile (times do not enter the peak). */
static size_t cheap_peak(const sweep *S, const sc_model_config *mc, const sc_plan *plan)
{
    int pb, gb, ab;
    sc_model_config_storage(mc, &pb, &gb, &ab);
    size_t F = mc->mode == SC_MODE_SLIDE ? sc_slide_window_bytes(&S->cfg, mc, plan) : sc_model_config_fixed_bytes(&S->cfg, mc);
    sc_plan_report rep;
    memset(&rep, 0, sizeof rep);
    if (sc_plan_evaluate(&rep, plan, &S->cfg, S->B, S->T, ab, F, NULL) != SC_SUCCESS) return SIZE_MAX;
    return rep.peak_bytes;
}

static int plans_equal(const sc_plan *a, const sc_plan *b)
{
    if (a->num_layers != b->num_layers) return 0;
    for (int l = 0; l < a->num_layers; l++)
        if (a->keep[l] != b->keep[l] || a->seg[l] != b->seg[l]) return 0;
    return 1;
}

static int count_dl(const sc_model_config *mc, int L)
{
    int n = 0;
    for (int l = 0; l < L; l++) n += mc->slide_device_layers[l] != 0;
    return n;
}

static void set_dl(sc_model_config *mc, int k)
{
    memset(mc->slide_device_layers, 0, sizeof mc->slide_device_layers);
    memset(mc->slide_device_layers, 1, (size_t)k);
}

/* Append a hand configuration unless one with the same knobs is there already. */
/* nothing predicted or measured yet */
static void no_numbers(sweep_cfg *c)
{
    c->pred_ms = c->part.comp = c->part.copy = c->part.hopt = NAN;
    for (int i = 0; i < 4; i++) c->phase_ms[i] = NAN;
}

/* c's predicted peak, step and its parts, from sc_plan_auto */
static void set_pred(sweep_cfg *c, const sc_plan_auto_result *res)
{
    c->pred_peak = res->peak_bytes;
    c->pred_ms = res->step_ms;
    c->part.comp = res->compute_ms, c->part.copy = res->copy_ms, c->part.hopt = res->host_opt_ms;
}

static void add_cfg(sweep_cfg *list, int *n, int max, const char *name, const sc_model_config *mc, const sc_plan *plan,
                    int dl)
{
    for (int i = 0; i < *n; i++)
        if (list[i].mc.mode == mc->mode && list[i].mc.slide_prefetch == mc->slide_prefetch &&
            list[i].mc.slide_keep_head == mc->slide_keep_head &&
            list[i].mc.slide_device_update == mc->slide_device_update && list[i].dl == dl &&
            plans_equal(&list[i].plan, plan))
            return;
    if (*n >= max) die("too many configurations");
    sweep_cfg *c = &list[(*n)++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->mc = *mc;
    c->plan = *plan;
    c->dl = dl;
    no_numbers(c);
}

/* Every hand configuration of the knob lists for one cap and optimizer, with its predicted peak
   and whether it fits the usable cap. Returns the count. */
static int enumerate(const sweep *S, sc_optim optim, size_t cap, sweep_cfg *list, int max)
{
    const opts *o = &S->o;
    int L = S->cfg.num_layers, n = 0;
    size_t usable = sc_plan_budget_usable(cap, &S->cfg, S->B, S->T);
    sc_model_config base = S->base;
    base.optim = optim;
    base.mem_cap = cap;
    int devup_ok = optim == SC_OPTIM_SGD && S->can_devup;
    char name[160];
    for (int p = 0; p < o->nckpts; p++) {
        sc_plan plan;
        if (sc_plan_parse(&plan, o->ckpts[p], L) != SC_SUCCESS) die(o->ckpts[p]);
        sc_model_config mc = base;
        snprintf(name, sizeof name, "resident %s", o->ckpts[p]);
        add_cfg(list, &n, max, name, &mc, &plan, 0);
    }
    for (int p = 0; p < o->nckpts; p++)
        for (int f = 0; f < o->nprefetch; f++)
            for (int h = 0; h < o->nheads; h++)
                for (int u = 0; u < o->ndevup; u++)
                    for (int d = 0; d < o->ndls; d++) {
                        int P = o->prefetch[f], du = o->devup[u];
                        if (P > L || (du && !devup_ok)) continue;
                        sc_plan plan;
                        sc_plan_parse(&plan, o->ckpts[p], L);
                        sc_model_config mc = base;
                        mc.mode = SC_MODE_SLIDE;
                        mc.slide_prefetch = P, mc.slide_keep_head = o->heads[h], mc.slide_device_update = du;
                        const dl_spec *ds = &o->dls[d];
                        int k = ds->kind == 1 ? ds->k : ds->kind == 3 ? L / 4 : ds->kind == 4 ? L / 2 : 0;
                        if (ds->kind == 2) /* the most first layers that fit (at least one) */
                            for (int j = L - 1; j >= 1 && !k; j--) {
                                set_dl(&mc, j);
                                if (cheap_peak(S, &mc, &plan) <= usable) k = j;
                            }
                        if ((ds->kind && !k) || k >= L || (k && du)) continue; /* the device update streams every layer */
                        set_dl(&mc, k);
                        char dls[48];
                        if (k) snprintf(dls, sizeof dls, "first:%d%s", k, ds->kind == 2 ? " (max)" : "");
                        else snprintf(dls, sizeof dls, "none");
                        snprintf(name, sizeof name, "slide %s P%d %s %s%s", o->ckpts[p], P, o->heads[h] ? "keep" : "slot",
                                 dls, du ? " device-update" : "");
                        add_cfg(list, &n, max, name, &mc, &plan, k);
                    }
    for (int i = 0; i < n; i++) {
        list[i].pred_peak = cheap_peak(S, &list[i].mc, &list[i].plan);
        list[i].status = list[i].pred_peak <= usable ? ST_PENDING : ST_NOFIT;
    }
    return n;
}

/* sc_plan_auto's prediction for exactly this configuration: every knob it would search set by
   the caller (the mode, the prefetch depth, the head, the device layers and the plan; resident:
   resident_only). It searches the kept head and SGD's device update wherever the caller's config
   leaves them possible; a clip norm rules both out (sc_model_create forbids them with clipping)
   and enters neither its memory nor its time model, so it pins a slot head and the host update.
   The returned configuration is checked against the one asked for. */
static void predict(sweep *S, sweep_cfg *c)
{
    sc_model_config mc = c->mc;
    mc.mem_cap = 0;
    sc_plan_auto_config ac;
    memset(&ac, 0, sizeof ac);
    /* no cap: the time model does not depend on it, so one prediction serves every cap */
    ac.B = S->B, ac.T = S->T, ac.ids = S->ids, ac.plan = &c->plan;
    ac.profile = &S->prof[mc.optim == SC_OPTIM_ADAMW];
    if (mc.mode == SC_MODE_RESIDENT) ac.resident_only = 1;
    else {
        ac.max_device_layers = c->dl ? 0 : -1;
        if (!mc.slide_device_update) mc.clip_grad_norm = 1e30f;
    }
    sc_plan_auto_result res;
    sc_result r = sc_plan_auto(&res, &S->cfg, &mc, &ac);
    if (r != SC_SUCCESS) {
        snprintf(c->pred_note, sizeof c->pred_note, "prediction failed: %.250s", sc_last_error());
        return;
    }
    int L = S->cfg.num_layers;
    int same = res.mc.mode == c->mc.mode && plans_equal(&res.plan, &c->plan);
    if (same && c->mc.mode == SC_MODE_SLIDE)
        same = res.mc.slide_prefetch == c->mc.slide_prefetch && res.mc.slide_keep_head == c->mc.slide_keep_head &&
               res.mc.slide_device_update == c->mc.slide_device_update && count_dl(&res.mc, L) == c->dl &&
               !memcmp(res.mc.slide_device_layers, c->mc.slide_device_layers, (size_t)L);
    if (!same) {
        snprintf(c->pred_note, sizeof c->pred_note, "sc_plan_auto returned another configuration (%.250s)", res.desc);
        return;
    }
    if (res.peak_bytes != c->pred_peak)
        snprintf(c->pred_note, sizeof c->pred_note, "sc_plan_auto's peak %zu differs from sc_plan_evaluate's", res.peak_bytes);
    set_pred(c, &res);
}

/* An out-of-memory step: the allocator's segments and blocks as the failing request found them, into
   OUT/oom_NNN.json (NNN: the runs done before it), to see what the reserved memory held */
static void oom_snapshot(const sweep *S, const sweep_cfg *c, const sc_allocator *al)
{
    char path[4096];
    const char *js = sc_allocator_oom_snapshot(al);
    if (!js) return;
    snprintf(path, sizeof path, "%s/oom_%03d.json", S->o.out, S->runs_done);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(js, f);
        fclose(f);
        printf("  (%s: the allocator when a step of %s failed)\n", path, c->name);
    }
}

/* Train c under its cap: 1 warm-up + steps steps, batch s at step s. */
static void run_cfg(const sweep *S, sweep_cfg *c)
{
    int steps = 1 + S->o.steps;
    double t0 = now_s();
    c->losses = (float *)calloc((size_t)steps, sizeof(float));
    double *walls = (double *)calloc((size_t)steps * 5, sizeof(double)), *phases = walls + steps;
    if (!c->losses || !walls) die("host memory");
    for (int s = 0; s < steps; s++) c->losses[s] = NAN;
    sc_model *m = NULL;
    sc_result r = sc_model_create(&m, &S->cfg, &c->mc, S->params);
    if (r != SC_SUCCESS) {
        c->status = r == SC_ERROR_OUT_OF_MEMORY ? ST_OOM : ST_FAILED;
        snprintf(c->msg, sizeof c->msg, "creating the model: %.200s", sc_last_error());
        free(walls);
        c->seconds = now_s() - t0;
        return;
    }
    sc_tracer tr;
    sc_tracer_config tc;
    memset(&tc, 0, sizeof tc);
    tc.warmup_steps = 1;
    tc.no_clear_refs = 1; /* no CPU peaks wanted: leave VmHWM alone */
    sc_model_tracer_timing(m, &tc);
    if (sc_tracer_init(&tr, &tc) != SC_SUCCESS) die("tracer");
    sc_model_set_tracer(m, &tr);
    sc_allocator *al = sc_model_allocator(m);
    size_t per = (size_t)S->B * (size_t)S->T;
    int done = 0;
    for (int s = 0; s < steps; s++) {
        float loss = NAN;
        sc_allocator_reset_peak(al);
        sc_tracer_step_begin(&tr, 0, s);
        r = sc_model_step(m, &c->plan, S->ids + (size_t)s * per, 1, S->B, S->T, 1, &loss);
        /* slide: the last step's host updates belong to its time */
        if (r == SC_SUCCESS && s + 1 == steps) r = sc_model_sync(m);
        if (r != SC_SUCCESS) {
            c->status = r == SC_ERROR_OUT_OF_MEMORY ? ST_OOM : ST_FAILED;
            snprintf(c->msg, sizeof c->msg, "step %d: %.200s", s + 1, sc_last_error());
            if (r == SC_ERROR_OUT_OF_MEMORY) oom_snapshot(S, c, al);
            sc_tracer_step_end(&tr, NAN, 0, NULL);
            break;
        }
        sc_tracer_mem mem = sc_model_tracer_mem(m);
        if (sc_tracer_step_end(&tr, loss, (double)per, &mem) != SC_SUCCESS) die("tracer");
        const sc_step_metrics *sm = sc_tracer_step_get(&tr, s);
        walls[s] = sm ? sm->wall_ms : NAN;
        for (int i = 0; i < 4; i++) /* SC_PHASE_FWD, BWD, RECOMPUTE, OPT */
            phases[(size_t)i * steps + s] = sm ? sm->phase_ms[SC_PHASE_FWD + i] : NAN;
        c->losses[s] = loss;
        if ((size_t)mem.peak_allocated > c->peak_alloc) c->peak_alloc = (size_t)mem.peak_allocated;
        if ((size_t)mem.peak_reserved > c->peak_resv) c->peak_resv = (size_t)mem.peak_reserved;
        done = s + 1;
    }
    if (done == steps && c->mc.mode == SC_MODE_SLIDE) {
        sc_slide_info si = sc_model_slide_info(m);
        c->h2d = si.h2d_bytes, c->d2h = si.d2h_bytes, c->hparams = si.host_update_params, c->hopt_ms = si.opt_ms;
    }
    if (done == steps) {
        sc_stats st = sc_stats_compute(walls + 1, steps - 1);
        c->status = ST_RAN;
        c->median_ms = st.median;
        c->n = st.n;
        for (int i = 0; i < 4; i++) c->phase_ms[i] = sc_stats_compute(phases + (size_t)i * steps + 1, steps - 1).median;
    }
    sc_model_set_tracer(m, NULL);
    sc_model_destroy(m);
    sc_tracer_uninit(&tr);
    free(walls);
    c->seconds = now_s() - t0;
}

/* 1 when every step's loss has the bits of the reference's */
static int same_bits(const float *a, const float *b, int n)
{
    return a && b && !memcmp(a, b, sizeof(float) * (size_t)n);
}

static const char *status_name(int s)
{
    switch (s) {
    case ST_NOFIT: return "does not fit (predicted)";
    case ST_RAN: return "ran";
    case ST_OOM: return "out of memory";
    case ST_FAILED: return "failed";
    case ST_SKIPPED: return "skipped (time limit)";
    case ST_NOAUTO: return "no configuration fits";
    }
    return "pending";
}

/* a CSV field without commas, quotes or newlines */
static void csv_clean(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < cap; i++) dst[i] = src[i] == ',' ? ';' : src[i] == '"' || src[i] == '\n' ? ' ' : src[i];
    dst[i] = 0;
}

static void csv_row(sweep *S, const char *cap, sc_optim optim, const sweep_cfg *c)
{
    char name[256], note[640], pp[32] = "", pa[32] = "", pr[32] = "", ps[32] = "", md[32] = "", n[16] = "", bw[8] = "";
    char both[640];
    csv_clean(name, sizeof name, c->name);
    snprintf(both, sizeof both, "%s%s%s", c->msg, c->msg[0] && c->pred_note[0] ? "; " : "", c->pred_note);
    csv_clean(note, sizeof note, both);
    if (c->pred_peak && c->pred_peak != SIZE_MAX) snprintf(pp, sizeof pp, "%zu", c->pred_peak);
    if (c->pred_ms == c->pred_ms) snprintf(ps, sizeof ps, "%.3f", c->pred_ms);
    if (c->status == ST_RAN) {
        snprintf(pa, sizeof pa, "%zu", c->peak_alloc);
        snprintf(pr, sizeof pr, "%zu", c->peak_resv);
        snprintf(md, sizeof md, "%.3f", c->median_ms);
        snprintf(n, sizeof n, "%d", c->n);
        snprintf(bw, sizeof bw, "%d", c->bitwise);
    }
    char tr[96] = ",,,";
    if (c->status == ST_RAN && c->mc.mode == SC_MODE_SLIDE)
        snprintf(tr, sizeof tr, "%llu,%llu,%zu,%.3f", (unsigned long long)c->h2d, (unsigned long long)c->d2h, c->hparams,
                 c->hopt_ms);
    char parts[96] = ",,", ph[128] = ",,,";
    if (c->pred_ms == c->pred_ms) snprintf(parts, sizeof parts, "%.3f,%.3f,%.3f", c->part.comp, c->part.copy, c->part.hopt);
    if (c->status == ST_RAN)
        snprintf(ph, sizeof ph, "%.3f,%.3f,%.3f,%.3f", c->phase_ms[0], c->phase_ms[1], c->phase_ms[2], c->phase_ms[3]);
    fprintf(S->csv, "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", cap, optim == SC_OPTIM_ADAMW ? "adamw" : "sgd",
            name, c->status == ST_NOFIT || c->status == ST_NOAUTO ? "no" : "yes", pp, pa, pr, ps, md, n, bw,
            status_name(c->status), note, tr, parts, ph);
    fflush(S->csv);
}

/* "elapsed 1m02s, left ~3m10s" from the mean time of the runs and predictions done so far */
static void progress_tail(const sweep *S, char *buf, size_t cap)
{
    double run = S->runs_done ? S->run_s / S->runs_done : S->on_gpu ? EST_RUN_GPU_S : EST_RUN_CPU_S;
    double pred = S->preds_done ? S->pred_s / S->preds_done : S->on_gpu ? EST_PRED_GPU_S : EST_PRED_CPU_S;
    char a[32], b[32];
    fmt_time(a, sizeof a, now_s() - S->t0);
    fmt_time(b, sizeof b, S->runs_left * run + S->preds_left * pred);
    snprintf(buf, cap, "elapsed %s, left ~%s", a, b);
}

static int over_time(const sweep *S) { return S->o.time_limit_s > 0 && now_s() - S->t0 > S->o.time_limit_s; }

static int by_pred(const void *a, const void *b)
{
    const sweep_cfg *x = *(const sweep_cfg *const *)a, *y = *(const sweep_cfg *const *)b;
    int nx = x->pred_ms != x->pred_ms, ny = y->pred_ms != y->pred_ms;
    if (nx != ny) return nx - ny;
    if (!nx && x->pred_ms != y->pred_ms) return x->pred_ms < y->pred_ms ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void ratio_range(double *lo, double *hi, double r)
{
    if (!(r == r)) return;
    if (r < *lo) *lo = r;
    if (r > *hi) *hi = r;
}

/* One cap and optimizer: auto, the hand configurations, the verdict lines into vd. Returns 1
   when auto is within 1.10x of the fastest hand configuration. */
/* The dtypes of the host optimizer's arrays in slide mode (p, m and v, g) and whether it writes a bf16 copy of
   the weights; returns the bytes of host memory one parameter's update reads and writes */
static size_t host_dtypes(const sweep *S, sc_optim optim, sc_dtype *pt, sc_dtype *st, sc_dtype *gt, int *wout)
{
    sc_model_config mc = S->base;
    mc.optim = optim;
    int pb, gb, ab, gpu_bf16 = mc.device == SC_DEVICE_CUDA && mc.bf16;
    sc_model_config_storage(&mc, &pb, &gb, &ab);
    *pt = gpu_bf16 && !mc.master_weights ? SC_BF16 : SC_F32, *st = mc.state_bf16 ? SC_BF16 : *pt;
    *gt = gb == 2 ? SC_BF16 : SC_F32, *wout = gpu_bf16 && mc.master_weights;
    return 2 * sc_dtype_size(*pt) + (optim == SC_OPTIM_ADAMW ? 4 * sc_dtype_size(*st) : 0) + sc_dtype_size(*gt) +
           (*wout ? 2 : 0);
}

/* The host optimizer alone on this host: slide's update (its dtypes, the library's thread count)
   over 64 M parameters (the 1.7B shape's layer is 50 M), on the pages and with the loop the library
   runs on this host (sc_cpu_optim_tune); the best of 3 after one warm-up. The floor a slide step's
   host updates cannot beat. */
static double host_rate_alone(sweep *S, sc_optim optim)
{
    double *rate = &S->alone_pps[optim == SC_OPTIM_ADAMW];
    if (*rate > 0) return *rate;
    sc_dtype pt, st, gt;
    int wout;
    host_dtypes(S, optim, &pt, &st, &gt, &wout);
    size_t n = S->on_gpu ? (size_t)64 << 20 : (size_t)1 << 20;
    int threads = omp_threads() > 1 ? omp_threads() - 1 : 1, adam = optim == SC_OPTIM_ADAMW;
    void *b[5] = {NULL, NULL, NULL, NULL, NULL}; /* p, m, v, g, w */
    size_t sz[5] = {n * 4, adam ? n * 4 : 0, adam ? n * 4 : 0, n * 4, wout ? n * 2 : 0};
    /* the loop and page size the library runs on this host (slide mode tunes them once a process) */
    if (adam && S->on_gpu && !sc_cpu_optim_choice().tuned) (void)sc_cpu_optim_tune(threads, 0);
    int huge = sc_cpu_optim_choice().huge_pages;
    for (int i = 0; i < 5; i++) {
        if (!sz[i]) continue;
        if (posix_memalign(&b[i], (size_t)2 << 20, sz[i])) die("host memory for the host optimizer's rate");
        sc__host_huge(b[i], sz[i], huge);
        memset(b[i], 0, sz[i]);
    }
    sc_optim_consts k = sc_optim_consts_make(1e-4f, 0.9f, 0.999f, 1e-8f, 0.0f, 1);
    double best = HUGE_VAL;
    for (int rep = 0; rep < 4; rep++) {
        double t0 = now_s();
        if (adam) sc_cpu_adamw_mt(b[0], b[1], b[2], pt, st, b[3], gt, (uint16_t *)b[4], n, &k, threads);
        else sc_cpu_sgd_mt(b[0], pt, b[3], gt, (uint16_t *)b[4], n, &k, threads);
        double dt = now_s() - t0;
        if (rep > 0 && dt < best) best = dt;
    }
    for (int i = 0; i < 5; i++) free(b[i]);
    *rate = (double)n / best;
    printf("host optimizer alone (%s, %d threads, %zu M parameters, best of 3, %s pages, prefetch %s): %.3f G "
           "params/s\n", adam ? "adamw" : "sgd", threads, n >> 20, huge ? "huge" : "4 KiB",
           sc_cpu_optim_choice().prefetch ? "on" : "off", *rate * 1e-9);
    return *rate;
}

/* A slide run's floors from its last step's traffic and host updates, at this process's measured
   rates: the copies each way at the profile's bandwidths, side by side, and the host updates at
   the optimizer's fastest rate, alone or inside that run's step (a host whose rate alone came out
   slower than inside the steps would otherwise give a floor the step beats); 0 where the run has
   none. mem_ms: the two share the host's memory, which the copies read (up) and write (down) as
   the update does its arrays: the update's bytes and the copies' at the bandwidth the update
   reaches alone (its bytes a parameter x its rate alone). */
static void floors(sweep *S, sc_optim optim, const sweep_cfg *c, double *copy_ms, double *hopt_ms, double *mem_ms,
                   double *mem_gbs)
{
    const sc_auto_profile *pf = &S->prof[optim == SC_OPTIM_ADAMW];
    *copy_ms = *hopt_ms = *mem_ms = *mem_gbs = 0.0;
    if (c->status != ST_RAN || c->mc.mode != SC_MODE_SLIDE || !pf->valid) return;
    double u = (double)c->h2d / pf->h2d_Bps, d = (double)c->d2h / pf->d2h_Bps;
    *copy_ms = (u > d ? u : d) * 1e3;
    if (c->hparams) {
        double alone = host_rate_alone(S, optim), inside = c->hopt_ms > 0 ? (double)c->hparams / (c->hopt_ms * 1e-3) : 0.0;
        *hopt_ms = (double)c->hparams / (alone > inside ? alone : inside) * 1e3;
        sc_dtype pt, st, gt;
        int wout;
        double bpp = (double)host_dtypes(S, optim, &pt, &st, &gt, &wout);
        *mem_gbs = alone * bpp * 1e-9;
        *mem_ms = ((double)c->hparams * bpp + (double)c->h2d + (double)c->d2h) / (alone * bpp) * 1e3;
    }
}

static int sweep_cell(sweep *S, int ci, sc_optim optim, sweep_cfg *list, int n, FILE *vd, int *all_bitwise, int *compared)
{
    const char *capn = S->o.cap_names[ci];
    size_t cap = S->o.caps[ci];
    const char *on = optim == SC_OPTIM_ADAMW ? "adamw" : "sgd";
    int steps = 1 + S->o.steps, fit = 0;
    for (int i = 0; i < n; i++) fit += list[i].status == ST_PENDING;
    char tail[96], a[32], b[32];
    printf("\n== cap %s (%zu bytes, usable %zu), %s: %d hand configurations, %d predicted to fit\n", capn, cap,
           sc_plan_budget_usable(cap, &S->cfg, S->B, S->T), on, n, fit);

    /* 1. auto */
    sweep_cfg au;
    memset(&au, 0, sizeof au);
    au.is_auto = 1;
    no_numbers(&au);
    sc_model_config mc = S->base;
    mc.optim = optim;
    sc_plan_auto_config ac;
    memset(&ac, 0, sizeof ac);
    ac.mem_cap = cap, ac.B = S->B, ac.T = S->T, ac.ids = S->ids;
    sc_auto_profile *pf = ac.profile = &S->prof[optim == SC_OPTIM_ADAMW];
    int fresh = !pf->valid;
    sc_plan_auto_result res;
    double t0 = now_s();
    sc_result r = over_time(S) ? SC_ERROR_TIMEOUT : sc_plan_auto(&res, &S->cfg, &mc, &ac);
    if (r == SC_SUCCESS && fresh)
        printf("profile (%s): layer fwd+bwd %.3f ms (fwd %.3f), rest %.3f ms, device update %.3f G params/s, host "
               "update %.3f G params/s (layers inside slide steps; %.3f beside copies both ways; a streamed head %.3f ms), "
               "copies %.1f GB/s up, %.1f GB/s down, duplex %.2f\n",
               on, pf->layer_s * 1e3, pf->lc.fwd_s * 1e3, pf->rest_s * 1e3, pf->dopt_pps * 1e-9, pf->opt_pps * 1e-9,
               pf->opt_busy_pps * 1e-9, pf->head_opt_s * 1e3, pf->h2d_Bps * 1e-9, pf->d2h_Bps * 1e-9, pf->duplex);
    S->preds_left--;
    if (r != SC_ERROR_TIMEOUT) S->pred_s += now_s() - t0, S->preds_done++;
    if (r == SC_SUCCESS) {
        snprintf(au.name, sizeof au.name, "auto: %.300s", res.desc);
        au.mc = res.mc;
        au.plan = res.plan;
        au.dl = res.device_layers;
        set_pred(&au, &res);
        if (over_time(S)) au.status = ST_SKIPPED;
        else {
            run_cfg(S, &au);
            S->run_s += au.seconds, S->runs_done++;
        }
    } else {
        snprintf(au.name, sizeof au.name, "auto");
        au.status = r == SC_ERROR_TIMEOUT ? ST_SKIPPED : ST_NOAUTO;
        if (r != SC_ERROR_TIMEOUT) snprintf(au.msg, sizeof au.msg, "%.250s", sc_last_error());
        if (r != SC_ERROR_TIMEOUT && r != SC_ERROR_OUT_OF_MEMORY) die("sc_plan_auto");
    }
    S->runs_left--;
    au.bitwise = au.status == ST_RAN;
    csv_row(S, capn, optim, &au);
    progress_tail(S, tail, sizeof tail);
    if (au.status == ST_RAN) {
        char pk[32], rv[32];
        fmt_bytes(a, sizeof a, au.pred_peak);
        fmt_bytes(pk, sizeof pk, au.peak_alloc);
        fmt_bytes(rv, sizeof rv, au.peak_resv);
        printf("auto: %s\n  predicted peak %s, step %.2f ms; measured peak %s (reserved %s), median %.2f ms (n=%d); %s\n",
               res.desc, a, au.pred_ms, pk, rv, au.median_ms, au.n, tail);
        double fc, fh, fm, gbs;
        floors(S, optim, &au, &fc, &fh, &fm, &gbs);
        if (fc > 0 || fh > 0)
            printf("  floors: copies %.2f ms (%.3f GB up, %.3f GB down), host updates %.2f ms (%.1f M parameters at the "
                   "faster of the rate alone and inside the steps, where they took %.2f ms); step / the higher floor %.3f\n", fc, (double)au.h2d * 1e-9,
                   (double)au.d2h * 1e-9, fh, (double)au.hparams * 1e-6, au.hopt_ms,
                   au.median_ms / (fc > fh ? fc : fh));
        if (fm > 0)
            printf("  host memory: %.2f ms for the update's and the copies' bytes at the %.1f GB/s the update reaches "
                   "alone; step / that %.3f\n", fm, gbs, au.median_ms / fm);
    }
    else printf("auto: %s%s%s; %s\n", status_name(au.status), au.msg[0] ? ": " : "", au.msg, tail);
    fflush(stdout);

    /* 2. predictions for what fits, then the runs, fastest predicted first */
    sweep_cfg **order = (sweep_cfg **)malloc(sizeof(sweep_cfg *) * (size_t)(n ? n : 1));
    if (!order) die("host memory");
    int no = 0, k = 0;
    for (int i = 0; i < n; i++) {
        if (list[i].status != ST_PENDING) continue;
        order[no++] = &list[i];
        int m = 0;
        while (m < S->nmemo && !(S->memo[m].optim == optim && !strcmp(S->memo[m].name, list[i].name))) m++;
        if (m < S->nmemo) {
            list[i].pred_ms = S->memo[m].ms, list[i].pred_peak = S->memo[m].peak;
            list[i].part = S->memo[m].part;
            snprintf(list[i].pred_note, sizeof list[i].pred_note, "%s", S->memo[m].note);
        } else {
            if (over_time(S)) { S->preds_left--; continue; }
            t0 = now_s();
            predict(S, &list[i]);
            S->pred_s += now_s() - t0, S->preds_done++, S->preds_left--;
            if (S->nmemo == S->memo_cap) {
                S->memo_cap = S->memo_cap ? 2 * S->memo_cap : 64;
                S->memo = (struct pred_memo *)realloc(S->memo, sizeof *S->memo * (size_t)S->memo_cap);
                if (!S->memo) die("host memory");
            }
            struct pred_memo *pm = &S->memo[S->nmemo++];
            pm->optim = optim, pm->ms = list[i].pred_ms, pm->peak = list[i].pred_peak;
            pm->part = list[i].part;
            snprintf(pm->name, sizeof pm->name, "%s", list[i].name);
            snprintf(pm->note, sizeof pm->note, "%s", list[i].pred_note);
        }
        progress_tail(S, tail, sizeof tail);
        fmt_bytes(a, sizeof a, list[i].pred_peak);
        if (list[i].pred_ms == list[i].pred_ms) snprintf(b, sizeof b, "%.2f ms", list[i].pred_ms);
        else snprintf(b, sizeof b, "n/a");
        printf("predict %d/%d %-48s peak %s, step %s%s; %s\n", ++k, fit, list[i].name, a, b,
               list[i].pred_note[0] ? " (see the CSV's note)" : "", tail);
        fflush(stdout);
    }
    qsort(order, (size_t)no, sizeof *order, by_pred);
    const sweep_cfg *ref = au.status == ST_RAN ? &au : NULL;
    for (int i = 0; i < no; i++) {
        sweep_cfg *c = order[i];
        if (over_time(S)) c->status = ST_SKIPPED;
        else {
            run_cfg(S, c);
            S->run_s += c->seconds, S->runs_done++;
        }
        S->runs_left--;
        if (c->status == ST_RAN) {
            if (!ref) { /* no auto run: the first run is the reference */
                ref = c;
                snprintf(c->msg, sizeof c->msg, "the bitwise reference (auto did not run)");
            }
            c->bitwise = same_bits(c->losses, ref->losses, steps);
        }
        csv_row(S, capn, optim, c);
        progress_tail(S, tail, sizeof tail);
        if (c->status == ST_RAN) {
            char pm[32] = "n/a", pk[32];
            if (c->pred_ms == c->pred_ms) snprintf(pm, sizeof pm, "%.2f", c->pred_ms);
            fmt_bytes(a, sizeof a, c->peak_alloc);
            fmt_bytes(pk, sizeof pk, c->pred_peak);
            printf("run %d/%d %-48s %9.2f ms (predicted %s)  peak %s (predicted %s)  bits %s; %s\n", i + 1, no, c->name,
                   c->median_ms, pm, a, pk, c->bitwise ? "equal" : "DIFFER", tail);
        }
        else printf("run %d/%d %-48s %s %s; %s\n", i + 1, no, c->name, status_name(c->status), c->msg, tail);
        fflush(stdout);
    }
    for (int i = 0; i < n; i++)
        if (list[i].status == ST_NOFIT) csv_row(S, capn, optim, &list[i]);

    /* 3. the verdict */
    const sweep_cfg *best = NULL;
    int ran = 0, oom = 0, failed = 0, skipped = 0, nofit = 0, equal = 0, unpredicted = 0;
    double slo = HUGE_VAL, shi = -HUGE_VAL, plo = HUGE_VAL, phi = -HUGE_VAL;
    for (int i = -1; i < n; i++) {
        const sweep_cfg *c = i < 0 ? &au : &list[i];
        if (c->status == ST_RAN) {
            ratio_range(&slo, &shi, c->pred_ms / c->median_ms);
            ratio_range(&plo, &phi, (double)c->peak_alloc / (double)c->pred_peak);
        }
        if (i < 0) continue;
        if (c->status == ST_RAN) {
            ran++, equal += c->bitwise, unpredicted += !(c->pred_ms == c->pred_ms);
            if (!best || c->median_ms < best->median_ms) best = c;
        }
        oom += c->status == ST_OOM, failed += c->status == ST_FAILED, skipped += c->status == ST_SKIPPED;
        nofit += c->status == ST_NOFIT;
    }
    int ok = 0;
    char line[4096]; /* names of at most 320 bytes each: never truncated */
    int len = snprintf(line, sizeof line, "cap %s %s: ", capn, on);
    if (au.status == ST_RAN && best) {
        double q = au.median_ms / best->median_ms;
        ok = q <= 1.10;
        (*compared)++;
        len += snprintf(line + len, sizeof line - (size_t)len,
                        "auto %.2f ms (%s), fastest hand %.2f ms (%s): auto / best %.3f (target <= 1.10: %s)", au.median_ms,
                        au.name + 6, best->median_ms, best->name, q, ok ? "met" : "NOT MET");
    } else
        len += snprintf(line + len, sizeof line - (size_t)len, "auto %s%s, %s", status_name(au.status),
                        au.status == ST_RAN ? (snprintf(a, sizeof a, " %.2f ms", au.median_ms), a) : "",
                        best ? "hand configurations ran" : "no hand configuration ran");
    len += snprintf(line + len, sizeof line - (size_t)len,
                    "; hand: %d of %d ran (%d do not fit as predicted, %d out of memory, %d failed, %d skipped)", ran, n,
                    nofit, oom, failed, skipped);
    double fc, fh, fm, gbs;
    floors(S, optim, &au, &fc, &fh, &fm, &gbs);
    if (fc > 0 || fh > 0)
        len += snprintf(line + len, sizeof line - (size_t)len,
                        "; auto's floors: copies %.2f ms, host updates %.2f ms (the optimizer's fastest rate), auto / the higher "
                        "%.3f", fc, fh, au.median_ms / (fc > fh ? fc : fh));
    if (fm > 0)
        len += snprintf(line + len, sizeof line - (size_t)len, "; host memory (both at %.1f GB/s) %.2f ms, auto / that %.3f",
                        gbs, fm, au.median_ms / fm);
    if (slo <= shi)
        len += snprintf(line + len, sizeof line - (size_t)len,
                        "; over the runs, predicted / measured step %.2f..%.2f (%d hand runs without a prediction), "
                        "measured / predicted peak allocated %.3f..%.3f", slo, shi, unpredicted, plo, phi);
    snprintf(line + len, sizeof line - (size_t)len, "; losses bitwise equal to %s at every step: %d of %d hand runs%s",
             au.status == ST_RAN ? "auto's" : "the first run's", equal, ran,
             au.status == ST_RAN ? "" : " (auto did not run)");
    if (equal != ran) *all_bitwise = 0;
    printf("%s\n", line);
    fprintf(vd, "%s\n", line);
    fflush(vd);
    free(order);
    free(au.losses);
    for (int i = 0; i < n; i++) free(list[i].losses), list[i].losses = NULL;
    return ok;
}

int main(int argc, char **argv)
{
    static sweep S;
    opts *o = &S.o;
    parse(o, argc, argv);
    if (sc_config_named(&S.cfg, o->model) != SC_SUCCESS) usage_error("--model: %s", sc_last_error());
    int L = S.cfg.num_layers;
    for (int i = 0; i < o->nckpts; i++) {
        sc_plan p;
        if (sc_plan_parse(&p, o->ckpts[i], L) != SC_SUCCESS) usage_error("--ckpts '%s': %s", o->ckpts[i], sc_last_error());
    }
    for (int i = 0; i < o->ndls; i++)
        if (o->dls[i].kind == 1 && o->dls[i].k >= L)
            usage_error("--device-layers first:%d: %s has %d layers (at most first:%d)", o->dls[i].k, S.cfg.name, L, L - 1);

    /* the device: a dry run only plans, so --device cuda plans for the GPU on any machine */
    S.base = sc_model_config_init();
    S.base.device = SC_DEVICE_CPU;
    if (!strcmp(o->device, "cuda")) S.base.device = SC_DEVICE_CUDA;
#ifdef SLIDECHECK_CUDA
    if (!strcmp(o->device, "auto") && sc_cuda_available() == SC_SUCCESS) S.base.device = SC_DEVICE_CUDA;
    if (!o->dry_run && !strcmp(o->device, "cuda") && sc_cuda_available() != SC_SUCCESS) die("--device cuda");
#else
    if (!o->dry_run && !strcmp(o->device, "cuda")) {
        fprintf(stderr, "auto_sweep: --device cuda: this binary was built without CUDA (build with nvcc present)\n");
        return 1;
    }
#endif
    S.on_gpu = S.base.device == SC_DEVICE_CUDA;
    S.bf16 = o->dtype ? !strcmp(o->dtype, "bf16") : S.on_gpu;
    if (S.bf16 && !S.on_gpu) usage_error("%s", "--dtype bf16 needs the GPU (the CPU backend runs f32)");
    if (o->master && !S.bf16) usage_error("%s", "--master-weights needs --dtype bf16");
    S.base.bf16 = S.bf16;
    S.base.master_weights = S.bf16 && !o->no_master;
    S.base.lr = (float)o->lr;
    S.base.seed = o->seed;
    S.can_devup = !S.base.master_weights;
    if (o->devup_given && !S.can_devup)
        for (int i = 0; i < o->ndevup; i++)
            if (o->devup[i]) usage_error("%s", "--device-update on needs no master weights (--no-master-weights)");
    S.B = o->batch ? o->batch : S.on_gpu ? 4 : 2;
    S.T = o->seq ? o->seq : S.on_gpu ? 2048 : 64;
    if (S.T > S.cfg.max_position) usage_error("--seq %d exceeds the max position of %s (%d)", S.T, S.cfg.name, S.cfg.max_position);
    if ((size_t)(1 + o->steps) * S.B * S.T > ((size_t)1 << 28)) usage_error("%s", "--steps x --batch x --seq is too large");

    time_t now = time(NULL);
    strftime(S.date, sizeof S.date, "%Y-%m-%d", localtime(&now));
    demo__cpu_name(S.device_name, sizeof S.device_name);
    snprintf(S.versions, sizeof S.versions, "CPU backend, %d OpenMP threads", omp_threads());
#ifdef SLIDECHECK_CUDA
    if (S.on_gpu && !o->dry_run) {
        sc_cuda *cu;
        sc_cuda_config cc;
        memset(&cc, 0, sizeof cc);
        if (sc_cuda_create(&cu, &cc) != SC_SUCCESS) die("CUDA");
        snprintf(S.device_name, sizeof S.device_name, "%s", sc_cuda_device_name(cu));
        sc_cuda_destroy(cu);
        int drv = 0, rt = 0, cb = 0;
        char kd[64];
        sc_cuda_versions(&drv, &rt, &cb);
        demo__driver_version(kd, sizeof kd);
        char host[160];
        demo__cpu_name(host, sizeof host);
        snprintf(S.versions, sizeof S.versions, "driver %s (CUDA %d.%d), runtime %d.%d, cuBLAS %d.%d.%d; host %s, %d "
                 "OpenMP threads", kd, drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10, cb / 10000, cb / 100 % 100,
                 cb % 100, host, omp_threads());
    }
#endif
    if (S.on_gpu && o->dry_run) snprintf(S.device_name, sizeof S.device_name, "a GPU (dry run: planned only)");

    char cmd[2048];
    size_t used = 0;
    for (int i = 0; i < argc && used + 2 < sizeof cmd; i++)
        used += (size_t)snprintf(cmd + used, sizeof cmd - used, "%s%s", i ? " " : "", argv[i]);
    char setup[2048];
    snprintf(setup, sizeof setup, "%s (%d layers, %.1fM params), B=%d T=%d, %s, lr %g, 1 warm-up + %d timed steps; %s; %s; %s",
             S.cfg.name, L, (double)sc_config_num_params(&S.cfg) / 1e6, S.B, S.T,
             S.bf16 ? (S.base.master_weights ? "bf16 + f32 master" : "bf16") : "f32", o->lr, o->steps, S.device_name,
             S.versions, S.date);
    printf("auto_sweep: --mode auto against the hand knobs under the same caps\n%s\n%s\n", setup, cmd);

    /* every cell's configurations, and what fits, before anything runs */
    int ncells = o->ncaps * o->noptims, maxc = 1 + o->nckpts * (1 + o->nprefetch * o->nheads * o->ndevup * o->ndls);
    sweep_cfg **cells = (sweep_cfg **)calloc((size_t)ncells, sizeof *cells);
    int *ncfg = (int *)calloc((size_t)ncells, sizeof(int));
    if (!cells || !ncfg) die("host memory");
    int total_fit = 0, total_pred = 0;
    for (int ci = 0; ci < o->ncaps; ci++)
        for (int oi = 0; oi < o->noptims; oi++) {
            int c = ci * o->noptims + oi, fit = 0;
            cells[c] = (sweep_cfg *)calloc((size_t)maxc, sizeof(sweep_cfg));
            if (!cells[c]) die("host memory");
            ncfg[c] = enumerate(&S, o->optims[oi], o->caps[ci], cells[c], maxc);
            for (int i = 0; i < ncfg[c]; i++) {
                if (cells[c][i].status != ST_PENDING) continue;
                fit++;
                int seen = 0; /* the same configuration at an earlier cap: its prediction is reused */
                for (int cj = 0; cj < ci && !seen; cj++)
                    for (int j = 0; j < ncfg[cj * o->noptims + oi] && !seen; j++)
                        seen = cells[cj * o->noptims + oi][j].status == ST_PENDING &&
                               !strcmp(cells[cj * o->noptims + oi][j].name, cells[c][i].name);
                total_pred += !seen;
            }
            total_fit += fit;
            printf("cap %s %s: %d hand configurations, %d predicted to fit (usable %.3f GiB)\n", o->cap_names[ci],
                   o->optims[oi] == SC_OPTIM_ADAMW ? "adamw" : "sgd", ncfg[c], fit,
                   (double)sc_plan_budget_usable(o->caps[ci], &S.cfg, S.B, S.T) / GIB);
            if (o->dry_run)
                for (int i = 0; i < ncfg[c]; i++) {
                    char pb[32];
                    fmt_bytes(pb, sizeof pb, cells[c][i].pred_peak);
                    printf("  %-52s predicted peak %12s  %s\n", cells[c][i].name, pb,
                           cells[c][i].status == ST_PENDING ? "fits" : "does not fit");
                }
        }
    if (!S.can_devup && o->noptims && (o->optims[0] == SC_OPTIM_SGD || o->noptims > 1))
        printf("note: SGD's device update needs no master weights: not in this sweep\n");
    double er = S.on_gpu ? EST_RUN_GPU_S : EST_RUN_CPU_S, ep = S.on_gpu ? EST_PRED_GPU_S : EST_PRED_CPU_S;
    {
        char t[32];
        fmt_time(t, sizeof t, (ncells + total_fit) * er + (ncells + total_pred) * ep);
        printf("expected: %d cells, %d runs and %d sc_plan_auto calls: ~%s (assuming %.1f s a run and %.1f s a "
               "prediction%s)%s\n", ncells, ncells + total_fit, ncells + total_pred, t, er, ep,
               S.on_gpu ? ", the 1.7B shape on an H100" : "", o->time_limit_s > 0 ? "; --time-limit stops it sooner" : "");
    }
    fflush(stdout);
    if (o->dry_run) return 0;

    if (demo_mkdirs(o->out)) exit(1);
    char path[4200];
    snprintf(path, sizeof path, "%s/sweep.csv", o->out);
    S.csv = fopen(path, "w");
    if (!S.csv) {
        fprintf(stderr, "auto_sweep: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    fprintf(S.csv, "cap,optim,config,fits,pred_peak_bytes,peak_alloc_bytes,peak_reserved_bytes,pred_step_ms,median_step_ms,"
                   "n,bitwise_equal,status,note,h2d_bytes,d2h_bytes,host_update_params,host_opt_ms,pred_compute_ms,pred_copy_ms,"
                   "pred_host_opt_ms,fwd_ms,bwd_ms,recompute_ms,opt_ms\n");
    snprintf(path, sizeof path, "%s/verdict.txt", o->out);
    FILE *vd = fopen(path, "w");
    if (!vd) {
        fprintf(stderr, "auto_sweep: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    fprintf(vd, "auto_sweep: %s\n%s\n", setup, cmd);

    /* the host weights (once) and one batch per step */
    size_t np = sc_config_num_params(&S.cfg), per = (size_t)S.B * S.T;
    float *params = (float *)malloc(sizeof(float) * np);
    int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * per * (size_t)(1 + o->steps));
    if (!params || !ids) die("host memory");
    if (sc_params_init(params, &S.cfg, o->seed) != SC_SUCCESS) die("the weights");
    sc_rng rng = sc_rng_seed((uint64_t)o->seed + 77);
    for (size_t i = 0; i < per * (size_t)(1 + o->steps); i++) ids[i] = (int32_t)(sc_rng_u64(&rng) % (uint64_t)S.cfg.vocab_size);
    S.params = params, S.ids = ids;
    S.runs_left = ncells + total_fit, S.preds_left = ncells + total_pred;
    S.t0 = now_s();

    int met = 0, all_bitwise = 1, compared = 0;
    for (int ci = 0; ci < o->ncaps; ci++)
        for (int oi = 0; oi < o->noptims; oi++) {
            int c = ci * o->noptims + oi;
            met += sweep_cell(&S, ci, o->optims[oi], cells[c], ncfg[c], vd, &all_bitwise, &compared);
        }
    char t[32];
    fmt_time(t, sizeof t, now_s() - S.t0);
    char line[512];
    snprintf(line, sizeof line, "VERDICT: auto within 1.10x of the fastest hand configuration in %d of %d cells where "
             "both ran (%d cells in all); every run's losses bitwise equal to auto's: %s; %s", met, compared, ncells,
             all_bitwise ? "yes" : "NO", t);
    printf("%s\n", line);
    fprintf(vd, "%s\n", line);
    if (fclose(vd) || fclose(S.csv)) {
        fprintf(stderr, "auto_sweep: writing %s failed\n", o->out);
        return 1;
    }
    printf("wrote %s/sweep.csv and %s/verdict.txt\n", o->out, o->out);
    for (int c = 0; c < ncells; c++) free(cells[c]);
    free(cells);
    free(ncfg);
    free(params);
    free(ids);
    free(S.memo);
    return 0;
}
