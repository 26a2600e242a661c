#!/bin/sh
# one device call (2 GPUs): 1 GPU, 2 GPUs plain and 2 GPUs ZeRO-1 in turn, resident, 1.7B shape,
# 2048 x 4 a GPU, AdamW bf16 with f32 master weights, 30 steps with the first 12 left out; rounds
# start until BUDGET s have passed. The log goes to $OUT/log.txt; results in $OUT/r.tgz
set -u
W=/tmp/dpw/zero; rm -rf "$W"; mkdir -p "$W"
L="$OUT/log.txt"; exec > "$L" 2>&1
export NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader; gcc --version | head -n 1; nvcc --version | tail -n 2; git log -1 --format=%h 2>/dev/null; git diff --stat 2>/dev/null | tail -n 1; nproc; } > "$W/machine.txt" 2>&1
cat "$W/machine.txt"
T0=$(date +%s)
make -j16 STB_INCLUDE=build/stb build/slidecheck > "$W/build.log" 2>&1 || { echo BUILD FAILED; tail -n 30 "$W/build.log"; exit 1; }
echo "build $(( $(date +%s) - T0 )) s"
big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 30 --warmup 12"
x=0
while [ $(( $(date +%s) - T0 )) -lt ${BUDGET:-150} ]; do
    x=$((x + 1))
    order="one dp zero"; [ $((x % 2)) = 0 ] && order="zero dp one"
    for v in $order; do
        case $v in one) g= ;; dp) g="--gpus 2" ;; zero) g="--gpus 2 --zero 1" ;; esac
        timeout 60 build/slidecheck $big $g > "$W/${v}_$x.log" 2>&1 || echo "$v $x: exit $?"
    done
    echo "round $x done at $(( $(date +%s) - T0 )) s"
done
echo "== plain"; python3 bench/dp_scaling.py 2 $W/one_*.log -- $W/dp_*.log
echo "== ZeRO-1"; python3 bench/dp_scaling.py 2 $W/one_*.log -- $W/zero_*.log
python3 bench/step_phases.py 12 one=$(ls $W/one_*.log | paste -sd,) dp=$(ls $W/dp_*.log | paste -sd,) zero=$(ls $W/zero_*.log | paste -sd,)
echo "the last step's line of each 2-GPU run (plain and ZeRO-1 should agree):"
for f in $W/dp_*.log $W/zero_*.log; do printf '%-8s %s\n' $(basename $f .log) "$(grep '^step' $f | tail -n 1 | cut -c1-60)"; done
tar czf "$OUT/r.tgz" -C /tmp/dpw zero
echo "done $(date -u)"
