#!/bin/sh
# Which kernels run slower beside NCCL's? The data-parallel step (Qwen3-1.7B shape, bf16, AdamW,
# 2048 x 4 per GPU, --ckpt none) with --op-times (an event after each kernel, the graph off) on
# 1 GPU, then on GPUS (2) GPUs (rank 0's compute stream while the collectives run beside it);
# bench/op_times_diff.py then lists the kernels by time lost, and the sums by kind.
#   sh bench/dp_op_times.sh OUT      (BIN=dir of prebuilt binaries, default build; GPUS=N, default 2)
set -u
O=${1:?usage: sh bench/dp_op_times.sh OUT}; BIN=${BIN:-build}; NG=${GPUS:-2}; mkdir -p "$O"
export NCCL_NVLS_ENABLE=0
big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 6 --warmup 2 --op-times"
"$BIN/slidecheck" $big > "$O/one.log" 2>&1 || { echo "1 GPU: exit $?"; tail -n 3 "$O/one.log"; exit 1; }
"$BIN/slidecheck" $big --gpus "$NG" > "$O/dp.log" 2>&1 || { echo "$NG GPUs: exit $?"; tail -n 3 "$O/dp.log"; exit 1; }
grep -h '^summary' "$O/one.log" "$O/dp.log" | cut -c1-160
python3 bench/op_times_diff.py "$O/one.log" "$O/dp.log" | tee "$O/diff.txt"
