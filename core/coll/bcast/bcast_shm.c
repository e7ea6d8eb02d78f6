/* Shared-memory broadcast, for communicators whose ranks share one host
 * (coll/shm/shm.h). Up to a slot's 4032 bytes it is the argument exchange
 * itself (bcast_rd.c on the shared-memory form of the agreement, one-way:
 * the root's slot carries the data and the root does not wait for its
 * readers). Larger messages follow that agreement with a large exchange k
 * (numbered as the allreduce's large form, whose area and flags it shares:
 * shm.h), through the result area used as a ring of chunks, so a message of
 * any size goes through an area of any size:
 *
 *   root: once every rank's fin_seq says it is done with exchange k - 1, copy
 *         the buffer into the ring chunk by chunk (chunk j at ring slot
 *         j mod n), publishing in_seq for each; before overwriting a ring
 *         slot, wait until every other rank's red_seq says it has copied out
 *         the chunk that was there (j - n); then done;
 *   each other rank: copy each chunk out once the root's in_seq holds it,
 *         publish red_seq for it; then publish fin_seq.
 *
 * The root waits for fin_seq because a rank may still be copying out the
 * previous exchange's result from the same area. One copy in and one copy out
 * per rank, against the chain's p - 2 + k segment rounds over the transport.
 * A message within the ring never wraps and waits for no reader. A dead root
 * is named by pid; a dead reader by the root's wait for its ring slot or by
 * the next exchange's root. When /dev/shm has no room for the area to grow,
 * every rank sees it alike and the call falls back to its next candidate. */
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
    size_t ring;  /* ring slots: chunks the area holds */
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

/* The area the exchange reserves: the message, or the whole area for a
 * message that goes round it; the same on every rank. */
static size_t area_bytes(const zap_coll_shm_t *s, size_t bytes) { return bytes < s->big_bytes ? bytes : s->big_bytes; }

static zap_status_t root_moves(zap_coll_op_t *op, zap_coll_shm_t *s, bcast_shm_t *b, uint64_t k)
{
    zap_status_t st;
    for (; b->chunk * b->chunk_bytes < b->bytes; b->chunk++) {
        size_t j = b->chunk, at = j * b->chunk_bytes;
        size_t n = b->bytes - at < b->chunk_bytes ? b->bytes - at : b->chunk_bytes;
        if (j >= b->ring) { /* the slot's previous chunk must be out everywhere */
            if ((st = zap_coll_shm_gather(op, &s->ctl[0].red_seq, sizeof(s->ctl[0]), zap_coll_shm_tag(k, j - b->ring),
                                          true, &b->wait)) != ZAP_OK)
                return st;
            b->wait = (zap_coll_shm_wait_t){UINT64_C(1) << b->root, 0, 0};
        }
        zap_coll_copy(op, s->big_out + (j % b->ring) * b->chunk_bytes, (const unsigned char *)b->buf + at, n);
        atomic_store_explicit(&s->ctl[s->rank].in_seq, zap_coll_shm_tag(k, j), memory_order_release);
    }
    return ZAP_OK;
}

static zap_status_t reader_moves(zap_coll_op_t *op, zap_coll_shm_t *s, bcast_shm_t *b, uint64_t k)
{
    zap_status_t st;
    while (b->chunk * b->chunk_bytes < b->bytes) {
        size_t j = b->chunk, at = j * b->chunk_bytes;
        size_t n = b->bytes - at < b->chunk_bytes ? b->bytes - at : b->chunk_bytes;
        if ((st = zap_coll_shm_gather(op, &s->ctl[0].in_seq, sizeof(s->ctl[0]), zap_coll_shm_tag(k, j), true,
                                      &b->wait)) != ZAP_OK)
            return st;
        zap_coll_copy(op, (unsigned char *)b->buf + at, s->big_out + (j % b->ring) * b->chunk_bytes, n);
        atomic_store_explicit(&s->ctl[s->rank].red_seq, zap_coll_shm_tag(k, j), memory_order_release);
        b->chunk++;
        wait_for_root(&b->wait, s, b->root);
    }
    return ZAP_OK;
}

static zap_status_t bcast_large_progress(zap_coll_op_t *op)
{
    zap_coll_shm_t *s = op->comm->shm;
    bcast_shm_t *b = (bcast_shm_t *)op->alg_state;
    bool is_root = s->rank == b->root;
    zap_status_t st;
    if (b->step == 0) {
        if (!zap_coll_large_turn(op, area_bytes(s, b->bytes), &st))
            return st;
        b->step = 1;
        if (!is_root) {
            wait_for_root(&b->wait, s, b->root);
        } else if (op->shm_big_seq > 1) { /* every rank done with the previous exchange's area */
            b->step = 2;
            b->wait = (zap_coll_shm_wait_t){0, 0, 0};
        } else {
            b->wait = (zap_coll_shm_wait_t){UINT64_C(1) << b->root, 0, 0}; /* the ring's waits: readers only */
        }
    }
    uint64_t k = op->shm_big_seq;
    if (b->step == 2) {
        if ((st = zap_coll_shm_gather(op, &s->ctl[0].fin_seq, sizeof(s->ctl[0]), zap_coll_shm_fin(k - 1), true,
                                      &b->wait)) != ZAP_OK)
            return st;
        b->step = 1;
        b->wait = (zap_coll_shm_wait_t){UINT64_C(1) << b->root, 0, 0};
    }
    if ((st = is_root ? root_moves(op, s, b, k) : reader_moves(op, s, b, k)) != ZAP_OK)
        return st;
    s->big_done = k;
    atomic_store_explicit(&s->ctl[s->rank].fin_seq, zap_coll_shm_fin(k), memory_order_release);
    return ZAP_OK;
}

zap_status_t zap_bcast_shm_init(zap_coll_op_t *op)
{
    zap_coll_shm_t *s = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    if (s == NULL)
        return ZAP_ERR_UNSUPPORTED;
    if (a->bytes <= ZAP_COLL_SHM_PAYLOAD && !op->agreed)
        return op->form == ZAP_COLL_FORM_SHM ? zap_bcast_rd_init(op) : ZAP_ERR_UNSUPPORTED;
    if (s->big_bytes == 0)
        return ZAP_ERR_UNSUPPORTED;
    bcast_shm_t *b = (bcast_shm_t *)op->alg_state;
    b->buf = a->dst;
    b->bytes = a->bytes;
    b->chunk_bytes = zap_coll_shm_large_chunk(op, op->agreed);
    /* A message of a few chunks or less would move as one copy in, then
     * one copy out: a quarter of it per chunk (at least 8 KiB) lets the
     * readers copy out while the root still copies in. From the agreed size,
     * so alike on every rank; a pipeline setting stays as set. */
    if (b->chunk_bytes == ZAP_COLL_SHM_CHUNK_BYTES && a->bytes < 4 * ZAP_COLL_SHM_CHUNK_BYTES) {
        size_t quarter = (a->bytes / 4 + 4095) / 4096 * 4096;
        b->chunk_bytes = quarter < 8192 ? 8192 : quarter;
    }
    /* At least two ring slots, so the root fills one while the readers
     * empty the other. */
    if (b->chunk_bytes > s->big_bytes / 2)
        b->chunk_bytes = s->big_bytes / 2 / 64 * 64;
    b->ring = s->big_bytes / b->chunk_bytes;
    b->chunk = 0;
    b->root = a->root;
    b->step = 0;
    op->progress = bcast_large_progress;
    return ZAP_OK;
}
