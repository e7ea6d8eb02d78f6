/* The flat agreement (agree.h): every rank sends its header, and its
 * payload, to every other rank in one round, all sends and receives posted
 * at once, then merges the p headers and reduces the p payloads itself in
 * rank order ((c0 op c1) op c2) ... op c(p-1), so every rank computes the same
 * expression on the same operands and holds identical bytes. Cost: 1 round of
 * p - 1 messages per rank and p - 1 local reductions, against recursive
 * doubling's log2(p) rounds (+2 when p is not a power of two) of one message
 * each. Used by the direct allreduce (allreduce_direct.c), up to
 * ZAP_COLL_FLAT_MAX_RANKS ranks. */
#include "coll/agree/agree.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"

/* Outside recursive doubling's steps (0 fold, 1.. rounds, STEP_MAX unfold),
 * so a rank left in the other form never takes a flat message. */
#define FLAT_STEP (ZAP_COLL_STEP_MAX - 1)

static zap_coll_hdr_t *slot(zap_coll_agree_t *ag, int i)
{
    return (zap_coll_hdr_t *)((char *)ag->acc + (size_t)i * ag->stride);
}

zap_status_t zap_coll_agree_flat_setup(zap_coll_op_t *op, const void *data)
{
    zap_coll_agree_t *ag = &op->agree;
    zap_coll_hdr_t *own = slot(ag, op->comm->rank);
    if (ag->count > 0)
        zap_coll_copy(op, (char *)own + sizeof(zap_coll_hdr_t), data, ag->count * zap_dtype_size(ag->dt));
    *own = op->hdr_own;
    return ZAP_OK;
}

static zap_status_t post_all(zap_coll_op_t *op, zap_coll_agree_t *ag, int rank, int p)
{
    zap_status_t st;
    for (int k = 1; k < p; k++) {
        int peer = (rank + p - k) % p;
        if ((st = zap_coll_recv(op, peer, ag->phase, FLAT_STEP, slot(ag, peer), ag->msg_bytes, &ag->flat_len[peer],
                                &ag->flat_st[peer])) != ZAP_OK)
            return st;
    }
    /* Each rank starts with its right neighbour, so the first messages of a
     * round do not all queue at rank 0. */
    for (int k = 1; k < p; k++)
        if ((st = zap_coll_send(op, (rank + k) % p, ag->phase, FLAT_STEP, slot(ag, rank), ag->msg_bytes)) != ZAP_OK)
            return st;
    return ZAP_OK;
}

/* Slot 0 is the accumulator: the others are reduced into it in rank order.
 * A malformed message from rank 0 leaves no header to start from: this
 * rank's own is taken, marked bad. */
static zap_status_t combine_all(zap_coll_op_t *op, zap_coll_agree_t *ag, int rank, int p)
{
    zap_status_t st;
    ag->flat_len[rank] = ag->msg_bytes;
    ag->flat_st[rank] = ZAP_OK;
    if (rank != 0 && (ag->flat_st[0] != ZAP_OK || ag->flat_len[0] != ag->msg_bytes)) {
        if (ag->flat_st[0] != ZAP_OK && ag->flat_st[0] != ZAP_ERR_TRUNCATED)
            return ag->flat_st[0];
        *ag->acc = op->hdr_own;
        zap_coll_agree_keep_named(ag->acc, slot(ag, 0), ag->flat_st[0] == ZAP_OK ? ag->flat_len[0] : 0);
        zap_coll_agree_mark_bad(ag->acc);
    }
    for (int i = 1; i < p; i++) {
        ag->in = slot(ag, i);
        ag->in_len = ag->flat_len[i];
        ag->in_st = ag->flat_st[i];
        if ((st = zap_coll_agree_combine(op, false)) != ZAP_OK)
            return st;
    }
    return ZAP_OK;
}

zap_status_t zap_coll_agree_flat_progress(zap_coll_op_t *op)
{
    zap_coll_agree_t *ag = &op->agree;
    int p = op->comm->size, rank = op->comm->rank;
    zap_status_t st;
    switch (ag->state) {
    case ZAP_AGREE_START:
        ag->state = ZAP_AGREE_STEP_WAIT;
        if (p > 1 && (st = post_all(op, ag, rank, p)) != ZAP_OK)
            return st;
        /* fall through */
    case ZAP_AGREE_STEP_WAIT:
        if ((st = zap_coll_step_test(op)) != ZAP_OK)
            return st;
        if ((st = combine_all(op, ag, rank, p)) != ZAP_OK)
            return st;
        ag->state = ZAP_AGREE_DONE;
        break;
    default:
        break;
    }
    return zap_coll_agree_verdict(op);
}
