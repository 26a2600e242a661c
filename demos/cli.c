/* slidecheck: the command-line tool (build/slidecheck).

     slidecheck grad  --hf DIR --tokens FILE --out OUT.safetensors [options]
     slidecheck train (--hf DIR | --model NAME) (--tokens FILE | --seq N --batch N) --steps N ...
     slidecheck plan  --model NAME --seq N --batch N --budget SIZE

   Every command takes --help. Bad flags, files or values print one clear line and exit 2
   (usage) or 1 (runtime failure); nothing is written half-way. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"

#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* strict C11 hides these POSIX declarations; glibc exports them */
extern int setenv(const char *name, const char *value, int overwrite);
extern int unsetenv(const char *name);

typedef struct cli_opts {
    const char *hf, *model, *tokens, *out, *save, *ckpt, *device, *dtype, *optim;
    int seq, batch, steps, warmup, master;
    const char *mode, *cuda_graph;
    int prefetch, cpu_threads, pure_bf16, accum, save_every, head_slice;
    double lr, beta1, beta2, eps, wd, rdv_timeout;
    unsigned long long seed;
    size_t mem_cap, budget;
    const char *budget_text;
    const char *device_layers; /* --slide-device-layers SPEC */
    int have_lr, op_times, state_bf16, dpu, keep_head, gpus, zero, head_once, slide_device_update, bucket_mb;
    int ckpt_given; /* --ckpt on the command line (--mode auto then keeps that plan) */
    int gemm_tune; /* --gemm-tune */
    int dp_sums;   /* --dp-sums auto|nccl: SC_DP_SUMS_* */
    /* training on token shards */
    const char *data, *val_data, *lr_schedule, *resume;
    int lr_warmup, val_every, val_batches, have_shuffle;
    double min_lr_ratio, clip;
    unsigned long long shuffle_seed;
} cli_opts;

static const char *usage_main =
    "usage: slidecheck <command> [options]\n"
    "\n"
    "commands:\n"
    "  grad   one forward + backward of an HF checkpoint on a token file; writes loss, logits, grads\n"
    "  train  train a built-in or HF model and write per-step, per-layer and memory metrics\n"
    "  plan   print the checkpoint plan a memory budget gives, without training\n"
    "\n"
    "run 'slidecheck <command> --help' for the options of a command.\n";

static const char *usage_grad =
    "usage: slidecheck grad --hf DIR --tokens FILE --out OUT.safetensors [options]\n"
    "\n"
    "One forward + backward on the batch in FILE. Writes loss (F32 [1]), logits (F32 [B,T,V]) and\n"
    "grad.<HF name> (F32) for every parameter.\n";

static const char *usage_train =
    "usage: slidecheck train (--hf DIR | --model NAME) (--tokens FILE | --seq N --batch N) --steps N\n"
    "                        [options]\n"
    "\n"
    "Trains on the batch in FILE at every step, or on seeded random tokens of the given shape.\n"
    "Prints one line per step, then a summary line.\n";

static const char *usage_plan =
    "usage: slidecheck plan (--model NAME | --hf DIR) --seq N --batch N --budget SIZE [options]\n"
    "       slidecheck plan (--model NAME | --hf DIR) --seq N --batch N --mode auto [options]\n"
    "\n"
    "Prints the plan that the exact planner picks for a memory budget: per layer, keep all, a\n"
    "selective level or a recomputed segment, with the predicted peak and recompute time. The times\n"
    "are a roofline estimate (no profiling run); train --ckpt budget:SIZE measures them.\n"
    "--mode auto profiles a 2-layer copy of the model on this machine's device and prints one line,\n"
    "'plan: ...', with the fastest configuration that fits --mem-cap (train --mode auto's choice).\n";

/* One line of help per flag. A command lists the entries whose `cmds` name it and whose key is in
   its list of flags, under their section's heading; entries of a section stay together. The text
   is wrapped at 100 columns when printed, so write it as one line. */
typedef struct cli_help {
    const char *cmds, *section, *key, *flag, *text;
} cli_help;

static const cli_help cli_helps[] = {
    {"grad train plan", "model and data", "hf", "--hf DIR",
     "an HF checkpoint directory: config.json, model.safetensors or its shards"},
    {"train", "model and data", "model", "--model NAME",
     "a built-in config (listed below), randomly initialised from --seed"},
    {"plan", "model and data", "model", "--model NAME", "a built-in config (listed below)"},
    {"grad", "model and data", "tokens", "--tokens FILE", "safetensors with input_ids (I32 or I64) of shape [B, T]"},
    {"train", "model and data", "tokens", "--tokens FILE",
     "safetensors with input_ids (I32 or I64) of shape [B, T]: every step trains on these rows, split into --accum "
     "micro-batches (and over the ranks in data parallel)"},
    {"train", "model and data", "seq", "--seq N, --batch N",
     "without --tokens: seeded random tokens, --batch rows of --seq tokens (default 2 rows of 128); in data "
     "parallel --batch is per rank"},
    {"plan", "model and data", "seq", "--seq N, --batch N", "the shape to plan for; with --gpus, --batch is per GPU"},
    {"plan", "model and data", "budget", "--budget SIZE",
     "the device memory to fit, e.g. 24GiB; the planner keeps a margin for the allocator's rounding"},
    {"grad", "model and data", "out", "--out FILE", "the safetensors file to write"},
    {"train", "model and data", "out", "--out DIR",
     "write step_metrics.csv, layer_metrics.csv, mem_trace.csv, summary.csv, trace.json, memory_summary.txt and "
     "memory_snapshot.json (data parallel: rank 0 adds dp_steps.csv, rank r > 0 writes its traces into "
     "DIR/rank<r>/); a step after the first out of memory writes memory_snapshot_oom.json, the allocator "
     "as the failing request found it"},
    {"train", "model and data", "save", "--save DIR",
     "write the final weights as an HF checkpoint: config.json, model.safetensors"},
    {"train", "model and data", "save-every", "--save-every N", "with --save: also write the checkpoint every N steps"},

    {"train", "model and data", "data", "--data PATTERN",
     "train on token shards: a glob of llm.c shards (256 x int32 header, magic 20240520 uint16 or 20240801 "
     "uint32 tokens) or 1-D .npy files, matched files in name order, memory-mapped. Each micro-batch is the "
     "next --batch x --seq tokens of the current shard; a shard's tail shorter than that is skipped; after "
     "the last shard comes the first. Rank r of W takes the r-th of each W consecutive batches"},
    {"train", "model and data", "val-data", "--val-data PATTERN",
     "validation shards, the same formats; with --val-every N --val-batches K: after optimizer steps N, 2N, "
     "... the mean loss over their first K batches, printed as 'val step S loss X'"},
    {"train", "model and data", "shuffle", "--shuffle SEED",
     "with --data: permute the batches of each shard, per epoch, from SEED (default: in order)"},
    {"train", "model and data", "resume", "--resume DIR",
     "continue from DIR (a DIR/step_NNNNNN written by --save-every): its weights, optimizer state and data "
     "position; the flags that shape the run must match, and the later steps are bitwise those of the run "
     "that was never stopped"},
    {"train", "training", "steps", "--steps N", "optimizer steps to run (the schedule's total)"},
    {"train", "training", "lr-schedule", "--lr-schedule constant|linear|cosine",
     "the learning rate of step s (0-based): --lr times transformers' factor (get_constant_schedule_with_warmup, "
     "get_linear_schedule_with_warmup, get_cosine_with_min_lr_schedule_with_warmup) over --steps; default constant"},
    {"train", "training", "lr-warmup", "--lr-warmup W",
     "warm-up steps of the schedule: lr rises linearly from 0 at step 0 (default 0)"},
    {"train", "training", "min-lr-ratio", "--min-lr-ratio R", "cosine: the floor as a fraction of --lr (default 0)"},
    {"train", "training", "clip-grad-norm", "--clip-grad-norm C",
     "torch's clip_grad_norm_: every gradient is scaled by min(1,C/(norm+1e-6)) before the update, norm the "
     "2-norm over all gradients (the same bits in every mode; slide mode then updates after the backward). The "
     "norm is printed every step, clipped or not"},
    {"train", "training", "val-every", "--val-every N, --val-batches K", "see --val-data"},
    {"train", "training", "optim", "--optim sgd|adamw", "the optimizer (default adamw)"},
    {"plan", "training", "optim", "--optim sgd|adamw", "the optimizer whose state is counted (default adamw)"},
    {"train", "training", "lr", "--lr X", "learning rate (default 1e-4)"},
    {"train", "training", "beta1", "--beta1 X, --beta2 X, --eps X", "AdamW's constants (default 0.9, 0.999, 1e-8)"},
    {"train", "training", "weight-decay", "--weight-decay X", "weight decay, decoupled as AdamW's (default 0)"},
    {"train", "training", "seed", "--seed N", "seed of the random init and the random tokens (default 1234)"},
    {"train", "training", "warmup", "--warmup N", "steps left out of the summary statistics (default 1)"},
    {"train plan", "training", "accum", "--accum N",
     "micro-batches per optimizer step (gradient accumulation; default 1): the gradients are summed in "
     "micro-batch order and the loss is the mean over all of them"},
    {"train", "training", "op-times", "--op-times",
     "cuda: print the time of each kernel and GEMM shape over the steps after the warm-up; an event "
     "after every kernel makes the steps slightly slower and turns the CUDA graph off"},

    {"grad train plan", "precision and memory", "device", "--device cpu|cuda|auto",
     "where to run (default auto: the GPU when one is usable)"},
    {"grad train", "precision and memory", "dtype", "--dtype fp32|bf16",
     "storage type (default fp32; on the CPU, bf16 rounds stored values to bf16)"},
    {"plan", "precision and memory", "dtype", "--dtype fp32|bf16",
     "count the CUDA storage of this type (default fp32; bf16: 2-byte weights, activations and optimizer state)"},
    {"grad train", "precision and memory", "master-weights", "--master-weights",
     "with bf16 on cuda: f32 master weights, gradients and optimizer state"},
    {"plan", "precision and memory", "master-weights", "--master-weights",
     "with bf16: count f32 master weights, gradients and optimizer state"},
    {"train plan", "precision and memory", "state-bf16", "--state-bf16",
     "AdamW's m and v in bf16: with f32 master weights 8 instead of 12 bytes per parameter (other arithmetic "
     "than f32 state)"},
    {"grad train plan", "precision and memory", "ckpt", "--ckpt POLICY",
     "none | full | every:K | layers:0-3,7 | selective | selective:mlp | selective:attn | selective:proj | sqrt "
     "| budget:SIZE (default none). Every policy gives the same loss and gradients, bit for bit; budget:SIZE "
     "times an untimed step and five profiling steps, then plans the least recompute that fits SIZE"},
    {"grad train", "precision and memory", "mem-cap", "--mem-cap SIZE",
     "behave as a device of SIZE bytes, e.g. 16GiB (default: no cap); running out is a clean error that "
     "lists the largest live allocations"},
    {"grad train plan", "precision and memory", "head-slice", "--head-slice R",
     "the LM head in vocabulary slices of R rows, the loss by an online log-sum-exp over two passes (other "
     "rounding than the whole head, in both modes alike); slide mode then streams the head slice by slice, "
     "with no whole-head buffer on the device"},
    {"train", "precision and memory", "cuda-graph", "--cuda-graph auto|on|off",
     "the whole-step CUDA graph (default auto: on where it works, that is cuda and resident mode, with "
     "--gpus N too: the NCCL collectives are in the graph). The second step of a shape is captured and the "
     "later ones replay it in one launch, with the same bits as off"},
    {"train", "precision and memory", "gemm-tune", "--gemm-tune",
     "at each GEMM shape's first use, time cuBLASLt's candidates whose output has the bits of its first "
     "choice (the default) and keep the fastest: the same bits, at times less time (not with --mem-cap, "
     "whose accounting its scratch is outside)"},

    {"grad train", "slide mode", "mode", "--mode resident|slide|auto",
     "resident (default): everything on the device. slide: weights, gradients and optimizer state on the "
     "host; the layers stream to the device ahead of use and host threads update them beside the device's "
     "work (after the backward, from the first layer, unless an option updates earlier), with the same bits "
     "as resident. auto (train): a short profile, then the fastest configuration "
     "that fits --mem-cap (default: the device's free memory; none on the CPU): resident or slide, the "
     "checkpoint plan and the slide options you left out, never one that changes the mathematics; prints "
     "a 'plan:' line first and the predictions beside the measurements in the summary"},
    {"plan", "model and data", "mode", "--mode auto",
     "choose the configuration train --mode auto would (a short profile on this machine's device)"},
    {"plan", "model and data", "mem-cap", "--mem-cap SIZE",
     "with --mode auto: the device memory to fit (default: the device's free memory; none on the CPU)"},
    {"grad train", "slide mode", "slide-prefetch", "--slide-prefetch N",
     "layers uploaded ahead of the one computing (default 1)"},
    {"grad train", "slide mode", "slide-cpu-threads", "--slide-cpu-threads N",
     "host optimizer threads (default: all cores but one)"},
    {"grad train", "slide mode", "pure-bf16", "--pure-bf16",
     "with bf16: bf16 weights, gradients and optimizer state on the host (as T1M1 ran it); the default is "
     "f32 master weights and state with bf16 working copies"},
    {"grad train", "slide mode", "slide-keep-head", "--slide-keep-head",
     "the embedding, final norm and LM head stay on the device with their gradients and optimizer state, "
     "updated there as in resident mode, while the layers stream (no head traffic, more device memory); "
     "the same bits"},
    {"grad train", "slide mode", "slide-head-once", "--slide-head-once",
     "with --head-slice and not --slide-keep-head: the whole LM head goes up once a step and serves both "
     "passes of the sliced loss (one upload instead of two); the same bits"},
    {"train", "slide mode", "slide-device-update", "--slide-device-update",
     "with SGD: each layer's update runs on the device as soon as backward has its gradients, and the "
     "updated weights go down instead of the gradients (no host optimizer traffic); the same bits. Needs "
     "--optim sgd and no master weights (--pure-bf16 with bf16), and not --slide-dpu or --gpus"},
    {"train", "slide mode", "slide-device-layers", "--slide-device-layers SPEC",
     "these layers stay on the device with their gradients and optimizer state, updated there as in resident "
     "mode right after their backward, never uploaded nor downloaded; the others stream. SPEC: all, none, "
     "first:K, last:K or a list as --ckpt layers: takes (a-b,c,...). More device memory (the window counts "
     "it), less traffic; the same bits. Not with --slide-dpu, --slide-device-update, --clip-grad-norm or "
     "data parallel"},
    {"train", "slide mode", "slide-dpu", "--slide-dpu",
     "one-step-delayed update (ZeRO-Offload's DPU): the host applies step s-1's update while the device "
     "runs step s, whose forward uses weights without that update. This CHANGES THE MATHEMATICS. It "
     "costs two host working copies of the weights"},

    {"train", "data parallel", "gpus", "--gpus N",
     "data parallel over N processes on this machine, started by this command as torchrun "
     "--nproc_per_node=N --no-python would start them; --batch is per rank. Under a launcher, leave it "
     "out: each process is one rank, as torchrun (RANK, WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT) "
     "or srun (SLURM_PROCID, SLURM_NTASKS, SLURM_NODEID; rank 0 on the first host of the job's nodes, port "
     "20000 + SLURM_JOB_ID % 12768 unless MASTER_ADDR/MASTER_PORT say otherwise) describes it. Across "
     "machines rank 0 listens on the interface NCCL_SOCKET_IFNAME names, else on every interface. On the "
     "GPU each rank uses GPU LOCAL_RANK (modulo the GPUs CUDA_VISIBLE_DEVICES lists: 0 where srun gives "
     "each task its own) and sums "
     "the gradients over NCCL (libnccl.so.2, or the path in SLIDECHECK_NCCL). Slide mode runs data "
     "parallel without --slide-dpu and --slide-keep-head"},
    {"plan", "data parallel", "gpus", "--gpus N", "plan one GPU of N in data parallel (--batch per GPU)"},
    {"train", "data parallel", "zero", "--zero 1",
     "with AdamW: ZeRO-1, each rank keeps and updates the AdamW state of its 1/N of the parameters, with "
     "the same bits as without. On the GPU: resident mode without --master-weights, or slide mode, where "
     "each host keeps the state of its 1/N of each layer"},
    {"plan", "data parallel", "zero", "--zero 1", "with --gpus N and AdamW: each GPU keeps 1/N of the AdamW state"},
    {"plan", "data parallel", "dp-sums", "--dp-sums auto|nccl",
     "with --gpus N (2 to 8): auto counts the copy-engine sums' scratch ((N - 1) / N of the gradients), nccl "
     "does not"},
    {"train", "data parallel", "bucket-mb", "--bucket-mb N",
     "on the GPU (resident): the gradients of consecutive layers are summed by one launch once they "
     "reach N MiB (default 640; 0: one sum a layer) or are as many as the layers below them; the same bits "
     "whatever N. Slide mode: one sum a layer"},
    {"train", "data parallel", "dp-sums", "--dp-sums auto|nccl",
     "GPUs of this machine (2 to 8): auto (default) sums the gradients by the copy engines, peer copies "
     "that leave the backward every SM, with a scratch of (N - 1) / N of the gradients (resident), where the GPUs "
     "reach each other and NCCL_P2P_DISABLE is not set; nccl: NCCL's collectives. Two GPUs: the same bits either "
     "way. More: auto adds in rank order, in slide mode too (the same bits as resident), NCCL in its ring's"},
    {"train", "data parallel", "rendezvous-timeout", "--rendezvous-timeout S",
     "seconds a rank waits for the others, at the start and in every exchange (default: "
     "SLIDECHECK_RENDEZVOUS_TIMEOUT, else 60)"},
};

/* 1 when `word` is one of the space-separated words of `list` */
static int cli_word_in(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
    return 0;
}

/* Prints text from column `at`, wrapped at 100 columns, continuation lines indented to `indent`.
   The last line gets at least two words: a lone word there reads as a slip. */
static void cli_wrap(const char *text, int indent, int at)
{
    for (const char *s = text; *s;) {
        while (*s == ' ') s++;
        int n = (int)strcspn(s, " ");
        if (!n) break;
        const char *t = s + n;
        while (*t == ' ') t++;
        int m = (int)strcspn(t, " "), last = m > 0 && !t[m + strspn(t + m, " ")];
        int brk = at + 1 + n > 100 || (last && at + 1 + n + 1 + m > 100 && indent + n + 1 + m <= 100);
        if (at > indent && brk) {
            printf("\n%*s", indent, "");
            at = indent;
        } else if (at > indent) at += printf(" ");
        at += printf("%.*s", n, s);
        s += n;
    }
    printf("\n");
}

/* `slidecheck CMD --help`: the command's usage, then the flags it takes, by section. */
static void print_help(const char *cmd, const char *usage, const char *allowed)
{
    const char *section = NULL;
    fputs(usage, stdout);
    for (size_t i = 0; i < sizeof cli_helps / sizeof cli_helps[0]; i++) {
        const cli_help *h = &cli_helps[i];
        if (!cli_word_in(h->cmds, cmd) || !cli_word_in(allowed, h->key)) continue;
        if (!section || strcmp(section, h->section)) printf("\n%s:\n", section = h->section);
        int at = printf("  %s", h->flag);
        if (at + 2 > 26) { /* a long flag: its text starts on the next line */
            printf("\n%26s", "");
            at = 26;
        } else at += printf("%*s", 26 - at, "");
        cli_wrap(h->text, 26, at);
    }
    if (cli_word_in(allowed, "model")) printf("\nbuilt-in models: %s\n", sc_config_names());
}

static void die_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "slidecheck: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(run 'slidecheck --help' for usage)\n");
    exit(2);
}

static char g_rank_tag[32]; /* "rank R: " in data parallel */

static void die(sc_result r, const char *what)
{
    fprintf(stderr, "slidecheck: %s%s: %s: %s\n", g_rank_tag, what, sc_result_string(r), sc_last_error());
    exit(1);
}

/* DIR/NAME holding text; exits 1 naming the path when it cannot be written */
static void write_text(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f)) die(SC_ERROR_IO, path);
}

/* DIR/memory_snapshot.json: the allocator's segments and blocks (sc_allocator_snapshot_json) */
static void write_snapshot(const sc_allocator *al, const char *dir)
{
    int n = sc_allocator_snapshot_json(al, NULL, 0);
    char *buf = (char *)malloc((size_t)n + 1);
    if (!buf) die(SC_ERROR_OUT_OF_MEMORY, "host memory");
    sc_allocator_snapshot_json(al, buf, (size_t)n + 1);
    write_text(dir, "memory_snapshot.json", buf);
    free(buf);
}

/* A step after the first ran out of memory: DIR/memory_snapshot_oom.json, the allocator as the
   failing request found it, for the user to see what the reserved memory held */
static void write_oom_snapshot(const sc_allocator *al, const char *dir, int step)
{
    const char *js = sc_allocator_oom_snapshot(al);
    if (!js) return;
    write_text(dir, "memory_snapshot_oom.json", js);
    fprintf(stderr, "slidecheck: the allocator when step %d ran out of memory: %s/memory_snapshot_oom.json\n", step,
            dir);
}

static int parse_int(const char *flag, const char *v, int lo, int hi)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s needs an integer in [%d, %d], got '%%s'", flag, lo, hi);
        die_usage(msg, v);
    }
    return (int)x;
}

static double parse_double(const char *flag, const char *v)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno || !(x == x) || x < 0 || x > 1e6) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s needs a number from 0 to 1e6, got '%%s'", flag);
        die_usage(msg, v);
    }
    return x;
}

/* Earlier spellings, still accepted so that scripts keep working (not in the help). --slide-update
   took host|device; parse_flags reads its value. */
static const char *cli_flag_name(const char *arg)
{
    static const char *const alias[][2] = {
        {"--prefetch", "--slide-prefetch"}, {"--cpu-threads", "--slide-cpu-threads"},
        {"--head-once", "--slide-head-once"}, {"--keep-head", "--slide-keep-head"},
        {"--dpu", "--slide-dpu"}, {"--slide-update", "--slide-device-update"},
    };
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (!strcmp(arg, alias[i][0])) return alias[i][1];
    return arg;
}

/* Parse argv[2..]; `allowed` is a space-separated list of the flags this command takes. */
static void parse_flags(cli_opts *o, int argc, char **argv, const char *allowed, const char *usage)
{
    memset(o, 0, sizeof *o);
    o->ckpt = "none";
    o->device = "auto";
    o->dtype = "fp32";
    o->optim = "adamw";
    o->lr = 1e-4; o->beta1 = 0.9; o->beta2 = 0.999; o->eps = 1e-8; o->wd = 0.0;
    o->seed = 1234;
    o->warmup = 1;
    o->mode = "resident";
    o->cuda_graph = "auto";
    o->accum = 1;
    for (int i = 2; i < argc; i++) {
        const char *f = cli_flag_name(argv[i]);
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            print_help(argv[1], usage, allowed);
            exit(0);
        }
        if (strncmp(f, "--", 2)) die_usage("unexpected argument '%s'", argv[i]);
        if (!cli_word_in(allowed, f + 2)) die_usage("unknown option '%s' for this command", argv[i]);
        if (!strcmp(f, "--master-weights")) { o->master = 1; continue; }
        if (!strcmp(f, "--pure-bf16")) { o->pure_bf16 = 1; continue; }
        if (!strcmp(f, "--op-times")) { o->op_times = 1; continue; }
        if (!strcmp(f, "--gemm-tune")) { o->gemm_tune = 1; continue; }
        if (!strcmp(f, "--state-bf16")) { o->state_bf16 = 1; continue; }
        if (!strcmp(f, "--slide-dpu")) { o->dpu = 1; continue; }
        if (!strcmp(f, "--slide-keep-head")) { o->keep_head = 1; continue; }
        if (!strcmp(f, "--slide-head-once")) { o->head_once = 1; continue; }
        if (!strcmp(f, "--slide-device-update")) {
            if (!strcmp(argv[i], "--slide-update")) { /* the old spelling takes host|device */
                if (i + 1 >= argc) die_usage("option '%s' needs a value", argv[i]);
                const char *v = argv[++i];
                if (strcmp(v, "host") && strcmp(v, "device")) die_usage("--slide-update must be host or device, not '%s'", v);
                o->slide_device_update = !strcmp(v, "device");
            } else o->slide_device_update = 1;
            continue;
        }
        if (i + 1 >= argc) die_usage("option '%s' needs a value", f);
        const char *v = argv[++i];
        if (!strcmp(f, "--hf")) o->hf = v;
        else if (!strcmp(f, "--model")) o->model = v;
        else if (!strcmp(f, "--tokens")) o->tokens = v;
        else if (!strcmp(f, "--out")) o->out = v;
        else if (!strcmp(f, "--save")) o->save = v;
        else if (!strcmp(f, "--ckpt")) o->ckpt = v, o->ckpt_given = 1;
        else if (!strcmp(f, "--device")) o->device = v;
        else if (!strcmp(f, "--dtype")) o->dtype = v;
        else if (!strcmp(f, "--optim")) o->optim = v;
        else if (!strcmp(f, "--cuda-graph")) o->cuda_graph = v;
        else if (!strcmp(f, "--seq")) o->seq = parse_int(f, v, 2, 1 << 20);
        else if (!strcmp(f, "--batch")) o->batch = parse_int(f, v, 1, 1 << 16);
        else if (!strcmp(f, "--steps")) o->steps = parse_int(f, v, 1, 1 << 24);
        else if (!strcmp(f, "--warmup")) o->warmup = parse_int(f, v, 0, 1 << 24);
        else if (!strcmp(f, "--mode")) o->mode = v;
        else if (!strcmp(f, "--slide-device-layers")) o->device_layers = v;
        else if (!strcmp(f, "--slide-prefetch")) o->prefetch = parse_int(f, v, 1, 4096);
        else if (!strcmp(f, "--slide-cpu-threads")) o->cpu_threads = parse_int(f, v, 1, 4096);
        else if (!strcmp(f, "--accum")) o->accum = parse_int(f, v, 1, 65536);
        else if (!strcmp(f, "--head-slice")) o->head_slice = parse_int(f, v, 1, 1 << 30);
        else if (!strcmp(f, "--save-every")) o->save_every = parse_int(f, v, 1, 1 << 24);
        else if (!strcmp(f, "--gpus")) o->gpus = parse_int(f, v, 1, 256);
        else if (!strcmp(f, "--zero")) o->zero = parse_int(f, v, 0, 1);
        else if (!strcmp(f, "--bucket-mb")) { /* 0: one sum a layer (0 in o: the library's default) */
            int mb = parse_int(f, v, 0, 1 << 20);
            o->bucket_mb = mb ? mb : SC_BUCKET_LAYER;
        }
        else if (!strcmp(f, "--dp-sums")) {
            if (!strcmp(v, "auto")) o->dp_sums = SC_DP_SUMS_AUTO;
            else if (!strcmp(v, "nccl")) o->dp_sums = SC_DP_SUMS_NCCL;
            else die_usage("--dp-sums %s: auto or nccl", v);
        }
        else if (!strcmp(f, "--rendezvous-timeout")) {
            o->rdv_timeout = parse_double(f, v);
            if (!(o->rdv_timeout > 0 && o->rdv_timeout <= 86400)) die_usage("--rendezvous-timeout %s: need seconds in (0, 86400]", v);
        }
        else if (!strcmp(f, "--lr")) { o->lr = parse_double(f, v); o->have_lr = 1; }
        else if (!strcmp(f, "--data")) o->data = v;
        else if (!strcmp(f, "--val-data")) o->val_data = v;
        else if (!strcmp(f, "--resume")) o->resume = v;
        else if (!strcmp(f, "--lr-schedule")) o->lr_schedule = v;
        else if (!strcmp(f, "--lr-warmup")) o->lr_warmup = parse_int(f, v, 0, 1 << 24);
        else if (!strcmp(f, "--min-lr-ratio")) o->min_lr_ratio = parse_double(f, v);
        else if (!strcmp(f, "--clip-grad-norm")) o->clip = parse_double(f, v);
        else if (!strcmp(f, "--val-every")) o->val_every = parse_int(f, v, 1, 1 << 24);
        else if (!strcmp(f, "--val-batches")) o->val_batches = parse_int(f, v, 1, 1 << 24);
        else if (!strcmp(f, "--shuffle")) {
            o->shuffle_seed = (unsigned long long)parse_int(f, v, 0, 2147483647);
            o->have_shuffle = 1;
        }
        else if (!strcmp(f, "--beta1")) o->beta1 = parse_double(f, v);
        else if (!strcmp(f, "--beta2")) o->beta2 = parse_double(f, v);
        else if (!strcmp(f, "--eps")) o->eps = parse_double(f, v);
        else if (!strcmp(f, "--weight-decay")) o->wd = parse_double(f, v);
        else if (!strcmp(f, "--seed")) o->seed = (unsigned long long)parse_int(f, v, 0, 2147483647);
        else if (!strcmp(f, "--mem-cap") || !strcmp(f, "--budget")) {
            size_t sz;
            if (sc_parse_size(v, &sz) || sz == 0) die_usage("bad size '%s' (e.g. 512MiB, 16GiB, 1.5GB)", v);
            if (!strcmp(f, "--budget")) { o->budget = sz; o->budget_text = v; } else o->mem_cap = sz;
        } else die_usage("unknown option '%s'", f);
    }
    if (strcmp(o->dtype, "fp32") && strcmp(o->dtype, "bf16")) die_usage("--dtype must be fp32 or bf16, not '%s'", o->dtype);
    if (strcmp(o->optim, "sgd") && strcmp(o->optim, "adamw")) die_usage("--optim must be sgd or adamw, not '%s'", o->optim);
    if (strcmp(o->device, "cpu") && strcmp(o->device, "cuda") && strcmp(o->device, "auto"))
        die_usage("--device must be cpu, cuda or auto, not '%s'", o->device);
    if (o->beta1 >= 1.0 || o->beta2 >= 1.0) die_usage("%s", "--beta1 and --beta2 must be below 1");
    if (strcmp(o->mode, "resident") && strcmp(o->mode, "slide") && strcmp(o->mode, "auto"))
        die_usage("--mode must be resident, slide or auto, not '%s'", o->mode);
    int slide = !strcmp(o->mode, "slide") || !strcmp(o->mode, "auto"); /* auto keeps slide flags given */
    if (!slide && (o->prefetch || o->cpu_threads || o->pure_bf16 || o->dpu || o->keep_head || o->slide_device_update))
        die_usage("%s", "--slide-prefetch, --slide-cpu-threads, --pure-bf16, --slide-dpu, --slide-keep-head and "
                  "--slide-device-update need --mode slide");
    if (o->slide_device_update &&
        (strcmp(o->optim, "sgd") || o->dpu || o->master || (!strcmp(o->dtype, "bf16") && !o->pure_bf16) || o->gpus > 1))
        die_usage("%s", "--slide-device-update needs --optim sgd and no master weights (--pure-bf16 with bf16), "
                  "and not --slide-dpu or --gpus");
    if (o->dpu && o->keep_head) die_usage("%s", "--slide-dpu and --slide-keep-head cannot be combined yet");
    if (o->device_layers && !slide)
        die_usage("%s", "--slide-device-layers needs --mode slide (resident mode keeps every layer on the device)");
    if (o->head_once && (!slide || !o->head_slice || o->keep_head))
        die_usage("%s", "--slide-head-once needs --mode slide and --head-slice R, and not --slide-keep-head");
    if (o->pure_bf16 && (o->master || strcmp(o->dtype, "bf16")))
        die_usage("%s", "--pure-bf16 needs --dtype bf16 and excludes --master-weights");
    if (o->save_every && !o->save) die_usage("%s", "--save-every needs --save DIR");
    if (o->gemm_tune && (o->mem_cap || !strcmp(o->mode, "auto")))
        die_usage("%s", "--gemm-tune's scratch is outside the allocator's accounting: not with --mem-cap or --mode auto");
    if (strcmp(o->cuda_graph, "auto") && strcmp(o->cuda_graph, "on") && strcmp(o->cuda_graph, "off"))
        die_usage("--cuda-graph must be auto, on or off, not '%s'", o->cuda_graph);
    if (!strcmp(o->cuda_graph, "on") && o->op_times)
        die_usage("%s", "--op-times times each kernel by itself: it needs --cuda-graph off (auto turns it off)");
}

static sc_device pick_device(const cli_opts *o)
{
    if (!strcmp(o->device, "cpu")) return SC_DEVICE_CPU;
#ifdef SLIDECHECK_CUDA
    sc_result r = sc_cuda_available();
    if (r == SC_SUCCESS) return SC_DEVICE_CUDA;
    if (!strcmp(o->device, "cuda")) die(r, "--device cuda");
#else
    if (!strcmp(o->device, "cuda"))
        die(SC_ERROR_NO_DEVICE, "--device cuda (this binary was built without CUDA: nvcc was not found)");
#endif
    return SC_DEVICE_CPU;
}

static void model_config_from(sc_model_config *mc, const cli_opts *o)
{
    *mc = sc_model_config_init();
    mc->device = pick_device(o);
    mc->bf16 = !strcmp(o->dtype, "bf16");
    mc->master_weights = o->master;
    mc->mem_cap = o->mem_cap;
    mc->seed = o->seed;
    mc->optim = !strcmp(o->optim, "sgd") ? SC_OPTIM_SGD : SC_OPTIM_ADAMW;
    mc->lr = (float)o->lr;
    mc->beta1 = (float)o->beta1;
    mc->beta2 = (float)o->beta2;
    mc->eps = (float)o->eps;
    mc->weight_decay = (float)o->wd;
    mc->head_slice = o->head_slice;
    mc->state_bf16 = o->state_bf16;
    mc->gemm_tune = o->gemm_tune;
    /* the per-kernel profile records an event after each launch: eager launches only */
    mc->cuda_graph = !strcmp(o->cuda_graph, "on")                     ? SC_CUDA_GRAPH_ON
                     : !strcmp(o->cuda_graph, "off") || o->op_times ? SC_CUDA_GRAPH_OFF
                                                                     : SC_CUDA_GRAPH_AUTO;
    if (o->master && !mc->bf16) die_usage("%s", "--master-weights needs --dtype bf16");
    if (o->state_bf16 && mc->optim != SC_OPTIM_ADAMW) die_usage("%s", "--state-bf16 needs --optim adamw");
    if (!strcmp(o->mode, "slide")) {
        mc->mode = SC_MODE_SLIDE;
        mc->slide_prefetch = o->prefetch;
        mc->slide_cpu_threads = o->cpu_threads;
        mc->slide_dpu = o->dpu;
        mc->slide_keep_head = o->keep_head;
        mc->slide_device_update = o->slide_device_update;
        mc->slide_head_once = o->head_once;
        mc->verbose = 1;
        /* slide keeps f32 master weights on the host unless --pure-bf16 */
        if (mc->bf16 && !o->pure_bf16) mc->master_weights = 1;
    } else if (!strcmp(o->mode, "auto")) { /* the slide flags given are kept; sc_plan_auto fills the rest */
        mc->slide_prefetch = o->prefetch;
        mc->slide_cpu_threads = o->cpu_threads;
        mc->slide_dpu = o->dpu;
        mc->slide_keep_head = o->keep_head;
        mc->slide_device_update = o->slide_device_update;
        mc->slide_head_once = o->head_once;
    }
}

/* --mode auto without --mem-cap: the device's free memory now (CUDA), else no cap */
static size_t auto_mem_cap(const cli_opts *o, const sc_model_config *mc)
{
    if (o->mem_cap) return o->mem_cap;
#ifdef SLIDECHECK_CUDA
    if (mc->device == SC_DEVICE_CUDA) {
        sc_cuda *cu = NULL;
        sc_cuda_config cc;
        memset(&cc, 0, sizeof cc);
        cc.bf16 = mc->bf16;
        cc.device = mc->gpu;
        size_t fr = 0, total = 0;
        sc_result r = sc_cuda_create(&cu, &cc);
        if (r == SC_SUCCESS) {
            r = sc_cuda_mem_get_info(cu, &fr, &total);
            sc_cuda_destroy(cu);
        }
        if (r != SC_SUCCESS) die(r, "--mode auto: reading the device's free memory");
        return fr;
    }
#endif
    (void)mc;
    return 0;
}

/* --mode auto: one short profile, then the fastest configuration that fits; prints the `plan:`
   line. Nothing fits: the library's message (with the smallest cap that would) and exit 1. */
static sc_plan_auto_result auto_choose(const cli_opts *o, const sc_config *cfg, const sc_model_config *mc,
                                       const int32_t *ids, int B, int T, const sc_plan *keep)
{
    sc_plan_auto_config ac;
    memset(&ac, 0, sizeof ac);
    ac.mem_cap = auto_mem_cap(o, mc);
    ac.B = B, ac.T = T, ac.accum = o->accum, ac.ids = ids, ac.plan = keep;
    sc_plan_auto_result res;
    sc_result r = sc_plan_auto(&res, cfg, mc, &ac);
    if (r != SC_SUCCESS) die(r, "--mode auto");
    char cap[48] = "none";
    if (ac.mem_cap) snprintf(cap, sizeof cap, "%.3f GiB%s", (double)ac.mem_cap / 1073741824.0, o->mem_cap ? "" : " (free)");
    printf("plan: %s  predicted peak %.3f GiB  predicted step %.2f ms (compute %.2f, copies %.2f, host optimizer "
           "%.2f)  mem cap %s  (%d candidates, %s profile)\n", res.desc, (double)res.peak_bytes / 1073741824.0,
           res.step_ms, res.compute_ms, res.copy_ms, res.host_opt_ms, cap, res.candidates,
           mc->device == SC_DEVICE_CUDA ? "cuda" : "cpu");
    fflush(stdout);
    return res;
}

/* Load --hf DIR (config + weights) or a --model NAME config; params NULL for random init. */
static void load_model_source(const cli_opts *o, sc_config *cfg, float **params)
{
    sc_result r;
    *params = NULL;
    if (o->hf && o->model) die_usage("%s", "give either --hf DIR or --model NAME, not both");
    if (o->hf) {
        if ((r = sc_hf_read_config(o->hf, cfg)) != SC_SUCCESS) die(r, o->hf);
        *params = (float *)malloc(sizeof(float) * sc_config_num_params(cfg));
        if (!*params) die(SC_ERROR_OUT_OF_MEMORY, "host memory for the weights");
        if ((r = sc_hf_read_params(o->hf, cfg, *params)) != SC_SUCCESS) die(r, o->hf);
    } else if (o->model) {
        if ((r = sc_config_named(cfg, o->model)) != SC_SUCCESS) die(r, "--model");
    } else die_usage("%s", "give --hf DIR or --model NAME");
}

static void print_plan(const sc_plan_report *rep, const sc_plan *plan)
{
    int n = sc_plan_report_table(rep, plan, NULL, 0);
    char *buf = (char *)malloc((size_t)n + 1);
    if (!buf) die(SC_ERROR_OUT_OF_MEMORY, "host memory");
    sc_plan_report_table(rep, plan, buf, (size_t)n + 1);
    fputs(buf, stdout);
    free(buf);
}

/* budget:SIZE: the library times one step under full and the three selective levels (the recompute
   spans give each layer's replay cost), then lets the planner choose. */
static sc_plan plan_budget(sc_model *m, const int32_t *ids, int B, int T, size_t budget)
{
    sc_plan plan;
    sc_plan_report rep;
    sc_result r = sc_model_plan_budget(&plan, &rep, m, ids, B, T, budget);
    if (r != SC_SUCCESS) {
        fprintf(stderr, "slidecheck: --ckpt %s\n", sc_last_error());
        exit(1);
    }
    printf("planner (costs measured in 5 profiling steps after an untimed one):\n");
    print_plan(&rep, &plan);
    return plan;
}

static sc_plan make_plan(const cli_opts *o, const sc_config *cfg)
{
    sc_plan plan;
    size_t budget;
    int b = sc_plan_is_budget(o->ckpt, &budget);
    if (b < 0) { fprintf(stderr, "slidecheck: --ckpt: %s\n", sc_last_error()); exit(2); }
    if (b > 0) { memset(&plan, 0, sizeof plan); plan.num_layers = -1; return plan; } /* planned later */
    sc_result r = sc_plan_parse(&plan, o->ckpt, cfg->num_layers);
    if (r != SC_SUCCESS) {
        fprintf(stderr, "slidecheck: --ckpt: %s\n", sc_last_error());
        exit(2);
    }
    return plan;
}

static int cmd_plan(int argc, char **argv)
{
    cli_opts o;
    parse_flags(&o, argc, argv, "model hf seq batch budget dtype optim master-weights gpus zero dp-sums state-bf16 mode mem-cap "
                "device accum ckpt head-slice", usage_plan);
    int is_auto = !strcmp(o.mode, "auto");
    if (!is_auto && (strcmp(o.mode, "resident") || o.mem_cap || strcmp(o.device, "auto") || o.accum != 1 ||
                     o.ckpt_given || o.head_slice))
        die_usage("%s", "plan takes --mode auto only; --mem-cap, --device, --accum, --ckpt and --head-slice go with it");
    if (is_auto && (o.budget || o.gpus > 1)) die_usage("%s", "plan --mode auto takes --mem-cap SIZE (not --budget, --gpus)");
    if (!o.seq || !o.batch || (!is_auto && !o.budget))
        die_usage("%s", is_auto ? "plan --mode auto needs --seq N and --batch N"
                                : "plan needs --seq N, --batch N and --budget SIZE (or --mode auto with --mem-cap SIZE)");
    sc_config cfg;
    sc_result r;
    if (o.hf) {
        if ((r = sc_hf_read_config(o.hf, &cfg)) != SC_SUCCESS) die(r, o.hf);
    } else if (!o.model) die_usage("%s", "plan needs --model NAME or --hf DIR");
    else if ((r = sc_config_named(&cfg, o.model)) != SC_SUCCESS) die(r, "--model");
    if (o.seq > cfg.max_position) {
        fprintf(stderr, "slidecheck: --seq %d exceeds max_position_embeddings %d\n", o.seq, cfg.max_position);
        return 1;
    }
    if (is_auto) { /* profile on this machine's device (a 2-layer copy), then choose */
        sc_model_config amc;
        model_config_from(&amc, &o);
        int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * (size_t)o.batch * o.seq);
        if (!ids) die(SC_ERROR_OUT_OF_MEMORY, "host memory for tokens");
        sc_rng rng = sc_rng_seed(o.seed + 77);
        for (int i = 0; i < o.batch * o.seq; i++) ids[i] = (int32_t)(sc_rng_u64(&rng) % (uint64_t)cfg.vocab_size);
        sc_plan keep;
        if (o.ckpt_given && (r = sc_plan_parse(&keep, o.ckpt, cfg.num_layers)) != SC_SUCCESS) die(r, "--ckpt");
        printf("model %s  B=%d T=%d accum %d  %s storage%s  optim %s\n", cfg.name[0] ? cfg.name : o.hf, o.batch, o.seq,
               o.accum, o.dtype, amc.master_weights ? " +master" : "", o.optim);
        auto_choose(&o, &cfg, &amc, ids, o.batch, o.seq, o.ckpt_given ? &keep : NULL);
        free(ids);
        return 0;
    }
    sc_model_config mc = sc_model_config_init();
    mc.device = SC_DEVICE_CUDA; /* plan for the GPU's storage */
    mc.bf16 = !strcmp(o.dtype, "bf16");
    mc.master_weights = o.master;
    mc.optim = !strcmp(o.optim, "sgd") ? SC_OPTIM_SGD : SC_OPTIM_ADAMW;
    mc.state_bf16 = o.state_bf16;
    mc.zero = o.zero;
    mc.dp_sums = o.dp_sums;
    int W = o.gpus > 1 ? o.gpus : 1;
    if (o.zero && (W < 2 || mc.optim != SC_OPTIM_ADAMW)) die_usage("%s", "--zero 1 needs --gpus N >= 2 and --optim adamw");
    int pb, gb, ab;
    sc_model_config_storage(&mc, &pb, &gb, &ab);
    sc_layer_cost *costs = (sc_layer_cost *)calloc((size_t)cfg.num_layers, sizeof(sc_layer_cost));
    if (!costs) die(SC_ERROR_OUT_OF_MEMORY, "host memory");
    sc_plan_estimate_costs(&cfg, o.batch, o.seq, ab, costs);
    sc_plan plan;
    sc_plan_report rep;
    size_t pb_budget = sc_plan_budget_usable(o.budget, &cfg, o.batch, o.seq);
    r = sc_planner_plan(&plan, &rep, &cfg, o.batch, o.seq, ab, sc_model_config_fixed_bytes_dp(&cfg, &mc, W), costs, pb_budget);
    free(costs);
    if (r == SC_SUCCESS) snprintf(plan.name, sizeof plan.name, "budget:%s", o.budget_text);
    if (r != SC_SUCCESS) {
        fprintf(stderr, "slidecheck: plan: budget %.3f GiB (%.3f GiB after the allocator margin): %s\n",
                (double)o.budget / 1073741824.0, (double)pb_budget / 1073741824.0, sc_last_error());
        return 1;
    }
    printf("model %s  B=%d T=%d  %s storage  optim %s  (times: roofline estimate)\n", cfg.name[0] ? cfg.name : o.hf,
           o.batch, o.seq, o.dtype, o.optim);
    sc_model_config nccl_sums = mc;
    nccl_sums.dp_sums = SC_DP_SUMS_NCCL;
    if (W > 1) /* per GPU: the batch is each rank's; the gradients are summed in place (no bucket copies) */
        printf("data parallel over %d GPUs, per GPU: fixed %.3f GiB (weights, gradients, %s AdamW state%s); NCCL's "
               "own buffers are not counted\n", W, (double)sc_model_config_fixed_bytes_dp(&cfg, &mc, W) / 1073741824.0,
               o.zero ? "1/N of the" : "all the",
               sc_model_config_fixed_bytes_dp(&cfg, &nccl_sums, W) != sc_model_config_fixed_bytes_dp(&cfg, &mc, W)
                   ? ", the copy-engine sums' scratch" : "");
    printf("budget %.3f GiB, planned for %.3f GiB (allocator margin: 2%% + 4 MiB + small buffers)\n",
           (double)o.budget / 1073741824.0, (double)pb_budget / 1073741824.0);
    print_plan(&rep, &plan);
    return 0;
}

static int cmd_grad(int argc, char **argv)
{
    cli_opts o;
    parse_flags(&o, argc, argv, "hf tokens out device dtype ckpt mem-cap master-weights mode slide-prefetch "
                "slide-cpu-threads pure-bf16 head-slice slide-keep-head slide-head-once",
                usage_grad);
    if (!o.hf || !o.tokens || !o.out) die_usage("%s", "grad needs --hf DIR, --tokens FILE and --out FILE");
    sc_config cfg;
    float *params;
    sc_result r;
    load_model_source(&o, &cfg, &params);
    int32_t *ids;
    int B, T;
    if ((r = sc_tokens_read(o.tokens, &ids, &B, &T)) != SC_SUCCESS) die(r, o.tokens);
    if ((r = sc_tokens_check(ids, B, T, &cfg)) != SC_SUCCESS) die(r, o.tokens);
    sc_plan plan = make_plan(&o, &cfg);
    sc_model_config mc;
    model_config_from(&mc, &o);
    mc.keep_logits = 1;
    sc_model *m;
    if ((r = sc_model_create(&m, &cfg, &mc, params)) != SC_SUCCESS) die(r, "creating the model");
    size_t budget;
    if (plan.num_layers < 0 && sc_plan_is_budget(o.ckpt, &budget) > 0)
        plan = plan_budget(m, ids, B, T, budget);
    float loss;
    if ((r = sc_model_forward_backward(m, &plan, ids, B, T, &loss)) != SC_SUCCESS) die(r, "forward/backward");
    size_t np = sc_config_num_params(&cfg);
    float *g = (float *)malloc(sizeof(float) * np);
    if (!g) die(SC_ERROR_OUT_OF_MEMORY, "host memory for the gradients");
    if ((r = sc_model_get_grads(m, g)) != SC_SUCCESS) die(r, "reading gradients");
    int npi = sc_config_params(&cfg, NULL, 0);
    sc_param_info *pi = (sc_param_info *)malloc(sizeof(sc_param_info) * (size_t)npi);
    sc_st_entry *e = (sc_st_entry *)calloc((size_t)npi + 2, sizeof(sc_st_entry));
    char (*names)[112] = (char (*)[112])malloc(112 * (size_t)npi);
    if (!pi || !e || !names) die(SC_ERROR_OUT_OF_MEMORY, "host memory");
    sc_config_params(&cfg, pi, npi);
    e[0].name = "loss"; e[0].dtype = "F32"; e[0].ndim = 1; e[0].shape[0] = 1; e[0].data = &loss;
    e[1].name = "logits"; e[1].dtype = "F32"; e[1].ndim = 3;
    e[1].shape[0] = B; e[1].shape[1] = T; e[1].shape[2] = cfg.vocab_size; e[1].data = sc_model_logits(m);
    for (int i = 0; i < npi; i++) {
        snprintf(names[i], sizeof names[i], "grad.%s", pi[i].name);
        sc_st_entry *t = &e[i + 2];
        t->name = names[i]; t->dtype = "F32"; t->ndim = pi[i].ndim;
        t->shape[0] = pi[i].shape[0]; t->shape[1] = pi[i].shape[1];
        t->data = g + pi[i].offset;
    }
    const char *meta[] = {"format", "pt", "policy", plan.name, "dtype", o.dtype};
    if ((r = sc_safetensors_write(o.out, e, npi + 2, meta, 3)) != SC_SUCCESS) die(r, o.out);
    printf("loss %.8f  (B=%d T=%d, %d parameter tensors, policy %s, %s)\n", loss, B, T, npi, plan.name,
           sc_model_cuda(m) ? "cuda" : "cpu");
    printf("wrote %s\n", o.out);
    sc_model_destroy(m);
    free(g); free(pi); free(e); free(names); free(params);
    sc_tokens_free(ids);
    return 0;
}

/* mkdir -p DIR and prove a file can be created there (removed again), or exit 1 now */
static void check_writable_dir(const char *dir, const char *flag)
{
    char path[4096];
    if (strlen(dir) + 32 >= sizeof path) { fprintf(stderr, "slidecheck: %s: path too long\n", flag); exit(1); }
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; ; p++) {
        char ch = *p;
        if (ch == '/' || ch == 0) {
            *p = 0;
            if (mkdir(path, 0777) != 0 && errno != EEXIST) {
                fprintf(stderr, "slidecheck: %s %s: cannot create directory %s: %s\n", flag, dir, path, strerror(errno));
                exit(1);
            }
            *p = ch;
            if (!ch) break;
        }
    }
    snprintf(path, sizeof path, "%s/.slidecheck-write-test", dir);
    FILE *f = fopen(path, "w");
    if (!f || fputs("x", f) < 0 || fclose(f)) {
        fprintf(stderr, "slidecheck: %s %s is not writable: %s\n", flag, dir, strerror(errno));
        exit(1);
    }
    remove(path);
}

/* Every rank reads the weights (slide mode's data parallel on the GPU gathers each rank's chunks
   then, a collective); rank 0 writes them. */
static void save_checkpoint(sc_model *m, const sc_config *cfg, const char *dir, int rank)
{
    sc_result r;
    size_t np = sc_config_num_params(cfg);
    float *p = (float *)malloc(sizeof(float) * np);
    if (!p) die(SC_ERROR_OUT_OF_MEMORY, "host memory");
    if ((r = sc_model_get_params(m, p)) != SC_SUCCESS) die(r, "reading weights");
    if (rank == 0) {
        if ((r = sc_hf_write(dir, cfg, p, 0)) != SC_SUCCESS) die(r, dir);
        printf("saved HF checkpoint to %s\n", dir);
    }
    free(p);
}

/* --gpus N: this machine's launcher, as `torchrun --nproc_per_node=N --no-python` would be: N copies
   of this command (less --gpus) with RANK = LOCAL_RANK = r, WORLD_SIZE = LOCAL_WORLD_SIZE = N,
   MASTER_ADDR = 127.0.0.1 and a free MASTER_PORT. Each copy is exec'ed, not only forked, so that it
   starts clean (an OpenMP runtime does not survive a fork). Returns the first failing rank's exit
   code, else 0. */
static int launch_ranks(int n, int argc, char **argv)
{
    int port = 0, fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(0x7f000001u);
    socklen_t l = sizeof a;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &l) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    if (port <= 0) die(SC_ERROR_IO, "--gpus: no free port on 127.0.0.1");
    char **args = (char **)malloc(sizeof(char *) * (size_t)(argc + 1));
    if (!args) die(SC_ERROR_OUT_OF_MEMORY, "host memory");
    int k = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--gpus")) { i++; continue; }
        args[k++] = argv[i];
    }
    args[k] = NULL;
    pid_t *pids = (pid_t *)malloc(sizeof(pid_t) * (size_t)n);
    if (!pids) die(SC_ERROR_OUT_OF_MEMORY, "host memory");
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] < 0) die(SC_ERROR_IO, "--gpus: fork failed");
        if (pids[r] == 0) {
            char v[4][16];
            snprintf(v[0], 16, "%d", r), snprintf(v[1], 16, "%d", n), snprintf(v[2], 16, "%d", port);
            setenv("RANK", v[0], 1), setenv("LOCAL_RANK", v[0], 1);
            setenv("WORLD_SIZE", v[1], 1), setenv("LOCAL_WORLD_SIZE", v[1], 1);
            setenv("MASTER_ADDR", "127.0.0.1", 1), setenv("MASTER_PORT", v[2], 1);
            /* the port picked here is the rendezvous port, whatever an outer launcher said */
            unsetenv("TORCHELASTIC_USE_AGENT_STORE"), unsetenv("SLIDECHECK_RENDEZVOUS_PORT");
            unsetenv("GROUP_RANK"), unsetenv("GROUP_WORLD_SIZE"); /* one node */
            execv("/proc/self/exe", args);
            execvp(argv[0], args);
            fprintf(stderr, "slidecheck: --gpus: cannot start %s: %s\n", argv[0], strerror(errno));
            _exit(1);
        }
    }
    int rc = 0;
    for (int r = 0; r < n; r++) {
        int st = 0;
        int x = waitpid(pids[r], &st, 0) == pids[r] && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
        if (x && !rc) rc = x;
    }
    free(pids);
    free(args);
    return rc;
}

/* ---- training on shards: schedule, validation, checkpoints that resume exactly ---- */

/* "1h02m", "3m05s", "42s": the time left at the current rate */
static void fmt_eta(char *buf, size_t cap, double s)
{
    if (!(s >= 0) || s > 1e8) { snprintf(buf, cap, "?"); return; }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, cap, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60) snprintf(buf, cap, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, cap, "%lds", t);
}

/* What a resumed run must share with the run that saved: written into trainer_state.json and
   compared key by key on --resume (a difference names the key). */
typedef struct train_state {
    long long step, data_position, nparams, B, T, accum, world, steps, warmup, shuffle, shuffle_seed;
    unsigned long long model_hash, data_hash;
    char schedule[16], optim[8], dtype[8], mode[16];
    double lr, min_lr_ratio, clip, beta1, beta2, eps, wd;
    int master, state_bf16;
} train_state;

static int write_train_state(const char *path, const train_state *t)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "{\n  \"format\": \"slidecheck-trainer-1\",\n  \"step\": %lld,\n  \"data_position\": %lld,\n"
               "  \"nparams\": %lld,\n  \"model_hash\": \"%016llx\",\n  \"data_hash\": \"%016llx\",\n"
               "  \"batch\": %lld,\n  \"seq\": %lld,\n  \"accum\": %lld,\n  \"world\": %lld,\n  \"steps\": %lld,\n"
               "  \"lr_schedule\": \"%s\",\n  \"lr\": %.17g,\n  \"lr_warmup\": %lld,\n  \"min_lr_ratio\": %.17g,\n"
               "  \"clip_grad_norm\": %.17g,\n  \"shuffle\": %lld,\n  \"shuffle_seed\": %lld,\n  \"optim\": \"%s\",\n"
               "  \"beta1\": %.17g,\n  \"beta2\": %.17g,\n  \"eps\": %.17g,\n  \"weight_decay\": %.17g,\n"
               "  \"dtype\": \"%s\",\n  \"master_weights\": %d,\n  \"state_bf16\": %d,\n  \"mode\": \"%s\"\n}\n",
            t->step, t->data_position, t->nparams, t->model_hash, t->data_hash, t->B, t->T, t->accum, t->world, t->steps,
            t->schedule, t->lr, t->warmup, t->min_lr_ratio, t->clip, t->shuffle, t->shuffle_seed, t->optim, t->beta1,
            t->beta2, t->eps, t->wd, t->dtype, t->master, t->state_bf16, t->mode);
    return fclose(f) ? -1 : 0;
}

/* the text after "key": in a file write_train_state wrote; NULL if absent */
static const char *state_value(const char *text, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(text, k);
    if (!p) return NULL;
    p += strlen(k);
    while (*p == ' ') p++;
    return p;
}

/* --resume DIR: its trainer_state.json against this run's; exits 1 naming the first mismatch */
static void check_train_state(const char *dir, const train_state *now, train_state *saved)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/trainer_state.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "slidecheck: --resume %s: cannot open %s: %s\n", dir, path, strerror(errno)); exit(1); }
    char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    const char *fmt = state_value(text, "format");
    if (!fmt || strncmp(fmt, "\"slidecheck-trainer-1\"", 22)) {
        fprintf(stderr, "slidecheck: --resume: %s is not a slidecheck trainer state\n", path);
        exit(1);
    }
    *saved = *now;
    struct { const char *key; long long *v; } ints[] = {
        {"step", &saved->step}, {"data_position", &saved->data_position}, {"nparams", &saved->nparams},
        {"batch", &saved->B}, {"seq", &saved->T}, {"accum", &saved->accum}, {"world", &saved->world},
        {"steps", &saved->steps}, {"lr_warmup", &saved->warmup}, {"shuffle", &saved->shuffle},
        {"shuffle_seed", &saved->shuffle_seed}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        const char *v = state_value(text, ints[i].key);
        if (!v || sscanf(v, "%lld", ints[i].v) != 1) {
            fprintf(stderr, "slidecheck: --resume: %s has no %s\n", path, ints[i].key);
            exit(1);
        }
    }
    struct { const char *key; double *v; } dbl[] = {
        {"lr", &saved->lr}, {"min_lr_ratio", &saved->min_lr_ratio}, {"clip_grad_norm", &saved->clip},
        {"beta1", &saved->beta1}, {"beta2", &saved->beta2}, {"eps", &saved->eps}, {"weight_decay", &saved->wd}};
    for (size_t i = 0; i < sizeof dbl / sizeof dbl[0]; i++) {
        const char *v = state_value(text, dbl[i].key);
        if (!v || sscanf(v, "%lf", dbl[i].v) != 1) {
            fprintf(stderr, "slidecheck: --resume: %s has no %s\n", path, dbl[i].key);
            exit(1);
        }
    }
    struct { const char *key; char *v; const char *fmt; } strs[] = {
        {"lr_schedule", saved->schedule, "\"%15[a-z0-9]\""}, {"optim", saved->optim, "\"%7[a-z0-9]\""},
        {"dtype", saved->dtype, "\"%7[a-z0-9]\""}, {"mode", saved->mode, "\"%15[a-z0-9]\""}};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        const char *v = state_value(text, strs[i].key);
        if (!v || sscanf(v, strs[i].fmt, strs[i].v) != 1) {
            fprintf(stderr, "slidecheck: --resume: %s has no %s\n", path, strs[i].key);
            exit(1);
        }
    }
    const char *mh = state_value(text, "model_hash"), *dh = state_value(text, "data_hash");
    const char *mw = state_value(text, "master_weights"), *sb = state_value(text, "state_bf16");
    if (!mh || !dh || !mw || !sb || sscanf(mh, "\"%llx\"", &saved->model_hash) != 1 ||
        sscanf(dh, "\"%llx\"", &saved->data_hash) != 1 || sscanf(mw, "%d", &saved->master) != 1 ||
        sscanf(sb, "%d", &saved->state_bf16) != 1) {
        fprintf(stderr, "slidecheck: --resume: %s is incomplete\n", path);
        exit(1);
    }
    /* the mode (resident or slide) may change: both give the same bits */
#define MISMATCH(cond, what, fmt, a, b)                                                                      \
    if (cond) {                                                                                               \
        fprintf(stderr, "slidecheck: --resume %s: %s differs: saved " fmt ", this run " fmt "\n", dir, what, a, b); \
        exit(1);                                                                                              \
    }
    MISMATCH(saved->nparams != now->nparams, "the model", "%lld parameters", saved->nparams, now->nparams)
    MISMATCH(saved->model_hash != now->model_hash, "the model's config (sizes, heads or vocabulary)", "%016llx",
             saved->model_hash, now->model_hash)
    MISMATCH(saved->B != now->B, "--batch", "%lld", saved->B, now->B)
    MISMATCH(saved->T != now->T, "--seq", "%lld", saved->T, now->T)
    MISMATCH(saved->data_hash != now->data_hash, "the training data (shard names, sizes or shuffle)", "%016llx",
             saved->data_hash, now->data_hash)
    MISMATCH(saved->accum != now->accum, "--accum", "%lld", saved->accum, now->accum)
    MISMATCH(saved->world != now->world, "the number of ranks", "%lld", saved->world, now->world)
    MISMATCH(saved->steps != now->steps, "--steps (the schedule's total)", "%lld", saved->steps, now->steps)
    MISMATCH(saved->warmup != now->warmup, "--lr-warmup", "%lld", saved->warmup, now->warmup)
    MISMATCH(strcmp(saved->schedule, now->schedule), "--lr-schedule", "%s", saved->schedule, now->schedule)
    MISMATCH(strcmp(saved->optim, now->optim), "--optim", "%s", saved->optim, now->optim)
    MISMATCH(strcmp(saved->dtype, now->dtype), "--dtype", "%s", saved->dtype, now->dtype)
    MISMATCH(saved->master != now->master, "--master-weights (f32 master weights)", "%d", saved->master, now->master)
    MISMATCH(saved->state_bf16 != now->state_bf16, "--state-bf16", "%d", saved->state_bf16, now->state_bf16)
    MISMATCH(saved->lr != now->lr, "--lr", "%.9g", saved->lr, now->lr)
    MISMATCH(saved->min_lr_ratio != now->min_lr_ratio, "--min-lr-ratio", "%.9g", saved->min_lr_ratio, now->min_lr_ratio)
    MISMATCH(saved->clip != now->clip, "--clip-grad-norm", "%.9g", saved->clip, now->clip)
    MISMATCH(saved->beta1 != now->beta1, "--beta1", "%.9g", saved->beta1, now->beta1)
    MISMATCH(saved->beta2 != now->beta2, "--beta2", "%.9g", saved->beta2, now->beta2)
    MISMATCH(saved->eps != now->eps, "--eps", "%.9g", saved->eps, now->eps)
    MISMATCH(saved->wd != now->wd, "--weight-decay", "%.9g", saved->wd, now->wd)
    MISMATCH(saved->step < 1 || saved->step >= now->steps, "the step (nothing left to run)", "%lld", saved->step, now->steps)
#undef MISMATCH
}

/* Removes dir and the files in it (a checkpoint folder holds no subfolders); absent is fine */
static void remove_checkpoint_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT) return;
        fprintf(stderr, "slidecheck: --save: cannot open %s: %s\n", dir, strerror(errno));
        exit(1);
    }
    char path[4400];
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path)) {
            fprintf(stderr, "slidecheck: --save: cannot remove %s: %s\n", path, strerror(errno));
            exit(1);
        }
    }
    closedir(d);
    if (rmdir(dir)) {
        fprintf(stderr, "slidecheck: --save: cannot remove %s: %s\n", dir, strerror(errno));
        exit(1);
    }
}

/* DIR/step_NNNNNN/: the HF checkpoint, optimizer.safetensors and trainer_state.json, written into
   DIR/.step_NNNNNN.tmp and renamed when complete, so that a kill leaves the last whole one */
static void save_train_checkpoint(sc_model *m, const sc_config *cfg, const char *dir, const train_state *t, int rank)
{
    char tmp[4096], fin[4096], path[4200];
    snprintf(tmp, sizeof tmp, "%s/.step_%06lld.tmp", dir, t->step);
    snprintf(fin, sizeof fin, "%s/step_%06lld", dir, t->step);
    size_t np = sc_config_num_params(cfg);
    float *p = (float *)malloc(sizeof(float) * np);
    if (!p) die(SC_ERROR_OUT_OF_MEMORY, "host memory");
    sc_result r;
    if ((r = sc_model_get_params(m, p)) != SC_SUCCESS) die(r, "reading weights");
    if (rank == 0) {
        remove_checkpoint_dir(tmp); /* a leftover of a killed save */
        check_writable_dir(tmp, "--save");
        if ((r = sc_hf_write(tmp, cfg, p, 0)) != SC_SUCCESS) die(r, tmp);
        snprintf(path, sizeof path, "%s/optimizer.safetensors", tmp);
        if ((r = sc_model_save_optimizer(m, path)) != SC_SUCCESS) die(r, path);
        snprintf(path, sizeof path, "%s/trainer_state.json", tmp);
        if (write_train_state(path, t)) die(SC_ERROR_IO, path);
        remove_checkpoint_dir(fin); /* an older save of the same step */
        if (rename(tmp, fin)) {
            fprintf(stderr, "slidecheck: --save: rename %s -> %s: %s\n", tmp, fin, strerror(errno));
            exit(1);
        }
        printf("saved %s (weights, optimizer state, trainer state)\n", fin);
    } else if ((r = sc_model_save_optimizer(m, NULL)) != SC_SUCCESS) /* this rank's part of the state */
        die(r, "saving the optimizer state");
    free(p);
}

/* The mean loss over the first K batches of the validation shards (rank r takes batches r, r+W,
   ...: each step's loss is already the mean over the ranks) */
static double validate(sc_model *m, const sc_plan *plan, sc_data *val, int32_t *buf, int B, int T, int K, int W)
{
    sc_result r;
    if ((r = sc_data_seek(val, 0)) != SC_SUCCESS) die(r, "--val-data");
    double sum = 0.0;
    int rounds = K / W;
    for (int i = 0; i < rounds; i++) {
        float l;
        if ((r = sc_data_next(val, buf)) != SC_SUCCESS) die(r, "--val-data");
        if ((r = sc_model_forward_backward(m, plan, buf, B, T, &l)) != SC_SUCCESS) die(r, "validation");
        sum += l;
    }
    return sum / rounds;
}

static int cmd_train(int argc, char **argv)
{
    cli_opts o;
    parse_flags(&o, argc, argv,
                "hf model tokens seq batch steps optim lr beta1 beta2 eps weight-decay seed save out device "
                "dtype ckpt mem-cap warmup master-weights mode slide-prefetch slide-cpu-threads pure-bf16 accum save-every "
                "head-slice op-times state-bf16 slide-dpu slide-keep-head slide-device-update slide-head-once gpus zero "
                "bucket-mb dp-sums rendezvous-timeout cuda-graph gemm-tune data val-data shuffle resume lr-schedule lr-warmup min-lr-ratio "
                "clip-grad-norm val-every val-batches slide-device-layers",
                usage_train);
    if (!o.steps) die_usage("%s", "train needs --steps N");
    sc_lr_schedule sched = SC_LR_CONSTANT;
    if (o.lr_schedule && sc_lr_schedule_parse(o.lr_schedule, &sched) != SC_SUCCESS)
        die_usage("--lr-schedule must be constant, linear or cosine, not '%s'", o.lr_schedule);
    if (!(o.min_lr_ratio >= 0.0 && o.min_lr_ratio <= 1.0)) die_usage("%s", "--min-lr-ratio must be in [0, 1]");
    if (!(o.clip >= 0.0 && o.clip <= 1e30)) die_usage("%s", "--clip-grad-norm must be a positive norm (0: off)");
    if (o.data && o.tokens) die_usage("%s", "give either --data PATTERN or --tokens FILE, not both");
    if ((o.have_shuffle || o.val_data) && !o.data) die_usage("%s", "--shuffle and --val-data need --data PATTERN");
    if (!o.val_data != !o.val_every || (o.val_batches && !o.val_data))
        die_usage("%s", "--val-data, --val-every N and --val-batches K go together");
    if (o.val_data && !o.val_batches) o.val_batches = 1;
    if (o.resume && !o.data) die_usage("%s", "--resume continues a run on --data PATTERN (the data position is saved)");
    if ((o.save_every || o.resume) && o.keep_head)
        die_usage("%s", "--save-every / --resume with --slide-keep-head: its optimizer state is not saved yet");
    if (o.resume) { /* the weights come from the checkpoint; its config must be the model's */
        if (o.model || o.hf) die_usage("%s", "--resume DIR takes the model from DIR: leave out --hf and --model");
        o.hf = o.resume;
    }
    /* data parallel: one process per rank, under a launcher (RANK, WORLD_SIZE, ...) or --gpus N */
    sc_dist_env de;
    sc_result dr = sc_dist_env_read(&de);
    if (dr != SC_SUCCESS) die_usage("launch environment: %s", sc_last_error());
    if (o.rdv_timeout > 0) de.timeout_s = o.rdv_timeout; /* over SLIDECHECK_RENDEZVOUS_TIMEOUT */
    if (o.gpus > 1 && de.world_size > 1)
        die_usage("%s", "--gpus N starts the ranks itself: leave it out under a launcher (WORLD_SIZE is set)");
    if (o.gpus > 1) return launch_ranks(o.gpus, argc, argv);
    int W = de.world_size, rank = de.rank;
    if (W > 1 && de.node_count > 1) snprintf(g_rank_tag, sizeof g_rank_tag, "rank %d (node %d): ", rank, de.node);
    else if (W > 1) snprintf(g_rank_tag, sizeof g_rank_tag, "rank %d: ", rank);
    if (W > 256) die_usage("%s", "data parallel: at most 256 ranks");
    if (rank > 0 && !freopen("/dev/null", "w", stdout)) die(SC_ERROR_IO, "/dev/null"); /* rank 0 prints */
    /* a long run must not fail at its end: the output places are checked now. Rank 0 writes --out
       and --save; in data parallel every other rank r writes its own traces into --out/rank<r>/ */
    char rank_out[4096] = "";
    if (o.out && W > 1 && rank > 0) {
        if (strlen(o.out) + 16 >= sizeof rank_out) die_usage("%s", "--out: path too long");
        snprintf(rank_out, sizeof rank_out, "%s/rank%d", o.out, rank);
    }
    const char *my_out = !o.out ? NULL : rank > 0 ? rank_out : o.out;
    if (my_out) check_writable_dir(my_out, "--out");
    if (o.save && rank == 0) check_writable_dir(o.save, "--save");
    sc_config cfg;
    float *params;
    sc_result r;
    load_model_source(&o, &cfg, &params);
    int32_t *ids = NULL;
    int B, T;
    /* the global batch: accum micro-batches of W*B rows; rank r trains on rows [rB, (r+1)B) of each,
       so W ranks of --batch B train on what one process of --batch W*B would */
    sc_data *data = NULL, *val = NULL;
    int32_t *vbuf = NULL;
    if (o.data) {
        /* token shards: each rank reads its own micro-batches; nothing is held beyond one step's */
        B = o.batch ? o.batch : 2;
        T = o.seq ? o.seq : (cfg.max_position < 128 ? cfg.max_position : 128);
        if ((size_t)o.accum * B * T > ((size_t)1 << 28)) die_usage("%s", "--accum x --seq x --batch is too large");
        sc_data_config dc;
        memset(&dc, 0, sizeof dc);
        dc.B = B, dc.T = T, dc.rank = rank, dc.world = W, dc.vocab_size = cfg.vocab_size;
        dc.shuffle = o.have_shuffle, dc.shuffle_seed = o.shuffle_seed;
        if ((r = sc_data_open(&data, o.data, &dc)) != SC_SUCCESS) die(r, o.data);
        if (o.val_data) {
            if (o.val_batches % W) die_usage("%s", "--val-batches must be a multiple of the number of ranks");
            dc.shuffle = 0;
            if ((r = sc_data_open(&val, o.val_data, &dc)) != SC_SUCCESS) die(r, o.val_data);
            vbuf = (int32_t *)malloc(sizeof(int32_t) * (size_t)B * T);
            if (!vbuf) die(SC_ERROR_OUT_OF_MEMORY, "host memory for tokens");
        }
        /* this rank's micro-batches, read at each step (the reader checked every token) */
        ids = (int32_t *)calloc((size_t)o.accum * B * T, sizeof(int32_t));
        if (!ids) die(SC_ERROR_OUT_OF_MEMORY, "host memory for tokens");
    } else if (o.tokens) {
        if (o.seq || o.batch) die_usage("%s", "give either --tokens FILE or --seq/--batch, not both");
        if ((r = sc_tokens_read(o.tokens, &ids, &B, &T)) != SC_SUCCESS) die(r, o.tokens);
        if (B % (o.accum * W)) {
            fprintf(stderr, "slidecheck: %s%s has %d rows, which --accum %d x %d ranks does not divide\n", g_rank_tag,
                    o.tokens, B, o.accum, W);
            return 1;
        }
        B /= o.accum * W;
    } else {
        /* without --tokens: random tokens, 128 x 2 unless given (capped by the model) */
        B = o.batch ? o.batch : 2;
        T = o.seq ? o.seq : (cfg.max_position < 128 ? cfg.max_position : 128);
        if ((size_t)o.accum * W * B * T > ((size_t)1 << 28)) die_usage("%s", "--accum x --seq x --batch is too large");
        ids = (int32_t *)malloc(sizeof(int32_t) * (size_t)o.accum * W * B * T);
        if (!ids) die(SC_ERROR_OUT_OF_MEMORY, "host memory for tokens");
        sc_rng rng = sc_rng_seed(o.seed + 77);
        for (int i = 0; i < o.accum * W * B * T; i++) ids[i] = (int32_t)(sc_rng_u64(&rng) % (uint64_t)cfg.vocab_size);
    }
    if (!data && (r = sc_tokens_check(ids, o.accum * W * B, T, &cfg)) != SC_SUCCESS) die(r, o.tokens ? o.tokens : "--seq");
    sc_dist_comm *comm = NULL;
    int32_t *gids = ids;
    if (W > 1) {
        /* what every rank must agree on: the model, shapes, optimizer, policy, the global batch and
           the data-parallel settings */
        uint64_t h = data ? sc_data_hash(data) : sc_hash_bytes(0, gids, sizeof(int32_t) * (size_t)o.accum * W * B * T);
        int shape[6] = {B, T, o.accum, o.steps, (int)sc_config_num_params(&cfg), cfg.vocab_size};
        h = sc_hash_bytes(h, shape, sizeof shape);
        const char *strs[6] = {o.optim, o.ckpt, o.dtype, o.mode, o.model ? o.model : "", o.hf ? o.hf : ""};
        for (int i = 0; i < 6; i++) h = sc_hash_bytes(h, strs[i], strlen(strs[i]) + 1);
        double nums[6] = {o.lr, o.beta1, o.beta2, o.eps, o.wd, (double)o.seed};
        h = sc_hash_bytes(h, nums, sizeof nums);
        int dp[3] = {o.zero, o.bucket_mb, o.dp_sums}; /* how the ranks split the state and sum: alike */
        h = sc_hash_bytes(h, dp, sizeof dp);
        unsigned char id[8] = {0};
        if ((r = sc_dist_comm_open(&comm, &de, h, id, sizeof id)) != SC_SUCCESS) die(r, "data-parallel rendezvous");
    }
    if (W > 1 && !data) { /* this rank's rows of the global batch */
        ids = (int32_t *)malloc(sizeof(int32_t) * (size_t)o.accum * B * T);
        if (!ids) die(SC_ERROR_OUT_OF_MEMORY, "host memory for tokens");
        for (int k = 0; k < o.accum; k++)
            memcpy(ids + (size_t)k * B * T, gids + ((size_t)k * W + rank) * B * T, sizeof(int32_t) * (size_t)B * T);
        if (o.tokens) sc_tokens_free(gids); else free(gids);
    }
    sc_plan plan = make_plan(&o, &cfg);
    sc_model_config mc;
    model_config_from(&mc, &o);
    mc.clip_grad_norm = (float)o.clip;
    mc.comm = comm;
    mc.zero = o.zero;
    mc.bucket_mb = o.bucket_mb;
    mc.dp_sums = o.dp_sums;
    int ndev = 0;
    if (o.device_layers) {
        if (sc_layer_set_parse(mc.slide_device_layers, o.device_layers, cfg.num_layers) != SC_SUCCESS)
            die_usage("--slide-device-layers: %s", sc_last_error());
        for (int l = 0; l < cfg.num_layers; l++) ndev += mc.slide_device_layers[l];
    }
    if (W > 1) mc.gpu = de.gpu; /* one GPU per process on this machine: LOCAL_RANK, or the task's own (Slurm) */
    int is_auto = !strcmp(o.mode, "auto");
    sc_plan_auto_result ares;
    memset(&ares, 0, sizeof ares);
    if (is_auto) {
        if (W > 1) die_usage("%s", "--mode auto runs one process: choose with 'slidecheck plan --mode auto', then give "
                             "every rank that configuration");
        if (plan.num_layers < 0)
            die_usage("%s", "--ckpt budget:SIZE and --mode auto exclude each other: auto plans the checkpoints under --mem-cap");
        ares = auto_choose(&o, &cfg, &mc, ids, B, T, o.ckpt_given ? &plan : NULL);
        mc = ares.mc;
        plan = ares.plan;
        if (mc.mode == SC_MODE_SLIDE) mc.verbose = 1;
    }
    const char *mode_name = mc.mode == SC_MODE_SLIDE ? "slide" : "resident";
    sc_model *m;
    if ((r = sc_model_create(&m, &cfg, &mc, params)) != SC_SUCCESS) die(r, "creating the model");
    free(params);
    size_t budget;
    if (plan.num_layers < 0 && sc_plan_is_budget(o.ckpt, &budget) > 0)
        plan = plan_budget(m, ids, B, T, budget);
    sc_tracer tr;
    sc_tracer_config tc;
    memset(&tc, 0, sizeof tc);
    tc.warmup_steps = o.warmup > 0 ? o.warmup : -1;
    tc.world = W;
    sc_model_tracer_timing(m, &tc);
    if ((r = sc_tracer_init(&tr, &tc)) != SC_SUCCESS) die(r, "tracer");
    sc_model_set_tracer(m, &tr);
    sc_allocator *al = sc_model_allocator(m);
    int slide = mc.mode == SC_MODE_SLIDE;
#ifdef SLIDECHECK_CUDA
    sc_cuda *cu = sc_model_cuda(m);
    if (o.op_times && !cu) die_usage("%s", "--op-times needs the cuda device");
    if (o.op_times && (r = sc_cuda_profile_ops(cu, 1)) != SC_SUCCESS) die(r, "--op-times");
    if (W > 1 && rank == 0 && cu && (!slide || W > 2)) {
        int how = sc_cuda_p2p_on(cu);
        printf("data parallel: the gradients are summed by %s\n",
               how == SC_CUDA_P2P_COPIES ? "the copy engines (peer copies between the GPUs)"
               : how == SC_CUDA_P2P_ORDERED ? "NCCL's copies and our adds in rank order (as the copy engines')"
                                            : "NCCL");
    }
#else
    if (o.op_times) die_usage("%s", "--op-times needs a build with CUDA");
#endif
    printf("model %s (%s, %d layers, %.1fM params)  B=%d T=%d accum %d  policy %s  %s %s%s  mode %s  optim %s lr %g\n",
           cfg.name[0] ? cfg.name : o.hf, cfg.arch == SC_ARCH_QWEN2 ? "qwen2" : "qwen3", cfg.num_layers,
           (double)sc_config_num_params(&cfg) / 1e6, B, T, o.accum, plan.name, sc_model_cuda(m) ? "cuda" : "cpu",
           o.dtype, mc.master_weights ? "+master" : "", mode_name, o.optim, o.lr);
    if (W > 1)
        printf("data parallel: %d ranks of --batch %d (the batch of one process is %d); loss and gradients summed "
               "over the ranks before each update; step ms = the slowest rank's; rank 0 prints and writes\n", W, B, W * B);
    if (slide) {
        sc_model_config wc = mc;
        printf("slide: prefetch %d, window %.3f GiB of device memory (layer slots, %s, gradients), "
               "host optimizer %s%s%s\n", mc.slide_prefetch ? mc.slide_prefetch : 1,
               (double)sc_slide_window_bytes(&cfg, &wc, &plan) / 1073741824.0,
               mc.slide_keep_head ? "the head kept with its gradients and optimizer state" : "head slot", sc_cpu_optim_isa(),
               mc.slide_dpu ? ", delayed update (DPU: each update one step late)" : "",
               mc.slide_device_update ? ", the layers' SGD on the device (updated weights go down)" : "");
        if (ndev) printf("slide: %d of %d layers on the device (%s) with their gradients and optimizer state\n", ndev,
                         cfg.num_layers, o.device_layers);
        sc_cpu_optim_tuning ot = sc_cpu_optim_choice();
        if (ot.tuned)
            printf("slide: host AdamW timed here (%d threads, %.0fM parameters): %.2f / %.2f G params/s on 4 KiB "
                   "pages (prefetch off / on), %.2f / %.2f on huge pages; runs with prefetch %s, huge pages %s\n",
                   ot.threads, (double)ot.n / 1e6, ot.gparams_s[0][0], ot.gparams_s[0][1], ot.gparams_s[1][0],
                   ot.gparams_s[1][1], ot.prefetch ? "on" : "off", ot.huge_pages ? "on" : "off");
    }
    sc_slide_info si;
    memset(&si, 0, sizeof si);
    int64_t peak_rss = 0, launches = 0;
    double *walls = (double *)malloc(sizeof(double) * (size_t)o.steps);
    double *rank_walls = (double *)malloc(sizeof(double) * (size_t)o.steps * (size_t)W); /* rank 0: [step][rank] */
    if (!rank_walls) die(SC_ERROR_OUT_OF_MEMORY, "host memory");
    int64_t peak_alloc = 0, peak_resv = 0;
    float first_loss = 0.0f;
    if (!walls) die(SC_ERROR_OUT_OF_MEMORY, "host memory");
    /* what a resumed run must share with this one, and where it stands */
    train_state ts;
    memset(&ts, 0, sizeof ts);
    {
        int64_t shape[10] = {cfg.vocab_size, cfg.hidden_size, cfg.intermediate_size, cfg.num_layers, cfg.num_heads,
                             cfg.num_kv_heads, cfg.head_dim, cfg.tie_embeddings, (int64_t)cfg.arch, cfg.max_position};
        ts.model_hash = sc_hash_bytes(0, shape, sizeof shape);
    }
    ts.nparams = (long long)sc_config_num_params(&cfg);
    ts.data_hash = data ? sc_data_hash(data) : 0;
    ts.B = B, ts.T = T, ts.accum = o.accum, ts.world = W, ts.steps = o.steps, ts.warmup = o.lr_warmup;
    ts.shuffle = o.have_shuffle, ts.shuffle_seed = (long long)o.shuffle_seed;
    snprintf(ts.schedule, sizeof ts.schedule, "%s", sc_lr_schedule_name(sched));
    snprintf(ts.optim, sizeof ts.optim, "%s", o.optim);
    snprintf(ts.dtype, sizeof ts.dtype, "%s", o.dtype);
    snprintf(ts.mode, sizeof ts.mode, "%s", mode_name);
    ts.lr = o.lr, ts.min_lr_ratio = o.min_lr_ratio, ts.clip = o.clip;
    ts.beta1 = o.beta1, ts.beta2 = o.beta2, ts.eps = o.eps, ts.wd = o.wd;
    ts.master = mc.master_weights != 0, ts.state_bf16 = mc.state_bf16 != 0;
    int s0 = 0;
    if (o.resume) {
        train_state saved;
        check_train_state(o.resume, &ts, &saved);
        char path[4200];
        snprintf(path, sizeof path, "%s/optimizer.safetensors", o.resume);
        if ((r = sc_model_load_optimizer(m, path)) != SC_SUCCESS) die(r, "--resume");
        if (sc_model_steps_done(m) != (int)saved.step) {
            fprintf(stderr, "slidecheck: --resume %s: the optimizer state is of step %d, the trainer state of %lld\n",
                    o.resume, sc_model_steps_done(m), saved.step);
            return 1;
        }
        if ((r = sc_data_seek(data, saved.data_position)) != SC_SUCCESS) die(r, "--resume");
        s0 = (int)saved.step;
        printf("resumed from %s at step %d (data position %lld batches)\n", o.resume, s0, saved.data_position);
    }
    if (data)
        printf("data: %d shard(s), %lld batches of %d x %d an epoch%s%s\n", sc_data_shard_count(data),
               (long long)sc_data_epoch_batches(data), B, T, o.have_shuffle ? ", shuffled" : "",
               val ? ", validation on" : "");
    int64_t loop_t0 = sc_tracer_now_ns();
    /* the share of the wall time spent inside the steps after the warm-up (the rest: reading the
       batch, the schedule, the norm's read-back, printing, validation and saves) */
    double in_step_ms = 0.0, out_t0 = 0.0;
    for (int s = s0; s < o.steps; s++) {
        float loss;
        int ti = s - s0; /* the tracer's index of this step */
        if (s == s0 + o.warmup) out_t0 = (double)sc_tracer_now_ns() / 1e6;
        double lr = o.lr * sc_lr_factor(sched, s, o.lr_warmup, o.steps, o.min_lr_ratio);
        sc_model_set_lr(m, (float)lr);
        for (int k = 0; data && k < o.accum; k++)
            if ((r = sc_data_next(data, ids + (size_t)k * B * T)) != SC_SUCCESS) die(r, o.data);
        sc_allocator_reset_peak(al);
        sc_tracer_step_begin(&tr, 0, s);
        if ((r = sc_model_step(m, &plan, ids, o.accum, B, T, 1, &loss)) != SC_SUCCESS) {
            /* out of memory at the first step: the cap cannot hold the configuration (bad input,
               nothing written); later (fragmentation, a leak): the allocator as it stood */
            if (r == SC_ERROR_OUT_OF_MEMORY && my_out && s > s0) write_oom_snapshot(al, my_out, s + 1);
            if (r == SC_ERROR_OUT_OF_MEMORY && is_auto && mc.mem_cap && s > s0)
                fprintf(stderr, "slidecheck: --mode auto planned a peak of %.3f GiB under the %.3f GiB cap and the "
                                "first step ran in it; a later block found no free space of its size (most likely fragmentation: "
                                "--out DIR writes memory_snapshot_oom.json). "
                                "A slightly lower --mem-cap leaves the allocator more room.\n",
                        (double)ares.peak_bytes / 1073741824.0, (double)mc.mem_cap / 1073741824.0);
            die(r, "training step");
        }
        /* the norm the update clipped with; without clipping it is computed now, inside the step's
           time: a kernel over the gradients on the GPU, and in slide mode a wait for the host
           updates and a pass over the host gradients, which printing the norm costs there */
        double gn = sc_model_grad_norm(m);
        /* slide: the last step's host updates may still run; they belong to this step's time */
        if (s + 1 == o.steps && (r = sc_model_sync(m)) != SC_SUCCESS) die(r, "training step");
        si = sc_model_slide_info(m);
        sc_tracer_mem mem = sc_model_tracer_mem(m);
        if ((r = sc_tracer_step_end(&tr, loss, (double)o.accum * B * T, &mem)) != SC_SUCCESS) die(r, "tracer");
#ifdef SLIDECHECK_CUDA
        if (o.op_times && (r = sc_cuda_profile_collect(cu, s >= o.warmup)) != SC_SUCCESS) die(r, "--op-times");
#endif
        const sc_step_metrics *sm = sc_tracer_step_get(&tr, ti);
        walls[s] = sm->wall_ms;
        if (s >= s0 + o.warmup) in_step_ms += sm->wall_ms;
        double vl = NAN;
        if (val && (s + 1) % o.val_every == 0) vl = validate(m, &plan, val, vbuf, B, T, o.val_batches, W);
        sc_tracer_step_note(&tr, ti, lr, gn, vl);
        if (W > 1) { /* a step takes as long as its slowest rank */
            double *all = rank_walls + (size_t)s * W;
            if ((r = sc_dist_gather(comm, &walls[s], rank ? NULL : all, sizeof(double))) != SC_SUCCESS)
                die(r, "data parallel");
            for (int q = 0; rank == 0 && q < W; q++) walls[s] = all[q] > walls[s] ? all[q] : walls[s];
        }
        if (s == s0) first_loss = loss;
        if (mem.peak_allocated > peak_alloc) peak_alloc = mem.peak_allocated;
        if (mem.peak_reserved > peak_resv) peak_resv = mem.peak_reserved;
        if (sm->cpu_peak_rss > peak_rss) peak_rss = sm->cpu_peak_rss;
        launches = 0;
        for (int p = 0; p < SC_PHASE_COUNT; p++) launches += sm->launches[p];
        /* name-value pairs: step S loss X lr X norm X ms X ... */
        printf("step %d loss %.6f lr %.6e norm %.6f ms %.2f fwd %.2f recompute %.2f bwd %.2f opt %.2f peak_alloc_gib %.3f",
               s + 1, loss, lr, gn, walls[s], sm->phase_ms[SC_PHASE_FWD], sm->phase_ms[SC_PHASE_RECOMPUTE],
               sm->phase_ms[SC_PHASE_BWD], sm->phase_ms[SC_PHASE_OPT], (double)mem.peak_allocated / 1073741824.0);
        if (slide)
            printf(" h2d_gb %.3f d2h_gb %.3f opt_wait_ms %.2f", (double)si.h2d_bytes / 1e9, (double)si.d2h_bytes / 1e9,
                   si.opt_wait_ms);
        if (sm->bytes[SC_PHASE_COMM] && sm->phase_ms[SC_PHASE_COMM] > 0) /* NCCL's busBw: algbw x 2 (W - 1) / W */
            printf("  %s %.2f ms %.3f GB bus %.1f GB/s", o.zero ? "reduce-scatter+all-gather" : "all-reduce",
                   sm->phase_ms[SC_PHASE_COMM], (double)sm->bytes[SC_PHASE_COMM] / 1e9,
                   (double)sm->bytes[SC_PHASE_COMM] / (sm->phase_ms[SC_PHASE_COMM] * 1e6) * (o.zero ? 1.0 : 2.0) * (W - 1) / W);
        { /* progress: tokens a second over the run so far (validation and saves included), time left */
            double el = (double)(sc_tracer_now_ns() - loop_t0) / 1e9, done = s + 1 - s0;
            char eta[32];
            fmt_eta(eta, sizeof eta, el / done * (o.steps - s - 1));
            printf(" tok/s %.0f eta %s", done * o.accum * W * B * T / (el > 0 ? el : 1e-9), eta);
        }
        printf("\n");
        if (vl == vl) printf("val step %d loss %.6f\n", s + 1, vl);
        fflush(stdout);
        if (o.save_every && (s + 1) % o.save_every == 0 && s + 1 < o.steps) {
            if (data) {
                ts.step = s + 1;
                ts.data_position = sc_data_position(data);
                save_train_checkpoint(m, &cfg, o.save, &ts, rank);
            } else save_checkpoint(m, &cfg, o.save, rank);
        }
    }
    {
        /* steps after the warm-up: median wall time with n, and the run's peak memory */
        int w = o.warmup < o.steps - s0 ? o.warmup : 0;
        sc_stats st = sc_stats_compute(walls + s0 + w, o.steps - s0 - w);
        char ci[32] = "n/a (n < 2)";
        if (st.n >= 2) snprintf(ci, sizeof ci, "%.2f ms", st.ci95);
        printf("summary: first-step loss %.6f  median step %.2f ms (n=%d after %d warm-up; mean %.2f ms, 95%% CI +- %s)"
               "  peak allocated %.3f GiB  peak reserved %.3f GiB  peak rss %.3f GiB",
               first_loss, st.median, st.n, w, st.mean, ci, (double)peak_alloc / 1073741824.0,
               (double)peak_resv / 1073741824.0, (double)peak_rss / 1073741824.0);
        if (is_auto) /* the plan's predictions beside what the run measured */
            printf("  auto: peak allocated %.3f GiB (predicted %.3f GiB)  median step %.2f ms (predicted %.2f ms)",
                   (double)peak_alloc / 1073741824.0, (double)ares.peak_bytes / 1073741824.0, st.median, ares.step_ms);
        /* model FLOPs (sc_config_train_flops: 6 N tokens + causal attention, recompute not counted) */
        printf("  params %zu", sc_config_num_params(&cfg));
        /* kernel launches + cuBLASLt calls of the last step (0 on the CPU) */
        printf("  launches %lld", (long long)launches);
        double all_ms = (double)sc_tracer_now_ns() / 1e6 - out_t0;
        if (out_t0 > 0 && all_ms > 0) printf("  in-step %.1f%% of wall time", 100.0 * in_step_ms / all_ms);
        if (sc_model_graph_steps(m))
            printf(" (cuda graph: %lld of %d steps, %lld kernels in it)", (long long)sc_model_graph_steps(m), o.steps,
                   (long long)sc_model_graph_kernels(m));
        if (st.median > 0)
            printf("  model %.1f TFLOP/s", (double)o.accum * W * sc_config_train_flops(&cfg, B, T) / (st.median * 1e-3) / 1e12);
        if (slide)
            printf("  h2d %.3f GB/step  d2h %.3f GB/step  pinned %.3f GiB  pageable %.3f GiB  h2d-fwd %.3f GB"
                   "  host-opt params %zu", (double)si.h2d_bytes / 1e9,
                   (double)si.d2h_bytes / 1e9, (double)si.pinned_bytes / 1073741824.0,
                   (double)si.host_bytes / 1073741824.0, /* rank 0's: ZeRO-1 shards its AdamW state */
                   (double)si.h2d_first_bytes / 1e9, si.host_update_params);
        printf("  device %s\n",
#ifdef SLIDECHECK_CUDA
               sc_model_cuda(m) ? sc_cuda_device_name(sc_model_cuda(m)) : "cpu"
#else
               "cpu"
#endif
        );
        free(walls);
#ifdef SLIDECHECK_CUDA
        if (o.op_times) {
            int kept = o.steps - s0 - w;
            int n = sc_cuda_profile_report(cu, NULL, 0, kept);
            char *buf = (char *)malloc((size_t)n + 1);
            if (!buf) die(SC_ERROR_OUT_OF_MEMORY, "host memory");
            sc_cuda_profile_report(cu, buf, (size_t)n + 1, kept);
            printf("per-kernel times over %d steps (an event after each kernel):\n%s", kept, buf);
            free(buf);
        }
#endif
    }
    if (my_out && rank > 0) {
        if ((r = sc_tracer_write_all(&tr, my_out)) != SC_SUCCESS) die(r, my_out);
    } else if (o.out) {
        if ((r = sc_tracer_write_all(&tr, o.out)) != SC_SUCCESS) die(r, o.out);
        if (W > 1) { /* the ranks' step times side by side; the step's time is the slowest rank's */
            char path[4096];
            snprintf(path, sizeof path, "%s/dp_steps.csv", o.out);
            FILE *f = fopen(path, "w");
            if (!f) die(SC_ERROR_IO, path);
            fprintf(f, "step");
            for (int q = 0; q < W; q++) fprintf(f, ",wall_ms_rank%d", q);
            fprintf(f, ",wall_ms_slowest\n");
            for (int s = s0; s < o.steps; s++) {
                double mx = 0.0;
                fprintf(f, "%d", s + 1);
                for (int q = 0; q < W; q++) {
                    double v = rank_walls[(size_t)s * W + q];
                    fprintf(f, ",%.4f", v);
                    mx = v > mx ? v : mx;
                }
                fprintf(f, ",%.4f\n", mx);
            }
            if (fclose(f)) die(SC_ERROR_IO, path);
        }
        int n = sc_allocator_summary(al, NULL, 0);
        char *buf = (char *)malloc((size_t)n + 1);
        if (!buf) die(SC_ERROR_OUT_OF_MEMORY, "host memory");
        sc_allocator_summary(al, buf, (size_t)n + 1);
        write_text(o.out, "memory_summary.txt", buf);
        free(buf);
        write_snapshot(al, o.out);
        printf("wrote %s/{step_metrics,layer_metrics,mem_trace,summary}.csv, trace.json, memory_summary.txt, "
               "memory_snapshot.json\n", o.out);
    }
    if (o.save) save_checkpoint(m, &cfg, o.save, rank);
    sc_model_set_tracer(m, NULL);
    sc_tracer_uninit(&tr);
    sc_model_destroy(m);
    sc_dist_comm_close(comm);
    free(rank_walls);
    if (o.tokens) sc_tokens_free(ids); else free(ids);
    sc_data_close(data);
    sc_data_close(val);
    free(vbuf);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "slidecheck: no command given\n%s", usage_main);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        printf("%s", usage_main);
        return 0;
    }
    if (!strcmp(argv[1], "grad")) return cmd_grad(argc, argv);
    if (!strcmp(argv[1], "train")) return cmd_train(argc, argv);
    if (!strcmp(argv[1], "plan")) return cmd_plan(argc, argv);
    die_usage("unknown command '%s' (commands: grad, train, plan)", argv[1]);
    return 2;
}
