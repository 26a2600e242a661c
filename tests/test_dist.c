/* Several processes without a GPU: the launch environment (torchrun's variables) and the TCP
   rendezvous between real processes on the loopback: rank 0's blob reaches every rank; a
   configuration mismatch, a rank that never arrives and an unreachable rank 0 all end in a clear
   error within the timeout on every rank that is there. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* strict C11 hides these POSIX declarations; glibc exports them */
extern int setenv(const char *name, const char *value, int overwrite);
extern int unsetenv(const char *name);
extern int nanosleep(const struct timespec *req, struct timespec *rem);

static void sleep_ms(int ms)
{
    struct timespec t;
    t.tv_sec = ms / 1000, t.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&t, &t) != 0) {}
}

#include "check.h"

static const char *vars[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                             "SLIDECHECK_RENDEZVOUS_TIMEOUT"};
static void env_clear(void)
{
    for (int i = 0; i < 7; i++) unsetenv(vars[i]);
}

/* RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT TIMEOUT; NULL = unset */
static sc_result env_try(const char *v[7], sc_dist_env *e)
{
    env_clear();
    for (int i = 0; i < 7; i++)
        if (v[i]) setenv(vars[i], v[i], 1);
    return sc_dist_env_read(e);
}

static void test_env(void)
{
    sc_dist_env e;
    const char *none[7] = {0};
    CHECK(env_try(none, &e) == SC_SUCCESS && e.world_size == 1 && e.rank == 0 && e.timeout_s == 60.0,
          "no variables: one process, rank 0 of 1, timeout 60 s");
    const char *tr[7] = {"3", "4", "1", "2", "10.0.0.7", "29500", NULL};
    CHECK(env_try(tr, &e) == SC_SUCCESS && e.rank == 3 && e.world_size == 4 && e.local_rank == 1 &&
              e.local_world_size == 2 && !strcmp(e.master_addr, "10.0.0.7") && e.master_port == 29500,
          "torchrun's variables read: rank 3 of 4, local 1 of 2, 10.0.0.7:29500");
    const char *to[7] = {"0", "2", NULL, NULL, "localhost", "1234", "2.5"};
    CHECK(env_try(to, &e) == SC_SUCCESS && e.timeout_s == 2.5 && e.local_rank == 0,
          "SLIDECHECK_RENDEZVOUS_TIMEOUT=2.5 read; LOCAL_RANK defaults to RANK");
    /* torchrun's agent holds MASTER_PORT for its own store (it ran so on the device: "Address
       already in use"); the rendezvous takes the next port, or SLIDECHECK_RENDEZVOUS_PORT */
    setenv("TORCHELASTIC_USE_AGENT_STORE", "True", 1);
    CHECK(env_try(tr, &e) == SC_SUCCESS && e.master_port == 29501, "under torchrun's agent store: port 29501 (%d)",
          e.master_port);
    setenv("SLIDECHECK_RENDEZVOUS_PORT", "31000", 1);
    CHECK(env_try(tr, &e) == SC_SUCCESS && e.master_port == 31000, "SLIDECHECK_RENDEZVOUS_PORT=31000 wins (%d)",
          e.master_port);
    setenv("SLIDECHECK_RENDEZVOUS_PORT", "0", 1);
    CHECK(env_try(tr, &e) == SC_ERROR_INVALID_ARGS && strstr(sc_last_error(), "SLIDECHECK_RENDEZVOUS_PORT='0'"),
          "SLIDECHECK_RENDEZVOUS_PORT=0 rejected: %s", sc_last_error());
    unsetenv("SLIDECHECK_RENDEZVOUS_PORT");
    setenv("TORCHELASTIC_USE_AGENT_STORE", "False", 1);
    CHECK(env_try(tr, &e) == SC_SUCCESS && e.master_port == 29500, "agent store False: MASTER_PORT itself (%d)",
          e.master_port);
    unsetenv("TORCHELASTIC_USE_AGENT_STORE");
    struct { const char *v[7], *want, *what; } bad[] = {
        {{"2", "2", NULL, NULL, "127.0.0.1", "29500", NULL}, "RANK=2 is not below WORLD_SIZE=2", "rank >= world"},
        {{"x", "2", NULL, NULL, "127.0.0.1", "29500", NULL}, "RANK='x'", "malformed RANK"},
        {{"0", "0", NULL, NULL, "127.0.0.1", "29500", NULL}, "WORLD_SIZE='0'", "WORLD_SIZE 0"},
        {{"0", NULL, NULL, NULL, NULL, NULL, NULL}, "RANK and WORLD_SIZE go together", "RANK without WORLD_SIZE"},
        {{"1", "2", NULL, NULL, NULL, "29500", NULL}, "MASTER_ADDR is not set", "no MASTER_ADDR"},
        {{"1", "2", NULL, NULL, "127.0.0.1", "70000", NULL}, "MASTER_PORT='70000'", "port out of range"},
        {{"1", "2", NULL, NULL, "127.0.0.1", NULL, NULL}, "MASTER_PORT=''", "no MASTER_PORT"},
        {{"1", "4", "2", "2", "127.0.0.1", "29500", NULL}, "LOCAL_RANK='2'", "local rank >= local world"},
        {{"0", "2", NULL, NULL, "127.0.0.1", "29500", "-1"}, "SLIDECHECK_RENDEZVOUS_TIMEOUT='-1'", "negative timeout"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sc_result r = env_try(bad[i].v, &e);
        CHECK(r == SC_ERROR_INVALID_ARGS && strstr(sc_last_error(), bad[i].want), "%s: %s", bad[i].what,
              sc_last_error());
    }
    env_clear();
}

/* A TCP socket on 127.0.0.1 at a port the kernel picks (*port), listening if asked; -1 on failure. */
static int loopback_socket(int listening, int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(0x7f000001u);
    socklen_t l = sizeof a;
    if (fd < 0) return -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || (listening && listen(fd, 1)) ||
        getsockname(fd, (struct sockaddr *)&a, &l)) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* A port nobody listens on now (the kernel's pick; a race with other programs is possible but rare). */
static int free_port(void)
{
    int port = -1, fd = loopback_socket(0, &port);
    if (fd >= 0) close(fd);
    return port;
}

static sc_dist_env env_of(int rank, int world, int port, double timeout)
{
    sc_dist_env e;
    memset(&e, 0, sizeof e);
    e.rank = e.local_rank = rank;
    e.world_size = e.local_world_size = world;
    snprintf(e.master_addr, sizeof e.master_addr, "127.0.0.1");
    e.master_port = port;
    e.timeout_s = timeout;
    return e;
}

#define BLOB 128
static void blob_of(unsigned char *b, int seed)
{
    for (int i = 0; i < BLOB; i++) b[i] = (unsigned char)(seed * 31 + i * 7);
}

/* Child process: rank `rank` joins with `check` after `delay_ms`; exit code 0 when the blob
   arrived intact, 10 + (-result) on an error whose message holds `want` (20 + ... otherwise). */
static pid_t spawn(int rank, int world, int port, uint64_t check, int delay_ms, double timeout, const char *want)
{
    fflush(stdout);
    pid_t p = fork();
    if (p) return p;
    if (delay_ms) sleep_ms(delay_ms);
    sc_dist_env e = env_of(rank, world, port, timeout);
    unsigned char b[BLOB], ref[BLOB];
    memset(b, 0, sizeof b);
    blob_of(ref, 5);
    sc_result r = sc_dist_rendezvous(&e, check, b, BLOB);
    if (r == SC_SUCCESS) _exit(memcmp(b, ref, BLOB) ? 3 : 0);
    _exit((want && strstr(sc_last_error(), want) ? 10 : 20) - (int)r);
}

static int reap(pid_t p)
{
    int st = 0;
    if (waitpid(p, &st, 0) != p) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -2;
}

static double now_s(void) { return (double)sc__trace_now_ns() / 1e9; }

static void test_rendezvous(void)
{
    unsigned char b[BLOB];
    int port = free_port();
    /* world 3: rank 2 arrives late, rank 1 early; both get rank 0's blob */
    pid_t c1 = spawn(1, 3, port, 77, 0, 10.0, NULL), c2 = spawn(2, 3, port, 77, 300, 10.0, NULL);
    sleep_ms(100); /* rank 0 after rank 1 started: rank 1 retries until it listens */
    sc_dist_env e = env_of(0, 3, port, 10.0);
    blob_of(b, 5);
    double t0 = now_s();
    sc_result r = sc_dist_rendezvous(&e, 77, b, BLOB);
    int x1 = reap(c1), x2 = reap(c2);
    CHECK(r == SC_SUCCESS && x1 == 0 && x2 == 0, "3 ranks on the loopback: rank 0's 128-byte blob reaches ranks 1 "
          "and 2 (rank 1 before rank 0 listened, rank 2 late), %.2f s (rank 0: %s; exits %d, %d)", now_s() - t0,
          r ? sc_last_error() : "ok", x1, x2);

    /* a configuration mismatch: rank 1 runs another config; both ranks say so */
    port = free_port();
    c1 = spawn(1, 2, port, 78, 0, 5.0, "another configuration");
    e = env_of(0, 2, port, 5.0);
    r = sc_dist_rendezvous(&e, 77, b, BLOB);
    x1 = reap(c1);
    CHECK(r == SC_ERROR_INVALID_ARGS && strstr(sc_last_error(), "rank 1 runs another configuration") &&
              x1 == 10 - (int)SC_ERROR_INVALID_ARGS,
          "a mismatched check stops both ranks: %s (rank 1 exit %d)", sc_last_error(), x1);

    /* a rank that never arrives: rank 0 and rank 1 of 3 stop at the timeout, naming rank 2 */
    port = free_port();
    c1 = spawn(1, 3, port, 77, 0, 5.0, "missing: rank 2");
    e = env_of(0, 3, port, 1.0);
    t0 = now_s();
    r = sc_dist_rendezvous(&e, 77, b, BLOB);
    double dt = now_s() - t0;
    x1 = reap(c1);
    CHECK(r == SC_ERROR_TIMEOUT && strstr(sc_last_error(), "missing: rank 2") && dt >= 0.9 && dt < 3.0 &&
              x1 == 10 - (int)SC_ERROR_TIMEOUT,
          "a missing rank: rank 0 stops after %.2f s (timeout 1 s): %s; rank 1 hears it (exit %d)", dt,
          sc_last_error(), x1);

    /* rank 0 never comes: rank 1 stops at its timeout */
    port = free_port();
    e = env_of(1, 2, port, 0.5);
    t0 = now_s();
    r = sc_dist_rendezvous(&e, 77, b, BLOB);
    dt = now_s() - t0;
    CHECK(r == SC_ERROR_TIMEOUT && strstr(sc_last_error(), "could not reach rank 0") && dt >= 0.45 && dt < 2.5,
          "no rank 0: rank 1 stops after %.2f s (timeout 0.5 s): %s", dt, sc_last_error());

    /* two processes claim rank 1 */
    port = free_port();
    c1 = spawn(1, 3, port, 77, 0, 5.0, "arrived twice");
    c2 = spawn(1, 3, port, 77, 200, 5.0, "arrived twice");
    e = env_of(0, 3, port, 5.0);
    r = sc_dist_rendezvous(&e, 77, b, BLOB);
    x1 = reap(c1), x2 = reap(c2);
    CHECK(r == SC_ERROR_INVALID_ARGS && strstr(sc_last_error(), "rank 1 arrived twice") &&
              x1 == 10 - (int)SC_ERROR_INVALID_ARGS && x2 == 10 - (int)SC_ERROR_INVALID_ARGS,
          "a duplicate rank stops everyone: %s (exits %d, %d)", sc_last_error(), x1, x2);

    /* the port taken by another program (as torchrun's agent store takes MASTER_PORT): rank 0
       says so at once and names the variable that moves the rendezvous */
    {
        int held = 0, fd = loopback_socket(1, &held);
        e = env_of(0, 2, held, 5.0);
        t0 = now_s();
        r = fd >= 0 ? sc_dist_rendezvous(&e, 77, b, BLOB) : SC_SUCCESS;
        dt = now_s() - t0;
        CHECK(fd >= 0 && r == SC_ERROR_IO && strstr(sc_last_error(), "SLIDECHECK_RENDEZVOUS_PORT") && dt < 1.0,
              "a port held by another listener: rank 0 stops after %.2f s: %s", dt, sc_last_error());
        if (fd >= 0) close(fd);
    }

    /* bad arguments and a host name under strict C */
    e = env_of(0, 2, port, 1.0);
    CHECK(sc_dist_rendezvous(&e, 1, b, 70000) == SC_ERROR_INVALID_ARGS, "a blob over 64 KiB is refused: %s",
          sc_last_error());
    e = env_of(0, 1, 0, 1.0);
    CHECK(sc_dist_rendezvous(&e, 1, b, BLOB) == SC_SUCCESS, "world size 1: nothing to do");
    e = env_of(1, 2, port, 0.3);
    snprintf(e.master_addr, sizeof e.master_addr, "no-such-host.invalid");
    r = sc_dist_rendezvous(&e, 1, b, BLOB);
    CHECK(r != SC_SUCCESS && strstr(sc_last_error(), "no-such-host.invalid"), "an unresolvable MASTER_ADDR: %s",
          sc_last_error());
    CHECK(sc_hash_bytes(0, "abc", 3) == sc_hash_bytes(sc_hash_bytes(0, "a", 1), "bc", 2) &&
              sc_hash_bytes(0, "abc", 3) != sc_hash_bytes(0, "abd", 3),
          "sc_hash_bytes chains and tells inputs apart");
}

/* the control channel's collectives between real processes */
#define NRED 200003 /* floats: several chunks and a partial one */
static void red_of(float *x, int rank)
{
    for (int i = 0; i < NRED; i++) x[i] = (float)((i * 2654435761u + (unsigned)rank * 40503u) % 100003u) * 1e-3f - 50.0f;
}

/* what every rank must get: rank 0's values plus rank 1's plus ... in that order */
static void red_ref(float *ref, int world)
{
    float *t = (float *)malloc(sizeof(float) * NRED);
    red_of(ref, 0);
    for (int r = 1; r < world; r++) {
        red_of(t, r);
        for (int i = 0; i < NRED; i++) ref[i] += t[i];
    }
    free(t);
}

/* Child: rank `rank` opens the channel; mode 0: allreduce + gather + barrier, exit 0 when all
   agree with the reference; mode 1: exits right after opening (a rank that dies); mode 2: sleeps
   `delay_ms` after opening (a rank that stalls), then tries; modes 1 and 2 of the other ranks:
   exit 10 + (-result) on the expected error */
/* a broadcast's bytes: every value 0..255 (NaN patterns when read as floats), rank-dependent */
#define BCAST 128 /* an NCCL unique id */
static void bcast_of(unsigned char *b, int rank)
{
    for (int i = 0; i < BCAST; i++) b[i] = (unsigned char)(i * 151 + 7 + rank * 13);
}

static pid_t spawn_comm(int rank, int world, int port, int mode, int delay_ms, double timeout)
{
    fflush(stdout);
    pid_t p = fork();
    if (p) return p;
    sc_dist_env e = env_of(rank, world, port, timeout);
    unsigned char b[BLOB];
    sc_dist_comm *c = NULL;
    if (sc_dist_comm_open(&c, &e, 99, b, BLOB) != SC_SUCCESS) _exit(2);
    if (mode == 1) _exit(0); /* the process ends: its socket closes */
    if (mode == 2) sleep_ms(delay_ms);
    float *x = (float *)malloc(sizeof(float) * NRED), *ref = (float *)malloc(sizeof(float) * NRED);
    red_of(x, rank);
    red_ref(ref, world);
    sc_result r = sc_dist_allreduce_f32(c, x, NRED);
    if (r != SC_SUCCESS) _exit(10 - (int)r);
    int ok = !memcmp(x, ref, sizeof(float) * NRED);
    int mine[2] = {rank, rank * rank};
    ok = ok && sc_dist_gather(c, mine, NULL, sizeof mine) == SC_SUCCESS && sc_dist_barrier(c) == SC_SUCCESS;
    unsigned char bc[BCAST], want[BCAST];
    bcast_of(want, 0);
    bcast_of(bc, rank);
    ok = ok && sc_dist_broadcast(c, bc, sizeof bc) == SC_SUCCESS && !memcmp(bc, want, sizeof bc);
    sc_dist_comm_close(c);
    _exit(ok ? 0 : 3);
}

/* 3 ranks on a fresh port: rank 1 a plain child (timeout t1), rank 2 a child in `mode2` (see
   spawn_comm), rank 0 this process with timeout t0 */
static sc_result open3(sc_dist_comm **c, pid_t *c1, pid_t *c2, double t1, int mode2, int delay2, double t2, double t0)
{
    unsigned char b[BLOB];
    blob_of(b, 5);
    int port = free_port();
    *c1 = spawn_comm(1, 3, port, 0, 0, t1);
    *c2 = spawn_comm(2, 3, port, mode2, delay2, t2);
    sc_dist_env e = env_of(0, 3, port, t0);
    return sc_dist_comm_open(c, &e, 99, b, BLOB);
}

static void test_comm(void)
{
    unsigned char b[BLOB];
    blob_of(b, 5);
    float *x = (float *)malloc(sizeof(float) * NRED), *ref = (float *)malloc(sizeof(float) * NRED);
    /* 3 ranks: the sum in rank order on every rank, bitwise; rank 0 gathers in rank order */
    pid_t c1, c2;
    sc_dist_comm *c = NULL;
    sc_result r = open3(&c, &c1, &c2, 10.0, 0, 0, 10.0, 10.0);
    int ok = r == SC_SUCCESS, all[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}}, mine[2] = {0, 0};
    double t0 = now_s();
    if (ok) {
        red_of(x, 0);
        red_ref(ref, 3);
        ok = sc_dist_allreduce_f32(c, x, NRED) == SC_SUCCESS && !memcmp(x, ref, sizeof(float) * NRED);
        ok = ok && sc_dist_gather(c, mine, all, sizeof mine) == SC_SUCCESS && sc_dist_barrier(c) == SC_SUCCESS;
        unsigned char bc[BCAST], want[BCAST];
        bcast_of(bc, 0);
        bcast_of(want, 0);
        ok = ok && sc_dist_broadcast(c, bc, sizeof bc) == SC_SUCCESS && !memcmp(bc, want, sizeof bc);
    }
    double dt = now_s() - t0;
    int x1 = reap(c1), x2 = reap(c2);
    CHECK(ok && x1 == 0 && x2 == 0, "3 processes: allreduce of %d floats equals the rank-order sum bitwise on every "
          "rank, %.3f s with gather, barrier and a %d-byte broadcast that every rank receives bit for bit (%s; exits "
          "%d, %d)", NRED, dt, BCAST, ok ? "ok" : sc_last_error(), x1, x2);
    CHECK(all[1][0] == 1 && all[1][1] == 1 && all[2][0] == 2 && all[2][1] == 4 && all[0][0] == 0,
          "gather: rank 0 holds every rank's bytes in rank order");
    sc_dist_comm_close(c);

    /* a rank that dies after the rendezvous: rank 0 names it at once, rank 1 hears it too */
    r = open3(&c, &c1, &c2, 5.0, 1, 0, 5.0, 5.0);
    red_of(x, 0);
    t0 = now_s();
    sc_result r2 = r == SC_SUCCESS ? sc_dist_allreduce_f32(c, x, NRED) : r;
    dt = now_s() - t0;
    char msg[1200];
    snprintf(msg, sizeof msg, "%s", sc_last_error());
    sc_result r3 = r == SC_SUCCESS ? sc_dist_barrier(c) : r;
    x1 = reap(c1), x2 = reap(c2);
    CHECK(r == SC_SUCCESS && r2 == SC_ERROR_IO && strstr(msg, "rank 2 closed the connection") && dt < 2.0 &&
              x1 == 10 - (int)SC_ERROR_IO && r3 == SC_ERROR_IO,
          "a rank that dies: rank 0 stops after %.2f s: %s; rank 1 too (exit %d); later calls fail at once", dt, msg,
          x1);
    sc_dist_comm_close(c);

    /* a rank that stalls past the timeout: rank 0 names it after the timeout, rank 1 hears it */
    r = open3(&c, &c1, &c2, 5.0, 2, 2500, 1.0, 1.0);
    t0 = now_s();
    r2 = r == SC_SUCCESS ? sc_dist_allreduce_f32(c, x, NRED) : r;
    dt = now_s() - t0;
    snprintf(msg, sizeof msg, "%s", sc_last_error());
    x1 = reap(c1), x2 = reap(c2);
    CHECK(r == SC_SUCCESS && r2 == SC_ERROR_TIMEOUT && strstr(msg, "rank 2 did not answer within 1 s") && dt >= 0.9 &&
              dt < 3.0 && x1 == 10 - (int)SC_ERROR_IO,
          "a rank that stalls: rank 0 stops after %.2f s (timeout 1 s): %s; rank 1 hears it (exit %d)", dt, msg, x1);
    sc_dist_comm_close(c);

    /* one process: every call succeeds and leaves the data as it is */
    sc_dist_env e = env_of(0, 1, 0, 1.0);
    red_of(x, 0);
    memcpy(ref, x, sizeof(float) * NRED);
    r = sc_dist_comm_open(&c, &e, 1, b, BLOB);
    CHECK(r == SC_SUCCESS && sc_dist_allreduce_f32(c, x, NRED) == SC_SUCCESS && !memcmp(x, ref, sizeof(float) * NRED) &&
              sc_dist_gather(c, mine, all, sizeof mine) == SC_SUCCESS && sc_dist_barrier(c) == SC_SUCCESS &&
              sc_dist_broadcast(c, b, BLOB) == SC_SUCCESS,
          "one process: the collectives are no-ops");
    sc_dist_comm_close(c);
    free(x);
    free(ref);
}

/* Data parallel on the CPU backend: W ranks of B rows each against one process of W*B rows.
   Every rank builds the same seeded `tiny` model and draws the same global batch, then trains
   on its rows. dp_train: 3 AdamW steps (policy `full` on the ranks, `none` alone: policies give
   the same bits), the losses and the final weights. */
#define DP_B 2
#define DP_T 16
#define DP_STEPS 3
static int g_zero;         /* dp_train with ZeRO-1 */
static int g_slide;        /* dp_train in slide mode */
static int g_untied;       /* dp_train with an untied LM head */
static int g_bf16;         /* dp_train with bf16 storage (the CPU backend rounds) */
static int g_world = 2;    /* dp_run's ranks (at most 3) */
static int64_t g_peak;     /* dp_train: the allocator's peak allocated bytes */
static int64_t g_host;     /* dp_train: slide mode's host bytes (weights, gradients, AdamW state) */
static int64_t g_fixed;    /* dp_train: fixed bytes without ZeRO less with it (the planner's view) */

static int dp_train(sc_dist_comm *comm, int rank, int world, float *losses, float **w, size_t *np)
{
    sc_config c;
    sc_config_named(&c, "tiny");
    if (g_untied) c.tie_embeddings = 0;
    sc_model_config mc = sc_model_config_init();
    mc.comm = comm;
    mc.zero = g_zero;
    if (g_slide) mc.mode = SC_MODE_SLIDE;
    mc.bf16 = g_bf16;
    mc.optim = SC_OPTIM_ADAMW;
    mc.lr = 1e-3f;
    sc_model_config plain = mc;
    plain.zero = 0;
    g_fixed = (int64_t)sc_model_config_fixed_bytes(&c, &plain) - (int64_t)sc_model_config_fixed_bytes(&c, &mc);
    sc_model *m = NULL;
    if (sc_model_create(&m, &c, &mc, NULL) != SC_SUCCESS) return 0;
    sc_plan plan;
    sc_plan_parse(&plan, comm ? "full" : "none", c.num_layers);
    int G = (comm ? world : 2) * DP_B, B = comm ? DP_B : G;
    int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * (size_t)G * DP_T);
    int ok = 1;
    for (int s = 0; s < DP_STEPS && ok; s++) {
        for (int i = 0; i < G * DP_T; i++) ids[i] = (int32_t)((i * 7919u + (unsigned)s * 104729u) % (unsigned)c.vocab_size);
        ok = sc_model_step(m, &plan, ids + (comm ? rank * B * DP_T : 0), 1, B, DP_T, 1, &losses[s]) == SC_SUCCESS;
    }
    *np = sc_config_num_params(&c);
    *w = (float *)malloc(sizeof(float) * *np);
    ok = ok && sc_model_get_params(m, *w) == SC_SUCCESS;
    g_peak = sc_allocator_stats(sc_model_allocator(m)).allocated_bytes[SC_STAT_ALL].peak;
    g_host = (int64_t)sc_model_slide_info(m).host_bytes;
    sc_model_destroy(m);
    free(ids);
    return ok;
}

/* Child: rank `rank` of g_world trains; the others send the hashes of their losses and weights
   to rank 0, which writes its own losses and weights and rank 1's hashes (zero when the others'
   differ from rank 1's) to `out` (the test's parent never runs the model before it forks: an
   OpenMP runtime does not survive a fork) */
static pid_t spawn_dp(int rank, int port, const char *out)
{
    fflush(stdout);
    pid_t p = fork();
    if (p) return p;
    sc_dist_env e = env_of(rank, g_world, port, 20.0);
    unsigned char b[BLOB];
    blob_of(b, 1);
    sc_dist_comm *c = NULL;
    if (sc_dist_comm_open(&c, &e, 7, b, BLOB) != SC_SUCCESS) _exit(2);
    float l[DP_STEPS], *w = NULL;
    size_t np = 0;
    int ok = dp_train(c, rank, g_world, l, &w, &np);
    uint64_t h[2] = {sc_hash_bytes(0, w, np * sizeof(float)), sc_hash_bytes(0, l, sizeof l)}, all[3][2];
    ok = ok && sc_dist_gather(c, h, rank ? NULL : all, sizeof h) == SC_SUCCESS;
    for (int r = 2; ok && rank == 0 && r < g_world; r++)
        if (memcmp(all[r], all[1], sizeof all[1])) all[1][0] = all[1][1] = 0;
    sc_dist_comm_close(c);
    if (ok && rank == 0) {
        FILE *f = fopen(out, "wb");
        ok = f && fwrite(l, sizeof l, 1, f) == 1 && fwrite(&np, sizeof np, 1, f) == 1 &&
             fwrite(w, sizeof(float), np, f) == np && fwrite(all[1], sizeof all[1], 1, f) == 1 &&
             fwrite(&g_peak, sizeof g_peak, 1, f) == 1 && fwrite(&g_fixed, sizeof g_fixed, 1, f) == 1 &&
             fwrite(&g_host, sizeof g_host, 1, f) == 1;
        if (f) fclose(f);
    }
    _exit(ok ? 0 : 3);
}

/* host: rank 0's slide host bytes (NULL: not wanted) */
static int dp_run(const char *out, float *l, float **w, size_t *np, uint64_t *child_hash, int64_t *peak,
                  int64_t *fixed, int64_t *host)
{
    int64_t h;
    int port = free_port(), bad = 0;
    pid_t c[3];
    for (int r = 0; r < g_world; r++) c[r] = spawn_dp(r, port, out);
    for (int r = 0; r < g_world; r++) bad |= reap(c[r]);
    if (bad) return 0;
    FILE *f = fopen(out, "rb");
    int ok = f && fread(l, sizeof(float) * DP_STEPS, 1, f) == 1 && fread(np, sizeof *np, 1, f) == 1;
    if (ok) *w = (float *)malloc(sizeof(float) * *np);
    ok = ok && fread(*w, sizeof(float), *np, f) == *np && fread(child_hash, sizeof(uint64_t) * 2, 1, f) == 1 &&
         fread(peak, sizeof *peak, 1, f) == 1 && fread(fixed, sizeof *fixed, 1, f) == 1 &&
         fread(host ? host : &h, sizeof h, 1, f) == 1;
    if (f) fclose(f);
    remove(out);
    return ok;
}

static void test_data_parallel(void)
{
    float la[DP_STEPS], lb[DP_STEPS], lz[DP_STEPS], l1[DP_STEPS], *wa = NULL, *wb = NULL, *wz = NULL, *w1 = NULL;
    size_t np = 0;
    uint64_t ha[2], hb[2], hz[2];
    int64_t pa = 0, pb = 0, pz = 0, fa = 0, fz = 0;
    /* the forks first, the parent's own run (OpenMP in this process) last */
    int ok = dp_run("build/tmp_dp_a.bin", la, &wa, &np, ha, &pa, &fa, NULL) &&
             dp_run("build/tmp_dp_b.bin", lb, &wb, &np, hb, &pb, &fa, NULL);
    g_zero = 1;
    int okz = dp_run("build/tmp_dp_z.bin", lz, &wz, &np, hz, &pz, &fz, NULL);
    g_zero = 0;
    /* slide mode's data parallel: the same bits as resident mode's, tied and untied head */
    float ls[DP_STEPS], lr[DP_STEPS], lu[DP_STEPS], *ws = NULL, *wr = NULL, *wu = NULL;
    size_t npu = 0;
    uint64_t hs[2], hr[2], hu[2];
    int64_t ps = 0, pr = 0, pu = 0, fs = 0;
    /* slide mode's ZeRO-1 (z: tied, v: untied, b: bf16 storage, c: bf16 with ZeRO-1), rank 0's host bytes */
    float lsz[DP_STEPS], lv[DP_STEPS], lb16[DP_STEPS], lc[DP_STEPS], *wsz = NULL, *wv = NULL, *wb16 = NULL, *wc = NULL;
    uint64_t hsz[2], hv[2], hb16[2], hc[2];
    int64_t xs = 0, xu = 0, xsz = 0, xv = 0, xb = 0, xc = 0;
    g_slide = 1;
    int oks = dp_run("build/tmp_dp_s.bin", ls, &ws, &np, hs, &ps, &fs, &xs);
    g_zero = 1;
    int oksz = dp_run("build/tmp_dp_sz.bin", lsz, &wsz, &np, hsz, &ps, &fs, &xsz);
    g_untied = 1;
    int okv = dp_run("build/tmp_dp_v.bin", lv, &wv, &npu, hv, &pu, &fs, &xv);
    g_zero = 0;
    int oku = dp_run("build/tmp_dp_u.bin", lu, &wu, &npu, hu, &pu, &fs, &xu);
    g_untied = 0, g_bf16 = 1;
    int okb = dp_run("build/tmp_dp_b16.bin", lb16, &wb16, &np, hb16, &ps, &fs, &xb);
    g_zero = 1;
    int okc = dp_run("build/tmp_dp_c.bin", lc, &wc, &np, hc, &ps, &fs, &xc);
    /* 3 ranks: each layer's 209248 elements leave a remainder of 1 that every rank updates alike */
    float l3[DP_STEPS], l3z[DP_STEPS], *w3 = NULL, *w3z = NULL;
    uint64_t h3[2], h3z[2];
    g_bf16 = 0, g_world = 3;
    int ok3 = dp_run("build/tmp_dp_3z.bin", l3z, &w3z, &np, h3z, &ps, &fs, NULL);
    g_zero = 0;
    ok3 = ok3 && dp_run("build/tmp_dp_3.bin", l3, &w3, &np, h3, &ps, &fs, NULL);
    g_world = 2, g_untied = 1, g_slide = 0;
    int okr = dp_run("build/tmp_dp_r.bin", lr, &wr, &npu, hr, &pr, &fs, NULL);
    g_untied = 0;
    ok = ok && dp_train(NULL, 0, 1, l1, &w1, &np);
    /* ZeRO-1: the same bits as plain data parallel, with half the AdamW state on each of 2 ranks */
    int64_t saved = pa - pz, state = (int64_t)np * 2 * (int64_t)sizeof(float);
    CHECK(okz && !memcmp(lz, la, sizeof la) && !memcmp(wz, wa, np * sizeof(float)) &&
              hz[0] == sc_hash_bytes(0, wz, np * sizeof(float)),
          "ZeRO-1 (2 ranks): losses and weights equal plain data parallel's bit for bit, on both replicas");
    CHECK(okz && saved >= state / 2 * 9 / 10 && saved <= state / 2 + (1 << 20),
          "ZeRO-1 (2 ranks): rank 0's peak allocated %.3f MiB against %.3f MiB: %.3f MiB less, half of the %.3f MiB of "
          "AdamW state", pz / 1048576.0, pa / 1048576.0, saved / 1048576.0, state / 1048576.0);
    CHECK(okz && fz == state / 2 && fa == 0, "ZeRO-1: the planner's fixed bytes drop by half the AdamW state "
          "(%lld bytes)", (long long)fz);
    free(wz);
    CHECK(oks && ok && !memcmp(ls, la, sizeof la) && !memcmp(ws, wa, np * sizeof(float)) &&
              hs[0] == sc_hash_bytes(0, ws, np * sizeof(float)),
          "slide mode, 2 ranks: losses and weights equal resident data parallel's bit for bit, on both replicas");
    CHECK(oku && okr && !memcmp(lu, lr, sizeof lr) && !memcmp(wu, wr, npu * sizeof(float)) &&
              hu[0] == sc_hash_bytes(0, wu, npu * sizeof(float)),
          "the same with an untied LM head (the embedding rows other ranks touched: summed, then cleared)");
    /* slide's ZeRO-1: the same bits as slide's plain data parallel on both replicas, and a
       rank's host AdamW state is its chunk of each layer (the embedding and norm whole) */
    CHECK(oks && oksz && !memcmp(lsz, ls, sizeof ls) && !memcmp(wsz, ws, np * sizeof(float)) &&
              hsz[0] == sc_hash_bytes(0, wsz, np * sizeof(float)) && hsz[1] == sc_hash_bytes(0, lsz, sizeof lsz),
          "slide mode, 2 ranks, ZeRO-1: losses and weights equal slide's plain data parallel bit for bit, on both "
          "replicas (tied head)");
    CHECK(oku && okv && !memcmp(lv, lu, sizeof lu) && !memcmp(wv, wu, npu * sizeof(float)) &&
              hv[0] == sc_hash_bytes(0, wv, npu * sizeof(float)) && hv[1] == sc_hash_bytes(0, lv, sizeof lv),
          "the same with an untied LM head");
    CHECK(okb && okc && !memcmp(lc, lb16, sizeof lb16) && !memcmp(wc, wb16, np * sizeof(float)) &&
              hc[0] == sc_hash_bytes(0, wc, np * sizeof(float)) && memcmp(wb16, ws, np * sizeof(float)),
          "the same with bf16 storage (weights other than f32's)");
    {
        sc_config c;
        sc_config_named(&c, "tiny");
        size_t ln = sc_config_layer_offsets(&c).size, mine = ln / 2 + ln % 2; /* rank 0's chunk and the remainder */
        int64_t state = (int64_t)np * 2 * (int64_t)sizeof(float);
        int64_t want = (int64_t)c.num_layers * (int64_t)(ln - mine) * 2 * (int64_t)sizeof(float);
        CHECK(oksz && okv && xs - xsz == want && xu - xv == want && xb - xc == want && want * 10 >= state * 4,
              "slide ZeRO-1 (2 ranks): rank 0's host bytes %.3f MiB against %.3f MiB: %.3f MiB less, %.1f%% of the %.3f "
              "MiB of AdamW state (half of the layers' %.1f%%; the embedding and norm keep whole state); the same "
              "cut untied and in bf16", xsz / 1048576.0, xs / 1048576.0, (xs - xsz) / 1048576.0,
              100.0 * (double)(xs - xsz) / (double)state, state / 1048576.0,
              100.0 * (double)(c.num_layers * ln) / (double)np);
    }
    CHECK(ok3 && !memcmp(l3z, l3, sizeof l3) && !memcmp(w3z, w3, np * sizeof(float)) &&
              h3z[0] == sc_hash_bytes(0, w3z, np * sizeof(float)) && h3[0] == sc_hash_bytes(0, w3, np * sizeof(float)),
          "the same on 3 ranks (a remainder in each layer), on every replica");
    free(ws), free(wr), free(wu), free(wsz), free(wv), free(wb16), free(wc), free(w3), free(w3z);
    CHECK(ok, "2 ranks x B=%d and 1 process x B=%d train %d AdamW steps (tiny, T=%d)", DP_B, 2 * DP_B, DP_STEPS, DP_T);
    if (!ok) return;
    CHECK(ha[0] == sc_hash_bytes(0, wa, np * sizeof(float)) && ha[1] == sc_hash_bytes(0, la, sizeof la),
          "the two replicas end with the same weights and losses, bit for bit");
    CHECK(!memcmp(la, lb, sizeof la) && !memcmp(wa, wb, np * sizeof(float)), "two data-parallel runs: the same bits");
    double le = 0, num = 0, den = 0;
    for (int s = 0; s < DP_STEPS; s++) le = fmax(le, fabs((double)la[s] - l1[s]) / fabs((double)l1[s]));
    for (size_t i = 0; i < np; i++) num += ((double)wa[i] - w1[i]) * ((double)wa[i] - w1[i]), den += (double)w1[i] * w1[i];
    double we = sqrt(num / den);
    CHECK(le <= 1e-5 && we <= 1e-5, "2 ranks x B=%d vs 1 x B=%d: losses within %.1e (<= 1e-5), weights after %d steps "
          "within %.1e (<= 1e-5; loss %.6f -> %.6f)", DP_B, 2 * DP_B, le, DP_STEPS, we, l1[0], l1[DP_STEPS - 1]);
    free(wa), free(wb), free(w1);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    test_env();
    test_rendezvous();
    test_comm();
    test_data_parallel();
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail != 0;
}
