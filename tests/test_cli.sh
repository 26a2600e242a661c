#!/bin/sh
# The command-line tool as a user meets it: outputs, and clear errors with non-zero exits on
# bad flags and bad files (nothing written half-way). Run from the repository root.
S=${S:-./build/slidecheck}
T=${T:-build/tmp_cli}
rm -rf "$T"; mkdir -p "$T"
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
# expect CODE "description" command...: exit code and a one-line message on stderr
expect() {
    code=$1; desc=$2; shift 2
    "$@" > "$T/out" 2> "$T/err"; rc=$?
    if [ "$rc" -eq "$code" ] && { [ "$code" -eq 0 ] || [ -s "$T/err" ]; }; then ok "$desc (exit $rc: $(head -c 150 "$T/err" | head -n 1))"
    else bad "$desc: exit $rc, expected $code; stderr: $(head -c 300 "$T/err")"; fi
}
# tokens FILE B T id...: a safetensors token file written with the standard library only
tokens() {
    python3 - "$@" <<'PY'
import json, struct, sys
path, B, T = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ids = [int(x) for x in sys.argv[4:]] or [i % 7 for i in range(B * T)]
data = struct.pack("<%dq" % len(ids), *ids)
hdr = json.dumps({"input_ids": {"dtype": "I64", "shape": [B, T], "data_offsets": [0, len(data)]}}).encode()
hdr += b" " * (-len(hdr) % 8)
open(path, "wb").write(struct.pack("<Q", len(hdr)) + hdr + data)
PY
}
F=tests/fixtures/qwen3_gqa_tied

expect 2 "no command" $S
expect 2 "unknown command" $S frobnicate
expect 0 "--help" $S --help
expect 0 "train --help" $S train --help
expect 2 "unknown flag" $S train --model tiny --seq 8 --batch 1 --steps 1 --bogus 1
expect 2 "malformed integer" $S train --model tiny --seq 8x --batch 1 --steps 1
expect 2 "bad dtype" $S train --model tiny --seq 8 --batch 1 --steps 1 --dtype fp16
expect 2 "bad optimizer" $S train --model tiny --seq 8 --batch 1 --steps 1 --optim lion
expect 2 "bad policy" $S train --model tiny --seq 8 --batch 1 --steps 1 --ckpt every:0 --device cpu
expect 2 "layer list out of range" $S train --model tiny --seq 8 --batch 1 --steps 1 --ckpt layers:0-9 --device cpu
expect 2 "bad size" $S train --model tiny --seq 8 --batch 1 --steps 1 --mem-cap 12XB
expect 2 "missing value" $S train --model tiny --steps
expect 2 "bad --cuda-graph value" $S train --model tiny --seq 8 --batch 1 --steps 1 --cuda-graph maybe --device cpu
expect 2 "--cuda-graph on with --op-times" $S train --model tiny --seq 8 --batch 1 --steps 1 --cuda-graph on --op-times --device cpu
expect 1 "--cuda-graph on where it cannot be (cpu)" $S train --model tiny --seq 8 --batch 1 --steps 1 --cuda-graph on --device cpu
expect 2 "--gemm-tune with --mem-cap" $S train --model tiny --seq 8 --batch 1 --steps 1 --gemm-tune --mem-cap 1GiB --device cpu
expect 1 "--gemm-tune where it cannot be (cpu)" $S train --model tiny --seq 8 --batch 1 --steps 1 --gemm-tune --device cpu
expect 1 "unknown model name" $S train --model qwen9 --seq 8 --batch 1 --steps 1 --device cpu
expect 1 "sequence over max_position" $S train --model tiny --seq 300 --batch 1 --steps 1 --device cpu
expect 1 "memory cap too small (OOM)" $S train --model tiny --seq 256 --batch 4 --steps 1 --device cpu --mem-cap 30MiB
if grep -q "Largest live" "$T/err" && grep -q "saved activation" "$T/err"; then ok "OOM message lists the largest live allocations"
else bad "OOM message lists the largest live allocations: $(cat "$T/err")"; fi
expect 1 "memory cap too small, with --out" $S train --model tiny --seq 256 --batch 4 --steps 1 --device cpu --mem-cap 30MiB --out "$T/oom"
[ -n "$(ls -A "$T/oom" 2>/dev/null)" ] && bad "nothing written when the first step runs out of memory" \
    || ok "nothing written when the first step runs out of memory"
if command -v nvidia-smi > /dev/null 2>&1; then echo "SKIP --device cuda without a GPU (a GPU is present)"
else expect 1 "--device cuda without a GPU" $S train --model tiny --seq 8 --batch 1 --steps 1 --device cuda; fi

tokens "$T/big.safetensors" 1 4 0 1 96 2
expect 1 "token id >= vocab" $S grad --hf $F --tokens "$T/big.safetensors" --out "$T/g.safetensors" --device cpu
[ -e "$T/g.safetensors" ] && bad "nothing written after a failure" || ok "nothing written after a failure"
tokens "$T/long.safetensors" 1 65
expect 1 "sequence over max_position (token file)" $S grad --hf $F --tokens "$T/long.safetensors" --out "$T/g.safetensors" --device cpu
tokens "$T/empty.safetensors" 0 0
expect 1 "empty token file" $S grad --hf $F --tokens "$T/empty.safetensors" --out "$T/g.safetensors" --device cpu
expect 1 "missing token file" $S grad --hf $F --tokens "$T/nope.safetensors" --out "$T/g.safetensors" --device cpu
expect 1 "missing checkpoint dir" $S grad --hf "$T/nodir" --tokens "$T/big.safetensors" --out "$T/g.safetensors" --device cpu
mkdir -p "$T/trunc"; cp $F/config.json "$T/trunc/"
head -c 100000 $F/model.safetensors > "$T/trunc/model.safetensors"
expect 1 "truncated model.safetensors" $S grad --hf "$T/trunc" --tokens $F/ref.safetensors --out "$T/g.safetensors" --device cpu
mkdir -p "$T/shape"; cp tests/fixtures/qwen3_mha_untied/model.safetensors "$T/shape/"; cp $F/config.json "$T/shape/"
expect 1 "weights of the wrong shape" $S grad --hf "$T/shape" --tokens $F/ref.safetensors --out "$T/g.safetensors" --device cpu
[ -e "$T/g.safetensors" ] && bad "no output after bad inputs" || ok "no output after bad inputs"

expect 0 "grad on an HF fixture" $S grad --hf $F --tokens $F/ref.safetensors --out "$T/g.safetensors" --device cpu
grep -q "loss 4.789" "$T/out" && ok "grad prints the HF loss (4.789...)" || bad "grad loss line: $(cat "$T/out")"
[ -s "$T/g.safetensors" ] && ok "grad wrote its output" || bad "grad wrote its output"

expect 0 "train tiny with --out and --save" $S train --model tiny --device cpu --seq 32 --batch 2 --steps 3 \
    --ckpt every:2 --out "$T/run" --save "$T/ckpt"
for f in step_metrics.csv layer_metrics.csv mem_trace.csv summary.csv trace.json memory_summary.txt memory_snapshot.json; do
    [ -s "$T/run/$f" ] && ok "train --out wrote $f" || bad "train --out wrote $f"
done
if python3 - "$T/run" <<'PY'
import csv, json, sys, os
d = sys.argv[1]
for f in ["step_metrics.csv", "layer_metrics.csv", "mem_trace.csv", "summary.csv"]:
    rows = list(csv.reader(open(os.path.join(d, f))))
    assert len(rows) >= 2, f
    assert all(len(r) == len(rows[0]) for r in rows), f
sm = list(csv.DictReader(open(os.path.join(d, "step_metrics.csv"))))
assert len(sm) == 3 and all(float(r["loss"]) > 0 for r in sm)
json.load(open(os.path.join(d, "trace.json")))
json.load(open(os.path.join(d, "memory_snapshot.json")))
PY
then ok "every CSV and JSON of train --out parses (3 step rows)"; else bad "CSV/JSON of train --out"; fi
expect 0 "a saved checkpoint loads back" $S grad --hf "$T/ckpt" --tokens "$T/long.safetensors" --out "$T/g2.safetensors" --device cpu
expect 0 "plan for the Qwen3-1.7B shape under 24GiB" $S plan --model qwen3-1.7b --seq 2048 --batch 4 --budget 24GiB --dtype bf16
grep -q "predicted peak" "$T/out" && grep -q "layer" "$T/out" && ok "plan prints the table and the predicted peak" \
    || bad "plan output: $(head -5 "$T/out")"
expect 1 "plan: a budget below the fixed memory" $S plan --model qwen3-1.7b --seq 2048 --batch 4 --budget 1GiB --dtype bf16
grep -q "smallest feasible budget" "$T/err" && ok "the refusal names the smallest feasible budget" || bad "plan refusal: $(cat "$T/err")"
expect 2 "plan without --budget" $S plan --model tiny --seq 64 --batch 1
# data parallel's fixed memory per GPU: ZeRO-1 keeps 1/N of the AdamW state (6.41 GiB in bf16 here)
PL="$S plan --model qwen3-1.7b --seq 2048 --batch 4 --budget 40GiB --dtype bf16 --gpus 2"
fixed() { sed -n 's/.*per GPU: fixed \([0-9.]*\) GiB.*/\1/p' "$T/out"; }
expect 0 "plan --gpus 2" $PL; f1=$(fixed)
expect 0 "plan --gpus 2 --zero 1" $PL --zero 1; f2=$(fixed)
if [ -n "$f1" ] && [ -n "$f2" ] && awk -v a="$f1" -v b="$f2" 'BEGIN { exit !(a - b > 3.20 && a - b < 3.21) }'; then
    ok "plan: ZeRO-1 on 2 GPUs cuts the fixed memory by half the AdamW state ($f1 -> $f2 GiB)"
else bad "plan: ZeRO-1 fixed memory '$f1' -> '$f2' GiB"; fi
# two GPUs sum by the copy engines unless --dp-sums nccl: their scratch is half the bf16 gradients (1.60 GiB)
expect 0 "plan --gpus 2 --dp-sums nccl" $PL --dp-sums nccl; f3=$(fixed)
if [ -n "$f3" ] && awk -v a="$f1" -v b="$f3" 'BEGIN { exit !(a - b > 1.60 && a - b < 1.61) }'; then
    ok "plan: the copy-engine scratch on 2 GPUs counted, not with --dp-sums nccl ($f1 -> $f3 GiB)"
else bad "plan: --dp-sums nccl fixed memory '$f1' -> '$f3' GiB"; fi
# four: (N - 1) / N of them (2.40 GiB) and three 8 MiB pieces of the ordered sums (2.43 GiB in all)
P4=$(echo "$PL" | sed 's/--gpus 2/--gpus 4/')
expect 0 "plan --gpus 4" $P4; f4=$(fixed); grep -q "the copy-engine sums' scratch" "$T/out" && s4=1 || s4=0
expect 0 "plan --gpus 4 --dp-sums nccl" $P4 --dp-sums nccl; f5=$(fixed)
if [ $s4 = 1 ] && [ -n "$f4" ] && [ -n "$f5" ] && awk -v a="$f4" -v b="$f5" 'BEGIN { exit !(a - b > 2.42 && a - b < 2.44) }'; then
    ok "plan: the copy-engine scratch on 4 GPUs counted and named, not with --dp-sums nccl ($f4 -> $f5 GiB)"
else bad "plan --gpus 4: fixed memory '$f4' -> '$f5' GiB, scratch named: $s4"; fi
expect 2 "plan --zero 1 without --gpus" $S plan --model tiny --seq 64 --batch 1 --budget 1GiB --zero 1
expect 2 "malformed budget policy" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --ckpt budget:lots
expect 1 "budget too small for any plan" $S train --model tiny --seq 256 --batch 4 --steps 1 --device cpu --ckpt budget:20MiB
expect 2 "a malformed launch environment is a usage error" env RANK=x WORLD_SIZE=2 $S train --model tiny --seq 16 --batch 1 --steps 1 --device cpu
# data parallel through the tool (CPU backend): --gpus 2 x --batch 1 against one process of --batch 2
DP="$S train --model tiny --seq 16 --steps 3 --device cpu --optim adamw --lr 1e-3"
expect 0 "--gpus 2: two ranks train" $DP --batch 1 --gpus 2 --save "$T/dp1"
grep '^step' "$T/out" | awk '{print $4}' > "$T/dp_loss"
expect 0 "one process of --batch 2" $DP --batch 2
grep '^step' "$T/out" | awk '{print $4}' > "$T/one_loss"
if [ "$(wc -l < "$T/dp_loss")" -eq 3 ] && paste "$T/dp_loss" "$T/one_loss" |
    awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-5 * $2) bad = 1 } END { exit bad }'; then
    ok "2 ranks x batch 1 = 1 x batch 2: losses within 1e-5 ($(tr '\n' ' ' < "$T/dp_loss")vs $(tr '\n' ' ' < "$T/one_loss"))"
else bad "data-parallel losses $(cat "$T/dp_loss") vs $(cat "$T/one_loss")"; fi
expect 0 "--gpus 2 again" $DP --batch 1 --gpus 2 --save "$T/dp2"
if cmp -s "$T/dp1/model.safetensors" "$T/dp2/model.safetensors"; then ok "two data-parallel runs save the same bytes"
else bad "two data-parallel runs differ"; fi
expect 0 "--gpus 2 --mode slide" $DP --batch 1 --gpus 2 --mode slide --save "$T/dps"
pageable() { awk '/^summary:/{for (i = 1; i < NF; i++) if ($i == "pageable") print $(i + 1)}' "$T/out"; }
hs1=$(pageable)
if cmp -s "$T/dp1/model.safetensors" "$T/dps/model.safetensors"; then ok "slide mode's data parallel saves resident mode's bytes"
else bad "slide and resident data parallel differ"; fi
expect 0 "--gpus 2 --mode slide --zero 1" $DP --batch 1 --gpus 2 --mode slide --zero 1 --save "$T/dpsz"
if cmp -s "$T/dps/model.safetensors" "$T/dpsz/model.safetensors"; then ok "slide mode's ZeRO-1 saves the same bytes as slide without it"
else bad "slide mode with and without ZeRO-1 differ"; fi
hs2=$(pageable)
if awk -v a="$hs1" -v b="$hs2" 'BEGIN { exit !(a != "" && b != "" && a - b >= 0.002) }'; then
    ok "slide ZeRO-1: rank 0's pageable host memory $hs1 -> $hs2 GiB (its share of the AdamW state)"
else bad "slide ZeRO-1 pageable host memory '$hs1' -> '$hs2' GiB"; fi
expect 1 "--gpus 2 --mode slide --slide-dpu is refused" $DP --batch 1 --gpus 2 --mode slide --slide-dpu
expect 0 "--gpus 2 --zero 1" $DP --batch 1 --gpus 2 --zero 1 --save "$T/dpz" --out "$T/dpo"
if [ "$(wc -l < "$T/dpo/dp_steps.csv")" -eq 4 ] && head -1 "$T/dpo/dp_steps.csv" | grep -q "^step,wall_ms_rank0,wall_ms_rank1,wall_ms_slowest$" &&
    [ -s "$T/dpo/step_metrics.csv" ] && [ -s "$T/dpo/rank1/step_metrics.csv" ] && [ -s "$T/dpo/rank1/trace.json" ]; then
    ok "--out: rank 0's files and dp_steps.csv (every rank's step time), rank 1's in rank1/"
else bad "data-parallel --out: $(ls "$T/dpo" "$T/dpo/rank1" 2>&1 | tr '\n' ' ')"; fi
if cmp -s "$T/dp1/model.safetensors" "$T/dpz/model.safetensors"; then ok "ZeRO-1 saves the same bytes as plain data parallel"
else bad "ZeRO-1 and plain data parallel differ"; fi
expect 2 "--gpus under a launcher" env RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 $DP --batch 1 --gpus 2
expect 1 "WORLD_SIZE=2 without the other rank: a timeout naming it" env RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29512 SLIDECHECK_RENDEZVOUS_TIMEOUT=1 $DP --batch 1
grep -q "missing: rank 1" "$T/err" && ok "the timeout names rank 1" || bad "missing-rank message: $(cat "$T/err")"
t0=$(date +%s)
expect 1 "--rendezvous-timeout 1 without the other rank (the environment says 600)" env RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29514 SLIDECHECK_RENDEZVOUS_TIMEOUT=600 $DP --batch 1 --rendezvous-timeout 1
dt=$(( $(date +%s) - t0 ))
[ "$dt" -le 20 ] && grep -q "missing: rank 1" "$T/err" && ok "the flag's timeout wins: stopped after ${dt} s" ||
    bad "--rendezvous-timeout: ${dt} s: $(cat "$T/err")"
expect 2 "--rendezvous-timeout 0 is refused" $DP --batch 1 --rendezvous-timeout 0
expect 2 "--bucket-mb -1 is refused" $DP --batch 1 --bucket-mb -1
expect 2 "--dp-sums copy is refused (auto or nccl)" $DP --batch 1 --dp-sums copy
expect 0 "--gpus 2 --dp-sums nccl" $DP --batch 1 --gpus 2 --dp-sums nccl --save "$T/dpn"
if cmp -s "$T/dp1/model.safetensors" "$T/dpn/model.safetensors"; then ok "--dp-sums nccl saves the default's bytes (the CPU sums over the control channel either way)"
else bad "--dp-sums nccl and the default differ on the CPU"; fi
# two ranks started by hand, rank 1 with other flags (PORT WHAT FLAGS...): both stop at the start, named
mismatch() {
    port=$1 what=$2; shift 2
    env RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port SLIDECHECK_RENDEZVOUS_TIMEOUT=20 $DP --batch 1 "$@" \
        > /dev/null 2> "$T/err1" &
    expect 1 "ranks with other $what stop" env RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port SLIDECHECK_RENDEZVOUS_TIMEOUT=20 $DP --batch 1
    wait $!; rc1=$?
    if [ "$rc1" -eq 1 ] && grep -q "another configuration" "$T/err" && grep -q "another configuration" "$T/err1"; then
        ok "a mismatched $what is named on both ranks"
    else bad "$what mismatch: rank 1 exit $rc1: $(cat "$T/err1")"; fi
}
mismatch 29513 "learning rate" --lr 2e-3
mismatch 29515 "--bucket-mb (the sums would be grouped differently)" --bucket-mb 64
mismatch 29516 "--dp-sums (the ranks sum alike)" --dp-sums nccl
expect 0 "train under budget:60MiB" $S train --model tiny --seq 256 --batch 4 --steps 2 --device cpu --ckpt budget:60MiB
peak=$(awk '/^summary:/{for (i = 1; i < NF; i++) if ($i == "allocated") print $(i + 1)}' "$T/out")
if awk -v p="$peak" 'BEGIN { exit !(p != "" && p * 1024 <= 60) }'; then ok "budget:60MiB: measured peak allocated $peak GiB <= 60 MiB"
else bad "budget:60MiB: measured peak allocated '$peak' GiB"; fi
# slide mode through the tool: flags, their refusals, and the loss equal to resident mode's
expect 2 "--slide-prefetch 0" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --mode slide --slide-prefetch 0
expect 2 "--slide-prefetch without slide" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --slide-prefetch 2
expect 2 "bad --mode" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --mode glide
expect 1 "--slide-prefetch over the layer count" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --mode slide --slide-prefetch 99
expect 2 "--head-slice 0" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --head-slice 0
expect 1 "--out not writable, refused before step 1" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --mode slide --out /proc/x
for hs in "" "--head-slice 100"; do
    expect 0 "resident $hs" $S train --model tiny --seq 32 --batch 2 --steps 3 --device cpu --accum 2 --ckpt every:2 $hs
    l1=$(awk '/^summary:/{print $4}' "$T/out")
    expect 0 "slide $hs" $S train --model tiny --seq 32 --batch 2 --steps 3 --device cpu --accum 2 --ckpt every:2 --mode slide --slide-prefetch 2 $hs
    l2=$(awk '/^summary:/{print $4}' "$T/out")
    grep -q "h2d .* GB/step" "$T/out" && ok "slide summary reports bytes per step" || bad "slide summary: $(tail -1 "$T/out")"
    [ -n "$l1" ] && [ "$l1" = "$l2" ] && ok "slide $hs: first loss $l2 == resident's" || bad "slide $hs loss '$l2' vs resident '$l1'"
done
# bf16 AdamW state: slide's losses equal resident's through the tool; its refusals
expect 0 "resident --state-bf16" $S train --model tiny --seq 32 --batch 2 --steps 3 --device cpu --lr 1e-2 --state-bf16
r3=$(awk '$1 == "step" && $2 == 3 {print $4}' "$T/out")
expect 0 "slide --state-bf16" $S train --model tiny --seq 32 --batch 2 --steps 3 --device cpu --lr 1e-2 --state-bf16 --mode slide
s3=$(awk '$1 == "step" && $2 == 3 {print $4}' "$T/out")
[ -n "$r3" ] && [ "$r3" = "$s3" ] && ok "--state-bf16: step 3 loss $s3 in slide == resident's" || bad "--state-bf16: slide '$s3' vs resident '$r3'"
expect 2 "--state-bf16 with SGD" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --optim sgd --state-bf16
expect 2 "--op-times on the CPU" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --op-times
# the delayed update: slide only; on the same batch every step, step 2 trains on step 1's weights
expect 2 "--slide-dpu without --mode slide" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --slide-dpu
expect 2 "--slide-dpu is not a grad option" $S grad --hf $F --tokens $F/ref.safetensors --out "$T/g.safetensors" --device cpu --mode slide --slide-dpu
expect 0 "slide --slide-dpu" $S train --model tiny --seq 32 --batch 2 --steps 3 --device cpu --lr 1e-2 --mode slide --slide-dpu --accum 2 --ckpt every:2
d1=$(awk '$1 == "step" && $2 == 1 {print $4}' "$T/out"); d2=$(awk '$1 == "step" && $2 == 2 {print $4}' "$T/out")
d3=$(awk '$1 == "step" && $2 == 3 {print $4}' "$T/out")
grep -q "delayed update" "$T/out" && ok "slide --slide-dpu says so" || bad "slide --slide-dpu line: $(head -3 "$T/out")"
[ -n "$d1" ] && [ "$d1" = "$d2" ] && [ "$d3" != "$d2" ] && ok "--slide-dpu: step 2 loss $d2 == step 1's, step 3 $d3 moved" \
    || bad "--slide-dpu losses '$d1' '$d2' '$d3'"
# the head kept on the device: slide only, not with --slide-dpu; the same losses and gradients as resident
expect 2 "--slide-keep-head without --mode slide" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --slide-keep-head
expect 2 "--slide-keep-head with --slide-dpu" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --mode slide --slide-keep-head --slide-dpu
expect 0 "resident, 3 steps" $S train --model tiny --seq 32 --batch 2 --steps 3 --device cpu --lr 1e-2 --accum 2 --ckpt every:2
r3=$(awk '$1 == "step" && $2 == 3 {print $4}' "$T/out")
expect 0 "slide --slide-keep-head" $S train --model tiny --seq 32 --batch 2 --steps 3 --device cpu --lr 1e-2 --accum 2 --ckpt every:2 --mode slide --slide-keep-head
k3=$(awk '$1 == "step" && $2 == 3 {print $4}' "$T/out")
grep -q "head kept" "$T/out" && ok "slide --slide-keep-head says so" || bad "slide --slide-keep-head line: $(head -3 "$T/out")"
[ -n "$r3" ] && [ "$r3" = "$k3" ] && ok "--slide-keep-head: step 3 loss $k3 == resident's" || bad "--slide-keep-head: '$k3' vs resident '$r3'"
expect 0 "grad, slide --slide-keep-head" $S grad --hf $F --tokens $F/ref.safetensors --out "$T/gk.safetensors" --device cpu --mode slide --slide-keep-head
cmp -s "$T/g.safetensors" "$T/gk.safetensors" && ok "grad: slide --slide-keep-head's file == resident's, byte for byte" \
    || bad "grad: slide --slide-keep-head's file differs from resident's"
# layers kept on the device: slide only, a layer set; the same losses as resident
expect 2 "--slide-device-layers without --mode slide" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --slide-device-layers all
expect 2 "--slide-device-layers with a bad set" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --mode slide --slide-device-layers 0-9
expect 0 "slide --slide-device-layers 0,2" $S train --model tiny --seq 32 --batch 2 --steps 3 --device cpu --lr 1e-2 --accum 2 --ckpt every:2 --mode slide --slide-device-layers 0,2
p3=$(awk '$1 == "step" && $2 == 3 {print $4}' "$T/out")
grep -q "2 of 4 layers on the device" "$T/out" && ok "slide --slide-device-layers says so" || bad "slide --slide-device-layers line: $(head -4 "$T/out")"
[ -n "$r3" ] && [ "$r3" = "$p3" ] && ok "--slide-device-layers 0,2: step 3 loss $p3 == resident's" || bad "--slide-device-layers: '$p3' vs resident '$r3'"
# the SGD update on the device and the head up once: slide + SGD only; the same losses as resident
expect 2 "--slide-device-update without --mode slide" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --optim sgd --slide-device-update
expect 2 "--slide-device-update with AdamW" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --mode slide --slide-device-update
expect 2 "--slide-device-update with --slide-dpu" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --mode slide --optim sgd --slide-device-update --slide-dpu
expect 2 "--slide-head-once without --head-slice" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --mode slide --slide-head-once
expect 2 "--slide-head-once with --slide-keep-head" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --mode slide --head-slice 100 --slide-head-once --slide-keep-head
expect 0 "resident SGD, head in slices" $S train --model tiny --seq 32 --batch 2 --steps 3 --device cpu --optim sgd --lr 0.05 --ckpt full --head-slice 100
r3=$(awk '$1 == "step" && $2 == 3 {print $4}' "$T/out")
expect 0 "slide --slide-device-update --slide-head-once" $S train --model tiny --seq 32 --batch 2 --steps 3 --device cpu --optim sgd --lr 0.05 --ckpt full --head-slice 100 --mode slide --slide-device-update --slide-head-once
u3=$(awk '$1 == "step" && $2 == 3 {print $4}' "$T/out")
hp=$(awk '/^summary:/{for (i = 1; i < NF; i++) if ($i == "host-opt") print $(i + 2)}' "$T/out")
grep -q "SGD on the device" "$T/out" && ok "slide --slide-device-update says so" || bad "slide --slide-device-update line: $(head -3 "$T/out")"
[ -n "$r3" ] && [ "$r3" = "$u3" ] && ok "--slide-device-update --slide-head-once: step 3 loss $u3 == resident's" || bad "--slide-device-update: '$u3' vs resident '$r3'"
[ -n "$hp" ] && [ "$hp" -gt 0 ] && [ "$hp" -lt 100000 ] && ok "--slide-device-update --slide-head-once: the host updated $hp parameters (the norm and the touched rows)" \
    || bad "host-opt params '$hp'"
# the earlier spellings of the slide flags still work (not in the help)
expect 2 "the earlier --slide-update sideways" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --mode slide --optim sgd --slide-update sideways
expect 2 "the earlier --slide-update without a value" $S train --model tiny --seq 32 --batch 1 --steps 1 --device cpu --mode slide --optim sgd --slide-update
expect 0 "the earlier --slide-update device --head-once --prefetch 1 --cpu-threads 1" $S train --model tiny --seq 32 --batch 2 --steps 3 --device cpu --optim sgd --lr 0.05 --ckpt full --head-slice 100 --mode slide --slide-update device --head-once --prefetch 1 --cpu-threads 1
o3=$(awk '$1 == "step" && $2 == 3 {print $4}' "$T/out")
[ -n "$o3" ] && [ "$o3" = "$u3" ] && ok "the earlier spellings: step 3 loss $o3 == the new spellings'" || bad "the earlier spellings: '$o3' vs '$u3'"
expect 0 "the earlier --slide-update host --keep-head" $S train --model tiny --seq 32 --batch 2 --steps 1 --device cpu --mode slide --slide-update host --keep-head
grep -q "head kept" "$T/out" && ok "the earlier --keep-head keeps the head" || bad "the earlier --keep-head: $(head -3 "$T/out")"
expect 0 "the earlier --dpu" $S train --model tiny --seq 32 --batch 2 --steps 2 --device cpu --mode slide --dpu
grep -q "delayed update" "$T/out" && ok "the earlier --dpu delays the update" || bad "the earlier --dpu: $(head -3 "$T/out")"
expect 2 "the earlier --dpu is not a grad option either" $S grad --hf $F --tokens $F/ref.safetensors --out "$T/g2.safetensors" --device cpu --mode slide --dpu
grep -q "'--dpu'" "$T/err" && ok "a refused alias is named as typed" || bad "refused alias message: $(cat "$T/err")"
# the help: every line within 100 columns, each command lists only its own flags, no earlier spellings
for c in grad train plan; do
    expect 0 "$c --help" $S $c --help
    long=$(awk 'length > 100' "$T/out" | head -1)
    [ -z "$long" ] && ok "$c --help: every line <= 100 columns" || bad "$c --help: a line over 100 columns: $long"
    lone=$(grep -E "^ {26}[^ ]+$" "$T/out" | head -1)
    [ -z "$lone" ] && ok "$c --help: no wrapped line of one word" || bad "$c --help: a wrapped line of one word: $lone"
    old=$(grep -E -e "--(prefetch|cpu-threads|keep-head|head-once|dpu|slide-update)\b" "$T/out" | head -1)
    [ -z "$old" ] && ok "$c --help names no earlier spelling" || bad "$c --help: $old"
done
$S plan --help > "$T/out"
if grep -q "^  --budget" "$T/out" && grep -q "^  --mode auto" "$T/out" && grep -q "^  --mem-cap" "$T/out" &&
    ! grep -q -E "^  --(steps|slide-[a-z-]*|lr)\b" "$T/out"; then
    ok "plan --help lists the flags plan takes, and no others"
else bad "plan --help: $(grep -E "^  --(mode|mem-cap|steps|slide-[a-z-]*|lr)" "$T/out" | head -2)"; fi
# --mode auto: plan prints one 'plan:' line; train with a cap nothing fits stops before training,
# naming the smallest cap; with that cap it trains (slide) to resident's losses
expect 0 "plan --mode auto, no cap (CPU)" $S plan --mode auto --model tiny --seq 32 --batch 2 --device cpu
[ "$(grep -c "^plan: resident" "$T/out")" = 1 ] && ok "plan --mode auto without a cap on the CPU: one 'plan:' line, resident" \
    || bad "plan --mode auto: $(cat "$T/out")"
expect 2 "plan --mem-cap without --mode auto" $S plan --model tiny --seq 32 --batch 2 --budget 1GiB --mem-cap 1GiB
expect 1 "train --mode auto, a cap nothing fits" $S train --mode auto --model tiny --seq 32 --batch 2 --steps 2 --device cpu --mem-cap 1MiB
cap=$(sed -n 's/.*the smallest cap that fits is \([0-9.]*MiB\).*/\1/p' "$T/err")
[ -n "$cap" ] && ! grep -q "^step" "$T/out" && ok "train --mode auto under 1MiB: nothing trained, the smallest cap named ($cap)" \
    || bad "train --mode auto under 1MiB: '$cap'; $(head -2 "$T/out")"
expect 1 "plan --mode auto, a cap nothing fits" $S plan --mode auto --model tiny --seq 32 --batch 2 --device cpu --mem-cap 1MiB
grep -q "smallest cap that fits is $cap" "$T/err" && ok "plan --mode auto names the same smallest cap" || bad "plan --mode auto: $(cat "$T/err")"
expect 0 "resident, 2 steps (auto's reference)" $S train --model tiny --seq 32 --batch 2 --steps 2 --device cpu --lr 1e-2
r2=$(awk '$1 == "step" && $2 == 2 {print $4}' "$T/out")
expect 0 "train --mode auto --mem-cap $cap" $S train --mode auto --model tiny --seq 32 --batch 2 --steps 2 --device cpu --lr 1e-2 --mem-cap "$cap"
a2=$(awk '$1 == "step" && $2 == 2 {print $4}' "$T/out")
grep -q "^plan: slide" "$T/out" && grep -q "auto: peak allocated .* (predicted .*)  median step .* (predicted" "$T/out" \
    && ok "train --mode auto at the smallest cap: slide, the summary gives the predictions" || bad "train --mode auto: $(grep -E "^(plan|summary)" "$T/out")"
[ -n "$r2" ] && [ "$r2" = "$a2" ] && ok "train --mode auto: step 2 loss $a2 == resident's" || bad "train --mode auto: '$a2' vs resident '$r2'"
$S grad --help > "$T/out"
grep -q -E "^  --(slide-dpu|slide-device-update|gpus|steps|cuda-graph)\b" "$T/out" && bad "grad --help lists train's flags" \
    || ok "grad --help lists no train-only flag"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
