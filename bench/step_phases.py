"""The phases of the timed steps, pooled over runs: for each group of `slidecheck train` logs, the
medians over every run's steps past SKIP (its warm-up) of the step's ms and of its forward,
backward and optimizer phases, as the step lines print them.
    python3 bench/step_phases.py SKIP NAME=LOG[,LOG ...] [NAME=LOG[,LOG ...] ...]
    python3 bench/step_phases.py --selftest"""
import re
import statistics
import sys

from dp_hidden import report_checks

STEP = re.compile(r'step (\d+) .* ms ([\d.]+) fwd ([\d.]+) recompute [\d.]+ bwd ([\d.]+) opt ([\d.]+)')


def phases(paths, skip):
    rows = []
    for p in paths:
        for line in open(p):
            m = STEP.match(line)
            if m and int(m.group(1)) > skip:
                rows.append([float(x) for x in m.groups()[1:]])
    return len(rows), [statistics.median(c) for c in zip(*rows)] if rows else None


def selftest():
    """two synthetic logs of 4 steps, the first 2 left out: the medians of steps 3-4 of both"""
    import os
    import tempfile
    line = 'step %d loss 1.0 lr 1e-05 norm 1.0 ms %.2f fwd %.2f recompute 0.00 bwd %.2f opt %.2f peak_alloc_gib 1.0\n'
    with tempfile.TemporaryDirectory(prefix='step_phases_') as d:
        paths = []
        for k, rows in enumerate(([(100, 40, 50, 5), (100, 40, 50, 5), (10, 4, 5, 1), (12, 5, 6, 1)],
                                  [(90, 30, 40, 4), (11, 4, 6, 1), (13, 6, 7, 2), (15, 7, 8, 2)])):
            paths.append(os.path.join(d, 'run%d.log' % k))
            with open(paths[-1], 'w') as f:
                f.write('summary: not a step line\n')
                for s, r in enumerate(rows):
                    f.write(line % ((s + 1,) + r))
        n, med = phases(paths, 2)
        checks = [(n == 4, 'steps 3-4 of two runs: 4 steps (%d)' % n),
                  (med == [12.5, 5.5, 6.5, 1.5],
                   'medians of 10, 12, 13, 15 ms; 4, 5, 6, 7; 5, 6, 7, 8; 1, 1, 2, 2: %s' % med),
                  (phases(paths, 4)[1] is None, 'nothing past step 4')]
    return report_checks(checks)


def main():
    if sys.argv[1:] == ['--selftest']:
        raise SystemExit(selftest())
    if len(sys.argv) < 3 or any('=' not in a for a in sys.argv[2:]):
        raise SystemExit(__doc__)
    skip = int(sys.argv[1])
    print('%-10s %6s %9s %9s %9s %9s   (ms, medians over the runs\' steps past %d)' % ('runs', 'steps', 'step', 'fwd', 'bwd',
                                                                                   'opt', skip))
    for a in sys.argv[2:]:
        name, paths = a.split('=', 1)
        n, med = phases(paths.split(','), skip)
        if med:
            print('%-10s %6d %9.2f %9.2f %9.2f %9.2f' % ((name, n) + tuple(med)))
        else:
            print('%-10s no step lines past step %d' % (name, skip))


if __name__ == '__main__':
    main()
