set -u
make -j16 STB_INCLUDE=build/stb build/slidecheck > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
nvidia-smi topo -m > $OUT/topo.txt 2>&1; nvidia-smi > $OUT/smi.txt
big="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-5 --ckpt none --steps 12 --warmup 2"
export NCCL_NVLS_ENABLE=0
build/slidecheck $big > $OUT/one.log 2>&1; grep summary $OUT/one.log
build/slidecheck $big --gpus 2 > $OUT/two.log 2>&1; grep summary $OUT/two.log
for cfg in "0.185 3.44e9" "0.185 1.72e9" "0 3.44e9"; do
  tag=$(echo $cfg | tr ' ' _)
  python3 bench/results/dp_copy_engine_h100x2_2026-11-28/bgcopy_h200x2/bg_peer_copy.py $cfg > $OUT/bg_$tag.log 2>&1 & bp=$!
  sleep 8
  build/slidecheck $big > $OUT/one_bg_$tag.log 2>&1; echo "bg $cfg"; grep summary $OUT/one_bg_$tag.log
  kill $bp; wait $bp 2>/dev/null; tail -3 $OUT/bg_$tag.log
done
build/slidecheck $big > $OUT/one_again.log 2>&1; grep summary $OUT/one_again.log
cd $OUT && tar czf ../r.tgz . && mv ../r.tgz .
