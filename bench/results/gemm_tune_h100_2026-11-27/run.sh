# H100: build, make test-gpu, then the GEMM tuning against --gemm-first, alternating, in one call
R=$OUT/r; mkdir -p $R
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; date -u; gcc --version | head -1; } > $R/machine.txt 2>&1
( time make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu ) > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
tail -3 $R/build.log | head -1
make test-gpu STB_INCLUDE=build/stb > $R/test_gpu.txt 2>&1; tail -2 $R/test_gpu.txt; grep "FAIL\|gemm tuning" $R/test_gpu.txt | head -20
t="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-4 --ckpt none"
s="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 256 --batch 1 --optim sgd --lr 1e-4 --ckpt none"
for r in 1 2; do
  for v in tuned first; do f=""; [ $v = first ] && f="--gemm-first"
    build/slidecheck $t --steps 15 --warmup 3 $f > $R/ab2048_${v}_$r.log 2>&1; echo "2048x4 $v $r: $(grep -m1 '^step 1 ' $R/ab2048_${v}_$r.log | cut -c1-90) | $(grep '^summary' $R/ab2048_${v}_$r.log | cut -c1-160)"
    build/slidecheck $s --steps 40 --warmup 5 $f > $R/ab256_${v}_$r.log 2>&1; echo "256x1 $v $r: $(grep '^summary' $R/ab256_${v}_$r.log | cut -c1-160)"
  done
done
for v in tuned first; do f=""; [ $v = first ] && f="--gemm-first"
  build/slidecheck $t --steps 3 --warmup 1 $f --save $R/w_$v > $R/save_$v.log 2>&1
  build/slidecheck $t --steps 3 --warmup 1 $f --op-times > $R/op_times_$v.log 2>&1
done
cmp $R/w_tuned/model.safetensors $R/w_first/model.safetensors && echo "weights after 3 AdamW steps: tuned == first choice (bitwise)"; rm -rf $R/w_tuned $R/w_first
grep "^step" $R/save_tuned.log $R/save_first.log
python3 bench/op_times_diff.py $R/op_times_first.log $R/op_times_tuned.log 2>&1 | head -40 || true
grep -i "gemm" $R/op_times_tuned.log | head -30
cd $OUT && tar czf r.tgz r && rm -rf r
