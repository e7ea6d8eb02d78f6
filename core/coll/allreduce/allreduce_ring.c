/* Ring allreduce: a ring reduce-scatter followed by a ring allgather
 * (Patarasuk & Yuan 2009), the vector split into p nearly equal blocks.
 *
 * Reduce-scatter step s (0 <= s < p-1): send block (r - s) mod p to the right
 * neighbour, receive block (r - s - 1) mod p from the left one and combine it
 * into the local copy. After p-1 steps rank r owns block (r + 1) mod p fully
 * reduced. Allgather step s: send block (r + 1 - s) mod p, receive block
 * (r - s) mod p straight into the result.
 *
 * Pipelining: a block larger than ZAP_COLL_PIPELINE_BYTES moves in segments;
 * each step keeps two segments in flight (double-buffered scratch) and
 * combines one while the next arrives, so the scratch is two segments, not a
 * block, and reduction overlaps the transfer.
 *
 * Reduction order: block b accumulates along the ring starting at rank b+1:
 * ((x[b+1] op x[b+2]) op ...) op x[b], the incoming partial always on the
 * left. Each element is computed on one rank and copied to the others, so all
 * ranks hold identical bytes. Cost: 2(p-1) rounds, 2 (p-1)/p n bytes sent per
 * rank; best for large vectors (the round count grows with p). */
#include "coll/allreduce/allreduce.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include "coll/patterns/patterns.h"
#include <string.h>

#define PHASE_RS 1
#define PHASE_AG 2
#define RING_SEG (128 * 1024)

typedef enum ring_state { RING_START, RING_RS_POST, RING_RS_WAIT, RING_AG_POST, RING_AG_WAIT, RING_DONE } ring_state_t;

typedef struct ring {
    ring_state_t state;
    const void *src;
    char *buf;
    char *tmp[2];
    size_t count, esize, seg_elems;
    zap_dtype_t dt;
    zap_op_t op;
    int step;        /* 0 .. p-2 within the phase */
    size_t seg;      /* segment of the current step being received */
    size_t nseg;     /* segments in the current step (of the larger of the two blocks) */
    size_t prev_seg; /* a segment received and not yet combined, or SIZE_MAX */
} ring_t;
_Static_assert(sizeof(ring_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static size_t blk_off(const ring_t *s, int p, int b) { return zap_pat_block_disp(s->count, (size_t)p, (size_t)b); }
static size_t blk_cnt(const ring_t *s, int p, int b) { return zap_pat_block_count(s->count, (size_t)p, (size_t)b); }

/* Segment j of block b: [off, off+cnt) in elements, cnt 0 past the end. */
static void seg_range(const ring_t *s, int p, int b, size_t j, size_t *off_p, size_t *cnt_p)
{
    size_t bc = blk_cnt(s, p, b), start = j * s->seg_elems;
    *off_p = blk_off(s, p, b) + (start < bc ? start : bc);
    *cnt_p = start < bc ? (bc - start < s->seg_elems ? bc - start : s->seg_elems) : 0;
}

/* Segments block b travels in (at least one, so an empty block is still one
 * zero-length message and both ends count the same). */
static size_t bsegs(const ring_t *s, int p, int b)
{
    size_t n = (blk_cnt(s, p, b) + s->seg_elems - 1) / s->seg_elems;
    return n == 0 ? 1 : n;
}

static size_t nsegs(const ring_t *s, int p, int b1, int b2)
{
    size_t a = bsegs(s, p, b1), b = bsegs(s, p, b2);
    return a > b ? a : b;
}

/* Posts segment seg of reduce-scatter step: our send of block sb (if it has
 * that many segments) and the receive of block rb into tmp[seg & 1]. */
static zap_status_t post_seg(zap_coll_op_t *op, ring_t *s, int p, int left, int right)
{
    int r = op->comm->rank;
    int sb = zap_pat_mod((long)r - s->step, p), rb = zap_pat_mod((long)r - s->step - 1, p);
    int tag = (int)((s->step * 2 + (int)(s->seg & 1)) & ZAP_COLL_STEP_MAX);
    zap_status_t st;
    if (s->seg < bsegs(s, p, rb)) {
        size_t ro, rc;
        seg_range(s, p, rb, s->seg, &ro, &rc);
        if ((st = zap_coll_recv(op, left, PHASE_RS, tag, s->tmp[s->seg & 1], rc * s->esize, NULL, NULL)) != ZAP_OK)
            return st;
    }
    if (s->seg < bsegs(s, p, sb)) {
        size_t so, sc;
        seg_range(s, p, sb, s->seg, &so, &sc);
        if ((st = zap_coll_send(op, right, PHASE_RS, tag, s->buf + so * s->esize, sc * s->esize)) != ZAP_OK)
            return st;
    }
    return ZAP_OK;
}

static zap_status_t ring_progress(zap_coll_op_t *op)
{
    ring_t *s = (ring_t *)op->alg_state;
    int r = op->comm->rank, p = op->comm->size;
    int right = zap_pat_mod(r + 1, p), left = zap_pat_mod(r - 1, p);
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case RING_START:
            zap_coll_copy(op, s->buf, s->src, s->count * s->esize);
            if (p == 1) {
                s->state = RING_DONE;
                break;
            }
            s->step = 0;
            s->seg = 0;
            s->nseg = nsegs(s, p, zap_pat_mod(r - 0, p), zap_pat_mod(r - 1, p));
            s->state = RING_RS_POST;
            break;
        case RING_RS_POST:
            if ((st = post_seg(op, s, p, left, right)) != ZAP_OK)
                return st;
            s->state = RING_RS_WAIT;
            break;
        case RING_RS_WAIT: {
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            int rb = zap_pat_mod((long)r - s->step - 1, p);
            size_t ro, rc;
            seg_range(s, p, rb, s->seg, &ro, &rc);
            size_t done_seg = s->seg;
            /* Post the next segment before combining this one, so the transfer
             * overlaps the reduction (the next lands in the other buffer). */
            s->seg++;
            bool more = s->seg < s->nseg;
            if (more && (st = post_seg(op, s, p, left, right)) != ZAP_OK)
                return st;
            char *mine = s->buf + ro * s->esize;
            st = zap_coll_reduce(op, s->dt, s->op, mine, s->tmp[done_seg & 1], mine, rc);
            if (st != ZAP_OK)
                return st;
            if (more)
                return ZAP_INPROGRESS;
            s->step++;
            s->seg = 0;
            if (s->step < p - 1) {
                s->nseg = nsegs(s, p, zap_pat_mod((long)r - s->step, p), zap_pat_mod((long)r - s->step - 1, p));
                s->state = RING_RS_POST;
            } else {
                s->step = 0;
                s->state = RING_AG_POST;
            }
            break;
        }
        case RING_AG_POST: {
            if (s->step >= p - 1) {
                s->state = RING_DONE;
                break;
            }
            /* The allgather needs no combining: whole blocks, straight into place. */
            int sb = zap_pat_mod((long)r + 1 - s->step, p), rb = zap_pat_mod((long)r - s->step, p);
            if ((st = zap_coll_recv(op, left, PHASE_AG, s->step, s->buf + blk_off(s, p, rb) * s->esize,
                                    blk_cnt(s, p, rb) * s->esize, NULL, NULL)) != ZAP_OK ||
                (st = zap_coll_send(op, right, PHASE_AG, s->step, s->buf + blk_off(s, p, sb) * s->esize,
                                    blk_cnt(s, p, sb) * s->esize)) != ZAP_OK)
                return st;
            s->state = RING_AG_WAIT;
            break;
        }
        case RING_AG_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->step++;
            s->state = RING_AG_POST;
            break;
        case RING_DONE:
            return ZAP_OK;
        }
    }
}

zap_status_t zap_allreduce_ring_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    ring_t *s = (ring_t *)op->alg_state;
    int p = op->comm->size;
    memset(s, 0, sizeof(*s));
    s->state = RING_START;
    s->src = a->src;
    s->buf = a->dst;
    s->count = a->count;
    s->esize = zap_dtype_size(a->dt);
    s->dt = a->dt;
    s->op = a->op;
    size_t maxblk = (s->count + (size_t)p - 1) / (size_t)p;
    /* 128 KiB segments unless the pipeline setting says otherwise
     * (docs/collectives.md, "Selection"). */
    s->seg_elems = zap_coll_segment_bytes(op->comm, maxblk * s->esize, 1, RING_SEG, RING_SEG) / s->esize;
    if (s->seg_elems == 0)
        s->seg_elems = 1;
    size_t seg = maxblk < s->seg_elems ? maxblk : s->seg_elems;
    zap_status_t st = zap_coll_scratch(op, &op->scratch, p > 1 ? 2 * seg * s->esize : 0);
    if (st != ZAP_OK)
        return st;
    s->tmp[0] = op->scratch.ptr;
    s->tmp[1] = op->scratch.ptr ? (char *)op->scratch.ptr + seg * s->esize : NULL;
    op->progress = ring_progress;
    return ZAP_OK;
}
