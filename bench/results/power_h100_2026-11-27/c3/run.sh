# final tree: build, make test-gpu, memcheck on the attention checks; the step's GEMMs in bursts and sustained, and the
# training step, each beside an nvidia-smi log of SM clock and power
R=$OUT/r; mkdir -p $R; S=$(date +%s)
{ git log --oneline -1; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; date -u; gcc --version | head -1; nvcc --version | tail -2; } > $R/machine.txt 2>&1
( nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_90,code=sm_90 -Xcompiler -Wall,-Wextra,-Werror bench/gemm_floor.cu -o build/gemm_floor -lcublasLt > $R/build_floor.log 2>&1 ) &
( time make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu ) > $R/build.log 2>&1 || { tail -30 $R/build.log; cd $OUT && tar czf r.tgz r; exit 1; }
wait; echo "built at +$(( $(date +%s) - S )) s"; grep real $R/build.log
make test-gpu STB_INCLUDE=build/stb > $R/test_gpu.txt 2>&1; tail -1 $R/test_gpu.txt; grep "FAIL" $R/test_gpu.txt | head -20
echo "tested at +$(( $(date +%s) - S )) s"
timeout 300 compute-sanitizer --tool memcheck build/test_gpu --quick --attention > $R/memcheck_attn.txt 2>&1; echo "memcheck rc=$?: $(tail -2 $R/memcheck_attn.txt | tr '\n' ' ')"
echo "memcheck at +$(( $(date +%s) - S )) s"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_event_reasons.active --format=csv,noheader -lms 100 > $R/smi.csv 2>&1 &
SMI=$!
sleep 2
echo "floor $(date +%s.%N)" > $R/phases.txt
build/gemm_floor --tokens 8192 --sustained 20 > $R/floor.csv 2> $R/floor.log; echo "floor rc=$?"
echo "floor_end $(date +%s.%N)" >> $R/phases.txt
sleep 3
echo "step $(date +%s.%N)" >> $R/phases.txt
build/slidecheck train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-4 --ckpt none --steps 40 --warmup 3 > $R/step.log 2>&1
echo "step_end $(date +%s.%N)" >> $R/phases.txt
kill $SMI
grep "^#" $R/floor.csv; grep "sustained loop" $R/floor.log; grep "^summary" $R/step.log | cut -c1-120
echo "done at +$(( $(date +%s) - S )) s"
cd $OUT && tar czf r.tgz r && rm -rf r
