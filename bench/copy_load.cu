/* A paced copy load between two GPUs, to run beside a 1-GPU training run: is a data-parallel step
   slower than one GPU's because of the collectives' traffic itself (the copy engines, NVLink, the
   memory, their power), whatever the software around them does?

       build/copy_load SECONDS GBPS [DUTY]

   For SECONDS, GPU 0 copies into GPU 1 and GPU 1 into GPU 0 at once (peer copies, the copy
   engines, 64 MiB pieces), GBPS gigabytes a second each way on average. DUTY (0 < DUTY <= 1,
   default 1) packs the copies into that share of each 170 ms period at GBPS / DUTY, idle for the
   rest, as a step's sums run during its backward only. SIGINT or SIGTERM ends it early. Prints
   the bytes moved and the average rate reached each way. */
#include "ck.h"
#include <chrono>
#include <csignal>
#include <thread>

static volatile sig_atomic_t stop_now;
static void on_signal(int) { stop_now = 1; }

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s SECONDS GBPS [DUTY]\n", argv[0]);
        return 2;
    }
    double secs = atof(argv[1]), gbps = atof(argv[2]), duty = argc > 3 ? atof(argv[3]) : 1.0;
    if (!(secs > 0) || !(gbps > 0) || !(duty > 0 && duty <= 1)) {
        fprintf(stderr, "copy_load: SECONDS and GBPS must be positive, 0 < DUTY <= 1\n");
        return 2;
    }
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    if (n < 2) {
        fprintf(stderr, "copy_load: needs two GPUs, found %d\n", n);
        return 1;
    }
    const size_t piece = 64u << 20;
    void *buf[2][2];
    cudaStream_t st[2];
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        int can = 0;
        CK(cudaDeviceCanAccessPeer(&can, d, 1 - d));
        if (can) CK(cudaDeviceEnablePeerAccess(1 - d, 0));
        CK(cudaMalloc(&buf[d][0], piece));
        CK(cudaMalloc(&buf[d][1], piece));
        CK(cudaMemset(buf[d][0], 1, piece));
        CK(cudaStreamCreateWithFlags(&st[d], cudaStreamNonBlocking));
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    using clk = std::chrono::steady_clock;
    const double period = 0.170, busy = period * duty, rate = gbps * 1e9 / duty; /* bytes a second while busy */
    auto t0 = clk::now();
    auto now = [&] { return std::chrono::duration<double>(clk::now() - t0).count(); };
    double moved = 0; /* bytes each way */
    while (now() < secs && !stop_now) {
        double p0 = now(), sent = 0;
        while (now() - p0 < busy && now() < secs && !stop_now) {
            for (int d = 0; d < 2; d++) /* GPU d's piece into GPU 1 - d's second buffer */
                CK(cudaMemcpyPeerAsync(buf[1 - d][1], 1 - d, buf[d][0], d, piece, st[d]));
            for (int d = 0; d < 2; d++) CK(cudaStreamSynchronize(st[d]));
            sent += (double)piece;
            moved += (double)piece;
            double ahead = sent / rate - (now() - p0); /* paced: no faster than rate */
            if (ahead > 0) std::this_thread::sleep_for(std::chrono::duration<double>(ahead));
        }
        double rest = period - (now() - p0);
        if (rest > 0 && !stop_now) std::this_thread::sleep_for(std::chrono::duration<double>(rest));
    }
    double t = now();
    printf("copy_load: %.1f s, %.2f GB each way, %.2f GB/s each way on average (asked %.2f, duty %.2f)\n", t,
           moved * 1e-9, moved * 1e-9 / t, gbps, duty);
    return 0;
}
