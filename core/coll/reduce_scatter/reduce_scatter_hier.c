/* Hierarchical reduce_scatter and reduce_scatter_block, for communicators
 * whose ranks span several hosts (coll/hier/hier.h; docs/collectives.md,
 * "Across hosts").
 *
 * Small vectors (up to ZAP_AR_HIER_SMALL_BYTES, the whole vector) ride the
 * hierarchical agreement as the allreduce's do, and every rank copies its
 * part out of the result: fewer rounds than any exchange of parts.
 *
 * Larger ones, after the agreement, in three stages:
 *   A  the node's reduce of the whole vector to local rank 0 (the host's
 *      leader): the host sum;
 *   B  the leader packs the host sum by host (host g's ranks' parts, in
 *      local-rank order, one after the other) and the leaders reduce-scatter
 *      the packs (leaders' communicator 0, pinned to the ring by hier.c), so
 *      leader g ends with host g's parts reduced over every host. Host g
 *      sends the vector less its own parts, n - n_g: (H-1)/H of it where the
 *      hosts' parts are equal, the least any reduce-scatter sends (every
 *      other host's parts need this host's contribution);
 *   C  the node's scatterv of those parts from the leader.
 *
 * Reduction order (commutative ops only: the table requires it): on host h,
 * S[h] = ((x[l0] op x[l1]) op ...) in local-rank order (every node reduce is
 * in rank order towards rank 0); across hosts the leaders' ring, so host g's
 * parts are ((S[g+1] op S[g+2]) op ... S[g-1]) op S[g], hosts taken cyclically
 * from the one after g. The small form: local-rank order, then recursive
 * doubling over the hosts ((lower hosts) op (higher hosts)). Every element is
 * computed on one rank and copied. */
#include "coll/reduce_scatter/reduce_scatter.h"
#include "coll/allreduce/allreduce.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/hier/hier.h"
#include <string.h>

typedef enum { RSH_START, RSH_NODE_WAIT, RSH_ACROSS_WAIT, RSH_DOWN_WAIT } rsh_state_t;

typedef struct rs_hier {
    rsh_state_t state;
    size_t esize;
    const char *sum;    /* the leader's host sum: acc, or its own input when alone */
    char *acc;          /* the leader's room for its host sum, after the tables in scratch */
    char *packs;        /* the leader's host sum packed by host (scratch2) */
    size_t *offs;       /* [p]: each rank's part's start in the whole vector */
    size_t *hcounts;    /* [H]: each host's pack */
    size_t *ncounts;
    ptrdiff_t *ndispls; /* [nlocal] each: the node scatterv's, in this host's pack */
    zap_request_t *req;
    uint64_t ticket;    /* its turn on the hierarchy's communicators (hier.h) */
    bool ticketed;
} rs_hier_t;
_Static_assert(sizeof(rs_hier_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static void release(zap_coll_op_t *op)
{
    rs_hier_t *s = (rs_hier_t *)op->alg_state;
    zap_coll_hier_abandon(op->comm, s->req);
    s->req = NULL;
    zap_coll_hier_give_back(op->comm, s->ticket, &s->ticketed);
}

/* The host sum into the packs: host by host, each host's ranks' parts in
 * local-rank order. */
static void pack(zap_coll_op_t *op, rs_hier_t *s)
{
    const zap_coll_args_t *a = &op->args;
    const zap_coll_topo_t *t = op->comm->hier->topo;
    char *at = s->packs;
    for (int i = 0; i < t->size; i++) {
        int r = t->members[i];
        size_t bytes = zap_rs_count(a, r) * s->esize;
        zap_coll_copy(op, at, s->sum + s->offs[r] * s->esize, bytes);
        at += bytes;
    }
}

static zap_status_t progress(zap_coll_op_t *op)
{
    rs_hier_t *s = (rs_hier_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    zap_comm_t *comm = op->comm;
    const zap_coll_hier_t *h = comm->hier;
    bool leader = h->local == 0;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case RSH_START:
            if (!zap_coll_hier_turn(comm, s->ticket))
                return ZAP_INPROGRESS; /* an earlier operation still posts on the same communicators */
            if (h->node == NULL) {
                s->sum = a->src; /* alone on its host: the host sum is its own vector */
            } else {
                void *into = leader ? s->acc : NULL;
                if ((st = zap_ireduce(h->node, a->src, into, a->count, a->dt, a->op, 0, &s->req)) != ZAP_OK)
                    return st;
                s->sum = into;
            }
            s->state = RSH_NODE_WAIT;
            break;
        case RSH_NODE_WAIT:
            if ((st = zap_coll_hier_stage_test(op, &s->req)) != ZAP_OK)
                return st;
            if (leader) {
                pack(op, s);
                if ((st = zap_ireduce_scatter(h->leaders, ZAP_IN_PLACE, s->packs, s->hcounts, a->dt, a->op,
                                              &s->req)) != ZAP_OK)
                    return st;
            }
            s->state = RSH_ACROSS_WAIT;
            break;
        case RSH_ACROSS_WAIT: {
            if ((st = zap_coll_hier_stage_test(op, &s->req)) != ZAP_OK)
                return st;
            size_t mine = zap_rs_count(a, comm->rank);
            if (h->node == NULL)
                zap_coll_copy(op, a->dst, s->packs, mine * s->esize);
            else if ((st = zap_iscatterv(h->node, leader ? s->packs : NULL, s->ncounts, s->ndispls, a->dst, mine,
                                         a->dt, 0, &s->req)) != ZAP_OK)
                return st;
            s->state = RSH_DOWN_WAIT;
            break;
        }
        case RSH_DOWN_WAIT:
            if ((st = zap_coll_hier_stage_test(op, &s->req)) != ZAP_OK)
                return st;
            zap_coll_hier_give_back(comm, s->ticket, &s->ticketed);
            return ZAP_OK;
        }
    }
}

static zap_status_t finish_small(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    size_t es = zap_dtype_size(a->dt);
    const char *all = zap_coll_agree_result(op);
    int r = op->comm->rank;
    zap_coll_copy(op, a->dst, all + zap_rs_offset(a, r) * es, zap_rs_count(a, r) * es);
    return ZAP_OK;
}

static zap_status_t init_large(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    zap_comm_t *comm = op->comm;
    if (zap_coll_hier_children(comm) != ZAP_OK)
        return ZAP_ERR_UNSUPPORTED; /* every rank fails alike (nothing but memory can fail) */
    rs_hier_t *s = (rs_hier_t *)op->alg_state;
    const zap_coll_hier_t *h = comm->hier;
    const zap_coll_topo_t *t = h->topo;
    memset(s, 0, sizeof(*s));
    s->state = RSH_START;
    s->esize = zap_dtype_size(a->dt);
    zap_status_t st;
    if (h->local == 0) {
        /* The tables, then (where the host has other ranks) its sum, in
         * scratch; the packs in scratch2. */
        size_t p = (size_t)t->size, nh = (size_t)t->nhosts, nl = (size_t)h->nlocal;
        size_t tables = (p + nh + 2 * nl) * sizeof(size_t);
        size_t sum = h->node != NULL ? a->count * s->esize : 0;
        if ((st = zap_coll_scratch(op, &op->scratch, tables + sum)) != ZAP_OK ||
            (st = zap_coll_scratch(op, &op->scratch2, a->count * s->esize)) != ZAP_OK)
            return st;
        s->offs = op->scratch.ptr;
        s->hcounts = s->offs + p;
        s->ncounts = s->hcounts + nh;
        s->ndispls = (ptrdiff_t *)(s->ncounts + nl);
        s->packs = op->scratch2.ptr;
        size_t at = 0;
        for (int r = 0; r < t->size; r++) {
            s->offs[r] = at;
            at += zap_rs_count(a, r);
        }
        for (int g = 0; g < t->nhosts; g++) {
            s->hcounts[g] = 0;
            for (int l = 0; l < t->host_size[g]; l++) {
                size_t c = zap_rs_count(a, zap_coll_topo_rank(t, g, l));
                if (g == h->host) {
                    s->ncounts[l] = c;
                    s->ndispls[l] = (ptrdiff_t)s->hcounts[g];
                }
                s->hcounts[g] += c;
            }
        }
        s->acc = (char *)op->scratch.ptr + tables; /* after the tables, which keep their alignment */
    }
    if ((st = zap_coll_hier_ticket(comm, &s->ticket)) != ZAP_OK)
        return st;
    s->ticketed = true;
    op->progress = progress;
    op->release = release;
    return ZAP_OK;
}

zap_status_t zap_reduce_scatter_hier_init(zap_coll_op_t *op)
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
