/* ---- caching allocator (PyTorch CUDACachingAllocator rules, see the declarations) ---- */

#define SC__ALLOCATOR_MIN_BLOCK ((size_t)512)            /* kMinBlockSize */
#define SC__ALLOCATOR_SMALL_SIZE ((size_t)1 << 20)       /* kSmallSize: largest small-pool request */
#define SC__ALLOCATOR_SMALL_BUFFER ((size_t)2 << 20)     /* kSmallBuffer: small-pool segment */
#define SC__ALLOCATOR_LARGE_BUFFER ((size_t)20 << 20)    /* kLargeBuffer: segment for 1..10 MiB */
#define SC__ALLOCATOR_MIN_LARGE ((size_t)10 << 20)       /* kMinLargeAlloc */
#define SC__ALLOCATOR_ROUND_LARGE ((size_t)2 << 20)      /* kRoundLarge */
#define SC__ALLOCATOR_MAX_REQUEST ((size_t)1 << 56)      /* beyond any device; keeps rounding exact */

typedef struct sc__allocator_use {
    int stream;
    void *event;                 /* recorded at free time; NULL once complete */
} sc__allocator_use;

typedef struct sc__allocator_block {
    char *ptr;
    size_t size;                 /* rounded */
    size_t requested;            /* the caller's bytes (live and pending blocks) */
    int stream;                  /* the stream it was allocated on; never changes */
    int pool;                    /* 0 small, 1 large */
    int allocated;
    int event_count;             /* events still running (pending free when > 0) */
    sc__allocator_use *uses;     /* other streams that used the block (record_stream) */
    int n_uses, cap_uses;
    struct sc__allocator_block *prev, *next; /* neighbours inside the segment */
    struct sc__allocator_segment *seg;
    char tag[SC_ALLOCATOR_TAG_MAX];
} sc__allocator_block;

typedef struct sc__allocator_segment {
    char *base;
    size_t size;
    int stream, pool;
    sc__allocator_block *first;  /* lowest-address block */
    struct sc__allocator_segment *next_spare;
} sc__allocator_segment;

/* ---- small helpers ---- */

static size_t sc__allocator_round(size_t n)
{
    const size_t m = SC__ALLOCATOR_MIN_BLOCK;
    return n < m ? m : (n + m - 1) / m * m;
}

static size_t sc__allocator_segment_size(size_t rounded)
{
    if (rounded <= SC__ALLOCATOR_SMALL_SIZE) return SC__ALLOCATOR_SMALL_BUFFER;
    if (rounded < SC__ALLOCATOR_MIN_LARGE) return SC__ALLOCATOR_LARGE_BUFFER;
    return (rounded + SC__ALLOCATOR_ROUND_LARGE - 1) / SC__ALLOCATOR_ROUND_LARGE * SC__ALLOCATOR_ROUND_LARGE;
}

static void sc__allocator_stat_inc(sc_stat *s, int pool, int64_t amount)
{
    int idx[2];
    idx[0] = SC_STAT_ALL;
    idx[1] = pool ? SC_STAT_LARGE_POOL : SC_STAT_SMALL_POOL;
    for (int i = 0; i < 2; i++) {
        s[idx[i]].current += amount;
        if (s[idx[i]].current > s[idx[i]].peak) s[idx[i]].peak = s[idx[i]].current;
        s[idx[i]].allocated_total += amount;
    }
}

static void sc__allocator_stat_dec(sc_stat *s, int pool, int64_t amount)
{
    int idx[2];
    idx[0] = SC_STAT_ALL;
    idx[1] = pool ? SC_STAT_LARGE_POOL : SC_STAT_SMALL_POOL;
    for (int i = 0; i < 2; i++) {
        s[idx[i]].current -= amount;
        s[idx[i]].freed_total += amount;
    }
}

static int sc__allocator_is_split(const sc__allocator_block *b) { return b->prev || b->next; }

static void sc__allocator_emit(sc_allocator *a, sc_mem_event_kind kind, void *ptr, size_t size,
                           size_t requested, int stream, const char *tag)
{
    sc_mem_event ev;
    if (!a->cfg.on_event) return;
    ev.kind = kind;
    ev.ptr = ptr;
    ev.size = size;
    ev.requested = requested;
    ev.allocated_bytes = a->stats.allocated_bytes[SC_STAT_ALL].current;
    ev.reserved_bytes = a->stats.reserved_bytes[SC_STAT_ALL].current;
    ev.stream = stream;
    ev.tag = tag ? tag : "";
    ev.device = a->name;
    a->cfg.on_event(&ev, a->cfg.on_event_user);
}

/* Copy a tag, truncating on a UTF-8 character boundary so the JSON stays valid. */
static void sc__allocator_copy_tag(char *dst, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n > SC_ALLOCATOR_TAG_MAX - 1) {
        n = SC_ALLOCATOR_TAG_MAX - 1;
        while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80) n--;
    }
    if (n) memcpy(dst, src, n);
    dst[n] = 0;
}

/* PyTorch's format_size(), for the OOM message. */
static void sc__allocator_human(char *buf, size_t cap, uint64_t n)
{
    if (n <= 1024) snprintf(buf, cap, "%llu bytes", (unsigned long long)n);
    else if (n <= 1048576) snprintf(buf, cap, "%.2f KiB", (double)n / 1024.0);
    else if (n <= 1073741824ull) snprintf(buf, cap, "%.2f MiB", (double)n / 1048576.0);
    else snprintf(buf, cap, "%.2f GiB", (double)n / 1073741824.0);
}

/* Default raw allocator: host memory aligned to 256 bytes, like cudaMalloc. The original
   pointer sits just before the aligned one. */
static void *sc__allocator_host_raw(size_t bytes, void *user)
{
    unsigned char *raw;
    uintptr_t p;
    (void)user;
    raw = (unsigned char *)SC_MALLOC(bytes + 256 + sizeof(void *));
    if (!raw) return NULL;
    p = ((uintptr_t)(raw + sizeof(void *)) + 255) & ~(uintptr_t)255;
    memcpy((void *)(p - sizeof(void *)), &raw, sizeof raw);
    return (void *)p;
}

static void sc__allocator_host_raw_free(void *ptr, size_t bytes, void *user)
{
    void *raw;
    (void)bytes; (void)user;
    memcpy(&raw, (unsigned char *)ptr - sizeof(void *), sizeof raw);
    SC_FREE(raw);
}

/* ---- sorted pointer arrays ---- */

/* Order of a pool: (stream, size, address), as PyTorch's BlockComparatorSize. */
static int sc__allocator_pool_less(const sc__allocator_block *x, int stream, size_t size, const char *ptr)
{
    if (x->stream != stream) return x->stream < stream;
    if (x->size != size) return x->size < size;
    return (uintptr_t)x->ptr < (uintptr_t)ptr;
}

/* First index whose block is not less than the key. */
static size_t sc__allocator_pool_lower(const sc_allocator *a, int pool, int stream, size_t size,
                                   const char *ptr)
{
    size_t lo = 0, hi = a->pool_n[pool];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sc__allocator_pool_less(a->pool[pool][mid], stream, size, ptr)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Capacity was reserved by sc__allocator_reserve (pool_cap >= pool_blocks), so this cannot fail. */
static void sc__allocator_pool_insert(sc_allocator *a, sc__allocator_block *b)
{
    int p = b->pool;
    size_t i = sc__allocator_pool_lower(a, p, b->stream, b->size, b->ptr);
    SC_ASSERT(a->pool_n[p] < a->pool_cap[p]);
    memmove(a->pool[p] + i + 1, a->pool[p] + i, (a->pool_n[p] - i) * sizeof *a->pool[p]);
    a->pool[p][i] = b;
    a->pool_n[p]++;
}

static void sc__allocator_pool_erase(sc_allocator *a, sc__allocator_block *b)
{
    int p = b->pool;
    size_t i = sc__allocator_pool_lower(a, p, b->stream, b->size, b->ptr);
    SC_ASSERT(i < a->pool_n[p] && a->pool[p][i] == b);
    memmove(a->pool[p] + i, a->pool[p] + i + 1, (a->pool_n[p] - i - 1) * sizeof *a->pool[p]);
    a->pool_n[p]--;
}

/* First index of the active array whose ptr is >= ptr. */
static size_t sc__allocator_active_lower(const sc_allocator *a, const void *ptr)
{
    size_t lo = 0, hi = a->active_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)a->active[mid]->ptr < (uintptr_t)ptr) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static sc__allocator_block *sc__allocator_active_find(const sc_allocator *a, const void *ptr)
{
    size_t i = sc__allocator_active_lower(a, ptr);
    return i < a->active_n && a->active[i]->ptr == (const char *)ptr ? a->active[i] : NULL;
}

static void sc__allocator_active_erase(sc_allocator *a, sc__allocator_block *b)
{
    size_t i = sc__allocator_active_lower(a, b->ptr);
    SC_ASSERT(i < a->active_n && a->active[i] == b);
    memmove(a->active + i, a->active + i + 1, (a->active_n - i - 1) * sizeof *a->active);
    a->active_n--;
}

/* A pointer array with room for at least `need` elements (realloc'd, *cap updated), or NULL
   on host out-of-memory with the old array untouched. */
static void *sc__allocator_grow(void *arr, size_t *cap, size_t need)
{
    size_t n = *cap ? *cap : 16;
    void *p;
    if (need <= *cap) return arr;
    while (n < need) n *= 2;
    p = SC_REALLOC(arr, n * sizeof(void *));
    if (p) *cap = n;
    return p;
}

/* Everything an allocation may need from the host heap, taken before anything changes: then an
   allocation either happens completely or leaves no trace, and a free never allocates. */
static int sc__allocator_reserve(sc_allocator *a)
{
    int nspare = 0;
    void *g;
    for (sc__allocator_block *b = a->spare_blocks; b && nspare < 2; b = b->next) nspare++;
    for (; nspare < 2; nspare++) {
        sc__allocator_block *b = (sc__allocator_block *)SC_MALLOC(sizeof *b);
        if (!b) return 0;
        memset(b, 0, sizeof *b);
        b->next = a->spare_blocks;
        a->spare_blocks = b;
    }
    if (!a->spare_segs) {
        sc__allocator_segment *s = (sc__allocator_segment *)SC_MALLOC(sizeof *s);
        if (!s) return 0;
        memset(s, 0, sizeof *s);
        a->spare_segs = s;
    }
    for (int p = 0; p < 2; p++) {
        g = sc__allocator_grow(a->pool[p], &a->pool_cap[p], a->pool_blocks[p] + 2);
        if (!g) return 0;
        a->pool[p] = (sc__allocator_block **)g;
    }
    g = sc__allocator_grow(a->active, &a->active_cap, a->active_n + 1);
    if (!g) return 0;
    a->active = (sc__allocator_block **)g;
    g = sc__allocator_grow(a->segs, &a->seg_cap, a->seg_n + 1);
    if (!g) return 0;
    a->segs = (sc__allocator_segment **)g;
    return 1;
}

static sc__allocator_block *sc__allocator_new_block(sc_allocator *a, int pool)
{
    sc__allocator_block *b = a->spare_blocks;
    SC_ASSERT(b);
    a->spare_blocks = b->next;
    memset(b, 0, sizeof *b);
    b->pool = pool;
    a->pool_blocks[pool]++;
    return b;
}

static void sc__allocator_recycle_block(sc_allocator *a, sc__allocator_block *b)
{
    a->pool_blocks[b->pool]--;
    SC_FREE(b->uses);
    b->uses = NULL;
    b->next = a->spare_blocks;
    a->spare_blocks = b;
}

/* ---- the PyTorch algorithm ---- */

/* get_free_block: best fit on the same stream, or NULL. */
static sc__allocator_block *sc__allocator_get_free_block(sc_allocator *a, int pool, int stream, size_t size)
{
    size_t i = sc__allocator_pool_lower(a, pool, stream, size, NULL);
    sc__allocator_block *b;
    if (i == a->pool_n[pool] || a->pool[pool][i]->stream != stream) return NULL;
    b = a->pool[pool][i];
    memmove(a->pool[pool] + i, a->pool[pool] + i + 1, (a->pool_n[pool] - i - 1) * sizeof *a->pool[pool]);
    a->pool_n[pool]--;
    return b;
}

/* alloc_block: a new segment as one free block (not in the pool), or NULL. */
static sc__allocator_block *sc__allocator_new_segment(sc_allocator *a, int pool, int stream, size_t seg_size,
                                              size_t requested, const char *tag, int is_retry)
{
    sc__allocator_segment *s;
    sc__allocator_block *b;
    char *ptr;
    size_t i;
    if (is_retry) a->stats.alloc_retries++;
    if (a->cfg.mem_cap &&
        (uint64_t)a->stats.reserved_bytes[SC_STAT_ALL].current + seg_size > a->cfg.mem_cap)
        return NULL;
    ptr = (char *)a->cfg.raw_alloc(seg_size, a->cfg.raw_user);
    if (!ptr) return NULL;
    s = a->spare_segs;
    a->spare_segs = s->next_spare;
    memset(s, 0, sizeof *s);
    s->base = ptr;
    s->size = seg_size;
    s->stream = stream;
    s->pool = pool;
    b = sc__allocator_new_block(a, pool);
    b->ptr = ptr;
    b->size = seg_size;
    b->stream = stream;
    b->seg = s;
    s->first = b;
    for (i = a->seg_n; i > 0 && (uintptr_t)a->segs[i - 1]->base > (uintptr_t)ptr; i--)
        a->segs[i] = a->segs[i - 1];
    a->segs[i] = s;
    a->seg_n++;
    sc__allocator_stat_inc(a->stats.segment, pool, 1);
    sc__allocator_stat_inc(a->stats.reserved_bytes, pool, (int64_t)seg_size);
    sc__allocator_emit(a, SC_MEM_SEGMENT_ALLOC, ptr, seg_size, requested, stream, tag);
    return b;
}

/* release_block: give a whole free segment (one block, in its pool) back. */
static void sc__allocator_release_segment(sc_allocator *a, sc__allocator_block *b)
{
    sc__allocator_segment *s = b->seg;
    size_t i;
    int pool = b->pool;
    sc__allocator_pool_erase(a, b);
    for (i = 0; i < a->seg_n && a->segs[i] != s; i++) {}
    SC_ASSERT(i < a->seg_n);
    memmove(a->segs + i, a->segs + i + 1, (a->seg_n - i - 1) * sizeof *a->segs);
    a->seg_n--;
    a->cfg.raw_free(s->base, s->size, a->cfg.raw_user);
    sc__allocator_stat_dec(a->stats.segment, pool, 1);
    sc__allocator_stat_dec(a->stats.reserved_bytes, pool, (int64_t)s->size);
    sc__allocator_emit(a, SC_MEM_SEGMENT_FREE, s->base, s->size, 0, s->stream, "");
    sc__allocator_recycle_block(a, b);
    s->next_spare = a->spare_segs;
    a->spare_segs = s;
}

/* try_merge_blocks: fold src (a free neighbour in the pool) into dst; returns src's size or 0. */
static size_t sc__allocator_try_merge(sc_allocator *a, sc__allocator_block *dst, sc__allocator_block *src)
{
    size_t subsumed;
    if (!src || src->allocated || src->event_count > 0) return 0;
    sc__allocator_pool_erase(a, src);
    if (dst->prev == src) { /* [src dst] */
        dst->ptr = src->ptr;
        dst->prev = src->prev;
        if (dst->prev) dst->prev->next = dst;
        else dst->seg->first = dst;
    } else { /* [dst src] */
        dst->next = src->next;
        if (dst->next) dst->next->prev = dst;
    }
    subsumed = src->size;
    dst->size += subsumed;
    sc__allocator_recycle_block(a, src);
    return subsumed;
}

/* free_block: a block nobody uses any more goes back to its pool, merged with free neighbours. */
static void sc__allocator_free_block(sc_allocator *a, sc__allocator_block *b)
{
    size_t orig_size = b->size, requested = b->requested;
    int64_t d_blocks = 0, d_bytes = 0;
    sc__allocator_block *cand[2];
    SC_ASSERT(!b->allocated && b->event_count == 0);
    b->n_uses = 0;
    sc__allocator_active_erase(a, b); /* before merging: merging may move b->ptr */
    cand[0] = b->prev;
    cand[1] = b->next;
    for (int i = 0; i < 2; i++) {
        size_t sub = sc__allocator_try_merge(a, b, cand[i]);
        if (sub) { d_blocks -= 1; d_bytes -= (int64_t)sub; }
    }
    sc__allocator_pool_insert(a, b);
    if (sc__allocator_is_split(b)) { d_blocks += 1; d_bytes += (int64_t)b->size; }
    if (d_blocks > 0) sc__allocator_stat_inc(a->stats.inactive_split, b->pool, d_blocks);
    if (d_blocks < 0) sc__allocator_stat_dec(a->stats.inactive_split, b->pool, -d_blocks);
    if (d_bytes > 0) sc__allocator_stat_inc(a->stats.inactive_split_bytes, b->pool, d_bytes);
    if (d_bytes < 0) sc__allocator_stat_dec(a->stats.inactive_split_bytes, b->pool, -d_bytes);
    sc__allocator_stat_dec(a->stats.active, b->pool, 1);
    sc__allocator_stat_dec(a->stats.active_bytes, b->pool, (int64_t)orig_size);
    sc__allocator_stat_dec(a->stats.requested_bytes, b->pool, (int64_t)requested);
    b->requested = 0;
    b->tag[0] = 0;
}

/* process_events: pending blocks whose events have all completed are really freed. With
   `wait`, synchronize on each event first (synchronize_and_free_events). */
static void sc__allocator_process_events(sc_allocator *a, int wait)
{
    size_t i = 0;
    if (!a->pending_n) return;
    while (i < a->active_n) {
        sc__allocator_block *b = a->active[i];
        if (b->event_count > 0) {
            for (int u = 0; u < b->n_uses; u++) {
                void *ev = b->uses[u].event;
                if (!ev) continue;
                if (wait && a->cfg.event_synchronize) a->cfg.event_synchronize(ev, a->cfg.event_user);
                if (!a->cfg.event_query(ev, a->cfg.event_user)) continue;
                if (a->cfg.event_destroy) a->cfg.event_destroy(ev, a->cfg.event_user);
                b->uses[u].event = NULL;
                b->event_count--;
            }
            if (b->event_count == 0) {
                a->pending_n--;
                sc__allocator_free_block(a, b); /* removes b from active: index i is the next one */
                continue;
            }
        }
        i++;
    }
}

/* release_cached_blocks: wait for pending frees, then give back every whole free segment. */
static void sc__allocator_release_cached(sc_allocator *a)
{
    sc__allocator_process_events(a, 1);
    for (int p = 1; p >= 0; p--) { /* large pool first, as PyTorch */
        size_t i = 0;
        while (i < a->pool_n[p]) {
            sc__allocator_block *b = a->pool[p][i];
            if (!b->prev && !b->next) sc__allocator_release_segment(a, b);
            else i++;
        }
    }
}

static int sc__allocator_should_split(const sc__allocator_block *b, size_t size)
{
    size_t remaining = b->size - size;
    return b->pool == 0 ? remaining >= SC__ALLOCATOR_MIN_BLOCK : remaining > SC__ALLOCATOR_SMALL_SIZE;
}

/* alloc_found_block: carve `size` off the front of free block b and make it live. */
static sc__allocator_block *sc__allocator_take_block(sc_allocator *a, sc__allocator_block *b, size_t size,
                                             size_t requested, int stream, const char *tag)
{
    int already_split = sc__allocator_is_split(b), pool = b->pool;
    size_t i;
    if (sc__allocator_should_split(b, size)) {
        sc__allocator_block *rest = b;
        b = sc__allocator_new_block(a, pool);
        b->ptr = rest->ptr;
        b->size = size;
        b->stream = stream;
        b->seg = rest->seg;
        b->prev = rest->prev;
        if (b->prev) b->prev->next = b;
        else b->seg->first = b;
        b->next = rest;
        rest->prev = b;
        rest->ptr += size;
        rest->size -= size;
        sc__allocator_pool_insert(a, rest);
        if (already_split) {
            sc__allocator_stat_dec(a->stats.inactive_split_bytes, pool, (int64_t)size);
        } else {
            sc__allocator_stat_inc(a->stats.inactive_split_bytes, pool, (int64_t)rest->size);
            sc__allocator_stat_inc(a->stats.inactive_split, pool, 1);
        }
    } else if (already_split) {
        sc__allocator_stat_dec(a->stats.inactive_split_bytes, pool, (int64_t)b->size);
        sc__allocator_stat_dec(a->stats.inactive_split, pool, 1);
    }
    b->allocated = 1;
    b->requested = requested;
    sc__allocator_copy_tag(b->tag, tag);
    i = sc__allocator_active_lower(a, b->ptr);
    memmove(a->active + i + 1, a->active + i, (a->active_n - i) * sizeof *a->active);
    a->active[i] = b;
    a->active_n++;
    sc__allocator_stat_inc(a->stats.allocation, pool, 1);
    sc__allocator_stat_inc(a->stats.allocated_bytes, pool, (int64_t)b->size);
    sc__allocator_stat_inc(a->stats.active, pool, 1);
    sc__allocator_stat_inc(a->stats.active_bytes, pool, (int64_t)b->size);
    sc__allocator_stat_inc(a->stats.requested_bytes, pool, (int64_t)requested);
    return b;
}

static sc_result sc__allocator_oom(sc_allocator *a, size_t bytes, size_t size, size_t seg_size,
                               int stream, const char *tag, int cap_hit)
{
    const sc__allocator_block *top[10];
    int ntop = 0, len;
    char msg[1024], h1[32], h2[32], h3[32], h4[32], h5[32];
    int64_t alloc = a->stats.allocated_bytes[SC_STAT_ALL].current;
    int64_t resv = a->stats.reserved_bytes[SC_STAT_ALL].current;
    a->stats.num_ooms++;
    sc__allocator_emit(a, SC_MEM_OOM, NULL, size, bytes, stream, tag);
    /* the ten largest live blocks, by insertion into a sorted top list */
    for (size_t i = 0; i < a->active_n; i++) {
        const sc__allocator_block *b = a->active[i];
        int j;
        if (!b->allocated) continue;
        if (ntop == 10 && b->requested <= top[9]->requested) continue;
        j = ntop < 10 ? ntop++ : 9;
        for (; j > 0 && top[j - 1]->requested < b->requested; j--) top[j] = top[j - 1];
        top[j] = b;
    }
    sc__allocator_human(h1, sizeof h1, seg_size ? seg_size : size);
    sc__allocator_human(h2, sizeof h2, (uint64_t)alloc);
    sc__allocator_human(h3, sizeof h3, (uint64_t)resv);
    sc__allocator_human(h4, sizeof h4, (uint64_t)(resv - alloc));
    if (a->cfg.mem_cap) sc__allocator_human(h5, sizeof h5, a->cfg.mem_cap);
    else snprintf(h5, sizeof h5, "none");
    len = snprintf(msg, sizeof msg,
                   "%s out of memory: tried to allocate %s for %llu bytes \"%.48s\" on stream %d "
                   "(%s); %s allocated, %s reserved (%s reserved but unallocated), cap %s. "
                   "Largest live:",
                   a->name, h1, (unsigned long long)bytes, tag ? tag : "", stream,
                   cap_hit ? "the cap would be exceeded" : "the raw allocator failed",
                   h2, h3, h4, h5);
    for (int i = 0; i < ntop && len > 0 && (size_t)len < sizeof msg; i++) {
        sc__allocator_human(h1, sizeof h1, top[i]->requested);
        len += snprintf(msg + len, sizeof msg - (size_t)len, "%s %s \"%.48s\"", i ? ";" : "", h1,
                        top[i]->tag);
    }
    if (!ntop) snprintf(msg + len, sizeof msg - (size_t)len, " none");
    return sc__fail(SC_ERROR_OUT_OF_MEMORY, "%s", msg);
}

/* ---- public API ---- */

SCDEF sc_result sc_allocator_init(sc_allocator *a, const sc_allocator_config *cfg)
{
    if (!a) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_allocator_init: NULL allocator");
    memset(a, 0, sizeof *a);
    if (cfg) a->cfg = *cfg;
    if (!a->cfg.raw_alloc != !a->cfg.raw_free)
        return sc__fail(SC_ERROR_INVALID_ARGS, "sc_allocator_init: set both raw_alloc and raw_free, or neither");
    if (a->cfg.event_record && !a->cfg.event_query)
        return sc__fail(SC_ERROR_INVALID_ARGS, "sc_allocator_init: event_record needs event_query");
    snprintf(a->name, sizeof a->name, "%s",
             a->cfg.name ? a->cfg.name : (a->cfg.raw_alloc ? "device" : "cpu"));
    a->cfg.name = a->name;
    if (!a->cfg.raw_alloc) {
        a->cfg.raw_alloc = sc__allocator_host_raw;
        a->cfg.raw_free = sc__allocator_host_raw_free;
    }
    return SC_SUCCESS;
}

SCDEF void sc_allocator_uninit(sc_allocator *a)
{
    size_t live = 0, live_bytes = 0;
    if (!a) return;
    for (size_t i = 0; i < a->active_n; i++) {
        sc__allocator_block *b = a->active[i];
        if (b->allocated) {
            if (live < 10)
                fprintf(stderr, "slidecheck: allocator %s: uninit with a live block %p of %zu bytes \"%s\"\n",
                        a->name, (void *)b->ptr, b->requested, b->tag);
            live++;
            live_bytes += b->requested;
        }
        for (int u = 0; u < b->n_uses; u++)
            if (b->uses[u].event && a->cfg.event_destroy)
                a->cfg.event_destroy(b->uses[u].event, a->cfg.event_user);
    }
    if (live)
        fprintf(stderr, "slidecheck: allocator %s: %zu block(s), %zu bytes, never freed (a caller bug)\n",
                a->name, live, live_bytes);
    /* every block belongs to a segment: walk them and free it all */
    for (size_t i = 0; i < a->seg_n; i++) {
        sc__allocator_segment *s = a->segs[i];
        sc__allocator_block *b = s->first;
        a->cfg.raw_free(s->base, s->size, a->cfg.raw_user);
        while (b) {
            sc__allocator_block *n = b->next;
            SC_FREE(b->uses);
            SC_FREE(b);
            b = n;
        }
        SC_FREE(s);
    }
    while (a->spare_blocks) {
        sc__allocator_block *n = a->spare_blocks->next;
        SC_FREE(a->spare_blocks);
        a->spare_blocks = n;
    }
    while (a->spare_segs) {
        sc__allocator_segment *n = a->spare_segs->next_spare;
        SC_FREE(a->spare_segs);
        a->spare_segs = n;
    }
    SC_FREE(a->pool[0]);
    SC_FREE(a->pool[1]);
    SC_FREE(a->active);
    SC_FREE(a->segs);
    memset(a, 0, sizeof *a);
}

SCDEF sc_result sc_allocator_alloc(sc_allocator *a, void **out, size_t bytes, int stream,
                                   const char *tag)
{
    size_t size, seg_size;
    int pool;
    sc__allocator_block *b;
    if (!a || !out) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_allocator_alloc: NULL argument");
    *out = NULL;
    if (bytes > SC__ALLOCATOR_MAX_REQUEST) return sc__allocator_oom(a, bytes, bytes, 0, stream, tag, 0);
    if (!sc__allocator_reserve(a))
        return sc__fail(SC_ERROR_OUT_OF_MEMORY, "%s: out of host memory for allocator bookkeeping", a->name);
    sc__allocator_process_events(a, 0);
    size = sc__allocator_round(bytes);
    pool = size <= SC__ALLOCATOR_SMALL_SIZE ? 0 : 1;
    seg_size = sc__allocator_segment_size(size);
    b = sc__allocator_get_free_block(a, pool, stream, size);
    if (!b) b = sc__allocator_new_segment(a, pool, stream, seg_size, bytes, tag, 0);
    if (!b) {
        /* free every cached segment, then one more try (release_cached_blocks) */
        sc__allocator_release_cached(a);
        b = sc__allocator_new_segment(a, pool, stream, seg_size, bytes, tag, 1);
    }
    if (!b) {
        int cap_hit = a->cfg.mem_cap &&
                      (uint64_t)a->stats.reserved_bytes[SC_STAT_ALL].current + seg_size > a->cfg.mem_cap;
        return sc__allocator_oom(a, bytes, size, seg_size, stream, tag, cap_hit);
    }
    b = sc__allocator_take_block(a, b, size, bytes, stream, tag);
    *out = b->ptr;
    sc__allocator_emit(a, SC_MEM_ALLOC, b->ptr, b->size, bytes, stream, b->tag);
    return SC_SUCCESS;
}

SCDEF void sc_allocator_free(sc_allocator *a, void *ptr)
{
    sc__allocator_block *b;
    if (!a || !ptr) return;
    b = sc__allocator_active_find(a, ptr);
    if (!b || !b->allocated) {
        fprintf(stderr, "slidecheck: allocator %s: free of %p, which is not a live block here%s\n",
                a->name, ptr, b ? " (freed twice)" : "");
        return;
    }
    b->allocated = 0;
    sc__allocator_stat_dec(a->stats.allocation, b->pool, 1);
    sc__allocator_stat_dec(a->stats.allocated_bytes, b->pool, (int64_t)b->size);
    sc__allocator_emit(a, SC_MEM_FREE, b->ptr, b->size, b->requested, b->stream, b->tag);
    /* insert_events: the block waits for the work queued so far on every other stream using it */
    for (int u = 0; u < b->n_uses; u++) {
        b->uses[u].event = a->cfg.event_record(b->uses[u].stream, a->cfg.event_user);
        if (b->uses[u].event) b->event_count++;
    }
    if (b->event_count) a->pending_n++;
    else sc__allocator_free_block(a, b);
}

SCDEF void sc_allocator_record_stream(sc_allocator *a, void *ptr, int stream)
{
    sc__allocator_block *b;
    if (!a || !ptr) return;
    b = sc__allocator_active_find(a, ptr);
    if (!b || !b->allocated) {
        fprintf(stderr, "slidecheck: allocator %s: record_stream of %p, which is not a live block here\n",
                a->name, ptr);
        return;
    }
    /* uses on the allocation stream need no synchronisation; without events nothing does */
    if (stream == b->stream || !a->cfg.event_record) return;
    for (int u = 0; u < b->n_uses; u++)
        if (b->uses[u].stream == stream) return;
    if (b->n_uses == b->cap_uses) {
        int n = b->cap_uses ? 2 * b->cap_uses : 4;
        sc__allocator_use *p = (sc__allocator_use *)SC_REALLOC(b->uses, (size_t)n * sizeof *p);
        if (!p) {
            fprintf(stderr, "slidecheck: allocator %s: out of host memory in record_stream\n", a->name);
            return;
        }
        b->uses = p;
        b->cap_uses = n;
    }
    b->uses[b->n_uses].stream = stream;
    b->uses[b->n_uses].event = NULL;
    b->n_uses++;
}

SCDEF void sc_allocator_empty_cache(sc_allocator *a)
{
    if (a) sc__allocator_release_cached(a);
}

SCDEF void sc_allocator_reset_peak(sc_allocator *a)
{
    sc_stat *all[9];
    if (!a) return;
    all[0] = a->stats.allocation; all[1] = a->stats.segment; all[2] = a->stats.active;
    all[3] = a->stats.inactive_split; all[4] = a->stats.allocated_bytes;
    all[5] = a->stats.reserved_bytes; all[6] = a->stats.active_bytes;
    all[7] = a->stats.inactive_split_bytes; all[8] = a->stats.requested_bytes;
    for (int i = 0; i < 9; i++)
        for (int t = 0; t < SC_STAT_TYPES; t++) all[i][t].peak = all[i][t].current;
}

SCDEF void sc_allocator_reset_accumulated(sc_allocator *a)
{
    sc_stat *all[9];
    if (!a) return;
    all[0] = a->stats.allocation; all[1] = a->stats.segment; all[2] = a->stats.active;
    all[3] = a->stats.inactive_split; all[4] = a->stats.allocated_bytes;
    all[5] = a->stats.reserved_bytes; all[6] = a->stats.active_bytes;
    all[7] = a->stats.inactive_split_bytes; all[8] = a->stats.requested_bytes;
    for (int i = 0; i < 9; i++)
        for (int t = 0; t < SC_STAT_TYPES; t++) all[i][t].allocated_total = all[i][t].freed_total = 0;
    a->stats.alloc_retries = 0;
    a->stats.num_ooms = 0;
}

SCDEF sc_memory_stats sc_allocator_stats(const sc_allocator *a)
{
    sc_memory_stats s;
    if (a) return a->stats;
    memset(&s, 0, sizeof s);
    return s;
}

SCDEF const char *sc_allocator_tag_of(const sc_allocator *a, const void *ptr)
{
    const sc__allocator_block *b = a && ptr ? sc__allocator_active_find(a, ptr) : NULL;
    return b && b->allocated ? b->tag : NULL;
}

SCDEF size_t sc_allocator_live_bytes_tagged(const sc_allocator *a, const char *tag_prefix)
{
    size_t sum = 0, n = tag_prefix ? strlen(tag_prefix) : 0;
    if (!a) return 0;
    for (size_t i = 0; i < a->active_n; i++) {
        const sc__allocator_block *b = a->active[i];
        if (b->allocated && !strncmp(b->tag, tag_prefix ? tag_prefix : "", n)) sum += b->requested;
    }
    return sum;
}

/* snprintf into buf at *len, keeping snprintf's "length it would have had" semantics. */
static void sc__allocator_appendf(char *buf, size_t cap, int *len, const char *fmt, ...)
{
    va_list ap;
    int n;
    size_t at = (size_t)*len;
    va_start(ap, fmt);
    n = vsnprintf(at < cap ? buf + at : NULL, at < cap ? cap - at : 0, fmt, ap);
    va_end(ap);
    if (n > 0) *len += n;
}

/* torch.cuda.memory._format_size / _format_count: the unit follows the "all" row's value. */
static void sc__allocator_fmt_size(char *out, size_t cap, int64_t sz, int64_t pref)
{
    static const char *prefixes[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int p = 0;
    double pf = (double)pref;
    while (p < 5 && !(pf < 768.0 * 1024.0)) { p++; sz /= 1024; pf /= 1024.0; }
    snprintf(out, cap, "%6lld %s", (long long)sz, prefixes[p]);
}

static void sc__allocator_fmt_count(char *out, size_t cap, int64_t cnt, int64_t pref)
{
    static const char *prefixes[] = {" ", "K", "M"};
    int p = 0;
    double pf = (double)pref;
    while (p < 2 && !(pf < 750.0 * 1000.0)) { p++; cnt /= 1000; pf /= 1000.0; }
    snprintf(out, cap, "%7lld %s ", (long long)cnt, prefixes[p]);
}

SCDEF int sc_allocator_summary(const sc_allocator *a, char *buf, size_t cap)
{
    static const char *sub[3] = {NULL, "      from large pool", "      from small pool"};
    static const int subidx[3] = {SC_STAT_ALL, SC_STAT_LARGE_POOL, SC_STAT_SMALL_POOL};
    const char *rule = "===================================================================================";
    const char *thin = "-----------------------------------------------------------------------------------";
    char label[40], reserved_mem[40], reserved_seg[40], title[80];
    const sc_stat *rows[11];
    const char *names[11];
    int is_bytes[11];
    int len = 0, nrows = 0;
    if (cap && buf) buf[0] = 0;
    if (!a) return 0;
    snprintf(reserved_mem, sizeof reserved_mem, "%.8s reserved memory", a->name);
    snprintf(reserved_seg, sizeof reserved_seg, "%.8s reserved segments", a->name);
#define SC__ROW(st, nm, b) (rows[nrows] = (st), names[nrows] = (nm), is_bytes[nrows++] = (b))
    SC__ROW(a->stats.allocated_bytes, "Allocated memory", 1);
    SC__ROW(a->stats.active_bytes, "Active memory", 1);
    SC__ROW(a->stats.requested_bytes, "Requested memory", 1);
    SC__ROW(a->stats.reserved_bytes, reserved_mem, 1);
    SC__ROW(a->stats.inactive_split_bytes, "Non-releasable memory", 1);
    SC__ROW(a->stats.allocation, "Allocations", 0);
    SC__ROW(a->stats.active, "Active allocs", 0);
    SC__ROW(a->stats.segment, reserved_seg, 0);
    SC__ROW(a->stats.inactive_split, "Non-releasable allocs", 0);
#undef SC__ROW
    snprintf(title, sizeof title, "slidecheck memory summary, %s", a->name);
    sc__allocator_appendf(buf, cap, &len, "|%s|\n| %-81s |\n|%s|\n", rule, title, thin);
    {
        char c1[64], c2[64];
        snprintf(c1, sizeof c1, "OOMs: %lld", (long long)a->stats.num_ooms);
        snprintf(c2, sizeof c2, "raw allocation retries: %lld", (long long)a->stats.alloc_retries);
        sc__allocator_appendf(buf, cap, &len, "| %-33s | %-45s |\n|%s|\n", c1, c2, rule);
    }
    sc__allocator_appendf(buf, cap, &len, "| %-29s | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n",
                      "Metric");
    for (int r = 0; r < nrows; r++) {
        const sc_stat *all = &rows[r][SC_STAT_ALL];
        sc__allocator_appendf(buf, cap, &len, "|%s|\n", thin);
        for (int s = 0; s < 3; s++) {
            const sc_stat *st = &rows[r][subidx[s]];
            int64_t v[4], pref[4];
            char cell[4][32];
            v[0] = st->current; v[1] = st->peak; v[2] = st->allocated_total; v[3] = st->freed_total;
            pref[0] = all->current; pref[1] = all->peak; pref[2] = all->allocated_total;
            pref[3] = all->freed_total;
            for (int c = 0; c < 4; c++) {
                if (is_bytes[r]) sc__allocator_fmt_size(cell[c], sizeof cell[c], v[c], pref[c]);
                else sc__allocator_fmt_count(cell[c], sizeof cell[c], v[c], pref[c]);
            }
            snprintf(label, sizeof label, "%s", s ? sub[s] : names[r]);
            sc__allocator_appendf(buf, cap, &len, "| %-29s | %s | %s | %s | %s |\n", label, cell[0],
                              cell[1], cell[2], cell[3]);
        }
    }
    sc__allocator_appendf(buf, cap, &len, "|%s|\n", rule);
    return len;
}

static void sc__allocator_json_string(char *buf, size_t cap, int *len, const char *s)
{
    sc__allocator_appendf(buf, cap, len, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') sc__allocator_appendf(buf, cap, len, "\\%c", c);
        else if (c == '\n') sc__allocator_appendf(buf, cap, len, "\\n");
        else if (c == '\t') sc__allocator_appendf(buf, cap, len, "\\t");
        else if (c == '\r') sc__allocator_appendf(buf, cap, len, "\\r");
        else if (c < 0x20) sc__allocator_appendf(buf, cap, len, "\\u%04x", c);
        else sc__allocator_appendf(buf, cap, len, "%c", c);
    }
    sc__allocator_appendf(buf, cap, len, "\"");
}

SCDEF int sc_allocator_snapshot_json(const sc_allocator *a, char *buf, size_t cap)
{
    int len = 0;
    if (cap && buf) buf[0] = 0;
    if (!a) return 0;
    sc__allocator_appendf(buf, cap, &len, "{\"device\": ");
    sc__allocator_json_string(buf, cap, &len, a->name);
    sc__allocator_appendf(buf, cap, &len, ", \"mem_cap\": %llu, \"segments\": [",
                      (unsigned long long)a->cfg.mem_cap);
    for (size_t i = 0; i < a->seg_n; i++) {
        const sc__allocator_segment *s = a->segs[i];
        size_t alloc = 0, active = 0, req = 0;
        for (const sc__allocator_block *b = s->first; b; b = b->next) {
            if (b->allocated) alloc += b->size;
            if (b->allocated || b->event_count) { active += b->size; req += b->requested; }
        }
        sc__allocator_appendf(buf, cap, &len,
                          "%s\n {\"address\": %llu, \"total_size\": %zu, \"allocated_size\": %zu, "
                          "\"active_size\": %zu, \"requested_size\": %zu, \"stream\": %d, "
                          "\"segment_type\": \"%s\", \"blocks\": [",
                          i ? "," : "", (unsigned long long)(uintptr_t)s->base, s->size, alloc, active,
                          req, s->stream, s->pool ? "large" : "small");
        for (const sc__allocator_block *b = s->first; b; b = b->next) {
            const char *state = b->allocated ? "active_allocated"
                                : b->event_count ? "active_pending_free" : "inactive";
            sc__allocator_appendf(buf, cap, &len,
                              "%s\n  {\"offset\": %zu, \"address\": %llu, \"size\": %zu, "
                              "\"requested_size\": %zu, \"state\": \"%s\", \"tag\": ",
                              b == s->first ? "" : ",", (size_t)(b->ptr - s->base),
                              (unsigned long long)(uintptr_t)b->ptr, b->size, b->requested, state);
            sc__allocator_json_string(buf, cap, &len, b->tag);
            sc__allocator_appendf(buf, cap, &len, "}");
        }
        sc__allocator_appendf(buf, cap, &len, "]}");
    }
    sc__allocator_appendf(buf, cap, &len, "]}\n");
    return len;
}

SCDEF sc_result sc_allocator_validate(const sc_allocator *a)
{
    int64_t sum[2][6]; /* per pool: allocated bytes, count, active bytes, count, requested, reserved */
    int64_t split[2][2]; /* per pool: inactive split count, bytes */
    size_t nfree[2] = {0, 0}, nblocks[2] = {0, 0}, nactive = 0, npending = 0;
    const sc_memory_stats *st = &a->stats;
    memset(sum, 0, sizeof sum);
    memset(split, 0, sizeof split);
    for (size_t i = 0; i < a->seg_n; i++) {
        const sc__allocator_segment *s = a->segs[i];
        const sc__allocator_block *prev = NULL;
        char *at = s->base;
        int p = s->pool;
        if (i && (uintptr_t)a->segs[i - 1]->base + a->segs[i - 1]->size > (uintptr_t)s->base)
            return sc__fail(SC_ERROR_FORMAT, "allocator: segments %zu and %zu overlap", i - 1, i);
        sum[p][5] += (int64_t)s->size;
        for (const sc__allocator_block *b = s->first; b; prev = b, b = b->next) {
            int is_free = !b->allocated && !b->event_count;
            nblocks[p]++;
            if (b->ptr != at || b->prev != prev || b->seg != s || b->pool != p || b->stream != s->stream)
                return sc__fail(SC_ERROR_FORMAT, "allocator: block %p breaks the tiling of segment %p",
                                (void *)b->ptr, (void *)s->base);
            if (!b->size || b->size % SC__ALLOCATOR_MIN_BLOCK)
                return sc__fail(SC_ERROR_FORMAT, "allocator: block size %zu is not a multiple of 512", b->size);
            if (is_free && prev && !prev->allocated && !prev->event_count)
                return sc__fail(SC_ERROR_FORMAT, "allocator: two free neighbours at %p", (void *)b->ptr);
            if (is_free) {
                size_t k = sc__allocator_pool_lower(a, p, b->stream, b->size, b->ptr);
                if (k >= a->pool_n[p] || a->pool[p][k] != b)
                    return sc__fail(SC_ERROR_FORMAT, "allocator: free block %p missing from its pool",
                                    (void *)b->ptr);
                nfree[p]++;
                if (b->prev || b->next) { split[p][0]++; split[p][1] += (int64_t)b->size; }
            } else {
                if (sc__allocator_active_find(a, b->ptr) != b)
                    return sc__fail(SC_ERROR_FORMAT, "allocator: block %p missing from the active list",
                                    (void *)b->ptr);
                nactive++;
                if (b->allocated) { sum[p][0] += (int64_t)b->size; sum[p][1]++; }
                else npending++;
                sum[p][2] += (int64_t)b->size;
                sum[p][3]++;
                sum[p][4] += (int64_t)b->requested;
            }
            at += b->size;
        }
        if (at != s->base + s->size)
            return sc__fail(SC_ERROR_FORMAT, "allocator: blocks do not cover segment %p", (void *)s->base);
    }
    for (int p = 0; p < 2; p++) {
        int t = p ? SC_STAT_LARGE_POOL : SC_STAT_SMALL_POOL;
        if (nfree[p] != a->pool_n[p] || nblocks[p] != a->pool_blocks[p])
            return sc__fail(SC_ERROR_FORMAT, "allocator: pool %d holds %zu blocks, %zu free ones exist",
                            p, a->pool_n[p], nfree[p]);
        for (size_t k = 1; k < a->pool_n[p]; k++) {
            const sc__allocator_block *x = a->pool[p][k - 1], *y = a->pool[p][k];
            if (!sc__allocator_pool_less(x, y->stream, y->size, y->ptr))
                return sc__fail(SC_ERROR_FORMAT, "allocator: pool %d is not sorted", p);
        }
        if (st->allocated_bytes[t].current != sum[p][0] || st->allocation[t].current != sum[p][1] ||
            st->active_bytes[t].current != sum[p][2] || st->active[t].current != sum[p][3] ||
            st->requested_bytes[t].current != sum[p][4] || st->reserved_bytes[t].current != sum[p][5] ||
            st->inactive_split[t].current != split[p][0] ||
            st->inactive_split_bytes[t].current != split[p][1])
            return sc__fail(SC_ERROR_FORMAT, "allocator: pool %d stats differ from its blocks", p);
    }
    if (nactive != a->active_n || npending != a->pending_n)
        return sc__fail(SC_ERROR_FORMAT, "allocator: active list holds %zu blocks, %zu exist",
                        a->active_n, nactive);
    if (a->cfg.mem_cap && (uint64_t)st->reserved_bytes[SC_STAT_ALL].current > a->cfg.mem_cap)
        return sc__fail(SC_ERROR_FORMAT, "allocator: reserved exceeds the cap");
    for (int k = 0; k < 9; k++) {
        const sc_stat *arr = k == 0 ? st->allocation : k == 1 ? st->segment : k == 2 ? st->active
                           : k == 3 ? st->inactive_split : k == 4 ? st->allocated_bytes
                           : k == 5 ? st->reserved_bytes : k == 6 ? st->active_bytes
                           : k == 7 ? st->inactive_split_bytes : st->requested_bytes;
        if (arr[SC_STAT_ALL].current != arr[1].current + arr[2].current ||
            arr[SC_STAT_ALL].peak < arr[SC_STAT_ALL].current)
            return sc__fail(SC_ERROR_FORMAT, "allocator: stat %d is inconsistent", k);
    }
    return SC_SUCCESS;
}
