/* demo.h - what the demos share: flags, the device and its versions, a traced training run that
   stops cleanly on out-of-memory, statistics over the measured steps, CSV and summary.md writers.

   Include it from one .c file, after slidecheck.h (with SLIDECHECK_IMPLEMENTATION) and plot.h
   (with the stb implementations, see plot.h). Figure recipes that several demos draw live in
   demos/figs.h; this file draws nothing.

   A demo's life:

       demo d;
       demo_begin(&d, "t1m2", argc, argv, usage, my_flag, &my_opts); // parse, pick the device
       demo_run r = demo_run_make(&d, "recompute on", "full", SC_MODE_RESIDENT, B, T, steps);
       demo_train(&d, &r, ids, 1);                  // traced steps; 1 = stopped by a clean OOM
       ... demo_step_stats(&r, demo_wall_ms) ...     // median / mean / 95% CI (Student's t)
       FILE *md = demo_md_begin(&d, "Recompute off vs on", "what this shows");
       demo_run_free(&r);

   Every failure other than a clean out-of-memory prints a message and exits 1; bad flags exit 2. */
#ifndef DEMOS_DEMO_H
#define DEMOS_DEMO_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__GNUC__)
#define DEMO_DEF static __attribute__((unused))
#else
#define DEMO_DEF static
#endif

#include "machine.h"

#define DEMO_GIB 1073741824.0
#define DEMO_MIB 1048576.0

/* ---- flags ---------------------------------------------------------------------------------- */

typedef struct demo_opts {
    const char *model;     /* --model NAME (default tiny) */
    const char *device;    /* --device cpu|cuda|auto (default auto) */
    const char *out;       /* --out DIR (default runs/<demo>) */
    const char *dtype;     /* --dtype f32|bf16 (default: bf16 on the GPU, f32 on the CPU) */
    const char *font;      /* --font PATH: a .ttf for the figures */
    int steps, seq, batch; /* 0: the demo's default */
    int warmup;            /* --warmup N steps left out of every statistic (default 1) */
    size_t mem_cap;        /* --mem-cap SIZE (0: none) */
    unsigned seed;         /* --seed N (default 1234) */
} demo_opts;

/* A demo's own flags: return 1 when `flag` (with its value) was taken, 0 when it is unknown. */
typedef int (*demo_flag_fn)(void *user, const char *flag, const char *value);

/* A demo with one flag of its own: demo_take_one as the demo_flag_fn, a demo_flag as its user
   pointer (value: NULL unless given). */
typedef struct demo_flag {
    const char *name, *value;
} demo_flag;

DEMO_DEF int demo_take_one(void *user, const char *flag, const char *value)
{
    demo_flag *f = (demo_flag *)user;
    if (strcmp(flag, f->name)) return 0;
    f->value = value;
    return 1;
}

typedef struct demo {
    const char *name;        /* the program, for messages */
    demo_opts o;
    sc_config cfg;
    sc_model_config mc;      /* device, dtype, seed, AdamW; every run starts from a copy */
    int on_gpu, bf16;
    char device_name[160];   /* the GPU's name, or the CPU's model name */
    char versions[256];      /* driver / CUDA / cuBLAS, or the CPU backend's threads */
    char date[32];           /* YYYY-MM-DD */
    char cmdline[1024];
    const char *usage;
} demo;

DEMO_DEF void demo_usage_error(const demo *d, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", d->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(run '%s --help' for usage)\n", d->name);
    exit(2);
}

DEMO_DEF void demo_die(const demo *d, const char *what)
{
    fflush(stdout);
    fprintf(stderr, "\n%s: %s: %s\n", d->name, what, sc_last_error());
    exit(1);
}

/* An integer flag value in [lo, hi], else a usage error. */
DEMO_DEF int demo_parse_int(const demo *d, const char *flag, const char *v, int lo, int hi)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi)
        demo_usage_error(d, "%s needs an integer in [%d, %d], got '%s'", flag, lo, hi, v);
    return (int)x;
}

DEMO_DEF const char *demo_common_usage =
    "common options:\n"
    "  --model NAME     built-in model shape (default tiny; random init): %s\n"
    "  --device D       cpu, cuda or auto (default auto: the GPU when one is usable)\n"
    "  --dtype T        f32 or bf16 (default bf16 on the GPU, f32 on the CPU)\n"
    "  --steps N        training steps per run (default: the demo's)\n"
    "  --warmup N       first steps left out of every statistic (default 1)\n"
    "  --seq N          tokens per sequence (default: the demo's)\n"
    "  --batch N        sequences per step (default: the demo's)\n"
    "  --mem-cap SIZE   device memory cap, e.g. 16GiB (default none)\n"
    "  --seed N         initial weights and tokens (default 1234)\n"
    "  --out DIR        where the CSVs, PNGs and summary.md go (default runs/%s)\n"
    "  --font PATH      a TrueType font for the figures (default DejaVu Sans; a built-in\n"
    "                   fallback when none can be read)\n"
    "  --help           this text\n";

DEMO_DEF void demo__pick_device(demo *d)
{
    const char *want = d->o.device;
    d->mc.device = SC_DEVICE_CPU;
    if (!strcmp(want, "cpu")) return;
#ifdef SLIDECHECK_CUDA
    if (sc_cuda_available() == SC_SUCCESS) {
        d->mc.device = SC_DEVICE_CUDA;
        return;
    }
    if (!strcmp(want, "cuda")) demo_die(d, "--device cuda");
#else
    if (!strcmp(want, "cuda")) {
        fprintf(stderr, "%s: --device cuda: this binary was built without CUDA (build with nvcc present)\n", d->name);
        exit(1);
    }
#endif
}

/* Parse the flags (common ones here, the rest through fn), pick the device, fill in the
   versions and the date, and set the model up: AdamW, lr 1e-3, bf16 with f32 master weights on
   the GPU unless --dtype f32. */
DEMO_DEF void demo_begin(demo *d, const char *name, int argc, char **argv, const char *usage, demo_flag_fn fn,
                         void *user)
{
    memset(d, 0, sizeof *d);
    d->name = name;
    d->usage = usage;
    demo_opts *o = &d->o;
    o->model = "tiny";
    o->device = "auto";
    o->warmup = 1;
    o->seed = 1234;
    static char out_default[256];
    snprintf(out_default, sizeof out_default, "runs/%s", name);
    o->out = out_default;
    size_t used = 0;
    for (int i = 0; i < argc && used + 2 < sizeof d->cmdline; i++)
        used += (size_t)snprintf(d->cmdline + used, sizeof d->cmdline - used, "%s%s", i ? " " : "", argv[i]);
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            printf("%s\n", usage);
            printf(demo_common_usage, sc_config_names(), name);
            exit(0);
        }
        if (strncmp(f, "--", 2)) demo_usage_error(d, "unexpected argument '%s'", f);
        if (i + 1 >= argc) demo_usage_error(d, "option '%s' needs a value", f);
        const char *v = argv[++i];
        if (!strcmp(f, "--model")) o->model = v;
        else if (!strcmp(f, "--device")) o->device = v;
        else if (!strcmp(f, "--dtype")) o->dtype = v;
        else if (!strcmp(f, "--out")) o->out = v;
        else if (!strcmp(f, "--font")) o->font = v;
        else if (!strcmp(f, "--steps")) o->steps = demo_parse_int(d, f, v, 1, 1000000);
        else if (!strcmp(f, "--warmup")) o->warmup = demo_parse_int(d, f, v, 0, 1000000);
        else if (!strcmp(f, "--seq")) o->seq = demo_parse_int(d, f, v, 2, 1 << 20);
        else if (!strcmp(f, "--batch")) o->batch = demo_parse_int(d, f, v, 1, 1 << 16);
        else if (!strcmp(f, "--seed")) o->seed = (unsigned)demo_parse_int(d, f, v, 0, 1 << 30);
        else if (!strcmp(f, "--mem-cap")) {
            if (sc_parse_size(v, &o->mem_cap) || !o->mem_cap)
                demo_usage_error(d, "--mem-cap needs a size such as 16GiB or 512MiB, got '%s'", v);
        } else if (!fn || !fn(user, f, v)) demo_usage_error(d, "unknown option '%s'", f);
    }
    if (strcmp(o->device, "cpu") && strcmp(o->device, "cuda") && strcmp(o->device, "auto"))
        demo_usage_error(d, "--device must be cpu, cuda or auto, not '%s'", o->device);
    if (o->dtype && strcmp(o->dtype, "f32") && strcmp(o->dtype, "bf16"))
        demo_usage_error(d, "--dtype must be f32 or bf16, not '%s'", o->dtype);
    if (!*o->out) demo_usage_error(d, "%s", "--out needs a directory");
    if (sc_config_named(&d->cfg, o->model) != SC_SUCCESS) demo_usage_error(d, "--model: %s", sc_last_error());
    if (o->seq > d->cfg.max_position)
        demo_usage_error(d, "--seq %d exceeds the max position of %s (%d)", o->seq, d->cfg.name, d->cfg.max_position);
    if (o->font) { /* DIR/Name.ttf: the bold face is DIR/Name-Bold.ttf when there is one */
        static char bold[4096];
        size_t n = strlen(o->font);
        FILE *bf = NULL;
        if (n > 4 && n < sizeof bold - 6 && !strcmp(o->font + n - 4, ".ttf")) {
            snprintf(bold, sizeof bold, "%.*s-Bold.ttf", (int)(n - 4), o->font);
            bf = fopen(bold, "rb");
        }
        if (bf) fclose(bf);
        pl_set_font_paths(o->font, bf ? bold : NULL);
    }

    d->mc = sc_model_config_init();
    d->mc.seed = o->seed;
    d->mc.optim = SC_OPTIM_ADAMW;
    d->mc.lr = 1e-3f;
    d->mc.mem_cap = o->mem_cap;
    demo__pick_device(d);
    d->on_gpu = d->mc.device == SC_DEVICE_CUDA;
    d->bf16 = o->dtype ? !strcmp(o->dtype, "bf16") : d->on_gpu;
    if (d->bf16 && !d->on_gpu) demo_usage_error(d, "%s", "--dtype bf16 needs the GPU (the CPU backend runs f32)");
    d->mc.bf16 = d->bf16;
    d->mc.master_weights = d->bf16; /* f32 master weights and AdamW state, bf16 working copies */

    time_t now = time(NULL);
    strftime(d->date, sizeof d->date, "%Y-%m-%d", localtime(&now));
    demo__cpu_name(d->device_name, sizeof d->device_name);
    snprintf(d->versions, sizeof d->versions, "CPU backend, %d OpenMP threads", sc__optim_threads(0));
#ifdef SLIDECHECK_CUDA
    if (d->on_gpu) {
        sc_cuda *cu;
        sc_cuda_config cc;
        memset(&cc, 0, sizeof cc);
        if (sc_cuda_create(&cu, &cc) != SC_SUCCESS) demo_die(d, "CUDA");
        snprintf(d->device_name, sizeof d->device_name, "%s", sc_cuda_device_name(cu));
        sc_cuda_destroy(cu);
        int drv = 0, rt = 0, cb = 0;
        char kd[64];
        sc_cuda_versions(&drv, &rt, &cb);
        demo__driver_version(kd, sizeof kd);
        snprintf(d->versions, sizeof d->versions, "driver %s (CUDA %d.%d), runtime %d.%d, cuBLAS %d.%d.%d", kd,
                 drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10, cb / 10000, cb / 100 % 100, cb % 100);
    }
#endif
    if (demo_mkdirs(o->out)) exit(1);
}

/* "Qwen3-1.7B shape, B=1, T=256, bf16+master, NVIDIA H100 80GB HBM3, 2026-11-23": for subtitles. */
DEMO_DEF const char *demo_setup_line(const demo *d, int B, int T)
{
    static char buf[512];
    char bt[64] = "";
    if (B > 0) snprintf(bt, sizeof bt, "B=%d, ", B);
    if (T > 0) snprintf(bt + strlen(bt), sizeof bt - strlen(bt), "T=%d, ", T);
    snprintf(buf, sizeof buf, "%s (%d layers, %.2fM params), %s%s, AdamW; %s; %s", d->cfg.name, d->cfg.num_layers,
             (double)sc_config_num_params(&d->cfg) / 1e6, bt, d->bf16 ? "bf16 + f32 master" : "fp32", d->device_name,
             d->date);
    return buf;
}

/* ---- a traced training run -------------------------------------------------------------- */

/* What one step measured. Times in ms, memory in bytes. The model times recompute spans beside
   its backward spans (not inside them), so ph[BWD] is the backward proper and ph[RECOMPUTE]
   the replay; in slide mode ph[H2D], ph[D2H] and ph[OPT] are busy times of work that ran beside
   the compute (see demos/figs.h), not parts of the wall time. */
typedef struct demo_step {
    float loss;
    double wall_ms, ph[SC_PHASE_COUNT];
    int64_t alloc_peak, reserved_peak;   /* the allocator's peaks within the step */
    int64_t alloc_end, reserved_end;     /* at the step's end */
    int64_t rss_peak, rss_end;           /* host RSS: true peak within the step, and at its end */
    size_t saved;                        /* saved activations after the forward (resident mode) */
    uint64_t h2d_bytes, d2h_bytes;       /* slide mode */
    double opt_wait_ms;                  /* slide mode: the step's wait for the host optimizer */
} demo_step;

typedef struct demo_run {
    char label[64];        /* for legends: "recompute off", "slide", ... */
    char policy[128];      /* checkpoint policy as sc_plan_parse takes it */
    sc_mode mode;
    int B, T, steps;
    sc_plan plan;
    sc_tracer tr;          /* kept after the run: per-layer stats, memory events */
    int traced;
    demo_step *st;         /* steps [0, done) */
    int done;
    int oom;               /* 1: the allocator refused memory (msg holds its report) */
    char msg[2048];
    size_t slide_window;   /* slide mode: the device bytes of its window */
    /* called after each step's tracer step_end (e.g. to evaluate); non-zero stops the run */
    int (*on_step)(struct demo_run *r, int step, void *user);
    void *user;
} demo_run;

DEMO_DEF demo_run demo_run_make(const demo *d, const char *label, const char *policy, sc_mode mode, int B, int T,
                                int steps)
{
    demo_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.label, sizeof r.label, "%.*s", (int)sizeof r.label - 1, label);
    snprintf(r.policy, sizeof r.policy, "%.*s", (int)sizeof r.policy - 1, policy);
    r.mode = mode;
    r.B = B;
    r.T = T;
    r.steps = steps;
    if (sc_plan_parse(&r.plan, policy, d->cfg.num_layers) != SC_SUCCESS)
        demo_usage_error(d, "policy '%s': %s", policy, sc_last_error());
    return r;
}

DEMO_DEF void demo_run_free(demo_run *r)
{
    if (r->traced) sc_tracer_uninit(&r->tr);
    free(r->st);
    r->st = NULL;
    r->traced = 0;
}

static int demo__progress_tty = -1;

/* One progress line, rewritten in place on a terminal, a line per call otherwise (logs). */
DEMO_DEF void demo_progress(const char *fmt, ...)
{
    if (demo__progress_tty < 0) demo__progress_tty = isatty(1);
    va_list ap;
    va_start(ap, fmt);
    if (demo__progress_tty) printf("\r\033[K");
    vprintf(fmt, ap);
    va_end(ap);
    if (!demo__progress_tty) printf("\n");
    fflush(stdout);
}

DEMO_DEF void demo_progress_done(void)
{
    if (demo__progress_tty > 0) printf("\n");
    fflush(stdout);
}

DEMO_DEF int demo__is_oom(sc_result r) { return r == SC_ERROR_OUT_OF_MEMORY; }

/* Train r->steps steps from the seeded initial weights; step s uses batch s % nbatches of ids
   (nbatches x B x T tokens). Every step is traced (CUDA events on the GPU). Returns 0, or 1 when
   the allocator refused memory (r->oom = 1, r->msg holds the report; nothing was left
   allocated). Other failures exit. */
DEMO_DEF int demo_train(const demo *d, demo_run *r, const int32_t *ids, int nbatches)
{
    sc_model_config mc = d->mc;
    mc.mode = r->mode;
    free(r->st);
    r->st = (demo_step *)calloc((size_t)r->steps, sizeof(demo_step));
    if (!r->st) demo_die(d, "host memory");
    r->done = 0;
    r->oom = 0;
    r->msg[0] = 0;
    if (r->mode == SC_MODE_SLIDE) r->slide_window = sc_slide_window_bytes(&d->cfg, &mc, &r->plan);

    sc_model *m;
    sc_result rc = sc_model_create(&m, &d->cfg, &mc, NULL);
    if (rc != SC_SUCCESS) {
        if (!demo__is_oom(rc)) demo_die(d, "creating the model");
        r->oom = 1;
        snprintf(r->msg, sizeof r->msg, "%s", sc_last_error());
        return 1;
    }
    sc_tracer_config tc;
    memset(&tc, 0, sizeof tc);
    tc.warmup_steps = d->o.warmup > 0 ? d->o.warmup : -1;
    sc_model_tracer_timing(m, &tc);
    if (r->traced) sc_tracer_uninit(&r->tr);
    if (sc_tracer_init(&r->tr, &tc) != SC_SUCCESS) demo_die(d, "tracer");
    r->traced = 1;
    sc_model_set_tracer(m, &r->tr);
    sc_allocator *al = sc_model_allocator(m);
    size_t per = (size_t)r->B * (size_t)r->T;
    for (int s = 0; s < r->steps; s++) {
        demo_step *t = &r->st[s];
        sc_allocator_reset_peak(al);
        sc_tracer_step_begin(&r->tr, 0, s);
        rc = sc_model_step(m, &r->plan, ids + (size_t)(s % nbatches) * per, 1, r->B, r->T, 1, &t->loss);
        /* slide: the last step's host updates belong to its time */
        if (rc == SC_SUCCESS && s + 1 == r->steps) rc = sc_model_sync(m);
        if (rc != SC_SUCCESS) {
            if (!demo__is_oom(rc)) demo_die(d, "training step");
            r->oom = 1;
            snprintf(r->msg, sizeof r->msg, "%s", sc_last_error());
            sc_tracer_step_end(&r->tr, NAN, 0, NULL);
            break;
        }
        sc_slide_info si = sc_model_slide_info(m);
        sc_tracer_mem mem = sc_model_tracer_mem(m);
        t->saved = sc_model_last_saved_bytes(m);
        if (sc_tracer_step_end(&r->tr, t->loss, (double)per, &mem) != SC_SUCCESS) demo_die(d, "tracer");
        const sc_step_metrics *sm = sc_tracer_step_get(&r->tr, s);
        t->wall_ms = sm->wall_ms;
        memcpy(t->ph, sm->phase_ms, sizeof t->ph);
        t->alloc_peak = mem.peak_allocated;
        t->reserved_peak = mem.peak_reserved;
        t->alloc_end = mem.allocated;
        t->reserved_end = mem.reserved;
        t->rss_peak = sm->cpu_peak_rss;
        t->rss_end = sm->cpu_rss;
        t->h2d_bytes = si.h2d_bytes;
        t->d2h_bytes = si.d2h_bytes;
        t->opt_wait_ms = si.opt_wait_ms;
        r->done = s + 1;
        demo_progress("  %-22s step %3d/%d  loss %.4f  %8.2f ms  peak alloc %.3f GiB", r->label, s + 1, r->steps,
                      (double)t->loss, t->wall_ms, (double)t->alloc_peak / DEMO_GIB);
        if (r->on_step && r->on_step(r, s, r->user)) break;
    }
    demo_progress_done();
    sc_model_set_tracer(m, NULL);
    sc_model_destroy(m);
    return r->oom;
}

/* One entry of a --runs list: a checkpoint policy, or slide[:POLICY] (slide mode; policy none
   unless given). label is the entry as written, "slide:full" shown as "slide+full". */
typedef struct demo_run_spec {
    char label[64], policy[128];
    sc_mode mode;
} demo_run_spec;

/* Split a comma-separated --runs list into at most max specs, each policy checked ("layers:0-1,3"
   cannot be given here: its commas would split it). A bad or empty list is a usage error. */
DEMO_DEF int demo_parse_runs(const demo *d, const char *list, demo_run_spec *out, int max)
{
    char buf[1024];
    int n = 0;
    snprintf(buf, sizeof buf, "%.*s", (int)sizeof buf - 1, list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (n == max) demo_usage_error(d, "--runs: at most %d runs", max);
        demo_run_spec *r = &out[n++];
        int slide = !strncmp(tok, "slide", 5) && (!tok[5] || tok[5] == ':');
        const char *pol = slide ? (tok[5] ? tok + 6 : "none") : tok;
        snprintf(r->policy, sizeof r->policy, "%.*s", (int)sizeof r->policy - 1, pol);
        r->mode = slide ? SC_MODE_SLIDE : SC_MODE_RESIDENT;
        if (slide && strcmp(pol, "none")) snprintf(r->label, sizeof r->label, "slide+%.40s", pol);
        else snprintf(r->label, sizeof r->label, "%.*s", (int)sizeof r->label - 1, tok);
        sc_plan check;
        if (sc_plan_parse(&check, r->policy, d->cfg.num_layers) != SC_SUCCESS)
            demo_usage_error(d, "--runs '%s': %s", tok, sc_last_error());
    }
    if (!n) demo_usage_error(d, "%s", "--runs is empty");
    return n;
}

/* Random token ids in [0, vocab), seeded: n of them. */
DEMO_DEF int32_t *demo_random_tokens(const demo *d, size_t n)
{
    int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * (n ? n : 1));
    if (!ids) demo_die(d, "host memory");
    sc_rng rng = sc_rng_seed((uint64_t)d->o.seed + 77);
    for (size_t i = 0; i < n; i++) ids[i] = (int32_t)(sc_rng_u64(&rng) % (uint64_t)d->cfg.vocab_size);
    return ids;
}

/* ---- --mode auto: the library chooses under a memory cap -------------------------------------- */

/* sc_plan_auto's choice under a device memory cap of `cap` bytes for B x T (its short profile of
   a 2-layer copy runs on the demo's device, on ids). Returns 0 and *res, whose res->mc carries the
   cap, so that a run made by demo_auto_run trains under it; 1 when no configuration fits (msg:
   the library's message; res->min_cap: the smallest cap that would). Other failures exit. */
DEMO_DEF int demo_auto_choose(const demo *d, size_t cap, int B, int T, const int32_t *ids, sc_plan_auto_result *res,
                              char *msg, size_t msgcap)
{
    sc_model_config mc = d->mc;
    mc.mem_cap = 0; /* the cap is `cap`: sc_plan_auto puts it into res->mc */
    sc_plan_auto_config ac;
    memset(&ac, 0, sizeof ac);
    ac.mem_cap = cap, ac.B = B, ac.T = T, ac.ids = ids;
    sc_result rc = sc_plan_auto(res, &d->cfg, &mc, &ac);
    if (msg && msgcap) snprintf(msg, msgcap, "%.*s", (int)msgcap - 1, rc ? sc_last_error() : res->desc);
    if (rc == SC_ERROR_OUT_OF_MEMORY) return 1;
    if (rc != SC_SUCCESS) demo_die(d, "sc_plan_auto");
    return 0;
}

/* A run of auto's choice: *ad becomes d with res->mc (mode, slide fields, the cap) and the run
   gets res->plan; train it with demo_train(ad, &run, ...). */
DEMO_DEF demo_run demo_auto_run(demo *ad, const demo *d, const sc_plan_auto_result *res, const char *label, int B,
                                int T, int steps)
{
    *ad = *d;
    ad->mc = res->mc;
    demo_run r = demo_run_make(ad, label, "none", res->mc.mode, B, T, steps);
    r.plan = res->plan; /* a planned plan: no policy string names it */
    snprintf(r.policy, sizeof r.policy, "%.*s", (int)sizeof r.policy - 1, res->plan.name);
    return r;
}

/* Where auto put each layer, one letter a layer: D on the device for the whole step (resident
   mode, or slide's device layers), s streamed through slide's window. */
DEMO_DEF void demo_auto_placement(const sc_plan_auto_result *res, int num_layers, char *s)
{
    for (int l = 0; l < num_layers; l++)
        s[l] = res->mc.mode != SC_MODE_SLIDE || res->mc.slide_device_layers[l] ? 'D' : 's';
    s[num_layers] = 0;
}

/* "8,16,24" (GiB; a number may carry its unit instead, as in 512MiB) into at most max byte
   counts; a bad or empty list is a usage error. */
DEMO_DEF int demo_parse_caps(const demo *d, const char *flag, const char *list, size_t *out, int max)
{
    char buf[1024];
    int n = 0;
    snprintf(buf, sizeof buf, "%.*s", (int)sizeof buf - 1, list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (n == max) demo_usage_error(d, "%s: at most %d caps", flag, max);
        char *end;
        errno = 0;
        double g = strtod(tok, &end);
        if (!*end && !errno && end != tok && g > 0 && g < 1e6) out[n++] = (size_t)(g * DEMO_GIB);
        else if (sc_parse_size(tok, &out[n]) == SC_SUCCESS && out[n]) n++;
        else demo_usage_error(d, "%s needs sizes in GiB such as 8,16,24 (or 512MiB), got '%s'", flag, tok);
    }
    if (!n) demo_usage_error(d, "%s is empty", flag);
    return n;
}

/* ---- statistics over the measured steps --------------------------------------------------- */

/* Step fields as functions, for demo_step_stats. */
DEMO_DEF double demo_wall_ms(const demo_step *s) { return s->wall_ms; }
DEMO_DEF double demo_fwd_ms(const demo_step *s) { return s->ph[SC_PHASE_FWD]; }
DEMO_DEF double demo_recompute_ms(const demo_step *s) { return s->ph[SC_PHASE_RECOMPUTE]; }
DEMO_DEF double demo_bwd_ms(const demo_step *s) { return s->ph[SC_PHASE_BWD]; }
DEMO_DEF double demo_opt_ms(const demo_step *s) { return s->ph[SC_PHASE_OPT]; }
DEMO_DEF double demo_loss_ms(const demo_step *s) { return s->ph[SC_PHASE_LOSS]; }
DEMO_DEF double demo_h2d_ms(const demo_step *s) { return s->ph[SC_PHASE_H2D]; }
DEMO_DEF double demo_d2h_ms(const demo_step *s) { return s->ph[SC_PHASE_D2H]; }
DEMO_DEF double demo_alloc_peak_gib(const demo_step *s) { return (double)s->alloc_peak / DEMO_GIB; }
DEMO_DEF double demo_reserved_peak_gib(const demo_step *s) { return (double)s->reserved_peak / DEMO_GIB; }
DEMO_DEF double demo_rss_peak_gib(const demo_step *s) { return (double)s->rss_peak / DEMO_GIB; }

/* First step that counts (after the warm-up; 0 when the run is shorter than the warm-up). */
DEMO_DEF int demo_first_measured(const demo *d, const demo_run *r)
{
    return d->o.warmup < r->done ? d->o.warmup : 0;
}

/* Mean, median, std, 95% CI (Student's t, n-1 df), min, max of f over the measured steps. */
DEMO_DEF sc_stats demo_step_stats(const demo *d, const demo_run *r, double (*f)(const demo_step *))
{
    int first = demo_first_measured(d, r), n = r->done - first;
    double *v = (double *)malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!v) demo_die(d, "host memory");
    for (int i = 0; i < n; i++) v[i] = f(&r->st[first + i]);
    sc_stats s = sc_stats_compute(v, n);
    free(v);
    return s;
}

/* Largest value of f over the measured steps. */
DEMO_DEF double demo_step_max(const demo *d, const demo_run *r, double (*f)(const demo_step *))
{
    double m = 0;
    for (int i = demo_first_measured(d, r); i < r->done; i++)
        if (f(&r->st[i]) > m) m = f(&r->st[i]);
    return m;
}

/* Did every step of a lose exactly the bits of b's loss at that step? */
DEMO_DEF int demo_losses_bitwise(const demo_run *a, const demo_run *b)
{
    if (a->done != b->done) return 0;
    for (int s = 0; s < a->done; s++)
        if (memcmp(&a->st[s].loss, &b->st[s].loss, sizeof(float))) return 0;
    return 1;
}

/* A (layer, phase) cell over the measured steps (the tracer's warm-up rule). */
DEMO_DEF sc_stats demo_layer_stats(const demo_run *r, int layer, sc_phase ph)
{
    return sc_tracer_layer_stats(&r->tr, layer, ph);
}

/* The memory events of step `step`: time within the step (host clock, ms) and the allocator's
   allocated and reserved bytes and the host RSS after each. Arrays are malloc'd (free them);
   returns the count. */
DEMO_DEF int demo_mem_events(const demo *d, const demo_run *r, int step, double **t_ms, double **alloc,
                             double **reserved, double **rss)
{
    int64_t nall = sc_tracer_mem_count(&r->tr), n = 0;
    sc_tracer_mem_event ev;
    for (int64_t i = 0; i < nall; i++)
        if (!sc_tracer_mem_get(&r->tr, i, &ev) && ev.step == step) n++;
    size_t bytes = sizeof(double) * (size_t)(n ? n : 1);
    *t_ms = (double *)malloc(bytes);
    *alloc = (double *)malloc(bytes);
    *reserved = (double *)malloc(bytes);
    *rss = (double *)malloc(bytes);
    if (!*t_ms || !*alloc || !*reserved || !*rss) demo_die(d, "host memory");
    int k = 0;
    for (int64_t i = 0; i < nall; i++)
        if (!sc_tracer_mem_get(&r->tr, i, &ev) && ev.step == step) {
            (*t_ms)[k] = ev.t_ms;
            (*alloc)[k] = (double)ev.allocated;
            (*reserved)[k] = (double)ev.reserved;
            (*rss)[k] = (double)ev.rss;
            k++;
        }
    return k;
}

/* Memory over time within a step, as mean and std over the measured steps: each step's
   counter (0 allocated, 1 reserved, 2 RSS) is a step function of time; it is sampled at ngrid
   times t[i] = i * tmax / (ngrid - 1) (tmax: the longest measured step's last event), and a
   step that ended before t[i] holds its last value. Bytes in, bytes out. */
DEMO_DEF void demo_mem_band(const demo *d, const demo_run *r, int which, int ngrid, double *t, double *mean,
                            double *std)
{
    int first = demo_first_measured(d, r), nst = r->done - first;
    double tmax = 0;
    for (int s = first; s < r->done; s++) {
        double *tt, *a, *b, *c;
        int n = demo_mem_events(d, r, s, &tt, &a, &b, &c);
        if (n && tt[n - 1] > tmax) tmax = tt[n - 1];
        free(tt), free(a), free(b), free(c);
    }
    for (int i = 0; i < ngrid; i++) {
        t[i] = ngrid > 1 ? tmax * i / (ngrid - 1) : 0;
        mean[i] = std[i] = 0;
    }
    if (nst <= 0) return;
    double *sum2 = (double *)calloc((size_t)ngrid, sizeof(double));
    if (!sum2) demo_die(d, "host memory");
    for (int s = first; s < r->done; s++) {
        double *tt, *v[3];
        int n = demo_mem_events(d, r, s, &tt, &v[0], &v[1], &v[2]);
        int j = 0;
        for (int i = 0; i < ngrid; i++) {
            while (j + 1 < n && tt[j + 1] <= t[i]) j++;
            double y = n ? v[which][j] : 0;
            mean[i] += y;
            sum2[i] += y * y;
        }
        free(tt), free(v[0]), free(v[1]), free(v[2]);
    }
    for (int i = 0; i < ngrid; i++) {
        mean[i] /= nst;
        double var = nst > 1 ? (sum2[i] - nst * mean[i] * mean[i]) / (nst - 1) : 0;
        std[i] = var > 0 ? sqrt(var) : 0;
    }
    free(sum2);
}

/* ---- files ------------------------------------------------------------------------------------ */

/* Open DIR/name for writing (DIR = --out) and write the CSV header line; exits on failure. */
DEMO_DEF FILE *demo_csv(const demo *d, const char *name, const char *header)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", d->o.out, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "%s: cannot write %s: %s\n", d->name, path, strerror(errno));
        exit(1);
    }
    if (header) fprintf(f, "%s\n", header);
    return f;
}

/* Close a file from demo_csv / demo_md_begin, checking that everything was written. */
DEMO_DEF void demo_close(const demo *d, FILE *f, const char *name)
{
    if (ferror(f) | fclose(f)) {
        fprintf(stderr, "%s: cannot write %s/%s\n", d->name, d->o.out, name);
        exit(1);
    }
}

/* DIR/<png>, for pl_write_png. */
DEMO_DEF const char *demo_path(const demo *d, const char *name)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", d->o.out, name);
    return path;
}

/* Start DIR/summary.md: the title, what the demo shows, and the setup it ran on (model, device,
   versions, date, the command). The caller adds tables and figures, then demo_close(d, f,
   "summary.md"). */
DEMO_DEF FILE *demo_md_begin(const demo *d, const char *title, const char *intro, int B, int T, int steps)
{
    FILE *f = demo_csv(d, "summary.md", NULL);
    fprintf(f, "# %s\n\n%s\n\n", title, intro);
    fprintf(f, "| setup | |\n|---|---|\n");
    fprintf(f, "| model | %s shape, random init (%d layers, hidden %d, %zu params) |\n", d->cfg.name, d->cfg.num_layers,
            d->cfg.hidden_size, sc_config_num_params(&d->cfg));
    if (B > 0) fprintf(f, "| batch | B=%d, T=%d |\n", B, T);
    else fprintf(f, "| batch | B searched, T=%d |\n", T);
    fprintf(f, "| precision | %s; AdamW, lr %g |\n", d->bf16 ? "bf16 with f32 master weights and state" : "fp32",
            (double)d->mc.lr);
    fprintf(f, "| steps | %d per run, the first %d left out of the statistics |\n", steps, d->o.warmup);
    fprintf(f, "| device | %s |\n", d->device_name);
    fprintf(f, "| versions | %s |\n", d->versions);
    fprintf(f, "| date | %s |\n", d->date);
    fprintf(f, "| command | `%s` |\n\n", d->cmdline);
    return f;
}

/* An embedded figure with its caption. */
DEMO_DEF void demo_md_figure(FILE *f, const char *png, const char *caption)
{
    fprintf(f, "![%s](%s)\n\n*%s*\n\n", caption, png, caption);
}

/* "12.3 ± 0.4" (mean ± 95% CI half-width), or just the mean when n < 2. */
DEMO_DEF const char *demo_fmt_ci(char *buf, size_t cap, sc_stats s, int digits)
{
    if (s.n >= 2 && isfinite(s.ci95)) snprintf(buf, cap, "%.*f ± %.*f", digits, s.mean, digits, s.ci95);
    else snprintf(buf, cap, "%.*f", digits, s.mean);
    return buf;
}

#endif /* DEMOS_DEMO_H */
