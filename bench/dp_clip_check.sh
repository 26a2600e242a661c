#!/bin/sh
# Data parallel with shards, a schedule and clipping on 2 GPUs (after make): 2 ranks of --batch 2
# against one GPU of --batch 4 over the same shard (a multiple of 4 rows, so that both read the
# same tokens in the same order). fp32: the loss and the norm every rank clips with agree to 1e-5
# relative (the sums run in another order). Then the 2-rank clipped run with ZeRO-1, in slide mode
# (over NCCL) and slide with ZeRO-1: each saves the bytes of plain data parallel (every rank clips
# with the same norm of the same sums), and prints the same losses and norms.
#   sh bench/dp_clip_check.sh OUTDIR
set -u
O=${1:?usage: dp_clip_check.sh OUTDIR}
mkdir -p "$O"
set -f
python3 - "$O" <<'PY'
import os, random, struct, sys
random.seed(3)
n = 64 * 24
pat = [random.randrange(512) for _ in range(40)]
toks = [pat[i % 40] if random.random() < 0.7 else random.randrange(512) for i in range(n)]
h = [0] * 256; h[0], h[1], h[2] = 20240801, 1, n
open(os.path.join(sys.argv[1], "dp_000.bin"), "wb").write(struct.pack("<256i", *h) + struct.pack("<%dI" % n, *toks))
PY
A="--hf tests/fixtures/train_qwen3 --data $O/dp_*.bin --seq 16 --steps 12 --lr 1e-3 --lr-schedule cosine --lr-warmup 2 --clip-grad-norm 0.05 --weight-decay 0.1 --device cuda --dtype fp32"
# shellcheck disable=SC2086
./build/slidecheck train $A --batch 4 --save "$O/one" > "$O/one.log" 2>&1; echo "1 GPU rc=$?"
# shellcheck disable=SC2086
./build/slidecheck train $A --batch 2 --gpus 2 --save "$O/two" > "$O/two.log" 2>&1; echo "2 GPUs rc=$?"
grep '^step' "$O/one.log" | awk '{print $2, $4, $8}' > "$O/one.txt"
grep '^step' "$O/two.log" | awk '{print $2, $4, $8}' > "$O/two.txt"
paste "$O/one.txt" "$O/two.txt" | awk '{ dl = ($2 - $5) / $2; dn = ($3 - $6) / $3; if (dl < 0) dl = -dl; if (dn < 0) dn = -dn;
    if (dl > wl) wl = dl; if (dn > wn) wn = dn; n++ }
    END { printf "%d steps: worst loss rel %.3g, worst norm rel %.3g: %s\n", n, wl, wn, (n == 12 && wl < 1e-5 && wn < 1e-5) ? "PASS" : "FAIL" }'
fail=0
for v in "z --zero 1" "s --mode slide" "sz --mode slide --zero 1"; do
    set -- $v
    n=$1; shift
    # shellcheck disable=SC2086
    ./build/slidecheck train $A --batch 2 --gpus 2 --save "$O/two_$n" "$@" > "$O/two_$n.log" 2>&1 || { echo "2 GPUs $*: exit $?"; tail -n 3 "$O/two_$n.log"; fail=1; }
    grep '^step' "$O/two_$n.log" | awk '{print $2, $4, $8}' > "$O/two_$n.txt"
    if cmp -s "$O/two/model.safetensors" "$O/two_$n/model.safetensors" && cmp -s "$O/two.txt" "$O/two_$n.txt"; then
        echo "2 GPUs, clipping, $*: the weights, losses and norms of plain data parallel (bitwise): PASS"
    else echo "2 GPUs, clipping, $*: differs from plain data parallel: FAIL"; fail=1; fi
done
exit $fail
