/* Shared-memory scan and exscan of vectors above a slot (ranks on one host),
 * through the segment's large area: after a header-only agreement, as large
 * exchange k (shm.h),
 *
 *   1. rank r copies its vector into its input area where another rank
 *      reads it there (every rank but the last) or where it reads it there
 *      itself (in place, or device memory), and publishes in_seq = (k, 0);
 *   2. once ranks 0 to r - 1 have published theirs, it combines
 *      ((x0 op x1) op ...) op x(r-1), then (scan) op xr, in rank order, into
 *      recvbuf (exscan: rank 0 leaves recvbuf alone);
 *   3. it publishes fin_seq = k and returns once every rank has, since until
 *      then a higher rank may still read its input area (the next large
 *      exchange may then overwrite it).
 *
 * Rank r reads r vectors of the area, the last rank p - 1 of them: the
 * selection keeps it to up to 4 ranks that share cores and vectors to
 * 256 KiB, where its one wait for the ranks below beats the forms that wait
 * more often (scan_shm_blocks.c, scan_shm_chain.c; scan.c). The same
 * operands in the same order as every other form: the same bytes. */
#include "coll/scan/scan.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include "base/copy.h"
#include <string.h>

typedef struct scan_large {
    zap_coll_shm_exchange_t x;
    bool own_in_area; /* this rank reads its own vector from its input area */
} scan_large_t;
_Static_assert(sizeof(scan_large_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static const unsigned char *input(const zap_coll_shm_t *sh, int q) { return sh->big_in + (size_t)q * sh->big_bytes; }

/* Step 2: the prefix into recvbuf (or scratch copied over, where recvbuf
 * is not host memory). */
static void combine(zap_coll_op_t *op)
{
    const scan_large_t *s = (const scan_large_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    const zap_coll_shm_t *sh = op->comm->shm;
    int r = sh->rank;
    bool exclusive = op->kind == ZAP_COLL_EXSCAN;
    int last = exclusive ? r - 1 : r;
    if (last < 0)
        return;
    unsigned char *out = op->mem == ZAP_MEM_HOST ? (unsigned char *)a->dst : op->scratch.ptr;
    /* The first operand copied, the others combined in place (a reduction
     * into a third buffer measured slower: allreduce_shm_large.c). */
    for (int q = 0; q <= last; q++) {
        const unsigned char *in = q == r && !s->own_in_area ? (const unsigned char *)a->src : input(sh, q);
        if (q == 0)
            zap_copy(out, in, a->bytes);
        else
            zap_reduce_cpu(a->dt, a->op, out, out, in, a->count);
    }
    if (out != a->dst)
        zap_coll_copy(op, a->dst, out, a->bytes);
}

/* Step 1: this rank's vector into its input area, where a rank above reads
 * it there (every rank but the last) or this one does (own_in_area). */
static void copy_in(zap_coll_op_t *op)
{
    const scan_large_t *s = (const scan_large_t *)op->alg_state;
    const zap_coll_shm_t *sh = op->comm->shm;
    if (sh->rank < sh->size - 1 || s->own_in_area)
        zap_coll_copy(op, sh->big_in + (size_t)sh->rank * sh->big_bytes, op->args.src, op->args.bytes);
}

static zap_status_t large_progress(zap_coll_op_t *op)
{
    scan_large_t *s = (scan_large_t *)op->alg_state;
    const zap_coll_shm_t *sh = op->comm->shm;
    uint64_t not_below = zap_coll_shm_all_ranks(sh) & ~((UINT64_C(1) << sh->rank) - 1); /* waits for ranks below only */
    zap_status_t st = zap_coll_shm_exchange(op, &s->x, op->args.bytes, not_below, copy_in, combine);
    return st == ZAP_ERR_NO_MEMORY ? zap_coll_fall_back(op) : st; /* no room for the area: every rank alike */
}

zap_status_t zap_scan_shm_large_init(zap_coll_op_t *op)
{
    zap_coll_shm_t *sh = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    scan_large_t *s = (scan_large_t *)op->alg_state;
    if (sh == NULL || sh->big_bytes == 0 || a->bytes > sh->big_bytes)
        return ZAP_ERR_UNSUPPORTED;
    memset(s, 0, sizeof(*s));
    if (a->count == 0) {
        op->progress = NULL;
        return ZAP_OK;
    }
    /* In place the prefix overwrites the rank's own vector before the last
     * combination reads it; the CPU reads host copies of device memory. */
    s->own_in_area = a->src == a->dst || op->mem == ZAP_MEM_DEVICE;
    zap_status_t st = ZAP_OK;
    if (op->mem != ZAP_MEM_HOST)
        st = zap_coll_scratch(op, &op->scratch, a->bytes);
    if (st != ZAP_OK)
        return st;
    op->progress = large_progress;
    return ZAP_OK; /* the engine adds the header-only agreement */
}
