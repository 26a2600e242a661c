"""Data parallel on the GPU: scaling and how much of the all-reduce hides behind compute.
    python3 bench/dp_hidden.py ONE_GPU.log TWO_GPU.log TRACE.json [ONE_GPU_TRACE.json]
    python3 bench/dp_hidden.py --selftest
scaling = W x step(1 GPU) / step(W GPUs), from the tool's summary lines (median step, per rank's
batch the same), and from the mean of the step lines after the first (slide: every host update
counted once). hidden = per step, the all-reduce spans' time (stream "nccl") that overlaps a
compute-stream span, over all of their time; median over the steps after the first.
With the 1-GPU trace: where the W-GPU step loses its time, phase by phase (the median over the
steps after the first two of each phase's spans summed per step), and how much of the W-GPU
backward layers' time has a collective running beside it, and what runs after the last backward
layer (each span of the median-length step that ends past it: the exposed sums, the embedding's
backward, the optimizer). Where the other ranks' traces lie beside TRACE.json (rank<k>/trace.json,
as --out writes them): when each rank reaches the last sum, and how long the last one keeps the
others waiting."""
import json, os, re, statistics, sys


def median_step(path):
    for line in open(path):
        if line.startswith('summary:'):
            return float(re.search(r'median step ([0-9.]+) ms', line).group(1))
    raise SystemExit('%s: no summary line' % path)


def mean_after_first(path):
    """the mean of the step lines' times after the first (steps 2..N), or None. Slide mode in one
    process carries a step's host updates into the next; its first step waits for them, and so
    does its last: the mean over steps 2..N counts every update once, where the median may not."""
    ms = [float(m.group(1)) for m in (re.match(r'step \d+ .*? ms ([0-9.]+) ', l) for l in open(path)) if m]
    return sum(ms[1:]) / len(ms[1:]) if len(ms) > 1 else None


def overlap(a0, a1, iv):
    """length of [a0, a1) covered by the union of the sorted, merged intervals iv"""
    return sum(max(0.0, min(a1, b1) - max(a0, b0)) for b0, b1 in iv)


def merge(iv):
    out = []
    for b0, b1 in sorted(iv):
        if out and b0 <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b1)
        else:
            out.append([b0, b1])
    return out


def phases(path):
    """per phase: the median over steps (after the first two) of its spans' summed time, ms; and
    the backward layer spans of those steps"""
    ev = json.load(open(path))['traceEvents']
    steps = sorted((e for e in ev if e['ph'] == 'X' and e.get('cat') == 'step'), key=lambda e: e['ts'])[2:]
    per, bwd = {}, []
    for st in steps:
        t0, t1 = st['ts'], st['ts'] + st['dur']
        tot = {}
        for e in ev:
            if e['ph'] == 'X' and e.get('cat') not in ('step', 'comm') and t0 <= e['ts'] < t1 and e.get('name') != 'allreduce':
                tot[e['cat']] = tot.get(e['cat'], 0.0) + e['dur']
                if e['cat'] == 'bwd' and e.get('name') == 'layer':
                    bwd.append((e['ts'], e['ts'] + e['dur']))
        for k, v in tot.items():
            per.setdefault(k, []).append(v / 1000.0)
    return {k: statistics.median(v) for k, v in per.items()}, bwd


def tail(ev, names):
    """after the last backward layer: each span that ends later, of the median-length step (the
    steps after the first two): where the W-GPU step's time past the backward goes"""
    steps = sorted((e for e in ev if e['ph'] == 'X' and e.get('cat') == 'step'), key=lambda e: e['ts'])[2:]
    if not steps:
        return
    st = sorted(steps, key=lambda e: e['dur'])[len(steps) // 2]
    t0, t1 = st['ts'], st['ts'] + st['dur']
    sp = [e for e in ev if e['ph'] == 'X' and e.get('cat') != 'step' and t0 <= e['ts'] < t1]
    lay = [e['ts'] + e['dur'] for e in sp if e.get('cat') == 'bwd' and e.get('name') == 'layer']
    if not lay:
        return
    b = max(lay)
    print('after the backward layers (step %s, %.2f ms of its %.2f): span, stream, start, ms, bus GB/s' % (
        st['args'].get('step'), (t1 - b) / 1e3, st['dur'] / 1e3))
    for e in sorted((e for e in sp if e['ts'] + e['dur'] > b), key=lambda e: e['ts']):
        a = e.get('args', {})
        print('  %-16s %-28s %+8.2f %7.2f %s' % (e['name'][:16], names.get(e['tid'], e['tid'])[:28], (e['ts'] - b) / 1e3,
                                              e['dur'] / 1e3, '%.0f' % a['bus GB/s'] if 'bus GB/s' in a else ''))



def arrivals(path):
    """{step: ms from the step's start to the end of layer 0's backward} in one rank's trace, the
    steps after the first two: when the rank reaches the last sum (layer 0's)"""
    ev = json.load(open(path))['traceEvents']
    out = {}
    for st in sorted((e for e in ev if e['ph'] == 'X' and e.get('cat') == 'step'), key=lambda e: e['ts'])[2:]:
        t0, t1 = st['ts'], st['ts'] + st['dur']
        l0 = [e for e in ev if e['ph'] == 'X' and e.get('cat') == 'bwd' and e.get('name') == 'layer' and
              e.get('args', {}).get('layer') == 0 and t0 <= e['ts'] < t1]
        if l0:
            out[st['args'].get('step')] = (l0[0]['ts'] + l0[0]['dur'] - t0) / 1e3
    return out


def skew(path, W):
    """the ranks' skew, where rank 0's trace has the others' beside it (DIR/rank<k>/trace.json, as
    slidecheck --out writes them): per step, how much later than the ranks' mean the last rank
    reaches layer 0's sum. The steps start together (the last update waits for every rank's sums)
    and nothing makes a rank wait for another before that sum: the earlier ranks wait there."""
    d = os.path.dirname(path)
    paths = [path] + [os.path.join(d, 'rank%d' % k, 'trace.json') for k in range(1, W)]
    if not all(os.path.exists(p) for p in paths):
        return
    ar = [arrivals(p) for p in paths]
    steps = sorted(set.intersection(*(set(a) for a in ar)))
    if not steps:
        return
    late = [max(a[s] for a in ar) - sum(a[s] for a in ar) / W for s in steps]
    print('ranks reach layer 0\'s sum (ms from the step\'s start; steps %s): %s' % (
        ', '.join(str(s) for s in steps),
        '; '.join('rank %d %s' % (k, ' '.join('%.2f' % a[s] for s in steps)) for k, a in enumerate(ar))))
    print('the last rank after the ranks\' mean: mean %.2f ms a step (median %.2f, max %.2f; dp_model.py --skew-ms)' % (
        sum(late) / len(late), statistics.median(late), max(late)))


def main():
    one, two = median_step(sys.argv[1]), median_step(sys.argv[2])
    ev = json.load(open(sys.argv[3]))['traceEvents']
    names = {e['tid']: e['args']['name'] for e in ev if e['ph'] == 'M' and e['name'] == 'thread_name'}
    comm = [t for t, n in names.items() if n.startswith('nccl')]
    comp = [t for t, n in names.items() if n in ('gpu compute', 'cpu compute')]
    W = 2  # the ranks: from the tool's "data parallel: N ranks" line
    m = re.search(r'data parallel: (\d+) ranks', open(sys.argv[2]).read())
    if m:
        W = int(m.group(1))
    fr = []
    for s in (e for e in ev if e['ph'] == 'X' and e.get('cat') == 'step'):
        t0, t1 = s['ts'], s['ts'] + s['dur']
        inside = lambda e: e['ph'] == 'X' and e.get('cat') != 'step' and t0 <= e['ts'] < t1
        cs = merge([(e['ts'], e['ts'] + e['dur']) for e in ev if inside(e) and e['tid'] in comp])
        ar = [(e['ts'], e['ts'] + e['dur']) for e in ev if inside(e) and e['tid'] in comm]
        tot = sum(b - a for a, b in ar)
        if tot > 0:
            fr.append(sum(overlap(a, b, cs) for a, b in ar) / tot)
    print('step: 1 GPU %.2f ms, %d GPUs %.2f ms; scaling %.3f x' % (one, W, two, W * one / two))
    m1, m2 = mean_after_first(sys.argv[1]), mean_after_first(sys.argv[2])
    if m1 and m2:
        print('mean of steps 2..N: 1 GPU %.2f ms, %d GPUs %.2f ms; scaling %.3f x' % (m1, W, m2, W * m1 / m2))
    if fr:
        print('all-reduce hidden behind compute: median %.1f%% over %d steps (min %.1f%%, max %.1f%%)' % (
            100 * statistics.median(fr[1:] or fr), len(fr), 100 * min(fr), 100 * max(fr)))
    else:
        print('no all-reduce spans in the trace')

    if len(sys.argv) > 4:
        p1, _ = phases(sys.argv[4])
        pw, bwd = phases(sys.argv[3])
        print('phases, median ms a step (1 GPU -> %d GPUs): %s' % (W, ', '.join(
            '%s %.2f -> %.2f' % (k, p1.get(k, 0.0), pw.get(k, 0.0)) for k in sorted(set(p1) | set(pw)))))
        ar = merge([(e['ts'], e['ts'] + e['dur']) for e in ev if e['ph'] == 'X' and e['tid'] in comm])
        busy = sum(overlap(a, b, ar) for a, b in bwd)
        span = sum(b - a for a, b in bwd)
        if span > 0:
            print('backward layers: a collective runs beside them %.1f%% of their time' % (100.0 * busy / span))
    tail(ev, names)
    skew(sys.argv[3], W)


def selftest():
    """two ranks' synthetic traces: layer 0's backward ends at 10, 12, 11 ms (rank 0) and 11, 12, 15
    (rank 1) into steps 2-4; steps 0 and 1 are left out"""
    import io, shutil, tempfile
    d = tempfile.mkdtemp(prefix='dp_hidden_')
    os.makedirs(os.path.join(d, 'rank1'))
    for path, ends in ((os.path.join(d, 'trace.json'), [9, 9, 10, 12, 11]),
                       (os.path.join(d, 'rank1', 'trace.json'), [5, 5, 11, 12, 15])):
        ev = []
        for s, e in enumerate(ends):
            t0 = 1000.0 * 20 * s
            ev.append({'ph': 'X', 'cat': 'step', 'name': 'step %d' % s, 'ts': t0, 'dur': 20000.0, 'args': {'step': s}})
            ev.append({'ph': 'X', 'cat': 'bwd', 'name': 'layer', 'ts': t0 + 1000.0 * (e - 2), 'dur': 2000.0,
                       'args': {'layer': 0}})
        json.dump({'traceEvents': ev}, open(path, 'w'))
    old, buf = sys.stdout, io.StringIO()
    sys.stdout = buf
    try:
        skew(os.path.join(d, 'trace.json'), 2)
    finally:
        sys.stdout = old
    out = buf.getvalue()
    # the last rank after the mean: 0.5, 0, 2 ms: mean 0.83, median 0.50, max 2.00
    checks = [('rank 0 10.00 12.00 11.00; rank 1 11.00 12.00 15.00' in out, 'each rank\'s arrival at layer 0\'s sum'),
              ('mean 0.83 ms a step (median 0.50, max 2.00' in out, 'the last rank after the ranks\' mean')]
    os.remove(os.path.join(d, 'rank1', 'trace.json'))
    out2 = io.StringIO()
    sys.stdout = out2
    try:
        skew(os.path.join(d, 'trace.json'), 2)
    finally:
        sys.stdout = old
    checks.append((out2.getvalue() == '', 'without the other rank\'s trace: nothing printed'))
    shutil.rmtree(d)
    return report_checks(checks)


def report_checks(checks):
    """a self-test's (passed, what) pairs as PASS / FAIL lines and the `N passed, M failed` line that
    tests/run.sh reads; the exit code (1 on any failure)"""
    for c, what in checks:
        print('%s %s' % ('PASS' if c else 'FAIL', what))
    nf = sum(1 for c, _ in checks if not c)
    print('%d passed, %d failed' % (len(checks) - nf, nf))
    return 1 if nf else 0


if __name__ == '__main__':
    if sys.argv[1:] == ['--selftest']:
        sys.exit(selftest())
    main()
