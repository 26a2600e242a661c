#!/bin/sh
# one device call: PART=eq4|speed4|two; results tarred into $OUT/r.tgz
set -u
W=/tmp/dpw/$PART; rm -rf "$W"; mkdir -p "$W"
export NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader; gcc --version | head -n 1; nvcc --version | tail -n 2; git log --oneline -1 2>/dev/null; } > "$W/machine.txt" 2>&1
t0=$(date +%s)
make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu build/allreduce > "$W/build.log" 2>&1 || { echo BUILD FAILED; tail -n 30 "$W/build.log"; }
echo "build $(( $(date +%s) - t0 )) s"
tiny="train --model tiny --device cuda --seq 64 --steps 5 --warmup 1 --optim adamw --lr 1e-3"
case $PART in
eq4)
    for md in resident slide; do
        timeout 120 build/slidecheck $tiny --mode $md --dtype bf16 --batch 1 --gpus 4 --save "$W/smoke_$md" > "$W/smoke_$md.log" 2>&1
        echo "smoke $md: exit $?"; grep -h 'summed by\|^summary' "$W/smoke_$md.log" | cut -c1-200; tail -n 3 "$W/smoke_$md.log"
    done
    cmp "$W/smoke_resident/model.safetensors" "$W/smoke_slide/model.safetensors" && echo "smoke: slide == resident"
    t0=$(date +%s); timeout 150 make test-gpu STB_INCLUDE=build/stb > "$W/test_gpu.log" 2>&1; echo "test-gpu exit $? ($(( $(date +%s) - t0 )) s)"
    tail -n 2 "$W/test_gpu.log"
    t0=$(date +%s); GPUS=4 EQUAL_ONLY=1 timeout 330 sh bench/gpu_dp_checks.sh "$W/eq4" > "$W/eq4.txt" 2>&1
    echo "eq4 exit $? ($(( $(date +%s) - t0 )) s)"; cat "$W/eq4.txt"
    ;;
speed4)
    GPUS=4 SPEED_ONLY=1 SLIDE=0 TWO_NODE=0 ALLREDUCE=0 DDP=0 timeout 420 sh bench/gpu_dp_checks.sh "$W/sp4" > "$W/sp4.txt" 2>&1
    echo "sp4 exit $?"; cat "$W/sp4.txt"
    big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 10 --warmup 2"
    for i in 2 3; do
        timeout 60 build/slidecheck $big --gpus 4 > "$W/sp4/speed2_$i.log" 2>&1
        timeout 60 build/slidecheck $big --gpus 4 --dp-sums nccl > "$W/sp4/speed2n_$i.log" 2>&1
    done
    grep -H '^summary' "$W"/sp4/speed*.log | cut -c1-400
    ;;
two)
    export CUDA_VISIBLE_DEVICES=0,1
    GPUS=2 EQUAL_ONLY=1 timeout 360 sh bench/gpu_dp_checks.sh "$W/eq2" > "$W/eq2.txt" 2>&1
    echo "eq2 exit $?"; cat "$W/eq2.txt"
    big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 10 --warmup 2"
    mkdir -p "$W/sp2"
    timeout 60 build/slidecheck $big > "$W/sp2/speed1.log" 2>&1
    for i in 1 2; do
        timeout 60 build/slidecheck $big --gpus 2 > "$W/sp2/speed2_$i.log" 2>&1
        timeout 60 build/slidecheck $big --gpus 2 --dp-sums nccl > "$W/sp2/speed2n_$i.log" 2>&1
        timeout 60 build/slidecheck $big --gpus 2 --zero 1 > "$W/sp2/speedz_$i.log" 2>&1
    done
    grep -H '^summary' "$W"/sp2/speed*.log | cut -c1-400
    ;;
more)
    big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 10 --warmup 2"
    mkdir -p "$W/m"
    for i in 1 2; do
        timeout 50 build/slidecheck $big > "$W/m/speed1_$i.log" 2>&1
        timeout 50 build/slidecheck $big --gpus 4 > "$W/m/speed4_$i.log" 2>&1
        timeout 50 build/slidecheck $big --gpus 4 --dp-sums nccl > "$W/m/speed4n_$i.log" 2>&1
    done
    grep -H '^summary' "$W"/m/speed*.log | cut -c1-200
    sl="$big --mode slide --steps 6 --slide-cpu-threads 15"
    timeout 60 build/slidecheck $sl --gpus 4 > "$W/m/slide4.log" 2>&1
    timeout 60 build/slidecheck $sl --gpus 4 --dp-sums nccl > "$W/m/slide4n.log" 2>&1
    grep -H '^summary\|summed by' "$W"/m/slide*.log | cut -c1-200
    timeout 90 torchrun --nproc_per_node=4 bench/ddp_step.py --model qwen3-1.7b --seq 2048 --batch 4 > "$W/m/ddp.log" 2>&1
    grep -h '^pytorch-ddp' "$W/m/ddp.log" || tail -n 3 "$W/m/ddp.log"
    ;;
esac
find "$W" -name '*.safetensors' -delete; find "$W" -name 'trace.json' -size +20M -delete
tar czf "$OUT/r.tgz" -C /tmp/dpw "$PART"
