/* Phase 2 of the job across hosts (docs/verify.md, "Across hosts"): scatter
 * mode on a communicator whose collectives go through the hosts' hierarchy
 * (zap_comm_query, ZAP_COMM_ATTR_HOSTS).
 *
 * The shards travel in one zap_scatterv of the records (and one of the
 * variable messages' blob slices), which across hosts sends each other
 * host's leader its host's shards in one message and then scatters them
 * inside the host through its shared memory (coll/scatter/scatter_hier.c):
 * one transfer per host crosses the network, the least the batch needs,
 * where the per-rank stream would open one stream per rank of the other
 * hosts. The root verifies its own shard in place while a helper thread
 * drives the scatter (the communicator stays with one thread at a time);
 * every other rank verifies its shard once it is in place. Memory: a rank
 * holds its shard, a leader its host's too while it scatters them.
 *
 * Verdicts combine through the same collectives as on one host (job_verify.c
 * and job_combine.c: allgatherv and allreduce), which across hosts run
 * through the hierarchy too. */
#include "verify/job_state.h"
#include "verify/verify_impl.h"
#include "base/log.h"
#include <stdlib.h>
#include <string.h>

typedef struct scatter_arg {
    zap_verify_job_state_t *j;
    size_t *counts; /* records: counts, displs; blob slices: counts, displs (4 * nranks) */
    uint8_t *records, *blob;
    size_t records_cap, blob_cap;
    zap_status_t status;
    double t_done;
} scatter_arg_t;

static void *scatter_main(void *arg)
{
    scatter_arg_t *a = arg;
    zap_verify_job_state_t *j = a->j;
    size_t R = (size_t)j->nranks;
    int root = j->rank == j->root;
    a->status = zap_scatterv(j->comm, root ? j->root_view.records : NULL, a->counts, (const ptrdiff_t *)(a->counts + R), a->records,
                             a->records_cap, ZAP_DT_UINT8, j->root);
    if (a->status == ZAP_OK && j->var_scatter)
        a->status = zap_scatterv(j->comm, root ? j->root_view.blob : NULL, a->counts + 2 * R, (const ptrdiff_t *)(a->counts + 3 * R),
                                 a->blob, a->blob_cap, ZAP_DT_UINT8, j->root);
    a->t_done = zap_clock_now();
    return NULL;
}

/* The root's counts and displacements in bytes: each rank's records and
 * blob slice; its own are 0 (it verifies them in place). */
static void root_table(const zap_verify_job_state_t *j, size_t *c)
{
    size_t R = (size_t)j->nranks;
    for (int r = 0; r < j->nranks; r++) {
        uint64_t f, n;
        zap_verify_shard(j->plan.n_items, j->nranks, r, &f, &n);
        c[r] = r == j->root ? 0 : (size_t)(n * j->plan.stride);
        c[R + r] = (size_t)(f * j->plan.stride);
        uint64_t lo = j->var_scatter ? j->slices[2 * r] : 0, hi = j->var_scatter ? j->slices[2 * r + 1] : 0;
        c[2 * R + r] = r == j->root ? 0 : (size_t)(hi - lo);
        c[3 * R + r] = (size_t)lo;
    }
}

zap_status_t zap_verify_job_distribute_hier(zap_verify_job_state_t *j)
{
    size_t R = (size_t)j->nranks;
    uint64_t lo = j->var_scatter ? j->slices[2 * j->rank] : 0, hi = j->var_scatter ? j->slices[2 * j->rank + 1] : 0;
    scatter_arg_t a = {j, calloc(4 * R, sizeof(size_t)), NULL, NULL, 0, 0, ZAP_OK, 0};
    zap_buf_t blob_buf = {0};
    zap_status_t local = a.counts == NULL ? ZAP_ERR_NO_MEMORY : ZAP_OK, s;
    if (local == ZAP_OK && j->rank != j->root) {
        a.records_cap = (size_t)(j->count * j->plan.stride);
        a.blob_cap = (size_t)(hi - lo);
        if (a.records_cap > 0 && (local = zap_transport_alloc(j->t, a.records_cap, &j->shard_buf)) == ZAP_OK)
            a.records = j->shard_buf.ptr;
        if (local == ZAP_OK && a.blob_cap > 0 && (local = zap_transport_alloc(j->t, a.blob_cap, &blob_buf)) == ZAP_OK)
            a.blob = blob_buf.ptr;
    }
    if ((s = zap_verify_job_go(j, local, "could not allocate its receive buffer")) != ZAP_OK) {
        zap_buf_free(&blob_buf);
        free(a.counts);
        return s;
    }
    if (j->rank == j->root) {
        root_table(j, a.counts);
        pthread_t tid;
        int threaded = zap_verify_stream_thread(&tid, scatter_main, &a, j->dev) == 0;
        if (!threaded)
            scatter_main(&a);
        j->t1 = zap_clock_now();
        j->local = zap_verify_job_slice(j, &j->root_view, j->first, j->count, &j->st);
        if (threaded)
            pthread_join(tid, NULL);
        j->t_in_place = a.t_done;
        free(a.counts);
        return a.status;
    }
    scatter_main(&a);
    free(a.counts);
    if (j->prepping) { /* the GPU's preparation (job_distribute.c), done before the first call */
        pthread_join(j->prep_tid, NULL);
        j->prepping = 0;
    }
    if (a.status != ZAP_OK) {
        zap_buf_free(&blob_buf);
        return a.status;
    }
    j->t_in_place = a.t_done;
    j->t1 = zap_clock_now();
    if (j->var_scatter && j->count > 0)
        zap_verify_seg_rebase(a.records, j->plan.stride, j->count, lo, hi);
    zap_batch_view_t piece = j->shard;
    piece.records = a.records;
    piece.blob = a.blob;
    piece.blob_len = hi - lo;
    piece.n_items = j->count;
    j->local = j->count > 0 ? zap_verify_piece(&piece, &j->prm, j->count, j->res.bitmap + j->first / 32, NULL, &j->st)
                            : ZAP_OK;
    zap_buf_free(&blob_buf);
    if (j->count == 0)
        j->st.used = ZAP_VERIFIER_CPU;
    return ZAP_OK;
}
