/* Shared-memory scan and exscan, vectors up to a slot's 4032 bytes (ranks
 * on one host; larger ones through the large area, scan_shm_large.c):
 * every rank publishes its vector in its slot of the
 * agreement, nothing combined (zap_coll_agree_init_gather), and rank r then
 * computes ((x0 op x1) op x2) ... op xr (exscan: up to x(r-1)) into recvbuf:
 * the agreement is the whole call, no message. Rank order for every op.
 *
 * The prefix lane (vectors up to LANE_MAX bytes): after its vector the slot
 * of a rank r in 1 .. p-2 carries its inclusive prefix x0 op ... op xr, then
 * (in the same cache line for vectors up to 56 bytes) the number of the
 * exchange that prefix is of, stored after it with release order. Rank r,
 * finding rank r-1's prefix of this exchange there, combines it with its own
 * vector (exscan: copies it) instead of reducing r slots, reading one vector
 * instead of r; rank 1 reads rank 0's vector, which is rank 0's prefix, and
 * rank 0 and the last rank, whose lanes nobody would read, write none. It
 * does not wait for the lane (a late r-1 would make the call a chain), but
 * reduces the slots as without it, whichever comes first; in the fast form,
 * a lane found also vouches for the agreement of the ranks below r-1
 * (agree.h, via), so rank r reads one slot in all. Either way the operands
 * and their order are the same, (prefix(r-1)) op xr = ((x0 op x1) ...) op
 * xr, so are the bytes. Only the bytes past the vector change after the slot
 * is published, and only its owner writes them; a reader reads them only
 * once their exchange number is there, and no bank is reused before every
 * rank has read through its exchange (shm.h), so a prefix is never read
 * while its slot is rewritten. */
#include "coll/scan/scan.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include "base/copy.h"
#include <string.h>

/* Where a slot's prefix starts (after the vector, on a 64-byte boundary),
 * where its exchange number follows it (8-byte aligned), and whether
 * vector, prefix and number fit the payload. */
static size_t lane_at(size_t bytes) { return (bytes + 63) & ~(size_t)63; }
static size_t lane_seq_at(size_t bytes) { return lane_at(bytes) + ((bytes + 7) & ~(size_t)7); }
#define LANE_MAX ((ZAP_COLL_SHM_PAYLOAD - sizeof(uint64_t)) / 2 / 64 * 64)

static _Atomic uint64_t *lane_seq(unsigned char *payload, size_t bytes)
{
    return (_Atomic uint64_t *)(void *)(payload + lane_seq_at(bytes));
}

/* Rank r's result of exchange seq into out (exclusive: exscan; rank 0 of an
 * exscan leaves out alone), and its prefix into its lane. */
static void combine(const zap_comm_t *comm, uint64_t seq, bool exclusive, zap_dtype_t dt, zap_op_t op, size_t count,
                    size_t bytes, void *out)
{
    const zap_coll_shm_t *s = comm->shm;
    int r = comm->rank;
    unsigned char *own = zap_coll_shm_slot(s, seq, r)->payload;
    bool lane = bytes <= LANE_MAX;
    const unsigned char *prev = NULL; /* rank r-1's prefix, when it is there */
    if (r == 1) {
        prev = zap_coll_shm_slot(s, seq, 0)->payload; /* x0: rank 0's prefix, always there */
    } else if (lane && r > 1) {
        unsigned char *q = zap_coll_shm_slot(s, seq, r - 1)->payload;
        if (atomic_load_explicit(lane_seq(q, bytes), memory_order_acquire) == seq)
            prev = q + lane_at(bytes);
    }
    int last = exclusive ? r - 1 : r;
    if (last >= 0) {
        if (prev != NULL && exclusive) {
            zap_copy(out, prev, bytes);
        } else if (prev != NULL) {
            zap_reduce_cpu(dt, op, out, prev, own, count);
        } else if (last == 0) {
            zap_copy(out, own, bytes); /* rank 0's scan: its own vector, as a fold of one */
        } else {
            zap_coll_agree_shm_reduce(comm, seq, last, dt, op, out, count);
        }
    }
    if (!lane || r == 0 || r == comm->size - 1)
        return; /* nobody reads this lane */
    unsigned char *mine = own + lane_at(bytes);
    if (!exclusive)
        zap_copy(mine, out, bytes);
    else
        zap_reduce_cpu(dt, op, mine, out, own, count);
    atomic_store_explicit(lane_seq(own, bytes), seq, memory_order_release);
}

static zap_status_t shm_finish(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    /* The CPU combines the host slots: into recvbuf when it is host memory,
     * else into scratch copied over. */
    char *out = op->mem == ZAP_MEM_HOST ? a->dst : op->scratch.ptr;
    bool exclusive = op->kind == ZAP_COLL_EXSCAN;
    combine(op->comm, op->agree.shm_seq, exclusive, a->dt, a->op, a->count, a->bytes, out);
    if (out != a->dst && !(exclusive && op->comm->rank == 0))
        zap_coll_copy(op, a->dst, out, a->bytes);
    return ZAP_OK;
}

zap_status_t zap_scan_shm_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    if (op->comm->shm == NULL)
        return ZAP_ERR_UNSUPPORTED;
    if (a->bytes > ZAP_COLL_SHM_PAYLOAD || op->agreed)
        return zap_scan_shm_large_init(op);
    if (op->form != ZAP_COLL_FORM_SHM)
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
    if (comm->rank > 1 && a->bytes <= LANE_MAX) {
        f->via = comm->rank - 1;
        f->via_off = lane_seq_at(a->bytes);
    }
    return true;
}

void zap_scan_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f)
{
    combine(comm, f->seq, false, a->dt, a->op, a->count, a->bytes, a->dst);
}

void zap_exscan_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f)
{
    combine(comm, f->seq, true, a->dt, a->op, a->count, a->bytes, a->dst);
}
