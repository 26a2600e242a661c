# slidecheck: `make` builds everything this machine can build; `make test` runs every test
# (plain and under ASan+UBSan) and ends with "N passed, M failed".
CC      ?= cc
CFLAGS  ?= -std=c11 -O3 -g -Wall -Wextra -Werror -fopenmp
SANFLAGS = -std=c11 -O1 -g -Wall -Wextra -Werror -fopenmp -fsanitize=address,undefined \
           -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDLIBS   = -lm
HDRS     = slidecheck.h $(wildcard wip/*.h)

NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
ifeq ($(wildcard slidecheck_cuda.cu),)
NVCC :=
endif
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
NVFLAGS  = -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_90,code=sm_90 \
           -Xcompiler -Wall,-Wextra,-Werror,-fPIC
CUDA_LIBS = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublasLt -lcublas -lcudart -lstdc++

TESTS = model alloc trace io plan

.PHONY: all test test-gpu test-gpu-memcheck clean demo
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

build/test_%: tests/test_%.c $(HDRS)
	@mkdir -p build
	$(CC) $(CFLAGS) -I. $< -o $@ $(LDLIBS)

build/asan/test_%: tests/test_%.c $(HDRS)
	@mkdir -p build/asan
	$(CC) $(SANFLAGS) -I. $< -o $@ $(LDLIBS)

build/cpp_check: tests/test_model.c $(HDRS)
	@mkdir -p build
	$(CXX) -x c++ -std=c++17 -O0 -Wall -Wextra -Werror -fopenmp -I. -fsyntax-only tests/test_model.c
	@touch $@

test: all build/cpp_check $(addprefix build/test_,$(TESTS)) $(addprefix build/asan/test_,$(TESTS))
	@sh tests/run.sh $(TESTS)

test-gpu: build/slidecheck build/test_gpu
	@sh tests/run.sh --gpu

build/test_gpu: tests/test_gpu.c $(HDRS) build/slidecheck_cuda.o
	$(CC) $(CFLAGS) -DSLIDECHECK_CUDA -I. tests/test_gpu.c -o $@ build/slidecheck_cuda.o $(CUDA_LIBS) $(LDLIBS)

build/recompute_tradeoff: demos/recompute_tradeoff.c demos/plot.h $(HDRS) $(CLI_DEPS)
	@mkdir -p build
	$(CC) $(CFLAGS) $(CLI_FLAGS) -I. demos/recompute_tradeoff.c -o $@ $(CLI_LIBS)

demo:
	sh demos/run

test-gpu-memcheck: build/test_gpu
	$(CUDA_HOME)/bin/compute-sanitizer --tool memcheck --error-exitcode 1 build/test_gpu --quick

-include wip/fuzz.mk

clean:
	rm -rf build
