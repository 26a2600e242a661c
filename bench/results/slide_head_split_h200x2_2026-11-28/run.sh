#!/bin/sh
# one device call: PART=ab|eq|ab2|ab3 (ab: var_a/ holds the CLI of an older tree; ab2: var_h/ and var_p/ two
# variants; ab3: var_o/ the tree before its last change; each built beside the tree from its slidecheck.h and demos/cli.c with the tree's CUDA object);
# a log written into $OUT/log.txt as it goes, results tarred into $OUT/r.tgz
set -u
W=/tmp/dpw/$PART; rm -rf "$W"; mkdir -p "$W"
L="$OUT/log.txt"; exec > "$L" 2>&1
export NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader; gcc --version | head -n 1; nvcc --version | tail -n 2; git log --oneline -1 2>/dev/null; git diff --stat 2>/dev/null | tail -n 1; } > "$W/machine.txt" 2>&1
cat "$W/machine.txt"
t0=$(date +%s); T0=$t0
make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu > "$W/build.log" 2>&1 || { echo BUILD FAILED; tail -n 30 "$W/build.log"; }
echo "build $(( $(date +%s) - t0 )) s"
big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 10 --warmup 2"
case $PART in
ab)
    gcc -std=c11 -O3 -g -Wall -Wextra -Werror -fopenmp -DSLIDECHECK_CUDA -I/usr/local/cuda/include var_a/demos/cli.c -o var_a/slidecheck \
        build/slidecheck_cuda.o -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lcublasLt -lcublas -lcudart -lstdc++ -lm -pthread || echo "var_a BUILD FAILED"
    # 2-rank slide against 2-rank resident, tiny: the printed norms and the saved weights (fp32; bf16 with master weights)
    tn="train --model tiny --device cuda --seq 64 --steps 6 --warmup 1 --optim adamw --lr 1e-3 --batch 2 --gpus 2"
    for dt in fp32 bf16; do
        mw=; [ $dt = bf16 ] && mw=--master-weights
        for md in resident slide; do timeout 60 build/slidecheck $tn --dtype $dt $mw --mode $md --save "$W/q_${md}_$dt" > "$W/q_${md}_$dt.log" 2>&1 || echo "$md $dt: exit $?"; done
        grep '^step' "$W/q_resident_$dt.log" | sed 's/.* norm \([^ ]*\) .*/\1/' > "$W/norm_resident_$dt.txt"
        grep '^step' "$W/q_slide_$dt.log" | sed 's/.* norm \([^ ]*\) .*/\1/' > "$W/norm_slide_$dt.txt"
        [ -s "$W/norm_slide_$dt.txt" ] && cmp -s "$W/norm_resident_$dt.txt" "$W/norm_slide_$dt.txt" && echo "$dt: 2-rank slide printed resident's norms: PASS" || echo "$dt: 2-rank slide norms differ: FAIL"
        cmp -s "$W/q_resident_$dt/model.safetensors" "$W/q_slide_$dt/model.safetensors" && echo "$dt: 2-rank slide saved resident's weights (bitwise): PASS" || echo "$dt: 2-rank slide weights differ: FAIL"
    done
    t0=$(date +%s); timeout 120 sh bench/dp_clip_check.sh "$W/clip" > "$W/clip.txt" 2>&1; echo "dp_clip_check exit $? ($(( $(date +%s) - t0 )) s)"; tail -n 8 "$W/clip.txt"
    sl="$big --mode slide --steps 8 --slide-cpu-threads 15"
    mkdir -p "$W/n"
    timeout 90 build/slidecheck $sl --out "$W/n/s1" > "$W/n/s1.log" 2>&1
    timeout 120 build/slidecheck $sl --gpus 2 --out "$W/n/s2" > "$W/n/s2.log" 2>&1
    timeout 120 var_a/slidecheck $sl --gpus 2 --out "$W/n/s2a" > "$W/n/s2a.log" 2>&1
    timeout 120 build/slidecheck $sl --gpus 2 --zero 1 --out "$W/n/s2z" > "$W/n/s2z.log" 2>&1
    echo "elapsed $(( $(date +%s) - T0 )) s"
    if [ $(( $(date +%s) - T0 )) -lt 430 ]; then
        timeout 90 build/slidecheck $sl --out "$W/n/s1b" > "$W/n/s1b.log" 2>&1
        timeout 120 build/slidecheck $sl --gpus 2 --out "$W/n/s2b" > "$W/n/s2b.log" 2>&1
    fi
    grep -H '^summary' "$W"/n/*.log | cut -c1-160
    grep -H 'host-opt params' "$W"/n/*.log | sed 's/.*\(host-opt params [0-9]*\).*/\1/' | head -n 8
    for x in s2 s2a s2z s2b; do [ -f "$W/n/$x/trace.json" ] || continue; echo "$x:"; python3 bench/dp_hidden.py "$W/n/s1.log" "$W/n/$x.log" "$W/n/$x/trace.json" "$W/n/s1/trace.json" > "$W/n/$x.hidden.txt" 2>&1; head -n 3 "$W/n/$x.hidden.txt"; done
    ;;
eq)
    t0=$(date +%s); timeout 150 make test-gpu STB_INCLUDE=build/stb > "$W/test_gpu.log" 2>&1; echo "test-gpu exit $? ($(( $(date +%s) - t0 )) s)"
    tail -n 1 "$W/test_gpu.log"; grep -i 'FAIL' "$W/test_gpu.log" | head -n 10
    left=$(( 570 - ($(date +%s) - T0) ))
    echo "left for eq2: $left s"
    t0=$(date +%s); GPUS=2 EQUAL_ONLY=1 TWO_NODE=0 timeout $left sh bench/gpu_dp_checks.sh "$W/eq2" > "$W/eq2.txt" 2>&1
    echo "eq2 exit $? ($(( $(date +%s) - t0 )) s)"; cat "$W/eq2.txt"
    ;;
ab2)
    for v in var_h var_p; do
        gcc -std=c11 -O3 -g -Wall -Wextra -Werror -fopenmp -DSLIDECHECK_CUDA -I/usr/local/cuda/include $v/demos/cli.c -o $v/slidecheck \
            build/slidecheck_cuda.o -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lcublasLt -lcublas -lcudart -lstdc++ -lm -pthread || echo "$v BUILD FAILED"
    done
    tn="train --model tiny --device cuda --seq 64 --steps 6 --warmup 1 --optim adamw --lr 1e-3 --batch 2 --gpus 2"
    for b in build var_p; do for dt in fp32 bf16; do
        mw=; [ $dt = bf16 ] && mw=--master-weights
        timeout 60 $b/slidecheck $tn --dtype $dt $mw --mode resident --save "$W/q_resident_$dt" > "$W/q_resident_$dt.log" 2>&1 || echo "resident $dt: exit $?"
        timeout 60 $b/slidecheck $tn --dtype $dt $mw --mode slide --save "$W/q_slide_$dt" > "$W/q_slide_$dt.log" 2>&1 || echo "$b slide $dt: exit $?"
        grep '^step' "$W/q_resident_$dt.log" | sed 's/.* norm \([^ ]*\) .*/\1/' > "$W/norm_resident_$dt.txt"
        grep '^step' "$W/q_slide_$dt.log" | sed 's/.* norm \([^ ]*\) .*/\1/' > "$W/norm_slide_${b}_$dt.txt"
        [ -s "$W/norm_slide_${b}_$dt.txt" ] && cmp -s "$W/norm_resident_$dt.txt" "$W/norm_slide_${b}_$dt.txt" && echo "$b $dt: 2-rank slide printed resident's norms: PASS" || echo "$b $dt: 2-rank slide norms differ: FAIL"
        cmp -s "$W/q_resident_$dt/model.safetensors" "$W/q_slide_$dt/model.safetensors" && echo "$b $dt: 2-rank slide saved resident's weights (bitwise): PASS" || echo "$b $dt: 2-rank slide weights differ: FAIL"
    done; done
    t0=$(date +%s); timeout 120 sh bench/dp_clip_check.sh "$W/clip" > "$W/clip.txt" 2>&1; echo "dp_clip_check exit $? ($(( $(date +%s) - t0 )) s)"; tail -n 8 "$W/clip.txt"
    sl="$big --mode slide --steps 8 --slide-cpu-threads 15"
    mkdir -p "$W/n"
    timeout 90 build/slidecheck $sl --out "$W/n/s1" > "$W/n/s1.log" 2>&1
    timeout 120 build/slidecheck $sl --gpus 2 --out "$W/n/s2" > "$W/n/s2.log" 2>&1
    timeout 120 var_h/slidecheck $sl --gpus 2 --out "$W/n/s2h" > "$W/n/s2h.log" 2>&1
    timeout 120 var_p/slidecheck $sl --gpus 2 --out "$W/n/s2p" > "$W/n/s2p.log" 2>&1
    echo "elapsed $(( $(date +%s) - T0 )) s"
    if [ $(( $(date +%s) - T0 )) -lt 400 ]; then
        timeout 120 var_p/slidecheck $sl --gpus 2 --out "$W/n/s2pb" > "$W/n/s2pb.log" 2>&1
        timeout 120 build/slidecheck $sl --gpus 2 --out "$W/n/s2b" > "$W/n/s2b.log" 2>&1
    fi
    [ $(( $(date +%s) - T0 )) -lt 500 ] && timeout 90 build/slidecheck $sl --out "$W/n/s1b" > "$W/n/s1b.log" 2>&1
    grep -H '^summary' "$W"/n/*.log | cut -c1-160
    grep -H 'host-opt params' "$W"/n/*.log | sed 's/:.*\(host-opt params [0-9]*\).*/ \1/' | head -n 8
    for x in s2 s2h s2p s2pb s2b; do [ -f "$W/n/$x/trace.json" ] || continue; echo "$x:"; python3 bench/dp_hidden.py "$W/n/s1.log" "$W/n/$x.log" "$W/n/$x/trace.json" "$W/n/s1/trace.json" > "$W/n/$x.hidden.txt" 2>&1; head -n 3 "$W/n/$x.hidden.txt"; done
    ;;
ab3)
    gcc -std=c11 -O3 -g -Wall -Wextra -Werror -fopenmp -DSLIDECHECK_CUDA -I/usr/local/cuda/include var_o/demos/cli.c -o var_o/slidecheck \
        build/slidecheck_cuda.o -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lcublasLt -lcublas -lcudart -lstdc++ -lm -pthread || echo "var_o BUILD FAILED"
    tn="train --model tiny --device cuda --seq 64 --steps 6 --warmup 1 --optim adamw --lr 1e-3 --batch 2 --gpus 2"
    for dt in fp32 bf16; do
        mw=; [ $dt = bf16 ] && mw=--master-weights
        for md in resident slide; do timeout 60 build/slidecheck $tn --dtype $dt $mw --mode $md --save "$W/q_${md}_$dt" > "$W/q_${md}_$dt.log" 2>&1 || echo "$md $dt: exit $?"; done
        grep '^step' "$W/q_resident_$dt.log" | sed 's/.* norm \([^ ]*\) .*/\1/' > "$W/norm_resident_$dt.txt"
        grep '^step' "$W/q_slide_$dt.log" | sed 's/.* norm \([^ ]*\) .*/\1/' > "$W/norm_slide_$dt.txt"
        [ -s "$W/norm_slide_$dt.txt" ] && cmp -s "$W/norm_resident_$dt.txt" "$W/norm_slide_$dt.txt" && echo "$dt: 2-rank slide printed resident's norms: PASS" || echo "$dt: 2-rank slide norms differ: FAIL"
        cmp -s "$W/q_resident_$dt/model.safetensors" "$W/q_slide_$dt/model.safetensors" && echo "$dt: 2-rank slide saved resident's weights (bitwise): PASS" || echo "$dt: 2-rank slide weights differ: FAIL"
    done
    t0=$(date +%s); timeout 120 sh bench/dp_clip_check.sh "$W/clip" > "$W/clip.txt" 2>&1; echo "dp_clip_check exit $? ($(( $(date +%s) - t0 )) s)"; tail -n 8 "$W/clip.txt"
    sl="$big --mode slide --steps 8 --slide-cpu-threads 15"
    mkdir -p "$W/n"
    timeout 90 build/slidecheck $sl --out "$W/n/s1" > "$W/n/s1.log" 2>&1
    timeout 120 build/slidecheck $sl --gpus 2 --out "$W/n/s2" > "$W/n/s2.log" 2>&1
    timeout 120 var_o/slidecheck $sl --gpus 2 --out "$W/n/s2o" > "$W/n/s2o.log" 2>&1
    timeout 120 build/slidecheck $sl --gpus 2 --out "$W/n/s2b" > "$W/n/s2b.log" 2>&1
    echo "elapsed $(( $(date +%s) - T0 )) s"
    [ $(( $(date +%s) - T0 )) -lt 380 ] && timeout 120 build/slidecheck $sl --gpus 2 --zero 1 --out "$W/n/s2z" > "$W/n/s2z.log" 2>&1
    [ $(( $(date +%s) - T0 )) -lt 440 ] && timeout 90 build/slidecheck $sl --out "$W/n/s1b" > "$W/n/s1b.log" 2>&1
    grep -H '^summary' "$W"/n/*.log | cut -c1-160
    for x in s2 s2o s2b s2z; do [ -f "$W/n/$x/trace.json" ] || continue; echo "$x:"; python3 bench/dp_hidden.py "$W/n/s1.log" "$W/n/$x.log" "$W/n/$x/trace.json" "$W/n/s1/trace.json" > "$W/n/$x.hidden.txt" 2>&1; head -n 3 "$W/n/$x.hidden.txt"; done
    left=$(( 560 - ($(date +%s) - T0) ))
    if [ $left -gt 70 ]; then t0=$(date +%s); timeout $left make test-gpu STB_INCLUDE=build/stb > "$W/test_gpu.log" 2>&1; echo "test-gpu exit $? ($(( $(date +%s) - t0 )) s)"; tail -n 1 "$W/test_gpu.log"; grep -i 'FAIL' "$W/test_gpu.log" | head -n 10; fi
    ;;
esac
find "$W" -name '*.safetensors' -delete; find "$W" -name 'trace.json' -size +20M -delete
tar czf "$OUT/r.tgz" -C /tmp/dpw "$PART"
echo "done $(date -u)"
