#!/bin/sh
# bench/auto_sweep.c on the CPU with tiny, at caps where resident fits with recompute (43MiB), only
# slide with recompute fits (31MiB) and nothing fits (24MiB): it writes the CSV (a row for auto and
# every hand configuration of each cap and optimizer) and the verdict; every run's losses have
# auto's bits; every run stays under its cap; --time-limit skips what it cannot start; a dry run
# runs nothing; bad flags exit 2. Prints PASS/FAIL lines and "N passed, M failed".
cd "$(dirname "$0")/.." || exit 1
T=${T:-build/tmp_auto_sweep}
X=${X:-./build/auto_sweep}
rm -rf "$T"
mkdir -p "$T"
pass=0; fail=0
ok()  { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
export OMP_WAIT_POLICY=passive

A="--device cpu --model tiny --steps 1 --prefetch 1 --ckpts none,selective,full"
# shellcheck disable=SC2086 # A is a list of flags
if $X $A --caps 43MiB,31MiB,24MiB --out "$T/s" > "$T/s.log" 2>&1; then ok "sweep exits 0"; else bad "sweep exited $?: $(tail -n 5 "$T/s.log")"; fi
grep -q '^expected: 6 cells' "$T/s.log" && ok "the expected time is printed first" || bad "no 'expected:' line"
C=$T/s/sweep.csv
[ "$(head -n 1 "$C")" = "cap,optim,config,fits,pred_peak_bytes,peak_alloc_bytes,peak_reserved_bytes,pred_step_ms,median_step_ms,n,bitwise_equal,status,note,h2d_bytes,d2h_bytes,host_update_params,host_opt_ms,pred_compute_ms,pred_copy_ms,pred_host_opt_ms,fwd_ms,bwd_ms,recompute_ms,opt_ms" ] \
    && ok "CSV header" || bad "CSV header: $(head -n 1 "$C")"
want=$(grep -E '^cap [0-9]+MiB (adamw|sgd): [0-9]+ hand configurations' "$T/s.log" | awk '{s += $4 + 1} END {print s}')
got=$(($(wc -l < "$C") - 1))
[ -n "$want" ] && [ "$got" -eq "$want" ] && ok "a CSV row for auto and every hand configuration ($got)" || bad "CSV rows $got, want $want"
awk -F, 'NR > 1 && NF != 24 {bad = 1} END {exit bad}' "$C" && ok "24 fields on every row" || bad "a row without 24 fields"
# a slide run that ran records its last step's traffic and host updates (none where the device
# updates the layers and keeps the head); a resident one none
awk -F, 'NR > 1 && $12 == "ran" && $3 ~ /^slide / { n++; if (!($14 > 0 && $15 > 0 && $16 != "" && $17 != "")) bad = 1
                                                     if ($3 !~ /device-update/ && !($16 > 0 && $17 > 0)) bad = 1
                                                     if ($3 ~ /keep/ && $3 ~ /device-update/ && $16 != 0) bad = 1 }
         NR > 1 && $12 == "ran" && $3 ~ /^resident / && $14 != "" { bad = 1 }
         END { exit bad || !n }' "$C" && ok "slide runs: bytes up and down, host-updated parameters and time recorded" ||
    bad "slide runs' traffic columns"
# every run's measured phases; every prediction's parts, the compute no more than the step
awk -F, 'NR > 1 && $12 == "ran" { n++; if (!($21 > 0 && $22 > 0 && $24 > 0 && $23 != "")) bad = 1 }
         NR > 1 && $8 != "" { p++; if (!($18 > 0 && $19 != "" && $20 != "" && $18 <= $8 + 0.001)) bad = 1 }
         NR > 1 && $12 != "ran" && $21 != "" { bad = 1 }
         END { exit bad || !n || !p }' "$C" && ok "runs' phase medians and predictions' parts recorded" ||
    bad "phase or prediction-part columns"
ran=$(awk -F, 'NR > 1 && $12 == "ran"' "$C" | wc -l)
neq=$(awk -F, 'NR > 1 && $12 == "ran" && $11 != "1"' "$C" | wc -l)
[ "$ran" -gt 20 ] && [ "$neq" -eq 0 ] && ok "every one of $ran runs has auto's losses, bitwise" || bad "$neq of $ran runs differ"
res=$(awk -F, 'NR > 1 && $12 == "ran" && $3 ~ /^resident/' "$C" | wc -l)
sl=$(awk -F, 'NR > 1 && $12 == "ran" && $3 ~ /^slide/' "$C" | wc -l)
[ "$res" -gt 0 ] && [ "$sl" -gt 0 ] && ok "resident ($res) and slide ($sl) configurations ran" || bad "resident $res, slide $sl ran"
awk -F, 'NR > 1 && $12 == "ran" {cap = $1 + 0; if ($6 > cap * 1048576 || $7 > cap * 1048576 || $9 !~ /^[0-9.]+$/ || $8 == "" && $3 ~ /^auto/) bad = 1} END {exit bad}' "$C" \
    && ok "every run's peaks under its cap, a median step, auto's prediction" || bad "a run over its cap or without a median"
[ "$(awk -F, 'NR > 1 && $1 == "24MiB" && $3 == "auto" && $12 == "no configuration fits"' "$C" | wc -l)" -eq 2 ] \
    && ok "24MiB: auto finds nothing fits (both optimizers)" || bad "24MiB: auto's row"
[ "$(awk -F, 'NR > 1 && $1 == "31MiB" && $3 ~ /^resident/ && $12 != "does not fit (predicted)"' "$C" | wc -l)" -eq 0 ] \
    && ok "31MiB: no resident configuration is run" || bad "31MiB: a resident configuration ran"
V=$T/s/verdict.txt
grep -q "^VERDICT: .* every run's losses bitwise equal to auto's: yes" "$V" && [ "$(grep -c '^cap ' "$V")" -eq 6 ] \
    && grep -q 'auto / best [0-9.]* (target <= 1.10' "$V" \
    && ok "verdict.txt: a line per cap and optimizer, auto / best, all bitwise" || bad "verdict.txt: $(cat "$V")"

# shellcheck disable=SC2086
$X $A --caps 43MiB --optims sgd --time-limit 0.000001 --out "$T/t" > "$T/t.log" 2>&1
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c ',skipped (time limit),' "$T/t/sweep.csv")" -gt 0 ] && ok "--time-limit: the rest listed as skipped" \
    || bad "--time-limit exited $rc"
# shellcheck disable=SC2086
$X $A --caps 31MiB --dry-run --out "$T/d" > "$T/d.log" 2>&1
rc=$?
[ $rc -eq 0 ] && [ ! -e "$T/d" ] && grep -q 'predicted peak .* fits' "$T/d.log" && ok "--dry-run lists and runs nothing" \
    || bad "--dry-run exited $rc"

# bad flags: a message and exit 2
for args in "--no-such-flag 1" "--caps 12XB" "--optims adam" "--steps 0" "--device-layers first:9" "--heads both" \
    "--dtype bf16" "--prefetch 0" "--ckpts budget:1GiB" "--steps"; do
    # shellcheck disable=SC2086
    $X --device cpu --model tiny $args > "$T/err.log" 2>&1
    rc=$?
    [ $rc -eq 2 ] && grep -q '^auto_sweep: ' "$T/err.log" && ok "$args: exits 2 with a message" || bad "$args: exited $rc"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
