/* The hosts' hierarchy of a communicator (hier.h): found from the
 * transport's host identities at the first call that asks, and its
 * communicators made at the first call that runs a stage on them. */
#include "coll/hier/hier.h"
#include "coll/allreduce/allreduce.h"
#include "coll/reduce_coll/reduce_coll.h"
#include "coll/reduce_scatter/reduce_scatter.h"
#include "coll/engine/op.h"
#include "base/log.h"
#include <stdlib.h>

static bool find(zap_comm_t *comm)
{
    if (!comm->set.hier || comm->size < 3) /* two ranks are flat whatever their hosts */
        return false;
    int p = comm->size;
    uint64_t *ids = malloc(sizeof(uint64_t) * (size_t)p);
    if (ids == NULL)
        return false; /* every rank fails alike only if all run short; flat is always correct */
    bool several = false;
    for (int r = 0; r < p; r++) {
        if (zap_transport_host(comm->t, zap_coll_transport_rank(comm, r), &ids[r]) != ZAP_OK)
            ids[r] = 0;
        several = several || ids[r] != ids[0];
    }
    zap_coll_topo_t *topo = NULL;
    zap_coll_hier_t *h = NULL;
    if (several && zap_coll_topo_build(ids, p, &topo) == ZAP_OK && zap_coll_topo_layered(topo) &&
        (h = calloc(1, sizeof(*h))) != NULL) {
        h->topo = topo;
        h->host = topo->host[comm->rank];
        h->local = topo->local[comm->rank];
        h->nlocal = topo->host_size[h->host];
        h->leader = zap_coll_topo_rank(topo, h->host, 0);
        h->slices = topo->min_host_size;
        h->lost = -1;
        comm->hier = h;
    } else {
        zap_coll_topo_free(topo);
    }
    free(ids);
    return comm->hier != NULL;
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int zap_coll_hier_count_hosts(const zap_comm_t *comm)
{
    uint64_t *ids = malloc(sizeof(uint64_t) * (size_t)comm->size);
    if (ids == NULL)
        return 1;
    for (int r = 0; r < comm->size; r++)
        if (zap_transport_host(comm->t, zap_coll_transport_rank(comm, r), &ids[r]) != ZAP_OK)
            ids[r] = 0;
    qsort(ids, (size_t)comm->size, sizeof(uint64_t), by_value);
    int n = 1;
    for (int r = 1; r < comm->size; r++)
        n += ids[r] != ids[r - 1];
    free(ids);
    return n;
}

bool zap_coll_hier_layered(zap_comm_t *comm)
{
    if (comm->layered < 0)
        comm->layered = find(comm) ? 1 : 0;
    return comm->layered == 1;
}

zap_status_t zap_coll_hier_children(zap_comm_t *comm)
{
    zap_coll_hier_t *h = comm->hier;
    if (h->children)
        return h->children_status;
    h->children = true;
    const zap_coll_topo_t *t = h->topo;
    zap_status_t st = ZAP_OK;
    if (comm->child_ctx == 0) {
        zap_error("coll: rank %d: communicator %u has no ids for its hierarchy", comm->rank, zap_coll_comm_id(comm));
        st = ZAP_ERR_INVALID_PARAM;
    }
    if (st == ZAP_OK && h->nlocal > 1)
        st = zap_coll_comm_child(comm, t->members + t->host_first[h->host], h->nlocal,
                                 ZAP_COLL_CTX_ZAP | comm->child_ctx, &h->node);
    if (st == ZAP_OK && h->local < h->slices) {
        int *ranks = malloc(sizeof(int) * (size_t)t->nhosts);
        if (ranks == NULL) {
            st = ZAP_ERR_NO_MEMORY;
        } else {
            for (int g = 0; g < t->nhosts; g++)
                ranks[g] = zap_coll_topo_rank(t, g, h->local);
            st = zap_coll_comm_child(comm, ranks, t->nhosts, ZAP_COLL_CTX_ZAP | zap_coll_id_wrap(comm->child_ctx + 1),
                                     &h->leaders);
            free(ranks);
            /* Recursive halving folds a host count that is not a power of
             * two: the folded hosts' partners send twice their share. The
             * ring sends 2(H-1)/H of a slice from every host. */
            if (st == ZAP_OK && (t->nhosts & (t->nhosts - 1)) != 0)
                h->leaders->set.alg[ZAP_COLL_ALLREDUCE] = ZAP_AR_RING;
            /* The hierarchical reduce documents host order at every size:
             * Rabenseifner keeps rank order for every root, where the
             * binomial tree would start at the root's host. The ring sends
             * each host's sum of the other hosts' parts once, n minus its own
             * part, the least a reduce-scatter can (recursive halving's fold
             * sends whole vectors where H is not a power of two). */
            if (st == ZAP_OK) {
                h->leaders->set.alg[ZAP_COLL_REDUCE] = ZAP_RD_RABENSEIFNER;
                h->leaders->set.alg[ZAP_COLL_REDUCE_SCATTER] = ZAP_RS_RING;
            }
        }
    }
    h->children_status = st;
    return st;
}

zap_status_t zap_coll_hier_ticket(zap_comm_t *comm, uint64_t *ticket_p)
{
    zap_coll_hier_t *h = comm->hier;
    if (h->tickets - h->serving >= ZAP_COLL_HIER_TURNS) {
        zap_error("coll: rank %d: more than %d hierarchical operations outstanding on communicator %u", comm->rank,
                  ZAP_COLL_HIER_TURNS, zap_coll_comm_id(comm));
        return ZAP_ERR_NO_RESOURCE;
    }
    *ticket_p = h->tickets++;
    return ZAP_OK;
}

void zap_coll_hier_done(zap_comm_t *comm, uint64_t ticket)
{
    zap_coll_hier_t *h = comm->hier;
    h->done[ticket % ZAP_COLL_HIER_TURNS] = true;
    while (h->serving < h->tickets && h->done[h->serving % ZAP_COLL_HIER_TURNS]) {
        h->done[h->serving % ZAP_COLL_HIER_TURNS] = false;
        h->serving++;
    }
}

zap_status_t zap_coll_hier_stage_failed(zap_comm_t *comm, zap_status_t st)
{
    if (st != ZAP_ERR_PEER_FAILED)
        return st;
    double until = zap_clock_now() + 0.1;
    while (zap_clock_now() < until)
        (void)zap_transport_progress(comm->t);
    return st;
}

zap_status_t zap_coll_hier_stage_test(zap_coll_op_t *op, zap_request_t **req)
{
    zap_comm_t *comm = op->comm;
    if (*req == NULL)
        return ZAP_OK;
    int done = 0;
    zap_status_t st = zap_request_test(*req, &done);
    if (!done && st == ZAP_OK)
        return ZAP_INPROGRESS;
    const zap_coll_op_t *stage = (const zap_coll_op_t *)*req; /* a collective request is its operation's first member */
    if (st == ZAP_ERR_PEER_FAILED && comm->hier->lost < 0)
        comm->hier->lost = stage->culprit >= 0 ? stage->culprit : stage->comm->revoke_culprit;
    if (st == ZAP_ERR_PEER_FAILED && op->culprit < 0)
        op->culprit = comm->hier->lost;
    zap_request_free(*req);
    *req = NULL;
    return zap_coll_hier_stage_failed(comm, st);
}

void zap_coll_hier_abandon(zap_comm_t *comm, zap_request_t *req)
{
    if (req == NULL)
        return;
    /* A collective request is the operation's first member (engine/op.h). */
    zap_coll_op_t *op = (zap_coll_op_t *)req;
    if (op->status == ZAP_INPROGRESS) {
        op->timed_out = true; /* what stops free from finishing a shared-memory call first */
        int lost = comm->hier != NULL ? comm->hier->lost : -1;
        if (lost < 0 && comm->revoke_status == ZAP_ERR_PEER_FAILED)
            lost = comm->revoke_culprit;
        if (lost >= 0) {
            op->abandoned_for = ZAP_ERR_PEER_FAILED;
            op->culprit = lost;
        }
    }
    zap_request_free(req);
}

void zap_coll_hier_free(zap_comm_t *comm)
{
    zap_coll_hier_t *h = comm->hier;
    if (h == NULL)
        return;
    zap_comm_destroy(h->node);
    zap_comm_destroy(h->leaders);
    zap_coll_topo_free(h->topo);
    free(h);
    comm->hier = NULL;
}
