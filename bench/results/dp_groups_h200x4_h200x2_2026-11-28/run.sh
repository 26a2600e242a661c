#!/bin/sh
# one device call: PART=eq4|speed4|two; a log written into $OUT/log.txt as it goes, results tarred into $OUT/r.tgz
set -u
W=/tmp/dpw/$PART; rm -rf "$W"; mkdir -p "$W"
L="$OUT/log.txt"; exec > "$L" 2>&1
export NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader; gcc --version | head -n 1; nvcc --version | tail -n 2; git log --oneline -1 2>/dev/null; git diff --stat 2>/dev/null | tail -n 1; } > "$W/machine.txt" 2>&1
cat "$W/machine.txt"
t0=$(date +%s)
T="build/slidecheck build/test_gpu build/allreduce"; [ "$PART" = ab2 ] && T=build/slidecheck
if [ "$PART" = ab2 ]; then # the CLI with the layers' groups as before (closed at the cap and at layer 1 only)
    mkdir -p build/old/demos "$W/ab"; cp demos/cli.c build/old/demos/; sed 's/if (l > 1 \&\& k < l \&\& /if (l > 1 \&\& /' slidecheck.h > build/old/slidecheck.h
    grep -c 'if (l > 1 && (double)n' build/old/slidecheck.h
    gcc -std=c11 -O3 -g -Wall -Wextra -Werror -fopenmp -DSLIDECHECK_CUDA -I/usr/local/cuda/include -c build/old/demos/cli.c -o build/old/cli.o &
fi
make -j16 STB_INCLUDE=build/stb $T > "$W/build.log" 2>&1 || { echo BUILD FAILED; tail -n 30 "$W/build.log"; }
echo "build $(( $(date +%s) - t0 )) s"
tiny="train --model tiny --device cuda --seq 64 --steps 5 --warmup 1 --optim adamw --lr 1e-3"
big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 10 --warmup 2"
case $PART in
eq4)
    for md in resident slide; do
        timeout 120 build/slidecheck $tiny --mode $md --dtype bf16 --batch 1 --gpus 4 --save "$W/smoke_$md" > "$W/smoke_$md.log" 2>&1
        echo "smoke $md: exit $?"; grep -h 'summed by\|^summary' "$W/smoke_$md.log" | cut -c1-200; tail -n 3 "$W/smoke_$md.log"
    done
    cmp "$W/smoke_resident/model.safetensors" "$W/smoke_slide/model.safetensors" && echo "smoke: slide == resident"
    t0=$(date +%s); GPUS=4 EQUAL_ONLY=1 timeout 330 sh bench/gpu_dp_checks.sh "$W/eq4" > "$W/eq4.txt" 2>&1
    echo "eq4 exit $? ($(( $(date +%s) - t0 )) s)"; cat "$W/eq4.txt"
    ;;
speed4)
    GPUS=4 SPEED_ONLY=1 SLIDE=0 TWO_NODE=0 ALLREDUCE=0 DDP=0 timeout 330 sh bench/gpu_dp_checks.sh "$W/sp4" > "$W/sp4.txt" 2>&1
    echo "sp4 exit $?"; cat "$W/sp4.txt"
    for i in 2 3; do
        timeout 50 build/slidecheck $big > "$W/sp4/speed1_$i.log" 2>&1
        timeout 50 build/slidecheck $big --gpus 4 > "$W/sp4/speed2_$i.log" 2>&1
        timeout 50 build/slidecheck $big --gpus 4 --dp-sums nccl > "$W/sp4/speed2n_$i.log" 2>&1
    done
    grep -H '^summary' "$W"/sp4/speed*.log | cut -c1-200
    ;;
two)
    export CUDA_VISIBLE_DEVICES=0,1
    t0=$(date +%s); timeout 150 make test-gpu STB_INCLUDE=build/stb > "$W/test_gpu.log" 2>&1; echo "test-gpu exit $? ($(( $(date +%s) - t0 )) s)"
    tail -n 2 "$W/test_gpu.log"
    t0=$(date +%s); GPUS=2 EQUAL_ONLY=1 TWO_NODE=0 timeout 250 sh bench/gpu_dp_checks.sh "$W/eq2" > "$W/eq2.txt" 2>&1
    echo "eq2 exit $? ($(( $(date +%s) - t0 )) s)"; cat "$W/eq2.txt"
    mkdir -p "$W/sp2"
    for i in 1 2; do
        timeout 45 build/slidecheck $big > "$W/sp2/speed1_$i.log" 2>&1
        timeout 45 build/slidecheck $big --gpus 2 > "$W/sp2/speed2_$i.log" 2>&1
        timeout 45 build/slidecheck $big --gpus 2 --dp-sums nccl > "$W/sp2/speed2n_$i.log" 2>&1
    done
    timeout 45 build/slidecheck $big --gpus 2 --zero 1 > "$W/sp2/speedz.log" 2>&1
    grep -H '^summary' "$W"/sp2/speed*.log | cut -c1-200
    ;;
fix)
    for g in 4 2; do for dt in fp32 bf16; do
        for b in 640 0; do
            timeout 60 build/slidecheck $tiny --dtype $dt --batch 1 --gpus $g --bucket-mb $b --save "$W/t${g}_${dt}_$b" > "$W/t${g}_${dt}_$b.log" 2>&1 || echo "tiny $g $dt $b: exit $?"
        done
        cmp "$W/t${g}_${dt}_640/model.safetensors" "$W/t${g}_${dt}_0/model.safetensors" && echo "$g ranks $dt: the default groups saved one sum a layer's bytes: PASS" || echo "$g ranks $dt: FAIL"
    done; done
    GPUS=4 SPEED_ONLY=1 SLIDE=0 TWO_NODE=0 ALLREDUCE=0 DDP=0 timeout 200 sh bench/gpu_dp_checks.sh "$W/sp4" > "$W/sp4.txt" 2>&1
    echo "sp4 exit $?"; cat "$W/sp4.txt"
    for i in 2 3; do
        timeout 40 build/slidecheck $big > "$W/sp4/speed1_$i.log" 2>&1
        timeout 40 build/slidecheck $big --gpus 4 > "$W/sp4/speed2_$i.log" 2>&1
        timeout 40 build/slidecheck $big --gpus 4 --dp-sums nccl > "$W/sp4/speed2n_$i.log" 2>&1
    done
    grep -H '^summary' "$W"/sp4/speed*.log | cut -c1-120
    GPUS=2 SPEED_ONLY=1 SLIDE=0 TWO_NODE=0 ALLREDUCE=0 DDP=0 timeout 160 sh bench/gpu_dp_checks.sh "$W/sp2" > "$W/sp2.txt" 2>&1
    echo "sp2 exit $?"; cat "$W/sp2.txt"
    timeout 40 build/slidecheck $big > "$W/sp2/speed1_2.log" 2>&1
    timeout 40 build/slidecheck $big --gpus 2 > "$W/sp2/speed2_2.log" 2>&1
    timeout 40 build/slidecheck $big --gpus 2 --dp-sums nccl > "$W/sp2/speed2n_2.log" 2>&1
    grep -H '^summary' "$W"/sp2/speed*.log | cut -c1-120
    ;;
ab2)
    # the layers' groups as before (closed at the cap and at layer 1 only), beside the default's
    wait; gcc -fopenmp build/old/cli.o -o build/old/slidecheck build/slidecheck_cuda.o -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lcublasLt -lcublas -lcudart -lstdc++ -lm -pthread || echo OLD BUILD FAILED
    for i in 1 2; do
        timeout 40 build/slidecheck $big > "$W/ab/one_$i.log" 2>&1; grep -h '^summary' "$W/ab/one_$i.log" | cut -c1-90
        for j in 1 2; do
            timeout 40 build/slidecheck $big --gpus 2 > "$W/ab/new_${i}_$j.log" 2>&1; grep -h '^summary' "$W/ab/new_${i}_$j.log" | cut -c1-90
            timeout 40 build/old/slidecheck $big --gpus 2 > "$W/ab/old_${i}_$j.log" 2>&1; grep -h '^summary' "$W/ab/old_${i}_$j.log" | cut -c1-90
        done
    done
    ;;
esac
find "$W" -name '*.safetensors' -delete; find "$W" -name 'trace.json' -size +20M -delete
tar czf "$OUT/r.tgz" -C /tmp/dpw "$PART"
echo "done $(date -u)"
