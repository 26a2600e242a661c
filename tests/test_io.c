/* tests/test_io.c: JSON, config.json, safetensors, HF directories and token files.
   Run from the repository root; temporary files go to build/tmp_io/. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TMP "build/tmp_io/"

static int n_pass, n_fail;

static void check(const char *name, int ok, const char *detail)
{
    if (ok) { printf("PASS %s\n", name); n_pass++; }
    else { printf("FAIL %s: %s\n", name, detail); n_fail++; }
}

/* r must be `want` and the error message must contain each of the (up to two) strings. */
static void expect(const char *name, sc_result r, sc_result want, const char *s1, const char *s2)
{
    char d[1400];
    const char *msg = sc_last_error();
    int ok = r == want && (!s1 || strstr(msg, s1)) && (!s2 || strstr(msg, s2));
    snprintf(d, sizeof d, "got %s (%d), want %s; message \"%s\"", sc_result_string(r), (int)r, sc_result_string(want), msg);
    check(name, ok, d);
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(2); }
    if (n) fwrite(p, 1, n, f);
    fclose(f);
}

/* A safetensors file from a header text (stored with its exact length) and data bytes. */
static size_t make_st(unsigned char *out, const char *hdr, const void *data, size_t dlen)
{
    uint64_t n = strlen(hdr);
    for (int k = 0; k < 8; k++) out[k] = (unsigned char)(n >> (8 * k));
    memcpy(out + 8, hdr, n);
    if (dlen) memcpy(out + 8 + n, data, dlen);
    return 8 + n + dlen;
}
static void write_st(const char *path, const char *hdr, const void *data, size_t dlen)
{
    static unsigned char buf[1 << 16];
    write_bytes(path, buf, make_st(buf, hdr, data, dlen));
}

static sc_st_entry entry(const char *name, const char *dtype, int ndim, const int64_t *shape, const void *data, int is_f32)
{
    sc_st_entry e;
    memset(&e, 0, sizeof e);
    e.name = name; e.dtype = dtype; e.ndim = ndim; e.data = data; e.data_is_f32 = is_f32;
    for (int i = 0; i < ndim; i++) e.shape[i] = shape[i];
    return e;
}

/* ---- JSON ---- */
static void test_json(void)
{
    sc__json j;
    const char *ok = " {\"a\": [1, -2, 3.5e2, true, false, null], \"s\": \"x\\n\\u00e9\\ud83d\\ude00\\ud800z\", "
                     "\"big\": 123456789012345678901, \"i\": -9223372036854775808, \"o\": {}} ";
    sc_result r = sc__json_parse(&j, ok, strlen(ok), "t.json");
    check("json_parse_valid", r == SC_SUCCESS, sc_last_error());
    if (r == SC_SUCCESS) {
        int a = sc__json_get(&j, 0, "a"), s = sc__json_get(&j, 0, "s"), big = sc__json_get(&j, 0, "big");
        int i = sc__json_get(&j, 0, "i");
        check("json_array", a >= 0 && j.nodes[a].n == 6 && j.nodes[j.nodes[a].first].is_int && j.nodes[j.nodes[a].first].i == 1,
              "array content");
        int third = j.nodes[j.nodes[j.nodes[a].first].next].next;
        check("json_float", !j.nodes[third].is_int && j.nodes[third].num == 350.0, "3.5e2");
        check("json_escapes", s >= 0 && j.nodes[s].slen == 12 &&
              !memcmp(j.nodes[s].s, "x\n\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbdz", 12), "decoded string");
        check("json_big_int_not_exact", big >= 0 && !j.nodes[big].is_int && j.nodes[big].num > 1e20, "big");
        check("json_int64_min", i >= 0 && j.nodes[i].is_int && j.nodes[i].i == INT64_MIN, "int64 min");
        sc__json_free(&j);
    }
    static const char *const bad[] = {"", "{", "{\"a\":}", "[1,]", "[1 2]", "{\"a\" 1}", "\"abc", "\"\\x\"", "\"\\u12g4\"",
                                      "01", "-", "1.", "1e", "tru", "nul", "[1]]", "{\"a\":1,}", "1e999", "\"a\x01\"", "{1:2}"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char nm[64];
        snprintf(nm, sizeof nm, "json_reject_%zu", k);
        r = sc__json_parse(&j, bad[k], strlen(bad[k]), "bad.json");
        expect(nm, r, SC_ERROR_FORMAT, "file 'bad.json'", "at byte");
        if (r == SC_SUCCESS) sc__json_free(&j);
    }
    char deep[200];
    memset(deep, '[', 100); memset(deep + 100, ']', 100);
    r = sc__json_parse(&j, deep, 200, "deep.json");
    expect("json_depth_limit", r, SC_ERROR_FORMAT, "nested too deeply", NULL);
    r = sc__json_parse(&j, deep + 40, 120, "deep.json");
    check("json_depth_60_ok", r == SC_SUCCESS, sc_last_error());
    if (r == SC_SUCCESS) sc__json_free(&j);
    r = sc__json_parse(&j, "[1, @]", 6, "off.json");
    expect("json_error_offset", r, SC_ERROR_FORMAT, "at byte 4", NULL);
}

/* ---- config.json ---- */
static int cfg_equal(const sc_config *a, const sc_config *b)
{
    return a->arch == b->arch && a->vocab_size == b->vocab_size && a->hidden_size == b->hidden_size &&
           a->intermediate_size == b->intermediate_size && a->num_layers == b->num_layers &&
           a->num_heads == b->num_heads && a->num_kv_heads == b->num_kv_heads && a->head_dim == b->head_dim &&
           a->max_position == b->max_position && a->tie_embeddings == b->tie_embeddings &&
           a->attention_bias == b->attention_bias && a->qk_norm == b->qk_norm && a->rope_theta == b->rope_theta &&
           a->rms_eps == b->rms_eps && a->init_std == b->init_std;
}

static sc_result cfg_parse(sc_config *c, const char *body)
{
    return sc_config_from_json(c, body, strlen(body), "cfg.json");
}

#define BASE3 "\"model_type\": \"qwen3\", \"vocab_size\": 96, \"hidden_size\": 48, \"intermediate_size\": 80, " \
              "\"num_hidden_layers\": 2, \"num_attention_heads\": 4"

static void test_config(void)
{
    static const char *const names[] = {"tiny", "qwen3-0.6b", "qwen3-1.7b", "qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-7b"};
    sc_config a, b;
    char nm[96], path[128];
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        sc_config_named(&a, names[k]);
        a.init_std = 0.0173; /* something that needs many digits */
        snprintf(path, sizeof path, TMP "config_%s.json", names[k]);
        sc_result r = sc_config_write(&a, path, k % 2 ? "bfloat16" : "float32");
        if (r == SC_SUCCESS) r = sc_config_read(&b, path);
        snprintf(nm, sizeof nm, "config_roundtrip_%s", names[k]);
        check(nm, r == SC_SUCCESS && cfg_equal(&a, &b), sc_last_error());
    }
    {
        snprintf(path, sizeof path, TMP "config_tiny.json");
        char *text; size_t len;
        sc__read_file(path, 1 << 20, &text, &len);
        check("config_written_keys", text && strstr(text, "\"architectures\": [\"Qwen3ForCausalLM\"]") &&
              strstr(text, "\"rope_parameters\": {\"rope_theta\": 10000.0, \"rope_type\": \"default\"}") &&
              strstr(text, "\"rope_theta\": 10000.0,") && strstr(text, "\"rms_norm_eps\": 1e-06") &&
              strstr(text, "\"dtype\": \"float32\"") && strstr(text, "\"hidden_act\": \"silu\"") &&
              strstr(text, "\"tie_word_embeddings\": true"), text ? text : "unreadable");
        SC_FREE(text);
        check("config_no_tmp_left", !sc__file_exists(TMP "config_tiny.json.tmp"), "config_tiny.json.tmp exists");
    }
    sc_config c;
    sc_result r = cfg_parse(&c, "{" BASE3 ", \"rope_theta\": 5e5}");
    check("config_rope_theta_top", r == SC_SUCCESS && c.rope_theta == 5e5 && c.head_dim == 12 && c.num_kv_heads == 4 &&
          c.qk_norm && !c.attention_bias && !c.tie_embeddings && c.max_position == 32768 && c.rms_eps == 1e-6, sc_last_error());
    r = cfg_parse(&c, "{" BASE3 ", \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 250000.0}, \"head_dim\": 16}");
    check("config_rope_parameters", r == SC_SUCCESS && c.rope_theta == 250000.0 && c.head_dim == 16, sc_last_error());
    r = cfg_parse(&c, "{" BASE3 ", \"rope_theta\": 1e6, \"rope_parameters\": {\"rope_theta\": 1000000}}");
    check("config_rope_both_agree", r == SC_SUCCESS && c.rope_theta == 1e6, sc_last_error());
    r = cfg_parse(&c, "{" BASE3 "}");
    check("config_rope_default", r == SC_SUCCESS && c.rope_theta == 10000.0, sc_last_error());
    expect("config_rope_both_disagree", cfg_parse(&c, "{" BASE3 ", \"rope_theta\": 1e6, \"rope_parameters\": {\"rope_theta\": 1e4}}"),
           SC_ERROR_FORMAT, "cfg.json", "disagree");
    expect("config_rope_scaling_yarn", cfg_parse(&c, "{" BASE3 ", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4}}"),
           SC_ERROR_UNSUPPORTED, "cfg.json", "yarn");
    expect("config_rope_parameters_linear", cfg_parse(&c, "{" BASE3 ", \"rope_parameters\": {\"rope_type\": \"linear\", \"rope_theta\": 1e4}}"),
           SC_ERROR_UNSUPPORTED, "cfg.json", "linear");
    r = cfg_parse(&c, "{" BASE3 ", \"rope_scaling\": null, \"head_dim\": null, \"num_key_value_heads\": 2}");
    check("config_head_dim_null", r == SC_SUCCESS && c.head_dim == 12 && c.num_kv_heads == 2, sc_last_error());
    r = cfg_parse(&c, "{" BASE3 ", \"torch_dtype\": \"bfloat16\"}");
    check("config_torch_dtype", r == SC_SUCCESS, sc_last_error());
    r = cfg_parse(&c, "{" BASE3 ", \"dtype\": \"float16\"}");
    check("config_dtype", r == SC_SUCCESS, sc_last_error());
    expect("config_dtype_int8", cfg_parse(&c, "{" BASE3 ", \"dtype\": \"int8\"}"), SC_ERROR_UNSUPPORTED, "cfg.json", "int8");
    expect("config_dtype_not_string", cfg_parse(&c, "{" BASE3 ", \"torch_dtype\": 3}"), SC_ERROR_FORMAT, "cfg.json", "torch_dtype");
    expect("config_model_type_llama", cfg_parse(&c, "{\"model_type\": \"llama\", \"vocab_size\": 8}"), SC_ERROR_UNSUPPORTED,
           "cfg.json", "llama");
    expect("config_model_type_missing", cfg_parse(&c, "{\"vocab_size\": 8}"), SC_ERROR_FORMAT, "cfg.json", "model_type");
    r = cfg_parse(&c, "{\"architectures\": [\"Qwen2ForCausalLM\"], \"vocab_size\": 80, \"hidden_size\": 40, "
                      "\"intermediate_size\": 72, \"num_hidden_layers\": 2, \"num_attention_heads\": 5, \"num_key_value_heads\": 1, "
                      "\"attention_bias\": false}");
    check("config_architectures_qwen2", r == SC_SUCCESS && c.arch == SC_ARCH_QWEN2 && c.attention_bias && !c.qk_norm &&
          c.head_dim == 8, sc_last_error());
    expect("config_missing_vocab", cfg_parse(&c, "{\"model_type\": \"qwen3\", \"hidden_size\": 48}"), SC_ERROR_FORMAT,
           "cfg.json", "'vocab_size' is missing");
    expect("config_hidden_string", cfg_parse(&c, "{\"model_type\": \"qwen3\", \"vocab_size\": 96, \"hidden_size\": \"48\"}"),
           SC_ERROR_FORMAT, "'hidden_size'", "a string");
    expect("config_hidden_fraction", cfg_parse(&c, "{\"model_type\": \"qwen3\", \"vocab_size\": 96, \"hidden_size\": 48.5}"),
           SC_ERROR_FORMAT, "'hidden_size'", "integer");
    expect("config_vocab_negative", cfg_parse(&c, "{\"model_type\": \"qwen3\", \"vocab_size\": -5}"), SC_ERROR_FORMAT,
           "'vocab_size'", NULL);
    expect("config_vocab_huge", cfg_parse(&c, "{\"model_type\": \"qwen3\", \"vocab_size\": 99999999999}"), SC_ERROR_FORMAT,
           "'vocab_size'", NULL);
    expect("config_absurd_sizes", cfg_parse(&c, "{" BASE3 ", \"num_hidden_layers\": 1000000}"), SC_ERROR_FORMAT, "cfg.json", "beyond");
    expect("config_kv_not_dividing", cfg_parse(&c, "{" BASE3 ", \"num_key_value_heads\": 3}"), SC_ERROR_FORMAT, "cfg.json",
           "must divide");
    expect("config_tie_not_bool", cfg_parse(&c, "{" BASE3 ", \"tie_word_embeddings\": 1}"), SC_ERROR_FORMAT, "tie_word_embeddings", NULL);
    r = cfg_parse(&c, "{" BASE3 ", \"tie_word_embeddings\": true, \"rms_norm_eps\": 1e-5, \"initializer_range\": 0.1, "
                      "\"max_position_embeddings\": 64}");
    check("config_optional_keys", r == SC_SUCCESS && c.tie_embeddings && c.rms_eps == 1e-5 && c.init_std == 0.1 &&
          c.max_position == 64, sc_last_error());
    expect("config_qwen3_attention_bias", cfg_parse(&c, "{" BASE3 ", \"attention_bias\": true}"), SC_ERROR_UNSUPPORTED,
           "cfg.json", "attention_bias");
    expect("config_sliding_window", cfg_parse(&c, "{" BASE3 ", \"use_sliding_window\": true}"), SC_ERROR_UNSUPPORTED,
           "cfg.json", "sliding");
    expect("config_hidden_act", cfg_parse(&c, "{" BASE3 ", \"hidden_act\": \"gelu\"}"), SC_ERROR_UNSUPPORTED, "cfg.json", "gelu");
    expect("config_layer_types", cfg_parse(&c, "{" BASE3 ", \"layer_types\": [\"full_attention\", \"sliding_attention\"]}"),
           SC_ERROR_UNSUPPORTED, "cfg.json", "layer_types");
    expect("config_not_json", cfg_parse(&c, "{" BASE3 ","), SC_ERROR_FORMAT, "cfg.json", "invalid JSON");
    expect("config_not_object", cfg_parse(&c, "[1]"), SC_ERROR_FORMAT, "cfg.json", "object");
    expect("config_read_missing_file", sc_config_read(&c, TMP "no_such_config.json"), SC_ERROR_IO, "no_such_config.json", NULL);
    r = cfg_parse(&c, "{" BASE3 ", \"model_type\": \"qwen2\"}");
    check("config_duplicate_key_last_wins", r == SC_SUCCESS && c.arch == SC_ARCH_QWEN2, sc_last_error());
    sc_config_named(&a, "tiny");
    a.attention_bias = 1;
    expect("config_write_non_hf_combination", sc_config_write(&a, TMP "bad_config.json", NULL), SC_ERROR_UNSUPPORTED, NULL, NULL);
    check("config_write_failed_leaves_nothing", !sc__file_exists(TMP "bad_config.json") && !sc__file_exists(TMP "bad_config.json.tmp"),
          "file left behind");
}

/* ---- safetensors ---- */
static void test_safetensors_roundtrip(void)
{
    float f32[15], bfsrc[6], back[16];
    uint16_t f16[7] = {0x3c00, 0xc000, 0x0001, 0x7bff, 0x8000, 0x7c00, 0x3555}; /* 1, -2, min subnormal, 65504, -0, inf, ~1/3 */
    int32_t i32[4] = {0, -1, 2147483647, -2147483647 - 1}, ib[5];
    int64_t i64[5] = {0, 1, -1, 2147483647, -2147483647LL - 1};
    float scalar = 3.25f;
    for (int i = 0; i < 15; i++) f32[i] = (float)i * 0.37f - 2.0f;
    for (int i = 0; i < 6; i++) bfsrc[i] = 1.0f + (float)i / 3.0f;
    const int64_t s35[2] = {3, 5}, s231[3] = {2, 3, 1}, s7[1] = {7}, s1114[4] = {1, 1, 1, 4}, s5[1] = {5}, s03[2] = {0, 3};
    sc_st_entry e[7];
    e[0] = entry("a.f32", "F32", 2, s35, f32, 1);
    e[1] = entry("b.bf16", "BF16", 3, s231, bfsrc, 1);
    e[2] = entry("c.f16", "F16", 1, s7, f16, 0);
    e[3] = entry("d \"quoted\"\\name", "I32", 4, s1114, i32, 0);
    e[4] = entry("e.i64", "I64", 1, s5, i64, 0);
    e[5] = entry("f.empty", "F32", 2, s03, NULL, 1);
    e[6] = entry("g.scalar", "F32", 0, NULL, &scalar, 1);
    const char *meta[4] = {"format", "pt", "note", "h\xc3\xa9llo \"x\""};
    sc_result r = sc_safetensors_write(TMP "roundtrip.safetensors", e, 7, meta, 2);
    check("st_write", r == SC_SUCCESS, sc_last_error());
    check("st_write_no_tmp_left", !sc__file_exists(TMP "roundtrip.safetensors.tmp"), "tmp left");
    sc_safetensors st;
    r = sc_safetensors_open(&st, TMP "roundtrip.safetensors");
    check("st_open", r == SC_SUCCESS, sc_last_error());
    if (r != SC_SUCCESS) return;
    check("st_header_aligned", st.data_start % 8 == 0 && st.n_tensors == 7, "header not 8-aligned");
    check("st_meta", st.n_meta == 2 && sc_safetensors_meta(&st, "format") && !strcmp(sc_safetensors_meta(&st, "format"), "pt") &&
          !strcmp(sc_safetensors_meta(&st, "note"), meta[3]) && !sc_safetensors_meta(&st, "nope"), "metadata");
    r = sc_safetensors_read_f32(&st, "a.f32", back, 2, s35);
    check("st_f32", r == SC_SUCCESS && !memcmp(back, f32, sizeof f32), sc_last_error());
    r = sc_safetensors_read_f32(&st, "b.bf16", back, 3, s231);
    int ok = r == SC_SUCCESS;
    for (int i = 0; ok && i < 6; i++) ok = back[i] == sc_bf16_to_f32(sc_f32_to_bf16(bfsrc[i])) && back[i] != bfsrc[i] * 0 + 1e9f;
    check("st_bf16", ok, sc_last_error());
    r = sc_safetensors_read_f32(&st, "c.f16", back, 1, s7);
    check("st_f16", r == SC_SUCCESS && back[0] == 1.0f && back[1] == -2.0f && back[2] == ldexpf(1.0f, -24) &&
          back[3] == 65504.0f && back[4] == 0.0f && signbit(back[4]) && isinf(back[5]) && fabsf(back[6] - 1.0f / 3) < 1e-3f,
          sc_last_error());
    r = sc_safetensors_read_i32(&st, "d \"quoted\"\\name", ib, 4, s1114);
    check("st_i32_escaped_name", r == SC_SUCCESS && !memcmp(ib, i32, sizeof i32), sc_last_error());
    r = sc_safetensors_read_i32(&st, "e.i64", ib, 1, s5);
    check("st_i64", r == SC_SUCCESS && ib[0] == 0 && ib[1] == 1 && ib[2] == -1 && ib[3] == 2147483647 && ib[4] == -2147483647 - 1,
          sc_last_error());
    r = sc_safetensors_read_f32(&st, "f.empty", NULL, 2, s03);
    check("st_empty_tensor", r == SC_SUCCESS, sc_last_error());
    back[0] = 0;
    r = sc_safetensors_read_f32(&st, "g.scalar", back, 0, s03);
    check("st_scalar", r == SC_SUCCESS && back[0] == 3.25f, sc_last_error());
    r = sc_safetensors_read_f32(&st, "a.f32", back, 0, NULL);
    check("st_no_shape_check", r == SC_SUCCESS && back[14] == f32[14], sc_last_error());
    const int64_t s53[2] = {5, 3};
    expect("st_wrong_shape", sc_safetensors_read_f32(&st, "a.f32", back, 2, s53), SC_ERROR_SHAPE, "tensor 'a.f32'",
           "shape [3, 5], expected [5, 3]");
    expect("st_wrong_ndim", sc_safetensors_read_f32(&st, "a.f32", back, 1, s35), SC_ERROR_SHAPE, "roundtrip.safetensors", "expected [3]");
    expect("st_missing_tensor", sc_safetensors_read_f32(&st, "zz", back, 0, NULL), SC_ERROR_FORMAT, "roundtrip.safetensors",
           "tensor 'zz' is missing");
    expect("st_int_as_float", sc_safetensors_read_f32(&st, "e.i64", back, 0, NULL), SC_ERROR_SHAPE, "e.i64", "I64");
    expect("st_float_as_int", sc_safetensors_read_i32(&st, "a.f32", ib, 0, NULL), SC_ERROR_SHAPE, "a.f32", "F32");
    sc_safetensors_close(&st);

    /* the same bytes through the memory reader */
    char *buf; size_t len;
    sc__read_file(TMP "roundtrip.safetensors", 1 << 20, &buf, &len);
    r = sc_safetensors_open_memory(&st, buf, len);
    check("st_open_memory", r == SC_SUCCESS && st.n_tensors == 7, sc_last_error());
    if (r == SC_SUCCESS) {
        r = sc_safetensors_read_f32(&st, "b.bf16", back, 3, s231);
        check("st_memory_bf16", r == SC_SUCCESS && back[1] == sc_bf16_to_f32(sc_f32_to_bf16(bfsrc[1])), sc_last_error());
        sc_safetensors_close(&st);
    }
    SC_FREE(buf);
    /* a file that shrinks after it was opened (beyond what stdio buffered): short read */
    {
        const int64_t sb[1] = {100000};
        float *big = (float *)calloc(100000, sizeof *big);
        sc_st_entry eb = entry("big", "F32", 1, sb, big, 1);
        sc_safetensors_write(TMP "shrinks.safetensors", &eb, 1, NULL, 0);
        r = sc_safetensors_open(&st, TMP "shrinks.safetensors");
        if (r == SC_SUCCESS) {
            write_bytes(TMP "shrinks.safetensors", big, 1000);
            expect("st_truncated_after_open", sc_safetensors_read_f32(&st, "big", big, 1, sb), SC_ERROR_IO, "shrinks.safetensors",
                   "tensor 'big'");
            sc_safetensors_close(&st);
        }
        free(big);
    }

    /* writer argument errors */
    sc_st_entry bad = entry("x", "U8", 1, s5, i32, 0);
    expect("st_write_bad_dtype", sc_safetensors_write(TMP "w.safetensors", &bad, 1, NULL, 0), SC_ERROR_INVALID_ARGS, "x", NULL);
    sc_st_entry dup[2] = {entry("x", "I32", 1, s5, i32, 0), entry("x", "I32", 1, s5, i32, 0)};
    expect("st_write_duplicate", sc_safetensors_write(TMP "w.safetensors", dup, 2, NULL, 0), SC_ERROR_INVALID_ARGS, "twice", NULL);
    expect("st_write_no_dir", sc_safetensors_write(TMP "no/such/dir/w.safetensors", e, 1, NULL, 0), SC_ERROR_IO, "no/such/dir", NULL);
    check("st_write_failures_leave_nothing", !sc__file_exists(TMP "w.safetensors") && !sc__file_exists(TMP "w.safetensors.tmp"),
          "file left");
}

/* Open a hand-made file and expect an error code (and message parts); also through memory. */
static void lying(const char *name, const char *hdr, const void *data, size_t dlen, sc_result want, const char *s2)
{
    static unsigned char buf[1 << 16];
    char path[160], nm[160];
    snprintf(path, sizeof path, TMP "lie_%s.safetensors", name);
    size_t n = make_st(buf, hdr, data, dlen);
    write_bytes(path, buf, n);
    sc_safetensors st;
    snprintf(nm, sizeof nm, "st_reject_%s", name);
    sc_result r = sc_safetensors_open(&st, path);
    expect(nm, r, want, path + strlen(TMP), s2);
    if (r == SC_SUCCESS) sc_safetensors_close(&st);
    snprintf(nm, sizeof nm, "st_reject_%s_memory", name);
    r = sc_safetensors_open_memory(&st, buf, n);
    expect(nm, r, want, "<memory>", s2);
    if (r == SC_SUCCESS) sc_safetensors_close(&st);
}

static void test_safetensors_lies(void)
{
    unsigned char d[64];
    for (int i = 0; i < 64; i++) d[i] = (unsigned char)i;
    lying("not_json", "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}", d, 8, SC_ERROR_FORMAT, "invalid JSON");
    lying("garbage", "\x01\x02hello", d, 0, SC_ERROR_FORMAT, "invalid JSON");
    lying("not_object", "[1, 2]      ", d, 0, SC_ERROR_FORMAT, "must be a JSON object");
    lying("overlap", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
          d, 12, SC_ERROR_FORMAT, "overlap");
    lying("gap", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
          d, 12, SC_ERROR_FORMAT, "gap");
    lying("not_from_zero", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", d, 8, SC_ERROR_FORMAT, "gap");
    lying("beyond_file", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", d, 8, SC_ERROR_FORMAT, "run past");
    lying("begin_after_end", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", d, 8, SC_ERROR_FORMAT, "before they begin");
    lying("size_mismatch", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", d, 8, SC_ERROR_FORMAT, "needs 12");
    lying("bf16_size_mismatch", "{\"a\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", d, 16, SC_ERROR_FORMAT, "needs 8");
    lying("negative_shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", d, 8, SC_ERROR_FORMAT, "non-negative");
    lying("fraction_shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", d, 8, SC_ERROR_FORMAT, "tensor 'a'");
    lying("too_many_dims", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}}", d, 8, SC_ERROR_FORMAT, "at most 8");
    lying("overflow_shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4611686018427387904,4],\"data_offsets\":[0,0]}}",
          d, 0, SC_ERROR_FORMAT, "too large");
    lying("overflow_bytes", "{\"a\":{\"dtype\":\"F64\",\"shape\":[2305843009213693952],\"data_offsets\":[0,0]}}", d, 0, SC_ERROR_FORMAT,
          "too large");
    lying("huge_offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[99999999999999999999,99999999999999999999]}}",
          d, 0, SC_ERROR_FORMAT, "data_offsets");
    lying("unknown_dtype", "{\"a\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}", d, 8, SC_ERROR_FORMAT, "unknown dtype 'Q4'");
    lying("dtype_not_string", "{\"a\":{\"dtype\":4,\"shape\":[2],\"data_offsets\":[0,8]}}", d, 8, SC_ERROR_FORMAT, "dtype");
    lying("missing_offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", d, 8, SC_ERROR_FORMAT, "data_offsets");
    lying("three_offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4,8]}}", d, 8, SC_ERROR_FORMAT, "[begin, end]");
    lying("entry_not_object", "{\"a\":[1]}", d, 0, SC_ERROR_FORMAT, "tensor 'a'");
    lying("duplicate_name", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
          d, 8, SC_ERROR_FORMAT, "twice");
    lying("metadata_not_string", "{\"__metadata__\":{\"k\":1}}", d, 0, SC_ERROR_FORMAT, "__metadata__");
    lying("trailing_data", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d, 8, SC_ERROR_FORMAT, "after the last tensor");
    lying("nul_in_name", "{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d, 4, SC_ERROR_FORMAT, "NUL");

    /* header length lies */
    unsigned char buf[64];
    sc_safetensors st;
    uint64_t big = 1000;
    for (int k = 0; k < 8; k++) buf[k] = (unsigned char)(big >> (8 * k));
    memcpy(buf + 8, "{}      ", 8);
    write_bytes(TMP "lie_header_len.safetensors", buf, 16);
    expect("st_reject_header_len_beyond_file", sc_safetensors_open(&st, TMP "lie_header_len.safetensors"), SC_ERROR_FORMAT,
           "lie_header_len.safetensors", "header length 1000");
    expect("st_reject_header_len_beyond_memory", sc_safetensors_open_memory(&st, buf, 16), SC_ERROR_FORMAT, "<memory>", "header length");
    big = 0xffffffffffffffffull;
    for (int k = 0; k < 8; k++) buf[k] = (unsigned char)(big >> (8 * k));
    expect("st_reject_header_len_max", sc_safetensors_open_memory(&st, buf, 16), SC_ERROR_FORMAT, "<memory>", "header length");
    write_bytes(TMP "lie_short.safetensors", buf, 5);
    expect("st_reject_too_short", sc_safetensors_open(&st, TMP "lie_short.safetensors"), SC_ERROR_FORMAT, "lie_short", "too short");
    expect("st_reject_empty_file", (write_bytes(TMP "lie_empty.safetensors", buf, 0), sc_safetensors_open(&st, TMP "lie_empty.safetensors")),
           SC_ERROR_FORMAT, "lie_empty", "too short");
    expect("st_reject_missing_file", sc_safetensors_open(&st, TMP "no_such.safetensors"), SC_ERROR_IO, "no_such.safetensors", NULL);

    /* a valid file with its data cut short */
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const int64_t s8[1] = {8};
    sc_st_entry e = entry("w", "F32", 1, s8, x, 1);
    sc_safetensors_write(TMP "lie_truncated.safetensors", &e, 1, NULL, 0);
    char *b; size_t len;
    sc__read_file(TMP "lie_truncated.safetensors", 1 << 20, &b, &len);
    write_bytes(TMP "lie_truncated.safetensors", b, len - 3);
    SC_FREE(b);
    expect("st_reject_truncated_data", sc_safetensors_open(&st, TMP "lie_truncated.safetensors"), SC_ERROR_FORMAT,
           "lie_truncated.safetensors", "tensor 'w'");

    /* valid but unsupported dtypes: open works, reading says unsupported */
    write_st(TMP "u8.safetensors", "{\"m\":{\"dtype\":\"U8\",\"shape\":[2,2],\"data_offsets\":[0,4]},\"n\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[4,12]}}",
             d, 12);
    sc_result r = sc_safetensors_open(&st, TMP "u8.safetensors");
    check("st_open_u8_f64", r == SC_SUCCESS && st.n_tensors == 2, sc_last_error());
    if (r == SC_SUCCESS) {
        float f[4];
        int32_t i[4];
        expect("st_read_u8_unsupported", sc_safetensors_read_f32(&st, "m", f, 0, NULL), SC_ERROR_UNSUPPORTED, "tensor 'm'", "U8");
        expect("st_read_f64_unsupported", sc_safetensors_read_f32(&st, "n", f, 0, NULL), SC_ERROR_UNSUPPORTED, "tensor 'n'", "F64");
        expect("st_read_u8_as_int_unsupported", sc_safetensors_read_i32(&st, "m", i, 0, NULL), SC_ERROR_UNSUPPORTED, "tensor 'm'", NULL);
        sc_safetensors_close(&st);
    }
    /* an empty file (no tensors) is valid */
    write_st(TMP "empty_ok.safetensors", "{}      ", NULL, 0);
    r = sc_safetensors_open(&st, TMP "empty_ok.safetensors");
    check("st_open_no_tensors", r == SC_SUCCESS && st.n_tensors == 0, sc_last_error());
    if (r == SC_SUCCESS) sc_safetensors_close(&st);
}

/* ---- token files ---- */
static void test_tokens(void)
{
    int32_t ids[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, *got = NULL;
    int B, T;
    sc_result r = sc_tokens_write(TMP "tokens.safetensors", ids, 2, 5);
    if (r == SC_SUCCESS) r = sc_tokens_read(TMP "tokens.safetensors", &got, &B, &T);
    check("tokens_roundtrip", r == SC_SUCCESS && B == 2 && T == 5 && !memcmp(got, ids, sizeof ids), sc_last_error());
    sc_tokens_free(got);
    const int64_t s6[1] = {6}, s22[2] = {2, 2}, s0[1] = {0}, s1_1[2] = {1, 1}, s05[2] = {0, 5}, s3[1] = {3}, s123[3] = {1, 2, 3};
    int64_t l6[6] = {5, 4, 3, 2, 1, 0}, lbig[3] = {1, 1LL << 40, 2}, lneg[2 * 2] = {1, 2, 3, -7};
    float fl[3] = {1, 2, 3};
    struct { const char *name; sc_st_entry e; sc_result want; const char *msg; } cases[] = {
        {"tokens_i64_1d", entry("input_ids", "I64", 1, s6, l6, 0), SC_SUCCESS, NULL},
        {"tokens_negative", entry("input_ids", "I64", 2, s22, lneg, 0), SC_ERROR_RANGE, "token id -7 at [1,1]"},
        {"tokens_empty", entry("input_ids", "I32", 1, s0, NULL, 0), SC_ERROR_FORMAT, "input_ids"},
        {"tokens_single", entry("input_ids", "I32", 2, s1_1, ids, 0), SC_ERROR_FORMAT, "input_ids"},
        {"tokens_no_batch", entry("input_ids", "I32", 2, s05, NULL, 0), SC_ERROR_FORMAT, "input_ids"},
        {"tokens_i64_overflow", entry("input_ids", "I64", 1, s3, lbig, 0), SC_ERROR_RANGE, "does not fit int32"},
        {"tokens_float", entry("input_ids", "F32", 1, s3, fl, 1), SC_ERROR_SHAPE, "F32"},
        {"tokens_3d", entry("input_ids", "I32", 3, s123, ids, 0), SC_ERROR_SHAPE, "input_ids"},
        {"tokens_missing", entry("labels", "I32", 1, s3, ids, 0), SC_ERROR_FORMAT, "no tensor 'input_ids'"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char path[128];
        snprintf(path, sizeof path, TMP "%s.safetensors", cases[k].name);
        sc_safetensors_write(path, &cases[k].e, 1, NULL, 0);
        got = NULL;
        r = sc_tokens_read(path, &got, &B, &T);
        if (cases[k].want == SC_SUCCESS)
            check(cases[k].name, r == SC_SUCCESS && B == 1 && T == 6 && got[0] == 5 && got[5] == 0, sc_last_error());
        else
            expect(cases[k].name, r, cases[k].want, path + strlen(TMP), cases[k].msg);
        check("tokens_no_leak_on_error", r == SC_SUCCESS || got == NULL, "ids set on failure");
        sc_tokens_free(got);
    }
    sc_config c;
    sc_config_named(&c, "tiny");
    int32_t t2[6] = {0, 1, 511, 3, 512, 5};
    check("tokens_check_ok", sc_tokens_check(t2, 1, 4, &c) == SC_SUCCESS, sc_last_error());
    expect("tokens_check_vocab", sc_tokens_check(t2, 2, 3, &c), SC_ERROR_RANGE, "token id 512 at [1,1]", "vocab_size 512");
    t2[4] = -1;
    expect("tokens_check_negative", sc_tokens_check(t2, 2, 3, &c), SC_ERROR_RANGE, "token id -1 at [1,1]", NULL);
    c.max_position = 2;
    expect("tokens_check_max_position", sc_tokens_check(t2, 2, 3, &c), SC_ERROR_RANGE, "max_position_embeddings 2", NULL);
}

/* ---- HF directories ---- */
static float *random_params(const sc_config *c, uint64_t seed)
{
    size_t n = sc_config_num_params(c);
    float *p = (float *)malloc(n * sizeof *p);
    sc_rng g = sc_rng_seed(seed);
    for (size_t i = 0; i < n; i++) p[i] = sc_rng_normal(&g) * 0.05f;
    return p;
}

static int params_equal(const float *a, const float *b, size_t n) { return !memcmp(a, b, n * sizeof *a); }

/* Write cfg's params to a file leaving out / reshaping / adding tensors; n_tab entries used. */
static void write_partial(const char *path, const sc_config *c, const float *p, const char *skip, const char *reshape,
                          const char *extra)
{
    int n = sc_config_params(c, NULL, 0);
    sc_param_info *tab = (sc_param_info *)malloc((size_t)n * sizeof *tab);
    sc_st_entry *e = (sc_st_entry *)calloc((size_t)n + 1, sizeof *e);
    int m = 0;
    sc_config_params(c, tab, n);
    for (int i = 0; i < n; i++) {
        if (skip && !strcmp(tab[i].name, skip)) continue;
        e[m] = entry(tab[i].name, "F32", tab[i].ndim, tab[i].shape, p + tab[i].offset, 1);
        if (reshape && !strcmp(tab[i].name, reshape) && tab[i].ndim == 2) { e[m].shape[0] = tab[i].shape[1]; e[m].shape[1] = tab[i].shape[0]; }
        m++;
    }
    if (extra) e[m++] = entry(extra, "F32", tab[0].ndim, tab[0].shape, p, 1);
    sc_result r = sc_safetensors_write(path, e, m, NULL, 0);
    if (r != SC_SUCCESS) printf("(write_partial: %s)\n", sc_last_error());
    free(tab);
    free(e);
}

static void test_hf(void)
{
    sc_config c, c2;
    sc_config_named(&c, "tiny");
    size_t n = sc_config_num_params(&c);
    float *p = random_params(&c, 7), *q = (float *)calloc(n, sizeof *q);
    sc_result r = sc_hf_write(TMP "hf_tiny", &c, p, 0);
    if (r == SC_SUCCESS) r = sc_hf_read_config(TMP "hf_tiny", &c2);
    if (r == SC_SUCCESS) r = sc_hf_read_params(TMP "hf_tiny", &c2, q);
    check("hf_roundtrip_f32", r == SC_SUCCESS && cfg_equal(&c, &c2) && params_equal(p, q, n), sc_last_error());
    {
        sc_safetensors st;
        r = sc_safetensors_open(&st, TMP "hf_tiny/model.safetensors");
        check("hf_format_pt_and_no_lm_head", r == SC_SUCCESS && sc_safetensors_meta(&st, "format") &&
              !strcmp(sc_safetensors_meta(&st, "format"), "pt") && !sc_safetensors_find(&st, "lm_head.weight") &&
              !strcmp(sc_safetensors_find(&st, "model.layers.0.self_attn.q_proj.weight")->dtype, "F32"), sc_last_error());
        if (r == SC_SUCCESS) sc_safetensors_close(&st);
    }
    r = sc_hf_write(TMP "hf_tiny_bf16", &c, p, 1);
    if (r == SC_SUCCESS) r = sc_hf_read_params(TMP "hf_tiny_bf16", &c, q);
    float *pr = (float *)malloc(n * sizeof *pr);
    memcpy(pr, p, n * sizeof *pr);
    sc_round_bf16_inplace(pr, n);
    check("hf_roundtrip_bf16", r == SC_SUCCESS && params_equal(pr, q, n), sc_last_error());
    free(pr);

    /* untied qwen2 with biases */
    sc_config u;
    sc_config_named(&u, "tiny");
    u.arch = SC_ARCH_QWEN2; u.attention_bias = 1; u.qk_norm = 0; u.tie_embeddings = 0; u.num_layers = 2;
    size_t nu = sc_config_num_params(&u);
    float *pu = random_params(&u, 9), *qu = (float *)calloc(nu, sizeof *qu);
    r = sc_hf_write(TMP "hf_qwen2", &u, pu, 0);
    if (r == SC_SUCCESS) r = sc_hf_read_config(TMP "hf_qwen2", &c2);
    if (r == SC_SUCCESS) r = sc_hf_read_params(TMP "hf_qwen2", &c2, qu);
    check("hf_roundtrip_qwen2_untied", r == SC_SUCCESS && cfg_equal(&u, &c2) && params_equal(pu, qu, nu), sc_last_error());

    /* missing / wrong-shaped / extra tensors */
    write_partial(TMP "hf_bad/model.safetensors", &c, p, "model.layers.1.mlp.up_proj.weight", NULL, NULL);
    expect("hf_missing_tensor", sc_hf_read_params(TMP "hf_bad", &c, q), SC_ERROR_FORMAT, "hf_bad/model.safetensors",
           "'model.layers.1.mlp.up_proj.weight' is missing");
    write_partial(TMP "hf_bad/model.safetensors", &c, p, NULL, "model.layers.2.self_attn.o_proj.weight", NULL);
    expect("hf_wrong_shape", sc_hf_read_params(TMP "hf_bad", &c, q), SC_ERROR_SHAPE, "model.layers.2.self_attn.o_proj.weight",
           "shape [192, 128], expected [128, 192]");
    memset(q, 0, n * sizeof *q);
    write_partial(TMP "hf_bad/model.safetensors", &c, p, NULL, NULL, "lm_head.weight");
    r = sc_hf_read_params(TMP "hf_bad", &c, q);
    check("hf_tied_ignores_lm_head", r == SC_SUCCESS && params_equal(p, q, n), sc_last_error());
    write_partial(TMP "hf_bad/model.safetensors", &c, p, NULL, NULL, "model.layers.0.self_attn.rotary_emb.inv_freq");
    printf("(an 'unused tensor' warning on stderr is expected next)\n");
    fflush(stdout);
    r = sc_hf_read_params(TMP "hf_bad", &c, q);
    check("hf_extra_tensor_warns", r == SC_SUCCESS && params_equal(p, q, n), sc_last_error());
    expect("hf_wrong_arch", sc_hf_read_params(TMP "hf_qwen2", &c, q), SC_ERROR_FORMAT, "q_norm", "missing");
    expect("hf_missing_dir", sc_hf_read_params(TMP "hf_nowhere", &c, q), SC_ERROR_IO, "hf_nowhere/model.safetensors", NULL);

    /* sharded by hand: two shards and an index */
    {
        int np = sc_config_params(&c, NULL, 0);
        sc_param_info *tab = (sc_param_info *)malloc((size_t)np * sizeof *tab);
        sc_st_entry *e = (sc_st_entry *)calloc((size_t)np, sizeof *e);
        sc_config_params(&c, tab, np);
        for (int i = 0; i < np; i++) e[i] = entry(tab[i].name, i % 3 ? "F32" : "BF16", tab[i].ndim, tab[i].shape, p + tab[i].offset, 1);
        sc_config_write(&c, TMP "hf_shard/config.json", NULL);
        sc_safetensors_write(TMP "hf_shard/model-00001-of-00002.safetensors", e, np / 2, NULL, 0);
        sc_safetensors_write(TMP "hf_shard/model-00002-of-00002.safetensors", e + np / 2, np - np / 2, NULL, 0);
        sc__buf b = {NULL, 0, 0, 0};
        sc__buf_printf(&b, "{\"metadata\": {\"total_size\": 1}, \"weight_map\": {");
        for (int i = 0; i < np; i++)
            sc__buf_printf(&b, "%s\"%s\": \"model-0000%d-of-00002.safetensors\"", i ? ", " : "", tab[i].name, i < np / 2 ? 1 : 2);
        sc__buf_printf(&b, "}}");
        write_bytes(TMP "hf_shard/model.safetensors.index.json", b.p, b.n);
        memset(q, 0, n * sizeof *q);
        r = sc_hf_read_params(TMP "hf_shard", &c, q);
        int ok = r == SC_SUCCESS;
        for (int i = 0; ok && i < np; i++)
            for (size_t k = 0; ok && k < tab[i].numel; k++) {
                float want = p[tab[i].offset + k];
                if (i % 3 == 0) want = sc_bf16_to_f32(sc_f32_to_bf16(want));
                ok = q[tab[i].offset + k] == want;
            }
        check("hf_sharded_mixed_dtypes", ok, sc_last_error());
        /* a lying index: a shard name with a path, a tensor not in its shard, a missing entry */
        char *t = b.p, *at = strstr(t, "model-00002-of-00002.safetensors");
        memcpy(at, "../2", 4);
        write_bytes(TMP "hf_shard/model.safetensors.index.json", b.p, b.n);
        expect("hf_index_path_in_shard_name", sc_hf_read_params(TMP "hf_shard", &c, q), SC_ERROR_FORMAT, "index.json", "plain file name");
        memcpy(at, "mode", 4);
        at[10] = '1'; /* the entry now points to shard 1, which lacks the tensor */
        write_bytes(TMP "hf_shard/model.safetensors.index.json", b.p, b.n);
        expect("hf_index_wrong_shard", sc_hf_read_params(TMP "hf_shard", &c, q), SC_ERROR_FORMAT, "model-00001-of-00002.safetensors",
               "is missing");
        write_bytes(TMP "hf_shard/model.safetensors.index.json", "{\"weight_map\": {}}", 18);
        expect("hf_index_missing_entry", sc_hf_read_params(TMP "hf_shard", &c, q), SC_ERROR_FORMAT, "weight_map", "model.embed_tokens.weight");
        write_bytes(TMP "hf_shard/model.safetensors.index.json", "{\"weight_map\": [", 16);
        expect("hf_index_not_json", sc_hf_read_params(TMP "hf_shard", &c, q), SC_ERROR_FORMAT, "index.json", "invalid JSON");
        free(b.p); free(tab); free(e);
    }
    free(p); free(q); free(pu); free(qu);
}

/* ---- fixtures generated by tests/fixtures/gen_fixtures.py (skipped when absent) ---- */
static void fixture_load(const char *dir, sc_config *c, float **p)
{
    char nm[160];
    *p = NULL;
    snprintf(nm, sizeof nm, "fixture_%s_loads", dir + strlen("tests/fixtures/"));
    sc_result r = sc_hf_read_config(dir, c);
    if (r == SC_SUCCESS) {
        *p = (float *)calloc(sc_config_num_params(c), sizeof **p);
        r = sc_hf_read_params(dir, c, *p);
    }
    check(nm, r == SC_SUCCESS, sc_last_error());
    if (r != SC_SUCCESS) { free(*p); *p = NULL; }
}

static void test_fixtures(void)
{
    struct { const char *dir; sc_arch arch; int V, C, I, L, H, KV, D, maxpos, tie, bias; double theta, eps; int B, T; } fx[] = {
        {"tests/fixtures/qwen3_gqa_tied", SC_ARCH_QWEN3, 96, 48, 80, 2, 4, 2, 16, 64, 1, 0, 10000.0, 1e-6, 2, 11},
        {"tests/fixtures/qwen2_bias_untied", SC_ARCH_QWEN2, 80, 40, 72, 2, 5, 1, 8, 32, 0, 1, 1000000.0, 1e-5, 3, 7},
        {"tests/fixtures/qwen3_mha_untied", SC_ARCH_QWEN3, 64, 32, 48, 3, 2, 2, 24, 40, 0, 0, 500000.0, 1e-6, 1, 13},
        {"tests/fixtures/qwen3_sharded", SC_ARCH_QWEN3, 96, 48, 80, 2, 4, 2, 16, 64, 1, 0, 10000.0, 1e-6, 0, 0},
        {"tests/fixtures/qwen3_bf16", SC_ARCH_QWEN3, 96, 48, 80, 2, 4, 2, 16, 64, 1, 0, 10000.0, 1e-6, 0, 0},
    };
    float *ref = NULL;
    sc_config cref;
    for (size_t k = 0; k < sizeof fx / sizeof fx[0]; k++) {
        char path[200], nm[160];
        snprintf(path, sizeof path, "%s/config.json", fx[k].dir);
        if (!sc__file_exists(path)) { printf("SKIP %s (not generated)\n", fx[k].dir); continue; }
        sc_config c;
        float *p;
        sc_result r = sc_config_read(&c, path);
        snprintf(nm, sizeof nm, "fixture_%s_config", fx[k].dir + strlen("tests/fixtures/"));
        check(nm, r == SC_SUCCESS && c.arch == fx[k].arch && c.vocab_size == fx[k].V && c.hidden_size == fx[k].C &&
              c.intermediate_size == fx[k].I && c.num_layers == fx[k].L && c.num_heads == fx[k].H &&
              c.num_kv_heads == fx[k].KV && c.head_dim == fx[k].D && c.max_position == fx[k].maxpos &&
              c.tie_embeddings == fx[k].tie && c.attention_bias == fx[k].bias && c.rope_theta == fx[k].theta &&
              fabs(c.rms_eps - fx[k].eps) < 1e-12 * fx[k].eps + 1e-30, r == SC_SUCCESS ? "sizes differ" : sc_last_error());
        if (fx[k].B) { /* ref.safetensors holds the reference input_ids (I64) */
            int32_t *ids = NULL;
            int B = 0, T = 0;
            snprintf(path, sizeof path, "%s/ref.safetensors", fx[k].dir);
            r = sc_tokens_read(path, &ids, &B, &T);
            if (r == SC_SUCCESS) r = sc_tokens_check(ids, B, T, &c);
            snprintf(nm, sizeof nm, "fixture_%s_ref_tokens", fx[k].dir + strlen("tests/fixtures/"));
            check(nm, r == SC_SUCCESS && B == fx[k].B && T == fx[k].T, sc_last_error());
            sc_tokens_free(ids);
        }
        fixture_load(fx[k].dir, &c, &p);
        if (!p) continue;
        size_t n = sc_config_num_params(&c);
        if (k == 0) { ref = p; cref = c; continue; }
        if (k == 3 && ref) {
            check("fixture_sharded_bitwise_equal_to_qwen3_gqa_tied", n == sc_config_num_params(&cref) && params_equal(p, ref, n),
                  "differs");
        }
        if (k == 4) {
            /* weights_f32.safetensors holds each stored bf16 value as float32 */
            float *w = (float *)calloc(n, sizeof *w);
            int np = sc_config_params(&c, NULL, 0);
            sc_param_info *tab = (sc_param_info *)malloc((size_t)np * sizeof *tab);
            sc_safetensors st;
            sc_config_params(&c, tab, np);
            snprintf(path, sizeof path, "%s/weights_f32.safetensors", fx[k].dir);
            sc_result ro = sc_safetensors_open(&st, path);
            r = ro;
            for (int i = 0; r == SC_SUCCESS && i < np; i++)
                r = sc_safetensors_read_f32(&st, tab[i].name, w + tab[i].offset, tab[i].ndim, tab[i].shape);
            if (ro == SC_SUCCESS) sc_safetensors_close(&st);
            check("fixture_bf16_equals_weights_f32", r == SC_SUCCESS && params_equal(p, w, n), r ? sc_last_error() : "differs");
            if (ref) {
                float *rr = (float *)malloc(n * sizeof *rr);
                memcpy(rr, ref, n * sizeof *rr);
                sc_round_bf16_inplace(rr, n);
                check("fixture_bf16_is_rounded_qwen3_gqa_tied", params_equal(p, rr, n), "differs");
                free(rr);
            }
            free(w); free(tab);
        }
        free(p);
    }
    free(ref);
}

static void mkd(const char *d)
{
#ifdef _WIN32
    _mkdir(d);
#else
    mkdir(d, 0777);
#endif
}

int main(void)
{
    mkd("build"); mkd("build/tmp_io"); mkd(TMP "hf_bad"); mkd(TMP "hf_shard");
    test_json();
    test_config();
    test_safetensors_roundtrip();
    test_safetensors_lies();
    test_tokens();
    test_hf();
    test_fixtures();
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail != 0;
}
