/* Shared-memory broadcast, for communicators whose ranks share one host
 * (coll/shm/shm.h). Up to a slot's 4032 bytes it is the argument exchange
 * itself (bcast_rd.c on the shared-memory form of the agreement: the root's
 * slot carries the data, every rank copies it once every slot holds the
 * exchange). Larger messages, up to the segment's large area, follow that
 * agreement with a large exchange k (numbered as the allreduce's large form,
 * whose area and flags it shares: shm.h):
 *
 *   root: once every rank's fin_seq says it is done with exchange k - 1, copy
 *         the buffer into the result area chunk by chunk, publishing in_seq
 *         for each chunk; then done;
 *   each other rank: copy each chunk out once the root's in_seq holds it;
 *         then publish fin_seq.
 *
 * The root waits for fin_seq because a rank may still be copying out the
 * previous exchange's result from the same area. One copy in and one copy out
 * per rank, against the chain's p - 2 + k segment rounds over the transport.
 * A dead root is named by pid; a dead reader is seen by the next exchange's
 * root. When /dev/shm has no room for the area to grow, every rank sees it
 * alike and the call falls back to its next candidate. */
#include "coll/bcast/bcast.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include <string.h>

typedef struct bcast_shm {
    void *buf;
    size_t bytes;
    size_t chunk_bytes;
    size_t chunk;
    int root;
    int step; /* 0: not started, 1: moving chunks */
    zap_coll_shm_wait_t wait;
} bcast_shm_t;
_Static_assert(sizeof(bcast_shm_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static void wait_for_root(zap_coll_shm_wait_t *w, const zap_coll_shm_t *s, int root)
{
    *w = (zap_coll_shm_wait_t){zap_coll_shm_all_ranks(s) & ~(UINT64_C(1) << root), 0, 0};
}

static zap_status_t bcast_large_progress(zap_coll_op_t *op)
{
    zap_coll_shm_t *s = op->comm->shm;
    bcast_shm_t *b = (bcast_shm_t *)op->alg_state;
    bool is_root = s->rank == b->root;
    zap_status_t st;
    if (b->step == 0) {
        st = zap_coll_shm_large_turn(op, b->bytes);
        if (st == ZAP_ERR_NO_MEMORY) /* no room for the area: every rank takes the next candidate */
            return zap_coll_fall_back(op);
        if (st != ZAP_OK)
            return st;
        b->step = 1;
        if (is_root)
            b->wait = (zap_coll_shm_wait_t){0, 0, 0};
        else
            wait_for_root(&b->wait, s, b->root);
    }
    uint64_t k = op->shm_big_seq;
    if (is_root) {
        /* Every rank done with the previous exchange's result (none before
         * the first). */
        if (k > 1 && (st = zap_coll_shm_gather(op, &s->ctl[0].fin_seq, sizeof(s->ctl[0]), zap_coll_shm_fin(k - 1),
                                               true, &b->wait)) != ZAP_OK)
            return st;
        for (size_t at = 0, j = 0; at < b->bytes; at += b->chunk_bytes, j++) {
            size_t n = b->bytes - at < b->chunk_bytes ? b->bytes - at : b->chunk_bytes;
            zap_coll_copy(op, s->big_out + at, (const unsigned char *)b->buf + at, n);
            atomic_store_explicit(&s->ctl[s->rank].in_seq, zap_coll_shm_tag(k, j), memory_order_release);
        }
    } else {
        while (b->chunk * b->chunk_bytes < b->bytes) {
            size_t at = b->chunk * b->chunk_bytes;
            size_t n = b->bytes - at < b->chunk_bytes ? b->bytes - at : b->chunk_bytes;
            if ((st = zap_coll_shm_gather(op, &s->ctl[0].in_seq, sizeof(s->ctl[0]), zap_coll_shm_tag(k, b->chunk),
                                          true, &b->wait)) != ZAP_OK)
                return st;
            zap_coll_copy(op, (unsigned char *)b->buf + at, s->big_out + at, n);
            b->chunk++;
            wait_for_root(&b->wait, s, b->root);
        }
    }
    s->big_done = k;
    atomic_store_explicit(&s->ctl[s->rank].fin_seq, zap_coll_shm_fin(k), memory_order_release);
    return ZAP_OK;
}

zap_status_t zap_bcast_shm_init(zap_coll_op_t *op)
{
    zap_coll_shm_t *s = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    if (s == NULL || a->bytes > op->comm->shm_bytes)
        return ZAP_ERR_UNSUPPORTED;
    if (a->bytes <= ZAP_COLL_SHM_PAYLOAD && !op->agreed)
        return op->form == ZAP_COLL_FORM_SHM ? zap_bcast_rd_init(op) : ZAP_ERR_UNSUPPORTED;
    if (s->big_bytes == 0 || a->bytes > s->big_bytes)
        return ZAP_ERR_UNSUPPORTED;
    bcast_shm_t *b = (bcast_shm_t *)op->alg_state;
    b->buf = a->dst;
    b->bytes = a->bytes;
    b->chunk_bytes = zap_coll_shm_large_chunk(op, op->agreed);
    b->chunk = 0;
    b->root = a->root;
    b->step = 0;
    op->progress = bcast_large_progress;
    return ZAP_OK;
}
