#!/bin/sh
# Slide mode's data-parallel scaling from several runs of each side, taken in turn on one machine
# (1 GPU, then GPUS ranks, then the other way round, ROUNDS times), so that drift on the host
# reaches both sides; then bench/dp_scaling.py: each run, the medians over the runs, the spread
# over pairs. One 1-GPU slide run's median moves by several percent from run to run.
#   sh bench/slide_dp_scaling.sh OUTDIR     (BIN=dir of the binaries, default build; GPUS=2; ROUNDS=3;
#                                           ZERO=1 adds a ZeRO-1 run a round; ALL=1 a 1-GPU run a round
#                                           on the default threads (all the cores but one), and the
#                                           scaling against it; ARGS= the train flags, default the 1.7B
#                                           shape, 2048 x 4 a GPU, AdamW bf16 with f32 master weights,
#                                           without --slide-cpu-threads, which the script sets:
#                                           each rank's host optimizer on its share of the cores)
set -u
O=${1:?usage: slide_dp_scaling.sh OUTDIR}; BIN=${BIN:-build}; NG=${GPUS:-2}; R=${ROUNDS:-3}
mkdir -p "$O"
export NCCL_NVLS_ENABLE="${NCCL_NVLS_ENABLE:-0}"
TH=$(( $(nproc) / NG - 1 )); [ $TH -lt 1 ] && TH=1
A=${ARGS:-"train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --mode slide --steps 8 --warmup 2"}
run() { # NAME FLAGS...: one run, its log in OUTDIR/NAME.log
    n=$1; shift
    # shellcheck disable=SC2086
    "$BIN/slidecheck" $A "$@" > "$O/$n.log" 2>&1 || { echo "$n: exit $?"; tail -n 5 "$O/$n.log"; }
}
one=; many=; zero=; all=
i=1
while [ $i -le "$R" ]; do
    if [ $((i % 2)) = 1 ]; then
        run one_$i --slide-cpu-threads $TH; run many_$i --gpus "$NG" --slide-cpu-threads $TH
    else
        run many_$i --gpus "$NG" --slide-cpu-threads $TH; run one_$i --slide-cpu-threads $TH
    fi
    one="$one $O/one_$i.log"; many="$many $O/many_$i.log"
    if [ "${ZERO:-0}" = 1 ]; then run zero_$i --gpus "$NG" --zero 1 --slide-cpu-threads $TH; zero="$zero $O/zero_$i.log"; fi
    if [ "${ALL:-0}" = 1 ]; then run all_$i; all="$all $O/all_$i.log"; fi
    i=$((i + 1))
done
grep -H '^summary' "$O"/*.log | cut -c1-200
here=$(dirname "$0")
# shellcheck disable=SC2086
python3 "$here/dp_scaling.py" "$NG" $one -- $many
# shellcheck disable=SC2086
[ -n "$zero" ] && { echo "ZeRO-1:"; python3 "$here/dp_scaling.py" "$NG" $one -- $zero; }
# shellcheck disable=SC2086
[ -n "$all" ] && { echo "against one GPU on the default threads:"; python3 "$here/dp_scaling.py" "$NG" $all -- $many; }
exit 0
