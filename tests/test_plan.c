/* The budget:SIZE checkpoint planner: optimality against brute force over every plan of
   chains of 1..8 layers, the smallest feasible budget, the closed-form peaks of `none` and
   `full`, budget parsing and the report table. `test_plan --tables` also prints the plans
   for qwen3-1.7b (B=4, T=2048, bf16, AdamW) at 16, 24 and 40 GiB. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ---- an independent plain implementation of the cost model ---- */
typedef struct ref_model {
    size_t S[5], X, W, Hd, F;
} ref_model;

static ref_model ref_sizes(const sc_config *c, int B, int T, int ab, size_t F)
{
    size_t N = (size_t)B * T, C = c->hidden_size, I = c->intermediate_size, H = c->num_heads;
    size_t KV = c->num_kv_heads, D = c->head_dim, Q = (H + 2 * KV) * D, K = (H + KV) * D, a = (size_t)ab;
    size_t x = N * C * a, rstd = 4 * N, qkv = N * Q * a, qk = N * K * a, rqk = c->qk_norm ? 4 * N * (H + KV) : 0;
    size_t o = N * H * D * a, lse = 4 * N * H, gu = 2 * N * I * a, m = N * I * a;
    ref_model r;
    r.S[0] = x + rstd + x + qkv + qk + rqk + o + lse + x + rstd + x + gu + m; /* every slot */
    r.S[1] = x + qkv + o + lse + x + gu;                                       /* selective */
    r.S[2] = r.S[0] - rstd - x - gu - m;                                       /* selective:mlp */
    r.S[3] = x + x + gu;                                                       /* selective:attn */
    r.S[4] = x + o + lse + gu;                                                 /* selective:proj */
    r.X = x;
    r.W = (N * (2 * I > Q + K ? 2 * I : Q + K) + N * (I > H * D ? I : H * D) + N * C) * a;
    if (ab == 2 && (D == 64 || D == 128) && (size_t)T <= 32 * D) { /* the GPU's dS blocks at and below the diagonal */
        size_t nb = ((size_t)T + 15) / 16;
        r.W += (size_t)B * H * nb * (nb + 1) / 2 * 16 * 16 * 2;
    }
    r.Hd = 3 * x + 4 * N + (N < 1024 ? N : 1024) * (size_t)c->vocab_size * a;
    r.F = F;
    return r;
}

/* A plan as units: start[u], len[u], kind[u] (0..4 keep mode, SEG segment). */
#define SEG 5
typedef struct units {
    int n, start[16], len[16], kind[16];
} units;

static void ref_eval(const ref_model *m, const units *u, const sc_layer_cost *cost, size_t *peak, double *time)
{
    size_t P = 0, worst = 0;
    double t = 0;
    for (int k = 0; k < u->n; k++) {
        size_t need = P + (size_t)u->len[k] * m->S[0] + m->W + m->X;
        if (need > worst) worst = need;
        if (u->kind[k] == SEG) {
            P += m->X;
            for (int j = u->start[k]; j < u->start[k] + u->len[k]; j++) t += cost[j].fwd_s;
        } else {
            P += m->S[u->kind[k]];
            const sc_layer_cost *c = &cost[u->start[k]];
            t += u->kind[k] == 1   ? c->rsel_s
                 : u->kind[k] == 2 ? c->rmlp_s
                 : u->kind[k] == 3 ? c->rattn_s
                 : u->kind[k] == 4 ? c->rproj_s
                                   : 0.0;
        }
    }
    size_t fwd = P + m->X + m->Hd;
    *peak = m->F + (fwd > worst ? fwd : worst);
    *time = t;
}

static units units_of_plan(const sc_plan *p)
{
    units u;
    u.n = 0;
    for (int l = 0; l < p->num_layers;) {
        int e = l + 1;
        if (p->seg[l] >= 0)
            while (e < p->num_layers && p->seg[e] == p->seg[l]) e++;
        u.start[u.n] = l;
        u.len[u.n] = e - l;
        u.kind[u.n] = p->seg[l] >= 0 ? SEG : p->keep[l];
        u.n++;
        l = e;
    }
    return u;
}

/* every plan of a chain of L layers: (peak, time, and its units) */
typedef struct bf_plan {
    size_t peak;
    double t;
    units u;
} bf_plan;
typedef struct bf_all {
    bf_plan *v;
    size_t n, cap;
} bf_all;

static void bf_enum(bf_all *all, units *u, int i, int L, const ref_model *m, const sc_layer_cost *cost)
{
    if (i == L) {
        if (all->n == all->cap) {
            all->cap = all->cap ? 2 * all->cap : 1024;
            all->v = (bf_plan *)realloc(all->v, all->cap * sizeof *all->v);
        }
        bf_plan *b = &all->v[all->n++];
        b->u = *u;
        ref_eval(m, u, cost, &b->peak, &b->t);
        return;
    }
    for (int kind = 0; kind < SEG; kind++) {
        u->start[u->n] = i, u->len[u->n] = 1, u->kind[u->n] = kind, u->n++;
        bf_enum(all, u, i + 1, L, m, cost);
        u->n--;
    }
    for (int j = i + 1; j <= L; j++) {
        u->start[u->n] = i, u->len[u->n] = j - i, u->kind[u->n] = SEG, u->n++;
        bf_enum(all, u, j, L, m, cost);
        u->n--;
    }
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static unsigned long long rng_state = 88172645463325252ull;
static int rnd(int n)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (int)(rng_state % (unsigned long long)n);
}

static int bf_cases, kinds_seen[7]; /* segment >= 2 layers, selective, selective:mlp, mixture, infeasible, selective:attn,
                                       selective:proj */

/* One cost set and chain length: every budget in `budgets` against brute force. */
static void check_against_brute_force(const char *label, sc_config cfg, int B, int T, int ab, size_t F,
                                      const sc_layer_cost *cost)
{
    ref_model m = ref_sizes(&cfg, B, T, ab, F);
    bf_all all = {NULL, 0, 0};
    units u;
    u.n = 0;
    bf_enum(&all, &u, 0, cfg.num_layers, &m, cost);
    size_t *peaks = (size_t *)malloc(all.n * sizeof *peaks), minpeak = (size_t)-1;
    for (size_t i = 0; i < all.n; i++) {
        peaks[i] = all.v[i].peak;
        if (peaks[i] < minpeak) minpeak = peaks[i];
    }
    qsort(peaks, all.n, sizeof *peaks, cmp_size);
    size_t budgets[40];
    int nb = 0;
    budgets[nb++] = F / 2;        /* below the fixed memory */
    budgets[nb++] = minpeak - 1;  /* just infeasible */
    for (int q = 0; q <= 16; q++) { /* the exact peaks of plans across the range, and just below them */
        size_t p = peaks[(all.n - 1) * (size_t)q / 16];
        budgets[nb++] = p;
        budgets[nb++] = p - 1;
    }
    budgets[nb++] = peaks[all.n - 1] + 12345;
    int bad = 0;
    char why[2048] = "";
    for (int bi = 0; bi < nb && !bad; bi++) {
        size_t budget = budgets[bi];
        double tmin = -1;
        size_t pmin = 0;
        for (size_t i = 0; i < all.n; i++) {
            if (all.v[i].peak > budget) continue;
            if (tmin < 0 || all.v[i].t < tmin || (all.v[i].t == tmin && all.v[i].peak < pmin))
                tmin = all.v[i].t, pmin = all.v[i].peak;
        }
        sc_plan plan;
        sc_plan_report rep;
        sc_result r = sc_planner_plan(&plan, &rep, &cfg, B, T, ab, F, cost, budget);
        bf_cases++;
        if (tmin < 0) {
            char want[64];
            snprintf(want, sizeof want, "%zu bytes", minpeak);
            kinds_seen[4]++;
            if (r != SC_ERROR_INVALID_ARGS || rep.min_budget != minpeak || !strstr(sc_last_error(), want) ||
                (budget < F) != (strstr(sc_last_error(), "below the fixed memory") != NULL)) {
                bad = 1;
                snprintf(why, sizeof why, "budget %zu: want infeasible with min %zu, got r=%d min %zu msg '%s'",
                         budget, minpeak, (int)r, rep.min_budget, sc_last_error());
            }
            continue;
        }
        if (r != SC_SUCCESS) {
            bad = 1;
            snprintf(why, sizeof why, "budget %zu: planner failed: %s", budget, sc_last_error());
            continue;
        }
        units pu = units_of_plan(&plan);
        size_t peak;
        double t;
        ref_eval(&m, &pu, cost, &peak, &t);
        if (peak > budget || t != tmin || peak != pmin || rep.peak_bytes != peak || rep.recompute_s != t ||
            rep.min_budget != minpeak) {
            bad = 1;
            snprintf(why, sizeof why,
                     "budget %zu: brute force time %g peak %zu; planner time %g peak %zu (reported %g, %zu), "
                     "min budget %zu vs %zu", budget, tmin, pmin, t, peak, rep.recompute_s, rep.peak_bytes,
                     rep.min_budget, minpeak);
        }
        int kinds = 0;
        for (int k = 0; k < pu.n; k++) {
            if (pu.kind[k] == SEG && pu.len[k] >= 2) kinds_seen[0]++;
            if (pu.kind[k] == 1) kinds_seen[1]++;
            if (pu.kind[k] == 2) kinds_seen[2]++;
            if (pu.kind[k] == 3) kinds_seen[5]++;
            if (pu.kind[k] == 4) kinds_seen[6]++;
            kinds |= 1 << pu.kind[k];
        }
        if (kinds & (kinds - 1)) kinds_seen[3]++;
    }
    CHECK(!bad, "brute force %s L=%d (%zu plans, %d budgets)%s%s", label, cfg.num_layers, all.n, nb,
          bad ? ": " : "", why);
    free(peaks);
    free(all.v);
}

static void random_costs(sc_layer_cost *c, int L, int mode)
{
    for (int l = 0; l < L; l++) {
        if (mode == 0) { c[l].fwd_s = 10, c[l].rsel_s = 2, c[l].rmlp_s = 5, c[l].rattn_s = 4, c[l].rproj_s = 3; continue; } /* ties */
        c[l].fwd_s = 1 + rnd(100);
        c[l].rsel_s = mode == 1 ? 1 + rnd((int)c[l].fwd_s) : 1 + rnd(120); /* mode 2: any order */
        c[l].rmlp_s = mode == 1 ? 1 + rnd((int)c[l].fwd_s) : 1 + rnd(120);
        c[l].rattn_s = mode == 1 ? 1 + rnd((int)c[l].fwd_s) : 1 + rnd(120);
        c[l].rproj_s = mode == 1 ? 1 + rnd((int)c[l].fwd_s) : 1 + rnd(120);
    }
}

static void test_brute_force(void)
{
    sc_config q3, q2;
    sc_config_named(&q3, "tiny");
    q2 = q3; /* a Qwen2-like variant: no q/k norm, biases, a small vocabulary */
    q2.arch = SC_ARCH_QWEN2, q2.qk_norm = 0, q2.attention_bias = 1, q2.vocab_size = 64;
    for (int L = 1; L <= 8; L++) {
        sc_layer_cost cost[8];
        for (int set = 0; set < 4; set++) {
            random_costs(cost, L, set == 0 ? 0 : 1 + set % 2);
            char label[64];
            q3.num_layers = q2.num_layers = L;
            snprintf(label, sizeof label, "qwen3-tiny B=2 T=8 f32 costs#%d", set);
            check_against_brute_force(label, q3, 2, 8, 4, 1000000, cost);
            snprintf(label, sizeof label, "qwen2-tiny B=1 T=16 bf16 costs#%d", set);
            check_against_brute_force(label, q2, 1, 16, 2, 200000, cost);
        }
    }
    printf("brute-force cases: %d (budget x cost set x chain); answers with segments>=2: %d units, selective: %d, "
           "selective:mlp: %d, selective:attn: %d, selective:proj: %d, mixtures: %d plans, infeasible: %d\n", bf_cases,
           kinds_seen[0], kinds_seen[1], kinds_seen[2], kinds_seen[5], kinds_seen[6], kinds_seen[3], kinds_seen[4]);
    CHECK(kinds_seen[0] && kinds_seen[1] && kinds_seen[2] && kinds_seen[3] && kinds_seen[4] && kinds_seen[5] &&
              kinds_seen[6],
          "brute force covers segments, the four selective levels, mixtures and infeasible budgets");
}

/* ZeRO-1's share on the GPU: each rank keeps a chunk of every bucket (n / W) and the bucket's
   remainder (n mod W), so the fixed bytes fall by (1 - 1/W) of the AdamW state, less at most
   W - 1 elements of m and of v per bucket (L + 2 buckets) */
static void test_zero_fixed(void)
{
    sc_config cfg;
    sc_config_named(&cfg, "qwen3-1.7b");
    sc_model_config mc = sc_model_config_init();
    mc.device = SC_DEVICE_CUDA;
    mc.bf16 = 1;
    mc.optim = SC_OPTIM_ADAMW;
    size_t state = sc_config_num_params(&cfg) * 2 * 2; /* m and v in bf16 */
    for (int W = 2; W <= 8; W *= 2) {
        mc.zero = 0;
        size_t plain = sc_model_config_fixed_bytes_dp(&cfg, &mc, W);
        mc.zero = 1;
        size_t z = sc_model_config_fixed_bytes_dp(&cfg, &mc, W), cut = plain - z;
        size_t most = state / (size_t)W * (size_t)(W - 1), slack = (size_t)(cfg.num_layers + 2) * (W - 1) * 2 * 2;
        CHECK(z < plain && cut <= most + (size_t)W && cut + slack >= most, "ZeRO-1 on %d GPUs cuts %zu of %zu bytes of AdamW "
              "state ((1 - 1/W) of it: %zu, less at most %zu for the remainders)", W, cut, state, most, slack);
    }
    /* ranks of one host: the copy-engine sums' scratch ((W - 1) / W of the bf16 gradients, to
       256 bytes; past two ranks W - 1 ordered pieces more) unless dp_sums is NCCL */
    mc.zero = 0;
    size_t n = sc_config_num_params(&cfg), ce = sc_model_config_fixed_bytes_dp(&cfg, &mc, 2);
    mc.dp_sums = SC_DP_SUMS_NCCL;
    size_t nc = sc_model_config_fixed_bytes_dp(&cfg, &mc, 2);
    CHECK(ce - nc == ((n + 1) / 2 * 2 + 255) / 256 * 256, "2 ranks: the copy-engine scratch, %zu bytes, is half the bytes "
          "of %zu bf16 gradients", ce - nc, n);
    size_t nc4 = sc_model_config_fixed_bytes_dp(&cfg, &mc, 4), nc9 = sc_model_config_fixed_bytes_dp(&cfg, &mc, 9);
    mc.dp_sums = SC_DP_SUMS_AUTO;
    size_t ce4 = sc_model_config_fixed_bytes_dp(&cfg, &mc, 4), want4 = (3 * ((n + 3) / 4) * 2 + 255) / 256 * 256 + 3 * (8u << 20);
    CHECK(nc4 == nc && ce4 - nc4 == want4, "4 ranks: the scratch is %zu bytes (3/4 of the gradients and 3 pieces of 8 MiB: "
          "%zu); by NCCL none (%zu against 2 ranks' %zu)", ce4 - nc4, want4, nc4, nc);
    CHECK(sc_model_config_fixed_bytes_dp(&cfg, &mc, 9) == nc9, "9 ranks: past 8, NCCL sums: no scratch");
    mc.mode = SC_MODE_SLIDE;
    CHECK(sc_model_config_fixed_bytes_dp(&cfg, &mc, 4) - sc_model_config_fixed_bytes_dp(&cfg, &mc, 1) ==
              3 * (size_t)(8u << 20) && sc_model_config_fixed_bytes_dp(&cfg, &mc, 2) == sc_model_config_fixed_bytes_dp(&cfg, &mc, 1),
          "slide: the ordered pieces alone past two ranks, nothing at two");
    mc.mode = SC_MODE_RESIDENT;
}

static void test_closed_forms(void)
{
    const char *names[] = {"tiny", "qwen3-1.7b", "qwen2.5-0.5b"};
    const char *pols[] = {"none", "full", "selective", "selective:mlp", "selective:attn", "selective:proj", "every:3",
                          "sqrt", "layers:1-2"};
    for (int ni = 0; ni < 3; ni++) {
        sc_config cfg;
        sc_config_named(&cfg, names[ni]);
        int B = 2, T = 64, ab = 2, L = cfg.num_layers;
        size_t F = sc_plan_fixed_bytes(&cfg, 1, 2, 2);
        ref_model m = ref_sizes(&cfg, B, T, ab, F);
        CHECK(F == sc_config_num_params(&cfg) * 8, "%s fixed bytes AdamW bf16 = 8 bytes per parameter", names[ni]);
        CHECK(sc_plan_fixed_bytes(&cfg, 0, 4, 4) == sc_config_num_params(&cfg) * 8, "%s fixed bytes SGD f32",
              names[ni]);
        int ok = 1;
        static const char *lv[5] = {"none", "selective", "selective:mlp", "selective:attn", "selective:proj"};
        for (int k = 0; k < 5; k++) {
            sc_plan p;
            sc_plan_parse(&p, lv[k], L);
            ok &= sc_plan_saved_bytes_layer(&cfg, &p, 0, B, T, ab) == m.S[k];
        }
        CHECK(ok, "%s: the test's S_k match sc_plan_saved_bytes_layer", names[ni]);
        sc_plan p;
        sc_plan_report rep;
        size_t A = m.S[0], want, fe, bw;
        sc_plan_parse(&p, "none", L);
        sc_plan_evaluate(&rep, &p, &cfg, B, T, ab, F, NULL);
        fe = L * A + m.X + m.Hd, bw = (L - 1) * A + A + m.W + m.X;
        want = F + (fe > bw ? fe : bw);
        CHECK(rep.peak_bytes == want, "%s none: predicted peak %zu == formula %zu", names[ni], rep.peak_bytes, want);
        sc_plan_parse(&p, "full", L);
        sc_plan_evaluate(&rep, &p, &cfg, B, T, ab, F, NULL);
        fe = L * m.X + m.X + m.Hd, bw = (L - 1) * m.X + A + m.W + m.X;
        want = F + (fe > bw ? fe : bw);
        CHECK(rep.peak_bytes == want, "%s full: predicted peak %zu == formula %zu", names[ni], rep.peak_bytes, want);
        ok = 1;
        for (int pi = 0; pi < 9; pi++) {
            sc_plan_parse(&p, pols[pi], L);
            sc_plan_evaluate(&rep, &p, &cfg, B, T, ab, F, NULL);
            ok &= rep.saved_bytes == sc_plan_saved_bytes(&cfg, &p, B, T, ab);
        }
        CHECK(ok, "%s: predicted saved bytes == sc_plan_saved_bytes for 9 policies", names[ni]);
        /* the GPU issue's target is for the Qwen3-1.7B shape; with a wide MLP (Qwen2.5-0.5B) it saves less */
        int half = ni == 1;
        CHECK(m.S[3] < m.S[1] && (!half || 2 * m.S[3] <= m.S[0]),
              "%s: selective:attn keeps %zu of none's %zu bytes per layer (saves %.1f%%; selective keeps %zu)%s",
              names[ni], m.S[3], m.S[0], 100.0 * (1.0 - (double)m.S[3] / (double)m.S[0]), m.S[1],
              half ? ", >= 50%" : "");
        CHECK(m.S[4] < m.S[1] && (!half || 2 * m.S[4] <= m.S[0]),
              "%s: selective:proj keeps %zu of none's %zu bytes per layer (saves %.1f%%)%s", names[ni], m.S[4], m.S[0],
              100.0 * (1.0 - (double)m.S[4] / (double)m.S[0]), half ? ", >= 50%" : "");
    }
}

static void test_parse(void)
{
    size_t b = 0;
    CHECK(sc_plan_is_budget("budget:6GiB", &b) == 1 && b == 6ull << 30, "budget:6GiB parses");
    CHECK(sc_plan_is_budget("budget:512MiB", &b) == 1 && b == 512ull << 20, "budget:512MiB parses");
    CHECK(sc_plan_is_budget("none", &b) == 0, "none is not a budget");
    CHECK(sc_plan_is_budget("selective", NULL) == 0, "selective is not a budget");
    const char *bad[] = {"budget:", "budget:0", "budget:0GiB", "budget:abc", "budget:-1GiB", "budget:6 GiB",
                         "budget:6XB"};
    for (int i = 0; i < 7; i++) {
        int r = sc_plan_is_budget(bad[i], &b);
        CHECK(r == -1 && strstr(sc_last_error(), bad[i]), "'%s' is rejected: %s", bad[i], sc_last_error());
    }
    sc_plan p;
    CHECK(sc_plan_parse(&p, "budget:6GiB", 4) == SC_ERROR_INVALID_ARGS, "sc_plan_parse rejects budget:6GiB: %s",
          sc_last_error());
}

static void plan_17b(size_t gib, sc_plan *plan, sc_plan_report *rep, sc_result *r)
{
    sc_config cfg;
    sc_config_named(&cfg, "qwen3-1.7b");
    sc_layer_cost cost[SC_MAX_LAYERS];
    sc_plan_estimate_costs(&cfg, 4, 2048, 2, cost);
    *r = sc_planner_plan(plan, rep, &cfg, 4, 2048, 2, sc_plan_fixed_bytes(&cfg, 1, 2, 2), cost, gib << 30);
}

static void test_table_and_real_config(int print)
{
    static sc_plan_report rep;
    sc_plan plan;
    sc_result r;
    char buf[16384], small[100];
    sc_config cfg;
    sc_config_named(&cfg, "qwen3-1.7b");
    sc_layer_cost cost[SC_MAX_LAYERS];
    sc_plan_estimate_costs(&cfg, 4, 2048, 2, cost);
    CHECK(cost[0].fwd_s > cost[0].rmlp_s && cost[0].rmlp_s > cost[0].rsel_s && cost[0].rsel_s > 0,
          "estimated costs: fwd %.3f ms > rmlp %.3f ms > rsel %.3f ms > 0", cost[0].fwd_s * 1e3,
          cost[0].rmlp_s * 1e3, cost[0].rsel_s * 1e3);
    size_t gibs[] = {16, 24, 40};
    double prev_t = 1e30;
    for (int i = 0; i < 3; i++) {
        plan_17b(gibs[i], &plan, &rep, &r);
        CHECK(r == SC_SUCCESS && rep.peak_bytes <= gibs[i] << 30 && rep.recompute_s <= prev_t,
              "qwen3-1.7b budget %zu GiB: peak %.3f GiB, recompute %.3f ms %s", gibs[i],
              rep.peak_bytes / 1073741824.0, rep.recompute_s * 1e3, r ? sc_last_error() : "");
        prev_t = rep.recompute_s;
        int n = sc_plan_report_table(&rep, &plan, buf, sizeof buf);
        int all = n > 0 && (size_t)n < sizeof buf;
        for (int l = 0; l < cfg.num_layers; l++) {
            char row[32];
            snprintf(row, sizeof row, "\n%5d  ", l);
            all &= strstr(buf, row) != NULL;
        }
        CHECK(all, "the %zu GiB table has a row for each of the %d layers", gibs[i], cfg.num_layers);
        CHECK(sc_plan_report_table(&rep, &plan, small, sizeof small) == n && strlen(small) == sizeof small - 1 &&
                  !strncmp(small, buf, sizeof small - 1) && sc_plan_report_table(&rep, &plan, NULL, 0) == n,
              "the table follows snprintf semantics (%d chars)", n);
        if (print) printf("\n%s\n", buf);
    }
    plan_17b(1, &plan, &rep, &r);
    CHECK(r == SC_ERROR_INVALID_ARGS && strstr(sc_last_error(), "below the fixed memory"),
          "1 GiB: %s", sc_last_error());
    plan_17b(14, &plan, &rep, &r);
    CHECK(r == SC_ERROR_INVALID_ARGS && strstr(sc_last_error(), "smallest feasible budget") &&
              !strstr(sc_last_error(), "below the fixed") && rep.min_budget > (14ull << 30),
          "14 GiB: %s", sc_last_error());
    size_t mb = rep.min_budget;
    cost[3].rsel_s = -1;
    r = sc_planner_plan(&plan, &rep, &cfg, 4, 2048, 2, sc_plan_fixed_bytes(&cfg, 1, 2, 2), cost, 24ull << 30);
    CHECK(r == SC_ERROR_INVALID_ARGS, "a negative cost is rejected: %s", sc_last_error());
    sc_config_named(&cfg, "qwen3-1.7b");
    sc_plan_estimate_costs(&cfg, 4, 2048, 2, cost);
    r = sc_planner_plan(&plan, &rep, &cfg, 4, 2048, 2, sc_plan_fixed_bytes(&cfg, 1, 2, 2), cost, mb);
    CHECK(r == SC_SUCCESS && rep.peak_bytes == mb, "the smallest feasible budget %zu is feasible, with peak %zu", mb,
          rep.peak_bytes);
}

int main(int argc, char **argv)
{
    int print = argc > 1 && !strcmp(argv[1], "--tables");
    test_parse();
    test_closed_forms();
    test_zero_fixed();
    test_table_and_real_config(print);
    test_brute_force();
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail != 0;
}
