#!/bin/sh
# The slide-mode GPU checks, in one go (on the GPU machine, repository root):
# compute-sanitizer memcheck / racecheck / synccheck on a tiny slide run, and a 1000-step tiny
# slide soak whose reserved device memory and pinned host memory must stay flat.
#   sh bench/gpu_slide_checks.sh OUTDIR     (BIN=dir of prebuilt binaries, default build)
set -u
O=${1:-build/gpu_slide}; BIN=${BIN:-build}; mkdir -p "$O"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
tiny="train --model tiny --device cuda --mode slide --seq 64 --batch 2 --accum 2 --ckpt every:2 --optim adamw --lr 1e-3"
# the plain schedule, the one-step-delayed update, the embedding/head kept on the device and the
# SGD on the device (layers and, with the head up once and one micro-batch, the head); OPTS picks
OPTS=${OPTS:-plain dpu keep-head devup}
flags() {
    case $1 in plain) fl="";; dpu) fl="--slide-dpu";; keep-head) fl="--slide-keep-head";;
        devup) fl="--optim sgd --pure-bf16 --accum 1 --head-slice 100 --slide-head-once --slide-device-update";; esac
}
for opt in $OPTS; do
    flags $opt
    for tool in memcheck racecheck synccheck; do
        "$CS" --tool $tool --error-exitcode 9 "$BIN/slidecheck" $tiny $fl --steps 3 --dtype bf16 > "$O/$tool-$opt.log" 2>&1
        echo "$tool $opt rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/$tool-$opt.log" | tail -n 1)"
    done
done
for opt in $OPTS; do
flags $opt
"$BIN/slidecheck" $tiny $fl --steps 1000 --warmup 10 --dtype bf16 --out "$O/soak-$opt" > "$O/soak-$opt.log" 2>&1
echo "soak $opt rc=$?"; tail -n 1 "$O/soak-$opt.log"
python3 - "$O/soak-$opt/step_metrics.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def col(k): return [float(r[k]) for r in rows]
for k in ('gpu_resv_gib', 'peak_resv_gib', 'gpu_alloc_gib', 'host_pinned_gib', 'cpu_rss_gib'):
    if k in rows[0]:
        v = col(k); a, b = v[10:20], v[-10:]
        print('%-18s steps 11-20: %.6f..%.6f   last 10: %.6f..%.6f   flat=%s' % (k, min(a), max(a), min(b), max(b), max(b) <= max(a)))
print('columns:', ','.join(rows[0].keys()))
PY
done
