/* Hierarchical scatter(v), for communicators whose ranks span several hosts
 * (coll/hier/hier.h; docs/collectives.md, "Across hosts").
 *
 * The root sends each other host's leader two messages: the counts of that
 * host's ranks (in local-rank order), then their parts packed in that order;
 * every host then scatters on its node communicator, the root's host from
 * the root's own buffer, the others from their leader's packed copy. So each
 * host receives its share once and in one piece (the linear scatter sends
 * each rank of it a message of its own), and the root's link carries what
 * the other hosts need and nothing more.
 *
 * Where a host's parts already lie in the root's buffer back to back in
 * local-rank order (a scatter, and most scatterv tables), the root sends
 * them from there: no packing copy ahead of the link, and the sends to every
 * such host are in flight together while the root's own host scatters. A
 * host whose parts must be packed waits for the packing area, one at a time.
 *
 * Counts are known only at the root: a rank whose recvcount is too small
 * learns it in its node's scatter (ZAP_ERR_INVALID_PARAM there, and
 * ZAP_ERR_MISMATCH on the rest of its host), and a last exchange through the
 * hierarchy (tag phase 3) carries the failure to every other host, so every
 * rank returns ZAP_ERR_MISMATCH except the one at fault. */
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include "coll/hier/hier.h"
#include "base/log.h"
#include <string.h>

#define PHASE_DATA 1
#define PHASE_STATUS 3
#define STEP_COUNTS 0
#define STEP_DATA 1

typedef enum { SH_START, SH_ROOT_SEND, SH_ROOT_WAIT, SH_COUNTS_WAIT, SH_DATA_WAIT, SH_NODE, SH_NODE_WAIT,
               SH_ROOT_DRAIN, SH_STATUS, SH_DONE } sh_state_t;

typedef struct scv_hier {
    sh_state_t state;
    int next_host;         /* the root: the next host to send to */
    size_t esize;
    uint64_t *counts;      /* this host's counts (nlocal), in scratch; on the root every host's, at host_first */
    size_t *ncounts;
    ptrdiff_t *ndispls; /* the node scatter's counts and displacements (nlocal each), in scratch */
    char *packed;          /* a leader's copy of its host's parts (scratch2), or the root's buffer */
    size_t packed_bytes;
    zap_request_t *node;   /* the node scatter */
    zap_status_t node_st;
    uint64_t ticket;       /* its turn on the hierarchy's communicators (hier.h) */
    bool ticketed;
} scv_hier_t;
_Static_assert(sizeof(scv_hier_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static size_t count_of(const zap_coll_args_t *a, int r) { return a->counts ? a->counts[r] : a->fixed; }
static ptrdiff_t displ_of(const zap_coll_args_t *a, int r)
{
    return a->counts ? a->displs[r] : (ptrdiff_t)((size_t)r * a->fixed);
}

static void release(zap_coll_op_t *op)
{
    scv_hier_t *s = (scv_hier_t *)op->alg_state;
    zap_coll_hier_abandon(op->comm, s->node);
    s->node = NULL;
    zap_coll_hier_give_back(op->comm, s->ticket, &s->ticketed);
}

/* Where host g's parts start in the root's buffer when they lie there back
 * to back in local-rank order; NULL when they must be packed. */
static const char *host_run(const zap_coll_op_t *op, const scv_hier_t *s, int g)
{
    const zap_coll_args_t *a = &op->args;
    const zap_coll_topo_t *t = op->comm->hier->topo;
    ptrdiff_t first = -1, at = 0;
    for (int l = 0; l < t->host_size[g]; l++) {
        int r = zap_coll_topo_rank(t, g, l);
        if (count_of(a, r) == 0)
            continue; /* an empty part's displacement is not read */
        if (first < 0)
            first = at = displ_of(a, r);
        else if (displ_of(a, r) != at)
            return NULL;
        at += (ptrdiff_t)count_of(a, r);
    }
    return (const char *)a->src + (first < 0 ? 0 : first) * (ptrdiff_t)s->esize;
}

/* Host g's counts into counts and, when out is not NULL, its parts packed
 * there in local-rank order (the root packs one host at a time in scratch2,
 * sized for the largest host that needs it). Returns the packed length in
 * bytes. */
static size_t pack_host(const zap_coll_op_t *op, const scv_hier_t *s, int g, uint64_t *counts, char *out)
{
    const zap_coll_args_t *a = &op->args;
    const zap_coll_topo_t *t = op->comm->hier->topo;
    size_t at = 0;
    for (int l = 0; l < t->host_size[g]; l++) {
        int r = zap_coll_topo_rank(t, g, l);
        counts[l] = count_of(a, r);
        if (out != NULL)
            zap_coll_copy(op, out + at, (const char *)a->src + displ_of(a, r) * (ptrdiff_t)s->esize, counts[l] * s->esize);
        at += counts[l] * s->esize;
    }
    return at;
}

static zap_status_t progress(zap_coll_op_t *op)
{
    scv_hier_t *s = (scv_hier_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    zap_comm_t *comm = op->comm;
    const zap_coll_hier_t *h = comm->hier;
    const zap_coll_topo_t *t = h->topo;
    int rank = comm->rank, root_host = t->host[a->root];
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case SH_START:
            if (rank == a->root) {
                s->next_host = 0;
                s->state = SH_ROOT_SEND;
            } else if (h->local == 0 && h->host != root_host) {
                st = zap_coll_recv(op, a->root, PHASE_DATA, STEP_COUNTS, s->counts, (size_t)h->nlocal * 8, NULL, NULL);
                if (st != ZAP_OK)
                    return st;
                s->state = SH_COUNTS_WAIT;
            } else {
                s->state = SH_NODE;
            }
            break;
        case SH_ROOT_SEND: { /* each other host: its counts, then its parts */
            while (s->next_host < t->nhosts && s->next_host == root_host)
                s->next_host++;
            if (s->next_host == t->nhosts) {
                s->state = SH_NODE; /* sends still in flight drain after the node's scatter */
                break;
            }
            if (op->nreqs + 2 > ZAP_COLL_MAX_REQS) { /* every request slot in use: let those finish */
                s->state = SH_ROOT_WAIT;
                break;
            }
            int g = s->next_host++;
            uint64_t *counts = s->counts + t->host_first[g];
            const char *run = host_run(op, s, g);
            size_t bytes = pack_host(op, s, g, counts, run != NULL ? NULL : s->packed);
            if ((st = zap_coll_send(op, zap_coll_topo_rank(t, g, 0), PHASE_DATA, STEP_COUNTS, counts,
                                    (size_t)t->host_size[g] * 8)) != ZAP_OK ||
                (st = zap_coll_send(op, zap_coll_topo_rank(t, g, 0), PHASE_DATA, STEP_DATA,
                                    run != NULL ? run : s->packed, bytes)) != ZAP_OK)
                return st;
            if (run == NULL)
                s->state = SH_ROOT_WAIT; /* the packing area is in use until this send is done */
            break;
        }
        case SH_ROOT_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->state = SH_ROOT_SEND;
            break;
        case SH_COUNTS_WAIT: {
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            size_t bytes = 0;
            for (int l = 0; l < h->nlocal; l++)
                bytes += s->counts[l] * s->esize;
            if ((st = zap_coll_scratch(op, &op->scratch2, bytes)) != ZAP_OK)
                return st;
            s->packed = op->scratch2.ptr;
            s->packed_bytes = bytes;
            if ((st = zap_coll_recv(op, a->root, PHASE_DATA, STEP_DATA, s->packed, bytes, NULL, NULL)) != ZAP_OK)
                return st;
            s->state = SH_DATA_WAIT;
            break;
        }
        case SH_DATA_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->state = SH_NODE;
            break;
        case SH_NODE: {
            if (!zap_coll_hier_turn(comm, s->ticket))
                return ZAP_INPROGRESS; /* an earlier operation still posts on the node's communicator */
            /* The host's source: the root on its host, else the leader with
             * the packed copy; the others only receive. */
            bool source = rank == a->root || (h->local == 0 && h->host != root_host);
            const char *from = NULL;
            if (source) {
                size_t at = 0;
                for (int l = 0; l < h->nlocal; l++) {
                    int r = zap_coll_topo_rank(t, h->host, l);
                    s->ncounts[l] = h->host == root_host ? count_of(a, r) : (size_t)s->counts[l];
                    s->ndispls[l] = h->host == root_host ? displ_of(a, r) : (ptrdiff_t)at;
                    at += s->ncounts[l];
                }
                from = h->host == root_host ? a->src : s->packed;
            }
            if (h->node == NULL) { /* alone on its host: its part is all there is */
                if (source && s->ncounts[0] > a->count) {
                    zap_error("coll: rank %d: scatterv: the root sent %zu elements, more than recvcount %zu", rank,
                              s->ncounts[0], a->count);
                    s->node_st = ZAP_ERR_INVALID_PARAM;
                } else if (source) {
                    zap_coll_copy(op, a->dst, from + s->ndispls[0] * s->esize, s->ncounts[0] * s->esize);
                }
                zap_coll_hier_give_back(comm, s->ticket, &s->ticketed);
                s->state = SH_ROOT_DRAIN;
                break;
            }
            int node_root = h->host == root_host ? t->local[a->root] : 0;
            if ((st = zap_iscatterv(h->node, from, s->ncounts, s->ndispls, a->dst, a->count, a->dt, node_root,
                                    &s->node)) != ZAP_OK)
                return st;
            s->state = SH_NODE_WAIT;
            break;
        }
        case SH_NODE_WAIT: {
            int done = 0;
            st = zap_request_test(s->node, &done);
            if (!done && st == ZAP_OK)
                return ZAP_INPROGRESS;
            zap_request_free(s->node);
            s->node = NULL;
            zap_coll_hier_give_back(comm, s->ticket, &s->ticketed); /* done with the node's communicator */
            if (st != ZAP_OK && st != ZAP_ERR_MISMATCH && st != ZAP_ERR_INVALID_PARAM)
                return zap_coll_hier_stage_failed(comm, st);
            s->node_st = st;
            s->state = SH_ROOT_DRAIN;
            break;
        }
        case SH_ROOT_DRAIN: /* the root's sends to the other hosts; no other rank has requests here */
            if (op->nreqs > 0 && (st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->state = SH_STATUS;
            break;
        case SH_STATUS:
            if (s->node_st != ZAP_OK)
                zap_coll_agree_mark_bad_own(&op->hdr_own, op->comm->rank);
            if ((st = zap_coll_agree_init(op, op->form, PHASE_STATUS, NULL, 0, ZAP_DT_UINT8, ZAP_OP_SUM)) != ZAP_OK)
                return st;
            s->state = SH_DONE;
            break;
        case SH_DONE:
            st = zap_coll_agree_progress(op);
            if (st == ZAP_ERR_MISMATCH && s->node_st == ZAP_ERR_INVALID_PARAM)
                return ZAP_ERR_INVALID_PARAM;
            return st;
        }
    }
}

zap_status_t zap_scatterv_hier_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    zap_comm_t *comm = op->comm;
    if (op->form != ZAP_COLL_FORM_HIER || zap_coll_hier_children(comm) != ZAP_OK)
        return ZAP_ERR_UNSUPPORTED;
    scv_hier_t *s = (scv_hier_t *)op->alg_state;
    const zap_coll_hier_t *h = comm->hier;
    const zap_coll_topo_t *t = h->topo;
    memset(s, 0, sizeof(*s));
    s->state = SH_START;
    s->esize = zap_dtype_size(a->dt);
    /* counts (every host's on the root, which may have sends to all of them
     * in flight), then the node scatter's counts and displacements. */
    size_t n = (size_t)(comm->rank == a->root ? comm->size : h->nlocal);
    zap_status_t st = zap_coll_scratch(op, &op->scratch, n * 8 + 2 * (size_t)h->nlocal * sizeof(size_t));
    if (st != ZAP_OK)
        return st;
    s->counts = op->scratch.ptr;
    s->ncounts = (size_t *)(s->counts + n);
    s->ndispls = (ptrdiff_t *)(s->ncounts + h->nlocal);
    if (comm->rank == a->root) {
        /* The packing area: the largest other host's parts that need packing. */
        size_t most = 0;
        for (int g = 0; g < t->nhosts; g++)
            if (g != h->host && host_run(op, s, g) == NULL) {
                size_t b = pack_host(op, s, g, s->counts, NULL);
                most = b > most ? b : most;
            }
        if (most > 0 && (st = zap_coll_scratch(op, &op->scratch2, most)) != ZAP_OK)
            return st;
        s->packed = op->scratch2.ptr;
    }
    if ((st = zap_coll_hier_ticket(comm, &s->ticket)) != ZAP_OK)
        return st;
    s->ticketed = true;
    op->progress = progress;
    op->release = release;
    return ZAP_OK;
}
