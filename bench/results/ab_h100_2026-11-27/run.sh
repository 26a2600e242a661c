# H100: the tree against the .cu of 08a2c33 (before this day's element-wise changes), built side by side:
# make test-gpu, --op-times, the graph step, and the saved bytes of each
R=$OUT/r; mkdir -p $R /tmp/base
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv; date -u; gcc --version | head -1; } > $R/machine.txt 2>&1
tar --exclude=./build --exclude=./.git -cf - . | tar xf - -C /tmp/base; cp base_cuda.cu /tmp/base/slidecheck_cuda.cu
( cd /tmp/base && make -j4 STB_INCLUDE=$PWD/build/stb build/slidecheck > $R/build_base.log 2>&1 ) &
BB=$!
( time make -j12 STB_INCLUDE=build/stb build/slidecheck build/test_gpu ) > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
make test-gpu STB_INCLUDE=build/stb > $R/test_gpu.txt 2>&1; tail -2 $R/test_gpu.txt; grep FAIL $R/test_gpu.txt | head
wait $BB; ls /tmp/base/build/slidecheck > /dev/null || { tail -5 $R/build_base.log; exit 1; }
op="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-4 --ckpt none"
for r in 1 2; do
  for b in new base; do B=build/slidecheck; [ $b = base ] && B=/tmp/base/build/slidecheck
    $B $op --steps 3 --warmup 1 --op-times > $R/op_times_${b}_$r.log 2>&1
    echo "$b $r: $(grep -h 'add_forward\|rmsnorm_backward\|qknorm_rope_backward' $R/op_times_${b}_$r.log | awk '{printf "%s=%s ", $1, $NF}')"
  done
  for b in new base; do B=build/slidecheck; [ $b = base ] && B=/tmp/base/build/slidecheck
    $B $op --steps 15 --warmup 3 > $R/step_${b}_$r.log 2>&1; echo "$b $r: $(grep -o 'median step [0-9.]* ms (n=[0-9]*' $R/step_${b}_$r.log)"
  done
done
for b in new base; do B=build/slidecheck; [ $b = base ] && B=/tmp/base/build/slidecheck
  $B $op --steps 3 --warmup 1 --save /tmp/w_$b > $R/save_$b.log 2>&1; grep '^step' $R/save_$b.log | cut -c1-60
done
cmp /tmp/w_new/model.safetensors /tmp/w_base/model.safetensors && echo "weights after 3 steps: this tree == 08a2c33's .cu (bitwise)"
cd $OUT && tar czf r.tgz r && rm -rf r
