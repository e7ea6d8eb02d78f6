/* Shared-memory scatter(v) of mid-size totals (ranks on one host): the
 * blocks together exceed what the root's slot carries but fit the segment's
 * large area and stay at or below ZAP_SCATTER_SHM_COPY_MAX bytes
 * (zap_scatter_shm_copies). Below, the blocks ride the root's slot
 * (scatter_shm.c); above, each rank reads its block straight from the root's
 * sendbuf (single copy), whose fixed cost (a large exchange turn, a system
 * call per rank and the root waiting for every reader) is what a small block
 * cannot amortise.
 *
 * After the agreement (a header-only one for scatter, whose total every rank
 * knows from the agreed count; for scatterv the root's table, which carries
 * the total and where each rank's block lies), as large exchange k (numbered
 * and ordered as the broadcast's large form, whose area and flags it shares:
 * shm.h):
 *
 *   root: once every rank's fin_seq says it is done with exchange k - 1,
 *         copy the blocks into the result area, packed in rank order (a
 *         scatter's sendbuf already is), publish in_seq, copy its own block;
 *         publish fin_seq; done;
 *   each other rank: once the root's in_seq holds k, copy its block out;
 *         publish fin_seq.
 *
 * One copy in and one out per byte, no system call, and the root does not
 * wait for its readers: the next large exchange's root does, before it
 * overwrites the area. The total is at most one chunk of the large forms
 * (what all ranks touch at once stays in cache), so it moves in one piece. A
 * dead root is named by pid while its readers wait; a dead reader by the
 * next large exchange. When /dev/shm has no room for the area to grow, every
 * rank sees it alike (all pass the same total) and the call falls back to
 * the next candidate (linear). The root's own block is copied from its
 * sendbuf, so a recvbuf that is its block of sendbuf (in place) is left as
 * it is. */
#include "coll/scatter/scatter.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/shm/shm.h"
#include <string.h>

_Static_assert(ZAP_SCATTER_SHM_COPY_MAX <= ZAP_COLL_SHM_CHUNK_BYTES, "the copy form moves its total in one piece");

typedef struct sc_copy {
    size_t total;     /* the blocks, packed in rank order */
    size_t at, bytes; /* this rank's block in the area */
    int step;         /* 0: waiting for the turn, 1: moving */
    zap_coll_shm_wait_t wait;
} sc_copy_t;
_Static_assert(sizeof(sc_copy_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

bool zap_scatter_shm_copies(const zap_coll_shm_t *s, size_t total)
{
    return total <= ZAP_SCATTER_SHM_COPY_MAX && s->big_bytes != 0 && total <= s->big_bytes;
}

/* The root's blocks into the area in rank order. */
static void pack(zap_coll_op_t *op, unsigned char *to, size_t total)
{
    const zap_coll_args_t *a = &op->args;
    size_t es = zap_dtype_size(a->dt);
    if (a->counts == NULL) {
        zap_coll_copy(op, to, a->src, total);
        return;
    }
    for (int q = 0; q < op->comm->size; q++) {
        size_t n = a->counts[q] * es;
        zap_coll_copy(op, to, (const char *)a->src + a->displs[q] * (ptrdiff_t)es, n);
        to += n;
    }
}

static zap_status_t copy_progress(zap_coll_op_t *op)
{
    sc_copy_t *c = (sc_copy_t *)op->alg_state;
    zap_coll_shm_t *s = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    int r = s->rank;
    bool root = r == a->root;
    zap_status_t st;
    if (c->step == 0) {
        if (!zap_coll_large_turn(op, c->total, &st))
            return st;
        c->step = 1;
        c->wait = (zap_coll_shm_wait_t){root ? 0 : zap_coll_shm_all_ranks(s) & ~(UINT64_C(1) << a->root), 0, 0};
    }
    uint64_t k = op->shm_big_seq;
    if (root) {
        /* Every rank done with the previous exchange's area and flags (none
         * before the first). */
        if (k > 1 && (st = zap_coll_shm_gather(op, &s->ctl[0].fin_seq, sizeof(s->ctl[0]), zap_coll_shm_fin(k - 1),
                                               true, &c->wait)) != ZAP_OK)
            return st;
        pack(op, s->big_out, c->total);
        atomic_store_explicit(&s->ctl[r].in_seq, zap_coll_shm_tag(k, 0), memory_order_release);
        if (a->counts == NULL) /* scatterv's root copied its own with the table (scatter_shm.c) */
            zap_coll_copy(op, a->dst, (const unsigned char *)a->src + c->at, c->bytes);
    } else {
        if ((st = zap_coll_shm_gather(op, &s->ctl[0].in_seq, sizeof(s->ctl[0]), zap_coll_shm_tag(k, 0), true,
                                      &c->wait)) != ZAP_OK)
            return st;
        zap_coll_copy(op, a->dst, s->big_out + c->at, c->bytes);
    }
    s->big_done = k;
    atomic_store_explicit(&s->ctl[r].fin_seq, zap_coll_shm_fin(k), memory_order_release);
    return ZAP_OK;
}

void zap_scatter_shm_copy_start(zap_coll_op_t *op, size_t total, size_t at, size_t bytes)
{
    sc_copy_t *c = (sc_copy_t *)op->alg_state;
    memset(c, 0, sizeof(*c));
    c->total = total;
    c->at = at;
    c->bytes = bytes;
    op->progress = copy_progress;
}

zap_status_t zap_scatter_shm_copy_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    size_t blk = a->fixed * zap_dtype_size(a->dt);
    zap_scatter_shm_copy_start(op, blk * (size_t)op->comm->size, blk * (size_t)op->comm->rank, blk);
    return ZAP_OK; /* the engine adds the header-only agreement */
}
