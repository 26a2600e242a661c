# 4 GPUs: make test-gpu; slide against resident at 4 ranks, bytes, after the head's sum in resident's buckets
R=$OUT/r; mkdir -p $R
{ nvidia-smi -L; date -u; gcc --version | head -1; } > $R/machine.txt 2>&1
( time make -j32 STB_INCLUDE=build/stb build/slidecheck build/test_gpu ) > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
grep real $R/build.log
( make test-gpu STB_INCLUDE=build/stb > $R/test_gpu.txt 2>&1; echo "test-gpu rc $?" >> $R/test_gpu.txt ) &
TG=$!
export NCCL_NVLS_ENABLE=0
for dt in fp32 bf16; do
mw=; [ $dt = bf16 ] && mw=--master-weights
t="build/slidecheck train --model tiny --device cuda --seq 64 --steps 5 --warmup 1 --optim adamw --lr 1e-3 --dtype $dt"
for g in 4 2; do b=$((4 / g))
$t --gpus $g --batch $b $mw --save $R/r > $R/r${g}_$dt.log 2>&1; $t --gpus $g --batch $b --mode slide --save $R/s > $R/s${g}_$dt.log 2>&1
$t --gpus $g --batch $b --mode slide --zero 1 --save $R/z > $R/z${g}_$dt.log 2>&1; $t --gpus $g --batch $b --mode slide --save $R/s2 > $R/s2${g}_$dt.log 2>&1
for x in s z s2; do cmp -s $R/r/model.safetensors $R/$x/model.safetensors && echo "$dt $g ranks: resident == $x" || echo "$dt $g ranks: resident DIFFERS from $x"; done
for f in r s z; do echo "$dt $g $f: $(grep '^step' $R/$f${g}_$dt.log | awk '{printf "%s ", $4}')"; done
rm -rf $R/r $R/s $R/z $R/s2
done; done
wait $TG; tail -2 $R/test_gpu.txt; grep FAIL $R/test_gpu.txt | head -5
cd $OUT && tar czf r.tgz r && rm -rf r
