/* ------------------------------------------------------------------------------------------
   Checkpoint planner: "budget:SIZE". Picks, per layer, keep all / selective / selective:mlp or
   a recomputed segment so that the predicted peak fits the budget and the recompute time is
   least. The chain is cut into units: a single kept layer, or a recomputed segment [s, e) that
   saves only x_s. Bytes are exact and closed form, in the model's storage (act_bytes per
   activation element, 4 per statistic), using the same slot sizes as the model:
     S_k(l)  saved bytes of layer l kept with mode k, A(l) = S_ALL(l), X = N*C*act_bytes;
     W       backward scratch of one layer = (N*max(2I, Q+K) + N*max(I, H*D) + N*C)*act_bytes;
     Hd      head transient = 3X (final norm out, its grad, the residual grad) + 4N + chunk*V*act_bytes;
     saved(l) = S_k(l) (kept), X (first layer of a segment), 0 (other layers of a segment);
     Peak = F + max( sum_l saved(l) + X + Hd,  max_units u [ P(u) + sum_{j in u} A(j) + W + X ] )
   with P(u) the saved bytes of all layers before u. Recompute time of a unit: 0 (keep all),
   rsel (selective), rmlp (selective:mlp), sum of fwd over a segment.
   ------------------------------------------------------------------------------------------ */
typedef struct sc_layer_cost {
    double fwd_s;   /* forward of the whole layer (= replay cost inside a segment) */
    double rsel_s;  /* recompute of a SC_KEEP_SELECTIVE layer */
    double rmlp_s;  /* recompute of a SC_KEEP_SELECTIVE_MLP layer */
} sc_layer_cost;

typedef struct sc_plan_row {
    int unit_start, unit_end; /* the unit holding this layer: layers [unit_start, unit_end) */
    int segment;              /* 1: inside a recomputed segment, 0: kept with keep[l] */
    size_t saved_bytes;       /* saved(l) */
    double recompute_s;       /* this layer's share of its unit's recompute time */
} sc_plan_row;

typedef struct sc_plan_report {
    size_t budget;            /* 0 when the report comes from sc_plan_evaluate */
    size_t fixed_bytes;       /* F */
    size_t peak_bytes;        /* predicted Peak (includes F) */
    size_t fwd_end_bytes;     /* F + sum saved + X + Hd: live at the end of forward */
    size_t bwd_peak_bytes;    /* F + the worst backward unit */
    int bwd_peak_unit;        /* first layer of that unit */
    size_t saved_bytes;       /* sum_l saved(l) + X (the stack's output), as sc_plan_saved_bytes */
    size_t min_budget;        /* smallest feasible budget (set by sc_planner_plan, also on failure) */
    double recompute_s;       /* predicted recompute time per step */
    double step_estimate_s;   /* 3 * sum fwd: a no-recompute step (forward + 2x backward) */
    double recompute_frac;    /* recompute_s / step_estimate_s */
    int num_layers;
    sc_plan_row rows[SC_MAX_LAYERS];
} sc_plan_report;

/* Roofline ESTIMATE of per-layer times (t = flops / 700e12 + bytes / 3.0e12, an H100-class
   guess, not a measurement): fwd = all GEMMs + causal attention + elementwise ops; rsel = the
   elementwise ops only (two RMSNorms, q/k-norm + RoPE, SwiGLU); rmlp = ln2 + gate_up GEMM +
   SwiGLU. Fills costs[0 .. num_layers-1]. Weights are counted at act_bytes per element. */
SCDEF void sc_plan_estimate_costs(const sc_config *cfg, int B, int T, int act_bytes, sc_layer_cost *costs);
/* Weights + grads (+ AdamW m and v, stored like the parameters): nparams * (param_bytes +
   grad_bytes [+ 2 * param_bytes]). Not included: f32 master weights (add nparams * 4 and pass
   param_bytes = 4 for the states yourself), RoPE tables, ids/targets/row losses. */
SCDEF size_t sc_plan_fixed_bytes(const sc_config *cfg, int optim_adamw, int param_bytes, int grad_bytes);
/* Predicted peak, saved bytes and recompute time of any plan under the cost model above
   (costs may be NULL: times 0). rep->budget and rep->min_budget are left 0. */
SCDEF sc_result sc_plan_evaluate(sc_plan_report *rep, const sc_plan *plan, const sc_config *cfg, int B, int T,
                                 int act_bytes, size_t fixed_bytes, const sc_layer_cost *costs);
/* Exact optimum: the plan of least predicted recompute time with Peak <= budget (ties: lower
   peak). costs[l] >= 0 (NULL: sc_plan_estimate_costs); rep may be NULL. When nothing fits:
   SC_ERROR_INVALID_ARGS with the smallest feasible budget in the message and rep->min_budget. */
SCDEF sc_result sc_planner_plan(sc_plan *out, sc_plan_report *rep, const sc_config *cfg, int B, int T,
                                int act_bytes, size_t fixed_bytes, const sc_layer_cost *costs, size_t budget);
/* A text table of the plan (one row per layer) and summary lines; snprintf semantics. */
SCDEF int sc_plan_report_table(const sc_plan_report *rep, const sc_plan *plan, char *buf, size_t cap);
/* 1 and *budget set for "budget:SIZE" (SIZE as sc_parse_size, > 0); 0 for any other policy;
   -1 for a malformed or zero budget (message in sc_last_error()). */
SCDEF int sc_plan_is_budget(const char *policy, size_t *budget);
