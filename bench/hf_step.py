"""PyTorch + HF transformers side of the benchmark: one Qwen decoder stack, random init, bf16
weights, random tokens; step = forward + backward + optimizer; median of N steps after W
warm-ups, timed with CUDA events around each step (and a synchronize). Prints one CSV row per
configuration: impl,model,seq,batch,optim,ckpt,step_ms_median,n,peak_alloc_gib,peak_resv_gib,loss0.

usage: python3 bench/hf_step.py --model qwen3-1.7b --seq 256 --batch 1 --optim sgd --ckpt none
"""
import argparse, statistics, sys, torch, transformers

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

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen3-1.7b", choices=sorted(SHAPES))
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--optim", default="sgd", choices=["sgd", "adamw"])
    ap.add_argument("--ckpt", default="none", choices=["none", "full"])
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--header", action="store_true")
    a = ap.parse_args()
    if a.header:
        print("impl,model,seq,batch,optim,ckpt,step_ms_median,n,peak_alloc_gib,peak_resv_gib,loss0")
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
    opt = (torch.optim.SGD(model.parameters(), lr=1e-4) if a.optim == "sgd"
           else torch.optim.AdamW(model.parameters(), lr=1e-4))
    ids = torch.randint(0, cfg.vocab_size, (a.batch, a.seq), device="cuda",
                        generator=torch.Generator("cuda").manual_seed(1))
    times, loss0 = [], None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    for s in range(a.warmup + a.steps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        e1.record()
        torch.cuda.synchronize()
        if loss0 is None:
            loss0 = out.loss.item()
        if s >= a.warmup:
            times.append(e0.elapsed_time(e1))
    gib = 1024 ** 3
    print(f"pytorch-{torch.__version__}+transformers-{transformers.__version__},{a.model},{a.seq},{a.batch},"
          f"{a.optim},{a.ckpt},{statistics.median(times):.2f},{len(times)},"
          f"{torch.cuda.max_memory_allocated() / gib:.3f},{torch.cuda.max_memory_reserved() / gib:.3f},{loss0:.5f}")
    sys.stdout.flush()

if __name__ == "__main__":
    main()
