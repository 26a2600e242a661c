# H100: build (and the parent's .cu beside it, for the A/B of the norm backward), make test-gpu, the kernel
# profile of both, bench/speed.sh (ours, then torch.compile)
R=$OUT/r; mkdir -p $R /tmp/base
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv; date -u; gcc --version | head -1; } > $R/machine.txt 2>&1
tar --exclude=./build --exclude=./.git -cf - . | tar xf - -C /tmp/base; cp base_cuda.cu /tmp/base/slidecheck_cuda.cu
( cd /tmp/base && make -j4 STB_INCLUDE=$PWD/build/stb build/slidecheck > $R/build_base.log 2>&1 ) &
BB=$!
( time make -j12 STB_INCLUDE=build/stb build/slidecheck build/test_gpu ) > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
make test-gpu STB_INCLUDE=build/stb > $R/test_gpu.txt 2>&1; tail -2 $R/test_gpu.txt; grep FAIL $R/test_gpu.txt | head
wait $BB; ls -la /tmp/base/build/slidecheck || tail -5 $R/build_base.log
op="train --model qwen3-1.7b --device cuda --dtype bf16 --seq 2048 --batch 4 --optim adamw --lr 1e-4 --ckpt none --steps 3 --warmup 1 --op-times"
for r in 1 2; do
build/slidecheck $op > $R/op_times_new_$r.log 2>&1; grep "rmsnorm_backward\|^summary" $R/op_times_new_$r.log | cut -c1-120
/tmp/base/build/slidecheck $op > $R/op_times_base_$r.log 2>&1; grep "rmsnorm_backward\|^summary" $R/op_times_base_$r.log | cut -c1-120
done
OURS_CKPTS="none full selective:proj" OURS_GRAPHS=on CONFIGS="2048x4:adamw 256x1:sgd" IMPLS=ours sh bench/speed.sh $R/speed > $R/run1.log 2>&1
GEMM_TOKENS= IMPLS=compile TORCH_CKPTS=none CONFIGS=2048x4:adamw CELL_TIMEOUT=240 sh bench/speed.sh $R/speed > $R/run2.log 2>&1
python3 bench/results_md.py $R/speed > /dev/null 2>&1; cut -c1-150 $R/speed/speed.csv
cd $OUT && tar czf r.tgz r && rm -rf r
