# final tree on an H100: bench/speed.sh (ours: none, full, selective:proj at 2048x4 AdamW and 256x1 SGD, with the floors
# and the sustained GEMM step; then torch.compile none at 2048x4), nvidia-smi beside it
R=$OUT/r; mkdir -p $R; S=$(date +%s)
{ git log --oneline -1; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; date -u; gcc --version | head -1; } > $R/machine.txt 2>&1
( time make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu ) > $R/build.log 2>&1 || { tail -30 $R/build.log; cd $OUT && tar czf r.tgz r; exit 1; }
echo "built at +$(( $(date +%s) - S )) s"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_event_reasons.active --format=csv,noheader -lms 200 > $R/smi.csv 2>&1 &
SMI=$!
OURS_CKPTS="none full selective:proj" OURS_GRAPHS=on CONFIGS="2048x4:adamw 256x1:sgd" IMPLS=ours sh bench/speed.sh $R/speed > $R/run1.log 2>&1
echo "ours at +$(( $(date +%s) - S )) s"
GEMM_TOKENS= IMPLS=compile TORCH_CKPTS=none CONFIGS=2048x4:adamw CELL_TIMEOUT=200 sh bench/speed.sh $R/speed > $R/run2.log 2>&1
echo "compile at +$(( $(date +%s) - S )) s"
kill $SMI
python3 bench/results_md.py $R/speed > $R/speed/RESULTS.md 2> $R/results_md.err; cut -c1-150 $R/speed/speed.csv
grep -E "roofline|sustained" $R/speed/RESULTS.md | cut -c1-300
if [ $(( $(date +%s) - S )) -lt 470 ]; then make test-gpu STB_INCLUDE=build/stb > $R/test_gpu.txt 2>&1; tail -1 $R/test_gpu.txt; fi
echo "done at +$(( $(date +%s) - S )) s"
cd $OUT && tar czf r.tgz r && rm -rf r
