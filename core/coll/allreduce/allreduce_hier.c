/* Hierarchical allreduce, for communicators whose ranks span several hosts
 * (coll/hier/hier.h; docs/collectives.md, "Across hosts").
 *
 * Small vectors (up to ZAP_AR_HIER_SMALL_BYTES) ride the hierarchical
 * agreement (agree/agree_hier.c): each rank's vector goes up to its host's
 * leader, the leaders combine the hosts' sums by recursive doubling over the
 * hosts, and each leader sends the result down. One exchange, no separate
 * header round.
 *
 * Larger vectors, after the agreement, in chunks, each in three stages on
 * the hierarchy's communicators:
 *   A  the node's allreduce of the chunk (shared memory, single copy or the
 *      transport's shared memory: whatever the node communicator picks);
 *   B  with S slices (S local ranks per host, at most the smallest host's
 *      rank count), local rank s runs the allreduce of slice s of the host
 *      sum with local rank s of every other host (the leaders'
 *      communicator s): S streams across the network at once, each host
 *      sending 2(H-1)/H of the vector in all (ring or Rabenseifner among H);
 *   C  the node's allgather of the S slices (a broadcast from local rank 0
 *      when S is 1).
 * Chunk t's B runs while later chunks' A and earlier chunks' C do, and
 * beside the B of up to LAG - 1 other chunks: the host's own work hides
 * behind the network. The posting order on each communicator is the same
 * on all its ranks (A(t), then C(t-LAG), per iteration t), whatever
 * finishes first, so the stages' own sequence numbers match.
 *
 * Reduction order: the host sum of a chunk is the node allreduce's (in local
 * rank order for the shared-memory and single-copy forms); the hosts' sums
 * of slice s are combined by the leaders' allreduce in its order over the
 * hosts; every rank then copies each slice from the rank that computed it
 * (C), so every rank ends with identical bytes. The order depends on the
 * placement of ranks on hosts, like any algorithm's on the rank count. */
#include "coll/allreduce/allreduce.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/hier/hier.h"
#include "coll/patterns/patterns.h"
#include <string.h>

/* Chunks: vectors up to WHOLE_MAX go whole; up to SMALL_PIPE_MAX in
 * SMALL_PIPE_CHUNK pieces and up to PIPE_MAX in PIPE_CHUNK pieces, so that
 * the network stage of one overlaps the hosts' stages of its neighbours
 * even at a few hundred kilobytes, where whole vectors or eighths of them
 * left the link idle during the node stages (docs/performance.md, "Across
 * hosts"); larger ones in eight chunks of at most CHUNK_MAX, where the
 * per-chunk cost of more pieces would show. */
#define WHOLE_MAX ((size_t)128 << 10)
#define SMALL_PIPE_CHUNK ((size_t)64 << 10)
#define SMALL_PIPE_MAX ((size_t)512 << 10)
#define PIPE_CHUNK ((size_t)128 << 10)
#define PIPE_MAX ((size_t)8 << 20)
#define CHUNK_MAX ((size_t)4 << 20)
#define SLICE_MIN ((size_t)64 << 10) /* below this a slice's allreduce is latency, not bandwidth */
/* Chunks in flight: chunk t's network stage is posted while those of the
 * LAG - 1 chunks before it may still run, so that the leaders' exchanges,
 * 2(H-1) latency-bound steps each on H hosts, keep the link busy between
 * their steps (docs/performance.md, "Across hosts"). */
#define LAG 8

typedef struct hier_ar {
    int t, stage;        /* the schedule's position (progress_large) */
    int nchunks, slices; /* S */
    size_t chunk;        /* elements per chunk (the last may be shorter) */
    size_t esize;
    bool in_place;
    zap_request_t *a[LAG], *b[LAG], *c[LAG]; /* chunk t's requests at [t % LAG] */
    size_t *counts;      /* [2][nlocal]: the allgather's counts for a whole and the last chunk; displs follow */
    uint64_t ticket;     /* its turn on the hierarchy's communicators (hier.h) */
    bool ticketed;
} hier_ar_t;
_Static_assert(sizeof(hier_ar_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static size_t chunk_len(const hier_ar_t *s, size_t count, int t)
{
    size_t off = (size_t)t * s->chunk;
    return count - off < s->chunk ? count - off : s->chunk;
}

static void release(zap_coll_op_t *op)
{
    hier_ar_t *s = (hier_ar_t *)op->alg_state;
    for (int i = 0; i < LAG; i++) {
        zap_coll_hier_abandon(op->comm, s->a[i]);
        zap_coll_hier_abandon(op->comm, s->b[i]);
        zap_coll_hier_abandon(op->comm, s->c[i]);
        s->a[i] = s->b[i] = s->c[i] = NULL;
    }
    zap_coll_hier_give_back(op->comm, s->ticket, &s->ticketed);
}

static zap_status_t post_a(zap_coll_op_t *op, hier_ar_t *s, int t)
{
    const zap_coll_args_t *a = &op->args;
    const zap_coll_hier_t *h = op->comm->hier;
    size_t off = (size_t)t * s->chunk * s->esize, n = chunk_len(s, a->count, t);
    char *dst = (char *)a->dst + off;
    if (h->node == NULL) { /* alone on its host: the host sum is its own vector */
        if (!s->in_place)
            zap_coll_copy(op, dst, (const char *)a->src + off, n * s->esize);
        return ZAP_OK;
    }
    return zap_iallreduce(h->node, s->in_place ? ZAP_IN_PLACE : (const char *)a->src + off, dst, n, a->dt, a->op,
                          &s->a[t % LAG]);
}

static zap_status_t post_b(zap_coll_op_t *op, hier_ar_t *s, int t)
{
    const zap_coll_args_t *a = &op->args;
    const zap_coll_hier_t *h = op->comm->hier;
    if (h->local >= s->slices)
        return ZAP_OK;
    size_t n = chunk_len(s, a->count, t);
    size_t first = zap_pat_block_disp(n, (size_t)s->slices, (size_t)h->local);
    size_t len = zap_pat_block_count(n, (size_t)s->slices, (size_t)h->local);
    char *at = (char *)a->dst + ((size_t)t * s->chunk + first) * s->esize;
    return zap_iallreduce(h->leaders, ZAP_IN_PLACE, at, len, a->dt, a->op, &s->b[t % LAG]);
}

static zap_status_t post_c(zap_coll_op_t *op, hier_ar_t *s, int t)
{
    const zap_coll_args_t *a = &op->args;
    const zap_coll_hier_t *h = op->comm->hier;
    if (h->node == NULL)
        return ZAP_OK;
    size_t n = chunk_len(s, a->count, t);
    char *at = (char *)a->dst + (size_t)t * s->chunk * s->esize;
    if (s->slices == 1)
        return zap_ibcast(h->node, at, n, a->dt, 0, &s->c[t % LAG]);
    const size_t *counts = s->counts + (t == s->nchunks - 1 ? 2 * (size_t)h->nlocal : 0);
    const ptrdiff_t *displs = (const ptrdiff_t *)(counts + h->nlocal * 4); /* the signed view of the table */
    return zap_iallgatherv(h->node, ZAP_IN_PLACE, counts[h->local], at, counts, displs, a->dt, &s->c[t % LAG]);
}

/* The schedule: iteration t posts A(t), then (A(t-1) done) B(t-1), then
 * (B(t-LAG) done, and C(t-2 LAG) before its slot is reused) C(t-LAG). */
static zap_status_t progress_large(zap_coll_op_t *op)
{
    hier_ar_t *s = (hier_ar_t *)op->alg_state;
    int K = s->nchunks;
    zap_status_t st;
    if (!zap_coll_hier_turn(op->comm, s->ticket))
        return ZAP_INPROGRESS; /* an earlier operation still posts on the same communicators */
    for (;;) {
        int t = s->t;
        switch (s->stage) {
        case 0:
            if (t >= K + LAG) {
                for (int i = 0; i < LAG; i++)
                    if ((st = zap_coll_hier_stage_test(op, &s->c[i])) != ZAP_OK)
                        return st;
                return ZAP_OK;
            }
            if (t < K && (st = post_a(op, s, t)) != ZAP_OK)
                return st;
            s->stage = 1;
            break;
        case 1:
            if (t >= 1 && t <= K) {
                if ((st = zap_coll_hier_stage_test(op, &s->a[(t - 1) % LAG])) != ZAP_OK)
                    return st;
                if ((st = post_b(op, s, t - 1)) != ZAP_OK)
                    return st;
            }
            s->stage = 2;
            break;
        default:
            if (t >= LAG) {
                if ((st = zap_coll_hier_stage_test(op, &s->b[(t - LAG) % LAG])) != ZAP_OK)
                    return st;
                if ((st = zap_coll_hier_stage_test(op, &s->c[(t - LAG) % LAG])) != ZAP_OK)
                    return st;
                if ((st = post_c(op, s, t - LAG)) != ZAP_OK)
                    return st;
            }
            s->t++;
            s->stage = 0;
            break;
        }
    }
}

/* The allgather's counts and displacements for a chunk of n elements. */
static void slice_table(size_t n, int slices, int nlocal, size_t *counts, ptrdiff_t *displs)
{
    for (int l = 0; l < nlocal; l++) {
        counts[l] = l < slices ? zap_pat_block_count(n, (size_t)slices, (size_t)l) : 0;
        displs[l] = l < slices ? (ptrdiff_t)zap_pat_block_disp(n, (size_t)slices, (size_t)l) : 0;
    }
}

static zap_status_t init_large(zap_coll_op_t *op)
{
    hier_ar_t *s = (hier_ar_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    zap_comm_t *comm = op->comm;
    zap_status_t st = zap_coll_hier_children(comm);
    if (st != ZAP_OK)
        return ZAP_ERR_UNSUPPORTED; /* every rank fails alike (nothing but memory can fail) */
    const zap_coll_hier_t *h = comm->hier;
    memset(s, 0, sizeof(*s));
    s->esize = zap_dtype_size(a->dt);
    s->in_place = a->src == a->dst;
    size_t bytes = a->count * s->esize;
    size_t chunk_bytes = comm->set.pipeline_bytes;
    if (chunk_bytes == 0)
        chunk_bytes = bytes <= WHOLE_MAX        ? bytes
                      : bytes <= SMALL_PIPE_MAX ? SMALL_PIPE_CHUNK
                      : bytes <= PIPE_MAX       ? PIPE_CHUNK
                      : bytes / 8 > CHUNK_MAX   ? CHUNK_MAX
                                                : bytes / 8;
    s->chunk = chunk_bytes / s->esize > 0 ? chunk_bytes / s->esize : 1;
    s->nchunks = a->count == 0 ? 0 : (int)((a->count + s->chunk - 1) / s->chunk);
    size_t want = s->chunk * s->esize / SLICE_MIN;
    s->slices = want < 1 ? 1 : want < (size_t)h->slices ? (int)want : h->slices;
    if (s->slices > 1 && h->node != NULL) {
        /* counts and displs of a whole chunk, then of the last one. */
        size_t nl = (size_t)h->nlocal;
        if ((st = zap_coll_scratch(op, &op->scratch, 8 * nl * sizeof(size_t))) != ZAP_OK)
            return st;
        s->counts = op->scratch.ptr;
        slice_table(s->chunk, s->slices, h->nlocal, s->counts, (ptrdiff_t *)(s->counts + 4 * nl));
        size_t last = s->nchunks > 0 ? chunk_len(s, a->count, s->nchunks - 1) : 0;
        slice_table(last, s->slices, h->nlocal, s->counts + 2 * nl, (ptrdiff_t *)(s->counts + 6 * nl));
    }
    if ((st = zap_coll_hier_ticket(comm, &s->ticket)) != ZAP_OK)
        return st;
    s->ticketed = true;
    op->progress = progress_large;
    op->release = release;
    return ZAP_OK;
}

static zap_status_t finish_small(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    zap_coll_copy(op, a->dst, zap_coll_agree_result(op), a->count * zap_dtype_size(a->dt));
    return ZAP_OK;
}

zap_status_t zap_allreduce_hier_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    if (op->form != ZAP_COLL_FORM_HIER)
        return ZAP_ERR_UNSUPPORTED;
    if (a->bytes > ZAP_AR_HIER_SMALL_BYTES || op->agreed)
        return init_large(op);
    zap_status_t st = zap_coll_agree_init(op, op->form, 0, a->src, a->count, a->dt, a->op);
    if (st != ZAP_OK)
        return st;
    op->agreeing = true;
    op->progress = finish_small;
    return ZAP_OK;
}
