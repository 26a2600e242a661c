# CUDA backend: objects, GPU tests. Include from the Makefile (the lead's), or run
#   make -f wip/gpu.mk test-gpu
NVCC ?= /usr/local/cuda/bin/nvcc
CUDA_HOME ?= /usr/local/cuda
NVCCFLAGS ?= -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_90,code=sm_90 \
             -Xcompiler -Wall,-Wextra,-Werror
GPU_TEST_CFLAGS ?= -std=c11 -O2 -g -Wall -Wextra -Werror -fopenmp
GPU_LIBS ?= -L$(CUDA_HOME)/lib64 -lcublasLt -lcublas -lcudart -lstdc++ -lm
SC_HDRS := slidecheck.h $(wildcard wip/*.h)

build/slidecheck_cuda.o: slidecheck_cuda.cu $(SC_HDRS)
	@mkdir -p build
	$(NVCC) $(NVCCFLAGS) -I. -c slidecheck_cuda.cu -o $@

build/test_gpu: tests/test_gpu.c build/slidecheck_cuda.o $(SC_HDRS)
	@mkdir -p build
	$(CC) $(GPU_TEST_CFLAGS) -DSLIDECHECK_CUDA -I. -I$(CUDA_HOME)/include tests/test_gpu.c build/slidecheck_cuda.o \
	    -o $@ $(GPU_LIBS)

.PHONY: test-gpu test-gpu-memcheck bench-gpu
test-gpu: build/test_gpu
	build/test_gpu

test-gpu-memcheck: build/test_gpu
	$(CUDA_HOME)/bin/compute-sanitizer --tool memcheck --error-exitcode 1 build/test_gpu --quick

bench-gpu: build/test_gpu
	build/test_gpu --bench
