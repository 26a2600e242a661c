#!/bin/sh
# What exact gradient clipping costs in slide mode: Qwen3-1.7B shape, 2048 x 4, AdamW, bf16 with
# f32 master weights on the host, with and without --clip-grad-norm, alternated (after make).
#   sh bench/slide_clip.sh OUTDIR [ROUNDS]
set -u
O=${1:?usage: slide_clip.sh OUTDIR [ROUNDS]}
R=${2:-2}
mkdir -p "$O"
SL="--model qwen3-1.7b --seq 2048 --batch 4 --optim adamw --lr 1e-4 --dtype bf16 --device cuda --steps 10 --warmup 3 --mode slide"
i=1
while [ "$i" -le "$R" ]; do
    # shellcheck disable=SC2086
    ./build/slidecheck train $SL > "$O/slide_$i.log" 2>&1
    # shellcheck disable=SC2086
    ./build/slidecheck train $SL --clip-grad-norm 1.0 > "$O/slide_clip_$i.log" 2>&1
    i=$((i + 1))
done
for f in "$O"/slide_*.log; do
    printf '%s: ' "$(basename "$f" .log)"
    grep '^summary' "$f" | sed 's/.*\(median step [0-9.]* ms (n=[0-9]*[^;]*; mean [0-9.]* ms\).*/\1/'
done
