/* ------------------------------------------------------------------------------------------
   Tracing: spans, per-step metrics, memory events, statistics, CSV / Chrome-trace writers

   Usage from a training loop (one thread drives the tracer; it is not thread-safe):

       sc_tracer tr; sc_tracer_config tc = {0};          // zero = defaults
       sc_tracer_init(&tr, &tc);
       for each step:
           sc_tracer_step_begin(&tr, epoch, step);
           int s = sc_tracer_span_begin(&tr, "layer", SC_PHASE_FWD, l, stream);
           ...                                            // also sc_tracer_count_launches()
           sc_tracer_span_end(&tr, s);
           sc_tracer_step_end(&tr, loss, tokens, &mem);  // mem: GPU allocator counters or NULL
       sc_tracer_write_all(&tr, "runs/x");
       sc_tracer_uninit(&tr);

   Every function accepts a NULL tracer and returns at once, so tracing off costs one branch.

   Timing. Without event callbacks spans are timed with the monotonic CPU clock. With
   event_record + event_elapsed_ms set (GPU mode) each span records one event at begin and
   one at end on its stream; nothing is synchronised per span: all events of a step are
   resolved in sc_tracer_step_end (event_elapsed_ms may block there until they complete)
   and then destroyed. The step's wall_ms is always the CPU monotonic clock from step_begin
   to step_end; set device_sync so that it includes the GPU work still queued.

   Nesting rule (phase totals). A span's parent is the innermost span still open on the
   same stream when it begins. A span is added to its phase total only if no ancestor has
   the same phase; it is added to its (layer, phase) cell only if layer >= 0 and no ancestor
   has the same phase and the same layer. So FWD "model" > FWD "layer 3" > FWD "attn"
   counts the outer span once in fwd_ms and "layer 3" once in layer 3's fwd cell. Phases
   are inclusive: a RECOMPUTE span inside a BWD span counts in both recompute_ms and
   bwd_ms (bwd_ms - recompute_ms is then the backward time proper).

   Spans begun outside a step are ignored (id -1). Span names are copied (truncated to
   SC_TRACER_NAME_LEN-1 bytes), so any temporary string will do. Span ids are valid until
   the step ends; spans still open at step_end are closed there.
   ------------------------------------------------------------------------------------------ */
typedef enum sc_phase {
    SC_PHASE_FWD = 0,
    SC_PHASE_BWD,
    SC_PHASE_RECOMPUTE,
    SC_PHASE_OPT,
    SC_PHASE_H2D,
    SC_PHASE_D2H,
    SC_PHASE_LOSS,
    SC_PHASE_OTHER,
    SC_PHASE_COUNT
} sc_phase;

/* "fwd", "bwd", "recompute", "opt", "h2d", "d2h", "loss", "other"; "?" when out of range. */
SCDEF const char *sc_phase_name(sc_phase p);

#define SC_TRACER_NAME_LEN 32

typedef struct sc_tracer_config {
    int warmup_steps;      /* first steps left out of summary.csv; 0 = 1, negative = none */
    int64_t max_spans;     /* spans kept for trace.json over the run; 0 = 1<<20 (the current
                              step's spans are always kept for its totals) */
    int64_t max_mem_rows;  /* memory-event rows kept; 0 = 1<<20; the rest are counted */
    int no_clear_refs;     /* 1: never write /proc/self/clear_refs (it resets the process's
                              VmHWM); per-step CPU peaks then come from samples */
    /* GPU timing (all NULL = CPU clock). event_destroy and device_sync are optional. */
    void *(*event_record)(int stream, void *user);
    float (*event_elapsed_ms)(void *ev_start, void *ev_end, void *user);
    void (*event_destroy)(void *ev, void *user);
    void (*device_sync)(void *user);   /* called at step_end before the wall clock stops */
    void *user;
} sc_tracer_config;

/* GPU memory counters at step end (the allocator's view), in bytes. */
typedef struct sc_tracer_mem {
    int64_t allocated, reserved;            /* current */
    int64_t peak_allocated, peak_reserved;  /* peak during the step */
} sc_tracer_mem;

/* One step's metrics (one row of step_metrics.csv). Phase times in ms follow the nesting
   rule above; phase_ms[SC_PHASE_FWD] == fwd_ms etc. */
typedef struct sc_step_metrics {
    int epoch, step;          /* as given to step_begin */
    int64_t global_step;      /* 0, 1, 2, ... over the tracer's life */
    double wall_ms, cum_wall_ms;
    double phase_ms[SC_PHASE_COUNT];
    int64_t launches[SC_PHASE_COUNT];
    double loss, tokens, tps;
    int64_t cpu_rss, cpu_peak_rss;          /* bytes: at step end, and true peak in the step */
    int cpu_peak_method;                    /* 0 none, 1 clear_refs+VmHWM, 2 samples */
    sc_tracer_mem gpu;
    /* private: where this step's spans and layer cells live */
    int64_t span_first, span_count;
    int64_t layer_first;
    int num_layers;
    int64_t t0_ns;
} sc_step_metrics;

typedef struct sc__trace_span {
    char name[SC_TRACER_NAME_LEN];
    int phase, layer, stream, parent;   /* parent: span index, -1 none */
    int counts_phase, counts_layer;     /* passes the nesting rule (see above) */
    int open;
    int64_t launches;
    int64_t t0_ns, t1_ns;               /* CPU clock, ns since tracer init */
    void *ev0, *ev1;
    double ts_ms, dur_ms;               /* resolved: start since tracer init, duration */
} sc__trace_span;

typedef struct sc__trace_mem_row {
    int64_t step, event, t_ns, t_step_ns, allocated, reserved, delta, rss;
    int tag;                            /* index into the tag table */
} sc__trace_mem_row;

/* Caller-owned; treat the fields as private. */
typedef struct sc_tracer {
    sc_tracer_config cfg;
    int gpu;                            /* event callbacks present */
    int64_t t_init_ns;
    /* spans: history [0, step_span_first) + current step [step_span_first, nspans) */
    sc__trace_span *spans; int64_t nspans, cap_spans, spans_dropped;
    int *open; int64_t nopen, cap_open;
    /* steps */
    sc_step_metrics *steps; int64_t nsteps, cap_steps;
    sc_step_metrics cur; int in_step; void *step_ev;
    double *layer_ms; int64_t nlayer_ms, cap_layer_ms;     /* per step: num_layers x phases */
    int max_layers; unsigned char *layer_seen; int64_t cap_seen; /* (layer, phase) counted */
    int streams[64]; int nstreams;                         /* ids seen, for trace.json */
    /* memory events */
    sc__trace_mem_row *rows; int64_t nrows, cap_rows, rows_dropped, step_events;
    char **tags; int64_t ntags, cap_tags; int *tag_hash; int64_t cap_hash;
    /* CPU RSS */
    int statm_fd; int64_t page_size;
    int clear_refs_ok;                  /* 1 works, 0 untried, -1 failed */
    int64_t step_rss_max, step_hwm_begin;
    int any_clear_refs, any_samples;
} sc_tracer;

SCDEF sc_result sc_tracer_init(sc_tracer *tr, const sc_tracer_config *cfg);
SCDEF void sc_tracer_uninit(sc_tracer *tr);

/* Returns SC_ERROR_INVALID_ARGS when a step is already open. */
SCDEF sc_result sc_tracer_step_begin(sc_tracer *tr, int epoch, int step);
/* Closes the step: resolves GPU events, computes the step's metrics. mem may be NULL.
   tokens: tokens processed in the step (tps = tokens / wall seconds). */
SCDEF sc_result sc_tracer_step_end(sc_tracer *tr, double loss, double tokens,
                                   const sc_tracer_mem *mem);

/* Returns a span id (>= 0), or -1 when tr is NULL, no step is open or memory ran out. */
SCDEF int sc_tracer_span_begin(sc_tracer *tr, const char *name, sc_phase phase, int layer,
                               int stream);
SCDEF void sc_tracer_span_end(sc_tracer *tr, int id);
/* Adds n kernel launches to the phase of the innermost open span (any stream), or to
   SC_PHASE_OTHER when none is open. */
SCDEF void sc_tracer_count_launches(sc_tracer *tr, int64_t n);

/* One memory event (call it from the allocator's hook): the allocator's counters after the
   event, the change (+alloc / -free), and a tag (copied; may be NULL). Also samples RSS.
   Events outside a step are kept with step -1 and t_ms counted from sc_tracer_init. */
SCDEF void sc_tracer_mem_record(sc_tracer *tr, int64_t allocated, int64_t reserved,
                                int64_t delta, const char *tag);

/* Statistics over a sample. std is the sample std (n-1); ci95 is the half-width
   t_{0.975,n-1} * std / sqrt(n). std and ci95 are NaN for n < 2; everything is NaN for
   n == 0. */
typedef struct sc_stats {
    int n;
    double mean, median, std, ci95, min, max;
} sc_stats;
SCDEF sc_stats sc_stats_compute(const double *x, int n);

/* Results. sc_tracer_step_get returns NULL when i is out of range; i counts finished
   steps from 0. sc_tracer_layer_ms returns 0 for a cell the step did not have. */
SCDEF int64_t sc_tracer_step_count(const sc_tracer *tr);
SCDEF const sc_step_metrics *sc_tracer_step_get(const sc_tracer *tr, int64_t i);
SCDEF double sc_tracer_layer_ms(const sc_tracer *tr, int64_t i, int layer, sc_phase phase);
/* Statistics of a (layer, phase) cell, or of a step-level phase total, over the steps
   after the warm-up. */
SCDEF sc_stats sc_tracer_layer_stats(const sc_tracer *tr, int layer, sc_phase phase);
SCDEF sc_stats sc_tracer_phase_stats(const sc_tracer *tr, sc_phase phase);
/* "none", "clear_refs" or "samples" (how cpu_peak_rss was measured), "mixed" if it changed */
SCDEF const char *sc_tracer_peak_method(const sc_tracer *tr);

/* CPU resident set size of this process in bytes (0 where unknown), and its VmHWM. */
SCDEF int64_t sc_cpu_rss_bytes(void);
SCDEF int64_t sc_cpu_hwm_bytes(void);

/* Quantile of Student's t with df > 0 degrees of freedom (need not be an integer):
   the t with P(T <= t) = p. NaN for df <= 0 or p outside [0,1]; +-inf at p = 1 / 0. */
SCDEF double sc_student_t_quantile(double p, double df);
/* P(T <= t) for Student's t with df degrees of freedom. */
SCDEF double sc_student_t_cdf(double t, double df);

/* Writers. write_all creates dir (like mkdir -p) and writes step_metrics.csv,
   layer_metrics.csv, mem_trace.csv, summary.csv and trace.json into it. In trace.json
   each stream id is one track (tid = stream), steps have a track of their own, memory is
   two counter tracks; GPU span times are placed relative to the step's first event, so
   GPU tracks line up with the CPU clock at each step start. */
SCDEF sc_result sc_tracer_write_all(const sc_tracer *tr, const char *dir);
SCDEF sc_result sc_tracer_write_step_metrics(const sc_tracer *tr, const char *path);
SCDEF sc_result sc_tracer_write_layer_metrics(const sc_tracer *tr, const char *path);
SCDEF sc_result sc_tracer_write_mem_trace(const sc_tracer *tr, const char *path);
SCDEF sc_result sc_tracer_write_summary(const sc_tracer *tr, const char *path);
SCDEF sc_result sc_tracer_write_chrome_trace(const sc_tracer *tr, const char *path);
