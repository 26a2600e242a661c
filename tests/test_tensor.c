/* Tensors, dtype conversion, configs and the parameter table. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#include <math.h>
#include <string.h>

#include "check.h"

static float from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

int main(void)
{
    /* an error message that wraps the last one (sc_set_error's argument is sc_last_error()) */
    sc_set_error(SC_ERROR_IO, "inner %d", 7);
    sc_result er = sc_set_error(SC_ERROR_FORMAT, "outer: %s", sc_last_error());
    CHECK(er == SC_ERROR_FORMAT && !strcmp(sc_last_error(), "outer: inner 7"), "a message wrapping sc_last_error(): '%s'",
          sc_last_error());
    /* bf16: round to nearest, ties to even */
    CHECK(sc_f32_to_bf16(1.0f) == 0x3f80, "bf16(1.0) = 0x3f80");
    CHECK(sc_f32_to_bf16(from_bits(0x3f808000u)) == 0x3f80, "tie below goes to even (0x3f80)");
    CHECK(sc_f32_to_bf16(from_bits(0x3f818000u)) == 0x3f82, "tie above goes to even (0x3f82)");
    CHECK(sc_f32_to_bf16(from_bits(0x3f808001u)) == 0x3f81, "just over half rounds up");
    CHECK(sc_f32_to_bf16(from_bits(0x3f807fffu)) == 0x3f80, "just under half rounds down");
    CHECK(sc_f32_to_bf16(-2.5f) == 0xc020, "bf16(-2.5) = 0xc020");
    CHECK(sc_f32_to_bf16(INFINITY) == 0x7f80, "inf stays inf");
    CHECK(sc_f32_to_bf16(from_bits(0x7f7fffffu)) == 0x7f80, "FLT_MAX rounds to inf, as torch does");
    uint16_t nb = sc_f32_to_bf16(NAN);
    CHECK((nb & 0x7f80) == 0x7f80 && (nb & 0x7f), "NaN stays NaN (0x%04x)", nb);
    CHECK(sc_bf16_to_f32(0x4049) == 3.140625f, "bf16 0x4049 = 3.140625");
    float x[3] = {1.00390625f, 3.14159265f, -0.0f};
    sc_round_bf16_inplace(x, 3);
    CHECK(x[0] == 1.0f && x[1] == 3.140625f && signbit(x[2]), "round_bf16_inplace");
    /* f16 */
    CHECK(sc_f16_to_f32(0x3c00) == 1.0f && sc_f16_to_f32(0xc000) == -2.0f, "f16 1.0 and -2.0");
    CHECK(sc_f16_to_f32(0x0001) == ldexpf(1.0f, -24), "f16 smallest subnormal = 2^-24");
    CHECK(sc_f16_to_f32(0x7bff) == 65504.0f, "f16 max = 65504");
    CHECK(isinf(sc_f16_to_f32(0x7c00)) && isnan(sc_f16_to_f32(0x7e00)), "f16 inf and NaN");
    /* views */
    float buf[2 * 3 * 5];
    int64_t shape[3] = {2, 3, 5};
    sc_tensor t = sc_tensor_view(buf, SC_F32, SC_DEVICE_CPU, 3, shape, "x");
    CHECK(sc_tensor_numel(&t) == 30 && sc_tensor_nbytes(&t) == 120 && t.data == buf, "f32 view [2,3,5]");
    sc_tensor h = sc_tensor_view(buf, SC_BF16, SC_DEVICE_CUDA, 2, shape, "y");
    CHECK(sc_tensor_numel(&h) == 6 && sc_tensor_nbytes(&h) == 12 && h.device == SC_DEVICE_CUDA, "bf16 view [2,3]");
    CHECK(sc_dtype_size(SC_I32) == 4 && sc_dtype_size(SC_BF16) == 2, "dtype sizes");
    /* configs: the built-ins have the sizes of the real models */
    sc_config c;
    sc_config_named(&c, "qwen3-1.7b");
    CHECK(sc_config_num_params(&c) == 1720574976u, "qwen3-1.7b: %zu parameters (tied)", sc_config_num_params(&c));
    sc_config_named(&c, "qwen2.5-7b");
    CHECK(sc_config_num_params(&c) == 7615616512u, "qwen2.5-7b: %zu parameters (untied, biases)",
          sc_config_num_params(&c));
    sc_config_named(&c, "qwen2.5-0.5b");
    CHECK(sc_config_num_params(&c) == 494032768u, "qwen2.5-0.5b: %zu parameters", sc_config_num_params(&c));
    /* the table tiles the flat buffer exactly, in order, with no gaps */
    const char *names[] = {"tiny", "qwen3-0.6b", "qwen3-1.7b", "qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-7b"};
    for (int k = 0; k < 6; k++) {
        sc_config_named(&c, names[k]);
        int n = sc_config_params(&c, NULL, 0);
        sc_param_info *pi = (sc_param_info *)malloc(sizeof *pi * (size_t)n);
        sc_config_params(&c, pi, n);
        size_t off = 0;
        int ok = sc_config_validate(&c) == SC_SUCCESS;
        for (int i = 0; i < n; i++) {
            if (pi[i].offset != off) ok = 0;
            off += pi[i].numel;
        }
        CHECK(ok && off == sc_config_num_params(&c), "%s: %d parameter views tile the buffer", names[k], n);
        free(pi);
    }
    sc_config_named(&c, "tiny");
    c.num_kv_heads = 3;
    CHECK(sc_config_validate(&c) == SC_ERROR_FORMAT, "KV not dividing H rejected: %s", sc_last_error());
    sc_config_named(&c, "tiny");
    c.head_dim = 7;
    CHECK(sc_config_validate(&c) == SC_ERROR_FORMAT, "odd head_dim rejected: %s", sc_last_error());
    /* sizes */
    size_t sz = 0;
    CHECK(!sc_parse_size("6GiB", &sz) && sz == ((size_t)6 << 30), "6GiB");
    CHECK(!sc_parse_size("1.5GB", &sz) && sz == 1500000000u, "1.5GB");
    CHECK(sc_parse_size("12XB", &sz) && sc_parse_size("-1GiB", &sz) && sc_parse_size("", &sz), "bad sizes rejected");
    /* rng: seeded and repeatable */
    sc_rng a = sc_rng_seed(42), b = sc_rng_seed(42);
    double s = 0, s2 = 0;
    int same = 1;
    for (int i = 0; i < 100000; i++) {
        float u = sc_rng_normal(&a);
        same &= u == sc_rng_normal(&b);
        s += u; s2 += (double)u * u;
    }
    CHECK(same && fabs(s / 1e5) < 0.02 && fabs(s2 / 1e5 - 1.0) < 0.02, "normal rng: repeatable, mean %.4f var %.4f",
          s / 1e5, s2 / 1e5);
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail != 0;
}
