#!/bin/sh
# Training on token shards through the tool (CPU, tiny model): a run resumed from a checkpoint
# of --save-every ends with the same bytes and prints the same step lines as the run never
# stopped (resident, --ckpt full, slide); a kill -9 during --save-every leaves only whole
# checkpoints, and the last resumes; resumes and shards that do not fit are refused before any
# step, naming the problem; validation lines and step_metrics.csv's lr / grad_norm / val_loss.
# Run from the repository root.
S=${S:-./build/slidecheck}
T=${T:-build/tmp_train}
rm -rf "$T"; mkdir -p "$T/data" "$T/moved" "$T/bad"
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

# shard PATH N SEED [magic version count_delta bad_at bad_value]: an llm.c shard of N uint16 tokens
# below 512 (the tiny vocabulary), with the header's fields and one token overridable
shard() {
    python3 - "$@" <<'PY'
import random, struct, sys
a = sys.argv[1:]
path, n, seed = a[0], int(a[1]), int(a[2])
magic, version, dcount, at, val = (int(x) for x in (a[3:] + ["20240520", "1", "0", "-1", "0"][len(a) - 3:]))
r = random.Random(seed)
toks = [r.randrange(512) for _ in range(n)]
if at >= 0: toks[at] = val
hdr = [0] * 256
hdr[0], hdr[1], hdr[2] = magic, version, n + dcount
open(path, "wb").write(struct.pack("<256i", *hdr) + struct.pack("<%dH" % n, *toks))
PY
}
shard "$T/data/train_00.bin" 3000 1
shard "$T/data/train_01.bin" 2200 2
shard "$T/data/val_00.bin" 700 3
cp "$T/data/train_00.bin" "$T/data/train_01.bin" "$T/moved/"

# the run every case shares: 8 steps of cosine with warm-up, clipping, 2 micro-batches
C="--device cpu --seq 16 --batch 2 --steps 8 --accum 2 --lr 2e-3 --lr-schedule cosine --lr-warmup 2 --min-lr-ratio 0.1 --clip-grad-norm 0.5"
DATA="$T/data/train_*.bin"
# run NAME args...: the tool's stdout and stderr into $T/NAME.out / .err, its exit code into rc
# (S may be a sanitizer build: a report in its stderr is a failure of its own)
run() {
    name=$1; shift
    "$S" train "$@" > "$T/$name.out" 2> "$T/$name.err"; rc=$?
    if grep -q -E "Sanitizer|runtime error:" "$T/$name.err"; then bad "$name: $(grep -m 1 -E "Sanitizer|runtime error:" "$T/$name.err")"; fi
}
# step lines S >= FROM: step, loss, lr and norm (the timings differ)
steps_from() { awk -v f="$2" '$1 == "step" && $2 >= f { print $1, $2, $3, $4, $5, $6, $7, $8 }' "$1"; }

# ---- resume: the bytes and step lines of an uninterrupted run ----
for mode in resident full slide; do
    case $mode in
        resident) X=""; D=$DATA ;;
        full) X="--ckpt full"; D="$T/moved/train_*.bin" ;; # the shards moved: names and sizes match
        slide) X="--mode slide"; D=$DATA ;;
    esac
    run "$mode.a" --model tiny $C $X --data "$DATA" --save "$T/$mode.a" --save-every 3
    if [ "$rc" -eq 0 ] && [ -d "$T/$mode.a/step_000003" ] && [ -d "$T/$mode.a/step_000006" ] &&
        [ "$(grep -c '^step ' "$T/$mode.a.out")" -eq 8 ]; then
        ok "$mode: 8 steps with --save-every 3 wrote step_000003 and step_000006"
    else bad "$mode: first run (exit $rc): $(head -c 300 "$T/$mode.a.err")"; fi
    run "$mode.b" $C $X --data "$D" --resume "$T/$mode.a/step_000003" --save "$T/$mode.b"
    if [ "$rc" -eq 0 ] && grep -q "^resumed from .* at step 3 " "$T/$mode.b.out" &&
        [ "$(awk '$1 == "step" { print $2; exit }' "$T/$mode.b.out")" = 4 ]; then
        ok "$mode: --resume step_000003 continues at step 4"
    else bad "$mode: resumed run (exit $rc): $(head -c 300 "$T/$mode.b.err") $(head -3 "$T/$mode.b.out")"; fi
    if cmp -s "$T/$mode.a/model.safetensors" "$T/$mode.b/model.safetensors"; then
        ok "$mode: the resumed run's final weights == the uninterrupted run's, byte for byte"
    else bad "$mode: final weights differ after --resume"; fi
    steps_from "$T/$mode.a.out" 4 > "$T/$mode.a.steps"; steps_from "$T/$mode.b.out" 4 > "$T/$mode.b.steps"
    if [ "$(wc -l < "$T/$mode.a.steps")" -eq 5 ] && cmp -s "$T/$mode.a.steps" "$T/$mode.b.steps"; then
        ok "$mode: step lines 4..8 (loss, lr, norm) identical ($(tail -1 "$T/$mode.b.steps"))"
    else bad "$mode: step lines 4..8 differ: $(diff "$T/$mode.a.steps" "$T/$mode.b.steps" | head -4 | tr '\n' ' ')"; fi
done
# the schedule and the clip as printed: warm-up from 0, the peak at step 3, every norm clipped
awk '$1 == "step" { print $2, $6 }' "$T/resident.a.out" > "$T/lrs"
if [ "$(sed -n 1p "$T/lrs")" = "1 0.000000e+00" ] && [ "$(sed -n 2p "$T/lrs")" = "2 1.000000e-03" ] &&
    [ "$(sed -n 3p "$T/lrs")" = "3 2.000000e-03" ] &&
    awk '$1 == "step" && !($8 > 0.5) { exit 1 }' "$T/resident.a.out"; then
    ok "printed lr: 0, 1e-3, 2e-3 over the warm-up; every norm > 0.5 (the clip bites)"
else bad "printed lr / norm: $(tr '\n' ' ' < "$T/lrs")"; fi
# resident's checkpoint resumed in slide mode: the same bytes (both modes give the same bits)
run cross $C --mode slide --data "$DATA" --resume "$T/resident.a/step_000006" --save "$T/cross"
if [ "$rc" -eq 0 ] && cmp -s "$T/resident.a/model.safetensors" "$T/cross/model.safetensors"; then
    ok "a resident checkpoint resumed with --mode slide ends with resident's bytes"
else bad "resume across modes (exit $rc): $(head -c 300 "$T/cross.err")"; fi
if cmp -s "$T/resident.a/model.safetensors" "$T/slide.a/model.safetensors" &&
    cmp -s "$T/resident.a/model.safetensors" "$T/full.a/model.safetensors"; then
    ok "resident, --ckpt full and --mode slide end with the same bytes"
else bad "the three uninterrupted runs differ"; fi

# the default schedule (constant) resumes too
Q="--device cpu --seq 8 --batch 1 --steps 4 --lr 1e-3"
run const.a --model tiny $Q --data "$DATA" --save "$T/const.a" --save-every 2
run const.b $Q --data "$DATA" --resume "$T/const.a/step_000002" --save "$T/const.b"
if [ "$rc" -eq 0 ] && cmp -s "$T/const.a/model.safetensors" "$T/const.b/model.safetensors"; then
    ok "the constant schedule (the default) resumes: the same final bytes"
else bad "resume of a constant-schedule run (exit $rc): $(head -c 300 "$T/const.b.err")"; fi

# ---- kill -9 while --save-every 1 writes ----
K="--device cpu --seq 8 --batch 1 --steps 60 --lr 1e-3 --lr-schedule linear --lr-warmup 2 --clip-grad-norm 1"
"$S" train --model tiny $K --data "$DATA" --save "$T/kill" --save-every 1 > "$T/kill.out" 2>&1 &
pid=$!
i=0 # until a checkpoint exists (at most ~30 s), then until a save is under way (at most ~3 s)
while [ $i -lt 300 ] && ! ls -d "$T/kill/step_"* > /dev/null 2>&1; do sleep 0.1; i=$((i + 1)); done
i=0; during="between saves"
while [ $i -lt 300 ]; do
    if ls -d "$T/kill/.step_"*.tmp > /dev/null 2>&1; then during="while a save was under way"; break; fi
    sleep 0.01; i=$((i + 1))
done
kill -9 $pid 2> /dev/null; wait $pid 2> /dev/null; krc=$?
grep -q -E "Sanitizer|runtime error:" "$T/kill.out" && bad "kill run: $(grep -m 1 -E "Sanitizer|runtime error:" "$T/kill.out")"
[ "$krc" -eq 137 ] && ok "kill -9 stopped the run (exit 137) $during" || bad "the run was not killed (exit $krc; too fast?)"
n=0; whole=1; last=""
for d in "$T/kill/step_"*; do
    [ -d "$d" ] || continue
    n=$((n + 1)); last=$d
    for f in model.safetensors config.json optimizer.safetensors trainer_state.json; do
        [ -s "$d/$f" ] || { whole=0; echo "  $d lacks $f"; }
    done
    grep -q '"format": "slidecheck-trainer-1"' "$d/trainer_state.json" || whole=0
done
[ "$n" -ge 1 ] && [ "$whole" -eq 1 ] && ok "after kill -9 every one of $n step_* directories is whole ($(ls -a "$T/kill" | grep -c '^\.step_.*\.tmp$') .tmp left)" \
    || bad "after kill -9: $n checkpoints, whole $whole"
if [ -n "$last" ]; then
    run kill.resume $K --data "$DATA" --resume "$last"
    [ "$rc" -eq 0 ] && [ "$(grep -c '^step ' "$T/kill.resume.out")" -ge 1 ] && grep -q "^step 60 " "$T/kill.resume.out" &&
        ok "--resume from the last whole checkpoint ($(basename "$last")) runs to step 60" ||
        bad "--resume after kill -9 (exit $rc): $(head -c 300 "$T/kill.resume.err")"
fi

# ---- refusals: a non-zero exit, a message naming the problem, no step trained ----
# refuse CODE DESC PATTERN args...: `train args` exits CODE, stderr matches PATTERN (grep -E), no step line
refuse() {
    code=$1; desc=$2; pat=$3; shift 3
    run refuse "$@"
    if [ "$rc" -eq "$code" ] && grep -q -E -e "$pat" "$T/refuse.err" && ! grep -q '^step ' "$T/refuse.out"; then
        ok "$desc (exit $rc: $(head -n 1 "$T/refuse.err" | head -c 200))"
    else bad "$desc: exit $rc (expected $code), stderr: $(head -c 300 "$T/refuse.err"), steps: $(grep -c '^step ' "$T/refuse.out")"; fi
}
R="$T/resident.a/step_000003"
CB="--device cpu --seq 16 --steps 8 --accum 2 --lr-schedule cosine --lr-warmup 2 --min-lr-ratio 0.1 --clip-grad-norm 0.5"
refuse 1 "resume with another --batch" "--batch differs: saved 2, this run 4" $CB --batch 4 --lr 2e-3 --data "$DATA" --resume "$R"
refuse 1 "resume with another --seq" "--seq differs: saved 16, this run 32" \
    --device cpu --seq 32 --batch 2 --steps 8 --accum 2 --lr 2e-3 --lr-schedule cosine --lr-warmup 2 --min-lr-ratio 0.1 \
    --clip-grad-norm 0.5 --data "$DATA" --resume "$R"
refuse 1 "resume with another --lr" "--lr differs" $CB --batch 2 --lr 1e-3 --data "$DATA" --resume "$R"
refuse 1 "resume with another --lr-schedule" "--lr-schedule differs: saved cosine, this run linear" \
    $C --lr-schedule linear --data "$DATA" --resume "$R"
refuse 1 "resume with another --optim" "--optim differs: saved adamw, this run sgd" $C --optim sgd --data "$DATA" --resume "$R"
refuse 1 "resume with another --steps" "--steps .* differs" \
    --device cpu --seq 16 --batch 2 --steps 9 --accum 2 --lr 2e-3 --lr-schedule cosine --lr-warmup 2 --min-lr-ratio 0.1 \
    --clip-grad-norm 0.5 --data "$DATA" --resume "$R"
refuse 1 "resume with another --clip-grad-norm" "--clip-grad-norm differs" $C --clip-grad-norm 0.25 --data "$DATA" --resume "$R"
refuse 1 "resume on other data (another glob)" "training data" $C --data "$T/data/train_00.bin" --resume "$R"
refuse 1 "resume on shuffled data" "training data" $C --data "$DATA" --shuffle 7 --resume "$R"
refuse 1 "resume from a directory without a trainer state" "trainer_state.json" $C --data "$DATA" --resume "$T/resident.a"
refuse 2 "resume with --model" "--resume DIR takes the model from DIR" $C --model tiny --data "$DATA" --resume "$R"
mkdir -p "$T/opt_bad"; cp "$R"/* "$T/opt_bad/"; head -c 1000 "$R/optimizer.safetensors" > "$T/opt_bad/optimizer.safetensors"
refuse 1 "resume with a truncated optimizer.safetensors" "opt_bad/optimizer.safetensors" $C --data "$DATA" --resume "$T/opt_bad"

# shards the reader refuses, each named with what is wrong
shard "$T/bad/magic.bin" 1000 4 20240521
shard "$T/bad/version.bin" 1000 4 20240520 2
shard "$T/bad/trunc.bin" 1000 4 20240520 1 200
shard "$T/bad/vocab.bin" 1000 4 20240520 1 0 123 600
: > "$T/bad/empty.bin"
refuse 1 "a shard with a bad magic" "bad/magic.bin.*bad magic 20240521" --model tiny $C --data "$T/bad/magic.bin"
refuse 1 "a shard of another version" "bad/version.bin.*version 2" --model tiny $C --data "$T/bad/version.bin"
refuse 1 "a truncated shard" "bad/trunc.bin.*truncated" --model tiny $C --data "$T/bad/trunc.bin"
refuse 1 "a token >= vocab_size" "bad/vocab.bin.*position 123 is 600" --model tiny $C --data "$T/bad/vocab.bin"
refuse 1 "an empty file" "bad/empty.bin.*empty" --model tiny $C --data "$T/bad/empty.bin"
refuse 1 "a glob that matches nothing" "no file matches .*nothing_\*\.bin" --model tiny $C --data "$T/nothing_*.bin"
refuse 1 "a bad validation shard" "bad/magic.bin" --model tiny $C --data "$DATA" --val-data "$T/bad/magic.bin" --val-every 2
refuse 2 "--val-data without --val-every" "go together" --model tiny $C --data "$DATA" --val-data "$T/data/val_00.bin"
refuse 2 "--val-every without --val-data" "go together" --model tiny $C --data "$DATA" --val-every 2
refuse 2 "--val-data without --data" "need --data" --model tiny $C --val-data "$T/data/val_00.bin" --val-every 2
refuse 2 "--resume without --data" "--resume continues a run on --data" $C --resume "$R"
refuse 2 "--lr-schedule bogus" "--lr-schedule must be constant, linear or cosine, not 'bogus'" \
    --model tiny $C --data "$DATA" --lr-schedule bogus
refuse 2 "--clip-grad-norm -1" "--clip-grad-norm .*-1" --model tiny $C --data "$DATA" --clip-grad-norm -1
refuse 2 "--min-lr-ratio 2" "--min-lr-ratio must be in" --model tiny $C --data "$DATA" --min-lr-ratio 2
refuse 1 "--clip-grad-norm with --mode slide --slide-dpu" "clip_grad_norm" \
    --model tiny $C --data "$DATA" --mode slide --slide-dpu
refuse 1 "--clip-grad-norm with --mode slide --slide-keep-head" "clip_grad_norm" \
    --model tiny $C --data "$DATA" --mode slide --slide-keep-head

# ---- validation: lines at steps 2, 4, 6; step_metrics.csv's columns; training unchanged by it ----
V="--model tiny --device cpu --seq 16 --batch 2 --steps 6 --lr 2e-3 --lr-schedule linear --lr-warmup 1 --clip-grad-norm 0.5"
run val $V --data "$DATA" --val-data "$T/data/val_*.bin" --val-every 2 --val-batches 3 --out "$T/val" --save "$T/val"
vs=$(awk '$1 == "val" { printf "%s ", $3 }' "$T/val.out")
[ "$rc" -eq 0 ] && [ "$vs" = "2 4 6 " ] && ok "--val-every 2 --steps 6: val step 2, 4, 6" || bad "validation lines (exit $rc): '$vs' $(head -c 300 "$T/val.err")"
if python3 - "$T/val/step_metrics.csv" "$T/val.out" <<'PY'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 6, len(rows)
out = {}
for line in open(sys.argv[2]):
    f = line.split()
    if f[:1] == ["step"]: out[int(f[1])] = (float(f[5]), float(f[7]))
    if f[:2] == ["val", "step"]: out[("val", int(f[2]))] = float(f[4])
for i, r in enumerate(rows, 1):
    lr, gn, vl = float(r["lr"]), float(r["grad_norm"]), float(r["val_loss"])
    assert abs(lr - out[i][0]) <= 1e-6 * max(lr, 1e-12) + 1e-15, (i, lr, out[i])
    assert gn > 0 and abs(gn - out[i][1]) <= 1e-6 * gn, (i, gn, out[i])
    if i % 2 == 0: assert abs(vl - out[("val", i)]) <= 1e-6 * vl, (i, vl)
    else: assert math.isnan(vl), (i, vl)
assert float(rows[0]["lr"]) == 0.0 and abs(float(rows[1]["lr"]) - 2e-3) < 1e-12, rows[1]["lr"]
PY
then ok "step_metrics.csv: lr, grad_norm as printed; val_loss at steps 2, 4, 6 as printed, nan elsewhere"
else bad "step_metrics.csv lr / grad_norm / val_loss"; fi
run noval $V --data "$DATA" --save "$T/noval"
steps_from "$T/val.out" 1 > "$T/val.steps"; steps_from "$T/noval.out" 1 > "$T/noval.steps"
if [ "$rc" -eq 0 ] && cmp -s "$T/val.steps" "$T/noval.steps" && cmp -s "$T/val/model.safetensors" "$T/noval/model.safetensors"; then
    ok "validation changes no step line and no weight (against the same run without it)"
else bad "validation changed training (exit $rc)"; fi
# data parallel on the CPU (two processes): the clipped run with ZeRO-1 and in slide mode gives
# plain data parallel's weights, bit for bit (every rank sums every gradient before the norm)
for v in dp "dpz --zero 1" "dps --mode slide" "dpsz --mode slide --zero 1"; do
    set -- $v
    n=$1; shift
    run "$n" --model tiny $C --data "$DATA" --gpus 2 --save "$T/$n" "$@"
    [ "$rc" -eq 0 ] || bad "$n: exit $rc: $(tail -2 "$T/$n.err")"
done
if cmp -s "$T/dp/model.safetensors" "$T/dpz/model.safetensors"; then ok "2 ranks, clipping: ZeRO-1 == plain data parallel (bitwise)"
else bad "2 ranks, clipping: ZeRO-1 differs from plain data parallel"; fi
if cmp -s "$T/dp/model.safetensors" "$T/dps/model.safetensors"; then ok "2 ranks, clipping: slide == resident (bitwise)"
else bad "2 ranks, clipping: slide differs from resident"; fi
if cmp -s "$T/dp/model.safetensors" "$T/dpsz/model.safetensors"; then ok "2 ranks, clipping: slide with ZeRO-1 == resident (bitwise)"
else bad "2 ranks, clipping: slide with ZeRO-1 differs from resident"; fi
# ...and each resumes from its --save-every checkpoint (every rank's part of the state gathered
# into one optimizer.safetensors, each rank taking its part back) to the same bytes
for v in "dpz --zero 1" "dpsz --mode slide --zero 1"; do
    set -- $v
    n=$1; shift
    run "$n.a" --model tiny $C --data "$DATA" --gpus 2 --save "$T/$n.a" --save-every 5 "$@"
    run "$n.b" $C --data "$DATA" --gpus 2 --resume "$T/$n.a/step_000005" --save "$T/$n.b" "$@"
    if [ "$rc" -eq 0 ] && cmp -s "$T/dp/model.safetensors" "$T/$n.b/model.safetensors" &&
        [ "$(steps_from "$T/$n.a.out" 6)" = "$(steps_from "$T/$n.b.out" 6)" ]; then
        ok "2 ranks, $*: resumed at step 5, the bytes and step lines of the run never stopped"
    else bad "2 ranks, $*: resume (exit $rc): $(tail -c 300 "$T/$n.b.err")"; fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
