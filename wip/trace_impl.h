/* ---- tracing: spans, steps, memory events, statistics, writers ---- */
#include <time.h>
#ifdef __linux__
#include <fcntl.h>
#include <unistd.h>
#endif
#ifdef _WIN32
#include <direct.h>
#else
#include <sys/stat.h>
#include <sys/types.h>
#endif

/* Strict -std=c11 hides the POSIX clocks in <time.h>, but glibc still exports
   clock_gettime and CLOCK_MONOTONIC is 1 in the Linux ABI, so declare what we use. */
#if defined(__linux__) && !defined(CLOCK_MONOTONIC)
#ifdef __cplusplus
extern "C"
#endif
int clock_gettime(int clk, struct timespec *ts);
#define SC__TRACE_CLOCK 1
#elif defined(CLOCK_MONOTONIC)
#define SC__TRACE_CLOCK CLOCK_MONOTONIC
#endif

static int64_t sc__trace_now_ns(void)
{
    struct timespec ts;
#ifdef SC__TRACE_CLOCK
    clock_gettime(SC__TRACE_CLOCK, &ts);
#else
    timespec_get(&ts, TIME_UTC); /* no monotonic clock known here: the best C11 offers */
#endif
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Grow an array to hold `need` elements (doubling). Returns the (possibly moved) array, or
   NULL with *cap untouched when memory ran out; the old array then stays valid. */
static void *sc__trace_grow(void *p, int64_t *cap, int64_t need, size_t elem)
{
    if (need <= *cap) return p;
    int64_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = SC_REALLOC(p, (size_t)c * elem);
    if (q) *cap = c;
    return q;
}

/* ---- CPU resident set size ---- */
#ifdef __linux__
/* Resident pages from /proc/<self>/statm: the second number. Kept open, so one sample costs
   an lseek and a read. */
static int64_t sc__trace_statm(int fd, int64_t page)
{
    char buf[128];
    if (fd < 0 || lseek(fd, 0, SEEK_SET) != 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n <= 0) return 0;
    buf[n] = 0;
    char *e;
    strtoll(buf, &e, 10);
    return strtoll(e, NULL, 10) * page;
}

static int64_t sc__trace_page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? p : 4096;
}

/* A "Key:   123 kB" line of /proc/self/status, in bytes (0 when absent). */
static int64_t sc__trace_status_bytes(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    size_t kl = strlen(key);
    int64_t v = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') { v = strtoll(line + kl + 1, NULL, 10) * 1024; break; }
    fclose(f);
    return v;
}

/* Writing "5" to clear_refs resets VmHWM to the current RSS, so VmHWM read later is the
   peak since this call (Linux >= 4.0). Returns 1 on success. */
static int sc__trace_clear_refs(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY);
    if (fd < 0) return 0;
    int ok = write(fd, "5", 1) == 1;
    close(fd);
    return ok;
}
#endif

SCDEF int64_t sc_cpu_rss_bytes(void)
{
#ifdef __linux__
    int fd = open("/proc/self/statm", O_RDONLY);
    int64_t r = sc__trace_statm(fd, sc__trace_page_size());
    if (fd >= 0) close(fd);
    return r;
#else
    return 0;
#endif
}

SCDEF int64_t sc_cpu_hwm_bytes(void)
{
#ifdef __linux__
    return sc__trace_status_bytes("VmHWM");
#else
    return 0;
#endif
}

/* One RSS sample through the tracer's open statm; also feeds the step's sampled maximum. */
static int64_t sc__trace_rss_sample(sc_tracer *tr)
{
#ifdef __linux__
    int64_t r = sc__trace_statm(tr->statm_fd, tr->page_size);
#else
    int64_t r = 0;
#endif
    if (tr->in_step && r > tr->step_rss_max) tr->step_rss_max = r;
    return r;
}

/* ---- phases ---- */
SCDEF const char *sc_phase_name(sc_phase p)
{
    static const char *names[SC_PHASE_COUNT] = {"fwd", "bwd", "recompute", "opt",
                                                "h2d", "d2h", "loss", "other"};
    return (int)p >= 0 && (int)p < SC_PHASE_COUNT ? names[p] : "?";
}

/* ---- init / uninit ---- */
SCDEF sc_result sc_tracer_init(sc_tracer *tr, const sc_tracer_config *cfg)
{
    if (!tr) return SC_SUCCESS;
    memset(tr, 0, sizeof *tr);
    tr->statm_fd = -1; /* so that uninit after a failed init closes nothing */
    if (cfg) tr->cfg = *cfg;
    if (tr->cfg.warmup_steps == 0) tr->cfg.warmup_steps = 1;
    if (tr->cfg.warmup_steps < 0) tr->cfg.warmup_steps = 0;
    if (tr->cfg.max_spans <= 0) tr->cfg.max_spans = (int64_t)1 << 20;
    if (tr->cfg.max_mem_rows <= 0) tr->cfg.max_mem_rows = (int64_t)1 << 20;
    if ((tr->cfg.event_record == NULL) != (tr->cfg.event_elapsed_ms == NULL))
        return sc__fail(SC_ERROR_INVALID_ARGS,
                        "sc_tracer_init: set both event_record and event_elapsed_ms, or neither");
    tr->gpu = tr->cfg.event_record != NULL;
    tr->t_init_ns = sc__trace_now_ns();
#ifdef __linux__
    tr->statm_fd = open("/proc/self/statm", O_RDONLY);
    tr->page_size = sc__trace_page_size();
#endif
    if (tr->cfg.no_clear_refs) tr->clear_refs_ok = -1;
    return SC_SUCCESS;
}

SCDEF void sc_tracer_uninit(sc_tracer *tr)
{
    if (!tr) return;
    /* a step left open still owns events */
    if (tr->gpu && tr->in_step && tr->cfg.event_destroy) {
        for (int64_t i = tr->cur.span_first; i < tr->nspans; i++) {
            if (tr->spans[i].ev0) tr->cfg.event_destroy(tr->spans[i].ev0, tr->cfg.user);
            if (tr->spans[i].ev1) tr->cfg.event_destroy(tr->spans[i].ev1, tr->cfg.user);
        }
        if (tr->step_ev) tr->cfg.event_destroy(tr->step_ev, tr->cfg.user);
    }
#ifdef __linux__
    if (tr->statm_fd >= 0) close(tr->statm_fd);
#endif
    for (int64_t i = 0; i < tr->ntags; i++) SC_FREE(tr->tags[i]);
    SC_FREE(tr->tags);
    SC_FREE(tr->tag_hash);
    SC_FREE(tr->spans);
    SC_FREE(tr->open);
    SC_FREE(tr->steps);
    SC_FREE(tr->layer_ms);
    SC_FREE(tr->layer_seen);
    SC_FREE(tr->rows);
    memset(tr, 0, sizeof *tr);
    tr->statm_fd = -1;
}

/* ---- steps ---- */
SCDEF sc_result sc_tracer_step_begin(sc_tracer *tr, int epoch, int step)
{
    if (!tr) return SC_SUCCESS;
    if (tr->in_step) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_tracer_step_begin: step already open");
    /* reserve the step's row now so that step_end cannot run out of memory */
    void *p = sc__trace_grow(tr->steps, &tr->cap_steps, tr->nsteps + 1, sizeof *tr->steps);
    if (!p) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "sc_tracer_step_begin: out of memory");
    tr->steps = (sc_step_metrics *)p;
    memset(&tr->cur, 0, sizeof tr->cur);
    tr->cur.epoch = epoch;
    tr->cur.step = step;
    tr->cur.global_step = tr->nsteps;
    tr->cur.span_first = tr->nspans;
    tr->cur.layer_first = tr->nlayer_ms;
    tr->nopen = 0;
    tr->step_events = 0;
#ifdef __linux__
    if (tr->clear_refs_ok >= 0) tr->clear_refs_ok = sc__trace_clear_refs() ? 1 : -1;
    tr->step_hwm_begin = tr->clear_refs_ok == 1 ? 0 : sc__trace_status_bytes("VmHWM");
#endif
    tr->in_step = 1;
    tr->step_rss_max = 0;
    sc__trace_rss_sample(tr);
    /* the clock starts after the tracer's own housekeeping */
    tr->cur.t0_ns = sc__trace_now_ns();
    tr->step_ev = tr->gpu ? tr->cfg.event_record(0, tr->cfg.user) : NULL;
    return SC_SUCCESS;
}

/* Event time in ms, or -1 when the callback gave nothing usable. */
static double sc__trace_elapsed(sc_tracer *tr, void *a, void *b)
{
    if (!a || !b) return -1;
    double ms = tr->cfg.event_elapsed_ms(a, b, tr->cfg.user);
    return ms >= 0 && ms < 1e12 ? ms : -1; /* also rejects NaN */
}

SCDEF sc_result sc_tracer_step_end(sc_tracer *tr, double loss, double tokens,
                                   const sc_tracer_mem *mem)
{
    if (!tr) return SC_SUCCESS;
    if (!tr->in_step) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_tracer_step_end: no step open");
    if (tr->cfg.device_sync) tr->cfg.device_sync(tr->cfg.user);
    int64_t t_end = sc__trace_now_ns();
    sc_step_metrics *m = &tr->cur;

    /* close what is still open */
    for (int64_t k = 0; k < tr->nopen; k++) {
        sc__trace_span *s = &tr->spans[tr->open[k]];
        s->t1_ns = t_end;
        if (tr->gpu) s->ev1 = tr->cfg.event_record(s->stream, tr->cfg.user);
        s->open = 0;
    }
    tr->nopen = 0;

    /* CPU memory: current and the step's true peak */
    m->cpu_rss = sc__trace_rss_sample(tr);
    m->cpu_peak_rss = tr->step_rss_max;
#ifdef __linux__
    {
        int64_t hwm = sc__trace_status_bytes("VmHWM");
        if (tr->clear_refs_ok == 1) {
            m->cpu_peak_method = 1;
            tr->any_clear_refs = 1;
            if (hwm > m->cpu_peak_rss) m->cpu_peak_rss = hwm;
        } else {
            /* a lifetime peak raised during this step was reached in this step */
            m->cpu_peak_method = 2;
            tr->any_samples = 1;
            if (hwm > tr->step_hwm_begin && hwm > m->cpu_peak_rss) m->cpu_peak_rss = hwm;
        }
    }
#endif

    /* resolve times: GPU events once per step, here; CPU clock otherwise */
    int64_t nl = m->num_layers;
    double *cells = nl ? tr->layer_ms + m->layer_first : NULL;
    if (nl) memset(cells, 0, sizeof *cells * (size_t)(nl * SC_PHASE_COUNT));
    for (int64_t i = m->span_first; i < tr->nspans; i++) {
        sc__trace_span *s = &tr->spans[i];
        s->ts_ms = (double)(s->t0_ns - tr->t_init_ns) / 1e6;
        s->dur_ms = (double)(s->t1_ns - s->t0_ns) / 1e6;
        if (tr->gpu) {
            double dur = sc__trace_elapsed(tr, s->ev0, s->ev1);
            double off = sc__trace_elapsed(tr, tr->step_ev, s->ev0);
            if (dur >= 0) s->dur_ms = dur;
            if (off >= 0) s->ts_ms = (double)(m->t0_ns - tr->t_init_ns) / 1e6 + off;
            if (tr->cfg.event_destroy) {
                if (s->ev0) tr->cfg.event_destroy(s->ev0, tr->cfg.user);
                if (s->ev1) tr->cfg.event_destroy(s->ev1, tr->cfg.user);
            }
            s->ev0 = s->ev1 = NULL;
        }
        if (s->counts_phase) m->phase_ms[s->phase] += s->dur_ms;
        if (s->counts_layer) {
            cells[(int64_t)s->layer * SC_PHASE_COUNT + s->phase] += s->dur_ms;
            tr->layer_seen[(int64_t)s->layer * SC_PHASE_COUNT + s->phase] = 1;
        }
    }
    if (tr->step_ev && tr->cfg.event_destroy) tr->cfg.event_destroy(tr->step_ev, tr->cfg.user);
    tr->step_ev = NULL;

    m->wall_ms = (double)(t_end - m->t0_ns) / 1e6;
    m->cum_wall_ms = (tr->nsteps ? tr->steps[tr->nsteps - 1].cum_wall_ms : 0) + m->wall_ms;
    m->loss = loss;
    m->tokens = tokens;
    m->tps = m->wall_ms > 0 ? tokens / (m->wall_ms / 1000.0) : 0;
    if (mem) m->gpu = *mem;
    tr->nlayer_ms = m->layer_first + nl * SC_PHASE_COUNT;

    /* keep at most max_spans for the trace, dropping from the newest step's tail */
    int64_t keep = tr->cfg.max_spans > m->span_first ? tr->cfg.max_spans : m->span_first;
    if (tr->nspans > keep) {
        tr->spans_dropped += tr->nspans - keep;
        tr->nspans = keep;
    }
    m->span_count = tr->nspans - m->span_first;
    tr->steps[tr->nsteps++] = *m;
    tr->in_step = 0;
    tr->step_events = 0;
    return SC_SUCCESS;
}

/* ---- spans ---- */
#define SC__TRACE_MAX_LAYER 65536

SCDEF int sc_tracer_span_begin(sc_tracer *tr, const char *name, sc_phase phase, int layer,
                               int stream)
{
    if (!tr || !tr->in_step) return -1;
    if ((int)phase < 0 || (int)phase >= SC_PHASE_COUNT) phase = SC_PHASE_OTHER;
    if (layer < -1 || layer >= SC__TRACE_MAX_LAYER) layer = -1;
    int64_t id = tr->nspans - tr->cur.span_first;
    if (id >= INT32_MAX) return -1;
    /* reserve everything first so a failure leaves the tracer unchanged */
    void *p = sc__trace_grow(tr->spans, &tr->cap_spans, tr->nspans + 1, sizeof *tr->spans);
    if (!p) { tr->spans_dropped++; return -1; }
    tr->spans = (sc__trace_span *)p;
    p = sc__trace_grow(tr->open, &tr->cap_open, tr->nopen + 1, sizeof *tr->open);
    if (!p) { tr->spans_dropped++; return -1; }
    tr->open = (int *)p;
    if (layer >= tr->cur.num_layers) {
        int64_t need = tr->cur.layer_first + (int64_t)(layer + 1) * SC_PHASE_COUNT;
        p = sc__trace_grow(tr->layer_ms, &tr->cap_layer_ms, need, sizeof *tr->layer_ms);
        if (!p) { tr->spans_dropped++; return -1; }
        tr->layer_ms = (double *)p;
        if (layer >= tr->max_layers) {
            int64_t old = tr->cap_seen;
            p = sc__trace_grow(tr->layer_seen, &tr->cap_seen, (int64_t)(layer + 1) * SC_PHASE_COUNT, 1);
            if (!p) { tr->spans_dropped++; return -1; }
            tr->layer_seen = (unsigned char *)p;
            memset(tr->layer_seen + old, 0, (size_t)(tr->cap_seen - old));
            tr->max_layers = layer + 1;
        }
        tr->cur.num_layers = layer + 1;
    }

    int64_t idx = tr->nspans++;
    sc__trace_span *s = &tr->spans[idx];
    memset(s, 0, sizeof *s);
    if (name) {
        size_t n = strlen(name);
        if (n >= SC_TRACER_NAME_LEN) { /* truncate, but never inside a UTF-8 sequence */
            n = SC_TRACER_NAME_LEN - 1;
            while (n > 0 && ((unsigned char)name[n] & 0xC0) == 0x80) n--;
        }
        memcpy(s->name, name, n);
        s->name[n] = 0;
    }
    s->phase = (int)phase;
    s->layer = layer;
    s->stream = stream;
    s->open = 1;
    s->parent = -1;
    for (int64_t k = tr->nopen - 1; k >= 0; k--)
        if (tr->spans[tr->open[k]].stream == stream) { s->parent = tr->open[k]; break; }
    /* the nesting rule (see trace_decl.h), decided once here */
    s->counts_phase = 1;
    s->counts_layer = layer >= 0;
    for (int a = s->parent; a >= 0; a = tr->spans[a].parent) {
        if (tr->spans[a].phase != s->phase) continue;
        s->counts_phase = 0;
        if (tr->spans[a].layer == layer) s->counts_layer = 0;
    }
    tr->open[tr->nopen++] = (int)idx;
    int known = 0;
    for (int k = 0; k < tr->nstreams; k++) known |= tr->streams[k] == stream;
    if (!known && tr->nstreams < (int)(sizeof tr->streams / sizeof tr->streams[0]))
        tr->streams[tr->nstreams++] = stream;
    if (tr->clear_refs_ok != 1) sc__trace_rss_sample(tr); /* only the fallback needs samples */
    s->t0_ns = sc__trace_now_ns();
    if (tr->gpu) s->ev0 = tr->cfg.event_record(stream, tr->cfg.user);
    return (int)id;
}

SCDEF void sc_tracer_span_end(sc_tracer *tr, int id)
{
    if (!tr || !tr->in_step || id < 0) return;
    int64_t idx = tr->cur.span_first + id;
    if (idx >= tr->nspans || !tr->spans[idx].open) return;
    sc__trace_span *s = &tr->spans[idx];
    if (tr->gpu) s->ev1 = tr->cfg.event_record(s->stream, tr->cfg.user);
    s->t1_ns = sc__trace_now_ns();
    s->open = 0;
    /* usually the top of the stack, but spans on different streams may end out of order */
    for (int64_t k = tr->nopen - 1; k >= 0; k--)
        if (tr->open[k] == (int)idx) {
            memmove(tr->open + k, tr->open + k + 1, sizeof *tr->open * (size_t)(tr->nopen - k - 1));
            tr->nopen--;
            break;
        }
    if (tr->clear_refs_ok != 1) sc__trace_rss_sample(tr);
}

SCDEF void sc_tracer_count_launches(sc_tracer *tr, int64_t n)
{
    if (!tr || !tr->in_step) return;
    if (tr->nopen) {
        sc__trace_span *s = &tr->spans[tr->open[tr->nopen - 1]];
        s->launches += n;
        tr->cur.launches[s->phase] += n;
    } else {
        tr->cur.launches[SC_PHASE_OTHER] += n;
    }
}

/* ---- memory events ---- */
static uint64_t sc__trace_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

/* Index of tag in the tag table, adding it if new; -1 for no tag or out of memory. Tags are
   interned so rows stay small and callers may pass temporary strings. */
static int sc__trace_intern(sc_tracer *tr, const char *tag)
{
    if (!tag) return -1;
    uint64_t h = sc__trace_hash(tag);
    if (tr->cap_hash) {
        for (int64_t i = (int64_t)(h & (uint64_t)(tr->cap_hash - 1));; i = (i + 1) & (tr->cap_hash - 1)) {
            int t = tr->tag_hash[i];
            if (t < 0) break;
            if (!strcmp(tr->tags[t], tag)) return t;
        }
    }
    if (tr->ntags >= INT32_MAX / 2) return -1;
    void *p = sc__trace_grow(tr->tags, &tr->cap_tags, tr->ntags + 1, sizeof *tr->tags);
    if (!p) return -1;
    tr->tags = (char **)p;
    if (2 * (tr->ntags + 1) > tr->cap_hash) { /* rebuild at half load */
        int64_t cap = tr->cap_hash ? 2 * tr->cap_hash : 64;
        int *nh = (int *)SC_MALLOC(sizeof(int) * (size_t)cap);
        if (!nh) return -1;
        for (int64_t i = 0; i < cap; i++) nh[i] = -1;
        for (int64_t t = 0; t < tr->ntags; t++) {
            int64_t i = (int64_t)(sc__trace_hash(tr->tags[t]) & (uint64_t)(cap - 1));
            while (nh[i] >= 0) i = (i + 1) & (cap - 1);
            nh[i] = (int)t;
        }
        SC_FREE(tr->tag_hash);
        tr->tag_hash = nh;
        tr->cap_hash = cap;
    }
    size_t n = strlen(tag);
    char *copy = (char *)SC_MALLOC(n + 1);
    if (!copy) return -1;
    memcpy(copy, tag, n + 1);
    int64_t i = (int64_t)(h & (uint64_t)(tr->cap_hash - 1));
    while (tr->tag_hash[i] >= 0) i = (i + 1) & (tr->cap_hash - 1);
    tr->tag_hash[i] = (int)tr->ntags;
    tr->tags[tr->ntags] = copy;
    return (int)tr->ntags++;
}

SCDEF void sc_tracer_mem_record(sc_tracer *tr, int64_t allocated, int64_t reserved,
                                int64_t delta, const char *tag)
{
    if (!tr) return;
    int64_t now = sc__trace_now_ns();
    int64_t rss = sc__trace_rss_sample(tr);
    int64_t event = tr->step_events++;
    if (tr->nrows >= tr->cfg.max_mem_rows) { tr->rows_dropped++; return; }
    void *p = sc__trace_grow(tr->rows, &tr->cap_rows, tr->nrows + 1, sizeof *tr->rows);
    if (!p) { tr->rows_dropped++; return; }
    tr->rows = (sc__trace_mem_row *)p;
    sc__trace_mem_row *r = &tr->rows[tr->nrows++];
    r->step = tr->in_step ? tr->cur.global_step : -1;
    r->event = event;
    r->t_ns = now - tr->t_init_ns;
    r->t_step_ns = now - (tr->in_step ? tr->cur.t0_ns : tr->t_init_ns);
    r->allocated = allocated;
    r->reserved = reserved;
    r->delta = delta;
    r->rss = rss;
    r->tag = sc__trace_intern(tr, tag);
}

/* ---- results ---- */
SCDEF int64_t sc_tracer_step_count(const sc_tracer *tr) { return tr ? tr->nsteps : 0; }

SCDEF const sc_step_metrics *sc_tracer_step_get(const sc_tracer *tr, int64_t i)
{
    return tr && i >= 0 && i < tr->nsteps ? &tr->steps[i] : NULL;
}

SCDEF double sc_tracer_layer_ms(const sc_tracer *tr, int64_t i, int layer, sc_phase phase)
{
    const sc_step_metrics *m = sc_tracer_step_get(tr, i);
    if (!m || layer < 0 || layer >= m->num_layers || (int)phase < 0 || (int)phase >= SC_PHASE_COUNT)
        return 0;
    return tr->layer_ms[m->layer_first + (int64_t)layer * SC_PHASE_COUNT + phase];
}

SCDEF const char *sc_tracer_peak_method(const sc_tracer *tr)
{
    if (!tr) return "none";
    if (tr->any_clear_refs && tr->any_samples) return "mixed";
    return tr->any_clear_refs ? "clear_refs" : tr->any_samples ? "samples" : "none";
}

/* ---- statistics ---- */
/* Continued fraction of the incomplete beta function (modified Lentz). */
static double sc__trace_betacf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    if (fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 100000; m++) {
        double aa = m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m));
        d = 1 + aa * d; if (fabs(d) < tiny) d = tiny;
        c = 1 + aa / c; if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        h *= d * c;
        aa = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m));
        d = 1 + aa * d; if (fabs(d) < tiny) d = tiny;
        c = 1 + aa / c; if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-16) break;
    }
    return h;
}

/* Regularized incomplete beta I_x(a, b). */
static double sc__trace_ibeta(double a, double b, double x)
{
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    /* the fraction converges fast only on this side; use the symmetry otherwise */
    if (x < (a + 1) / (a + b + 2)) return exp(lbt) * sc__trace_betacf(a, b, x) / a;
    return 1 - exp(lbt) * sc__trace_betacf(b, a, 1 - x) / b;
}

/* P(T > t) for t >= 0. Past df = 1e8 the normal tail is closer than the fraction's
   convergence (t and normal quantiles differ by ~(z^3+z)/(4 df)). */
static double sc__trace_t_upper(double t, double df)
{
    if (df > 1e8) return 0.5 * erfc(t / sqrt(2.0));
    return 0.5 * sc__trace_ibeta(df / 2, 0.5, df / (df + t * t));
}

SCDEF double sc_student_t_cdf(double t, double df)
{
    if (!(df > 0) || t != t) return NAN;
    return t >= 0 ? 1 - sc__trace_t_upper(t, df) : sc__trace_t_upper(-t, df);
}

SCDEF double sc_student_t_quantile(double p, double df)
{
    if (!(df > 0) || !(p >= 0 && p <= 1)) return NAN;
    if (p == 0.5) return 0;
    if (p == 0) return -INFINITY;
    if (p == 1) return INFINITY;
    /* solve P(T > t) = q on t > 0 by bisection: robust for every df, and the upper tail
       avoids the cancellation of 1 - cdf */
    double q = p > 0.5 ? 1 - p : p;
    double lo = 0, hi = 1;
    while (sc__trace_t_upper(hi, df) > q) {
        lo = hi;
        hi *= 2;
        if (hi > 1e300) return p > 0.5 ? INFINITY : -INFINITY;
    }
    for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (sc__trace_t_upper(mid, df) > q) lo = mid; else hi = mid;
    }
    double t = 0.5 * (lo + hi);
    return p > 0.5 ? t : -t;
}

static int sc__trace_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

SCDEF sc_stats sc_stats_compute(const double *x, int n)
{
    sc_stats s;
    s.n = n > 0 ? n : 0;
    s.mean = s.median = s.std = s.ci95 = s.min = s.max = NAN;
    if (n <= 0 || !x) return s;
    double sum = 0;
    s.min = s.max = x[0];
    for (int i = 0; i < n; i++) {
        sum += x[i];
        if (x[i] < s.min) s.min = x[i];
        if (x[i] > s.max) s.max = x[i];
    }
    s.mean = sum / n;
    double *c = (double *)SC_MALLOC(sizeof *c * (size_t)n);
    if (c) {
        memcpy(c, x, sizeof *c * (size_t)n);
        qsort(c, (size_t)n, sizeof *c, sc__trace_cmp_double);
        s.median = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
        SC_FREE(c);
    }
    if (n >= 2) {
        double ss = 0; /* two passes: no cancellation for large means */
        for (int i = 0; i < n; i++) ss += (x[i] - s.mean) * (x[i] - s.mean);
        s.std = sqrt(ss / (n - 1));
        s.ci95 = sc_student_t_quantile(0.975, n - 1) * s.std / sqrt((double)n);
    }
    return s;
}

/* The value of one step-level quantity; `what` indexes sc__trace_step_rows. */
typedef struct sc__trace_step_row { const char *name, *unit; int phase; } sc__trace_step_row;
static const sc__trace_step_row sc__trace_step_rows[] = {
    {"wall", "ms", -1}, {"fwd", "ms", SC_PHASE_FWD}, {"bwd", "ms", SC_PHASE_BWD},
    {"recompute", "ms", SC_PHASE_RECOMPUTE}, {"opt", "ms", SC_PHASE_OPT},
    {"h2d", "ms", SC_PHASE_H2D}, {"d2h", "ms", SC_PHASE_D2H}, {"loss", "ms", SC_PHASE_LOSS},
    {"other", "ms", SC_PHASE_OTHER}, {"tps", "tokens/s", -2}, {"cpu_peak_rss", "GiB", -3},
    {"gpu_peak_alloc", "GiB", -4}, {"gpu_peak_resv", "GiB", -5}, {"launches", "count", -6},
};
#define SC__TRACE_NSTEP_ROWS ((int)(sizeof sc__trace_step_rows / sizeof sc__trace_step_rows[0]))

static double sc__trace_step_value(const sc_step_metrics *m, int what)
{
    const double gib = 1073741824.0;
    int ph = sc__trace_step_rows[what].phase;
    if (ph >= 0) return m->phase_ms[ph];
    int64_t l = 0;
    switch (ph) {
    case -1: return m->wall_ms;
    case -2: return m->tps;
    case -3: return (double)m->cpu_peak_rss / gib;
    case -4: return (double)m->gpu.peak_allocated / gib;
    case -5: return (double)m->gpu.peak_reserved / gib;
    default:
        for (int p = 0; p < SC_PHASE_COUNT; p++) l += m->launches[p];
        return (double)l;
    }
}

/* Stats over post-warm-up steps of a layer cell (layer >= 0) or a step-level row. */
static sc_stats sc__trace_stats(const sc_tracer *tr, int layer, int phase, int what)
{
    int64_t first = tr ? tr->cfg.warmup_steps : 0, n = tr ? tr->nsteps - first : 0;
    if (n <= 0 || n > INT32_MAX) return sc_stats_compute(NULL, 0);
    double *x = (double *)SC_MALLOC(sizeof *x * (size_t)n);
    if (!x) return sc_stats_compute(NULL, 0);
    for (int64_t i = 0; i < n; i++)
        x[i] = layer >= 0 ? sc_tracer_layer_ms(tr, first + i, layer, (sc_phase)phase)
                          : sc__trace_step_value(&tr->steps[first + i], what);
    sc_stats s = sc_stats_compute(x, (int)n);
    SC_FREE(x);
    return s;
}

SCDEF sc_stats sc_tracer_layer_stats(const sc_tracer *tr, int layer, sc_phase phase)
{
    if (layer < 0 || (int)phase < 0 || (int)phase >= SC_PHASE_COUNT) return sc_stats_compute(NULL, 0);
    return sc__trace_stats(tr, layer, (int)phase, 0);
}

SCDEF sc_stats sc_tracer_phase_stats(const sc_tracer *tr, sc_phase phase)
{
    for (int w = 0; w < SC__TRACE_NSTEP_ROWS; w++)
        if (sc__trace_step_rows[w].phase == (int)phase) return sc__trace_stats(tr, -1, 0, w);
    return sc_stats_compute(NULL, 0);
}

/* ---- writers ---- */
static FILE *sc__trace_open(const char *path, sc_result *r)
{
    if (!path) { *r = sc__fail(SC_ERROR_INVALID_ARGS, "trace writer: NULL path"); return NULL; }
    FILE *f = fopen(path, "w");
    if (!f) *r = sc__fail(SC_ERROR_IO, "cannot open '%s' for writing: %s", path, strerror(errno));
    return f;
}

/* Close f, turning any earlier write error into a message naming the file. */
static sc_result sc__trace_close(FILE *f, const char *path)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return sc__fail(SC_ERROR_IO, "error writing '%s'", path);
    return SC_SUCCESS;
}

/* A CSV field: quoted (with "" for ") only when it holds a comma, quote or line break. */
static void sc__trace_csv_str(FILE *f, const char *s)
{
    if (!s) s = "";
    if (!strpbrk(s, ",\"\r\n")) { fputs(s, f); return; }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* A JSON string literal. */
static void sc__trace_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* JSON has no NaN or infinity: write null instead. Times (us) get ns resolution. */
static void sc__trace_json_num(FILE *f, double v)
{
    if (v == v && v - v == 0) fprintf(f, "%.9g", v);
    else fputs("null", f);
}
static void sc__trace_json_us(FILE *f, double us)
{
    if (us == us && us - us == 0) fprintf(f, "%.3f", us);
    else fputs("0", f);
}

SCDEF sc_result sc_tracer_write_step_metrics(const sc_tracer *tr, const char *path)
{
    if (!tr) return SC_SUCCESS;
    sc_result r = SC_SUCCESS;
    FILE *f = sc__trace_open(path, &r);
    if (!f) return r;
    const double gib = 1073741824.0;
    fputs("epoch,step,global_step,wall_ms,fwd_ms,bwd_ms,opt_ms,loss,tps,cpu_rss_gib,"
          "gpu_alloc_gib,gpu_resv_gib,peak_alloc_gib,peak_resv_gib,cum_wall_ms,"
          "recompute_ms,h2d_ms,d2h_ms,loss_ms,other_ms,tokens,cpu_peak_rss_gib,launches", f);
    for (int p = 0; p < SC_PHASE_COUNT; p++) fprintf(f, ",launches_%s", sc_phase_name((sc_phase)p));
    fputc('\n', f);
    for (int64_t i = 0; i < tr->nsteps; i++) {
        const sc_step_metrics *m = &tr->steps[i];
        int64_t l = 0;
        for (int p = 0; p < SC_PHASE_COUNT; p++) l += m->launches[p];
        fprintf(f, "%d,%d,%lld,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,"
                   "%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%lld",
                m->epoch, m->step, (long long)m->global_step, m->wall_ms,
                m->phase_ms[SC_PHASE_FWD], m->phase_ms[SC_PHASE_BWD], m->phase_ms[SC_PHASE_OPT],
                m->loss, m->tps, (double)m->cpu_rss / gib, (double)m->gpu.allocated / gib,
                (double)m->gpu.reserved / gib, (double)m->gpu.peak_allocated / gib,
                (double)m->gpu.peak_reserved / gib, m->cum_wall_ms,
                m->phase_ms[SC_PHASE_RECOMPUTE], m->phase_ms[SC_PHASE_H2D],
                m->phase_ms[SC_PHASE_D2H], m->phase_ms[SC_PHASE_LOSS],
                m->phase_ms[SC_PHASE_OTHER], m->tokens, (double)m->cpu_peak_rss / gib,
                (long long)l);
        for (int p = 0; p < SC_PHASE_COUNT; p++) fprintf(f, ",%lld", (long long)m->launches[p]);
        fputc('\n', f);
    }
    return sc__trace_close(f, path);
}

SCDEF sc_result sc_tracer_write_layer_metrics(const sc_tracer *tr, const char *path)
{
    if (!tr) return SC_SUCCESS;
    sc_result r = SC_SUCCESS;
    FILE *f = sc__trace_open(path, &r);
    if (!f) return r;
    /* step is the global step; epoch and the epoch's step follow at the end */
    static const sc_phase cols[] = {SC_PHASE_FWD, SC_PHASE_RECOMPUTE, SC_PHASE_BWD,
                                    SC_PHASE_H2D, SC_PHASE_D2H, SC_PHASE_OPT};
    fputs("step,layer,fwd_ms,recompute_ms,bwd_ms,h2d_ms,d2h_ms,opt_ms,epoch,epoch_step\n", f);
    for (int64_t i = 0; i < tr->nsteps; i++)
        for (int l = 0; l < tr->max_layers; l++) {
            fprintf(f, "%lld,%d", (long long)tr->steps[i].global_step, l);
            for (int c = 0; c < 6; c++) fprintf(f, ",%.9g", sc_tracer_layer_ms(tr, i, l, cols[c]));
            fprintf(f, ",%d,%d\n", tr->steps[i].epoch, tr->steps[i].step);
        }
    return sc__trace_close(f, path);
}

SCDEF sc_result sc_tracer_write_mem_trace(const sc_tracer *tr, const char *path)
{
    if (!tr) return SC_SUCCESS;
    sc_result r = SC_SUCCESS;
    FILE *f = sc__trace_open(path, &r);
    if (!f) return r;
    /* step -1: outside any step, t_ms then counts from sc_tracer_init */
    fputs("step,event,t_ms,allocated_bytes,reserved_bytes,rss_bytes,tag,delta_bytes\n", f);
    for (int64_t i = 0; i < tr->nrows; i++) {
        const sc__trace_mem_row *w = &tr->rows[i];
        fprintf(f, "%lld,%lld,%.6f,%lld,%lld,%lld,", (long long)w->step, (long long)w->event,
                (double)w->t_step_ns / 1e6, (long long)w->allocated, (long long)w->reserved,
                (long long)w->rss);
        sc__trace_csv_str(f, w->tag >= 0 ? tr->tags[w->tag] : "");
        fprintf(f, ",%lld\n", (long long)w->delta);
    }
    return sc__trace_close(f, path);
}

static void sc__trace_summary_row(FILE *f, int layer, const char *phase, sc_stats s,
                                  const char *unit, const char *method)
{
    fprintf(f, "%d,%s,%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%s,%s\n", layer, phase, s.n, s.mean,
            s.median, s.std, s.ci95, s.min, s.max, unit, method);
}

SCDEF sc_result sc_tracer_write_summary(const sc_tracer *tr, const char *path)
{
    if (!tr) return SC_SUCCESS;
    sc_result r = SC_SUCCESS;
    FILE *f = sc__trace_open(path, &r);
    if (!f) return r;
    const char *method = sc_tracer_peak_method(tr);
    /* layer >= 0: a (layer, phase) cell; layer -1: a step-level quantity in `unit` (the
       *_ms columns then hold that unit). Warm-up steps are left out. */
    fputs("layer,phase,n,mean_ms,median_ms,std_ms,ci95_ms,min_ms,max_ms,unit,cpu_peak_method\n", f);
    for (int l = 0; l < tr->max_layers; l++)
        for (int p = 0; p < SC_PHASE_COUNT; p++)
            if (tr->layer_seen[(int64_t)l * SC_PHASE_COUNT + p])
                sc__trace_summary_row(f, l, sc_phase_name((sc_phase)p),
                                      sc__trace_stats(tr, l, p, 0), "ms", method);
    for (int w = 0; w < SC__TRACE_NSTEP_ROWS; w++)
        sc__trace_summary_row(f, -1, sc__trace_step_rows[w].name, sc__trace_stats(tr, -1, 0, w),
                              sc__trace_step_rows[w].unit, method);
    return sc__trace_close(f, path);
}

/* Chrome trace-event format (chrome://tracing, Perfetto): one track per stream / thread,
   spans as complete ("X") events, steps on their own track, memory as counters. */
SCDEF sc_result sc_tracer_write_chrome_trace(const sc_tracer *tr, const char *path)
{
    if (!tr) return SC_SUCCESS;
    sc_result r = SC_SUCCESS;
    FILE *f = sc__trace_open(path, &r);
    if (!f) return r;
    const int steps_tid = 1000000;
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
    fputs("{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"slidecheck\"}}", f);
    fprintf(f, ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":\"steps\"}}", steps_tid);
    fprintf(f, ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":-1}}", steps_tid);
    for (int k = 0; k < tr->nstreams; k++)
        fprintf(f, ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":\"%s %d\"}}",
                tr->streams[k], tr->gpu ? "gpu stream" : "cpu thread", tr->streams[k]);
    for (int64_t i = 0; i < tr->nsteps; i++) {
        const sc_step_metrics *m = &tr->steps[i];
        fprintf(f, ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"name\":\"step %lld\",\"cat\":\"step\",\"ts\":",
                steps_tid, (long long)m->global_step);
        sc__trace_json_us(f, (double)(m->t0_ns - tr->t_init_ns) / 1e3);
        fputs(",\"dur\":", f);
        sc__trace_json_us(f, m->wall_ms * 1e3);
        fprintf(f, ",\"args\":{\"epoch\":%d,\"step\":%d,\"loss\":", m->epoch, m->step);
        sc__trace_json_num(f, m->loss);
        fputs(",\"tps\":", f);
        sc__trace_json_num(f, m->tps);
        fputs("}}", f);
        for (int64_t j = m->span_first; j < m->span_first + m->span_count; j++) {
            const sc__trace_span *s = &tr->spans[j];
            fprintf(f, ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"name\":", s->stream);
            sc__trace_json_str(f, s->name[0] ? s->name : sc_phase_name((sc_phase)s->phase));
            fprintf(f, ",\"cat\":\"%s\",\"ts\":", sc_phase_name((sc_phase)s->phase));
            sc__trace_json_us(f, s->ts_ms * 1e3);
            fputs(",\"dur\":", f);
            sc__trace_json_us(f, s->dur_ms * 1e3);
            fprintf(f, ",\"args\":{\"phase\":\"%s\",\"layer\":%d,\"step\":%lld,\"launches\":%lld}}",
                    sc_phase_name((sc_phase)s->phase), s->layer, (long long)m->global_step,
                    (long long)s->launches);
        }
    }
    for (int64_t i = 0; i < tr->nrows; i++) {
        const sc__trace_mem_row *w = &tr->rows[i];
        double ts = (double)w->t_ns / 1e3;
        fprintf(f, ",\n{\"ph\":\"C\",\"pid\":1,\"name\":\"gpu memory\",\"ts\":%.3f,"
                   "\"args\":{\"allocated\":%lld,\"reserved\":%lld}}",
                ts, (long long)w->allocated, (long long)w->reserved);
        fprintf(f, ",\n{\"ph\":\"C\",\"pid\":1,\"name\":\"cpu rss\",\"ts\":%.3f,\"args\":{\"rss\":%lld}}",
                ts, (long long)w->rss);
    }
    fputs("\n]}\n", f);
    return sc__trace_close(f, path);
}

/* mkdir -p */
static sc_result sc__trace_mkdir_p(const char *dir)
{
    char buf[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof buf) return sc__fail(SC_ERROR_INVALID_ARGS, "bad directory name '%s'", dir);
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char c = buf[i];
        buf[i] = 0;
#ifdef _WIN32
        int rc = _mkdir(buf);
#else
        int rc = mkdir(buf, 0777);
#endif
        if (rc != 0 && errno != EEXIST)
            return sc__fail(SC_ERROR_IO, "cannot create directory '%s': %s", buf, strerror(errno));
        buf[i] = c;
    }
    return SC_SUCCESS;
}

SCDEF sc_result sc_tracer_write_all(const sc_tracer *tr, const char *dir)
{
    if (!tr) return SC_SUCCESS;
    if (!dir) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_tracer_write_all: NULL directory");
    sc_result r = sc__trace_mkdir_p(dir);
    if (r != SC_SUCCESS) return r;
    static const char *names[] = {"step_metrics.csv", "layer_metrics.csv", "mem_trace.csv",
                                  "summary.csv", "trace.json"};
    for (int k = 0; k < 5; k++) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", dir, names[k]) >= (int)sizeof path)
            return sc__fail(SC_ERROR_INVALID_ARGS, "path too long: '%s/%s'", dir, names[k]);
        switch (k) {
        case 0: r = sc_tracer_write_step_metrics(tr, path); break;
        case 1: r = sc_tracer_write_layer_metrics(tr, path); break;
        case 2: r = sc_tracer_write_mem_trace(tr, path); break;
        case 3: r = sc_tracer_write_summary(tr, path); break;
        default: r = sc_tracer_write_chrome_trace(tr, path); break;
        }
        if (r != SC_SUCCESS) return r;
    }
    return SC_SUCCESS;
}
