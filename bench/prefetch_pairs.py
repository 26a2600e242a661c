#!/usr/bin/env python3
"""Prefetch 1 against prefetch 2 in the auto sweeps' hand runs: for every pair of runs in one
sweep (one process, one host) that differ only in the prefetch depth, the ratio of their median
steps. --mode auto's time model predicts the two alike; the geometric mean of these ratios is the
factor it counts for prefetch 1 (SC__AUTO_P1_SLOWER in slidecheck.h).
  python3 bench/prefetch_pairs.py [CSV ...]     (default: every bench/results/auto_*/**/sweep_*.csv)"""
import csv, glob, math, re, statistics, sys

files = sys.argv[1:] or sorted(glob.glob("bench/results/auto_*/**/sweep_*.csv", recursive=True))
ratios, sweeps = [], 0
for f in files:
    runs = {}
    for r in csv.DictReader(open(f)):
        m = re.match(r"slide (\S+) P(\d+) (\S+) (.+)$", r.get("config", ""))
        if r.get("status") == "ran" and m:
            runs.setdefault((m.group(1), m.group(3), m.group(4)), {})[int(m.group(2))] = float(r["median_step_ms"])
    pairs = [v[1] / v[2] for v in runs.values() if 1 in v and 2 in v]
    if pairs:
        sweeps += 1
        ratios += pairs
        print("%-70s %2d pairs, P1 / P2 geometric mean %.4f" % (f, len(pairs), math.exp(statistics.mean(map(math.log, pairs)))))
if not ratios:
    sys.exit("no pairs found")
print("all: %d pairs in %d sweeps; P1 / P2 geometric mean %.4f, median %.4f, range %.3f-%.3f; P1 slower in %d"
      % (len(ratios), sweeps, math.exp(statistics.mean(map(math.log, ratios))), statistics.median(ratios),
         min(ratios), max(ratios), sum(r > 1 for r in ratios)))
