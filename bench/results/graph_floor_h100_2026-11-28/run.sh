# the launch floor of a graph of K dependent kernels (bench/graph_floor.cu), at the kernel counts of the 1.7B step
R=$OUT/r; mkdir -p $R
{ nvidia-smi -L; date -u; nvcc --version | tail -2; } > $R/machine.txt 2>&1
nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -Xcompiler -Wall,-Wextra,-Werror bench/graph_floor.cu -o /tmp/graph_floor > $R/build.log 2>&1 || { cat $R/build.log; exit 1; }
for k in 938 966 1134 1162; do /tmp/graph_floor --kernels $k --reps 50 > $R/graph_floor_k$k.csv 2>&1; cat $R/graph_floor_k$k.csv; done
cd $OUT && tar czf r.tgz r && rm -rf r
