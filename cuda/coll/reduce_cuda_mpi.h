/* Private to cuda/coll: the launcher of reduce_cuda_mpi.cu, which
 * reduce_cuda.cu's launch hands the ops and types MPI adds. Queues the
 * kernel for dt and op on stream (a cudaStream_t) without waiting; returns
 * ZAP_OK, or ZAP_ERR_UNSUPPORTED (nothing queued) for what has no kernel. */
#ifndef ZAP_CUDA_REDUCE_CUDA_MPI_H
#define ZAP_CUDA_REDUCE_CUDA_MPI_H
#include <stddef.h>
#include "zap/coll.h"
#include "zap/status.h"

zap_status_t zap_cuda_launch_mpi(void *stream, zap_dtype_t dt, zap_op_t op, void *dst, const void *a, const void *b,
                                 size_t n, unsigned blocks, unsigned threads);
#endif
