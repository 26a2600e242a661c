/* textdemo: a byte-level Qwen learns to write like the GNU GPL, and recomputation and weight
   streaming change none of the bits it learns.

     build/textdemo [--text FILE] [--runs none,full,every:2,slide] [--steps N --batch B --seq T]

   The tokens are the text's bytes (vocab_size forced to 256). The last 10% of the text is held
   out. Every run trains the same model from the same seeded weights on the same random windows
   with AdamW; the runs differ only in how the step is computed: checkpoint policy `none` (keep
   every activation), `full` and `every:2` (replay the forward during backward), or slide mode
   (weights, gradients and optimizer state live on the host and stream to the compute, layer by
   layer). The program checks that all train losses, validation losses and final weights are
   bitwise identical, then lets the trained model write greedily from a few prompts.

   Writes into --out DIR: loss.csv, loss_curves.png and summary.md (with the samples).
   Exit status: 0 on success, 2 for bad flags, 1 for any other failure (including runs whose
   bits differ). */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STB_TRUETYPE_IMPLEMENTATION
#define STBTT_STATIC
#include "plot.h"
#include "demo.h"
#include "figs_text.h" /* run, loss_csv, loss_curves_png, show */

#define MAX_RUNS 8
static const char *prompts[] = {"This License", "The GNU", "You may"};
#define NPROMPTS 3

static const char *usage =
    "usage: textdemo [options]\n\n"
    "Trains a byte-level Qwen (vocab 256) on a text under several ways of computing the step,\n"
    "checks that every loss and weight is bitwise identical across them, and samples text.\n\n"
    "  --text FILE       training text (default /usr/share/common-licenses/GPL-3, else GPL-2)\n"
    "  --runs LIST       comma-separated: checkpoint policies (none, full, every:K, selective,\n"
    "                    ...) and slide (= slide mode, policy none) or slide:POLICY\n"
    "                    (default none,full,every:2,slide)\n"
    "  --lr X            AdamW learning rate, constant (default 1e-3)\n"
    "  --eval-every K    validation loss every K steps (default: steps / 10)\n"
    "  --val-windows N   validation windows of T bytes, evenly spaced (default 32)\n"
    "  --sample-bytes N  bytes generated per prompt (default 120)\n"
    "defaults: --steps 400, --batch 8 --seq 64 on the CPU, --batch 32 --seq 64 on CUDA\n";

typedef struct topts {
    const char *text, *runs;
    float lr;
    int eval_every, val_windows, sample_bytes;
} topts;

static int take_flag(void *user, const char *f, const char *v)
{
    topts *t = (topts *)user;
    char *end;
    long x = strtol(v, &end, 10);
    int ok = end != v && !*end && x >= 1 && x <= 1000000;
    if (!strcmp(f, "--text")) t->text = v, ok = 1;
    else if (!strcmp(f, "--runs")) t->runs = v, ok = 1;
    else if (!strcmp(f, "--lr")) ok = (t->lr = strtof(v, &end)) > 0 && end != v && !*end;
    else if (!strcmp(f, "--eval-every")) t->eval_every = (int)x;
    else if (!strcmp(f, "--val-windows")) t->val_windows = (int)x;
    else if (!strcmp(f, "--sample-bytes")) t->sample_bytes = (int)x;
    else return 0;
    if (!ok) fprintf(stderr, "textdemo: bad value '%s' for %s\n", v, f), exit(2);
    return 1;
}

/* The whole file (*n bytes), or NULL. */
static unsigned char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    long len = f && !fseek(f, 0, SEEK_END) ? ftell(f) : -1;
    unsigned char *buf = len >= 0 && !fseek(f, 0, SEEK_SET) ? (unsigned char *)malloc((size_t)len + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) free(buf), buf = NULL;
    if (f) fclose(f);
    *n = buf ? (size_t)len : 0;
    return buf;
}

static double now_ms(void) { return (double)sc_tracer_now_ns() / 1e6; }

/* A resident model holding the weights params (for evaluation and sampling). */
static sc_model *model_from(const demo *d, const float *params, int keep_logits)
{
    sc_model_config mc = d->mc;
    mc.mode = SC_MODE_RESIDENT;
    mc.keep_logits = keep_logits;
    sc_model *e;
    if (sc_model_create(&e, &d->cfg, &mc, params)) demo_die(d, "evaluation model");
    return e;
}

/* Train one run; evaluate before the first step, every k steps and after the last. */
static void train(const demo *d, run *r, const topts *t, const int32_t *batches, const int32_t *val, int W)
{
    int B = d->o.batch, T = d->o.seq, S = d->o.steps;
    sc_model_config mc = d->mc;
    mc.mode = r->mode;
    sc_plan none;
    sc_plan_parse(&none, "none", d->cfg.num_layers);
    size_t np = sc_config_num_params(&d->cfg);
    r->train = (float *)malloc(sizeof(float) * (size_t)S);
    r->val = (float *)malloc(sizeof(float) * (size_t)(S + 1));
    r->ms = (double *)calloc((size_t)S + 1, sizeof(double));
    r->params = (float *)malloc(sizeof(float) * np);
    if (!r->train || !r->val || !r->ms || !r->params) demo_die(d, "host memory");
    sc_model *m;
    if (sc_model_create(&m, &d->cfg, &mc, NULL)) demo_die(d, "creating the model");
    r->train_ms = r->eval_ms = 0;
    for (int s = 0; s <= S; s++) {
        double t0 = now_ms();
        if (s > 0 && sc_model_step(m, &r->plan, batches + (size_t)(s - 1) * B * T, 1, B, T, 1, &r->train[s - 1]))
            demo_die(d, "training step");
        r->val[s] = NAN;
        if (s % t->eval_every && s < S) {
            r->ms[s] = r->train_ms += now_ms() - t0;
            continue;
        }
        if (sc_model_sync(m)) demo_die(d, "slide sync"); /* training work: on the training clock */
        r->ms[s] = r->train_ms += now_ms() - t0;
        /* Why not evaluate on m itself? sc_model_forward_backward(m) would overwrite m's gradients
           and, in slide mode, run while the host optimizer may still be updating from the last
           step. Both are probably harmless, but "probably" is not the point of this demo: we copy
           the weights out and evaluate a copy, so training only ever reads from m
           (sc_model_get_params waits for slide mode's pending host updates; waiting changes no
           arithmetic). */
        t0 = now_ms();
        if (sc_model_get_params(m, r->params)) demo_die(d, "reading the weights");
        sc_model *e = model_from(d, r->params, 0);
        if (sc_model_forward_backward(e, &none, val, W, T, &r->val[s])) demo_die(d, "validation");
        sc_model_destroy(e);
        r->eval_ms += now_ms() - t0;
        demo_progress("  %-16s step %4d/%d  train %.4f  val %.4f  %.0f ms/step", r->name, s, S,
                      s ? (double)r->train[s - 1] : (double)NAN, (double)r->val[s], s ? r->train_ms / s : 0.0);
    }
    demo_progress_done(); /* r->params: the weights after the last step */
    sc_model_destroy(m);
}

/* Greedy continuation: each new byte is the argmax of the last position's logits over the
   last T bytes of context (a full forward per byte; fine for a small model). */
static void generate(const demo *d, sc_model *g, const char *prompt, int n, unsigned char *out)
{
    int T = d->o.seq, len = (int)strlen(prompt), V = d->cfg.vocab_size;
    int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * (size_t)T);
    if (!ids) demo_die(d, "host memory");
    sc_plan none;
    sc_plan_parse(&none, "none", d->cfg.num_layers);
    memcpy(out, prompt, (size_t)len);
    for (int i = len; i < len + n; i++) {
        int w = i < T ? i : T;
        float loss;
        for (int j = 0; j < w; j++) ids[j] = out[i - w + j];
        if (sc_model_forward_backward(g, &none, ids, 1, w, &loss)) demo_die(d, "sampling");
        const float *lg = sc_model_logits(g) + (size_t)(w - 1) * V;
        int best = 0;
        for (int v = 1; v < V; v++)
            if (lg[v] > lg[best]) best = v;
        out[i] = (unsigned char)best;
    }
    free(ids);
}

int main(int argc, char **argv)
{
    topts t = {NULL, "none,full,every:2,slide", 1e-3f, 0, 32, 120};
    demo d;
    demo_begin(&d, "textdemo", argc, argv, usage, take_flag, &t);
    d.cfg.vocab_size = 256; /* bytes are the tokens */
    d.mc.lr = t.lr;
    d.mc.beta2 = 0.95f; /* there is no lr warm-up: with 0.999, AdamW at 1.5e-3 stalled at 2.7 (measured) */
    if (!d.o.steps) d.o.steps = 400;
    if (!d.o.batch) d.o.batch = d.on_gpu ? 32 : 8; /* 64-byte windows: phrases, not just words */
    if (!d.o.seq) d.o.seq = 64;
    int B = d.o.batch, T = d.o.seq, S = d.o.steps;
    if (!t.eval_every) t.eval_every = S / 10 > 0 ? S / 10 : 1;
    if (T > d.cfg.max_position) demo_usage_error(&d, "--seq %d exceeds the max position %d", T, d.cfg.max_position);

    /* the runs: a checkpoint policy, or slide[:policy]; "layers:0-1,3" would need its commas */
    run runs[MAX_RUNS];
    int nr = 0;
    demo_run_spec spec[MAX_RUNS];
    nr = demo_parse_runs(&d, t.runs, spec, MAX_RUNS);
    for (int i = 0; i < nr; i++) {
        memset(&runs[i], 0, sizeof runs[i]);
        snprintf(runs[i].name, sizeof runs[i].name, "%.*s", (int)sizeof runs[i].name - 1, spec[i].label);
        runs[i].mode = spec[i].mode;
        sc_plan_parse(&runs[i].plan, spec[i].policy, d.cfg.num_layers); /* checked above */
    }

    /* the text: bytes 0..255 are the tokens; the last 10% is for validation */
    const char *tried[] = {t.text ? t.text : "/usr/share/common-licenses/GPL-3", t.text ? NULL : "/usr/share/common-licenses/GPL-2"};
    const char *path = NULL;
    size_t n = 0;
    unsigned char *text = NULL;
    for (int i = 0; i < 2 && !text && tried[i]; i++)
        if ((text = read_file(tried[i], &n))) path = tried[i];
    if (!text) {
        fprintf(stderr, "textdemo: cannot read %s%s%s: %s\n", tried[0], tried[1] ? " or " : "", tried[1] ? tried[1] : "", strerror(errno));
        return 1;
    }
    size_t nval = n / 10, ntrain = n - nval;
    if (nval < (size_t)T) {
        fprintf(stderr, "textdemo: %s has %zu bytes: too short for --seq %d (need at least %d)\n", path, n, T, 10 * T);
        return 1;
    }
    int W = (int)(nval / (size_t)T) < t.val_windows ? (int)(nval / (size_t)T) : t.val_windows;
    int32_t *val = (int32_t *)malloc(sizeof(int32_t) * (size_t)W * T);
    int32_t *batches = (int32_t *)malloc(sizeof(int32_t) * (size_t)S * B * T);
    if (!val || !batches) demo_die(&d, "host memory");
    for (int w = 0; w < W; w++) /* evenly spaced over the held-out tail, fixed */
        for (int j = 0; j < T; j++) val[(size_t)w * T + j] = text[ntrain + (W > 1 ? w * (nval - T) / (W - 1) : 0) + j];
    sc_rng rng = sc_rng_seed((uint64_t)d.o.seed + 77); /* every run sees the same random windows */
    for (size_t b = 0; b < (size_t)S * B; b++) {
        size_t at = sc_rng_u64(&rng) % (ntrain - T + 1);
        for (int j = 0; j < T; j++) batches[b * T + j] = text[at + j];
    }
    printf("textdemo: %s, %zu bytes (%zu train, %zu held out, %d validation windows)\n%s\n", path, n, ntrain, nval, W,
           demo_setup_line(&d, B, T));

    for (int i = 0; i < nr; i++) train(&d, &runs[i], &t, batches, val, W);

    /* the point of the demo: no run differs from the first in a single bit */
    int all_same = 1;
    for (int i = 0; i < nr; i++) {
        run *r = &runs[i];
        int tr = !memcmp(r->train, runs[0].train, sizeof(float) * S);
        int va = !memcmp(r->val, runs[0].val, sizeof(float) * (S + 1));
        int pa = !memcmp(r->params, runs[0].params, sizeof(float) * sc_config_num_params(&d.cfg));
        printf("%-12s %6.2f s training (%5.1f ms/step), %5.2f s evaluating", r->name, r->train_ms / 1e3,
               r->train_ms / S, r->eval_ms / 1e3);
        if (i) printf("; vs %s: train losses %s, validation losses %s, final weights %s", runs[0].name,
                      tr ? "bitwise equal" : "DIFFER", va ? "bitwise equal" : "DIFFER", pa ? "bitwise equal" : "DIFFER");
        printf("\n");
        all_same &= tr && va && pa;
    }

    loss_csv(&d, runs, nr);
    loss_curves_png(&d, runs, nr, all_same);

    /* the samples, from the trained weights (all runs hold the same bits: take the first's) */
    sc_model *g = model_from(&d, runs[0].params, 1);
    unsigned char *smp[NPROMPTS];
    printf("\ngreedy samples (%d bytes each):\n", t.sample_bytes);
    for (int p = 0; p < NPROMPTS; p++) {
        int len = (int)strlen(prompts[p]);
        if (!(smp[p] = (unsigned char *)malloc((size_t)len + t.sample_bytes))) demo_die(&d, "host memory");
        generate(&d, g, prompts[p], t.sample_bytes, smp[p]);
        printf("  [%s]", prompts[p]);
        show(stdout, smp[p] + len, t.sample_bytes);
        printf("\n");
    }
    sc_model_destroy(g);

    FILE *md = demo_md_begin(&d, "A byte-level Qwen learns the GPL",
                             "Every run trains the same model from the same seed on the same windows of the text; "
                             "they differ only in how a step is computed (checkpoint policy, resident or slide mode). "
                             "Train loss: the step's batch, before its update. Validation loss: the held-out windows, "
                             "after the step. Training time leaves the evaluations out. AdamW with beta2 = 0.95 and a constant "
                             "learning rate (no warm-up).",
                             B, T, S);
    fprintf(md, "Text: `%s`, %zu bytes, the last %zu held out (%d validation windows of %d bytes).\n\n", path, n,
            nval, W, T);
    fprintf(md, "| run | first train loss | last train loss | best validation loss (step) | training time | per step "
                "| evaluations |\n|---|---|---|---|---|---|---|\n");
    int best = 0;
    for (int i = 0; i < nr; i++) {
        int bs = 0;
        for (int s = 0; s <= S; s++)
            if (!isnan(runs[i].val[s]) && (isnan(runs[i].val[bs]) || runs[i].val[s] < runs[i].val[bs])) bs = s;
        if (!i) best = bs;
        fprintf(md, "| %s | %.4f | %.4f | %.4f (%d) | %.2f s | %.1f ms | %.2f s |\n", runs[i].name,
                (double)runs[i].train[0], (double)runs[i].train[S - 1], (double)runs[i].val[bs], bs,
                runs[i].train_ms / 1e3, runs[i].train_ms / S, runs[i].eval_ms / 1e3);
    }
    fprintf(md, "\n");
    if (nr > 1)
        fprintf(md, "**Bitwise check: %s**: train losses, validation losses and final weights of every run against "
                    "`%s`.\n\n", all_same ? "passed" : "FAILED", runs[0].name);
    if (best < S) /* where the held-out loss turned (noise, or the model memorising its text) */
        fprintf(md, "The validation loss was lowest at step %d (%.4f) and is %.4f after the last step.\n\n", best,
                (double)runs[0].val[best], (double)runs[0].val[S]);
    demo_md_figure(md, "loss_curves.png", "Train and validation loss of every run, drawn over each other.");
    fprintf(md, "## Greedy samples\n\n%d bytes after each prompt (argmax of the last position's logits; `\\n` is a "
                "newline):\n\n```\n", t.sample_bytes);
    for (int p = 0; p < NPROMPTS; p++) {
        fprintf(md, "[%s]", prompts[p]);
        show(md, smp[p] + strlen(prompts[p]), t.sample_bytes);
        fprintf(md, "\n");
        free(smp[p]);
    }
    fprintf(md, "```\n");
    demo_close(&d, md, "summary.md");
    printf("\nwrote %s/loss.csv, loss_curves.png, summary.md\n", d.o.out);
    for (int i = 0; i < nr; i++) free(runs[i].train), free(runs[i].val), free(runs[i].ms), free(runs[i].params);
    free(text), free(val), free(batches);
    if (!all_same) fprintf(stderr, "textdemo: the runs are not bitwise identical\n");
    return all_same ? 0 : 1;
}
