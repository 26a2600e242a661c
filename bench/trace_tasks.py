#!/usr/bin/env python3
"""The host optimizer's tasks in a slidecheck trace.json, one line each: start (ms from the first
step), duration, the layer (-1: the embedding, norm and head) and the step that queued it, with
the upload, download and compute busy time beside it; and each step's busy time per track, and
how long the step ran on after the last task that started in it ended (the norm's wait and what
follows it: over NCCL each step waits for its updates).
    python3 bench/trace_tasks.py RUN/trace.json [MAX_TASKS (120)]"""
import json, sys

ev = json.load(open(sys.argv[1]))['traceEvents']
cap = int(sys.argv[2]) if len(sys.argv) > 2 else 120
names = {e['tid']: e['args']['name'] for e in ev if e['ph'] == 'M' and e['name'] == 'thread_name'}
steps = sorted((e for e in ev if e['ph'] == 'X' and e.get('cat') == 'step'), key=lambda e: e['ts'])
spans = [e for e in ev if e['ph'] == 'X' and e.get('cat') != 'step']


def busy(track, a, b):
    """ms of [a, b) (trace microseconds) that spans on tracks named like `track` cover, summed"""
    t = 0.0
    for e in spans:
        if track in names.get(e['tid'], ''):
            s, f = max(e['ts'], a), min(e['ts'] + e['dur'], b)
            t += max(f - s, 0)
    return t / 1e3


tracks = sorted({names.get(e['tid'], '?') for e in spans})
for s in steps:
    a, b = s['ts'], s['ts'] + s['dur']
    ends = [e['ts'] + e['dur'] for e in spans if 'optimizer' in names.get(e['tid'], '') and a <= e['ts'] < b]
    after = '; after the last task %.1f ms' % ((b - max(ends)) / 1e3) if ends else ''
    print('step %s: %.1f ms; busy ms: %s%s' % (s['args'].get('step'), s['dur'] / 1e3,
                                               ', '.join('%s %.1f' % (t, busy(t, a, b)) for t in tracks), after))
t0 = steps[0]['ts'] if steps else 0
opt = sorted((e for e in spans if 'optimizer' in names.get(e['tid'], '')), key=lambda e: e['ts'])
print('%9s %8s %5s %5s %8s %8s %8s' % ('start', 'ms', 'layer', 'step', 'h2d', 'd2h', 'compute'))
for e in opt[:cap]:
    a, b, g = e['ts'], e['ts'] + e['dur'], e.get('args', {})
    print('%9.1f %8.2f %5s %5s %8.1f %8.1f %8.1f' % ((a - t0) / 1e3, e['dur'] / 1e3, g.get('layer'), g.get('step'),
                                                   busy('h2d', a, b), busy('d2h', a, b), busy('compute', a, b)))
