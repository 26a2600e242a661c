#!/bin/sh
# one device call on 4 GPUs: PART=eq|sc|fix. eq: 4-rank slide against 4-rank resident (the printed
# norms and the saved bytes; the split head over 4 ranks), dp_clip_check, then
# GPUS=4 EQUAL_ONLY=1 TWO_NODE=0 gpu_dp_checks.sh. sc: slide_dp_scaling.sh at 4 GPUs (each rank on
# its share of the cores, ZeRO-1, one GPU on all of them), then 4 ranks on the default threads.
# fix: after the embedding's summation order was made one for both modes: the 4-rank checks of eq
# (tiny) beside make test-gpu.
# A log written into $OUT/log.txt as it goes, results tarred into $OUT/r.tgz
set -u
W=/tmp/dpw/$PART; rm -rf "$W"; mkdir -p "$W"
L="$OUT/log.txt"; exec > "$L" 2>&1
export NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader; gcc --version | head -n 1; nvcc --version | tail -n 2; git log -1 --format=%h 2>/dev/null; git diff --stat 2>/dev/null | tail -n 1; nproc; } > "$W/machine.txt" 2>&1
cat "$W/machine.txt"
T0=$(date +%s)
make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu > "$W/build.log" 2>&1 || { echo BUILD FAILED; tail -n 30 "$W/build.log"; }
echo "build $(( $(date +%s) - T0 )) s"
NG=4
equal() { # CASES: NG-rank slide against NG-rank resident: the printed norms and the saved weights
    for cf in "$@"; do
        set -- $cf; mo=$1; dt=$2; sq=$3; mw=; [ $dt = bf16 ] && mw=--master-weights
        a="train --model $mo --device cuda --seq $sq --steps 4 --warmup 1 --optim adamw --lr 1e-3 --batch 2 --gpus $NG --dtype $dt $mw"
        for md in resident slide; do
            timeout 120 build/slidecheck $a --mode $md --save "$W/q_${md}_${mo}_$dt" > "$W/q_${md}_${mo}_$dt.log" 2>&1 || echo "$md $mo $dt: exit $?"
            grep '^step' "$W/q_${md}_${mo}_$dt.log" | sed 's/.* norm \([^ ]*\) .*/\1/' > "$W/norm_${md}_${mo}_$dt.txt"
        done
        [ -s "$W/norm_slide_${mo}_$dt.txt" ] && cmp -s "$W/norm_resident_${mo}_$dt.txt" "$W/norm_slide_${mo}_$dt.txt" && echo "$mo $dt: $NG-rank slide printed resident's norms: PASS" || echo "$mo $dt: $NG-rank slide norms differ: FAIL"
        cmp -s "$W/q_resident_${mo}_$dt/model.safetensors" "$W/q_slide_${mo}_$dt/model.safetensors" && echo "$mo $dt: $NG-rank slide saved resident's weights (bitwise): PASS" || echo "$mo $dt: $NG-rank slide weights differ: FAIL"
        rm -rf "$W/q_resident_${mo}_$dt" "$W/q_slide_${mo}_$dt"
    done
}
case $PART in
eq)
    equal "tiny fp32 128" "tiny bf16 128" "qwen2.5-0.5b bf16 128"
    echo "elapsed $(( $(date +%s) - T0 )) s"
    t0=$(date +%s); GPUS=$NG timeout 150 sh bench/dp_clip_check.sh "$W/clip" > "$W/clip.txt" 2>&1; echo "dp_clip_check exit $? ($(( $(date +%s) - t0 )) s)"; tail -n 8 "$W/clip.txt"
    left=$(( 575 - ($(date +%s) - T0) )); echo "left for eq4: $left s"
    t0=$(date +%s); GPUS=$NG EQUAL_ONLY=1 TWO_NODE=0 timeout $left sh bench/gpu_dp_checks.sh "$W/eq4" > "$W/eq4.txt" 2>&1
    echo "eq4 exit $? ($(( $(date +%s) - t0 )) s)"; cat "$W/eq4.txt"
    ;;
fix)
    equal "tiny fp32 128" "tiny bf16 128"
    echo "elapsed $(( $(date +%s) - T0 )) s"
    t0=$(date +%s); timeout 100 make test-gpu STB_INCLUDE=build/stb > "$W/test_gpu.log" 2>&1; echo "test-gpu exit $? ($(( $(date +%s) - t0 )) s)"
    tail -n 1 "$W/test_gpu.log"; grep -i 'FAIL' "$W/test_gpu.log" | head -n 10
    left=$(( 470 - ($(date +%s) - T0) )); echo "left for eq4: $left s"
    t0=$(date +%s); GPUS=$NG EQUAL_ONLY=1 TWO_NODE=0 timeout $left sh bench/gpu_dp_checks.sh "$W/eq4" > "$W/eq4.txt" 2>&1
    echo "eq4 exit $? ($(( $(date +%s) - t0 )) s)"; cat "$W/eq4.txt"
    ;;
sc)
    GPUS=$NG ROUNDS=1 ZERO=1 ALL=1 timeout 300 sh bench/slide_dp_scaling.sh "$W/sc" > "$W/sc.txt" 2>&1; echo "scaling exit $?"; cat "$W/sc.txt"
    echo "elapsed $(( $(date +%s) - T0 )) s"
    sl="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --mode slide --steps 8 --warmup 2"
    for x in 1 2; do
        [ $(( $(date +%s) - T0 )) -lt 480 ] || break
        timeout 80 build/slidecheck $sl --gpus $NG > "$W/many_default_$x.log" 2>&1 || echo "many_default_$x: exit $?"
        [ $(( $(date +%s) - T0 )) -lt 520 ] || break
        timeout 60 build/slidecheck $sl > "$W/one_default_$x.log" 2>&1 || echo "one_default_$x: exit $?"
    done
    grep -H '^summary' "$W"/*_default_*.log | cut -c1-160
    ;;
esac
find "$W" -name '*.safetensors' -delete; find "$W" -name 'trace.json' -size +20M -delete
tar czf "$OUT/r.tgz" -C /tmp/dpw "$PART"
echo "done $(date -u)"
