R=$OUT/r; mkdir -p $R
git log --oneline -1 > $R/commit.txt; date >> $R/commit.txt; nvidia-smi -L >> $R/commit.txt; gcc --version | head -1 >> $R/commit.txt
( time make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu ) > $R/build.log 2>&1 || { tail -30 $R/build.log; cd $OUT && tar czf r.tgz r; exit 1; }
grep real $R/build.log
( time make test-gpu STB_INCLUDE=build/stb ) > $R/test_gpu.txt 2>&1; echo "test-gpu rc=$?"; grep -E "passed|FAIL|real" $R/test_gpu.txt | tail -5
./build/test_gpu --bench-attention > $R/batt.txt 2>&1; grep -E "DEFAULT|cuDNN" $R/batt.txt
ncu --clock-control none -k regex:"dkv_ws|dqs_ws|fwd_ws" -c 6 --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum ./build/test_gpu --bench-attention > $R/ncu_attn.txt 2>&1; echo "ncu rc=$?"; grep -E "k_fa_|Duration|DRAM Throughput|dram__bytes|Memory Throughput|Compute \(SM\)" $R/ncu_attn.txt | head -60
cd $OUT && tar czf r.tgz r && rm -rf r
# then, on the same machine (its build kept), two more calls:
# ncu --clock-control none -k regex:"dkv_ws|dqs_ws|attn_di|dots" -c 6 --section SpeedOfLight --section MemoryWorkloadAnalysis \
#     --section Occupancy --section WarpStateStats --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,... \
#     ./build/test_gpu --bench-attention > ncu_rowdots.txt     (it matched the row dots kernel six times)
# ncu --clock-control none -k regex:"dkv_ws|dqs_ws" -c 4 --section SpeedOfLight --section MemoryWorkloadAnalysis \
#     --section Occupancy --section WarpStateStats --section SchedulerStats --metrics dram__bytes_read.sum,... \
#     ./build/test_gpu --bench-attention > ncu_bwd.txt
