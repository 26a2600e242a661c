/* Do wgmma and mma.sync add a product the same way? The one question behind "the PORTABLE
   attention path gives the Hopper path's bits": at head_dim 128 in bf16 the Hopper kernels sum
   with wgmma, the PORTABLE ones with mma.sync, in the same k16 order. This feeds both
   instructions the same operands (sc__cuda_mma_order_probe: A B^T, A 64 x k, B 128 x k, f32 sums)
   and counts the sums whose bits differ, for k = 16 (one instruction each) and 64 (four chained),
   on operands of one scale and of mixed scales; beside that, how far each is from the exact sum
   (f64: exact for the one-scale operands), in units of the f32 result's last place.
     make build/mma_order && build/mma_order          (an H100 or H200: the sm_90a code)
   Exits 0 when it ran (whatever it found), 1 when it could not. */
#define SLIDECHECK_TESTING
#define SLIDECHECK_IMPLEMENTATION
#include "slidecheck.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SLIDECHECK_CUDA
int main(void)
{
    fprintf(stderr, "mma_order: built without SLIDECHECK_CUDA: build it with `make build/mma_order` (needs nvcc)\n");
    return 2;
}
#else

static uint64_t rng = 88172645463325252ull;
static double unif(void) /* xorshift64*, [0, 1) */
{
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}

/* a bf16 value: mixed = 0 one scale (|x| < 2), 1 scales 2^-8 .. 2^8 */
static uint16_t draw(int mixed)
{
    float x = (float)(2.0 * unif() - 1.0);
    if (mixed) x = ldexpf(x, (int)(unif() * 17.0) - 8);
    return sc_f32_to_bf16(x);
}

/* |a - b| in units of the last place of b (f32) */
static double ulps(double a, float b)
{
    int e;
    frexpf(b, &e);
    double u = b == 0.0f ? ldexp(1.0, -149) : ldexp(1.0, e - 24);
    return fabs(a - (double)b) / u;
}

int main(void)
{
    sc_cuda *cu = NULL;
    sc_cuda_config cc;
    memset(&cc, 0, sizeof cc);
    if (sc_cuda_create(&cu, &cc) != SC_SUCCESS) { fprintf(stderr, "mma_order: %s\n", sc_last_error()); return 1; }
    printf("%s\n", sc_cuda_device_name(cu));
    static uint16_t a[64 * 64], b[128 * 64];
    static float wg[64 * 128], mm[64 * 128];
    int any = 0;
    for (int mixed = 0; mixed < 2; mixed++)
        for (int k = 16; k <= 64; k += 48)
            for (int trial = 0; trial < 4; trial++) {
                memset(a, 0, sizeof a), memset(b, 0, sizeof b);
                for (int r = 0; r < 64; r++)
                    for (int c = 0; c < k; c++) a[r * 64 + c] = draw(mixed);
                for (int r = 0; r < 128; r++)
                    for (int c = 0; c < k; c++) b[r * 64 + c] = draw(mixed);
                if (sc__cuda_mma_order_probe(cu, wg, mm, a, b, k) != SC_SUCCESS) {
                    fprintf(stderr, "mma_order: %s\n", sc_last_error());
                    sc_cuda_destroy(cu);
                    return 1;
                }
                int diff = 0;
                double uw = 0.0, um = 0.0;
                for (int i = 0; i < 64; i++)
                    for (int j = 0; j < 128; j++) {
                        double ex = 0.0; /* bf16 x bf16 is exact in f64 */
                        for (int c = 0; c < k; c++) ex += (double)sc_bf16_to_f32(a[i * 64 + c]) * sc_bf16_to_f32(b[j * 64 + c]);
                        float x = wg[i * 128 + j], y = mm[i * 128 + j];
                        diff += memcmp(&x, &y, sizeof x) != 0 && !(x == 0.0f && y == 0.0f);
                        double p = ulps(ex, x), q = ulps(ex, y);
                        uw = p > uw ? p : uw, um = q > um ? q : um;
                    }
                any |= diff != 0;
                printf("%s operands, k %2d, trial %d: %4d of 8192 sums differ in bits; worst distance from the exact "
                       "sum: wgmma %.2f ulp, mma.sync %.2f ulp\n", mixed ? "mixed-scale" : "one-scale", k, trial, diff, uw, um);
            }
    printf("VERDICT: wgmma and mma.sync %s\n", any ? "give different bits for the same sums (the hardware adds them in "
                                                     "another way)"
                                                   : "gave the same bits on every sum");
    sc_cuda_destroy(cu);
    return 0;
}
#endif
