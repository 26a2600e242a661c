# 4 GPUs: build, make test-gpu (beside), then the data-parallel equality checks at 4 ranks (untied slide included)
R=$OUT/r; mkdir -p $R
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv; date -u; gcc --version | head -1; git log --oneline | head -1; git status --short; } > $R/machine.txt 2>&1
( time make -j32 STB_INCLUDE=build/stb build/slidecheck build/test_gpu build/allreduce ) > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
grep real $R/build.log
make test-gpu STB_INCLUDE=build/stb > $R/test_gpu.txt 2>&1; tail -2 $R/test_gpu.txt; grep FAIL $R/test_gpu.txt | head -5
export NCCL_NVLS_ENABLE=0
GPUS=4 EQUAL_ONLY=1 timeout 380 sh bench/gpu_dp_checks.sh $R/eq4 > $R/eq4.txt 2>&1; echo "eq4 rc $?"
grep -c PASS $R/eq4.txt; grep -v PASS $R/eq4.txt | head -20; grep untied $R/eq4.txt
cd $OUT && tar czf r.tgz --exclude='*.safetensors' r && rm -rf r
