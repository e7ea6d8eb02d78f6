/* The header, its lanes and votes, and what the three forms of the exchange
 * share: setup, the combination of two headers (and payloads), the verdict
 * (agree.h). */
#include "coll/agree/agree.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/op.h"
#include "coll/reduce/reduce.h"
#include "base/log.h"
#include <stddef.h>
#include <string.h>

static const char *const word_names[ZAP_HDR_NWORDS] = {"count", "root", "v-counts", "lanes"};
static const char *const lane_names[ZAP_COLL_LANE_N] = {"kind", "algorithm", "datatype", "op", "bad"};

static uint64_t lane(uint64_t w, int i) { return (w >> (8 * i)) & 0xff; }

void zap_coll_hdr_words(uint64_t w[ZAP_HDR_NWORDS], zap_coll_kind_t kind, int alg, size_t count, zap_dtype_t dt,
                        zap_op_t zop, int root, uint64_t extra)
{
    w[ZAP_HDR_COUNT] = count;
    w[ZAP_HDR_ROOT] = (uint64_t)(int64_t)root;
    w[ZAP_HDR_EXTRA] = extra;
    w[ZAP_HDR_LANES] = ((uint64_t)kind & 0xff) << (8 * ZAP_COLL_LANE_KIND) |
                       ((uint64_t)alg & 0xff) << (8 * ZAP_COLL_LANE_ALG) |
                       ((uint64_t)dt & 0xff) << (8 * ZAP_COLL_LANE_DTYPE) |
                       (uint64_t)zap_op_lane(zop) << (8 * ZAP_COLL_LANE_OP);
}

void zap_coll_agree_header(zap_coll_op_t *op, size_t count, zap_dtype_t dt, zap_op_t zop, int root, uint64_t extra,
                           bool bad)
{
    zap_coll_hdr_t *h = &op->hdr_own;
    zap_coll_hdr_words(h->min, op->kind, op->alg, count, dt, zop, root, extra);
    memcpy(h->max, h->min, sizeof(h->max));
    if (bad)
        zap_coll_agree_mark_bad_own(h, op->comm->rank);
}

void zap_coll_agree_set_alg(zap_coll_op_t *op, int alg)
{
    uint64_t keep = ~((uint64_t)0xff << (8 * ZAP_COLL_LANE_ALG)), a = ((uint64_t)alg & 0xff) << (8 * ZAP_COLL_LANE_ALG);
    op->hdr_own.min[ZAP_HDR_LANES] = (op->hdr_own.min[ZAP_HDR_LANES] & keep) | a;
    op->hdr_own.max[ZAP_HDR_LANES] = (op->hdr_own.max[ZAP_HDR_LANES] & keep) | a;
}

void zap_coll_agree_vote(zap_coll_op_t *op, int lane_no, bool yes)
{
    if (yes) {
        op->hdr_own.min[ZAP_HDR_LANES] |= (uint64_t)1 << (8 * lane_no);
        op->hdr_own.max[ZAP_HDR_LANES] |= (uint64_t)1 << (8 * lane_no);
    }
}

bool zap_coll_agree_voted(const zap_coll_op_t *op, int lane_no)
{
    return op->agree.acc != NULL && (op->agree.acc->min[ZAP_HDR_LANES] & ((uint64_t)1 << (8 * lane_no))) != 0;
}

static void *hdr_data(zap_coll_hdr_t *h) { return (char *)h + sizeof(zap_coll_hdr_t); }

/* root >= 0: broadcast mode (data is read on that rank only). */
static zap_status_t setup(zap_coll_op_t *op, zap_coll_form_t form, int phase, const void *data, size_t count,
                          zap_dtype_t dt, zap_op_t zop, int root)
{
    zap_coll_agree_t *ag = &op->agree;
    /* Field by field: the exchange is set up once per collective and a
     * memset of the struct showed in the small-allreduce profile. */
    zap_coll_agree_release(op); /* a second exchange on one operation (scatterv's status) */
    /* A shared-memory exchange set up but not yet published (a local failure
     * after the setup turns the call into a bad header) keeps its number. */
    bool shm_reserved = ag->shm && ag->state == ZAP_AGREE_START && form == ZAP_COLL_FORM_SHM;
    ag->state = ZAP_AGREE_START;
    ag->form = form == ZAP_COLL_FORM_FLAT && root >= 0 ? ZAP_COLL_FORM_RD : form;
    ag->newrank = 0;
    ag->mask = 0;
    ag->in_len = 0;
    ag->in_st = ZAP_OK;
    ag->phase = phase;
    ag->count = count;
    ag->dt = dt;
    ag->op = zop;
    ag->root = root;
    ag->msg_bytes = sizeof(zap_coll_hdr_t) + count * zap_dtype_size(dt);
    ag->expect = ag->msg_bytes;
    /* The receive area starts on a 64-byte boundary (the header holds 64-bit
     * fields; the payload follows the 64-byte header). Payloads the CPU
     * combines (any kind but device memory, engine/mem.c) that fit use the
     * operation's inline area, device ones pool scratch the reduction kernels
     * can address. */
    size_t stride = (ag->msg_bytes + 63) & ~(size_t)63;
    ag->stride = stride;
    ag->shm = ag->form == ZAP_COLL_FORM_SHM;
    ag->shm_lone = false;
    ag->shm_chain_bad = -1;
    ag->oneway = false;
    size_t slots = ag->form == ZAP_COLL_FORM_FLAT ? (size_t)op->comm->size : ag->shm ? 1 : 2;
    bool host = op->mem != ZAP_MEM_DEVICE;
    if ((count == 0 || host) && slots * stride <= ZAP_COLL_AGREE_INLINE_BYTES) {
        ag->acc = (zap_coll_hdr_t *)ag->inline_area;
    } else {
        zap_status_t st = zap_coll_scratch(op, &ag->buf, slots * stride);
        if (st != ZAP_OK)
            return st;
        ag->acc = ag->buf.ptr;
    }
    ag->in = (zap_coll_hdr_t *)((char *)ag->acc + stride);
    if (ag->shm) {
        ag->shm_src = data;
        ag->shm_src2 = NULL;
        ag->shm_bytes2 = 0;
        return zap_coll_agree_shm_setup(op, shm_reserved);
    }
    if (ag->form == ZAP_COLL_FORM_FLAT)
        return zap_coll_agree_flat_setup(op, data);
    if (count > 0 && (root < 0 || root == op->comm->rank))
        zap_coll_copy(op, hdr_data(ag->acc), data, count * zap_dtype_size(dt));
    *ag->acc = op->hdr_own;
    return ZAP_OK;
}

zap_status_t zap_coll_agree_init(zap_coll_op_t *op, zap_coll_form_t form, int phase, const void *data, size_t count,
                                 zap_dtype_t dt, zap_op_t zop)
{
    return setup(op, form, phase, data, count, dt, zop, -1);
}

zap_status_t zap_coll_agree_init_bcast(zap_coll_op_t *op, zap_coll_form_t form, int phase, const void *data,
                                       size_t bytes, int root)
{
    return setup(op, form, phase, data, bytes, ZAP_DT_UINT8, ZAP_OP_SUM, root);
}

zap_status_t zap_coll_agree_init_bcast_tree(zap_coll_op_t *op, int phase, const void *data, size_t bytes, int root)
{
    zap_status_t st = setup(op, ZAP_COLL_FORM_HIER, phase, data, bytes, ZAP_DT_UINT8, ZAP_OP_SUM, root);
    if (st == ZAP_OK)
        op->agree.oneway = op->agree.shm_lone = true;
    return st;
}

zap_status_t zap_coll_agree_init_gather(zap_coll_op_t *op, const void *data, size_t bytes)
{
    return setup(op, ZAP_COLL_FORM_SHM, 0, data, bytes, ZAP_DT_UINT8, ZAP_OP_SUM, ZAP_COLL_AGREE_GATHER);
}

zap_status_t zap_coll_agree_init_gather2(zap_coll_op_t *op, const void *data, size_t bytes, const void *data2,
                                         size_t bytes2)
{
    zap_status_t st = zap_coll_agree_init_gather(op, data, bytes + bytes2);
    if (st == ZAP_OK && bytes2 > 0) {
        op->agree.shm_src2 = data2;
        op->agree.shm_bytes2 = bytes2;
    }
    return st;
}

void zap_coll_agree_release(zap_coll_op_t *op)
{
    if (op->agree.buf.handle != 0)
        zap_coll_scratch_free(op->comm, &op->agree.buf);
}

void *zap_coll_agree_result(zap_coll_op_t *op) { return hdr_data(op->agree.acc); }

zap_status_t zap_coll_agree_progress(zap_coll_op_t *op)
{
    switch (op->agree.form) {
    case ZAP_COLL_FORM_SHM: return zap_coll_agree_shm_progress(op);
    case ZAP_COLL_FORM_FLAT: return zap_coll_agree_flat_progress(op);
    case ZAP_COLL_FORM_HIER:
        return op->agree.oneway ? zap_coll_agree_tree_progress(op) : zap_coll_agree_hier_progress(op);
    default: return zap_coll_agree_rd_progress(op);
    }
}

void zap_coll_agree_merge(zap_coll_hdr_t *acc, const zap_coll_hdr_t *in)
{
    for (int f = 0; f < ZAP_HDR_LANES; f++) {
        if (in->min[f] < acc->min[f])
            acc->min[f] = in->min[f];
        if (in->max[f] > acc->max[f])
            acc->max[f] = in->max[f];
    }
    uint64_t a_lo = acc->min[ZAP_HDR_LANES], a_hi = acc->max[ZAP_HDR_LANES];
    uint64_t i_lo = in->min[ZAP_HDR_LANES], i_hi = in->max[ZAP_HDR_LANES];
    if (a_lo != i_lo || a_hi != i_hi) { /* rare: ranks disagree somewhere (or voted differently) */
        uint64_t lo = 0, hi = 0;
        for (int l = 0; l < ZAP_COLL_LANE_N; l++) {
            uint64_t x = lane(a_lo, l) < lane(i_lo, l) ? lane(a_lo, l) : lane(i_lo, l);
            uint64_t y = lane(a_hi, l) > lane(i_hi, l) ? lane(a_hi, l) : lane(i_hi, l);
            lo |= x << (8 * l);
            hi |= y << (8 * l);
        }
        acc->min[ZAP_HDR_LANES] = lo;
        acc->max[ZAP_HDR_LANES] = hi;
    }
}

zap_status_t zap_coll_agree_combine(zap_coll_op_t *op, bool in_is_lower)
{
    zap_coll_agree_t *ag = &op->agree;
    if (ag->in_st != ZAP_OK || ag->in_len != ag->expect) {
        if (ag->in_st != ZAP_OK && ag->in_st != ZAP_ERR_TRUNCATED)
            return ag->in_st;
        zap_coll_agree_keep_named(ag->acc, ag->in, ag->in_st == ZAP_OK ? ag->in_len : 0);
        zap_coll_agree_mark_bad(ag->acc);
        return ZAP_OK;
    }
    zap_coll_agree_merge(ag->acc, ag->in);
    if (ag->count == 0 || lane(ag->acc->max[ZAP_HDR_LANES], ZAP_COLL_LANE_BAD) != 0)
        return ZAP_OK;
    if (ag->root >= 0) { /* broadcast: take the data if the partner's side holds it */
        if (ag->expect == ag->msg_bytes)
            zap_coll_copy(op, hdr_data(ag->acc), hdr_data(ag->in), ag->count);
        return ZAP_OK;
    }
    const void *lo = in_is_lower ? hdr_data(ag->in) : hdr_data(ag->acc);
    const void *hi = in_is_lower ? hdr_data(ag->acc) : hdr_data(ag->in);
    return zap_coll_reduce(op, ag->dt, ag->op, hdr_data(ag->acc), lo, hi, ag->count);
}

static zap_status_t differ(const zap_coll_op_t *op, const char *what, uint64_t lo, uint64_t hi)
{
    zap_error("coll: rank %d: collective arguments differ across ranks: %s from %llu to %llu (communicator %u, "
              "sequence %llu)",
              op->comm->rank, what, (unsigned long long)lo, (unsigned long long)hi, zap_coll_comm_id(op->comm),
              (unsigned long long)op->seq);
    return ZAP_ERR_MISMATCH;
}

zap_status_t zap_coll_agree_verdict(zap_coll_op_t *op)
{
    const zap_coll_hdr_t *h = op->agree.acc;
    for (int f = 0; f < ZAP_HDR_LANES; f++)
        if (h->min[f] != h->max[f])
            return differ(op, word_names[f], h->min[f], h->max[f]);
    for (int l = 0; l < ZAP_COLL_LANE_BAD; l++) {
        uint64_t lo = lane(h->min[ZAP_HDR_LANES], l), hi = lane(h->max[ZAP_HDR_LANES], l);
        if (lo != hi)
            return differ(op, lane_names[l], lo, hi);
    }
    uint64_t bad = lane(h->max[ZAP_HDR_LANES], ZAP_COLL_LANE_BAD);
    if (bad == ZAP_COLL_BAD_UNNAMED || (int)bad - 2 >= op->comm->size) {
        zap_error("coll: rank %d: a rank reported bad collective arguments or received a message of the wrong "
                  "size (communicator %u, sequence %llu)",
                  op->comm->rank, zap_coll_comm_id(op->comm), (unsigned long long)op->seq);
        return ZAP_ERR_MISMATCH;
    }
    if (bad != 0) {
        /* The rank at fault has logged its own reason; the others name it. */
        if ((int)bad - 2 != op->comm->rank)
            zap_error("coll: rank %d: collective failed on every rank: rank %d (transport rank %d) reported bad "
                      "arguments, its log says which (communicator %u, sequence %llu)",
                      op->comm->rank, (int)bad - 2, zap_coll_transport_rank(op->comm, (int)bad - 2),
                      zap_coll_comm_id(op->comm), (unsigned long long)op->seq);
        return ZAP_ERR_MISMATCH;
    }
    return ZAP_OK;
}

/* --- a blocking exchange with payload -------------------------------------- */

typedef struct agree_run {
    void *out;
    size_t bytes;
} agree_run_t;
_Static_assert(sizeof(agree_run_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static zap_status_t agree_run_finish(zap_coll_op_t *op)
{
    agree_run_t *s = (agree_run_t *)op->alg_state;
    memcpy(s->out, zap_coll_agree_result(op), s->bytes);
    return ZAP_OK;
}

zap_status_t zap_coll_agree_allreduce(zap_comm_t *comm, zap_coll_kind_t kind, const void *in, void *out,
                                      size_t count, zap_dtype_t dt, zap_op_t zop)
{
    zap_coll_op_t *op = NULL;
    zap_status_t st = zap_coll_op_get(comm, kind, &op);
    if (st != ZAP_OK)
        return st;
    agree_run_t *s = (agree_run_t *)op->alg_state;
    s->out = out;
    s->bytes = count * zap_dtype_size(dt);
    zap_coll_agree_header(op, count, dt, zop, -1, 0, false);
    op->agreeing = true;
    op->progress = agree_run_finish;
    st = zap_coll_agree_init(op, ZAP_COLL_FORM_RD, 0, in, count, dt, zop);
    if (st != ZAP_OK)
        zap_coll_op_fail_local(op, st);
    return zap_coll_op_run(op);
}
