/* Shared-memory scatter(v) of mid-size totals (ranks on one host): the
 * blocks together exceed what the root's slot carries but fit the segment's
 * large area and stay at or below ZAP_SCATTER_SHM_COPY_MAX bytes
 * (zap_scatter_shm_copies). Below, the blocks ride the root's slot
 * (scatter_shm.c); above, each rank reads its block straight from the root's
 * sendbuf (single copy), whose fixed cost (a large exchange turn, a system
 * call per rank and the root waiting for every reader) is what a small block
 * cannot amortise, and whose reads of one sendbuf by many ranks at once do
 * not run side by side as well as plain copies.
 *
 * After the agreement (a header-only one for scatter, whose total every rank
 * knows from the agreed count; for scatterv the root's table, which carries
 * the total and where each rank's block lies), as large exchange k (numbered
 * and ordered as the broadcast's large form, whose area and flags it shares:
 * shm.h):
 *
 *   root: once every rank's fin_seq says it is done with exchange k - 1,
 *         copy the blocks into the result area, packed in rank order (a
 *         scatter's sendbuf already is), in pieces of PIECE bytes, and after
 *         each piece publish in its in_seq how far the area is filled (in
 *         units of UNIT bytes: zap_coll_shm_tag(k, units)); copy its own
 *         block; publish fin_seq; done;
 *   each other rank: once the root's in_seq says its block is in, copy it
 *         out; publish fin_seq.
 *
 * So a rank whose block comes early starts copying while the root still
 * fills the rest: the last block waits for the root's copy of the whole
 * total, the others less. One copy in and one out per byte, no system call,
 * and the root does not wait for its readers: the next large exchange's root
 * does, before it overwrites the area. A dead root is named by pid while its
 * readers wait; a dead reader by the next large exchange. When /dev/shm has
 * no room for the area to grow, every rank sees it alike (all pass the same
 * total) and the call falls back to the next candidate (linear). A scatter's
 * root leaves its own block out of the area (no one reads it there) and
 * copies it from its sendbuf, so a recvbuf that is its block of sendbuf (in
 * place) is left as it is. */
#include "coll/scatter/scatter.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/shm/shm.h"
#include <string.h>

/* The root publishes its progress after each piece; readers wait for whole
 * units (zap_coll_shm_tag's chunk index holds up to 2^24 - 2 of them). */
#define PIECE ((size_t)32 << 10)
#define UNIT ((size_t)4096)
_Static_assert(ZAP_SCATTER_SHM_COPY_MAX / UNIT < (1u << 24) - 1, "the progress fits a flag's chunk index");

typedef struct sc_copy {
    size_t total;     /* the blocks, packed in rank order */
    size_t at, bytes; /* this rank's block in the area */
    int step;         /* 0: waiting for the turn, 1: moving */
    zap_coll_shm_wait_t wait;
} sc_copy_t;
_Static_assert(sizeof(sc_copy_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

bool zap_scatter_shm_copies(const zap_coll_shm_t *s, size_t total)
{
    return total <= zap_scatter_shm_copy_max(s->size) && s->big_bytes != 0 && total <= s->big_bytes;
}

/* Publishes that the area holds its first units * UNIT bytes (the last
 * unit may end at the total). */
static void publish(zap_coll_shm_t *s, uint64_t k, size_t units)
{
    atomic_store_explicit(&s->ctl[s->rank].in_seq, zap_coll_shm_tag(k, units), memory_order_release);
}

/* The units that hold the first bytes bytes of the area. */
static size_t units_to(size_t bytes) { return (bytes + UNIT - 1) / UNIT; }

/* n bytes from src into the area at off, publishing after each piece. */
static void fill(zap_coll_op_t *op, uint64_t k, size_t off, const unsigned char *src, size_t n)
{
    zap_coll_shm_t *s = op->comm->shm;
    while (n > 0) {
        size_t m = n < PIECE - off % PIECE ? n : PIECE - off % PIECE;
        zap_coll_copy(op, s->big_out + off, src, m);
        off += m, src += m, n -= m;
        if (off % PIECE == 0) /* whole units only: a reader never sees one the root is still writing */
            publish(s, k, off / UNIT);
    }
}

/* The root's blocks into the area in rank order, its own left out of a
 * scatter's (scatterv's root copied its own with the table, and its block
 * there may be read by no one but still keeps the packed offsets). */
static void pack(zap_coll_op_t *op, uint64_t k, size_t total, size_t own_at, size_t own_bytes)
{
    const zap_coll_args_t *a = &op->args;
    zap_coll_shm_t *s = op->comm->shm;
    size_t es = zap_dtype_size(a->dt);
    if (a->counts == NULL) {
        const unsigned char *src = a->src;
        fill(op, k, 0, src, own_at);
        fill(op, k, own_at + own_bytes, src + own_at + own_bytes, total - own_at - own_bytes);
    } else {
        size_t off = 0;
        for (int q = 0; q < op->comm->size; q++) {
            size_t n = a->counts[q] * es;
            fill(op, k, off, (const unsigned char *)a->src + a->displs[q] * (ptrdiff_t)es, n);
            off += n;
        }
    }
    publish(s, k, units_to(total)); /* the last partial unit too */
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
        pack(op, k, c->total, c->at, a->counts == NULL ? c->bytes : 0);
        if (a->counts == NULL) /* scatterv's root copied its own with the table (scatter_shm.c) */
            zap_coll_copy(op, a->dst, (const unsigned char *)a->src + c->at, c->bytes);
    } else {
        uint64_t in = zap_coll_shm_tag(k, units_to(c->at + c->bytes));
        if ((st = zap_coll_shm_gather(op, &s->ctl[0].in_seq, sizeof(s->ctl[0]), in, true, &c->wait)) != ZAP_OK)
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
