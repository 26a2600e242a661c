# background copy-engine traffic between GPU 0 and GPU 1, as a 2-rank copy-engine all-reduce would make
import sys, time, torch
period = float(sys.argv[1]); nbytes = int(float(sys.argv[2]))
n = nbytes // 2
a0 = torch.ones(n, dtype=torch.bfloat16, device="cuda:0"); b0 = torch.empty_like(a0)
a1 = torch.ones(n, dtype=torch.bfloat16, device="cuda:1"); b1 = torch.empty_like(a1)
print("p2p", torch.cuda.can_device_access_peer(0, 1), flush=True)
s_up = torch.cuda.Stream(device="cuda:1"); s_dn = torch.cuda.Stream(device="cuda:1")
it = 0
while True:
    t0 = time.perf_counter()
    with torch.cuda.device(1):
        with torch.cuda.stream(s_up): b1.copy_(a0, non_blocking=True)
        with torch.cuda.stream(s_dn): b0.copy_(a1, non_blocking=True)
    s_up.synchronize(); s_dn.synchronize()
    dt = time.perf_counter() - t0
    if it % 10 == 0: print(f"it {it} copy {dt*1e3:.2f} ms, {nbytes/dt/1e9:.1f} GB/s each way", flush=True)
    it += 1
    if period > dt: time.sleep(period - dt)
