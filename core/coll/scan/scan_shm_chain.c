/* Shared-memory scan and exscan as a pipelined chain through the segment's
 * large area (ranks on one host). After a header-only agreement, as large
 * exchange k (shm.h), the vector moves in chunks; for chunk c, rank r
 *
 *   1. waits until rank r - 1 has published (k, c) in its in_seq (rank 0
 *      does not wait), and, where chunk c takes the place in the area of
 *      chunk c - w (the area holds w chunks), until rank r + 1 has published
 *      (k, c - w) in its red_seq: it has read that one;
 *   2. writes its prefix of the chunk into its input area, (chunk of area
 *      r - 1) op (its own chunk), rank 0 a copy of its chunk, and publishes
 *      in_seq = (k, c); then copies its result out: scan, the chunk it just
 *      wrote; exscan, the chunk of area r - 1 (rank 0 leaves recvbuf
 *      alone), and publishes red_seq = (k, c). The last rank's prefix is
 *      read by no one: it reduces straight into recvbuf (scan) or only copies
 *      (exscan).
 *
 * After its last chunk a rank publishes fin_seq = k and waits for every
 * rank's: rank r + 1 reads area r until then, and a rank that died before
 * its fin makes every other fail the call alike (one that waited for its
 * neighbour alone could return success on a call the neighbour reports
 * failed).
 *
 * Per rank one reduction of the vector and one copy out, and waits on its
 * two neighbours per chunk: with chunks of n / p (1 to 64 KiB) the last rank
 * finishes about p + p chunk times after the first starts, where the form
 * that owns blocks (scan_shm_blocks.c) has every rank wait for all twice per
 * chunk. The area wraps, so a vector of any size takes this form. Each
 * element of each prefix is ((x0 op x1) op ...) op xr, as in every other
 * form: the same bytes. */
#include "coll/scan/scan.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include "base/copy.h"
#include <string.h>

#define CHUNK_MIN ((size_t)1 << 10)
#define CHUNK_MAX ((size_t)64 << 10)

typedef struct scan_chain {
    size_t chunk_elems;
    size_t wrap;  /* chunks the area holds: chunk c sits at place c mod wrap */
    size_t chunk; /* the chunk being moved */
    int step;     /* 0: the turn; 1: the chunks; 2: waiting for rank r + 1 */
    int waits;    /* of the current chunk, set: 1 the one below, 2 then the one above */
    zap_coll_shm_wait_t wait;
} scan_chain_t;
_Static_assert(sizeof(scan_chain_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static unsigned char *area(const zap_coll_shm_t *s, int q) { return s->big_in + (size_t)q * s->big_bytes; }

/* A wait for rank q's flag alone. */
static zap_coll_shm_wait_t wait_for(const zap_coll_shm_t *s, int q)
{
    return (zap_coll_shm_wait_t){zap_coll_shm_all_ranks(s) & ~(UINT64_C(1) << q), 0, 0};
}

/* Step 2 for the chunk of n elements at first, at place in the areas. */
static void chunk_step(zap_coll_op_t *op, uint64_t tag, size_t first, size_t n, size_t place)
{
    zap_coll_shm_t *s = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    size_t es = zap_dtype_size(a->dt), at = first * es, len = n * es;
    int r = s->rank;
    bool exclusive = op->kind == ZAP_COLL_EXSCAN;
    const unsigned char *src = (const unsigned char *)a->src + at;
    unsigned char *dst = (unsigned char *)a->dst + at;
    const unsigned char *below = r > 0 ? area(s, r - 1) + place : NULL;
    if (r == s->size - 1) { /* nobody reads this rank's prefix */
        if (below == NULL) { /* one rank */
            if (!exclusive && dst != src)
                zap_coll_copy(op, dst, src, len);
            return;
        }
        if (exclusive)
            zap_coll_copy(op, dst, below, len);
        else
            zap_reduce_cpu(a->dt, a->op, dst, below, src, n);
        atomic_store_explicit(&s->ctl[r].red_seq, tag, memory_order_release);
        return;
    }
    unsigned char *mine = area(s, r) + place;
    if (below == NULL)
        zap_copy(mine, src, len);
    else
        zap_reduce_cpu(a->dt, a->op, mine, below, src, n);
    atomic_store_explicit(&s->ctl[r].in_seq, tag, memory_order_release);
    /* After publishing (the next rank waits for the flag only); in place,
     * after the prefix has read this rank's operand. */
    if (exclusive) {
        if (below != NULL)
            zap_coll_copy(op, dst, below, len);
    } else if (dst != src || below != NULL) {
        zap_coll_copy(op, dst, mine, len);
    }
    if (below != NULL) /* area r - 1's chunk read: its place may take another */
        atomic_store_explicit(&s->ctl[r].red_seq, tag, memory_order_release);
}

static zap_status_t advance(zap_coll_op_t *op, scan_chain_t *c)
{
    zap_coll_shm_t *s = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    uint64_t k = op->shm_big_seq;
    int r = s->rank;
    zap_status_t st;
    while (c->step == 1) {
        size_t first = c->chunk * c->chunk_elems;
        size_t n = a->count - first < c->chunk_elems ? a->count - first : c->chunk_elems;
        uint64_t tag = zap_coll_shm_tag(k, c->chunk);
        if (c->waits == 0 && r > 0) {
            c->wait = wait_for(s, r - 1);
            c->waits = 1;
        }
        if (c->waits == 1) {
            if ((st = zap_coll_shm_gather(op, &s->ctl[0].in_seq, sizeof(s->ctl[0]), tag, true, &c->wait)) != ZAP_OK)
                return st;
            c->waits = 0;
        }
        if (c->waits == 0 && c->chunk >= c->wrap && r + 1 < s->size) {
            c->wait = wait_for(s, r + 1);
            c->waits = 2;
        }
        if (c->waits == 2) {
            uint64_t gone = zap_coll_shm_tag(k, c->chunk - c->wrap);
            if ((st = zap_coll_shm_gather(op, &s->ctl[0].red_seq, sizeof(s->ctl[0]), gone, true, &c->wait)) !=
                ZAP_OK)
                return st;
        }
        c->waits = 0;
        chunk_step(op, tag, first, n, c->chunk % c->wrap * c->chunk_elems * zap_dtype_size(a->dt));
        if (first + n >= a->count) {
            atomic_store_explicit(&s->ctl[r].fin_seq, zap_coll_shm_fin(k), memory_order_release);
            c->wait = (zap_coll_shm_wait_t){0, 0, 0};
            c->step = 2;
        } else {
            c->chunk++;
        }
    }
    if ((st = zap_coll_shm_gather(op, &s->ctl[0].fin_seq, sizeof(s->ctl[0]), zap_coll_shm_fin(k), true, &c->wait)) !=
        ZAP_OK)
        return st;
    s->big_done = k; /* only now may this rank's next large exchange rewrite its area */
    return ZAP_OK;
}

static zap_status_t chain_progress(zap_coll_op_t *op)
{
    scan_chain_t *c = (scan_chain_t *)op->alg_state;
    zap_status_t st;
    if (c->step == 0) {
        size_t held = c->wrap * c->chunk_elems * zap_dtype_size(op->args.dt);
        if (!zap_coll_large_turn(op, held < op->args.bytes ? held : op->args.bytes, &st))
            return st;
        c->step = 1;
    }
    return advance(op, c);
}

zap_status_t zap_scan_shm_chain_init(zap_coll_op_t *op)
{
    zap_coll_shm_t *s = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    scan_chain_t *c = (scan_chain_t *)op->alg_state;
    if (s == NULL || s->big_bytes == 0)
        return ZAP_ERR_UNSUPPORTED;
    memset(c, 0, sizeof(*c));
    if (a->count == 0) {
        op->progress = NULL;
        return ZAP_OK;
    }
    size_t es = zap_dtype_size(a->dt), chunk;
    if (op->comm->set.pipeline_bytes != 0) {
        chunk = zap_coll_shm_large_chunk(op, op->agreed); /* the setting, in the header */
    } else {
        /* About p chunks: the pipeline fills in p steps, so more of them only
         * add waits; within what stays in cache and is worth a wait. */
        chunk = a->bytes / (size_t)s->size;
        chunk = chunk < CHUNK_MIN ? CHUNK_MIN : chunk > CHUNK_MAX ? CHUNK_MAX : chunk;
    }
    if (chunk > s->big_bytes) /* every rank alike: the area's size is rank 0's */
        chunk = s->big_bytes;
    if (es > chunk)
        return ZAP_ERR_UNSUPPORTED;
    c->chunk_elems = chunk / es;
    c->wrap = s->big_bytes / (c->chunk_elems * es);
    if ((a->count - 1) / c->chunk_elems >= 0xfffffe) /* beyond the flags' chunk numbers (shm.h) */
        return ZAP_ERR_UNSUPPORTED;
    op->progress = chain_progress;
    return ZAP_OK; /* the engine adds the header-only agreement */
}
