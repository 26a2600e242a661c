#!/bin/sh
# Every demo runs on the CPU with `tiny` and a handful of steps; each file it lists must exist,
# PNGs must decode at their size, CSVs must have their columns with finite values, summary.md
# must embed the figures. Bad flags exit 2. Prints PASS/FAIL lines and "N passed, M failed".
cd "$(dirname "$0")/.." || exit 1
T=${T:-build/tmp_demos}
C=./build/check_outputs
B=${B:-./build/cpu}
rm -rf "$T"
mkdir -p "$T"
pass=0; fail=0
ok()  { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
check() { out=$("$C" "$@"); if [ $? -eq 0 ]; then ok "${out#PASS }"; else bad "${out#FAIL }"; fi; }

# run NAME ARGS...: the demo must exit 0 and print progress
run() {
    name=$1; shift
    if OMP_WAIT_POLICY=passive "$B/$name" --device cpu --out "$T/$name" "$@" > "$T/$name.log" 2>&1; then
        ok "$name $* (exit 0)"
    else
        bad "$name $* exited $?: $(tail -n 5 "$T/$name.log")"
    fi
}
# bad_flags NAME: an unknown flag and a bad value exit 2 with a message
bad_flags() {
    "$B/$1" --no-such-flag 1 > "$T/err.log" 2>&1
    rc=$?; [ $rc -eq 2 ] && grep -q "unknown option" "$T/err.log" && ok "$1: unknown flag exits 2" || bad "$1: unknown flag exited $rc"
    "$B/$1" --steps zero > "$T/err.log" 2>&1
    rc=$?; [ $rc -eq 2 ] && ok "$1: bad --steps exits 2" || bad "$1: bad --steps exited $rc"
}
# pngs NAME FILE:WxH...: each PNG of demo NAME decodes at its size, and summary.md embeds it
pngs() {
    d=$T/$1; shift
    names=""
    for spec in "$@"; do
        f=${spec%%:*}; wh=${spec#*:}
        check png "$d/$f" "${wh%x*}" "${wh#*x}"
        names="$names $f"
    done
    # shellcheck disable=SC2086 # a list of file names without spaces
    check md "$d/summary.md" $names
}

# ---- t1m2: recompute off vs on -------------------------------------------------------------
run t1m2 --steps 4
pngs t1m2 layer_fwd_mean_ci.png:1280x720 layer_bwd_mean_ci.png:1280x720 layer_total_mean_ci.png:1280x720 \
    layer_delta_total.png:1280x720 step_wall_ms_compare.png:1280x720 step_wall_ms_delta.png:1280x720 \
    mem_timeline_cpu_gpualloc_compare.png:1280x725 mem_timeline_cpu_gpureserved_compare.png:1280x725 \
    layer_recompute_mean_ci.png:1280x720
check csv "$T/t1m2/summary.csv" mode,n,mean_step_wall_ms,peak_gpu_alloc_gib,peak_gpu_reserved_gib,peak_cpu_rss_gib
check csv "$T/t1m2/step_metrics.csv" step,wall_ms
check csv "$T/t1m2/layer_metrics.csv" layer
for k in fwd bwd total; do for r in 0 1; do
    check csv "$T/t1m2/layer_${k}_ci_r$r.csv" layer,n,mean_ms,std_ms,ci95_ms,ci_lo,ci_hi
done; done
check csv "$T/t1m2/layer_mean_merged.csv" layer
bad_flags t1m2

# ---- t1m1: resident vs checkpoint vs slide vs auto ------------------------------------------
run t1m1 --steps 4
pngs t1m1 fig01_wall_distribution.png:960x720 fig02_time_breakdown.png:1440x1030 fig03_peak_memory.png:1280x720 \
    fig04_memory_timeline.png:1280x1025 fig05_layer_forward.png:1280x720 fig06_layer_backward_recompute.png:1280x720 \
    fig07_layer_optimizer.png:1280x720
check csv "$T/t1m1/metrics_iter.csv" run,step,wall_ms,fwd_ms,bwd_ms,recompute_ms,opt_ms,h2d_busy_ms,d2h_busy_ms,host_opt_busy_ms,opt_wait_ms,alloc_peak_bytes,reserved_peak_bytes
check csv "$T/t1m1/metrics_layer.csv" run,layer,fwd_mean_ms,fwd_ci95_ms,bwd_mean_ms,recompute_mean_ms,opt_mean_ms
check csv "$T/t1m1/mem_trace.csv" run,step,t_ms,allocated_bytes,reserved_bytes,rss_bytes
check csv "$T/t1m1/auto_plan.csv" mem_cap_bytes,device_layers,predicted_peak_bytes,peak_alloc_bytes,predicted_step_ms,median_ms
grep -q '^"auto",' "$T/t1m1/metrics_iter.csv" && ok "t1m1: auto's steps in metrics_iter.csv" || bad "t1m1: no auto rows in metrics_iter.csv"
bad_flags t1m1

# ---- sweep: the Pareto frontier and sequence scaling ----------------------------------------
run sweep --steps 3
pngs sweep pareto.png:1200x600 seq_scaling.png:1200x600
check csv "$T/sweep/pareto.csv" policy,mode,n,median_ms,peak_alloc_bytes,on_frontier,loss_bitwise_equal_to_none
check csv "$T/sweep/seq_scaling.csv" policy,seq,n,median_ms,peak_alloc_bytes
# --mode auto's points: three by default, each with its cap and predictions, losses equal to none's
n=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $c["auto_cap_bytes"] != "" && $c["loss_bitwise_equal_to_none"] == 1 &&
    $c["auto_predicted_step_ms"] > 0 { n++ } END { print n + 0 }' "$T/sweep/pareto.csv")
[ "$n" -eq 3 ] && ok "sweep: 3 --mode auto points with their predictions, bitwise equal to none" || bad "sweep: $n good auto points, not 3"
bad_flags sweep

# ---- placement: what --mode auto chooses cap by cap -----------------------------------------
run placement
pngs placement placement.png:1400x1000
check csv "$T/placement/placement.csv" cap_bytes,device_layers,predicted_peak_bytes,peak_alloc_bytes,predicted_step_ms,median_ms,loss_bitwise_equal_to_resident
# five caps by default, each fitted and trained with resident's bits; the largest holds resident mode
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $c["fits"] == 1 && $c["loss_bitwise_equal_to_resident"] == 1 { n++ }
    { last = $c["device_layers"] == $c["num_layers"] } END { exit !(n == 5 && last) }' "$T/placement/placement.csv" \
    && ok "placement: 5 caps trained bitwise equal to resident, the largest all on the device" || bad "placement: placement.csv rows"
# caps given in GiB and as sizes; a cap below what anything needs is reported, not fatal
run2() { OMP_WAIT_POLICY=passive "$B/placement" --device cpu --steps 2 --out "$T/placement2" "$@" > "$T/placement2.log" 2>&1; }
if run2 --caps 0.001,40MiB,0.06; then
    n=$(awk -F, 'NR > 1 { n++ } END { print n + 0 }' "$T/placement2/placement.csv")
    [ "$n" -eq 3 ] && grep -q "smallest cap that fits" "$T/placement2.log" && ok "placement --caps 0.001,40MiB,0.06 (3 rows, too small reported)" \
        || bad "placement --caps: $n rows"
else bad "placement --caps exited $?: $(tail -n 3 "$T/placement2.log")"; fi
bad_flags placement
"$B/placement" --caps 8,x > "$T/err.log" 2>&1
rc=$?; [ $rc -eq 2 ] && ok "placement: bad --caps exits 2" || bad "placement: bad --caps exited $rc"

# ---- maxbatch: the largest batch under a memory cap ------------------------------------------
run maxbatch
pngs maxbatch maxbatch.png:1200x600
check csv "$T/maxbatch/maxbatch.csv" policy,mode,mem_cap_bytes,max_batch,tokens_per_s
bad_flags maxbatch

# ---- textdemo: a byte-level model on a real text, read from the token shards it writes -----
run textdemo --steps 20
pngs textdemo loss_curves.png:1400x1110
check csv "$T/textdemo/loss.csv" run,step,loss,lr,grad_norm,val_loss,elapsed_ms
for f in train_00.bin train_01.bin val_00.bin; do
    [ -s "$T/textdemo/shards/$f" ] && ok "textdemo wrote shards/$f" || bad "textdemo: no shards/$f"
done
# the validation loss falls over the 20 steps (first vs last evaluation of the first run); columns by name
vals=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    NR == 2 { r = $c["run"] } $c["run"] == r && $c["val_loss"] != "" { if (f == "") f = $c["val_loss"]; l = $c["val_loss"] }
    END { print f, l }' "$T/textdemo/loss.csv")
if awk -v v="$vals" 'BEGIN { split(v, a, " "); exit !(a[1] != "" && a[2] + 0 < a[1] - 0.5) }'; then
    ok "textdemo: validation loss falls ($vals)"
else bad "textdemo: validation loss did not fall by 0.5 nats ($vals)"; fi
grep -q "bitwise" "$T/textdemo.log" && ok "textdemo reports the bitwise check" || bad "textdemo: no bitwise line in its log"
# the log's name-value lines: 20 steps and 11 evaluations (steps 0, 2, ..., 20) per run, 4 runs
n=$(grep -c '^step [0-9]* loss [0-9.]* lr [0-9.e+-]* norm [0-9.]*' "$T/textdemo.log")
[ "$n" -eq 80 ] && ok "textdemo prints 'step S loss X lr X norm X' for every step ($n)" || bad "textdemo: $n step lines, not 80"
n=$(grep -c '^val step [0-9]* loss [0-9.]*$' "$T/textdemo.log")
[ "$n" -eq 44 ] && ok "textdemo prints 'val step S loss X' for every evaluation ($n)" || bad "textdemo: $n val lines, not 44"
# the schedule in loss.csv: step 1 has lr 0 (the warm-up starts from 0), step 20 about 10% of the peak 1e-3
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $c["run"] == "none" && $c["step"] == 1 { a = $c["lr"] }
    $c["run"] == "none" && $c["step"] == 20 { b = $c["lr"] } END { exit !(a == 0 && b > 1e-4 && b < 1.2e-4) }' \
    "$T/textdemo/loss.csv" && ok "textdemo: lr warms up from 0 and ends near 10% of 1e-3" || bad "textdemo: lr schedule in loss.csv"
bad_flags textdemo
"$B/textdemo" --clip-grad-norm -1 > "$T/err.log" 2>&1
rc=$?; [ $rc -eq 2 ] && ok "textdemo: bad --clip-grad-norm exits 2" || bad "textdemo: bad --clip-grad-norm exited $rc"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
