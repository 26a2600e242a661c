#!/bin/sh
# one device call: PART=verify|speed; a log written into $OUT/log.txt as it goes, results tarred into $OUT/r.tgz
set -u
W=/tmp/dpw/$PART; rm -rf "$W"; mkdir -p "$W"
L="$OUT/log.txt"; exec > "$L" 2>&1
export NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader; gcc --version | head -n 1; nvcc --version | tail -n 2; git log --oneline -1 2>/dev/null; git diff --stat 2>/dev/null | tail -n 1; } > "$W/machine.txt" 2>&1
cat "$W/machine.txt"
t0=$(date +%s); T0=$t0
T="build/slidecheck build/test_gpu build/allreduce"; [ "$PART" = ab ] && T=build/slidecheck; [ "$PART" = fix ] && T="build/slidecheck build/test_gpu"
make -j16 STB_INCLUDE=build/stb $T > "$W/build.log" 2>&1 || { echo BUILD FAILED; tail -n 30 "$W/build.log"; }
echo "build $(( $(date +%s) - t0 )) s"
big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 10 --warmup 2"
case $PART in
verify)
    t0=$(date +%s); timeout 150 make test-gpu STB_INCLUDE=build/stb > "$W/test_gpu.log" 2>&1; echo "test-gpu exit $? ($(( $(date +%s) - t0 )) s)"
    tail -n 2 "$W/test_gpu.log"; grep -i 'FAIL' "$W/test_gpu.log" | head -n 10
    t0=$(date +%s); GPUS=2 EQUAL_ONLY=1 TWO_NODE=0 timeout 220 sh bench/gpu_dp_checks.sh "$W/eq2" > "$W/eq2.txt" 2>&1
    echo "eq2 exit $? ($(( $(date +%s) - t0 )) s)"; cat "$W/eq2.txt"
    mkdir -p "$W/ab"
    for i in 1 2; do
        timeout 40 build/slidecheck $big > "$W/ab/one_$i.log" 2>&1
        timeout 40 build/slidecheck $big --gpus 2 > "$W/ab/plain_$i.log" 2>&1
        timeout 40 build/slidecheck $big --gpus 2 --zero 1 > "$W/ab/zero_$i.log" 2>&1
        grep -H '^summary' "$W/ab/one_$i.log" "$W/ab/plain_$i.log" "$W/ab/zero_$i.log" | cut -c1-160
    done
    ;;
ab)
    for v in var_old var_c; do
        gcc -std=c11 -O3 -g -Wall -Wextra -Werror -fopenmp -DSLIDECHECK_CUDA -I/usr/local/cuda/include $v/demos/cli.c -o $v/slidecheck \
            build/slidecheck_cuda.o -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lcublasLt -lcublas -lcudart -lstdc++ -lm -pthread || echo "$v BUILD FAILED"
    done
    mkdir -p "$W/ab"
    timeout 40 build/slidecheck $big --gpus 2 --zero 1 --cuda-graph off --out "$W/ab/ze" > "$W/ab/ze.log" 2>&1
    timeout 40 var_c/slidecheck $big --gpus 2 --zero 1 --out "$W/ab/zc" > "$W/ab/zc_t.log" 2>&1
    for i in 1 2; do
        timeout 40 build/slidecheck $big --gpus 2 > "$W/ab/plain_$i.log" 2>&1
        timeout 40 build/slidecheck $big --gpus 2 --zero 1 > "$W/ab/znew_$i.log" 2>&1
        timeout 40 var_old/slidecheck $big --gpus 2 --zero 1 > "$W/ab/zold_$i.log" 2>&1
        timeout 40 var_c/slidecheck $big --gpus 2 --zero 1 > "$W/ab/zc_$i.log" 2>&1
    done
    grep -H '^summary' "$W"/ab/*.log | cut -c1-150
    sl="$big --mode slide --steps 8"
    timeout 60 build/slidecheck $sl --gpus 2 --slide-cpu-threads 7 > "$W/ab/slide2_t7.log" 2>&1
    timeout 60 build/slidecheck $sl --slide-cpu-threads 7 > "$W/ab/slide1_t7.log" 2>&1
    grep -H '^summary\|host AdamW timed' "$W"/ab/slide*.log | cut -c1-200
    ;;
fix)
    tiny="train --model tiny --device cuda --seq 64 --steps 5 --warmup 1 --optim adamw --lr 1e-3 --batch 2 --gpus 2"
    for dt in fp32 bf16; do
        timeout 60 build/slidecheck $tiny --dtype $dt --save "$W/p_$dt" > "$W/p_$dt.log" 2>&1 || echo "plain $dt: exit $?"
        timeout 60 build/slidecheck $tiny --dtype $dt --zero 1 --save "$W/z_$dt" > "$W/z_$dt.log" 2>&1 || echo "zero $dt: exit $?"
        timeout 60 build/slidecheck $tiny --dtype $dt --zero 1 --cuda-graph off --save "$W/ze_$dt" > "$W/ze_$dt.log" 2>&1 || echo "zero eager $dt: exit $?"
        grep -h 'cuda graph' "$W/z_$dt.log" | head -n 1 | cut -c1-200
        cmp "$W/p_$dt/model.safetensors" "$W/z_$dt/model.safetensors" && echo "$dt: ZeRO-1 (graph) == plain: PASS" || echo "$dt: ZeRO-1 (graph) != plain: FAIL"
        cmp "$W/p_$dt/model.safetensors" "$W/ze_$dt/model.safetensors" && echo "$dt: ZeRO-1 (eager) == plain: PASS" || echo "$dt: ZeRO-1 (eager) != plain: FAIL"
    done
    mkdir -p "$W/ab"
    for i in 1 2 3; do
        timeout 40 build/slidecheck $big --gpus 2 --out "$W/ab/p$i" > "$W/ab/plain_$i.log" 2>&1
        timeout 40 build/slidecheck $big --gpus 2 --zero 1 --out "$W/ab/z$i" > "$W/ab/zero_$i.log" 2>&1
        grep -H '^summary' "$W/ab/plain_$i.log" "$W/ab/zero_$i.log" | cut -c1-120
    done
    t0=$(date +%s); timeout 150 make test-gpu STB_INCLUDE=build/stb > "$W/test_gpu.log" 2>&1; echo "test-gpu exit $? ($(( $(date +%s) - t0 )) s)"
    tail -n 1 "$W/test_gpu.log"; grep -i 'FAIL' "$W/test_gpu.log" | head -n 10
    left=$(( 530 - ($(date +%s) - T0) ))
    echo "left for eq2: $left s"
    if [ $left -gt 60 ]; then
        t0=$(date +%s); GPUS=2 EQUAL_ONLY=1 TWO_NODE=0 timeout $left sh bench/gpu_dp_checks.sh "$W/eq2" > "$W/eq2.txt" 2>&1
        echo "eq2 exit $? ($(( $(date +%s) - t0 )) s)"; cat "$W/eq2.txt"
    fi
    ;;
speed)
    t0=$(date +%s); GPUS=2 SPEED_ONLY=1 timeout 540 sh bench/gpu_dp_checks.sh "$W/sp2" > "$W/sp2.txt" 2>&1
    echo "sp2 exit $? ($(( $(date +%s) - t0 )) s)"; cat "$W/sp2.txt"; cat "$W/sp2/dp_model_ce.txt" 2>/dev/null | tail -n 30
    ;;
esac
find "$W" -name '*.safetensors' -delete; find "$W" -name 'trace.json' -size +20M -delete
tar czf "$OUT/r.tgz" -C /tmp/dpw "$PART"
echo "done $(date -u)"
