/* tests/fuzz_safetensors.c: libFuzzer harness for the safetensors reader (make fuzz).
   Opens the input as an in-memory safetensors file and, if it validates, reads every tensor
   as float and as int32 (most reads must fail cleanly), the metadata, and input_ids. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"

#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C"
#endif
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sc_safetensors st;
    if (sc_safetensors_open_memory(&st, data, size) != SC_SUCCESS) return 0;
    for (int i = 0; i < st.n_tensors; i++) {
        const sc_st_tensor *t = &st.tensors[i];
        /* numel * dtype_size bytes lie inside the input, so numel <= size */
        if ((uint64_t)t->numel > size) abort();
        void *buf = malloc((size_t)t->numel * 4 + 4);
        if (!buf) continue;
        sc_safetensors_read_f32(&st, t->name, (float *)buf, t->ndim, t->shape);
        sc_safetensors_read_i32(&st, t->name, (int32_t *)buf, 0, NULL);
        if (sc_safetensors_find(&st, t->name) == NULL) abort();
        free(buf);
    }
    for (int i = 0; i < st.n_meta; i++)
        if (strlen(st.meta_keys[i]) + strlen(st.meta_values[i]) > size) abort();
    sc_safetensors_meta(&st, "format");
    int32_t *ids;
    int B, T;
    if (sc__tokens_from_st(&st, &ids, &B, &T) == SC_SUCCESS) sc_tokens_free(ids);
    sc_safetensors_close(&st);
    return 0;
}
