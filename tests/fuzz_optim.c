/* tests/fuzz_optim.c: libFuzzer harness for the optimizer-state reader behind --resume
   (sc_model_load_optimizer; see make fuzz). The input is written to a temporary file and loaded
   into a small AdamW model (one layer, CPU). A file the load refuses must leave the
   model's state as it was: the harness saves the state before and after and compares the bytes.
   FUZZ_OPTIM_SEED=path: the first call also writes a valid state there (make fuzz's seed). */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static sc_model *fz_model(void)
{
    static sc_model *m;
    if (m) return m;
    sc_config c;
    fz_small_config(&c);
    sc_model_config mc = sc_model_config_init();
    mc.optim = SC_OPTIM_ADAMW, mc.lr = 1e-3f;
    if (sc_model_create(&m, &c, &mc, NULL) != SC_SUCCESS) abort();
    sc_plan plan;
    if (sc_plan_parse(&plan, "none", c.num_layers) != SC_SUCCESS) abort();
    int32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    float loss;
    if (sc_model_step(m, &plan, ids, 1, 1, 8, 1, &loss) != SC_SUCCESS) abort(); /* m and v not zero */
    const char *seed = getenv("FUZZ_OPTIM_SEED");
    if (seed && sc_model_save_optimizer(m, seed) != SC_SUCCESS) abort();
    return m;
}

#ifdef __cplusplus
extern "C"
#endif
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char in[64], before[64], after[64];
    if (!in[0]) {
        int pid = (int)getpid();
        snprintf(in, sizeof in, "/tmp/sc_fuzz_optim_%d.in", pid);
        snprintf(before, sizeof before, "/tmp/sc_fuzz_optim_%d.a", pid);
        snprintf(after, sizeof after, "/tmp/sc_fuzz_optim_%d.b", pid);
    }
    sc_model *m = fz_model();
    if (!fz_write(in, -1, data, size)) return 0;
    if (sc_model_save_optimizer(m, before) != SC_SUCCESS) abort();
    if (sc_model_load_optimizer(m, in) != SC_SUCCESS) {
        if (!*sc_last_error()) abort(); /* a refusal says why */
        if (sc_model_save_optimizer(m, after) != SC_SUCCESS) abort();
        size_t na, nb;
        char *a, *b;
        if (sc__read_file(before, (size_t)1 << 30, &a, &na) || sc__read_file(after, (size_t)1 << 30, &b, &nb)) abort();
        if (na != nb || memcmp(a, b, na)) abort(); /* a refused file changed the state */
        SC_FREE(a), SC_FREE(b);
    }
    unlink(in);
    return 0;
}
