/* Collective bandwidth on the library's own NCCL entry points, as nccl-tests measures it:
   all-reduce, reduce-scatter and all-gather of bf16 (or f32) buffers from 8 KiB to 1 GiB.
     make build/allreduce          (needs nvcc: links build/slidecheck_cuda.o)
     torchrun --nproc-per-node 2 --no-python build/allreduce --out FILE.csv
     torchrun --nnodes 2 --nproc-per-node 1 --node-rank 0|1 --master-addr A --master-port P --no-python \
         build/allreduce --out FILE.csv           (one command on each node)
   Options: --out FILE (CSV, rank 0; default: none), --min-bytes 8K, --max-bytes 1G, --step 2|4 (the
   factor between sizes, 2), --iters N (20, the most timed; 5 at least), --warmup N (5), --budget-s S
   (0.5: fewer iterations where N would take longer), --dtype bf16|f32, --ops
   allreduce,reduce_scatter,allgather, --transport NAME (the CSV's transport_hint; default from
   NCCL_NET / NCCL_P2P_DISABLE / NCCL_SHM_DISABLE / NCCL_IB_DISABLE and the node count),
   --copy-engines 1 (ranks of one host: the buffer registered for the library's copy-engine sums,
   as resident training registers its gradients; all-reduce at two ranks and past two the chunks'
   sums with their gather, sc_cuda_allreduce_chunks_sum, and reduce-scatter go by peer copies, the
   all-gather stays NCCL's; transport "ce").
   The ranks meet over the launcher's variables (sc_dist_env_read, as the training tool does); rank
   0's NCCL unique id reaches the others over the control channel. Each rank uses GPU LOCAL_RANK
   modulo the devices CUDA_VISIBLE_DEVICES lists.
   Sizes are nccl-tests' "size": the whole buffer (reduce-scatter: W chunks in, one out; all-gather:
   one chunk in, W out), in place. Each size: a warm-up, a barrier over the control channel, then
   n back-to-back collectives on the communication stream with an event between each two (the
   library's timing events); a rank's time is the median of its n intervals, the one reported the
   slowest rank's. algbw = bytes / time (GB/s, 1e9); busbw = algbw x 2(W-1)/W for all-reduce and
   (W-1)/W for the other two: the bytes a rank's link carries in a ring, comparable across W.
   Before timing, each op is checked once on small, exact values (rank-dependent integers). A rank
   that stops or stalls ends the run within the control channel's timeout
   (SLIDECHECK_RENDEZVOUS_TIMEOUT, 60 s), never a hang. */
#define SLIDECHECK_IMPLEMENTATION
#include "slidecheck.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SLIDECHECK_CUDA
int main(void)
{
    fprintf(stderr, "allreduce: built without SLIDECHECK_CUDA: build it with `make build/allreduce` (needs nvcc)\n");
    return 2;
}
#else

enum { OP_ALLREDUCE, OP_REDUCE_SCATTER, OP_ALLGATHER, OP_COUNT };
static const char *op_names[OP_COUNT] = {"allreduce", "reduce_scatter", "allgather"};

typedef struct bench_opts {
    const char *out, *transport;
    size_t min_bytes, max_bytes;
    int step, iters, warmup, ops[OP_COUNT], ce;
    double budget_s;
    sc_dtype dt;
} bench_opts;

static int rank_ = 0;

static void die(const char *what)
{
    fprintf(stderr, "allreduce: rank %d: %s: %s\n", rank_, what, sc_last_error());
    exit(1);
}

static void usage(const char *msg)
{
    fprintf(stderr, "allreduce: %s\nusage: allreduce [--out FILE.csv] [--min-bytes 8K] [--max-bytes 1G] [--step 2|4] "
                    "[--iters 20] [--warmup 5] [--budget-s 0.5] [--dtype bf16|f32] "
                    "[--ops allreduce,reduce_scatter,allgather] [--transport NAME] [--copy-engines 0|1]\n", msg);
    exit(2);
}

static int env_is(const char *name, const char *val)
{
    const char *v = getenv(name);
    return v && !strcmp(v, val);
}

/* what carries the collectives, as far as the environment tells (NCCL decides; its INFO log says) */
static const char *transport_guess(int nodes)
{
    const char *net = getenv("NCCL_NET");
    if (net && (!strcmp(net, "Socket") || !strcmp(net, "socket"))) return "socket";
    if (env_is("NCCL_P2P_DISABLE", "1") && env_is("NCCL_SHM_DISABLE", "1"))
        return env_is("NCCL_IB_DISABLE", "1") ? "socket" : "net";
    return nodes > 1 ? "net" : "p2p";
}

static void parse(bench_opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->min_bytes = 8 << 10, o->max_bytes = (size_t)1 << 30;
    o->step = 2, o->iters = 20, o->warmup = 5, o->budget_s = 0.5, o->dt = SC_BF16;
    for (int k = 0; k < OP_COUNT; k++) o->ops[k] = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("see the top of bench/allreduce.c; under torchrun: torchrun --nproc-per-node 2 --no-python "
                   "build/allreduce --out FILE.csv\n");
            exit(0);
        }
        if (!v) usage("every option takes a value");
        i++;
        if (!strcmp(a, "--out")) o->out = v;
        else if (!strcmp(a, "--transport")) o->transport = v;
        else if (!strcmp(a, "--min-bytes") || !strcmp(a, "--max-bytes")) {
            size_t b = 0;
            if (sc_parse_size(v, &b) || !b) usage("--min-bytes / --max-bytes: a size like 8K, 256MiB or 1G");
            *(!strcmp(a, "--min-bytes") ? &o->min_bytes : &o->max_bytes) = b;
        } else if (!strcmp(a, "--step")) {
            o->step = atoi(v);
            if (o->step != 2 && o->step != 4) usage("--step: 2 or 4");
        } else if (!strcmp(a, "--iters")) {
            o->iters = atoi(v);
            if (o->iters < 5 || o->iters > 10000) usage("--iters: 5 .. 10000");
        } else if (!strcmp(a, "--warmup")) {
            o->warmup = atoi(v);
            if (o->warmup < 1 || o->warmup > 1000) usage("--warmup: 1 .. 1000");
        } else if (!strcmp(a, "--budget-s")) {
            o->budget_s = atof(v);
            if (!(o->budget_s > 0)) usage("--budget-s: seconds > 0");
        } else if (!strcmp(a, "--dtype")) {
            if (!strcmp(v, "bf16")) o->dt = SC_BF16;
            else if (!strcmp(v, "f32") || !strcmp(v, "fp32")) o->dt = SC_F32;
            else usage("--dtype: bf16 or f32");
        } else if (!strcmp(a, "--copy-engines")) {
            if (strcmp(v, "0") && strcmp(v, "1")) usage("--copy-engines: 0 or 1");
            o->ce = v[0] == '1';
        } else if (!strcmp(a, "--ops")) {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v);
            memset(o->ops, 0, sizeof o->ops);
            for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
                int k = 0;
                while (k < OP_COUNT && strcmp(t, op_names[k])) k++;
                if (k == OP_COUNT) usage("--ops: a comma list of allreduce, reduce_scatter, allgather");
                o->ops[k] = 1;
            }
        } else usage("unknown option");
    }
    if (o->min_bytes > o->max_bytes) usage("--min-bytes is above --max-bytes");
}

/* one collective over `count` elements: the whole buffer (all-reduce) or a rank's chunk (the others).
   chunks: the all-reduce as the W chunks' sums and their gather (the copy engines past two ranks) */
static void run_op(sc_cuda *cu, int op, void *buf, size_t count, sc_dtype dt, int chunks)
{
    int W = chunks;
    if (op == OP_ALLREDUCE && W > 2) sc_cuda_allreduce_chunks_sum(cu, buf, count / (size_t)W, dt);
    else if (op == OP_ALLREDUCE) sc_cuda_allreduce_sum(cu, buf, count, dt);
    else if (op == OP_REDUCE_SCATTER) sc_cuda_reduce_scatter_sum(cu, buf, count, dt);
    else sc_cuda_allgather(cu, buf, count, dt);
}

static void settle(sc_cuda *cu, double timeout_s, const char *what)
{
    if (sc_cuda_comm_settle(cu, timeout_s) != SC_SUCCESS) die(what);
}

/* Each op once on C elements a rank (all-reduce: W C) of small integers, exact in bf16: element i
   of rank r is (i % 7) + r + 1. 1 when every value is what the op must give. */
static int check_op(sc_cuda *cu, sc_dist_comm *comm, int op, void *buf, sc_dtype dt, double timeout_s, int chunks)
{
    const size_t C = 1024;
    int W = sc_dist_comm_world(comm), r = sc_dist_comm_rank(comm);
    size_t n = C * (size_t)W;
    float *x = (float *)malloc(sizeof(float) * n);
    if (!x) { fprintf(stderr, "allreduce: host memory\n"); exit(1); }
    for (size_t i = 0; i < n; i++) x[i] = (float)(i % 7) + (float)r + 1.0f;
    sc_cuda_upload_f32(cu, buf, dt, x, n);
    sc_cuda_comm_wait(cu); /* the communication stream reads what the compute stream wrote */
    run_op(cu, op, buf, op == OP_ALLREDUCE ? n : C, dt, chunks);
    settle(cu, timeout_s, "check");
    sc_cuda_download_f32(cu, x, buf, dt, n);
    if (sc_cuda_status(cu) != SC_SUCCESS) die("check");
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        size_t c = i / C; /* the chunk, for reduce-scatter's and all-gather's */
        float want = (float)W * (float)(i % 7) + (float)(W * (W + 1) / 2);
        if (op == OP_REDUCE_SCATTER && c != (size_t)r) continue; /* only this rank's chunk is defined */
        if (op == OP_ALLGATHER) want = (float)(i % 7) + (float)c + 1.0f;
        ok = x[i] == want;
    }
    free(x);
    return ok;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    bench_opts o;
    parse(&o, argc, argv);
    sc_dist_env e;
    if (sc_dist_env_read(&e) != SC_SUCCESS) die("launch environment");
    rank_ = e.rank;
    int W = e.world_size;
    const char *transport = o.transport ? o.transport : o.ce ? "ce" : transport_guess(e.node_count);
    /* what every rank must agree on: the sizes, counts and ops */
    uint64_t h = sc_hash_bytes(0, &o.min_bytes, sizeof o.min_bytes);
    h = sc_hash_bytes(h, &o.max_bytes, sizeof o.max_bytes);
    int nums[5 + OP_COUNT] = {o.step, o.iters, o.warmup, (int)o.dt, o.ops[0], o.ops[1], o.ops[2], o.ce};
    h = sc_hash_bytes(h, nums, sizeof nums);
    h = sc_hash_bytes(h, &o.budget_s, sizeof o.budget_s);
    unsigned char blob[8] = {0}, id[SC_NCCL_ID_BYTES];
    sc_dist_comm *comm = NULL;
    if (sc_dist_comm_open(&comm, &e, h, blob, sizeof blob) != SC_SUCCESS) die("rendezvous");
    sc_cuda_config cc;
    memset(&cc, 0, sizeof cc);
    cc.bf16 = o.dt == SC_BF16;
    cc.device = e.gpu;
    sc_cuda *cu = NULL;
    if (sc_cuda_create(&cu, &cc) != SC_SUCCESS) die("CUDA");
    memset(id, 0, sizeof id);
    if (e.rank == 0 && sc_cuda_nccl_unique_id(id) != SC_SUCCESS) die("NCCL id");
    if (sc_dist_broadcast(comm, id, sizeof id) != SC_SUCCESS) die("NCCL id broadcast");
    if (sc_cuda_nccl_open(cu, W, e.rank, id, e.timeout_s) != SC_SUCCESS) die("NCCL");
    size_t es = sc_dtype_size(o.dt), cap = o.max_bytes;
    if (cap < 1024 * (size_t)W * es) cap = 1024 * (size_t)W * es; /* the checks' buffer */
    void *buf = sc_cuda_raw_alloc(cap, cu);
    if (!buf) {
        fprintf(stderr, "allreduce: rank %d: cudaMalloc of %zu bytes failed\n", e.rank, cap);
        return 1;
    }
    double tmo = e.timeout_s;
    int ok = 1, chunks = 0;
    if (o.ce) { /* the buffer registered for the copy engines, with a slot of cap / W a peer */
        size_t sb = ((size_t)(W - 1) * ((cap / es + (size_t)W - 1) / (size_t)W) * es + 255) / 256 * 256;
        void *scratch = sc_cuda_raw_alloc(sb, cu);
        unsigned char mine[SC_CUDA_P2P_BLOB_BYTES], *all = (unsigned char *)malloc((size_t)W * sizeof mine);
        if (!scratch || !all || W < 2 || W > 8) {
            fprintf(stderr, "allreduce: --copy-engines: 2 to 8 ranks, and %zu bytes of scratch\n", sb);
            return 1;
        }
        memset(mine, 0, sizeof mine);
        if (sc_cuda_p2p_export(cu, buf, cap, scratch, sb, mine) != SC_SUCCESS) die("--copy-engines: export");
        if (sc_dist_gather(comm, mine, all, sizeof mine) != SC_SUCCESS ||
            sc_dist_broadcast(comm, all, (size_t)W * sizeof mine) != SC_SUCCESS)
            die("--copy-engines: the blobs");
        float in = sc_cuda_p2p_import(cu, all) == SC_SUCCESS ? 1.0f : 0.0f;
        if (!in) fprintf(stderr, "allreduce: rank %d: --copy-engines: %s\n", e.rank, sc_last_error());
        if (sc_dist_allreduce_f32(comm, &in, 1) != SC_SUCCESS) die("--copy-engines");
        if (in != (float)W) return 1; /* a rank could not map its peers: every rank stops */
        sc_cuda_p2p_use(cu, 1);
        free(all);
        chunks = W; /* (the scratch stays mapped until sc_cuda_destroy) */
    }
    for (int op = 0; op < OP_COUNT; op++) {
        if (!o.ops[op]) continue;
        int mine = check_op(cu, comm, op, buf, o.dt, tmo, chunks), all[256];
        if (W > 256) { fprintf(stderr, "allreduce: at most 256 ranks\n"); return 2; }
        if (sc_dist_gather(comm, &mine, e.rank ? NULL : all, sizeof mine) != SC_SUCCESS) die("gather");
        for (int q = 0; e.rank == 0 && q < W; q++)
            if (!all[q]) {
                fprintf(stderr, "allreduce: %s gave wrong values on rank %d\n", op_names[op], q);
                ok = 0;
            }
    }
    if (sc_dist_broadcast(comm, &ok, sizeof ok) != SC_SUCCESS) die("broadcast");
    if (!ok) return 1;
    FILE *f = NULL;
    if (e.rank == 0) {
        printf("# %s: %d ranks on %d node(s), %s, transport %s; each op checked on exact values: ok\n",
               sc_cuda_device_name(cu), W, e.node_count, o.dt == SC_BF16 ? "bf16" : "f32", transport);
        printf("# median of n back-to-back collectives (the slowest rank's); algbw = bytes / time; busbw = algbw x "
               "%s (all-reduce), x (W-1)/W (the others)\n", "2(W-1)/W");
        printf("%-15s %12s %6s %12s %11s %11s\n", "op", "bytes", "n", "median_us", "algbw_GBps", "busbw_GBps");
        if (o.out) {
            f = fopen(o.out, "w");
            if (!f) { fprintf(stderr, "allreduce: cannot write %s\n", o.out); return 1; }
            fprintf(f, "op,bytes,world,nodes,transport_hint,median_us,algbw_GBps,busbw_GBps,n\n");
        }
    }
    void **ev = (void **)calloc((size_t)o.iters + 1, sizeof(void *));
    float *ms = (float *)malloc(sizeof(float) * (size_t)o.iters);
    double *meds = (double *)malloc(sizeof(double) * (size_t)W);
    if (!ev || !ms || !meds) { fprintf(stderr, "allreduce: host memory\n"); return 1; }
    for (int op = 0; op < OP_COUNT; op++) {
        if (!o.ops[op]) continue;
        for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= (size_t)o.step) {
            /* all-reduce: bytes / es elements; the others: W chunks of `count` */
            size_t count = op == OP_ALLREDUCE ? bytes / es : bytes / (es * (size_t)W);
            if (op == OP_ALLREDUCE && chunks > 2) count -= count % (size_t)W; /* W whole chunks */
            size_t total = op == OP_ALLREDUCE ? count * es : count * es * (size_t)W;
            if (!count) continue;
            void *w0 = sc_cuda_event_record(SC_STREAM_COMM, cu);
            for (int i = 0; i < o.warmup; i++) run_op(cu, op, buf, count, o.dt, chunks);
            void *w1 = sc_cuda_event_record(SC_STREAM_COMM, cu);
            settle(cu, tmo, "warm-up");
            /* fewer timed iterations where the full count would pass the budget: rank 0 decides */
            double one = sc_cuda_event_elapsed_ms(w0, w1, cu) / 1e3 / o.warmup;
            sc_cuda_event_destroy(w0, cu), sc_cuda_event_destroy(w1, cu);
            int n = o.iters;
            if (one > 0 && one * n > o.budget_s) n = (int)(o.budget_s / one);
            if (n < 5) n = 5;
            if (sc_dist_broadcast(comm, &n, sizeof n) != SC_SUCCESS) die("broadcast");
            if (sc_dist_barrier(comm) != SC_SUCCESS) die("barrier");
            ev[0] = sc_cuda_event_record(SC_STREAM_COMM, cu);
            for (int i = 0; i < n; i++) {
                run_op(cu, op, buf, count, o.dt, chunks);
                ev[i + 1] = sc_cuda_event_record(SC_STREAM_COMM, cu);
            }
            settle(cu, tmo, op_names[op]);
            for (int i = 0; i < n; i++) ms[i] = sc_cuda_event_elapsed_ms(ev[i], ev[i + 1], cu);
            for (int i = 0; i <= n; i++) sc_cuda_event_destroy(ev[i], cu), ev[i] = NULL;
            if (sc_cuda_status(cu) != SC_SUCCESS) die("timing events");
            qsort(ms, (size_t)n, sizeof *ms, cmp_float);
            double med = n % 2 ? ms[n / 2] : 0.5 * ((double)ms[n / 2 - 1] + ms[n / 2]);
            if (sc_dist_gather(comm, &med, e.rank ? NULL : meds, sizeof med) != SC_SUCCESS) die("gather");
            if (e.rank) continue;
            for (int q = 1; q < W; q++)
                if (meds[q] > med) med = meds[q];
            double us = med * 1e3, alg = (double)total / (med * 1e-3) / 1e9;
            double bus = alg * (op == OP_ALLREDUCE ? 2.0 : 1.0) * (W - 1) / W;
            printf("%-15s %12zu %6d %12.2f %11.2f %11.2f\n", op_names[op], total, n, us, alg, bus);
            fflush(stdout);
            if (f)
                fprintf(f, "%s,%zu,%d,%d,%s,%.3f,%.4f,%.4f,%d\n", op_names[op], total, W, e.node_count, transport, us,
                        alg, bus, n);
        }
    }
    if (f && fclose(f)) { fprintf(stderr, "allreduce: writing %s failed\n", o.out); return 1; }
    if (e.rank == 0 && o.out) printf("# wrote %s\n", o.out);
    free(ev), free(ms), free(meds);
    sc_cuda_raw_free(buf, cap, cu);
    if (sc_dist_barrier(comm) != SC_SUCCESS) die("final barrier");
    sc_cuda_destroy(cu);
    sc_dist_comm_close(comm);
    return 0;
}
#endif
