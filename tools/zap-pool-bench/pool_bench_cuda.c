/* The direct-CUDA peer of the pool benchmark: one cudaMallocManaged and
 * cudaFree per buffer, what the seed's cold path did for every request. */
#include <cuda_runtime.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Pairs per second, or -1 when there is no device. */
double bench_cuda_managed_pairs(size_t size, long iters)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0)
        return -1;
    double t0 = now_s();
    for (long i = 0; i < iters; i++) {
        void *p = NULL;
        if (cudaMallocManaged(&p, size, cudaMemAttachGlobal) != cudaSuccess)
            return -1;
        cudaFree(p);
    }
    return iters / (now_s() - t0);
}
