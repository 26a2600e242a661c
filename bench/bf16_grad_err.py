#!/usr/bin/env python3
"""How far does PyTorch + HF transformers' own bf16 training step move each gradient from the
float64 one? The peer's answer to the tolerance question that tests/test_gpu.c's bf16 checks ask
of slidecheck (test_bf16_hf_init: the same shapes, init and batch).

    python3 bench/bf16_grad_err.py [--seeds 5] [--attn sdpa eager] [--preset hf-init|test-qwen2]

Presets: hf-init is test_bf16_hf_init's model (hidden 256, head_dim 64 and 128, init 0.02, biases
N(0, 0.02), B=2, T=131); test-qwen2 is test_model_cfg's sharper one (hidden 40, 5 heads of 8, one
kv head, every weight N(0, 0.1), norms 1 + 0.2 N, B=3, T=7).

Prints, per head_dim and attention implementation, the relative error ||g - g64|| / ||g64|| of
k_proj.bias (a near-cancelling sum: a shift of every key leaves the softmax unchanged) and of the
worst other parameter, over several random models; on the GPU when there is one.
"""
import argparse

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM


def grads(model, ids):
    model.zero_grad(set_to_none=True)
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    return {n: p.grad.detach().double().cpu() for n, p in model.named_parameters()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--attn", nargs="+", default=["sdpa", "eager"])
    ap.add_argument("--preset", choices=["hf-init", "test-qwen2"], default="hf-init")
    a = ap.parse_args()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"torch {torch.__version__}, device {torch.cuda.get_device_name() if dev == 'cuda' else 'cpu'}")
    print("D    attn   seed  k_proj.bias rel  worst other rel (name)")
    shapes = [64, 128] if a.preset == "hf-init" else [8]
    for D in shapes:
        for attn in a.attn:
            kb = []
            for seed in range(a.seeds):
                if a.preset == "hf-init":
                    cfg = Qwen2Config(vocab_size=96, hidden_size=256, intermediate_size=384, num_hidden_layers=3,
                                      num_attention_heads=4, num_key_value_heads=1, head_dim=D,
                                      max_position_embeddings=160, initializer_range=0.02,
                                      tie_word_embeddings=False, rope_theta=1e6, rms_norm_eps=1e-6,
                                      attn_implementation=attn)
                    B, T = 2, 131
                else:
                    cfg = Qwen2Config(vocab_size=80, hidden_size=40, intermediate_size=72, num_hidden_layers=3,
                                      num_attention_heads=5, num_key_value_heads=1, head_dim=8,
                                      max_position_embeddings=32, initializer_range=0.1,
                                      tie_word_embeddings=False, rope_theta=1e6, rms_norm_eps=1e-5,
                                      attn_implementation=attn)
                    B, T = 3, 7
                torch.manual_seed(seed)
                m64 = Qwen2ForCausalLM(cfg)
                with torch.no_grad():
                    for n, p in m64.named_parameters():
                        if a.preset == "hf-init":
                            if n.endswith(".bias"):
                                p.normal_(0.0, 0.02)
                        elif "norm" in n:
                            p.copy_(1.0 + 0.2 * torch.randn_like(p))
                        else:
                            p.normal_(0.0, 0.1)
                        p.copy_(p.to(torch.bfloat16).float())  # the same weights on both sides
                ids = torch.randint(0, cfg.vocab_size, (B, T), generator=torch.Generator().manual_seed(1000 + seed))
                m64 = m64.double().to(dev)
                g64 = grads(m64, ids.to(dev))
                mb = Qwen2ForCausalLM(cfg)
                mb.load_state_dict({k: v.float() for k, v in m64.state_dict().items()})
                mb = mb.to(dev, torch.bfloat16)
                gb = grads(mb, ids.to(dev))
                worst, wn, kbias = 0.0, "", 0.0
                for n, g in g64.items():
                    e = ((gb[n] - g).norm() / g.norm()).item()
                    if "k_proj.bias" in n:
                        kbias = max(kbias, e)
                    elif e > worst:
                        worst, wn = e, n
                kb.append(kbias)
                print(f"{D:<4} {attn:<6} {seed:<5} {kbias:.3e}        {worst:.3e} ({wn})")
            print(f"{D:<4} {attn:<6} max   {max(kb):.3e}   median {sorted(kb)[len(kb) // 2]:.3e}")

if __name__ == "__main__":
    main()
