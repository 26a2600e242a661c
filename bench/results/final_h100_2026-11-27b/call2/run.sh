R=$OUT/r; mkdir -p $R
{ nvidia-smi -L; date -u; gcc --version | head -1; } > $R/machine.txt 2>&1
make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
make test-gpu STB_INCLUDE=build/stb > $R/test_gpu.txt 2>&1; tail -2 $R/test_gpu.txt; grep FAIL $R/test_gpu.txt | head
cd $OUT && tar czf r.tgz r && rm -rf r
