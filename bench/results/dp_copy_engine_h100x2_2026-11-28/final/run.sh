set -u
pk() { (cd $OUT && tar czf /tmp/r.tgz --exclude=r.tgz . && mv /tmp/r.tgz $OUT/r.tgz); }
make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $OUT/machine.txt; cat $OUT/machine.txt; git log --oneline | head -1 > $OUT/commit.txt 2>/dev/null
tiny="train --model tiny --device cuda --seq 64 --steps 5 --warmup 1 --optim adamw --lr 1e-3 --batch 2"
eq() { t=$1; shift
  timeout 120 build/slidecheck $tiny --gpus 2 "$@" --save $OUT/s_${t}_ce > $OUT/eq_${t}_ce.log 2>&1; a=$?
  timeout 120 build/slidecheck $tiny --gpus 2 "$@" --dp-sums nccl --save $OUT/s_${t}_nccl > $OUT/eq_${t}_nccl.log 2>&1; b=$?
  if [ $a = 0 ] && [ $b = 0 ] && grep -q "copy engines" $OUT/eq_${t}_ce.log && diff -r -q $OUT/s_${t}_ce $OUT/s_${t}_nccl > /dev/null; then echo "$t: copy engines and NCCL, the same bytes: PASS"; else echo "$t: exit $a $b or bytes differ: FAIL"; tail -3 $OUT/eq_${t}_ce.log; fi
  rm -rf $OUT/s_${t}_ce $OUT/s_${t}_nccl; }
eq bf16 --dtype bf16
eq fp32 --dtype fp32
eq bf16_eager --dtype bf16 --cuda-graph off
eq bf16_z --dtype bf16 --zero 1
eq bf16_layer --dtype bf16 --bucket-mb 0
eq fp32_bucket1 --dtype fp32 --bucket-mb 1
for kg in auto off; do
  build/slidecheck $tiny --dtype bf16 --steps 1000000 --gpus 2 --rendezvous-timeout 15 --cuda-graph $kg > $OUT/kill_$kg.log 2>&1 &
  L=$!; sleep 15; R1=$(pgrep -P $L | sort -n | tail -n 1); t0=$(date +%s); [ -n "$R1" ] && kill -9 "$R1"
  timeout 90 sh -c "while kill -0 $L 2>/dev/null; do sleep 1; done"; wait $L; rc=$?; dt=$(( $(date +%s) - t0 ))
  echo "killed rank 1 (graph $kg): exit $rc after $dt s: $(grep -m1 'slidecheck' $OUT/kill_$kg.log | cut -c1-220)"
  kill -9 $L 2>/dev/null
done
pk
big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 12 --warmup 2"
sp() { t=$1; shift; timeout 150 build/slidecheck $big "$@" > $OUT/sp_$t.log 2>&1; echo "$t: $(grep -h '^summary' $OUT/sp_$t.log | cut -c1-110)"; }
sp one1 --out $OUT/one
sp ce1 --gpus 2 --out $OUT/ce
sp nccl1 --gpus 2 --dp-sums nccl
sp ce2 --gpus 2
sp nccl2 --gpus 2 --dp-sums nccl
sp cez --gpus 2 --zero 1
python3 bench/dp_hidden.py $OUT/sp_one1.log $OUT/sp_ce1.log $OUT/ce/trace.json $OUT/one/trace.json
rm -rf $OUT/one $OUT/ce; pk
make test-gpu STB_INCLUDE=build/stb > $OUT/test_gpu.log 2>&1; tail -2 $OUT/test_gpu.log
pk
