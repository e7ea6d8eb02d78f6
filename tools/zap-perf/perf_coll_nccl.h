/* NCCL as a further column of zap-perf coll: compiled only where NCCL was
 * found at configure time (ZAP_HAVE_NCCL). Buffers are cudaMalloc'd here, one
 * GPU per rank (the caller has set the device). */
#ifndef ZAP_PERF_COLL_NCCL_H
#define ZAP_PERF_COLL_NCCL_H
#include <mpi.h>
#include <stddef.h>

/* Creates the NCCL communicator over comm (unique id broadcast by MPI), with
 * NVLink multicast (NVLS) off: NCCL_NVLS_ENABLE=0 is forced, because a program
 * using multicast can take shared GPUs out of service. Returns 0 on success. */
int perf_nccl_init(MPI_Comm comm);
/* Float32 sum allreduce or broadcast from root of bytes: the streaming time
 * per operation (slowest rank's average of iters back to back, synchronised
 * once) in *time_us_p, and the isolated latency (each operation between
 * barriers, launched and synchronised, as zap's blocking call is timed;
 * mean over ranks of each rank's mean) in *lat_us_p. Returns 0 on success. */
int perf_nccl_run(int allreduce, size_t bytes, long iters, long warmup, int root, double *time_us_p,
                  double *lat_us_p);
void perf_nccl_fini(void);
#endif
