#!/bin/sh
# --mode auto against a brute-force sweep of the hand knobs at the same caps (after make, on a GPU):
# the Qwen3-1.7B shape, 2048 x 4, bf16 with f32 master weights, AdamW and SGD, under each cap of CAPS.
# Every hand configuration is a train run under --mem-cap (one that does not fit fails fast and is
# listed as such); auto is `train --mode auto` at the same cap. Writes OUT/sweep.csv (cap, optim,
# config, exit, median step ms, peak allocated / reserved GiB) and OUT/verdict.txt: per cap and
# optimizer the fastest hand configuration beside auto's, and auto / best (target <= 1.10).
# About 40 runs of ~35 s a cap and optimizer with the defaults: split a long sweep with CAPS / OPTIMS
# (the CSV is appended to when OUT/sweep.csv exists).
#   sh bench/auto_sweep.sh OUT      (CAPS="24GiB 16GiB 8GiB", OPTIMS="adamw sgd", STEPS=6,
#                                    CKPTS="none selective full", PREFETCH="1 2", DLS="none first:8 first:14")
set -u
O=${1:?usage: auto_sweep.sh OUT}
mkdir -p "$O"
CAPS=${CAPS:-"24GiB 16GiB 8GiB"}; OPTIMS=${OPTIMS:-"adamw sgd"}; STEPS=${STEPS:-6}
A="train --model qwen3-1.7b --seq 2048 --batch 4 --dtype bf16 --master-weights --device cuda --steps $STEPS --lr 1e-4"
CSV="$O/sweep.csv"
CKPTS=${CKPTS:-"none selective full"}; PREFETCH=${PREFETCH:-"1 2"}; DLS=${DLS:-"none first:8 first:14"}
[ -f "$CSV" ] || echo "cap,optim,config,exit,median_ms,peak_alloc_gib,peak_reserved_gib" > "$CSV"
# run CAP OPTIM NAME FLAGS...: one train run, its summary into the CSV
run() {
    cap=$1; opt=$2; name=$3; shift 3
    log="$O/$(echo "${cap}_${opt}_$name" | tr ' :/,' '____').log"
    # shellcheck disable=SC2086
    ./build/slidecheck $A --optim "$opt" --mem-cap "$cap" "$@" > "$log" 2>&1; rc=$?
    ms=$(grep -o 'median step [0-9.]*' "$log" | head -n 1 | awk '{print $3}')
    pa=$(grep '^summary' "$log" | grep -o 'peak allocated [0-9.]*' | head -n 1 | awk '{print $3}')
    pr=$(grep '^summary' "$log" | grep -o 'peak reserved [0-9.]*' | head -n 1 | awk '{print $3}')
    echo "$cap,$opt,$name,$rc,${ms:-},${pa:-},${pr:-}" >> "$CSV"
}
for cap in $CAPS; do
    for opt in $OPTIMS; do
        run "$cap" "$opt" auto --mode auto
        for ck in $CKPTS; do
            run "$cap" "$opt" "resident $ck" --ckpt "$ck"
            for P in $PREFETCH; do
                for head in "" "--slide-keep-head"; do
                    for dl in $DLS; do
                        extra=""
                        [ "$dl" != none ] && extra="--slide-device-layers $dl"
                        # shellcheck disable=SC2086
                        run "$cap" "$opt" "slide $ck P$P ${head:-slot} $dl" --mode slide --ckpt "$ck" --slide-prefetch $P $head $extra
                    done
                done
            done
            # SGD: the update on the device, in its slot
            [ "$opt" = sgd ] && run "$cap" "$opt" "slide $ck device-update" --mode slide --ckpt "$ck" --slide-device-update
        done
    done
done
python3 - "$CSV" <<'PY' | tee "$O/verdict.txt"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))]
for key in sorted({(r['cap'], r['optim']) for r in rows}):
    cell = [r for r in rows if (r['cap'], r['optim']) == key and r['exit'] == '0' and r['median_ms']]
    auto = [r for r in cell if r['config'] == 'auto']
    hand = sorted((r for r in cell if r['config'] != 'auto'), key=lambda r: float(r['median_ms']))
    ran = sum(1 for r in rows if (r['cap'], r['optim']) == key and r['config'] != 'auto')
    if not hand or not auto:
        print('%s %s: auto %s, %d of %d hand configurations fit' % (key[0], key[1], 'ran' if auto else 'failed', len(hand), ran))
        continue
    a, b = float(auto[0]['median_ms']), float(hand[0]['median_ms'])
    print('%s %s: auto %.2f ms, fastest hand "%s" %.2f ms (%d of %d fit): auto / best %.3f (target <= 1.10)'
          % (key[0], key[1], a, hand[0]['config'], b, len(hand), ran, a / b))
PY
