/* ==========================================================================================
   CPU reference ops
   ========================================================================================== */

/* Dot product with 8 fixed partial sums: vectorisable, and the same order on every call. */
static float sc__dot(const float *a, const float *b, int n)
{
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += a[i + k] * b[i + k];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

SCDEF void sc_cpu_embedding_forward(float *out, const int32_t *ids, const float *wte, int N, int C)
{
    SC__OMP(omp parallel for)
    for (int n = 0; n < N; n++) memcpy(out + (size_t)n * C, wte + (size_t)ids[n] * C, sizeof(float) * C);
}

SCDEF void sc_cpu_embedding_backward(float *dwte, const float *dout, const int32_t *ids, int N, int C)
{
    /* split by column blocks; every row's contributions land in token order */
    SC__OMP(omp parallel for)
    for (int c0 = 0; c0 < C; c0 += 64) {
        int c1 = c0 + 64 < C ? c0 + 64 : C;
        for (int n = 0; n < N; n++) {
            float *d = dwte + (size_t)ids[n] * C;
            const float *g = dout + (size_t)n * C;
            for (int c = c0; c < c1; c++) d[c] += g[c];
        }
    }
}

static void sc__rmsnorm_row(float *out, float *rstd, const float *x, const float *w, int C, float eps)
{
    float ss = sc__dot(x, x, C);
    float r = 1.0f / sqrtf(ss / (float)C + eps);
    for (int c = 0; c < C; c++) out[c] = (x[c] * r) * w[c];
    *rstd = r;
}

SCDEF void sc_cpu_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w, int N, int C, float eps)
{
    SC__OMP(omp parallel for)
    for (int n = 0; n < N; n++)
        sc__rmsnorm_row(out + (size_t)n * C, rstd + n, inp + (size_t)n * C, w, C, eps);
}

SCDEF void sc_cpu_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                                   const float *rstd, int N, int C)
{
    /* y = x * r * w, r = (mean(x^2) + eps)^-1/2:
       dx = r * (dy*w) - x * r^3 / C * sum(dy*w*x);  dw += sum_n dy * x * r */
    SC__OMP(omp parallel for)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
        float *dx = dinp + (size_t)n * C, r = rstd[n], dot = 0.0f;
        for (int c = 0; c < C; c++) dot += dy[c] * w[c] * x[c];
        float k = dot * r * r * r / (float)C;
        for (int c = 0; c < C; c++) dx[c] += dy[c] * w[c] * r - x[c] * k;
    }
    SC__OMP(omp parallel for)
    for (int c = 0; c < C; c++) {
        float s = 0.0f;
        for (int n = 0; n < N; n++) s += dout[(size_t)n * C + c] * inp[(size_t)n * C + c] * rstd[n];
        dw[c] += s;
    }
}

SCDEF void sc_cpu_add_forward(float *out, const float *a, const float *b, size_t n)
{
    SC__OMP(omp parallel for)
    for (long long i = 0; i < (long long)n; i++) out[i] = a[i] + b[i];
}

SCDEF void sc_cpu_add_rmsnorm_forward(float *res, float *out, float *rstd, const float *a, const float *b,
                                      const float *w, int N, int C, float eps)
{
    /* norm of the stored sum, by the same row function as rmsnorm_forward: a replay of the
       norm alone from `res` gives the same bits */
    SC__OMP(omp parallel for)
    for (int n = 0; n < N; n++) {
        size_t o = (size_t)n * C;
        for (int c = 0; c < C; c++) res[o + c] = a[o + c] + b[o + c];
        sc__rmsnorm_row(out + o, rstd + n, res + o, w, C, eps);
    }
}

SCDEF void sc_cpu_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC)
{
    SC__OMP(omp parallel for collapse(2))
    for (int n = 0; n < N; n++)
        for (int o0 = 0; o0 < OC; o0 += 16) {
            const float *x = inp + (size_t)n * IC;
            int o1 = o0 + 16 < OC ? o0 + 16 : OC;
            for (int o = o0; o < o1; o++)
                out[(size_t)n * OC + o] = sc__dot(x, w + (size_t)o * IC, IC) + (bias ? bias[o] : 0.0f);
        }
}

SCDEF void sc_cpu_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                                  const float *w, int N, int IC, int OC)
{
    if (dinp) {
        SC__OMP(omp parallel for)
        for (int n = 0; n < N; n++) {
            float *dx = dinp + (size_t)n * IC;
            const float *g = dout + (size_t)n * OC;
            for (int i = 0; i < IC; i++) dx[i] = 0.0f;
            for (int o = 0; o < OC; o++) {
                float go = g[o];
                const float *wr = w + (size_t)o * IC;
                for (int i = 0; i < IC; i++) dx[i] += go * wr[i];
            }
        }
    }
    if (dw) {
        SC__OMP(omp parallel for)
        for (int o = 0; o < OC; o++) {
            float *d = dw + (size_t)o * IC;
            for (int n = 0; n < N; n++) {
                float go = dout[(size_t)n * OC + o];
                const float *x = inp + (size_t)n * IC;
                for (int i = 0; i < IC; i++) d[i] += go * x[i];
            }
        }
    }
    if (dbias) {
        for (int o = 0; o < OC; o++) {
            float s = 0.0f;
            for (int n = 0; n < N; n++) s += dout[(size_t)n * OC + o];
            dbias[o] += s;
        }
    }
}

SCDEF void sc_rope_table(float *cosb, float *sinb, int maxT, int D, double theta)
{
    int half = D / 2;
    for (int i = 0; i < half; i++) {
        /* HF: inv_freq = 1 / base ** (arange(0, D, 2).float() / D), in float32 */
        float inv = (float)(1.0 / pow(theta, (double)(float)((float)(2 * i) / (float)D)));
        for (int t = 0; t < maxT; t++) {
            float f = (float)t * inv; /* float32 product, as HF's position @ inv_freq */
            cosb[(size_t)t * half + i] = (float)cos((double)f);
            sinb[(size_t)t * half + i] = (float)sin((double)f);
        }
    }
}

SCDEF void sc_cpu_qknorm_rope_forward(float *qk, float *rstd, const float *qkv, const float *qnorm_w,
                                      const float *knorm_w, const float *cosb, const float *sinb,
                                      int B, int T, int H, int KV, int D, float eps)
{
    int NH = H + KV, Q = (H + 2 * KV) * D, K = NH * D, half = D / 2;
    SC__OMP(omp parallel for)
    for (int n = 0; n < B * T; n++) {
        int t = n % T;
        const float *cs = cosb + (size_t)t * half, *sn = sinb + (size_t)t * half;
        for (int h = 0; h < NH; h++) {
            const float *x = qkv + (size_t)n * Q + (size_t)h * D;
            float *y = qk + (size_t)n * K + (size_t)h * D;
            float tmp[4096];
            const float *src = x;
            if (qnorm_w) {
                sc__rmsnorm_row(tmp, rstd + (size_t)n * NH + h, x, h < H ? qnorm_w : knorm_w, D, eps);
                src = tmp;
            }
            for (int i = 0; i < half; i++) {
                float a = src[i], b = src[i + half];
                y[i] = a * cs[i] - b * sn[i];
                y[i + half] = b * cs[i] + a * sn[i];
            }
        }
    }
}

SCDEF void sc_cpu_qknorm_rope_backward(float *dqkv, float *dqnorm_w, float *dknorm_w, const float *dqk,
                                       const float *qkv, const float *qnorm_w, const float *knorm_w,
                                       const float *rstd, const float *cosb, const float *sinb,
                                       int B, int T, int H, int KV, int D)
{
    int NH = H + KV, Q = (H + 2 * KV) * D, K = NH * D, half = D / 2, N = B * T;
    /* dy = rope^T(dqk); then the per-head RMSNorm backward */
    SC__OMP(omp parallel for)
    for (int n = 0; n < N; n++) {
        int t = n % T;
        const float *cs = cosb + (size_t)t * half, *sn = sinb + (size_t)t * half;
        for (int h = 0; h < NH; h++) {
            const float *g = dqk + (size_t)n * K + (size_t)h * D;
            float *dx = dqkv + (size_t)n * Q + (size_t)h * D;
            float dy[4096];
            for (int i = 0; i < half; i++) {
                dy[i] = g[i] * cs[i] + g[i + half] * sn[i];
                dy[i + half] = g[i + half] * cs[i] - g[i] * sn[i];
            }
            if (!qnorm_w) {
                memcpy(dx, dy, sizeof(float) * D);
                continue;
            }
            const float *x = qkv + (size_t)n * Q + (size_t)h * D, *w = h < H ? qnorm_w : knorm_w;
            float r = rstd[(size_t)n * NH + h], dot = 0.0f;
            for (int i = 0; i < D; i++) dot += dy[i] * w[i] * x[i];
            float k = dot * r * r * r / (float)D;
            for (int i = 0; i < D; i++) dx[i] = dy[i] * w[i] * r - x[i] * k;
        }
    }
    if (!qnorm_w) return;
    /* weight grads: one thread per (q|k, i), rows and heads summed in a fixed order */
    SC__OMP(omp parallel for)
    for (int j = 0; j < 2 * D; j++) {
        int isk = j >= D, i = j % D, hi = isk ? NH : H, lo = isk ? H : 0;
        int ip = i < half ? i : i - half;
        float s = 0.0f;
        for (int n = 0; n < N; n++) {
            int t = n % T;
            float c = cosb[(size_t)t * half + ip], sv = sinb[(size_t)t * half + ip];
            for (int h = lo; h < hi; h++) {
                const float *g = dqk + (size_t)n * K + (size_t)h * D;
                float dyi = i < half ? g[i] * c + g[i + half] * sv : g[i] * c - g[i - half] * sv;
                s += dyi * qkv[(size_t)n * Q + (size_t)h * D + i] * rstd[(size_t)n * NH + h];
            }
        }
        (isk ? dknorm_w : dqnorm_w)[i] += s;
    }
}

SCDEF void sc_cpu_attention_forward(float *out, float *lse, const float *qk, const float *qkv,
                                    int B, int T, int H, int KV, int D)
{
    int K = (H + KV) * D, Q = (H + 2 * KV) * D, G = H / KV;
    float scale = 1.0f / sqrtf((float)D);
    SC__OMP(omp parallel for collapse(2))
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            float *s = (float *)SC_MALLOC(sizeof(float) * (size_t)T);
            int kh = h / G;
            for (int i = 0; i < T; i++) {
                const float *q = qk + ((size_t)b * T + i) * K + (size_t)h * D;
                float mx = -INFINITY, sum = 0.0f;
                for (int j = 0; j <= i; j++) {
                    s[j] = sc__dot(q, qk + ((size_t)b * T + j) * K + (size_t)(H + kh) * D, D) * scale;
                    if (s[j] > mx) mx = s[j];
                }
                for (int j = 0; j <= i; j++) { s[j] = expf(s[j] - mx); sum += s[j]; }
                float *o = out + ((size_t)b * T + i) * H * D + (size_t)h * D, inv = 1.0f / sum;
                for (int d = 0; d < D; d++) o[d] = 0.0f;
                for (int j = 0; j <= i; j++) {
                    const float *v = qkv + ((size_t)b * T + j) * Q + K + (size_t)kh * D;
                    float p = s[j] * inv;
                    for (int d = 0; d < D; d++) o[d] += p * v[d];
                }
                lse[((size_t)b * H + h) * T + i] = mx + logf(sum);
            }
            SC_FREE(s);
        }
}

SCDEF void sc_cpu_attention_backward(float *dqk, float *dqkv, const float *dout, const float *qk,
                                     const float *qkv, const float *out, const float *lse,
                                     int B, int T, int H, int KV, int D)
{
    int K = (H + KV) * D, Q = (H + 2 * KV) * D, G = H / KV, HD = H * D;
    float scale = 1.0f / sqrtf((float)D);
    /* one thread per (batch, kv head): it owns dk and dv of that head, and dq of its group */
    SC__OMP(omp parallel for collapse(2))
    for (int b = 0; b < B; b++)
        for (int kh = 0; kh < KV; kh++) {
            for (int j = 0; j < T; j++) {
                memset(dqk + ((size_t)b * T + j) * K + (size_t)(H + kh) * D, 0, sizeof(float) * D);
                memset(dqkv + ((size_t)b * T + j) * Q + K + (size_t)kh * D, 0, sizeof(float) * D);
            }
            float *p = (float *)SC_MALLOC(sizeof(float) * (size_t)T * 2), *ds = p + T;
            for (int h = kh * G; h < (kh + 1) * G; h++)
                for (int i = 0; i < T; i++) {
                    size_t row = (size_t)b * T + i;
                    const float *q = qk + row * K + (size_t)h * D, *go = dout + row * HD + (size_t)h * D;
                    float L = lse[((size_t)b * H + h) * T + i];
                    float Di = sc__dot(go, out + row * HD + (size_t)h * D, D);
                    for (int j = 0; j <= i; j++) {
                        size_t rj = (size_t)b * T + j;
                        p[j] = expf(sc__dot(q, qk + rj * K + (size_t)(H + kh) * D, D) * scale - L);
                        float dp = sc__dot(go, qkv + rj * Q + K + (size_t)kh * D, D);
                        ds[j] = p[j] * (dp - Di) * scale;
                    }
                    float *dq = dqk + row * K + (size_t)h * D;
                    for (int d = 0; d < D; d++) dq[d] = 0.0f;
                    for (int j = 0; j <= i; j++) {
                        size_t rj = (size_t)b * T + j;
                        const float *kj = qk + rj * K + (size_t)(H + kh) * D;
                        float *dk = dqk + rj * K + (size_t)(H + kh) * D;
                        float *dv = dqkv + rj * Q + K + (size_t)kh * D;
                        for (int d = 0; d < D; d++) {
                            dq[d] += ds[j] * kj[d];
                            dk[d] += ds[j] * q[d];
                            dv[d] += p[j] * go[d];
                        }
                    }
                }
            SC_FREE(p);
        }
}

static float sc__silu(float x) { return x / (1.0f + expf(-x)); }

SCDEF void sc_cpu_swiglu_forward(float *m, const float *gu, int N, int I)
{
    SC__OMP(omp parallel for)
    for (int n = 0; n < N; n++) {
        const float *g = gu + (size_t)n * 2 * I, *u = g + I;
        for (int i = 0; i < I; i++) m[(size_t)n * I + i] = sc__silu(g[i]) * u[i];
    }
}

SCDEF void sc_cpu_swiglu_backward(float *dgu, const float *dm, const float *gu, int N, int I)
{
    SC__OMP(omp parallel for)
    for (int n = 0; n < N; n++) {
        const float *g = gu + (size_t)n * 2 * I, *u = g + I, *d = dm + (size_t)n * I;
        float *dg = dgu + (size_t)n * 2 * I, *du = dg + I;
        for (int i = 0; i < I; i++) {
            float sg = 1.0f / (1.0f + expf(-g[i]));
            float s = g[i] * sg;
            du[i] = d[i] * s;
            dg[i] = d[i] * u[i] * sg * (1.0f + g[i] * (1.0f - sg));
        }
    }
}

SCDEF void sc_cpu_crossentropy_forward_backward(float *dlogits, float *rowloss, const float *logits,
                                                const int32_t *target, int n, int V, float scale)
{
    SC__OMP(omp parallel for)
    for (int r = 0; r < n; r++) {
        const float *l = logits + (size_t)r * V;
        float *d = dlogits + (size_t)r * V;
        if (target[r] < 0) {
            rowloss[r] = 0.0f;
            for (int v = 0; v < V; v++) d[v] = 0.0f;
            continue;
        }
        float mx = -INFINITY;
        for (int v = 0; v < V; v++) mx = l[v] > mx ? l[v] : mx;
        double sum = 0.0;
        for (int v = 0; v < V; v++) sum += exp((double)(l[v] - mx));
        double lse = (double)mx + log(sum);
        rowloss[r] = (float)(lse - (double)l[target[r]]);
        for (int v = 0; v < V; v++) {
            float p = (float)exp((double)l[v] - lse);
            d[v] = (p - (v == target[r] ? 1.0f : 0.0f)) * scale;
        }
    }
}

SCDEF void sc_cpu_sgd_update(float *p, const float *g, size_t n, float lr, float weight_decay)
{
    SC__OMP(omp parallel for)
    for (long long i = 0; i < (long long)n; i++) p[i] -= lr * (g[i] + weight_decay * p[i]);
}

SCDEF void sc_cpu_adamw_update(float *p, float *m, float *v, const float *g, size_t n, float lr, float beta1,
                               float beta2, float eps, float weight_decay, int t)
{
    /* torch.optim.AdamW (foreach=False): decoupled decay, bias correction, eps outside sqrt */
    float bc1 = 1.0f - powf(beta1, (float)t), bc2 = 1.0f - powf(beta2, (float)t);
    float step = lr / bc1, bc2s = sqrtf(bc2);
    SC__OMP(omp parallel for)
    for (long long i = 0; i < (long long)n; i++) {
        float pi = p[i] * (1.0f - lr * weight_decay);
        m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
        v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
        p[i] = pi - step * (m[i] / (sqrtf(v[i]) / bc2s + eps));
    }
}

/* ==========================================================================================
   Checkpoint policies
   ========================================================================================== */
static int sc__parse_int(const char *s, const char **end, int *out)
{
    if (*s < '0' || *s > '9') return 0;
    long v = 0;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s - '0');
        if (v > 1000000) return 0;
        s++;
    }
    *out = (int)v;
    *end = s;
    return 1;
}

static void sc__plan_segments(sc_plan *p, int K)
{
    for (int l = 0; l < p->num_layers; l++) p->seg[l] = (short)(l - l % K);
}

SCDEF sc_result sc_plan_parse(sc_plan *p, const char *policy, int L)
{
    if (!p || !policy) return sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint policy: NULL argument");
    if (L <= 0 || L > SC_MAX_LAYERS)
        return sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint policy: %d layers (at most %d supported)", L, SC_MAX_LAYERS);
    memset(p, 0, sizeof *p);
    p->num_layers = L;
    for (int l = 0; l < L; l++) { p->keep[l] = SC_KEEP_ALL; p->seg[l] = -1; }
    snprintf(p->name, sizeof p->name, "%s", policy);
    const char *e;
    int k;
    if (!strcmp(policy, "none")) return SC_SUCCESS;
    if (!strcmp(policy, "full")) { sc__plan_segments(p, 1); return SC_SUCCESS; }
    if (!strcmp(policy, "selective")) { memset(p->keep, SC_KEEP_SELECTIVE, (size_t)L); return SC_SUCCESS; }
    if (!strcmp(policy, "selective:mlp")) { memset(p->keep, SC_KEEP_SELECTIVE_MLP, (size_t)L); return SC_SUCCESS; }
    if (!strcmp(policy, "sqrt")) {
        k = (int)ceil(sqrt((double)L));
        sc__plan_segments(p, k);
        return SC_SUCCESS;
    }
    if (!strncmp(policy, "every:", 6)) {
        if (!sc__parse_int(policy + 6, &e, &k) || *e || k <= 0)
            return sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint policy '%s': every:K needs an integer K >= 1", policy);
        sc__plan_segments(p, k);
        return SC_SUCCESS;
    }
    if (!strncmp(policy, "layers:", 7)) {
        const char *s = policy + 7;
        for (;;) {
            int a, b;
            if (!sc__parse_int(s, &e, &a))
                return sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint policy '%s': expected a layer number at '%s'", policy, s);
            b = a;
            if (*e == '-' && !sc__parse_int(e + 1, &e, &b))
                return sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint policy '%s': bad range", policy);
            if (a > b || b >= L)
                return sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint policy '%s': range %d-%d outside layers 0-%d", policy, a, b, L - 1);
            for (int l = a; l <= b; l++) p->seg[l] = (short)l;
            if (!*e) break;
            if (*e != ',') return sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint policy '%s': expected ',' at '%s'", policy, e);
            s = e + 1;
        }
        return SC_SUCCESS;
    }
    if (!strncmp(policy, "budget:", 7))
        return sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint policy '%s' needs per-layer costs: use sc_plan_is_budget() "
                        "and sc_planner_plan()", policy);
    return sc__fail(SC_ERROR_INVALID_ARGS,
                    "unknown checkpoint policy '%s' (known: none, full, every:K, layers:LIST, selective, "
                    "selective:mlp, sqrt, budget:SIZE)", policy);
}

/* Activation slots of one layer: their sizes, and which ones each keep mode saves. */
enum {
    SC__A_X, SC__A_RSTD1, SC__A_A, SC__A_QKV, SC__A_QK, SC__A_RSTDQK, SC__A_O, SC__A_LSE, SC__A_X2,
    SC__A_RSTD2, SC__A_B, SC__A_GU, SC__A_M, SC__A_COUNT
};
static const char *sc__act_names[SC__A_COUNT] = {
    "input", "ln1.rstd", "ln1.out", "attn.qkv", "attn.qk_rope", "attn.qk_norm.rstd", "attn.out", "attn.lse",
    "residual", "ln2.rstd", "ln2.out", "mlp.gate_up", "mlp.act"};

static unsigned sc__keep_mask(int keep)
{
    unsigned all = (1u << SC__A_COUNT) - 1;
    if (keep == SC_KEEP_SELECTIVE)
        return (1u << SC__A_X) | (1u << SC__A_QKV) | (1u << SC__A_O) | (1u << SC__A_LSE) | (1u << SC__A_X2) |
               (1u << SC__A_GU);
    if (keep == SC_KEEP_SELECTIVE_MLP)
        return all & ~((1u << SC__A_RSTD2) | (1u << SC__A_B) | (1u << SC__A_GU) | (1u << SC__A_M));
    return all;
}

/* Element count and element size of each slot (act_bytes for activations, 4 for statistics). */
static size_t sc__act_numel(const sc_config *c, int slot, int B, int T)
{
    size_t N = (size_t)B * T, C = (size_t)c->hidden_size, D = (size_t)c->head_dim;
    size_t H = (size_t)c->num_heads, KV = (size_t)c->num_kv_heads, I = (size_t)c->intermediate_size;
    switch (slot) {
    case SC__A_X: case SC__A_A: case SC__A_X2: case SC__A_B: return N * C;
    case SC__A_RSTD1: case SC__A_RSTD2: return N;
    case SC__A_QKV: return N * (H + 2 * KV) * D;
    case SC__A_QK: return N * (H + KV) * D;
    case SC__A_RSTDQK: return c->qk_norm ? N * (H + KV) : 0;
    case SC__A_O: return N * H * D;
    case SC__A_LSE: return N * H;
    case SC__A_GU: return N * 2 * I;
    case SC__A_M: return N * I;
    }
    return 0;
}
static int sc__act_is_stat(int slot)
{
    return slot == SC__A_RSTD1 || slot == SC__A_RSTD2 || slot == SC__A_RSTDQK || slot == SC__A_LSE;
}
static size_t sc__act_bytes(const sc_config *c, int slot, int B, int T, int act_bytes)
{
    return sc__act_numel(c, slot, B, T) * (sc__act_is_stat(slot) ? 4u : (size_t)act_bytes);
}

/* The mask of slots layer l keeps after forward. */
static unsigned sc__plan_mask(const sc_plan *p, int l)
{
    if (p->seg[l] >= 0) return p->seg[l] == l ? (1u << SC__A_X) : 0u;
    return sc__keep_mask(p->keep[l]);
}

SCDEF size_t sc_plan_saved_bytes_layer(const sc_config *cfg, const sc_plan *plan, int l, int B, int T, int act_bytes)
{
    unsigned mask = sc__plan_mask(plan, l);
    size_t s = 0;
    for (int a = 0; a < SC__A_COUNT; a++)
        if (mask & (1u << a)) s += sc__act_bytes(cfg, a, B, T, act_bytes);
    return s;
}

SCDEF size_t sc_plan_saved_bytes(const sc_config *cfg, const sc_plan *plan, int B, int T, int act_bytes)
{
    size_t s = sc__act_bytes(cfg, SC__A_X, B, T, act_bytes); /* the last layer's output */
    for (int l = 0; l < cfg->num_layers; l++) s += sc_plan_saved_bytes_layer(cfg, plan, l, B, T, act_bytes);
    return s;
}

/* ==========================================================================================
   The model
   ========================================================================================== */
struct sc_model {
    sc_config cfg;
    sc_model_config mc;
    sc_allocator alloc;
    sc_tracer *tr;
    sc_cuda *cu;                   /* NULL on the CPU backend */
    int pb, gb, ab;                /* bytes per element: parameters, their gradients, activations */
    sc_dtype pdt, gdt;
    float *params, *grads, *master, *opt_m, *opt_v; /* device buffers (dtype by pb/gb) */
    size_t nparams;
    float *rope_cos, *rope_sin;
    int rope_T;
    int t;                         /* optimizer steps taken */
    float *acts[SC_MAX_LAYERS + 1][SC__A_COUNT];
    const int32_t *ids;            /* host */
    int32_t *ids_dev, *targets;    /* device */
    float *rowloss;                /* device, [N] */
    int B, T;
    float *logits_host, *rowloss_host;
    size_t logits_cap, rowloss_cap;
    size_t last_saved;
    int64_t launch_mark;
};

/* One call for both backends: the CPU op, or the CUDA op of the same name. */
#ifdef SLIDECHECK_CUDA
#define SC__OP(m, name, ...) \
    do { if ((m)->cu) sc_cuda_##name((m)->cu, __VA_ARGS__); else sc_cpu_##name(__VA_ARGS__); } while (0)
#else
#define SC__OP(m, name, ...) sc_cpu_##name(__VA_ARGS__)
#endif
#define SC__TRY(x) do { sc_result sc__r_ = (x); if (sc__r_ != SC_SUCCESS) return sc__r_; } while (0)

/* Element idx of a buffer whose elements are esize bytes (bf16 buffers travel as float*). */
static float *sc__at(const void *base, size_t idx, int esize)
{
    return base ? (float *)((char *)base + idx * (size_t)esize) : NULL;
}

SCDEF sc_model_config sc_model_config_init(void)
{
    sc_model_config mc;
    memset(&mc, 0, sizeof mc);
    return mc;
}

SCDEF const sc_config *sc_model_cfg(const sc_model *m) { return &m->cfg; }
SCDEF sc_allocator *sc_model_allocator(sc_model *m) { return &m->alloc; }
SCDEF const float *sc_model_logits(const sc_model *m) { return m->logits_host; }
SCDEF size_t sc_model_last_saved_bytes(const sc_model *m) { return m->last_saved; }
SCDEF sc_cuda *sc_model_cuda(sc_model *m) { return m->cu; }

SCDEF int sc_parse_size(const char *s, size_t *out)
{
    static const struct { const char *suffix; double mult; } units[] = {
        {"", 1.0}, {"B", 1.0}, {"K", 1024.0}, {"KiB", 1024.0}, {"KB", 1e3}, {"M", 1048576.0},
        {"MiB", 1048576.0}, {"MB", 1e6}, {"G", 1073741824.0}, {"GiB", 1073741824.0}, {"GB", 1e9},
        {"T", 1099511627776.0}, {"TiB", 1099511627776.0}, {"TB", 1e12}};
    char *end;
    if (!s || !*s || *s == '-' || *s == '+') return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v >= 0) || v > 1e18) return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].suffix)) {
            double b = v * units[i].mult;
            if (b > 9.0e18) return -1;
            *out = (size_t)b;
            return 0;
        }
    return -1;
}

static void sc__model_mem_hook(const sc_mem_event *ev, void *user)
{
    sc_model *m = (sc_model *)user;
    if (ev->kind == SC_MEM_ALLOC || ev->kind == SC_MEM_FREE)
        sc_tracer_mem_record(m->tr, ev->allocated_bytes, ev->reserved_bytes,
                             ev->kind == SC_MEM_ALLOC ? (int64_t)ev->size : -(int64_t)ev->size, ev->tag);
}

SCDEF void sc_model_set_tracer(sc_model *m, sc_tracer *tr)
{
    m->tr = tr;
    m->alloc.cfg.on_event = tr ? sc__model_mem_hook : NULL;
    m->alloc.cfg.on_event_user = m;
}

static int sc__span_begin(sc_model *m, const char *name, sc_phase ph, int layer)
{
    if (!m->tr) return -1;
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        int64_t n = sc_cuda_launch_count(m->cu);
        sc_tracer_count_launches(m->tr, n - m->launch_mark);
        m->launch_mark = n;
    }
#endif
    return sc_tracer_span_begin(m->tr, name, ph, layer, 0);
}

static void sc__span_end(sc_model *m, int id)
{
    if (!m->tr) return;
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        int64_t n = sc_cuda_launch_count(m->cu);
        sc_tracer_count_launches(m->tr, n - m->launch_mark);
        m->launch_mark = n;
    }
#endif
    if (!m->cu) sc_tracer_count_launches(m->tr, 0);
    sc_tracer_span_end(m->tr, id);
}

static sc_result sc__alloc_bytes(sc_model *m, float **out, size_t n, int esize, const char *tag)
{
    void *p = NULL;
    sc_result r = sc_allocator_alloc(&m->alloc, &p, n * (size_t)esize, 0, tag);
    *out = (float *)p;
    return r;
}
#define sc__alloc_act(m, out, n, tag) sc__alloc_bytes(m, out, n, (m)->ab, tag)
#define sc__alloc_f32(m, out, n, tag) sc__alloc_bytes(m, out, n, 4, tag)

static void sc__free(sc_model *m, void *p) { sc_allocator_free(&m->alloc, p); }

/* CPU bf16 mode: values are rounded to bf16 as the GPU would store them. */
static void sc__round(const sc_model *m, float *x, size_t n)
{
    if (m->mc.bf16 && !m->cu) sc_round_bf16_inplace(x, n);
}

static void sc__memset0(sc_model *m, void *p, size_t bytes)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu) { sc_cuda_memset0(m->cu, p, bytes); return; }
#endif
    (void)m;
    memset(p, 0, bytes);
}

static void sc__upload(sc_model *m, void *dst, const void *src, size_t bytes)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu) { sc_cuda_upload(m->cu, dst, src, bytes); return; }
#endif
    (void)m;
    memcpy(dst, src, bytes);
}

/* n floats of a buffer with esize-byte elements (f32 or bf16) into host f32. */
static sc_result sc__download_f32(sc_model *m, float *dst, const void *src, int esize, size_t n)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        sc_cuda_download_f32(m->cu, dst, src, esize == 2 ? SC_BF16 : SC_F32, n);
        return sc_cuda_status(m->cu);
    }
#endif
    (void)m; (void)esize;
    memcpy(dst, src, n * sizeof(float));
    return SC_SUCCESS;
}

static sc_result sc__upload_f32(sc_model *m, void *dst, int esize, const float *src, size_t n)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        sc_cuda_upload_f32(m->cu, dst, esize == 2 ? SC_BF16 : SC_F32, src, n);
        return sc_cuda_status(m->cu);
    }
#endif
    (void)m; (void)esize;
    memcpy(dst, src, n * sizeof(float));
    return SC_SUCCESS;
}

static void sc__act_drop(sc_model *m, int l, int a)
{
    sc__free(m, m->acts[l][a]);
    m->acts[l][a] = NULL;
}

static void sc__model_drop_acts(sc_model *m)
{
    for (int l = 0; l <= SC_MAX_LAYERS; l++)
        for (int a = 0; a < SC__A_COUNT; a++) sc__act_drop(m, l, a);
}

SCDEF void sc_model_destroy(sc_model *m)
{
    if (!m) return;
    sc__model_drop_acts(m);
    void *bufs[] = {m->params, m->grads, m->master, m->opt_m, m->opt_v, m->rope_cos, m->rope_sin,
                    m->ids_dev, m->targets, m->rowloss};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) sc__free(m, bufs[i]);
    sc_allocator_uninit(&m->alloc);
#ifdef SLIDECHECK_CUDA
    sc_cuda_destroy(m->cu);
#endif
    SC_FREE(m->logits_host);
    SC_FREE(m->rowloss_host);
    SC_FREE(m);
}

/* HF init: normal(0, initializer_range) for linear and embedding weights, 1 for norms, 0 for
   biases. Element k of parameter i comes from its own counter-based stream (seed, i, k), so the
   values do not depend on the layout or the thread count, and init runs on all cores. */
static sc_result sc__init_params(float *dst, const sc_config *cfg, uint64_t seed)
{
    int np = sc_config_params(cfg, NULL, 0);
    sc_param_info *pi = (sc_param_info *)SC_MALLOC(sizeof(sc_param_info) * (size_t)np);
    if (!pi) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc of the parameter table failed");
    sc_config_params(cfg, pi, np);
    for (int i = 0; i < np; i++) {
        float *p = dst + pi[i].offset;
        int is_norm = strstr(pi[i].name, "norm") != NULL, is_bias = strstr(pi[i].name, ".bias") != NULL;
        float std = (float)cfg->init_std;
        uint64_t base = seed * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xD1B54A32D192ED03ull;
        SC__OMP(omp parallel for)
        for (long long k = 0; k < (long long)pi[i].numel; k++) {
            sc_rng r = sc_rng_seed(base + (uint64_t)k);
            p[k] = is_norm ? 1.0f : is_bias ? 0.0f : std * sc_rng_normal(&r);
        }
    }
    SC_FREE(pi);
    return SC_SUCCESS;
}

SCDEF sc_result sc_model_create(sc_model **out, const sc_config *cfg, const sc_model_config *mcin,
                                const float *params)
{
    sc_result r;
    *out = NULL;
    SC__TRY(sc_config_validate(cfg));
    if (cfg->num_layers > SC_MAX_LAYERS)
        return sc__fail(SC_ERROR_UNSUPPORTED, "%d layers: at most %d supported", cfg->num_layers, SC_MAX_LAYERS);
    sc_model_config mc = mcin ? *mcin : sc_model_config_init();
    if (!mc.seed) mc.seed = 1234;
    if (mc.lr == 0.0f) mc.lr = 1e-4f;
    if (mc.beta1 == 0.0f) mc.beta1 = 0.9f;
    if (mc.beta2 == 0.0f) mc.beta2 = 0.999f;
    if (mc.eps == 0.0f) mc.eps = 1e-8f;
    sc_model *m = (sc_model *)SC_MALLOC(sizeof *m);
    if (!m) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc of the model struct failed");
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->mc = mc;
    m->pb = m->gb = m->ab = 4;
    m->pdt = m->gdt = SC_F32;
    sc_allocator_config ac;
    memset(&ac, 0, sizeof ac);
    ac.mem_cap = mc.mem_cap;
    ac.name = "cpu";
    if (mc.device == SC_DEVICE_CUDA) {
#ifdef SLIDECHECK_CUDA
        sc_cuda_config cc;
        memset(&cc, 0, sizeof cc);
        cc.bf16 = mc.bf16;
        cc.grads_f32 = mc.master_weights;
        if ((r = sc_cuda_create(&m->cu, &cc)) != SC_SUCCESS) { SC_FREE(m); return r; }
        if (mc.bf16) {
            m->pb = m->ab = 2;
            m->pdt = SC_BF16;
            if (!mc.master_weights) { m->gb = 2; m->gdt = SC_BF16; }
        }
        ac.name = "cuda:0";
        ac.raw_alloc = sc_cuda_raw_alloc;
        ac.raw_free = sc_cuda_raw_free;
        ac.raw_user = m->cu;
        ac.event_record = sc_cuda_event_record;
        ac.event_query = sc_cuda_event_query;
        ac.event_destroy = sc_cuda_event_destroy;
        ac.event_synchronize = sc_cuda_event_synchronize;
        ac.event_user = m->cu;
#else
        SC_FREE(m);
        return sc__fail(SC_ERROR_NO_DEVICE, "this build has no CUDA backend (build with nvcc: make)");
#endif
    }
    if ((r = sc_allocator_init(&m->alloc, &ac)) != SC_SUCCESS) {
#ifdef SLIDECHECK_CUDA
        sc_cuda_destroy(m->cu);
#endif
        SC_FREE(m);
        return r;
    }
    m->nparams = sc_config_num_params(cfg);
    float *host = NULL;
    if ((r = sc__alloc_bytes(m, &m->params, m->nparams, m->pb, "weights")) != SC_SUCCESS ||
        (r = sc__alloc_bytes(m, &m->grads, m->nparams, m->gb, "grad")) != SC_SUCCESS)
        goto fail;
    if (m->cu && mc.master_weights &&
        (r = sc__alloc_f32(m, &m->master, m->nparams, "master weights")) != SC_SUCCESS)
        goto fail;
    host = (float *)SC_MALLOC(sizeof(float) * m->nparams);
    if (!host) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc of %zu parameters failed", m->nparams); goto fail; }
    if (params) memcpy(host, params, sizeof(float) * m->nparams);
    else if ((r = sc__init_params(host, cfg, mc.seed)) != SC_SUCCESS) goto fail;
    if (mc.bf16) sc_round_bf16_inplace(host, m->nparams);
    if ((r = sc__upload_f32(m, m->params, m->pb, host, m->nparams)) != SC_SUCCESS) goto fail;
    if (m->master && (r = sc__upload_f32(m, m->master, 4, host, m->nparams)) != SC_SUCCESS) goto fail;
    SC_FREE(host);
    *out = m;
    return SC_SUCCESS;
fail:
    SC_FREE(host);
    sc_model_destroy(m);
    return r;
}

static sc_result sc__ensure_rope(sc_model *m, int T)
{
    if (m->rope_T >= T) return SC_SUCCESS;
    sc__free(m, m->rope_cos);
    sc__free(m, m->rope_sin);
    m->rope_cos = m->rope_sin = NULL;
    m->rope_T = 0;
    size_t n = (size_t)T * (size_t)(m->cfg.head_dim / 2);
    float *hc = (float *)SC_MALLOC(sizeof(float) * n * 2);
    if (!hc) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc of the RoPE table failed");
    sc_rope_table(hc, hc + n, T, m->cfg.head_dim, m->cfg.rope_theta);
    sc_result r;
    if ((r = sc__alloc_f32(m, &m->rope_cos, n, "rope.cos")) == SC_SUCCESS &&
        (r = sc__alloc_f32(m, &m->rope_sin, n, "rope.sin")) == SC_SUCCESS) {
        sc__upload(m, m->rope_cos, hc, n * sizeof(float));
        sc__upload(m, m->rope_sin, hc + n, n * sizeof(float));
        m->rope_T = T;
    }
    SC_FREE(hc);
    return r;
}

/* Allocate activation slot `a` of layer l (slot X of layer L is the stack's output). */
static sc_result sc__act_get(sc_model *m, int l, int a)
{
    if (m->acts[l][a]) return SC_SUCCESS;
    char tag[64];
    snprintf(tag, sizeof tag, "layer %d %s (saved activation)", l, sc__act_names[a]);
    size_t n = sc__act_numel(&m->cfg, a, m->B, m->T);
    if (!n) return SC_SUCCESS; /* e.g. q/k-norm statistics of a model without q/k norms */
    return sc__alloc_bytes(m, &m->acts[l][a], n, sc__act_is_stat(a) ? 4 : m->ab, tag);
}

static float *sc__lw(sc_model *m, int l, size_t off)
{
    return off == SIZE_MAX ? NULL : sc__at(m->params, sc_config_layer_base(&m->cfg, l) + off, m->pb);
}
static float *sc__lg(sc_model *m, int l, size_t off)
{
    return off == SIZE_MAX ? NULL : sc__at(m->grads, sc_config_layer_base(&m->cfg, l) + off, m->gb);
}

/* Compute every activation of layer l that is missing, from what is there (x at least).
   The forward pass is this on an empty layer; a recompute is this on a partial one, so both
   run the very same arithmetic. `mask` = slots to keep afterwards (the others are freed at
   their last use here). */
static sc_result sc__layer_fill(sc_model *m, int l, unsigned mask)
{
    const sc_config *c = &m->cfg;
    sc_layer_offsets o = sc_config_layer_offsets(c);
    int B = m->B, T = m->T, N = B * T, C = c->hidden_size, I = c->intermediate_size;
    int H = c->num_heads, KV = c->num_kv_heads, D = c->head_dim, Q = (H + 2 * KV) * D;
    float eps = (float)c->rms_eps;
    float **A = m->acts[l];
#define SC__HAVE(s) (A[s] != NULL)
#define SC__KEEP(s) (mask & (1u << (s)))
#define SC__DONE(s) do { if (!SC__KEEP(s)) sc__act_drop(m, l, s); } while (0)
    if (!SC__HAVE(SC__A_A) && (!SC__HAVE(SC__A_QKV) || SC__KEEP(SC__A_A))) {
        SC__TRY(sc__act_get(m, l, SC__A_A));
        SC__TRY(sc__act_get(m, l, SC__A_RSTD1));
        SC__OP(m, rmsnorm_forward, A[SC__A_A], A[SC__A_RSTD1], A[SC__A_X], sc__lw(m, l, o.ln1), N, C, eps);
        sc__round(m, A[SC__A_A], (size_t)N * C);
    }
    if (!SC__HAVE(SC__A_QKV)) {
        SC__TRY(sc__act_get(m, l, SC__A_QKV));
        SC__OP(m, matmul_forward, A[SC__A_QKV], A[SC__A_A], sc__lw(m, l, o.wqkv), sc__lw(m, l, o.bqkv), N, C, Q);
        sc__round(m, A[SC__A_QKV], (size_t)N * Q);
    }
    if (SC__HAVE(SC__A_A)) { SC__DONE(SC__A_A); SC__DONE(SC__A_RSTD1); }
    int need_attn = !SC__HAVE(SC__A_O) || !SC__HAVE(SC__A_LSE);
    if (!SC__HAVE(SC__A_QK) && (need_attn || SC__KEEP(SC__A_QK))) {
        SC__TRY(sc__act_get(m, l, SC__A_QK));
        SC__TRY(sc__act_get(m, l, SC__A_RSTDQK));
        SC__OP(m, qknorm_rope_forward, A[SC__A_QK], A[SC__A_RSTDQK], A[SC__A_QKV], sc__lw(m, l, o.qnorm),
               sc__lw(m, l, o.knorm), m->rope_cos, m->rope_sin, B, T, H, KV, D, eps);
        sc__round(m, A[SC__A_QK], (size_t)N * (H + KV) * D);
    }
    if (need_attn) {
        SC__TRY(sc__act_get(m, l, SC__A_O));
        SC__TRY(sc__act_get(m, l, SC__A_LSE));
        SC__OP(m, attention_forward, A[SC__A_O], A[SC__A_LSE], A[SC__A_QK], A[SC__A_QKV], B, T, H, KV, D);
        sc__round(m, A[SC__A_O], (size_t)N * H * D);
    }
    if (SC__HAVE(SC__A_QK)) { SC__DONE(SC__A_QK); SC__DONE(SC__A_RSTDQK); }
    SC__DONE(SC__A_QKV);
    int need_b = !SC__HAVE(SC__A_B) && (!SC__HAVE(SC__A_GU) || SC__KEEP(SC__A_B));
    if (!SC__HAVE(SC__A_X2)) {
        float *tmp = NULL;
        SC__TRY(sc__act_get(m, l, SC__A_X2));
        SC__TRY(sc__act_get(m, l, SC__A_B));
        SC__TRY(sc__act_get(m, l, SC__A_RSTD2));
        SC__TRY(sc__alloc_act(m, &tmp, (size_t)N * C, "attn.o_proj out (temporary)"));
        SC__OP(m, matmul_forward, tmp, A[SC__A_O], sc__lw(m, l, o.wo), NULL, N, H * D, C);
        sc__round(m, tmp, (size_t)N * C);
        SC__OP(m, add_rmsnorm_forward, A[SC__A_X2], A[SC__A_B], A[SC__A_RSTD2], A[SC__A_X], tmp,
               sc__lw(m, l, o.ln2), N, C, eps);
        if (m->mc.bf16 && !m->cu) {
            /* the GPU normalises the stored (bf16) sum: do the same */
            sc__round(m, A[SC__A_X2], (size_t)N * C);
            sc_cpu_rmsnorm_forward(A[SC__A_B], A[SC__A_RSTD2], A[SC__A_X2], sc__lw(m, l, o.ln2), N, C, eps);
        }
        sc__round(m, A[SC__A_B], (size_t)N * C);
        sc__free(m, tmp);
    } else if (need_b) {
        SC__TRY(sc__act_get(m, l, SC__A_B));
        SC__TRY(sc__act_get(m, l, SC__A_RSTD2));
        SC__OP(m, rmsnorm_forward, A[SC__A_B], A[SC__A_RSTD2], A[SC__A_X2], sc__lw(m, l, o.ln2), N, C, eps);
        sc__round(m, A[SC__A_B], (size_t)N * C);
    }
    SC__DONE(SC__A_O);
    SC__DONE(SC__A_LSE);
    if (!SC__HAVE(SC__A_GU)) {
        SC__TRY(sc__act_get(m, l, SC__A_GU));
        SC__OP(m, matmul_forward, A[SC__A_GU], A[SC__A_B], sc__lw(m, l, o.wgu), NULL, N, C, 2 * I);
        sc__round(m, A[SC__A_GU], (size_t)N * 2 * I);
    }
    if (SC__HAVE(SC__A_B)) { SC__DONE(SC__A_B); SC__DONE(SC__A_RSTD2); }
    if (!SC__HAVE(SC__A_M)) {
        SC__TRY(sc__act_get(m, l, SC__A_M));
        SC__OP(m, swiglu_forward, A[SC__A_M], A[SC__A_GU], N, I);
        sc__round(m, A[SC__A_M], (size_t)N * I);
    }
    SC__DONE(SC__A_GU);
#undef SC__HAVE
#undef SC__KEEP
#undef SC__DONE
    return SC_SUCCESS;
}

/* x_{l+1} = x2 + down_proj(m); frees m and x2 unless `mask` keeps them. */
static sc_result sc__layer_output(sc_model *m, int l, unsigned mask)
{
    const sc_config *c = &m->cfg;
    sc_layer_offsets o = sc_config_layer_offsets(c);
    int N = m->B * m->T, C = c->hidden_size, I = c->intermediate_size;
    float *tmp = NULL;
    SC__TRY(sc__act_get(m, l + 1, SC__A_X));
    SC__TRY(sc__alloc_act(m, &tmp, (size_t)N * C, "mlp.down_proj out (temporary)"));
    SC__OP(m, matmul_forward, tmp, m->acts[l][SC__A_M], sc__lw(m, l, o.wd), NULL, N, I, C);
    sc__round(m, tmp, (size_t)N * C);
    SC__OP(m, add_forward, m->acts[l + 1][SC__A_X], m->acts[l][SC__A_X2], tmp, (size_t)N * C);
    sc__round(m, m->acts[l + 1][SC__A_X], (size_t)N * C);
    sc__free(m, tmp);
    if (!(mask & (1u << SC__A_M))) sc__act_drop(m, l, SC__A_M);
    if (!(mask & (1u << SC__A_X2))) sc__act_drop(m, l, SC__A_X2);
    return SC_SUCCESS;
}

/* Back-propagate layer l. dres holds dL/d(output of layer l) and becomes dL/d(its input). */
static sc_result sc__layer_backward(sc_model *m, int l, float *dres)
{
    const sc_config *c = &m->cfg;
    sc_layer_offsets o = sc_config_layer_offsets(c);
    int B = m->B, T = m->T, N = B * T, C = c->hidden_size, I = c->intermediate_size;
    int H = c->num_heads, KV = c->num_kv_heads, D = c->head_dim, Q = (H + 2 * KV) * D;
    float **A = m->acts[l];
    float *dbig = NULL, *dsmall = NULL, *dc = NULL;
    size_t big = (size_t)N * (size_t)(2 * I > Q + (H + KV) * D ? 2 * I : Q + (H + KV) * D);
    size_t small = (size_t)N * (size_t)(I > H * D ? I : H * D);
    sc_result r;
    if ((r = sc__alloc_act(m, &dbig, big, "backward scratch")) != SC_SUCCESS ||
        (r = sc__alloc_act(m, &dsmall, small, "backward scratch")) != SC_SUCCESS ||
        (r = sc__alloc_act(m, &dc, (size_t)N * C, "backward scratch")) != SC_SUCCESS) {
        sc__free(m, dbig);
        sc__free(m, dsmall);
        return r;
    }
    /* MLP: out = x2 + down(swiglu(gate_up(ln2(x2)))) */
    SC__OP(m, matmul_backward, dsmall, sc__lg(m, l, o.wd), NULL, dres, A[SC__A_M], sc__lw(m, l, o.wd), N, I, C);
    SC__OP(m, swiglu_backward, dbig, dsmall, A[SC__A_GU], N, I);
    SC__OP(m, matmul_backward, dc, sc__lg(m, l, o.wgu), NULL, dbig, A[SC__A_B], sc__lw(m, l, o.wgu), N, C, 2 * I);
    SC__OP(m, rmsnorm_backward, dres, sc__lg(m, l, o.ln2), dc, A[SC__A_X2], sc__lw(m, l, o.ln2), A[SC__A_RSTD2], N, C);
    /* attention: x2 = x + o_proj(attn(rope(qknorm(qkv(ln1(x)))))) */
    SC__OP(m, matmul_backward, dsmall, sc__lg(m, l, o.wo), NULL, dres, A[SC__A_O], sc__lw(m, l, o.wo), N, H * D, C);
    float *dqkv = dbig, *dqk = sc__at(dbig, (size_t)N * Q, m->ab);
    SC__OP(m, attention_backward, dqk, dqkv, dsmall, A[SC__A_QK], A[SC__A_QKV], A[SC__A_O], A[SC__A_LSE],
           B, T, H, KV, D);
    SC__OP(m, qknorm_rope_backward, dqkv, sc__lg(m, l, o.qnorm), sc__lg(m, l, o.knorm), dqk, A[SC__A_QKV],
           sc__lw(m, l, o.qnorm), sc__lw(m, l, o.knorm), A[SC__A_RSTDQK], m->rope_cos, m->rope_sin, B, T, H, KV, D);
    SC__OP(m, matmul_backward, dc, sc__lg(m, l, o.wqkv), sc__lg(m, l, o.bqkv), dqkv, A[SC__A_A],
           sc__lw(m, l, o.wqkv), N, C, Q);
    SC__OP(m, rmsnorm_backward, dres, sc__lg(m, l, o.ln1), dc, A[SC__A_X], sc__lw(m, l, o.ln1), A[SC__A_RSTD1], N, C);
    sc__free(m, dbig);
    sc__free(m, dsmall);
    sc__free(m, dc);
    return SC_SUCCESS;
}

static int sc__seg_end(const sc_plan *p, int l)
{
    int e = l;
    while (e + 1 < p->num_layers && p->seg[e + 1] == p->seg[l]) e++;
    return e + 1;
}

/* Final norm, LM head and loss, in row chunks so that the logits never exist whole; leaves
   dL/d(x_L) in *dres_out. */
static sc_result sc__head_forward_backward(sc_model *m, float **dres_out, double *loss_sum)
{
    const sc_config *c = &m->cfg;
    int L = c->num_layers, C = c->hidden_size, V = c->vocab_size, N = m->B * m->T;
    int chunk = N < 1024 ? N : 1024;
    float *xn = NULL, *rstd = NULL, *dxn = NULL, *lg = NULL, *dres = NULL;
    const float *wlm = sc__at(m->params, sc_config_lm_head_offset(c), m->pb);
    float *dwlm = sc__at(m->grads, sc_config_lm_head_offset(c), m->gb);
    const float *nw = sc__at(m->params, sc_config_norm_offset(c), m->pb);
    sc_result r;
    if ((r = sc__alloc_act(m, &xn, (size_t)N * C, "final norm out")) != SC_SUCCESS ||
        (r = sc__alloc_f32(m, &rstd, (size_t)N, "final norm rstd")) != SC_SUCCESS ||
        (r = sc__alloc_act(m, &dxn, (size_t)N * C, "final norm grad")) != SC_SUCCESS ||
        (r = sc__alloc_act(m, &lg, (size_t)chunk * V, "logits chunk")) != SC_SUCCESS)
        goto done;
    if (m->mc.keep_logits && m->logits_cap < (size_t)N * V) {
        SC_FREE(m->logits_host);
        m->logits_host = (float *)SC_MALLOC(sizeof(float) * (size_t)N * V);
        m->logits_cap = m->logits_host ? (size_t)N * V : 0;
        if (!m->logits_host) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc of the logits failed"); goto done; }
    }
    SC__OP(m, rmsnorm_forward, xn, rstd, m->acts[L][SC__A_X], nw, N, C, (float)c->rms_eps);
    sc__round(m, xn, (size_t)N * C);
    for (int r0 = 0; r0 < N; r0 += chunk) {
        int n = N - r0 < chunk ? N - r0 : chunk;
        float *xr = sc__at(xn, (size_t)r0 * C, m->ab);
        SC__OP(m, matmul_forward, lg, xr, wlm, NULL, n, C, V);
        sc__round(m, lg, (size_t)n * V);
        if (m->mc.keep_logits && (r = sc__download_f32(m, m->logits_host + (size_t)r0 * V, lg, m->ab,
                                                        (size_t)n * V)) != SC_SUCCESS)
            goto done;
        SC__OP(m, crossentropy_forward_backward, lg, m->rowloss + r0, lg, m->targets + r0, n, V,
               1.0f / (float)(m->B * (m->T - 1)));
        sc__round(m, lg, (size_t)n * V);
        SC__OP(m, matmul_backward, sc__at(dxn, (size_t)r0 * C, m->ab), dwlm, NULL, lg, xr, wlm, n, C, V);
    }
    if ((r = sc__download_f32(m, m->rowloss_host, m->rowloss, 4, (size_t)N)) != SC_SUCCESS) goto done;
    *loss_sum = 0.0;
    for (int i = 0; i < N; i++) *loss_sum += (double)m->rowloss_host[i];
    sc__free(m, lg);
    lg = NULL;
    /* dres = dL/d(x_L): the final norm's backward adds into zeros */
    if ((r = sc__alloc_act(m, &dres, (size_t)N * C, "residual grad")) != SC_SUCCESS) goto done;
    sc__memset0(m, dres, (size_t)N * C * (size_t)m->ab);
    SC__OP(m, rmsnorm_backward, dres, sc__at(m->grads, sc_config_norm_offset(c), m->gb), dxn, m->acts[L][SC__A_X],
           nw, rstd, N, C);
    sc__act_drop(m, L, SC__A_X);
done:
    sc__free(m, xn);
    sc__free(m, rstd);
    sc__free(m, dxn);
    sc__free(m, lg);
    *dres_out = dres;
    return r;
}

static sc_result sc__forward_backward(sc_model *m, const sc_plan *plan, float *loss)
{
    const sc_config *c = &m->cfg;
    int L = c->num_layers, C = c->hidden_size, N = m->B * m->T;
    float *dres = NULL;
    double lsum = 0.0;
    int sp;
    sc_result r;
    SC__TRY(sc__act_get(m, 0, SC__A_X));
    sp = sc__span_begin(m, "embedding", SC_PHASE_FWD, -1);
    SC__OP(m, embedding_forward, m->acts[0][SC__A_X], m->ids_dev, m->params, N, C);
    sc__span_end(m, sp);
    for (int l = 0; l < L; l++) {
        unsigned mask = sc__plan_mask(plan, l);
        sp = sc__span_begin(m, "layer", SC_PHASE_FWD, l);
        SC__TRY(sc__layer_fill(m, l, mask));
        SC__TRY(sc__layer_output(m, l, mask));
        if (!(mask & (1u << SC__A_X))) sc__act_drop(m, l, SC__A_X);
        sc__span_end(m, sp);
    }
    m->last_saved = sc_allocator_live_bytes_tagged(&m->alloc, "layer ");
    sp = sc__span_begin(m, "lm_head+loss", SC_PHASE_LOSS, -1);
    SC__TRY(sc__head_forward_backward(m, &dres, &lsum));
    sc__span_end(m, sp);
    *loss = (float)(lsum / (double)(m->B * (m->T - 1)));
    for (int l = L - 1; l >= 0; l--) {
        if (plan->seg[l] >= 0 && sc__seg_end(plan, l) == l + 1) {
            /* the last layer of a recomputed segment: replay the segment's forward once */
            for (int j = plan->seg[l]; j <= l; j++) {
                sp = sc__span_begin(m, "layer", SC_PHASE_RECOMPUTE, j);
                if ((r = sc__layer_fill(m, j, ~0u)) != SC_SUCCESS) goto fail;
                if (j < l && (r = sc__layer_output(m, j, ~0u)) != SC_SUCCESS) goto fail;
                sc__span_end(m, sp);
            }
        } else if (plan->seg[l] < 0 && plan->keep[l] != SC_KEEP_ALL) {
            sp = sc__span_begin(m, "layer", SC_PHASE_RECOMPUTE, l);
            if ((r = sc__layer_fill(m, l, ~0u)) != SC_SUCCESS) goto fail;
            sc__span_end(m, sp);
        }
        sp = sc__span_begin(m, "layer", SC_PHASE_BWD, l);
        if ((r = sc__layer_backward(m, l, dres)) != SC_SUCCESS) goto fail;
        for (int a = 0; a < SC__A_COUNT; a++) sc__act_drop(m, l, a);
        sc__span_end(m, sp);
    }
    sp = sc__span_begin(m, "embedding", SC_PHASE_BWD, -1);
#ifdef SLIDECHECK_CUDA
    if (m->cu) sc_cuda_embedding_backward(m->cu, m->grads, dres, m->ids_dev, m->ids, N, C);
    else
#endif
        sc_cpu_embedding_backward(m->grads, dres, m->ids, N, C);
    sc__span_end(m, sp);
    r = SC_SUCCESS;
fail:
    sc__free(m, dres);
    return r;
}

SCDEF sc_result sc_model_forward_backward(sc_model *m, const sc_plan *plan, const int32_t *ids, int B, int T,
                                          float *loss)
{
    const sc_config *c = &m->cfg;
    int L = c->num_layers, V = c->vocab_size;
    if (!plan || plan->num_layers != L)
        return sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint plan is for %d layers, the model has %d",
                        plan ? plan->num_layers : -1, L);
    if (B <= 0 || T < 2)
        return sc__fail(SC_ERROR_INVALID_ARGS, "need batch >= 1 and sequence >= 2 (got %d x %d)", B, T);
    if (T > c->max_position)
        return sc__fail(SC_ERROR_RANGE, "sequence length %d exceeds max_position_embeddings %d", T, c->max_position);
    if ((int64_t)B * T > ((int64_t)1 << 30) / (V > 0 ? 1 : 1))
        return sc__fail(SC_ERROR_RANGE, "batch x sequence = %lld is too large", (long long)B * T);
    for (int i = 0; i < B * T; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return sc__fail(SC_ERROR_RANGE, "token id %d at [%d,%d] is outside the vocabulary [0, %d)", ids[i],
                            i / T, i % T, V);
    int N = B * T;
    sc_result r;
    sc__model_drop_acts(m);
    if (B != m->B || T != m->T) {
        sc__free(m, m->ids_dev);
        sc__free(m, m->targets);
        sc__free(m, m->rowloss);
        m->ids_dev = m->targets = NULL;
        m->rowloss = NULL;
        m->B = m->T = 0;
        void *p1 = NULL, *p2 = NULL;
        SC__TRY(sc_allocator_alloc(&m->alloc, &p1, sizeof(int32_t) * (size_t)N, 0, "input ids"));
        m->ids_dev = (int32_t *)p1;
        SC__TRY(sc_allocator_alloc(&m->alloc, &p2, sizeof(int32_t) * (size_t)N, 0, "targets"));
        m->targets = (int32_t *)p2;
        SC__TRY(sc__alloc_f32(m, &m->rowloss, (size_t)N, "row losses"));
        if (m->rowloss_cap < (size_t)N) {
            SC_FREE(m->rowloss_host);
            m->rowloss_host = (float *)SC_MALLOC(sizeof(float) * (size_t)N);
            m->rowloss_cap = m->rowloss_host ? (size_t)N : 0;
            if (!m->rowloss_host) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc failed");
        }
    }
    m->B = B;
    m->T = T;
    m->ids = ids;
    SC__TRY(sc__ensure_rope(m, T));
    /* targets: the next token; the last position of each sequence has none (HF's shift) */
    int32_t *tg = (int32_t *)SC_MALLOC(sizeof(int32_t) * (size_t)N);
    if (!tg) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc failed");
    for (int i = 0; i < N; i++) tg[i] = (i % T) < T - 1 ? ids[i + 1] : -1;
    sc__upload(m, m->targets, tg, sizeof(int32_t) * (size_t)N);
    sc__upload(m, m->ids_dev, ids, sizeof(int32_t) * (size_t)N);
#ifdef SLIDECHECK_CUDA
    if (m->cu) sc_cuda_synchronize(m->cu); /* tg is freed next */
#endif
    SC_FREE(tg);
    sc__memset0(m, m->grads, m->nparams * (size_t)m->gb);
    r = sc__forward_backward(m, plan, loss);
#ifdef SLIDECHECK_CUDA
    if (r == SC_SUCCESS && m->cu) r = sc_cuda_status(m->cu);
#endif
    sc__model_drop_acts(m);
    return r;
}

SCDEF sc_result sc_model_optimizer_step(sc_model *m)
{
    int sp = sc__span_begin(m, "optimizer", SC_PHASE_OPT, -1);
    m->t++;
    float *p = m->master ? m->master : m->params;
    int pb = m->master ? 4 : m->pb;
    if (m->mc.optim == SC_OPTIM_ADAMW && !m->opt_m) {
        SC__TRY(sc__alloc_bytes(m, &m->opt_m, m->nparams, pb, "adamw.m"));
        SC__TRY(sc__alloc_bytes(m, &m->opt_v, m->nparams, pb, "adamw.v"));
        sc__memset0(m, m->opt_m, m->nparams * (size_t)pb);
        sc__memset0(m, m->opt_v, m->nparams * (size_t)pb);
    }
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        sc_dtype pt = pb == 2 ? SC_BF16 : SC_F32;
        if (m->mc.optim == SC_OPTIM_ADAMW)
            sc_cuda_adamw_update(m->cu, p, m->opt_m, m->opt_v, pt, m->grads, m->gdt, m->nparams, m->mc.lr,
                                 m->mc.beta1, m->mc.beta2, m->mc.eps, m->mc.weight_decay, m->t);
        else
            sc_cuda_sgd_update(m->cu, p, pt, m->grads, m->gdt, m->nparams, m->mc.lr, m->mc.weight_decay);
        if (m->master) sc_cuda_convert(m->cu, m->params, m->pdt, m->master, SC_F32, m->nparams);
        sc__span_end(m, sp);
        return sc_cuda_status(m->cu);
    }
#endif
    (void)pb;
    if (m->mc.optim == SC_OPTIM_ADAMW)
        sc_cpu_adamw_update(p, m->opt_m, m->opt_v, m->grads, m->nparams, m->mc.lr, m->mc.beta1, m->mc.beta2,
                            m->mc.eps, m->mc.weight_decay, m->t);
    else
        sc_cpu_sgd_update(p, m->grads, m->nparams, m->mc.lr, m->mc.weight_decay);
    sc__round(m, m->params, m->nparams);
    sc__span_end(m, sp);
    return SC_SUCCESS;
}

SCDEF sc_result sc_model_get_params(sc_model *m, float *dst)
{
    return m->master ? sc__download_f32(m, dst, m->master, 4, m->nparams)
                     : sc__download_f32(m, dst, m->params, m->pb, m->nparams);
}

SCDEF sc_result sc_model_get_grads(sc_model *m, float *dst)
{
    return sc__download_f32(m, dst, m->grads, m->gb, m->nparams);
}
