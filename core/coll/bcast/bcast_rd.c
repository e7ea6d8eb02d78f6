/* Recursive-doubling broadcast: the argument agreement's exchange
 * (allreduce_rd.c) carrying the root's data. Every round each rank swaps its
 * header with its partner's, and a side whose subcube already holds the data
 * appends it. log2(p) rounds (+2 when p is not a power of two) in all, the
 * agreement included, where the binomial tree needs the agreement's log2(p)
 * rounds and then its own; each rank receives the data once. Chosen for small
 * messages, where rounds cost more than bytes. */
#include "coll/coll_impl.h"

typedef struct bcast_rd {
    void *buf;
    size_t bytes;
    int root;
} bcast_rd_t;
_Static_assert(sizeof(bcast_rd_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static zap_status_t bcast_rd_finish(zap_coll_op_t *op)
{
    bcast_rd_t *s = (bcast_rd_t *)op->alg_state;
    if (op->comm->rank != s->root)
        zap_coll_copy(op, s->buf, zap_coll_rd_result(op), s->bytes);
    return ZAP_OK;
}

zap_status_t zap_bcast_rd_init(zap_coll_op_t *op, void *buf, size_t bytes, int root)
{
    bcast_rd_t *s = (bcast_rd_t *)op->alg_state;
    s->buf = buf;
    s->bytes = bytes;
    s->root = root;
    zap_status_t st = zap_coll_rd_init_bcast(op, 0, buf, bytes, root);
    if (st != ZAP_OK)
        return st;
    op->agreeing = true;
    op->progress = bcast_rd_finish;
    return ZAP_OK;
}
