"""PyTorch's CPU AdamW against slidecheck's host optimizer (bench/cpu_optim.c, "adamw f32 (p,m,v,g)").

usage: python3 bench/torch_cpu_adamw.py [--n PARAMS (200M)] [--threads T (all)] [--reps R (10)] [--dtype f32]
                                       [--only foreach|fused]

Same methodology as cpu_optim.c: one f32 parameter tensor of n elements with an f32 gradient, for each of
torch.optim.AdamW(lr=1e-4, weight_decay=0.01) with foreach=True and with fused=True: 2 warm-up steps (the first
creates the state), then the median wall time (time.perf_counter) of R timed opt.step() calls; a fresh random
gradient is written before every step, untimed. GB/s counts the bytes AdamW must move with f32 p/g/m/v as PyTorch
keeps them: 4 reads + 3 writes of 4 B = 28 B/param (the foreach path runs several passes, so it really moves more).
Prints "# torch X, threads T", a table, then "csv" and rows kernel,n,threads,median_ms,gparams_s,gb_s.
A variant that raises (e.g. fused unsupported on this torch) is reported on a "#" line and skipped.

The byte mix: torch's fused kernel wants one dtype for param, grad and state, so it cannot take slide mode's mix
(f32 p, m, v; bf16 g in; a bf16 working copy out: also 28 B/param, 14 read + 14 written against torch's 16 + 12).
cpu_optim.c --candidates times both mixes of ours; bench/cpu_optim.sh sets them beside this one, round by round.
Its tensors come from torch's CPU allocator (64-byte aligned; huge pages only under THP "always" or with
THP_MEM_ALLOC_ENABLE=1), its at::parallel_for gives each thread one contiguous range, with ordinary stores.
"""
import argparse, os, statistics, time
import torch

BYTES_PER_PARAM = 28  # f32 reads p, g, m, v + writes p, m, v


def bench(n, reps, variant):
    torch.manual_seed(0)
    p = torch.nn.Parameter(torch.empty(n, dtype=torch.float32).uniform_(-1.0, 1.0))
    p.grad = torch.empty(n, dtype=torch.float32)
    opt = torch.optim.AdamW([p], lr=1e-4, weight_decay=0.01, **{variant: True})
    times = []
    for r in range(-2, reps):
        p.grad.uniform_(-0.1, 0.1)  # fresh gradient, as cpu_optim.c does, not timed
        t0 = time.perf_counter()
        opt.step()
        dt = time.perf_counter() - t0
        if r >= 0:
            times.append(dt)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200_000_000)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--dtype", default="f32", choices=["f32"])
    ap.add_argument("--only", choices=["foreach", "fused"], help="run this variant alone")
    a = ap.parse_args()
    if a.n < 1 or a.threads < 1 or a.reps < 1:
        ap.error("--n, --threads and --reps must be positive")
    torch.set_num_threads(a.threads)
    threads = torch.get_num_threads()
    print(f"# torch {torch.__version__}, threads {threads}, THP_MEM_ALLOC_ENABLE={os.environ.get('THP_MEM_ALLOC_ENABLE', '')}")

    rows = []
    for kernel, variant in (("torch_adamw_foreach", "foreach"), ("torch_adamw_fused", "fused")):
        if a.only and variant != a.only:
            continue
        try:
            med = bench(a.n, a.reps, variant)
        except Exception as e:  # report and go on: one variant missing should not lose the other
            print(f"# {kernel}: failed: {type(e).__name__}: {e}")
            continue
        rows.append((kernel, med * 1e3, a.n / med * 1e-9, a.n * BYTES_PER_PARAM / med * 1e-9))

    print(f"n = {a.n} params, {threads} threads, {a.reps} reps (median), {a.dtype}\n")
    print(f"{'kernel':<22} {'median ms':>10} {'Gparam/s':>9} {'GB/s':>8}")
    for kernel, ms, gps, gbs in rows:
        print(f"{kernel:<22} {ms:10.2f} {gps:9.3f} {gbs:8.2f}")
    print("\ncsv\nkernel,n,threads,median_ms,gparams_s,gb_s")
    for kernel, ms, gps, gbs in rows:
        print(f"{kernel},{a.n},{threads},{ms:.3f},{gps:.4f},{gbs:.3f}")


if __name__ == "__main__":
    main()
