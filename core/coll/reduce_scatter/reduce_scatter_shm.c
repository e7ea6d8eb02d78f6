/* Shared-memory reduce-scatter, for ranks on one host (coll/shm/shm.h).
 *
 * Up to a slot (ZAP_COLL_SHM_PAYLOAD bytes) the whole input rides the
 * agreement: every rank publishes its vector in its slot without combining
 * (zap_coll_agree_init_gather), then reduces its own part over the p slots
 * in rank order into recvbuf. No message; each rank reads p parts and
 * writes one.
 *
 * Larger vectors, up to the segment's large area, are large exchange k: each
 * rank copies its input into its input area and publishes in_seq; once every
 * in_seq holds k it reduces its own part straight from the p input areas,
 * (c0 op c1) op ... op c(p-1), into recvbuf, publishes fin_seq and returns
 * once every fin_seq holds k (its input area is then read by all, and the
 * next large exchange may overwrite it). One copy in and one pass over p
 * parts per rank, against the ring's p - 1 message rounds. No other rank
 * reads a rank's own part of its input area: with host buffers, not in
 * place, that part is not copied in, and the rank reads its operand from
 * sendbuf.
 *
 * Rank order for every op; each element is computed once, by its part's
 * rank. */
#include "coll/reduce_scatter/reduce_scatter.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/reduce/reduce.h"
#include "coll/shm/shm.h"
#include "base/copy.h"
#include <string.h>

typedef struct rs_shm {
    zap_coll_shm_exchange_t x;
} rs_shm_t;
_Static_assert(sizeof(rs_shm_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

/* Rank r's part, out = (in[0] op in[1]) op ... op in[p-1] over its n
 * elements at byte off of each input: what every form computes, so the
 * bytes are the same whichever a rank takes. */
static void fold_part(const zap_coll_args_t *a, int r, int p, const unsigned char *const *in, unsigned char *out)
{
    size_t es = zap_dtype_size(a->dt), off = zap_rs_offset(a, r) * es, n = zap_rs_count(a, r);
    zap_copy(out, in[0] + off, n * es);
    for (int q = 1; q < p; q++)
        zap_reduce_cpu(a->dt, a->op, out, out, in[q] + off, n);
}

/* Rank r's part over the p inputs (input q at in(q)) into recvbuf. */
static void reduce_part(zap_coll_op_t *op, const unsigned char *(*in)(const zap_coll_op_t *, int))
{
    const zap_coll_args_t *a = &op->args;
    int r = op->comm->rank, p = op->comm->size;
    size_t n = zap_rs_count(a, r);
    if (n == 0)
        return;
    const unsigned char *ins[ZAP_COLL_SHM_MAX_RANKS];
    for (int q = 0; q < p; q++)
        ins[q] = in(op, q);
    /* The operands are host memory: the CPU combines them, into recvbuf when
     * it is host memory too, else into scratch that is copied over. */
    unsigned char *out = op->mem == ZAP_MEM_HOST ? a->dst : op->scratch.ptr;
    fold_part(a, r, p, ins, out);
    if (out != a->dst)
        zap_coll_copy(op, a->dst, out, n * zap_dtype_size(a->dt));
}

static const unsigned char *slot_in(const zap_coll_op_t *op, int q) { return zap_coll_agree_slot(op, q); }

static const unsigned char *area_in(const zap_coll_op_t *op, int q)
{
    const zap_coll_shm_t *sh = op->comm->shm;
    return sh->big_in + (size_t)q * sh->big_bytes;
}

/* Whether this rank's own part skips its input area (host buffers, not in
 * place: in place its part of the input and its result may overlap). */
static bool direct(const zap_coll_op_t *op) { return op->mem == ZAP_MEM_HOST && op->args.src != op->args.dst; }

static const unsigned char *area_or_own_in(const zap_coll_op_t *op, int q)
{
    return q == op->comm->rank && direct(op) ? (const unsigned char *)op->args.src : area_in(op, q);
}

static zap_status_t small_finish(zap_coll_op_t *op)
{
    reduce_part(op, slot_in);
    return ZAP_OK;
}

/* This rank's input into its input area, but for its own part where direct. */
static void copy_in(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    const zap_coll_shm_t *sh = op->comm->shm;
    unsigned char *in = sh->big_in + (size_t)sh->rank * sh->big_bytes;
    size_t es = zap_dtype_size(a->dt), off = 0, len = 0; /* the part not copied where direct */
    if (direct(op)) {
        off = zap_rs_offset(a, sh->rank) * es;
        len = zap_rs_count(a, sh->rank) * es;
    }
    zap_coll_copy(op, in, a->src, off);
    zap_coll_copy(op, in + off + len, (const unsigned char *)a->src + off + len, a->bytes - off - len);
}

static void reduce_from_areas(zap_coll_op_t *op) { reduce_part(op, area_or_own_in); }

static zap_status_t large_progress(zap_coll_op_t *op)
{
    rs_shm_t *s = (rs_shm_t *)op->alg_state;
    zap_status_t st = zap_coll_shm_exchange(op, &s->x, op->args.bytes, 0, copy_in, reduce_from_areas);
    return st == ZAP_ERR_NO_MEMORY ? zap_coll_fall_back(op) : st; /* no room for the area: every rank alike */
}

zap_status_t zap_reduce_scatter_shm_init(zap_coll_op_t *op)
{
    zap_coll_shm_t *sh = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    rs_shm_t *s = (rs_shm_t *)op->alg_state;
    if (sh == NULL)
        return ZAP_ERR_UNSUPPORTED;
    memset(s, 0, sizeof(*s));
    if (a->count == 0) {
        op->progress = NULL;
        return ZAP_OK;
    }
    bool small = a->bytes <= ZAP_COLL_SHM_PAYLOAD && !op->agreed && op->form == ZAP_COLL_FORM_SHM;
    if (!small && (sh->big_bytes == 0 || a->bytes > sh->big_bytes))
        return ZAP_ERR_UNSUPPORTED;
    zap_status_t st = ZAP_OK;
    if (op->mem != ZAP_MEM_HOST) /* scratch for the CPU's result, once nothing declines any more */
        st = zap_coll_scratch(op, &op->scratch, zap_rs_count(a, op->comm->rank) * zap_dtype_size(a->dt));
    if (st != ZAP_OK)
        return st;
    if (small) {
        if ((st = zap_coll_agree_init_gather(op, a->src, a->bytes)) != ZAP_OK)
            return st;
        op->agreeing = true;
        op->progress = small_finish;
        return ZAP_OK;
    }
    op->progress = large_progress;
    return ZAP_OK;
}

/* The fast form (engine/fast.h) of a call up to a slot: every rank writes its
 * vector and reads every slot, then folds its part as small_finish does. */
bool zap_reduce_scatter_shm_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f)
{
    (void)comm;
    f->src = a->src;
    f->bytes = a->bytes;
    f->need = ~UINT64_C(0);
    return true;
}

void zap_reduce_scatter_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f)
{
    if (zap_rs_count(a, comm->rank) == 0)
        return;
    const unsigned char *ins[ZAP_COLL_SHM_MAX_RANKS];
    for (int q = 0; q < comm->size; q++)
        ins[q] = zap_coll_agree_shm_fast_slot(comm, f, q);
    fold_part(a, comm->rank, comm->size, ins, a->dst);
}
