#!/bin/sh
# one device call (2 GPUs): a 1-GPU run on GPU 0 alone, and beside bench/copy_load.cu's copies
# between the two GPUs (no training on GPU 1), in turn; 1.7B shape, 2048 x 4, AdamW bf16, 30 steps
# with the first 12 left out:
#   one:   GPU 0 alone;
#   paced: beside copies of 20 GB/s each way on average, packed into 15% of each 170 ms (a 2-rank
#          step's sums move 3.5 GB each way a GPU in about 21-25 ms);
#   full:  beside copies as fast as they go, without pause.
# nvidia-smi samples beside each run. The log goes to $OUT/log.txt; results in $OUT/r.tgz
set -u
W=/tmp/dpw/load; rm -rf "$W"; mkdir -p "$W"
L="$OUT/log.txt"; exec > "$L" 2>&1
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader; gcc --version | head -n 1; nvcc --version | tail -n 2; git log -1 --format=%h 2>/dev/null; git diff --stat 2>/dev/null | tail -n 1; nproc; } > "$W/machine.txt" 2>&1
cat "$W/machine.txt"
T0=$(date +%s)
{ make -j16 STB_INCLUDE=build/stb build/slidecheck && make STB_INCLUDE=build/stb build/copy_load; } > "$W/build.log" 2>&1 || { echo BUILD FAILED; tail -n 30 "$W/build.log"; exit 1; }
echo "build $(( $(date +%s) - T0 )) s"
big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 30 --warmup 12"
run() { # side round
    nvidia-smi --query-gpu=timestamp,index,power.draw,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader -lms 100 > "$W/smi_$1_$2.csv" 2>/dev/null &
    sp=$!; lp=
    case $1 in
    paced) build/copy_load 40 20 0.15 > "$W/load_$1_$2.txt" 2>&1 & lp=$! ;;
    full) build/copy_load 40 1000 > "$W/load_$1_$2.txt" 2>&1 & lp=$! ;;
    esac
    CUDA_VISIBLE_DEVICES=0 timeout 90 build/slidecheck $big > "$W/$1_$2.log" 2>&1 || echo "$1 $2: exit $?"
    [ -n "$lp" ] && { kill -INT $lp 2>/dev/null; wait $lp 2>/dev/null; }
    kill $sp 2>/dev/null; wait $sp 2>/dev/null
}
x=0
while [ $(( $(date +%s) - T0 )) -lt ${BUDGET:-330} ]; do
    x=$((x + 1))
    order="one paced full"; [ $((x % 2)) = 0 ] && order="full paced one"
    for v in $order; do run $v $x; done
    echo "round $x done at $(( $(date +%s) - T0 )) s"
done
python3 - "$W" <<'PY'
import csv, glob, re, statistics as st, sys
d = sys.argv[1]
print('median over the runs\' steps 13-30 (ms): step, forward, backward, optimizer')
for v in ('one', 'paced', 'full'):
    rows = []
    for f in sorted(glob.glob('%s/%s_*.log' % (d, v))):
        for l in open(f):
            m = re.match(r'step (\d+) .* ms ([\d.]+) fwd ([\d.]+) recompute [\d.]+ bwd ([\d.]+) opt ([\d.]+)', l)
            if m and int(m.group(1)) > 12:
                rows.append([float(x) for x in m.groups()[1:]])
    if rows:
        c = list(zip(*rows))
        print('%-6s %3d steps  step %.2f  fwd %.2f  bwd %.2f  opt %.2f' % ((v, len(rows)) + tuple(st.median(x) for x in c)))
print('nvidia-smi samples of GPU 0 above 400 W: medians (power W, SM MHz, memory MHz, temperature C)')
for v in ('one', 'paced', 'full'):
    rows = []
    for f in sorted(glob.glob('%s/smi_%s_*.csv' % (d, v))):
        for r in csv.reader(open(f)):
            try:
                if r[1].strip() == '0' and float(r[2].split()[0]) > 400:
                    rows.append([float(r[k].split()[0]) for k in (2, 3, 4, 5)])
            except (IndexError, ValueError):
                pass
    if rows:
        c = list(zip(*rows))
        print('%-6s %4d samples  %.0f W  %.0f MHz  %.0f MHz  %.0f C' % ((v, len(rows)) + tuple(st.median(x) for x in c)))
PY
for f in "$W"/load_*.txt; do echo "$(basename $f): $(cat $f)"; done
tar czf "$OUT/r.tgz" -C /tmp/dpw load
echo "done $(date -u)"
