/* Hierarchical reduce (rooted), for communicators whose ranks span several
 * hosts (coll/hier/hier.h; docs/collectives.md, "Across hosts").
 *
 * Small vectors (up to ZAP_AR_HIER_SMALL_BYTES) ride the hierarchical
 * agreement (agree/agree_hier.c) as the allreduce's do, and the root copies
 * the result out: the header exchange is needed anyway, so the data costs
 * no round of its own.
 *
 * Larger ones, after the agreement, in three stages:
 *   A  the node's reduce to local rank 0 (the host's leader): the host sum;
 *   B  the leaders' reduce of the host sums to the leader of the root's host
 *      (leaders' communicator 0, pinned to Rabenseifner by hier.c): each
 *      host sends (H-1)/H of the vector in its halving and the gather brings
 *      the rest to the root's host, where a flat tree would send whole
 *      vectors across for every edge;
 *   C  when the root is not its host's leader, the leader sends it the
 *      result (inside the host).
 * The node's reduce is rooted at local rank 0 rather than at the root, so
 * the host's order does not depend on the root; C costs one copy inside a
 * host.
 *
 * Reduction order (commutative ops only: the table requires it, and a
 * non-commutative call takes a flat candidate in rank order): on host h,
 * S[h] = ((x[l0] op x[l1]) op x[l2]) ... in local-rank order (every node
 * algorithm reduces in rank order towards rank 0); across hosts the leaders'
 * Rabenseifner reduce, rank order for every op, i.e. (S[0] op S[1]) op ...
 * S[H-1] in host order; the small form combines the hosts by recursive
 * doubling ((lower hosts) op (higher hosts)), the same order up to
 * association. Hosts are numbered by their lowest rank. */
#include "coll/reduce_coll/reduce_coll.h"
#include "coll/allreduce/allreduce.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include "coll/hier/hier.h"
#include <string.h>

#define PHASE_DATA 1

typedef enum { RH_START, RH_NODE_WAIT, RH_ACROSS_WAIT, RH_FINAL_WAIT } rh_state_t;

typedef struct reduce_hier {
    rh_state_t state;
    size_t bytes;
    const char *sum;   /* a leader's host sum: scratch, the root's recvbuf, or its own input when alone */
    zap_request_t *req;
    uint64_t ticket;   /* its turn on the hierarchy's communicators (hier.h) */
    bool ticketed;
} reduce_hier_t;
_Static_assert(sizeof(reduce_hier_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static void release(zap_coll_op_t *op)
{
    reduce_hier_t *s = (reduce_hier_t *)op->alg_state;
    zap_coll_hier_abandon(op->comm, s->req);
    s->req = NULL;
    zap_coll_hier_give_back(op->comm, s->ticket, &s->ticketed);
}

static zap_status_t progress(zap_coll_op_t *op)
{
    reduce_hier_t *s = (reduce_hier_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    zap_comm_t *comm = op->comm;
    const zap_coll_hier_t *h = comm->hier;
    int rank = comm->rank, root_host = h->topo->host[a->root];
    bool is_root = rank == a->root, leader = h->local == 0;
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case RH_START:
            if (!zap_coll_hier_turn(comm, s->ticket))
                return ZAP_INPROGRESS; /* an earlier operation still posts on the same communicators */
            if (h->node == NULL) {
                s->sum = a->src; /* alone on its host: the host sum is its own vector */
            } else if (leader) {
                char *into = is_root ? a->dst : op->scratch.ptr;
                const void *from = is_root && a->src == a->dst ? ZAP_IN_PLACE : a->src;
                if ((st = zap_ireduce(h->node, from, into, a->count, a->dt, a->op, 0, &s->req)) != ZAP_OK)
                    return st;
                s->sum = into;
            } else if ((st = zap_ireduce(h->node, a->src, NULL, a->count, a->dt, a->op, 0, &s->req)) != ZAP_OK) {
                return st;
            }
            s->state = RH_NODE_WAIT;
            break;
        case RH_NODE_WAIT:
            if ((st = zap_coll_hier_stage_test(op, &s->req)) != ZAP_OK)
                return st;
            if (leader) {
                /* The root's host's leader receives in place: into the root's
                 * recvbuf when it is the root, else into its scratch. */
                const void *from = s->sum;
                void *into = NULL;
                if (h->host == root_host) {
                    into = is_root ? a->dst : op->scratch.ptr;
                    if (s->sum == into)
                        from = ZAP_IN_PLACE;
                }
                if ((st = zap_ireduce(h->leaders, from, into, a->count, a->dt, a->op, root_host, &s->req)) != ZAP_OK)
                    return st;
            }
            s->state = RH_ACROSS_WAIT;
            break;
        case RH_ACROSS_WAIT:
            if ((st = zap_coll_hier_stage_test(op, &s->req)) != ZAP_OK)
                return st;
            zap_coll_hier_give_back(comm, s->ticket, &s->ticketed);
            if (h->host == root_host && a->root != h->leader) {
                st = ZAP_OK;
                if (leader)
                    st = zap_coll_send(op, a->root, PHASE_DATA, 0, op->scratch.ptr, s->bytes);
                else if (is_root)
                    st = zap_coll_recv(op, h->leader, PHASE_DATA, 0, a->dst, s->bytes, NULL, NULL);
                if (st != ZAP_OK)
                    return st;
            }
            s->state = RH_FINAL_WAIT;
            break;
        case RH_FINAL_WAIT:
            return zap_coll_step_test(op);
        }
    }
}

static zap_status_t finish_small(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    if (op->comm->rank == a->root)
        zap_coll_copy(op, a->dst, zap_coll_agree_result(op), a->count * zap_dtype_size(a->dt));
    return ZAP_OK;
}

static zap_status_t init_large(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    zap_comm_t *comm = op->comm;
    if (zap_coll_hier_children(comm) != ZAP_OK)
        return ZAP_ERR_UNSUPPORTED; /* every rank fails alike (nothing but memory can fail) */
    reduce_hier_t *s = (reduce_hier_t *)op->alg_state;
    const zap_coll_hier_t *h = comm->hier;
    memset(s, 0, sizeof(*s));
    s->state = RH_START;
    s->bytes = a->count * zap_dtype_size(a->dt);
    zap_status_t st;
    /* A leader other than the root sums its host into scratch. */
    if (h->local == 0 && comm->rank != a->root && h->node != NULL &&
        (st = zap_coll_scratch(op, &op->scratch, s->bytes)) != ZAP_OK)
        return st;
    if ((st = zap_coll_hier_ticket(comm, &s->ticket)) != ZAP_OK)
        return st;
    s->ticketed = true;
    op->progress = progress;
    op->release = release;
    return ZAP_OK;
}

zap_status_t zap_reduce_hier_init(zap_coll_op_t *op)
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
