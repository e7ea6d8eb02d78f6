/* Shared-memory allreduce for vectors above a slot's 4032 bytes, up to the
 * segment's large area (coll/shm/shm.h; ZAP_COLL_SHM_LARGE_BYTES). It runs
 * after the arguments agreed in the shared-memory exchange, in three steps per call
 * (large exchange k, numbered per communicator when its agreement succeeds,
 * which is in post order on every rank):
 *
 *   1. copy this rank's vector, but for its own block r (the r-th of p even
 *      element ranges), into its input area, publish in_seq = k;
 *   2. once every in_seq holds k: reduce block r over the p inputs in rank
 *      order, (c0 op c1) op ... op c(p-1), its own operand read from its
 *      input buffer, into the result area; publish red_seq = k, then copy
 *      block r to its output while the others still reduce theirs;
 *   3. once every red_seq holds k: copy the other ranks' blocks out.
 *
 * The vector moves in chunks of 128 KiB, each through the three steps, so
 * that what all ranks write and read at once stays in cache (whole vectors
 * cost superlinearly: docs/collectives.md, "Shared memory"); of 1 MiB where
 * the node is oversubscribed, since every chunk waits twice for every rank
 * (zap_coll_shm_sync_chunk). The flags then hold (k, chunk), increasing.
 *
 * Every element is combined in the same order as by direct and by the small
 * exchange, once, by one rank, and every rank copies the same bytes: results
 * are identical on every rank and to those algorithms'. Per rank it copies
 * (p - 1) n/p bytes in (no other rank reads its block r of the input area),
 * reads n (p blocks of n/p), writes n/p and copies n out, with two waits:
 * against the transport ring's 2 (p - 1) message rounds. The block's first
 * operand is copied and the others combined in place, which measured faster
 * than reducing two operands into a third buffer. Device buffers (a host
 * copy's bytes through zap_coll_copy) go whole through both areas, since the
 * reduction reads host memory only.
 *
 * One area suffices (broadcasts use the result area too, bcast_shm.c). A rank
 * overwrites its input for k only after finishing
 * k - 1, i.e. after seeing every red_seq at k - 1: every rank had read all
 * inputs of k - 1. It writes its result block for k only after seeing every
 * in_seq at k, which each rank published only after copying out all of
 * k - 1 (a broadcast's root is done early, but it reads no result). Each
 * rank publishes fin_seq when done, which a broadcast root waits for. A dead
 * peer is named by pid as in the small exchange; a live one that never
 * comes ends the wait at the communicator's timeout (engine/op.c).
 *
 * When /dev/shm has no room for the area to grow, every rank sees it alike
 * (zap_coll_shm_large_turn) and the call falls back to its next candidate. */
#include "coll/allreduce/allreduce.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include "base/copy.h"
#include <string.h>

typedef struct shm_large {
    const void *src;
    void *dst;
    size_t count;
    size_t chunk_elems;
    size_t chunk;  /* the chunk being moved */
    size_t wrap_elems; /* elements the areas hold: chunk t sits at its first element mod this */
    zap_dtype_t dt;
    zap_op_t zop;
    int step; /* 1, 2, 3 as above, for the current chunk */
    zap_coll_shm_wait_t wait;
} shm_large_t;
_Static_assert(sizeof(shm_large_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

/* The current chunk's first element and length. */
static void chunk_range(const shm_large_t *a, size_t *first, size_t *n)
{
    *first = a->chunk * a->chunk_elems;
    *n = a->count - *first < a->chunk_elems ? a->count - *first : a->chunk_elems;
}

/* Whether this rank reads its own operand from its input buffer and writes
 * its block of the result to its output itself (every memory kind but
 * device). */
static bool direct(const zap_coll_op_t *op) { return op->mem != ZAP_MEM_DEVICE; }

static void reduce_own_block(const zap_coll_op_t *op, zap_coll_shm_t *s, const shm_large_t *a)
{
    size_t es = zap_dtype_size(a->dt), first, n, lo, hi;
    chunk_range(a, &first, &n);
    zap_coll_shm_block(n, s->size, s->rank, &lo, &hi);
    if (hi == lo)
        return;
    size_t at = (first % a->wrap_elems + lo) * es; /* in the areas */
    unsigned char *out = s->big_out + at;
    const void *srcs[ZAP_COLL_SHM_MAX_RANKS];
    for (int q = 0; q < s->size; q++)
        srcs[q] = s->big_in + (size_t)q * s->big_bytes + at;
    if (direct(op))
        srcs[s->rank] = (const unsigned char *)a->src + (first + lo) * es;
    zap_copy(out, srcs[0], (hi - lo) * es);
    for (int q = 1; q < s->size; q++)
        zap_reduce_cpu(a->dt, a->zop, out, out, srcs[q], hi - lo);
}

/* Steps 1 to 3 for every chunk from wherever this rank is. */
static zap_status_t advance(zap_coll_op_t *op, shm_large_t *a)
{
    zap_coll_shm_t *s = op->comm->shm;
    uint64_t k = op->shm_big_seq;
    size_t es = zap_dtype_size(a->dt);
    zap_status_t st;
    for (;;) {
        size_t first, n, lo, hi;
        chunk_range(a, &first, &n);
        zap_coll_shm_block(n, s->size, s->rank, &lo, &hi);
        size_t af = first % a->wrap_elems; /* the chunk's place in the areas */
        uint64_t t = zap_coll_shm_tag(k, a->chunk);
        if (a->step == 1) {
            zap_coll_shm_copy_but(op, s->big_in + (size_t)s->rank * s->big_bytes, af, a->src, first, es, n, lo, hi,
                                  direct(op));
            atomic_store_explicit(&s->ctl[s->rank].in_seq, t, memory_order_release);
            a->step = 2;
            a->wait = (zap_coll_shm_wait_t){0, 0, 0};
        }
        if (a->step == 2) {
            if ((st = zap_coll_shm_gather(op, &s->ctl[0].in_seq, sizeof(s->ctl[0]), t, true, &a->wait)) != ZAP_OK)
                return st;
            reduce_own_block(op, s, a);
            atomic_store_explicit(&s->ctl[s->rank].red_seq, t, memory_order_release);
            if (direct(op)) /* after publishing it: the others wait for the flag, not for this copy */
                zap_coll_copy(op, (unsigned char *)a->dst + (first + lo) * es, s->big_out + (af + lo) * es,
                              (hi - lo) * es);
            a->step = 3;
            a->wait = (zap_coll_shm_wait_t){0, 0, 0};
        }
        if ((st = zap_coll_shm_gather(op, &s->ctl[0].red_seq, sizeof(s->ctl[0]), t, true, &a->wait)) != ZAP_OK)
            return st;
        zap_coll_shm_copy_but(op, a->dst, first, s->big_out, af, es, n, lo, hi, direct(op));
        if (first + n >= a->count)
            break;
        a->chunk++;
        a->step = 1;
    }
    s->big_done = k;
    atomic_store_explicit(&s->ctl[s->rank].fin_seq, zap_coll_shm_fin(k), memory_order_release);
    return ZAP_OK;
}

static zap_status_t large_progress(zap_coll_op_t *op)
{
    shm_large_t *a = (shm_large_t *)op->alg_state;
    zap_status_t st;
    if (a->step == 0) {
        size_t held = a->count < a->wrap_elems ? a->count : a->wrap_elems;
        if (!zap_coll_large_turn(op, held * zap_dtype_size(a->dt), &st))
            return st;
        a->step = 1;
    }
    return advance(op, a);
}

zap_status_t zap_allreduce_shm_large_init(zap_coll_op_t *op)
{
    zap_coll_shm_t *s = op->comm->shm;
    const zap_coll_args_t *args = &op->args;
    if (s == NULL || s->big_bytes == 0)
        return ZAP_ERR_UNSUPPORTED;
    size_t chunk = zap_coll_shm_sync_chunk(op, op->agreed), es = zap_dtype_size(args->dt);
    if (chunk > s->big_bytes) /* every rank alike: the area's size is rank 0's */
        chunk = s->big_bytes;
    if (es > chunk)
        return ZAP_ERR_UNSUPPORTED;
    shm_large_t *a = (shm_large_t *)op->alg_state;
    a->src = args->src;
    a->dst = args->dst;
    a->count = args->count;
    a->dt = args->dt;
    a->zop = args->op;
    a->step = 0;
    a->chunk = 0;
    a->chunk_elems = chunk / es;
    a->wrap_elems = s->big_bytes / (a->chunk_elems * es) * a->chunk_elems;
    a->wait = (zap_coll_shm_wait_t){0, 0, 0};
    op->progress = large_progress;
    return ZAP_OK;
}
