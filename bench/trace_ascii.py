"""ASCII rendering of one step of a slidecheck trace.json: one row per track (gpu compute, h2d,
d2h, cpu optimizer, ...), one column per time bucket; a cell shows the busiest span kind in it.
    python3 bench/trace_ascii.py RUN/trace.json [STEP] [COLUMNS]"""
import json, sys

ev = json.load(open(sys.argv[1]))['traceEvents']
step = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] not in ('', '-') else None
cols = int(sys.argv[3]) if len(sys.argv) > 3 else 100
steps = [e for e in ev if e['ph'] == 'X' and e.get('cat') == 'step']
s = steps[len(steps) // 2] if step is None else [e for e in steps if e['args']['step'] == step][0]
t0, t1 = s['ts'], s['ts'] + s['dur']
names = {e['tid']: e['args']['name'] for e in ev if e['ph'] == 'M' and e['name'] == 'thread_name'}
spans = [e for e in ev if e['ph'] == 'X' and e.get('cat') != 'step' and e['ts'] < t1 and e['ts'] + e['dur'] > t0]
# one letter per phase: f forward, r recompute, b backward, l loss/head, u upload, d download, o optimizer, w wait
letter = {'fwd': 'f', 'recompute': 'r', 'bwd': 'b', 'loss': 'l', 'h2d': 'u', 'd2h': 'd', 'opt': 'o', 'other': 'w', 'comm': 'a'}
dt = (t1 - t0) / cols
print('step %s: %.2f ms, %d columns of %.2f ms' % (s['args'].get('step'), s['dur'] / 1e3, cols, dt / 1e3))
for tid in sorted({e['tid'] for e in spans}):
    busy = [dict() for _ in range(cols)]
    total = 0.0
    for e in (x for x in spans if x['tid'] == tid):
        a, b = max(e['ts'], t0), min(e['ts'] + e['dur'], t1)
        total += b - a
        ch = letter.get(e['args'].get('phase'), '?')
        for c in range(int((a - t0) / dt), min(cols - 1, int((b - t0) / dt)) + 1):
            lo, hi = t0 + c * dt, t0 + (c + 1) * dt
            busy[c][ch] = busy[c].get(ch, 0) + max(0.0, min(b, hi) - max(a, lo))
    row = ''.join((max(d, key=d.get) if sum(d.values()) > 0.25 * dt else '.') if d else '.' for d in busy)
    print('%-24s|%s| busy %6.1f ms' % (names.get(tid, str(tid))[:24], row, total / 1e3))
print('f fwd  r recompute  b bwd  l head+loss  u upload  d download  o cpu optimizer  a all-reduce  w wait  . idle')
