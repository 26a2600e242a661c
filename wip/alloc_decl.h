/* ------------------------------------------------------------------------------------------
   Caching allocator: a device-independent copy of PyTorch's CUDACachingAllocator
   ------------------------------------------------------------------------------------------
   Raw memory comes from callbacks (cudaMalloc/cudaFree, an aligned host malloc, a pinned-host
   allocator), so the same code and the same numbers serve every device. The rules are
   PyTorch's defaults (no max_split_size, no expandable segments, no garbage collection):

   - sizes round up to 512 bytes (kMinBlockSize); a request of 0 bytes gets its own 512-byte
     block and a unique non-NULL pointer that must be freed (PyTorch's tensor allocate() hands
     out nullptr there instead; DeviceCachingAllocator::malloc itself rounds 0 to 512, as here);
   - rounded sizes <= 1 MiB come from the small pool, whose segments are 2 MiB; larger ones
     from the large pool, whose segments are 20 MiB for sizes under 10 MiB and the size rounded
     up to 2 MiB otherwise;
   - a request takes the best fit among the free blocks of its pool on its own stream: the
     smallest block that is large enough, the lowest address among equals;
   - a block is split when the remainder is >= 512 bytes (small pool) or > 1 MiB (large pool);
     a freed block merges with free neighbours of its segment;
   - blocks belong to the stream they were allocated on for ever. sc_allocator_record_stream()
     notes that another stream also used a block; at free time an event is recorded on each such
     stream and the block stays out of the pool ("pending free": still counted in active_bytes
     and requested_bytes) until every one of those events has completed. Events are polled at
     the start of every allocation and on empty_cache. With no event callbacks everything is
     synchronous and record_stream does nothing;
   - when a new segment cannot be had (the raw allocator fails, or reserved + segment would
     exceed mem_cap) every fully free cached segment is released and the segment is tried once
     more (alloc_retries += 1); if that fails too: num_ooms += 1, an SC_MEM_OOM event, and
     SC_ERROR_OUT_OF_MEMORY with a message that names the request, allocated / reserved / cap
     and the ten largest live allocations with their tags.

   Not thread-safe: use one allocator per thread or lock around it. */

#define SC_ALLOCATOR_TAG_MAX 64      /* bytes of tag kept per block, including the NUL */

typedef enum sc_mem_event_kind {
    SC_MEM_ALLOC = 0,          /* a block was handed out */
    SC_MEM_FREE = 1,           /* a block was given back (it may still wait on stream events) */
    SC_MEM_SEGMENT_ALLOC = 2,  /* raw memory was taken from the device */
    SC_MEM_SEGMENT_FREE = 3,   /* raw memory was given back to the device */
    SC_MEM_OOM = 4             /* a request failed */
} sc_mem_event_kind;

typedef struct sc_mem_event {
    sc_mem_event_kind kind;
    void *ptr;                 /* the block or segment (NULL for OOM) */
    size_t size;               /* rounded block size, or segment size */
    size_t requested;          /* the caller's byte count (segments: the request that caused it) */
    int64_t allocated_bytes;   /* totals after the event */
    int64_t reserved_bytes;
    int stream;
    const char *tag;           /* what the memory is; "" when unknown; valid during the call */
    const char *device;        /* the allocator's name */
} sc_mem_event;

typedef struct sc_allocator_config {
    void *(*raw_alloc)(size_t bytes, void *user);   /* NULL = aligned host malloc (256-byte aligned) */
    void (*raw_free)(void *ptr, size_t bytes, void *user);
    void *raw_user;
    size_t mem_cap;              /* 0 = no cap; else behave as a card of this many bytes
                                    (reserved never exceeds it) */
    /* stream events (NULL = everything is synchronous, e.g. CPU): */
    void *(*event_record)(int stream, void *user);  /* record an event on `stream`, return a handle
                                                       (NULL = nothing to wait for) */
    int (*event_query)(void *event, void *user);     /* 1 when complete */
    void (*event_destroy)(void *event, void *user);
    void (*event_synchronize)(void *event, void *user); /* optional: wait for the event. Used where
                                    PyTorch synchronizes (empty_cache, the retry before an OOM);
                                    NULL = only query, so blocks whose events are still running
                                    stay cached */
    void *event_user;
    /* memory-event hook for the tracer (NULL = off, costs nothing): */
    void (*on_event)(const struct sc_mem_event *ev, void *user);
    void *on_event_user;
    const char *name;            /* "cuda:0", "cpu", "pinned" - used in summaries (copied) */
} sc_allocator_config;

/* One counter in PyTorch's manner. peak is resettable; the totals only grow. */
typedef struct sc_stat {
    int64_t current, peak, allocated_total, freed_total;
} sc_stat;

/* Every stat array is indexed by these, as torch.cuda.memory_stats()'s all/small_pool/large_pool. */
enum { SC_STAT_ALL = 0, SC_STAT_SMALL_POOL = 1, SC_STAT_LARGE_POOL = 2, SC_STAT_TYPES = 3 };

typedef struct sc_memory_stats {
    sc_stat allocation[SC_STAT_TYPES];        /* number of live blocks */
    sc_stat segment[SC_STAT_TYPES];           /* number of raw segments held */
    sc_stat active[SC_STAT_TYPES];            /* live + pending-free blocks */
    sc_stat inactive_split[SC_STAT_TYPES];    /* free blocks inside partly used segments */
    sc_stat allocated_bytes[SC_STAT_TYPES];   /* rounded sizes of live blocks */
    sc_stat reserved_bytes[SC_STAT_TYPES];    /* sizes of raw segments held */
    sc_stat active_bytes[SC_STAT_TYPES];      /* rounded sizes of live + pending-free blocks */
    sc_stat inactive_split_bytes[SC_STAT_TYPES]; /* "non-releasable memory" */
    sc_stat requested_bytes[SC_STAT_TYPES];   /* unrounded request sizes of live + pending-free
                                                 blocks (PyTorch drops them at the real free) */
    int64_t alloc_retries;                    /* raw allocations retried after emptying the cache */
    int64_t num_ooms;                         /* requests that failed */
} sc_memory_stats;

struct sc__allocator_block;
struct sc__allocator_segment;

/* Caller-owned; treat the fields as private. Zero it or not: sc_allocator_init sets them all. */
typedef struct sc_allocator {
    sc_allocator_config cfg;
    char name[32];
    sc_memory_stats stats;
    struct sc__allocator_block **pool[2];    /* free blocks, small / large, sorted by (stream, size, ptr) */
    size_t pool_n[2], pool_cap[2];
    size_t pool_blocks[2];               /* all blocks of each pool: bounds pool_n, so a free never grows */
    struct sc__allocator_block **active;     /* live + pending-free blocks, sorted by ptr */
    size_t active_n, active_cap;
    size_t pending_n;                    /* how many of those wait on events */
    struct sc__allocator_segment **segs;     /* sorted by base address */
    size_t seg_n, seg_cap;
    struct sc__allocator_block *spare_blocks; /* recycled structs, so the bookkeeping cannot fail mid-way */
    struct sc__allocator_segment *spare_segs;
} sc_allocator;

/* cfg may be NULL (host memory, no cap, no events). */
SCDEF sc_result sc_allocator_init(sc_allocator *a, const sc_allocator_config *cfg);
/* Gives every segment back. Live blocks at this point are a caller bug: listed on stderr. */
SCDEF void sc_allocator_uninit(sc_allocator *a);
/* tag (may be NULL) says what the memory is, e.g. "layer 12 mlp.up (saved activation)";
   it is copied, truncated to SC_ALLOCATOR_TAG_MAX-1 bytes. */
SCDEF sc_result sc_allocator_alloc(sc_allocator *a, void **out, size_t bytes, int stream,
                                   const char *tag);
/* NULL is ignored; a pointer this allocator did not hand out is reported on stderr. */
SCDEF void sc_allocator_free(sc_allocator *a, void *ptr);
/* ptr (live) is also used on `stream`: when freed it is reused only after that stream's work
   queued up to the free has completed. */
SCDEF void sc_allocator_record_stream(sc_allocator *a, void *ptr, int stream);
/* Give every fully free segment back to the raw allocator. */
SCDEF void sc_allocator_empty_cache(sc_allocator *a);
/* peak = current for every stat. */
SCDEF void sc_allocator_reset_peak(sc_allocator *a);
/* allocated_total = freed_total = 0 for every stat, alloc_retries = num_ooms = 0. */
SCDEF void sc_allocator_reset_accumulated(sc_allocator *a);
SCDEF sc_memory_stats sc_allocator_stats(const sc_allocator *a);
/* The tag of a live block, NULL if ptr is not one. */
SCDEF const char *sc_allocator_tag_of(const sc_allocator *a, const void *ptr);
/* Sum of requested bytes of live blocks whose tag starts with tag_prefix (NULL or "" = all). */
SCDEF size_t sc_allocator_live_bytes_tagged(const sc_allocator *a, const char *tag_prefix);
/* A table in the manner of torch.cuda.memory_summary(). snprintf semantics: returns the full
   length, writes at most cap bytes including the NUL (buf may be NULL when cap is 0). */
SCDEF int sc_allocator_summary(const sc_allocator *a, char *buf, size_t cap);
/* Segments and their blocks as JSON, in the manner of torch.cuda.memory_snapshot():
   {"device":..., "segments":[{"address", "total_size", "allocated_size", "active_size",
   "requested_size", "stream", "segment_type", "blocks":[{"offset", "address", "size",
   "requested_size", "state", "tag"}]}]}; state is "active_allocated", "active_pending_free" or
   "inactive". snprintf semantics as above. */
SCDEF int sc_allocator_snapshot_json(const sc_allocator *a, char *buf, size_t cap);
/* Check every internal invariant (blocks tile their segments, pools sorted and complete, no two
   free neighbours, stats equal the sums over blocks, reserved <= cap). SC_ERROR_FORMAT with the
   first broken one. Costs O(blocks); for tests and debugging. */
SCDEF sc_result sc_allocator_validate(const sc_allocator *a);
