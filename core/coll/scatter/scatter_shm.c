/* Shared-memory scatter(v), for communicators whose ranks are processes on
 * one host (coll/shm/shm.h). The argument exchange carries what the root
 * knows alone, in its slot (zap_coll_agree_init_gather):
 *
 *   scatter, the other ranks' blocks within a slot ((p - 1) * count at most
 *     ZAP_COLL_SHM_PAYLOAD bytes, which every rank can tell from the agreed
 *     count): those blocks, from the root's successor's on round the ranks
 *     (two ranges of its sendbuf, zap_coll_agree_init_gather2: a root writes
 *     no more than its readers need, and keeps its own); every rank copies
 *     its own out. One exchange, no message.
 *   scatter, the blocks within the large area and at most
 *     ZAP_SCATTER_SHM_COPY_MAX bytes together (zap_scatter_shm_copies, from
 *     the agreed count and p): a header-only agreement, then the root copies
 *     its sendbuf into the area and every rank copies its block out
 *     (scatter_shm_copy.c).
 *   otherwise a table: where the blocks are (after it, in the large area or
 *     in the root's sendbuf), the root's sendbuf address and recvcount, the
 *     blocks' total and, for scatterv, every rank's count and displacement,
 *     then the blocks packed in rank order where they fit. A scatterv whose
 *     blocks do not fit but are within the copy form's bound goes through
 *     the large area as scatter's do, every rank following the table.
 *     Every other rank publishes its recvcount, so every rank can check every
 *     rank's count against its capacity from the slots and all decide alike:
 *     a rank sent more than its recvcount returns ZAP_ERR_INVALID_PARAM and
 *     the others ZAP_ERR_MISMATCH, with no second exchange (the linear form
 *     needs one, scatter.c).
 *
 * Blocks that do not ride the table are read straight from the root's
 * sendbuf where the segment permits single-copy reads and every rank's
 * buffers are host memory (a vote in the same exchange), as large exchange k
 * of the communicator (shm.h): each rank reads its block (process_vm_readv)
 * and publishes fin_seq = k (a reader of a block up to 256 KiB reads only
 * once the reader two places ahead of it, counting from the root's
 * successor, has published); the root copies its own and returns once every
 * fin_seq holds k, since until then the others may still be reading its
 * sendbuf. Only reads cross processes, as in allreduce_cma.c. Otherwise every
 * rank takes the next candidate, the linear form over the transport. */
#include "coll/scatter/scatter.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/select.h"
#include "coll/shm/shm.h"
#include "base/log.h"
#include "base/copy.h"
#include <stddef.h>
#include <string.h>

/* Where the table says the blocks are. */
enum { SC_AT_ROOT, SC_INLINE, SC_AREA };

/* The root's table, at the start of its slot's payload. */
typedef struct sc_head {
    uint64_t where;    /* SC_INLINE: after the entries; SC_AREA: the large area; both packed in rank order */
    uint64_t base;     /* the root's sendbuf, in its address space */
    uint64_t root_cap; /* the root's recvcount */
    uint64_t total;    /* the blocks' bytes */
} sc_head_t;
typedef struct sc_entry {
    uint64_t count; /* elements */
    int64_t displ;  /* elements from base */
} sc_entry_t;

enum { CMA_TURN, CMA_READ, CMA_FIN };
/* Readers of blocks up to CMA_WAVE_MAX_BYTES read CMA_WAVE at a time: many
 * processes reading one process's memory at once (process_vm_readv) get in
 * each other's way at these sizes, more than the wait for the reader ahead
 * costs; larger blocks read best all at once (docs/performance.md). */
#define CMA_WAVE 2
#define CMA_WAVE_MAX_BYTES ((size_t)256 << 10)

typedef struct sc_shm {
    sc_head_t head;    /* the root's table for scatter (no entries) */
    uint64_t cap;      /* a non-root's recvcount, published in its slot */
    size_t bytes;      /* what this rank receives */
    uint64_t from;     /* where, in the root's address space (single copy) */
    int step;
    bool vote_read;
    zap_coll_shm_wait_t wait;
} sc_shm_t;
_Static_assert(sizeof(sc_shm_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static bool is_v(const zap_coll_args_t *a) { return a->hdr_extra == 1; }

/* A scatter whose blocks but the root's fit the root's slot (p ranks, blocks
 * of blk bytes). */
static bool in_slot(int p, size_t blk) { return (size_t)(p - 1) * blk <= ZAP_COLL_SHM_PAYLOAD; }

static size_t table_bytes(int p, bool v) { return sizeof(sc_head_t) + (v ? (size_t)p * sizeof(sc_entry_t) : 0); }

bool zap_scatter_shm_vote(const zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    size_t es = zap_dtype_size(a->dt);
    size_t total = a->fixed * es * (size_t)op->comm->size;
    const zap_coll_shm_t *s = op->comm->shm;
    if (!is_v(a) && (in_slot(op->comm->size, a->fixed * es) || (s != NULL && zap_scatter_shm_copies(s, total))))
        return true; /* the slots or the large area carry it: the vote is not read */
    if (op->mem != ZAP_MEM_HOST)
        return false;
    if (op->comm->rank != a->root || a->src == NULL)
        return true;
    size_t span = 0; /* the root's sendbuf as far as its blocks reach */
    for (int q = 0; q < op->comm->size; q++) {
        size_t n = is_v(a) ? a->counts[q] : a->fixed;
        ptrdiff_t d = is_v(a) ? (ptrdiff_t)a->displs[q] : (ptrdiff_t)((size_t)q * a->fixed);
        if (n > 0 && d >= 0 && (size_t)d + n > span)
            span = (size_t)d + n;
    }
    return zap_coll_mem_kind(op->comm, a->src, span * es) == ZAP_MEM_HOST;
}

/* Step after the exchange, read through: copy out, or on to the single copy
 * (or the next candidate). Rank q's capacity: the root's from its table, the
 * others' from their slots. */
static zap_status_t cma_progress(zap_coll_op_t *op);

/* Where the root's slot holds rank r's block: the blocks of ranks root + 1,
 * root + 2, ... round the p ranks, the root's own left out. */
static size_t slot_offset(int r, int root, int p, size_t blk) { return (size_t)((r - root - 1 + p) % p) * blk; }

/* The root's sendbuf as the slot holds it: from its successor's block to
 * the end, then from the start to its own. */
static void root_ranges(const zap_coll_args_t *a, int p, size_t blk, const void **first, size_t *n1, size_t *n2)
{
    *first = (const char *)a->src + (size_t)(a->root + 1) * blk;
    *n1 = (size_t)(p - 1 - a->root) * blk;
    *n2 = (size_t)a->root * blk;
}

static zap_status_t blocks_finish(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    size_t blk = a->fixed * zap_dtype_size(a->dt);
    int r = op->comm->rank;
    if (r == a->root)
        zap_coll_copy(op, a->dst, (const char *)a->src + (size_t)r * blk, blk);
    else
        zap_coll_copy(op, a->dst,
                      (const char *)zap_coll_agree_slot(op, a->root) + slot_offset(r, a->root, op->comm->size, blk),
                      blk);
    return ZAP_OK;
}

static zap_status_t table_finish(zap_coll_op_t *op)
{
    sc_shm_t *c = (sc_shm_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    int p = op->comm->size, r = op->comm->rank;
    size_t es = zap_dtype_size(a->dt);
    const unsigned char *t = zap_coll_agree_slot(op, a->root);
    sc_head_t h;
    memcpy(&h, t, sizeof(h));
    sc_entry_t own = {a->fixed, (int64_t)((size_t)r * a->fixed)};
    size_t at = table_bytes(p, is_v(a)); /* the inline blocks' offset: packed in rank order */
    if (is_v(a)) {
        for (int q = 0; q < p; q++) {
            sc_entry_t e;
            memcpy(&e, t + sizeof(sc_head_t) + (size_t)q * sizeof(e), sizeof(e));
            uint64_t cap = h.root_cap;
            if (q != a->root)
                memcpy(&cap, zap_coll_agree_slot(op, q), sizeof(cap));
            if (e.count > cap) {
                if (q == r) {
                    zap_error("coll: rank %d: scatterv: the root sends %llu elements, more than recvcount %llu", r,
                              (unsigned long long)e.count, (unsigned long long)cap);
                    return ZAP_ERR_INVALID_PARAM;
                }
                zap_error("coll: rank %d: scatterv: rank %d's recvcount %llu is smaller than the %llu elements the "
                          "root sends it (communicator %u, sequence %llu)",
                          r, q, (unsigned long long)cap, (unsigned long long)e.count, zap_coll_comm_id(op->comm),
                          (unsigned long long)op->seq);
                return ZAP_ERR_MISMATCH;
            }
            if (q < r)
                at += e.count * es;
            if (q == r)
                own = e;
        }
    }
    c->bytes = own.count * es;
    if (r == a->root) {
        zap_coll_copy(op, a->dst, (const char *)a->src + own.displ * (ptrdiff_t)es, c->bytes);
        if (h.where == SC_INLINE)
            return ZAP_OK;
    } else if (h.where == SC_INLINE) {
        zap_coll_copy(op, a->dst, t + at, c->bytes);
        return ZAP_OK;
    }
    if (h.where == SC_AREA) {
        zap_scatter_shm_copy_start(op, h.total, at - table_bytes(p, is_v(a)), c->bytes);
        return op->progress(op);
    }
    if (!op->comm->shm->cma)
        return zap_coll_fall_back(op); /* every rank reads the same table and segment: all go alike */
    c->from = h.base + (uint64_t)(own.displ * (int64_t)es);
    c->step = CMA_TURN;
    c->vote_read = false;
    op->progress = cma_progress;
    return cma_progress(op);
}

static zap_status_t cma_progress(zap_coll_op_t *op)
{
    sc_shm_t *c = (sc_shm_t *)op->alg_state;
    zap_coll_shm_t *s = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    bool root = s->rank == a->root;
    zap_status_t st;
    if (c->step == CMA_TURN) {
        if (!c->vote_read && !zap_coll_agree_voted(op, ZAP_COLL_LANE_VOTE_HOST))
            return zap_coll_fall_back(op); /* some rank's buffers are not host memory */
        c->vote_read = true;
        if ((st = zap_coll_shm_turn(op)) != ZAP_OK)
            return st;
        c->step = CMA_READ;
        c->wait = (zap_coll_shm_wait_t){0, 0, 0};
    }
    uint64_t k = op->shm_big_seq;
    if (c->step == CMA_READ && !root && c->bytes <= CMA_WAVE_MAX_BYTES) {
        /* In waves: the reader CMA_WAVE places before this one in the order
         * from the root's successor has read its block. */
        int p = s->size, i = (s->rank - a->root - 1 + p) % p;
        if (i >= CMA_WAVE) {
            int pred = (a->root + 1 + i - CMA_WAVE) % p;
            if (c->wait.seen == 0)
                c->wait = (zap_coll_shm_wait_t){zap_coll_shm_all_ranks(s) & ~(UINT64_C(1) << pred), 0, 0};
            if ((st = zap_coll_shm_gather(op, &s->ctl[0].fin_seq, sizeof(s->ctl[0]), zap_coll_shm_fin(k), true,
                                          &c->wait)) != ZAP_OK)
                return st;
        }
    }
    if (c->step == CMA_READ) {
        if (!root && c->bytes > 0 && (st = zap_coll_shm_read(op, a->root, a->dst, c->from, c->bytes)) != ZAP_OK)
            return st;
        atomic_store_explicit(&s->ctl[s->rank].fin_seq, zap_coll_shm_fin(k), memory_order_release);
        c->step = CMA_FIN;
        c->wait = (zap_coll_shm_wait_t){0, 0, 0};
    }
    /* The root's sendbuf is read until every rank is done; the others go on. */
    if (root && (st = zap_coll_shm_gather(op, &s->ctl[0].fin_seq, sizeof(s->ctl[0]), zap_coll_shm_fin(k), true,
                                          &c->wait)) != ZAP_OK)
        return st;
    s->big_done = k;
    return ZAP_OK;
}

zap_status_t zap_scatter_shm_init(zap_coll_op_t *op)
{
    zap_coll_shm_t *s = op->comm->shm;
    const zap_coll_args_t *a = &op->args;
    if (s == NULL || op->form != ZAP_COLL_FORM_SHM || op->agreed)
        return ZAP_ERR_UNSUPPORTED;
    sc_shm_t *c = (sc_shm_t *)op->alg_state;
    int p = s->size;
    bool v = is_v(a), root = s->rank == a->root;
    size_t es = zap_dtype_size(a->dt);
    const void *data = NULL;
    size_t bytes = 0;
    zap_status_t st;
    if (!v && in_slot(p, a->fixed * es)) {
        size_t second = 0;
        if (root)
            root_ranges(a, p, a->fixed * es, &data, &bytes, &second);
        if ((st = zap_coll_agree_init_gather2(op, data, bytes, a->src, second)) != ZAP_OK)
            return st;
        /* One-way: the root writes and goes on, the others read its slot. */
        zap_coll_agree_shm_need(op, root ? 0 : UINT64_C(1) << a->root);
        op->agreeing = true;
        op->progress = blocks_finish;
        return ZAP_OK;
    }
    if (!v && zap_scatter_shm_copies(s, a->fixed * es * (size_t)p))
        return zap_scatter_shm_copy_init(op);
    if (!root) {
        c->cap = a->count;
        if (v)
            data = &c->cap, bytes = sizeof(c->cap);
    } else if (!v) {
        c->head = (sc_head_t){SC_AT_ROOT, (uint64_t)(uintptr_t)a->src, a->count, a->fixed * es * (size_t)p};
        data = &c->head, bytes = sizeof(c->head);
    } else {
        size_t total = 0;
        for (int q = 0; q < p; q++)
            total += a->counts[q] * es;
        bytes = table_bytes(p, true);
        bool fits = total <= ZAP_COLL_SHM_PAYLOAD - bytes;
        if ((st = zap_coll_scratch(op, &op->scratch, bytes + (fits ? total : 0))) != ZAP_OK)
            return st;
        unsigned char *t = op->scratch.ptr;
        sc_head_t h = {fits ? SC_INLINE : zap_scatter_shm_copies(s, total) ? SC_AREA : SC_AT_ROOT,
                       (uint64_t)(uintptr_t)a->src, a->count, total};
        memcpy(t, &h, sizeof(h));
        for (int q = 0; q < p; q++) {
            sc_entry_t e = {a->counts[q], (int64_t)a->displs[q]};
            memcpy(t + sizeof(h) + (size_t)q * sizeof(e), &e, sizeof(e));
            if (fits && e.count > 0) {
                zap_coll_copy(op, t + bytes, (const char *)a->src + e.displ * (ptrdiff_t)es, e.count * es);
                bytes += e.count * es;
            }
        }
        data = t;
    }
    if ((st = zap_coll_agree_init_gather(op, data, bytes)) != ZAP_OK)
        return st;
    op->agreeing = true;
    op->progress = table_finish;
    return ZAP_OK;
}

/* The blocks within the root's slot: one-way, as in zap_scatter_shm_init. */
bool zap_scatter_shm_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f)
{
    if (is_v(a) || !in_slot(comm->size, a->fixed * zap_dtype_size(a->dt)))
        return false;
    bool root = comm->rank == a->root;
    f->src = NULL;
    f->bytes = 0;
    if (root) {
        root_ranges(a, comm->size, a->fixed * zap_dtype_size(a->dt), &f->src, &f->bytes, &f->bytes2);
        f->src2 = a->src;
    }
    f->need = root ? 0 : UINT64_C(1) << a->root;
    f->words[ZAP_HDR_LANES] |= UINT64_C(1) << (8 * ZAP_COLL_LANE_VOTE_HOST); /* the vote above: yes, unread */
    return true;
}

void zap_scatter_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f)
{
    size_t blk = a->fixed * zap_dtype_size(a->dt);
    int r = comm->rank;
    if (r == a->root)
        zap_copy(a->dst, (const char *)a->src + (size_t)r * blk, blk);
    else
        zap_copy(a->dst,
               (const char *)zap_coll_agree_shm_fast_slot(comm, f, a->root) + slot_offset(r, a->root, comm->size, blk),
               blk);
}
