/* Shared-memory scan and exscan of vectors above a slot (ranks on one host)
 * where each rank owns one block of the vector and folds it across all the
 * ranks, through the segment's large area. After a header-only agreement,
 * as large exchange k (shm.h), chunk by chunk:
 *
 *   1. rank r copies its chunk, but for its own block r (the r-th of p even
 *      element ranges), into its input area, and publishes in_seq = (k, c);
 *   2. once every in_seq holds (k, c): for q = 1 .. p - 1 it replaces block r
 *      of input area q by (block r of area q - 1) op (block r of area q), so
 *      that area q holds the prefix x0 op ... op xq there, folded left to
 *      right in rank order; its own operand is read from its buffer. It
 *      publishes red_seq = (k, c) and copies its own block of its result out;
 *   3. once every red_seq holds (k, c): it copies the rest of its result out
 *      of the area: scan, its own area; exscan, area r - 1 (rank 0 leaves
 *      recvbuf alone).
 *
 * Scan and exscan take host and managed memory, which the CPU reads (device
 * buffers are refused before any algorithm runs, zap_coll_host_stage), so every rank reads its
 * own operand from its buffer.
 *
 * Per rank: (p - 1) n/p bytes in, p - 1 reductions of n/p elements, n out,
 * two waits per chunk; where the form that has rank r reduce the r vectors
 * below it (scan_shm_large.c) costs the last rank p - 1 whole reductions. Each
 * element of each prefix is the same left fold as in every other form: the
 * same bytes.
 *
 * Areas are rewritten only by the next large exchange, which every rank
 * enters after seeing all red_seq of this one's last chunk: by then every
 * owner has written its blocks of all areas, and a rank that reads its own
 * area has done so. Exscan's rank r + 1 reads area r, so before returning,
 * every rank waits for every fin_seq. The chunks keep what all ranks
 * touch at once in cache, as in allreduce_shm_large.c; the vector has to fit
 * the area (no wrap), else the next candidate runs. */
#include "coll/scan/scan.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include "base/copy.h"
#include <string.h>

typedef struct scan_blocks {
    size_t chunk_elems;
    size_t chunk; /* the chunk being moved */
    int step;     /* 0: the turn; 1, 2, 3 as above for the current chunk; 4: exscan's last wait */
    zap_coll_shm_wait_t wait;
} scan_blocks_t;
_Static_assert(sizeof(scan_blocks_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static unsigned char *area(const zap_coll_shm_t *s, int q) { return s->big_in + (size_t)q * s->big_bytes; }

static void chunk_range(const zap_coll_op_t *op, const scan_blocks_t *b, size_t *first, size_t *n)
{
    *first = b->chunk * b->chunk_elems;
    *n = op->args.count - *first < b->chunk_elems ? op->args.count - *first : b->chunk_elems;
}

/* The area this rank's result lies in: its own (scan) or the one below
 * (exscan); -1: rank 0's exscan has none. */
static int result_area(const zap_coll_op_t *op)
{
    int r = op->comm->shm->rank;
    return op->kind == ZAP_COLL_EXSCAN ? r - 1 : r;
}

/* Step 2's fold of this rank's block of the chunk at first (n elements). */
static void fold_own_block(const zap_coll_op_t *op, size_t first, size_t lo, size_t hi)
{
    const zap_coll_shm_t *s = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    size_t es = zap_dtype_size(a->dt), at = (first + lo) * es, len = hi - lo;
    int r = s->rank;
    /* Exscan reads no prefix of the last rank. */
    int last = op->kind == ZAP_COLL_EXSCAN ? s->size - 2 : s->size - 1;
    const unsigned char *own = (const unsigned char *)a->src + at;
    if (r == 0)
        zap_copy(area(s, 0) + at, own, len * es);
    for (int q = 1; q <= last; q++) {
        unsigned char *out = area(s, q) + at;
        zap_reduce_cpu(a->dt, a->op, out, area(s, q - 1) + at, q == r ? own : out, len);
    }
}

static zap_status_t advance(zap_coll_op_t *op, scan_blocks_t *b)
{
    zap_coll_shm_t *s = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    uint64_t k = op->shm_big_seq;
    size_t es = zap_dtype_size(a->dt);
    int from = result_area(op);
    zap_status_t st;
    while (b->step < 4) {
        size_t first, n, lo, hi;
        chunk_range(op, b, &first, &n);
        zap_coll_shm_block(n, s->size, s->rank, &lo, &hi);
        uint64_t t = zap_coll_shm_tag(k, b->chunk);
        if (b->step == 1) {
            zap_coll_shm_copy_but(op, area(s, s->rank), first, a->src, first, es, n, lo, hi, true);
            atomic_store_explicit(&s->ctl[s->rank].in_seq, t, memory_order_release);
            b->step = 2;
            b->wait = (zap_coll_shm_wait_t){0, 0, 0};
        }
        if (b->step == 2) {
            if ((st = zap_coll_shm_gather(op, &s->ctl[0].in_seq, sizeof(s->ctl[0]), t, true, &b->wait)) != ZAP_OK)
                return st;
            if (hi > lo)
                fold_own_block(op, first, lo, hi);
            atomic_store_explicit(&s->ctl[s->rank].red_seq, t, memory_order_release);
            if (from >= 0 && hi > lo) /* after publishing: the others wait for the flag only */
                zap_coll_copy(op, (unsigned char *)a->dst + (first + lo) * es, area(s, from) + (first + lo) * es,
                              (hi - lo) * es);
            b->step = 3;
            b->wait = (zap_coll_shm_wait_t){0, 0, 0};
        }
        if ((st = zap_coll_shm_gather(op, &s->ctl[0].red_seq, sizeof(s->ctl[0]), t, true, &b->wait)) != ZAP_OK)
            return st;
        if (from >= 0)
            zap_coll_shm_copy_but(op, a->dst, first, area(s, from), first, es, n, lo, hi, true);
        if (first + n >= a->count) {
            atomic_store_explicit(&s->ctl[s->rank].fin_seq, zap_coll_shm_fin(k), memory_order_release);
            b->step = 4;
            /* Exscan: rank r + 1 reads this rank's area until it is done;
             * every rank's fin, so that one that died before its own makes
             * every other fail the call alike. */
            b->wait = (zap_coll_shm_wait_t){0, 0, 0};
            break;
        }
        b->chunk++;
        b->step = 1;
    }
    if (op->kind == ZAP_COLL_EXSCAN &&
        (st = zap_coll_shm_gather(op, &s->ctl[0].fin_seq, sizeof(s->ctl[0]), zap_coll_shm_fin(k), true, &b->wait)) !=
            ZAP_OK)
        return st;
    s->big_done = k; /* only now may this rank's next large exchange rewrite its area */
    return ZAP_OK;
}

static zap_status_t blocks_progress(zap_coll_op_t *op)
{
    scan_blocks_t *b = (scan_blocks_t *)op->alg_state;
    zap_status_t st;
    if (b->step == 0) {
        if (!zap_coll_large_turn(op, op->args.bytes, &st))
            return st;
        b->step = 1;
    }
    return advance(op, b);
}

zap_status_t zap_scan_shm_blocks_init(zap_coll_op_t *op)
{
    zap_coll_shm_t *s = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    scan_blocks_t *b = (scan_blocks_t *)op->alg_state;
    if (s == NULL || s->big_bytes == 0 || a->bytes > s->big_bytes)
        return ZAP_ERR_UNSUPPORTED;
    memset(b, 0, sizeof(*b));
    if (a->count == 0) {
        op->progress = NULL;
        return ZAP_OK;
    }
    size_t chunk = zap_coll_shm_sync_chunk(op, op->agreed), es = zap_dtype_size(a->dt);
    if (chunk > s->big_bytes) /* every rank alike: the area's size is rank 0's */
        chunk = s->big_bytes;
    if (es > chunk)
        return ZAP_ERR_UNSUPPORTED;
    b->chunk_elems = chunk / es;
    op->progress = blocks_progress;
    return ZAP_OK; /* the engine adds the header-only agreement */
}
