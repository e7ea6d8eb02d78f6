/* Hierarchical gather(v), for communicators whose ranks span several hosts
 * (coll/hier/hier.h; docs/collectives.md, "Across hosts").
 *
 * On the root's host the node's gatherv puts the host's blocks straight
 * into place in the root's recvbuf. On every other host the leader (local
 * rank 0) gathers its host's counts (gatherv's counts are the root's alone;
 * gather's are known everywhere and skip this) and then its ranks' blocks
 * on the node's communicator, packed in local-rank order behind the counts,
 * and sends that as one message to the root, which checks the counts
 * against its own and copies the blocks into place. So each host's data
 * crosses the network once and in one piece, and the root receives one
 * message per other host instead of one per rank.
 *
 * A count that differs from the root's counts[] shows at the root (a packed
 * message's counts) or in the root's host's gatherv: as for the linear form,
 * a status exchange through the hierarchy after the data (tag phase 3)
 * carries it to every rank; the root returns ZAP_ERR_INVALID_PARAM, the
 * others ZAP_ERR_MISMATCH. gather's count is agreed before anything moves
 * and needs none. */
#include "coll/gather/gather.h"
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/step.h"
#include "coll/hier/hier.h"
#include "base/log.h"
#include <string.h>

#define PHASE_DATA 1
#define PHASE_STATUS 3

typedef enum { GH_START, GH_COUNTS_WAIT, GH_NODE_WAIT, GH_SEND_WAIT, GH_ROOT_POST, GH_ROOT_WAIT, GH_STATUS,
               GH_DONE } gh_state_t;

typedef struct ga_hier {
    gh_state_t state;
    size_t esize;
    uint64_t mine;       /* this rank's count, for its leader */
    uint64_t *hcounts;   /* a leader off the root's host: its ranks' counts, then their blocks (scratch2) */
    size_t *ncounts;
    ptrdiff_t *ndispls;  /* the node gatherv's (nlocal each, in scratch) */
    size_t *at;          /* the root: where each host's message starts in scratch2 (nhosts + 1) */
    size_t *len;
    zap_status_t *rst;   /* the root: each host's received length and status (nhosts each) */
    int next_host, first_host; /* the root: the next host to post, and the batch's first */
    bool bad;            /* the root saw a count other than its own */
    zap_status_t node_st;
    zap_request_t *req;
    uint64_t ticket;     /* its turn on the hierarchy's communicators (hier.h) */
    bool ticketed;
} ga_hier_t;
_Static_assert(sizeof(ga_hier_t) <= ZAP_COLL_ALG_STATE_BYTES, "state too large");

static void release(zap_coll_op_t *op)
{
    ga_hier_t *s = (ga_hier_t *)op->alg_state;
    zap_coll_hier_abandon(op->comm, s->req);
    s->req = NULL;
    zap_coll_hier_give_back(op->comm, s->ticket, &s->ticketed);
}

/* Bytes of host g's message: its counts, then its blocks (the root's view). */
static size_t host_bytes(const zap_coll_op_t *op, const ga_hier_t *s, int g)
{
    const zap_coll_topo_t *t = op->comm->hier->topo;
    size_t bytes = (size_t)t->host_size[g] * sizeof(uint64_t);
    for (int l = 0; l < t->host_size[g]; l++)
        bytes += zap_ga_count(&op->args, zap_coll_topo_rank(t, g, l)) * s->esize;
    return bytes;
}

/* Where the blocks follow the counts in a host's message. */
static char *blocks_of(uint64_t *msg, int nranks) { return (char *)(msg + nranks); }

/* The node stage's request is done: its status, kept where it is the call's
 * verdict (a count another rank disagrees with), else the stage's failure. */
static zap_status_t node_test(zap_coll_op_t *op, ga_hier_t *s)
{
    zap_status_t st = zap_coll_hier_stage_test(op, &s->req);
    if (st == ZAP_ERR_MISMATCH || st == ZAP_ERR_INVALID_PARAM) {
        s->node_st = st;
        return ZAP_OK;
    }
    return st;
}

/* A leader off the root's host: the node gatherv of its ranks' blocks
 * behind their counts. */
static zap_status_t post_node_blocks(zap_coll_op_t *op, ga_hier_t *s)
{
    const zap_coll_args_t *a = &op->args;
    const zap_coll_hier_t *h = op->comm->hier;
    char *into = NULL;
    if (h->local == 0) {
        size_t bytes = (size_t)h->nlocal * sizeof(uint64_t), at = 0;
        for (int l = 0; l < h->nlocal; l++) {
            s->ncounts[l] = (size_t)s->hcounts[l];
            s->ndispls[l] = (ptrdiff_t)at;
            at += s->ncounts[l];
        }
        /* The counts move from scratch into the message's head. */
        uint64_t *counts = s->hcounts;
        zap_status_t st = zap_coll_scratch(op, &op->scratch2, bytes + at * s->esize);
        if (st != ZAP_OK)
            return st;
        s->hcounts = op->scratch2.ptr;
        memcpy(s->hcounts, counts, bytes);
        into = blocks_of(s->hcounts, h->nlocal);
    }
    return zap_igatherv(h->node, a->src, a->count, into, s->ncounts, s->ndispls, a->dt, 0, &s->req);
}

/* The root: host g's message is in; its counts must be the root's, then
 * its blocks go into place. */
static void unpack_host(zap_coll_op_t *op, ga_hier_t *s, int g, size_t len, zap_status_t rst)
{
    const zap_coll_args_t *a = &op->args;
    const zap_coll_topo_t *t = op->comm->hier->topo;
    uint64_t *msg = (uint64_t *)((char *)op->scratch2.ptr + s->at[g]);
    int n = t->host_size[g], leader = zap_coll_topo_rank(t, g, 0);
    size_t want = host_bytes(op, s, g);
    if (rst == ZAP_ERR_TRUNCATED || len != want) {
        zap_error("coll: rank %d: gatherv: the host of rank %d sent %s than the %zu bytes the root's counts give",
                  op->comm->rank, leader, rst == ZAP_ERR_TRUNCATED || len > want ? "more" : "fewer", want);
        s->bad = true;
        return;
    }
    for (int l = 0; l < n; l++) {
        int r = zap_coll_topo_rank(t, g, l);
        if (msg[l] != zap_ga_count(a, r)) {
            zap_error("coll: rank %d: gatherv: rank %d sent %llu elements, counts[%d] = %zu", op->comm->rank, r,
                      (unsigned long long)msg[l], r, zap_ga_count(a, r));
            s->bad = true;
            return;
        }
    }
    const char *from = blocks_of(msg, n);
    for (int l = 0; l < n; l++) {
        int r = zap_coll_topo_rank(t, g, l);
        size_t bytes = zap_ga_count(a, r) * s->esize;
        zap_coll_copy(op, (char *)a->dst + zap_ga_displ(a, r) * (ptrdiff_t)s->esize, from, bytes);
        from += bytes;
    }
}

static zap_status_t progress(zap_coll_op_t *op)
{
    ga_hier_t *s = (ga_hier_t *)op->alg_state;
    const zap_coll_args_t *a = &op->args;
    zap_comm_t *comm = op->comm;
    const zap_coll_hier_t *h = comm->hier;
    const zap_coll_topo_t *t = h->topo;
    int rank = comm->rank, root_host = t->host[a->root];
    bool is_v = zap_ga_is_v(a);
    zap_status_t st;
    for (;;) {
        switch (s->state) {
        case GH_START:
            if (!zap_coll_hier_turn(comm, s->ticket))
                return ZAP_INPROGRESS; /* an earlier operation still posts on the node's communicator */
            if (h->host == root_host) {
                if (h->node == NULL) { /* the root alone on its host */
                    if (a->src != NULL)
                        zap_coll_copy(op, (char *)a->dst + zap_ga_displ(a, rank) * (ptrdiff_t)s->esize, a->src,
                                      zap_ga_count(a, rank) * s->esize);
                } else {
                    if (rank == a->root)
                        for (int l = 0; l < h->nlocal; l++) {
                            int r = zap_coll_topo_rank(t, h->host, l);
                            s->ncounts[l] = zap_ga_count(a, r);
                            s->ndispls[l] = zap_ga_displ(a, r);
                        }
                    const void *from = rank == a->root && a->src == NULL ? ZAP_IN_PLACE : a->src;
                    if ((st = zap_igatherv(h->node, from, a->count, a->dst, s->ncounts, s->ndispls, a->dt,
                                           t->local[a->root], &s->req)) != ZAP_OK)
                        return st;
                }
                s->state = GH_NODE_WAIT;
            } else if (h->node == NULL) { /* alone on its host: the message is its count and block */
                s->hcounts = op->scratch2.ptr;
                s->hcounts[0] = a->count;
                zap_coll_copy(op, blocks_of(s->hcounts, 1), a->src, a->count * s->esize);
                s->state = GH_NODE_WAIT;
            } else if (is_v) {
                s->mine = a->count;
                if ((st = zap_igather(h->node, &s->mine, 1, h->local == 0 ? s->hcounts : NULL, ZAP_DT_UINT64, 0,
                                      &s->req)) != ZAP_OK)
                    return st;
                s->state = GH_COUNTS_WAIT;
            } else {
                if (h->local == 0)
                    for (int l = 0; l < h->nlocal; l++)
                        s->hcounts[l] = a->fixed;
                if ((st = post_node_blocks(op, s)) != ZAP_OK)
                    return st;
                s->state = GH_NODE_WAIT;
            }
            break;
        case GH_COUNTS_WAIT:
            if ((st = node_test(op, s)) != ZAP_OK)
                return st;
            if ((st = post_node_blocks(op, s)) != ZAP_OK)
                return st;
            s->state = GH_NODE_WAIT;
            break;
        case GH_NODE_WAIT:
            if ((st = node_test(op, s)) != ZAP_OK)
                return st;
            zap_coll_hier_give_back(comm, s->ticket, &s->ticketed); /* done with the node's communicator */
            if (rank == a->root) {
                s->next_host = 0;
                s->state = GH_ROOT_POST;
            } else if (h->local == 0 && h->host != root_host) {
                size_t bytes = (size_t)h->nlocal * sizeof(uint64_t);
                for (int l = 0; l < h->nlocal; l++)
                    bytes += s->hcounts[l] * s->esize;
                if ((st = zap_coll_send(op, a->root, PHASE_DATA, 0, s->hcounts, bytes)) != ZAP_OK)
                    return st;
                s->state = GH_SEND_WAIT;
            } else {
                s->state = GH_STATUS;
            }
            break;
        case GH_ROOT_POST: /* every other host's message, in batches of the request slots */
            s->first_host = s->next_host;
            while (s->next_host < t->nhosts && op->nreqs < ZAP_COLL_MAX_REQS) {
                int g = s->next_host++;
                if (g == root_host)
                    continue;
                /* One byte more than expected: a longer message shows as truncated. */
                size_t cap = s->at[g + 1] - s->at[g];
                if ((st = zap_coll_recv(op, zap_coll_topo_rank(t, g, 0), PHASE_DATA, 0,
                                        (char *)op->scratch2.ptr + s->at[g], cap, &s->len[g], &s->rst[g])) != ZAP_OK)
                    return st;
            }
            s->state = GH_ROOT_WAIT;
            break;
        case GH_ROOT_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            for (int g = s->first_host; g < s->next_host; g++) {
                if (g == root_host)
                    continue;
                if (s->rst[g] != ZAP_OK && s->rst[g] != ZAP_ERR_TRUNCATED)
                    return s->rst[g];
                unpack_host(op, s, g, s->len[g], s->rst[g]);
            }
            s->state = s->next_host < t->nhosts ? GH_ROOT_POST : GH_STATUS;
            break;
        case GH_SEND_WAIT:
            if ((st = zap_coll_step_test(op)) != ZAP_OK)
                return st;
            s->state = GH_STATUS;
            break;
        case GH_STATUS:
            if (!is_v)
                return ZAP_OK;
            if (s->bad || s->node_st != ZAP_OK)
                zap_coll_agree_mark_bad_own(&op->hdr_own, rank);
            if ((st = zap_coll_agree_init(op, op->form, PHASE_STATUS, NULL, 0, ZAP_DT_UINT8, ZAP_OP_SUM)) != ZAP_OK)
                return st;
            s->state = GH_DONE;
            break;
        case GH_DONE:
            st = zap_coll_agree_progress(op);
            if (st == ZAP_ERR_MISMATCH && rank == a->root && (s->bad || s->node_st == ZAP_ERR_INVALID_PARAM))
                return ZAP_ERR_INVALID_PARAM;
            return st;
        }
    }
}

zap_status_t zap_gather_hier_init(zap_coll_op_t *op)
{
    const zap_coll_args_t *a = &op->args;
    zap_comm_t *comm = op->comm;
    if (op->form != ZAP_COLL_FORM_HIER || zap_coll_hier_children(comm) != ZAP_OK)
        return ZAP_ERR_UNSUPPORTED;
    ga_hier_t *s = (ga_hier_t *)op->alg_state;
    const zap_coll_hier_t *h = comm->hier;
    const zap_coll_topo_t *t = h->topo;
    memset(s, 0, sizeof(*s));
    s->state = GH_START;
    s->esize = zap_dtype_size(a->dt);
    size_t nl = (size_t)h->nlocal, nh = (size_t)t->nhosts;
    bool is_root = comm->rank == a->root;
    /* The node gatherv's tables and a leader's counts; the root's message
     * offsets, lengths and statuses. */
    size_t tables = 2 * nl * sizeof(size_t) + nl * sizeof(uint64_t);
    if (is_root)
        tables += (2 * nh + 1) * sizeof(size_t) + nh * sizeof(zap_status_t);
    zap_status_t st = zap_coll_scratch(op, &op->scratch, tables);
    if (st != ZAP_OK)
        return st;
    s->ncounts = op->scratch.ptr;
    s->ndispls = (ptrdiff_t *)(s->ncounts + nl);
    s->hcounts = (uint64_t *)(s->ndispls + nl);
    if (is_root) {
        s->at = (size_t *)(s->hcounts + nl);
        s->len = s->at + nh + 1;
        s->rst = (zap_status_t *)(s->len + nh);
        /* Every other host's message, each at an 8-byte boundary (its
         * counts lead), with a byte to spare: a longer one is truncated. */
        size_t at = 0;
        for (int g = 0; g < t->nhosts; g++) {
            s->at[g] = at;
            if (g != h->host)
                at += (host_bytes(op, s, g) + 1 + 7) & ~(size_t)7;
        }
        s->at[nh] = at;
        if ((st = zap_coll_scratch(op, &op->scratch2, at)) != ZAP_OK)
            return st;
    } else if (h->node == NULL && h->host != t->host[a->root]) {
        if ((st = zap_coll_scratch(op, &op->scratch2, sizeof(uint64_t) + a->count * s->esize)) != ZAP_OK)
            return st;
    }
    if ((st = zap_coll_hier_ticket(comm, &s->ticket)) != ZAP_OK)
        return st;
    s->ticketed = true;
    op->progress = progress;
    op->release = release;
    return ZAP_OK;
}
