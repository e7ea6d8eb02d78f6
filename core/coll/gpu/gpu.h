/* The GPU-resident collective path: allreduce and broadcast on managed or
 * device buffers of ranks that share a host, moved by the GPUs' copy engines
 * (peer copies over NVLink or PCIe between the ranks' staging slots, which
 * are cudaMalloc'd and exported with CUDA IPC) and reduced by the cuda/coll
 * kernels, instead of through the host transport page by page. The transport
 * carries only small messages: the slots' handles and readiness.
 *
 * Choice: the path is the "gpu" row of the allreduce's and the broadcast's
 * selection tables (engine/select.h). Whether this rank wants it (the
 * communicator's setting, the size, the rank count, a device present) costs
 * no message and may differ between ranks, so every rank also votes in the
 * argument header: yes when its buffer is managed or device memory and it
 * wants the path (a rank that does not want it casts no vote, which reads as
 * no). Unless every rank voted yes, all ranks take the next candidate, with
 * no message beyond the header, so host-memory collectives pay nothing for
 * the path. After a yes the first exchange of the path checks what the vote
 * cannot (a free slot, the input copied, all ranks on one host); the second,
 * that every rank opened its peers' memory; unless all succeeded, all fall
 * back the same way (zap_coll_fall_back), on the untouched user buffers.
 *
 * Determinism: segment q of an allreduce is reduced by rank q alone, in rank
 * order 0, 1, ..., p-1, and copied byte for byte to every rank. */
#ifndef ZAP_COLL_GPU_H
#define ZAP_COLL_GPU_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "zap/coll.h"

typedef struct zap_coll_op zap_coll_op_t; /* engine/op.h (C only; this header is also read by C++ tests) */

#define ZAP_STAGE_MAX_RANKS 8 /* two requests per peer in one step: 2 (p - 1) <= ZAP_COLL_MAX_REQS */
#define ZAP_STAGE_PHASE 7     /* tag phase of the path's messages; the host algorithms use 1..3 */

/* The algorithms of the "gpu" rows (gpu_allreduce.c, gpu_bcast.c) and their
 * vote: this rank's buffer is GPU-resident. */
zap_status_t zap_gpu_allreduce_init(zap_coll_op_t *op);
zap_status_t zap_gpu_bcast_init(zap_coll_op_t *op);
bool zap_gpu_vote(const zap_coll_op_t *op);

/* Process-wide counts of collectives that completed on the path and of those
 * whose ranks agreed to fall back (tests check the path really ran). */
void zap_stage_counts(uint64_t *completed, uint64_t *fell_back);
void zap_stage_count(bool completed);
#endif
