/* Shared-memory gather of blocks above a slot and up to 512 KiB (ranks on
 * one host, gather only), where single-copy reads are dear on this host (the
 * segment's probe, agreed at attach: shm.h) and the blocks together fit the
 * segment's large area (or wherever they fit when ZAP_GATHER_ALG=shm forces
 * the form). Below a slot the blocks ride the slots (gather_shm.c);
 * elsewhere they go over the transport (gather_linear.c), whose single-copy
 * protocol such a host makes slow.
 *
 * After the header-only agreement, as large exchange k (numbered and
 * ordered as the broadcast's large form, whose area and flags it shares:
 * shm.h):
 *
 *   each other rank: once every rank's fin_seq says it is done with exchange
 *         k - 1, copy its block into the result area at its rank's place,
 *         publish in_seq = zap_coll_shm_tag(k, 0) and fin_seq; done;
 *   root: copy its own block (unless in place), then each rank's out of the
 *         area as its in_seq says it is there; publish fin_seq.
 *
 * One copy in and one out per byte, no system call, and the contributors do
 * not wait for the root: the next large exchange's writers do, before they
 * overwrite the area. A dead contributor is named by pid while the root
 * waits for it; a dead root by the next large exchange. When /dev/shm has no
 * room for the area to grow, every rank sees it alike and the call falls
 * back to the next candidate (linear). */
#include "coll/gather/gather.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/shm/shm.h"
#include <string.h>

typedef struct ga_copy {
    size_t blk;
    int step; /* 0: waiting for the turn, 1: the previous exchange's readers (contributors), 2: moving */
    int next; /* the root's next rank to copy out */
    zap_coll_shm_wait_t wait;
} ga_copy_t;
_Static_assert(sizeof(ga_copy_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

/* Larger blocks leave the caches between the two copies, and the transport's
 * single copy, dear as it is, wins again (on 2 ranks; on 4 the 1 MiB blocks
 * measured either way: docs/performance.md, "Gather through the large
 * area"). */
#define COPY_BLOCK_MAX ((size_t)512 << 10)

bool zap_gather_shm_copies(const zap_coll_shm_t *s, size_t blk, bool forced)
{
    return (s->cma_slow || forced) && s->big_bytes != 0 && blk <= COPY_BLOCK_MAX &&
           blk <= s->big_bytes / (size_t)s->size;
}

static zap_status_t copy_progress(zap_coll_op_t *op)
{
    ga_copy_t *c = (ga_copy_t *)op->alg_state;
    zap_coll_shm_t *s = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    int r = s->rank, p = s->size;
    bool root = r == a->root;
    zap_status_t st;
    if (c->step == 0) {
        if (!zap_coll_large_turn(op, c->blk * (size_t)p, &st))
            return st;
        c->step = root ? 2 : 1;
        c->wait = (zap_coll_shm_wait_t){0, 0, 0};
        c->next = 0;
    }
    uint64_t k = op->shm_big_seq;
    if (c->step == 1) {
        /* Every rank done with the previous exchange's area (none before the first). */
        if (k > 1 && (st = zap_coll_shm_gather(op, &s->ctl[0].fin_seq, sizeof(s->ctl[0]), zap_coll_shm_fin(k - 1),
                                               true, &c->wait)) != ZAP_OK)
            return st;
        zap_coll_copy(op, s->big_out + (size_t)r * c->blk, a->src, c->blk);
        atomic_store_explicit(&s->ctl[r].in_seq, zap_coll_shm_tag(k, 0), memory_order_release);
    } else {
        if (c->next == 0 && a->src != NULL) /* not in place: its own block */
            zap_coll_copy(op, (char *)a->dst + (size_t)r * c->blk, a->src, c->blk);
        for (; c->next < p; c->next++) {
            int q = c->next;
            if (q == r)
                continue;
            uint64_t others = zap_coll_shm_all_ranks(s) & ~(UINT64_C(1) << q);
            if (c->wait.seen != others)
                c->wait = (zap_coll_shm_wait_t){others, 0, 0};
            if ((st = zap_coll_shm_gather(op, &s->ctl[0].in_seq, sizeof(s->ctl[0]), zap_coll_shm_tag(k, 0), true,
                                          &c->wait)) != ZAP_OK)
                return st;
            zap_coll_copy(op, (char *)a->dst + (size_t)q * c->blk, s->big_out + (size_t)q * c->blk, c->blk);
        }
    }
    s->big_done = k;
    atomic_store_explicit(&s->ctl[r].fin_seq, zap_coll_shm_fin(k), memory_order_release);
    return ZAP_OK;
}

zap_status_t zap_gather_shm_copy_init(zap_coll_op_t *op)
{
    ga_copy_t *c = (ga_copy_t *)op->alg_state;
    memset(c, 0, sizeof(*c));
    c->blk = op->args.fixed * zap_dtype_size(op->args.dt);
    op->progress = copy_progress;
    return ZAP_OK; /* the engine adds the header-only agreement */
}
