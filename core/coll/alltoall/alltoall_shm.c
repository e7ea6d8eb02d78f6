/* Shared-memory alltoall (alltoall only; ranks on one host).
 *
 * While the blocks for the other ranks fit a slot ((p - 1) blocks in
 * ZAP_COLL_SHM_PAYLOAD bytes) they ride the agreement without combining, from
 * the successor's block on round the ranks (two ranges of the send buffer,
 * zap_coll_agree_init_gather2), and every rank copies its block out of each
 * other rank's slot and its own from its send buffer (in place: it stays):
 * no message at all.
 *
 * Beyond, up to the large area (p blocks per rank), large exchange k: every
 * rank copies its send buffer into its input area and publishes in_seq;
 * once every in_seq holds k it copies its block out of each rank's area into
 * recvbuf, publishes fin_seq and returns once every fin_seq holds k (its
 * area has been read by all and may be overwritten). Two copies per byte and
 * two waits, against p - 1 message rounds. In place works: the send buffer
 * is copied out before anything is written to it. */
#include "coll/alltoall/alltoall.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/shm/shm.h"
#include <string.h>

typedef struct a2a_shm {
    zap_coll_shm_exchange_t x;
    size_t blk;
} a2a_shm_t;
_Static_assert(sizeof(a2a_shm_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

/* Whether the blocks for the other ranks fit a slot. */
static bool in_slot(int p, size_t blk) { return (size_t)(p - 1) * blk <= ZAP_COLL_SHM_PAYLOAD; }

/* The send buffer as a slot holds it: from the successor's block to the end,
 * then from the start to the block before this rank's own. */
static void slot_ranges(const void *src, int r, int p, size_t blk, const void **first, size_t *n1, size_t *n2)
{
    *first = (const char *)src + (size_t)(r + 1) * blk;
    *n1 = (size_t)(p - 1 - r) * blk;
    *n2 = (size_t)r * blk;
}

/* Where rank r's block lies in rank q's slot (q != r). */
static size_t slot_offset(int r, int q, int p, size_t blk) { return (size_t)((r - q - 1 + p) % p) * blk; }


static zap_status_t small_finish(zap_coll_op_t *op)
{
    a2a_shm_t *s = (a2a_shm_t *)op->alg_state;
    int r = op->comm->rank, p = op->comm->size;
    for (int q = 0; q < p; q++)
        if (q != r)
            zap_coll_copy(op, (char *)op->args.dst + (size_t)q * s->blk,
                          (const char *)zap_coll_agree_slot(op, q) + slot_offset(r, q, p, s->blk), s->blk);
    if (!zap_a2a_in_place(&op->args)) /* in place, its own block is there */
        zap_coll_copy(op, (char *)op->args.dst + (size_t)r * s->blk,
                      (const char *)op->args.src + (size_t)r * s->blk, s->blk);
    return ZAP_OK;
}

/* This rank's p blocks into its input area. */
static void copy_in(zap_coll_op_t *op)
{
    const a2a_shm_t *s = (const a2a_shm_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    const zap_coll_shm_t *sh = op->comm->shm;
    zap_coll_copy(op, sh->big_in + (size_t)sh->rank * sh->big_bytes, zap_a2a_in_place(a) ? a->dst : a->src,
                  s->blk * (size_t)sh->size);
}

/* Block r of every rank's input area into place. */
static void copy_out(zap_coll_op_t *op)
{
    const a2a_shm_t *s = (const a2a_shm_t *)op->alg_state;
    const zap_coll_shm_t *sh = op->comm->shm;
    int r = sh->rank, p = sh->size;
    for (int i = 0; i < p; i++) { /* from the next rank on, so that p ranks do not all read rank 0 first */
        int q = (r + i) % p;
        zap_coll_copy(op, (char *)op->args.dst + (size_t)q * s->blk,
                      sh->big_in + (size_t)q * sh->big_bytes + (size_t)r * s->blk, s->blk);
    }
}

static zap_status_t large_progress(zap_coll_op_t *op)
{
    a2a_shm_t *s = (a2a_shm_t *)op->alg_state;
    zap_status_t st = zap_coll_shm_exchange(op, &s->x, s->blk * (size_t)op->comm->size, 0, copy_in, copy_out);
    return st == ZAP_ERR_NO_MEMORY ? zap_coll_fall_back(op) : st; /* no room for the area: every rank alike */
}

zap_status_t zap_alltoall_shm_init(zap_coll_op_t *op)
{
    zap_coll_shm_t *sh = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    a2a_shm_t *s = (a2a_shm_t *)op->alg_state;
    if (sh == NULL || zap_a2a_is_v(a))
        return ZAP_ERR_UNSUPPORTED;
    memset(s, 0, sizeof(*s));
    s->blk = a->fixed * zap_dtype_size(a->dt);
    size_t all = s->blk * (size_t)op->comm->size;
    if (all == 0) {
        op->progress = NULL;
        return ZAP_OK;
    }
    if (in_slot(op->comm->size, s->blk) && !op->agreed && op->form == ZAP_COLL_FORM_SHM) {
        const void *first;
        size_t n1, n2;
        const void *src = zap_a2a_in_place(a) ? a->dst : a->src;
        slot_ranges(src, op->comm->rank, op->comm->size, s->blk, &first, &n1, &n2);
        zap_status_t st = zap_coll_agree_init_gather2(op, first, n1, src, n2);
        if (st != ZAP_OK)
            return st;
        op->agreeing = true;
        op->progress = small_finish;
        return ZAP_OK;
    }
    if (sh->big_bytes == 0 || all > sh->big_bytes)
        return ZAP_ERR_UNSUPPORTED;
    op->progress = large_progress;
    return ZAP_OK;
}

/* The fast form (engine/fast.h) of the slots' exchange above. */
bool zap_alltoall_shm_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f)
{
    size_t blk = a->fixed * zap_dtype_size(a->dt);
    if (zap_a2a_is_v(a) || blk == 0 || !in_slot(comm->size, blk))
        return false;
    f->src2 = zap_a2a_in_place(a) ? a->dst : a->src;
    slot_ranges(f->src2, comm->rank, comm->size, blk, &f->src, &f->bytes, &f->bytes2);
    f->need = ~UINT64_C(0);
    return true;
}

/* As small_finish: recvbuf is written from the others' slots and this
 * rank's own send block, so in place too. */
void zap_alltoall_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f)
{
    size_t blk = a->fixed * zap_dtype_size(a->dt);
    int r = comm->rank, p = comm->size;
    for (int q = 0; q < p; q++)
        if (q != r)
            memcpy((char *)a->dst + (size_t)q * blk,
                   (const char *)zap_coll_agree_shm_fast_slot(comm, f, q) + slot_offset(r, q, p, blk), blk);
    if (!zap_a2a_in_place(a)) /* in place, its own block is there */
        memcpy((char *)a->dst + (size_t)r * blk, (const char *)a->src + (size_t)r * blk, blk);
}
