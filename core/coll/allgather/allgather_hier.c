/* Hierarchical allgather(v), for communicators whose ranks span several
 * hosts (coll/hier/hier.h; docs/collectives.md, "Across hosts"):
 *   1. the node's allgather puts the host's blocks in place on each of its
 *      ranks;
 *   2. each leader packs its host's blocks (in local-rank order) and the
 *      leaders allgather the hosts' packs (a ring among H: each host
 *      receives the others' blocks once, the least possible, where the flat
 *      ring sends nearly the whole result through every host boundary it
 *      crosses);
 *   3. the leader broadcasts the packs on its node, and every rank unpacks
 *      the other hosts' blocks into place.
 * counts must be the same on every rank (the argument header checks it, as
 * for the flat ring). */
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/hier/hier.h"
#include <string.h>

typedef enum { AH_START, AH_NODE_WAIT, AH_ACROSS_WAIT, AH_DOWN_WAIT, AH_DONE } ah_state_t;

typedef struct ag_hier {
    ah_state_t state;
    size_t esize, total;
    size_t *ncounts;
    ptrdiff_t *ndispls; /* the node allgather's (nlocal each) */
    size_t *hcounts;
    ptrdiff_t *hdispls; /* the leaders' allgather: each host's pack (nhosts each) */
    char *packs;               /* every host's pack, by host (scratch2) */
    zap_request_t *req;
    uint64_t ticket; /* its turn on the hierarchy's communicators (hier.h) */
    bool ticketed;
} ag_hier_t;
_Static_assert(sizeof(ag_hier_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static size_t count_of(const zap_coll_args_t *a, int r) { return a->counts ? a->counts[r] : a->count; }
static ptrdiff_t displ_of(const zap_coll_args_t *a, int r)
{
    return a->counts ? a->displs[r] : (ptrdiff_t)((size_t)r * a->count);
}

static void release(zap_coll_op_t *op)
{
    ag_hier_t *s = (ag_hier_t *)op->alg_state;
    zap_coll_hier_abandon(op->comm, s->req);
    s->req = NULL;
    zap_coll_hier_give_back(op->comm, s->ticket, &s->ticketed);
}

/* Packs (to_pack) or unpacks host g's blocks between the packs and recvbuf. */
static void move_host(zap_coll_op_t *op, ag_hier_t *s, int g, bool to_pack)
{
    const zap_coll_args_t *a = &op->args;
    const zap_coll_topo_t *t = op->comm->hier->topo;
    char *pack = s->packs + s->hdispls[g] * s->esize;
    for (int l = 0; l < t->host_size[g]; l++) {
        int r = zap_coll_topo_rank(t, g, l);
        char *at = (char *)a->dst + displ_of(a, r) * (ptrdiff_t)s->esize;
        size_t bytes = count_of(a, r) * s->esize;
        if (to_pack)
            zap_coll_copy(op, pack, at, bytes);
        else
            zap_coll_copy(op, at, pack, bytes);
        pack += bytes;
    }
}

static zap_status_t progress(zap_coll_op_t *op)
{
    ag_hier_t *s = (ag_hier_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    const zap_coll_hier_t *h = op->comm->hier;
    const zap_coll_topo_t *t = h->topo;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case AH_START:
            if (!zap_coll_hier_turn(op->comm, s->ticket))
                return ZAP_INPROGRESS; /* an earlier operation still posts on the same communicators */
            if (h->node == NULL) {
                if (a->src != NULL)
                    zap_coll_copy(op, (char *)a->dst + displ_of(a, op->comm->rank) * (ptrdiff_t)s->esize, a->src,
                                  count_of(a, op->comm->rank) * s->esize);
                s->state = AH_NODE_WAIT;
                break;
            }
            if ((st = zap_iallgatherv(h->node, a->src != NULL ? a->src : ZAP_IN_PLACE, count_of(a, op->comm->rank),
                                      a->dst, s->ncounts, s->ndispls, a->dt, &s->req)) != ZAP_OK)
                return st;
            s->state = AH_NODE_WAIT;
            break;
        case AH_NODE_WAIT:
            if ((st = zap_coll_hier_stage_test(op, &s->req)) != ZAP_OK)
                return st;
            if (h->local == 0) {
                move_host(op, s, h->host, true);
                if ((st = zap_iallgatherv(h->leaders, ZAP_IN_PLACE, s->hcounts[h->host], s->packs, s->hcounts,
                                          s->hdispls, a->dt, &s->req)) != ZAP_OK)
                    return st;
            }
            s->state = AH_ACROSS_WAIT;
            break;
        case AH_ACROSS_WAIT:
            if ((st = zap_coll_hier_stage_test(op, &s->req)) != ZAP_OK)
                return st;
            if (h->node != NULL && (st = zap_ibcast(h->node, s->packs, s->total, a->dt, 0, &s->req)) != ZAP_OK)
                return st;
            s->state = AH_DOWN_WAIT;
            break;
        case AH_DOWN_WAIT:
            if ((st = zap_coll_hier_stage_test(op, &s->req)) != ZAP_OK)
                return st;
            for (int g = 0; g < t->nhosts; g++)
                if (g != h->host)
                    move_host(op, s, g, false);
            zap_coll_hier_give_back(op->comm, s->ticket, &s->ticketed);
            s->state = AH_DONE;
            return ZAP_OK;
        case AH_DONE:
            return ZAP_OK;
        }
    }
}

zap_status_t zap_allgatherv_hier_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    zap_comm_t *comm = op->comm;
    if (op->form != ZAP_COLL_FORM_HIER || zap_coll_hier_children(comm) != ZAP_OK)
        return ZAP_ERR_UNSUPPORTED;
    ag_hier_t *s = (ag_hier_t *)op->alg_state;
    const zap_coll_hier_t *h = comm->hier;
    const zap_coll_topo_t *t = h->topo;
    memset(s, 0, sizeof(*s));
    s->state = AH_START;
    s->esize = zap_dtype_size(a->dt);
    size_t nl = (size_t)h->nlocal, nh = (size_t)t->nhosts;
    zap_status_t st = zap_coll_scratch(op, &op->scratch, (2 * nl + 2 * nh) * sizeof(size_t));
    if (st != ZAP_OK)
        return st;
    s->ncounts = op->scratch.ptr;
    s->ndispls = (ptrdiff_t *)(s->ncounts + nl);
    s->hcounts = (size_t *)(s->ndispls + nl);
    s->hdispls = (ptrdiff_t *)(s->hcounts + nh);
    for (size_t l = 0; l < nl; l++) {
        int r = zap_coll_topo_rank(t, h->host, (int)l);
        s->ncounts[l] = count_of(a, r);
        s->ndispls[l] = displ_of(a, r);
    }
    s->total = 0;
    for (int g = 0; g < t->nhosts; g++) {
        s->hdispls[g] = (ptrdiff_t)s->total;
        s->hcounts[g] = 0;
        for (int l = 0; l < t->host_size[g]; l++)
            s->hcounts[g] += count_of(a, zap_coll_topo_rank(t, g, l));
        s->total += s->hcounts[g];
    }
    if ((st = zap_coll_scratch(op, &op->scratch2, s->total * s->esize)) != ZAP_OK)
        return st;
    s->packs = op->scratch2.ptr;
    if ((st = zap_coll_hier_ticket(comm, &s->ticket)) != ZAP_OK)
        return st;
    s->ticketed = true;
    op->progress = progress;
    op->release = release;
    return ZAP_OK;
}
