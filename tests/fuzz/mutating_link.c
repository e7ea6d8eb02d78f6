/* The mutating link (mutating_link.h). */
#include "mutating_link.h"
#include <stdlib.h>
#include <string.h>

typedef struct mut_req {
    zap_request_t base;
    zap_request_t *inner;
    void *buf;
    size_t cap;
} mut_req_t;


static zap_status_t mut_isend(zap_transport_t *t, int peer, uint64_t tag, const void *buf, size_t len,
                              zap_request_t **req_p)
{
    mut_req_t *r = calloc(1, sizeof(*r));
    if (!r)
        return ZAP_ERR_NO_MEMORY;
    zap_request_base_init(&r->base, t, ZAP_REQ_SEND, peer, tag);
    zap_status_t st = zap_transport_isend(((mut_transport_t *)t)->inner, peer, tag, buf, len, &r->inner);
    if (st != ZAP_OK) {
        free(r);
        return st;
    }
    *req_p = &r->base;
    return ZAP_OK;
}

static zap_status_t mut_irecv(zap_transport_t *t, int peer, uint64_t tag, void *buf, size_t cap,
                              zap_request_t **req_p)
{
    mut_req_t *r = calloc(1, sizeof(*r));
    if (!r)
        return ZAP_ERR_NO_MEMORY;
    zap_request_base_init(&r->base, t, ZAP_REQ_RECV, peer, tag);
    r->buf = buf;
    r->cap = cap;
    zap_status_t st = zap_transport_irecv(((mut_transport_t *)t)->inner, peer, tag, buf, cap, &r->inner);
    if (st != ZAP_OK) {
        free(r);
        return st;
    }
    *req_p = &r->base;
    return ZAP_OK;
}

/* The inner request completed with st: apply the next chunk (once). */
static zap_status_t mut_finish(mut_req_t *r, zap_status_t st)
{
    if (zap_request_status(&r->base) != ZAP_INPROGRESS)
        return zap_request_status(&r->base);
    mut_transport_t *m = (mut_transport_t *)r->base.transport;
    size_t len = 0;
    if (st == ZAP_OK && r->base.kind == ZAP_REQ_RECV) {
        (void)zap_request_received(r->inner, &len);
        size_t head = m->with_modes ? 3 : 2;
        if (m->active && m->left >= head) {
            int mode = m->with_modes ? m->data[0] % 3 : 1;
            const uint8_t *p = m->data + (head - 2);
            size_t want = (size_t)p[0] | ((size_t)p[1] << 8);
            m->data += head;
            m->left -= head;
            if (want > m->left)
                want = m->left;
            if (mode == 1) {
                m->replaced++;
                if (want > r->cap) {
                    st = ZAP_ERR_TRUNCATED;
                } else {
                    if (want)
                        memcpy(r->buf, m->data, want);
                    len = want;
                }
            } else if (mode == 2) {
                m->replaced++;
                for (size_t i = 0; i < want && i < len; i++)
                    ((uint8_t *)r->buf)[i] ^= m->data[i];
            }
            m->data += want;
            m->left -= want;
        }
        r->base.received_len = len;
    }
    zap_request_complete(&r->base, st);
    return st;
}

static zap_status_t mut_test(zap_request_t *req)
{
    mut_req_t *r = (mut_req_t *)req;
    if (zap_request_status(req) != ZAP_INPROGRESS)
        return zap_request_status(req);
    zap_status_t st = r->inner->transport->ops->test(r->inner);
    return st == ZAP_INPROGRESS ? st : mut_finish(r, st);
}

static zap_status_t mut_wait(zap_request_t *req, double deadline)
{
    mut_req_t *r = (mut_req_t *)req;
    if (zap_request_status(req) != ZAP_INPROGRESS)
        return zap_request_status(req);
    zap_status_t st = r->inner->transport->ops->wait(r->inner, deadline);
    return st == ZAP_ERR_TIMED_OUT ? st : mut_finish(r, st);
}

static zap_status_t mut_probe(zap_transport_t *t, int peer, uint64_t tag, double deadline, size_t *len_p)
{
    zap_transport_t *in = ((mut_transport_t *)t)->inner;
    return in->ops->probe(in, peer, tag, deadline, len_p);
}

static zap_status_t mut_progress(zap_transport_t *t) { return zap_transport_progress(((mut_transport_t *)t)->inner); }

static void mut_request_free(zap_request_t *req)
{
    zap_request_free(((mut_req_t *)req)->inner);
    free(req);
}

static void mut_close(zap_transport_t *t) { atomic_store(&t->closed, true); }

static const zap_transport_ops_t mut_ops = {
    .name = "mutating", .isend = mut_isend, .irecv = mut_irecv, .probe = mut_probe, .progress = mut_progress,
    .test = mut_test, .wait = mut_wait, .request_free = mut_request_free, .close = mut_close,
};

void mut_link_init(mut_transport_t *m, zap_transport_t *inner, const uint8_t *data, size_t len, int with_modes)
{
    memset(m, 0, sizeof(*m));
    m->ops = mut_ops;
    zap_transport_base_init(&m->base, &m->ops, inner->rank, inner->size, zap_transport_pool(inner), false);
    m->base.timeout_s = inner->timeout_s; /* a link in between waits as the transport under it */
    m->inner = inner;
    m->data = data;
    m->left = len;
    m->with_modes = with_modes;
}
