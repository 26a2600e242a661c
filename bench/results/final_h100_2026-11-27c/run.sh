# H100: build the final tree, make test-gpu; everything into one tar
R=$OUT/r; mkdir -p $R; S=$(date +%s)
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv; date -u; gcc --version | head -1; } > $R/machine.txt 2>&1
( time make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu ) > $R/build.log 2>&1 || { tail -30 $R/build.log; cd $OUT && tar czf r.tgz r; exit 1; }
echo "built at +$(( $(date +%s) - S )) s"
make test-gpu STB_INCLUDE=build/stb > $R/test_gpu.txt 2>&1; tail -1 $R/test_gpu.txt; grep "FAIL" $R/test_gpu.txt | head -20
echo "tested at +$(( $(date +%s) - S )) s"
cd $OUT && tar czf r.tgz r && rm -rf r
