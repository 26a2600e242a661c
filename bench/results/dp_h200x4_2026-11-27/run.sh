# 4 GPUs: build, make test-gpu (GPU 0) beside the tiny bit checks, the 1.7B levers, PyTorch DDP
R=$OUT/r; mkdir -p $R
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv; date -u; gcc --version | head -1; git log -1 --format=%h 2>/dev/null; } > $R/machine.txt 2>&1
( time make -j32 STB_INCLUDE=build/stb build/slidecheck build/test_gpu ) > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
grep real $R/build.log
( make test-gpu STB_INCLUDE=build/stb > $R/test_gpu.txt 2>&1; echo "test-gpu rc $?" >> $R/test_gpu.txt ) &
TG=$!
export NCCL_NVLS_ENABLE=0
for dt in bf16 fp32; do
t4="build/slidecheck train --model tiny --device cuda --seq 64 --steps 5 --warmup 1 --optim adamw --lr 1e-3 --batch 1 --gpus 4 --dtype $dt"
$t4 --save $R/a > $R/t_def_$dt.log 2>&1; $t4 --bucket-mb 1 --save $R/b > $R/t_one_$dt.log 2>&1; $t4 --zero 1 --save $R/c > $R/t_zero_$dt.log 2>&1
$t4 --zero 1 --bucket-mb 1 --save $R/d > $R/t_zone_$dt.log 2>&1; $t4 --mode slide --save $R/e > $R/t_slide_$dt.log 2>&1
$t4 --mode slide --zero 1 --save $R/f > $R/t_szero_$dt.log 2>&1; $t4 --cuda-graph off --save $R/g > $R/t_nog_$dt.log 2>&1
$t4 --zero 1 --cuda-graph off --save $R/h > $R/t_znog_$dt.log 2>&1
for x in b c d e f g h; do cmp -s $R/a/model.safetensors $R/$x/model.safetensors && echo "$dt: default == $x" || echo "$dt: default DIFFERS from $x"; done
for f in def one zero zone slide szero nog znog; do echo "$dt $f: $(grep '^step' $R/t_${f}_$dt.log | awk '{printf "%s ", $4}')"; done
rm -rf $R/a $R/b $R/c $R/d $R/e $R/f $R/g $R/h
done
wait $TG; tail -2 $R/test_gpu.txt
GPUS=4 LEVERS="- --zero=1 --bucket-mb=1 --zero=1,--bucket-mb=1" sh bench/dp_levers.sh $R/lev > $R/levers.log 2>&1
grep -v '^all-reduce\|^backward layers' $R/levers.log; find $R -name trace.json -delete
timeout 150 torchrun --nproc_per_node=4 bench/ddp_step.py --model qwen3-1.7b --seq 2048 --batch 4 > $R/ddp4.log 2>&1; tail -3 $R/ddp4.log
cd $OUT && tar czf r.tgz r && rm -rf r
