/* Linear (chain) scan and exscan: rank r receives the prefix of ranks
 * 0 .. r-1 from r - 1, combines its own vector into it and passes the result
 * to r + 1, segment by segment, so the chain pipelines: in step j a rank
 * receives segment j while it sends segment j - 1. About p - 1 + k segment
 * times for k segments (n/16 each, 16 KiB to 256 KiB, or the pipeline
 * setting): every rank sends and receives n bytes once, against recursive
 * doubling's n bytes in each of log2(p) rounds; chosen for large vectors.
 *
 * Rank r's scan result is prefix(r-1) op x_r, the prefix on the left: rank
 * order, ((x0 op x1) op x2) ... strictly left to right, for every op. Exscan
 * gives rank r prefix(r-1) and leaves rank 0's recvbuf as it was. */
#include "coll/scan/scan.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include <string.h>

#define PHASE 1

typedef enum lc_state { LC_POST, LC_WAIT, LC_DONE } lc_state_t;

typedef struct lc {
    lc_state_t state;
    char *in;  /* the prefix of the ranks below (scratch) */
    char *out; /* exscan: what goes up (scratch); scan: recvbuf */
    size_t es, seg_elems, nseg, j;
    bool exclusive;
} lc_t;
_Static_assert(sizeof(lc_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static void seg(const zap_coll_args_t *a, const lc_t *s, size_t j, size_t *first, size_t *n)
{
    *first = j * s->seg_elems;
    *n = *first >= a->count ? 0 : a->count - *first < s->seg_elems ? a->count - *first : s->seg_elems;
}

/* What rank r sends up for segment j: its own vector on rank 0. */
static const char *up(const zap_coll_op_t *op, const lc_t *s, size_t first)
{
    const char *base = op->comm->rank == 0 ? op->args.src : s->out;
    return base + first * s->es;
}

static zap_status_t lc_progress(zap_coll_op_t *op)
{
    lc_t *s = (lc_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    int r = op->comm->rank, p = op->comm->size;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case LC_POST: {
            if (s->j > s->nseg) {
                s->state = LC_DONE;
                break;
            }
            size_t first, n;
            int tag = (int)(s->j & ZAP_COLL_STEP_MAX);
            if (s->j < s->nseg && r > 0) {
                seg(a, s, s->j, &first, &n);
                if ((st = zap_coll_recv(op, r - 1, PHASE, tag, s->in + first * s->es, n * s->es, NULL, NULL)) !=
                    ZAP_OK)
                    return st;
            }
            if (s->j > 0 && r < p - 1) { /* the segment before this one goes up */
                seg(a, s, s->j - 1, &first, &n);
                if ((st = zap_coll_send(op, r + 1, PHASE, (int)((s->j - 1) & ZAP_COLL_STEP_MAX), up(op, s, first),
                                        n * s->es)) != ZAP_OK)
                    return st;
            }
            s->state = LC_WAIT;
            break;
        }
        case LC_WAIT: {
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if (s->j < s->nseg) {
                size_t first, n;
                seg(a, s, s->j, &first, &n);
                size_t at = first * s->es;
                if (r == 0) {
                    if (!s->exclusive) /* rank 0's scan is its own vector */
                        zap_coll_copy(op, (char *)a->dst + at, a->src + at, n * s->es);
                } else {
                    /* out = in op x; exscan's result is in itself (after out:
                     * in place, x is recvbuf) */
                    st = zap_coll_reduce(op, a->dt, a->op, s->out + at, s->in + at, a->src + at, n);
                    if (st != ZAP_OK)
                        return st;
                    if (s->exclusive)
                        zap_coll_copy(op, (char *)a->dst + at, s->in + at, n * s->es);
                }
            }
            s->j++;
            s->state = LC_POST;
            break;
        }
        case LC_DONE:
            return ZAP_OK;
        }
    }
}

zap_status_t zap_scan_linear_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    lc_t *s = (lc_t *)op->alg_state;
    int r = op->comm->rank;
    memset(s, 0, sizeof(*s));
    s->exclusive = op->kind == ZAP_COLL_EXSCAN;
    if (a->bytes == 0 || (op->comm->size == 1 && s->exclusive)) {
        op->progress = NULL;
        return ZAP_OK;
    }
    s->es = zap_dtype_size(a->dt);
    size_t seg_bytes = zap_coll_segment_bytes(op->comm, a->bytes, 16, (size_t)16 << 10, (size_t)256 << 10);
    s->seg_elems = seg_bytes / s->es > 0 ? seg_bytes / s->es : 1;
    s->nseg = (a->count + s->seg_elems - 1) / s->seg_elems;
    if (r > 0) {
        zap_status_t st = zap_coll_scratch(op, &op->scratch, a->bytes * (s->exclusive ? 2 : 1));
        if (st != ZAP_OK)
            return st;
        s->in = op->scratch.ptr;
        s->out = s->exclusive ? s->in + a->bytes : a->dst;
    }
    s->state = LC_POST;
    op->progress = lc_progress;
    return ZAP_OK;
}
