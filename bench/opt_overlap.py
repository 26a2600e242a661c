"""The host optimizer's rate in a slide run, split by what the copy engines did meanwhile: each
host update task of steps 2.. of a trace.json (slidecheck train --out), with the share of its time
that uploads and downloads overlapped it; one layer's parameters over the task's time.
    python3 bench/opt_overlap.py RUN/trace.json LAYER_PARAMS_M [RUN2/trace.json ...]
(1.7B shape: 50.33 M parameters a layer)."""
import json, statistics, sys

def spans(ev, tid):
    return [(e['ts'], e['ts'] + e['dur'], e) for e in ev if e['ph'] == 'X' and e['tid'] == tid and e.get('cat') != 'step']

def overlap(a, b, L):
    return sum(max(0, min(b, y) - max(a, x)) for x, y, _ in L) / (b - a)

files = [f for f in sys.argv[1:] if f.endswith('.json')]
lp = float([f for f in sys.argv[1:] if not f.endswith('.json')][0])
for f in files:
    ev = json.load(open(f))['traceEvents']
    tid = {e['args']['name']: e['tid'] for e in ev if e['ph'] == 'M' and e['name'] == 'thread_name'}
    steps = sorted((e for e in ev if e['ph'] == 'X' and e.get('cat') == 'step'), key=lambda e: e['ts'])
    opt, up, dn = (spans(ev, tid[n]) for n in ('cpu optimizer', 'h2d (upload stream)', 'd2h (download stream)'))
    t0 = steps[1]['ts'] if len(steps) > 1 else 0
    groups = {'no copy (<10%)': [], 'uploads or downloads': [], 'both (>50% each)': []}
    heads = []
    for a, b, e in opt:
        if a < t0:
            continue
        if e['args'].get('layer', -1) < 0:
            heads.append((b - a) / 1e3)
            continue
        u, d = overlap(a, b, up), overlap(a, b, dn)
        k = 'no copy (<10%)' if u + d < 0.1 else 'both (>50% each)' if u > 0.5 and d > 0.5 else 'uploads or downloads'
        groups[k].append((b - a) / 1e3)
    print(f)
    for k, v in groups.items():
        if v:
            m = statistics.median(v)
            print('  layer tasks, %-22s n=%3d  median %6.2f ms  %.2f G params/s' % (k, len(v), m, lp / 1e3 / m * 1e3))
    if heads:
        print('  head and embedding tasks: n=%d, median %.2f ms' % (len(heads), statistics.median(heads)))
