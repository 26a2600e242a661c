/* tests/fuzz.h: what the libFuzzer harnesses share; included after slidecheck.h's implementation
   (they read files back with its sc__read_file). */
#include <stdio.h>
#include <stdlib.h>

/* a one-layer Qwen3 small enough that a file of all its tensors is a few KiB */
static inline void fz_small_config(sc_config *c)
{
    if (sc_config_named(c, "tiny") != SC_SUCCESS) abort();
    c->vocab_size = 32, c->hidden_size = 16, c->intermediate_size = 32, c->num_layers = 1;
    c->num_heads = 2, c->num_kv_heads = 1, c->head_dim = 8;
}

/* n bytes of b into path, after the byte lead where lead >= 0; 0 where it could not */
static inline int fz_write(const char *path, int lead, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    unsigned char c = (unsigned char)lead;
    int ok = (lead < 0 || fwrite(&c, 1, 1, f) == 1) && (!n || fwrite(b, 1, n, f) == n);
    return fclose(f) == 0 && ok;
}
