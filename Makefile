# slidecheck: `make` builds everything this machine can build; `make test` runs every test
# (plain and under ASan+UBSan) and ends with "N passed, M failed".
CC      ?= cc
CFLAGS  ?= -std=c11 -O3 -g -Wall -Wextra -Werror -fopenmp
SANFLAGS = -std=c11 -O1 -g -Wall -Wextra -Werror -fopenmp -fsanitize=address,undefined \
           -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDLIBS   = -lm -pthread
HDRS     = slidecheck.h

# stb headers (demos/plot.h and tests/check_outputs.c include <stb/...>). Default: the system's
# (Debian's libstb-dev, /usr/include/stb/). STB_INCLUDE=dir uses a copy instead: dir must hold a
# folder stb/ with stb_image_write.h, stb_truetype.h (and stb_image.h for check_outputs), as
# bench/carry_stb.sh writes under build/stb: `make STB_INCLUDE=build/stb demos`.
STB_INCLUDE ?=
STB_CFLAGS = $(if $(STB_INCLUDE),-I$(STB_INCLUDE))

NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
ifeq ($(wildcard slidecheck_cuda.cu),)
NVCC :=
endif
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
# Ampere (sm_80), consumer Ampere and Ada (sm_86, sm_89), Hopper with its wgmma/TMA kernels
# (sm_90a), and compute_90 PTX that later GPUs compile at load time (they run the sm_80-class
# kernels: see slidecheck_cuda.cu). NVCC_THREADS: nvcc compiles the targets in parallel (0: as
# many threads as cores).
NVCC_THREADS ?= 0
NVFLAGS  = -O3 -std=c++17 --threads $(NVCC_THREADS) \
           -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 \
           -gencode arch=compute_89,code=sm_89 -gencode arch=compute_90a,code=sm_90a \
           -gencode arch=compute_90,code=compute_90 -Xcompiler -Wall,-Wextra,-Werror,-fPIC
CUDA_LIBS = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublasLt -lcublas -lcudart -lstdc++

TESTS = tensor model alloc trace io plan auto slide optim plot dist data train
DEMOS = t1m1 t1m2 sweep maxbatch textdemo placement
DEMO_HDRS = $(wildcard demos/*.h)

.PHONY: all test test-gpu test-gpu-memcheck test-gpu-racecheck test-gpu-slide clean demo demos
ifeq ($(NVCC),)
all: build/slidecheck
	@echo "note: nvcc not found: built the CPU-only tool (no CUDA backend)"
CLI_DEPS =
CLI_FLAGS =
CLI_LIBS = $(LDLIBS)
else
all: build/slidecheck build/slidecheck_cuda.o
CLI_DEPS = build/slidecheck_cuda.o
CLI_FLAGS = -DSLIDECHECK_CUDA
CLI_LIBS = build/slidecheck_cuda.o $(CUDA_LIBS) $(LDLIBS)
endif

build/slidecheck: demos/cli.c $(HDRS) $(CLI_DEPS)
	@mkdir -p build
	$(CC) $(CFLAGS) $(CLI_FLAGS) -I. demos/cli.c -o $@ $(CLI_LIBS)

build/slidecheck_cuda.o: slidecheck_cuda.cu $(HDRS)
	@mkdir -p build
	$(NVCC) $(NVFLAGS) -I. -c slidecheck_cuda.cu -o $@

build/test_%: tests/test_%.c tests/check.h $(HDRS)
	@mkdir -p build
	$(CC) $(CFLAGS) -DSLIDECHECK_TESTING -I. $(STB_CFLAGS) $< -o $@ $(LDLIBS)

build/asan/test_%: tests/test_%.c tests/check.h $(HDRS)
	@mkdir -p build/asan
	$(CC) $(SANFLAGS) -DSLIDECHECK_TESTING -I. $(STB_CFLAGS) $< -o $@ $(LDLIBS)

# ThreadSanitizer on slide mode's copy threads, host optimizer and their event ordering (without
# OpenMP, whose runtime is not instrumented: the optimizer's threads would be false reports)
build/tsan/test_slide: tests/test_slide.c tests/check.h $(HDRS)
	@mkdir -p build/tsan
	$(CC) -std=c11 -O1 -g -fsanitize=thread -Wall -Wextra -Werror -DSLIDECHECK_TESTING -I. $< -o $@ -lm -pthread

build/cpp_check: tests/test_model.c $(HDRS)
	@mkdir -p build
	$(CXX) -x c++ -std=c++17 -O0 -Wall -Wextra -Werror -fopenmp -DSLIDECHECK_TESTING -I. -fsyntax-only tests/test_model.c
	$(CC) -std=c11 -DSLIDECHECK_STATIC -DSLIDECHECK_TESTING -Wall -Wextra -Werror -fopenmp -I. -fsyntax-only tests/test_model.c
	@touch $@

# Every .c file under both compilers, syntax only: gcc with the warnings Ubuntu's gcc adds by
# default (-Wformat -Wformat-security), and clang -std=c11. tests/test_gpu.c needs the CUDA
# headers and is checked only where nvcc is found.
CHECK_GCC   ?= gcc
CHECK_CLANG ?= clang
CHECK_SRCS   = $(wildcard demos/*.c tests/*.c bench/*.c)
ifeq ($(NVCC),)
CHECK_SRCS  := $(filter-out tests/test_gpu.c,$(CHECK_SRCS))
endif
CHECK_WARN   = -std=c11 -Wall -Wextra -Werror -fopenmp
# (bench/allreduce.c and mma_order.c compile either way: without SLIDECHECK_CUDA a stub that says so)
check_cuda   = tests/test_gpu.c $(if $(NVCC),bench/allreduce.c bench/mma_order.c)
check_extra  = $(if $(filter $(check_cuda),$<),-DSLIDECHECK_CUDA -I$(CUDA_HOME)/include)

.PHONY: check-compilers
check-compilers: $(CHECK_SRCS:%.c=build/check/gcc/%.ok) $(CHECK_SRCS:%.c=build/check/clang/%.ok)

build/check/gcc/%.ok: %.c $(HDRS) $(DEMO_HDRS) tests/check.h tests/fuzz.h
	@mkdir -p $(dir $@)
	$(CHECK_GCC) $(CHECK_WARN) -Wformat -Wformat-security -I. $(STB_CFLAGS) $(check_extra) -fsyntax-only $<
	@touch $@

build/check/clang/%.ok: %.c $(HDRS) $(DEMO_HDRS) tests/check.h tests/fuzz.h
	@mkdir -p $(dir $@)
	$(CHECK_CLANG) $(CHECK_WARN) -I. $(STB_CFLAGS) $(check_extra) -fsyntax-only $<
	@touch $@

test: all check-compilers build/cpp_check $(addprefix build/test_,$(TESTS)) $(addprefix build/asan/test_,$(TESTS)) \
      build/tsan/test_slide $(addprefix build/cpu/,$(DEMOS)) build/check_outputs build/auto_sweep
	@sh tests/run.sh $(TESTS)

test-gpu: build/slidecheck build/test_gpu
	@sh tests/run.sh --gpu

build/test_gpu: tests/test_gpu.c $(HDRS) build/slidecheck_cuda.o
	$(CC) $(CFLAGS) -DSLIDECHECK_CUDA -DSLIDECHECK_TESTING -I. -I$(CUDA_HOME)/include tests/test_gpu.c -o $@ build/slidecheck_cuda.o $(CUDA_LIBS) $(LDLIBS)

# Collective bandwidth on the library's NCCL entry points, under torchrun (bench/allreduce.c)
ifneq ($(NVCC),)
build/allreduce: bench/allreduce.c $(HDRS) build/slidecheck_cuda.o
	$(CC) $(CFLAGS) -DSLIDECHECK_CUDA -I. -I$(CUDA_HOME)/include bench/allreduce.c -o $@ build/slidecheck_cuda.o $(CUDA_LIBS) $(LDLIBS)
endif

# wgmma against mma.sync on the same operands: do they add a product the same way? (bench/mma_order.c)
build/mma_order: bench/mma_order.c $(HDRS) build/slidecheck_cuda.o
	$(CC) $(CFLAGS) -DSLIDECHECK_CUDA -I. -I$(CUDA_HOME)/include bench/mma_order.c -o $@ build/slidecheck_cuda.o $(CUDA_LIBS) $(LDLIBS)

# --mode auto against a brute-force sweep of the hand knobs under the same caps, in one process
# (bench/auto_sweep.c); built as the CLI is: with the CUDA backend where nvcc is found
build/auto_sweep: bench/auto_sweep.c $(HDRS) $(CLI_DEPS)
	@mkdir -p build
	$(CC) $(CFLAGS) $(CLI_FLAGS) -I. $< -o $@ $(CLI_LIBS)

build/recompute_tradeoff: demos/recompute_tradeoff.c demos/plot.h $(HDRS) $(CLI_DEPS)
	@mkdir -p build
	$(CC) $(CFLAGS) $(CLI_FLAGS) -I. $(STB_CFLAGS) demos/recompute_tradeoff.c -o $@ $(CLI_LIBS)

# The demos (see demos/README in the top README): each one .c file over demos/demo.h, plot.h
# and the shared figure recipes; with nvcc present they run on the GPU too.
demos: $(addprefix build/,$(DEMOS)) build/recompute_tradeoff

$(addprefix build/,$(DEMOS)): build/%: demos/%.c $(HDRS) $(DEMO_HDRS) $(CLI_DEPS)
	@mkdir -p build
	$(CC) $(CFLAGS) $(CLI_FLAGS) -I. $(STB_CFLAGS) $< -o $@ $(CLI_LIBS)

# CPU builds of the demos for the tests (no CUDA, so that they run the same everywhere)
build/cpu/%: demos/%.c $(HDRS) $(DEMO_HDRS)
	@mkdir -p build/cpu
	$(CC) $(CFLAGS) -I. $(STB_CFLAGS) $< -o $@ $(LDLIBS)

build/check_outputs: tests/check_outputs.c
	@mkdir -p build
	$(CC) $(CFLAGS) -I. $(STB_CFLAGS) $< -o $@ $(LDLIBS)

demo:
	sh demos/run

test-gpu-memcheck: build/test_gpu
	$(CUDA_HOME)/bin/compute-sanitizer --tool memcheck --error-exitcode 1 build/test_gpu --quick

# the attention kernels (shared-memory rings, mbarriers, TMA) under racecheck and synccheck
test-gpu-racecheck: build/test_gpu
	$(CUDA_HOME)/bin/compute-sanitizer --tool racecheck --error-exitcode 1 build/test_gpu --quick --attention
	$(CUDA_HOME)/bin/compute-sanitizer --tool synccheck --error-exitcode 1 build/test_gpu --quick --attention

# slide mode on the GPU: memcheck / racecheck / synccheck on a tiny run and a 1000-step soak
test-gpu-slide: build/slidecheck
	sh bench/gpu_slide_checks.sh build/gpu_slide

# libFuzzer harnesses for the file readers (clang).
#   make fuzz          build the five harnesses, seed the corpora, run each FUZZ_RUNS executions
#   make fuzz-build    only build build/fuzz_{safetensors,config,data,optim,hf}
# Seeds: the files tests/test_io.c writes under build/tmp_io/, and tests/fixtures/*/ when
# present; for the token shards, those tests/test_data.c writes under build/tmp_data/, each with
# an options byte after it (see tests/fuzz_data.c); for the optimizer state and a checkpoint's
# weights (index or single file), the files tests/fuzz_optim.c and tests/fuzz_hf.c write. The corpora grow in $(FUZZ_CORPUS)/ (git-ignored); crashes land in build/.
FUZZ_CC     ?= clang
FUZZ_FLAGS  ?= -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_DEFS   ?=
FUZZ_RUNS   ?= 1000000
FUZZ_CORPUS ?= fuzz-corpus
FUZZ_ARGS   ?= -print_final_stats=1 -artifact_prefix=build/

.PHONY: fuzz fuzz-build fuzz-seeds

fuzz: fuzz-build fuzz-seeds
	build/fuzz_safetensors $(FUZZ_CORPUS)/safetensors -runs=$(FUZZ_RUNS) -max_len=16384 \
	    -dict=build/fuzz_safetensors.dict $(FUZZ_ARGS)
	build/fuzz_config $(FUZZ_CORPUS)/config -runs=$(FUZZ_RUNS) -max_len=8192 \
	    -dict=build/fuzz_config.dict $(FUZZ_ARGS)
	build/fuzz_data $(FUZZ_CORPUS)/data -runs=$(FUZZ_RUNS) -max_len=16384 $(FUZZ_ARGS)
	build/fuzz_optim $(FUZZ_CORPUS)/optim -runs=$(FUZZ_RUNS) -max_len=32768 $(FUZZ_ARGS)
	build/fuzz_hf $(FUZZ_CORPUS)/hf -runs=$(FUZZ_RUNS) -max_len=65536 $(FUZZ_ARGS)

fuzz-build: build/fuzz_safetensors build/fuzz_config build/fuzz_data build/fuzz_optim build/fuzz_hf

build/fuzz_%: tests/fuzz_%.c tests/fuzz.h slidecheck.h
	@mkdir -p build
	$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_DEFS) -DSLIDECHECK_TESTING -I. $< -o $@ -lm

# Seed corpora and dictionaries. build/fuzz_seedgen is tests/test_io.c, run for the sample
# files it writes (its own pass/fail output is not the point here).
fuzz-seeds: build/fuzz_optim build/fuzz_hf
	@mkdir -p build $(FUZZ_CORPUS)/safetensors $(FUZZ_CORPUS)/config $(FUZZ_CORPUS)/data $(FUZZ_CORPUS)/optim \
	    $(FUZZ_CORPUS)/hf
	FUZZ_OPTIM_SEED=$(FUZZ_CORPUS)/optim/seed.safetensors ./build/fuzz_optim -runs=0 > /dev/null 2>&1
	FUZZ_HF_SEED=$(FUZZ_CORPUS)/hf ./build/fuzz_hf -runs=0 > /dev/null 2>&1
	gcc -std=c11 -O1 -DSLIDECHECK_TESTING -I. $(FUZZ_DEFS) tests/test_io.c -o build/fuzz_seedgen -lm
	./build/fuzz_seedgen > /dev/null 2>&1 || true
	gcc -std=c11 -O1 -DSLIDECHECK_TESTING -I. $(FUZZ_DEFS) tests/test_data.c -o build/fuzz_seedgen_data -lm
	./build/fuzz_seedgen_data > /dev/null 2>&1 || true
	@for f in build/tmp_data/*; do [ -f "$$f" ] || continue; for k in 0 21 43 63; do \
	    { cat "$$f"; printf "\\$$(printf %o $$k)"; } > "$(FUZZ_CORPUS)/data/$$(basename "$$f")_$$k"; done; done; true
	@for f in build/tmp_io/*.safetensors build/tmp_io/*/*.safetensors tests/fixtures/*/*.safetensors; do \
	    [ -f "$$f" ] && cp "$$f" "$(FUZZ_CORPUS)/safetensors/$$(echo "$$f" | tr / _)"; done; true
	@for f in build/tmp_io/*.json build/tmp_io/*/*.json tests/fixtures/*/*.json; do \
	    [ -f "$$f" ] && cp "$$f" "$(FUZZ_CORPUS)/config/$$(echo "$$f" | tr / _)"; done; true
	@printf '%s\n' '"{"' '"}"' '"["' '"]"' '":"' '","' '"\\u"' '"\\ud83d\\ude00"' '"true"' '"false"' '"null"' \
	    '"-0"' '"1e-06"' '"9223372036854775808"' '"\\"dtype\\""' '"\\"shape\\""' '"\\"data_offsets\\""' \
	    '"\\"__metadata__\\""' '"\\"F32\\""' '"\\"BF16\\""' '"\\"F16\\""' '"\\"I32\\""' '"\\"I64\\""' '"\\"U8\\""' \
	    '"\\"F64\\""' '"\\"input_ids\\""' '"\\"format\\""' '"\\"pt\\""' > build/fuzz_safetensors.dict
	@printf '%s\n' '"{"' '"}"' '"["' '"]"' '":"' '","' '"\\u"' '"true"' '"false"' '"null"' '"1e-06"' \
	    '"\\"model_type\\""' '"\\"qwen2\\""' '"\\"qwen3\\""' '"\\"architectures\\""' '"\\"Qwen3ForCausalLM\\""' \
	    '"\\"vocab_size\\""' '"\\"hidden_size\\""' '"\\"intermediate_size\\""' '"\\"num_hidden_layers\\""' \
	    '"\\"num_attention_heads\\""' '"\\"num_key_value_heads\\""' '"\\"head_dim\\""' \
	    '"\\"max_position_embeddings\\""' '"\\"rms_norm_eps\\""' '"\\"rope_theta\\""' '"\\"rope_parameters\\""' \
	    '"\\"rope_type\\""' '"\\"default\\""' '"\\"rope_scaling\\""' '"\\"tie_word_embeddings\\""' \
	    '"\\"attention_bias\\""' '"\\"initializer_range\\""' '"\\"torch_dtype\\""' '"\\"dtype\\""' \
	    '"\\"bfloat16\\""' '"\\"hidden_act\\""' '"\\"silu\\""' '"\\"use_sliding_window\\""' '"\\"layer_types\\""' \
	    '"\\"full_attention\\""' '"\\"quantization_config\\""' > build/fuzz_config.dict


clean:
	rm -rf build

# Benchmarks that need no Python (see bench/README.md).
build/cpu_optim build/cpu_subnormal: build/%: bench/%.c $(HDRS)
	@mkdir -p build
	$(CC) $(CFLAGS) -I. $< -o $@ $(LDLIBS)

build/floors build/copy_load: build/%: bench/%.cu bench/ck.h
	@mkdir -p build
	$(NVCC) $(NVFLAGS) $< -o $@
