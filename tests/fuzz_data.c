/* tests/fuzz_data.c: libFuzzer harness for the token-shard reader (llm.c's header and 1-D .npy;
   see make fuzz). The input less its last byte is written to a temporary file, then opened with a
   small batch; the last byte picks the batch shape, shuffling, a vocabulary check and two ranks. A shard that opens must give batches whose tokens
   obey the promise: in [0, vocab) when a vocabulary was given, in [0, 2^31) always. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C"
#endif
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (!path[0]) snprintf(path, sizeof path, "/tmp/sc_fuzz_data_%d.bin", (int)getpid());
    if (!size) return 0;
    /* the input's last byte picks the batch shape and the options, so they are fuzzed too; the
       bytes before it are the file */
    int k = data[size - 1];
    size--;
    if (!fz_write(path, -1, data, size)) return 0;
    sc_data_config dc;
    memset(&dc, 0, sizeof dc);
    dc.B = 1 + (k & 1), dc.T = 2 + ((k >> 1) & 3), dc.shuffle = (k >> 3) & 1, dc.shuffle_seed = 7;
    dc.vocab_size = (k >> 4) & 1 ? 1000 : 0;
    dc.world = 1 + ((k >> 5) & 1), dc.rank = dc.world - 1;
    sc_data *d = NULL;
    if (sc_data_open(&d, path, &dc) == SC_SUCCESS) {
        int32_t ids[16]; /* B * T <= 10 */
        for (int i = 0; i < 5; i++) {
            sc_result r = sc_data_next(d, ids);
            if (r != SC_SUCCESS) {
                if (dc.vocab_size) abort(); /* every token was checked at open */
                break;
            }
            for (int j = 0; j < dc.B * dc.T; j++)
                if (ids[j] < 0 || (dc.vocab_size && ids[j] >= dc.vocab_size)) abort();
        }
        if (sc_data_epoch_batches(d) <= 0 || sc_data_shard_count(d) != 1) abort();
        if (sc_data_seek(d, 3) == SC_SUCCESS && sc_data_position(d) != 3) abort();
        sc_data_close(d);
    }
    unlink(path);
    return 0;
}
