"""PyTorch + HF transformers side of the benchmark: one Qwen decoder stack, random init, bf16
weights, random tokens; step = forward + backward + optimizer; median of N steps after W
warm-ups, timed with CUDA events around each step (and a synchronize). Prints one CSV row per
configuration:
  impl,model,seq,batch,optim,ckpt,step_ms_median,n,peak_alloc_gib,peak_resv_gib,loss0,
  mode,launches,kernels,first_step_s,params
(the first 11 columns as bench/run.sh has always read them; the rest appended).

--compile wraps the model in torch.compile (default mode) after --ckpt is set up. Compilation
happens in the first warm-up step, so the warm-ups hold it and the timed steps do not;
first_step_s is that first step's wall time in seconds (compilation + one step under
--compile, one cold step in eager mode).
--ckpt full is gradient_checkpointing_enable(use_reentrant=False), also under --compile.

launches and kernels come from one extra step after the timed ones, under torch.profiler
(CPU + CUDA activities): launches counts the host's launch calls, the CUDA runtime / driver
events named in LAUNCH_CALLS below; kernels counts the GPU kernel records (category "kernel").
peak memory is read before that step. params: distinct parameters (a tied matrix once).

usage: python3 bench/hf_step.py --model qwen3-1.7b --seq 256 --batch 1 --optim sgd --ckpt none [--compile]
"""
import argparse, collections, json, os, statistics, sys, tempfile, time, torch, transformers

SHAPES = {  # the same shapes as slidecheck's built-in configs
    "qwen3-1.7b": dict(arch="qwen3", vocab_size=151936, hidden_size=2048, intermediate_size=6144,
                       num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                       tie_word_embeddings=True),
    "qwen3-0.6b": dict(arch="qwen3", vocab_size=151936, hidden_size=1024, intermediate_size=3072,
                       num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                       tie_word_embeddings=True),
    "qwen2.5-7b": dict(arch="qwen2", vocab_size=152064, hidden_size=3584, intermediate_size=18944,
                       num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4,
                       tie_word_embeddings=False),
}

HEADER = ("impl,model,seq,batch,optim,ckpt,step_ms_median,n,peak_alloc_gib,peak_resv_gib,loss0,"
          "mode,launches,kernels,first_step_s,params")
# Host calls that launch GPU work: kernels through the runtime or the driver (cuBLAS and Triton
# use the driver), cooperative launches, and whole CUDA graphs (one call for all of a graph's kernels).
LAUNCH_CALLS = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel", "cuLaunchKernel",
                "cuLaunchKernelEx", "cuLaunchCooperativeKernel", "cudaGraphLaunch", "cuGraphLaunch"}

def count_launches(step):
    """Runs step() once under torch.profiler; returns (launch calls, GPU kernels), and prints the
    count per launch-call name on stderr."""
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        step()
        torch.cuda.synchronize()
    # the chrome trace names each event's category, which tells a host call from a GPU kernel
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    finally:
        os.unlink(path)
    calls = collections.Counter(e["name"] for e in events
                                if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("name") in LAUNCH_CALLS)
    kernels = sum(1 for e in events if e.get("cat") == "kernel")
    print(f"profiled step: launch calls {dict(calls)}, kernels {kernels}", file=sys.stderr)
    return sum(calls.values()), kernels

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen3-1.7b", choices=sorted(SHAPES))
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--optim", default="sgd", choices=["sgd", "adamw"])
    ap.add_argument("--ckpt", default="none", choices=["none", "full"])
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--compile", action="store_true", help="torch.compile(model), default mode")
    ap.add_argument("--header", action="store_true")
    a = ap.parse_args()
    if a.header:
        print(HEADER)
    shape = dict(SHAPES[a.model])
    arch = shape.pop("arch")
    Cfg = transformers.Qwen3Config if arch == "qwen3" else transformers.Qwen2Config
    cfg = Cfg(**shape, max_position_embeddings=max(4096, a.seq), rope_theta=1e6, rms_norm_eps=1e-6,
              attn_implementation="sdpa", use_cache=False)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    model.train()
    if a.ckpt == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    params = sum(p.numel() for p in model.parameters())
    opt = (torch.optim.SGD(model.parameters(), lr=1e-4) if a.optim == "sgd"
           else torch.optim.AdamW(model.parameters(), lr=1e-4))
    # the compiled module shares the model's parameters, so the optimizer is the same either way
    fwd = torch.compile(model) if a.compile else model
    ids = torch.randint(0, cfg.vocab_size, (a.batch, a.seq), device="cuda",
                        generator=torch.Generator("cuda").manual_seed(1))
    def step():
        out = fwd(input_ids=ids, labels=ids)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return out.loss

    times, warm, loss0, first_s = [], [], None, None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    for s in range(a.warmup + a.steps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        e0.record()
        loss = step()
        e1.record()
        torch.cuda.synchronize()
        if loss0 is None:
            loss0 = loss.item()
            first_s = time.perf_counter() - t0
        (times if s >= a.warmup else warm).append(e0.elapsed_time(e1))
    if warm and warm[-1] > 1.5 * statistics.median(times):
        # a slow last warm-up says compilation (or allocator growth) may reach into the timed steps
        print(f"warning: last warm-up step {warm[-1]:.1f} ms, median {statistics.median(times):.1f} ms",
              file=sys.stderr)
    peak_alloc, peak_resv = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
    launches, kernels = count_launches(step)
    gib = 1024 ** 3
    print(f"pytorch-{torch.__version__}+transformers-{transformers.__version__},{a.model},{a.seq},{a.batch},"
          f"{a.optim},{a.ckpt},{statistics.median(times):.2f},{len(times)},"
          f"{peak_alloc / gib:.3f},{peak_resv / gib:.3f},{loss0:.5f},"
          f"{'compile' if a.compile else 'eager'},{launches},{kernels},{first_s:.2f},{params}")
    sys.stdout.flush()

if __name__ == "__main__":
    main()
