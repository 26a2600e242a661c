/* Several processes without a GPU: the launch environment (torchrun's and srun's variables,
   Slurm's host lists) and the TCP rendezvous between real processes on this machine: rank 0's
   blob reaches every rank; a configuration mismatch, a rank that never arrives and an unreachable
   rank 0 all end in a clear error within the timeout on every rank that is there. Two "nodes"
   (as two torchrun --nnodes 2 would start them, on one machine): a node that is killed, stalls
   or never starts is named on every rank of the other; the CPU backend's training over them gives
   one machine's bits, and a node killed mid-training stops the other. Where rank 0 listens: NCCL_SOCKET_IFNAME's
   interface, MASTER_ADDR's loopback, or every interface; host names resolved. How slide over NCCL
   splits a tied head's rows and norm chunks over 2-8 ranks. */
#ifndef SLIDECHECK_TESTING
#define SLIDECHECK_TESTING 1 /* the sc__ test hooks (the Makefile's test builds define it too) */
#endif
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#include <math.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
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
extern int kill(pid_t pid, int sig);
extern int gethostname(char *name, size_t len);

static void sleep_ms(int ms)
{
    struct timespec t;
    t.tv_sec = ms / 1000, t.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&t, &t) != 0) {}
}

#include "check.h"

static const char *vars[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                             "SLIDECHECK_RENDEZVOUS_TIMEOUT"};
/* every other variable sc_dist_env_read looks at: cleared too, so that a test run inside a
   Slurm job or under torchrun reads only what the test sets */
static const char *more_vars[] = {
    "GROUP_RANK", "GROUP_WORLD_SIZE", "TORCHELASTIC_USE_AGENT_STORE", "SLIDECHECK_RENDEZVOUS_PORT",
    "NCCL_SOCKET_IFNAME", "CUDA_VISIBLE_DEVICES", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NODEID",
    "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NNODES",
    "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_JOB_ID", "SLURM_JOBID"};
static void env_clear(void)
{
    for (int i = 0; i < 7; i++) unsetenv(vars[i]);
}
static void env_clear_all(void)
{
    env_clear();
    for (size_t i = 0; i < sizeof more_vars / sizeof more_vars[0]; i++) unsetenv(more_vars[i]);
}

/* a cleared environment, then each "NAME=VALUE" of set (NULL-terminated) */
static void env_put(const char *const *set)
{
    env_clear_all();
    for (int i = 0; set[i]; i++) {
        char name[64];
        const char *eq = strchr(set[i], '=');
        size_t n = eq ? (size_t)(eq - set[i]) : 0;
        if (!eq || n >= sizeof name) continue;
        memcpy(name, set[i], n);
        name[n] = 0;
        setenv(name, eq + 1, 1);
    }
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

/* srun's variables, torchrun's node variables and their precedence: each case's environment ->
   what sc_dist_env_read reads, or the words of its error */
#define SRUN "SLURM_STEP_ID=0"
typedef struct {
    const char *what, *set[20];
    int rank, world, local, lws, node, nodes, gpu;
    const char *addr;
    int port;
    const char *err; /* non-NULL: the call fails with this in its message */
} env_case;

static void test_env_launchers(void)
{
    static const env_case cases[] = {
        {"srun, 2 nodes x 4: rank 5 is local 1 on node 1; rank 0 on node01 at 20000 + 123456 % 12768",
         {SRUN, "SLURM_PROCID=5", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NODEID=1", "SLURM_TASKS_PER_NODE=4(x2)",
          "SLURM_JOB_NODELIST=node[01-02]", "SLURM_JOB_ID=123456", NULL},
         5, 8, 1, 4, 1, 2, 1, "node01", 28544, NULL},
        {"srun, uneven '4(x2),3': node 2 runs 3 ranks; first host gpu-a003 of 'gpu-a[003-010],gpu-b7'",
         {SRUN, "SLURM_PROCID=9", "SLURM_NTASKS=11", "SLURM_LOCALID=1", "SLURM_NODEID=2",
          "SLURM_TASKS_PER_NODE=4(x2),3", "SLURM_JOB_NODELIST=gpu-a[003-010],gpu-b7", "SLURM_JOB_ID=42", NULL},
         9, 11, 1, 3, 2, 3, 1, "gpu-a003", 20042, NULL},
        {"srun: SLURM_NTASKS_PER_NODE=2 where set; SLURM_STEP_NODELIST before the job's ('n[1-3]x' -> n1x)",
         {SRUN, "SLURM_PROCID=4", "SLURM_NTASKS=6", "SLURM_LOCALID=0", "SLURM_NODEID=2", "SLURM_NTASKS_PER_NODE=2",
          "SLURM_TASKS_PER_NODE=2(x3)", "SLURM_STEP_NODELIST=n[1-3]x", "SLURM_JOB_NODELIST=node[01-04]",
          "SLURM_JOB_ID=7", NULL},
         4, 6, 0, 2, 2, 3, 0, "n1x", 20007, NULL},
        {"srun: SLURM_NODELIST and SLURM_JOBID (older names), 'r[1-2]n[01-04]' -> r1n01, SLURM_NNODES",
         {"SLURM_STEPID=3", "SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_NODEID=1", "SLURM_NNODES=2",
          "SLURM_NTASKS_PER_NODE=1", "SLURM_NODELIST=r[1-2]n[01-04]", "SLURM_JOBID=12768", NULL},
         1, 2, 0, 1, 1, 2, 0, "r1n01", 20000, NULL},
        {"srun with MASTER_ADDR and MASTER_PORT: they win over the host list and the job's port",
         {SRUN, "SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=1", "SLURM_NODEID=0", "SLURM_TASKS_PER_NODE=2",
          "SLURM_JOB_NODELIST=node[01-02]", "SLURM_JOB_ID=99", "MASTER_ADDR=10.1.2.3", "MASTER_PORT=29400", NULL},
         1, 2, 1, 2, 0, 1, 1, "10.1.2.3", 29400, NULL},
        {"srun: SLIDECHECK_RENDEZVOUS_PORT over the job's port; CUDA_VISIBLE_DEVICES=3 (a GPU per task): device 0",
         {SRUN, "SLURM_PROCID=3", "SLURM_NTASKS=4", "SLURM_LOCALID=1", "SLURM_NODEID=1", "SLURM_TASKS_PER_NODE=2(x2)",
          "SLURM_JOB_NODELIST=node[01-02]", "SLURM_JOB_ID=5", "SLIDECHECK_RENDEZVOUS_PORT=31111",
          "CUDA_VISIBLE_DEVICES=3", NULL},
         3, 4, 1, 2, 1, 2, 0, "node01", 31111, NULL},
        {"CUDA_VISIBLE_DEVICES=0,1,2,3 (the node's GPUs): device LOCAL_RANK",
         {"RANK=2", "WORLD_SIZE=4", "LOCAL_RANK=2", "LOCAL_WORLD_SIZE=4", "MASTER_ADDR=h", "MASTER_PORT=1000",
          "CUDA_VISIBLE_DEVICES=0,1,2,3", NULL},
         2, 4, 2, 4, 0, 1, 2, "h", 1000, NULL},
        {"torchrun under srun: RANK/WORLD_SIZE win over the SLURM_ variables",
         {"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29500", SRUN, "SLURM_PROCID=5",
          "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NODEID=1", "SLURM_TASKS_PER_NODE=4(x2)",
          "SLURM_JOB_NODELIST=node[01-02]", "SLURM_JOB_ID=1", NULL},
         1, 2, 1, 2, 0, 1, 1, "127.0.0.1", 29500, NULL},
        {"torchrun --nnodes 2 --node_rank 1: GROUP_RANK and GROUP_WORLD_SIZE",
         {"RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=4", "GROUP_RANK=1", "GROUP_WORLD_SIZE=2",
          "MASTER_ADDR=node01", "MASTER_PORT=29500", NULL},
         5, 8, 1, 4, 1, 2, 1, "node01", 29500, NULL},
        {"RANK and LOCAL_WORLD_SIZE without GROUP_RANK: node RANK / LOCAL_WORLD_SIZE",
         {"RANK=6", "WORLD_SIZE=8", "LOCAL_RANK=2", "LOCAL_WORLD_SIZE=4", "MASTER_ADDR=a", "MASTER_PORT=2", NULL},
         6, 8, 2, 4, 1, 2, 2, "a", 2, NULL},
        {"an sbatch script itself (SLURM_PROCID=0 of the job's 8 tasks, no step id): one process",
         {"SLURM_PROCID=0", "SLURM_NTASKS=8", "SLURM_LOCALID=0", "SLURM_NODEID=0", "SLURM_TASKS_PER_NODE=4(x2)",
          "SLURM_JOB_NODELIST=node[01-02]", "SLURM_JOB_ID=1", NULL},
         0, 1, 0, 1, 0, 1, 0, "127.0.0.1", 0, NULL},
        {"srun -n 1: one process", {SRUN, "SLURM_PROCID=0", "SLURM_NTASKS=1", NULL},
         0, 1, 0, 1, 0, 1, 0, "127.0.0.1", 0, NULL},
#define BAD(w, e, ...) {w, {__VA_ARGS__, NULL}, 0, 0, 0, 0, 0, 0, 0, NULL, 0, e}
        BAD("malformed SLURM_PROCID", "SLURM_PROCID='x'", SRUN, "SLURM_PROCID=x", "SLURM_NTASKS=2"),
        BAD("SLURM_PROCID past SLURM_NTASKS", "SLURM_PROCID='2': need an integer in [0, SLURM_NTASKS=2)", SRUN,
            "SLURM_PROCID=2", "SLURM_NTASKS=2"),
        BAD("SLURM_NTASKS=0", "SLURM_NTASKS='0'", SRUN, "SLURM_PROCID=0", "SLURM_NTASKS=0"),
        BAD("no SLURM_LOCALID", "SLURM_LOCALID=''", SRUN, "SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_NODEID=0"),
        BAD("no SLURM_NODEID", "SLURM_NODEID=''", SRUN, "SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0"),
        BAD("SLURM_LOCALID past the node's tasks", "SLURM_LOCALID=4 is not below this node's 4 tasks", SRUN,
            "SLURM_PROCID=4", "SLURM_NTASKS=8", "SLURM_LOCALID=4", "SLURM_NODEID=0", "SLURM_TASKS_PER_NODE=4(x2)"),
        BAD("SLURM_NODEID past the list", "SLURM_NODEID=2: SLURM_TASKS_PER_NODE='4(x2)' lists 2 nodes", SRUN,
            "SLURM_PROCID=1", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NODEID=2", "SLURM_TASKS_PER_NODE=4(x2)"),
        BAD("malformed SLURM_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE='4(x': need task counts", SRUN, "SLURM_PROCID=1",
            "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NODEID=0", "SLURM_TASKS_PER_NODE=4(x"),
        BAD("malformed host list", "SLURM_JOB_NODELIST='node[01-': need a host list", SRUN, "SLURM_PROCID=1",
            "SLURM_NTASKS=2", "SLURM_LOCALID=1", "SLURM_NODEID=0", "SLURM_TASKS_PER_NODE=2",
            "SLURM_JOB_NODELIST=node[01-", "SLURM_JOB_ID=1"),
        BAD("no host list, no MASTER_ADDR", "MASTER_ADDR is not set, nor SLURM_STEP_NODELIST", SRUN, "SLURM_PROCID=1",
            "SLURM_NTASKS=2", "SLURM_LOCALID=1", "SLURM_NODEID=0", "SLURM_TASKS_PER_NODE=2", "SLURM_JOB_ID=1"),
        BAD("malformed SLURM_JOB_ID", "SLURM_JOB_ID='12a': need an integer", SRUN, "SLURM_PROCID=1", "SLURM_NTASKS=2",
            "SLURM_LOCALID=1", "SLURM_NODEID=0", "SLURM_TASKS_PER_NODE=2", "SLURM_JOB_NODELIST=n1", "SLURM_JOB_ID=12a"),
        BAD("no job id, no MASTER_PORT", "MASTER_PORT is not set, nor SLURM_JOB_ID", SRUN, "SLURM_PROCID=1",
            "SLURM_NTASKS=2", "SLURM_LOCALID=1", "SLURM_NODEID=0", "SLURM_TASKS_PER_NODE=2", "SLURM_JOB_NODELIST=n1"),
        BAD("GROUP_RANK past GROUP_WORLD_SIZE", "GROUP_RANK='2': need an integer in [0, GROUP_WORLD_SIZE=2)", "RANK=0",
            "WORLD_SIZE=4", "GROUP_RANK=2", "GROUP_WORLD_SIZE=2", "MASTER_ADDR=a", "MASTER_PORT=1"),
        BAD("malformed GROUP_RANK", "GROUP_RANK='one'", "RANK=0", "WORLD_SIZE=4", "GROUP_RANK=one", "MASTER_ADDR=a",
            "MASTER_PORT=1"),
#undef BAD
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const env_case *c = &cases[i];
        sc_dist_env e;
        env_put(c->set);
        sc_result r = sc_dist_env_read(&e);
        if (c->err) {
            CHECK(r == SC_ERROR_INVALID_ARGS && strstr(sc_last_error(), c->err), "%s: %s", c->what, sc_last_error());
            continue;
        }
        CHECK(r == SC_SUCCESS && e.rank == c->rank && e.world_size == c->world && e.local_rank == c->local &&
                  e.local_world_size == c->lws && e.node == c->node && e.node_count == c->nodes && e.gpu == c->gpu &&
                  !strcmp(e.master_addr, c->addr) && e.master_port == c->port,
              "%s (read: rank %d of %d, local %d of %d, node %d of %d, GPU %d, %s:%d%s%s)", c->what, e.rank,
              e.world_size, e.local_rank, e.local_world_size, e.node, e.node_count, e.gpu, e.master_addr, e.master_port,
              r ? "; " : "", r ? sc_last_error() : "");
    }
    env_clear_all();
}

/* Slurm's host lists and task counts, NCCL_SOCKET_IFNAME's syntax */
static void test_lists(void)
{
    static const struct { const char *in, *want; } hl[] = {
        {"node01", "node01"}, {"node[01-04,07]", "node01"}, {"gpu-a[003-010],gpu-b7", "gpu-a003"}, {"n[1-3]x", "n1x"},
        {"r[1-2]n[01-04]", "r1n01"}, {"a.b-c_d,e", "a.b-c_d"}, {"x[007]", "x007"}, {"n[08,01-03]", "n08"},
        {"", NULL}, {",node1", NULL}, {"node[01-", NULL}, {"node[]", NULL}, {"node[01", NULL}, {"node[a-b]", NULL},
        {"node[1,]", NULL}, {"node]1", NULL}, {"node[1-2-]", NULL},
    };
    int ok = 1;
    char bad[512] = "";
    for (size_t i = 0; i < sizeof hl / sizeof hl[0]; i++) {
        char out[64] = "";
        int r = sc__hostlist_first(hl[i].in, out, sizeof out);
        int good = hl[i].want ? r == 0 && !strcmp(out, hl[i].want) : r == -1;
        if (!good) snprintf(bad + strlen(bad), sizeof bad - strlen(bad), " '%s' -> %d '%s';", hl[i].in, r, out);
        ok &= good;
    }
    char small[6];
    ok &= sc__hostlist_first("node001", small, sizeof small) == -1;
    CHECK(ok, "Slurm host lists: first hosts of 8 lists (ranges, lists, suffixes, zero padding, two brackets) and 9 "
          "malformed ones refused, a host longer than the buffer refused%s", bad);

    static const struct { const char *s; int at, count, entries, ok; } tp[] = {
        {"4(x2),3", 0, 4, 3, 1}, {"4(x2),3", 1, 4, 3, 1}, {"4(x2),3", 2, 3, 3, 1}, {"4(x2),3", 3, -1, 3, 1},
        {"2", 0, 2, 1, 1}, {"1(x4)", 3, 1, 4, 1}, {"3,2(x3),1", 4, 1, 5, 1}, {"4(x", 0, 0, 0, 0},
        {"4(x2", 0, 0, 0, 0}, {"4(x0)", 0, 0, 0, 0}, {"0", 0, 0, 0, 0}, {"4,", 0, 0, 0, 0}, {"-4", 0, 0, 0, 0},
        {"", 0, 0, 0, 0}, {"4(2)", 0, 0, 0, 0}, {"4 ", 0, 0, 0, 0},
    };
    ok = 1;
    bad[0] = 0;
    for (size_t i = 0; i < sizeof tp / sizeof tp[0]; i++) {
        int count = 0, entries = 0, r = sc__tasks_per_node(tp[i].s, tp[i].at, &count, &entries);
        int good = tp[i].ok ? r == 1 && count == tp[i].count && entries == tp[i].entries : r == 0;
        if (!good) snprintf(bad + strlen(bad), sizeof bad - strlen(bad), " '%s'[%d] -> %d %d %d;", tp[i].s, tp[i].at, r, count, entries);
        ok &= good;
    }
    CHECK(ok, "SLURM_TASKS_PER_NODE: 7 forms read per node ('4(x2),3': 4, 4, 3), 9 malformed refused%s", bad);

    static const struct { const char *spec, *name; int want; } im[] = {
        {"lo", "lo", 1}, {"lo", "lo0", 1}, {"=lo", "lo", 1}, {"=lo", "lo0", 0}, {"eth,ib", "ib0", 1},
        {"eth,ib", "lo", 0}, {"^docker,lo", "eth0", 1}, {"^docker,lo", "docker0", 0}, {"^docker,lo", "lo", 0},
        {"^=lo", "lo0", 1}, {"^=lo", "lo", 0}, {"=eth0,eth1", "eth1", 1}, {"=eth0,eth1", "eth10", 0},
        {"eth0,", "eth0", 1}, {"^", "eth0", 1},
    };
    ok = 1;
    bad[0] = 0;
    for (size_t i = 0; i < sizeof im / sizeof im[0]; i++)
        if (sc__ifname_match(im[i].spec, im[i].name) != im[i].want) {
            ok = 0;
            snprintf(bad + strlen(bad), sizeof bad - strlen(bad), " '%s' on %s;", im[i].spec, im[i].name);
        }
    CHECK(ok, "NCCL_SOCKET_IFNAME's syntax: prefixes, '=' exact names, '^' exclusion, lists: 15 cases%s", bad);
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

/* Child: on top of a cleared environment, `set` ("NAME=VALUE", NULL-terminated), then
   sc_dist_env_read and the channel. mode 0: an allreduce of NRED floats that must equal the
   rank-order sum, a gather and a barrier (exit 0; 4 when the environment reads otherwise than
   `want_node`); mode 1: one byte to `ready` once the channel is open, then sleep (a node that is
   killed, or stalls); mode 2: an allreduce that must fail; mode 3: an open that must fail; mode 4:
   a rendezvous that must succeed. Modes 2 and 3 write sc_last_error() to `msg` and exit
   10 + (-result) when it holds `want`, 20 + (-result) otherwise. */
static pid_t spawn_env(char (*set)[96], int mode, int want_node, int ready, int msg, const char *want)
{
    fflush(stdout);
    pid_t p = fork();
    if (p) return p;
    const char *v[24];
    int n = 0;
    for (; n < 23 && set[n][0]; n++) v[n] = set[n];
    v[n] = NULL;
    env_put(v);
    sc_dist_env e;
    if (sc_dist_env_read(&e) != SC_SUCCESS) _exit(5);
    if (want_node >= 0 && e.node != want_node) _exit(4);
    unsigned char b[BLOB];
    blob_of(b, 5);
    if (mode == 4) _exit(sc_dist_rendezvous(&e, 99, b, BLOB) == SC_SUCCESS ? 0 : 6);
    sc_dist_comm *c = NULL;
    sc_result r = sc_dist_comm_open(&c, &e, 99, b, BLOB);
    if (mode == 3 || r != SC_SUCCESS) {
        if (mode != 3) _exit(2);
        if (msg >= 0 && write(msg, sc_last_error(), strlen(sc_last_error())) < 0) _exit(7);
        _exit(r == SC_SUCCESS ? 3 : (want && strstr(sc_last_error(), want) ? 10 : 20) - (int)r);
    }
    if (mode == 1) {
        char one = 1;
        if (write(ready, &one, 1) != 1) _exit(7);
        sleep_ms(30000);
        _exit(0);
    }
    float *x = (float *)malloc(sizeof(float) * NRED), *ref = (float *)malloc(sizeof(float) * NRED);
    red_of(x, e.rank);
    red_ref(ref, e.world_size);
    r = sc_dist_allreduce_f32(c, x, NRED);
    if (mode == 2) {
        if (msg >= 0 && write(msg, sc_last_error(), strlen(sc_last_error())) < 0) _exit(7);
        _exit(r == SC_SUCCESS ? 3 : (want && strstr(sc_last_error(), want) ? 10 : 20) - (int)r);
    }
    int mine = e.rank, all[8];
    int ok = r == SC_SUCCESS && !memcmp(x, ref, sizeof(float) * NRED) &&
             sc_dist_gather(c, &mine, e.rank ? NULL : all, sizeof mine) == SC_SUCCESS && sc_dist_barrier(c) == SC_SUCCESS;
    for (int i = 0; ok && e.rank == 0 && i < e.world_size && i < 8; i++) ok = all[i] == i;
    sc_dist_comm_close(c);
    _exit(ok ? 0 : 3);
}

/* rank `rank` of a launch over `nodes` nodes of lws ranks each, as torchrun --nnodes sets it (its
   agent store on MASTER_PORT, so the rendezvous is on the port after it: `port`), plus `extra` */
static void torchrun_env(char (*set)[96], int rank, int lws, int nodes, int port, const char *timeout, const char *extra)
{
    int k = 0;
    snprintf(set[k++], 96, "RANK=%d", rank);
    snprintf(set[k++], 96, "WORLD_SIZE=%d", lws * nodes);
    snprintf(set[k++], 96, "LOCAL_RANK=%d", rank % lws);
    snprintf(set[k++], 96, "LOCAL_WORLD_SIZE=%d", lws);
    snprintf(set[k++], 96, "GROUP_RANK=%d", rank / lws);
    snprintf(set[k++], 96, "GROUP_WORLD_SIZE=%d", nodes);
    snprintf(set[k++], 96, "MASTER_ADDR=127.0.0.1");
    snprintf(set[k++], 96, "MASTER_PORT=%d", port - 1);
    snprintf(set[k++], 96, "TORCHELASTIC_USE_AGENT_STORE=True");
    snprintf(set[k++], 96, "SLIDECHECK_RENDEZVOUS_TIMEOUT=%s", timeout);
    if (extra) snprintf(set[k++], 96, "%s", extra);
    set[k][0] = 0;
}

/* everything a child wrote to its message pipe (the read end), then closed */
static void read_msg(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    ssize_t k;
    while (n + 1 < cap && (k = read(fd, buf + n, cap - 1 - n)) > 0) n += (size_t)k;
    buf[n] = 0;
    close(fd);
}

/* Two "nodes" of 2 ranks on this machine. ok: all 4 open the channel and all-reduce. kill:
   node 1's ranks die (SIGKILL) once the channel is open, stall: they sleep instead, absent:
   they never start; node 0's ranks must stop naming node 1. */
enum { NODES_OK, NODES_KILL, NODES_STALL, NODES_ABSENT };
static void two_nodes(int how, const char *timeout, double *dt, int ex[2], char msgs[2][1200])
{
    char set[4][24][96];
    int port = free_port(), ready[2] = {-1, -1}, mp[2][2];
    pid_t pid[4] = {0, 0, 0, 0};
    if (pipe(ready)) return;
    for (int r = 0; r < 2; r++)
        if (pipe(mp[r])) return;
    double t0 = now_s();
    for (int r = 0; r < 4; r++) {
        torchrun_env(set[r], r, 2, 2, port, timeout, NULL);
        int node1 = r >= 2;
        if (how == NODES_ABSENT && node1) continue;
        int mode = how == NODES_OK ? 0 : node1 ? 1 : how == NODES_ABSENT ? 3 : 2;
        pid[r] = spawn_env(set[r], mode, r / 2, ready[1], node1 ? -1 : mp[r][1], "node 1");
    }
    close(ready[1]);
    for (int r = 0; r < 2; r++) close(mp[r][1]);
    if (how == NODES_KILL || how == NODES_STALL) { /* node 1's ranks have opened the channel */
        char one[2];
        struct pollfd pf;
        pf.fd = ready[0], pf.events = POLLIN, pf.revents = 0;
        size_t got = 0;
        while (got < 2 && poll(&pf, 1, 10000) > 0) {
            ssize_t k = read(ready[0], one, 2 - got);
            if (k <= 0) break;
            got += (size_t)k;
        }
        t0 = now_s();
        if (how == NODES_KILL) kill(pid[2], SIGKILL), kill(pid[3], SIGKILL);
    }
    for (int r = 0; r < 2; r++) ex[r] = reap(pid[r]);
    *dt = now_s() - t0;
    for (int r = 2; r < 4; r++)
        if (pid[r]) {
            if (how == NODES_STALL) kill(pid[r], SIGKILL);
            int x = reap(pid[r]);
            if (how == NODES_OK && x) ex[0] = ex[0] ? ex[0] : 100 + x;
        }
    close(ready[0]);
    for (int r = 0; r < 2; r++) read_msg(mp[r][0], msgs[r], 1200);
}

static void test_two_nodes(void)
{
    double dt = 0;
    int ex[2] = {-1, -1};
    char m[2][1200];
    two_nodes(NODES_OK, "10", &dt, ex, m);
    CHECK(ex[0] == 0 && ex[1] == 0, "two nodes x 2 ranks (RANK, LOCAL_RANK, GROUP_RANK 0/1, torchrun's agent store): "
          "every rank reads its node, opens the channel and all-reduces %d floats to the rank-order sum, %.2f s "
          "(exits %d, %d)", NRED, dt, ex[0], ex[1]);

    two_nodes(NODES_KILL, "5", &dt, ex, m);
    CHECK(ex[0] == 10 - (int)SC_ERROR_IO && ex[1] == 10 - (int)SC_ERROR_IO && strstr(m[0], "rank 2 (node 1) closed") &&
              strstr(m[1], "rank 2 (node 1) closed") && dt < 2.5,
          "node 1 killed (both ranks, SIGKILL) during an allreduce: node 0's ranks stop %.2f s later (timeout 5 s), "
          "both naming it: rank 0: '%s'; rank 1: '%s'", dt, m[0], m[1]);

    two_nodes(NODES_STALL, "1", &dt, ex, m);
    CHECK(ex[0] == 10 - (int)SC_ERROR_TIMEOUT && ex[1] == 10 - (int)SC_ERROR_IO &&
              strstr(m[0], "rank 2 (node 1) did not answer within 1 s") &&
              strstr(m[1], "rank 2 (node 1) did not answer within 1 s") && dt >= 0.9 && dt < 3.0,
          "node 1 stalls (alive, silent) with the same 1 s timeout everywhere: node 0's ranks stop after %.2f s, both "
          "naming it (rank 1 through rank 0, before its own wait ends): rank 0: '%s'; rank 1: '%s'", dt, m[0], m[1]);

    two_nodes(NODES_ABSENT, "1", &dt, ex, m);
    CHECK(ex[0] == 10 - (int)SC_ERROR_TIMEOUT && ex[1] == 10 - (int)SC_ERROR_TIMEOUT &&
              strstr(m[0], "missing: rank 2, 3; no rank of node 1 arrived") &&
              strstr(m[1], "no rank of node 1 arrived") && dt >= 0.9 && dt < 3.0,
          "node 1 never starts: node 0's ranks stop after %.2f s (timeout 1 s): rank 0: '%s'; rank 1: '%s'", dt, m[0],
          m[1]);
}

/* A non-loopback IPv4 interface of this machine (name and address), 0 when there is none */
static int other_interface(char *name, size_t ncap, char *addr, size_t acap)
{
    struct ifaddrs *all = NULL, *i;
    int found = 0;
    if (getifaddrs(&all)) return 0;
    for (i = all; i && !found; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & 0x1) && !(i->ifa_flags & 0x8)) {
            snprintf(name, ncap, "%s", i->ifa_name);
            inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, addr, (socklen_t)acap);
            found = 1;
        }
    freeifaddrs(all);
    return found;
}

/* where rank 0 listens for (MASTER_ADDR, NCCL_SOCKET_IFNAME): "127.0.0.1", "::", ... or the error */
static const char *listen_of(const char *master, const char *ifname, char *buf, size_t cap)
{
    sc_dist_env e = env_of(0, 2, 4242, 1.0);
    struct sockaddr_storage ss;
    socklen_t len = 0;
    char desc[400];
    snprintf(e.master_addr, sizeof e.master_addr, "%s", master);
    snprintf(e.socket_ifname, sizeof e.socket_ifname, "%s", ifname);
    if (sc__dist_listen_addr(&e, &ss, &len, desc, sizeof desc) != SC_SUCCESS) snprintf(buf, cap, "error: %.500s", sc_last_error());
    else sc__dist_host(&ss, buf, cap);
    return buf;
}

/* 2 ranks through the environment: rank 0 in this process, rank 1 a child; `extra` on both */
static sc_result env_pair(const char *master, const char *extra, const char *extra2, int *child_exit)
{
    char set[2][24][96];
    int port = free_port();
    for (int r = 0; r < 2; r++) {
        int k = 0;
        snprintf(set[r][k++], 96, "RANK=%d", r);
        snprintf(set[r][k++], 96, "WORLD_SIZE=2");
        snprintf(set[r][k++], 96, "MASTER_ADDR=%s", master);
        snprintf(set[r][k++], 96, "MASTER_PORT=%d", port);
        snprintf(set[r][k++], 96, "SLIDECHECK_RENDEZVOUS_TIMEOUT=3");
        if (extra) snprintf(set[r][k++], 96, "%s", extra);
        if (extra2) snprintf(set[r][k++], 96, "%s", extra2);
        set[r][k][0] = 0;
    }
    pid_t c = spawn_env(set[1], 4, -1, -1, -1, NULL);
    const char *v[24];
    int n = 0;
    for (; set[0][n][0]; n++) v[n] = set[0][n];
    v[n] = NULL;
    env_put(v);
    sc_dist_env e;
    unsigned char b[BLOB];
    blob_of(b, 5);
    sc_result r = sc_dist_env_read(&e);
    if (r == SC_SUCCESS) r = sc_dist_rendezvous(&e, 99, b, BLOB);
    if (r != SC_SUCCESS) kill(c, SIGKILL);
    *child_exit = reap(c);
    env_clear_all();
    return r;
}

static void test_listen(void)
{
    char a[600], b[600], c[600], d[600], ifn[64] = "", ip[64] = "";
    int other = other_interface(ifn, sizeof ifn, ip, sizeof ip);
    /* 10.255.255.1: not loopback, so the interface decides */
    CHECK(!strcmp(listen_of("10.255.255.1", "=lo", a, sizeof a), "127.0.0.1") &&
              !strcmp(listen_of("10.255.255.1", "lo", b, sizeof b), "127.0.0.1"),
          "NCCL_SOCKET_IFNAME '=lo' and 'lo' (MASTER_ADDR 10.255.255.1): rank 0 listens on %s, %s", a, b);
    CHECK(!strcmp(listen_of("127.0.0.1", "", a, sizeof a), "127.0.0.1") &&
              !strcmp(listen_of("localhost", "", b, sizeof b), "127.0.0.1") &&
              !strcmp(listen_of("::1", "", c, sizeof c), "::1") && !strcmp(listen_of("node01", "", d, sizeof d), "::"),
          "no NCCL_SOCKET_IFNAME: MASTER_ADDR 127.0.0.1 / localhost / ::1 -> %s, %s, %s (loopback); a host name -> %s "
          "(every interface)", a, b, c, d);
    CHECK(!strcmp(listen_of("127.0.0.1", "^lo", a, sizeof a), "127.0.0.1"),
          "MASTER_ADDR on the loopback: rank 0 listens there whatever interface NCCL_SOCKET_IFNAME names (%s)", a);
    listen_of("10.255.255.1", "nosuch0", a, sizeof a);
    listen_of("127.0.0.1", "=l", b, sizeof b);
    CHECK(strstr(a, "NCCL_SOCKET_IFNAME='nosuch0': no interface matches it (this machine has: lo") &&
              strstr(b, "NCCL_SOCKET_IFNAME='=l': no interface matches it"),
          "an interface that does not exist: '%s'; '=l' is exact: '%s'", a, b);
    if (other) {
        char want[80];
        snprintf(want, sizeof want, "=%s", ifn);
        CHECK(!strcmp(listen_of("10.255.255.1", "^lo", a, sizeof a), ip) &&
                  !strcmp(listen_of("10.255.255.1", want, b, sizeof b), ip) &&
                  !strcmp(listen_of("10.255.255.1", "^docker", c, sizeof c), ip),
              "'^lo', '%s' and '^docker' (lo not excluded: loopback interfaces come last): %s's address %s (%s, %s, %s)",
              want, ifn, ip, a, b, c);
    } else
        printf("note: no non-loopback IPv4 interface here: '^lo' and a second interface not tested\n");

    /* real rendezvous through the environment */
    int x1 = -1, x2 = -1;
    sc_result r1 = env_pair("127.0.0.1", "NCCL_SOCKET_IFNAME=lo", NULL, &x1);
    sc_result r2 = env_pair("127.0.0.1", "NCCL_SOCKET_IFNAME==lo", NULL, &x2);
    CHECK(r1 == SC_SUCCESS && x1 == 0 && r2 == SC_SUCCESS && x2 == 0,
          "2 processes with NCCL_SOCKET_IFNAME=lo and =lo: the rendezvous completes (%s; exits %d, %d)",
          r1 || r2 ? sc_last_error() : "ok", x1, x2);
    double t0 = now_s();
    r1 = env_pair("127.0.0.1", "NCCL_SOCKET_IFNAME=nosuch0", NULL, &x1);
    double dt = now_s() - t0;
    CHECK(r1 == SC_ERROR_INVALID_ARGS && strstr(sc_last_error(), "NCCL_SOCKET_IFNAME='nosuch0'") && dt < 1.0,
          "NCCL_SOCKET_IFNAME=nosuch0: rank 0 stops at once (%.2f s): %s", dt, sc_last_error());
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) == 0 && host[0]) {
        r1 = env_pair(host, NULL, NULL, &x1);
        CHECK(r1 == SC_SUCCESS && x1 == 0, "MASTER_ADDR=%s (this machine's host name, resolved with getaddrinfo; rank 0 "
              "on every interface): the rendezvous completes (%s; exit %d)", host, r1 ? sc_last_error() : "ok", x1);
    }
    if (other) {
        char ifv[96];
        snprintf(ifv, sizeof ifv, "NCCL_SOCKET_IFNAME==%s", ifn);
        r1 = env_pair(ip, NULL, NULL, &x1);
        r2 = env_pair(ip, ifv, NULL, &x2);
        CHECK(r1 == SC_SUCCESS && x1 == 0 && r2 == SC_SUCCESS && x2 == 0,
              "MASTER_ADDR=%s (%s): the rendezvous completes with rank 0 on every interface and with %s (%s; exits %d, "
              "%d)", ip, ifn, ifv, r1 || r2 ? sc_last_error() : "ok", x1, x2);
    }
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
static int g_nodes;        /* spawn_dp: each rank a node of its own, as torchrun --nnodes W --nproc-per-node 1 */

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
    if (g_nodes) { /* the launcher's variables (GROUP_RANK, ...), read as a rank on another machine reads them */
        char set[24][96];
        const char *v[24];
        int n = 0;
        torchrun_env(set, rank, 1, g_world, port, "20", NULL);
        for (; set[n][0]; n++) v[n] = set[n];
        v[n] = NULL;
        env_put(v);
        if (sc_dist_env_read(&e) != SC_SUCCESS || e.node != rank || e.node_count != g_world || e.local_rank) _exit(4);
    }
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

/* Child: node `rank` of two (one rank each, torchrun --nnodes 2 variables, timeout 5 s) trains
   the tiny model on the CPU until a step fails. Node 1 writes a byte to `ready` after its third
   step (the parent then kills it). Node 0 writes the failing step's sc_last_error() to `msg`
   and exits 10 + (-result) when it names "rank 1 (node 1)", 20 + (-result) otherwise. */
static pid_t spawn_train_node(int rank, int port, int ready, int msg)
{
    fflush(stdout);
    pid_t p = fork();
    if (p) return p;
    char set[24][96];
    const char *v[24];
    int n = 0;
    torchrun_env(set, rank, 1, 2, port, "5", NULL);
    for (; set[n][0]; n++) v[n] = set[n];
    v[n] = NULL;
    env_put(v);
    sc_dist_env e;
    unsigned char b[BLOB];
    blob_of(b, 1);
    sc_dist_comm *c = NULL;
    if (sc_dist_env_read(&e) != SC_SUCCESS || e.node != rank || sc_dist_comm_open(&c, &e, 7, b, BLOB) != SC_SUCCESS)
        _exit(2);
    sc_config cfg;
    sc_config_named(&cfg, "tiny");
    sc_model_config mc = sc_model_config_init();
    mc.comm = c;
    mc.optim = SC_OPTIM_ADAMW;
    sc_model *m = NULL;
    sc_plan plan;
    sc_plan_parse(&plan, "none", cfg.num_layers);
    if (sc_model_create(&m, &cfg, &mc, NULL) != SC_SUCCESS) _exit(2);
    int32_t ids[DP_B * DP_T];
    float loss;
    sc_result r = SC_SUCCESS;
    for (int s = 0; s < 100000 && r == SC_SUCCESS; s++) {
        for (int i = 0; i < DP_B * DP_T; i++) ids[i] = (int32_t)((i * 7919u + (unsigned)(s + rank) * 104729u) % 512u);
        r = sc_model_step(m, &plan, ids, 1, DP_B, DP_T, 1, &loss);
        char one = 1;
        if (rank == 1 && s == 2 && write(ready, &one, 1) != 1) _exit(7);
    }
    if (rank == 0 && msg >= 0 && write(msg, sc_last_error(), strlen(sc_last_error())) < 0) _exit(7);
    _exit(r == SC_SUCCESS ? 3 : (strstr(sc_last_error(), "rank 1 (node 1)") ? 10 : 20) - (int)r);
}

/* Data parallel training on the CPU backend over two "nodes", node 1 killed (SIGKILL) mid-run:
   node 0's step fails within the timeout, naming the node (never a hang). */
static void test_two_node_kill(void)
{
    int port = free_port(), ready[2], mp[2];
    char msg[1200] = "";
    if (pipe(ready) || pipe(mp)) return;
    pid_t p0 = spawn_train_node(0, port, -1, mp[1]), p1 = spawn_train_node(1, port, ready[1], -1);
    close(ready[1]);
    close(mp[1]);
    struct pollfd pf;
    pf.fd = ready[0], pf.events = POLLIN, pf.revents = 0;
    char one = 0;
    int started = poll(&pf, 1, 20000) > 0 && read(ready[0], &one, 1) == 1;
    double t0 = now_s();
    kill(p1, SIGKILL);
    int x0 = reap(p0);
    double dt = now_s() - t0;
    (void)reap(p1);
    close(ready[0]);
    read_msg(mp[0], msg, sizeof msg);
    CHECK(started && x0 == 10 - (int)SC_ERROR_IO && dt < 2.5,
          "training on the CPU over two nodes (GROUP_RANK 0/1), node 1 killed after 3 steps: node 0's step fails %.2f s "
          "later (timeout 5 s; exit %d), naming it: '%s'", dt, x0, msg);
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
    /* and resident mode on 3 ranks: a sum of three adds in an order, which slide's must share */
    float l3r[DP_STEPS], *w3r = NULL;
    uint64_t h3r[2];
    g_slide = 0;
    int ok3r = dp_run("build/tmp_dp_3r.bin", l3r, &w3r, &np, h3r, &ps, &fs, NULL);
    g_world = 2, g_untied = 1;
    int okr = dp_run("build/tmp_dp_r.bin", lr, &wr, &npu, hr, &pr, &fs, NULL);
    g_untied = 0;
    /* two "nodes" of one rank each (GROUP_RANK 0 and 1): a sum of two is a + b whatever carries it */
    float ln[DP_STEPS], *wn = NULL;
    uint64_t hn[2];
    g_nodes = 1;
    int okn = dp_run("build/tmp_dp_n.bin", ln, &wn, &np, hn, &ps, &fs, NULL);
    g_nodes = 0;
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
    CHECK(ok3 && ok3r && !memcmp(l3r, l3, sizeof l3) && !memcmp(w3r, w3, np * sizeof(float)) &&
              h3r[0] == sc_hash_bytes(0, w3r, np * sizeof(float)),
          "slide mode on 3 ranks: losses and weights equal resident data parallel's bit for bit, on every replica");
    free(ws), free(wr), free(wu), free(wsz), free(wv), free(wb16), free(wc), free(w3), free(w3z), free(w3r);
    CHECK(ok && okn && !memcmp(ln, la, sizeof la) && !memcmp(wn, wa, np * sizeof(float)) &&
              hn[0] == sc_hash_bytes(0, wn, np * sizeof(float)),
          "two nodes x 1 rank (torchrun --nnodes 2: GROUP_RANK 0/1, the agent's store): losses and weights equal one "
          "machine's 2 ranks bit for bit, on both replicas");
    free(wn);
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

/* sc_model_config.bucket_mb: a negative size other than SC_BUCKET_LAYER is refused at create,
   naming the field */
static void test_bucket_config(void)
{
    sc_config c;
    sc_config_named(&c, "tiny");
    sc_model_config mc = sc_model_config_init();
    mc.bucket_mb = -2;
    sc_model *m = NULL;
    sc_result r = sc_model_create(&m, &c, &mc, NULL);
    CHECK(r == SC_ERROR_INVALID_ARGS && m == NULL && strstr(sc_last_error(), "bucket_mb -2"), "bucket_mb -2 refused: %s",
          sc_last_error());
    int ok[2] = {1, SC_BUCKET_LAYER};
    for (int i = 0; i < 2; i++) {
        mc.bucket_mb = ok[i];
        r = sc_model_create(&m, &c, &mc, NULL);
        CHECK(r == SC_SUCCESS, "bucket_mb %d accepted: %s", ok[i], r ? sc_last_error() : "ok");
        if (m) sc_model_destroy(m);
        m = NULL;
    }
    /* dp_sums: AUTO or NCCL; anything else is refused, naming the field */
    mc.bucket_mb = 0;
    mc.dp_sums = 2;
    r = sc_model_create(&m, &c, &mc, NULL);
    CHECK(r == SC_ERROR_INVALID_ARGS && m == NULL && strstr(sc_last_error(), "dp_sums 2"), "dp_sums 2 refused: %s",
          sc_last_error());
    mc.dp_sums = SC_DP_SUMS_NCCL;
    r = sc_model_create(&m, &c, &mc, NULL);
    CHECK(r == SC_SUCCESS, "dp_sums SC_DP_SUMS_NCCL accepted: %s", r ? sc_last_error() : "ok");
    if (m) sc_model_destroy(m);
}

/* Slide over NCCL splits a tied head's rows over the ranks. Each rank's host sums some of the
   embedding's norm chunks and gets the others' (so every chunk must be summed by exactly one
   rank), and holds the gradients of the rows it updates (its chunk and the remainder), of the
   rows those norm chunks cover, and of the rows of the chunk the embedding shares with layer 0. */
static int rows_hold(const size_t lo[2], const size_t hi[2], size_t a, size_t b) /* [a, b) held */
{
    for (size_t v = a; v < b; v++)
        if (!(v >= lo[0] && v < hi[0]) && !(v >= lo[1] && v < hi[1])) return 0;
    return 1;
}

static void test_split_head_rows(void)
{
    static const int shapes[][2] = {{512, 128},   {151936, 2048}, {151936, 896}, {151936, 1024}, {1000, 3},
                                    {65537, 7},   {7, 65536 * 3}, {9, 100000},   {300, 218},     {4099, 64}};
    static const int worlds[] = {2, 3, 4, 8};
    const size_t K = SC_GRAD_NORM_CHUNK;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (size_t wi = 0; wi < sizeof worlds / sizeof worlds[0]; wi++) {
            int V = shapes[si][0], C = shapes[si][1], W = worlds[wi];
            if (V < W) continue;
            size_t E = (size_t)V * C, whole = E / K, next = 0, ch = (size_t)V / (size_t)W;
            int ok = 1;
            char why[200] = "";
            for (int r = 0; r < W && ok; r++) {
                size_t k[2], lo[2], hi[2];
                sc__slide_split_head_rows(V, C, W, r, k, lo, hi);
                if (k[0] != next || k[1] < k[0] || k[1] > whole) { /* the ranks' chunks in turn, each once */
                    snprintf(why, sizeof why, "rank %d: chunks [%zu, %zu) after %zu of %zu", r, k[0], k[1], next, whole);
                    ok = 0;
                    break;
                }
                next = k[1];
                int runs_ok = lo[0] <= hi[0] && hi[0] <= (size_t)V && lo[1] <= hi[1] && hi[1] <= (size_t)V &&
                              (lo[1] == hi[1] || hi[0] < lo[1]);
                int holds = rows_hold(lo, hi, (size_t)r * ch, (size_t)(r + 1) * ch) && /* its chunk */
                            rows_hold(lo, hi, ch * (size_t)W, (size_t)V) &&           /* the remainder */
                            (k[1] == k[0] || rows_hold(lo, hi, k[0] * K / (size_t)C, (k[1] * K + (size_t)C - 1) / (size_t)C)) &&
                            (E % K == 0 || rows_hold(lo, hi, whole * K / (size_t)C, (size_t)V)); /* the shared chunk */
                if (!runs_ok || !holds) {
                    snprintf(why, sizeof why, "rank %d: rows [%zu, %zu) [%zu, %zu), chunks [%zu, %zu)", r, lo[0], hi[0],
                             lo[1], hi[1], k[0], k[1]);
                    ok = 0;
                }
            }
            if (ok && next != whole) snprintf(why, sizeof why, "the chunks end at %zu of %zu", next, whole), ok = 0;
            char name[96];
            snprintf(name, sizeof name, "split head %d x %d over %d ranks: norm chunks and held rows", V, C, W);
            check(ok, name, "%s", why);
        }
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    env_clear_all();
    test_env();
    test_env_launchers();
    test_lists();
    test_rendezvous();
    test_comm();
    test_two_nodes();
    test_listen();
    test_two_node_kill();
    test_data_parallel();
    test_bucket_config();
    test_split_head_rows();
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail != 0;
}
