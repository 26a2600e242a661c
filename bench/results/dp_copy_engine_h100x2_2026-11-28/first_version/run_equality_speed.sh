set -u
make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $OUT/machine.txt; cat $OUT/machine.txt
tiny="train --model tiny --device cuda --seq 64 --steps 5 --warmup 1 --optim adamw --lr 1e-3 --batch 2"
eq() { # tag flags...
  t=$1; shift
  timeout 120 build/slidecheck $tiny --gpus 2 "$@" --save $OUT/s_${t}_ce > $OUT/eq_${t}_ce.log 2>&1; a=$?
  timeout 120 build/slidecheck $tiny --gpus 2 "$@" --dp-sums nccl --save $OUT/s_${t}_nccl > $OUT/eq_${t}_nccl.log 2>&1; b=$?
  grep -h "summed by" $OUT/eq_${t}_ce.log $OUT/eq_${t}_nccl.log | tr '\n' ' '
  if [ $a = 0 ] && [ $b = 0 ] && diff -r -q $OUT/s_${t}_ce $OUT/s_${t}_nccl > /dev/null; then echo "$t: same bytes PASS"; else echo "$t: exit $a $b or bytes differ FAIL"; tail -3 $OUT/eq_${t}_ce.log; fi
}
eq bf16 --dtype bf16
eq fp32 --dtype fp32
eq bf16_eager --dtype bf16 --cuda-graph off
eq bf16_z --dtype bf16 --zero 1
eq bf16_layer --dtype bf16 --bucket-mb 0
big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 12 --warmup 2"
sp() { t=$1; shift; timeout 150 build/slidecheck $big "$@" > $OUT/sp_$t.log 2>&1; echo "$t: $(grep -h 'summed by' $OUT/sp_$t.log) $(grep -h '^summary' $OUT/sp_$t.log | cut -c1-200)"; }
sp one1
sp ce1 --gpus 2
sp nccl1 --gpus 2 --dp-sums nccl
sp cez1 --gpus 2 --zero 1
sp ncclz1 --gpus 2 --zero 1 --dp-sums nccl
sp one2
sp ce2 --gpus 2
sp nccl2 --gpus 2 --dp-sums nccl
cd $OUT && tar czf ../r.tgz . && mv ../r.tgz .
