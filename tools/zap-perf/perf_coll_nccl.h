/* NCCL as a further column of zap-perf coll: compiled only where NCCL was
 * found at configure time (ZAP_HAVE_NCCL). Buffers are cudaMalloc'd here, one
 * GPU per rank (the caller has set the device). */
#ifndef ZAP_PERF_COLL_NCCL_H
#define ZAP_PERF_COLL_NCCL_H
#include <mpi.h>
#include <stddef.h>

/* Creates the NCCL communicator over comm (unique id broadcast by MPI).
 * Returns 0 on success. */
int perf_nccl_init(MPI_Comm comm);
/* Streaming time per operation (slowest rank), float32 sum allreduce or
 * broadcast from root, of bytes; *time_us_p. Returns 0 on success. */
int perf_nccl_run(int allreduce, size_t bytes, long iters, long warmup, int root, double *time_us_p);
void perf_nccl_fini(void);
#endif
