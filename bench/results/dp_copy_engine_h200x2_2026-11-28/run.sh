#!/bin/sh
# 2 GPUs: copy engines against NCCL, alternating, one log into $OUT as it goes
L="$OUT/log.txt"; export NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader; gcc --version | head -n 1; nvcc --version | tail -n 1; } > "$L" 2>&1
t0=$(date +%s); make -j16 STB_INCLUDE=build/stb build/slidecheck > "$OUT/build.log" 2>&1 || echo "BUILD FAILED" >> "$L"
echo "build $(( $(date +%s) - t0 )) s" >> "$L"
big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 10 --warmup 2"
run() { name=$1; shift; timeout 45 build/slidecheck $big "$@" > /tmp/r.log 2>&1; echo "$name rc=$? $(grep -h 'summed by' /tmp/r.log | head -n 1 | cut -c1-60) | $(grep -h '^summary' /tmp/r.log | cut -c1-260)" >> "$L"; }
run one; run ce --gpus 2; run nccl --gpus 2 --dp-sums nccl; run ce --gpus 2; run nccl --gpus 2 --dp-sums nccl; run one
date -u >> "$L"
