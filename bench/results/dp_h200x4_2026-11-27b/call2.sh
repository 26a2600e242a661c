R=$OUT/r; mkdir -p $R; export NCCL_NVLS_ENABLE=0
ls build/slidecheck build/allreduce > /dev/null || exit 1
GPUS=4 SPEED_ONLY=1 SLIDE=0 TWO_NODE=0 timeout 560 sh bench/gpu_dp_checks.sh $R/sp4 > $R/sp4.txt 2>&1; echo "sp4 rc $?"
tail -45 $R/sp4.txt
cd $OUT && tar czf r.tgz --exclude='*.safetensors' r && rm -rf r
