# on the machine of c3, right after it (its build kept): one eager step's per-kernel times, then the floors with
# cuBLASLt's first choice (--algos 1) and 40 sustained rounds, nvidia-smi beside both
R=$OUT/r; mkdir -p $R; ls build/slidecheck build/gemm_floor >/dev/null || exit 1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_event_reasons.active --format=csv,noheader -lms 100 > $R/smi2.csv 2>&1 & SMI=$!
sleep 1; echo "ops $(date +%s.%N)" > $R/phases2.txt
build/slidecheck train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-4 --ckpt none --steps 8 --warmup 2 --op-times > $R/ops.log 2>&1
echo "ops_end $(date +%s.%N)" >> $R/phases2.txt; sleep 2; echo "floor1 $(date +%s.%N)" >> $R/phases2.txt
build/gemm_floor --tokens 8192 --algos 1 --sustained 40 > $R/floor_a1.csv 2> $R/floor_a1.log
echo "floor1_end $(date +%s.%N)" >> $R/phases2.txt; kill $SMI
cd $OUT && tar czf r.tgz r
