"""Two --op-times logs side by side: which kernels got slower from A to B (e.g. 1 GPU against a
rank of data parallel, where NCCL's kernels run beside the compute stream).
    python3 bench/op_times_diff.py A.log B.log [TOP]
Per kernel (the tool's per-step ms, events after each kernel): A ms, B ms, B - A, B / A; the TOP
(default 25) largest differences, then the sum by kind (GEMMs, attention, the rest)."""
import sys


def table(path):
    rows, on = {}, False
    for line in open(path):
        if line.startswith('kernel (per step'):
            on = True
            continue
        if not on:
            continue
        t = line.split()
        if t and t[0] == 'total':
            break
        if len(t) < 5:
            continue
        name = ' '.join(t[:-4])
        rows[name] = rows.get(name, 0.0) + float(t[-4])
    if not rows:
        raise SystemExit('%s: no per-kernel table (run with --op-times)' % path)
    return rows


def kind(name):
    return 'gemm' if name.startswith('gemm') else 'attention' if name.startswith('attention') else 'rest'


a, b = table(sys.argv[1]), table(sys.argv[2])
top = int(sys.argv[3]) if len(sys.argv) > 3 else 25
names = sorted(set(a) | set(b), key=lambda n: -(b.get(n, 0.0) - a.get(n, 0.0)))
print('%-56s %9s %9s %8s %6s' % ('kernel', 'A ms', 'B ms', 'B - A', 'B / A'))
for n in names[:top]:
    x, y = a.get(n, 0.0), b.get(n, 0.0)
    print('%-56s %9.3f %9.3f %+8.3f %6s' % (n[:56], x, y, y - x, '%.3f' % (y / x) if x > 0 else '-'))
sums = {}
for n in names:
    k = kind(n)
    s = sums.setdefault(k, [0.0, 0.0])
    s[0] += a.get(n, 0.0)
    s[1] += b.get(n, 0.0)
print('by kind:')
for k in ('gemm', 'attention', 'rest'):
    if k in sums:
        x, y = sums[k]
        print('  %-10s A %8.3f ms  B %8.3f ms  %+8.3f  (%s)' % (k, x, y, y - x, '%.3f x' % (y / x) if x else '-'))
x, y = sum(a.values()), sum(b.values())
print('  %-10s A %8.3f ms  B %8.3f ms  %+8.3f  (%.3f x)' % ('total', x, y, y - x, y / x))
