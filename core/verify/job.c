/* The distributed verification job (docs/verify.md): a short driver over the
 * job's state and its phases (job_state.h): plan, distribute and verify
 * (overlapped), combine, agree. Every rank runs the same sequence of
 * collectives whatever happens locally, so a failure on one rank is
 * reported on all of them and none is left waiting.
 *
 * Shards are contiguous record ranges whose boundaries are multiples of 32
 * items (zap_verify_shard), so bitmap words never straddle ranks and a
 * scatter is plain byte ranges. */
#include "verify/job_state.h"
#include "base/log.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void zap_verify_result_cleanup(zap_verify_result_t *result)
{
    if (!result)
        return;
    free(result->bitmap);
    free(result->ranks);
    memset(result, 0, sizeof(*result));
}

zap_status_t zap_verify_job_go(zap_verify_job_state_t *j, zap_status_t local, const char *other_did)
{
    int32_t go = local;
    zap_status_t s = zap_allreduce(j->comm, ZAP_IN_PLACE, &go, 1, ZAP_DT_INT32, ZAP_OP_MIN);
    if (s != ZAP_OK)
        return s;
    if (go != ZAP_OK && local == ZAP_OK)
        zap_error("verify: job: another rank %s: %s", other_did, zap_status_string((zap_status_t)go));
    return (zap_status_t)go;
}

/* The job's arguments, checked before anything is sent; the state set up. */
static zap_status_t job_init(zap_verify_job_state_t *j, zap_comm_t *comm, const void *batch, size_t len,
                             const zap_verify_params_t *params, const zap_verify_hooks_t *hooks,
                             const zap_verify_result_t *result_p)
{
    memset(j, 0, sizeof(*j));
    if (!comm || !result_p) {
        zap_error("verify: job: NULL %s", comm ? "result" : "communicator");
        return ZAP_ERR_INVALID_PARAM;
    }
    if (params)
        j->prm = *params;
    if (hooks)
        j->hooks = *hooks;
    j->comm = comm;
    j->t = zap_comm_transport(comm);
    j->batch = batch;
    j->len = len;
    j->rank = zap_comm_rank(comm);
    j->nranks = zap_comm_size(comm);
    j->root = j->prm.root;
    j->prep_dev = -1;
    j->partner = -1;
    zap_comm_attr_t attr = {.field_mask = ZAP_COMM_ATTR_HOSTS | ZAP_COMM_ATTR_TIMEOUT};
    j->across_hosts = zap_comm_query(comm, &attr) == ZAP_OK && attr.hierarchy;
    j->timeout_s = attr.timeout_s > 0 ? attr.timeout_s : INFINITY;
    if (j->root < 0 || j->root >= j->nranks || j->prm.mode > ZAP_VERIFY_BCAST ||
        j->prm.combine > ZAP_COMBINE_ALLGATHERV) {
        zap_error("verify: job: bad parameters (root %d of %d ranks, mode %d, combine %d)", j->root, j->nranks,
                  (int)j->prm.mode, (int)j->prm.combine);
        return ZAP_ERR_INVALID_PARAM;
    }
    return ZAP_OK;
}

/* Ends what a failure left running (the peer watch, the preparation) and
 * frees the state; the job's status, or the watch's when a peer failed. */
static zap_status_t job_cleanup(zap_verify_job_state_t *j, zap_status_t s)
{
    if (j->watch) {
        zap_status_t ws = zap_verify_job_watch_end(j);
        if (ws != ZAP_OK)
            s = ws; /* not the CANCELED of the sender or verifier it stopped */
    }
    if (j->prepping)
        pthread_join(j->prep_tid, NULL);
    free(j->mine);
    free(j->ranges);
    free(j->rows);
    free(j->counts);
    free(j->displs);
    free(j->slices);
    zap_buf_free(&j->shard_buf);
    zap_verify_stream_recv_free(j->stream);
    free(j->segs);
    free(j->sranks);
    zap_verify_result_cleanup(&j->res);
    return s;
}

zap_status_t zap_verify_job_hooked(zap_comm_t *comm, const void *batch, size_t len, const zap_verify_params_t *params,
                                   const zap_verify_hooks_t *hooks, zap_verify_result_t *result_p)
{
    zap_verify_job_state_t j;
    zap_status_t s = job_init(&j, comm, batch, len, params, hooks, result_p);
    if (s != ZAP_OK)
        return s;
    zap_verify_job_prepare(&j);
    j.t0 = zap_clock_now();
    s = zap_verify_job_plan(&j);
    if (s == ZAP_OK)
        s = zap_verify_job_distribute(&j);
    if (s == ZAP_OK)
        s = zap_verify_job_verified(&j);
    if (s == ZAP_OK)
        s = zap_verify_job_combine(&j);
    if (s == ZAP_OK)
        s = zap_verify_job_agree(&j, result_p);
    return job_cleanup(&j, s);
}

zap_status_t zap_verify_job(zap_comm_t *comm, const void *batch, size_t len, const zap_verify_params_t *params,
                            zap_verify_result_t *result_p)
{
    return zap_verify_job_hooked(comm, batch, len, params, NULL, result_p);
}
