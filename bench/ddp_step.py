"""PyTorch DDP side of the data-parallel comparison: the same HF model as bench/hf_step.py
(random init, bf16 weights, AdamW, random tokens), one process per GPU under torchrun, per-rank
batch as given; step = forward + backward (DDP's bucketed all-reduce overlapping it) + optimizer.
Each rank times its steps with CUDA events; rank 0 prints the median of the slowest rank's step
over N steps after W warm-ups, and its peak memory:
  impl,model,seq,batch_per_rank,world,step_ms_median,n,peak_alloc_gib,peak_resv_gib,loss0

usage: torchrun --nproc_per_node=2 bench/ddp_step.py --model qwen3-1.7b --seq 2048 --batch 4
"""
import argparse, os, statistics, sys, torch, torch.distributed as dist, transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_step import SHAPES  # noqa: E402  (the same shapes as slidecheck's built-in configs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen3-1.7b", choices=sorted(SHAPES))
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=4, help="per rank")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    a = ap.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    shape = dict(SHAPES[a.model])
    arch = shape.pop("arch")
    Cfg = transformers.Qwen3Config if arch == "qwen3" else transformers.Qwen2Config
    cfg = Cfg(**shape, max_position_embeddings=max(4096, a.seq), rope_theta=1e6, rms_norm_eps=1e-6,
              attn_implementation="sdpa", use_cache=False)
    torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    model.train()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[torch.cuda.current_device()])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    g = torch.Generator("cuda").manual_seed(1 + rank)  # each rank its own shard of the batch
    ids = torch.randint(0, cfg.vocab_size, (a.batch, a.seq), device="cuda", generator=g)
    times, loss0 = [], None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    for s in range(a.warmup + a.steps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        out = ddp(input_ids=ids, labels=ids)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        e1.record()
        torch.cuda.synchronize()
        if loss0 is None:
            loss0 = out.loss.item()
        if s >= a.warmup:
            times.append(e0.elapsed_time(e1))
    # the step of the data-parallel job is its slowest rank's
    t = torch.tensor(times, device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    gib = 1024 ** 3
    if rank == 0:
        print(f"pytorch-ddp-{torch.__version__}+transformers-{transformers.__version__},{a.model},{a.seq},{a.batch},"
              f"{world},{statistics.median(t.tolist()):.2f},{len(times)},"
              f"{torch.cuda.max_memory_allocated() / gib:.3f},{torch.cuda.max_memory_reserved() / gib:.3f},{loss0:.5f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
