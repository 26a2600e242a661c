"""Writes the results of bench/speed.sh OUT as markdown on stdout: one table per configuration
(slidecheck per policy, PyTorch eager and torch.compile), the ratios between them, and the floors
measured in the same run (bench/gemm_floor.cu). Every number comes from OUT's files; the formulas
below turn them into floors and MFU and are printed with the tables.

usage: python3 bench/results_md.py OUT > bench/RESULTS.md
"""
import csv, glob, os, re, sys

# Qwen3-1.7B, as bench/gemm_floor.cu and slidecheck's built-in config have it
C, I, H, KV, D, V, L = 2048, 6144, 16, 8, 128, 151936, 28
# all parameters, the tied embedding / LM head matrix once (= sc_config_num_params)
N_PARAMS = L * (C * H * D + 2 * C * KV * D + H * D * C + 3 * C * I + 2 * C + 2 * D) + C + V * C
ACT = 2  # bytes per activation element (bf16)


def attn_flops(B, T):
    """Causal attention of one step: QK^T and PV are 2*B*H*T*T*D each in forward, halved by the
    causal mask; backward is twice forward. Per layer, times L."""
    return 3 * (2 * 2 * B * H * T * T * D / 2) * L


def elementwise_bytes(tokens, optim):
    """Bytes the step's non-GEMM, non-attention work must move at least once, each op reading its
    inputs and writing its outputs once (bf16 activations):
      per layer, forward: 2 RMSNorms (read x, write y: 2*C each), q/k norm + RoPE (read q,k, write
        q,k: 2*(H+KV)*D), 2 residual adds (read 2, write 1: 3*C each), SwiGLU (read gate, up,
        write h: 3*I);
      per layer, backward: each RMSNorm reads x and dy, writes dx (3*C); q/k norm + RoPE reads
        q, k, dq, dk, writes dq, dk (3*(H+KV)*D); each residual add passes one gradient on (read
        + write: 2*C); SwiGLU reads gate, up, dh, writes dgate, dup (5*I);
      once: embedding (forward 2*C, backward 3*C), final RMSNorm (2*C + 3*C), cross-entropy
        reads the logits and writes their gradient (2*V), all per token;
      optimizer, per parameter, all bf16: AdamW reads p, g, m, v and writes p, m, v (7 x 2 B);
        SGD reads p, g and writes p (3 x 2 B).
    Not counted: attention's own reads and writes (attention counts by its FLOPs), norm-weight
    gradient reductions, zeroing gradients, and any recompute."""
    per_layer = (2 * 2 * C + 2 * (H + KV) * D + 2 * 3 * C + 3 * I) + (2 * 3 * C + 3 * (H + KV) * D + 2 * 2 * C + 5 * I)
    once = 5 * C + 5 * C + 2 * V
    opt = (7 if optim == "adamw" else 3) * 2 * N_PARAMS
    return tokens * (L * per_layer + once) * ACT + opt


# What each checkpoint policy replays in the backward, per layer (slidecheck's sc__keep_mask and
# sc__layer_fill): the forward GEMMs (gemm_floor names), whether attention's forward runs again, and
# the element-wise forward ops (bf16 bytes per token, each reading its inputs and writing its
# outputs once, as in elementwise_bytes). A one-layer segment (full) skips the down projection and
# the last residual add: the next layer's saved input is that output.
LN, QKNR, ADD, SWIGLU = 2 * C, 2 * (H + KV) * D, 3 * C, 3 * I
REPLAY = {
    "full": (("qkv_fwd", "o_fwd", "gateup_fwd"), True, LN + QKNR + ADD + LN + SWIGLU),
    "selective": ((), False, LN + QKNR + LN + SWIGLU),
    "selective:attn": (("qkv_fwd",), True, LN + QKNR + LN + SWIGLU),
    "selective:proj": (("qkv_fwd", "o_fwd"), False, LN + QKNR + ADD + LN + SWIGLU),
    "selective:mlp": (("gateup_fwd",), False, LN + SWIGLU),
}


def replay_floor_ms(ck, tokens, gemm_rows, attn_fwd_ms, bw):
    """The floor of what policy ck replays in one step: L x (its forward GEMMs' measured floors +
    attention's forward floor where it runs again) + its element-wise bytes at the copy bandwidth."""
    if ck not in REPLAY or bw is None or attn_fwd_ms is None:
        return None
    gemms, attn, ew = REPLAY[ck]
    per = {r["name"]: float(r["median_ms"]) for r in gemm_rows}
    if any(g not in per for g in gemms):
        return None
    return L * sum(per[g] for g in gemms) + (attn_fwd_ms if attn else 0.0) + L * tokens * ew * ACT / (bw * 1e9) * 1e3


def palm_flops(B, T):
    """PaLM's model FLOPs of one step: 6 * N_PARAMS * tokens + 12 * L * H * D * T * tokens
    (attention without the causal halving, as PaLM counts it)."""
    tokens = B * T
    return 6 * N_PARAMS * tokens + 12 * L * H * D * T * tokens


def read_machine(out):
    m = {}
    path = os.path.join(out, "machine.txt")
    if os.path.exists(path):
        for line in open(path):
            k, _, v = line.partition(":")
            m[k.strip()] = v.strip()
    return m


def read_gemm(path):
    """-> (comment lines, rows as dicts)"""
    comments, lines = [], []
    for line in open(path):
        (comments if line.startswith("#") else lines).append(line.rstrip("\n"))
    return [c.lstrip("# ") for c in comments], list(csv.DictReader(lines))


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def fmt(x, spec=".2f", none="n/a"):
    return none if x is None else format(x, spec)


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: python3 bench/results_md.py OUT")
    out = sys.argv[1]
    m = read_machine(out)
    rows = list(csv.DictReader(open(os.path.join(out, "speed.csv"))))
    floors = {}  # tokens -> dict(gemm_ms, dense_tflops, copy_gbps, rows, comments)
    for path in sorted(glob.glob(os.path.join(out, "gemm_floor_N*.csv"))):
        tok = int(re.search(r"_N(\d+)\.csv$", path).group(1))
        comments, g = read_gemm(path)
        sus_lines = [c for c in comments if c.startswith("sustained gemm step:")]
        # the per-shape lines of --sustained stay in the csv; the sum is reported below
        comments = [c for c in comments if not c.startswith("sustained") and not re.match(r"\w+_(fwd|dx|dw) ", c)] + sus_lines
        gem = [r for r in g if r["kind"] == "gemm"]
        dense = [r for r in g if r["kind"] == "dense"]
        copy = [r for r in g if r["kind"] == "copy"]
        floors[tok] = dict(gemm_ms=sum(int(r["count"]) * float(r["median_ms"]) for r in gem) if gem else None,
                           dense_tflops=num(dense[0]["tflops"]) if dense else None,
                           dense_name=dense[0]["name"] if dense else None,
                           copy_gbps=num(copy[0]["gbps"]) if copy else None,
                           rows=gem, comments=comments,
                           sustained_ms=next((num(c.split(":")[1].split()[0]) for c in comments
                                              if c.startswith("sustained gemm step:")), None))
    # the launch floor: us a kernel node of a graph costs when the kernel does almost nothing
    # (bench/graph_floor.cu, its grid of one block an SM)
    node_us = None
    gpath = os.path.join(out, "graph_floor.csv")
    if os.path.exists(gpath):
        _, gr = read_gemm(gpath)
        node_us = max((num(r["us_per_kernel"]) for r in gr if num(r["blocks"]) and num(r["blocks"]) > 1), default=None)
    cuda_line = next((c for f in floors.values() for c in f["comments"] if c.startswith("cuda runtime")), None)
    # MFU and the attention floor use the highest dense rate measured in OUT (the conservative
    # choice: a dense GEMM that ran slow once would otherwise inflate MFU)
    rates = {tok: f["dense_tflops"] for tok, f in floors.items() if f["dense_tflops"]}
    dense_max = max(rates.values()) if rates else None

    ns = sorted({r["n"] for r in rows if r["n"]})
    odd = sorted({r["params"] for r in rows if r["params"] and int(r["params"]) != N_PARAMS})
    p = print
    p("# Resident training step: slidecheck against PyTorch + HF transformers (eager and torch.compile)")
    p()
    p("Written by `bench/results_md.py`; every number below was measured by the run (or the runs, appending to one OUT) of `bench/speed.sh` on the GPU named here.")
    p()
    p(f"- GPU: {m.get('gpu', 'n/a')} ({m.get('memory', 'n/a')}), driver {m.get('driver', 'n/a')}")
    p(f"- CUDA: nvcc {m.get('nvcc', 'n/a')}; {cuda_line or 'n/a'} (the libraries slidecheck and gemm_floor load)")
    p(f"- torch {m.get('torch', 'n/a')}, its cuBLAS: {m.get('torch cublas') or 'n/a'}; transformers {m.get('transformers', 'n/a')}")
    p(f"- date: {m.get('date', 'n/a')}")
    p(f"- each cell: median of n = {', '.join(ns) or 'n/a'} steps after {m.get('warmup', 'n/a')} warm-ups "
      "(slidecheck: its summary line; PyTorch: CUDA events around each step)")
    p("- model: Qwen3-1.7B shape, random init, random tokens, bf16 weights, gradients and optimizer state "
      "(no master weights), step = forward + backward + optimizer")
    if odd:
        p(f"- **note**: parameter counts {', '.join(odd)} in speed.csv differ from this script's {N_PARAMS}")
    p()

    configs = []
    for r in rows:
        key = (int(r["seq"]), int(r["batch"]), r["optim"])
        if key not in configs:
            configs.append(key)
    for T, B, optim in configs:
        cell = [r for r in rows if (int(r["seq"]), int(r["batch"]), r["optim"]) == (T, B, optim)]
        tok = B * T
        fl = floors.get(tok)
        gemm_ms = fl["gemm_ms"] if fl else None
        dense = dense_max
        bw = fl["copy_gbps"] if fl else None
        attn_ms = attn_flops(B, T) / (dense * 1e12) * 1e3 if dense else None
        ew_bytes = elementwise_bytes(tok, optim)
        ew_ms = ew_bytes / (bw * 1e9) * 1e3 if bw else None
        roof = gemm_ms + attn_ms + ew_ms if None not in (gemm_ms, attn_ms, ew_ms) else None
        pf = palm_flops(B, T)

        p(f"## seq {T} x batch {B}, {optim}")
        p()
        p("| impl | ckpt | cuda graph | step ms | n | peak alloc GiB | launches/step | kernels/step | first step s "
          "| step / roofline | MFU % | model TFLOP/s | status |")
        p("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in cell:
            ms = num(r["step_ms_median"])
            impl = "slidecheck" if r["impl"].startswith("slidecheck") else f"PyTorch {r['mode']}"
            mfu = pf / (ms * 1e-3) / (dense * 1e12) * 100 if ms and dense else None
            tf = pf / (ms * 1e-3) / 1e12 if ms else None
            p(f"| {impl} | {r['ckpt']} | {r['graph'] if r['graph'] not in ('', '-') else ''} | {fmt(ms)} | {r['n'] or ''} | {r['peak_alloc_gib'] or ''} "
              f"| {r['launches'] or ''} | {r['kernels'] or ''} | {r['first_step_s'] or ''} | {fmt(ratio(ms, roof))} "
              f"| {fmt(mfu, '.1f')} | {fmt(tf, '.1f')} | {r['status']} |")
        p()

        def get(impl_pred, ck, graph=None):
            for r in cell:
                if impl_pred(r) and r["ckpt"] == ck and r["status"] == "ok" and (graph is None or r["graph"] == graph):
                    return num(r["step_ms_median"])
            return None
        ours_graphs = sorted({r["graph"] for r in cell if r["impl"].startswith("slidecheck")})
        eager = lambda ck: get(lambda r: r["mode"] == "eager", ck)
        comp = lambda ck: get(lambda r: r["mode"] == "compile", ck)
        ours = lambda g, ck: get(lambda r: r["impl"].startswith("slidecheck"), ck, g)
        p("| ratio (step time) | " + " | ".join(f"graph {g}" if g not in ("", "-") else "value" for g in ours_graphs) + " |")
        p("|---|" + "---|" * len(ours_graphs))
        lines = []
        for ck in ("none", "full"):
            lines.append((f"slidecheck / PyTorch eager, ckpt {ck}", lambda g, ck=ck: ratio(ours(g, ck), eager(ck))))
            lines.append((f"slidecheck / torch.compile, ckpt {ck}", lambda g, ck=ck: ratio(ours(g, ck), comp(ck))))
        for ck in ("full", "selective", "selective:attn", "selective:proj"):
            lines.append((f"slidecheck {ck} / none", lambda g, ck=ck: ratio(ours(g, ck), ours(g, "none"))))
        lines.append(("PyTorch eager full / none", lambda g: ratio(eager("full"), eager("none"))))
        lines.append(("torch.compile full / none", lambda g: ratio(comp("full"), comp("none"))))
        for name, f in lines:
            vals = [f(g) for g in ours_graphs]
            if any(v is not None for v in vals):
                p(f"| {name} | " + " | ".join(fmt(v, '.3f') for v in vals) + " |")
        p()
        p(f"Floors for {tok} tokens (no recompute: a policy that recomputes does more than this work):")
        p()
        p(f"- GEMM floor: {fmt(gemm_ms, '.3f')} ms = sum over the step's GEMMs of count x measured median ms at that shape "
          f"(`gemm_floor_N{tok}.csv`, table below)")
        src = ", ".join(f"{rates[k]:.1f} with the {k}-token floors" for k in sorted(rates))
        p(f"- attention: {attn_flops(B, T) / 1e12:.4f} TFLOP (causal, forward + backward) at the measured dense rate "
          f"{fmt(dense, '.1f')} TFLOP/s (dense_8192, the highest of this OUT's measurements: {src}) = "
          f"{fmt(attn_ms, '.3f')} ms; this is a compute floor: attention's memory traffic is not counted")
        p(f"- element-wise and optimizer: {ew_bytes / 1e9:.3f} GB at the measured copy bandwidth {fmt(bw, '.1f')} GB/s "
          f"= {fmt(ew_ms, '.3f')} ms (how the bytes are counted: below)")
        p(f"- roofline = GEMM + attention + element-wise = {fmt(roof, '.3f')} ms")
        sus = fl["sustained_ms"] if fl else None
        if sus is not None and roof is not None and gemm_ms is not None:
            roof_s = roof - gemm_ms + sus
            none_s = ours(ours_graphs[-1] if ours_graphs else None, "none")
            p(f"- the same GEMMs back to back as a step runs them (`gemm_floor --sustained`, where the GPU stays at its "
              f"power limit): {fmt(sus, '.3f')} ms against the floor's {fmt(gemm_ms, '.3f')}; the roofline with them is "
              f"{fmt(roof_s, '.3f')} ms" + (f", and slidecheck `none` is {fmt(ratio(none_s, roof_s), '.3f')}x it" if none_s else "")
              + ". The table's roofline keeps the shapes' own floors")
        g_last = ours_graphs[-1] if ours_graphs else None
        none_ms = ours(g_last, "none")
        none_row = next((r for r in cell if r["impl"].startswith("slidecheck") and r["ckpt"] == "none"
                         and (r["graph"] or "-") == (g_last or "-")), None)
        kern = num(none_row["kernels"]) if none_row else None
        ngemm = sum(int(r["count"]) for r in fl["rows"]) if fl else 0
        if node_us is not None and kern and roof is not None and kern > ngemm:
            lf = (kern - ngemm) * node_us * 1e-3
            p(f"- the launch floor (`graph_floor.csv`): a graph's kernel node costs {node_us:.3f} us when its kernel does "
              f"almost nothing. slidecheck `none` runs {kern:.0f} kernels a step; the GEMM floor's back-to-back timings "
              f"already hold that gap for its {ngemm} GEMMs, so the other {kern - ngemm:.0f} add {lf:.3f} ms. The roofline "
              f"plus it is {roof + lf:.3f} ms" + (f", and `none` is {fmt(ratio(none_ms, roof + lf), '.3f')}x it" if none_ms else ""))
        rep = [(ck, ours(g_last, ck), replay_floor_ms(ck, tok, fl["rows"] if fl else [], attn_ms / 3 if attn_ms else None, bw))
               for ck in REPLAY if ours(g_last, ck) is not None]
        if rep and roof and none_ms:
            p(f"- what a policy replays has a floor too (the same measured floors: its forward GEMMs, attention's "
              f"forward where it runs again, its element-wise bytes; table below): with the replay run in order on "
              f"the compute stream, as slidecheck runs it, a policy's step / none's cannot fall below (none + replay floor) / none")
            p()
            p("| policy | replay measured ms (policy - none) | replay floor ms | measured / floor "
              "| lowest policy / none: none at its roofline | lowest policy / none: none as measured |")
            p("|---|---|---|---|---|---|")
            for ck, ms, f in rep:
                d = ms - none_ms
                p(f"| {ck} | {fmt(d)} | {fmt(f)} | {fmt(ratio(d, f), '.3f')} | {fmt(ratio(roof + f, roof) if f else None, '.3f')} "
                  f"| {fmt(ratio(none_ms + f, none_ms) if f else None, '.3f')} |")
        p(f"- MFU (PaLM): ({6 * N_PARAMS * tok / 1e12:.4f} + {12 * L * H * D * T * tok / 1e12:.4f}) TFLOP per step / step "
          f"time / the measured dense rate; model TFLOP/s is the same FLOPs / step time")
        p()

    p("## GEMM floors")
    p()
    for tok, fl in sorted(floors.items()):
        p(f"{tok} tokens: " + "; ".join(fl["comments"]))
        p()
        p("| GEMM | M | N | K | layout | count / step | median ms | TFLOP/s | count x ms |")
        p("|---|---|---|---|---|---|---|---|---|")
        for r in fl["rows"]:
            p(f"| {r['name']} | {r['m']} | {r['n']} | {r['k']} | {r['layout']} | {r['count']} | {r['median_ms']} "
              f"| {r['tflops']} | {int(r['count']) * float(r['median_ms']):.3f} |")
        p(f"| **sum** | | | | | | | | **{fmt(fl['gemm_ms'], '.3f')}** |")
        p(f"\ndense {fl['dense_name']}: {fmt(fl['dense_tflops'], '.1f')} TFLOP/s; device copy: {fmt(fl['copy_gbps'], '.1f')} "
          "GB/s (read + write bytes)")
        p()

    p("## How the columns and floors are counted")
    p()
    p("- **step ms**: median step time. slidecheck: its `summary:` line (`--warmup` steps left out). PyTorch: "
      "`bench/hf_step.py`, CUDA events around forward + backward + `opt.step()` + `zero_grad`. "
      "torch.compile: `torch.compile(model)`, default mode; compilation falls in the first warm-up step.")
    p("- **first step s**: wall time of the first step: for torch.compile, compilation + one step; for eager and "
      "slidecheck, one cold step. Not part of step ms.")
    p("- **peak alloc GiB**: slidecheck: its caching allocator's peak allocated bytes; PyTorch: "
      "`torch.cuda.max_memory_allocated()` over warm-ups and timed steps.")
    p("- **launches/step**: slidecheck: the `launches` of its summary line (kernel launches + cuBLAS calls per step); "
      "empty when the binary does not print it. PyTorch: host launch calls in one profiled step after the timed ones "
      "(torch.profiler, CPU + CUDA): cudaLaunchKernel, cudaLaunchKernelExC, cudaLaunchCooperativeKernel, cuLaunchKernel, "
      "cuLaunchKernelEx, cuLaunchCooperativeKernel, cudaGraphLaunch, cuGraphLaunch. **kernels/step**: that step's GPU "
      "kernel records (PyTorch only).")
    p("- **GEMM floor**: `bench/gemm_floor.cu`: cuBLASLt bf16 in/out, fp32 accumulate, the fastest of the top heuristic "
      "algorithms, median of the reps; per layer QKV [N,C]x[C,(H+2KV)D], O [N,HD]x[HD,C], gate+up [N,C]x[C,2I], down "
      "[N,I]x[I,C], and the LM head [N,C]x[C,V] once, each as forward, dX = dY W and dW = dY^T X.")
    p(f"- **element-wise floor**: {' '.join(elementwise_bytes.__doc__.split())}")
    p(f"- **MFU**: {' '.join(palm_flops.__doc__.split())} N_PARAMS = {N_PARAMS} = all parameters with the tied "
      "embedding / LM head matrix counted once, so 6 N covers the LM head's matmul (the embedding lookup itself has no "
      "FLOPs); norm weights are in it. Divided by the step time and by the dense rate measured in the same run (the "
      "highest where OUT holds several dense measurements). "
      "Recompute is not counted (it is work the model FLOPs do not include).")
    p("- **step / roofline**: step time over GEMM floor + attention floor + element-wise floor, each for the "
      "configuration's tokens and optimizer.")
    p("- **replay floor**: per layer, what the policy runs again in the backward: full replays ln1, the QKV GEMM, q/k "
      "norm + RoPE, attention's forward, the O GEMM, the residual add, ln2, the gate+up GEMM and SwiGLU (not the down "
      "projection: the next layer's saved input is its output); selective:proj the same without attention and gate+up; "
      "selective:attn ln1, QKV, q/k norm + RoPE, attention, ln2, SwiGLU; selective ln1, q/k norm + RoPE, ln2, SwiGLU; "
      "selective:mlp ln2, gate+up, SwiGLU. GEMMs at their measured floors, attention's forward at a third of the "
      "attention floor, element-wise ops at the copy bandwidth, each op's bytes counted as in the element-wise floor. "
      "Fused kernels (add + RMSNorm) move fewer bytes than that count, so a measured replay can sit a little under it.")


if __name__ == "__main__":
    main()
