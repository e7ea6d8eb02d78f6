/* The job's watch on its peers while this rank verifies (watch.h). The
 * receives use a tag no one sends (next to the stream's, below the
 * collectives' bit, apart from zap-verify's load watch), so they end only
 * when the transport fails them with their peer; testing them progresses
 * the transport, whose error handling then logs the failed rank and sends
 * its failure notices (core/transport/ucp_notice.c). One test per peer every
 * 5 ms: nothing measurable next to the verifier. */
#include "verify/watch.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_WATCH 0x5A5600000003ull

struct zap_verify_watch {
    zap_transport_t *t;
    int n;
    zap_request_t **reqs;
    pthread_t tid;
    int started;
    int stop;   /* __atomic: set by zap_verify_watch_stop */
    int failed; /* __atomic: the verifier's cancel flag */
    zap_status_t status;
};

static void fail(zap_verify_watch_t *w, zap_status_t s)
{
    if (w->status == ZAP_OK)
        w->status = s;
    __atomic_store_n(&w->failed, 1, __ATOMIC_RELEASE);
}

static void *watch_main(void *arg)
{
    zap_verify_watch_t *w = arg;
    struct timespec ts = {0, 5 * 1000 * 1000};
    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE) && !__atomic_load_n(&w->failed, __ATOMIC_RELAXED)) {
        for (int i = 0; i < w->n; i++) {
            int done = 0;
            zap_status_t s = zap_request_test(w->reqs[i], &done);
            if (s == ZAP_OK && done)
                s = ZAP_ERR_CORRUPT; /* a message on a tag no one sends */
            if (s != ZAP_OK) {
                fail(w, s);
                break;
            }
        }
        nanosleep(&ts, NULL);
    }
    return NULL;
}

zap_verify_watch_t *zap_verify_watch_start(zap_transport_t *t, const int *peers, int n)
{
    zap_transport_caps_t caps;
    if (!t || n <= 0 || zap_transport_caps(t, &caps) != ZAP_OK || !caps.name || strcmp(caps.name, "inproc") == 0)
        return NULL;
    zap_verify_watch_t *w = calloc(1, sizeof(*w));
    if (!w || !(w->reqs = calloc((size_t)n, sizeof(*w->reqs)))) {
        free(w);
        return NULL; /* unwatched: a failure shows at the combine, as without the watch */
    }
    w->t = t;
    for (int i = 0; i < n; i++) {
        zap_status_t s = zap_transport_irecv(t, peers[i], TAG_WATCH, NULL, 0, &w->reqs[w->n]);
        if (s != ZAP_OK) {
            fail(w, s); /* the peer is gone already: the verifier need not start */
            return w;
        }
        w->n++;
    }
    if (pthread_create(&w->tid, NULL, watch_main, w) != 0) {
        zap_verify_watch_stop(w);
        return NULL;
    }
    w->started = 1;
    return w;
}

const int *zap_verify_watch_flag(const zap_verify_watch_t *w)
{
    return w ? &w->failed : NULL;
}

zap_status_t zap_verify_watch_stop(zap_verify_watch_t *w)
{
    if (!w)
        return ZAP_OK;
    __atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
    if (w->started)
        pthread_join(w->tid, NULL);
    zap_status_t s = w->status;
    for (int i = 0; i < w->n; i++)
        zap_request_free(w->reqs[i]); /* cancels it */
    free(w->reqs);
    free(w);
    return s;
}
