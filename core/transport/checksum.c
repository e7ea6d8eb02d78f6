/* The checksum decorator (checksum.h). A wrapper request holds the two
 * requests of the wrapped transport that carry one message (payload and
 * checksum) and completes when both have: a send with the first error of the
 * two, a receive with the payload's status or, when the payload arrived whole,
 * ZAP_OK or ZAP_ERR_CORRUPT from the CRC comparison. The comparison runs once,
 * in whichever of test or wait sees both parts complete first; the status
 * word's compare-and-swap makes that single.
 *
 * Requests come from a free list grown in blocks (the send and receive paths
 * do not call malloc once the list is warm). The wrapper is freed when it is
 * closed and its last request has been freed, so requests may outlive a close.
 * Cost: one CRC pass over each payload on each side, and one 4-byte message
 * per message. */
#include "transport/checksum.h"
#include "transport/transport_impl.h"
#include "base/crc32c.h"
#include "base/log.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CKS_BLOCK 64 /* requests per free-list block */

typedef struct cks_req cks_req_t;
struct cks_req {
    zap_request_t base;      /* first: the contract's request */
    zap_request_t *payload;  /* the wrapped transport's requests */
    zap_request_t *check;
    void *buf;               /* receives: the caller's buffer */
    uint8_t crc_le[4];       /* sends: the CRC sent; receives: the CRC received */
    cks_req_t *next_free;
};

typedef struct cks_block {
    struct cks_block *next;
    cks_req_t reqs[CKS_BLOCK];
} cks_block_t;

typedef struct cks_transport {
    zap_transport_t base; /* first */
    zap_transport_ops_t ops; /* cks_ops with the inner transport's traits */
    zap_transport_t *inner;
    int corrupt_rank;     /* ZAP_TEST_CORRUPT_RANK, -1 when unset */
    pthread_mutex_t lock; /* free list, blocks, live count */
    cks_req_t *free_list;
    cks_block_t *blocks;
    size_t live;          /* requests handed out and not yet freed */
    bool close_pending;   /* closed with requests still live */
} cks_transport_t;

static cks_transport_t *cks_of(zap_transport_t *t) { return (cks_transport_t *)t; }

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void cks_free_all(cks_transport_t *c)
{
    for (cks_block_t *b = c->blocks, *n; b != NULL; b = n) {
        n = b->next;
        free(b);
    }
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static cks_req_t *req_get(cks_transport_t *c)
{
    pthread_mutex_lock(&c->lock);
    if (c->free_list == NULL) {
        cks_block_t *b = calloc(1, sizeof(*b));
        if (b == NULL) {
            pthread_mutex_unlock(&c->lock);
            return NULL;
        }
        b->next = c->blocks;
        c->blocks = b;
        for (int i = 0; i < CKS_BLOCK; i++) {
            b->reqs[i].next_free = c->free_list;
            c->free_list = &b->reqs[i];
        }
    }
    cks_req_t *r = c->free_list;
    c->free_list = r->next_free;
    c->live++;
    pthread_mutex_unlock(&c->lock);
    r->payload = r->check = NULL;
    r->buf = NULL;
    return r;
}

static void req_put(cks_transport_t *c, cks_req_t *r)
{
    pthread_mutex_lock(&c->lock);
    r->next_free = c->free_list;
    c->free_list = r;
    bool last = --c->live == 0 && c->close_pending;
    pthread_mutex_unlock(&c->lock);
    if (last)
        cks_free_all(c);
}

static zap_status_t check_tag(cks_transport_t *c, uint64_t tag)
{
    if (tag & ZAP_TRANSPORT_CHECKSUM_TAG_BIT) {
        zap_error("checksum: rank %d: tag 0x%llx uses bit 63, reserved for checksum messages", c->base.rank,
                  (unsigned long long)tag);
        return ZAP_ERR_INVALID_PARAM;
    }
    return ZAP_OK;
}

static zap_status_t cks_isend(zap_transport_t *t, int peer, uint64_t tag, const void *buf, size_t len,
                              zap_request_t **req_p)
{
    cks_transport_t *c = cks_of(t);
    zap_status_t st = check_tag(c, tag);
    if (st != ZAP_OK)
        return st;
    cks_req_t *r = req_get(c);
    if (r == NULL)
        return ZAP_ERR_NO_MEMORY;
    zap_request_base_init(&r->base, t, ZAP_REQ_SEND, peer, tag);
    put_le32(r->crc_le, zap_base_crc32c(0, buf, len));
    st = zap_transport_isend(c->inner, peer, tag, buf, len, &r->payload);
    if (st == ZAP_OK)
        st = zap_transport_isend(c->inner, peer, tag | ZAP_TRANSPORT_CHECKSUM_TAG_BIT, r->crc_le, 4, &r->check);
    if (st != ZAP_OK) {
        zap_request_free(r->payload);
        req_put(c, r);
        return st;
    }
    *req_p = &r->base;
    return ZAP_OK;
}

static zap_status_t cks_irecv(zap_transport_t *t, int peer, uint64_t tag, void *buf, size_t cap,
                              zap_request_t **req_p)
{
    cks_transport_t *c = cks_of(t);
    zap_status_t st = check_tag(c, tag);
    if (st != ZAP_OK)
        return st;
    cks_req_t *r = req_get(c);
    if (r == NULL)
        return ZAP_ERR_NO_MEMORY;
    zap_request_base_init(&r->base, t, ZAP_REQ_RECV, peer, tag);
    r->buf = buf;
    st = zap_transport_irecv(c->inner, peer, tag, buf, cap, &r->payload);
    if (st == ZAP_OK)
        st = zap_transport_irecv(c->inner, peer, tag | ZAP_TRANSPORT_CHECKSUM_TAG_BIT, r->crc_le, 4, &r->check);
    if (st != ZAP_OK) {
        zap_request_free(r->payload);
        req_put(c, r);
        return st;
    }
    *req_p = &r->base;
    return ZAP_OK;
}

/* Both parts are complete: the request's outcome. */
static zap_status_t outcome(cks_req_t *r, zap_status_t ps, zap_status_t cs)
{
    cks_transport_t *c = cks_of(r->base.transport);
    if (ps != ZAP_OK)
        return ps;
    if (cs != ZAP_OK)
        return cs;
    if (r->base.kind == ZAP_REQ_SEND)
        return ZAP_OK;
    size_t len = 0, clen = 0;
    (void)zap_request_received(r->payload, &len);
    (void)zap_request_received(r->check, &clen);
    r->base.received_len = len;
    if (clen != 4) {
        zap_error("checksum: rank %d: checksum message of %zu bytes from rank %d (tag 0x%llx); expected 4",
                  r->base.transport->rank, clen, r->base.peer, (unsigned long long)r->base.tag);
        return ZAP_ERR_CORRUPT;
    }
    if (c->corrupt_rank == r->base.peer && len > 0)
        ((uint8_t *)r->buf)[len / 2] ^= 0x10; /* test hook: a flipped bit on the wire */
    uint32_t want = get_le32(r->crc_le), got = zap_base_crc32c(0, r->buf, len);
    if (got != want) {
        zap_error("checksum: rank %d: payload of %zu bytes from rank %d (tag 0x%llx) is corrupt: crc32c 0x%08x, "
                  "sender's 0x%08x",
                  r->base.transport->rank, len, r->base.peer, (unsigned long long)r->base.tag, got, want);
        return ZAP_ERR_CORRUPT;
    }
    return ZAP_OK;
}

/* Completes r once both parts have; returns its status or ZAP_INPROGRESS. */
static zap_status_t settle(cks_req_t *r, zap_status_t ps, zap_status_t cs)
{
    zap_status_t cur = zap_request_status(&r->base);
    if (cur != ZAP_INPROGRESS)
        return cur;
    if (ps == ZAP_INPROGRESS || cs == ZAP_INPROGRESS)
        return ZAP_INPROGRESS;
    int expected = (int)ZAP_INPROGRESS;
    zap_status_t st = outcome(r, ps, cs);
    if (!atomic_compare_exchange_strong(&r->base.status, &expected, (int)st))
        return (zap_status_t)expected;
    return st;
}

static zap_status_t part_test(zap_request_t *part)
{
    return part->transport->ops->test(part);
}

static zap_status_t cks_test(zap_request_t *req)
{
    cks_req_t *r = (cks_req_t *)req;
    if (zap_request_status(req) != ZAP_INPROGRESS)
        return zap_request_status(req);
    return settle(r, part_test(r->payload), part_test(r->check));
}

static zap_status_t cks_wait(zap_request_t *req, double deadline)
{
    cks_req_t *r = (cks_req_t *)req;
    if (zap_request_status(req) != ZAP_INPROGRESS)
        return zap_request_status(req);
    zap_status_t ps = r->payload->transport->ops->wait(r->payload, deadline);
    if (ps == ZAP_ERR_TIMED_OUT)
        return ps;
    zap_status_t cs = r->check->transport->ops->wait(r->check, deadline);
    if (cs == ZAP_ERR_TIMED_OUT)
        return cs;
    return settle(r, ps, cs);
}

static zap_status_t cks_probe(zap_transport_t *t, int peer, uint64_t tag, double deadline, size_t *len_p)
{
    cks_transport_t *c = cks_of(t);
    zap_status_t st = check_tag(c, tag);
    if (st != ZAP_OK)
        return st;
    return c->inner->ops->probe(c->inner, peer, tag, deadline, len_p);
}

static zap_status_t cks_progress(zap_transport_t *t) { return zap_transport_progress(cks_of(t)->inner); }

static void cks_request_free(zap_request_t *req)
{
    cks_req_t *r = (cks_req_t *)req;
    zap_request_free(r->payload);
    zap_request_free(r->check);
    req_put(cks_of(req->transport), r);
}

static void cks_close(zap_transport_t *t)
{
    cks_transport_t *c = cks_of(t);
    if (atomic_exchange(&t->closed, true))
        return;
    pthread_mutex_lock(&c->lock);
    bool now = c->live == 0;
    c->close_pending = !now;
    pthread_mutex_unlock(&c->lock);
    if (now)
        cks_free_all(c);
}

/* Notices travel on the inner transport, which also receives them (the
 * wrapper's notice_home). */
static zap_status_t cks_notify(zap_transport_t *t, const int *peers, int npeers, const zap_notice_t *n)
{
    return zap_transport_notify(cks_of(t)->inner, peers, npeers, n);
}

/* The inner transport knows the hosts and counts what it sends: payloads
 * and their 4-byte checksums alike. */
static uint64_t cks_host(const zap_transport_t *t, int rank)
{
    uint64_t h = 0;
    (void)zap_transport_host(((const cks_transport_t *)t)->inner, rank, &h);
    return h;
}

static void cks_traffic(zap_transport_t *t, zap_transport_traffic_t *traffic_p)
{
    (void)zap_transport_traffic(cks_of(t)->inner, traffic_p);
}

static int cks_first_failed(zap_transport_t *t) { return zap_transport_first_failed(cks_of(t)->inner); }

static const zap_transport_ops_t cks_ops = {
    .name = "checksum", /* replaced by the inner transport's name */
    .notify = cks_notify,
    .first_failed = cks_first_failed,
    .isend = cks_isend,
    .irecv = cks_irecv,
    .probe = cks_probe,
    .progress = cks_progress,
    .test = cks_test,
    .wait = cks_wait,
    .request_free = cks_request_free,
    .close = cks_close,
    .host = cks_host,
    .traffic = cks_traffic,
};

int zap_transport_is_checksum(const zap_transport_t *t) { return t != NULL && t->ops->isend == cks_isend; }

zap_status_t zap_transport_checksum_wrap(zap_transport_t *inner, zap_transport_t **t_p)
{
    if (inner == NULL || t_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    if (atomic_load(&inner->closed))
        return ZAP_ERR_CLOSED;
    int corrupt = -1;
    const char *env = getenv("ZAP_TEST_CORRUPT_RANK");
    if (env != NULL && *env != '\0') {
        char *end = NULL;
        errno = 0;
        long v = strtol(env, &end, 10);
        if (errno != 0 || *end != '\0' || v < 0 || v >= inner->size) {
            zap_error("checksum: ZAP_TEST_CORRUPT_RANK has invalid value '%s' (accepted: a rank in [0, %d))", env,
                      inner->size);
            return ZAP_ERR_INVALID_PARAM;
        }
        corrupt = (int)v;
    }
    cks_transport_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return ZAP_ERR_NO_MEMORY;
    /* The wrapper reports the inner transport's name and traits, so algorithm
     * choices and log lines are those of the transport underneath. */
    c->ops = cks_ops;
    c->ops.name = inner->ops->name;
    c->ops.cap_flags = inner->ops->cap_flags;
    c->ops.min_latency_us = inner->ops->min_latency_us;
    zap_transport_base_init(&c->base, &c->ops, inner->rank, inner->size, inner->pool, false);
    c->base.timeout_s = inner->timeout_s;
    c->base.notice_home = inner->notice_home != NULL ? inner->notice_home : inner;
    c->base.caps = inner->caps;
    c->inner = inner;
    c->corrupt_rank = corrupt;
    pthread_mutex_init(&c->lock, NULL);
    *t_p = &c->base;
    return ZAP_OK;
}
