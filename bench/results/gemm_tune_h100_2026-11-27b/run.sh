# H100: build, make test-gpu, then --gemm-tune (L2 flushed before each timed candidate) against the default, alternating
R=$OUT; S=$(date +%s)
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; date -u; gcc --version | head -1; } > $R/machine.txt 2>&1
( time make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu ) > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at +$(( $(date +%s) - S )) s"
make test-gpu STB_INCLUDE=build/stb > $R/test_gpu.txt 2>&1; tail -1 $R/test_gpu.txt; grep "FAIL" $R/test_gpu.txt | head -20
echo "tested at +$(( $(date +%s) - S )) s"
t="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-4 --ckpt none --steps 15 --warmup 3"
s="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 256 --batch 1 --optim sgd --lr 1e-4 --ckpt none --steps 40 --warmup 5"
for r in 1 2 3; do
  for v in tune default; do f=""; [ $v = tune ] && f="--gemm-tune"
    build/slidecheck $s $f > $R/ab256_${v}_$r.log 2>&1; echo "256x1 $v $r: $(grep '^summary' $R/ab256_${v}_$r.log | cut -c1-100)"
    [ $r -le 2 ] && { build/slidecheck $t $f > $R/ab2048_${v}_$r.log 2>&1; echo "2048x4 $v $r: $(grep '^summary' $R/ab2048_${v}_$r.log | cut -c1-100)"; }
  done
done
echo "done at +$(( $(date +%s) - S )) s"
