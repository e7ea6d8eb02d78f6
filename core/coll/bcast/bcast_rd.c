/* Recursive-doubling broadcast: the agreement's exchange carrying the root's
 * data (agree/agree_rd.c, broadcast mode). Every round each rank swaps its
 * header with its partner's, and a side whose subcube already holds the data
 * appends it. log2(p) rounds (+2 when p is not a power of two) in all, the
 * agreement included, where the binomial tree needs the agreement's log2(p)
 * rounds and then its own; each rank receives the data once. Chosen for
 * small messages, where rounds cost more than bytes.
 *
 * The same init serves the shared-memory broadcast up to a slot (bcast_shm.c:
 * the root's slot carries the data in the shared-memory form). A call that
 * agrees in shared memory with more than a slot, or follows another
 * candidate, gets its own recursive-doubling broadcast in phase 1. */
#include "coll/bcast/bcast.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/shm/shm.h"
#include <string.h>

typedef struct bcast_rd {
    bool exchanging; /* its own exchange is running */
} bcast_rd_t;
_Static_assert(sizeof(bcast_rd_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static zap_status_t finish(zap_coll_op_t *op)
{
    if (op->comm->rank != op->args.root)
        zap_coll_copy(op, op->args.dst, zap_coll_agree_result(op), op->args.bytes);
    return ZAP_OK;
}

static zap_status_t own_exchange(zap_coll_op_t *op)
{
    bcast_rd_t *s = (bcast_rd_t *)op->alg_state;
    zap_status_t st;
    if (!s->exchanging) {
        st = zap_coll_agree_init_bcast(op, ZAP_COLL_FORM_RD, 1, op->args.dst, op->args.bytes, op->args.root);
        if (st != ZAP_OK)
            return st;
        s->exchanging = true;
    }
    if ((st = zap_coll_agree_progress(op)) != ZAP_OK)
        return st;
    return finish(op);
}

zap_status_t zap_bcast_rd_init(zap_coll_op_t *op)
{
    bcast_rd_t *s = (bcast_rd_t *)op->alg_state;
    s->exchanging = false;
    bool carries = !op->agreed && (op->form == ZAP_COLL_FORM_RD ||
                                   (op->form == ZAP_COLL_FORM_SHM && op->args.bytes <= ZAP_COLL_SHM_PAYLOAD));
    if (!carries) {
        op->progress = own_exchange;
        return ZAP_OK;
    }
    zap_status_t st = zap_coll_agree_init_bcast(op, op->form, 0, op->args.dst, op->args.bytes, op->args.root);
    if (st != ZAP_OK)
        return st;
    /* In shared memory, one-way: the root writes and goes on, the others
     * read its slot (agree/agree_shm.c). */
    int root = op->args.root;
    if (root >= 0 && root < op->comm->size)
        zap_coll_agree_shm_need(op, root == op->comm->rank ? 0 : UINT64_C(1) << root);
    op->agreeing = true;
    op->progress = finish;
    op->whole_in_agreement = true;
    return ZAP_OK;
}

bool zap_bcast_rd_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f)
{
    bool root = a->root == comm->rank;
    f->src = root ? a->dst : NULL;
    f->bytes = root ? a->bytes : 0;
    f->need = root ? 0 : UINT64_C(1) << a->root; /* one-way, as above */
    return true;
}

void zap_bcast_rd_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f)
{
    if (a->root != comm->rank)
        memcpy(a->dst, zap_coll_agree_shm_fast_slot(comm, f, a->root), a->bytes);
}
