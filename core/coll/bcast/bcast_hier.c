/* Hierarchical broadcast, for communicators whose ranks span several hosts
 * (coll/hier/hier.h; docs/collectives.md, "Across hosts").
 *
 * Small messages (up to ZAP_BC_HIER_SMALL_BYTES) go one way down a tree
 * with the header (agree/agree_tree.c): from the root across the hosts'
 * senders and down inside each host, no message back, so a stream of them
 * pays no round trip per call; a receiver checks its arguments against the
 * header it gets, and a mismatch revokes the communicator.
 *
 * Larger ones, after the agreement, in chunks. Let s be the root's local
 * rank. When every host has a local rank s (s below the smallest host's rank
 * count), local rank s of each host is the host's source: chunk t goes from
 * the root across the hosts on the leaders' communicator of local rank s
 * (A), and on every host from local rank s to the others on the node's
 * communicator (C); on the root's host C starts at once. Otherwise the
 * root's host first broadcasts the chunk from the root on its node (P),
 * which brings it to local rank 0, and local rank 0 of every host is the
 * source. Each host receives every byte once: (H-1) messages' worth cross
 * the network in all, the least a broadcast can do. Chunk t crosses while
 * chunk t-1 spreads inside the hosts. */
#include "coll/bcast/bcast.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/hier/hier.h"
#include <string.h>

#define CHUNK_MIN ((size_t)512 << 10)
#define CHUNK_MAX ((size_t)4 << 20)
#define WINDOW 3 /* chunks whose requests may be outstanding */

typedef struct hier_bc {
    int t, stage, nchunks;
    size_t chunk, esize;
    int source;    /* local rank that is each host's source */
    int root_host; /* the root's host: its index in the leaders' communicators */
    bool path_p;   /* the root's host broadcasts from the root first (P) */
    zap_request_t *first[WINDOW], *second[WINDOW];
    uint64_t ticket; /* its turn on the hierarchy's communicators (hier.h) */
    bool ticketed;
} hier_bc_t;
_Static_assert(sizeof(hier_bc_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static void release(zap_coll_op_t *op)
{
    hier_bc_t *s = (hier_bc_t *)op->alg_state;
    for (int i = 0; i < WINDOW; i++) {
        zap_coll_hier_abandon(op->comm, s->first[i]);
        zap_coll_hier_abandon(op->comm, s->second[i]);
        s->first[i] = s->second[i] = NULL;
    }
    zap_coll_hier_give_back(op->comm, s->ticket, &s->ticketed);
}

static size_t chunk_len(const hier_bc_t *s, size_t count, int t)
{
    size_t off = (size_t)t * s->chunk;
    return count - off < s->chunk ? count - off : s->chunk;
}

/* This rank's part in chunk t: what it posts first, and what follows once
 * that is done (NULL kinds: nothing). */
typedef enum { NONE, ACROSS, NODE_FROM_SOURCE, NODE_FROM_ROOT } action_t;

static void actions(const zap_coll_op_t *op, const hier_bc_t *s, action_t *first, action_t *then)
{
    const zap_coll_hier_t *h = op->comm->hier;
    bool root_host = h->host == s->root_host;
    *first = *then = NONE;
    if (root_host && s->path_p) {
        *first = h->node != NULL ? NODE_FROM_ROOT : NONE;
        if (h->local == 0)
            *then = ACROSS;
        if (*first == NONE) { /* alone on its host: the root itself is the source */
            *first = *then;
            *then = NONE;
        }
    } else if (root_host) {
        /* The root is this host's source: it sends across and on its node at once. */
        *first = h->local == s->source ? ACROSS : NONE;
        *then = h->node != NULL ? NODE_FROM_SOURCE : NONE;
        if (*first == NONE) {
            *first = *then;
            *then = NONE;
        }
    } else if (h->local == s->source) {
        *first = ACROSS;
        *then = h->node != NULL ? NODE_FROM_SOURCE : NONE;
    } else {
        *first = NODE_FROM_SOURCE;
    }
}

static zap_status_t post(zap_coll_op_t *op, hier_bc_t *s, action_t what, int t, zap_request_t **req)
{
    const zap_coll_args_t *a = &op->args;
    const zap_coll_hier_t *h = op->comm->hier;
    char *at = (char *)a->dst + (size_t)t * s->chunk * s->esize;
    size_t n = chunk_len(s, a->count, t);
    switch (what) {
    case ACROSS: return zap_ibcast(h->leaders, at, n, a->dt, s->root_host, req);
    case NODE_FROM_SOURCE: return zap_ibcast(h->node, at, n, a->dt, s->source, req);
    case NODE_FROM_ROOT: return zap_ibcast(h->node, at, n, a->dt, h->topo->local[a->root], req);
    default: return ZAP_OK;
    }
}

/* Iteration t: chunk t's first action; chunk t-1's second once its first is
 * done (on the root's host when the root sends across itself, both were
 * posted at once: the second does not wait for the first); chunk t-2's
 * requests waited for, so at most WINDOW chunks are in flight. */
static zap_status_t progress_large(zap_coll_op_t *op)
{
    hier_bc_t *s = (hier_bc_t *)op->alg_state;
    const zap_coll_hier_t *h = op->comm->hier;
    int K = s->nchunks;
    action_t first, then;
    actions(op, s, &first, &then);
    bool independent = h->host == s->root_host && !s->path_p; /* the root posts both at once */
    zap_status_t st;
    if (!zap_coll_hier_turn(op->comm, s->ticket))
        return ZAP_INPROGRESS; /* an earlier operation still posts on the same communicators */
    for (;;) {
        int t = s->t;
        switch (s->stage) {
        case 0:
            if (t >= K + 2)
                return ZAP_OK;
            if (t < K) {
                if ((st = post(op, s, first, t, &s->first[t % WINDOW])) != ZAP_OK)
                    return st;
                if (independent && (st = post(op, s, then, t, &s->second[t % WINDOW])) != ZAP_OK)
                    return st;
            }
            s->stage = 1;
            break;
        case 1:
            if (!independent && t >= 1 && t <= K && then != NONE) {
                if ((st = zap_coll_hier_stage_test(op, &s->first[(t - 1) % WINDOW])) != ZAP_OK)
                    return st;
                if ((st = post(op, s, then, t - 1, &s->second[(t - 1) % WINDOW])) != ZAP_OK)
                    return st;
            }
            s->stage = 2;
            break;
        default:
            if (t >= 2) {
                if ((st = zap_coll_hier_stage_test(op, &s->first[(t - 2) % WINDOW])) != ZAP_OK)
                    return st;
                if ((st = zap_coll_hier_stage_test(op, &s->second[(t - 2) % WINDOW])) != ZAP_OK)
                    return st;
            }
            s->t++;
            s->stage = 0;
            break;
        }
    }
}

static zap_status_t init_large(zap_coll_op_t *op)
{
    hier_bc_t *s = (hier_bc_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    zap_comm_t *comm = op->comm;
    if (zap_coll_hier_children(comm) != ZAP_OK)
        return ZAP_ERR_UNSUPPORTED; /* every rank fails alike (nothing but memory can fail) */
    const zap_coll_hier_t *h = comm->hier;
    memset(s, 0, sizeof(*s));
    s->esize = zap_dtype_size(a->dt);
    size_t bytes = a->count * s->esize;
    size_t chunk_bytes = comm->set.pipeline_bytes;
    if (chunk_bytes == 0)
        chunk_bytes = bytes <= 2 * CHUNK_MIN ? bytes : bytes / 8 < CHUNK_MIN ? CHUNK_MIN
                                                  : bytes / 8 > CHUNK_MAX ? CHUNK_MAX
                                                                          : bytes / 8;
    s->chunk = chunk_bytes / s->esize > 0 ? chunk_bytes / s->esize : 1;
    s->nchunks = a->count == 0 ? 0 : (int)((a->count + s->chunk - 1) / s->chunk);
    int root_local = h->topo->local[a->root];
    s->root_host = h->topo->host[a->root];
    s->path_p = root_local >= h->slices;
    s->source = s->path_p ? 0 : root_local;
    if (zap_coll_hier_ticket(comm, &s->ticket) != ZAP_OK)
        return ZAP_ERR_NO_RESOURCE;
    s->ticketed = true;
    op->progress = progress_large;
    op->release = release;
    return ZAP_OK;
}

static zap_status_t finish_small(zap_coll_op_t *op)
{
    if (op->comm->rank != op->args.root)
        zap_coll_copy(op, op->args.dst, zap_coll_agree_result(op), op->args.bytes);
    return ZAP_OK;
}

zap_status_t zap_bcast_hier_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    if (op->form != ZAP_COLL_FORM_HIER)
        return ZAP_ERR_UNSUPPORTED;
    if (a->bytes > ZAP_BC_HIER_SMALL_BYTES || op->agreed)
        return init_large(op);
    zap_status_t st = zap_coll_agree_init_bcast_tree(op, 0, a->dst, a->bytes, a->root);
    if (st != ZAP_OK)
        return st;
    op->agreeing = true;
    op->progress = finish_small;
    return ZAP_OK;
}
