# H100: build, make test-gpu, bench/speed.sh (ours: none, full, selective:proj at 2048x4 AdamW and 256x1 SGD, with the
# GEMM floors; then torch.compile none at 2048x4)
R=$OUT/r; mkdir -p $R
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; date -u; gcc --version | head -1; } > $R/machine.txt 2>&1
( time make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu ) > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
tail -3 $R/build.log | head -1
make test-gpu STB_INCLUDE=build/stb > $R/test_gpu.txt 2>&1; tail -1 $R/test_gpu.txt; grep "FAIL" $R/test_gpu.txt | head -20
date -u
OURS_CKPTS="none full selective:proj" OURS_GRAPHS=on CONFIGS="2048x4:adamw 256x1:sgd" IMPLS=ours sh bench/speed.sh $R/speed > $R/run1.log 2>&1
date -u
GEMM_TOKENS= IMPLS=compile TORCH_CKPTS=none CONFIGS=2048x4:adamw CELL_TIMEOUT=200 sh bench/speed.sh $R/speed > $R/run2.log 2>&1
date -u
python3 bench/results_md.py $R/speed > /dev/null 2>&1; cut -c1-150 $R/speed/speed.csv
grep -A12 "^| 2048 × 4\|^| ratio" $R/speed/RESULTS.md | head -40
cd $OUT && tar czf r.tgz r && rm -rf r
