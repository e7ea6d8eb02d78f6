/* Recursive-doubling allreduce: the vector rides the argument agreement's
 * own exchange (agree/agree_rd.c has the rounds and the reduction order), so
 * a small allreduce is one exchange of log2(p) rounds (+2 when p is not a
 * power of two) and pays no separate header round.
 *
 * Where the call agrees in another form (flat, shared memory) or follows
 * another candidate (the arguments already agreed), the vector gets its own
 * recursive-doubling exchange in phase 1 afterwards: one round more than rd
 * alone, taken where the selection puts rd above the one-round forms' size
 * bounds. The payload is copied into and out of the exchange's area (the
 * operation's inline area for small host vectors, pool scratch otherwise). */
#include "coll/allreduce/allreduce.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"

typedef struct rd_allreduce {
    bool exchanging; /* the vector's own exchange is running */
} rd_allreduce_t;
_Static_assert(sizeof(rd_allreduce_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static zap_status_t finish(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    zap_coll_copy(op, a->dst, zap_coll_agree_result(op), a->count * zap_dtype_size(a->dt));
    return ZAP_OK;
}

static zap_status_t own_exchange(zap_coll_op_t *op)
{
    rd_allreduce_t *s = (rd_allreduce_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    zap_status_t st;
    if (!s->exchanging) {
        if ((st = zap_coll_agree_init(op, ZAP_COLL_FORM_RD, 1, a->src, a->count, a->dt, a->op)) != ZAP_OK)
            return st;
        s->exchanging = true;
    }
    if ((st = zap_coll_agree_progress(op)) != ZAP_OK)
        return st;
    return finish(op);
}

zap_status_t zap_allreduce_rd_init(zap_coll_op_t *op)
{
    rd_allreduce_t *s = (rd_allreduce_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    s->exchanging = false;
    if (op->agreed || (op->form != ZAP_COLL_FORM_RD && op->comm->size > 1)) {
        op->progress = own_exchange;
        return ZAP_OK;
    }
    zap_status_t st = zap_coll_agree_init(op, op->form, 0, a->src, a->count, a->dt, a->op);
    if (st != ZAP_OK)
        return st;
    op->agreeing = true;
    op->progress = finish;
    return ZAP_OK;
}
