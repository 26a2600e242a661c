#!/bin/sh
# Runs the test programs (plain, then under ASan+UBSan; slide's also under TSan) and the CLI checks; each prints
# PASS/FAIL lines and "N passed, M failed". Prints the total the same way and exits non-zero
# on any failure, or when a program crashes or prints no summary.
cd "$(dirname "$0")/.." || exit 1
total_p=0; total_f=0
run_one() {
    label=$1; shift
    out=$("$@" 2>&1); rc=$?
    printf '%s\n' "$out" | grep -E '^(FAIL|SKIP)' | sed "s|^|[$label] |"
    line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
    if [ -z "$line" ]; then
        printf '%s\n' "$out" | tail -n 20 | sed "s|^|[$label] |"
        echo "[$label] FAIL: exited $rc without a summary line"; total_f=$((total_f + 1)); return
    fi
    p=${line%% passed*}; f=${line#*, }; f=${f%% failed}
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "[$label] FAIL: exit code $rc"; fi
    total_p=$((total_p + p)); total_f=$((total_f + f))
    echo "[$label] $line"
}
if [ "$1" = "--gpu" ]; then
    ./build/test_gpu > build/test_gpu.log 2>&1   # the whole log, with every measured error
    run_one gpu cat build/test_gpu.log
    # training on the train_qwen3 shards against PyTorch's loop, and its bitwise equalities
    run_one "gpu train" env BIG=0 sh bench/gpu_train_checks.sh build/gpu_train
else
    for t in "$@"; do run_one "$t" "./build/test_$t"; done
    for t in "$@"; do ASAN_OPTIONS=detect_leaks=1 run_one "asan $t" "./build/asan/test_$t"; done
    # a ThreadSanitizer report makes the program exit 66: a failure here
    [ -x build/tsan/test_slide ] && run_one "tsan slide" ./build/tsan/test_slide
    run_one cli sh tests/test_cli.sh
    run_one train sh tests/test_train.sh
    run_one "train vs pytorch" sh tests/test_train_ref.sh
    run_one demos sh tests/test_demos.sh
    run_one "auto sweep" sh tests/test_auto_sweep.sh
    # the data-parallel step model against steps worked out by hand, the ranks' skew from traces
    run_one "dp model" python3 bench/dp_model.py --selftest
    run_one "dp hidden" python3 bench/dp_hidden.py --selftest
    run_one "step phases" python3 bench/step_phases.py --selftest
fi
echo "$total_p passed, $total_f failed"
[ "$total_f" -eq 0 ]
