/* The messages of a step: the tag layout and the requests an operation holds
 * (docs/collectives.md, "Tags").
 *
 * Tags fit in 44 bits, the part of the tag the UCX transport maps one to one
 * (zap/ucp.h):
 *
 *   bit  43      collective traffic (tags below 2^43 stay free for other
 *                users of the transport)
 *   bit  42      reserved for checksum mode (core/transport/checksum.h)
 *   bits 24..41  the communicator's context: bit 41 set for ids zap assigns
 *                itself (zap_comm_create, zap_comm_split), clear for ids a
 *                caller gives (zap_comm_create_group: 0 ..
 *                ZAP_COMM_CONTEXT_ID_MAX), so the two never collide
 *   bits 11..23  the operation's sequence number on its communicator, mod 2^13
 *   bits  8..10  the phase (0: argument agreement, 1..7: algorithm phases)
 *   bits  0..7   the step within the phase, mod 256
 *
 * Operations in flight together on one communicator (fewer than 8192)
 * therefore never match each other's messages. Within an operation, steps
 * that wrap (a ring of more than 128 ranks) reuse a tag only between the same
 * pair of ranks in the same order on both sides, and messages of one tag
 * between one pair arrive in order (the transport's guarantee), which the
 * pipelined algorithms rely on too. */
#ifndef ZAP_COLL_ENGINE_STEP_H
#define ZAP_COLL_ENGINE_STEP_H
#include <stddef.h>
#include <stdint.h>
#include "coll/comm_impl.h"
#include "coll/engine/op.h"

#define ZAP_COLL_TAG_BIT (UINT64_C(1) << 43)
#define ZAP_COLL_CTX_SHIFT 24
#define ZAP_COLL_CTX_MASK UINT32_C(0x3ffff) /* 18 bits; ZAP_COLL_CTX_ZAP (comm_impl.h) is the top one */
#define ZAP_COLL_SEQ_SHIFT 11
#define ZAP_COLL_SEQ_MASK UINT64_C(0x1fff)
#define ZAP_COLL_PHASE_SHIFT 8
#define ZAP_COLL_PHASE_MAX 7
#define ZAP_COLL_STEP_MAX 0xff
_Static_assert(ZAP_COMM_CONTEXT_ID_MAX < ZAP_COLL_CTX_ZAP, "caller ids stay below zap's bit");

static inline uint64_t zap_coll_tag(const zap_coll_op_t *op, int phase, int step)
{
    return ZAP_COLL_TAG_BIT | ((uint64_t)(op->comm->ctx & ZAP_COLL_CTX_MASK) << ZAP_COLL_CTX_SHIFT) |
           ((op->seq & ZAP_COLL_SEQ_MASK) << ZAP_COLL_SEQ_SHIFT) |
           ((uint64_t)(phase & ZAP_COLL_PHASE_MAX) << ZAP_COLL_PHASE_SHIFT) | (uint64_t)(step & ZAP_COLL_STEP_MAX);
}

/* Posts a send/receive to comm rank peer in the current step. A receive's
 * length lands in *len_p (optional) on completion. st_p, when not NULL,
 * receives the receive's own completion status (truncation is a mismatch, not
 * an operation failure); otherwise an error fails the operation.
 * ZAP_ERR_NO_RESOURCE when the operation's request slots are full. */
zap_status_t zap_coll_send(zap_coll_op_t *op, int peer, int phase, int step, const void *buf, size_t len);
zap_status_t zap_coll_recv(zap_coll_op_t *op, int peer, int phase, int step, void *buf, size_t cap,
                           size_t *len_p, zap_status_t *st_p);
/* ZAP_INPROGRESS while any request of the step is pending; else frees them and
 * returns ZAP_OK or the first error. */
zap_status_t zap_coll_step_test(zap_coll_op_t *op);
/* Frees the step's requests (pending ones are cancelled). */
void zap_coll_step_release(zap_coll_op_t *op);
#endif
