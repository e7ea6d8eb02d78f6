/* Phase 2 of the job, distribute, overlapped with phase 3 (docs/verify.md):
 *
 *   bcast    a zap_bcast of the whole batch; the root verifies its shard
 *            while a helper thread drives the broadcast, every other rank
 *            re-parses what it received (CRC included) and verifies its
 *            shard in place;
 *   scatter  the root streams each rank its records (and blob slice) in
 *            segments that double in size (stream.h) from a sender thread
 *            and verifies its own shard in place meanwhile, so its memory
 *            stays at the batch plus bookkeeping; then it takes its
 *            neighbour's segments that the neighbour has not asked for yet
 *            (the balance); a rank verifies segment k while k + 1 arrives.
 *
 * During the transfer only one thread per rank drives the communicator (the
 * broadcast helper or the stream's threads); the job's thread verifies. */
#include "verify/job_state.h"
#include "verify/verify_impl.h"
#include "base/log.h"
#include "verify_device.h"
#include <string.h>

/* A GPU rank's preparation readies its verifier for calls of up to this many
 * items (a segment of a 2^22-item job on two ranks stays below it). */
#define ZAP_VERIFY_PREPARE_ITEMS ((uint64_t)1 << 20)

/* A rank that will receive a scatter stream for its GPU readies it on a
 * helper thread as soon as the job starts, while the root still parses the
 * batch (and usually still reads it): the pinned staging ring, which is slow
 * to pin and would stall the GPU calls if pinned later, and the verifier's
 * device state. The stream joins it before it starts. */
static void *prepare_main(void *arg)
{
    int dev = *(int *)arg;
    zap_verify_ring_release(zap_verify_ring_acquire(dev)); /* kept for this device's stream */
    zap_verify_gpu_prepare(ZAP_VERIFY_PREPARE_ITEMS);
    return NULL;
}

void zap_verify_job_prepare(zap_verify_job_state_t *j)
{
    if (j->rank != j->root && j->prm.mode == ZAP_VERIFY_SCATTER && zap_verify_gpu_planned(&j->prm, UINT64_MAX) &&
        (j->prep_dev = zap_verify_stream_device(j->t, 1)) >= 0)
        j->prepping = zap_verify_stream_thread(&j->prep_tid, prepare_main, &j->prep_dev, j->prep_dev) == 0;
}

/* The root's broadcast of the whole batch, on a helper thread. */
typedef struct bcast_arg {
    zap_comm_t *comm;
    void *buf;
    uint64_t len;
    int root;
    zap_status_t status;
    double t_done;
} bcast_arg_t;

static void *bcast_main(void *arg)
{
    bcast_arg_t *a = arg;
    a->status = zap_bcast(a->comm, a->buf, (size_t)a->len, ZAP_DT_UINT8, a->root);
    a->t_done = zap_clock_now();
    return NULL;
}

/* bcast mode. Receive buffers come from the transport's pool (sends from it
 * need no copy); a rank that cannot get one says so before the transfer. */
static zap_status_t distribute_bcast(zap_verify_job_state_t *j)
{
    zap_status_t local = ZAP_OK, s;
    if (j->rank != j->root && j->plan.total_len > 0)
        local = zap_transport_alloc(j->t, (size_t)j->plan.total_len, &j->shard_buf);
    if ((s = zap_verify_job_go(j, local, "could not allocate its receive buffer")) != ZAP_OK)
        return s;
    if (j->rank == j->root) {
        /* The communicator stays with one thread at a time: the job's thread
         * does not touch it while the helper broadcasts. */
        bcast_arg_t ba = {j->comm, (void *)j->batch, j->plan.total_len, j->root, ZAP_OK, 0};
        pthread_t tid;
        int threaded = zap_verify_stream_thread(&tid, bcast_main, &ba, j->dev) == 0;
        if (!threaded)
            bcast_main(&ba);
        j->t1 = zap_clock_now();
        j->local = zap_verify_job_slice(j, &j->root_view, j->first, j->count, &j->st);
        if (threaded)
            pthread_join(tid, NULL);
        j->t_in_place = ba.t_done;
        return ba.status;
    }
    s = zap_bcast(j->comm, j->shard_buf.ptr, j->plan.total_len, ZAP_DT_UINT8, j->root);
    if (s != ZAP_OK)
        return s;
    j->t_in_place = zap_clock_now();
    zap_batch_view_t all;
    j->local = zap_batch_parse(j->shard_buf.ptr, j->plan.total_len, 0, &all, NULL, NULL, 0);
    if (j->local == ZAP_OK && (all.n_items != j->plan.n_items || all.batch_id != j->plan.batch_id))
        j->local = ZAP_ERR_CORRUPT;
    j->t1 = zap_clock_now();
    if (j->local == ZAP_OK)
        j->local = zap_verify_job_slice(j, &all, j->first, j->count, &j->st);
    return ZAP_OK;
}

/* The root's stream to every other rank: their segment plans and where
 * their bytes are. *ipartner_p: the neighbour's index among them (-1: none).
 * Returns how many segments there are in all. */
static size_t scatter_plans(zap_verify_job_state_t *j, int *nsr_p, int *ipartner_p)
{
    size_t used = 0;
    int nsr = 0;
    *ipartner_p = -1;
    for (int r = 0; r < j->nranks; r++) {
        uint64_t f, c;
        zap_verify_shard(j->plan.n_items, j->nranks, r, &f, &c);
        if (r == j->root)
            continue;
        uint64_t lo = j->var_scatter ? j->slices[2 * r] : 0, hi = j->var_scatter ? j->slices[2 * r + 1] : 0;
        size_t n = zap_verify_job_segments(j, r, c, hi - lo, j->segs + used);
        if (r == j->partner)
            *ipartner_p = nsr;
        j->sranks[nsr++] = (zap_verify_stream_rank_t){r,
                                                      j->root_view.records + f * j->plan.stride,
                                                      hi > lo ? j->root_view.blob + lo : NULL,
                                                      j->segs + used,
                                                      n,
                                                      r == j->partner,
                                                      j->plan.stride};
        used += n;
    }
    *nsr_p = nsr;
    return used;
}

/* scatter mode, the root: a sender thread streams every other rank its
 * segments while this thread verifies the root's shard in place, then the
 * neighbour's segments it can take. */
static zap_status_t distribute_scatter_root(zap_verify_job_state_t *j)
{
    zap_verify_stream_send_t *sender = NULL;
    int nsr = 0, ipartner = -1;
    if (scatter_plans(j, &nsr, &ipartner) > 0) {
        zap_status_t s = zap_verify_stream_send_start(j->t, j->sranks, nsr, j->dev, j->hooks.chunk_bytes, j->timeout_s,
                                                      &sender);
        if (s != ZAP_OK)
            return s;
    }
    j->t1 = zap_clock_now();
    j->local = zap_verify_job_slice(j, &j->root_view, j->first, j->count, &j->st);
    if (sender && j->local == ZAP_OK)
        j->local = zap_verify_job_balance(j, sender, ipartner);
    j->t_in_place = j->t1;
    if (!sender)
        return ZAP_OK;
    int mismatches = 0;
    if (zap_verify_canceled())
        zap_verify_stream_send_abort(sender); /* a rank failed: the job is over, stream no more */
    zap_status_t s = zap_verify_stream_send_finish(sender, &j->t_in_place, &mismatches);
    if (s != ZAP_OK)
        return s;
    if (mismatches && j->local == ZAP_OK)
        j->local = ZAP_ERR_CORRUPT; /* a rank read "taken" where the plans differ */
    return ZAP_OK;
}

/* Starts this rank's stream; a rank that cannot start it tells the root and
 * reports the failure in the exchange after verification. Returns how many
 * segments it will receive. */
static size_t scatter_rank_start(zap_verify_job_state_t *j, uint64_t slice_lo, uint64_t slice_len)
{
    size_t nseg = zap_verify_job_segments(j, j->rank, j->count, slice_len, j->segs);
    if (j->prepping) {
        pthread_join(j->prep_tid, NULL);
        j->prepping = 0;
    }
    if (nseg == 0)
        return 0;
    zap_verify_stream_opts_t o = {j->gpu_planned && j->dev >= 0,
                                  j->rank == j->partner,
                                  j->var_scatter,
                                  j->plan.stride,
                                  slice_lo,
                                  slice_lo + slice_len,
                                  j->hooks.chunk_bytes,
                                  j->timeout_s,
                                  j->rank == j->hooks.stall_rank ? j->hooks.stall_seconds : 0};
    j->local = zap_verify_stream_recv_start(j->t, j->root, j->segs, nseg, j->dev, &o, &j->stream);
    if (j->local != ZAP_OK) {
        zap_verify_stream_recv_refuse(j->t, j->root, j->segs, nseg, j->local);
        j->stream = NULL;
        return 0;
    }
    return nseg;
}

/* scatter mode, another rank: verify each segment as it arrives. */
static zap_status_t distribute_scatter_rank(zap_verify_job_state_t *j)
{
    uint64_t slice_lo = j->var_scatter ? j->slices[2 * j->rank] : 0;
    uint64_t slice_len = j->var_scatter ? j->slices[2 * j->rank + 1] - slice_lo : 0;
    size_t nseg = scatter_rank_start(j, slice_lo, slice_len);
    uint64_t got = 0; /* record items verified; a shared stream's come from the far end */
    const uint8_t *blob_host = NULL, *blob_dev = NULL;
    j->shard.blob_len = slice_len;
    for (size_t k = 0; k < nseg && j->local == ZAP_OK; k++) {
        uint8_t *host = NULL;
        const uint8_t *devp = NULL;
        j->local = zap_verify_stream_recv_get(j->stream, k, &host, &devp);
        if (j->local != ZAP_OK || (!host && !devp))
            break; /* an error, or the root took k and the rest */
        if (j->segs[k].blob) {
            blob_host = host;
            blob_dev = devp;
            continue;
        }
        if (j->t1 == 0)
            j->t1 = zap_clock_now();
        j->local = zap_verify_job_segment(j, k, host, devp, blob_host, blob_dev);
        got += j->segs[k].items;
    }
    if (j->rank == j->partner) {
        j->vfirst = j->rank > j->root ? j->first + j->count - got : j->first;
        j->vcount = got;
    }
    j->t_in_place = zap_clock_now();
    if (j->stream) {
        zap_status_t rs = zap_verify_stream_recv_finish(j->stream, &j->t_in_place);
        if (j->local == ZAP_OK)
            j->local = rs;
    }
    if (j->vcount == 0)
        j->st.used = ZAP_VERIFIER_CPU; /* nothing verified (an empty shard, or the root took it all) */
    return ZAP_OK;
}

zap_status_t zap_verify_job_distribute(zap_verify_job_state_t *j)
{
    j->gpu_planned = j->rank != j->root && zap_verify_gpu_planned(&j->prm, j->count);
    j->dev = zap_verify_stream_device(j->t, j->gpu_planned);
    zap_verify_job_watch_begin(j);
    zap_status_t s;
    if (j->plan.mode == ZAP_VERIFY_BCAST)
        s = distribute_bcast(j);
    else if (j->across_hosts)
        s = zap_verify_job_distribute_hier(j);
    else if (j->rank == j->root)
        s = distribute_scatter_root(j);
    else
        s = distribute_scatter_rank(j);
    if (s != ZAP_OK)
        return s;
    if (j->t1 == 0)
        j->t1 = zap_clock_now();
    s = zap_verify_job_watch_end(j);
    if (s != ZAP_OK)
        return s; /* the peer's failure, now: the exchange after verification would only find it again */
    j->res.distribute_seconds = j->t1 - j->t0;
    return ZAP_OK;
}
