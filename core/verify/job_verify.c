/* Phase 3 of the job, verify (docs/verify.md): the verifier calls of the
 * distribute phase (a shard in place, a received segment, the segments the
 * root takes from its neighbour), the peer watch around them, and the
 * exchange that ends the phase: every rank's status and the range it
 * verified, so a rank whose verifier (or stream) failed fails the job
 * everywhere and every rank knows where the boundaries ended. */
#include "verify/job_state.h"
#include "verify/verify_impl.h"
#include "base/log.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The slow hook's delay before each verifier call of the slow rank. */
static void hook_slow(const zap_verify_job_state_t *j)
{
    if (j->rank == j->hooks.slow_rank && j->hooks.slow_seconds > 0)
        zap_verify_hook_sleep(j->hooks.slow_seconds);
}

static void stats_add(zap_verify_stats_t *st, const zap_verify_stats_t *ps)
{
    st->checked += ps->checked;
    st->invalid += ps->invalid;
    st->malformed += ps->malformed;
    st->seconds += ps->seconds;
}

zap_status_t zap_verify_job_slice(zap_verify_job_state_t *j, const zap_batch_view_t *all, uint64_t first,
                                  uint64_t items, zap_verify_stats_t *st)
{
    zap_batch_view_t view = *all;
    view.records = all->records + first * all->stride;
    view.n_items = items;
    hook_slow(j);
    return zap_verify_piece(&view, &j->prm, j->count, j->res.bitmap + first / 32, NULL, st);
}

zap_status_t zap_verify_job_segment(zap_verify_job_state_t *j, size_t k, uint8_t *host, const uint8_t *devp,
                                    const uint8_t *blob_host, const uint8_t *blob_dev)
{
    const zap_verify_seg_t *g = &j->segs[k];
    zap_batch_view_t piece = j->shard;
    piece.n_items = g->items;
    uint32_t *words = j->res.bitmap + (j->first + g->item_off) / 32;
    zap_verify_stats_t ps;
    memset(&ps, 0, sizeof(ps));
    zap_status_t local = ZAP_OK;
    hook_slow(j);
    if (devp) {
        /* The device copy, on the GPU only: the CPU cannot read it. */
        zap_verify_params_t gp = j->prm;
        gp.verifier = ZAP_VERIFIER_GPU;
        piece.records = devp;
        piece.blob = blob_dev ? blob_dev : blob_host;
        local = zap_verify_piece(&piece, &gp, j->count, words, NULL, &ps);
        if (local != ZAP_OK && host)
            zap_warn("verify: job: the gpu failed on the device copy of segment %zu (%s); verifying its host bytes "
                     "as the verifier setting says",
                     k, zap_status_string(local));
        else if (local != ZAP_OK)
            zap_error("verify: job: the gpu failed on segment %zu (%s), which came through the staging ring and "
                      "exists only on the device",
                      k, zap_status_string(local));
    }
    if (!devp || (local != ZAP_OK && host)) { /* (through the ring there are no host bytes) */
        piece.records = host;
        piece.blob = blob_host;
        local = zap_verify_piece(&piece, &j->prm, j->count, words, NULL, &ps);
    }
    stats_add(&j->st, &ps);
    j->st.used = ps.used;
    j->st.threads = ps.threads;
    return local;
}

zap_status_t zap_verify_job_balance(zap_verify_job_state_t *j, zap_verify_stream_send_t *sender, int ipartner)
{
    uint64_t pf = 0, pc = 0, taken = 0;
    zap_status_t local = ZAP_OK;
    long k;
    if (j->partner >= 0)
        zap_verify_shard(j->plan.n_items, j->nranks, j->partner, &pf, &pc);
    while (local == ZAP_OK && (k = zap_verify_stream_send_take(sender, ipartner)) >= 0) {
        const zap_verify_seg_t *g = &j->sranks[ipartner].segs[k];
        zap_verify_stats_t ps;
        memset(&ps, 0, sizeof(ps));
        local = zap_verify_job_slice(j, &j->root_view, pf + g->item_off, g->items, &ps);
        stats_add(&j->st, &ps);
        taken += g->items;
    }
    if (taken) {
        j->vfirst = j->partner > j->root ? j->first : j->first - taken;
        j->vcount = j->count + taken;
    }
    return local;
}

/* While this rank verifies it makes no transport call of its own, so a peer
 * that dies then would be noticed only at the combine, a whole verification
 * later. A watch (watch.c) on the peers this rank talks to keeps the
 * transport progressed and cancels the verifier when one fails: the root
 * watches every rank it streams to, another rank the root (a rank that dies
 * elsewhere makes the root leave, and its failure notice names that rank).
 * The calling thread's verifier calls read the watch's flag. */
void zap_verify_job_watch_begin(zap_verify_job_state_t *j)
{
    const int rank = j->rank, root = j->root, nranks = j->nranks;
    int *peers = nranks > 1 ? malloc((size_t)nranks * sizeof(int)) : NULL;
    int n = 0;
    for (int r = 0; peers && r < nranks; r++)
        if (r != rank && (rank == root || r == root))
            peers[n++] = r;
    j->watch = peers ? zap_verify_watch_start(j->t, peers, n) : NULL;
    free(peers);
    zap_verify_set_cancel(zap_verify_watch_flag(j->watch));
}

zap_status_t zap_verify_job_watch_end(zap_verify_job_state_t *j)
{
    zap_verify_set_cancel(NULL);
    zap_status_t s = zap_verify_watch_stop(j->watch);
    j->watch = NULL;
    if (s != ZAP_OK)
        zap_error("verify: job: rank %d stopped verifying: a peer failed (%s; the transport's log names the rank)",
                  j->rank, zap_status_string(s));
    return s;
}

/* The worst status in the exchanged rows, ZAP_ERR_CORRUPT when the ranges do
 * not tile [0, n) in word-aligned pieces (the combine assumes they do). */
static int64_t ranges_check(const zap_verify_job_state_t *j)
{
    const uint64_t *ranges = j->ranges, n = j->plan.n_items;
    int64_t worst = ZAP_OK;
    uint64_t end = 0;
    int tiled = 1;
    for (int r = 0; r < j->nranks; r++) {
        int64_t rs = (int64_t)ranges[3 * r];
        if (rs < worst)
            worst = rs;
        if (ranges[3 * r + 1] != end || (ranges[3 * r + 2] && end % 32) || ranges[3 * r + 2] > n - end)
            tiled = 0;
        else
            end += ranges[3 * r + 2];
    }
    if (worst == ZAP_OK && (!tiled || end != n)) {
        zap_error("verify: job: the ranges the ranks verified do not tile the %llu items", (unsigned long long)n);
        for (int r = 0; r < j->nranks; r++)
            zap_error("verify: job:   rank %d: [%llu, +%llu)", r, (unsigned long long)ranges[3 * r + 1],
                      (unsigned long long)ranges[3 * r + 2]);
        worst = ZAP_ERR_CORRUPT;
    }
    return worst;
}

zap_status_t zap_verify_job_verified(zap_verify_job_state_t *j)
{
    /* Every rank's status and the range it verified, in one collective: the
     * worst status fails the job everywhere, and the ranges (moved by
     * balancing) must tile [0, n) in word-aligned pieces. */
    uint64_t row3[3] = {(uint64_t)(int64_t)j->local, j->vfirst, j->vcount};
    for (int r = 0; r < j->nranks; r++) {
        j->counts[r] = 3;
        j->displs[r] = 3 * (ptrdiff_t)r;
    }
    zap_status_t s = zap_allgatherv(j->comm, row3, 3, j->ranges, j->counts, j->displs, ZAP_DT_UINT64);
    if (s != ZAP_OK)
        return s;
    int64_t worst = ranges_check(j);
    if (worst != ZAP_OK) {
        s = (zap_status_t)worst;
        if (j->local == ZAP_OK)
            zap_error("verify: job: another rank failed to verify its shard: %s", zap_status_string(s));
        return s;
    }
    j->t2 = zap_clock_now();
    j->res.verify_seconds = j->t2 - j->t1;
    return ZAP_OK;
}
