#!/bin/sh
# Data parallel with shards, a schedule and clipping on 2 GPUs (after make): 2 ranks of --batch 2
# against one GPU of --batch 4 over the same shard (a multiple of 4 rows, so that both read the
# same tokens in the same order). fp32: the loss and the norm every rank clips with agree to 1e-5
# relative (the sums run in another order). Then the 2-rank clipped runs: ZeRO-1 saves the bytes
# and prints the lines of plain data parallel, slide with ZeRO-1 those of slide (every rank clips
# with the same norm of the same sums), and slide is within 1e-5 of resident.
#   sh bench/dp_clip_check.sh OUTDIR      (BIN=dir of the binaries, default build)
set -u
O=${1:?usage: dp_clip_check.sh OUTDIR}; BIN=${BIN:-build}
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
"$BIN/slidecheck" train $A --batch 4 --save "$O/one" > "$O/one.log" 2>&1; echo "1 GPU rc=$?"
# shellcheck disable=SC2086
"$BIN/slidecheck" train $A --batch 2 --gpus 2 --save "$O/two" > "$O/two.log" 2>&1; echo "2 GPUs rc=$?"
grep '^step' "$O/one.log" | awk '{print $2, $4, $8}' > "$O/one.txt"
grep '^step' "$O/two.log" | awk '{print $2, $4, $8}' > "$O/two.txt"
paste "$O/one.txt" "$O/two.txt" | awk '{ dl = ($2 - $5) / $2; dn = ($3 - $6) / $3; if (dl < 0) dl = -dl; if (dn < 0) dn = -dn;
    if (dl > wl) wl = dl; if (dn > wn) wn = dn; n++ }
    END { printf "%d steps: worst loss rel %.3g, worst norm rel %.3g: %s\n", n, wl, wn, (n == 12 && wl < 1e-5 && wn < 1e-5) ? "PASS" : "FAIL" }'
fail=0
# same FILE_A FILE_B WHAT: the saved weights and the printed losses and norms, bit for bit
same() {
    if cmp -s "$O/$1/model.safetensors" "$O/$2/model.safetensors" && cmp -s "$O/$1.txt" "$O/$2.txt"; then
        echo "2 GPUs, clipping, $3: the weights, losses and norms (bitwise): PASS"
    else echo "2 GPUs, clipping, $3: differ: FAIL"; fail=1; fi
}
for v in "two_z --zero 1" "two_s --mode slide" "two_sz --mode slide --zero 1"; do
    set -- $v
    n=$1; shift
    # shellcheck disable=SC2086
    "$BIN/slidecheck" train $A --batch 2 --gpus 2 --save "$O/$n" --save-every 6 "$@" > "$O/$n.log" 2>&1 || { echo "2 GPUs $*: exit $?"; tail -n 3 "$O/$n.log"; fail=1; }
    grep '^step' "$O/$n.log" | awk '{print $2, $4, $8}' > "$O/$n.txt"
    # resumed at step 6 (every rank's part of the optimizer state in one file): the same bytes
    # shellcheck disable=SC2086
    "$BIN/slidecheck" train $(echo $A | sed 's|--hf [^ ]*||') --batch 2 --gpus 2 --resume "$O/$n/step_000006" --save "$O/${n}_r" "$@" \
        > "$O/${n}_r.log" 2>&1 || { echo "2 GPUs $* resumed: exit $?"; tail -n 3 "$O/${n}_r.log"; fail=1; }
    if cmp -s "$O/$n/model.safetensors" "$O/${n}_r/model.safetensors"; then
        echo "2 GPUs, clipping, $*: resumed at step 6, the bytes of the run never stopped: PASS"
    else echo "2 GPUs, clipping, $*: the resumed run differs: FAIL"; fail=1; fi
done
same two two_z "ZeRO-1 against plain data parallel"
same two_s two_sz "slide with ZeRO-1 against slide"
# slide over NCCL adds every rank's embedding rows on the host, resident mode sums each rank's
# embedding gradient: another order, so slide against resident within the fp32 tolerance
paste "$O/two.txt" "$O/two_s.txt" | awk '{ dl = ($2 - $5) / $2; dn = ($3 - $6) / $3; if (dl < 0) dl = -dl; if (dn < 0) dn = -dn;
    if (dl > wl) wl = dl; if (dn > wn) wn = dn; n++ }
    END { printf "2 GPUs, clipping, slide against resident: %d steps, worst loss rel %.3g, worst norm rel %.3g: %s\n", n, wl, wn,
          (n == 12 && wl < 1e-5 && wn < 1e-5) ? "PASS" : "FAIL"; exit !(n == 12 && wl < 1e-5 && wn < 1e-5) }' || fail=1
exit $fail
