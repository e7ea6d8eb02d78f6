/* The hierarchical form's one-way broadcast (agree.h), for small broadcasts
 * whose ranks span several hosts (bcast/bcast_hier.c): the root's header and
 * data go down a tree and nothing comes back.
 *
 * Each host has a sender: the root on the root's host, the leader (local
 * rank 0) elsewhere. The senders form patterns.h's binomial tree over the
 * hosts numbered from the root's (v = host - root's host, mod H), children
 * largest subtree first. A sender, once it holds the data, sends to
 * its children hosts' senders, then to every other rank of its host. So
 * each host receives the message once, ceil(log2 H) network hops from the
 * root, one more inside the host; a rank other than a sender receives one
 * message and sends none.
 *
 * One way, as Open MPI's eager broadcasts: the root returns once its sends
 * have completed, and a stream of broadcasts needs no round trip per call,
 * where the two-way exchange (agree_hier.c) cost every call up, across and
 * down. What it leaves to the receivers: each combines the header it
 * receives with its own, so a receiver whose count, datatype or root
 * differs from its sender's fails with ZAP_ERR_MISMATCH (a wrong length
 * marks the header bad), forwards what it has (its children fail too) and
 * revokes the communicator (shm_lone): every rank fails that call or its
 * next one. The root learns of it only through the revocation. A rank that
 * takes another rank for the root waits for a sender that may never send:
 * where no rank takes itself for the root, no message moves and the call
 * waits like Open MPI's, until ZAP_TIMEOUT where it is set
 * (docs/collectives.md, "Across hosts"). */
#include "coll/agree/agree.h"
#include "coll/comm_impl.h"
#include "coll/engine/step.h"
#include "coll/hier/hier.h"
#include "coll/patterns/patterns.h"

#define STEP_ACROSS 1
#define STEP_LOCAL 2

enum { TREE_START = ZAP_AGREE_START, TREE_RECV = 110, TREE_SEND, TREE_SEND_WAIT, TREE_DONE = ZAP_AGREE_DONE };

static void to(zap_coll_agree_t *ag, int state) { ag->state = (zap_coll_agree_state_t)state; }

/* Host h's sender for a broadcast from root. */
static int sender_of(const zap_coll_topo_t *t, int h, int root)
{
    return t->host[root] == h ? root : zap_coll_topo_rank(t, h, 0);
}

/* The i-th rank this sender sends to (children hosts' senders, largest
 * subtree first, then its host's other ranks in local order), or -1. */
static int target(const zap_coll_op_t *op, int i)
{
    const zap_coll_hier_t *h = op->comm->hier;
    const zap_coll_topo_t *t = h->topo;
    int H = t->nhosts, rh = t->host[op->agree.root], v = zap_pat_vrank(h->host, rh, H);
    for (int m = zap_pat_binomial_top(v, H); m >= 1; m /= 2) {
        if (v + m >= H)
            continue;
        if (i-- == 0)
            return sender_of(t, zap_pat_realrank(v + m, rh, H), op->agree.root);
    }
    for (int l = 0; l < h->nlocal; l++) {
        int r = zap_coll_topo_rank(t, h->host, l);
        if (r != op->comm->rank && i-- == 0)
            return r;
    }
    return -1;
}

zap_status_t zap_coll_agree_tree_progress(zap_coll_op_t *op)
{
    zap_coll_agree_t *ag = &op->agree;
    const zap_coll_hier_t *h = op->comm->hier;
    const zap_coll_topo_t *t = h->topo;
    int rank = op->comm->rank, H = t->nhosts, rh = t->host[ag->root];
    bool sender = rank == sender_of(t, h->host, ag->root);
    zap_status_t st;
    for (;;) {
        switch ((int)ag->state) {
        case TREE_START: {
            ag->mask = 0; /* the sends posted so far (target's i) */
            if (rank == ag->root) {
                to(ag, TREE_SEND);
                break;
            }
            int parent = zap_pat_realrank(zap_pat_binomial_parent(zap_pat_vrank(h->host, rh, H)), rh, H);
            int from = sender_of(t, sender ? parent : h->host, ag->root);
            ag->expect = ag->msg_bytes;
            if ((st = zap_coll_recv(op, from, ag->phase, sender ? STEP_ACROSS : STEP_LOCAL, ag->in, ag->msg_bytes,
                                    &ag->in_len, &ag->in_st)) != ZAP_OK)
                return st;
            to(ag, TREE_RECV);
            break;
        }
        case TREE_RECV:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if ((st = zap_coll_agree_combine(op, true)) != ZAP_OK)
                return st;
            to(ag, sender ? TREE_SEND : TREE_DONE);
            break;
        case TREE_SEND:
            /* As many as the operation's requests hold at a time. */
            for (int r; op->nreqs < ZAP_COLL_MAX_REQS && (r = target(op, ag->mask)) >= 0; ag->mask++) {
                int step = t->host[r] == h->host ? STEP_LOCAL : STEP_ACROSS;
                if ((st = zap_coll_send(op, r, ag->phase, step, ag->acc, ag->msg_bytes)) != ZAP_OK)
                    return st;
            }
            to(ag, TREE_SEND_WAIT);
            break;
        case TREE_SEND_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            to(ag, target(op, ag->mask) >= 0 ? TREE_SEND : TREE_DONE);
            break;
        case TREE_DONE:
            return zap_coll_agree_verdict(op);
        default:
            return ZAP_ERR_INVALID_PARAM; /* not reached: every state is handled above */
        }
    }
}
