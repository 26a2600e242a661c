# H200: the step's GEMMs at 8192 tokens in bursts and back to back, nvidia-smi beside them
R=$OUT/r; mkdir -p $R
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; date -u; nvcc --version | tail -2; } > $R/machine.txt 2>&1
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_90,code=sm_90 -Xcompiler -Wall,-Wextra,-Werror bench/gemm_floor.cu -o /tmp/gemm_floor -lcublasLt > $R/build_floor.log 2>&1 || { cat $R/build_floor.log; exit 1; }
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_event_reasons.active --format=csv,noheader -lms 100 > $R/smi.csv 2>&1 &
SMI=$!
sleep 1
for a in 8 1; do echo "floor_a$a $(date +%s.%N)" >> $R/phases.txt; /tmp/gemm_floor --tokens 8192 --algos $a --sustained 20 > $R/floor_a$a.csv 2> $R/floor_a$a.log; echo "end_a$a $(date +%s.%N)" >> $R/phases.txt; sleep 2; done
kill $SMI
grep -E "sustained gemm|floor per step" $R/floor_a*.csv; grep "sustained loop" $R/floor_a*.log
cd $OUT && tar czf r.tgz r && rm -rf r
