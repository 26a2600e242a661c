/* GEMM and memory floors of one training step of the Qwen3-1.7B shape, measured on this GPU.
     nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_90,code=sm_90 \
          -Xcompiler -Wall,-Wextra,-Werror bench/gemm_floor.cu -o build/gemm_floor -lcublasLt
     ./build/gemm_floor --tokens N [--reps R (20)] [--algos A (8)] [--dense S (8192)] [--copy-bytes B (1GiB)]
                        [--sustained S (0)]
   N = batch x seq, the tokens of one step. Prints '#' comment lines (GPU, versions, settings, the sum) and a csv:
     kind,name,m,n,k,layout,count,flops,bytes,median_ms,min_ms,max_ms,tflops,gbps
   kind gemm: the step's own GEMMs, each linear's forward Y = X W^T, its dX = dY W and its dW = dY^T X, row-major,
     W stored [out, in] as PyTorch stores it (layout: 'NT' = A as stored, B transposed, etc.); count = how often
     one step (forward + backward, no recompute) runs that shape. The LM head is the tied embedding; the embedding
     lookup and its scatter-add backward are no GEMMs and are not here.
   kind dense: one S x S x S GEMM, the "dense bf16 rate" for attention FLOPs and MFU.
   kind copy: a device-to-device copy kernel; bytes and GB/s (1e9 B/s) count what it reads plus what it writes.
   Every GEMM is bf16 in and out, fp32 accumulate and scale (CUBLAS_COMPUTE_32F), alpha 1, beta 0, 32 MiB workspace.
   The top A heuristic algorithms are each timed briefly and the fastest kept; then 3 warm-ups and R timed reps
   (CUDA events), median, min and max per GEMM. A rep times enough back-to-back GEMMs to last >= 0.5 ms, so tiny
   shapes are not launch-bound. Operands rotate over enough copies to exceed 2 x L2, so each GEMM reads them from
   device memory as a step reads its 28 layers' weights. Inputs are random in [-1, 1) (zeros run faster).
   --sustained S: then the step's GEMMs run back to back as a step would, each shape count times with its chosen
   algorithm, S timed times after 3 warm-ups, an event around each shape's run; '#' lines give each shape's
   median there beside count x its own median above. Each shape above runs in bursts of tens of ms, between
   which the GPU idles; a step keeps it busy for seconds, where a power limit may lower its clock. */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "ck.h"
#define CKB(call)                                                                                             \
    do {                                                                                                      \
        cublasStatus_t s_ = (call);                                                                           \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                    \
            fprintf(stderr, "%s:%d: %s: cublas status %d\n", __FILE__, __LINE__, #call, (int)s_);             \
            exit(1);                                                                                          \
        }                                                                                                     \
    } while (0)

/* Qwen3-1.7B: hidden, intermediate, heads, kv heads, head dim, vocab, layers (tied embeddings) */
enum { C = 2048, I = 6144, H = 16, KV = 8, D = 128, V = 151936, L = 28 };
static const size_t WORKSPACE = (size_t)32 << 20;

struct shape {
    const char *name;
    long m, n, k;
    int ta, tb; /* row-major Y[m,n] = op(A) op(B); A stored [m,k] (ta 0) or [k,m] (ta 1), B [k,n] or [n,k] */
    int count;
};

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s --tokens N [--reps R (20)] [--algos A (8)] [--dense S (8192)] [--copy-bytes B (1GiB)] "
            "[--sustained S (0)]\n",
            argv0);
    exit(2);
}

static size_t parse_bytes(const char *s) /* "1GiB", "512MiB", or plain bytes; 0 when malformed */
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v <= 0) return 0;
    if (!strcmp(end, "GiB")) v *= 1 << 30;
    else if (!strcmp(end, "MiB")) v *= 1 << 20;
    else if (*end) return 0;
    return (size_t)v;
}

__global__ void fill_random(__nv_bfloat16 *p, size_t n, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t z = (i + seed) * 0x9E3779B97F4A7C15ull; /* splitmix64 finaliser: cheap, decorrelated */
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        p[i] = __float2bfloat16((float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f);
    }
}

__global__ void copy16(uint4 *__restrict__ dst, const uint4 *__restrict__ src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

static int g_sms;
static size_t g_l2;
static cudaEvent_t g_e0, g_e1;

/* one GEMM shape set up for cuBLASLt, with its operand sets */
struct gemm {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    std::vector<__nv_bfloat16 *> a, b, c; /* one operand triple per rotation set */
    size_t set_bytes;
};

/* Row-major Y[m,n] = op(A) op(B) is column-major Y'[n,m] = op(B') op(A'), where a row-major [r,c] matrix is a
   column-major [c,r] one. So cuBLASLt's "A" is our B and its "B" is our A. */
static void gemm_setup(gemm *g, const shape &s)
{
    CKB(cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t opa = s.tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = s.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    CKB(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    CKB(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    if (s.tb) CKB(cublasLtMatrixLayoutCreate(&g->la, CUDA_R_16BF, s.k, s.n, s.k));
    else CKB(cublasLtMatrixLayoutCreate(&g->la, CUDA_R_16BF, s.n, s.k, s.n));
    if (s.ta) CKB(cublasLtMatrixLayoutCreate(&g->lb, CUDA_R_16BF, s.m, s.k, s.m));
    else CKB(cublasLtMatrixLayoutCreate(&g->lb, CUDA_R_16BF, s.k, s.m, s.k));
    CKB(cublasLtMatrixLayoutCreate(&g->lc, CUDA_R_16BF, s.n, s.m, s.n));
    size_t ea = (size_t)s.m * s.k, eb = (size_t)s.k * s.n, ec = (size_t)s.m * s.n;
    g->set_bytes = 2 * (ea + eb + ec);
    size_t sets = std::min<size_t>(8, std::max<size_t>(1, (2 * g_l2 + g->set_bytes - 1) / g->set_bytes));
    for (size_t i = 0; i < sets; i++) {
        __nv_bfloat16 *pa, *pb, *pc;
        CK(cudaMalloc((void **)&pa, 2 * ea));
        CK(cudaMalloc((void **)&pb, 2 * eb));
        CK(cudaMalloc((void **)&pc, 2 * ec));
        fill_random<<<4 * g_sms, 256>>>(pa, ea, 1 + 3 * i);
        CK(cudaGetLastError());
        fill_random<<<4 * g_sms, 256>>>(pb, eb, 2 + 3 * i);
        CK(cudaGetLastError());
        CK(cudaMemset(pc, 0, 2 * ec));
        g->a.push_back(pa);
        g->b.push_back(pb);
        g->c.push_back(pc);
    }
    CK(cudaDeviceSynchronize());
}

static void gemm_free(gemm *g)
{
    for (size_t i = 0; i < g->a.size(); i++) {
        CK(cudaFree(g->a[i]));
        CK(cudaFree(g->b[i]));
        CK(cudaFree(g->c[i]));
    }
    CKB(cublasLtMatrixLayoutDestroy(g->la));
    CKB(cublasLtMatrixLayoutDestroy(g->lb));
    CKB(cublasLtMatrixLayoutDestroy(g->lc));
    CKB(cublasLtMatmulDescDestroy(g->desc));
}

/* `inner` back-to-back GEMMs, rotating over the operand sets (launched, not waited for) */
static void gemm_run(cublasLtHandle_t lt, gemm *g, const cublasLtMatmulAlgo_t *algo, void *ws, int inner)
{
    const float one = 1.0f, zero = 0.0f;
    for (int i = 0; i < inner; i++) {
        size_t j = (size_t)i % g->a.size();
        /* cuBLASLt's A is our B and its B is our A (gemm_setup) */
        CKB(cublasLtMatmul(lt, g->desc, &one, g->b[j], g->la, g->a[j], g->lb, &zero, g->c[j], g->lc, g->c[j], g->lc,
                           algo, ws, WORKSPACE, 0));
    }
}

/* ms per GEMM over `inner` back-to-back GEMMs */
static double gemm_time(cublasLtHandle_t lt, gemm *g, const cublasLtMatmulAlgo_t *algo, void *ws, int inner)
{
    CK(cudaEventRecord(g_e0, 0));
    gemm_run(lt, g, algo, ws, inner);
    CK(cudaEventRecord(g_e1, 0));
    CK(cudaEventSynchronize(g_e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, g_e0, g_e1));
    return ms / inner;
}

/* fastest of the top `algos` heuristic choices, then 3 warm-ups and `reps` timed reps of it; with keep, g and
   the algorithm stay for the caller (who frees g), else g is freed */
static stats gemm_measure(cublasLtHandle_t lt, const shape &s, void *ws, int algos, int reps, gemm *keep = NULL,
                          cublasLtMatmulAlgo_t *algo_out = NULL)
{
    gemm g;
    gemm_setup(&g, s);
    cublasLtMatmulPreference_t pref;
    CKB(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t wsb = WORKSPACE;
    CKB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
    std::vector<cublasLtMatmulHeuristicResult_t> res(algos);
    int got = 0;
    CKB(cublasLtMatmulAlgoGetHeuristic(lt, g.desc, g.la, g.lb, g.lc, g.lc, pref, algos, res.data(), &got));
    CKB(cublasLtMatmulPreferenceDestroy(pref));
    if (got < 1) {
        fprintf(stderr, "%s: cuBLASLt has no algorithm for %ld x %ld x %ld\n", s.name, s.m, s.n, s.k);
        exit(1);
    }
    /* one GEMM's time sizes the inner loop: a timed batch lasts >= 0.5 ms, at least one pass over the sets */
    gemm_time(lt, &g, &res[0].algo, ws, 1);
    double t1 = gemm_time(lt, &g, &res[0].algo, ws, 1);
    int inner = std::max<int>((int)g.a.size(), (int)(0.5 / std::max(t1, 1e-4)) + 1);
    int best = -1;
    double best_ms = 1e30;
    for (int a = 0; a < got; a++) {
        if (res[a].state != CUBLAS_STATUS_SUCCESS) continue;
        gemm_time(lt, &g, &res[a].algo, ws, inner); /* warm-up */
        std::vector<double> t;
        for (int r = 0; r < 3; r++) t.push_back(gemm_time(lt, &g, &res[a].algo, ws, inner));
        double ms = summarize(t).med;
        if (ms < best_ms) best_ms = ms, best = a;
    }
    if (best < 0) {
        fprintf(stderr, "%s: no usable cuBLASLt algorithm\n", s.name);
        exit(1);
    }
    { /* which heuristic rank won, and how it splits K (stderr: the CSV keeps its columns) */
        int32_t sk = 0, id = 0, tile = 0;
        size_t w = 0;
        CKB(cublasLtMatmulAlgoConfigGetAttribute(&res[best].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk, sizeof sk, &w));
        CKB(cublasLtMatmulAlgoConfigGetAttribute(&res[best].algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w));
        CKB(cublasLtMatmulAlgoConfigGetAttribute(&res[best].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w));
        fprintf(stderr, "%s: heuristic rank %d of %d won (algo id %d, tile %d, split-k %d): %.6f ms\n", s.name, best, got,
                id, tile, sk, best_ms);
    }
    for (int r = 0; r < 3; r++) gemm_time(lt, &g, &res[best].algo, ws, inner);
    std::vector<double> t;
    for (int r = 0; r < reps; r++) t.push_back(gemm_time(lt, &g, &res[best].algo, ws, inner));
    if (keep) *keep = g, *algo_out = res[best].algo;
    else gemm_free(&g);
    return summarize(t);
}

static const char *layout(const shape &s)
{
    static const char *names[4] = {"NN", "NT", "TN", "TT"};
    return names[2 * s.ta + s.tb];
}

int main(int argc, char **argv)
{
    long tokens = 0, dense = 8192;
    int reps = 20, algos = 8, sustained = 0;
    size_t copy_bytes = (size_t)1 << 30;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) usage(argv[0]);
        if (!strcmp(argv[i], "--tokens")) tokens = atol(argv[++i]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--algos")) algos = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dense")) dense = atol(argv[++i]);
        else if (!strcmp(argv[i], "--copy-bytes")) copy_bytes = parse_bytes(argv[++i]);
        else if (!strcmp(argv[i], "--sustained")) sustained = atoi(argv[++i]);
        else usage(argv[0]);
    }
    if (tokens < 1 || reps < 1 || algos < 1 || dense < 1 || copy_bytes < 16 || sustained < 0) usage(argv[0]);
    copy_bytes &= ~(size_t)15; /* whole uint4s */

    cudaDeviceProp prop;
    int dev, rt, drv;
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    CK(cudaRuntimeGetVersion(&rt));
    CK(cudaDriverGetVersion(&drv));
    g_sms = prop.multiProcessorCount;
    g_l2 = (size_t)prop.l2CacheSize;
    CK(cudaEventCreate(&g_e0));
    CK(cudaEventCreate(&g_e1));
    cublasLtHandle_t lt;
    CKB(cublasLtCreate(&lt));
    void *ws;
    CK(cudaMalloc(&ws, WORKSPACE));

    printf("# gpu %s, sm_%d%d, %d SMs, L2 %.0f MiB\n", prop.name, prop.major, prop.minor, g_sms,
           (double)g_l2 / (1 << 20));
    printf("# cuda runtime %d, driver api %d, cublasLt %zu\n", rt, drv, cublasLtGetVersion());
    printf("# tokens %ld, reps %d (median after 3 warm-ups), top %d heuristic algorithms tried, workspace %zu MiB\n",
           tokens, reps, algos, WORKSPACE >> 20);
    printf("kind,name,m,n,k,layout,count,flops,bytes,median_ms,min_ms,max_ms,tflops,gbps\n");
    fflush(stdout);

    const long N = tokens, QKV = (H + 2 * KV) * D;
    /* forward Y = X W^T (X [N,in], W [out,in]): m N, n out, k in, B transposed.
       dX = dY W: m N, n in, k out.  dW = dY^T X: m out, n in, k N, A transposed. */
    struct linear {
        const char *name;
        long in, out;
        int count;
    } lin[] = {{"qkv", C, QKV, L}, {"o", (long)H * D, C, L}, {"gateup", C, 2L * I, L}, {"down", I, C, L},
               {"lmhead", C, V, 1}};
    double floor_ms = 0;
    /* --sustained: every shape's operands, algorithm, count and median, kept for the run below */
    std::vector<gemm> kept;
    std::vector<cublasLtMatmulAlgo_t> kalgo;
    std::vector<shape> kshape;
    std::vector<double> kmed;
    std::vector<std::string> knames;
    for (const linear &l : lin) {
        char nm[3][32];
        snprintf(nm[0], 32, "%s_fwd", l.name);
        snprintf(nm[1], 32, "%s_dx", l.name);
        snprintf(nm[2], 32, "%s_dw", l.name);
        shape sh[3] = {{nm[0], N, l.out, l.in, 0, 1, l.count},
                       {nm[1], N, l.in, l.out, 0, 0, l.count},
                       {nm[2], l.out, l.in, N, 1, 0, l.count}};
        for (const shape &s : sh) {
            gemm g;
            cublasLtMatmulAlgo_t al;
            stats st = sustained ? gemm_measure(lt, s, ws, algos, reps, &g, &al) : gemm_measure(lt, s, ws, algos, reps);
            if (sustained) kept.push_back(g), kalgo.push_back(al), kshape.push_back(s), kmed.push_back(st.med),
                knames.push_back(s.name);
            double flops = 2.0 * s.m * s.n * s.k;
            printf("gemm,%s,%ld,%ld,%ld,%s,%d,%.0f,%ld,%.6f,%.6f,%.6f,%.1f,\n", s.name, s.m, s.n, s.k, layout(s),
                   s.count, flops, 2 * (s.m * s.k + s.k * s.n + s.m * s.n), st.med, st.lo, st.hi,
                   flops / st.med * 1e-9);
            fflush(stdout);
            floor_ms += s.count * st.med;
        }
    }
    if (sustained) { /* the step's GEMMs back to back, an event pair around each shape's run */
        size_t ns = kept.size();
        std::vector<cudaEvent_t> ev(ns + 1);
        for (cudaEvent_t &e : ev) CK(cudaEventCreate(&e));
        std::vector<std::vector<double>> per(ns);
        std::vector<double> tot;
        /* wall-clock bounds on stderr, to find the loop in a clock or power log taken beside it */
        auto now = [] { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); };
        double w0 = now();
        for (int r = -3; r < sustained; r++) {
            CK(cudaEventRecord(ev[0], 0));
            for (size_t i = 0; i < ns; i++) {
                gemm_run(lt, &kept[i], &kalgo[i], ws, kshape[i].count);
                CK(cudaEventRecord(ev[i + 1], 0));
            }
            CK(cudaEventSynchronize(ev[ns]));
            if (r < 0) continue;
            float ms;
            for (size_t i = 0; i < ns; i++) {
                CK(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
                per[i].push_back(ms);
            }
            CK(cudaEventElapsedTime(&ms, ev[0], ev[ns]));
            tot.push_back(ms);
        }
        fprintf(stderr, "sustained loop: unix time %.3f to %.3f\n", w0, now());
        printf("# sustained: the step's GEMMs back to back, %d timed after 3 warm-ups (median ms; beside it count x the "
               "shape's median above)\n", sustained);
        for (size_t i = 0; i < ns; i++) {
            double med = summarize(per[i]).med, burst = kshape[i].count * kmed[i];
            printf("#   %-12s %9.3f  (%9.3f, %+.1f%%)\n", knames[i].c_str(), med, burst, 100.0 * (med / burst - 1.0));
        }
        stats st = summarize(tot);
        printf("# sustained gemm step: %.3f ms (min %.3f, max %.3f), against the floor's %.3f ms: %+.1f%%\n", st.med, st.lo,
               st.hi, floor_ms, 100.0 * (st.med / floor_ms - 1.0));
        for (cudaEvent_t &e : ev) CK(cudaEventDestroy(e));
        for (gemm &g : kept) gemm_free(&g);
    }
    {
        shape s = {"dense", dense, dense, dense, 0, 1, 0};
        stats st = gemm_measure(lt, s, ws, algos, reps);
        double flops = 2.0 * s.m * s.n * s.k;
        printf("dense,dense_%ld,%ld,%ld,%ld,%s,0,%.0f,%ld,%.6f,%.6f,%.6f,%.1f,\n", dense, s.m, s.n, s.k, layout(s),
               flops, 2 * 3 * dense * dense, st.med, st.lo, st.hi, flops / st.med * 1e-9);
    }
    {
        uint4 *src, *dst;
        size_t n = copy_bytes / 16;
        CK(cudaMalloc((void **)&src, copy_bytes));
        CK(cudaMalloc((void **)&dst, copy_bytes));
        CK(cudaMemset(src, 1, copy_bytes));
        CK(cudaMemset(dst, 2, copy_bytes));
        std::vector<double> t;
        for (int r = -3; r < reps; r++) {
            CK(cudaEventRecord(g_e0, 0));
            copy16<<<8 * g_sms, 512>>>(dst, src, n);
            CK(cudaGetLastError());
            CK(cudaEventRecord(g_e1, 0));
            CK(cudaEventSynchronize(g_e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, g_e0, g_e1));
            if (r >= 0) t.push_back(ms);
        }
        stats st = summarize(t);
        printf("copy,copy_d2d,,,,,0,0,%zu,%.6f,%.6f,%.6f,,%.1f\n", 2 * copy_bytes, st.med, st.lo, st.hi,
               2.0 * copy_bytes / st.med * 1e-6);
        CK(cudaFree(src));
        CK(cudaFree(dst));
    }
    printf("# gemm floor per step (sum of count x median_ms over the gemm rows): %.3f ms\n", floor_ms);
    CK(cudaFree(ws));
    CKB(cublasLtDestroy(lt));
    CK(cudaEventDestroy(g_e0));
    CK(cudaEventDestroy(g_e1));
    return 0;
}
