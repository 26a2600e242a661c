/* ==========================================================================================
   Checkpoint planner (budget:SIZE): closed-form cost model and an exact Pareto DP
   ========================================================================================== */

/* The byte sizes of the cost model; every layer of a config has the same sizes. */
typedef struct sc__pl_sizes {
    size_t S[3]; /* saved bytes of one layer kept with SC_KEEP_ALL / SELECTIVE / SELECTIVE_MLP */
    size_t X, W, Hd;
} sc__pl_sizes;

static sc__pl_sizes sc__pl_sizes_of(const sc_config *c, int B, int T, int ab)
{
    sc__pl_sizes z;
    size_t N = (size_t)B * T, C = (size_t)c->hidden_size, I = (size_t)c->intermediate_size;
    size_t H = (size_t)c->num_heads, KV = (size_t)c->num_kv_heads, D = (size_t)c->head_dim;
    size_t Q = (H + 2 * KV) * D, K = (H + KV) * D, V = (size_t)c->vocab_size;
    for (int k = 0; k < 3; k++) {
        unsigned mask = sc__keep_mask(k);
        z.S[k] = 0;
        for (int a = 0; a < SC__A_COUNT; a++)
            if (mask & (1u << a)) z.S[k] += sc__act_bytes(c, a, B, T, ab);
    }
    z.X = N * C * (size_t)ab;
    z.W = (N * (2 * I > Q + K ? 2 * I : Q + K) + N * (I > H * D ? I : H * D) + N * C) * (size_t)ab;
    z.Hd = 3 * z.X + 4 * N + (N < 1024 ? N : 1024) * V * (size_t)ab;
    return z;
}

static double sc__pl_unit_time(const sc_layer_cost *costs, int kind, int s, int e)
{
    double t = 0.0;
    if (!costs) return 0.0;
    if (kind == 3)
        for (int j = s; j < e; j++) t += costs[j].fwd_s;
    else if (kind == SC_KEEP_SELECTIVE) t = costs[s].rsel_s;
    else if (kind == SC_KEEP_SELECTIVE_MLP) t = costs[s].rmlp_s;
    return t;
}

static double sc__gib(size_t b) { return (double)b / 1073741824.0; }

static void sc__fmt_size(char *buf, size_t cap, size_t b)
{
    if (b && b % 1073741824u == 0) snprintf(buf, cap, "%zuGiB", b / 1073741824u);
    else if (b && b % 1048576u == 0) snprintf(buf, cap, "%zuMiB", b / 1048576u);
    else snprintf(buf, cap, "%zu", b);
}

SCDEF void sc_plan_estimate_costs(const sc_config *c, int B, int T, int act_bytes, sc_layer_cost *costs)
{
    const double peak = 700e12, bw = 3.0e12;
    double N = (double)B * T, C = c->hidden_size, I = c->intermediate_size, H = c->num_heads;
    double KV = c->num_kv_heads, D = c->head_dim, ab = act_bytes, Q = (H + 2 * KV) * D, K = (H + KV) * D;
    /* GEMM out[N,OC] = inp[N,IC] @ w[OC,IC]^T: flops, and bytes of inp + w + out */
#define SC__GEMM_F(IC, OC) (2.0 * N * (IC) * (OC))
#define SC__GEMM_B(IC, OC) ((N * (IC) + (OC) * (IC) + N * (OC)) * ab)
    double gemm_f = SC__GEMM_F(C, Q) + SC__GEMM_F(H * D, C) + SC__GEMM_F(C, 2 * I) + SC__GEMM_F(I, C);
    double gemm_b = SC__GEMM_B(C, Q) + SC__GEMM_B(H * D, C) + SC__GEMM_B(C, 2 * I) + SC__GEMM_B(I, C);
    /* causal attention: QK^T and PV, 2*B*H*T*T*D flops each, halved for causality */
    double attn_f = 2.0 * B * H * (double)T * T * D;
    double attn_b = (N * K + N * KV * D + N * H * D) * ab + N * H * 4;
    /* elementwise ops, bytes read + written */
    double norm = 2 * N * C * ab + 4 * N;                       /* one RMSNorm */
    double qkrope = 2 * N * K * ab + (c->qk_norm ? 4 * N * (H + KV) : 0);
    double swiglu = 3 * N * I * ab;
    double adds = 2 * 3 * N * C * ab;                           /* two residual adds */
    double elem = 2 * norm + qkrope + swiglu;
    for (int l = 0; l < c->num_layers; l++) {
        costs[l].fwd_s = (gemm_f + attn_f) / peak + (gemm_b + attn_b + elem + adds) / bw;
        costs[l].rsel_s = elem / bw;
        costs[l].rmlp_s = SC__GEMM_F(C, 2 * I) / peak + (norm + SC__GEMM_B(C, 2 * I) + swiglu) / bw;
    }
#undef SC__GEMM_F
#undef SC__GEMM_B
}

SCDEF size_t sc_plan_fixed_bytes(const sc_config *cfg, int optim_adamw, int param_bytes, int grad_bytes)
{
    size_t n = sc_config_num_params(cfg);
    return n * (size_t)(param_bytes + grad_bytes + (optim_adamw ? 2 * param_bytes : 0));
}

static sc_result sc__pl_check(const sc_config *cfg, int B, int T, int act_bytes)
{
    if (!cfg) return sc__fail(SC_ERROR_INVALID_ARGS, "planner: NULL config");
    SC__TRY(sc_config_validate(cfg));
    if (cfg->num_layers > SC_MAX_LAYERS)
        return sc__fail(SC_ERROR_INVALID_ARGS, "planner: %d layers (at most %d supported)", cfg->num_layers,
                        SC_MAX_LAYERS);
    if (B < 1 || T < 1 || act_bytes < 1)
        return sc__fail(SC_ERROR_INVALID_ARGS, "planner: need B, T, act_bytes >= 1 (got %d, %d, %d)", B, T, act_bytes);
    return SC_SUCCESS;
}

SCDEF sc_result sc_plan_evaluate(sc_plan_report *rep, const sc_plan *plan, const sc_config *cfg, int B, int T,
                                 int act_bytes, size_t fixed_bytes, const sc_layer_cost *costs)
{
    SC__TRY(sc__pl_check(cfg, B, T, act_bytes));
    int L = cfg->num_layers;
    if (!rep || !plan || plan->num_layers != L)
        return sc__fail(SC_ERROR_INVALID_ARGS, "sc_plan_evaluate: NULL argument or plan for the wrong layer count");
    for (int l = 0; l < L; l++) {
        int s = plan->seg[l];
        if (s >= 0 ? (s != l && (l == 0 || plan->seg[l - 1] != s)) : plan->keep[l] > SC_KEEP_SELECTIVE_MLP)
            return sc__fail(SC_ERROR_INVALID_ARGS, "sc_plan_evaluate: layer %d has a bad keep/seg entry", l);
    }
    sc__pl_sizes z = sc__pl_sizes_of(cfg, B, T, act_bytes);
    memset(rep, 0, sizeof *rep);
    rep->fixed_bytes = fixed_bytes;
    rep->num_layers = L;
    size_t P = 0, bwd = 0;
    for (int s = 0; s < L;) {
        int kind = plan->seg[s] >= 0 ? 3 : plan->keep[s];
        int e = kind == 3 ? sc__seg_end(plan, s) : s + 1;
        size_t need = P + (size_t)(e - s) * z.S[0] + z.W + z.X;
        if (need > bwd || s == 0) { bwd = need; rep->bwd_peak_unit = s; }
        for (int j = s; j < e; j++) {
            sc_plan_row *r = &rep->rows[j];
            r->unit_start = s;
            r->unit_end = e;
            r->segment = kind == 3;
            r->saved_bytes = kind == 3 ? (j == s ? z.X : 0) : z.S[kind];
            r->recompute_s = sc__pl_unit_time(costs, kind, kind == 3 ? j : s, kind == 3 ? j + 1 : e);
            P += r->saved_bytes;
            rep->recompute_s += r->recompute_s;
            if (costs) rep->step_estimate_s += 3.0 * costs[j].fwd_s;
        }
        s = e;
    }
    rep->saved_bytes = P + z.X;
    rep->fwd_end_bytes = fixed_bytes + P + z.X + z.Hd;
    rep->bwd_peak_bytes = fixed_bytes + bwd;
    rep->peak_bytes = rep->fwd_end_bytes > rep->bwd_peak_bytes ? rep->fwd_end_bytes : rep->bwd_peak_bytes;
    rep->recompute_frac = rep->step_estimate_s > 0 ? rep->recompute_s / rep->step_estimate_s : 0.0;
    return SC_SUCCESS;
}

/* A DP state at a unit boundary: saved bytes so far P, worst backward need so far M (without
   F), recompute time t, and the unit that led here (layers [start, end), kind 0-2 keep mode,
   3 segment) with the index of the state it came from. */
typedef struct sc__pl_state {
    size_t P, M;
    double t;
    int prev;
    short start, end;
    unsigned char kind;
} sc__pl_state;

typedef struct sc__pl_vec {
    sc__pl_state *v;
    size_t n, cap;
} sc__pl_vec;

static int sc__pl_push(sc__pl_vec *a, sc__pl_state s)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 256;
        sc__pl_state *v = (sc__pl_state *)SC_REALLOC(a->v, cap * sizeof *v);
        if (!v) return 0;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = s;
    return 1;
}

static int sc__pl_cmp(const void *pa, const void *pb)
{
    const sc__pl_state *a = (const sc__pl_state *)pa, *b = (const sc__pl_state *)pb;
    if (a->P != b->P) return a->P < b->P ? -1 : 1;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    if (a->M != b->M) return a->M < b->M ? -1 : 1;
    return 0;
}

static int sc__pl_cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

/* Keep the states of cand[from..] that no other state dominates in (P, t, M), in place:
   in (P, t, M) order, a state is dominated iff an earlier one has t and M no larger, found
   with a Fenwick tree of the least M over ranks of t. */
static int sc__pl_prune(sc__pl_vec *cand, size_t from)
{
    sc__pl_state *c = cand->v + from;
    size_t n = cand->n - from, k = 0, m = 0;
    double *ts = (double *)SC_MALLOC((n + 1) * sizeof *ts);
    size_t *fw = (size_t *)SC_MALLOC((n + 1) * sizeof *fw);
    if (!ts || !fw) { SC_FREE(ts); SC_FREE(fw); return 0; }
    qsort(c, n, sizeof *c, sc__pl_cmp);
    for (size_t i = 0; i < n; i++) ts[i] = c[i].t;
    qsort(ts, n, sizeof *ts, sc__pl_cmp_double);
    for (size_t i = 0; i < n; i++)
        if (!m || ts[m - 1] != ts[i]) ts[m++] = ts[i];
    for (size_t i = 0; i <= m; i++) fw[i] = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t lo = 0, hi = m, best = (size_t)-1;
        while (lo < hi) { /* rank (1-based) of c[i].t among the distinct times */
            size_t mid = (lo + hi) / 2;
            if (ts[mid] < c[i].t) lo = mid + 1; else hi = mid;
        }
        for (size_t r = lo + 1; r > 0; r -= r & (~r + 1)) best = fw[r] < best ? fw[r] : best;
        if (best <= c[i].M) continue;
        for (size_t r = lo + 1; r <= m; r += r & (~r + 1)) fw[r] = c[i].M < fw[r] ? c[i].M : fw[r];
        c[k++] = c[i];
    }
    cand->n = from + k;
    SC_FREE(ts);
    SC_FREE(fw);
    return 1;
}

/* Run the DP; *best is the index in st of the chosen final state (least t, then least peak),
   or -1 if no plan fits. With track_m == 0 the states ignore M (a 2-D (P, t) front: exact for
   the least time, not for the tie-break); with costs == NULL every t is 0. */
static sc_result sc__pl_dp(sc__pl_vec *st, int *best, const sc__pl_sizes *z, int L, size_t F,
                           const sc_layer_cost *costs, int track_m, size_t budget, double tmax)
{
    int beg[SC_MAX_LAYERS + 2];
    sc__pl_state s0 = {0, 0, 0.0, -1, 0, 0, 0};
    *best = -1;
    st->n = 0;
    if (!sc__pl_push(st, s0)) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "planner: host malloc failed");
    beg[0] = 0;
    beg[1] = 1;
    for (int j = 1; j <= L; j++) {
        size_t from = st->n;
        double seg_t = 0.0;
        for (int i = j - 1; i >= 0; i--) {
            seg_t += costs ? costs[i].fwd_s : 0.0;
            for (int si = beg[i]; si < beg[i + 1]; si++) {
                sc__pl_state p = st->v[si], q;
                for (int kind = i == j - 1 ? 0 : 3; kind <= 3; kind++) {
                    size_t need = p.P + (size_t)(j - i) * z->S[0] + z->W + z->X;
                    q.P = p.P + (kind == 3 ? z->X : z->S[kind]);
                    if (F + need > budget || F + q.P + z->X + z->Hd > budget) continue;
                    q.M = !track_m ? 0 : need > p.M ? need : p.M;
                    q.t = p.t + (kind == 3 ? seg_t : sc__pl_unit_time(costs, kind, i, j));
                    if (q.t > tmax) continue; /* times only grow */
                    q.prev = si;
                    q.start = (short)i;
                    q.end = (short)j;
                    q.kind = (unsigned char)kind;
                    if (!sc__pl_push(st, q)) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "planner: host malloc failed");
                }
            }
        }
        if (!sc__pl_prune(st, from)) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "planner: host malloc failed");
        beg[j + 1] = (int)st->n;
    }
    double tbest = 0.0;
    size_t pbest = 0;
    for (int si = beg[L]; si < beg[L + 1]; si++) {
        const sc__pl_state *s = &st->v[si];
        size_t peak = F + (s->P + z->X + z->Hd > s->M ? s->P + z->X + z->Hd : s->M);
        int better = *best < 0 || s->t < tbest * (1.0 - 1e-12) ||
                     (s->t <= tbest * (1.0 + 1e-12) && peak < pbest);
        if (better) { *best = si; tbest = s->t; pbest = peak; }
    }
    return SC_SUCCESS;
}

/* The plan of least time under `budget`, ties to the least peak: the least time t* from a 2-D
   (P, t) DP, then the exact 3-D (P, t, M) DP over the states whose time stays within t*. */
static sc_result sc__pl_solve(sc__pl_vec *st, int *best, const sc__pl_sizes *z, int L, size_t F,
                              const sc_layer_cost *costs, size_t budget)
{
    SC__TRY(sc__pl_dp(st, best, z, L, F, costs, 0, budget, HUGE_VAL));
    if (*best < 0) return SC_SUCCESS;
    double tstar = st->v[*best].t;
    return sc__pl_dp(st, best, z, L, F, costs, 1, budget, tstar + fabs(tstar) * 1e-12);
}

SCDEF sc_result sc_planner_plan(sc_plan *out, sc_plan_report *rep, const sc_config *cfg, int B, int T,
                                int act_bytes, size_t fixed_bytes, const sc_layer_cost *costs, size_t budget)
{
    SC__TRY(sc__pl_check(cfg, B, T, act_bytes));
    if (!out) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_planner_plan: NULL plan");
    int L = cfg->num_layers;
    sc_layer_cost est[SC_MAX_LAYERS];
    if (!costs) sc_plan_estimate_costs(cfg, B, T, act_bytes, est), costs = est;
    for (int l = 0; l < L; l++)
        if (!(costs[l].fwd_s >= 0 && costs[l].rsel_s >= 0 && costs[l].rmlp_s >= 0) ||
            costs[l].fwd_s + costs[l].rsel_s + costs[l].rmlp_s > 1e30)
            return sc__fail(SC_ERROR_INVALID_ARGS, "planner: layer %d has a negative or non-finite cost", l);
    sc__pl_sizes z = sc__pl_sizes_of(cfg, B, T, act_bytes);
    sc__pl_vec st = {NULL, 0, 0};
    int best = -1, minb;
    size_t min_budget = 0;
    /* the smallest feasible budget: all times 0, so the DP keeps the least peak */
    sc_result r = sc__pl_dp(&st, &minb, &z, L, fixed_bytes, NULL, 1, (size_t)-1, HUGE_VAL);
    if (r == SC_SUCCESS) {
        const sc__pl_state *s = &st.v[minb];
        min_budget = fixed_bytes + (s->P + z.X + z.Hd > s->M ? s->P + z.X + z.Hd : s->M);
        if (budget >= min_budget) r = sc__pl_solve(&st, &best, &z, L, fixed_bytes, costs, budget);
    }
    if (rep) {
        memset(rep, 0, sizeof *rep);
        rep->min_budget = min_budget;
        rep->budget = budget;
    }
    if (r == SC_SUCCESS && best < 0) {
        if (budget < fixed_bytes)
            r = sc__fail(SC_ERROR_INVALID_ARGS,
                         "budget %.4g GiB is below the fixed memory %.4g GiB (weights, grads, optimizer state); "
                         "the smallest feasible budget is %.4g GiB (%zu bytes)",
                         sc__gib(budget), sc__gib(fixed_bytes), sc__gib(min_budget), min_budget);
        else
            r = sc__fail(SC_ERROR_INVALID_ARGS,
                         "budget %.4g GiB does not fit B=%d x T=%d with any checkpoint plan: the smallest feasible "
                         "budget is %.4g GiB (%zu bytes; fixed memory %.4g GiB)",
                         sc__gib(budget), B, T, sc__gib(min_budget), min_budget, sc__gib(fixed_bytes));
    }
    if (r == SC_SUCCESS) {
        char sz[48];
        memset(out, 0, sizeof *out);
        out->num_layers = L;
        for (int si = best; st.v[si].prev >= 0; si = st.v[si].prev) {
            const sc__pl_state *s = &st.v[si];
            for (int l = s->start; l < s->end; l++) {
                out->keep[l] = (unsigned char)(s->kind == 3 ? (int)SC_KEEP_ALL : s->kind);
                out->seg[l] = (short)(s->kind == 3 ? s->start : -1);
            }
        }
        sc__fmt_size(sz, sizeof sz, budget);
        snprintf(out->name, sizeof out->name, "budget:%s", sz);
        if (rep && (r = sc_plan_evaluate(rep, out, cfg, B, T, act_bytes, fixed_bytes, costs)) == SC_SUCCESS) {
            rep->min_budget = min_budget;
            rep->budget = budget;
        }
    }
    SC_FREE(st.v);
    return r;
}

static void sc__cat(char *buf, size_t cap, size_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf && *n < cap ? buf + *n : NULL, buf && *n < cap ? cap - *n : 0, fmt, ap);
    va_end(ap);
    if (k > 0) *n += (size_t)k;
}

SCDEF int sc_plan_report_table(const sc_plan_report *rep, const sc_plan *plan, char *buf, size_t cap)
{
    size_t n = 0;
    const double MiB = 1048576.0;
    if (buf && cap) buf[0] = '\0';
    if (!rep || !plan) return 0;
    sc__cat(buf, cap, &n, "plan %s\n%5s  %-7s  %-26s %10s %13s\n", plan->name, "layer", "unit", "mode", "saved MiB",
            "recompute ms");
    for (int l = 0; l < rep->num_layers; l++) {
        const sc_plan_row *r = &rep->rows[l];
        char unit[24], mode[48];
        if (r->unit_end - r->unit_start > 1) snprintf(unit, sizeof unit, "%d-%d", r->unit_start, r->unit_end - 1);
        else snprintf(unit, sizeof unit, "%d", r->unit_start);
        if (r->segment) snprintf(mode, sizeof mode, "recompute (segment %s)", unit);
        else snprintf(mode, sizeof mode, "%s", plan->keep[l] == SC_KEEP_SELECTIVE ? "selective"
                                               : plan->keep[l] == SC_KEEP_SELECTIVE_MLP ? "selective:mlp"
                                                                                         : "keep all");
        sc__cat(buf, cap, &n, "%5d  %-7s  %-26s %10.1f %13.3f\n", l, unit, mode, (double)r->saved_bytes / MiB,
                r->recompute_s * 1e3);
    }
    if (rep->budget) sc__cat(buf, cap, &n, "budget               %9.3f GiB\n", sc__gib(rep->budget));
    sc__cat(buf, cap, &n, "fixed                %9.3f GiB (weights, grads, optimizer state)\n",
            sc__gib(rep->fixed_bytes));
    sc__cat(buf, cap, &n, "predicted peak       %9.3f GiB (end of forward %.3f GiB, backward %.3f GiB at layer %d)\n",
            sc__gib(rep->peak_bytes), sc__gib(rep->fwd_end_bytes), sc__gib(rep->bwd_peak_bytes), rep->bwd_peak_unit);
    if (rep->min_budget)
        sc__cat(buf, cap, &n, "smallest feasible    %9.3f GiB\n", sc__gib(rep->min_budget));
    sc__cat(buf, cap, &n, "saved activations    %9.3f GiB\n", sc__gib(rep->saved_bytes));
    sc__cat(buf, cap, &n, "predicted recompute  %9.3f ms per step", rep->recompute_s * 1e3);
    if (rep->step_estimate_s > 0)
        sc__cat(buf, cap, &n, " (%.1f%% of a 3 x forward step, %.3f ms)", 100.0 * rep->recompute_frac,
                rep->step_estimate_s * 1e3);
    sc__cat(buf, cap, &n, "\n");
    return (int)n;
}

SCDEF int sc_plan_is_budget(const char *policy, size_t *budget)
{
    size_t b = 0;
    if (!policy || strncmp(policy, "budget:", 7)) return 0;
    if (sc_parse_size(policy + 7, &b) != 0) {
        sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint policy '%s': budget:SIZE needs a size like 24GiB or 512MiB",
                 policy);
        return -1;
    }
    if (b == 0) {
        sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint policy '%s': the budget must be positive", policy);
        return -1;
    }
    if (budget) *budget = b;
    return 1;
}
