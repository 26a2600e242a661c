"""The phases of the timed steps, pooled over runs: for each group of `slidecheck train` logs, the
medians over every run's steps past SKIP (its warm-up) of the step's ms and of its forward,
backward and optimizer phases, as the step lines print them.
    python3 bench/step_phases.py SKIP NAME=LOG[,LOG ...] [NAME=LOG[,LOG ...] ...]"""
import re
import statistics
import sys

STEP = re.compile(r'step (\d+) .* ms ([\d.]+) fwd ([\d.]+) recompute [\d.]+ bwd ([\d.]+) opt ([\d.]+)')


def phases(paths, skip):
    rows = []
    for p in paths:
        for line in open(p):
            m = STEP.match(line)
            if m and int(m.group(1)) > skip:
                rows.append([float(x) for x in m.groups()[1:]])
    return len(rows), [statistics.median(c) for c in zip(*rows)] if rows else None


def main():
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
