/* The agreement through the hosts' hierarchy (agree.h), for communicators
 * whose ranks span several hosts (coll/hier/hier.h), header and optional
 * payload:
 *
 *   up      every rank sends its header (and payload) to its host's leader
 *           (local rank 0); the leader combines them in local-rank order;
 *   across  the leaders combine their hosts' results by recursive doubling
 *           over the hosts (agree_rd.c's rounds, fold included, with the
 *           hosts in place of the ranks);
 *   down    each leader sends the result to its host's ranks.
 *
 * So a host's ranks cross the network once, through their leader: log2(H)
 * rounds between hosts (+2 when H is not a power of two) instead of the
 * flat exchange's log2(p), and no message between a rank and another host's
 * non-leader. Ranks on one host talk over the transport's shared memory.
 *
 * Reduction order: on host h, x = ((x[l0] op x[l1]) op x[l2]) ... over its
 * ranks in local-rank order (their order in the communicator); across hosts,
 * recursive doubling on the host sums, every combination being (lower host)
 * op (higher host), hosts numbered by their lowest rank. Both partners of a
 * round compute the same expression; every rank receives its leader's final
 * bytes: identical bytes everywhere.
 *
 * Broadcast mode: the root sends its data up, the others their header only;
 * among the leaders a side sends the data once its subcube of hosts holds it
 * (the root's host first); every leader sends the data down. A message of
 * the wrong length only marks the header bad, as in the other forms, so
 * ranks that disagree still exchange the same messages. */
#include "coll/agree/agree.h"
#include "coll/comm_impl.h"
#include "coll/engine/step.h"
#include "coll/hier/hier.h"
#include "coll/patterns/patterns.h"

/* Steps of the phase: the rounds among leaders use 0 (fold), 1.. (rounds)
 * and STEP_UNFOLD; up and down are between a host's ranks, never between
 * two leaders, so their steps only need to differ from each other. */
#define STEP_FOLD 0
#define STEP_UP 252
#define STEP_DOWN 253
#define STEP_UNFOLD ZAP_COLL_STEP_MAX

/* The exchange's states beyond the shared ones (agree.h): reused names
 * keep the switch readable; the hierarchy's meaning is given per case. */
enum {
    HIER_START = ZAP_AGREE_START,
    HIER_UP = 100,      /* a non-leader: its header sent up, the result awaited */
    HIER_GATHER,        /* a leader: receiving local rank ag->mask's contribution */
    HIER_ACROSS_START,  /* a leader: the rounds among leaders begin */
    HIER_FOLD_IN,       /* a leader: the fold of the extra hosts */
    HIER_ROUND_POST,
    HIER_ROUND_WAIT,
    HIER_FOLD_OUT,
    HIER_FOLD_OUT_WAIT,
    HIER_DOWN,          /* a leader: sending the result to its host */
    HIER_DOWN_WAIT,
    HIER_DONE = ZAP_AGREE_DONE
};

static void to(zap_coll_agree_t *ag, int state) { ag->state = (zap_coll_agree_state_t)state; }

static int leader_of(const zap_coll_topo_t *t, int host) { return zap_coll_topo_rank(t, host, 0); }

/* Whether this rank sends its payload (not just its header) up. */
static bool sends_data(const zap_coll_agree_t *ag, int rank) { return ag->root < 0 || ag->root == rank; }

/* A received message combined into acc; in is the lower operand when
 * in_lower. expect is the length it must have. */
static zap_status_t take(zap_coll_op_t *op, size_t expect, bool in_lower)
{
    op->agree.expect = expect;
    return zap_coll_agree_combine(op, in_lower);
}

/* The leaders' rounds: recursive doubling over the hosts, host g's leader
 * being newrank zap_pat_rd_newrank(g, H). ag->newrank and ag->mask as in
 * agree_rd.c; root_nr is the active newrank holding a broadcast's data. */
static zap_status_t across_start(zap_coll_op_t *op, const zap_coll_hier_t *h)
{
    zap_coll_agree_t *ag = &op->agree;
    const zap_coll_topo_t *t = h->topo;
    int H = t->nhosts, me = h->host, rem = H - zap_pat_pof2(H);
    ag->newrank = zap_pat_rd_newrank(me, H);
    ag->mask = 1;
    if (ag->root >= 0) {
        int rh = t->host[ag->root];
        ag->root_nr = rh < 2 * rem ? rh / 2 : rh - rem;
    }
    if (me >= 2 * rem) {
        to(ag, HIER_ROUND_POST);
        return ZAP_OK;
    }
    bool data_here = ag->root < 0 || t->host[ag->root] == me;
    if (ag->newrank < 0) /* folded out: hand everything to the host above */
        return zap_coll_send(op, leader_of(t, me + 1), ag->phase, STEP_FOLD, ag->acc,
                             data_here ? ag->msg_bytes : sizeof(zap_coll_hdr_t));
    return zap_coll_recv(op, leader_of(t, me - 1), ag->phase, STEP_FOLD, ag->in, ag->msg_bytes, &ag->in_len,
                         &ag->in_st);
}

static zap_status_t round_post(zap_coll_op_t *op, const zap_coll_hier_t *h)
{
    zap_coll_agree_t *ag = &op->agree;
    const zap_coll_topo_t *t = h->topo;
    int H = t->nhosts, pnr = ag->newrank ^ ag->mask, partner = leader_of(t, zap_pat_rd_realrank(pnr, H));
    int step = 1;
    for (int m = ag->mask; m > 1; m >>= 1)
        step++;
    size_t send_len = ag->msg_bytes;
    ag->expect = ag->msg_bytes;
    if (ag->root >= 0) {
        if ((ag->newrank ^ ag->root_nr) >= ag->mask)
            send_len = sizeof(zap_coll_hdr_t);
        if ((pnr ^ ag->root_nr) >= ag->mask)
            ag->expect = sizeof(zap_coll_hdr_t);
    }
    zap_status_t st = zap_coll_recv(op, partner, ag->phase, step, ag->in, ag->msg_bytes, &ag->in_len, &ag->in_st);
    if (st == ZAP_OK)
        st = zap_coll_send(op, partner, ag->phase, step, ag->acc, send_len);
    return st;
}

/* A leader sends the result to its host's other ranks, at most a step's
 * worth of requests at a time (ag->mask: the next local rank). */
static zap_status_t down_post(zap_coll_op_t *op, const zap_coll_hier_t *h)
{
    zap_coll_agree_t *ag = &op->agree;
    zap_status_t st = ZAP_OK;
    for (; ag->mask < h->nlocal && op->nreqs < ZAP_COLL_MAX_REQS && st == ZAP_OK; ag->mask++)
        st = zap_coll_send(op, zap_coll_topo_rank(h->topo, h->host, ag->mask), ag->phase, STEP_DOWN, ag->acc,
                           ag->msg_bytes);
    return st;
}

zap_status_t zap_coll_agree_hier_progress(zap_coll_op_t *op)
{
    zap_coll_agree_t *ag = &op->agree;
    const zap_coll_hier_t *h = op->comm->hier;
    const zap_coll_topo_t *t = h->topo;
    int rank = op->comm->rank, H = t->nhosts, rem = H - zap_pat_pof2(H);
    zap_status_t st;
    for (;;) {
        switch ((int)ag->state) {
        case HIER_START:
            if (h->local != 0) {
                st = zap_coll_send(op, h->leader, ag->phase, STEP_UP, ag->acc,
                                   sends_data(ag, rank) ? ag->msg_bytes : sizeof(zap_coll_hdr_t));
                if (st == ZAP_OK)
                    st = zap_coll_recv(op, h->leader, ag->phase, STEP_DOWN, ag->in, ag->msg_bytes, &ag->in_len,
                                       &ag->in_st);
                if (st != ZAP_OK)
                    return st;
                to(ag, HIER_UP);
                break;
            }
            ag->mask = 1; /* the next local rank to take */
            to(ag, HIER_GATHER);
            if (h->nlocal > 1 && (st = zap_coll_recv(op, zap_coll_topo_rank(t, h->host, 1), ag->phase, STEP_UP,
                                                     ag->in, ag->msg_bytes, &ag->in_len, &ag->in_st)) != ZAP_OK)
                return st;
            break;
        case HIER_UP:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            /* The leader's result replaces this rank's accumulated header. */
            if (ag->in_st != ZAP_OK && ag->in_st != ZAP_ERR_TRUNCATED)
                return ag->in_st;
            if (ag->in_st != ZAP_OK || ag->in_len != ag->msg_bytes) {
                zap_coll_agree_mark_bad(ag->acc);
            } else {
                zap_coll_hdr_t *x = ag->acc;
                ag->acc = ag->in;
                ag->in = x;
            }
            to(ag, HIER_DONE);
            break;
        case HIER_GATHER:
            /* In local-rank order, so the host's sum has one expression. */
            if (ag->mask < h->nlocal) {
                if ((st = zap_coll_step_test(op)) != ZAP_OK)
                    return st;
                int from = zap_coll_topo_rank(t, h->host, ag->mask);
                if ((st = take(op, sends_data(ag, from) ? ag->msg_bytes : sizeof(zap_coll_hdr_t), false)) != ZAP_OK)
                    return st;
                if (++ag->mask < h->nlocal &&
                    (st = zap_coll_recv(op, zap_coll_topo_rank(t, h->host, ag->mask), ag->phase, STEP_UP, ag->in,
                                        ag->msg_bytes, &ag->in_len, &ag->in_st)) != ZAP_OK)
                    return st;
                break;
            }
            to(ag, HIER_ACROSS_START);
            break;
        case HIER_ACROSS_START:
            if ((st = across_start(op, h)) != ZAP_OK)
                return st;
            if ((int)ag->state == HIER_ACROSS_START)
                to(ag, HIER_FOLD_IN);
            break;
        case HIER_FOLD_IN:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if (ag->newrank < 0) {
                /* Folded out: the result comes back from the host above. */
                ag->expect = ag->msg_bytes;
                st = zap_coll_recv(op, leader_of(t, h->host + 1), ag->phase, STEP_UNFOLD, ag->acc, ag->msg_bytes,
                                   &ag->in_len, &ag->in_st);
                if (st != ZAP_OK)
                    return st;
                to(ag, HIER_FOLD_OUT_WAIT);
                break;
            }
            {
                bool data_below = ag->root < 0 || t->host[ag->root] == h->host - 1;
                if ((st = take(op, data_below ? ag->msg_bytes : sizeof(zap_coll_hdr_t), true)) != ZAP_OK)
                    return st;
            }
            to(ag, HIER_ROUND_POST);
            break;
        case HIER_ROUND_POST:
            if (ag->mask >= zap_pat_pof2(H)) {
                to(ag, HIER_FOLD_OUT);
                break;
            }
            if ((st = round_post(op, h)) != ZAP_OK)
                return st;
            to(ag, HIER_ROUND_WAIT);
            break;
        case HIER_ROUND_WAIT: {
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            int partner_host = zap_pat_rd_realrank(ag->newrank ^ ag->mask, H);
            if ((st = zap_coll_agree_combine(op, partner_host < h->host)) != ZAP_OK)
                return st;
            ag->mask <<= 1;
            to(ag, HIER_ROUND_POST);
            break;
        }
        case HIER_FOLD_OUT:
            if (h->host < 2 * rem) { /* hand the result to the folded host below */
                if ((st = zap_coll_send(op, leader_of(t, h->host - 1), ag->phase, STEP_UNFOLD, ag->acc,
                                        ag->msg_bytes)) != ZAP_OK)
                    return st;
                to(ag, HIER_FOLD_OUT_WAIT);
            } else {
                ag->mask = 1;
                to(ag, HIER_DOWN);
            }
            break;
        case HIER_FOLD_OUT_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            if (ag->newrank < 0 && (ag->in_st != ZAP_OK || ag->in_len != ag->msg_bytes)) {
                if (ag->in_st != ZAP_OK && ag->in_st != ZAP_ERR_TRUNCATED)
                    return ag->in_st;
                zap_coll_agree_mark_bad(ag->acc);
            }
            ag->mask = 1;
            to(ag, HIER_DOWN);
            break;
        case HIER_DOWN:
            if ((st = down_post(op, h)) != ZAP_OK)
                return st;
            to(ag, HIER_DOWN_WAIT);
            break;
        case HIER_DOWN_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            to(ag, ag->mask < h->nlocal ? HIER_DOWN : HIER_DONE);
            break;
        case HIER_DONE:
            return zap_coll_agree_verdict(op);
        default:
            return ZAP_ERR_INVALID_PARAM; /* not reached: every state is handled above */
        }
    }
}
