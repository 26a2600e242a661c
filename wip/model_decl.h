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
   dlogits = (softmax - onehot) * scale for kept rows, 0 for ignored rows (may alias logits);
   returns the sum of losses of kept rows (in double). */
SCDEF double sc_cpu_crossentropy_forward_backward(float *dlogits, const float *logits, const int32_t *target,
                                                  int n, int V, float scale);
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
    int bf16;                  /* CPU: round stored weights and activations to bf16 */
    size_t mem_cap;            /* bytes; 0 = none */
    uint64_t seed;             /* random init (0 -> 1234) */
    sc_optim optim;
    float lr;                  /* 0 -> 1e-4 */
    float beta1, beta2, eps;   /* 0 -> 0.9, 0.999, 1e-8 */
    float weight_decay;        /* plain value (0 means 0) */
    int keep_logits;           /* copy logits of the last forward to host (for `grad`) */
} sc_model_config;

typedef struct sc_model sc_model; /* opaque */

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
