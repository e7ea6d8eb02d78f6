/* Fuzz target: what the collectives decode from the wire. Two inproc ranks
 * run the same collective; every message rank 1 receives is replaced, on
 * arrival, by the next chunk of the fuzz input (a "mutating link" between the
 * transport and the collectives), so rank 1 decodes argument headers, header
 * and payload messages of the recursive-doubling allreduce, broadcast,
 * allgather and barrier steps from arbitrary bytes of arbitrary length.
 *
 * Input: byte 0 picks the collective, byte 1 its count (and root), then
 * chunks of [u16 little-endian length][bytes]; once the input runs out,
 * messages pass unchanged. A chunk longer than the receive buffer completes
 * the receive with ZAP_ERR_TRUNCATED, as the transport would.
 *
 * Properties: no crash and no out-of-bounds access (ASan/UBSan); rank 1's
 * status is one a collective may return (OK, MISMATCH, TRUNCATED, TIMED_OUT,
 * CORRUPT, PEER_FAILED, CANCELED); both ranks return within a bound of a
 * few ZAP_TIMEOUTs (0.02 s here, so a run makes progress), i.e. a malformed
 * message never makes a rank wait forever; and when no message was replaced
 * and both ranks succeed, their results agree. (A short timeout can expire on
 * a loaded machine even without replaced messages, so a timeout alone is not
 * a failure.) */
#include "fuzz_target.h"
#include "zap/coll.h"
#include "zap/inproc.h"
#include "mutating_link.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the two ranks ---- */

typedef struct rank_arg {
    zap_comm_t *comm;
    int rank, kind;
    size_t count;
    int root;
    zap_status_t st;
    int64_t out[64 * 2];
} rank_arg_t;

static void *rank_main(void *p)
{
    rank_arg_t *a = p;
    int64_t in[64];
    for (size_t i = 0; i < 64; i++)
        in[i] = (int64_t)(a->rank + 1) * (int64_t)(i + 3);
    memset(a->out, 0, sizeof(a->out));
    switch (a->kind) {
    case 0: a->st = zap_allreduce(a->comm, in, a->out, a->count, ZAP_DT_INT64, ZAP_OP_SUM); break;
    case 1:
        memcpy(a->out, in, sizeof(in));
        a->st = zap_bcast(a->comm, a->out, a->count, ZAP_DT_INT64, a->root);
        break;
    case 2: a->st = zap_allgather(a->comm, in, a->count, a->out, ZAP_DT_INT64); break;
    default: a->st = zap_barrier(a->comm); break;
    }
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct comm_arg {
    zap_transport_t *t;
    zap_comm_t *comm;
    zap_status_t st;
} comm_arg_t;

static void *comm_main(void *p)
{
    comm_arg_t *a = p;
    a->st = zap_comm_create(a->t, &a->comm);
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    /* The communicator is built with a generous timeout (no message is
     * replaced yet, and a loaded machine must not fail it); the collective
     * under test runs with a short one. No other thread runs while the
     * environment changes. */
    setenv("ZAP_TIMEOUT", "10", 1);
    zap_inproc_world_t *w = NULL;
    FUZZ_CHECK(zap_inproc_world_create(2, NULL, &w) == ZAP_OK);
    zap_transport_t *t0 = NULL, *t1 = NULL;
    FUZZ_CHECK(zap_inproc_transport(w, 0, &t0) == ZAP_OK && zap_inproc_transport(w, 1, &t1) == ZAP_OK);
    mut_transport_t m;
    mut_link_init(&m, t1, data + 2, size - 2, 0);

    comm_arg_t c0 = {t0, NULL, ZAP_INPROGRESS}, c1 = {&m.base, NULL, ZAP_INPROGRESS};
    pthread_t th0, th1;
    pthread_create(&th0, NULL, comm_main, &c0);
    pthread_create(&th1, NULL, comm_main, &c1);
    pthread_join(th0, NULL);
    pthread_join(th1, NULL);
    FUZZ_CHECK(c0.st == ZAP_OK && c1.st == ZAP_OK);
    m.active = 1;
    setenv("ZAP_TIMEOUT", "0.02", 1);
    /* A communicator's timeout is fixed when it is made: the collective runs
     * on communicators of the same two ranks made now, locally, with the
     * short one. */
    static const int both[2] = {0, 1};
    zap_comm_params_t quick = {.timeout_s = 0.02};
    zap_comm_t *q0 = NULL, *q1 = NULL;
    FUZZ_CHECK(zap_comm_create_subgroup(c0.comm, both, 2, 1, &quick, &q0) == ZAP_OK &&
               zap_comm_create_subgroup(c1.comm, both, 2, 1, &quick, &q1) == ZAP_OK);
    zap_comm_destroy(c0.comm);
    zap_comm_destroy(c1.comm);
    c0.comm = q0;
    c1.comm = q1;

    rank_arg_t a[2];
    for (int r = 0; r < 2; r++) {
        a[r].comm = r ? c1.comm : c0.comm;
        a[r].rank = r;
        a[r].kind = data[0] % 4;
        a[r].count = data[1] % 65;
        a[r].root = data[1] & 1;
        a[r].st = ZAP_INPROGRESS;
    }
    double t_start = now_s();
    pthread_create(&th0, NULL, rank_main, &a[0]);
    pthread_create(&th1, NULL, rank_main, &a[1]);
    pthread_join(th0, NULL);
    pthread_join(th1, NULL);
    double took = now_s() - t_start;
    /* Each rank waits at most ZAP_TIMEOUT per step; a few steps at most here. */
    FUZZ_CHECK(took < 5.0);
    zap_status_t ok_set[] = {ZAP_OK, ZAP_ERR_MISMATCH, ZAP_ERR_TRUNCATED, ZAP_ERR_TIMED_OUT,
                             ZAP_ERR_CORRUPT, ZAP_ERR_PEER_FAILED, ZAP_ERR_CANCELED};
    int allowed = 0;
    for (size_t i = 0; i < sizeof(ok_set) / sizeof(ok_set[0]); i++)
        allowed |= a[1].st == ok_set[i];
    FUZZ_CHECK(allowed);
    if (m.replaced == 0 && a[0].st == ZAP_OK && a[1].st == ZAP_OK) {
        size_t n = a[0].kind == 3 ? 0 : a[0].kind == 2 ? 2 * a[0].count : a[0].count;
        FUZZ_CHECK(memcmp(a[0].out, a[1].out, n * sizeof(int64_t)) == 0);
    }
    zap_comm_destroy(c0.comm);
    zap_comm_destroy(c1.comm);
    zap_inproc_world_destroy(w);
    return 0;
}
