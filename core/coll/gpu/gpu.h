/* The GPU-resident path: allreduce and broadcast on managed or device
 * buffers of ranks that share a host, moved and reduced by kernels that read
 * and write the peers' GPU memory directly (cuda/coll: peer-mapped channels,
 * CUDA IPC mappings of users' buffers), instead of through the host transport.
 * The transport carries at most one small all-to-all round per large call
 * (where each rank's buffers are), and two once per communicator (its
 * channel).
 *
 * Choice: the path is the "gpu" row of the allreduce's and the broadcast's
 * selection tables (engine/select.c). Whether this rank wants it (the
 * communicator's setting, the size, the rank count, a device, this rank's
 * buffers GPU-resident, the communicator's channel not failed) costs no
 * message; every rank also votes in the argument header (its buffers are
 * managed or device memory), and unless every rank voted yes all take the
 * next candidate. Once its vote passed, the path can still decline, on every
 * rank alike: when the channel cannot be made (ranks on several hosts, no
 * IPC or peer access; decided for good by the channel's second round), when
 * some rank's buffers cannot be exposed (the first round says so), or when a
 * rank could not open a peer's buffer (its kernel's flags say so, and every
 * kernel skips the data). The user's buffers are untouched whenever it
 * declines.
 *
 * Determinism: every element is ((x_0 op x_1) op x_2) ... op x_{p-1}, the
 * ranks' inputs in rank order, identical bytes on every rank
 * (cuda/coll/gpu_kernels.cu). */
#ifndef ZAP_COLL_GPU_H
#define ZAP_COLL_GPU_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "zap/coll.h"
#include "zap/pool.h"

typedef struct zap_coll_op zap_coll_op_t; /* engine/op.h (C only; this header is also read by C++ tests) */
typedef struct zap_comm zap_comm_t;

#define ZAP_COLL_GPU_MAX_RANKS 8 /* the channel's flags and the rounds' requests */
#define ZAP_COLL_GPU_PHASE 7     /* tag phase of the path's messages; the host algorithms use 1..3 */

/* The algorithms of the "gpu" rows (gpu_allreduce.c, gpu_bcast.c) and their
 * vote: this rank's buffers are GPU-resident and the path can run here. */
zap_status_t zap_gpu_allreduce_init(zap_coll_op_t *op);
zap_status_t zap_gpu_bcast_init(zap_coll_op_t *op);
bool zap_gpu_vote(const zap_coll_op_t *op);

/* Frees comm's channel (zap_comm_destroy). */
void zap_coll_gpu_destroy(zap_comm_t *comm);

/* Process-wide counts of collectives that completed on the path and of those
 * whose ranks agreed to fall back (tests check the path really ran). */
void zap_coll_gpu_counts(uint64_t *completed, uint64_t *fell_back);
#endif
