/* Shared-memory scan and exscan, vectors up to a slot's 4032 bytes (ranks
 * on one host): every rank publishes its vector in its slot of the
 * agreement, nothing combined (zap_coll_agree_init_gather), and rank r then
 * reduces slots 0 .. r (exscan: 0 .. r-1) in rank order,
 * ((x0 op x1) op x2) ..., into recvbuf: the agreement is the whole call, no
 * message. Rank order for every op. */
#include "coll/scan/scan.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include <string.h>

static zap_status_t shm_finish(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    int last = op->comm->rank - (op->kind == ZAP_COLL_EXSCAN ? 1 : 0);
    if (last < 0)
        return ZAP_OK; /* exscan on rank 0: nothing */
    /* The CPU combines the host slots: into recvbuf when it is host memory,
     * else into scratch copied over. */
    char *out = op->mem == ZAP_MEM_HOST ? a->dst : op->scratch.ptr;
    const void *srcs[ZAP_COLL_SHM_MAX_RANKS];
    for (int q = 0; q <= last; q++)
        srcs[q] = zap_coll_agree_slot(op, q);
    zap_reduce_cpu_many(a->dt, a->op, out, srcs, last + 1, a->count);
    if (out != a->dst)
        zap_coll_copy(op, a->dst, out, a->bytes);
    return ZAP_OK;
}

zap_status_t zap_scan_shm_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    if (op->comm->shm == NULL || a->bytes > ZAP_COLL_SHM_PAYLOAD || op->agreed || op->form != ZAP_COLL_FORM_SHM)
        return ZAP_ERR_UNSUPPORTED;
    if (a->bytes == 0) {
        op->progress = NULL;
        return ZAP_OK;
    }
    zap_status_t st = ZAP_OK;
    if (op->mem != ZAP_MEM_HOST)
        st = zap_coll_scratch(op, &op->scratch, a->bytes);
    if (st == ZAP_OK)
        st = zap_coll_agree_init_gather(op, a->src, a->bytes);
    if (st != ZAP_OK)
        return st;
    /* One-way: rank r reads the slots below it only. */
    zap_coll_agree_shm_need(op, (UINT64_C(1) << op->comm->rank) - 1);
    op->agreeing = true;
    op->progress = shm_finish;
    return ZAP_OK;
}

/* The fast form (engine/fast.h): one-way, as above, on host buffers. */
bool zap_scan_shm_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f)
{
    f->src = a->src;
    f->bytes = a->bytes;
    f->need = (UINT64_C(1) << comm->rank) - 1;
    return true;
}

void zap_scan_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f)
{
    zap_coll_agree_shm_fast_reduce(comm, f, comm->rank, a->dt, a->op, a->dst, a->count);
}

void zap_exscan_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f)
{
    if (comm->rank > 0)
        zap_coll_agree_shm_fast_reduce(comm, f, comm->rank - 1, a->dt, a->op, a->dst, a->count);
}
