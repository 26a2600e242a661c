#!/bin/sh
# Resident training step speed on one GPU, in one run: slidecheck (CUDA, bf16) against PyTorch +
# HF transformers eager and torch.compile, on the Qwen3-1.7B shape, with the step's GEMM floor,
# the dense bf16 rate and the device copy bandwidth measured on the same GPU (bench/gemm_floor.cu).
#   sh bench/speed.sh OUT          BIN=dir of prebuilt slidecheck and gemm_floor (default build)
# Writes OUT/machine.txt (GPU, driver, versions), OUT/gemm_floor_N<tokens>.csv, OUT/graph_floor.csv, OUT/speed.csv,
# OUT/logs/ (one log per cell) and OUT/RESULTS.md (bench/results_md.py OUT).
# The warm-up runs past the power limiter's settling: in a 40-step run on an H100 at its 700 W limit
# (results/power_h100_2026-11-27/c3/step.log, 2048 x 4 AdamW) step 6 took 183.5 ms, the median of
# steps 4-15 was 169.1 ms and of steps 21-40 172.5 (+2.0%); the timed steps start after step 12.
# Knobs, for a reduced or a piecewise run: STEPS (timed steps, 24), WARMUP (12), CONFIGS ("256x1:sgd
# 256x1:adamw 2048x4:adamw"), GEMM_TOKENS ("256 8192"; empty: none), GEMM_SUSTAINED (gemm_floor's
# --sustained rounds, 20; 0: none; it holds every shape's operands at once, about 12 GB at 8192
# tokens), IMPLS ("ours eager compile"),
# CELL_TIMEOUT (s per PyTorch cell, 1200), OURS_CKPTS (our policies; default none full selective,
# selective:attn and selective:proj where accepted), OURS_GRAPHS ("off on" where accepted), TORCH_CKPTS
# ("none full"). Rows are appended to an existing OUT/speed.csv, so a run
# too long for one sitting can be split over calls with the same OUT, e.g.
#   CONFIGS=256x1:sgd IMPLS="ours eager" sh bench/speed.sh OUT; GEMM_TOKENS= CONFIGS=256x1:sgd IMPLS=compile sh bench/speed.sh OUT
set -u
cd "$(dirname "$0")/.." || exit 1
O=${1:?usage: sh bench/speed.sh OUT}; BIN=${BIN:-build}
STEPS=${STEPS:-24}; WARMUP=${WARMUP:-12}
CONFIGS=${CONFIGS:-"256x1:sgd 256x1:adamw 2048x4:adamw"}
GEMM_TOKENS=${GEMM_TOKENS-"256 8192"}
GEMM_SUSTAINED=${GEMM_SUSTAINED:-20}
IMPLS=${IMPLS-"ours eager compile"}
TORCH_MODES=$(echo "$IMPLS" | tr ' ' '\n' | grep -x 'eager\|compile')
CELL_TIMEOUT=${CELL_TIMEOUT:-1200}
mkdir -p "$O/logs"

# the machine and the software that the numbers belong to
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader |
        awk -F', ' 'NR == 1 { print "gpu: " $1; print "driver: " $2; print "memory: " $3 }'
    echo "date: $(date -u +%F)"
    echo "nvcc: $("${NVCC:-/usr/local/cuda/bin/nvcc}" --version 2>/dev/null | sed -n 's/.*release \([^,]*\),.*/\1/p')"
    python3 -c 'import torch, transformers; print("torch:", torch.__version__, "(cuda", str(torch.version.cuda) + ")");
print("transformers:", transformers.__version__)' 2>/dev/null
    echo "torch cublas: $(python3 -m pip list 2>/dev/null | awk 'tolower($1) ~ /^nvidia-cublas/ { print $1 " " $2 }')"
    echo "steps: $STEPS"
    echo "warmup: $WARMUP"
} > "$O/machine.txt"
cat "$O/machine.txt"

# gemm_floor has no Makefile rule: build it here when BIN lacks it (the line at the top of the file)
if [ ! -x "$BIN/gemm_floor" ]; then
    "${NVCC:-/usr/local/cuda/bin/nvcc}" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
        -gencode=arch=compute_90,code=sm_90 -Xcompiler -Wall,-Wextra,-Werror bench/gemm_floor.cu \
        -o "$BIN/gemm_floor" -lcublasLt || exit 1
fi
# the launch floor: what a graph's kernel node costs when it does almost nothing (bench/graph_floor.cu)
if [ -n "$GEMM_TOKENS" ]; then
    if [ ! -x "$BIN/graph_floor" ]; then
        "${NVCC:-/usr/local/cuda/bin/nvcc}" -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 \
            -Xcompiler -Wall,-Wextra,-Werror bench/graph_floor.cu -o "$BIN/graph_floor" || exit 1
    fi
    "$BIN/graph_floor" --kernels 1000 --reps 50 > "$O/graph_floor.csv" 2> "$O/logs/graph_floor.log" ||
        { echo "graph_floor failed:"; cat "$O/logs/graph_floor.log"; }
    cat "$O/graph_floor.csv"
fi
for n in $GEMM_TOKENS; do
    "$BIN/gemm_floor" --tokens "$n" --sustained "$GEMM_SUSTAINED" > "$O/gemm_floor_N$n.csv" 2> "$O/logs/gemm_floor_N$n.log" ||
        { echo "gemm_floor --tokens $n failed:"; cat "$O/logs/gemm_floor_N$n.log"; }
    grep '^#' "$O/gemm_floor_N$n.csv"
done

# What this slidecheck binary accepts, tried on the tiny model (seconds): the selective:attn
# policy, and --cuda-graph on|off (then ours runs with both).
probe() { "$BIN/slidecheck" train --model tiny --seq 16 --batch 1 --steps 1 --device cuda --dtype bf16 "$@" \
              > /dev/null 2>&1; }
POLICIES=""; GRAPHS="-"
case " $IMPLS " in *" ours "*)
    POLICIES=${OURS_CKPTS:-"none full selective"}
    if [ -n "${OURS_CKPTS:-}" ]; then :
    else
        for sp in selective:attn selective:proj; do
            if probe --ckpt $sp; then POLICIES="$POLICIES $sp"
            else echo "note: this slidecheck refuses --ckpt $sp; those cells are skipped"; fi
        done
    fi
    if [ -n "${OURS_GRAPHS:-}" ]; then GRAPHS=$OURS_GRAPHS
    elif probe --cuda-graph on && probe --cuda-graph off; then GRAPHS="off on"
    else echo "note: this slidecheck has no --cuda-graph; ours runs once per policy"; fi;;
esac

[ -s "$O/speed.csv" ] || echo "impl,model,seq,batch,optim,ckpt,step_ms_median,n,peak_alloc_gib,peak_resv_gib,loss0,mode,launches,kernels,first_step_s,params,graph,status" \
    > "$O/speed.csv"

ours() { # seq batch optim ckpt graph(-|on|off)
    s=$1 b=$2 opt=$3 ck=$4 g=$5
    log="$O/logs/ours_${s}x${b}_${opt}_$(echo "$ck" | tr ':' '-')_g$g.log"
    gflag=""; [ "$g" != - ] && gflag="--cuda-graph $g"
    # shellcheck disable=SC2086 # gflag is two words or none
    "$BIN/slidecheck" train --model qwen3-1.7b --device cuda --dtype bf16 --seq "$s" --batch "$b" \
        --optim "$opt" --lr 1e-4 --ckpt "$ck" --steps $((WARMUP + STEPS)) --warmup "$WARMUP" $gflag > "$log" 2>&1
    rc=$?
    line=$(grep '^summary:' "$log")
    pre="slidecheck-cuda-bf16,qwen3-1.7b,$s,$b,$opt,$ck"
    if [ $rc -ne 0 ] || [ -z "$line" ]; then
        echo "$pre,,,,,,resident,,,,,$g,exit $rc" >> "$O/speed.csv"
        echo "== ours $s x $b $opt $ck graph $g: exit $rc"; tail -n 5 "$log"; return
    fi
    # step 1's wall time (the cold step) from its per-step line; the rest from the summary line
    first=$(awk '$1 == "step" && $2 == 1 { for (i = 3; i < NF; i++) if ($i == "ms") { print $(i + 1) / 1000; exit } }' "$log")
    echo "$line" | awk -v pre="$pre" -v g="$g" -v first="$first" '{
        for (i = 1; i <= NF; i++) {
            if ($i == "loss" && !l0) l0 = $(i + 1)
            if ($i == "step" && $(i - 1) == "median") ms = $(i + 1)
            if ($i ~ /^\(n=/) n = substr($i, 4)
            if ($i == "allocated") pa = $(i + 1)
            if ($i == "reserved") pr = $(i + 1)
            if ($i == "params") np = $(i + 1)
            if ($i == "launches") la = $(i + 1)
            if ($i == "kernels" && $(i + 1) == "in") kn = $(i - 1) # "(cuda graph: ... K kernels in it)"
        }
        printf "%s,%s,%s,%s,%s,%s,resident,%s,%s,%.2f,%s,%s,ok\n", pre, ms, n, pa, pr, l0, la, kn, first, np, g }' >> "$O/speed.csv"
    echo "== ours $s x $b $opt $ck graph $g"; echo "$line"
}

torch_cell() { # seq batch optim ckpt eager|compile
    s=$1 b=$2 opt=$3 ck=$4 mode=$5
    log="$O/logs/torch_${s}x${b}_${opt}_${ck}_$mode.log"
    cflag=""; [ "$mode" = compile ] && cflag="--compile"
    # shellcheck disable=SC2086
    timeout "$CELL_TIMEOUT" python3 bench/hf_step.py --model qwen3-1.7b --seq "$s" --batch "$b" --optim "$opt" \
        --ckpt "$ck" --warmup "$WARMUP" --steps "$STEPS" $cflag > "$log" 2>&1
    rc=$?
    row=$(grep '^pytorch-' "$log" | tail -n 1)
    if [ $rc -ne 0 ] || [ -z "$row" ]; then
        echo "pytorch,qwen3-1.7b,$s,$b,$opt,$ck,,,,,,$mode,,,,,,exit $rc" >> "$O/speed.csv"
        echo "== torch $s x $b $opt $ck $mode: exit $rc"; tail -n 5 "$log"; return
    fi
    echo "$row,,ok" >> "$O/speed.csv"
    echo "== torch $s x $b $opt $ck $mode"; echo "$row"
}

for cfg in $CONFIGS; do
    s=${cfg%%x*}; rest=${cfg#*x}; b=${rest%%:*}; opt=${cfg#*:}
    for ck in $POLICIES; do
        for g in $GRAPHS; do ours "$s" "$b" "$opt" "$ck" "$g"; done
    done
    # compile cells last: the slowest to start, and the ones a CELL_TIMEOUT may stop
    for mode in $TORCH_MODES; do
        for ck in ${TORCH_CKPTS:-none full}; do torch_cell "$s" "$b" "$opt" "$ck" "$mode"; done
    done
done
python3 bench/results_md.py "$O" > "$O/RESULTS.md" && cat "$O/RESULTS.md"
