/* slidecheck.h - v0.1 - MIT licence (see end of file)

   Train a Qwen2/Qwen3 decoder stack and measure, exactly, what activation checkpointing
   (recompute) costs in time and saves in memory.

   Do this:
      #define SLIDECHECK_IMPLEMENTATION
   before you include this file in *one* C or C++ file to create the implementation.

ABOUT
   A CPU reference forward/backward of the Qwen2 (q/k/v biases) and Qwen3 (per-head q/k
   RMSNorm) decoder layer, checked against HF transformers; checkpoint policies whose replay
   runs the very same arithmetic, so loss and gradients are bitwise identical under every
   policy; an exact budget planner; a caching allocator with PyTorch's semantics through which
   every byte of model memory goes; a tracer (spans by phase and layer, one memory event per
   allocation and free, CPU RSS with its true peak); HF checkpoint and safetensors I/O that
   validates everything it reads. The CUDA backend lives in slidecheck_cuda.cu.

BUILDING
   SLIDECHECK_IMPLEMENTATION  in one translation unit: compile the implementation there.
   SLIDECHECK_STATIC          every function static (a private copy per translation unit).
   SLIDECHECK_CUDA            the GPU backend: link slidecheck_cuda.o (nvcc, sm_90) with
                              -lcublasLt -lcublas -lcudart. Without it the header is CPU-only
                              and `SC_DEVICE_CUDA` fails with SC_ERROR_NO_DEVICE.
   SC_MALLOC, SC_FREE, SC_REALLOC  your own host allocator: define all three or none.
   SC_ASSERT                  your own assert.
   -fopenmp                   optional: the CPU ops run on all cores. Work is split by output
                              element and every sum runs in a fixed order, so the bits do not
                              depend on the number of threads.
   Compiles as C11 and as C++ with -Wall -Wextra -Werror.

USAGE
   Every function that can fail returns sc_result (SC_SUCCESS = 0, errors < 0) and leaves a
   message naming the file / tensor / value in sc_last_error(). Nothing aborts on bad input.

   Results and tensors
     sc_result_string(r)                    fixed text for a code
     sc_last_error()                        this thread's last detailed message
     sc_set_error(r, fmt, ...)              record a message, return r
     sc_tensor_view / sc_tensor_numel / sc_tensor_nbytes / sc_dtype_size
     sc_f32_to_bf16 (round to nearest even) / sc_bf16_to_f32 / sc_f16_to_f32 / sc_round_bf16_inplace

   Configs and parameters (one flat buffer, one named view per HF parameter)
     sc_config_named(cfg, name)             tiny | qwen3-0.6b | qwen3-1.7b | qwen2.5-0.5b |
                                            qwen2.5-1.5b | qwen2.5-7b; unknown -> INVALID_ARGS
     sc_config_validate(cfg)                sizes positive, KV | H, head_dim even, ...
     sc_config_params(cfg, out, cap)        the parameter table (HF name, shape, offset)
     sc_config_num_params / sc_config_layer_offsets / sc_config_layer_base /
     sc_config_norm_offset / sc_config_lm_head_offset
     sc_rng_seed / sc_rng_u64 / sc_rng_uniform / sc_rng_normal

   Layer ops (CPU reference; sc_cuda_<same name> on the GPU): outputs first, then what backward
   needs, then inputs, then sizes. Parameter gradients accumulate, activation gradients are
   overwritten, except rmsnorm_backward's dinp (the residual stream), which accumulates.
     sc_cpu_embedding_{forward,backward}     sc_cpu_rmsnorm_{forward,backward}
     sc_cpu_add_rmsnorm_forward              sc_cpu_add_forward
     sc_cpu_matmul_{forward,backward}        sc_rope_table
     sc_cpu_qknorm_rope_{forward,backward}   sc_cpu_attention_{forward,backward}
     sc_cpu_swiglu_{forward,backward}        sc_cpu_crossentropy_forward_backward
     sc_cpu_sgd_update                       sc_cpu_adamw_update (torch.optim.AdamW semantics)

   Checkpoint policies and planner
     sc_plan_parse(plan, policy, L)         none | full | every:K | layers:a-b,c | selective |
                                            selective:mlp | sqrt; bad -> INVALID_ARGS
     sc_plan_is_budget(policy, &bytes)      1 for budget:SIZE, 0 otherwise, -1 malformed
     sc_plan_saved_bytes[_layer](...)       closed-form saved bytes (equal to the allocator's)
     sc_plan_estimate_costs / sc_plan_fixed_bytes / sc_plan_evaluate
     sc_planner_plan(out, rep, ...)         exact DP: least recompute time with peak <= budget;
                                            none fits -> INVALID_ARGS naming the smallest budget
     sc_plan_report_table(rep, plan, buf, cap)

   Model
     sc_model_config_init()                 zero = defaults (CPU, fp32, AdamW 1e-4, 0.9, 0.999, 1e-8)
     sc_model_create(&m, cfg, mc, params)   params NULL = seeded HF-style random init
     sc_model_forward_backward(m, plan, ids, B, T, &loss)
                                            mean next-token cross-entropy over B*(T-1), grads
                                            overwritten; ids >= vocab or T > max_position -> RANGE;
                                            out of memory -> OUT_OF_MEMORY, the model stays usable
     sc_model_optimizer_step(m)             SGD or AdamW
     sc_model_get_params / sc_model_get_grads / sc_model_logits / sc_model_last_saved_bytes
     sc_model_allocator / sc_model_set_tracer / sc_model_cuda / sc_model_destroy
     sc_parse_size("6GiB", &bytes)          0 or -1

   Caching allocator (PyTorch's CUDACachingAllocator rules; see its section below)
     sc_allocator_init / uninit / alloc / free / record_stream / empty_cache / reset_peak /
     reset_accumulated / stats / tag_of / live_bytes_tagged / summary / snapshot_json / validate

   Tracer and statistics
     sc_tracer_init / uninit / step_begin / step_end / span_begin / span_end /
     count_launches / mem_record / step_count / step_get / layer_ms / layer_stats /
     phase_stats / peak_method / write_all / write_{step_metrics,layer_metrics,mem_trace,
     summary,chrome_trace}
     sc_stats_compute / sc_student_t_quantile / sc_student_t_cdf / sc_cpu_rss_bytes / sc_cpu_hwm_bytes

   Files
     sc_config_from_json / sc_config_read / sc_config_write_json / sc_config_write
     sc_safetensors_open / open_memory / close / find / meta / read_f32 / read_i32 / write
     sc_hf_read_config / sc_hf_read_params / sc_hf_write
     sc_tokens_read / sc_tokens_write / sc_tokens_check / sc_tokens_free

   CUDA backend (with SLIDECHECK_CUDA): sc_cuda_available / create / destroy / status /
     synchronize / device_name / launch_count / raw_alloc / raw_free / event_* /
     mem_get_info / memset0 / upload / download / upload_f32 / download_f32 / convert, and
     the ops above.

   Example: one training step with full recompute (expected output: a loss near ln(vocab)).
#if 0
   #define SLIDECHECK_IMPLEMENTATION
   #include "slidecheck.h"
   int main(void) {
       sc_config cfg; sc_config_named(&cfg, "tiny");
       sc_model_config mc = sc_model_config_init();
       sc_model *m; sc_plan plan; int32_t ids[2 * 64]; float loss;
       for (int i = 0; i < 128; i++) ids[i] = (i * 37) % cfg.vocab_size;
       if (sc_model_create(&m, &cfg, &mc, NULL) || sc_plan_parse(&plan, "full", cfg.num_layers) ||
           sc_model_forward_backward(m, &plan, ids, 2, 64, &loss)) {
           fprintf(stderr, "%s\n", sc_last_error());
           return 1;
       }
       sc_model_optimizer_step(m);
       printf("loss %.4f\n", loss);     // prints "loss 6.2766" (ln 512 = 6.24)
       sc_model_destroy(m);
       return 0;
   }
#endif

CREDITS
   Layout after stb (Sean Barrett) and llm.c (Andrej Karpathy); allocator semantics after
   PyTorch's CUDACachingAllocator. Written for slidecheck; no code copied.
*/
#ifndef SLIDECHECK_H
#define SLIDECHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef SLIDECHECK_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define SCDEF static __attribute__((unused))
#else
#define SCDEF static
#endif
#elif defined(__cplusplus)
#define SCDEF extern "C"
#else
#define SCDEF extern
#endif

/* ------------------------------------------------------------------------------------------
   Results and errors
   ------------------------------------------------------------------------------------------ */
typedef enum sc_result {
    SC_SUCCESS = 0,
    SC_ERROR_INVALID_ARGS = -1,   /* a bad flag, name or value from the caller */
    SC_ERROR_OUT_OF_MEMORY = -2,  /* allocator or memory cap refused a request */
    SC_ERROR_IO = -3,             /* a file could not be opened, read or written */
    SC_ERROR_FORMAT = -4,         /* a file's contents are malformed or lie about themselves */
    SC_ERROR_SHAPE = -5,          /* a tensor has the wrong shape or dtype */
    SC_ERROR_RANGE = -6,          /* a value is out of its range (token id, sequence length) */
    SC_ERROR_UNSUPPORTED = -7,    /* valid request that this build cannot do */
    SC_ERROR_NO_DEVICE = -8,      /* no usable GPU */
    SC_ERROR_CUDA = -9            /* a CUDA / cuBLAS call failed */
} sc_result;

/* A short fixed string for a result code. */
SCDEF const char *sc_result_string(sc_result r);
/* The detailed message of the last error raised by this thread ("" if none). Like
   stbi_failure_reason(): valid until the next failing call on the same thread. */
SCDEF const char *sc_last_error(void);
/* Record a message as this thread's last error and return r (for code outside the header's
   implementation, e.g. the CUDA file). */
SCDEF sc_result sc_set_error(sc_result r, const char *fmt, ...);

/* ------------------------------------------------------------------------------------------
   Tensors
   ------------------------------------------------------------------------------------------ */
typedef enum sc_dtype { SC_F32 = 0, SC_BF16 = 1, SC_I32 = 2 } sc_dtype;
typedef enum sc_device { SC_DEVICE_CPU = 0, SC_DEVICE_CUDA = 1 } sc_device;

typedef struct sc_tensor {
    sc_dtype dtype;
    sc_device device;
    int ndim;              /* 0..4 */
    int64_t shape[4];
    void *data;            /* a view: the tensor never owns its memory */
    const char *name;
} sc_tensor;

SCDEF size_t sc_dtype_size(sc_dtype t);
SCDEF int64_t sc_tensor_numel(const sc_tensor *t);
SCDEF size_t sc_tensor_nbytes(const sc_tensor *t);
/* A view of `data` with the given shape (ndim <= 4). */
SCDEF sc_tensor sc_tensor_view(void *data, sc_dtype dtype, sc_device device, int ndim,
                               const int64_t *shape, const char *name);

/* bf16 <-> f32. f32 -> bf16 rounds to nearest even; NaN stays NaN. */
SCDEF uint16_t sc_f32_to_bf16(float f);
SCDEF float sc_bf16_to_f32(uint16_t h);
/* Round every value to the nearest bf16-representable float, in place. */
SCDEF void sc_round_bf16_inplace(float *x, size_t n);
SCDEF float sc_f16_to_f32(uint16_t h);

/* ------------------------------------------------------------------------------------------
   Model configuration: one struct for Qwen2 and Qwen3
   ------------------------------------------------------------------------------------------ */
typedef enum sc_arch { SC_ARCH_QWEN3 = 0, SC_ARCH_QWEN2 = 1 } sc_arch;

typedef struct sc_config {
    sc_arch arch;               /* qwen2: q/k/v biases; qwen3: q_norm/k_norm */
    int vocab_size;
    int hidden_size;            /* C */
    int intermediate_size;      /* I */
    int num_layers;             /* L */
    int num_heads;              /* H */
    int num_kv_heads;           /* KV, divides H */
    int head_dim;               /* D, need not be C/H */
    int max_position;           /* max_position_embeddings */
    int tie_embeddings;         /* lm_head shares embed_tokens */
    int attention_bias;         /* q/k/v biases (Qwen2: 1) */
    int qk_norm;                /* per-head RMSNorm on q and k (Qwen3: 1) */
    double rope_theta;
    double rms_eps;
    double init_std;            /* initializer_range for random init */
    char name[64];
} sc_config;

/* Fill *cfg with a built-in config: "tiny", "qwen3-0.6b", "qwen3-1.7b", "qwen2.5-0.5b",
   "qwen2.5-1.5b", "qwen2.5-7b". Returns SC_ERROR_INVALID_ARGS for an unknown name. */
SCDEF sc_result sc_config_named(sc_config *cfg, const char *name);
/* Comma-separated list of the built-in names (for help texts). */
SCDEF const char *sc_config_names(void);
/* Check internal consistency (positive sizes, KV divides H, ...). */
SCDEF sc_result sc_config_validate(const sc_config *cfg);

/* Parameters live in one flat float buffer; each has a named view. Layout:
   embed_tokens, then per layer one contiguous block (so one layer can be copied in one go):
     input_layernorm, q_proj.weight, k_proj.weight, v_proj.weight, [q,k,v biases],
     [q_norm, k_norm], o_proj, post_attention_layernorm, gate_proj, up_proj, down_proj
   then model.norm and (untied) lm_head.
   q/k/v weights are adjacent, so together they are one [(H+2KV)*D, C] matrix; gate and up
   likewise form one [2I, C] matrix. */
typedef struct sc_param_info {
    char name[96];          /* HF name, e.g. "model.layers.3.mlp.up_proj.weight" */
    int ndim;               /* 1 or 2 */
    int64_t shape[2];       /* HF shape ([out, in] for linear weights) */
    size_t offset;          /* in floats, into the flat buffer */
    size_t numel;
    int layer;              /* -1 for embed / final norm / lm_head */
} sc_param_info;

/* Per-layer parameter offsets (floats from the start of the layer's block). */
typedef struct sc_layer_offsets {
    size_t ln1, wqkv, bqkv, qnorm, knorm, wo, ln2, wgu, wd, size; /* bqkv/qnorm/knorm = SIZE_MAX if absent */
} sc_layer_offsets;

SCDEF sc_layer_offsets sc_config_layer_offsets(const sc_config *cfg);
/* Write up to `cap` entries of the parameter table into out (out may be NULL); returns the
   number of parameters. Tied models have no lm_head entry. */
SCDEF int sc_config_params(const sc_config *cfg, sc_param_info *out, int cap);
/* Total floats in the flat parameter buffer. */
SCDEF size_t sc_config_num_params(const sc_config *cfg);
/* Offset (floats) of layer l's block, of the final norm, and of lm_head (embed if tied). */
SCDEF size_t sc_config_layer_base(const sc_config *cfg, int l);
SCDEF size_t sc_config_norm_offset(const sc_config *cfg);
SCDEF size_t sc_config_lm_head_offset(const sc_config *cfg);

/* ------------------------------------------------------------------------------------------
   Deterministic random numbers (splitmix64 / xoshiro-free: one 64-bit state)
   ------------------------------------------------------------------------------------------ */
typedef struct sc_rng { uint64_t s; } sc_rng;
SCDEF sc_rng sc_rng_seed(uint64_t seed);
SCDEF uint64_t sc_rng_u64(sc_rng *r);
SCDEF float sc_rng_uniform(sc_rng *r);          /* [0,1) */
SCDEF float sc_rng_normal(sc_rng *r);           /* N(0,1), Box-Muller */

#ifndef SC_DEV_NO_PARTS
#include "wip/alloc_decl.h"
#include "wip/trace_decl.h"
#include "wip/io_decl.h"
#endif
#ifndef SC_DEV_NO_MODEL
#include "wip/model_decl.h"
#include "wip/plan_decl.h"
#endif

#endif /* SLIDECHECK_H */

/* ========================================================================================== */
#ifdef SLIDECHECK_IMPLEMENTATION
#ifndef SLIDECHECK_IMPLEMENTATION_DONE
#define SLIDECHECK_IMPLEMENTATION_DONE

#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <stdarg.h>
#include <errno.h>

#if defined(SC_MALLOC) || defined(SC_FREE) || defined(SC_REALLOC)
#if !defined(SC_MALLOC) || !defined(SC_FREE) || !defined(SC_REALLOC)
#error "Define all of SC_MALLOC, SC_FREE and SC_REALLOC, or none of them."
#endif
#else
#define SC_MALLOC(sz) malloc(sz)
#define SC_FREE(p) free(p)
#define SC_REALLOC(p, sz) realloc(p, sz)
#endif

#ifndef SC_ASSERT
#include <assert.h>
#define SC_ASSERT(x) assert(x)
#endif

/* OpenMP is optional: without -fopenmp the pragmas vanish and everything runs on one thread.
   Work is always split by output element, so results do not depend on the thread count. */
#ifdef _OPENMP
#define SC__OMP(x) _Pragma(#x)
#else
#define SC__OMP(x)
#endif

#if defined(__cplusplus)
#define SC__TLS thread_local
#elif defined(_MSC_VER)
#define SC__TLS __declspec(thread)
#else
#define SC__TLS _Thread_local
#endif

static SC__TLS char sc__errbuf[1024];

SCDEF const char *sc_last_error(void) { return sc__errbuf; }

/* Record a detailed message and return the code, so callers write `return sc__fail(...)`. */
static sc_result sc__fail(sc_result r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sc__errbuf, sizeof sc__errbuf, fmt, ap);
    va_end(ap);
    return r;
}

SCDEF sc_result sc_set_error(sc_result r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sc__errbuf, sizeof sc__errbuf, fmt, ap);
    va_end(ap);
    return r;
}

SCDEF const char *sc_result_string(sc_result r)
{
    switch (r) {
    case SC_SUCCESS: return "success";
    case SC_ERROR_INVALID_ARGS: return "invalid arguments";
    case SC_ERROR_OUT_OF_MEMORY: return "out of memory";
    case SC_ERROR_IO: return "i/o error";
    case SC_ERROR_FORMAT: return "malformed input";
    case SC_ERROR_SHAPE: return "wrong shape";
    case SC_ERROR_RANGE: return "value out of range";
    case SC_ERROR_UNSUPPORTED: return "unsupported";
    case SC_ERROR_NO_DEVICE: return "no usable GPU";
    case SC_ERROR_CUDA: return "CUDA error";
    }
    return "unknown result";
}

/* ---- tensors ---- */
SCDEF size_t sc_dtype_size(sc_dtype t) { return t == SC_BF16 ? 2 : 4; }

SCDEF int64_t sc_tensor_numel(const sc_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

SCDEF size_t sc_tensor_nbytes(const sc_tensor *t)
{
    return (size_t)sc_tensor_numel(t) * sc_dtype_size(t->dtype);
}

SCDEF sc_tensor sc_tensor_view(void *data, sc_dtype dtype, sc_device device, int ndim,
                               const int64_t *shape, const char *name)
{
    sc_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.device = device;
    t.ndim = ndim < 0 ? 0 : (ndim > 4 ? 4 : ndim);
    for (int i = 0; i < t.ndim; i++) t.shape[i] = shape[i];
    t.data = data;
    t.name = name;
    return t;
}

SCDEF uint16_t sc_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

SCDEF float sc_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

SCDEF void sc_round_bf16_inplace(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = sc_bf16_to_f32(sc_f32_to_bf16(x[i]));
}

SCDEF float sc_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0) {
        if (man == 0) u = sign;
        else { /* subnormal: normalise */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400));
            u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) u = sign | 0x7f800000u | (man << 13);
    else u = sign | ((exp - 15 + 127) << 23) | (man << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- configs ---- */
static void sc__config_base(sc_config *c, const char *name, sc_arch arch, int V, int C, int I,
                            int L, int H, int KV, int D, int maxpos, int tie, double theta,
                            double eps)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->arch = arch;
    c->vocab_size = V; c->hidden_size = C; c->intermediate_size = I; c->num_layers = L;
    c->num_heads = H; c->num_kv_heads = KV; c->head_dim = D; c->max_position = maxpos;
    c->tie_embeddings = tie;
    c->attention_bias = arch == SC_ARCH_QWEN2;
    c->qk_norm = arch == SC_ARCH_QWEN3;
    c->rope_theta = theta; c->rms_eps = eps; c->init_std = 0.02;
}

static const char *sc__config_name_list =
    "tiny, qwen3-0.6b, qwen3-1.7b, qwen2.5-0.5b, qwen2.5-1.5b, qwen2.5-7b";

SCDEF const char *sc_config_names(void) { return sc__config_name_list; }

SCDEF sc_result sc_config_named(sc_config *cfg, const char *name)
{
    if (!cfg || !name) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_config_named: NULL argument");
    /* tiny: a Qwen3 small enough for a CPU demo, with GQA and head_dim != C/H. */
    if (!strcmp(name, "tiny"))
        sc__config_base(cfg, name, SC_ARCH_QWEN3, 512, 128, 352, 4, 4, 2, 48, 256, 1, 10000.0, 1e-6);
    else if (!strcmp(name, "qwen3-0.6b"))
        sc__config_base(cfg, name, SC_ARCH_QWEN3, 151936, 1024, 3072, 28, 16, 8, 128, 40960, 1, 1000000.0, 1e-6);
    else if (!strcmp(name, "qwen3-1.7b"))
        sc__config_base(cfg, name, SC_ARCH_QWEN3, 151936, 2048, 6144, 28, 16, 8, 128, 40960, 1, 1000000.0, 1e-6);
    else if (!strcmp(name, "qwen2.5-0.5b"))
        sc__config_base(cfg, name, SC_ARCH_QWEN2, 151936, 896, 4864, 24, 14, 2, 64, 32768, 1, 1000000.0, 1e-6);
    else if (!strcmp(name, "qwen2.5-1.5b"))
        sc__config_base(cfg, name, SC_ARCH_QWEN2, 151936, 1536, 8960, 28, 12, 2, 128, 32768, 1, 1000000.0, 1e-6);
    else if (!strcmp(name, "qwen2.5-7b"))
        sc__config_base(cfg, name, SC_ARCH_QWEN2, 152064, 3584, 18944, 28, 28, 4, 128, 32768, 0, 1000000.0, 1e-6);
    else
        return sc__fail(SC_ERROR_INVALID_ARGS, "unknown model name '%s' (known: %s)", name,
                        sc__config_name_list);
    return SC_SUCCESS;
}

SCDEF sc_result sc_config_validate(const sc_config *c)
{
    if (c->vocab_size <= 0 || c->hidden_size <= 0 || c->intermediate_size <= 0 ||
        c->num_layers <= 0 || c->num_heads <= 0 || c->num_kv_heads <= 0 || c->head_dim <= 0 ||
        c->max_position <= 0)
        return sc__fail(SC_ERROR_FORMAT, "config: every size must be positive");
    if (c->num_heads % c->num_kv_heads)
        return sc__fail(SC_ERROR_FORMAT, "config: num_key_value_heads (%d) must divide num_attention_heads (%d)",
                        c->num_kv_heads, c->num_heads);
    if (c->head_dim % 2)
        return sc__fail(SC_ERROR_FORMAT, "config: head_dim (%d) must be even for RoPE", c->head_dim);
    if (!(c->rms_eps > 0) || !(c->rope_theta > 0))
        return sc__fail(SC_ERROR_FORMAT, "config: rms_norm_eps and rope_theta must be positive");
    /* keep every index computation inside 63 bits and every per-layer size inside size_t */
    if ((double)c->vocab_size * c->hidden_size > 4e12 || c->hidden_size > (1 << 20) ||
        c->intermediate_size > (1 << 22) || c->num_layers > 4096 || c->num_heads > 4096 ||
        c->head_dim > 4096 || c->vocab_size > (1 << 24))
        return sc__fail(SC_ERROR_FORMAT, "config: sizes beyond what slidecheck supports");
    return SC_SUCCESS;
}

SCDEF sc_layer_offsets sc_config_layer_offsets(const sc_config *c)
{
    sc_layer_offsets o;
    size_t C = (size_t)c->hidden_size, I = (size_t)c->intermediate_size, D = (size_t)c->head_dim;
    size_t qkv = (size_t)(c->num_heads + 2 * c->num_kv_heads) * D, p = 0;
    o.ln1 = p; p += C;
    o.wqkv = p; p += qkv * C;
    o.bqkv = SIZE_MAX; if (c->attention_bias) { o.bqkv = p; p += qkv; }
    o.qnorm = o.knorm = SIZE_MAX;
    if (c->qk_norm) { o.qnorm = p; p += D; o.knorm = p; p += D; }
    o.wo = p; p += C * (size_t)c->num_heads * D;
    o.ln2 = p; p += C;
    o.wgu = p; p += 2 * I * C;
    o.wd = p; p += C * I;
    o.size = p;
    return o;
}

SCDEF size_t sc_config_layer_base(const sc_config *c, int l)
{
    return (size_t)c->vocab_size * c->hidden_size + (size_t)l * sc_config_layer_offsets(c).size;
}
SCDEF size_t sc_config_norm_offset(const sc_config *c) { return sc_config_layer_base(c, c->num_layers); }
SCDEF size_t sc_config_lm_head_offset(const sc_config *c)
{
    return c->tie_embeddings ? 0 : sc_config_norm_offset(c) + (size_t)c->hidden_size;
}
SCDEF size_t sc_config_num_params(const sc_config *c)
{
    return sc_config_norm_offset(c) + (size_t)c->hidden_size +
           (c->tie_embeddings ? 0 : (size_t)c->vocab_size * c->hidden_size);
}

static void sc__param_put(sc_param_info *out, int cap, int *n, const char *name, int ndim,
                          int64_t d0, int64_t d1, size_t offset, int layer)
{
    if (out && *n < cap) {
        sc_param_info *p = &out[*n];
        snprintf(p->name, sizeof p->name, "%s", name);
        p->ndim = ndim; p->shape[0] = d0; p->shape[1] = ndim == 2 ? d1 : 0;
        p->offset = offset; p->numel = (size_t)d0 * (size_t)(ndim == 2 ? d1 : 1); p->layer = layer;
    }
    (*n)++;
}

SCDEF int sc_config_params(const sc_config *c, sc_param_info *out, int cap)
{
    int n = 0;
    char nm[96];
    int64_t C = c->hidden_size, I = c->intermediate_size, D = c->head_dim;
    int64_t HD = (int64_t)c->num_heads * D, KD = (int64_t)c->num_kv_heads * D;
    sc_layer_offsets o = sc_config_layer_offsets(c);
    sc__param_put(out, cap, &n, "model.embed_tokens.weight", 2, c->vocab_size, C, 0, -1);
    for (int l = 0; l < c->num_layers; l++) {
        size_t b = sc_config_layer_base(c, l);
#define SC__P(suffix, nd, d0, d1, off)                                              \
        snprintf(nm, sizeof nm, "model.layers.%d.%s", l, suffix);                   \
        sc__param_put(out, cap, &n, nm, nd, d0, d1, b + (off), l)
        SC__P("input_layernorm.weight", 1, C, 0, o.ln1);
        SC__P("self_attn.q_proj.weight", 2, HD, C, o.wqkv);
        SC__P("self_attn.k_proj.weight", 2, KD, C, o.wqkv + (size_t)(HD * C));
        SC__P("self_attn.v_proj.weight", 2, KD, C, o.wqkv + (size_t)((HD + KD) * C));
        if (c->attention_bias) {
            SC__P("self_attn.q_proj.bias", 1, HD, 0, o.bqkv);
            SC__P("self_attn.k_proj.bias", 1, KD, 0, o.bqkv + (size_t)HD);
            SC__P("self_attn.v_proj.bias", 1, KD, 0, o.bqkv + (size_t)(HD + KD));
        }
        if (c->qk_norm) {
            SC__P("self_attn.q_norm.weight", 1, D, 0, o.qnorm);
            SC__P("self_attn.k_norm.weight", 1, D, 0, o.knorm);
        }
        SC__P("self_attn.o_proj.weight", 2, C, HD, o.wo);
        SC__P("post_attention_layernorm.weight", 1, C, 0, o.ln2);
        SC__P("mlp.gate_proj.weight", 2, I, C, o.wgu);
        SC__P("mlp.up_proj.weight", 2, I, C, o.wgu + (size_t)(I * C));
        SC__P("mlp.down_proj.weight", 2, C, I, o.wd);
#undef SC__P
    }
    sc__param_put(out, cap, &n, "model.norm.weight", 1, C, 0, sc_config_norm_offset(c), -1);
    if (!c->tie_embeddings)
        sc__param_put(out, cap, &n, "lm_head.weight", 2, c->vocab_size, C,
                      sc_config_lm_head_offset(c), -1);
    return n;
}

/* ---- rng ---- */
SCDEF sc_rng sc_rng_seed(uint64_t seed) { sc_rng r; r.s = seed * 0x9E3779B97F4A7C15ull + 1; return r; }
SCDEF uint64_t sc_rng_u64(sc_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
SCDEF float sc_rng_uniform(sc_rng *r) { return (float)(sc_rng_u64(r) >> 40) * (1.0f / 16777216.0f); }
SCDEF float sc_rng_normal(sc_rng *r)
{
    float u1 = sc_rng_uniform(r), u2 = sc_rng_uniform(r);
    if (u1 < 1e-30f) u1 = 1e-30f;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}

#ifndef SC_DEV_NO_PARTS
#include "wip/alloc_impl.h"
#include "wip/trace_impl.h"
#include "wip/io_impl.h"
#endif
#ifndef SC_DEV_NO_MODEL
#include "wip/model_impl.h"
#include "wip/plan_impl.h"
#endif

#endif /* SLIDECHECK_IMPLEMENTATION_DONE */
#endif /* SLIDECHECK_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
MIT License

Copyright (c) 2026 the slidecheck authors

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
*/
