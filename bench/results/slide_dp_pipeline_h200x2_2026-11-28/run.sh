#!/bin/sh
# one device call: PART=q|h|p|eq. q: var_q/ holds a variant's slidecheck.h and demos/cli.c (the
# pipelining), built beside the tree with the tree's CUDA object; h and p: var_o/ the tree before
# its last change (the split head's rows; the head's rows in parts). Equality checks on the tree
# (q: on the variant), then 1.7B slide runs of both in turn. eq: make test-gpu and
# gpu_dp_checks.sh (with the two-node checks). A log written into $OUT/log.txt as it goes,
# results tarred into $OUT/r.tgz
set -u
W=/tmp/dpw/$PART; rm -rf "$W"; mkdir -p "$W"
L="$OUT/log.txt"; exec > "$L" 2>&1
export NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader; gcc --version | head -n 1; nvcc --version | tail -n 2; git diff --stat 2>/dev/null | tail -n 1; nproc; } > "$W/machine.txt" 2>&1
cat "$W/machine.txt"
t0=$(date +%s); T0=$t0
make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu > "$W/build.log" 2>&1 || { echo BUILD FAILED; tail -n 30 "$W/build.log"; }
echo "build $(( $(date +%s) - t0 )) s"
big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 10 --warmup 2"
variant() { # DIR: its CLI from DIR/slidecheck.h and DIR/demos/cli.c
    gcc -std=c11 -O3 -g -Wall -Wextra -Werror -fopenmp -DSLIDECHECK_CUDA -I/usr/local/cuda/include "$1/demos/cli.c" -o "$1/slidecheck" \
        build/slidecheck_cuda.o -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lcublasLt -lcublas -lcudart -lstdc++ -lm -pthread || echo "$1 BUILD FAILED"
}
equal() { # BIN CASES: 2-rank slide of BIN against 2-rank resident: the printed norms and the saved weights
    b=$1; shift
    for cf in "$@"; do
        set -- $cf; mo=$1; dt=$2; sq=$3; mw=; [ $dt = bf16 ] && mw=--master-weights
        a="train --model $mo --device cuda --seq $sq --steps 4 --warmup 1 --optim adamw --lr 1e-3 --batch 2 --gpus 2 --dtype $dt $mw"
        timeout 90 build/slidecheck $a --mode resident --save "$W/q_resident_${mo}_$dt" > "$W/q_resident_${mo}_$dt.log" 2>&1 || echo "resident $mo $dt: exit $?"
        timeout 90 $b/slidecheck $a --mode slide --save "$W/q_slide_${mo}_$dt" > "$W/q_slide_${mo}_$dt.log" 2>&1 || echo "slide $mo $dt: exit $?"
        grep '^step' "$W/q_resident_${mo}_$dt.log" | sed 's/.* norm \([^ ]*\) .*/\1/' > "$W/norm_resident_${mo}_$dt.txt"
        grep '^step' "$W/q_slide_${mo}_$dt.log" | sed 's/.* norm \([^ ]*\) .*/\1/' > "$W/norm_slide_${mo}_$dt.txt"
        [ -s "$W/norm_slide_${mo}_$dt.txt" ] && cmp -s "$W/norm_resident_${mo}_$dt.txt" "$W/norm_slide_${mo}_$dt.txt" && echo "$mo $dt: 2-rank slide printed resident's norms: PASS" || echo "$mo $dt: 2-rank slide norms differ: FAIL"
        cmp -s "$W/q_resident_${mo}_$dt/model.safetensors" "$W/q_slide_${mo}_$dt/model.safetensors" && echo "$mo $dt: 2-rank slide saved resident's weights (bitwise): PASS" || echo "$mo $dt: 2-rank slide weights differ: FAIL"
        rm -rf "$W/q_resident_${mo}_$dt" "$W/q_slide_${mo}_$dt"
    done
    t0=$(date +%s); BIN=$b timeout 120 sh bench/dp_clip_check.sh "$W/clip" > "$W/clip.txt" 2>&1; echo "dp_clip_check ($b) exit $? ($(( $(date +%s) - t0 )) s)"; tail -n 8 "$W/clip.txt"
}
same() { # REF RUN...: the 1.7B runs printed REF's losses and norms
    r=$1; shift
    grep '^step' "$W/n/$r.log" | sed 's/.* loss \([^ ]*\) .* norm \([^ ]*\) .*/\1 \2/' > "$W/n/$r.ln"
    for x in "$@"; do
        [ -f "$W/n/$x.log" ] || continue
        grep '^step' "$W/n/$x.log" | sed 's/.* loss \([^ ]*\) .* norm \([^ ]*\) .*/\1 \2/' > "$W/n/$x.ln"
        [ -s "$W/n/$r.ln" ] && cmp -s "$W/n/$r.ln" "$W/n/$x.ln" && echo "1.7B: $x printed the losses and norms of $r: PASS" || echo "1.7B: $x losses or norms differ from $r: FAIL"
    done
}
mkdir -p "$W/n"
case $PART in
q)
    variant var_q
    equal var_q "tiny fp32 64" "tiny bf16 64"
    sl="$big --mode slide --steps 8 --slide-cpu-threads 15"
    timeout 90 build/slidecheck $sl --out "$W/n/s1" > "$W/n/s1.log" 2>&1
    timeout 120 build/slidecheck $sl --gpus 2 --out "$W/n/s2" > "$W/n/s2.log" 2>&1
    timeout 120 var_q/slidecheck $sl --gpus 2 --out "$W/n/s2q" > "$W/n/s2q.log" 2>&1
    [ $(( $(date +%s) - T0 )) -lt 400 ] && timeout 120 var_q/slidecheck $sl --gpus 2 --out "$W/n/s2qb" > "$W/n/s2qb.log" 2>&1
    [ $(( $(date +%s) - T0 )) -lt 450 ] && timeout 120 build/slidecheck $sl --gpus 2 --out "$W/n/s2b" > "$W/n/s2b.log" 2>&1
    [ $(( $(date +%s) - T0 )) -lt 500 ] && timeout 90 build/slidecheck $sl --out "$W/n/s1b" > "$W/n/s1b.log" 2>&1
    grep -H '^summary' "$W"/n/*.log | cut -c1-160
    for x in s2 s2q s2qb s2b; do [ -f "$W/n/$x/trace.json" ] || continue; echo "$x:"; python3 bench/dp_hidden.py "$W/n/s1.log" "$W/n/$x.log" "$W/n/$x/trace.json" "$W/n/s1/trace.json" > "$W/n/$x.hidden.txt" 2>&1; head -n 3 "$W/n/$x.hidden.txt"; done
    ;;
h)
    variant var_o
    equal build "tiny fp32 128" "tiny bf16 128" "qwen2.5-0.5b bf16 128"
    sl="$big --mode slide --steps 8 --slide-cpu-threads 15"
    timeout 90 build/slidecheck $sl --out "$W/n/s1" > "$W/n/s1.log" 2>&1
    timeout 120 build/slidecheck $sl --gpus 2 --out "$W/n/s2" > "$W/n/s2.log" 2>&1
    timeout 120 var_o/slidecheck $sl --gpus 2 --out "$W/n/s2o" > "$W/n/s2o.log" 2>&1
    echo "elapsed $(( $(date +%s) - T0 )) s"
    [ $(( $(date +%s) - T0 )) -lt 430 ] && timeout 120 build/slidecheck $sl --gpus 2 --out "$W/n/s2b" > "$W/n/s2b.log" 2>&1
    [ $(( $(date +%s) - T0 )) -lt 490 ] && timeout 90 build/slidecheck $sl --out "$W/n/s1b" > "$W/n/s1b.log" 2>&1
    same s2 s2o s2b
    grep -H '^summary' "$W"/n/*.log | cut -c1-160
    grep -H '^summary' "$W"/n/*.log | sed 's/:.*\(d2h [0-9.]* GB\/step\).*/ \1/'
    for x in s2 s2o s2b; do [ -f "$W/n/$x/trace.json" ] || continue; echo "$x:"; python3 bench/dp_hidden.py "$W/n/s1.log" "$W/n/$x.log" "$W/n/$x/trace.json" "$W/n/s1/trace.json" > "$W/n/$x.hidden.txt" 2>&1; head -n 3 "$W/n/$x.hidden.txt"; done
    ;;
p)
    variant var_o
    equal build "tiny fp32 128" "tiny bf16 128" "qwen2.5-0.5b bf16 128"
    t0=$(date +%s); timeout 150 make test-gpu STB_INCLUDE=build/stb > "$W/test_gpu.log" 2>&1; echo "test-gpu exit $? ($(( $(date +%s) - t0 )) s)"
    tail -n 1 "$W/test_gpu.log"; grep -i 'FAIL' "$W/test_gpu.log" | head -n 10
    # the 2-GPU step of the tree and of var_o, each rank on 15 of the 32 cores; one GPU on 31 (the
    # default) and on 15; without traces
    sl="$big --mode slide --steps 8"
    i=0
    for x in one31 many many_o one15 many many_o one31; do
        [ $(( $(date +%s) - T0 )) -lt 400 ] || break
        i=$((i + 1))
        case $x in
        one31) timeout 60 build/slidecheck $sl > "$W/n/${i}_$x.log" 2>&1 ;;
        one15) timeout 60 build/slidecheck $sl --slide-cpu-threads 15 > "$W/n/${i}_$x.log" 2>&1 ;;
        many) timeout 70 build/slidecheck $sl --gpus 2 --slide-cpu-threads 15 > "$W/n/${i}_$x.log" 2>&1 ;;
        many_o) timeout 70 var_o/slidecheck $sl --gpus 2 --slide-cpu-threads 15 > "$W/n/${i}_$x.log" 2>&1 ;;
        esac
    done
    grep -H '^summary' "$W"/n/*.log | cut -c1-150
    same 2_many 3_many_o 5_many 6_many_o
    echo "elapsed $(( $(date +%s) - T0 )) s"
    ;;
eq)
    t0=$(date +%s); timeout 150 make test-gpu STB_INCLUDE=build/stb > "$W/test_gpu.log" 2>&1; echo "test-gpu exit $? ($(( $(date +%s) - t0 )) s)"
    tail -n 1 "$W/test_gpu.log"; grep -i 'FAIL' "$W/test_gpu.log" | head -n 10
    left=$(( 570 - ($(date +%s) - T0) ))
    echo "left for eq2: $left s"
    t0=$(date +%s); GPUS=2 EQUAL_ONLY=1 TWO_NODE=${TWO_NODE:-1} timeout $left sh bench/gpu_dp_checks.sh "$W/eq2" > "$W/eq2.txt" 2>&1
    echo "eq2 exit $? ($(( $(date +%s) - t0 )) s)"; cat "$W/eq2.txt"
    ;;
esac
find "$W" -name '*.safetensors' -delete; find "$W" -name 'trace.json' -size +20M -delete
tar czf "$OUT/r.tgz" -C /tmp/dpw "$PART"
echo "done $(date -u)"
