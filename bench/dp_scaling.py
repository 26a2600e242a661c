"""Data-parallel scaling over several runs of each side, taken in turn on one machine:
    python3 bench/dp_scaling.py W ONE_1.log [ONE_2.log ...] -- MANY_1.log [MANY_2.log ...]
Each run gives its median step (the tool's summary line) and the mean of its steps 2..N (slide mode
in one process carries a step's host updates into the next, so its medians swing; the mean counts
every update once). Scaling = W x one / many from the medians over the runs of each side, and its
lowest and highest over every pair of one run of each side: the spread a single pair would show."""
import statistics, sys

from dp_hidden import mean_after_first, median_step


def runs(paths):
    return [(p, median_step(p), mean_after_first(p)) for p in paths]


def main():
    if len(sys.argv) < 5 or '--' not in sys.argv[2:]:
        raise SystemExit(__doc__)
    W, cut = int(sys.argv[1]), sys.argv.index('--')
    one, many = runs(sys.argv[2:cut]), runs(sys.argv[cut + 1:])
    if not one or not many:
        raise SystemExit('dp_scaling.py: a run of each side is needed')
    for side, rs in (('1 GPU', one), ('%d GPUs' % W, many)):
        for p, md, mn in rs:
            print('%-8s median %8.2f ms  mean of steps 2..N %s  %s' % (side, md, '%8.2f ms' % mn if mn else '       -', p))
    for k, what in ((1, 'median step'), (2, 'mean of steps 2..N')):
        a = [r[k] for r in one if r[k]]
        b = [r[k] for r in many if r[k]]
        if not a or not b:
            continue
        pairs = [W * x / y for x in a for y in b]
        print('%s: 1 GPU %.2f ms (median of %d runs), %d GPUs %.2f ms (of %d); scaling %.3f x '
              '(pairs of runs: %.3f to %.3f x)' % (what, statistics.median(a), len(a), W, statistics.median(b), len(b),
                                                   W * statistics.median(a) / statistics.median(b), min(pairs), max(pairs)))


if __name__ == '__main__':
    main()
