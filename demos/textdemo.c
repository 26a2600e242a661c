/* textdemo: a byte-level Qwen learns to write like the GNU GPL from token shards, and
   recomputation and weight streaming change none of the bits it learns.

     build/textdemo [--text FILE] [--runs none,full,every:2,slide] [--steps N --batch B --seq T]

   The steps of training on a real dataset, at the size of one text file:
     1. tokenize: the tokens are the text's bytes (vocab_size 256). The first 90% of the text
        becomes two train shards, the last 10% a validation shard, in llm.c's format
        (sc_data_write_shard), under --out DIR/shards/;
     2. read: sc_data_open walks the train shards in batches of B rows of T tokens, in an order
        shuffled anew each epoch, and sc_data_next hands out the next batch;
     3. train: AdamW, the learning rate on a cosine schedule after a linear warm-up (sc_lr_factor,
        set before each step with sc_model_set_lr), the gradients clipped to norm 1.0
        (--clip-grad-norm);
     4. validate: every --eval-every steps, the mean loss over the first K batches of the
        validation shard (sc_data_seek(val, 0): always the same K).
   Every run does this from the same seeded weights on the same batches; the runs differ only in
   how a step is computed: checkpoint policy `none` (keep every activation), `full` and
   `every:2` (replay the forward during backward), or slide mode (weights, gradients and
   optimizer state live on the host and stream to the compute, layer by layer). The program
   checks that all train losses, gradient norms, validation losses and final weights are bitwise
   identical, then lets the trained model write greedily from a few prompts.

   Prints `step S loss X lr X norm X ms X` per step and `val step S loss X` per evaluation.
   Writes into --out DIR: shards/, loss.csv, loss_curves.png and summary.md (with the samples).
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
#define TRAIN_SHARDS 2     /* a corpus comes in many shards; two show the reader going from one to the next */
#define MIN_LR_RATIO 0.1   /* the cosine ends at 10% of the peak rate rather than at 0 */
static const char *prompts[] = {"This License", "The GNU", "You may"};
#define NPROMPTS 3

static const char *usage =
    "usage: textdemo [options]\n\n"
    "Trains a byte-level Qwen (vocab 256) on a text, read from token shards it writes, under\n"
    "several ways of computing the step; checks that every loss, gradient norm and weight is\n"
    "bitwise identical across them, and samples text.\n\n"
    "  --text FILE            training text (default /usr/share/common-licenses/GPL-3, else GPL-2)\n"
    "  --runs LIST            comma-separated: checkpoint policies (none, full, every:K, selective,\n"
    "                         ...) and slide (= slide mode, policy none) or slide:POLICY\n"
    "                         (default none,full,every:2,slide)\n"
    "  --lr X                 AdamW's peak learning rate (default 1e-3); cosine down to 10%% of it\n"
    "  --lr-warmup N          steps of linear warm-up from 0 (default: steps / 20)\n"
    "  --clip-grad-norm X     clip the gradients' 2-norm to X (default 1.0; 0: off)\n"
    "  --eval-every K         validation loss every K steps (default: steps / 10)\n"
    "  --val-batches K        batches of the validation shard per evaluation (default: 32 rows)\n"
    "  --val-windows N        the same in rows of T bytes: N / B batches, rounded up\n"
    "  --sample-bytes N       bytes generated per prompt (default 120)\n"
    "defaults: --steps 400, --batch 8 --seq 64 on the CPU, --batch 32 --seq 64 on CUDA\n";

typedef struct topts {
    const char *text, *runs;
    double lr;
    float clip;
    int warmup, eval_every, val_batches, val_windows, sample_bytes;
} topts;

static int take_flag(void *user, const char *f, const char *v)
{
    topts *t = (topts *)user;
    char *end;
    long x = strtol(v, &end, 10);
    int ok = end != v && !*end && x >= 1 && x <= 1000000;
    if (!strcmp(f, "--text")) t->text = v, ok = 1;
    else if (!strcmp(f, "--runs")) t->runs = v, ok = 1;
    else if (!strcmp(f, "--lr")) ok = (t->lr = strtod(v, &end)) > 0 && end != v && !*end;
    else if (!strcmp(f, "--clip-grad-norm")) ok = (t->clip = strtof(v, &end)) >= 0 && t->clip < 1e30f && end != v && !*end;
    else if (!strcmp(f, "--lr-warmup")) ok = end != v && !*end && x >= 0 && x <= 1000000, t->warmup = (int)x;
    else if (!strcmp(f, "--eval-every")) t->eval_every = (int)x;
    else if (!strcmp(f, "--val-batches")) t->val_batches = (int)x;
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

/* Step 1, tokenize: with bytes as tokens this is a widening copy. Train bytes [0, ntrain) go to
   TRAIN_SHARDS files DIR/shards/train_NN.bin, the rest to DIR/shards/val_00.bin. Each shard
   holds whole batches only as far as its length allows: the reader skips a tail shorter than
   one batch. */
static void write_shards(const demo *d, const unsigned char *text, size_t n, size_t ntrain)
{
    int32_t *tok = (int32_t *)malloc(sizeof(int32_t) * n);
    if (!tok) demo_die(d, "host memory");
    for (size_t i = 0; i < n; i++) tok[i] = text[i];
    char path[4200];
    snprintf(path, sizeof path, "%s/shards", d->o.out);
    if (demo_mkdirs(path)) exit(1);
    for (int k = 0; k < TRAIN_SHARDS; k++) {
        size_t a = ntrain * k / TRAIN_SHARDS, b = ntrain * (k + 1) / TRAIN_SHARDS;
        snprintf(path, sizeof path, "%s/shards/train_%02d.bin", d->o.out, k);
        if (sc_data_write_shard(path, tok + a, b - a, 0)) demo_die(d, "writing a shard");
    }
    snprintf(path, sizeof path, "%s/shards/val_00.bin", d->o.out);
    if (sc_data_write_shard(path, tok + ntrain, n - ntrain, 0)) demo_die(d, "writing a shard");
    free(tok);
}

/* Open the shards matching DIR/shards/<glob> in batches of B x T. */
static sc_data *open_shards(const demo *d, const char *glob, int B, int T, int shuffle)
{
    char pattern[4200];
    snprintf(pattern, sizeof pattern, "%s/shards/%s", d->o.out, glob);
    sc_data_config dc;
    memset(&dc, 0, sizeof dc);
    dc.B = B, dc.T = T;
    dc.shuffle = shuffle, dc.shuffle_seed = d->o.seed;
    dc.vocab_size = d->cfg.vocab_size; /* a token out of range fails here, naming its shard */
    sc_data *s;
    if (sc_data_open(&s, pattern, &dc)) demo_die(d, "opening the shards (a text too short for --batch x --seq?)");
    return s;
}

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

/* Step 4, validate: the mean loss over the first K batches of the validation shard. Starting
   from batch 0 every time means every evaluation sees the same bytes, so the curve moves only
   when the model does. The batches are equal in size, so the mean of their means is the mean
   over all their targets. */
static float validate(const demo *d, sc_model *e, sc_data *val, int32_t *ids, int Bv, int T, int K)
{
    sc_plan none;
    sc_plan_parse(&none, "none", d->cfg.num_layers);
    if (sc_data_seek(val, 0)) demo_die(d, "validation shard");
    double sum = 0;
    for (int k = 0; k < K; k++) {
        float l = 0;
        if (sc_data_next(val, ids) || sc_model_forward_backward(e, &none, ids, Bv, T, &l)) demo_die(d, "validation");
        sum += l;
    }
    return (float)(sum / K);
}

/* Steps 2 and 3: train one run from the start of the train stream; evaluate before the first
   step, every k steps and after the last. */
static void train(const demo *d, run *r, const topts *t, sc_data *data, sc_data *val, int Bv, int K)
{
    int B = d->o.batch, T = d->o.seq, S = d->o.steps;
    sc_model_config mc = d->mc;
    mc.mode = r->mode;
    size_t np = sc_config_num_params(&d->cfg);
    r->train = (float *)malloc(sizeof(float) * (size_t)S);
    r->val = (float *)malloc(sizeof(float) * (size_t)(S + 1));
    r->lr = (double *)malloc(sizeof(double) * (size_t)S);
    r->norm = (double *)malloc(sizeof(double) * (size_t)S);
    r->ms = (double *)calloc((size_t)S + 1, sizeof(double));
    r->params = (float *)malloc(sizeof(float) * np);
    int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * (size_t)(B > Bv ? B : Bv) * T);
    if (!r->train || !r->val || !r->lr || !r->norm || !r->ms || !r->params || !ids) demo_die(d, "host memory");
    sc_model *m;
    if (sc_model_create(&m, &d->cfg, &mc, NULL)) demo_die(d, "creating the model");
    if (sc_data_seek(data, 0)) demo_die(d, "train shards"); /* every run reads the same batches */
    printf("\nrun %s\n", r->name);
    r->train_ms = r->eval_ms = 0;
    for (int s = 0; s <= S; s++) {
        double t0 = now_ms();
        if (s > 0) { /* step s (1-based) is optimizer step s - 1 of the schedule */
            r->lr[s - 1] = t->lr * sc_lr_factor(SC_LR_COSINE, s - 1, t->warmup, S, MIN_LR_RATIO);
            sc_model_set_lr(m, (float)r->lr[s - 1]);
            if (sc_data_next(data, ids)) demo_die(d, "train shards");
            if (sc_model_step(m, &r->plan, ids, 1, B, T, 1, &r->train[s - 1])) demo_die(d, "training step");
            r->norm[s - 1] = sc_model_grad_norm(m); /* the norm before clipping, the one the update clipped with */
            printf("step %d loss %.6f lr %.6e norm %.6f ms %.1f\n", s, (double)r->train[s - 1], r->lr[s - 1],
                   r->norm[s - 1], now_ms() - t0);
        }
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
        r->val[s] = validate(d, e, val, ids, Bv, T, K);
        sc_model_destroy(e);
        r->eval_ms += now_ms() - t0;
        printf("val step %d loss %.6f\n", s, (double)r->val[s]);
    }
    fflush(stdout); /* r->params: the weights after the last step */
    free(ids);
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
    topts t = {NULL, "none,full,every:2,slide", 1e-3, 1.0f, -1, 0, 0, 32, 120};
    demo d;
    demo_begin(&d, "textdemo", argc, argv, usage, take_flag, &t);
    d.cfg.vocab_size = 256; /* bytes are the tokens */
    d.mc.lr = (float)t.lr;
    d.mc.beta2 = 0.95f; /* the usual choice for language models; with 0.999 and no warm-up this demo stalled at 2.7 */
    d.mc.clip_grad_norm = t.clip;
    if (!d.o.steps) d.o.steps = 400;
    if (!d.o.batch) d.o.batch = d.on_gpu ? 32 : 8; /* 64-byte rows: phrases, not just words */
    if (!d.o.seq) d.o.seq = 64;
    int B = d.o.batch, T = d.o.seq, S = d.o.steps;
    if (t.warmup < 0) t.warmup = S / 20;
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

    /* the text; the last 10% is held out */
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
    /* a validation batch has B rows where the held-out bytes allow, else fewer (a big GPU batch
       on a short text) */
    int Bv = nval / (size_t)T < (size_t)B ? (int)(nval / (size_t)T) : B;
    if (Bv < 1 || ntrain / TRAIN_SHARDS < (size_t)B * T) {
        fprintf(stderr, "textdemo: %s has %zu bytes: too short for --batch %d --seq %d (each of %d train shards needs "
                        "%d bytes, the held-out 10%% %d)\n", path, n, B, T, TRAIN_SHARDS, B * T, T);
        return 1;
    }
    write_shards(&d, text, n, ntrain);
    /* shuffled: a new order of the batches each epoch (a batch holds the same bytes every time);
       validation reads in file order and always from its start */
    sc_data *data = open_shards(&d, "train_*.bin", B, T, 1), *val = open_shards(&d, "val_*.bin", Bv, T, 0);
    long long epoch = (long long)sc_data_epoch_batches(data);
    int K = t.val_batches ? t.val_batches : (t.val_windows + Bv - 1) / Bv;
    if (K > sc_data_epoch_batches(val)) K = (int)sc_data_epoch_batches(val); /* no batch twice in one mean */
    printf("textdemo: %s, %zu bytes: %zu in %d train shards (%lld batches an epoch, shuffled), %zu in the validation "
           "shard (%d batches of %d x %d per evaluation)\n%s\n"
           "AdamW, lr %g on a cosine schedule (%d warm-up step%s, down to %g of it), gradients clipped at norm %g%s\n",
           path, n, ntrain, sc_data_shard_count(data), epoch, nval, K, Bv, T,
           demo_setup_line(&d, B, T), t.lr, t.warmup, t.warmup == 1 ? "" : "s", MIN_LR_RATIO, (double)t.clip, t.clip > 0 ? "" : " (off)");

    for (int i = 0; i < nr; i++) train(&d, &runs[i], &t, data, val, Bv, K);
    sc_data_close(data);
    sc_data_close(val);

    /* the point of the demo: no run differs from the first in a single bit */
    int all_same = 1;
    printf("\n");
    for (int i = 0; i < nr; i++) {
        run *r = &runs[i];
        int tr = !memcmp(r->train, runs[0].train, sizeof(float) * S);
        int gn = !memcmp(r->norm, runs[0].norm, sizeof(double) * S);
        int va = !memcmp(r->val, runs[0].val, sizeof(float) * (S + 1));
        int pa = !memcmp(r->params, runs[0].params, sizeof(float) * sc_config_num_params(&d.cfg));
        printf("%-12s %6.2f s training (%5.1f ms/step), %5.2f s evaluating", r->name, r->train_ms / 1e3,
               r->train_ms / S, r->eval_ms / 1e3);
        if (i) printf("; vs %s: train losses %s, gradient norms %s, validation losses %s, final weights %s", runs[0].name,
                      tr ? "bitwise equal" : "DIFFER", gn ? "bitwise equal" : "DIFFER", va ? "bitwise equal" : "DIFFER",
                      pa ? "bitwise equal" : "DIFFER");
        printf("\n");
        all_same &= tr && gn && va && pa;
    }

    loss_csv(&d, runs, nr);
    loss_curves_png(&d, runs, nr, all_same, t.warmup, t.clip);

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
                             "Every run trains the same model from the same seed on the same batches of the text's "
                             "token shards; they differ only in how a step is computed (checkpoint policy, resident or "
                             "slide mode). Train loss: the step's batch, before its update. Validation loss: the first "
                             "batches of the validation shard, after the step. Training time leaves the evaluations out. "
                             "A batch is always the same B x T consecutive bytes (the reader shuffles the order of the "
                             "batches, not what they hold), so a batch unlike the rest (in the GPL: the all-caps "
                             "disclaimer of warranty) makes a spike in the train loss once an epoch.",
                             B, T, S);
    fprintf(md, "Text: `%s`, %zu bytes, tokenized byte by byte into %d train shards (%zu bytes, %lld batches an epoch, "
                "shuffled per epoch) and a validation shard (the last %zu bytes; %d batches of %d x %d per evaluation), "
                "in `shards/`.\n\n", path, n, TRAIN_SHARDS, ntrain, epoch, nval, K, Bv, T);
    fprintf(md, "AdamW (beta2 0.95), learning rate %g on a cosine schedule after %d warm-up step%s, down to %g of it; "
                "gradients clipped at norm %g%s.\n\n", t.lr, t.warmup, t.warmup == 1 ? "" : "s", MIN_LR_RATIO, (double)t.clip,
            t.clip > 0 ? "" : " (off)");
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
        fprintf(md, "**Bitwise check: %s**: train losses, gradient norms, validation losses and final weights of every "
                    "run against `%s`.\n\n", all_same ? "passed" : "FAILED", runs[0].name);
    if (best < S) /* where the held-out loss turned (noise, or the model memorising its text) */
        fprintf(md, "The validation loss was lowest at step %d (%.4f) and is %.4f after the last step.\n\n", best,
                (double)runs[0].val[best], (double)runs[0].val[S]);
    demo_md_figure(md, "loss_curves.png", "Train and validation loss of every run, drawn over each other; below, the "
                                          "learning rate and the gradient norm before clipping.");
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
    printf("\nwrote %s/shards/, loss.csv, loss_curves.png, summary.md\n", d.o.out);
    for (int i = 0; i < nr; i++)
        free(runs[i].train), free(runs[i].val), free(runs[i].lr), free(runs[i].norm), free(runs[i].ms), free(runs[i].params);
    free(text);
    if (!all_same) fprintf(stderr, "textdemo: the runs are not bitwise identical\n");
    return all_same ? 0 : 1;
}
