#!/bin/sh
# Side by side on one GPU: slidecheck (CUDA, bf16) and PyTorch + HF transformers (bf16, SDPA),
# the Qwen3-1.7B shape, step = forward + backward + optimizer, median of 12 steps after 3
# warm-ups. Writes bench/results.csv (or $1) and prints it. Needs build/slidecheck built with
# CUDA and a python3 with torch + transformers.
set -u
cd "$(dirname "$0")/.."
out=${1:-bench/results.csv}
echo "impl,model,seq,batch,optim,ckpt,step_ms_median,n,peak_alloc_gib,peak_resv_gib,loss0" > "$out"
ours() { # seq batch optim ckpt impl-label [extra flags]
    s=$1; b=$2; optim=$3; ckpt=$4; label=$5; shift 5
    line=$(./build/slidecheck train --model qwen3-1.7b --seq "$s" --batch "$b" --steps 15 --warmup 3 \
        --optim "$optim" --lr 1e-4 --dtype bf16 --ckpt "$ckpt" --device cuda "$@" | grep '^summary:')
    echo "$line" | awk -v s="$s" -v b="$b" -v o="$optim" -v c="$ckpt" -v impl="$label" '{
                for (i = 1; i <= NF; i++) {
                    if ($i == "loss") loss = $(i + 1);
                    if ($i == "step") ms = $(i + 1);
                    if ($i ~ /^\(n=/) { n = substr($i, 4) }
                    if ($i == "allocated") pa = $(i + 1);
                    if ($i == "reserved") pr = $(i + 1);
                }
        printf "%s,qwen3-1.7b,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", impl, s, b, o, c, ms, n, pa, pr, loss
    }' >> "$out"
}
for cfg in "256 1" "2048 4"; do
    set -- $cfg
    for optim in sgd adamw; do
        for ckpt in none full selective; do
            ours "$1" "$2" "$optim" "$ckpt" slidecheck-cuda-bf16
            if [ "$ckpt" != selective ]; then
                python3 bench/hf_step.py --model qwen3-1.7b --seq "$1" --batch "$2" --optim "$optim" --ckpt "$ckpt" \
                    2>/dev/null | tail -n 1 | cut -d, -f1-11 >> "$out"  # this table's 11 columns
            fi
        done
    done
    ours "$1" "$2" adamw none slidecheck-cuda-bf16-master --master-weights
    ours "$1" "$2" adamw full slidecheck-cuda-bf16-master --master-weights
done
column -s, -t < "$out" 2>/dev/null || cat "$out"
