/* ------------------------------------------------------------------------------------------
   Layer ops (CPU reference). Size letters, as in llm.c:
     B batch, T sequence, N = B*T rows, C hidden, I intermediate, H query heads, KV kv heads,
     D head_dim, Q = (H+2KV)*D the fused q|k|v width, K = (H+KV)*D the rotated q|k width, V vocab.
   Every op: outputs first, then what is saved for backward, then inputs, then sizes.
   Gradients of parameters accumulate (+=); gradients of activations overwrite (=), except
   rmsnorm_backward's dinp, whose input is the residual stream: it adds (+=) to it.
   Work is split by output element and every sum runs in a fixed order, so results do not
   depend on the number of threads, and a replay (recompute) gives the same bits.
   ------------------------------------------------------------------------------------------ */
SCDEF void sc_cpu_embedding_forward(float *out, const int32_t *ids, const float *wte, int N, int C);
SCDEF void sc_cpu_embedding_backward(float *dwte, const float *dout, const int32_t *ids, int N, int C);
SCDEF void sc_cpu_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w, int N, int C, float eps);
SCDEF void sc_cpu_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                                   const float *rstd, int N, int C);
/* res = a + b, then out = rmsnorm(res): the residual add fused with the next norm. */
SCDEF void sc_cpu_add_rmsnorm_forward(float *res, float *out, float *rstd, const float *a, const float *b,
                                      const float *w, int N, int C, float eps);
SCDEF void sc_cpu_add_forward(float *out, const float *a, const float *b, size_t n);
/* out[N,OC] = inp[N,IC] @ w[OC,IC]^T (+ bias[OC]) */
SCDEF void sc_cpu_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC);
/* dinp = dout @ w (if dinp); dw += dout^T @ inp (if dw); dbias += sum_n dout (if dbias) */
SCDEF void sc_cpu_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                                  const float *w, int N, int IC, int OC);
/* RoPE tables, HF convention: inv_freq in float32, cos/sin of (pos * inv_freq) in float32; [maxT, D/2]. */
SCDEF void sc_rope_table(float *cosb, float *sinb, int maxT, int D, double theta);
/* qk[N,K] = rope(qknorm(qkv[:, :K])) per head (norm only if qnorm_w != NULL); rstd[N, H+KV]. */
SCDEF void sc_cpu_qknorm_rope_forward(float *qk, float *rstd, const float *qkv, const float *qnorm_w,
                                      const float *knorm_w, const float *cosb, const float *sinb,
                                      int B, int T, int H, int KV, int D, float eps);
/* dqkv[:, :K] = backward of the above (overwrites q|k columns only); dqnorm_w/dknorm_w +=. */
SCDEF void sc_cpu_qknorm_rope_backward(float *dqkv, float *dqnorm_w, float *dknorm_w, const float *dqk,
                                       const float *qkv, const float *qnorm_w, const float *knorm_w,
                                       const float *rstd, const float *cosb, const float *sinb,
                                       int B, int T, int H, int KV, int D);
/* Causal GQA attention. q|k from qk[N,K], v from qkv[N,Q] (columns K..Q). out[N,H*D], lse[B,H,T]. */
SCDEF void sc_cpu_attention_forward(float *out, float *lse, const float *qk, const float *qkv,
                                    int B, int T, int H, int KV, int D);
/* dqk[N,K] =, dqkv[:, K:Q] (the v columns) = */
SCDEF void sc_cpu_attention_backward(float *dqk, float *dqkv, const float *dout, const float *qk,
                                     const float *qkv, const float *out, const float *lse,
                                     int B, int T, int H, int KV, int D);
/* m[N,I] = silu(gu[:, :I]) * gu[:, I:] */
SCDEF void sc_cpu_swiglu_forward(float *m, const float *gu, int N, int I);
SCDEF void sc_cpu_swiglu_backward(float *dgu, const float *dm, const float *gu, int N, int I);
/* Cross-entropy over rows of logits[n, V] with target[n] (< 0: row ignored). Writes
   dlogits = (softmax - onehot) * scale for kept rows, 0 for ignored rows (may alias logits),
   and rowloss[n] (0 for ignored rows); the caller sums row losses in a fixed order. */
SCDEF void sc_cpu_crossentropy_forward_backward(float *dlogits, float *rowloss, const float *logits,
                                                const int32_t *target, int n, int V, float scale);
SCDEF void sc_cpu_sgd_update(float *p, const float *g, size_t n, float lr, float weight_decay);
SCDEF void sc_cpu_adamw_update(float *p, float *m, float *v, const float *g, size_t n, float lr, float beta1,
                               float beta2, float eps, float weight_decay, int t);

/* ------------------------------------------------------------------------------------------
   Checkpoint policies. A policy is a per-layer plan:
     keep[l]: what layer l saves when it is not inside a recomputed segment;
     seg[l]:  the first layer of the recomputed segment that holds l, or -1 (not recomputed).
   A recomputed segment [s, e) saves only its input x_s; in backward its forward is replayed
   once (phase "recompute") and then back-propagated layer by layer.
   ------------------------------------------------------------------------------------------ */
typedef enum sc_keep {
    SC_KEEP_ALL = 0,        /* every activation the backward needs */
    SC_KEEP_SELECTIVE = 1,  /* outputs of GEMMs and attention; norms, RoPE, SwiGLU recomputed */
    SC_KEEP_SELECTIVE_MLP = 2 /* attention block kept; the whole MLP block recomputed */
} sc_keep;

#define SC_MAX_LAYERS 256
typedef struct sc_plan {
    int num_layers;
    unsigned char keep[SC_MAX_LAYERS];
    short seg[SC_MAX_LAYERS];
    char name[128];
} sc_plan;

/* Parse a policy: none | full | every:K | layers:a-b,c,... | selective | selective:mlp | sqrt.
   ("budget:SIZE" needs costs: use sc_planner_plan.) */
SCDEF sc_result sc_plan_parse(sc_plan *plan, const char *policy, int num_layers);
/* Bytes that layer l keeps after forward under `plan` (closed form), in the model's storage. */
SCDEF size_t sc_plan_saved_bytes_layer(const sc_config *cfg, const sc_plan *plan, int l, int B, int T,
                                       int act_bytes);
SCDEF size_t sc_plan_saved_bytes(const sc_config *cfg, const sc_plan *plan, int B, int T, int act_bytes);

/* ------------------------------------------------------------------------------------------
   Model and training
   ------------------------------------------------------------------------------------------ */
typedef enum sc_optim { SC_OPTIM_SGD = 0, SC_OPTIM_ADAMW = 1 } sc_optim;

typedef struct sc_model_config {
    sc_device device;          /* SC_DEVICE_CPU (default) or SC_DEVICE_CUDA */
    int bf16;                  /* bf16 storage (CUDA); the CPU rounds stored values to bf16 */
    size_t mem_cap;            /* bytes; 0 = none */
    uint64_t seed;             /* random init (0 -> 1234) */
    sc_optim optim;
    float lr;                  /* 0 -> 1e-4 */
    float beta1, beta2, eps;   /* 0 -> 0.9, 0.999, 1e-8 */
    float weight_decay;        /* plain value (0 means 0) */
    int keep_logits;           /* copy logits of the last forward to host (for `grad`) */
    int master_weights;        /* CUDA bf16: f32 master weights, f32 gradients and optimizer state */
} sc_model_config;

typedef struct sc_model sc_model; /* opaque */
typedef struct sc_cuda sc_cuda;

SCDEF sc_model_config sc_model_config_init(void);
/* Create a model with random init (params == NULL) or from a flat host float buffer. */
SCDEF sc_result sc_model_create(sc_model **out, const sc_config *cfg, const sc_model_config *mc,
                                const float *params);
SCDEF void sc_model_destroy(sc_model *m);
SCDEF const sc_config *sc_model_cfg(const sc_model *m);
SCDEF sc_allocator *sc_model_allocator(sc_model *m);
SCDEF void sc_model_set_tracer(sc_model *m, sc_tracer *tr);
/* Forward + backward on ids[B*T]: loss = mean next-token cross-entropy over B*(T-1).
   Gradients are overwritten (zeroed first). Checks ids < vocab and T <= max_position. */
SCDEF sc_result sc_model_forward_backward(sc_model *m, const sc_plan *plan, const int32_t *ids, int B, int T,
                                          float *loss);
SCDEF sc_result sc_model_optimizer_step(sc_model *m);
/* Copy parameters / gradients / last logits ([B,T,V]) to host floats. */
SCDEF sc_result sc_model_get_params(sc_model *m, float *dst);
SCDEF sc_result sc_model_get_grads(sc_model *m, float *dst);
SCDEF const float *sc_model_logits(const sc_model *m);
/* Bytes currently kept as saved activations (sum of requested sizes of tensors tagged
   "(saved activation)"), as measured by the allocator, after the last forward. */
SCDEF size_t sc_model_last_saved_bytes(const sc_model *m);
/* The model's CUDA context (NULL on the CPU backend): for tracer event callbacks. */
SCDEF sc_cuda *sc_model_cuda(sc_model *m);
/* Sizes like "6GiB", "512MiB", "1.5GB", "4096" (bytes). 0 on success, -1 on a malformed size. */
SCDEF int sc_parse_size(const char *s, size_t *out);

/* ------------------------------------------------------------------------------------------
   CUDA backend entry points (slidecheck_cuda.cu). Define SLIDECHECK_CUDA where you include
   this header and link slidecheck_cuda.o to run on the GPU. Every op mirrors the CPU op of
   the same name, with the context first. Buffers typed void* hold the context's storage
   dtype: activations and weights in `act` (f32, or bf16 with bf16=1), parameter gradients
   in `grad` (f32, or bf16 in pure-bf16 mode); float* buffers are always f32 (rstd, lse,
   rope tables, row losses). Ops are asynchronous on the context's compute stream; any
   failure is sticky and reported by sc_cuda_status(). All kernels are deterministic.
   ------------------------------------------------------------------------------------------ */
typedef struct sc_cuda_config {
    int bf16;          /* activations and weights in bf16 */
    int grads_f32;     /* with bf16: parameter gradients in f32 (master-weights mode) */
    int device;        /* CUDA device ordinal */
} sc_cuda_config;

SCDEF sc_result sc_cuda_available(void);  /* SC_SUCCESS if a usable GPU and driver exist */
SCDEF sc_result sc_cuda_create(sc_cuda **out, const sc_cuda_config *cfg);
SCDEF void sc_cuda_destroy(sc_cuda *cu);
SCDEF sc_result sc_cuda_status(sc_cuda *cu);     /* the first failure so far (sticky) */
SCDEF const char *sc_cuda_error_message(sc_cuda *cu); /* its message ("" if none) */
SCDEF sc_result sc_cuda_synchronize(sc_cuda *cu);
SCDEF const char *sc_cuda_device_name(sc_cuda *cu);
SCDEF int64_t sc_cuda_launch_count(sc_cuda *cu);  /* kernels launched so far */
/* allocator and tracer callbacks (user = the sc_cuda*) */
SCDEF void *sc_cuda_raw_alloc(size_t bytes, void *user);
SCDEF void sc_cuda_raw_free(void *ptr, size_t bytes, void *user);
SCDEF void *sc_cuda_event_record(int stream, void *user);
SCDEF int sc_cuda_event_query(void *event, void *user);
SCDEF void sc_cuda_event_destroy(void *event, void *user);
SCDEF void sc_cuda_event_synchronize(void *event, void *user);
SCDEF float sc_cuda_event_elapsed_ms(void *start, void *end, void *user);
SCDEF sc_result sc_cuda_mem_get_info(sc_cuda *cu, size_t *free_bytes, size_t *total_bytes);
/* copies: host buffers are plain memory; *_f32 convert to/from the dtype on the way */
SCDEF void sc_cuda_memset0(sc_cuda *cu, void *dst, size_t bytes);
SCDEF void sc_cuda_upload(sc_cuda *cu, void *dst, const void *src, size_t bytes);
SCDEF void sc_cuda_download(sc_cuda *cu, void *dst, const void *src, size_t bytes); /* waits */
SCDEF void sc_cuda_upload_f32(sc_cuda *cu, void *dst, sc_dtype dt, const float *src, size_t n);
SCDEF void sc_cuda_download_f32(sc_cuda *cu, float *dst, const void *src, sc_dtype dt, size_t n); /* waits */
SCDEF void sc_cuda_convert(sc_cuda *cu, void *dst, sc_dtype dt, const void *src, sc_dtype st, size_t n);

SCDEF void sc_cuda_embedding_forward(sc_cuda *cu, void *out, const int32_t *ids, const void *wte, int N, int C);
/* ids on the device; ids_host (the same ids) lets the kernel sum each token's rows in order */
SCDEF void sc_cuda_embedding_backward(sc_cuda *cu, void *dwte, const void *dout, const int32_t *ids,
                                      const int32_t *ids_host, int N, int C);
SCDEF void sc_cuda_rmsnorm_forward(sc_cuda *cu, void *out, float *rstd, const void *inp, const void *w, int N, int C, float eps);
SCDEF void sc_cuda_rmsnorm_backward(sc_cuda *cu, void *dinp, void *dw, const void *dout, const void *inp, const void *w,
                                    const float *rstd, int N, int C);
SCDEF void sc_cuda_add_rmsnorm_forward(sc_cuda *cu, void *res, void *out, float *rstd, const void *a, const void *b,
                                       const void *w, int N, int C, float eps);
SCDEF void sc_cuda_add_forward(sc_cuda *cu, void *out, const void *a, const void *b, size_t n);
SCDEF void sc_cuda_matmul_forward(sc_cuda *cu, void *out, const void *inp, const void *w, const void *bias, int N, int IC, int OC);
SCDEF void sc_cuda_matmul_backward(sc_cuda *cu, void *dinp, void *dw, void *dbias, const void *dout, const void *inp,
                                   const void *w, int N, int IC, int OC);
SCDEF void sc_cuda_qknorm_rope_forward(sc_cuda *cu, void *qk, float *rstd, const void *qkv, const void *qnorm_w,
                                       const void *knorm_w, const float *cosb, const float *sinb,
                                       int B, int T, int H, int KV, int D, float eps);
SCDEF void sc_cuda_qknorm_rope_backward(sc_cuda *cu, void *dqkv, void *dqnorm_w, void *dknorm_w, const void *dqk,
                                        const void *qkv, const void *qnorm_w, const void *knorm_w, const float *rstd,
                                        const float *cosb, const float *sinb, int B, int T, int H, int KV, int D);
SCDEF void sc_cuda_attention_forward(sc_cuda *cu, void *out, float *lse, const void *qk, const void *qkv,
                                     int B, int T, int H, int KV, int D);
SCDEF void sc_cuda_attention_backward(sc_cuda *cu, void *dqk, void *dqkv, const void *dout, const void *qk,
                                      const void *qkv, const void *out, const float *lse, int B, int T, int H, int KV, int D);
SCDEF void sc_cuda_swiglu_forward(sc_cuda *cu, void *m, const void *gu, int N, int I);
SCDEF void sc_cuda_swiglu_backward(sc_cuda *cu, void *dgu, const void *dm, const void *gu, int N, int I);
SCDEF void sc_cuda_crossentropy_forward_backward(sc_cuda *cu, void *dlogits, float *rowloss, const void *logits,
                                                 const int32_t *target, int n, int V, float scale);
/* p, m, v in dtype pt; g in dtype gt */
SCDEF void sc_cuda_sgd_update(sc_cuda *cu, void *p, sc_dtype pt, const void *g, sc_dtype gt, size_t n, float lr,
                              float weight_decay);
SCDEF void sc_cuda_adamw_update(sc_cuda *cu, void *p, void *m, void *v, sc_dtype pt, const void *g, sc_dtype gt,
                                size_t n, float lr, float beta1, float beta2, float eps, float weight_decay, int t);
