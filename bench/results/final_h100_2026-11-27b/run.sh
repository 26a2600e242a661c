# H100: the final tree: build, make test-gpu, memcheck (quick)
R=$OUT/r; mkdir -p $R
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv; date -u; gcc --version | head -1; } > $R/machine.txt 2>&1
( time make -j16 STB_INCLUDE=build/stb build/slidecheck build/test_gpu ) > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
tail -3 $R/build.log | head -1
make test-gpu STB_INCLUDE=build/stb > $R/test_gpu.txt 2>&1; tail -2 $R/test_gpu.txt; grep FAIL $R/test_gpu.txt | head
grep "rmsnorm_backward" $R/test_gpu.txt | head -12
( time timeout 400 make test-gpu-memcheck STB_INCLUDE=build/stb ) > $R/memcheck.txt 2>&1; echo "memcheck rc $?"; tail -4 $R/memcheck.txt
cd $OUT && tar czf r.tgz r && rm -rf r
