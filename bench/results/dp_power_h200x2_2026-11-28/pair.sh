#!/bin/sh
# one device call (2 GPUs): what two busy GPUs cost before any communication. In turn, 1.7B shape,
# 2048 x 4 a GPU, AdamW bf16, 30 steps with the first 12 left out:
#   one:  1 GPU (GPU 0), the other idle;
#   pair: two independent 1-GPU runs at once, one a GPU (no communication);
#   dp:   --gpus 2 (resident data parallel, the copy engines' sums).
# nvidia-smi samples power, SM clock and temperature every 100 ms beside each run (smi_*.csv).
# The log goes to $OUT/log.txt; results in $OUT/r.tgz
set -u
W=/tmp/dpw/power; rm -rf "$W"; mkdir -p "$W"
L="$OUT/log.txt"; exec > "$L" 2>&1
export NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader; gcc --version | head -n 1; nvcc --version | tail -n 2; git log -1 --format=%h 2>/dev/null; git diff --stat 2>/dev/null | tail -n 1; nproc; } > "$W/machine.txt" 2>&1
cat "$W/machine.txt"
T0=$(date +%s)
make -j16 STB_INCLUDE=build/stb build/slidecheck > "$W/build.log" 2>&1 || { echo BUILD FAILED; tail -n 30 "$W/build.log"; exit 1; }
echo "build $(( $(date +%s) - T0 )) s"
big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 30 --warmup 12"
run() { # side round
    nvidia-smi --query-gpu=timestamp,index,power.draw,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader -lms 100 > "$W/smi_$1_$2.csv" 2>/dev/null &
    sp=$!
    case $1 in
    one) CUDA_VISIBLE_DEVICES=0 timeout 90 build/slidecheck $big > "$W/one_$2.log" 2>&1 || echo "one $2: exit $?" ;;
    pair) CUDA_VISIBLE_DEVICES=0 timeout 90 build/slidecheck $big > "$W/pair0_$2.log" 2>&1 &
          p0=$!
          CUDA_VISIBLE_DEVICES=1 timeout 90 build/slidecheck $big > "$W/pair1_$2.log" 2>&1 || echo "pair1 $2: exit $?"
          wait $p0 || echo "pair0 $2: exit $?" ;;
    dp) timeout 90 build/slidecheck $big --gpus 2 > "$W/dp_$2.log" 2>&1 || echo "dp $2: exit $?" ;;
    esac
    kill $sp 2>/dev/null; wait $sp 2>/dev/null
}
x=0
while [ $(( $(date +%s) - T0 )) -lt ${BUDGET:-400} ]; do
    x=$((x + 1))
    order="one pair dp"; [ $((x % 2)) = 0 ] && order="dp pair one"
    for v in $order; do run $v $x; done
    echo "round $x done at $(( $(date +%s) - T0 )) s"
done
echo "== 2 x one / dp"; python3 bench/dp_scaling.py 2 $W/one_*.log -- $W/dp_*.log
echo "== 2 x one / pair (GPU 0's runs)"; python3 bench/dp_scaling.py 2 $W/one_*.log -- $W/pair0_*.log
echo "== 2 x one / pair (GPU 1's runs)"; python3 bench/dp_scaling.py 2 $W/one_*.log -- $W/pair1_*.log
echo "== 2 x pair (GPU 0's) / dp"; python3 bench/dp_scaling.py 2 $W/pair0_*.log -- $W/dp_*.log
python3 - "$W" <<'PY'
import csv, glob, statistics as st, sys
print('nvidia-smi samples with power above 400 W: medians per side and GPU (power W, SM MHz, memory MHz, temperature C)')
for side in ('one', 'pair', 'dp'):
    for g in ('0', '1'):
        rows = []
        for f in sorted(glob.glob('%s/smi_%s_*.csv' % (sys.argv[1], side))):
            for r in csv.reader(open(f)):
                try:
                    if r[1].strip() == g and float(r[2].split()[0]) > 400:
                        rows.append([float(r[k].split()[0]) for k in (2, 3, 4, 5)])
                except (IndexError, ValueError):
                    pass
        if rows:
            c = list(zip(*rows))
            print('%-5s GPU %s: %4d samples  %.0f W  %.0f MHz  %.0f MHz  %.0f C' % ((side, g, len(rows)) + tuple(st.median(x) for x in c)))
PY
tar czf "$OUT/r.tgz" -C /tmp/dpw power
echo "done $(date -u)"
