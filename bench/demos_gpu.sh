#!/bin/sh
# The demos on a GPU with the Qwen3-1.7B shape (random init), as the README's figures were made:
#   sh bench/demos_gpu.sh OUT [BIN] [DEMO...]
# BIN holds the demo binaries built with nvcc present (default build/). Each demo writes its
# CSVs, PNGs and summary.md into OUT/<demo>/ and its log into OUT/<demo>.log. FONT=PATH.ttf
# names the figures' font when the machine has no DejaVu (its -Bold.ttf beside it is used too);
# TEXT=FILE names textdemo's text when the machine has no /usr/share/common-licenses/GPL-3.
# The sweep runs 6 steps per point here (one warm-up + 5 timed) to keep the whole run short;
# its --mode auto points take their default caps (from the smallest that fits to none's peak).
set -u
out=${1:?usage: sh bench/demos_gpu.sh OUT [BIN]}
bin=${2:-build}
shift; [ $# -gt 0 ] && shift
which=${*:-t1m2 t1m1 sweep placement maxbatch textdemo}
font=""
[ -n "${FONT:-}" ] && font="--font $FONT"
text=""
[ -n "${TEXT:-}" ] && text="--text $TEXT"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/gpu.csv" 2>&1
run() {
    name=$1; shift
    case " $which " in *" $name "*) ;; *) return ;; esac
    echo "== $name $*"
    start=$(date +%s)
    # shellcheck disable=SC2086 # $font is empty or two words
    "$bin/$name" --device cuda --out "$out/$name" $font "$@" > "$out/$name.log" 2>&1
    rc=$?
    echo "   exit $rc after $(( $(date +%s) - start )) s"
    tail -n 3 "$out/$name.log"
}
run t1m2 --model qwen3-1.7b
run t1m1 --model qwen3-1.7b
run sweep --model qwen3-1.7b --steps 6
# --mode auto cap by cap (CAPS=LIST in GiB; resident needs about 45 GiB at this shape)
run placement --model qwen3-1.7b --seq 2048 --batch 4 --caps "${CAPS:-4,8,16,24,32,48}"
run maxbatch --model qwen3-1.7b
# shellcheck disable=SC2086 # $text is empty or two words
run textdemo $text
