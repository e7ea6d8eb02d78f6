/* The GPU-resident collective path: allreduce and broadcast on managed or
 * device buffers of ranks that share a host, moved by the GPUs' copy engines
 * (peer copies over NVLink or PCIe between the ranks' staging slots, which
 * are cudaMalloc'd and exported with CUDA IPC) and reduced by the cuda/coll
 * kernels, instead of through the host transport page by page. The transport
 * carries only small messages: the slots' handles and readiness.
 *
 * Choice: the entry points ask zap_stage_wanted() (the setting, the size, the
 * rank count, a GPU present: nothing that costs a message) and, if it says
 * yes, set the operation up with the init functions below instead of the
 * host algorithm. Each rank votes in the argument header that every
 * collective exchanges anyway: lane ZAP_STAGE_VOTE_LANE of the lanes word, a
 * lane the mismatch check does not read and whose agreed minimum is the AND
 * of the votes (lanes that differ across ranks combine to 0). A rank votes
 * yes when its buffer is managed or device memory. Unless every rank voted
 * yes (a rank that did not want the path, or passed host memory, votes no),
 * all ranks run the host algorithm chosen for the call, with no message
 * beyond the header, so host-memory collectives pay nothing for the path.
 * After a yes the first exchange of the path checks what the vote cannot (a
 * free slot, the input copied, all ranks on one host); the second, that every
 * rank opened its peers' memory; unless all succeeded, all fall back the same
 * way, on the untouched user buffers.
 *
 * Determinism: segment q of an allreduce is reduced by rank q alone, in rank
 * order 0, 1, ..., p-1, and copied byte for byte to every rank. */
#ifndef ZAP_COLL_GPU_H
#define ZAP_COLL_GPU_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "zap/coll.h"

typedef struct zap_coll_op zap_coll_op_t; /* coll/coll_impl.h (C only; this header is also read by C++ tests) */

#define ZAP_STAGE_VOTE_LANE 7 /* of ZAP_HDR_LANES; above the lanes coll_impl.h defines (checked in stage_round.c) */
#define ZAP_STAGE_MAX_RANKS 8 /* two requests per peer in one step: 2 (p - 1) <= ZAP_COLL_MAX_REQS */
#define ZAP_STAGE_PHASE 14    /* tag phase of the path's messages; the host algorithms use 1..3 */

/* Whether op (its kind, alg and comm set) of bytes is a candidate for the
 * path: the setting allows the size, 2 to 8 ranks, a GPU is present. Local and
 * cheap; ranks may differ (the header vote settles it). */
bool zap_stage_wanted(zap_coll_op_t *op, size_t bytes);
/* Set the operation up (argument agreement first, as the host algorithms do)
 * and cast this rank's vote; call after zap_coll_hdr_init with op->mem set.
 * host_alg is the host algorithm to fall back to. */
zap_status_t zap_stage_allreduce_init(zap_coll_op_t *op, const void *sendbuf, void *recvbuf, size_t count,
                                      zap_dtype_t dt, zap_op_t zop, int host_alg);
zap_status_t zap_stage_bcast_init(zap_coll_op_t *op, void *buf, size_t bytes, int root, int host_alg);

/* Process-wide counts of collectives that completed on the path and of those
 * whose ranks agreed to fall back (tests check the path really ran). */
void zap_stage_counts(uint64_t *completed, uint64_t *fell_back);
void zap_stage_count(bool completed);
#endif
