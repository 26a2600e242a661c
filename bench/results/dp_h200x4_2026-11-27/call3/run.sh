# 4 GPUs: are slide's saved bytes at 4 ranks the same run to run, and which tensors differ from resident's
R=$OUT/r; mkdir -p $R
( time make -j32 STB_INCLUDE=build/stb build/slidecheck ) > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
grep real $R/build.log
export NCCL_NVLS_ENABLE=0
t4="build/slidecheck train --model tiny --device cuda --seq 64 --steps 5 --warmup 1 --optim adamw --lr 1e-3 --batch 1 --dtype fp32"
for i in 1 2 3; do $t4 --gpus 4 --mode slide --save $R/s$i > $R/s$i.log 2>&1; done
$t4 --gpus 4 --save $R/r > $R/r.log 2>&1
$t4 --gpus 4 --mode slide --steps 1 --save $R/s1a > $R/s1a.log 2>&1; $t4 --gpus 4 --steps 1 --save $R/r1 > $R/r1.log 2>&1
$t4 --gpus 2 --batch 2 --mode slide --save $R/t > $R/t.log 2>&1; $t4 --gpus 2 --batch 2 --save $R/u > $R/u.log 2>&1
cat > $R/d.py <<'PY'
import json, struct, sys, array
def load(p):
    raw = open(p, 'rb').read(); n = struct.unpack('<Q', raw[:8])[0]; h = json.loads(raw[8:8 + n]); o = 8 + n
    return {k: raw[o + v['data_offsets'][0]:o + v['data_offsets'][1]] for k, v in h.items() if k != '__metadata__'}
a, b = load(sys.argv[1]), load(sys.argv[2])
for k in sorted(a):
    if a[k] != b[k]:
        x, y = array.array('f', a[k]), array.array('f', b[k])
        d = [i for i in range(len(x)) if x[i] != y[i]]
        print('  %s: %d of %d differ, first %d: %r %r, max |d| %.3g' % (k, len(d), len(x), d[0], x[d[0]], y[d[0]], max(abs(x[i] - y[i]) for i in d)))
PY
for p in "s1 s2" "s1 s3" "r s1" "r s2" "r1 s1a" "u t"; do set -- $p; cmp -s $R/$1/model.safetensors $R/$2/model.safetensors && echo "$1 == $2" || { echo "$1 DIFFERS from $2"; python3 $R/d.py $R/$1/model.safetensors $R/$2/model.safetensors | head -8; }; done
rm -rf $R/s1 $R/s2 $R/s3 $R/r $R/s1a $R/r1 $R/t $R/u
cd $OUT && tar czf r.tgz r && rm -rf r
