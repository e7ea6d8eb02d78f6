/* Direct (flat, radix-p) allreduce: one round. Every rank sends its argument
 * header and its whole vector to every other rank, all posted at once, then
 * reduces the p contributions itself in rank order
 * ((c0 op c1) op c2) ... op c(p-1), so every rank computes the same expression
 * on the same operands and holds identical bytes.
 *
 * This is the agreement's flat form carrying the vector (agree/agree_flat.c):
 * the header every collective agrees on travels in the same messages as the
 * payload, and each rank merges all p headers itself, so a mismatch is seen
 * on every rank. The same init serves the shared-memory allreduce for
 * vectors that fit a slot (allreduce_shm.c): the same reduction on the
 * shared-memory form of the agreement. For small vectors a round costs a
 * transport latency while an extra message in the same round costs only its
 * injection, but the (p - 1) n bytes moved per rank grow with p; the
 * automatic choice does not take it (docs/collectives.md, "Selection").
 *
 * Agreement: ranks can only match messages of the same form, so whether a
 * call agrees flat depends on the rank count and the communicator's
 * settings only (allreduce.c). Ranks given different settings, one flat and
 * one not, do not meet and time out (the settings must match on every rank). */
#include "coll/allreduce/allreduce.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/reduce/reduce.h"
#include <string.h>

static zap_status_t finish(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    zap_coll_copy(op, a->dst, zap_coll_agree_result(op), a->count * zap_dtype_size(a->dt));
    return ZAP_OK;
}

zap_status_t zap_allreduce_direct_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    if (op->agreed) /* it is its own agreement: it cannot follow another candidate */
        return ZAP_ERR_UNSUPPORTED;
    zap_status_t st = zap_coll_agree_init(op, op->form, 0, a->src, a->count, a->dt, a->op);
    if (st != ZAP_OK)
        return st;
    op->agreeing = true;
    op->progress = finish;
    op->whole_in_agreement = true;
    return ZAP_OK;
}

bool zap_allreduce_direct_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f)
{
    if (a->bytes > zap_allreduce_shm_slot_bytes(comm->size))
        return false; /* the large area's form: an operation */
    f->src = a->src;
    f->bytes = a->bytes;
    f->need = ~UINT64_C(0); /* every other rank's slot */
    return true;
}

/* The expression the shared-memory exchange computes (agree/agree_shm.c):
 * slot 0, then slots 1 .. p-1 in rank order. */
void zap_allreduce_direct_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f)
{
    zap_coll_agree_shm_reduce(comm, f->seq, comm->size - 1, a->dt, a->op, a->dst, a->count);
}
