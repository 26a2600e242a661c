#!/bin/sh
# The resident-mode GPU checks, in one go (run on the GPU machine from the repository root):
# build, `make test-gpu`, compute-sanitizer on a tiny run, a checkpoint written by slidecheck
# loaded by transformers, and the demo on a mid-size model. Logs go to ${OUT:-build/gpu}.
set -u
O=${OUT:-build/gpu}; mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$O/gpu.txt"
nvcc --version | tail -n 2 | tee -a "$O/gpu.txt"
make -j16 all build/test_gpu build/recompute_tradeoff > "$O/build.log" 2>&1 || { tail -30 "$O/build.log"; exit 1; }
make test-gpu > "$O/test_gpu.log" 2>&1; echo "test-gpu rc=$?"; grep -E "FAIL|passed, " "$O/test_gpu.log" | tail -n 20
make test-gpu-memcheck > "$O/memcheck.log" 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|passed, " "$O/memcheck.log" | tail -n 3
./build/slidecheck train --model tiny --device cuda --seq 64 --batch 2 --steps 3 --optim adamw --lr 1e-3 \
    --save "$O/ckpt" > "$O/save.log" 2>&1
python3 tests/fixtures/check_load.py "$O/ckpt" > "$O/check_load.log" 2>&1; echo "check_load rc=$?"; tail -n 3 "$O/check_load.log"
F=tests/fixtures/qwen3_gqa_tied/ref.safetensors
loss=$(./build/slidecheck grad --hf "$O/ckpt" --tokens $F --out "$O/g.safetensors" --device cpu | awk '/^loss/{print $2}')
python3 tests/fixtures/check_loss.py "$O/ckpt" $F "$loss"; echo "check_loss rc=$?"
./build/recompute_tradeoff --model qwen3-0.6b --seq 1024 --batch 4 --steps 4 --device cuda --out "$O/demo" \
    > "$O/demo.log" 2>&1; echo "demo rc=$?"; sed -n '/^policy/,/^saved/p' "$O/demo.log"
# budget:SIZE on the GPU: the planner's choice and the measured peak against the budget
./build/slidecheck train --model qwen3-1.7b --seq 2048 --batch 4 --dtype bf16 --optim adamw --ckpt budget:24GiB \
    --steps 4 --warmup 1 --device cuda > "$O/budget.log" 2>&1; echo "budget rc=$?"
grep -E "^budget|^fixed|predicted|smallest|saved act|^summary" "$O/budget.log"
