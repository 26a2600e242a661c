#!/bin/sh
# one device call: PART=eq|sc|k4|x2. After the host AdamW's start-up timing took turns across a host's
# processes and the embedding's summation order became one for both modes over NCCL:
#   eq (2 GPUs): 2-rank slide against 2-rank resident (norms, saved bytes), then
#      GPUS=2 EQUAL_ONLY=1 TWO_NODE=1 gpu_dp_checks.sh (its many-token checks at 2 ranks);
#   sc (2 GPUs): make test-gpu, then slide_dp_scaling.sh GPUS=2 ALL=1 (each run's start-up rates kept);
#   k4 (4 GPUs): the killed-rank checks at 4 ranks (graph and eager), then slide_dp_scaling.sh GPUS=4 ALL=1;
#   x2 (2 GPUs, another machine): resident 1 and 2 GPUs in turn (3 rounds), then as sc without make test-gpu.
# The log goes to $OUT/log.txt as it runs; results tarred into $OUT/r.tgz
set -u
W=/tmp/dpw/$PART; rm -rf "$W"; mkdir -p "$W"
L="$OUT/log.txt"; exec > "$L" 2>&1
export NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader; gcc --version | head -n 1; nvcc --version | tail -n 2; git log -1 --format=%h 2>/dev/null; git diff --stat 2>/dev/null | tail -n 1; nproc; } > "$W/machine.txt" 2>&1
cat "$W/machine.txt"
T0=$(date +%s)
make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu > "$W/build.log" 2>&1 || { echo BUILD FAILED; tail -n 30 "$W/build.log"; }
echo "build $(( $(date +%s) - T0 )) s"
NG=$(nvidia-smi -L | wc -l)
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
scaling() { # ROUNDS: slide_dp_scaling.sh on NG GPUs with the 1-GPU runs on all the cores too
    GPUS=$NG ROUNDS=$1 ALL=1 timeout "$2" sh bench/slide_dp_scaling.sh "$W/sc" > "$W/sc.txt" 2>&1; echo "scaling exit $?"; cat "$W/sc.txt"
    grep -H 'timed here' "$W"/sc/*.log | sed 's/.*sc\///' | cut -c1-220
}
killed() { # the last forked rank killed mid-run: rank 0 stops within the timeout, with a message
    tiny="train --model tiny --device cuda --seq 64 --optim adamw --lr 1e-3 --dtype bf16 --batch 1 --steps 1000000"
    for kg in auto off; do
        build/slidecheck $tiny --gpus $NG --rendezvous-timeout 15 --cuda-graph $kg > "$W/kill_$kg.log" 2>&1 &
        lp=$!; sleep 20
        rk=$(pgrep -P $lp | sort -n | tail -n 1); tk=$(date +%s)
        [ -n "$rk" ] && kill -9 "$rk"
        wait $lp; rck=$?; dtk=$(( $(date +%s) - tk ))
        if [ -n "$rk" ] && [ $rck -ne 0 ] && [ $dtk -le 45 ]; then
            echo "a killed rank $((NG - 1)) of $NG (--cuda-graph $kg): stopped after $dtk s, exit $rck: PASS ($(grep -m1 'slidecheck' "$W/kill_$kg.log" | cut -c1-200))"
        else echo "a killed rank $((NG - 1)) of $NG (--cuda-graph $kg): exit $rck after $dtk s (pid '$rk'): FAIL"; fi
    done
}
case $PART in
eq)
    equal "tiny fp32 128" "tiny bf16 128"
    echo "elapsed $(( $(date +%s) - T0 )) s"
    left=$(( 560 - ($(date +%s) - T0) )); echo "left for the checks: $left s"
    t0=$(date +%s); GPUS=$NG EQUAL_ONLY=1 TWO_NODE=1 timeout $left sh bench/gpu_dp_checks.sh "$W/eq2" > "$W/eq2.txt" 2>&1
    echo "gpu_dp_checks exit $? ($(( $(date +%s) - t0 )) s)"; cat "$W/eq2.txt"
    ;;
sc)
    t0=$(date +%s); timeout 230 make test-gpu STB_INCLUDE=build/stb > "$W/test_gpu.log" 2>&1; echo "test-gpu exit $? ($(( $(date +%s) - t0 )) s)"
    grep -E 'passed|FAIL' "$W/test_gpu.log" | tail -n 12
    left=$(( 570 - ($(date +%s) - T0) )); echo "left for scaling: $left s"
    scaling 3 $left
    ;;
k4)
    killed
    echo "elapsed $(( $(date +%s) - T0 )) s"
    left=$(( 570 - ($(date +%s) - T0) )); echo "left for scaling: $left s"
    scaling 2 $left
    ;;
x2)
    big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 10 --warmup 2"
    mkdir -p "$W/res"; r1=; r2=
    for x in 1 2 3; do
        for side in $([ $x = 2 ] && echo "many one" || echo "one many"); do
            g=; [ $side = many ] && g="--gpus 2"
            timeout 60 build/slidecheck $big $g > "$W/res/${side}_$x.log" 2>&1 || echo "resident ${side}_$x: exit $?"
        done
        r1="$r1 $W/res/one_$x.log"; r2="$r2 $W/res/many_$x.log"
    done
    echo "resident:"; python3 bench/dp_scaling.py 2 $r1 -- $r2
    echo "elapsed $(( $(date +%s) - T0 )) s"
    left=$(( 570 - ($(date +%s) - T0) )); echo "left for scaling: $left s"
    scaling 3 $left
    ;;
esac
find "$W" -name '*.safetensors' -delete; find "$W" -name 'trace.json' -size +20M -delete
tar czf "$OUT/r.tgz" -C /tmp/dpw "$PART"
echo "done $(date -u)"
