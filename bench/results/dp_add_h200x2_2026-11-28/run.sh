#!/bin/sh
# one device call (2 GPUs): resident data parallel at 2 ranks, 1.7B shape, 2048 x 4 a GPU, AdamW bf16,
# 30 steps with the first 12 left out, against 1 GPU, in turn; variants of the copy engines' add:
#   base; add32 / add132 (SC_EXP_ADD_BLOCKS: the add's grid capped); prio (SC_EXP_PRIO: the compute
#   stream at the highest priority); prio32 (both). The log goes to $OUT/log.txt; results in $OUT/r.tgz
set -u
W=/tmp/dpw/add; rm -rf "$W"; mkdir -p "$W"
L="$OUT/log.txt"; exec > "$L" 2>&1
export NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader; gcc --version | head -n 1; nvcc --version | tail -n 2; git log -1 --format=%h 2>/dev/null; git diff --stat 2>/dev/null | tail -n 1; nproc; } > "$W/machine.txt" 2>&1
cat "$W/machine.txt"
T0=$(date +%s)
make -j16 STB_INCLUDE=build/stb build/slidecheck > "$W/build.log" 2>&1 || { echo BUILD FAILED; tail -n 30 "$W/build.log"; exit 1; }
echo "build $(( $(date +%s) - T0 )) s"
big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 30 --warmup 12"
VARS=${VARS:-"base add32 add132 prio prio32"}
run() { # side round
    case $1 in
    one) env= g= ;;
    base) env= g="--gpus 2" ;;
    add32) env="SC_EXP_ADD_BLOCKS=32" g="--gpus 2" ;;
    add132) env="SC_EXP_ADD_BLOCKS=132" g="--gpus 2" ;;
    prio) env="SC_EXP_PRIO=1" g="--gpus 2" ;;
    prio32) env="SC_EXP_PRIO=1 SC_EXP_ADD_BLOCKS=32" g="--gpus 2" ;;
    esac
    env $env timeout 90 build/slidecheck $big $g > "$W/${1}_$2.log" 2>&1 || echo "$1 $2: exit $?"
}
x=0
while [ $(( $(date +%s) - T0 )) -lt ${BUDGET:-470} ]; do
    x=$((x + 1))
    order="one $VARS"; [ $((x % 2)) = 0 ] && order="$(echo $VARS | tr ' ' '\n' | tac | tr '\n' ' ') one"
    for v in $order; do run $v $x; done
    echo "round $x done at $(( $(date +%s) - T0 )) s"
done
for v in $VARS; do
    echo "== $v"; python3 bench/dp_scaling.py 2 $W/one_*.log -- $W/${v}_*.log
done
echo "losses (the last step's line of each run; they should agree):"
for f in $W/*_1.log; do printf '%-10s %s\n' $(basename $f .log) "$(grep '^step' $f | tail -n 1 | cut -c1-60)"; done
tar czf "$OUT/r.tgz" -C /tmp/dpw add
echo "done $(date -u)"
