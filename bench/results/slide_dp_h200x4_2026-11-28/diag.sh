#!/bin/sh
# one device call on 4 GPUs: where 4-rank slide's saved fp32 weights part from resident's (tiny,
# seq 128 x batch 2, 4 AdamW steps); VARS="var_a var_b": dirs holding the header and CLI of earlier
# trees, built with this tree's CUDA object and their slide compared too. Per tensor: elements that differ, the largest difference.
set -u
W=/tmp/dpw/diag; rm -rf "$W"; mkdir -p "$W"
exec > "$OUT/log.txt" 2>&1
export NCCL_NVLS_ENABLE=0
T0=$(date +%s)
make -j16 STB_INCLUDE=build/stb build/slidecheck > "$W/build.log" 2>&1 || { echo BUILD FAILED; tail -n 30 "$W/build.log"; }
for d in ${VARS:-}; do
    gcc -std=c11 -O3 -g -Wall -Wextra -Werror -fopenmp -DSLIDECHECK_CUDA -I/usr/local/cuda/include "$d/demos/cli.c" -o "$d/slidecheck" \
        build/slidecheck_cuda.o -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lcublasLt -lcublas -lcudart -lstdc++ -lm -pthread || echo "$d BUILD FAILED"
done
echo "build $(( $(date +%s) - T0 )) s"
cat > "$W/cmp.py" <<'PY'
import sys
from safetensors.numpy import load_file
a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
bad = 0
for k in sorted(a):
    x, y = a[k].view('u1'), b[k].view('u1')
    if x.tobytes() != y.tobytes():
        xf, yf = a[k].astype('f8'), b[k].astype('f8')
        d = abs(xf - yf)
        print(f"  {k} {tuple(a[k].shape)}: {int((d > 0).sum())} differ, max {d.max():.3g}, rows {sorted(set((d > 0).nonzero()[0].tolist()))[:12]}")
        bad += 1
print(f"  {bad} of {len(a)} tensors differ")
PY
t="train --model tiny --device cuda --optim adamw --lr 1e-3 --warmup 1 --dtype fp32"
run() { # NAME BIN ARGS...
    rn=$1; b=$2; shift 2
    timeout 60 $b/slidecheck $t "$@" --save "$W/$rn" > "$W/$rn.log" 2>&1 || echo "$rn: exit $?"
}
pair() { # NAME ARGS...: resident and slide (tree), compared
    n=$1; shift
    run r_$n build "$@" --mode resident; run s_$n build "$@" --mode slide
    echo "$n ($*): slide vs resident"; python3 "$W/cmp.py" "$W/r_$n/model.safetensors" "$W/s_$n/model.safetensors"
}
pair f4 --seq 128 --batch 2 --gpus 4 --steps 4
for d in ${VARS:-}; do
    run s_f4_$d $d --seq 128 --batch 2 --gpus 4 --steps 4 --mode slide
    echo "f4 $d: slide vs resident"; python3 "$W/cmp.py" "$W/r_f4/model.safetensors" "$W/s_f4_$d/model.safetensors"
done
pair f1 --seq 128 --batch 2 --gpus 4 --steps 1
pair f2 --seq 128 --batch 2 --gpus 4 --steps 2
pair g4 --seq 64 --batch 1 --gpus 4 --steps 4
pair h4 --seq 128 --batch 2 --gpus 2 --steps 4
pair n4 --seq 128 --batch 2 --gpus 4 --steps 4 --dp-sums nccl
pair z4 --seq 128 --batch 2 --gpus 4 --steps 4 --zero 1
run s_f4b build --seq 128 --batch 2 --gpus 4 --steps 4 --mode slide
echo "f4: slide twice"; python3 "$W/cmp.py" "$W/s_f4/model.safetensors" "$W/s_f4b/model.safetensors"
for n in f4 f1; do grep -h '^step' "$W/r_$n.log" "$W/s_$n.log" | cut -c1-90; done
echo "elapsed $(( $(date +%s) - T0 )) s"
find "$W" -name '*.safetensors' -delete
tar czf "$OUT/r.tgz" -C /tmp/dpw diag
