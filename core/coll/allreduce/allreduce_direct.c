/* Direct (flat, radix-p) allreduce: one round. Every rank sends its argument
 * header and its whole vector to every other rank, all sends and receives
 * posted at once, then reduces the p contributions itself in rank order
 * ((c0 op c1) op c2) ... op c(p-1), so every rank computes the same
 * expression on the same operands and holds identical bytes.
 *
 * This is the argument exchange in flat mode (allreduce_rd.c's engine with
 * op->flat_agree set): the header every collective agrees on travels in the
 * same messages as the payload, and each rank merges all p headers itself, so
 * a mismatch is seen on every rank. Cost: 1 round of p - 1 messages per rank
 * and p - 1 local reductions, against recursive doubling's log2(p) rounds
 * (+2 when p is not a power of two) of one message each. For small vectors a
 * round costs a transport latency while an extra message in the same round
 * costs only its injection, so flat wins up to the rank count and size where
 * the (p - 1) n bytes moved per rank outweigh the saved rounds
 * (docs/collectives.md, "Selection").
 *
 * Agreement: ranks can only match messages of the same pattern, so the choice
 * between the flat and the recursive-doubling exchange must not depend on
 * anything ranks may disagree on. It depends on the rank count and
 * ZAP_ALLREDUCE_ALG only (allreduce.c): under "auto", every allreduce on a
 * rank count that has a "direct" selection row agrees flat, carrying the
 * payload when the vector is small (this algorithm) and the header alone when
 * it is not (rd's own exchange, rabenseifner, ring or the GPU path follow,
 * allreduce_rd.c explains the first). Counts on both sides
 * of the size threshold therefore still meet in one exchange and every rank
 * reports ZAP_ERR_MISMATCH. Ranks run with different ZAP_ALLREDUCE_ALG
 * settings, one flat and one not, do not meet: they end with ZAP_ERR_TIMEOUT
 * (the environment is one setting for the whole job). */
#include "coll/coll_impl.h"
#include <string.h>

/* Outside recursive doubling's steps (0 fold, 1.. rounds, STEP_MAX unfold),
 * so a rank left in the other pattern never takes a flat message. */
#define FLAT_STEP (ZAP_COLL_STEP_MAX - 1)

static zap_coll_hdr_t *slot(zap_coll_rd_t *rd, int i)
{
    return (zap_coll_hdr_t *)((char *)rd->acc + (size_t)i * rd->stride);
}

zap_status_t zap_coll_flat_setup(zap_coll_op_t *op, const void *data)
{
    zap_coll_rd_t *rd = &op->rd;
    zap_coll_hdr_t *own = slot(rd, op->comm->rank);
    if (rd->count > 0)
        zap_coll_copy(op, (char *)own + sizeof(zap_coll_hdr_t), data, rd->count * zap_dtype_size(rd->dt));
    *own = op->hdr_own;
    return ZAP_OK;
}

zap_status_t zap_coll_flat_progress(zap_coll_op_t *op)
{
    zap_coll_rd_t *rd = &op->rd;
    int p = op->comm->size, rank = op->comm->rank;
    zap_status_t st;
    switch (rd->state) {
    case RD_START:
        rd->state = RD_STEP_WAIT;
        if (p == 1)
            break;
        for (int k = 1; k < p; k++) {
            int peer = (rank + p - k) % p;
            if ((st = zap_coll_recv(op, peer, rd->phase, FLAT_STEP, slot(rd, peer), rd->msg_bytes,
                                    &rd->flat_len[peer], &rd->flat_st[peer])) != ZAP_OK)
                return st;
        }
        /* Each rank starts with its right neighbour, so the first messages
         * of a round do not all queue at rank 0. */
        for (int k = 1; k < p; k++)
            if ((st = zap_coll_send(op, (rank + k) % p, rd->phase, FLAT_STEP, slot(rd, rank), rd->msg_bytes)) !=
                ZAP_OK)
                return st;
        /* fall through */
    case RD_STEP_WAIT:
        if ((st = zap_coll_step_test(op)) != ZAP_OK)
            return st;
        /* Slot 0 is the accumulator: reduce the others into it in rank
         * order. A malformed message from rank 0 leaves no header to start
         * from: take this rank's own and mark it bad. */
        rd->flat_len[rank] = rd->msg_bytes;
        rd->flat_st[rank] = ZAP_OK;
        if (rank != 0 && (rd->flat_st[0] != ZAP_OK || rd->flat_len[0] != rd->msg_bytes)) {
            if (rd->flat_st[0] != ZAP_OK && rd->flat_st[0] != ZAP_ERR_TRUNCATED)
                return rd->flat_st[0];
            *rd->acc = op->hdr_own;
            zap_coll_hdr_set_bad(rd->acc);
        }
        for (int i = 1; i < p; i++) {
            rd->in = slot(rd, i);
            rd->in_len = rd->flat_len[i];
            rd->in_st = rd->flat_st[i];
            if ((st = zap_coll_rd_combine(op, false)) != ZAP_OK)
                return st;
        }
        rd->state = RD_DONE;
        break;
    default:
        break;
    }
    return zap_coll_rd_verdict(op);
}

/* --- the allreduce -------------------------------------------------------- */

typedef struct direct_allreduce {
    void *recvbuf;
    size_t bytes;
} direct_allreduce_t;
_Static_assert(sizeof(direct_allreduce_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static zap_status_t direct_finish(zap_coll_op_t *op)
{
    direct_allreduce_t *s = (direct_allreduce_t *)op->alg_state;
    zap_coll_copy(op, s->recvbuf, zap_coll_rd_result(op), s->bytes);
    return ZAP_OK;
}

zap_status_t zap_allreduce_direct_init(zap_coll_op_t *op, const void *sendbuf, void *recvbuf, size_t count,
                                       zap_dtype_t dt, zap_op_t zop)
{
    direct_allreduce_t *s = (direct_allreduce_t *)op->alg_state;
    s->recvbuf = recvbuf;
    s->bytes = count * zap_dtype_size(dt);
    zap_status_t st = zap_coll_rd_init(op, 0, sendbuf, count, dt, zop);
    if (st != ZAP_OK)
        return st;
    op->agreeing = true;
    op->progress = direct_finish;
    return ZAP_OK;
}
