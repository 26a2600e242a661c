#!/bin/sh
# Where does the 2-GPU step lose its time? The data-parallel step at the Qwen3-1.7B shape
# (bf16, AdamW, seq 2048 x batch 4 per GPU, --ckpt none) on 1 GPU, then on N GPUs under each
# NCCL setting below, one after the other on one machine; for each, the scaling and the phase
# split of bench/dp_hidden.py against the 1-GPU trace.
#   sh bench/dp_levers.sh OUT          (BIN=dir of prebuilt binaries, default build; GPUS=N, default 2;
#                                       LEVERS="NAME=VALUE[,NAME=VALUE] ..." overrides the list; "-" = the defaults;
#                                       a lever starting with -- is a flag: --comm-sms=8 runs --comm-sms 8)
# NCCL_NVLS_ENABLE stays 0, as the device machines require.
set -u
O=${1:?usage: sh bench/dp_levers.sh OUT}; BIN=${BIN:-build}; NG=${GPUS:-2}; mkdir -p "$O"
export NCCL_NVLS_ENABLE=0
LEVERS=${LEVERS:-"- NCCL_MAX_CTAS=4 NCCL_MAX_CTAS=8 NCCL_MAX_CTAS=16 NCCL_PROTO=Simple NCCL_ALGO=Tree CUDA_DEVICE_MAX_CONNECTIONS=1"}
big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 30 --warmup 12"
"$BIN/slidecheck" $big --out "$O/one" > "$O/one.log" 2>&1 || { echo "1 GPU: exit $?"; tail -n 3 "$O/one.log"; exit 1; }
for lv in $LEVERS; do
    tag=$(echo "$lv" | tr ',=' '__' | sed 's/^--//'); envs=""; flags=""
    case "$lv" in
        -) ;;
        --*) flags=$(echo "$lv" | tr ',=' '  ') ;;
        *) envs=$(echo "$lv" | tr ',' ' ') ;;
    esac
    env $envs "$BIN/slidecheck" $big --gpus "$NG" $flags --out "$O/$tag" > "$O/$tag.log" 2>&1 ||
        { echo "$lv: exit $?"; tail -n 3 "$O/$tag.log"; continue; }
    echo "== $lv"
    python3 bench/dp_hidden.py "$O/one.log" "$O/$tag.log" "$O/$tag/trace.json" "$O/one/trace.json"
done
