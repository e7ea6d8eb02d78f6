/* The requests of an operation's current step (step.h). */
#include "coll/engine/step.h"

/* A post that failed at once for a lost peer blames that peer, as a request
 * that fails later does (zap_coll_step_test): the revocation then names it. */
static zap_status_t posted(zap_coll_op_t *op, zap_status_t st, int transport_peer)
{
    if (st == ZAP_ERR_PEER_FAILED && op->culprit < 0)
        op->culprit = transport_peer;
    return st;
}

zap_status_t zap_coll_send(zap_coll_op_t *op, int peer, int phase, int step, const void *buf, size_t len)
{
    if (op->nreqs == ZAP_COLL_MAX_REQS)
        return ZAP_ERR_NO_RESOURCE;
    zap_request_t *r = NULL;
    int to = zap_coll_transport_rank(op->comm, peer);
    zap_status_t st = zap_transport_isend(op->comm->t, to, zap_coll_tag(op, phase, step), buf, len, &r);
    if (st != ZAP_OK)
        return posted(op, st, to);
    op->rlen[op->nreqs] = NULL;
    op->rst[op->nreqs] = NULL;
    op->reqs[op->nreqs++] = r;
    return ZAP_OK;
}

zap_status_t zap_coll_recv(zap_coll_op_t *op, int peer, int phase, int step, void *buf, size_t cap, size_t *len_p,
                           zap_status_t *st_p)
{
    if (op->nreqs == ZAP_COLL_MAX_REQS)
        return ZAP_ERR_NO_RESOURCE;
    zap_request_t *r = NULL;
    int from = zap_coll_transport_rank(op->comm, peer);
    zap_status_t st = zap_transport_irecv(op->comm->t, from, zap_coll_tag(op, phase, step), buf, cap, &r);
    if (st != ZAP_OK)
        return posted(op, st, from);
    op->rlen[op->nreqs] = len_p;
    op->rst[op->nreqs] = st_p;
    op->reqs[op->nreqs++] = r;
    return ZAP_OK;
}

zap_status_t zap_coll_step_test(zap_coll_op_t *op)
{
    for (int i = 0; i < op->nreqs; i++) {
        int done = 0;
        zap_status_t st = zap_request_test(op->reqs[i], &done);
        if (!done && st == ZAP_OK)
            return ZAP_INPROGRESS;
    }
    zap_status_t first = ZAP_OK;
    for (int i = 0; i < op->nreqs; i++) {
        zap_status_t st = zap_request_status(op->reqs[i]);
        if (op->rst[i] != NULL) {
            /* The algorithm judges this request's status itself; a lost peer
             * still names the culprit should it fail the operation. */
            if (st == ZAP_ERR_PEER_FAILED && op->culprit < 0)
                op->culprit = op->reqs[i]->peer;
            *op->rst[i] = st;
            st = ZAP_OK;
        }
        if (op->rlen[i] != NULL)
            *op->rlen[i] = op->reqs[i]->received_len;
        if (st != ZAP_OK && first == ZAP_OK) {
            first = st;
            op->culprit = op->reqs[i]->peer; /* the transport rank whose message failed */
        }
        zap_request_free(op->reqs[i]);
    }
    op->nreqs = 0;
    return first;
}

void zap_coll_step_release(zap_coll_op_t *op)
{
    for (int i = 0; i < op->nreqs; i++)
        zap_request_free(op->reqs[i]);
    op->nreqs = 0;
}
