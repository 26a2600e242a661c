#!/bin/sh
# Host AdamW, ours against PyTorch's fused CPU AdamW on this host, the same thread count for both, in ROUNDS
# alternating rounds: a round runs bench/cpu_optim.c --candidates (ours today, each candidate change, what the
# library now picks; every kernel's bits checked against the library's), then bench/torch_cpu_adamw.py --only fused.
# On a shared host the bandwidth left by neighbours moves between minutes, so each round's ratio compares runs a
# few seconds apart, and the verdict takes the median of the rounds' ratios.
#   sh bench/cpu_optim.sh OUTDIR    (THREADS=T, default nproc; N params, default 200000000; ROUNDS, default 3;
#                                    REPS, default 10; BIN=dir with cpu_optim, default build)
# Writes OUTDIR/cpu_optim_cmp.csv (round,source,candidate,mix,threads,set,n,reps,median_ms,gparams_s),
# OUTDIR/ours_rK.txt, OUTDIR/torch_rK.txt, OUTDIR/machine.txt and OUTDIR/verdict.txt (its last line, "VERDICT: ...").
set -u
cd "$(dirname "$0")/.."
O=${1:-build/cpu_optim_cmp}; BIN=${BIN:-build}; mkdir -p "$O"
TH=${THREADS:-$(nproc)}; N=${N:-200000000}; R=${ROUNDS:-3}; REPS=${REPS:-10}
[ -x "$BIN/cpu_optim" ] || make "$BIN/cpu_optim" >/dev/null || exit 1
{ (lscpu 2>/dev/null | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node)'); echo "nproc $(nproc)";
  echo "threads $TH, n $N, rounds $R, reps $REPS"; date -u +%F; } > "$O/machine.txt"
CSV="$O/cpu_optim_cmp.csv"
echo "round,source,candidate,mix,threads,set,n,reps,median_ms,gparams_s" > "$CSV"
r=1
while [ "$r" -le "$R" ]; do
    "$BIN/cpu_optim" --candidates --n "$N" --threads "$TH" --reps "$REPS" > "$O/ours_r$r.txt" 2>&1 ||
        { echo "cpu_optim --candidates failed (round $r):"; tail -n 20 "$O/ours_r$r.txt"; exit 1; }
    sed -n '/^candidates csv/,$p' "$O/ours_r$r.txt" | tail -n +3 |
        awk -F, -v r="$r" '{ printf "%s,ours,%s,%s,%s,%s,%s,%s,%s,%s\n", r, $1, $2, $3, $4, $5, $6, $7, $8 }' >> "$CSV"
    python3 bench/torch_cpu_adamw.py --n "$N" --threads "$TH" --reps "$REPS" --only fused > "$O/torch_r$r.txt" 2>&1
    sed -n '/^csv/,$p' "$O/torch_r$r.txt" | tail -n +3 |
        awk -F, -v r="$r" -v reps="$REPS" '{ printf "%s,torch,%s,f32,%s,-,%s,%s,%s,%s\n", r, $1, $3, $2, reps, $4, $5 }' >> "$CSV"
    r=$((r + 1))
done
head -n 3 "$O/ours_r1.txt"
python3 - "$CSV" <<'EOF' | tee "$O/verdict.txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
rounds = sorted({int(r['round']) for r in rows})
torch = {int(r['round']): float(r['gparams_s']) for r in rows if r['source'] == 'torch'}
ours = {}
for r in rows:
    if r['source'] == 'ours':
        ours.setdefault(r['candidate'], {})[int(r['round'])] = float(r['gparams_s'])
med = lambda xs: statistics.median(xs) if xs else float('nan')
print('G params/s, median over %d round(s); "x torch": the median of the rounds\' ours / torch fused ratios' % len(rounds))
print('%-26s %9s %9s  %s' % ('candidate', 'Gparam/s', 'x torch', 'per round'))
res = {}
for name, by in ours.items():
    rs = [by[k] / torch[k] for k in rounds if k in by and k in torch]
    res[name] = (med(list(by.values())), med(rs), rs)
    print('%-26s %9.3f %9s  %s' % (name, res[name][0], '%.3fx' % res[name][1] if rs else '-',
                                   ' '.join('%.3f' % x for x in rs)))
if torch:
    print('%-26s %9.3f' % ('torch fused', med(list(torch.values()))))
if not torch or 'library now' not in res:
    print('VERDICT: no comparison (torch fused %s, library now %s): see %s' %
          ('ran' if torch else 'missing: see torch_r1.txt', 'ran' if 'library now' in res else 'missing', sys.argv[1]))
    sys.exit(0)
slide = {k: v for k, v in res.items() if not k.startswith('f32 mix')}
best = max(slide, key=lambda k: slide[k][1])
ln, td, f32 = res['library now'], res['today'], res.get('f32 mix: today')
lo, hi = min(ln[2]), max(ln[2])
print('VERDICT: library now %.3f G params/s %s torch fused %.3f: %.3fx (rounds %.3f..%.3f; today %.3fx; '
      'f32 mix today %s); best candidate "%s" %.3fx' % (ln[0], '>=' if ln[1] >= 1.0 else '<', med(list(torch.values())),
                                                        ln[1], lo, hi, td[1], '%.3fx' % f32[1] if f32 else '-', best,
                                                        slide[best][1]))
EOF
