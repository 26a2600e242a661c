/* tests/fuzz_config.c: libFuzzer harness for the JSON parser and config.json reader (see
   make fuzz). Walks every parsed JSON node; a config that parses must survive a
   write -> read round trip unchanged. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"

#include <stdlib.h>
#include <string.h>

static int fuzz_cfg_equal(const sc_config *a, const sc_config *b)
{
    return a->arch == b->arch && a->vocab_size == b->vocab_size && a->hidden_size == b->hidden_size &&
           a->intermediate_size == b->intermediate_size && a->num_layers == b->num_layers &&
           a->num_heads == b->num_heads && a->num_kv_heads == b->num_kv_heads && a->head_dim == b->head_dim &&
           a->max_position == b->max_position && a->tie_embeddings == b->tie_embeddings &&
           a->attention_bias == b->attention_bias && a->qk_norm == b->qk_norm && a->rope_theta == b->rope_theta &&
           a->rms_eps == b->rms_eps && a->init_std == b->init_std;
}

#ifdef __cplusplus
extern "C"
#endif
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    sc__json j;
    if (sc__json_parse(&j, text, size, "fuzz.json") == SC_SUCCESS) {
        size_t total = 0;
        for (int i = 0; i < j.n; i++) {
            if (j.nodes[i].key) total += j.nodes[i].klen + (j.nodes[i].key[j.nodes[i].klen] == 0);
            if (j.nodes[i].type == SC__J_STR) total += j.nodes[i].slen + (j.nodes[i].s[j.nodes[i].slen] == 0);
            if (j.nodes[i].first >= j.n || j.nodes[i].next >= j.n) abort();
        }
        if (total > 2 * size + 2) abort();
        sc__json_free(&j);
    }
    sc_config c, c2;
    if (sc_config_from_json(&c, text, size, "fuzz.json") == SC_SUCCESS) {
        sc__buf b = {NULL, 0, 0, 0};
        if (sc__config_json(&c, "bfloat16", &b) != SC_SUCCESS) abort();
        if (sc_config_from_json(&c2, b.p, b.n, "roundtrip.json") != SC_SUCCESS || !fuzz_cfg_equal(&c, &c2)) abort();
        SC_FREE(b.p);
    }
    return 0;
}
