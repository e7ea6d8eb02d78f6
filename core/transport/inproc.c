/* The in-process transport: ranks are threads, each with a mailbox.
 *
 * A mailbox holds the receives its rank has posted and the messages that
 * arrived before a matching receive ("unexpected"), both in arrival order, so
 * matching is first-come per (source, tag) like MPI. A send either finds a
 * posted receive and copies straight into it, or queues: small messages
 * (ZAP_INPROC_EAGER_BYTES) are copied into a pool buffer and the send
 * completes at once; larger ones queue a reference to the sender's bytes and
 * the send completes when a receive takes them (rendezvous, no copy). Either
 * way the receiver ends up with the bytes and the queue entry is released: a
 * message sent is a message received, and nothing is kept after that.
 *
 * Locking: everything about a message lives under the receiving rank's
 * mailbox lock, and waiters sleep on that mailbox's condition variable. A
 * request records the mailbox that guards it. Requests and queue entries come
 * from a world-wide free list, so steady-state traffic does not call malloc. */
#include "zap/inproc.h"
#include "transport/transport_impl.h"
#include "transport/peer_class.h"
#include "base/config_table.h"
#include "base/log.h"
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct link {
    struct link *prev, *next;
} link_t;

typedef struct {
    link_t head; /* sentinel */
} list_t;

static void list_init(list_t *l) { l->head.prev = l->head.next = &l->head; }
static void list_push(list_t *l, link_t *n)
{
    n->prev = l->head.prev;
    n->next = &l->head;
    l->head.prev->next = n;
    l->head.prev = n;
}
static void list_del(link_t *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->prev = n->next = NULL;
}

#define CONTAINER(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

typedef struct mailbox {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    list_t posted;     /* inproc_req_t (receives) */
    list_t unexpected; /* msg_t */
    _Atomic int closed;
} mailbox_t;

typedef struct inproc_req {
    zap_request_t base;
    link_t link;       /* in a mailbox's posted list while pending */
    mailbox_t *mb;     /* the mailbox whose lock guards this request */
    void *rbuf;        /* receive: destination */
    size_t cap;
    struct msg *queued; /* rendezvous send: its queue entry while pending */
    struct inproc_req *free_next;
} inproc_req_t;

typedef struct msg {
    link_t link;
    int src;
    uint64_t tag;
    size_t len;
    const void *data;    /* rendezvous: the sender's bytes */
    zap_buf_t eager;     /* eager: the copy */
    inproc_req_t *send;  /* rendezvous: the send to complete */
    struct msg *free_next;
} msg_t;

typedef struct inproc_rank {
    zap_transport_t base;
    struct zap_inproc_world *world;
    int created;
    zap_transport_traffic_t sent; /* per peer class, under sent_lock */
    pthread_mutex_t sent_lock;
} inproc_rank_t;

struct zap_inproc_world {
    int nranks;
    zap_pool_t *pool;
    int owns_pool;
    uint64_t eager_limit;
    mailbox_t *mbox;
    inproc_rank_t *ranks;
    uint64_t *hosts; /* per rank (zap_inproc_world_set_hosts); NULL: all on this host */
    pthread_mutex_t alloc_lock;
    inproc_req_t *free_reqs;
    msg_t *free_msgs;
    /* Every request and message ever allocated, to free at destroy. */
    void **blocks;
    size_t nblocks, cap_blocks;
};

static const zap_transport_ops_t inproc_ops;

/* ---- free lists --------------------------------------------------------- */

static int remember_block(zap_inproc_world_t *w, void *p)
{
    if (w->nblocks == w->cap_blocks) {
        size_t cap = w->cap_blocks ? w->cap_blocks * 2 : 64;
        void **b = realloc(w->blocks, cap * sizeof(void *));
        if (b == NULL)
            return -1;
        w->blocks = b;
        w->cap_blocks = cap;
    }
    w->blocks[w->nblocks++] = p;
    return 0;
}

static inproc_req_t *req_get(zap_inproc_world_t *w)
{
    pthread_mutex_lock(&w->alloc_lock);
    inproc_req_t *r = w->free_reqs;
    if (r != NULL) {
        w->free_reqs = r->free_next;
    } else {
        r = malloc(sizeof(*r));
        if (r != NULL && remember_block(w, r) != 0) {
            free(r);
            r = NULL;
        }
    }
    pthread_mutex_unlock(&w->alloc_lock);
    if (r != NULL)
        memset(r, 0, sizeof(*r));
    return r;
}

static void req_put(zap_inproc_world_t *w, inproc_req_t *r)
{
    pthread_mutex_lock(&w->alloc_lock);
    r->free_next = w->free_reqs;
    w->free_reqs = r;
    pthread_mutex_unlock(&w->alloc_lock);
}

static msg_t *msg_get(zap_inproc_world_t *w)
{
    pthread_mutex_lock(&w->alloc_lock);
    msg_t *m = w->free_msgs;
    if (m != NULL) {
        w->free_msgs = m->free_next;
    } else {
        m = malloc(sizeof(*m));
        if (m != NULL && remember_block(w, m) != 0) {
            free(m);
            m = NULL;
        }
    }
    pthread_mutex_unlock(&w->alloc_lock);
    if (m != NULL)
        memset(m, 0, sizeof(*m));
    return m;
}

static void msg_put(zap_inproc_world_t *w, msg_t *m)
{
    pthread_mutex_lock(&w->alloc_lock);
    m->free_next = w->free_msgs;
    w->free_msgs = m;
    pthread_mutex_unlock(&w->alloc_lock);
}

/* ---- matching (mailbox lock held) --------------------------------------- */

static inproc_rank_t *rank_of(zap_transport_t *t) { return (inproc_rank_t *)t; }

/* Delivers len bytes at data into receive r: copy or truncation error. */
static void deliver(inproc_req_t *r, const void *data, size_t len)
{
    if (len > r->cap) {
        zap_error("inproc: rank %d: message of %zu bytes from rank %d (tag 0x%llx) exceeds the %zu-byte "
                  "receive buffer",
                  r->base.transport->rank, len, r->base.peer, (unsigned long long)r->base.tag, r->cap);
        zap_request_complete(&r->base, ZAP_ERR_TRUNCATED);
        return;
    }
    if (len > 0)
        memcpy(r->rbuf, data, len);
    r->base.received_len = len;
    zap_request_complete(&r->base, ZAP_OK);
}

static msg_t *find_unexpected(mailbox_t *mb, int src, uint64_t tag)
{
    for (link_t *l = mb->unexpected.head.next; l != &mb->unexpected.head; l = l->next) {
        msg_t *m = CONTAINER(l, msg_t, link);
        if (m->src == src && m->tag == tag)
            return m;
    }
    return NULL;
}

/* Takes message m out of the queue and completes its sender. */
static void consume_msg(zap_inproc_world_t *w, mailbox_t *mb, msg_t *m, zap_status_t send_status)
{
    list_del(&m->link);
    if (m->send != NULL) {
        m->send->queued = NULL;
        zap_request_complete(&m->send->base, send_status);
    }
    (void)zap_buf_free(&m->eager);
    msg_put(w, m);
    pthread_cond_broadcast(&mb->cond);
}

/* ---- ops ---------------------------------------------------------------- */

/* Ranks are threads of one process: on one host, unless the test that made
 * the world placed them (zap_inproc_world_set_hosts). */
static uint64_t inproc_host(const zap_transport_t *t, int rank)
{
    const zap_inproc_world_t *w = ((const inproc_rank_t *)t)->world;
    return w->hosts != NULL ? w->hosts[rank] : zap_host_id();
}

static void inproc_traffic(zap_transport_t *t, zap_transport_traffic_t *traffic_p)
{
    inproc_rank_t *me = rank_of(t);
    pthread_mutex_lock(&me->sent_lock);
    *traffic_p = me->sent;
    pthread_mutex_unlock(&me->sent_lock);
}

static void count_send(inproc_rank_t *me, int peer, size_t len)
{
    const zap_inproc_world_t *w = me->world;
    uint8_t cls = peer == me->base.rank ? ZAP_PEER_SELF
                  : w->hosts == NULL || w->hosts[peer] == w->hosts[me->base.rank] ? ZAP_PEER_SAME_HOST
                                                                                   : ZAP_PEER_OTHER_HOST;
    pthread_mutex_lock(&me->sent_lock);
    zap_peer_count(&me->sent, cls, len);
    pthread_mutex_unlock(&me->sent_lock);
}

static zap_status_t inproc_isend(zap_transport_t *t, int peer, uint64_t tag, const void *buf, size_t len,
                                 zap_request_t **req_p)
{
    count_send(rank_of(t), peer, len);
    zap_inproc_world_t *w = rank_of(t)->world;
    mailbox_t *mb = &w->mbox[peer];
    inproc_req_t *s = req_get(w);
    if (s == NULL)
        return ZAP_ERR_NO_MEMORY;
    zap_request_base_init(&s->base, t, ZAP_REQ_SEND, peer, tag);
    s->mb = mb;

    pthread_mutex_lock(&mb->lock);
    if (mb->closed) {
        pthread_mutex_unlock(&mb->lock);
        req_put(w, s);
        zap_error("inproc: rank %d: send to rank %d failed: peer closed", t->rank, peer);
        return ZAP_ERR_PEER_FAILED;
    }
    for (link_t *l = mb->posted.head.next; l != &mb->posted.head; l = l->next) {
        inproc_req_t *r = CONTAINER(l, inproc_req_t, link);
        if (r->base.peer == t->rank && r->base.tag == tag) {
            list_del(&r->link);
            deliver(r, buf, len);
            zap_request_complete(&s->base, ZAP_OK);
            pthread_cond_broadcast(&mb->cond);
            pthread_mutex_unlock(&mb->lock);
            *req_p = &s->base;
            return ZAP_OK;
        }
    }
    msg_t *m = msg_get(w);
    if (m == NULL) {
        pthread_mutex_unlock(&mb->lock);
        req_put(w, s);
        return ZAP_ERR_NO_MEMORY;
    }
    m->src = t->rank;
    m->tag = tag;
    m->len = len;
    if (len <= w->eager_limit) {
        if (len > 0) {
            zap_status_t st = zap_pool_alloc(w->pool, len, &m->eager);
            if (st != ZAP_OK) {
                pthread_mutex_unlock(&mb->lock);
                msg_put(w, m);
                req_put(w, s);
                return st;
            }
            memcpy(m->eager.ptr, buf, len);
        }
        m->data = m->eager.ptr;
        zap_request_complete(&s->base, ZAP_OK);
    } else {
        m->data = buf;
        m->send = s;
        s->queued = m;
    }
    list_push(&mb->unexpected, &m->link);
    pthread_cond_broadcast(&mb->cond);
    pthread_mutex_unlock(&mb->lock);
    *req_p = &s->base;
    return ZAP_OK;
}

static zap_status_t inproc_irecv(zap_transport_t *t, int peer, uint64_t tag, void *buf, size_t cap,
                                 zap_request_t **req_p)
{
    zap_inproc_world_t *w = rank_of(t)->world;
    mailbox_t *mb = &w->mbox[t->rank];
    inproc_req_t *r = req_get(w);
    if (r == NULL)
        return ZAP_ERR_NO_MEMORY;
    zap_request_base_init(&r->base, t, ZAP_REQ_RECV, peer, tag);
    r->mb = mb;
    r->rbuf = buf;
    r->cap = cap;

    pthread_mutex_lock(&mb->lock);
    msg_t *m = find_unexpected(mb, peer, tag);
    if (m != NULL) {
        deliver(r, m->data, m->len);
        consume_msg(w, mb, m, ZAP_OK);
    } else if (w->mbox[peer].closed && peer != t->rank) {
        pthread_mutex_unlock(&mb->lock);
        req_put(w, r);
        zap_error("inproc: rank %d: receive from rank %d failed: peer closed", t->rank, peer);
        return ZAP_ERR_PEER_FAILED;
    } else {
        list_push(&mb->posted, &r->link);
    }
    pthread_mutex_unlock(&mb->lock);
    *req_p = &r->base;
    return ZAP_OK;
}

static struct timespec to_abs_realtime(double deadline)
{
    /* Condition variables use CLOCK_REALTIME by default; convert the
     * monotonic deadline to it. */
    double remaining = deadline - zap_clock_now();
    if (remaining < 0)
        remaining = 0;
    /* No deadline (INFINITY) or one decades away: a year is as good as
     * forever to a waiter, and keeps the arithmetic finite. */
    if (!(remaining < 3.2e7))
        remaining = 3.2e7;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    double abs_s = (double)now.tv_sec + (double)now.tv_nsec * 1e-9 + remaining;
    struct timespec ts;
    ts.tv_sec = (time_t)abs_s;
    ts.tv_nsec = (long)((abs_s - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

static zap_status_t inproc_probe(zap_transport_t *t, int peer, uint64_t tag, double deadline, size_t *len_p)
{
    zap_inproc_world_t *w = rank_of(t)->world;
    mailbox_t *mb = &w->mbox[t->rank];
    struct timespec ts = to_abs_realtime(deadline);
    zap_status_t st = ZAP_OK;
    pthread_mutex_lock(&mb->lock);
    for (;;) {
        msg_t *m = find_unexpected(mb, peer, tag);
        if (m != NULL) {
            *len_p = m->len;
            break;
        }
        if (w->mbox[peer].closed) {
            st = ZAP_ERR_PEER_FAILED;
            break;
        }
        if (pthread_cond_timedwait(&mb->cond, &mb->lock, &ts) == ETIMEDOUT) {
            st = ZAP_ERR_TIMED_OUT;
            zap_error("inproc: rank %d timed out waiting for a message from rank %d (tag 0x%llx)", t->rank,
                      peer, (unsigned long long)tag);
            break;
        }
    }
    pthread_mutex_unlock(&mb->lock);
    return st;
}

static zap_status_t inproc_progress(zap_transport_t *t)
{
    (void)t; /* matching happens inside the posting calls */
    return ZAP_OK;
}

static zap_status_t inproc_test(zap_request_t *req) { return zap_request_status(req); }

static zap_status_t inproc_wait(zap_request_t *req, double deadline)
{
    inproc_req_t *r = (inproc_req_t *)req;
    zap_status_t st = zap_request_status(req);
    if (st != ZAP_INPROGRESS)
        return st;
    struct timespec ts = to_abs_realtime(deadline);
    pthread_mutex_lock(&r->mb->lock);
    while ((st = zap_request_status(req)) == ZAP_INPROGRESS) {
        if (pthread_cond_timedwait(&r->mb->cond, &r->mb->lock, &ts) == ETIMEDOUT) {
            st = zap_request_status(req);
            if (st == ZAP_INPROGRESS)
                st = ZAP_ERR_TIMED_OUT;
            break;
        }
    }
    pthread_mutex_unlock(&r->mb->lock);
    return st;
}

static void inproc_request_free(zap_request_t *req)
{
    inproc_req_t *r = (inproc_req_t *)req;
    zap_inproc_world_t *w = rank_of(req->transport)->world;
    pthread_mutex_lock(&r->mb->lock);
    if (zap_request_status(req) == ZAP_INPROGRESS) {
        if (req->kind == ZAP_REQ_RECV) {
            list_del(&r->link);
        } else if (r->queued != NULL) {
            /* The rendezvous message goes too: its bytes are no longer
             * borrowed once this returns. */
            msg_t *m = r->queued;
            list_del(&m->link);
            msg_put(w, m);
            r->queued = NULL;
        }
        zap_request_complete(req, ZAP_ERR_CANCELED);
    }
    pthread_mutex_unlock(&r->mb->lock);
    req_put(w, r);
}

/* Fails every pending operation that involves rank dead: receives it posted
 * (cancelled), messages queued to it (senders see the peer fail), receives
 * others posted from it and rendezvous sends it queued elsewhere. */
static void inproc_close(zap_transport_t *t)
{
    zap_inproc_world_t *w = rank_of(t)->world;
    int dead = t->rank;
    if (atomic_exchange(&t->closed, true))
        return;
    for (int p = 0; p < w->nranks; p++) {
        mailbox_t *mb = &w->mbox[p];
        pthread_mutex_lock(&mb->lock);
        if (p == dead)
            mb->closed = 1;
        for (link_t *l = mb->posted.head.next, *n; l != &mb->posted.head; l = n) {
            n = l->next;
            inproc_req_t *r = CONTAINER(l, inproc_req_t, link);
            if (p == dead || r->base.peer == dead) {
                list_del(&r->link);
                zap_request_complete(&r->base, p == dead ? ZAP_ERR_CANCELED : ZAP_ERR_PEER_FAILED);
            }
        }
        for (link_t *l = mb->unexpected.head.next, *n; l != &mb->unexpected.head; l = n) {
            n = l->next;
            msg_t *m = CONTAINER(l, msg_t, link);
            /* Eager messages the dead rank sent are whole and stay
             * deliverable; its rendezvous sends borrowed its memory. */
            if (p == dead || (m->src == dead && m->send != NULL))
                consume_msg(w, mb, m, p == dead ? ZAP_ERR_PEER_FAILED : ZAP_ERR_CANCELED);
        }
        pthread_cond_broadcast(&mb->cond);
        pthread_mutex_unlock(&mb->lock);
    }
}

/* A notice is delivered straight into each peer's log; a peer asleep in a
 * wait is woken (its waits look at notices when they wake). A closed peer
 * gets none. */
static zap_status_t inproc_notify(zap_transport_t *t, const int *peers, int npeers, const zap_notice_t *n)
{
    zap_inproc_world_t *w = rank_of(t)->world;
    zap_notice_t copy = *n;
    copy.from = t->rank;
    for (int i = 0; i < npeers; i++) {
        int p = peers[i];
        if (p < 0 || p >= w->nranks || p == t->rank || atomic_load(&w->ranks[p].base.closed))
            continue;
        zap_transport_notice_arrived(&w->ranks[p].base, &copy);
        pthread_mutex_lock(&w->mbox[p].lock);
        pthread_cond_broadcast(&w->mbox[p].cond);
        pthread_mutex_unlock(&w->mbox[p].lock);
    }
    return ZAP_OK;
}

static const zap_transport_ops_t inproc_ops = {
    .notify = inproc_notify,
    .name = "inproc",
    .cap_flags = ZAP_CAP_ZERO_COPY,
    .min_latency_us = 1.0,
    .isend = inproc_isend,
    .irecv = inproc_irecv,
    .probe = inproc_probe,
    .progress = inproc_progress,
    .test = inproc_test,
    .wait = inproc_wait,
    .request_free = inproc_request_free,
    .close = inproc_close,
    .host = inproc_host,
    .traffic = inproc_traffic,
};

/* ---- world -------------------------------------------------------------- */

zap_status_t zap_inproc_world_create(int nranks, zap_pool_t *pool, zap_inproc_world_t **world_p)
{
    return zap_inproc_world_create_ex(nranks, pool, NULL, world_p);
}

zap_status_t zap_inproc_world_create_ex(int nranks, zap_pool_t *pool, const zap_transport_params_t *params,
                                        zap_inproc_world_t **world_p)
{
    if (world_p == NULL || nranks < 1 || nranks > 4096) {
        zap_error("inproc: world of %d ranks: must be 1 to 4096", nranks);
        return ZAP_ERR_INVALID_PARAM;
    }
    uint64_t eager = 0;
    zap_status_t st = zap_cfg_get_u64(ZAP_CFG_INPROC_EAGER_BYTES, &eager);
    if (st != ZAP_OK)
        return st;
    double timeout = 0;
    st = zap_transport_params_timeout(params, &timeout);
    if (st != ZAP_OK)
        return st;
    zap_inproc_world_t *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return ZAP_ERR_NO_MEMORY;
    w->nranks = nranks;
    w->eager_limit = eager;
    w->mbox = calloc((size_t)nranks, sizeof(mailbox_t));
    w->ranks = calloc((size_t)nranks, sizeof(inproc_rank_t));
    if (w->mbox == NULL || w->ranks == NULL) {
        st = ZAP_ERR_NO_MEMORY;
        goto err_free;
    }
    if (pool == NULL) {
        zap_pool_params_t pp = {.backend = ZAP_POOL_BACKEND_ENV, .device = -1, .name = "inproc"};
        st = zap_pool_create(&pp, &pool);
        if (st != ZAP_OK)
            goto err_free;
        w->owns_pool = 1;
    }
    w->pool = pool;
    pthread_mutex_init(&w->alloc_lock, NULL);
    for (int r = 0; r < nranks; r++) {
        pthread_mutex_init(&w->mbox[r].lock, NULL);
        pthread_cond_init(&w->mbox[r].cond, NULL);
        list_init(&w->mbox[r].posted);
        list_init(&w->mbox[r].unexpected);
        w->ranks[r].world = w;
        pthread_mutex_init(&w->ranks[r].sent_lock, NULL);
        zap_transport_base_init(&w->ranks[r].base, &inproc_ops, r, nranks, pool, false);
        w->ranks[r].base.timeout_s = timeout;
    }
    *world_p = w;
    return ZAP_OK;

err_free:
    free(w->mbox);
    free(w->ranks);
    free(w);
    return st;
}

zap_status_t zap_inproc_world_set_hosts(zap_inproc_world_t *world, const uint64_t *hosts)
{
    if (world == NULL)
        return ZAP_ERR_INVALID_PARAM;
    uint64_t *copy = NULL;
    if (hosts != NULL) {
        copy = malloc((size_t)world->nranks * sizeof(uint64_t));
        if (copy == NULL)
            return ZAP_ERR_NO_MEMORY;
        memcpy(copy, hosts, (size_t)world->nranks * sizeof(uint64_t));
    }
    free(world->hosts);
    world->hosts = copy;
    return ZAP_OK;
}

zap_status_t zap_inproc_transport(zap_inproc_world_t *world, int rank, zap_transport_t **t_p)
{
    if (world == NULL || t_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    if (rank < 0 || rank >= world->nranks)
        return ZAP_ERR_NOT_FOUND;
    *t_p = &world->ranks[rank].base;
    return ZAP_OK;
}

void zap_inproc_world_destroy(zap_inproc_world_t *world)
{
    if (world == NULL)
        return;
    for (int r = 0; r < world->nranks; r++)
        inproc_close(&world->ranks[r].base);
    for (int r = 0; r < world->nranks; r++) {
        pthread_mutex_destroy(&world->mbox[r].lock);
        pthread_cond_destroy(&world->mbox[r].cond);
        zap_transport_base_cleanup(&world->ranks[r].base);
        pthread_mutex_destroy(&world->ranks[r].sent_lock);
    }
    free(world->hosts);
    for (size_t i = 0; i < world->nblocks; i++)
        free(world->blocks[i]);
    free(world->blocks);
    pthread_mutex_destroy(&world->alloc_lock);
    if (world->owns_pool && zap_pool_destroy(world->pool) != ZAP_OK)
        zap_error("inproc: world pool still has buffers out; left in place");
    free(world->mbox);
    free(world->ranks);
    free(world);
}
