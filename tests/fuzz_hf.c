/* tests/fuzz_hf.c: libFuzzer harness for a Hugging Face checkpoint directory's weights
   (sc_hf_read_params; see make fuzz). A one-layer model's tensors lie in two valid shards,
   a.safetensors and b.safetensors, of a temporary directory. The input's first byte picks what
   the rest becomes: even, model.safetensors.index.json (the sharded path, reading the two
   shards); odd, model.safetensors itself. A sharded read that succeeds gives the shards'
   values, bit for bit; a failure says why.
   FUZZ_HF_SEED=dir: the first call also writes a valid index (0_index) and single file
   (1_single), each with its selector byte, into dir (make fuzz's seeds). */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fz_dir[64];
static sc_config fz_cfg;
static float *fz_params;
static size_t fz_n;

/* the directory with the two shards, and the model's buffer */
static void fz_setup(void)
{
    if (fz_params) return;
    snprintf(fz_dir, sizeof fz_dir, "/tmp/sc_fuzz_hf_%d", (int)getpid());
    mkdir(fz_dir, 0777);
    fz_small_config(&fz_cfg);
    int n = sc_config_params(&fz_cfg, NULL, 0);
    sc_param_info *tab = (sc_param_info *)malloc((size_t)n * sizeof *tab);
    sc_st_entry *e = (sc_st_entry *)calloc((size_t)n, sizeof *e);
    fz_n = sc_config_num_params(&fz_cfg);
    fz_params = (float *)malloc(fz_n * sizeof(float));
    if (!tab || !e || !fz_params) abort();
    sc_config_params(&fz_cfg, tab, n);
    for (size_t i = 0; i < fz_n; i++) fz_params[i] = (float)(i % 97) * 0.01f;
    for (int i = 0; i < n; i++) {
        e[i].name = tab[i].name, e[i].dtype = "F32", e[i].ndim = tab[i].ndim;
        e[i].shape[0] = tab[i].shape[0], e[i].shape[1] = tab[i].shape[1];
        e[i].data = fz_params + tab[i].offset, e[i].data_is_f32 = 1;
    }
    char path[128];
    snprintf(path, sizeof path, "%s/a.safetensors", fz_dir);
    if (sc_safetensors_write(path, e, n / 2, NULL, 0) != SC_SUCCESS) abort();
    snprintf(path, sizeof path, "%s/b.safetensors", fz_dir);
    if (sc_safetensors_write(path, e + n / 2, n - n / 2, NULL, 0) != SC_SUCCESS) abort();
    const char *seed = getenv("FUZZ_HF_SEED");
    if (seed) { /* a valid index over the two shards, and one file holding every tensor */
        size_t cap = 256 + (size_t)n * 128, len = 0;
        char *idx = (char *)malloc(cap);
        if (!idx) abort();
        len += (size_t)snprintf(idx + len, cap - len, "{\"metadata\": {}, \"weight_map\": {");
        for (int i = 0; i < n; i++)
            len += (size_t)snprintf(idx + len, cap - len, "%s\"%s\": \"%s\"", i ? ", " : "", tab[i].name,
                                    i < n / 2 ? "a.safetensors" : "b.safetensors");
        len += (size_t)snprintf(idx + len, cap - len, "}}\n");
        snprintf(path, sizeof path, "%s/0_index", seed);
        if (!fz_write(path, 0, idx, len)) abort();
        free(idx);
        char one[160];
        snprintf(one, sizeof one, "%s/single.tmp", fz_dir);
        if (sc_safetensors_write(one, e, n, NULL, 0) != SC_SUCCESS) abort();
        size_t sl;
        char *sb;
        if (sc__read_file(one, (size_t)1 << 30, &sb, &sl)) abort();
        snprintf(path, sizeof path, "%s/1_single", seed);
        if (!fz_write(path, 1, sb, sl)) abort();
        SC_FREE(sb);
        unlink(one);
    }
    free(tab), free(e);
}

#ifdef __cplusplus
extern "C"
#endif
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_setup();
    if (!size) return 0;
    char idx[128], one[128];
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", fz_dir);
    snprintf(one, sizeof one, "%s/model.safetensors", fz_dir);
    unlink(idx), unlink(one);
    if (!fz_write(data[0] & 1 ? one : idx, -1, data + 1, size - 1)) return 0;
    memset(fz_params, 0, fz_n * sizeof(float));
    sc_set_error(SC_SUCCESS, "%s", "");
    if (sc_hf_read_params(fz_dir, &fz_cfg, fz_params) == SC_SUCCESS) {
        if (!(data[0] & 1)) /* the sharded path read the two valid shards */
            for (size_t i = 0; i < fz_n; i++)
                if (fz_params[i] != (float)(i % 97) * 0.01f) abort();
    } else if (!*sc_last_error())
        abort(); /* a refusal says why */
    return 0;
}
