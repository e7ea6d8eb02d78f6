/* Single-copy reduce-scatter: ranks on one host read their own part of the
 * other ranks' inputs directly (process_vm_readv; coll/shm/shm.h has the
 * probe and the flags), so each byte that must move is copied once, with no
 * staging area and no message. Large exchange k of the communicator:
 *
 *   1. publish this rank's input address in its flag line, in_seq = k;
 *   2. once every in_seq holds k: reduce this rank's part, chunk by chunk,
 *      reading the p inputs' chunk into scratch and combining them in rank
 *      order, (c0 op c1) op ... op c(p-1), straight into recvbuf;
 *   3. fin_seq = k, and return once every fin_seq holds k (nobody reads this
 *      rank's input any more).
 *
 * Only reads cross processes, as in the single-copy allreduce
 * (allreduce_cma.c, which says why that is safe). Not in place: a rank's
 * input is then its recvbuf, which it overwrites while the others still
 * read it; every rank knows the call is in place alike (the header's extra
 * word carries it), and such calls take the next candidate. The agreement
 * carries a vote that every rank's buffers are host memory; where one votes
 * no, every rank takes the next candidate. Per rank it reads (p-1)/p n bytes
 * and writes n/p: against the large shared-memory form's copy of the whole
 * vector in. */
#include "coll/reduce_scatter/reduce_scatter.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include <string.h>

/* The operands of one chunk (p of them) stay in cache. */
#define CMA_SCRATCH_MAX ((size_t)1 << 20)

enum { STEP_TURN, STEP_ADDRS, STEP_FIN };

typedef struct rs_cma {
    int step;
    size_t chunk_elems;
    zap_coll_shm_wait_t wait;
} rs_cma_t;
_Static_assert(sizeof(rs_cma_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

bool zap_reduce_scatter_cma_vote(const zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    return op->mem == ZAP_MEM_HOST && zap_coll_mem_kind(op->comm, a->src, a->bytes) == ZAP_MEM_HOST;
}

static zap_status_t reduce_part(zap_coll_op_t *op, rs_cma_t *s)
{
    const zap_coll_args_t *a = &op->args;
    zap_coll_shm_t *sh = op->comm->shm;
    int r = sh->rank, p = sh->size;
    size_t es = zap_dtype_size(a->dt), lo = zap_rs_offset(a, r), hi = lo + zap_rs_count(a, r);
    unsigned char *scratch = zap_coll_shm_cma_scratch(sh, s->chunk_elems * es * (size_t)p);
    if (scratch == NULL)
        return ZAP_ERR_NO_MEMORY;
    const void *operand[ZAP_COLL_SHM_MAX_RANKS];
    for (size_t first = lo; first < hi; first += s->chunk_elems) {
        size_t n = hi - first < s->chunk_elems ? hi - first : s->chunk_elems, at = first * es;
        /* The others' chunks from the next rank on, so that p ranks do not
         * all read rank 0 first. */
        for (int i = 1; i <= p; i++) {
            int q = (r + i) % p;
            if (q == r) {
                operand[q] = (const unsigned char *)a->src + at;
                continue;
            }
            unsigned char *slot = scratch + (size_t)q * s->chunk_elems * es;
            zap_status_t st = zap_coll_shm_read(op, q, slot, sh->ctl[q].src_addr + at, n * es);
            if (st != ZAP_OK)
                return st;
            operand[q] = slot;
        }
        unsigned char *out = (unsigned char *)a->dst + (first - lo) * es;
        zap_reduce_cpu(a->dt, a->op, out, operand[0], operand[1], n);
        for (int q = 2; q < p; q++)
            zap_reduce_cpu(a->dt, a->op, out, out, operand[q], n);
    }
    return ZAP_OK;
}

static zap_status_t cma_progress(zap_coll_op_t *op)
{
    rs_cma_t *s = (rs_cma_t *)op->alg_state;
    zap_coll_shm_t *sh = op->comm->shm;
    zap_status_t st;
    if (s->step == STEP_TURN) {
        if (!zap_coll_agree_voted(op, ZAP_COLL_LANE_VOTE_HOST))
            return zap_coll_fall_back(op); /* some rank's buffers are not host memory */
        if ((st = zap_coll_shm_turn(op)) != ZAP_OK)
            return st;
        sh->ctl[sh->rank].src_addr = (uint64_t)(uintptr_t)op->args.src;
        atomic_store_explicit(&sh->ctl[sh->rank].in_seq, zap_coll_shm_tag(op->shm_big_seq, 0), memory_order_release);
        s->step = STEP_ADDRS;
        s->wait = (zap_coll_shm_wait_t){0, 0, 0};
    }
    uint64_t k = op->shm_big_seq;
    if (s->step == STEP_ADDRS) {
        st = zap_coll_shm_gather(op, &sh->ctl[0].in_seq, sizeof(sh->ctl[0]), zap_coll_shm_tag(k, 0), true, &s->wait);
        if (st != ZAP_OK)
            return st;
        if ((st = reduce_part(op, s)) != ZAP_OK)
            return st;
        atomic_store_explicit(&sh->ctl[sh->rank].fin_seq, zap_coll_shm_fin(k), memory_order_release);
        s->step = STEP_FIN;
        s->wait = (zap_coll_shm_wait_t){0, 0, 0};
    }
    st = zap_coll_shm_gather(op, &sh->ctl[0].fin_seq, sizeof(sh->ctl[0]), zap_coll_shm_fin(k), true, &s->wait);
    if (st != ZAP_OK)
        return st;
    sh->big_done = k;
    return ZAP_OK;
}

/* Where the segment permits single-copy reads and the call agrees in it,
 * not in place, with something to read. */
zap_status_t zap_reduce_scatter_cma_init(zap_coll_op_t *op)
{
    zap_coll_shm_t *sh = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    if (sh == NULL || !sh->cma || op->form != ZAP_COLL_FORM_SHM || a->count == 0 || a->src == a->dst)
        return ZAP_ERR_UNSUPPORTED;
    rs_cma_t *s = (rs_cma_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    size_t es = zap_dtype_size(a->dt), chunk = zap_coll_shm_large_chunk(op, op->agreed),
           cap = CMA_SCRATCH_MAX / (size_t)sh->size;
    chunk = chunk < cap ? chunk : cap;
    s->chunk_elems = chunk / es > 0 ? chunk / es : 1;
    s->step = STEP_TURN;
    op->progress = cma_progress;
    return ZAP_OK;
}
