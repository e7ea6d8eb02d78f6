/* The GPU-resident collective path: allreduce and broadcast on managed or
 * device buffers of ranks that share a host, moved by the GPUs' copy engines
 * (peer copies over NVLink or PCIe between the ranks' staging slots, which
 * are cudaMalloc'd and exported with CUDA IPC) and reduced by the cuda/reduce
 * kernels, instead of through the host transport page by page. The transport
 * carries only small messages: the slots' handles and readiness.
 *
 * Choice: the entry points ask zap_stage_wanted() after computing the memory
 * kind and before the argument header; when it says yes the operation's
 * algorithm number carries ZAP_STAGE_ALG_FLAG, so ranks that decided
 * differently (a setting or a GPU present on some ranks only) get
 * ZAP_ERR_MISMATCH instead of waiting on each other. The decision depends only
 * on the setting, the size, the rank count and whether a GPU is present, not
 * on where this rank's buffer lives: every rank then runs the first exchange,
 * in which each says whether it can take part (GPU-resident buffer, a free
 * slot, same host); unless all can, all run the host algorithm that was
 * chosen for the call, on the untouched user buffers. A failure to open a
 * peer's memory is agreed on the same way in the second exchange.
 *
 * Determinism: segment q of an allreduce is reduced by rank q alone, in rank
 * order 0, 1, ..., p-1, and copied byte for byte to every rank. */
#ifndef ZAP_COLL_STAGE_H
#define ZAP_COLL_STAGE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "zap/coll.h"

typedef struct zap_coll_op zap_coll_op_t; /* coll/coll_impl.h (C only; this header is also read by C++ tests) */

#define ZAP_STAGE_ALG_FLAG 0x40
#define ZAP_STAGE_MAX_RANKS 8 /* two requests per peer in one step: 2 (p - 1) <= ZAP_COLL_MAX_REQS */
#define ZAP_STAGE_PHASE 14    /* tag phase of the path's messages; the host algorithms use 1..3 */

/* Whether op (its kind, comm and op->mem already set) of bytes takes the path;
 * if so marks op->alg. */
bool zap_stage_wanted(zap_coll_op_t *op, size_t bytes);
/* Set the operation up (argument agreement first, as the host algorithms do).
 * host_alg is the host algorithm to fall back to. */
zap_status_t zap_stage_allreduce_init(zap_coll_op_t *op, const void *sendbuf, void *recvbuf, size_t count,
                                      zap_dtype_t dt, zap_op_t zop, int host_alg);
zap_status_t zap_stage_bcast_init(zap_coll_op_t *op, void *buf, size_t bytes, int root, int host_alg);

/* Process-wide counts of collectives that completed on the path and of those
 * whose ranks agreed to fall back (tests check the path really ran). */
void zap_stage_counts(uint64_t *completed, uint64_t *fell_back);
void zap_stage_count(bool completed);
#endif
