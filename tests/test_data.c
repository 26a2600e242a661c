/* tests/test_data.c: the token-shard reader. Shards (llm.c's uint16/uint32 format and 1-D .npy)
   are written to build/tmp_data/; the batches read back are compared token for token with the
   stream the rules define: B*T tokens a batch, a shard's short tail skipped, the first shard
   again after the last, rank r of W taking global batches r, r+W, ...; seek, shuffle, and every
   malformed input's error. Run from the repository root. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

#define TMP "build/tmp_data/"
#define NB 2 /* rows */
#define NT 3 /* tokens a row */
#define BT (NB * NT)

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(2); }
    if (n) fwrite(p, 1, n, f);
    fclose(f);
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int k = 0; k < 4; k++) p[k] = (unsigned char)(v >> (8 * k));
}

/* An llm.c shard with the header fields given (count may lie) and `have` tokens of `width` bytes. */
static void write_raw(const char *path, uint32_t magic, uint32_t version, uint32_t count, const int32_t *tok,
                      size_t have, int width, size_t extra)
{
    size_t n = 1024 + have * (size_t)width + extra;
    unsigned char *b = (unsigned char *)calloc(n, 1);
    put32(b, magic); put32(b + 4, version); put32(b + 8, count);
    for (size_t i = 0; i < have; i++)
        for (int k = 0; k < width; k++) b[1024 + i * width + k] = (unsigned char)((uint32_t)tok[i] >> (8 * k));
    write_bytes(path, b, n);
    free(b);
}

/* A .npy file: `dict` is the header text; the whole header is padded with spaces and a newline
   to a multiple of `align` (1: no padding beyond the newline, so the data may be unaligned). */
static void write_npy(const char *path, int major, const char *dict, int align, const int32_t *tok, size_t n,
                      int width)
{
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict), hl = dl + 1;
    while ((pre + hl) % (size_t)align) hl++;
    size_t total = pre + hl + n * (size_t)width;
    unsigned char *b = (unsigned char *)calloc(total, 1);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major; b[7] = 0;
    if (major == 1) { b[8] = (unsigned char)hl; b[9] = (unsigned char)(hl >> 8); }
    else put32(b + 8, (uint32_t)hl);
    memcpy(b + pre, dict, dl);
    memset(b + pre + dl, ' ', hl - dl - 1);
    b[pre + hl - 1] = '\n';
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < width; k++) b[pre + hl + i * width + k] = (unsigned char)((uint32_t)tok[i] >> (8 * k));
    write_bytes(path, b, total);
    free(b);
}

static sc_data_config config(int rank, int world, int shuffle, uint64_t seed, int vocab)
{
    sc_data_config c;
    memset(&c, 0, sizeof c);
    c.B = NB; c.T = NT; c.rank = rank; c.world = world; c.shuffle = shuffle; c.shuffle_seed = seed; c.vocab_size = vocab;
    return c;
}

/* r must be `want` and the message must contain each of the (up to three) strings. */
static void expect(const char *name, sc_result r, sc_result want, const char *s1, const char *s2, const char *s3)
{
    const char *m = sc_last_error();
    check(r == want && (!s1 || strstr(m, s1)) && (!s2 || strstr(m, s2)) && (!s3 || strstr(m, s3)), name,
          "got %s, want %s; message \"%s\"", sc_result_string(r), sc_result_string(want), m);
}

/* Open pattern alone and expect failure. */
static void expect_open(const char *name, const char *pattern, const sc_data_config *c, sc_result want,
                        const char *s1, const char *s2, const char *s3)
{
    sc_data *d = NULL;
    sc_result r = sc_data_open(&d, pattern, c);
    expect(name, r, want, s1, s2, s3);
    if (r == SC_SUCCESS) sc_data_close(d);
    else if (d) check(0, name, "failed open left *out set");
}

/* ---- the plain stream: shards of 20, 5 and 13 tokens -> 3 + 0 + 2 batches ---- */
static const int seq_len[3] = {20, 5, 13};
/* token i of shard k (k = 0 a, 1 b, 2 c) */
static int32_t seq_tok(int k, int i) { return (int32_t)(1000 * (k + 1) + i); }

static void write_seq(void)
{
    int32_t t[64];
    const char *names[3] = {TMP "seq_a.bin", TMP "seq_b.bin", TMP "seq_c.bin"};
    for (int k = 2; k >= 0; k--) { /* written out of order: the reader sorts */
        for (int i = 0; i < seq_len[k]; i++) t[i] = seq_tok(k, i);
        sc_result r = sc_data_write_shard(names[k], t, (size_t)seq_len[k], 0);
        check(r == SC_SUCCESS, "write_shard", "%s", sc_last_error());
    }
}

/* The global batch g of the seq stream: shard a's batches 0..2, then c's 0..1, then again. */
static void seq_expected(int64_t g, int32_t *out)
{
    int64_t k = g % 5;
    int shard = k < 3 ? 0 : 2, j = (int)(k < 3 ? k : k - 3);
    for (int i = 0; i < BT; i++) out[i] = seq_tok(shard, j * BT + i);
}

static int batch_is(const int32_t *got, int64_t g)
{
    int32_t want[BT];
    seq_expected(g, want);
    return !memcmp(got, want, sizeof want);
}

static void test_sequence(void)
{
    sc_data_config c = config(0, 0, 0, 0, 0);
    sc_data *d = NULL;
    sc_result r = sc_data_open(&d, TMP "seq_*.bin", &c);
    check(r == SC_SUCCESS, "open seq_*.bin", "%s", sc_last_error());
    if (r != SC_SUCCESS) return;
    CHECK(sc_data_shard_count(d) == 3 && sc_data_epoch_batches(d) == 5,
          "3 shards, 5 batches an epoch (3 + 0 + 2; tails of 2, 5 and 1 tokens skipped)");
    CHECK(!strcmp(sc_data_shard_name(d, 0), TMP "seq_a.bin") && !strcmp(sc_data_shard_name(d, 2), TMP "seq_c.bin") &&
              sc_data_shard_name(d, 3) == NULL,
          "shards sorted by name; out of range -> NULL");
    CHECK(sc_data_shard_tokens(d, 0) == 20 && sc_data_shard_tokens(d, 1) == 5 && sc_data_shard_tokens(d, 2) == 13,
          "token counts 20, 5, 13");
    int32_t got[BT];
    int ok = 1;
    for (int g = 0; g < 12 && ok; g++) ok = sc_data_next(d, got) == SC_SUCCESS && batch_is(got, g);
    CHECK(ok, "12 batches = 2.4 epochs, each the expected B*T tokens");
    CHECK(sc_data_position(d) == 12, "position 12 after 12 batches");
    sc_data_seek(d, 2);
    sc_data_next(d, got);
    CHECK(got[0] == 1012 && got[5] == 1017, "batch 2: shard a's tokens 12..17 (rows [1012 1013 1014] [1015 1016 1017])");
    sc_data_next(d, got);
    CHECK(got[0] == 3000 && got[5] == 3005, "batch 3: shard a's tail (18, 19) and shard b skipped, c's 0..5");
    sc_data_next(d, got);
    CHECK(got[0] == 3006 && got[5] == 3011, "batch 4: c's 6..11 (c's token 12 skipped)");
    sc_data_next(d, got);
    CHECK(got[0] == 1000 && got[5] == 1005, "batch 5: a new epoch starts with shard a again");
    sc_data_close(d);

    /* two ranks: interleaved, and together the one-rank stream */
    sc_data *d0 = NULL, *d1 = NULL;
    sc_data_config c0 = config(0, 2, 0, 0, 0), c1 = config(1, 2, 0, 0, 0);
    if (sc_data_open(&d0, TMP "seq_*.bin", &c0) || sc_data_open(&d1, TMP "seq_*.bin", &c1)) {
        check(0, "open two ranks", "%s", sc_last_error());
        sc_data_close(d0);
        return;
    }
    int ok0 = 1, ok1 = 1;
    for (int i = 0; i < 7; i++) {
        ok0 &= sc_data_next(d0, got) == SC_SUCCESS && batch_is(got, 2 * i);
        ok1 &= sc_data_next(d1, got) == SC_SUCCESS && batch_is(got, 2 * i + 1);
    }
    CHECK(ok0 && ok1, "W=2: rank 0 reads global batches 0, 2, ..., 12; rank 1 reads 1, 3, ..., 13");
    CHECK(sc_data_position(d0) == 14 && sc_data_position(d1) == 14, "both ranks at global position 14 after 7 batches");
    CHECK(sc_data_hash(d0) == sc_data_hash(d1), "the data hash does not depend on the rank");
    sc_data_seek(d1, 6);
    CHECK(sc_data_next(d1, got) == SC_SUCCESS && batch_is(got, 7) && sc_data_position(d1) == 8,
          "W=2 rank 1 after seek(6): global batch 7, position 8");
    sc_data_close(d0);
    sc_data_close(d1);

    /* seek == reading from the start */
    c = config(0, 1, 0, 0, 0);
    if (sc_data_open(&d, TMP "seq_*.bin", &c)) { check(0, "open", "%s", sc_last_error()); return; }
    ok = 1;
    for (int64_t p = 23; p >= 0 && ok; p -= 4) {
        ok = sc_data_seek(d, p) == SC_SUCCESS && sc_data_position(d) == p;
        for (int64_t g = p; g < p + 6 && ok; g++) ok = sc_data_next(d, got) == SC_SUCCESS && batch_is(got, g);
    }
    CHECK(ok, "seek(p) for p = 23, 19, ..., 3 (backwards too), then 6 batches: global batches p..p+5");
    CHECK(sc_data_seek(d, (int64_t)1 << 50) == SC_SUCCESS && sc_data_next(d, got) == SC_SUCCESS &&
              batch_is(got, (int64_t)1 << 50),
          "seek(2^50): O(1), the right batch");
    expect("seek(-1) fails", sc_data_seek(d, -1), SC_ERROR_INVALID_ARGS, "position -1", NULL, NULL);
    sc_data_close(d);
}

/* ---- shuffle: shards of 40 (+3 tokens tail) and 25 batches ---- */
#define SH0 40
#define SH1 25
#define SHE (SH0 + SH1)

/* batch id of a shuffled batch: shard*100 + index in the shard; -1 if it is not a whole batch */
static int shuf_id(const int32_t *x)
{
    int k = x[0] / 10000 - 1, i = x[0] % 10000;
    if (k < 0 || k > 1 || i % BT) return -1;
    for (int t = 1; t < BT; t++)
        if (x[t] != x[0] + t) return -1;
    return k * 100 + i / BT;
}

static void read_ids(sc_data *d, int *ids, int n)
{
    int32_t got[BT];
    for (int i = 0; i < n; i++) ids[i] = sc_data_next(d, got) == SC_SUCCESS ? shuf_id(got) : -2;
}

static void test_shuffle(void)
{
    static int32_t t[SH0 * BT + 3];
    for (int i = 0; i < SH0 * BT + 3; i++) t[i] = 10000 + i;
    sc_data_write_shard(TMP "shuf_0.bin", t, SH0 * BT + 3, 0);
    for (int i = 0; i < SH1 * BT; i++) t[i] = 20000 + i;
    sc_data_write_shard(TMP "shuf_1.bin", t, SH1 * BT, 1);

    enum { N = 3 * SHE + 7 };
    static int a[N], b[N], c2[N], w0[N], w1[N], s[N];
    sc_data *d = NULL;
    sc_data_config c = config(0, 1, 1, 42, 0);
    if (sc_data_open(&d, TMP "shuf_*.bin", &c)) { check(0, "open shuf", "%s", sc_last_error()); return; }
    CHECK(sc_data_epoch_batches(d) == SHE, "shuffle: 65 batches an epoch");
    read_ids(d, a, N);
    int perm = 1, in_order = 1;
    for (int e = 0; e < 3; e++) {
        int seen[200] = {0};
        for (int i = 0; i < SHE; i++) {
            int id = a[e * SHE + i];
            int want_shard = i < SH0 ? 0 : 1; /* shard order stays sorted */
            if (id < 0 || id / 100 != want_shard || seen[id]++) perm = 0;
            if (id != want_shard * 100 + (i < SH0 ? i : i - SH0)) in_order = 0;
        }
    }
    CHECK(perm, "each epoch: shard 0's 40 batches in some order, then shard 1's 25, each exactly once");
    CHECK(!in_order, "the order is not the unshuffled one");
    CHECK(memcmp(a, a + SHE, SHE * sizeof *a) && memcmp(a + SHE, a + 2 * SHE, SHE * sizeof *a),
          "epochs 0, 1, 2 are in different orders");
    sc_data_close(d);

    if (sc_data_open(&d, TMP "shuf_*.bin", &c)) { check(0, "open shuf", "%s", sc_last_error()); return; }
    read_ids(d, b, N);
    CHECK(!memcmp(a, b, sizeof a), "same seed: the same %d batches", N);
    uint64_t h42 = sc_data_hash(d);
    int ok = 1;
    for (int p = N - 1; p >= 0 && ok; p -= 17) { /* backwards: the cached permutation must be replaced */
        sc_data_seek(d, p);
        read_ids(d, s, N - p < 9 ? N - p : 9);
        ok = !memcmp(s, a + p, (size_t)(N - p < 9 ? N - p : 9) * sizeof *s);
    }
    CHECK(ok, "shuffle: seek(p) then reading gives the batches p, p+1, ... of the whole run");
    sc_data_close(d);

    c.shuffle_seed = 43;
    if (sc_data_open(&d, TMP "shuf_*.bin", &c)) { check(0, "open shuf", "%s", sc_last_error()); return; }
    read_ids(d, c2, N);
    CHECK(memcmp(a, c2, sizeof a) != 0, "another seed: another order");
    CHECK(sc_data_hash(d) != h42, "another seed: another data hash");
    sc_data_close(d);

    sc_data *d0 = NULL, *d1 = NULL;
    sc_data_config c0 = config(0, 2, 1, 42, 0), c1 = config(1, 2, 1, 42, 0);
    if (sc_data_open(&d0, TMP "shuf_*.bin", &c0) || sc_data_open(&d1, TMP "shuf_*.bin", &c1)) {
        check(0, "open shuf two ranks", "%s", sc_last_error());
        sc_data_close(d0);
        return;
    }
    read_ids(d0, w0, N / 2);
    read_ids(d1, w1, N / 2);
    ok = 1;
    for (int i = 0; i < N / 2; i++) ok &= w0[i] == a[2 * i] && w1[i] == a[2 * i + 1];
    CHECK(ok, "shuffle, W=2: the ranks' batches interleave to the one-rank order");
    sc_data_close(d0);
    sc_data_close(d1);
}

/* ---- formats: the same tokens as uint16, uint32 and .npy give the same batches ---- */
static void test_formats(void)
{
    enum { N = 47 }; /* 7 batches and a 5-token tail */
    int32_t t[N];
    for (int i = 0; i < N; i++) t[i] = (int32_t)((i * 7919) % 60000);
    sc_result r = sc_data_write_shard(TMP "fmt_u16.bin", t, N, 0);
    if (r == SC_SUCCESS) r = sc_data_write_shard(TMP "fmt_u32.bin", t, N, 1);
    check(r == SC_SUCCESS, "write_shard u16 and u32", "%s", sc_last_error());
    char dict[200];
    snprintf(dict, sizeof dict, "{'descr': '<u2', 'fortran_order': False, 'shape': (%d,), }", N);
    write_npy(TMP "fmt_u2.npy", 1, dict, 64, t, N, 2);
    snprintf(dict, sizeof dict, "{'descr': '<u4', 'fortran_order': False, 'shape': (%d,), }", N);
    write_npy(TMP "fmt_u4.npy", 2, dict, 64, t, N, 4);
    snprintf(dict, sizeof dict, "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": ( %d , ) }", N);
    write_npy(TMP "fmt_i4.npy", 3, dict, 1, t, N, 4); /* unaligned data, spaces, other quotes */
    snprintf(dict, sizeof dict, "{'shape': (%d,), 'fortran_order': False, 'descr': '<i4'}", N);
    write_npy(TMP "fmt_i4b.data", 1, dict, 16, t, N, 4); /* keys in another order, no .npy extension */

    struct stat st;
    CHECK(stat(TMP "fmt_u16.bin", &st) == 0 && st.st_size == 1024 + 2 * N, "uint16 shard: 1024 + 2n bytes");
    CHECK(stat(TMP "fmt_u32.bin", &st) == 0 && st.st_size == 1024 + 4 * N, "force_u32: 1024 + 4n bytes");

    const char *files[6] = {TMP "fmt_u16.bin", TMP "fmt_u32.bin", TMP "fmt_u2.npy", TMP "fmt_u4.npy",
                            TMP "fmt_i4.npy", TMP "fmt_i4b.data"};
    sc_data_config c = config(0, 1, 0, 0, 60000);
    for (int f = 0; f < 6; f++) {
        sc_data *d = NULL;
        r = sc_data_open(&d, files[f], &c);
        char name[160];
        snprintf(name, sizeof name, "%s: 7 batches an epoch, 16 batches equal to the tokens written", files[f]);
        if (r != SC_SUCCESS) { check(0, name, "%s", sc_last_error()); continue; }
        int ok = sc_data_epoch_batches(d) == 7 && sc_data_shard_tokens(d, 0) == N;
        int32_t got[BT];
        for (int g = 0; g < 16 && ok; g++)
            ok = sc_data_next(d, got) == SC_SUCCESS && !memcmp(got, t + (g % 7) * BT, sizeof got);
        check(ok, name, "batches differ");
        sc_data_close(d);
    }

    /* a token >= 65536 makes the shard uint32 by itself */
    int32_t big[BT] = {0, 65535, 65536, 151000, 7, 2147483647};
    r = sc_data_write_shard(TMP "big.bin", big, BT, 0);
    sc_data *d = NULL;
    sc_data_config c2 = config(0, 1, 0, 0, 0);
    int32_t got[BT];
    CHECK(r == SC_SUCCESS && stat(TMP "big.bin", &st) == 0 && st.st_size == 1024 + 4 * BT &&
              sc_data_open(&d, TMP "big.bin", &c2) == SC_SUCCESS && sc_data_next(d, got) == SC_SUCCESS &&
              !memcmp(got, big, sizeof big),
          "tokens >= 65536 (up to 2^31-1): written as uint32 and read back exactly");
    sc_data_close(d);
    static const int32_t neg[2] = {5, -3};
    expect("write_shard: a negative token", sc_data_write_shard(TMP "neg.bin", neg, 2, 0), SC_ERROR_RANGE, "neg.bin",
           "token 1 is negative", NULL);

    /* the same dataset under another directory has the same hash */
    sc_data *d1 = NULL, *d2 = NULL;
    mkdir(TMP "moved", 0777);
    int32_t t2[N];
    memcpy(t2, t, sizeof t);
    sc_data_write_shard(TMP "moved/fmt_u16.bin", t2, N, 0);
    if (sc_data_open(&d1, TMP "fmt_u16.bin", &c) == SC_SUCCESS && sc_data_open(&d2, TMP "moved/fmt_u16.bin", &c) == SC_SUCCESS) {
        CHECK(sc_data_hash(d1) == sc_data_hash(d2), "data hash: the same file name and size in another directory match");
        sc_data_close(d2);
        d2 = NULL;
        sc_data_config c3 = c;
        c3.T = NT + 1;
        if (sc_data_open(&d2, TMP "fmt_u16.bin", &c3) == SC_SUCCESS)
            CHECK(sc_data_hash(d1) != sc_data_hash(d2), "data hash: another T, another hash");
    }
    sc_data_close(d1);
    sc_data_close(d2);
}

/* ---- bad input ---- */
static void test_bad(void)
{
    int32_t t[64];
    for (int i = 0; i < 64; i++) t[i] = i;
    sc_data_config c = config(0, 1, 0, 0, 0);

    write_raw(TMP "bad_magic.bin", 20240519, 1, 20, t, 20, 2, 0);
    expect_open("bad magic", TMP "bad_magic.bin", &c, SC_ERROR_FORMAT, TMP "bad_magic.bin", "magic 20240519", NULL);
    write_raw(TMP "bad_version.bin", 20240520, 2, 20, t, 20, 2, 0);
    expect_open("bad version", TMP "bad_version.bin", &c, SC_ERROR_FORMAT, TMP "bad_version.bin", "version 2", NULL);
    write_raw(TMP "bad_trunc.bin", 20240801, 1, 20, t, 19, 4, 0);
    expect_open("truncated shard", TMP "bad_trunc.bin", &c, SC_ERROR_FORMAT, TMP "bad_trunc.bin", "truncated", "20 tokens");
    write_raw(TMP "bad_long.bin", 20240520, 1, 20, t, 20, 2, 2);
    expect_open("shard longer than its count", TMP "bad_long.bin", &c, SC_ERROR_FORMAT, TMP "bad_long.bin",
                "2 bytes after the 20 tokens", NULL);
    write_bytes(TMP "bad_short.bin", t, 100);
    expect_open("file shorter than the header", TMP "bad_short.bin", &c, SC_ERROR_FORMAT, TMP "bad_short.bin",
                "100 bytes", NULL);
    write_bytes(TMP "bad_empty.bin", t, 0);
    expect_open("empty file", TMP "bad_empty.bin", &c, SC_ERROR_FORMAT, TMP "bad_empty.bin", "empty", NULL);
    mkdir(TMP "bad_dir.bin", 0777);
    expect_open("a directory matched", TMP "bad_dir.bin", &c, SC_ERROR_IO, TMP "bad_dir.bin", "not a regular file", NULL);
    expect_open("empty glob", TMP "nothing_*.bin", &c, SC_ERROR_IO, TMP "nothing_*.bin", NULL, NULL);

    /* vocab: three shards, the bad one in the middle, tokens 70 at 17 and 99 at 9000 */
    static int32_t v[10000];
    for (int i = 0; i < 10000; i++) v[i] = i % 64;
    sc_data_write_shard(TMP "voc_0.bin", v, 10000, 0);
    sc_data_write_shard(TMP "voc_2.bin", v, 10000, 1);
    v[17] = 70; v[9000] = 99;
    sc_data_write_shard(TMP "voc_1.bin", v, 10000, 0);
    sc_data_config cv = config(0, 1, 0, 0, 64);
    expect_open("token >= vocab_size: shard, first position and value named", TMP "voc_*.bin", &cv, SC_ERROR_RANGE,
                TMP "voc_1.bin", "token at position 17 is 70", "vocab_size 64");
    cv.vocab_size = 71;
    expect_open("vocab_size 71: the next bad token", TMP "voc_*.bin", &cv, SC_ERROR_RANGE, TMP "voc_1.bin",
                "token at position 9000 is 99", NULL);
    cv.vocab_size = 100;
    expect_open("vocab_size 100: all three shards open", TMP "voc_*.bin", &cv, SC_SUCCESS, NULL, NULL, NULL);
    v[9999] = 100;
    sc_data_write_shard(TMP "voc_1.bin", v, 10000, 0);
    expect_open("the last token checked too", TMP "voc_*.bin", &cv, SC_ERROR_RANGE, "token at position 9999 is 100", NULL, NULL);

    /* npy */
    int32_t n4[12] = {1, 2, 3, 4, 5, -7, 7, 8, 9, 10, 11, 12};
    write_npy(TMP "bad_neg.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (12,), }", 64, n4, 12, 4);
    cv.vocab_size = 100;
    expect_open("negative int32 .npy token", TMP "bad_neg.npy", &cv, SC_ERROR_RANGE, TMP "bad_neg.npy",
                "token at position 5 is negative (-7)", NULL);
    {
        sc_data *d = NULL;
        int32_t got[BT];
        sc_result r = sc_data_open(&d, TMP "bad_neg.npy", &c);
        if (r == SC_SUCCESS) r = sc_data_next(d, got);
        expect("negative .npy token without vocab_size: next fails", r, SC_ERROR_RANGE, TMP "bad_neg.npy",
               "token at position 5 is negative: -7", NULL);
        sc_data_close(d);
    }
    n4[5] = (int32_t)0x80000001u;
    write_npy(TMP "bad_huge.npy", 1, "{'descr': '<u4', 'fortran_order': False, 'shape': (12,), }", 64, n4, 12, 4);
    {
        sc_data *d = NULL;
        int32_t got[BT];
        sc_result r = sc_data_open(&d, TMP "bad_huge.npy", &c);
        if (r == SC_SUCCESS) r = sc_data_next(d, got);
        expect("uint32 token >= 2^31 without vocab_size: next fails", r, SC_ERROR_RANGE, TMP "bad_huge.npy",
               "beyond int32", NULL);
        sc_data_close(d);
    }
    write_npy(TMP "bad_2d.npy", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2, 6), }", 64, t, 12, 2);
    expect_open(".npy 2-D", TMP "bad_2d.npy", &c, SC_ERROR_SHAPE, TMP "bad_2d.npy", "2 dimensions", NULL);
    write_npy(TMP "bad_0d.npy", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (), }", 64, t, 1, 2);
    expect_open(".npy 0-D", TMP "bad_0d.npy", &c, SC_ERROR_SHAPE, TMP "bad_0d.npy", "0 dimensions", NULL);
    write_npy(TMP "bad_fortran.npy", 1, "{'descr': '<u2', 'fortran_order': True, 'shape': (12,), }", 64, t, 12, 2);
    expect_open(".npy fortran order", TMP "bad_fortran.npy", &c, SC_ERROR_SHAPE, TMP "bad_fortran.npy", "fortran_order True",
                NULL);
    write_npy(TMP "bad_f4.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (12,), }", 64, t, 12, 4);
    expect_open(".npy float32", TMP "bad_f4.npy", &c, SC_ERROR_SHAPE, TMP "bad_f4.npy", "'<f4'", NULL);
    write_npy(TMP "bad_be.npy", 1, "{'descr': '>u2', 'fortran_order': False, 'shape': (12,), }", 64, t, 12, 2);
    expect_open(".npy big-endian uint16", TMP "bad_be.npy", &c, SC_ERROR_SHAPE, TMP "bad_be.npy", "'>u2'", NULL);
    write_npy(TMP "bad_i8.npy", 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (6,), }", 64, t, 12, 4);
    expect_open(".npy int64", TMP "bad_i8.npy", &c, SC_ERROR_SHAPE, TMP "bad_i8.npy", "'<i8'", NULL);
    write_npy(TMP "bad_ntrunc.npy", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (13,), }", 64, t, 12, 2);
    expect_open(".npy shorter than its shape", TMP "bad_ntrunc.npy", &c, SC_ERROR_FORMAT, TMP "bad_ntrunc.npy", "truncated",
                NULL);
    write_npy(TMP "bad_nlong.npy", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (11,), }", 64, t, 12, 2);
    expect_open(".npy longer than its shape", TMP "bad_nlong.npy", &c, SC_ERROR_FORMAT, TMP "bad_nlong.npy",
                "2 bytes after the 11 tokens", NULL);
    write_npy(TMP "bad_nkey.npy", 1, "{'descr': '<u2', 'shape': (12,), }", 64, t, 12, 2);
    expect_open(".npy without fortran_order", TMP "bad_nkey.npy", &c, SC_ERROR_FORMAT, TMP "bad_nkey.npy", "lacks", NULL);
    write_npy(TMP "bad_nver.npy", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (12,), }", 64, t, 12, 2);
    {
        FILE *f = fopen(TMP "bad_nver.npy", "r+b");
        if (f) { fseek(f, 6, SEEK_SET); fputc(9, f); fclose(f); }
    }
    expect_open(".npy version 9.0", TMP "bad_nver.npy", &c, SC_ERROR_FORMAT, TMP "bad_nver.npy", "version 9.0", NULL);
    unsigned char hdr[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0xff, 0x7f, '{', '}'};
    write_bytes(TMP "bad_nhl.npy", hdr, sizeof hdr);
    expect_open(".npy header length past the end", TMP "bad_nhl.npy", &c, SC_ERROR_FORMAT, TMP "bad_nhl.npy",
                "runs past the end", NULL);

    write_bytes(TMP "bad_n8.npy", hdr, 8);
    expect_open(".npy of 8 bytes", TMP "bad_n8.npy", &c, SC_ERROR_FORMAT, TMP "bad_n8.npy", "truncated", NULL);
    write_npy(TMP "bad_nshape.npy", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (12, x), }", 64, t, 12, 2);
    expect_open(".npy shape not numbers", TMP "bad_nshape.npy", &c, SC_ERROR_FORMAT, TMP "bad_nshape.npy", "malformed",
                NULL);

    /* configuration */
    sc_data_config cb = config(0, 1, 0, 0, 0);
    cb.T = 7; /* 7 * 2 = 14 > 13 tokens */
    write_raw(TMP "small.bin", 20240520, 1, 13, t, 13, 2, 0);
    expect_open("no shard holds one batch", TMP "small.bin", &cb, SC_ERROR_INVALID_ARGS, "B*T = 14", "largest holds 13", NULL);
    cb.T = 0;
    expect_open("T = 0", TMP "small.bin", &cb, SC_ERROR_INVALID_ARGS, "T = 0", NULL, NULL);
    cb = config(2, 2, 0, 0, 0);
    expect_open("rank 2 of 2", TMP "small.bin", &cb, SC_ERROR_INVALID_ARGS, "rank 2 of world 2", NULL, NULL);
    cb = config(1, 0, 0, 0, 0);
    expect_open("rank 1 of world 0", TMP "small.bin", &cb, SC_ERROR_INVALID_ARGS, "rank 1 of world 0", NULL, NULL);
    expect_open("NULL pattern", NULL, &c, SC_ERROR_INVALID_ARGS, "NULL", NULL, NULL);
    sc_data_close(NULL); /* no-op */
    CHECK(sc_data_position(NULL) == 0 && sc_data_shard_count(NULL) == 0, "NULL reader: position 0, no shards");
}

int main(void)
{
    mkdir("build", 0777);
    mkdir("build/tmp_data", 0777);
    write_seq();
    test_sequence();
    test_shuffle();
    test_formats();
    test_bad();
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail != 0;
}
