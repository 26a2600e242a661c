# PyTorch's SDPA (its FlashAttention-2 backend) on the shape of bench_attention in tests/test_gpu.c:
# causal, bf16, B=4 T=2048, 16 query / 8 kv heads of 128. CUDA events, median of 20 after 3 warm-ups.
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
B, T, H, KV, D = 4, 2048, 16, 8, 128
q = torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
k = torch.randn(B, KV, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
v = torch.randn(B, KV, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
ffl = 4.0 * B * H * T * T / 2 * D
def med(f):
    ts = []
    for i in range(23):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); f(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
    ts = sorted(ts[3:]); return 0.5 * (ts[9] + ts[10])
for name, be in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION)):
    try:
        with sdpa_kernel(be):
            kk, vv = k.repeat_interleave(H // KV, 1).detach().requires_grad_(), v.repeat_interleave(H // KV, 1).detach().requires_grad_()
            o = F.scaled_dot_product_attention(q, kk, vv, is_causal=True)
            g = torch.randn_like(o)
            tf = med(lambda: F.scaled_dot_product_attention(q, kk, vv, is_causal=True))
            tb = med(lambda: torch.autograd.grad(o, (q, kk, vv), g, retain_graph=True))
            print(f"torch {torch.__version__} sdpa {name:9s} forward {tf:.3f} ms ({ffl / tf * 1e-9:.1f} TFLOP/s)  backward {tb:.3f} ms ({2.5 * ffl / tb * 1e-9:.1f} TFLOP/s)")
    except Exception as e:
        print(f"sdpa {name}: {type(e).__name__}: {str(e)[:120]}")
