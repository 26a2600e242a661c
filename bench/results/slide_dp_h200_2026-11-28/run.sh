#!/bin/sh
# one device call: PART=slide|ab1|ab3|ab4 (ab3, ab4: var_a/ and var_b/ hold the CLIs of older trees, built
# beside the tree; see README.md); a log written into $OUT/log.txt as it goes, results tarred into $OUT/r.tgz
set -u
W=/tmp/dpw/$PART; rm -rf "$W"; mkdir -p "$W"
L="$OUT/log.txt"; exec > "$L" 2>&1
export NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader; gcc --version | head -n 1; nvcc --version | tail -n 2; git log --oneline -1 2>/dev/null; git diff --stat 2>/dev/null | tail -n 1; } > "$W/machine.txt" 2>&1
cat "$W/machine.txt"
t0=$(date +%s); T0=$t0
T="build/slidecheck build/test_gpu"; [ "$PART" = ab3 ] && T="build/slidecheck build/test_gpu build/cpu_optim"
case $PART in ab3|ab4) true;; *) false;; esac && { /usr/local/cuda/bin/nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Xcompiler -Wall,-Wextra,-Werror,-fPIC -Ivar_a -c var_a/slidecheck_cuda.cu -o var_a/sc_cuda.o > "$W/build_a.log" 2>&1 & }
make -j16 STB_INCLUDE=build/stb $T > "$W/build.log" 2>&1 || { echo BUILD FAILED; tail -n 30 "$W/build.log"; }
echo "build $(( $(date +%s) - t0 )) s"
big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 10 --warmup 2"
case $PART in
slide)
    t0=$(date +%s); GPUS=2 SPEED_ONLY=1 RESIDENT=0 DDP=0 TWO_NODE=0 ALLREDUCE=0 timeout 300 sh bench/gpu_dp_checks.sh "$W/sp2" > "$W/sp2.txt" 2>&1
    echo "slide speed exit $? ($(( $(date +%s) - t0 )) s)"; cat "$W/sp2.txt"
    grep -h 'grad norm\|host AdamW' "$W"/sp2/slide*.log | head -n 12
    t0=$(date +%s); timeout 150 make test-gpu STB_INCLUDE=build/stb > "$W/test_gpu.log" 2>&1; echo "test-gpu exit $? ($(( $(date +%s) - t0 )) s)"
    tail -n 1 "$W/test_gpu.log"; grep -i 'FAIL' "$W/test_gpu.log" | head -n 10
    left=$(( 560 - ($(date +%s) - T0) ))
    echo "left for eq2: $left s"
    if [ $left -gt 60 ]; then
        t0=$(date +%s); GPUS=2 EQUAL_ONLY=1 TWO_NODE=0 timeout $left sh bench/gpu_dp_checks.sh "$W/eq2" > "$W/eq2.txt" 2>&1
        echo "eq2 exit $? ($(( $(date +%s) - t0 )) s)"; cat "$W/eq2.txt"
    fi
    ;;
ab1)
    gcc -std=c11 -O3 -g -Wall -Wextra -Werror -fopenmp -DSLIDECHECK_CUDA -I/usr/local/cuda/include var_old/demos/cli.c -o var_old/slidecheck \
        build/slidecheck_cuda.o -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lcublasLt -lcublas -lcudart -lstdc++ -lm -pthread || echo "var_old BUILD FAILED"
    { lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA)'; nproc; } > "$W/topo.txt" 2>&1; cat "$W/topo.txt"
    t0=$(date +%s); timeout 150 make test-gpu STB_INCLUDE=build/stb > "$W/test_gpu.log" 2>&1; echo "test-gpu exit $? ($(( $(date +%s) - t0 )) s)"
    tail -n 1 "$W/test_gpu.log"; grep -i 'FAIL' "$W/test_gpu.log" | head -n 10
    sl="$big --mode slide --steps 8 --slide-cpu-threads 15"
    mkdir -p "$W/n"
    for i in 1 2; do
        timeout 90 build/slidecheck $sl --out "$W/n/new$i" > "$W/n/new$i.log" 2>&1
        timeout 90 var_old/slidecheck $sl --out "$W/n/old$i" > "$W/n/old$i.log" 2>&1
    done
    grep -H '^summary' "$W"/n/*.log | cut -c1-140
    ;;
ab3)
    wait
    for v in var_a var_b; do
        gcc -std=c11 -O3 -g -Wall -Wextra -Werror -fopenmp -DSLIDECHECK_CUDA -I/usr/local/cuda/include $v/demos/cli.c -o $v/slidecheck \
            var_a/sc_cuda.o -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lcublasLt -lcublas -lcudart -lstdc++ -lm -pthread || echo "$v BUILD FAILED"
    done
    echo "variants built $(( $(date +%s) - T0 )) s"
    { lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA)'; nproc; } > "$W/topo.txt" 2>&1; cat "$W/topo.txt"
    t0=$(date +%s); timeout 150 make test-gpu STB_INCLUDE=build/stb > "$W/test_gpu.log" 2>&1; echo "test-gpu exit $? ($(( $(date +%s) - t0 )) s)"
    tail -n 1 "$W/test_gpu.log"; grep -i 'FAIL' "$W/test_gpu.log" | head -n 10
    t0=$(date +%s); timeout 120 sh bench/dp_clip_check.sh "$W/clip" > "$W/clip.txt" 2>&1; echo "dp_clip_check exit $? ($(( $(date +%s) - t0 )) s)"; tail -n 12 "$W/clip.txt"
    sl="$big --mode slide --steps 8 --slide-cpu-threads 15"
    mkdir -p "$W/n"
    timeout 90 build/slidecheck $sl --out "$W/n/s1" > "$W/n/s1.log" 2>&1
    timeout 120 build/slidecheck $sl --gpus 2 --out "$W/n/s2" > "$W/n/s2.log" 2>&1
    timeout 120 var_a/slidecheck $sl --gpus 2 --out "$W/n/s2a" > "$W/n/s2a.log" 2>&1
    timeout 120 var_b/slidecheck $sl --gpus 2 --out "$W/n/s2b" > "$W/n/s2b.log" 2>&1
    grep -H '^summary' "$W"/n/*.log | cut -c1-140
    for x in s2 s2a s2b; do echo "$x:"; python3 bench/dp_hidden.py "$W/n/s1.log" "$W/n/$x.log" "$W/n/$x/trace.json" "$W/n/s1/trace.json" | head -n 4; done
    # the host's AdamW alone and with a second process beside it (15 threads each, as the runs above)
    co="build/cpu_optim --n 200000000 --threads 15 --reps 5"
    $co > "$W/co_alone.txt" 2>&1
    $co > "$W/co_pair1.txt" 2>&1 & $co > "$W/co_pair2.txt" 2>&1; wait
    grep -H 'adamw p=f32 g=bf16 +wout   stream' "$W"/co_*.txt
    left=$(( 565 - ($(date +%s) - T0) ))
    echo "left for eq2: $left s"
    if [ $left -gt 170 ]; then
        t0=$(date +%s); GPUS=2 EQUAL_ONLY=1 TWO_NODE=0 timeout $left sh bench/gpu_dp_checks.sh "$W/eq2" > "$W/eq2.txt" 2>&1
        echo "eq2 exit $? ($(( $(date +%s) - t0 )) s)"; cat "$W/eq2.txt"
    fi
    ;;
ab4)
    wait
    gcc -std=c11 -O3 -g -Wall -Wextra -Werror -fopenmp -DSLIDECHECK_CUDA -I/usr/local/cuda/include var_a/demos/cli.c -o var_a/slidecheck \
        var_a/sc_cuda.o -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lcublasLt -lcublas -lcudart -lstdc++ -lm -pthread || echo "var_a BUILD FAILED"
    t0=$(date +%s); timeout 150 make test-gpu STB_INCLUDE=build/stb > "$W/test_gpu.log" 2>&1; echo "test-gpu exit $? ($(( $(date +%s) - t0 )) s)"
    tail -n 1 "$W/test_gpu.log"; grep -i 'FAIL' "$W/test_gpu.log" | head -n 10
    t0=$(date +%s); timeout 120 sh bench/dp_clip_check.sh "$W/clip" > "$W/clip.txt" 2>&1; echo "dp_clip_check exit $? ($(( $(date +%s) - t0 )) s)"; tail -n 8 "$W/clip.txt"
    # the printed norms of 2-rank slide (its chunk sums) against 2-rank resident (the GPU's norm kernel)
    tn="train --model tiny --device cuda --seq 64 --steps 6 --warmup 1 --optim adamw --lr 1e-3 --batch 2 --gpus 2 --dtype fp32"
    for md in resident slide; do timeout 60 build/slidecheck $tn --mode $md > "$W/norm_$md.log" 2>&1 || echo "norm $md: exit $?"; done
    grep '^step' "$W/norm_resident.log" | sed 's/.* norm \([^ ]*\) .*/\1/' > "$W/norm_resident.txt"
    grep '^step' "$W/norm_slide.log" | sed 's/.* norm \([^ ]*\) .*/\1/' > "$W/norm_slide.txt"
    paste "$W/norm_resident.txt" "$W/norm_slide.txt"
    [ -s "$W/norm_slide.txt" ] && cmp -s "$W/norm_resident.txt" "$W/norm_slide.txt" && echo "2-rank slide printed resident's norms: PASS" || echo "2-rank slide norms differ: FAIL"
    sl="$big --mode slide --steps 8 --slide-cpu-threads 15"
    mkdir -p "$W/n"
    timeout 90 build/slidecheck $sl --out "$W/n/s1" > "$W/n/s1.log" 2>&1
    timeout 120 build/slidecheck $sl --gpus 2 --out "$W/n/s2" > "$W/n/s2.log" 2>&1
    timeout 120 var_a/slidecheck $sl --gpus 2 --out "$W/n/s2a" > "$W/n/s2a.log" 2>&1
    echo "elapsed $(( $(date +%s) - T0 )) s"
    [ $(( $(date +%s) - T0 )) -lt 370 ] && timeout 120 build/slidecheck $sl --gpus 2 --zero 1 --out "$W/n/s2z" > "$W/n/s2z.log" 2>&1
    grep -H '^summary' "$W"/n/*.log | cut -c1-140
    for x in s2 s2a s2z; do [ -f "$W/n/$x/trace.json" ] || continue; echo "$x:"; python3 bench/dp_hidden.py "$W/n/s1.log" "$W/n/$x.log" "$W/n/$x/trace.json" "$W/n/s1/trace.json" > "$W/n/$x.hidden.txt" 2>&1; head -n 3 "$W/n/$x.hidden.txt"; done
    ;;
esac
find "$W" -name '*.safetensors' -delete; find "$W" -name 'trace.json' -size +20M -delete
tar czf "$OUT/r.tgz" -C /tmp/dpw "$PART"
echo "done $(date -u)"
