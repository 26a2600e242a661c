#!/bin/sh
# --mode auto against a brute-force sweep of the hand knobs under the same caps: runs
# build/auto_sweep (bench/auto_sweep.c, one process; `make build/auto_sweep` first) on the GPU
# with OUT as its --out; further flags go to it (--caps 24GiB --optims adamw, --help, ...).
#   sh bench/auto_sweep.sh OUT [FLAGS...]
set -eu
O=${1:?usage: auto_sweep.sh OUT [FLAGS...]}
shift
exec "${BIN:-build}/auto_sweep" --device cuda --out "$O" "$@"
