/* MPI_Allreduce and MPI_Bcast on CUDA device (and managed) pointers through
 * the Open MPI coll component (plugin/ompi): a plain MPI program, run by
 * mpi_tests/coll/gpu_component_check.sh with the component loaded. Open MPI
 * 4.1 without CUDA support below would read device memory on the CPU and
 * crash; the component must hand every such call to zap at every size, and
 * zap must run it on the GPU (its log, at info level, says the GPU path is
 * ready; the script checks). Sizes 8 B to 64 MiB, in place and not, float
 * sums of small integers (exact in any order) and broadcasts from every
 * root, each checked on every rank. Exit 0: all right; 1: a wrong result or
 * an MPI error; 77: no CUDA device (skip). */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static long check_allreduce(size_t count, int managed, int in_place)
{
    size_t bytes = count * sizeof(float);
    float *h = malloc(bytes), *s = NULL, *d = NULL;
    if (h == NULL)
        return 1;
    for (size_t i = 0; i < count; i++)
        h[i] = (float)(i % 7) + (float)rank;
    cudaError_t e = managed ? cudaMallocManaged((void **)&s, bytes, cudaMemAttachGlobal) : cudaMalloc((void **)&s, bytes);
    if (e == cudaSuccess && !in_place)
        e = cudaMalloc((void **)&d, bytes);
    if (e != cudaSuccess || cudaMemcpy(s, h, bytes, cudaMemcpyDefault) != cudaSuccess) {
        fprintf(stderr, "rank %d: CUDA: %s\n", rank, cudaGetErrorString(e));
        return 1;
    }
    int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : s, in_place ? s : d, (int)count, MPI_FLOAT, MPI_SUM,
                           MPI_COMM_WORLD);
    long bad = rc != MPI_SUCCESS;
    if (cudaMemcpy(h, in_place ? s : d, bytes, cudaMemcpyDefault) != cudaSuccess)
        bad++;
    for (size_t i = 0; i < count; i++)
        bad += h[i] != (float)(i % 7) * (float)size + (float)(size * (size - 1) / 2);
    cudaFree(s);
    cudaFree(d);
    free(h);
    return bad;
}

static long check_bcast(size_t bytes, int root)
{
    unsigned char *h = malloc(bytes), *b = NULL;
    if (h == NULL || cudaMalloc((void **)&b, bytes) != cudaSuccess)
        return 1;
    for (size_t i = 0; i < bytes; i++)
        h[i] = rank == root ? (unsigned char)(i * 31 + 7) : 0;
    cudaMemcpy(b, h, bytes, cudaMemcpyDefault);
    long bad = MPI_Bcast(b, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD) != MPI_SUCCESS;
    cudaMemcpy(h, b, bytes, cudaMemcpyDefault);
    for (size_t i = 0; i < bytes; i++)
        bad += h[i] != (unsigned char)(i * 31 + 7);
    cudaFree(b);
    free(h);
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = 0, fewest = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        n = 0;
    MPI_Allreduce(&n, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (fewest == 0) {
        if (rank == 0)
            printf("SKIP: no CUDA device on some rank\n");
        MPI_Finalize();
        return 77;
    }
    MPI_Comm node;
    int lrank = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &lrank);
    MPI_Comm_free(&node);
    cudaSetDevice(lrank % n);
    long bad = 0;
    for (size_t bytes = 8; bytes <= ((size_t)64 << 20); bytes *= 8) {
        bad += check_allreduce(bytes / 4, 0, 0);
        bad += check_allreduce(bytes / 4 + 1, 0, 1);
        bad += check_allreduce(bytes / 4, 1, 1);
        for (int root = 0; root < size; root++)
            bad += check_bcast(bytes + 3, root);
    }
    long all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %ld wrong elements or failed calls\n", all ? "FAIL" : "PASS", all);
    MPI_Finalize();
    return all ? 1 : 0;
}
