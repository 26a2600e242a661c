# new tree against HEAD's (basetree/, sm_90a only): CE clusters, Di 16-byte loads, dQ fragments double-buffered
R=$OUT/r; mkdir -p $R; S=$(date +%s)
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; date -u; gcc --version | head -1; nvcc --version | tail -2; } > $R/machine.txt 2>&1
( cd basetree && make -j8 STB_INCLUDE=$PWD/../build/stb NVFLAGS="-O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Xcompiler -Wall,-Wextra,-Werror,-fPIC" build/slidecheck build/test_gpu > $R/build_base.log 2>&1 ) &
( time make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu ) > $R/build.log 2>&1 || { tail -30 $R/build.log; cd $OUT && tar czf r.tgz r; exit 1; }
wait; echo "built at +$(( $(date +%s) - S )) s"; ls basetree/build/slidecheck basetree/build/test_gpu || tail -20 $R/build_base.log
make test-gpu STB_INCLUDE=build/stb > $R/test_gpu.txt 2>&1; tail -1 $R/test_gpu.txt; grep "FAIL" $R/test_gpu.txt | head -20
echo "tested at +$(( $(date +%s) - S )) s"
for b in new base; do B=build; [ $b = base ] && B=basetree/build; $B/test_gpu --bench-attention > $R/batt_$b.txt 2>&1; echo "$b: $(grep -E 'DEFAULT  .*backward' $R/batt_$b.txt)"; done
t="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-4"
for b in new base; do B=build; [ $b = base ] && B=basetree/build; $B/slidecheck $t --ckpt none --steps 3 --warmup 1 --op-times > $R/ops_$b.log 2>&1; echo "$b: $(grep -E 'crossentropy|row dots|dq = dS' $R/ops_$b.log | tr -s ' ' | tr '\n' ';')"; done
s="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 256 --batch 1 --optim sgd --lr 1e-4 --ckpt none --steps 40 --warmup 5"
for r in 1 2; do for b in new base; do B=build; [ $b = base ] && B=basetree/build
  $B/slidecheck $t --ckpt none --steps 15 --warmup 3 > $R/s2048_${b}_$r.log 2>&1; echo "2048x4 $b $r: $(grep '^summary' $R/s2048_${b}_$r.log | cut -c1-90)"
  $B/slidecheck $s > $R/s256_${b}_$r.log 2>&1; echo "256x1 $b $r: $(grep '^summary' $R/s256_${b}_$r.log | cut -c1-90)"
done; done
for b in new base; do B=build; [ $b = base ] && B=basetree/build; $B/slidecheck $t --ckpt full --steps 15 --warmup 3 > $R/f2048_$b.log 2>&1; echo "2048x4 full $b: $(grep '^summary' $R/f2048_$b.log | cut -c1-90)"; done
echo "done at +$(( $(date +%s) - S )) s"
cd $OUT && tar czf r.tgz r && rm -rf r
