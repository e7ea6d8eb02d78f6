/* Shared-memory reduce, for communicators whose ranks are processes on one
 * host (coll/shm/shm.h).
 *
 * Up to a slot (ZAP_COLL_SHM_PAYLOAD bytes) the vector rides the agreement:
 * every rank publishes its vector in its slot and reduces the p of them in
 * rank order, as the shared-memory allreduce does (agree/agree_shm.c); the
 * root copies the result out. One cache line written and p - 1 read at 8
 * bytes, no message.
 *
 * Larger vectors, up to the segment's large area, move through it as large
 * exchange k in chunks (128 KiB, 1 MiB where the node is oversubscribed, or
 * the pipeline setting: zap_coll_shm_sync_chunk), each in three
 * steps as the large allreduce's (allreduce_shm_large.c), whose area, flags
 * and order this shares:
 *   1. copy this rank's chunk, but for its own block r of it (the r-th of p
 *      even element ranges), into its input area, publish in_seq;
 *   2. once every in_seq holds it: reduce block r over the p inputs in rank
 *      order, (c0 op c1) op ... op c(p-1), its own operand read from its
 *      input buffer (no other rank reads it), into the result area; publish
 *      red_seq;
 *   3. once every red_seq holds it: the root copies the chunk out (not in
 *      place, the root reduced its own block into recvbuf in step 2, and
 *      copies only the others').
 * Every rank waits in step 3, so none overwrites its input for the next call
 * while another still reads it; only the root copies. Against the binomial
 * tree's log2(p) rounds of whole vectors, every rank reduces n/p and the
 * root alone moves the result. Rank order for every op; each element is
 * computed once. Device buffers (a host copy's bytes through zap_coll_copy)
 * go whole through the input area, since the reduction reads host memory
 * only. */
#include "coll/reduce_coll/reduce_coll.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include "base/copy.h"
#include <string.h>

typedef struct shm_reduce {
    const char *src;
    char *dst;
    size_t count, chunk_elems, chunk;
    zap_dtype_t dt;
    zap_op_t zop;
    int root, step;
    zap_coll_shm_wait_t wait;
} shm_reduce_t;
_Static_assert(sizeof(shm_reduce_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

/* --- up to a slot: the agreement carries it -------------------------------- */

static zap_status_t small_finish(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    if (op->comm->rank == a->root)
        zap_coll_copy(op, a->dst, zap_coll_agree_result(op), a->bytes);
    return ZAP_OK;
}

/* --- the large area ---------------------------------------------------------- */

static void chunk_range(const shm_reduce_t *s, size_t *first, size_t *n)
{
    *first = s->chunk * s->chunk_elems;
    *n = s->count - *first < s->chunk_elems ? s->count - *first : s->chunk_elems;
}

/* Whether this rank reads its own operand from its input buffer (every
 * memory kind but device). */
static bool direct(const zap_coll_op_t *op) { return op->mem != ZAP_MEM_DEVICE; }

/* Whether the root reduces its own block straight into recvbuf, so that it
 * copies only the others' blocks out (not in place: there its block of
 * recvbuf is its operand). */
static bool root_direct(const zap_coll_op_t *op, const shm_reduce_t *s)
{
    return direct(op) && op->comm->shm->rank == s->root && s->src != s->dst;
}

static void reduce_own_block(const zap_coll_op_t *op, zap_coll_shm_t *sh, const shm_reduce_t *s)
{
    size_t es = zap_dtype_size(s->dt), first, n, lo, hi;
    chunk_range(s, &first, &n);
    zap_coll_shm_block(n, sh->size, sh->rank, &lo, &hi);
    if (hi == lo)
        return;
    size_t at = (first + lo) * es;
    unsigned char *out = root_direct(op, s) ? (unsigned char *)s->dst + at : sh->big_out + at;
    const unsigned char *own = direct(op) ? (const unsigned char *)s->src + at
                                          : sh->big_in + (size_t)sh->rank * sh->big_bytes + at;
    for (int q = 0; q < sh->size; q++) {
        const unsigned char *in = q == sh->rank ? own : sh->big_in + (size_t)q * sh->big_bytes + at;
        /* The first operand copied, the others combined in place: a
         * reduction of two operands into a third buffer measured slower. */
        if (q == 0)
            zap_copy(out, in, (hi - lo) * es);
        else
            zap_reduce_cpu(s->dt, s->zop, out, out, in, hi - lo);
    }
}

static zap_status_t large_progress(zap_coll_op_t *op)
{
    shm_reduce_t *s = (shm_reduce_t *)op->alg_state;
    zap_coll_shm_t *sh = op->comm->shm;
    size_t es = zap_dtype_size(s->dt);
    zap_status_t st;
    if (s->step == 0) {
        if (!zap_coll_large_turn(op, s->count * es, &st))
            return st;
        s->step = 1;
    }
    uint64_t k = op->shm_big_seq;
    for (;;) {
        size_t first, n;
        chunk_range(s, &first, &n);
        size_t lo, hi; /* the block of the chunk this rank reduces */
        zap_coll_shm_block(n, sh->size, sh->rank, &lo, &hi);
        uint64_t t = zap_coll_shm_tag(k, s->chunk);
        if (s->step == 1) {
            /* The block this rank reduces itself is not copied where direct. */
            zap_coll_shm_copy_but(op, sh->big_in + (size_t)sh->rank * sh->big_bytes, first,
                                  (const unsigned char *)s->src, first, es, n, lo, hi, direct(op));
            atomic_store_explicit(&sh->ctl[sh->rank].in_seq, t, memory_order_release);
            s->step = 2;
            s->wait = (zap_coll_shm_wait_t){0, 0, 0};
        }
        if (s->step == 2) {
            if ((st = zap_coll_shm_gather(op, &sh->ctl[0].in_seq, sizeof(sh->ctl[0]), t, true, &s->wait)) != ZAP_OK)
                return st;
            reduce_own_block(op, sh, s);
            atomic_store_explicit(&sh->ctl[sh->rank].red_seq, t, memory_order_release);
            s->step = 3;
            s->wait = (zap_coll_shm_wait_t){0, 0, 0};
        }
        if ((st = zap_coll_shm_gather(op, &sh->ctl[0].red_seq, sizeof(sh->ctl[0]), t, true, &s->wait)) != ZAP_OK)
            return st;
        if (sh->rank == s->root) /* not in place, its own block is in recvbuf already */
            zap_coll_shm_copy_but(op, (unsigned char *)s->dst, first, sh->big_out, first, es, n, lo, hi,
                                  root_direct(op, s));
        if (first + n >= s->count)
            break;
        s->chunk++;
        s->step = 1;
    }
    sh->big_done = k;
    atomic_store_explicit(&sh->ctl[sh->rank].fin_seq, zap_coll_shm_fin(k), memory_order_release);
    return ZAP_OK;
}

zap_status_t zap_reduce_shm_init(zap_coll_op_t *op)
{
    zap_coll_shm_t *sh = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    if (sh == NULL || a->bytes > op->comm->shm_bytes)
        return ZAP_ERR_UNSUPPORTED;
    if (a->bytes == 0) {
        op->progress = NULL;
        return ZAP_OK;
    }
    if (a->bytes <= ZAP_COLL_SHM_PAYLOAD && !op->agreed && op->form == ZAP_COLL_FORM_SHM) {
        zap_status_t st = zap_coll_agree_init(op, op->form, 0, a->src, a->count, a->dt, a->op);
        if (st != ZAP_OK)
            return st;
        /* One-way: the others write and go on; the root reads and reduces. */
        zap_coll_agree_shm_need(op, sh->rank == a->root ? ~UINT64_C(0) : 0);
        op->agreeing = true;
        op->progress = small_finish;
        return ZAP_OK;
    }
    if (sh->big_bytes == 0 || a->bytes > sh->big_bytes)
        return ZAP_ERR_UNSUPPORTED;
    size_t chunk = zap_coll_shm_sync_chunk(op, op->agreed);
    shm_reduce_t *s = (shm_reduce_t *)op->alg_state;
    memset(s, 0, sizeof(*s));
    s->src = a->src;
    s->dst = a->dst;
    s->count = a->count;
    s->dt = a->dt;
    s->zop = a->op;
    s->root = a->root;
    s->chunk_elems = chunk / zap_dtype_size(a->dt) > 0 ? chunk / zap_dtype_size(a->dt) : 1;
    op->progress = large_progress;
    return ZAP_OK;
}

/* Up to a slot: every rank writes its vector, the root reads every slot and
 * reduces in rank order, as the exchange does (agree/agree_shm.c). */
bool zap_reduce_shm_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f)
{
    f->src = a->src;
    f->bytes = a->bytes;
    f->need = comm->rank == a->root ? ~UINT64_C(0) : 0;
    return true;
}

void zap_reduce_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f)
{
    if (comm->rank != a->root)
        return;
    zap_coll_agree_shm_reduce(comm, f->seq, comm->size - 1, a->dt, a->op, a->dst, a->count);
}
