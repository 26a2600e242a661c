#!/bin/sh
# Slide mode against resident mode on one GPU, with the floors measured in the same run:
# pinned H2D / D2H bandwidth (bench/floors.cu), host memory bandwidth (a triad, in
# bench/cpu_optim.c), the host optimizer against PyTorch's CPU AdamW, and each configuration's
# step (median after warm-ups, n printed). Writes $O/slide.csv, $O/floors.csv, $O/cpu_optim.txt,
# $O/torch_adamw.txt, $O/host_adamw.txt (+ $O/host_adamw/) and one log per run; the table at the end puts the
# floors beside each figure, and its last line gives the host AdamW's rate beside torch fused's.
#   sh bench/slide.sh [OUTDIR]        (BIN=dir of prebuilt binaries, default build; SKIP7B=1)
set -u
cd "$(dirname "$0")/.."
O=${1:-build/slide_bench}; BIN=${BIN:-build}; mkdir -p "$O"
TH=${THREADS:-$(nproc)}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; date -u +%F; } > "$O/machine.txt"
cat "$O/machine.txt"
"$BIN/floors" --bytes 2GiB --reps 10 > "$O/floors.txt" || exit 1
sed -n '/^csv/,$p' "$O/floors.txt" | tail -n +2 > "$O/floors.csv"
"$BIN/cpu_optim" --n 200000000 --threads "$TH" --reps 10 > "$O/cpu_optim.txt" || exit 1
# the same copies while the host optimizer's kernels run beside them: uploads, downloads and the
# update share host memory, so each is slower together than alone (slide_table.py's "shared" floor)
"$BIN/floors" --bytes 2GiB --reps 40 > "$O/floors_shared.txt" 2>&1 &
sleep 1; "$BIN/cpu_optim" --n 200000000 --threads "$TH" --reps 20 > "$O/cpu_optim_shared.txt" 2>&1; wait
sed -n '/^csv/,$p' "$O/floors_shared.txt" | tail -n +2 > "$O/floors_shared.csv"
[ "${ONLY7B:-0}" = 1 ] || [ -n "${ONLY:-}" ] || python3 bench/torch_cpu_adamw.py --n 200000000 --threads "$TH" --reps 10 > "$O/torch_adamw.txt" 2>&1
# the host AdamW against PyTorch's fused CPU AdamW, the same threads, in every run (bench/cpu_optim.sh: ours today,
# each candidate change and what the library now picks, then torch; HOST_ROUNDS alternating rounds, default 1)
ROUNDS=${HOST_ROUNDS:-1} THREADS="$TH" BIN="$BIN" sh bench/cpu_optim.sh "$O/host_adamw" > "$O/host_adamw.txt" 2>&1
cat "$O/floors.txt" "$O/floors_shared.txt" "$O/cpu_optim.txt" "$O/cpu_optim_shared.txt" "$O/torch_adamw.txt" \
    "$O/host_adamw.txt" 2>/dev/null

echo "label,model,mode,seq,batch,accum,optim,precision,ckpt,prefetch,step_ms,n,peak_alloc_gib,peak_resv_gib,peak_rss_gib,h2d_gb,d2h_gb,pinned_gib,params,tflops,loss0,status,h2d_first_gb,host_params" > "$O/slide.csv"
run() { # label model mode seq batch accum optim precision ckpt prefetch steps [extra flags]
    lab=$1 mdl=$2 mode=$3 s=$4 b=$5 a=$6 opt=$7 prec=$8 ck=$9; shift 9; pf=$1 st=$2; shift 2
    case $prec in pure-bf16) pf_flags="--dtype bf16 --pure-bf16";; master) pf_flags="--dtype bf16 --master-weights";;
                  *) pf_flags="--dtype bf16";; esac
    [ "$mode" = resident ] && pf_flags=$(echo "$pf_flags" | sed 's/--pure-bf16//')
    extra="--slide-prefetch $pf"; [ "$mode" = resident ] && extra=""
    "$BIN/slidecheck" train --model "$mdl" --device cuda --mode "$mode" --seq "$s" --batch "$b" --accum "$a" \
        --optim "$opt" --lr 1e-5 --ckpt "$ck" --steps "$st" --warmup 2 $pf_flags $extra "$@" > "$O/$lab.log" 2>&1
    rc=$?
    line=$(grep '^summary:' "$O/$lab.log")
    if [ $rc -ne 0 ] || [ -z "$line" ]; then
        echo "$lab,$mdl,$mode,$s,$b,$a,$opt,$prec,$ck,$pf,,,,,,,,,,,,exit $rc,," >> "$O/slide.csv"
        echo "== $lab: exit $rc"; tail -n 12 "$O/$lab.log"; return
    fi
    echo "$line" | awk -v pre="$lab,$mdl,$mode,$s,$b,$a,$opt,$prec,$ck,$pf" '{
        for (i = 1; i <= NF; i++) {
            if ($i == "loss" && !l0) l0 = $(i + 1)
            if ($i == "step" && $(i - 1) == "median") ms = $(i + 1)
            if ($i ~ /^\(n=/) n = substr($i, 4)
            if ($i == "allocated") pa = $(i + 1)
            if ($i == "reserved") pr = $(i + 1)
            if ($i == "rss") rss = $(i + 1)
            if ($i == "h2d") h = $(i + 1)
            if ($i == "d2h") d = $(i + 1)
            if ($i == "pinned") pin = $(i + 1)
            if ($i == "params") np = $(i + 1)
            if ($i == "TFLOP/s") tf = $(i - 1)
            if ($i == "h2d-fwd") hf = $(i + 1)
            if ($i == "host-opt") hp = $(i + 2)
        }
        printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,ok,%s,%s\n", pre, ms, n, pa, pr, rss, h, d, pin, np, tf, l0, hf, hp }' >> "$O/slide.csv"
    echo "== $lab"; echo "$line"
}
if [ "${ONLY7B:-0}" != 1 ] && [ -n "${ONLY:-}" ]; then
# ONLY="label ..." runs just those 256 x 1 rows (and the resident one beside them)
run r256  qwen3-1.7b resident 256 1 1 sgd bf16      none 0 14
for l in $ONLY; do case $l in
    s256h) run s256h qwen3-1.7b slide 256 1 1 sgd pure-bf16 none 1 14 --head-slice 8192 --out "$O/trace_s256h";;
    s256hdu) run s256hdu qwen3-1.7b slide 256 1 1 sgd pure-bf16 none 1 14 --head-slice 8192 --slide-device-update --out "$O/trace_s256hdu";;
    s256hp2du) run s256hp2du qwen3-1.7b slide 256 1 1 sgd pure-bf16 none 2 14 --head-slice 8192 --slide-device-update;;
    s256du) run s256du qwen3-1.7b slide 256 1 1 sgd pure-bf16 none 1 14 --slide-device-update;;
    s256kdu) run s256kdu qwen3-1.7b slide 256 1 1 sgd pure-bf16 none 1 14 --slide-keep-head --slide-device-update;;
    s256fodu) run s256fodu qwen3-1.7b slide 256 1 1 sgd pure-bf16 full 1 14 --head-slice 8192 --slide-head-once --slide-device-update --out "$O/trace_s256fodu";;
    s256fodu2) run s256fodu2 qwen3-1.7b slide 256 1 1 sgd pure-bf16 full 2 14 --head-slice 8192 --slide-head-once --slide-device-update;;
    s256fdu) run s256fdu qwen3-1.7b slide 256 1 1 sgd pure-bf16 full 1 14 --head-slice 8192 --slide-device-update;;
esac; done
elif [ "${ONLY7B:-0}" != 1 ]; then
# Qwen3-1.7B, seq 256 x batch 1, SGD (as T1M1 ran it): resident bf16 vs slide pure bf16, the
# whole LM head and the head in vocabulary slices (no whole-head buffer on the device)
run r256  qwen3-1.7b resident 256 1 1 sgd bf16      none 0 14
run s256  qwen3-1.7b slide    256 1 1 sgd pure-bf16 none 1 14
run s256h qwen3-1.7b slide    256 1 1 sgd pure-bf16 none 1 14 --head-slice 8192 --out "$O/trace_s256h"
run s256hp2 qwen3-1.7b slide  256 1 1 sgd pure-bf16 none 2 14 --head-slice 8192
# the options: the embedding and head kept on the device; the one-step-delayed update (other
# mathematics); a label ending in "dpu" tells slide_table.py the update also writes a working copy
run s256k qwen3-1.7b slide    256 1 1 sgd pure-bf16 none 1 14 --slide-keep-head
run s256dpu qwen3-1.7b slide  256 1 1 sgd pure-bf16 none 1 14 --slide-dpu
run s256hdpu qwen3-1.7b slide 256 1 1 sgd pure-bf16 none 1 14 --slide-dpu --head-slice 8192
# the layers' SGD on the device (--slide-device-update): the updated weights go down instead of
# the gradients, the host optimizer only updates the embedding and head
run s256hdu qwen3-1.7b slide  256 1 1 sgd pure-bf16 none 1 14 --head-slice 8192 --slide-device-update --out "$O/trace_s256hdu"
run s256hp2du qwen3-1.7b slide 256 1 1 sgd pure-bf16 none 2 14 --head-slice 8192 --slide-device-update
run s256du qwen3-1.7b slide   256 1 1 sgd pure-bf16 none 1 14 --slide-device-update
run s256kdu qwen3-1.7b slide  256 1 1 sgd pure-bf16 none 1 14 --slide-keep-head --slide-device-update
# and the sliced head up once a step (a whole head of weights on the device: under 1 GiB with full
# recompute, whose replays hide behind the transfers at this size)
run s256fodu qwen3-1.7b slide 256 1 1 sgd pure-bf16 full 1 14 --head-slice 8192 --slide-head-once --slide-device-update --out "$O/trace_s256fodu"
run s256fodu2 qwen3-1.7b slide 256 1 1 sgd pure-bf16 full 2 14 --head-slice 8192 --slide-head-once --slide-device-update
# seq 2048 x batch 4, AdamW with f32 master weights and state
run r2048 qwen3-1.7b resident 2048 4 1 adamw master none 0 10
run s2048 qwen3-1.7b slide    2048 4 1 adamw master none 1 10
run s2048f qwen3-1.7b slide   2048 4 1 adamw master full 1 10
run s2048dpu qwen3-1.7b slide 2048 4 1 adamw master none 1 10 --slide-dpu
fi
if [ "${SKIP7B:-0}" != 1 ]; then
    # Qwen2.5-7B shape, seq 4096, under a 16 GiB cap: resident must stop with the OOM report;
    # slide trains (pure bf16 state: f32 AdamW state for 7B does not fit a 128 GiB host)
    run r7b qwen2.5-7b resident 4096 1 1 adamw bf16 full 0 3 --mem-cap 16GiB
    for a in ${ACC7B:-4}; do
        run s7b$a qwen2.5-7b slide 4096 1 "$a" adamw pure-bf16 full 1 5 --mem-cap 16GiB --out "$O/trace_s7b$a"
    done
fi
python3 bench/slide_table.py "$O" | tee "$O/table.txt"
grep '^VERDICT' "$O/host_adamw.txt" | sed 's/^VERDICT/host AdamW (ours against torch fused, same threads)/'
