/* sweep: what each way of fitting a training step into memory costs. One chart of step time
   against peak memory for the checkpoint policies, the planner at three budgets, slide mode and
   --mode auto at a few memory caps, with the Pareto frontier; then peak memory and step time against the sequence length (the
   "activation explosion" that checkpointing answers).

     build/sweep [--model tiny] [--batch B --seq T --steps N] [--seqs 32,64,128] [--mem-cap SIZE]
                 [--auto-caps 8,16,24]

   Every run trains the same seeded model on the same tokens; only the way the step is computed
   changes, so every loss must be bitwise equal to policy none's at the same shape (checked: exit 1
   if not). The planner (sc_model_plan_budget) profiles a live model and plans for a budget; its
   plan trains like any other, then 2 steps under an allocator cap of that budget (does it fit?).
   --mode auto (sc_plan_auto) is the library choosing for itself under a memory cap: mode, plan,
   device layers, prefetch, head and host threads; each choice trains under an allocator cap of
   that size, and its losses are checked like the others'.
   Peak memory: the allocator's peak allocated bytes, the largest over the measured steps (slide:
   device bytes only). A run the allocator refuses under --mem-cap is recorded as OOM. Writes pareto.csv, seq_scaling.csv, pareto.png, seq_scaling.png and
   summary.md into --out DIR. Exit status: 0, 2 for bad flags, 1 for any other failure. */
#define SLIDECHECK_IMPLEMENTATION
#include "../slidecheck.h"
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STB_TRUETYPE_IMPLEMENTATION
#define STBTT_STATIC
#include "plot.h"
#include "demo.h"
#include "figs_sweep.h" /* point, median_ci, the CSV writers, pareto_png, seq_png */

static const char *usage =
    "usage: sweep [options]\n\n"
    "Step time against peak memory for none, full, every:2, every:4, sqrt and the three selective levels,\n"
    "the budget planner at three budgets, slide mode and --mode auto at a few caps, with the Pareto\n"
    "frontier; then peak memory and step time against the sequence length for none, full, every:2,\n"
    "selective and slide.\n"
    "Checks that every loss is bitwise equal to none's.\n\n"
    "  --seqs LIST      sequence lengths (default 32,64,128 on the CPU, 256,512,1024,2048 on the GPU)\n"
    "  --auto-caps LIST memory caps in GiB for --mode auto's points, e.g. 8,16,24 (a size such as\n"
    "                   40MiB also works; default: three from the smallest cap that any configuration\n"
    "                   fits to the one that holds policy none's peak)\n"
    "defaults: --steps 10 --batch 4, --seq 128 on the CPU and 1024 on the GPU (--model qwen3-1.7b)\n";

typedef struct flags {
    const char *seqs, *auto_caps;
} flags;

static int take_flag(void *user, const char *f, const char *v)
{
    flags *fl = (flags *)user;
    if (!strcmp(f, "--seqs")) fl->seqs = v;
    else if (!strcmp(f, "--auto-caps")) fl->auto_caps = v;
    else return 0;
    return 1;
}

/* Train one configuration and measure it; ref: none at the same shape, for the bitwise check. */
static point measure(const demo *d, const char *label, const char *policy, const sc_plan *plan, sc_mode mode, int B,
                     int T, int steps, const int32_t *ids, const point *ref, int color)
{
    point p;
    memset(&p, 0, sizeof p);
    snprintf(p.label, sizeof p.label, "%s", label);
    snprintf(p.policy, sizeof p.policy, "%s", policy);
    p.mode = mode, p.color = color, p.bitwise = -1;
    p.marker = mode == SC_MODE_SLIDE ? PL_M_SQUARE : plan ? PL_M_DIAMOND : PL_M_CIRCLE;
    demo_run r = demo_run_make(d, label, plan ? "none" : policy, mode, B, T, steps);
    if (plan) r.plan = *plan; /* a planner's plan: no policy string names it */
    layout_of(&r.plan, p.layout);
    printf("%s, T=%d, %s, plan %s\n", label, T, mode == SC_MODE_SLIDE ? "slide mode" : "resident", p.layout);
    if ((p.oom = demo_train(d, &r, ids, 1))) {
        char *cut = strstr(r.msg, " Largest live:"); /* the first lines of the allocator's report */
        if (cut) *cut = 0;
        printf("  -> out of memory: %s\n", r.msg);
    } else {
        sc_stats s = demo_step_stats(d, &r, demo_wall_ms);
        int first = demo_first_measured(d, &r);
        double v[256];
        p.n = s.n, p.median = s.median, p.mean = s.mean, p.ci = s.ci95;
        for (int i = first; i < r.done; i++) {
            v[i - first] = r.st[i].wall_ms;
            p.alloc = fmax(p.alloc, (double)r.st[i].alloc_peak);
            p.reserved = fmax(p.reserved, (double)r.st[i].reserved_peak);
            p.saved = fmax(p.saved, (double)r.st[i].saved);
        }
        p.mcov = median_ci(v, s.n, &p.mlo, &p.mhi);
    }
    p.done = r.done;
    for (int i = 0; i < p.done; i++) p.loss[i] = r.st[i].loss;
    if (ref && !ref->oom && !p.oom)
        p.bitwise = p.done == ref->done && !memcmp(p.loss, ref->loss, sizeof(float) * (size_t)p.done);
    demo_run_free(&r);
    return p;
}

/* The smallest cap whose usable part (less the allocator margin) holds `need` bytes. */
static size_t cap_for(size_t need, const sc_config *cfg, int B, int T)
{
    size_t c = need;
    while (sc_plan_budget_usable(c, cfg, B, T) < need) c += c / 256 + 4096;
    return c;
}

int main(int argc, char **argv)
{
    flags fl = {NULL, NULL};
    demo d;
    demo_begin(&d, "sweep", argc, argv, usage, take_flag, &fl);
    const char *seqs = fl.seqs;
    int B = d.o.batch ? d.o.batch : 4, T = d.o.seq ? d.o.seq : d.on_gpu ? 1024 : 128, steps = d.o.steps ? d.o.steps : 10;
    if (steps > 256) demo_usage_error(&d, "%s", "--steps: at most 256 for this demo");
    if (T > d.cfg.max_position) demo_usage_error(&d, "--seq %d exceeds the model's %d", T, d.cfg.max_position);
    int seq[MAXSEQ], ns = 0, maxT = T, np = 0, bad = 0;
    char buf[256], b1[32], b2[32];
    snprintf(buf, sizeof buf, "%s", seqs ? seqs : d.on_gpu ? "256,512,1024,2048" : "32,64,128");
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (ns == MAXSEQ) demo_usage_error(&d, "--seqs: at most %d lengths", MAXSEQ);
        seq[ns] = demo_parse_int(&d, "--seqs", tok, 2, d.cfg.max_position);
        maxT = seq[ns] > maxT ? seq[ns] : maxT, ns++;
    }
    if (!ns) demo_usage_error(&d, "%s", "--seqs needs at least one length");
    int32_t *ids = demo_random_tokens(&d, (size_t)B * maxT);
    double unit = d.on_gpu ? DEMO_GIB : DEMO_MIB;

    /* 1. The policies at B x T; none first: it is every other run's reference. */
    static const char *pols[8] = {"none", "full", "every:2", "every:4", "sqrt", "selective", "selective:mlp",
                                  "selective:attn"};
    point pt[MAXP];
    printf("== step time vs peak memory: B=%d T=%d, %d steps per run ==\n", B, T, steps);
    for (; np < 8; np++) pt[np] = measure(&d, pols[np], pols[np], NULL, 0, B, T, steps, ids, np ? pt : NULL, np);
    /* The planner at three budgets (caps) spaced between the smallest it accepts (at least full's
       peak) and the cap whose usable part, less the allocator margin, holds none's peak; one live
       model profiles and plans, then each plan trains from scratch. */
    double lo = pt[1].alloc, hi = pt[0].oom ? (double)d.o.mem_cap : pt[0].alloc;
    if (!pt[1].oom && hi > lo) {
        sc_model *m = NULL;
        sc_plan plan;
        sc_plan_report rep;
        memset(&rep, 0, sizeof rep);
        sc_result rc = sc_model_create(&m, &d.cfg, &d.mc, NULL);
        if (!rc) rc = sc_model_plan_budget(&plan, &rep, m, ids, B, T, (size_t)hi); /* sets rep.min_budget */
        if (!rc || rc == SC_ERROR_INVALID_ARGS) {
            size_t minc = cap_for(rep.min_budget, &d.cfg, B, T);
            lo = fmax(lo, (double)minc);
            if (!pt[0].oom) hi = (double)cap_for((size_t)hi, &d.cfg, B, T);
            for (int k = 1; k <= 3 && lo < hi; k++) {
                size_t budget = (size_t)(lo + (hi - lo) * k / 4);
                char lab[48], pol[64];
                if (sc_model_plan_budget(&plan, &rep, m, ids, B, T, budget)) {
                    printf("planner, budget %s: %s\n", fmt_bytes(b1, (double)budget, unit), sc_last_error());
                    continue;
                }
                snprintf(lab, sizeof lab, "budget %s", fmt_bytes(b1, (double)budget, unit));
                snprintf(pol, sizeof pol, "budget:%zu", budget);
                pt[np] = measure(&d, lab, pol, &plan, 0, B, T, steps, ids, pt, 9);
                pt[np].budget = (double)budget;
                demo capped = d; /* the planner's promise, tested: 2 steps under a cap of the budget */
                if (!capped.mc.mem_cap || budget < capped.mc.mem_cap) capped.mc.mem_cap = budget;
                demo_run chk = demo_run_make(&capped, "  under that cap", "none", 0, B, T, 2);
                chk.plan = plan;
                if ((pt[np].capfit = demo_train(&capped, &chk, ids, 1) ? -1 : 1) < 0) {
                    snprintf(pt[np].capmsg, sizeof pt[np].capmsg, "%.399s", chk.msg);
                    char *cut = strstr(pt[np].capmsg, " Largest live:");
                    if (cut) *cut = 0;
                    printf("  -> under a cap of its budget: out of memory: %s\n", pt[np].capmsg);
                }
                demo_run_free(&chk);
                np++;
            }
        } else printf("planner: %.300s... (no budget runs)\n", sc_last_error());
        sc_model_destroy(m);
    }
    pt[np] = measure(&d, "slide", "none", NULL, SC_MODE_SLIDE, B, T, steps, ids, pt, 8);
    np++;
    /* --mode auto: the library's own choice under each cap (sc_plan_auto), trained under that cap.
       Default caps: from the smallest that any configuration fits to the one holding none's peak. */
    size_t acaps[4];
    int nac = fl.auto_caps ? demo_parse_caps(&d, "--auto-caps", fl.auto_caps, acaps, 4) : 0;
    if (!fl.auto_caps && !pt[0].oom) {
        sc_plan_auto_result res;
        size_t hi_cap = cap_for((size_t)pt[0].alloc, &d.cfg, B, T);
        demo_auto_choose(&d, hi_cap, B, T, ids, &res, NULL, 0); /* res.min_cap, fitting or not */
        nac = res.min_cap && res.min_cap < hi_cap ? 3 : 1;
        for (int k = 0; k < nac; k++)
            acaps[k] = nac > 1 ? res.min_cap + (size_t)((double)(hi_cap - res.min_cap) * k / (nac - 1)) : hi_cap;
    }
    for (int k = 0; k < nac && np < MAXP; k++) {
        sc_plan_auto_result res;
        char lab[48], pol[64], msg[512];
        snprintf(lab, sizeof lab, "auto %s", fmt_bytes(b1, (double)acaps[k], unit));
        if (demo_auto_choose(&d, acaps[k], B, T, ids, &res, msg, sizeof msg)) {
            printf("%s: %s\n", lab, msg);
            continue;
        }
        printf("%s: plan: %s  predicted peak %s, step %.2f ms\n", lab, res.desc,
               fmt_bytes(b2, (double)res.peak_bytes, unit), res.step_ms);
        demo ad = d; /* auto's model config: its mode, slide fields and the cap */
        ad.mc = res.mc;
        snprintf(pol, sizeof pol, "auto:%zu", acaps[k]);
        pt[np] = measure(&ad, lab, pol, &res.plan, res.mc.mode, B, T, steps, ids, pt, -1);
        pt[np].marker = PL_M_TRIANGLE;
        pt[np].auto_cap = (double)acaps[k], pt[np].pred_peak = (double)res.peak_bytes, pt[np].pred_ms = res.step_ms;
        snprintf(pt[np].auto_desc, sizeof pt[np].auto_desc, "%s", res.desc);
        np++;
    }
    /* The Pareto frontier: the points no other point beats in both time and memory, by time. */
    int order[MAXP], nf = 0;
    for (int i = 0; i < np; i++) {
        pt[i].frontier = !pt[i].oom;
        for (int j = 0; j < np && pt[i].frontier; j++)
            if (j != i && !pt[j].oom && pt[j].median <= pt[i].median && pt[j].alloc <= pt[i].alloc &&
                (pt[j].median < pt[i].median || pt[j].alloc < pt[i].alloc))
                pt[i].frontier = 0;
        if (pt[i].frontier) order[nf++] = i;
        for (int j = nf - 1; j > 0 && pt[order[j]].median < pt[order[j - 1]].median; j--)
            { int t = order[j]; order[j] = order[j - 1], order[j - 1] = t; }
    }

    /* 2. Sequence scaling of the runs spol names (figs_sweep.h: none, full, every:2, selective and
       slide); the runs at T itself are already measured. */
    static point sp[5][MAXSEQ];
    printf("== sequence scaling: B=%d, T in %s ==\n", B, seqs ? seqs : d.on_gpu ? "256,512,1024,2048" : "32,64,128");
    for (int s = 0; s < ns; s++)
        for (int k = 0; k < 5; k++) {
            int reuse = -1;
            for (int i = 0; i < np && seq[s] == T; i++) reuse = strcmp(pt[i].label, spol[k]) ? reuse : i;
            sp[k][s] = reuse >= 0 ? pt[reuse]
                                  : measure(&d, spol[k], k == 4 ? "none" : spol[k], NULL, k == 4, B, seq[s], steps,
                                            ids, k ? &sp[0][s] : NULL, scol[k]);
        }

    /* The check: every run's losses bitwise equal to none's at the same shape (OOM runs aside). */
    for (int i = 0; i < np; i++) bad |= pt[i].bitwise == 0;
    for (int k = 0; k < 5; k++)
        for (int s = 0; s < ns; s++) bad |= sp[k][s].bitwise == 0;

    pareto_csv(&d, pt, np);
    seq_csv(&d, sp, seq, ns);
    pareto_png(&d, pt, np, order, nf, B, T, unit);
    seq_png(&d, sp, seq, ns, B, unit);

    FILE *md = demo_md_begin(&d, "Sweep: step time vs peak memory, and growth with the sequence length",
                             "Every checkpoint policy, the budget planner and slide mode on the same model and tokens. "
                             "Peak memory is the allocator's peak allocated bytes over the measured steps (slide: "
                             "device bytes; its weights, gradients and AdamW state live on the host). Step times: the "
                             "median with a distribution-free CI of the median (order statistics; the CSVs also hold "
                             "the mean and its Student-t 95% CI, ci95_ms). Layout, one letter per layer: [R..] a "
                             "recomputed segment, A keep all, S selective, M selective:mlp, Q selective:attn, P selective:proj. The planner's budgets are "
                             "spaced between the smallest it accepts (at least full's peak) and none's peak; each plan is "
                             "measured like the others, then tried for 2 steps under an allocator cap of its budget. "
                             "`--mode auto` (sc_plan_auto) chooses mode, plan, device layers, prefetch, head and host "
                             "threads for itself under each of a few caps; each choice trains under that cap.",
                             B, T, steps);
    if (!d.on_gpu)
        fprintf(md, "On the CPU backend slide mode's \"device\" is host memory too and its transfers are memcpy: its "
                    "memory shows what a device would hold; its time says nothing about PCIe.\n\n");
    demo_md_figure(md, "pareto.png", "Step time vs peak memory; the dashed staircase is the Pareto frontier.");
    fprintf(md, "| run | layout | step ms: median [CI] | mean ± 95%% CI | peak alloc | saved activations | frontier | "
                "loss bitwise = none |\n|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < np; i++) {
        const point *p = &pt[i];
        if (p->oom) fprintf(md, "| %s | `%s` | OOM | | | | | |\n", p->label, p->layout);
        else fprintf(md, "| %s | `%s` | %.2f [%.2f, %.2f] | %.2f ± %.2f | %s | %s | %s | %s |\n", p->label, p->layout,
                     p->median, p->mlo, p->mhi, p->mean, p->ci, fmt_bytes(b1, p->alloc, unit),
                     fmt_bytes(b2, p->saved, unit), p->frontier ? "yes" : "", p->bitwise < 0 ? (i ? "n/a" : "reference") : p->bitwise ? "yes" : "**NO**");
    }
    for (int i = 0; i < np; i++)
        if (pt[i].budget > 0)
            fprintf(md, "\n- Planner at %s: 2 steps under an allocator cap of that size: %s%s%s", fmt_bytes(b1, pt[i].budget, unit),
                    pt[i].capfit > 0 ? "fitted." : "**out of memory**: ", pt[i].capfit > 0 ? "" : pt[i].capmsg,
                    pt[i].capfit > 0 ? "" : " (the planner counts tensor bytes; the allocator's segments hold more)");
    for (int i = 0; i < np; i++) {
        const point *p = &pt[i];
        if (!(p->auto_cap > 0)) continue;
        char b3[32];
        fprintf(md, "\n- `--mode auto` under a cap of %s chose: %s. Predicted peak %s and step %.2f ms; ",
                fmt_bytes(b1, p->auto_cap, unit), p->auto_desc, fmt_bytes(b2, p->pred_peak, unit), p->pred_ms);
        if (p->oom) fprintf(md, "the run went **out of memory** under its cap.");
        else fprintf(md, "measured %s and %.2f ms.", fmt_bytes(b3, p->alloc, unit), p->median);
    }
    fprintf(md, "\n\n");
    demo_md_figure(md, "seq_scaling.png", "Peak memory (left) and step time (right) against the sequence length.");
    fprintf(md, "| T | run | step ms: median [CI] | peak alloc | loss bitwise = none |\n|---|---|---|---|---|\n");
    for (int s = 0; s < ns; s++)
        for (int k = 0; k < 5; k++) {
            const point *p = &sp[k][s];
            if (p->oom) fprintf(md, "| %d | %s | OOM | | |\n", seq[s], spol[k]);
            else fprintf(md, "| %d | %s | %.2f [%.2f, %.2f] | %s | %s |\n", seq[s], spol[k], p->median, p->mlo, p->mhi,
                         fmt_bytes(b1, p->alloc, unit), p->bitwise < 0 ? (k ? "n/a" : "reference") : p->bitwise ? "yes" : "**NO**");
        }
    demo_close(&d, md, "summary.md");
    free(ids);
    printf("wrote %s: pareto.csv, seq_scaling.csv, pareto.png, seq_scaling.png, summary.md\n", d.o.out);
    if (bad) fprintf(stderr, "sweep: some losses are not bitwise equal to policy none's (see the CSVs)\n");
    return bad;
}
