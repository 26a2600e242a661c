/* tests/test_alloc.c - the caching allocator against PyTorch's rules.

   Build (from the repository root):
     gcc -std=c11 -O1 -g -Wall -Wextra -Werror -I. tests/test_alloc.c -o build/test_alloc -lm
   also with -fsanitize=address,undefined -fno-omit-frame-pointer, and as C++ (g++ -x c++).
   Prints PASS/FAIL per check and "N passed, M failed"; exits non-zero iff M > 0.

   The random tests replay thousands of operations on the allocator and on a plain reference
   model of the rules (lists of segments and blocks, linear scans) and demand the same pointer
   for every allocation, the same raw allocations and frees, and the same statistics. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)

/* ---- reporting: one line per check ---- */
static int g_passed, g_failed;
static char g_name[128], g_msg[512];
static int g_bad;

static void t_begin(const char *name)
{
    snprintf(g_name, sizeof g_name, "%s", name);
    g_bad = 0;
    g_msg[0] = 0;
}

/* Record the first failure of the current check. */
static int t_expect(int ok, const char *fmt, ...)
{
    if (!ok && !g_bad) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g_msg, sizeof g_msg, fmt, ap);
        va_end(ap);
        g_bad = 1;
    }
    return ok;
}

static void t_end(void)
{
    if (g_bad) { printf("FAIL %s: %s\n", g_name, g_msg); g_failed++; }
    else { printf("PASS %s\n", g_name); g_passed++; }
    fflush(stdout);
}

/* ---- raw memory callbacks that count and log everything ---- */
#define RAW_MAX 4096
typedef struct raw_log { int kind; char *ptr; size_t size; } raw_log; /* 0 alloc, 1 failed alloc, 2 free */
typedef struct raw_state {
    size_t outstanding, limit;              /* limit: 0 = none; else fail beyond (a small "card") */
    char *live_ptr[RAW_MAX];
    size_t live_size[RAW_MAX];
    int nlive;
    raw_log log[RAW_MAX];
    int nlog;
    int errors;
} raw_state;

static void *raw_alloc(size_t bytes, void *user)
{
    raw_state *r = (raw_state *)user;
    char *p;
    if (r->nlog < RAW_MAX) { r->log[r->nlog].kind = 1; r->log[r->nlog].ptr = NULL; r->log[r->nlog].size = bytes; }
    if ((r->limit && r->outstanding + bytes > r->limit) || r->nlive == RAW_MAX) { r->nlog++; return NULL; }
    p = (char *)malloc(bytes);
    if (!p) { r->nlog++; return NULL; }
    if (r->nlog < RAW_MAX) { r->log[r->nlog].kind = 0; r->log[r->nlog].ptr = p; }
    r->nlog++;
    r->live_ptr[r->nlive] = p;
    r->live_size[r->nlive++] = bytes;
    r->outstanding += bytes;
    return p;
}

static void raw_free(void *ptr, size_t bytes, void *user)
{
    raw_state *r = (raw_state *)user;
    int i;
    for (i = 0; i < r->nlive && r->live_ptr[i] != (char *)ptr; i++) {}
    if (i == r->nlive || r->live_size[i] != bytes) { r->errors++; return; }
    r->live_ptr[i] = r->live_ptr[r->nlive - 1];
    r->live_size[i] = r->live_size[r->nlive - 1];
    r->nlive--;
    r->outstanding -= bytes;
    if (r->nlog < RAW_MAX) { r->log[r->nlog].kind = 2; r->log[r->nlog].ptr = (char *)ptr; r->log[r->nlog].size = bytes; }
    r->nlog++;
    free(ptr);
}

/* ---- fake stream events whose completion the test controls ---- */
#define EV_MAX 100000
typedef struct ev_state {
    unsigned char done[EV_MAX], alive[EV_MAX];
    int stream[EV_MAX];
    int n, outstanding, errors;
    int first_of_op;                        /* events recorded since this index belong to the op */
} ev_state;

static void *ev_record(int stream, void *user)
{
    ev_state *e = (ev_state *)user;
    if (e->n == EV_MAX) { e->errors++; return NULL; }
    e->done[e->n] = 0;
    e->alive[e->n] = 1;
    e->stream[e->n] = stream;
    e->outstanding++;
    e->n++;
    return (void *)(intptr_t)e->n; /* id + 1, never NULL */
}

static int ev_query(void *ev, void *user)
{
    ev_state *e = (ev_state *)user;
    int id = (int)(intptr_t)ev - 1;
    if (!e->alive[id]) e->errors++;
    return e->done[id];
}

static void ev_destroy(void *ev, void *user)
{
    ev_state *e = (ev_state *)user;
    int id = (int)(intptr_t)ev - 1;
    if (!e->alive[id]) e->errors++;
    e->alive[id] = 0;
    e->outstanding--;
}

static void ev_sync(void *ev, void *user)
{
    ev_state *e = (ev_state *)user;
    e->done[(int)(intptr_t)ev - 1] = 1;
}

/* ---- memory-event hook: remembers the recent events ---- */
typedef struct hook_state { sc_mem_event ev[64]; char tags[64][SC_ALLOCATOR_TAG_MAX]; int n, total; } hook_state;

static void hook(const sc_mem_event *ev, void *user)
{
    hook_state *h = (hook_state *)user;
    if (h->n < 64) {
        h->ev[h->n] = *ev;
        snprintf(h->tags[h->n], SC_ALLOCATOR_TAG_MAX, "%s", ev->tag);
        h->ev[h->n].tag = h->tags[h->n];
        h->n++;
    }
    h->total++;
}

typedef struct env {
    sc_allocator a;
    sc_allocator_config cfg;
    raw_state *raw;
    ev_state *ev;
    hook_state hook;
} env;

/* events: 0 none, 1 with synchronize, 2 query only */
static env *env_new(size_t cap, size_t limit, int events)
{
    env *e = (env *)calloc(1, sizeof *e);
    e->raw = (raw_state *)calloc(1, sizeof *e->raw);
    e->ev = (ev_state *)calloc(1, sizeof *e->ev);
    e->raw->limit = limit;
    e->cfg.raw_alloc = raw_alloc;
    e->cfg.raw_free = raw_free;
    e->cfg.raw_user = e->raw;
    e->cfg.mem_cap = cap;
    if (events) {
        e->cfg.event_record = ev_record;
        e->cfg.event_query = ev_query;
        e->cfg.event_destroy = ev_destroy;
        e->cfg.event_synchronize = events == 1 ? ev_sync : NULL;
        e->cfg.event_user = e->ev;
    }
    e->cfg.on_event = hook;
    e->cfg.on_event_user = &e->hook;
    e->cfg.name = "test:0";
    if (sc_allocator_init(&e->a, &e->cfg) != SC_SUCCESS) { printf("init failed: %s\n", sc_last_error()); exit(2); }
    return e;
}

/* Uninit and check that nothing leaked: raw bytes and events. */
static void env_free(env *e)
{
    sc_allocator_uninit(&e->a);
    t_expect(e->raw->outstanding == 0 && e->raw->nlive == 0, "raw outstanding %zu bytes in %d segments after uninit",
             e->raw->outstanding, e->raw->nlive);
    t_expect(e->raw->errors == 0, "raw_free got %d unknown pointers or wrong sizes", e->raw->errors);
    t_expect(e->ev->outstanding == 0, "%d events never destroyed", e->ev->outstanding);
    t_expect(e->ev->errors == 0, "%d event misuses", e->ev->errors);
    free(e->raw);
    free(e->ev);
    free(e);
}

static void *xalloc(env *e, size_t n, int stream, const char *tag)
{
    void *p = NULL;
    sc_result r = sc_allocator_alloc(&e->a, &p, n, stream, tag);
    t_expect(r == SC_SUCCESS && p, "alloc(%zu) failed: %s", n, sc_last_error());
    return p;
}

static void expect_valid(env *e)
{
    sc_result r = sc_allocator_validate(&e->a);
    t_expect(r == SC_SUCCESS, "validate: %s", sc_last_error());
}

/* the size of the last segment the raw allocator handed out */
static size_t last_seg(env *e)
{
    for (int i = e->raw->nlog - 1; i >= 0; i--)
        if (e->raw->log[i].kind == 0) return e->raw->log[i].size;
    return 0;
}

/* ---- a tiny JSON validator (RFC 8259 grammar, no semantics) ---- */
static const char *js_ws(const char *s) { while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r') s++; return s; }
static const char *js_value(const char *s, int depth);

static const char *js_string(const char *s)
{
    if (*s != '"') return NULL;
    for (s++; *s != '"'; s++) {
        if ((unsigned char)*s < 0x20) return NULL;
        if (*s == '\\') {
            s++;
            if (*s == 'u') {
                for (int i = 1; i <= 4; i++) if (!strchr("0123456789abcdefABCDEF", s[i]) || !s[i]) return NULL;
                s += 4;
            } else if (!*s || !strchr("\"\\/bfnrt", *s)) return NULL;
        }
    }
    return s + 1;
}

static const char *js_number(const char *s)
{
    const char *st = s;
    if (*s == '-') s++;
    if (*s == '0') s++;
    else if (*s >= '1' && *s <= '9') while (*s >= '0' && *s <= '9') s++;
    else return NULL;
    if (*s == '.') { s++; if (!(*s >= '0' && *s <= '9')) return NULL; while (*s >= '0' && *s <= '9') s++; }
    if (*s == 'e' || *s == 'E') { s++; if (*s == '+' || *s == '-') s++; if (!(*s >= '0' && *s <= '9')) return NULL; while (*s >= '0' && *s <= '9') s++; }
    return s > st ? s : NULL;
}

static const char *js_value(const char *s, int depth)
{
    s = js_ws(s);
    if (depth > 64) return NULL;
    if (*s == '{' || *s == '[') {
        char close = *s == '{' ? '}' : ']';
        int obj = *s == '{';
        s = js_ws(s + 1);
        if (*s == close) return s + 1;
        for (;;) {
            if (obj) {
                s = js_string(js_ws(s));
                if (!s) return NULL;
                s = js_ws(s);
                if (*s++ != ':') return NULL;
            }
            s = js_value(s, depth + 1);
            if (!s) return NULL;
            s = js_ws(s);
            if (*s == ',') { s++; continue; }
            if (*s == close) return s + 1;
            return NULL;
        }
    }
    if (*s == '"') return js_string(s);
    if (!strncmp(s, "true", 4)) return s + 4;
    if (!strncmp(s, "false", 5)) return s + 5;
    if (!strncmp(s, "null", 4)) return s + 4;
    return js_number(s);
}

static int json_valid(const char *s)
{
    s = js_value(s, 0);
    return s && *js_ws(s) == 0;
}

/* ========================================================================================
   Deterministic checks
   ======================================================================================== */

static void test_sizes(void)
{
    env *e;
    void *p, *q, *z1, *z2;
    sc_memory_stats s;
    t_begin("sizes_and_segments");
    e = env_new(0, 0, 0);
    p = xalloc(e, 1, 0, "one byte");
    s = sc_allocator_stats(&e->a);
    t_expect(s.allocated_bytes[SC_STAT_ALL].current == 512, "1 byte -> %lld, want 512",
             (long long)s.allocated_bytes[SC_STAT_ALL].current);
    t_expect(s.requested_bytes[SC_STAT_ALL].current == 1, "requested %lld", (long long)s.requested_bytes[0].current);
    t_expect(last_seg(e) == 2 * MiB && s.reserved_bytes[SC_STAT_SMALL_POOL].current == (int64_t)(2 * MiB),
             "1 byte: segment %zu, want 2 MiB small", last_seg(e));
    t_expect(((uintptr_t)p & 511) == ((uintptr_t)e->raw->log[0].ptr & 511), "block offset not a multiple of 512");
    /* zero bytes: a unique 512-byte block, next to the previous one */
    z1 = xalloc(e, 0, 0, "zero");
    z2 = xalloc(e, 0, 0, "zero");
    t_expect(z1 && z2 && z1 != z2 && z1 != p, "zero-byte blocks are not unique");
    t_expect((char *)z1 == (char *)p + 512 && (char *)z2 == (char *)p + 1024, "zero-byte blocks not packed at 512");
    s = sc_allocator_stats(&e->a);
    t_expect(s.allocated_bytes[0].current == 1536 && s.requested_bytes[0].current == 1,
             "after zeros: %lld allocated, %lld requested", (long long)s.allocated_bytes[0].current,
             (long long)s.requested_bytes[0].current);
    sc_allocator_free(&e->a, z1);
    sc_allocator_free(&e->a, z2);
    sc_allocator_free(&e->a, p);

    /* 513 bytes -> 1024 */
    p = xalloc(e, 513, 0, "x");
    s = sc_allocator_stats(&e->a);
    t_expect(s.allocated_bytes[0].current == 1024, "513 -> %lld", (long long)s.allocated_bytes[0].current);
    sc_allocator_free(&e->a, p);

    /* exactly 1 MiB: still small */
    p = xalloc(e, MiB, 0, "1MiB");
    s = sc_allocator_stats(&e->a);
    t_expect(s.allocated_bytes[SC_STAT_SMALL_POOL].current == (int64_t)MiB, "1 MiB not in the small pool");
    sc_allocator_free(&e->a, p);
    sc_allocator_empty_cache(&e->a);

    {   /* request -> (block size, segment size) */
        static const size_t req[][3] = {
            {MiB + 1, MiB + 512, 20 * MiB},         /* large pool, 20 MiB segment, split */
            {9 * MiB + 1, 9 * MiB + 512, 20 * MiB}, /* remainder 11 MiB - 512 > 1 MiB: split */
            {10 * MiB - 1, 10 * MiB, 10 * MiB},     /* rounds to exactly 10 MiB: its own segment */
            {10 * MiB, 10 * MiB, 10 * MiB},
            {11 * MiB + 3, 12 * MiB, 12 * MiB},     /* 11 MiB+512 in a 12 MiB segment: remainder not > 1 MiB */
            {19 * MiB + 1, 20 * MiB, 20 * MiB},     /* 20 MiB segment, remainder < 1 MiB: not split */
            {21 * MiB, 22 * MiB, 22 * MiB},         /* 21 MiB in 22 MiB: remainder = 1 MiB, not > 1 MiB */
            {40 * MiB + 5, 40 * MiB + 512, 42 * MiB}, /* remainder 2 MiB - 512 > 1 MiB: split */
        };
        for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
            p = xalloc(e, req[i][0], 1, "large");
            s = sc_allocator_stats(&e->a);
            t_expect(s.allocated_bytes[SC_STAT_LARGE_POOL].current == (int64_t)req[i][1] &&
                     s.reserved_bytes[SC_STAT_LARGE_POOL].current == (int64_t)req[i][2] &&
                     last_seg(e) == req[i][2],
                     "request %zu: block %lld segment %lld, want %zu / %zu", req[i][0],
                     (long long)s.allocated_bytes[SC_STAT_LARGE_POOL].current,
                     (long long)s.reserved_bytes[SC_STAT_LARGE_POOL].current, req[i][1], req[i][2]);
            sc_allocator_free(&e->a, p);
            sc_allocator_empty_cache(&e->a);
        }
    }
    /* two large requests share a 20 MiB segment when the remainder is big enough */
    p = xalloc(e, 5 * MiB, 0, "a");
    q = xalloc(e, 14 * MiB + 512, 0, "b");
    s = sc_allocator_stats(&e->a);
    t_expect(s.segment[0].current == 1 && (char *)q == (char *)p + 5 * MiB &&
             s.allocated_bytes[0].current == (int64_t)(20 * MiB),
             "5 MiB + 14.0005 MiB: %lld segments, %lld allocated (want 1 and the whole 20 MiB)",
             (long long)s.segment[0].current, (long long)s.allocated_bytes[0].current);
    sc_allocator_free(&e->a, p);
    sc_allocator_free(&e->a, q);
    /* small pool: a remainder of exactly 512 bytes still splits, nothing smaller exists */
    p = xalloc(e, MiB, 2, "s1");
    q = xalloc(e, MiB - 512, 2, "s2");
    {
        void *r = xalloc(e, 1, 2, "s3");
        s = sc_allocator_stats(&e->a);
        t_expect(s.segment[SC_STAT_SMALL_POOL].current == 1 && (char *)r == (char *)q + MiB - 512,
                 "small pool: 1 MiB + (1 MiB - 512) + 512 should fill one 2 MiB segment");
        t_expect(s.inactive_split[0].current == 0, "a full segment has no inactive split blocks");
        sc_allocator_free(&e->a, r);
    }
    sc_allocator_free(&e->a, p);
    sc_allocator_free(&e->a, q);
    expect_valid(e);
    sc_allocator_empty_cache(&e->a);
    s = sc_allocator_stats(&e->a);
    t_expect(s.reserved_bytes[0].current == 0 && s.segment[0].current == 0, "empty_cache left %lld bytes",
             (long long)s.reserved_bytes[0].current);
    env_free(e);
    t_end();
}

static void test_best_fit_and_merge(void)
{
    env *e = env_new(0, 0, 0);
    void *p[8], *q;
    sc_memory_stats s;
    t_begin("best_fit_split_merge");
    /* one small segment: blocks of 4K, 8K, 4K, 16K, 4K, 8K, 4K, rest */
    static const size_t sz[8] = {4096, 8192, 4096, 16384, 4096, 8192, 4096, 4096};
    for (int i = 0; i < 8; i++) p[i] = xalloc(e, sz[i], 0, "blk");
    for (int i = 1; i < 8; i++) t_expect((char *)p[i] == (char *)p[i - 1] + sz[i - 1], "not carved in order");
    sc_allocator_free(&e->a, p[1]); /* 8K hole */
    sc_allocator_free(&e->a, p[3]); /* 16K hole */
    sc_allocator_free(&e->a, p[5]); /* 8K hole, higher address */
    s = sc_allocator_stats(&e->a);
    t_expect(s.inactive_split[0].current == 4, "inactive split blocks %lld, want 4 (3 holes + tail)",
             (long long)s.inactive_split[0].current);
    q = xalloc(e, 6000, 0, "fit"); /* 6144: smallest fitting is an 8K hole, the lower one */
    t_expect(q == p[1], "best fit chose %p, want the lower 8K hole %p", q, p[1]);
    sc_allocator_free(&e->a, q);
    q = xalloc(e, 12000, 0, "fit"); /* 12288: only the 16K hole fits below the tail */
    t_expect(q == p[3], "best fit chose %p, want the 16K hole %p", q, p[3]);
    sc_allocator_free(&e->a, q);
    expect_valid(e);
    /* free the rest: everything merges back into one free block */
    for (int i = 0; i < 8; i++) if (i != 1 && i != 3 && i != 5) sc_allocator_free(&e->a, p[i]);
    s = sc_allocator_stats(&e->a);
    t_expect(s.inactive_split[0].current == 0 && s.inactive_split_bytes[0].current == 0,
             "after all frees %lld inactive split blocks", (long long)s.inactive_split[0].current);
    t_expect(s.allocated_bytes[0].current == 0 && s.active_bytes[0].current == 0 && s.segment[0].current == 1,
             "after all frees: allocated %lld active %lld segments %lld", (long long)s.allocated_bytes[0].current,
             (long long)s.active_bytes[0].current, (long long)s.segment[0].current);
    q = xalloc(e, 2 * 1024 * 1024 - 512 - 1048576, 0, "whole"); /* fits in the merged segment */
    t_expect(q == p[0], "merged segment not reused from its start");
    sc_allocator_free(&e->a, q);
    expect_valid(e);
    /* a block freed on stream 0 is not used for stream 1 */
    q = xalloc(e, 4096, 1, "other stream");
    s = sc_allocator_stats(&e->a);
    t_expect(s.segment[0].current == 2 && q != p[0], "stream 1 reused stream 0's free block");
    sc_allocator_free(&e->a, q);
    sc_allocator_empty_cache(&e->a);
    s = sc_allocator_stats(&e->a);
    t_expect(s.segment[0].current == 0 && s.reserved_bytes[0].current == 0, "empty_cache kept segments");
    t_expect(s.segment[0].peak == 2 && s.segment[0].allocated_total == 2 && s.segment[0].freed_total == 2,
             "segment stat %lld/%lld/%lld", (long long)s.segment[0].peak,
             (long long)s.segment[0].allocated_total, (long long)s.segment[0].freed_total);
    env_free(e);
    t_end();
}

static void test_record_stream(void)
{
    env *e = env_new(0, 0, 2); /* events, no synchronize */
    void *p, *q, *r;
    sc_memory_stats s;
    t_begin("record_stream_waits_for_events");
    p = xalloc(e, 1000, 0, "x");
    sc_allocator_record_stream(&e->a, p, 0); /* own stream: nothing to wait for */
    sc_allocator_record_stream(&e->a, p, 1);
    sc_allocator_record_stream(&e->a, p, 1); /* duplicate */
    sc_allocator_record_stream(&e->a, p, 2);
    sc_allocator_free(&e->a, p);
    t_expect(e->ev->n == 2 && e->ev->stream[0] == 1 && e->ev->stream[1] == 2,
             "free recorded %d events, want 2 (streams 1 and 2)", e->ev->n);
    s = sc_allocator_stats(&e->a);
    t_expect(s.allocated_bytes[0].current == 0 && s.active_bytes[0].current == 1024 &&
             s.requested_bytes[0].current == 1000 && s.active[0].current == 1,
             "pending block: allocated %lld active %lld requested %lld", (long long)s.allocated_bytes[0].current,
             (long long)s.active_bytes[0].current, (long long)s.requested_bytes[0].current);
    q = xalloc(e, 1000, 0, "y");
    t_expect(q != p, "a pending block was reused before its events completed");
    sc_allocator_free(&e->a, q);
    e->ev->done[0] = 1; /* one of two events */
    q = xalloc(e, 1000, 0, "y");
    t_expect(q != p, "a pending block was reused with one event still running");
    sc_allocator_free(&e->a, q);
    t_expect(e->ev->outstanding == 1, "completed event not destroyed (%d outstanding)", e->ev->outstanding);
    /* empty_cache without a synchronize callback cannot wait: the segment stays */
    sc_allocator_empty_cache(&e->a);
    s = sc_allocator_stats(&e->a);
    t_expect(s.segment[0].current == 1, "segment with a pending block released");
    e->ev->done[1] = 1;
    q = xalloc(e, 1000, 0, "y");
    t_expect(q == p, "block not reused after its events completed (%p vs %p)", q, p);
    t_expect(e->ev->outstanding == 0, "%d events outstanding", e->ev->outstanding);
    /* the reused block is back on its own stream: stream 1 still gets fresh memory */
    r = xalloc(e, 1000, 1, "z");
    s = sc_allocator_stats(&e->a);
    t_expect(s.segment[0].current == 2, "stream 1 shared a stream 0 segment");
    sc_allocator_free(&e->a, q);
    sc_allocator_free(&e->a, r);
    expect_valid(e);
    env_free(e);

    /* with synchronize, empty_cache waits for the events and releases */
    e = env_new(0, 0, 1);
    p = xalloc(e, 3 * MiB, 0, "x");
    sc_allocator_record_stream(&e->a, p, 5);
    sc_allocator_free(&e->a, p);
    sc_allocator_empty_cache(&e->a);
    s = sc_allocator_stats(&e->a);
    t_expect(s.segment[0].current == 0 && e->ev->outstanding == 0, "empty_cache did not synchronize");
    /* without event callbacks record_stream changes nothing */
    env_free(e);
    e = env_new(0, 0, 0);
    p = xalloc(e, 100, 0, "x");
    sc_allocator_record_stream(&e->a, p, 3);
    sc_allocator_free(&e->a, p);
    q = xalloc(e, 100, 0, "x");
    t_expect(q == p, "synchronous allocator did not reuse at once");
    sc_allocator_free(&e->a, q);
    env_free(e);
    t_end();
}

static void test_oom(void)
{
    env *e = env_new(64 * MiB, 0, 0);
    void *A, *B, *C, *D, *E = NULL;
    sc_result r;
    sc_memory_stats s;
    const char *msg;
    t_begin("oom_cap_retry_and_report");
    A = xalloc(e, 12 * MiB, 0, "adamw.m");
    B = xalloc(e, 20 * MiB, 0, "layer 7 grad");
    C = xalloc(e, 2 * MiB, 0, "layer 3 mlp.up (saved activation)"); /* a 20 MiB segment */
    sc_allocator_free(&e->a, C);
    s = sc_allocator_stats(&e->a);
    t_expect(s.reserved_bytes[0].current == (int64_t)(52 * MiB), "reserved %lld", (long long)s.reserved_bytes[0].current);
    D = xalloc(e, 24 * MiB, 0, "logits"); /* 52 + 24 > 64: release the cached 20 MiB, retry */
    s = sc_allocator_stats(&e->a);
    t_expect(s.alloc_retries == 1 && s.num_ooms == 0 && s.reserved_bytes[0].current == (int64_t)(56 * MiB),
             "retries %lld ooms %lld reserved %lld", (long long)s.alloc_retries, (long long)s.num_ooms,
             (long long)s.reserved_bytes[0].current);
    e->hook.n = 0;
    r = sc_allocator_alloc(&e->a, &E, 16 * MiB, 0, "layer 9 attn.probs");
    msg = sc_last_error();
    s = sc_allocator_stats(&e->a);
    t_expect(r == SC_ERROR_OUT_OF_MEMORY && E == NULL, "over-cap allocation returned %d", (int)r);
    t_expect(s.alloc_retries == 2 && s.num_ooms == 1, "retries %lld ooms %lld", (long long)s.alloc_retries,
             (long long)s.num_ooms);
    t_expect(strstr(msg, "logits") && strstr(msg, "adamw.m") && strstr(msg, "layer 7 grad") &&
             strstr(msg, "layer 9 attn.probs") && strstr(msg, "64.00 MiB") && strstr(msg, "test:0") &&
             strstr(msg, "cap"), "OOM message lacks details: %s", msg);
    t_expect(strstr(msg, "logits") < strstr(msg, "layer 7 grad") && strstr(msg, "layer 7 grad") < strstr(msg, "adamw.m"),
             "largest live allocations not in size order: %s", msg);
    t_expect(e->hook.n >= 1 && e->hook.ev[e->hook.n - 1].kind == SC_MEM_OOM &&
             e->hook.ev[e->hook.n - 1].requested == 16 * MiB, "no SC_MEM_OOM event");
    expect_valid(e);
    /* free and continue */
    sc_allocator_free(&e->a, D);
    E = xalloc(e, 16 * MiB, 0, "layer 9 attn.probs"); /* best fit: split from D's cached 24 MiB */
    s = sc_allocator_stats(&e->a);
    t_expect(E == D && s.reserved_bytes[0].current == (int64_t)(56 * MiB) && s.alloc_retries == 2,
             "after freeing: reserved %lld retries %lld", (long long)s.reserved_bytes[0].current,
             (long long)s.alloc_retries);
    t_expect(sc_allocator_oom_snapshot(&e->a) && strstr(sc_allocator_oom_snapshot(&e->a), "\"logits\""),
             "the snapshot of the failed request holds the block freed since");
    /* fragmentation: 8 MiB free behind E, in a segment that cannot go back; 16 more MiB exceed
       the cap. The message names the largest free block, the snapshot what held the memory */
    void *F = NULL;
    r = sc_allocator_alloc(&e->a, &F, 16 * MiB, 0, "layer 8 attn.probs");
    msg = sc_last_error();
    t_expect(r == SC_ERROR_OUT_OF_MEMORY && strstr(msg, "8.00 MiB reserved but unallocated") &&
             strstr(msg, "the largest free block of that stream 8.00 MiB"), "fragmented OOM: %s", msg);
    const char *js = sc_allocator_oom_snapshot(&e->a);
    t_expect(js && strstr(js, "\"state\": \"inactive\"") && strstr(js, "\"layer 9 attn.probs\"") &&
             !strstr(js, "\"logits\""), "the snapshot at the second OOM: %.300s", js ? js : "(none)");
    sc_allocator_free(&e->a, A);
    sc_allocator_free(&e->a, B);
    sc_allocator_free(&e->a, E);
    expect_valid(e);
    env_free(e);

    /* the raw allocator itself failing (a card smaller than any cap) */
    e = env_new(0, 30 * MiB, 0);
    A = xalloc(e, 20 * MiB, 0, "big");
    r = sc_allocator_alloc(&e->a, &B, 12 * MiB, 0, "too much");
    s = sc_allocator_stats(&e->a);
    t_expect(r == SC_ERROR_OUT_OF_MEMORY && s.num_ooms == 1 && s.alloc_retries == 1 &&
             strstr(sc_last_error(), "raw allocator failed") && strstr(sc_last_error(), "big"),
             "raw failure: r=%d, %s", (int)r, sc_last_error());
    sc_allocator_free(&e->a, A);
    B = xalloc(e, 12 * MiB, 0, "fits now");
    sc_allocator_free(&e->a, B);
    /* an absurd size fails cleanly */
    r = sc_allocator_alloc(&e->a, &B, (size_t)-1, 0, "absurd");
    t_expect(r == SC_ERROR_OUT_OF_MEMORY && B == NULL, "SIZE_MAX request returned %d", (int)r);
    env_free(e);
    t_end();
}

static void test_reports(void)
{
    env *e = env_new(0, 0, 2);
    void *p[6];
    char *buf;
    int n, n2;
    char longtag[200];
    t_begin("summary_snapshot_tags");
    memset(longtag, 'L', sizeof longtag);
    longtag[199] = 0;
    p[0] = xalloc(e, 100, 0, "layer 0 mlp.up (saved activation)");
    p[1] = xalloc(e, 3 * MiB, 0, "layer 1 mlp.up (saved activation)");
    p[2] = xalloc(e, 777, 1, "grad \"q\\k\"\n\ttab");
    p[3] = xalloc(e, 5000, 0, longtag);
    p[4] = xalloc(e, 12 * MiB + 7, 2, NULL);
    p[5] = xalloc(e, 4096, 0, "adamw.m");
    sc_allocator_record_stream(&e->a, p[5], 3);
    sc_allocator_free(&e->a, p[5]); /* pending */
    t_expect(sc_allocator_live_bytes_tagged(&e->a, "layer ") == 100 + 3 * MiB, "tagged bytes %zu",
             sc_allocator_live_bytes_tagged(&e->a, "layer "));
    t_expect(sc_allocator_live_bytes_tagged(&e->a, "layer 1 ") == 3 * MiB, "tagged bytes layer 1");
    t_expect(sc_allocator_live_bytes_tagged(&e->a, NULL) == 100 + 3 * MiB + 777 + 5000 + 12 * MiB + 7,
             "all live bytes");
    t_expect(sc_allocator_live_bytes_tagged(&e->a, "adamw") == 0, "pending block counted as live");
    t_expect(!strcmp(sc_allocator_tag_of(&e->a, p[0]), "layer 0 mlp.up (saved activation)"), "tag_of");
    t_expect(strlen(sc_allocator_tag_of(&e->a, p[3])) == SC_ALLOCATOR_TAG_MAX - 1, "long tag not truncated");
    t_expect(!strcmp(sc_allocator_tag_of(&e->a, p[4]), ""), "NULL tag not empty");
    t_expect(sc_allocator_tag_of(&e->a, p[5]) == NULL && sc_allocator_tag_of(&e->a, longtag) == NULL,
             "tag_of a non-live pointer");

    n = sc_allocator_summary(&e->a, NULL, 0);
    buf = (char *)malloc((size_t)n + 1);
    n2 = sc_allocator_summary(&e->a, buf, (size_t)n + 1);
    t_expect(n > 0 && n2 == n && (int)strlen(buf) == n, "summary length %d / %d / %zu", n, n2, strlen(buf));
    t_expect(strstr(buf, "Allocated memory") && strstr(buf, "Active memory") && strstr(buf, "Requested memory") &&
             strstr(buf, "test:0 reserved memory") && strstr(buf, "from small pool") &&
             strstr(buf, "from large pool") && strstr(buf, "Allocations") && strstr(buf, "Cur Usage") &&
             strstr(buf, "Tot Freed") && strstr(buf, "test:0 reserved segments"), "summary lacks rows:\n%s", buf);
    {   /* every line of the table is equally wide */
        const char *l = buf;
        size_t w = strcspn(buf, "\n");
        while (*l) {
            size_t k = strcspn(l, "\n");
            t_expect(k == w, "summary line width %zu vs %zu: %.*s", k, w, (int)k, l);
            l += k + (l[k] ? 1 : 0);
        }
    }
    if (getenv("SHOW")) fputs(buf, stdout);
    n2 = sc_allocator_summary(&e->a, buf, 10);
    t_expect(n2 == n && strlen(buf) == 9, "truncated summary");
    free(buf);

    n = sc_allocator_snapshot_json(&e->a, NULL, 0);
    buf = (char *)malloc((size_t)n + 1);
    n2 = sc_allocator_snapshot_json(&e->a, buf, (size_t)n + 1);
    t_expect(n > 0 && n2 == n && (int)strlen(buf) == n, "snapshot length");
    t_expect(json_valid(buf), "snapshot is not valid JSON:\n%s", buf);
    t_expect(strstr(buf, "\"grad \\\"q\\\\k\\\"\\n\\ttab\"") != NULL, "tag not escaped:\n%s", buf);
    t_expect(strstr(buf, "active_pending_free") && strstr(buf, "active_allocated") && strstr(buf, "inactive") &&
             strstr(buf, "\"segment_type\": \"large\""), "snapshot lacks states");
    if (getenv("SNAPSHOT")) {
        FILE *f = fopen(getenv("SNAPSHOT"), "w");
        if (f) { fputs(buf, f); fclose(f); }
    }
    free(buf);
    for (int i = 0; i < 5; i++) sc_allocator_free(&e->a, p[i]);
    e->ev->done[0] = 1;
    sc_allocator_empty_cache(&e->a);
    {
        sc_memory_stats s = sc_allocator_stats(&e->a);
        t_expect(s.reserved_bytes[0].current == 0 && s.active_bytes[0].current == 0, "not all released");
    }
    {   /* an empty snapshot is valid JSON too */
        char small[256];
        sc_allocator_snapshot_json(&e->a, small, sizeof small);
        t_expect(json_valid(small), "empty snapshot: %s", small);
    }
    env_free(e);
    t_end();
}

static void test_misc(void)
{
    env *e = env_new(0, 0, 0);
    void *p, *q;
    int x;
    sc_memory_stats s;
    sc_allocator h;
    t_begin("events_peaks_misuse_default");
    p = xalloc(e, 1 << 20, 4, "first");
    t_expect(e->hook.n == 2 && e->hook.ev[0].kind == SC_MEM_SEGMENT_ALLOC && e->hook.ev[0].size == 2 * MiB &&
             e->hook.ev[1].kind == SC_MEM_ALLOC && e->hook.ev[1].size == MiB && e->hook.ev[1].ptr == p &&
             e->hook.ev[1].stream == 4 && e->hook.ev[1].allocated_bytes == (int64_t)MiB &&
             e->hook.ev[1].reserved_bytes == (int64_t)(2 * MiB) && !strcmp(e->hook.ev[1].tag, "first") &&
             !strcmp(e->hook.ev[1].device, "test:0"), "alloc events wrong (%d events)", e->hook.n);
    e->hook.n = 0;
    sc_allocator_free(&e->a, p);
    sc_allocator_empty_cache(&e->a);
    t_expect(e->hook.n == 2 && e->hook.ev[0].kind == SC_MEM_FREE && e->hook.ev[0].allocated_bytes == 0 &&
             e->hook.ev[1].kind == SC_MEM_SEGMENT_FREE && e->hook.ev[1].reserved_bytes == 0, "free events wrong");
    /* peaks */
    p = xalloc(e, 5 * MiB, 0, "a");
    q = xalloc(e, 3 * MiB, 0, "b");
    sc_allocator_free(&e->a, p);
    s = sc_allocator_stats(&e->a);
    t_expect(s.allocated_bytes[0].peak == (int64_t)(8 * MiB) && s.allocated_bytes[0].current == (int64_t)(3 * MiB),
             "peak %lld", (long long)s.allocated_bytes[0].peak);
    sc_allocator_reset_peak(&e->a);
    s = sc_allocator_stats(&e->a);
    t_expect(s.allocated_bytes[0].peak == (int64_t)(3 * MiB) && s.reserved_bytes[0].peak == s.reserved_bytes[0].current,
             "reset_peak");
    t_expect(s.allocated_bytes[0].allocated_total == (int64_t)(8 * MiB + 1 * MiB) &&
             s.allocated_bytes[0].freed_total == (int64_t)(6 * MiB), "totals %lld %lld",
             (long long)s.allocated_bytes[0].allocated_total, (long long)s.allocated_bytes[0].freed_total);
    sc_allocator_reset_accumulated(&e->a);
    s = sc_allocator_stats(&e->a);
    t_expect(s.allocated_bytes[0].allocated_total == 0 && s.allocated_bytes[0].current == (int64_t)(3 * MiB),
             "reset_accumulated");
    /* misuse: unknown pointer, double free, NULL */
    fprintf(stderr, "(test_alloc: three 'not a live block' messages expected below)\n");
    sc_allocator_free(&e->a, &x);
    sc_allocator_free(&e->a, p);
    sc_allocator_free(&e->a, NULL);
    sc_allocator_record_stream(&e->a, &x, 1);
    expect_valid(e);
    s = sc_allocator_stats(&e->a);
    t_expect(s.allocation[0].current == 1, "misuse changed the stats");
    /* uninit with a live block: reported, memory still returned (env_free checks) */
    fprintf(stderr, "(test_alloc: a live-block report at uninit expected below)\n");
    (void)q;
    env_free(e);

    /* default host allocator */
    t_expect(sc_allocator_init(&h, NULL) == SC_SUCCESS, "init(NULL)");
    p = NULL;
    t_expect(sc_allocator_alloc(&h, &p, 3000, 0, "host") == SC_SUCCESS && p && ((uintptr_t)p & 255) == 0,
             "host block not 256-aligned");
    if (p) memset(p, 0x5a, 3000);
    q = NULL;
    t_expect(sc_allocator_alloc(&h, &q, 30 * MiB, 0, "host big") == SC_SUCCESS && q, "host big");
    if (q) { ((char *)q)[0] = 1; ((char *)q)[30 * MiB - 1] = 2; }
    sc_allocator_free(&h, p);
    sc_allocator_free(&h, q);
    t_expect(!strcmp(h.name, "cpu"), "default name %s", h.name);
    sc_allocator_uninit(&h);
    {
        sc_allocator_config bad;
        memset(&bad, 0, sizeof bad);
        bad.raw_alloc = raw_alloc;
        t_expect(sc_allocator_init(&h, &bad) == SC_ERROR_INVALID_ARGS, "raw_alloc without raw_free accepted");
        sc_allocator_uninit(&h);
    }
    t_end();
}

/* ========================================================================================
   Reference model: the rules written as plainly as possible
   ======================================================================================== */
typedef struct mblock {
    size_t off, size, req;
    int state;           /* 0 free, 1 live, 2 pending */
    int nev, ev[8];      /* pending: event ids */
    int nuse, use[8];    /* live: streams from record_stream */
    void *user_ptr;
} mblock;

typedef struct mseg {
    char *base;
    size_t size;
    int stream, pool;
    mblock *b;
    int nb, capb;
} mseg;

#define MSEG_MAX 1024
typedef struct model {
    mseg seg[MSEG_MAX];
    int nseg;
    size_t cap;
    int has_events, has_sync;
    int64_t retries, ooms;
    int64_t peak[4];     /* allocated, reserved, active, requested */
} model;

static size_t m_round(size_t n) { return n < 512 ? 512 : (n + 511) / 512 * 512; }
static size_t m_segsize(size_t r)
{
    if (r <= MiB) return 2 * MiB;
    if (r < 10 * MiB) return 20 * MiB;
    return (r + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
}

static void m_insert_block(mseg *s, int at, mblock b)
{
    if (s->nb == s->capb) { s->capb = s->capb ? 2 * s->capb : 8; s->b = (mblock *)realloc(s->b, (size_t)s->capb * sizeof *s->b); }
    memmove(s->b + at + 1, s->b + at, (size_t)(s->nb - at) * sizeof *s->b);
    s->b[at] = b;
    s->nb++;
}

static void m_remove_block(mseg *s, int at)
{
    memmove(s->b + at, s->b + at + 1, (size_t)(s->nb - at - 1) * sizeof *s->b);
    s->nb--;
}

/* A block becomes free: merge it with free neighbours. */
static void m_free_block(mseg *s, int i)
{
    s->b[i].state = 0;
    s->b[i].req = 0;
    s->b[i].nuse = s->b[i].nev = 0;
    if (i + 1 < s->nb && s->b[i + 1].state == 0) { s->b[i].size += s->b[i + 1].size; m_remove_block(s, i + 1); }
    if (i > 0 && s->b[i - 1].state == 0) { s->b[i - 1].size += s->b[i].size; m_remove_block(s, i); }
}

/* done: the events' completion as the allocator saw it when the operation began */
static int m_events_done(const mblock *b, const unsigned char *done, int wait)
{
    for (int k = 0; k < b->nev; k++) if (!wait && !done[b->ev[k]]) return 0;
    return 1;
}

static void m_process(model *m, const unsigned char *done, int wait)
{
    for (int s = 0; s < m->nseg; s++)
        for (int i = 0; i < m->seg[s].nb; i++)
            if (m->seg[s].b[i].state == 2 && m_events_done(&m->seg[s].b[i], done, wait && m->has_sync)) {
                m_free_block(&m->seg[s], i);
                i = -1; /* indices moved: rescan this segment */
            }
}

static int64_t m_reserved(const model *m)
{
    int64_t r = 0;
    for (int s = 0; s < m->nseg; s++) r += (int64_t)m->seg[s].size;
    return r;
}

/* Release every whole free segment; returns how many and appends their bases to out. */
static int m_release(model *m, const unsigned char *done, char **out, int nout)
{
    m_process(m, done, 1);
    for (int s = 0; s < m->nseg; s++)
        if (m->seg[s].nb == 1 && m->seg[s].b[0].state == 0) {
            out[nout++] = m->seg[s].base;
            free(m->seg[s].b);
            m->seg[s] = m->seg[m->nseg - 1];
            m->nseg--;
            s--;
        }
    return nout;
}

static int cmp_ptr(const void *x, const void *y)
{
    uintptr_t a = (uintptr_t)*(char *const *)x, b = (uintptr_t)*(char *const *)y;
    return a < b ? -1 : a > b;
}

/* Predict one allocation, checking the raw calls of the real one (log[0..nlog)). Returns the
   predicted pointer, NULL for an OOM. */
static char *m_alloc(model *m, const unsigned char *done, const raw_log *log, int nlog, size_t req, int stream,
                     size_t raw_limit)
{
    size_t size = m_round(req), segsize = m_segsize(size);
    int pool = size > MiB, bs = -1, bi = -1, li = 0;
    char *released[MSEG_MAX], *freed_log[MSEG_MAX];
    int nrel = 0, nfreed = 0;
    m_process(m, done, 0);
    /* best fit: smallest free block of the pool on the stream, lowest address among equals */
    for (int s = 0; s < m->nseg; s++) {
        mseg *g = &m->seg[s];
        if (g->pool != pool || g->stream != stream) continue;
        for (int i = 0; i < g->nb; i++) {
            mblock *b = &g->b[i];
            if (b->state || b->size < size) continue;
            if (bs < 0 || b->size < m->seg[bs].b[bi].size ||
                (b->size == m->seg[bs].b[bi].size && (uintptr_t)(g->base + b->off) < (uintptr_t)(m->seg[bs].base + m->seg[bs].b[bi].off))) {
                bs = s;
                bi = i;
            }
        }
    }
    if (bs < 0) {
        for (int attempt = 0; attempt < 2 && bs < 0; attempt++) {
            int64_t resv;
            if (attempt == 1) { nrel = m_release(m, done, released, nrel); m->retries++; }
            resv = m_reserved(m);
            if (m->cap && (uint64_t)resv + segsize > m->cap) continue; /* no raw call */
            /* the real allocator must have tried the raw allocator with this size now */
            while (li < nlog && log[li].kind == 2) freed_log[nfreed++] = log[li++].ptr;
            if (!t_expect(li < nlog && log[li].size == segsize, "model expected a raw allocation of %zu", segsize)) return NULL;
            if (log[li].kind == 1) {
                t_expect(raw_limit && (uint64_t)resv + segsize > raw_limit, "raw allocation failed unexpectedly");
                li++;
                continue;
            }
            t_expect(m->nseg < MSEG_MAX, "too many model segments");
            bs = m->nseg++;
            memset(&m->seg[bs], 0, sizeof m->seg[bs]);
            m->seg[bs].base = log[li].ptr;
            m->seg[bs].size = segsize;
            m->seg[bs].stream = stream;
            m->seg[bs].pool = pool;
            {
                mblock b;
                memset(&b, 0, sizeof b);
                b.size = segsize;
                m_insert_block(&m->seg[bs], 0, b);
            }
            bi = 0;
            li++;
        }
    }
    while (li < nlog && log[li].kind == 2) freed_log[nfreed++] = log[li++].ptr;
    t_expect(li == nlog, "the allocator made %d raw calls the model did not expect", nlog - li);
    qsort(released, (size_t)nrel, sizeof *released, cmp_ptr);
    qsort(freed_log, (size_t)nfreed, sizeof *freed_log, cmp_ptr);
    t_expect(nrel == nfreed && (nrel == 0 || !memcmp(released, freed_log, (size_t)nrel * sizeof *released)),
             "released segments differ: model %d, allocator %d", nrel, nfreed);
    if (bs < 0) { m->ooms++; return NULL; }
    {
        mseg *g = &m->seg[bs];
        size_t rest = g->b[bi].size - size;
        if (pool == 0 ? rest >= 512 : rest > MiB) {
            mblock r = g->b[bi];
            r.off += size;
            r.size = rest;
            g->b[bi].size = size;
            m_insert_block(g, bi + 1, r);
        }
        g->b[bi].state = 1;
        g->b[bi].req = req;
        g->b[bi].nuse = 0;
        return g->base + g->b[bi].off;
    }
}

static mblock *m_find(model *m, const void *p, mseg **segout)
{
    for (int s = 0; s < m->nseg; s++)
        for (int i = 0; i < m->seg[s].nb; i++)
            if (m->seg[s].base + m->seg[s].b[i].off == (const char *)p) {
                if (segout) *segout = &m->seg[s];
                return &m->seg[s].b[i];
            }
    return NULL;
}

static void m_free(model *m, const void *p, int first_ev, int last_ev)
{
    mseg *g = NULL;
    mblock *b = m_find(m, p, &g);
    if (!t_expect(b && b->state == 1, "model: freeing a non-live block")) return;
    t_expect(last_ev - first_ev == (m->has_events ? b->nuse : 0), "free recorded %d events, model expected %d",
             last_ev - first_ev, b->nuse);
    if (m->has_events && b->nuse) {
        b->state = 2;
        b->nev = 0;
        for (int k = first_ev; k < last_ev && b->nev < 8; k++) b->ev[b->nev++] = k;
    } else {
        m_free_block(g, (int)(b - g->b));
    }
}

static void m_record_stream(model *m, const void *p, int stream)
{
    mseg *g = NULL;
    mblock *b = m_find(m, p, &g);
    if (!b || b->state != 1 || stream == g->stream || !m->has_events) return;
    for (int k = 0; k < b->nuse; k++) if (b->use[k] == stream) return;
    if (b->nuse < 8) b->use[b->nuse++] = stream;
}

/* Compare every statistic of both pools with sums over the model. */
static void m_compare_stats(model *m, const sc_allocator *a, const char *when)
{
    int64_t v[3][8]; /* per stat type: allocated, reserved, active, requested, segments, allocs, active n, inactive split */
    int64_t split_bytes[3];
    sc_memory_stats s = sc_allocator_stats(a);
    memset(v, 0, sizeof v);
    memset(split_bytes, 0, sizeof split_bytes);
    for (int i = 0; i < m->nseg; i++) {
        const mseg *g = &m->seg[i];
        int t = g->pool ? SC_STAT_LARGE_POOL : SC_STAT_SMALL_POOL;
        for (int k = 0; k < 2; k++) {
            int tt = k ? t : SC_STAT_ALL;
            v[tt][1] += (int64_t)g->size;
            v[tt][4]++;
            for (int j = 0; j < g->nb; j++) {
                const mblock *b = &g->b[j];
                if (b->state == 1) { v[tt][0] += (int64_t)b->size; v[tt][5]++; }
                if (b->state) { v[tt][2] += (int64_t)b->size; v[tt][3] += (int64_t)b->req; v[tt][6]++; }
                if (!b->state && g->nb > 1) { v[tt][7]++; split_bytes[tt] += (int64_t)b->size; }
            }
        }
    }
    for (int t = 0; t < 3; t++) {
        int64_t got[8];
        got[0] = s.allocated_bytes[t].current; got[1] = s.reserved_bytes[t].current;
        got[2] = s.active_bytes[t].current; got[3] = s.requested_bytes[t].current;
        got[4] = s.segment[t].current; got[5] = s.allocation[t].current; got[6] = s.active[t].current;
        got[7] = s.inactive_split[t].current;
        for (int k = 0; k < 8; k++)
            t_expect(got[k] == v[t][k], "%s: stat %d of type %d is %lld, model %lld", when, k, t, (long long)got[k],
                     (long long)v[t][k]);
        t_expect(s.inactive_split_bytes[t].current == split_bytes[t], "%s: inactive split bytes", when);
    }
    for (int k = 0; k < 4; k++) if (v[0][k] > m->peak[k]) m->peak[k] = v[0][k];
    t_expect(s.allocated_bytes[0].peak == m->peak[0] && s.reserved_bytes[0].peak == m->peak[1] &&
             s.active_bytes[0].peak == m->peak[2] && s.requested_bytes[0].peak == m->peak[3],
             "%s: peaks differ", when);
    t_expect(s.alloc_retries == m->retries && s.num_ooms == m->ooms, "%s: retries %lld/%lld ooms %lld/%lld", when,
             (long long)s.alloc_retries, (long long)m->retries, (long long)s.num_ooms, (long long)m->ooms);
    if (m->cap) t_expect((uint64_t)s.reserved_bytes[0].current <= m->cap, "%s: reserved above the cap", when);
}

/* ---- the random run ---- */
typedef struct live { char *p; size_t req, size; int stream; unsigned char mark; } live;

static size_t rand_size(sc_rng *r)
{
    uint64_t u = sc_rng_u64(r), k = u % 100;
    size_t odd = (size_t)(sc_rng_u64(r) % 1024);
    if (k < 8) return (size_t)(u >> 40) % 1100;                      /* tiny, incl. 0 and ~512 */
    if (k < 50) return (size_t)(sc_rng_u64(r) % (MiB - 1)) + 1;      /* small pool */
    if (k < 60) return MiB - 512 + odd;                               /* around the pool boundary */
    if (k < 80) return MiB + (size_t)(sc_rng_u64(r) % (9 * MiB));    /* 1..10 MiB: 20 MiB segments */
    if (k < 88) return 10 * MiB - 1024 + odd;                         /* around kMinLargeAlloc */
    return 10 * MiB + (size_t)(sc_rng_u64(r) % (26 * MiB));          /* 10..36 MiB */
}

static void random_run(const char *name, uint64_t seed, int ops, size_t cap, size_t limit, int events, int nstreams)
{
    env *e = env_new(cap, limit, events);
    model *m = (model *)calloc(1, sizeof *m);
    sc_rng r = sc_rng_seed(seed);
    live *lv = (live *)calloc(4096, sizeof *lv);
    unsigned char *done = (unsigned char *)calloc(EV_MAX, 1);
    int nlv = 0, nalloc = 0, nooms = 0, nevents_done = 0;
    char when[64];
    t_begin(name);
    m->cap = cap;
    m->has_events = events != 0;
    m->has_sync = events == 1;
    for (int op = 0; op < ops && !g_bad; op++) {
        uint64_t k = sc_rng_u64(&r) % 100;
        int64_t resv = sc_allocator_stats(&e->a).reserved_bytes[0].current;
        int want_free = nlv > 0 && (k < 38 || nlv >= 4000 || (!cap && !limit && resv > (int64_t)(1536 * MiB) && k < 70));
        snprintf(when, sizeof when, "op %d", op);
        e->raw->nlog = 0;
        if (want_free) {
            int i = (int)(sc_rng_u64(&r) % (uint64_t)nlv), first = e->ev->n;
            live l = lv[i];
            t_expect(l.p[0] == (char)l.mark && l.p[l.size - 1] == (char)(l.mark ^ 0xff),
                     "%s: block %p was overwritten (overlap)", when, (void *)l.p);
            sc_allocator_free(&e->a, l.p);
            m_free(m, l.p, first, e->ev->n);
            lv[i] = lv[--nlv];
            t_expect(e->raw->nlog == 0, "%s: free called the raw allocator", when);
        } else if (k < 88) {
            size_t req = rand_size(&r);
            int stream = (int)(sc_rng_u64(&r) % (uint64_t)nstreams);
            void *p = NULL;
            char tag[32], *pred;
            sc_result res;
            snprintf(tag, sizeof tag, "op %d", op);
            /* the allocator may synchronize events during the call: the model must see them as
               they were when it began */
            memcpy(done, e->ev->done, (size_t)e->ev->n);
            res = sc_allocator_alloc(&e->a, &p, req, stream, tag);
            pred = m_alloc(m, done, e->raw->log, e->raw->nlog, req, stream, limit);
            if (res == SC_SUCCESS) {
                size_t sz;
                nalloc++;
                t_expect(p == (void *)pred, "%s: alloc(%zu, stream %d) gave %p, model %p", when, req, stream, p,
                         (void *)pred);
                sz = m_round(req);
                lv[nlv].p = (char *)p; lv[nlv].req = req; lv[nlv].stream = stream;
                lv[nlv].size = sz;
                {   /* the block's real size may exceed the rounded size (no split); use the rounded one */
                    lv[nlv].mark = (unsigned char)(op * 7 + 1);
                    lv[nlv].p[0] = (char)lv[nlv].mark;
                    lv[nlv].p[sz - 1] = (char)(lv[nlv].mark ^ 0xff);
                }
                nlv++;
            } else {
                nooms++;
                t_expect(res == SC_ERROR_OUT_OF_MEMORY && p == NULL && pred == NULL,
                         "%s: alloc(%zu) failed (%d) but the model predicted %p", when, req, (int)res, (void *)pred);
                t_expect(strstr(sc_last_error(), "out of memory") != NULL, "%s: OOM message: %s", when, sc_last_error());
            }
        } else if (k < 93) {
            if (nlv) {
                int i = (int)(sc_rng_u64(&r) % (uint64_t)nlv), s = (int)(sc_rng_u64(&r) % (uint64_t)(nstreams + 1));
                sc_allocator_record_stream(&e->a, lv[i].p, s);
                m_record_stream(m, lv[i].p, s);
            }
        } else if (k < 99) {
            /* some running events complete */
            for (int t = 0; t < 4 && e->ev->n; t++) {
                int id = (int)(sc_rng_u64(&r) % (uint64_t)e->ev->n);
                if (!e->ev->done[id]) { e->ev->done[id] = 1; nevents_done++; }
            }
        } else {
            char *released[MSEG_MAX], *freed_log[MSEG_MAX];
            int nrel, nfreed = 0;
            sc_allocator_empty_cache(&e->a);
            memcpy(done, e->ev->done, (size_t)e->ev->n);
            nrel = m_release(m, done, released, 0);
            for (int i = 0; i < e->raw->nlog; i++) if (e->raw->log[i].kind == 2) freed_log[nfreed++] = e->raw->log[i].ptr;
            qsort(released, (size_t)nrel, sizeof *released, cmp_ptr);
            qsort(freed_log, (size_t)nfreed, sizeof *freed_log, cmp_ptr);
            t_expect(nrel == nfreed && nfreed == e->raw->nlog &&
                     (nrel == 0 || !memcmp(released, freed_log, (size_t)nrel * sizeof *released)),
                     "%s: empty_cache released %d segments, model %d", when, nfreed, nrel);
        }
        m_compare_stats(m, &e->a, when);
        t_expect((int64_t)e->raw->outstanding == sc_allocator_stats(&e->a).reserved_bytes[0].current,
                 "%s: raw outstanding differs from reserved", when);
        if (op % 97 == 0) expect_valid(e);
        if (op % 499 == 0) {
            /* independent geometry: live blocks disjoint and inside raw segments */
            char **ps = (char **)malloc((size_t)(nlv + 1) * sizeof *ps);
            for (int i = 0; i < nlv; i++) ps[i] = lv[i].p;
            qsort(ps, (size_t)nlv, sizeof *ps, cmp_ptr);
            for (int i = 0; i < nlv; i++) {
                live *l = NULL;
                int inside = 0;
                for (int j = 0; j < nlv; j++) if (lv[j].p == ps[i]) l = &lv[j];
                if (i + 1 < nlv) t_expect(l->p + l->size <= ps[i + 1], "%s: live blocks overlap", when);
                for (int j = 0; j < e->raw->nlive; j++)
                    if (l->p >= e->raw->live_ptr[j] && l->p + l->size <= e->raw->live_ptr[j] + e->raw->live_size[j]) inside = 1;
                t_expect(inside, "%s: live block outside every segment", when);
            }
            free(ps);
        }
    }
    /* free everything: every segment is one free block; empty_cache gives it all back */
    for (int i = 0; i < nlv; i++) {
        int first = e->ev->n;
        sc_allocator_free(&e->a, lv[i].p);
        m_free(m, lv[i].p, first, e->ev->n);
    }
    for (int i = 0; i < e->ev->n; i++) e->ev->done[i] = 1;
    {
        void *p = NULL;
        e->raw->nlog = 0;
        /* one small allocation processes the events; then free it */
        if (sc_allocator_alloc(&e->a, &p, 1, 0, "flush") == SC_SUCCESS) {
            char *pred = m_alloc(m, e->ev->done, e->raw->log, e->raw->nlog, 1, 0, limit);
            t_expect(p == (void *)pred, "flush allocation differs");
            sc_allocator_free(&e->a, p);
            m_free(m, p, e->ev->n, e->ev->n);
        }
    }
    m_compare_stats(m, &e->a, "after all frees");
    for (int i = 0; i < m->nseg; i++)
        t_expect(m->seg[i].nb == 1 && m->seg[i].b[0].state == 0, "after all frees a segment is not one free block");
    {
        sc_memory_stats s = sc_allocator_stats(&e->a);
        t_expect(s.allocated_bytes[0].current == 0 && s.requested_bytes[0].current == 0 &&
                 s.active_bytes[0].current == 0 && s.inactive_split[0].current == 0 &&
                 s.allocation[0].current == 0, "after all frees: stats not zero");
        expect_valid(e);
        sc_allocator_empty_cache(&e->a);
        s = sc_allocator_stats(&e->a);
        t_expect(s.reserved_bytes[0].current == 0 && s.segment[0].current == 0 && e->raw->outstanding == 0,
                 "empty_cache left %lld bytes in %lld segments", (long long)s.reserved_bytes[0].current,
                 (long long)s.segment[0].current);
        if (getenv("VERBOSE"))
            printf("  %s: %d allocations, %d OOMs, %lld retries, %d events completed, peak reserved %.1f MiB\n", name,
                   nalloc, nooms, (long long)s.alloc_retries, nevents_done, (double)s.reserved_bytes[0].peak / MiB);
        t_expect(nalloc > ops / 3, "only %d allocations succeeded", nalloc);
        if (cap || limit) t_expect(nooms > 0 && s.alloc_retries > 0, "capped run saw no OOM or retry");
    }
    for (int i = 0; i < m->nseg; i++) free(m->seg[i].b);
    free(m);
    free(lv);
    free(done);
    env_free(e);
    t_end();
}

int main(void)
{
    test_sizes();
    test_best_fit_and_merge();
    test_record_stream();
    test_oom();
    test_reports();
    test_misc();
    random_run("random_uncapped_sync", 1, 10000, 0, 0, 0, 3);
    random_run("random_cap64_events_sync", 2, 10000, 64 * MiB, 0, 1, 3);
    random_run("random_cap200_events_query_only", 3, 10000, 200 * MiB, 0, 2, 4);
    random_run("random_raw_limit48_cap60_events", 4, 10000, 60 * MiB, 48 * MiB, 1, 2);
    random_run("random_cap40_one_stream", 5, 10000, 40 * MiB, 0, 0, 1);
    random_run("random_uncapped_events_many_streams", 6, 10000, 0, 0, 2, 6);
    random_run("random_cap600_events_sync", 7, 10000, 600 * MiB, 0, 1, 2);
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
