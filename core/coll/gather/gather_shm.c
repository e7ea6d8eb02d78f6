/* Shared-memory gather (gather only, blocks up to a slot's 4032 bytes; ranks
 * on one host; larger ones through the large area where single-copy reads
 * are dear, gather_shm_copy.c): every rank publishes its block in its slot of the
 * agreement, nothing combined (zap_coll_agree_init_gather), and the root
 * copies the p blocks out. The agreement is the whole call: no message, one
 * slot written per rank, p read by the root. */
#include "coll/gather/gather.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/shm/shm.h"
#include <string.h>

static zap_status_t shm_finish(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    if (op->comm->rank != a->root)
        return ZAP_OK;
    size_t blk = a->fixed * zap_dtype_size(a->dt);
    for (int q = 0; q < op->comm->size; q++)
        if (q != a->root || a->src != NULL)
            zap_coll_copy(op, (char *)a->dst + (size_t)q * blk, zap_coll_agree_slot(op, q), blk);
    return ZAP_OK;
}

zap_status_t zap_gather_shm_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    size_t blk = a->fixed * zap_dtype_size(a->dt);
    if (op->comm->shm == NULL || zap_ga_is_v(a) || op->agreed || op->form != ZAP_COLL_FORM_SHM)
        return ZAP_ERR_UNSUPPORTED;
    if (blk > ZAP_COLL_SHM_PAYLOAD) {
        bool forced = op->comm->set.alg[ZAP_COLL_GATHER] == ZAP_GA_SHM;
        return zap_gather_shm_copies(op->comm->shm, blk, forced) ? zap_gather_shm_copy_init(op) : ZAP_ERR_UNSUPPORTED;
    }
    if (blk == 0) {
        op->progress = NULL;
        return ZAP_OK;
    }
    /* In place, the root publishes its block from recvbuf (nobody reads it). */
    zap_status_t st = zap_coll_agree_init_gather(op, a->src != NULL ? a->src : a->dst, blk);
    if (st != ZAP_OK)
        return st;
    /* One-way: the others write and go on, the root reads every slot. */
    zap_coll_agree_shm_need(op, op->comm->rank == a->root ? ~UINT64_C(0) : 0);
    op->agreeing = true;
    op->progress = shm_finish;
    return ZAP_OK;
}

/* Every rank's block in its slot: one-way, as in zap_gather_shm_init. */
bool zap_gather_shm_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f)
{
    size_t blk = a->fixed * zap_dtype_size(a->dt);
    if (zap_ga_is_v(a) || blk == 0 || blk > ZAP_COLL_SHM_PAYLOAD)
        return false;
    f->src = a->src != NULL ? a->src : a->dst;
    f->bytes = blk;
    f->need = comm->rank == a->root ? ~UINT64_C(0) : 0;
    return true;
}

void zap_gather_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f)
{
    if (comm->rank != a->root)
        return;
    size_t blk = a->fixed * zap_dtype_size(a->dt);
    for (int q = 0; q < comm->size; q++)
        if (q != a->root || a->src != NULL)
            memcpy((char *)a->dst + (size_t)q * blk, zap_coll_agree_shm_fast_slot(comm, f, q), blk);
}
