/* Phase 1 of the job, the plan (docs/verify.md): the root parses the batch
 * (CRC included) and broadcasts a fixed-size plan; every rank checks what it
 * received, allocates its bookkeeping, and a MIN-allreduce makes all ranks
 * go on or all stop with one status. Then the shard geometry every phase
 * uses and, for variable messages under scatter, each rank's blob slice.
 *
 * Variable-length messages under scatter: the root sends each rank the
 * smallest blob range covering its records' messages; the rank rebases the
 * offsets in its received copy of the records. A record whose message lay
 * outside the original blob also lies outside the slice, and is marked so
 * that it stays malformed: verdicts never depend on the rank count. The cost
 * is one pass over the records on the root and one over each shard. */
#include "verify/job_state.h"
#include "verify/verify_impl.h"
#include "base/log.h"
#include <stdlib.h>
#include <string.h>

/* The first segment of a scatter stream: 128k records of 128 bytes, about
 * 20 ms of GPU verification, so a rank starts verifying soon after the root
 * (docs/verify.md and docs/performance.md give the measurements). */
#define ZAP_VERIFY_SEGMENT_BYTES ((uint64_t)16 << 20)

static uint64_t seg_bytes(const zap_verify_plan_t *p)
{
    return p->segment_bytes == UINT32_MAX ? UINT64_MAX : p->segment_bytes;
}

size_t zap_verify_job_segments(const zap_verify_job_state_t *j, int r, uint64_t count, uint64_t blob_len,
                               zap_verify_seg_t *out)
{
    const zap_verify_plan_t *p = &j->plan;
    const int partner = j->root + 1 < j->nranks ? j->root + 1 : j->root - 1;
    if (r == partner)
        return zap_verify_seg_plan_far(count, p->stride, blob_len, seg_bytes(p), r > j->root, out);
    return zap_verify_seg_plan(count, p->stride, blob_len, seg_bytes(p), out);
}

/* The root: parses the batch into its view and the plan. */
static void plan_fill(zap_verify_job_state_t *j)
{
    zap_verify_plan_t *p = &j->plan;
    const zap_batch_view_t *v = &j->root_view;
    p->status = zap_batch_parse(j->batch, j->len, 0, &j->root_view, NULL, NULL, 0);
    p->scheme = v->scheme;
    p->flags = v->flags;
    p->stride = v->stride;
    p->fixed_msg_len = v->fixed_msg_len;
    p->mode = j->prm.mode;
    p->combine = j->prm.combine;
    p->n_items = v->n_items;
    p->batch_id = v->batch_id;
    p->blob_len = v->blob_len;
    p->total_len = j->len;
    uint64_t seg = j->prm.segment_bytes ? j->prm.segment_bytes : ZAP_VERIFY_SEGMENT_BYTES;
    p->segment_bytes = seg >= UINT32_MAX ? UINT32_MAX : (uint32_t)seg;
}

/* A non-root rank's check of the plan it received: the status must be one
 * zap defines, and the fields must describe a batch the root's parser could
 * have accepted within total_len bytes (which also bounds every size the
 * rank computes from them). Returns the root's refusal, ZAP_OK, or
 * ZAP_ERR_CORRUPT for a damaged plan. */
static zap_status_t plan_check(const zap_verify_plan_t *p, int root)
{
    if (p->status != ZAP_OK) {
        if (p->status < ZAP_ERR_CANCELED || p->status > ZAP_ERR_INVALID_PARAM) {
            zap_error("verify: job: the plan from rank %d carries status %d, which is not a zap status", root,
                      (int)p->status);
            return ZAP_ERR_CORRUPT;
        }
        zap_error("verify: job: the root (rank %d) refused the batch: %s", root,
                  zap_status_string((zap_status_t)p->status));
        return (zap_status_t)p->status;
    }
    int fixed = (p->flags & ZAP_BATCH_FLAG_FIXED_MSG) != 0;
    uint32_t min = fixed ? ZAP_BATCH_RECORD_SIZE : ZAP_VAR_RECORD_MIN;
    if (p->scheme != ZAP_SCHEME_ED25519_LIBSODIUM_1_0_18 || (p->flags & ~ZAP_BATCH_FLAG_FIXED_MSG) ||
        p->stride < min || p->stride > ZAP_BATCH_MAX_STRIDE || p->stride % 16 || p->mode > ZAP_VERIFY_BCAST ||
        p->combine > ZAP_COMBINE_ALLGATHERV || p->total_len < ZAP_BATCH_HEADER_SIZE || p->segment_bytes == 0 ||
        p->n_items > (p->total_len - ZAP_BATCH_HEADER_SIZE) / p->stride || p->blob_len > p->total_len ||
        (fixed && p->blob_len) || p->total_len > SIZE_MAX) {
        zap_error("verify: job: the plan from rank %d is damaged (scheme %u, flags 0x%x, stride %u, n_items %llu, "
                  "blob_len %llu, total_len %llu, mode %u, combine %u)",
                  root, p->scheme, p->flags, p->stride, (unsigned long long)p->n_items,
                  (unsigned long long)p->blob_len, (unsigned long long)p->total_len, p->mode, p->combine);
        return ZAP_ERR_CORRUPT;
    }
    return ZAP_OK;
}

/* The bookkeeping of a checked plan: the result's bitmap and table, the
 * collectives' arguments and the segment tables of a scatter stream (sized
 * as if every rank had a blob slice: the root's for all other ranks, a
 * rank's for itself). ZAP_OK or ZAP_ERR_NO_MEMORY. */
static zap_status_t plan_alloc(zap_verify_job_state_t *j)
{
    const zap_verify_plan_t *p = &j->plan;
    const size_t R = (size_t)j->nranks;
    zap_verify_result_t *res = &j->res;
    res->n_items = p->n_items;
    res->batch_id = p->batch_id;
    res->nranks = j->nranks;
    res->bitmap_words = (size_t)((p->n_items + 31) / 32);
    res->bitmap = calloc(res->bitmap_words ? res->bitmap_words : 1, sizeof(uint32_t));
    res->ranks = calloc(R, sizeof(*res->ranks));
    j->counts = calloc(R, sizeof(size_t));
    j->displs = calloc(R, sizeof(ptrdiff_t));
    j->rows = calloc(R, sizeof(*j->rows));
    j->slices = calloc(2 * R, sizeof(uint64_t));
    /* allgatherv send copy: a balanced rank may end with more than its shard */
    j->mine = calloc(res->bitmap_words + 1, sizeof(uint32_t));
    j->ranges = calloc(3 * R, sizeof(uint64_t));
    size_t nseg = 0;
    int var = !(p->flags & ZAP_BATCH_FLAG_FIXED_MSG);
    for (int r = 0; r < j->nranks && p->mode == ZAP_VERIFY_SCATTER; r++) {
        uint64_t rf, rc;
        zap_verify_shard(p->n_items, j->nranks, r, &rf, &rc);
        if (j->rank == j->root ? r != j->root : r == j->rank)
            nseg += zap_verify_job_segments(j, r, rc, var, NULL);
    }
    j->segs = calloc(nseg ? nseg : 1, sizeof(*j->segs));
    j->sranks = calloc(R, sizeof(*j->sranks));
    if (!res->bitmap || !res->ranks || !j->counts || !j->displs || !j->rows || !j->slices || !j->mine ||
        !j->ranges || !j->segs || !j->sranks) {
        zap_error("verify: job: no memory for the verdict set of %llu items", (unsigned long long)p->n_items);
        return ZAP_ERR_NO_MEMORY;
    }
    return ZAP_OK;
}

/* This rank's shard and the view of a received one (records and blob are
 * set where they arrive). */
static void plan_shard(zap_verify_job_state_t *j)
{
    const zap_verify_plan_t *p = &j->plan;
    j->fixed = (p->flags & ZAP_BATCH_FLAG_FIXED_MSG) != 0;
    j->var_scatter = !j->fixed && p->mode == ZAP_VERIFY_SCATTER;
    zap_verify_shard(p->n_items, j->nranks, j->rank, &j->first, &j->count);
    if (p->mode == ZAP_VERIFY_SCATTER)
        j->partner = j->root + 1 < j->nranks ? j->root + 1 : j->root - 1;
    j->vfirst = j->first;
    j->vcount = j->count;
    zap_batch_view_t *v = &j->shard;
    memset(v, 0, sizeof(*v));
    v->version = ZAP_BATCH_VERSION;
    v->scheme = (uint16_t)p->scheme;
    v->flags = p->flags;
    v->stride = p->stride;
    v->fixed_msg_len = p->fixed_msg_len;
    v->batch_id = p->batch_id;
    v->n_items = j->count;
}

/* Blob slice [lo, hi) of the records of [first, first+count) whose messages
 * lie inside the blob; empty (0, 0) when none does. */
static void blob_slice(const zap_batch_view_t *v, uint64_t first, uint64_t count, uint64_t *lo_p, uint64_t *hi_p)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint64_t i = first; i < first + count; i++) {
        const uint8_t *rec = v->records + i * v->stride;
        uint64_t off = zap_get_le32(rec + ZAP_REC_MSG_OFF), len = zap_get_le32(rec + ZAP_REC_MSG_LEN);
        if (off > v->blob_len || len > v->blob_len - off)
            continue;
        if (off < lo)
            lo = off;
        if (off + len > hi)
            hi = off + len;
    }
    if (lo == UINT64_MAX)
        lo = hi = 0;
    *lo_p = lo;
    *hi_p = hi;
}

/* Variable messages under scatter: the root computes every rank's blob
 * slice and broadcasts the table. */
static zap_status_t plan_slices(zap_verify_job_state_t *j)
{
    if (j->rank == j->root)
        for (int r = 0; r < j->nranks; r++) {
            uint64_t f, c;
            zap_verify_shard(j->plan.n_items, j->nranks, r, &f, &c);
            blob_slice(&j->root_view, f, c, &j->slices[2 * r], &j->slices[2 * r + 1]);
        }
    return zap_bcast(j->comm, j->slices, 2 * (size_t)j->nranks, ZAP_DT_UINT64, j->root);
}

zap_status_t zap_verify_job_plan(zap_verify_job_state_t *j)
{
    if (j->rank == j->root)
        plan_fill(j);
    zap_status_t s = zap_bcast(j->comm, &j->plan, sizeof(j->plan), ZAP_DT_UINT8, j->root);
    if (s != ZAP_OK)
        return s;
    /* A damaged plan or a failed allocation on one rank cannot leave the
     * others waiting: all go on or all stop. */
    zap_status_t local = j->rank == j->root ? (zap_status_t)j->plan.status : plan_check(&j->plan, j->root);
    if (local == ZAP_OK)
        local = plan_alloc(j);
    if ((s = zap_verify_job_go(j, local, "stopped the job after the plan")) != ZAP_OK)
        return s;
    plan_shard(j);
    return j->var_scatter ? plan_slices(j) : ZAP_OK;
}
