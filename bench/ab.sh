#!/bin/sh
# A/B timing of the resident step: two slidecheck binaries (A, B) on one GPU, the cells
# interleaved (A, B, A, B ...) so that clocks and neighbours weigh on both alike. Qwen3-1.7B shape,
# bf16, whole-step CUDA graph as the binary defaults.
#   sh bench/ab.sh OUT BIN_A BIN_B          CELLS="2048x4:adamw:none 2048x4:adamw:full 256x1:sgd:none ..."
# Writes OUT/ab.csv (cell, binary, median step ms, n, peak allocated GiB) and one log per run.
set -u
O=${1:?usage: sh bench/ab.sh OUT BIN_A BIN_B}; A=${2:?}; B=${3:?}
CELLS=${CELLS:-"2048x4:adamw:none 2048x4:adamw:full 256x1:sgd:none 256x1:sgd:full"}
STEPS=${STEPS:-10}; WARMUP=${WARMUP:-3}; ROUNDS=${ROUNDS:-1}
mkdir -p "$O/ab_logs"
[ -s "$O/ab.csv" ] || echo "cell,bin,step_ms_median,n,peak_alloc_gib" > "$O/ab.csv"
for r in $(seq 1 "$ROUNDS"); do
    for cell in $CELLS; do
        s=${cell%%x*}; rest=${cell#*x}; b=${rest%%:*}; rest=${rest#*:}; opt=${rest%%:*}; ck=${rest#*:}
        for which in A B; do
            bin=$A; [ $which = B ] && bin=$B
            log="$O/ab_logs/${cell}_${which}_r$r.log"; log=$(echo "$log" | tr ':' '-')
            "$bin" train --model qwen3-1.7b --device cuda --dtype bf16 --seq "$s" --batch "$b" --optim "$opt" \
                --lr 1e-4 --ckpt "$ck" --steps $((WARMUP + STEPS)) --warmup "$WARMUP" > "$log" 2>&1
            grep '^summary:' "$log" | awk -v c="$cell" -v w="$which" '{
                for (i = 1; i <= NF; i++) {
                    if ($i == "step" && $(i - 1) == "median") ms = $(i + 1)
                    if ($i ~ /^\(n=/) n = substr($i, 4)
                    if ($i == "allocated") pa = $(i + 1)
                }
                print c "," w "," ms "," n "," pa }' >> "$O/ab.csv"
        done
    done
done
cat "$O/ab.csv"
