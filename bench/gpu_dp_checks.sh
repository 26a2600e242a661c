#!/bin/sh
# Data parallel on the GPU, on a machine with >= 2 GPUs (the nvidia-h200-x2 kind), in one go:
#  1. equality: NG ranks x batch 4/NG against 1 GPU x batch 4 (tiny, 5 AdamW steps): fp32 losses
#     within 1e-5, bf16 within 1e-2 relative; two NG-rank runs save byte-identical checkpoints;
#     ZeRO-1 saves the same bytes as plain data parallel; at 2 ranks the default sums (by the copy
#     engines where the GPUs reach each other) the bytes of --dp-sums nccl, past 2 slide and resident with --dp-sums
#     nccl the same bytes (NCCL's order) and the default within the rounding of them; slide mode the same checks as resident
#     (slide's ZeRO-1: the same bytes as slide without it), and slide the bytes of resident (bf16: with
#     --master-weights, as slide keeps them), also with many tokens against the tiny vocabulary; one sum a layer (--bucket-mb 0) the default groups' bytes;
#     resident NG-rank runs replay the whole-step CUDA graph (collectives inside) and save the bytes of
#     --cuda-graph off (plain and ZeRO-1, fp32 and bf16);
#     a rank killed mid-run stops the other within the timeout, with a message (graph and eager);
#     two torchrun "nodes" over sockets: the same bytes, and a node killed or stalled (SIGSTOP) mid-run
#     stops the other within the timeouts, with a message naming it;
#  2. speed: the Qwen3-1.7B shape, bf16 weights and AdamW state (as the DDP side), seq 2048 x batch 4 per GPU,
#     1 GPU against N (scaling = N x step(1) / step(N)), N with --cuda-graph off (what the graph gives),
#     N with ZeRO-1 (peak memory), N with --dp-sums nccl (NCCL's sums), with traces: the fraction of the
#     all-reduce time that overlaps compute-stream spans (bench/dp_hidden.py); PyTorch DDP beside
#     it (bench/ddp_step.py under torchrun).
#   sh bench/gpu_dp_checks.sh OUTDIR      (BIN=dir of prebuilt binaries, default build;
#                                         EQUAL_ONLY=1: part 1 only; SPEED_ONLY=1: part 2 only; TWO_NODE_ONLY=1 (with
#                                         EQUAL_ONLY=1): of part 1 the two-node checks only; GPUS=N: both parts on N
#                                         GPUs, default 2 (part 1: N ranks x 4/N against 1 GPU x 4; its two-node
#                                         checks always use 2))
set -u
O=${1:-build/gpu_dp}; BIN=${BIN:-build}; NG=${GPUS:-2}; mkdir -p "$O"
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$O/machine.txt"; cat "$O/machine.txt"
tiny="train --model tiny --device cuda --seq 64 --steps 5 --warmup 1 --optim adamw --lr 1e-3"
losses() { grep '^step' "$1" | awk '{print $4}'; }
fail=0
# equal MODE DTYPE: NG ranks x 4/NG against 1 GPU x 4 (losses within the tolerance), two NG-rank runs
# the same bytes; files named by P = MODE_DTYPE
EB=$((4 / NG))
equal() {
    P=$1_$2; m=$1; tol=1e-5; [ $2 = bf16 ] && tol=1e-2
    "$BIN/slidecheck" $tiny --mode $m --dtype $2 --batch 4 --save "$O/save_one_$P" > "$O/one_$P.log" 2>&1 ||
        { echo "1 GPU $P: exit $?"; fail=1; }
    for run in a b; do
        "$BIN/slidecheck" $tiny --mode $m --dtype $2 --batch $EB --gpus $NG --save "$O/save_${P}_$run" > "$O/two_${P}_$run.log" 2>&1 ||
            { echo "$NG ranks $P $run: exit $?"; tail -n 5 "$O/two_${P}_$run.log"; fail=1; }
    done
    losses "$O/one_$P.log" > "$O/l1"; losses "$O/two_${P}_a.log" > "$O/l2"
    paste "$O/l1" "$O/l2" | awk -v t=$tol -v d="$m $2" -v g=$NG -v b=$EB '{ r = ($1 - $2) / $1; if (r < 0) r = -r; if (r > w) w = r; n++ }
        END { printf "%s: %d ranks x %d vs 1 GPU x 4, %d steps, worst loss rel diff %.3g (tol %s): %s\n", d, g, b, n, w, t,
              (n == 5 && w <= t) ? "PASS" : "FAIL"; exit !(n == 5 && w <= t) }' || fail=1
    # the NG-rank weights as saved (slide: each rank's chunks gathered) against the 1-GPU run's
    printf "%s %s: %d-rank saved weights vs 1 GPU: " $m $2 $NG
    # (the weights after 5 AdamW steps: sums in another order move an update at most by about its own
    # rounding, more of them with more ranks; fp32 takes 1e-5 at 2 ranks, NG / 2 times that at NG)
    wt=$tol; [ $2 = fp32 ] && wt=$(awk -v g=$NG 'BEGIN { printf "%g", 1e-5 * (g > 2 ? g / 2 : 1) }')
    python3 bench/cmp_weights.py "$O/save_${P}_a/model.safetensors" "$O/save_one_$P/model.safetensors" $wt || fail=1
    if cmp -s "$O/save_${P}_a/model.safetensors" "$O/save_${P}_b/model.safetensors"; then
        echo "$m $2: two $NG-rank runs saved identical weights: PASS"
    else echo "$m $2: two $NG-rank runs differ: FAIL"; fail=1; fi
}
# ---- two "nodes" on this host over sockets (TWO_NODE=0 skips): two torchrun --nnodes 2 launches of one
# rank each, node 0 on GPU 0 and node 1 on GPU 1, NCCL kept off NVLink/P2P and shared memory so that its
# collectives go over TCP on the loopback, as between machines without InfiniBand.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# two_node NAME CMD...: both nodes in the background (logs NAME.log for node 0, NAME_node1.log), with the
# variables of $tn_env; n0 and n1: the torchrun pids; unless tn_bg=1, waits: r0 and r1 their exit codes
tn_env=; tn_bg=0; n0=; n1=
two_node() {
    tn=$1; shift; tp=$(free_port)
    for nd in 0 1; do
        lg="$O/$tn.log"; [ $nd = 1 ] && lg="$O/${tn}_node1.log"
        # shellcheck disable=SC2086 # tn_env: NAME=VALUE words for env
        env CUDA_VISIBLE_DEVICES=$nd NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo \
            $tn_env torchrun --nnodes 2 --nproc-per-node 1 --node-rank $nd --master-addr 127.0.0.1 \
            --master-port "$tp" --no-python "$@" > "$lg" 2>&1 &
        if [ $nd = 0 ]; then n0=$!; else n1=$!; fi
    done
    [ "$tn_bg" = 1 ] && return 0
    wait "$n0"; r0=$?; wait "$n1"; r1=$?
}
# SPEED_ONLY=1: part 2 alone (part 1 ran before on this machine)
if [ "${SPEED_ONLY:-0}" != 1 ]; then
if [ "${TWO_NODE_ONLY:-0}" = 1 ]; then # the two-node checks alone, with the one --gpus run they compare with
    "$BIN/slidecheck" $tiny --mode resident --dtype bf16 --batch $EB --gpus $NG --save "$O/save_resident_bf16_a" \
        > "$O/two_resident_bf16_a.log" 2>&1 || { echo "$NG ranks resident bf16: exit $?"; fail=1; }
else
for dt in fp32 bf16; do
    equal resident $dt
    # slide over NCCL: each layer's gradients summed on the device before they go down
    equal slide $dt
    # slide's ZeRO-1: each host keeps the AdamW state of its chunk of each layer (bf16: with f32 master weights)
    "$BIN/slidecheck" $tiny --mode slide --dtype $dt --batch $EB --gpus $NG --zero 1 --save "$O/save_slide_${dt}_z" \
        > "$O/two_slide_${dt}_z.log" 2>&1 || { echo "$NG ranks slide ZeRO-1 $dt: exit $?"; tail -n 5 "$O/two_slide_${dt}_z.log"; fail=1; }
    if cmp -s "$O/save_slide_${dt}_a/model.safetensors" "$O/save_slide_${dt}_z/model.safetensors"; then
        echo "slide $dt: ZeRO-1 saved the same weights as slide's plain data parallel (bitwise): PASS"
    else echo "slide $dt: ZeRO-1 and plain data parallel differ: FAIL"; fail=1; fi
    # slide and resident: the same sums in the same order (bf16: slide keeps f32 master weights, so
    # resident here with them too); one sum a layer (--bucket-mb 0) against the default groups
    rs="$O/save_resident_${dt}_a" mw=""
    if [ $dt = bf16 ]; then
        rs="$O/save_resident_bf16_m" mw=--master-weights
        "$BIN/slidecheck" $tiny --dtype bf16 --batch $EB --gpus $NG $mw --save "$rs" > "$rs.log" 2>&1 ||
            { echo "$NG ranks resident bf16 $mw: exit $?"; tail -n 5 "$rs.log"; fail=1; }
    fi
    sv="$O/save_resident_${dt}_layer"
    # shellcheck disable=SC2086 # mw: the flag or nothing
    "$BIN/slidecheck" $tiny --dtype $dt --batch $EB --gpus $NG $mw --bucket-mb 0 --save "$sv" > "$sv.log" 2>&1 ||
        { echo "$NG ranks resident $dt --bucket-mb 0: exit $?"; tail -n 5 "$sv.log"; fail=1; }
    if cmp -s "$rs/model.safetensors" "$O/save_slide_${dt}_a/model.safetensors"; then
        echo "slide $dt: the same weights as resident data parallel${mw:+ with $mw} (bitwise): PASS"
    else echo "slide $dt: slide and resident data parallel differ: FAIL"; fail=1; fi
    if cmp -s "$rs/model.safetensors" "$sv/model.safetensors"; then
        echo "resident $dt: one sum a layer (--bucket-mb 0) saved the default groups' weights (bitwise): PASS"
    else echo "resident $dt: --bucket-mb 0 and the default groups differ: FAIL"; fail=1; fi
    "$BIN/slidecheck" $tiny --dtype $dt --batch $EB --gpus $NG --zero 1 --save "$O/save_${dt}_z" > "$O/two_${dt}_z.log" 2>&1 ||
        { echo "$NG ranks ZeRO-1 $dt: exit $?"; tail -n 5 "$O/two_${dt}_z.log"; fail=1; }
    if cmp -s "$O/save_resident_${dt}_a/model.safetensors" "$O/save_${dt}_z/model.safetensors"; then
        echo "$dt: ZeRO-1 saved the same weights as plain data parallel (bitwise): PASS"
    else echo "$dt: ZeRO-1 and plain data parallel differ: FAIL"; fail=1; fi
    # past two ranks the default adds the ranks' parts in rank order (copy engines, resident; NCCL's
    # copies, slide) where NCCL's ring adds in its own: --dp-sums nccl gives slide and resident the
    # same bytes as each other (NCCL's order), and the default's differ from them by at most the rounding
    if [ "$NG" -gt 2 ]; then
        for md in resident slide; do
            "$BIN/slidecheck" $tiny --mode $md --dtype $dt --batch $EB --gpus $NG $mw --dp-sums nccl \
                --save "$O/save_${md}_${dt}_nccl" > "$O/${md}_${dt}_nccl.log" 2>&1 || { echo "$NG ranks $md --dp-sums nccl: exit $?"; fail=1; }
        done
        if cmp -s "$O/save_resident_${dt}_nccl/model.safetensors" "$O/save_slide_${dt}_nccl/model.safetensors"; then
            echo "$dt --dp-sums nccl: slide saved resident's weights${mw:+ ($mw)} (bitwise): PASS"
        else echo "$dt --dp-sums nccl: slide and resident differ: FAIL"; fail=1; fi
        how=$(grep -o 'summed by [a-zA-Z ]*' "$O/two_resident_${dt}_a.log" | head -n 1)
        printf "%s: the default run (%s) against --dp-sums nccl: " $dt "$how"
        python3 bench/cmp_weights.py "$rs/model.safetensors" "$O/save_resident_${dt}_nccl/model.safetensors" $tol || fail=1
    fi
    # two ranks of one host sum by the copy engines (the default where the GPUs reach each other):
    # NCCL's sums (--dp-sums nccl) give the same bytes, plain and ZeRO-1
    if [ "$NG" = 2 ]; then
        for g in resident_${dt}_a ${dt}_z; do
            zf=""; [ $g = ${dt}_z ] && zf="--zero 1"
            "$BIN/slidecheck" $tiny --dtype $dt --batch $EB --gpus $NG $zf --dp-sums nccl --save "$O/save_${g}_nccl" \
                > "$O/two_${g}_nccl.log" 2>&1 || { echo "$NG ranks $g --dp-sums nccl: exit $?"; fail=1; }
            how=$(grep -o 'summed by [a-zA-Z ]*' "$O/two_$g.log" | head -n 1)
            if cmp -s "$O/save_$g/model.safetensors" "$O/save_${g}_nccl/model.safetensors"; then
                echo "resident $dt $zf: the default run ($how) saved the bytes of --dp-sums nccl: PASS"
            else echo "resident $dt $zf: the default run ($how) and --dp-sums nccl differ: FAIL"; fail=1; fi
        done
    fi
    # the whole-step CUDA graph over NCCL: the resident NG-rank runs above took it (auto); steps 2-5
    # replayed it on rank 0 (its summary) and no rank fell back (stderr); eager runs
    # (--cuda-graph off) save the same bytes
    for g in resident_${dt}_a ${dt}_z; do
        zf=""; [ $g = ${dt}_z ] && zf="--zero 1"
        "$BIN/slidecheck" $tiny --dtype $dt --batch $EB --gpus $NG $zf --cuda-graph off --save "$O/save_${g}_eager" \
            > "$O/two_${g}_eager.log" 2>&1 || { echo "$NG ranks $g --cuda-graph off: exit $?"; tail -n 5 "$O/two_${g}_eager.log"; fail=1; }
        d="resident $dt${zf:+ ZeRO-1}"
        if grep -q '(cuda graph: 4 of 5 steps' "$O/two_$g.log" && ! grep -q 'CUDA graph off' "$O/two_$g.log" &&
            ! grep -q '(cuda graph:' "$O/two_${g}_eager.log"; then
            echo "$d: $NG ranks ran steps 2-5 as CUDA graph launches ($(grep -o '(cuda graph: [^)]*)' "$O/two_$g.log")), --cuda-graph off none: PASS"
        else echo "$d: the $NG-rank graph was not used (or --cuda-graph off used one): FAIL"; grep -h 'graph' "$O/two_$g.log" | head -n 3; fail=1; fi
        if cmp -s "$O/save_$g/model.safetensors" "$O/save_${g}_eager/model.safetensors"; then
            echo "$d: $NG ranks with the CUDA graph saved the same weights as --cuda-graph off (bitwise): PASS"
        else echo "$d: $NG ranks with the CUDA graph and --cuda-graph off differ: FAIL"; fail=1; fi
    done
done
# an untied LM head (the built-ins' small shapes are tied): its embedding rows come only from the
# gather of every rank's dL/dx_0, with no sum of the vocabulary's rows; the tiny shape, random HF weights
if python3 -c 'import transformers' 2> /dev/null; then
    python3 - "$O/untied" << 'PY'
import sys, torch, transformers
c = transformers.Qwen3Config(vocab_size=512, hidden_size=128, intermediate_size=352, num_hidden_layers=4,
    num_attention_heads=4, num_key_value_heads=2, head_dim=48, max_position_embeddings=256,
    tie_word_embeddings=False, rope_theta=10000.0, rms_norm_eps=1e-6)
torch.manual_seed(0)
transformers.Qwen3ForCausalLM(c).save_pretrained(sys.argv[1])
PY
    ut=$(echo "$tiny" | sed "s#--model tiny#--hf $O/untied#")
    "$BIN/slidecheck" $ut --dtype fp32 --batch 4 > "$O/untied_one.log" 2>&1 || { echo "untied, 1 GPU: exit $?"; fail=1; }
    for md in resident slide; do
        for zf in "" "--zero 1"; do
            u=untied; [ $md = slide ] && u=${u}_slide; [ -n "$zf" ] && u=${u}_z
            "$BIN/slidecheck" $ut --mode $md --dtype fp32 --batch $EB --gpus $NG $zf --save "$O/save_$u" \
                > "$O/$u.log" 2>&1 || { echo "untied, $md, $NG ranks $zf: exit $?"; tail -n 5 "$O/$u.log"; fail=1; }
        done
    done
    losses "$O/untied_one.log" > "$O/l1"; losses "$O/untied.log" > "$O/l2"
    paste "$O/l1" "$O/l2" | awk -v g=$NG '{ r = ($1 - $2) / $1; if (r < 0) r = -r; if (r > w) w = r; n++ }
        END { printf "untied head fp32: %d ranks vs 1 GPU, %d steps, worst loss rel diff %.3g (tol 1e-5): %s\n", g, n, w,
              (n == 5 && w <= 1e-5) ? "PASS" : "FAIL"; exit !(n == 5 && w <= 1e-5) }' || fail=1
    if cmp -s "$O/save_untied/model.safetensors" "$O/save_untied_z/model.safetensors"; then
        echo "untied head fp32: ZeRO-1 saved the same weights as plain data parallel (bitwise): PASS"
    else echo "untied head fp32: ZeRO-1 and plain data parallel differ: FAIL"; fail=1; fi
    # slide sums the untied head's gradient as resident's bucket [final norm | LM head]: the same chunks at any W
    for u in untied_slide untied_slide_z; do
        if cmp -s "$O/save_untied/model.safetensors" "$O/save_$u/model.safetensors"; then
            echo "untied head fp32, $NG ranks: $u saved resident's weights (bitwise): PASS"
        else echo "untied head fp32, $NG ranks: $u and resident differ: FAIL"; fail=1; fi
    done
fi
# many tokens against a small vocabulary (1024 a step over the tiny shape's 512 rows, W x the tokens'
# rows as many bytes as twice the vocabulary's, where resident mode once summed the embedding after
# its backward, an order slide's hosts cannot follow): slide still saves resident's bytes, tied and untied
MB=$((8 / NG)); [ $MB -lt 1 ] && MB=1
mt="train --device cuda --seq 128 --steps 3 --warmup 1 --optim adamw --lr 1e-3 --dtype fp32 --batch $MB --gpus $NG"
for hd in "--model tiny" ${ut:+"--hf $O/untied"}; do
    for md in resident slide; do
        # shellcheck disable=SC2086
        "$BIN/slidecheck" $mt $hd --mode $md --save "$O/save_many_$md" > "$O/many_$md.log" 2>&1 ||
            { echo "many tokens ($hd), $md: exit $?"; tail -n 5 "$O/many_$md.log"; fail=1; }
    done
    if cmp -s "$O/save_many_resident/model.safetensors" "$O/save_many_slide/model.safetensors"; then
        echo "many tokens ($hd), $NG ranks x $MB x 128: slide saved resident's weights (bitwise): PASS"
    else echo "many tokens ($hd), $NG ranks x $MB x 128: slide and resident differ: FAIL"; fail=1; fi
    rm -rf "$O/save_many_resident" "$O/save_many_slide"
done
# launched by torchrun (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) instead of --gpus:
# the same bytes as the --gpus 2 run
if command -v torchrun > /dev/null; then
    torchrun --nproc_per_node=$NG --no-python "$BIN/slidecheck" $tiny --dtype bf16 --batch $EB --save "$O/save_torchrun" \
        > "$O/torchrun.log" 2>&1 || { echo "torchrun launch: exit $?"; tail -n 5 "$O/torchrun.log"; fail=1; }
    if cmp -s "$O/save_resident_bf16_a/model.safetensors" "$O/save_torchrun/model.safetensors"; then
        echo "torchrun --nproc_per_node=$NG --no-python: the same weights as --gpus $NG (bitwise): PASS"
    else echo "torchrun launch and --gpus $NG differ: FAIL"; fail=1; fi
fi
# a rank killed mid-run (the last one --gpus forked: rank NG - 1): rank 0 must stop with a message within
# the timeout (never hang), with the CUDA graph (its collectives polled through the graph's event nodes) and without
for kg in auto off; do
    "$BIN/slidecheck" $tiny --dtype bf16 --batch $EB --steps 1000000 --gpus $NG --rendezvous-timeout 15 --cuda-graph $kg \
        > "$O/kill_$kg.log" 2>&1 &
    L=$!; sleep 20
    R1=$(pgrep -P $L | sort -n | tail -n 1); t0=$(date +%s)
    [ -n "$R1" ] && kill -9 "$R1"
    wait $L; rc=$?; dt=$(( $(date +%s) - t0 ))
    if [ -n "$R1" ] && [ $rc -ne 0 ] && [ $dt -le 45 ]; then
        echo "a killed rank $((NG - 1)) (--cuda-graph $kg): the run stopped after $dt s, exit $rc: PASS ($(grep -m1 'slidecheck' "$O/kill_$kg.log" | cut -c1-200))"
    else echo "a killed rank $((NG - 1)) (--cuda-graph $kg): exit $rc after $dt s (its pid '$R1'): FAIL"; fail=1; fi
done
fi # TWO_NODE_ONLY
# (compared with the 2-rank run: with NG > 2 ranks the NVLink sums need not equal the socket ones)
if [ "${TWO_NODE:-1}" = 1 ] && [ "$NG" = 2 ] && command -v torchrun > /dev/null && [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
    # the tiny bf16 run: with two ranks a sum is a + b whatever carries it, so the same bytes as --gpus 2
    tn_env="NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"
    two_node sock_tiny "$BIN/slidecheck" $tiny --dtype bf16 --batch 2 --save "$O/save_sock"
    tn_env=
    [ $r0 = 0 ] && [ $r1 = 0 ] || { echo "two nodes over sockets: exits $r0, $r1"; tail -n 5 "$O/sock_tiny.log"; fail=1; }
    via=$(grep -o 'via NET/[A-Za-z]*' "$O/sock_tiny.log" | sort -u | tr '\n' ' ')
    other=$(grep -c 'via P2P\|via SHM' "$O/sock_tiny.log")
    if [ -n "$via" ] && [ "$other" = 0 ]; then echo "two nodes: NCCL's channels go $via(no P2P or SHM): PASS"
    else echo "two nodes: NCCL's channels: '$via', $other over P2P/SHM: FAIL"; fail=1; fi
    if cmp -s "$O/save_resident_bf16_a/model.safetensors" "$O/save_sock/model.safetensors"; then
        echo "two nodes over sockets (torchrun --nnodes 2): the same weights as --gpus 2 over NVLink (bitwise): PASS"
    else
        echo "two nodes over sockets and --gpus 2 differ (two ranks sum a + b on any transport: expected bitwise): FAIL"
        python3 bench/cmp_weights.py "$O/save_sock/model.safetensors" "$O/save_resident_bf16_a/model.safetensors" 1e-2
        fail=1
    fi
    # node 1 lost mid-run, its torchrun's child sent SIG: node 0 must stop within LIMIT s, naming it.
    # KILL: its connections close; STOP (alive, silent): the collectives' timeout, NCCL's abort
    # (bounded at 10 s) and the control channel's timeout (15 s each); then node 1 is killed.
    lose_node() {
        what=$1; sig=$2; limit=$3; tn_bg=1
        two_node sock_$what "$BIN/slidecheck" $tiny --dtype bf16 --batch 2 --steps 1000000 --rendezvous-timeout 15
        tn_bg=0; sleep 25
        K=$(pgrep -P "$n1" | head -n 1); t0=$(date +%s)
        [ -n "$K" ] && kill -"$sig" "$K"
        wait "$n0"; r0=$?; dt=$(( $(date +%s) - t0 )); [ -n "$K" ] && kill -9 "$K" 2> /dev/null; wait "$n1"
        msg=$(grep -m1 '^slidecheck' "$O/sock_$what.log" | cut -c1-300)
        if [ -n "$K" ] && [ $r0 -ne 0 ] && [ $dt -le "$limit" ]; then
            echo "node 1 $what: node 0 stopped after $dt s, exit $r0: PASS ($msg)"
        else echo "node 1 $what: node 0 exit $r0 after $dt s (node 1's rank pid '$K'): FAIL"; fail=1; fi
        case "$msg" in
            *"rank 1"*|*"node 1"*) echo "node 1 $what: node 0's message names the rank/node: PASS" ;;
            *) echo "node 1 $what: node 0's message does not name rank 1 / node 1: FAIL"; fail=1 ;;
        esac
    }
    lose_node killed KILL 45
    lose_node stalled STOP 50
fi
fi
if [ "${EQUAL_ONLY:-0}" = 1 ]; then echo "checks: $([ $fail = 0 ] && echo all passed || echo FAILED)"; exit $fail; fi
# 30 steps, the first 12 left out: a GPU at its power limit settles over the first seconds (bench/speed.sh)
big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 30 --warmup 12"
if [ "${RESIDENT:-1}" = 1 ]; then # RESIDENT=0, SLIDE=0, DDP=0, TWO_NODE=0 skip those parts of part 2
"$BIN/slidecheck" $big --out "$O/speed1" > "$O/speed1.log" 2>&1
"$BIN/slidecheck" $big --gpus $NG --out "$O/speed2" > "$O/speed2.log" 2>&1
# the same N-GPU run stepped eagerly: what the whole-step CUDA graph gives under data parallel
"$BIN/slidecheck" $big --gpus $NG --cuda-graph off --out "$O/speed2e" > "$O/speed2e.log" 2>&1
"$BIN/slidecheck" $big --gpus $NG --zero 1 --out "$O/speedz" > "$O/speedz.log" 2>&1
# the sums by NCCL's kernels beside the default's copy engines
"$BIN/slidecheck" $big --gpus $NG --dp-sums nccl > "$O/speed2n.log" 2>&1
grep -h '^summary' "$O/speed1.log" "$O/speed2.log" "$O/speed2e.log" "$O/speedz.log" "$O/speed2n.log" 2> /dev/null
python3 bench/dp_hidden.py "$O/speed1.log" "$O/speed2.log" "$O/speed2/trace.json" "$O/speed1/trace.json"
echo "--cuda-graph off:"; python3 bench/dp_hidden.py "$O/speed1.log" "$O/speed2e.log" "$O/speed2e/trace.json" "$O/speed1/trace.json"
echo "ZeRO-1:"; python3 bench/dp_hidden.py "$O/speed1.log" "$O/speedz.log" "$O/speedz/trace.json" "$O/speed1/trace.json"
fi
# slide on 1 and NG GPUs (each rank's host optimizer on its share of the cores: they share one host)
if [ "${SLIDE:-1}" = 1 ]; then
sl="$big --mode slide --steps 8 --warmup 2 --slide-cpu-threads $(( $(nproc) / NG - 1 ))"
"$BIN/slidecheck" $sl --out "$O/slide1" > "$O/slide1.log" 2>&1
"$BIN/slidecheck" $sl --gpus $NG --out "$O/slide2" > "$O/slide2.log" 2>&1
# ZeRO-1: rank 0's pageable host memory (the summary's 'pageable') drops by its share of the layers' AdamW state
"$BIN/slidecheck" $sl --gpus $NG --zero 1 --out "$O/slidez" > "$O/slidez.log" 2>&1
grep -h '^summary' "$O/slide1.log" "$O/slide2.log" "$O/slidez.log"
echo "slide:"; python3 bench/dp_hidden.py "$O/slide1.log" "$O/slide2.log" "$O/slide2/trace.json" "$O/slide1/trace.json"
fi
# PyTorch DDP on the same GPUs, model and per-rank batch (torchrun)
if [ "${DDP:-1}" = 1 ]; then
torchrun --nproc_per_node=$NG bench/ddp_step.py --model qwen3-1.7b --seq 2048 --batch 4 > "$O/ddp.log" 2>&1
grep -h '^pytorch-ddp' "$O/ddp.log" || tail -n 5 "$O/ddp.log"
fi
# ---- two nodes over sockets, speed (TWO_NODE=0 skips): the Qwen3-1.7B shape as $big, one rank a node,
# against the 1-GPU step of part 2; the collectives over sockets (build/allreduce)
sockcsv=
if [ "${TWO_NODE:-1}" = 1 ] && command -v torchrun > /dev/null && [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
    two_node sock2 "$BIN/slidecheck" $big --out "$O/sock2"
    grep -h '^summary' "$O/sock2.log" || { echo "two nodes, $big: exits $r0, $r1"; tail -n 5 "$O/sock2.log"; fail=1; }
    echo "two nodes over sockets:"
    python3 bench/dp_hidden.py "$O/speed1.log" "$O/sock2.log" "$O/sock2/trace.json" "$O/speed1/trace.json" \
        | tee "$O/sock_hidden.txt"
    if [ -x "$BIN/allreduce" ]; then
        two_node allreduce_socket "$BIN/allreduce" --transport socket --max-bytes 256M --warmup 2 \
            --out "$O/allreduce_socket.csv"
        [ $r0 = 0 ] && [ $r1 = 0 ] || { echo "allreduce over sockets: exits $r0, $r1"; tail -n 5 "$O/allreduce_socket.log"; fail=1; }
        sockcsv="--socket $O/allreduce_socket.csv"
    fi
fi
# the collectives over NVLink on the NG GPUs, and the data-parallel model (bench/dp_model.py) on them
# and the 1-GPU trace, checked against the measured steps (ALLREDUCE=0 skips)
if [ "${ALLREDUCE:-1}" = 1 ] && command -v torchrun > /dev/null; then
    if [ -x "$BIN/allreduce" ]; then
        torchrun --nproc-per-node $NG --master-port "$(free_port)" --no-python "$BIN/allreduce" --transport nvlink \
            --out "$O/allreduce_nvlink.csv" > "$O/allreduce_nvlink.log" 2>&1 ||
            { echo "allreduce over NVLink: exit $?"; tail -n 5 "$O/allreduce_nvlink.log"; fail=1; }
        grep -h 'allreduce .* 1073741824 \|allreduce .* 268435456 ' "$O/allreduce_nvlink.log" "$O/allreduce_socket.log" 2>/dev/null
        # shellcheck disable=SC2086 # sockcsv: empty or two words
        python3 bench/dp_model.py --trace "$O/speed1" --nvlink "$O/allreduce_nvlink.csv" $sockcsv \
            --inter-gbps 400 --inter-lat-us 10 --logs "$O" --out "$O/dp_model.txt" || { echo "dp_model.py: exit $?"; fail=1; }
        # the default's sums by the copy engines: their collectives, and the model on them against speed2
        torchrun --nproc-per-node $NG --master-port "$(free_port)" --no-python "$BIN/allreduce" --copy-engines 1 \
            --out "$O/allreduce_ce.csv" > "$O/allreduce_ce.log" 2>&1 ||
            { echo "allreduce by the copy engines: exit $?"; tail -n 5 "$O/allreduce_ce.log"; fail=1; }
        grep -h 'allreduce .* 268435456 ' "$O/allreduce_ce.log" 2>/dev/null
        python3 bench/dp_model.py --trace "$O/speed1" --nvlink "$O/allreduce_ce.csv" --copy-engines \
            --inter-gbps 400 --inter-lat-us 10 --logs "$O" --out "$O/dp_model_ce.txt" || { echo "dp_model.py --copy-engines: exit $?"; fail=1; }
    else echo "no $BIN/allreduce (make build/allreduce): the collective benchmark and the model skipped"; fi
fi
echo "checks: $([ $fail = 0 ] && echo all passed || echo FAILED)"
exit $fail
