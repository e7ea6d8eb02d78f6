/* The distributed verification job (docs/verify.md): plan, distribute,
 * verify, combine, agree. Every rank runs the same sequence of collectives
 * whatever happens locally, so a failure on one rank is reported on all of
 * them and none is left waiting:
 *
 *   1. plan      bcast of a fixed-size plan from the root: its parse status
 *                and the batch header (plus, for variable messages under
 *                scatter, each rank's blob slice);
 *   2. distribute the root streams each rank its records (and blob slice)
 *                in segments that double in size (job_stream.c), or
 *                broadcasts the whole batch; the root keeps its own shard in
 *                place, so its memory stays at the batch plus bookkeeping;
 *   3. verify    overlapped with 2: the root verifies its shard while a
 *                helper thread sends, a rank verifies segment k while k + 1
 *                arrives, each into its words of a full-length bitmap; the
 *                root then takes its neighbour's segments that the
 *                neighbour has not asked for yet (balance); an allgatherv of
 *                each rank's status and verified range follows, so a rank
 *                whose verifier (or stream) failed fails the job everywhere
 *                and every rank knows where the boundaries ended;
 *   4. combine   OR-allreduce of the bitmaps (each rank set only its own
 *                words) or allgatherv of each rank's words; then a
 *                SUM-allreduce of (checked, invalid, malformed) and the checks
 *                checked == n and popcount == n - invalid;
 *   5. agree     allgatherv of each rank's info (shard, verifier, time, peak
 *                memory, BLAKE2b-256 digest of its verdict set); any digest
 *                that differs fails the job with ZAP_ERR_MISMATCH on every
 *                rank, since every rank compares the same gathered table.
 *
 * Shards are contiguous record ranges whose boundaries are multiples of 32
 * items (zap_verify_shard), so bitmap words never straddle ranks and a
 * scatter is plain byte ranges.
 *
 * Variable-length messages under scatter: the root sends each rank the
 * smallest blob range covering its records' messages; the rank rebases the
 * offsets in its received copy of the records. A record whose message lay
 * outside the original blob also lies outside the slice, and is marked so
 * that it stays malformed: verdicts never depend on the rank count. The cost
 * is one pass over the records on the root and one over each shard. */
#include "verify/verify_impl.h"
#include "verify/job_stream.h"
#include "verify/job_ring.h"
#include "verify/job_watch.h"
#include "base/log.h"
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <time.h>

/* The first segment of a scatter stream: 128k records of 128 bytes, ~20 ms on
 * an H200, so a rank starts verifying soon after the root; 16 MiB measured
 * best on two H200s at 2^22 items (docs/performance.md: 4-8 MiB mean more,
 * smaller GPU calls, 32-64 MiB a later start). */
#define ZAP_VERIFY_SEGMENT_BYTES ((uint64_t)16 << 20)

/* A GPU rank's preparation readies its verifier for calls of up to this many
 * items (a segment of a 2^22-item job on two ranks stays below it). */
#define ZAP_VERIFY_PREPARE_ITEMS ((uint64_t)1 << 20)

int zap_verify_test_flip_rank = -1;
int zap_verify_test_slow_rank = -1;
double zap_verify_test_slow_seconds = 0;

/* The root's neighbour in scatter mode: the rank whose shard the root may
 * finish (docs/verify.md, "Balance"); -1 with one rank. */
static int partner_of(int root, int nranks)
{
    return root + 1 < nranks ? root + 1 : root - 1;
}

/* The test hook's delay before each verifier call of the slow rank. */
static void test_slow(int rank)
{
    if (rank == zap_verify_test_slow_rank && zap_verify_test_slow_seconds > 0) {
        double sec = zap_verify_test_slow_seconds;
        struct timespec ts = {(time_t)sec, (long)((sec - (double)(time_t)sec) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* Items [first, first + items) of the whole batch in all, verified in place
 * into bitmap as part of a shard of shard_items (the tests' slow rank waits
 * first). */
static zap_status_t verify_slice(int rank, const zap_batch_view_t *all, uint64_t first, uint64_t items,
                                 uint64_t shard_items, const zap_verify_params_t *prm, uint32_t *bitmap,
                                 zap_verify_stats_t *st)
{
    zap_batch_view_t view = *all;
    view.records = all->records + first * all->stride;
    view.n_items = items;
    test_slow(rank);
    return zap_verify_piece(&view, prm, shard_items, bitmap + first / 32, NULL, st);
}

/* The segment plan of rank r's shard (count items) as the root and r both
 * compute it: the root's neighbour's from its far end, others' in order. */
static size_t plan_segments(int r, int root, int nranks, uint64_t count, uint32_t stride, uint64_t blob_len,
                            uint64_t first_bytes, zap_vseg_t *out)
{
    if (r == partner_of(root, nranks))
        return zap_vseg_plan_far(count, stride, blob_len, first_bytes, r > root, out);
    return zap_vseg_plan(count, stride, blob_len, first_bytes, out);
}

typedef struct plan {
    int32_t status;          /* the root's parse status; ZAP_OK to go on */
    uint32_t scheme, flags, stride, fixed_msg_len;
    uint32_t mode, combine;
    uint32_t segment_bytes;  /* the first segment of a scatter stream (job_stream.c); UINT32_MAX: no limit */
    uint64_t n_items, batch_id, blob_len;
    uint64_t total_len;      /* bytes of the whole batch (bcast mode) */
} plan_t;

/* One rank's row of the agreement table; fixed size, bytes on the wire. */
typedef struct rank_row {
    uint64_t first, items;
    uint32_t used, pad;
    double verify_seconds;
    uint64_t peak_rss_kb;
    uint8_t digest[32];
    double in_place_seconds;
} rank_row_t;

/* A non-root rank's check of the plan it received: the status must be one
 * zap defines, and the fields must describe a batch the root's parser could
 * have accepted within total_len bytes (which also bounds every size the
 * rank computes from them). Returns the root's refusal, ZAP_OK, or
 * ZAP_ERR_CORRUPT for a damaged plan. */
static zap_status_t plan_check(const plan_t *p, int root)
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

static uint64_t seg_bytes(const plan_t *p)
{
    return p->segment_bytes == UINT32_MAX ? UINT64_MAX : p->segment_bytes;
}

static zap_status_t digest_of(const zap_verify_result_t *r, uint8_t out[32])
{
    crypto_generichash_state h;
    uint8_t le[8];
    static const char domain[] = "zap-verdicts-v1";
    if (crypto_generichash_init(&h, NULL, 0, 32) != 0)
        return ZAP_ERR_UNSUPPORTED;
    crypto_generichash_update(&h, (const uint8_t *)domain, sizeof(domain) - 1);
    zap_put64(le, r->n_items);
    crypto_generichash_update(&h, le, 8);
    zap_put64(le, r->batch_id);
    crypto_generichash_update(&h, le, 8);
    for (size_t w = 0; w < r->bitmap_words; w++) {
        uint8_t b[4];
        zap_put32(b, r->bitmap[w]);
        crypto_generichash_update(&h, b, 4);
    }
    crypto_generichash_final(&h, out, 32);
    return ZAP_OK;
}

static uint64_t popcount_words(const uint32_t *w, size_t n)
{
    uint64_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += (uint64_t)__builtin_popcount(w[i]);
    return c;
}

/* Blob slice [lo, hi) of the records of [first, first+count) whose messages
 * lie inside the blob; empty (0, 0) when none does. */
static void blob_slice(const zap_batch_view_t *v, uint64_t first, uint64_t count, uint64_t *lo_p, uint64_t *hi_p)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint64_t i = first; i < first + count; i++) {
        const uint8_t *rec = v->records + i * v->stride;
        uint64_t off = zap_le32(rec + ZAP_REC_MSG_OFF), len = zap_le32(rec + ZAP_REC_MSG_LEN);
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

/* A rank that will receive a scatter stream for its GPU readies it on a
 * helper thread as soon as the job starts, while the root still parses the
 * batch (and usually still reads it): the pinned staging ring (job_ring.c),
 * which costs ~20 ms to pin and would stall the GPU calls if pinned later,
 * and the verifier's device state. The stream joins it before it starts. */
static void *prepare_main(void *arg)
{
    int dev = *(int *)arg;
    zap_vring_release(zap_vring_acquire(dev)); /* kept for this device's stream */
    zap_verify_gpu_prepare(ZAP_VERIFY_PREPARE_ITEMS);
    return NULL;
}

/* While this rank verifies it makes no transport call of its own, so a peer
 * that dies then would be noticed only at the combine, a whole verification
 * later. A watch (job_watch.c) on the peers this rank talks to keeps the
 * transport progressed and cancels the verifier when one fails: the root
 * watches every rank it streams to, another rank the root (a rank that dies
 * elsewhere makes the root leave, and its failure notice names that rank).
 * The calling thread's verifier calls read the watch's flag. */
static zap_vwatch_t *watch_begin(zap_transport_t *t, int rank, int root, int nranks)
{
    int *peers = nranks > 1 ? malloc((size_t)nranks * sizeof(int)) : NULL;
    int n = 0;
    for (int r = 0; peers && r < nranks; r++)
        if (r != rank && (rank == root || r == root))
            peers[n++] = r;
    zap_vwatch_t *w = peers ? zap_vwatch_start(t, peers, n) : NULL;
    free(peers);
    zap_verify_set_cancel(zap_vwatch_flag(w));
    return w;
}

/* Ends the watch; the status of a peer failure it saw, or ZAP_OK. */
static zap_status_t watch_end(zap_vwatch_t *w, int rank)
{
    zap_verify_set_cancel(NULL);
    zap_status_t s = zap_vwatch_stop(w);
    if (s != ZAP_OK)
        zap_error("verify: job: rank %d stopped verifying: a peer failed (%s; the transport's log names the rank)",
                  rank, zap_status_string(s));
    return s;
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

void zap_verify_result_cleanup(zap_verify_result_t *result)
{
    if (!result)
        return;
    free(result->bitmap);
    free(result->ranks);
    memset(result, 0, sizeof(*result));
}

/* Every rank's local status, MIN-reduced: all go on or all stop with the
 * same status, so a failure on one rank cannot leave the others waiting. The
 * ranks that were fine say why they stop (the failing one said it already). */
static zap_status_t agree_to_go(zap_comm_t *comm, zap_status_t local, const char *other_did)
{
    int32_t go = local;
    zap_status_t s = zap_allreduce(comm, ZAP_IN_PLACE, &go, 1, ZAP_DT_INT32, ZAP_OP_MIN);
    if (s != ZAP_OK)
        return s;
    if (go != ZAP_OK && local == ZAP_OK)
        zap_error("verify: job: another rank %s: %s", other_did, zap_status_string((zap_status_t)go));
    return (zap_status_t)go;
}

zap_status_t zap_verify_job(zap_comm_t *comm, const void *batch, size_t len, const zap_verify_params_t *params,
                            zap_verify_result_t *result_p)
{
    if (!comm || !result_p) {
        zap_error("verify: job: NULL %s", comm ? "result" : "communicator");
        return ZAP_ERR_INVALID_PARAM;
    }
    zap_verify_params_t prm;
    memset(&prm, 0, sizeof(prm));
    if (params)
        prm = *params;
    const int rank = zap_comm_rank(comm), nranks = zap_comm_size(comm), root = prm.root;
    if (root < 0 || root >= nranks || prm.mode > ZAP_VERIFY_BCAST || prm.combine > ZAP_COMBINE_ALLGATHERV) {
        zap_error("verify: job: bad parameters (root %d of %d ranks, mode %d, combine %d)", root, nranks,
                  (int)prm.mode, (int)prm.combine);
        return ZAP_ERR_INVALID_PARAM;
    }
    zap_transport_t *t = zap_comm_transport(comm);
    zap_verify_result_t res;
    memset(&res, 0, sizeof(res));
    zap_status_t s;
    zap_buf_t shard_buf = {0};
    uint64_t *slices = NULL; /* 2 * nranks: blob [lo, hi) per rank, variable scatter only */
    size_t *counts = NULL, *displs = NULL;
    uint32_t *mine = NULL;
    rank_row_t *rows = NULL;
    uint64_t *ranges = NULL; /* 3 * nranks: status, first, count of what each rank verified */
    zap_vseg_t *segs = NULL;
    zap_vsend_rank_t *sranks = NULL;
    zap_vrecv_t *stream = NULL;
    zap_vwatch_t *watch = NULL;
    pthread_t prep_tid;
    int prep_dev = -1, prepping = 0;
    if (rank != root && prm.mode == ZAP_VERIFY_SCATTER && zap_verify_gpu_planned(&prm, UINT64_MAX) &&
        (prep_dev = zap_vstream_device(t, 1)) >= 0)
        prepping = zap_vstream_thread(&prep_tid, prepare_main, &prep_dev, prep_dev) == 0;

    /* 1. plan */
    double t0 = zap_clock_now();
    plan_t plan;
    memset(&plan, 0, sizeof(plan));
    zap_batch_view_t root_view;
    memset(&root_view, 0, sizeof(root_view));
    if (rank == root) {
        plan.status = zap_batch_parse(batch, len, 0, &root_view, NULL, NULL, 0);
        plan.scheme = root_view.scheme;
        plan.flags = root_view.flags;
        plan.stride = root_view.stride;
        plan.fixed_msg_len = root_view.fixed_msg_len;
        plan.mode = prm.mode;
        plan.combine = prm.combine;
        plan.n_items = root_view.n_items;
        plan.batch_id = root_view.batch_id;
        plan.blob_len = root_view.blob_len;
        plan.total_len = len;
        uint64_t seg = prm.segment_bytes ? prm.segment_bytes : ZAP_VERIFY_SEGMENT_BYTES;
        plan.segment_bytes = seg >= UINT32_MAX ? UINT32_MAX : (uint32_t)seg;
    }
    s = zap_bcast(comm, &plan, sizeof(plan), ZAP_DT_UINT8, root);
    if (s != ZAP_OK)
        goto out;
    /* Every rank checks the plan it received and allocates its bookkeeping;
     * a MIN-allreduce then makes them all go on or all stop with the same
     * status, so a damaged plan or a failed allocation on one rank cannot
     * leave the others waiting. */
    zap_status_t local = rank == root ? (zap_status_t)plan.status : plan_check(&plan, root);
    if (local == ZAP_OK) {
        res.n_items = plan.n_items;
        res.batch_id = plan.batch_id;
        res.nranks = nranks;
        res.bitmap_words = (size_t)((plan.n_items + 31) / 32);
        res.bitmap = calloc(res.bitmap_words ? res.bitmap_words : 1, sizeof(uint32_t));
        res.ranks = calloc((size_t)nranks, sizeof(*res.ranks));
        counts = calloc((size_t)nranks, sizeof(size_t));
        displs = calloc((size_t)nranks, sizeof(size_t));
        rows = calloc((size_t)nranks, sizeof(*rows));
        slices = calloc(2 * (size_t)nranks, sizeof(uint64_t));
        /* allgatherv send copy: a balanced rank may end with more than its shard */
        mine = calloc(res.bitmap_words + 1, sizeof(uint32_t));
        ranges = calloc(3 * (size_t)nranks, sizeof(uint64_t));
        /* Segment tables of a scatter stream, sized as if every rank had a
         * blob slice: the root's for all other ranks, a rank's for itself. */
        size_t nseg = 0;
        int var = !(plan.flags & ZAP_BATCH_FLAG_FIXED_MSG);
        for (int r = 0; r < nranks && plan.mode == ZAP_VERIFY_SCATTER; r++) {
            uint64_t rf, rc;
            zap_verify_shard(plan.n_items, nranks, r, &rf, &rc);
            if (rank == root ? r != root : r == rank)
                nseg += plan_segments(r, root, nranks, rc, plan.stride, var, seg_bytes(&plan), NULL);
        }
        segs = calloc(nseg ? nseg : 1, sizeof(*segs));
        sranks = calloc((size_t)nranks, sizeof(*sranks));
        if (!res.bitmap || !res.ranks || !counts || !displs || !rows || !slices || !mine || !ranges || !segs ||
            !sranks) {
            zap_error("verify: job: no memory for the verdict set of %llu items", (unsigned long long)plan.n_items);
            local = ZAP_ERR_NO_MEMORY;
        }
    }
    if ((s = agree_to_go(comm, local, "stopped the job after the plan")) != ZAP_OK)
        goto out;
    const int fixed = (plan.flags & ZAP_BATCH_FLAG_FIXED_MSG) != 0;
    const int var_scatter = !fixed && plan.mode == ZAP_VERIFY_SCATTER;
    uint64_t first, count;
    zap_verify_shard(plan.n_items, nranks, rank, &first, &count);
    const int partner = plan.mode == ZAP_VERIFY_SCATTER ? partner_of(root, nranks) : -1;
    uint64_t vfirst = first, vcount = count; /* what this rank verified: its shard, moved by balancing */

    /* 2 and 3. distribute and verify, overlapped */
    zap_batch_view_t shard;
    memset(&shard, 0, sizeof(shard));
    shard.version = ZAP_BATCH_VERSION;
    shard.scheme = (uint16_t)plan.scheme;
    shard.flags = plan.flags;
    shard.stride = plan.stride;
    shard.fixed_msg_len = plan.fixed_msg_len;
    shard.batch_id = plan.batch_id;
    shard.n_items = count;
    if (var_scatter) {
        if (rank == root)
            for (int r = 0; r < nranks; r++) {
                uint64_t f, c;
                zap_verify_shard(plan.n_items, nranks, r, &f, &c);
                blob_slice(&root_view, f, c, &slices[2 * r], &slices[2 * r + 1]);
            }
        s = zap_bcast(comm, slices, 2 * (size_t)nranks, ZAP_DT_UINT64, root);
        if (s != ZAP_OK)
            goto out;
    }
    const int gpu_planned = rank != root && zap_verify_gpu_planned(&prm, count);
    const int dev = zap_vstream_device(t, gpu_planned);
    zap_verify_stats_t st;
    memset(&st, 0, sizeof(st));
    double t1 = 0, t_in_place = 0;
    watch = watch_begin(t, rank, root, nranks);
    if (plan.mode == ZAP_VERIFY_BCAST) {
        /* Receive buffers come from the transport's pool (sends from it need
         * no copy); a rank that cannot get one says so before the transfer. */
        if (rank != root && plan.total_len > 0)
            local = zap_transport_alloc(t, (size_t)plan.total_len, &shard_buf);
        if ((s = agree_to_go(comm, local, "could not allocate its receive buffer")) != ZAP_OK)
            goto out;
        if (rank == root) {
            /* The root has the batch: it verifies its shard while a helper
             * thread drives the broadcast (the communicator stays with one
             * thread at a time: the job's thread does not touch it meanwhile). */
            bcast_arg_t ba = {comm, (void *)batch, plan.total_len, root, ZAP_OK, 0};
            pthread_t tid;
            int threaded = zap_vstream_thread(&tid, bcast_main, &ba, dev) == 0;
            if (!threaded)
                bcast_main(&ba);
            t1 = zap_clock_now();
            local = verify_slice(rank, &root_view, first, count, count, &prm, res.bitmap, &st);
            if (threaded)
                pthread_join(tid, NULL);
            s = ba.status;
            t_in_place = ba.t_done;
            if (s != ZAP_OK)
                goto out;
        } else {
            s = zap_bcast(comm, shard_buf.ptr, plan.total_len, ZAP_DT_UINT8, root);
            if (s != ZAP_OK)
                goto out;
            t_in_place = zap_clock_now();
            zap_batch_view_t all;
            local = zap_batch_parse(shard_buf.ptr, plan.total_len, 0, &all, NULL, NULL, 0);
            if (local == ZAP_OK && (all.n_items != plan.n_items || all.batch_id != plan.batch_id))
                local = ZAP_ERR_CORRUPT;
            t1 = zap_clock_now();
            if (local == ZAP_OK)
                local = verify_slice(rank, &all, first, count, count, &prm, res.bitmap, &st);
        }
    } else if (rank == root) {
        /* Scatter, root: a sender thread streams every other rank its
         * segments while this thread verifies the root's shard in place. */
        zap_vsend_t *sender = NULL;
        int nsr = 0, ipartner = -1;
        size_t used = 0;
        for (int r = 0; r < nranks; r++) {
            uint64_t f, c;
            zap_verify_shard(plan.n_items, nranks, r, &f, &c);
            if (r == root)
                continue;
            uint64_t lo = var_scatter ? slices[2 * r] : 0, hi = var_scatter ? slices[2 * r + 1] : 0;
            size_t n = plan_segments(r, root, nranks, c, plan.stride, hi - lo, seg_bytes(&plan), segs + used);
            if (r == partner)
                ipartner = nsr;
            sranks[nsr++] = (zap_vsend_rank_t){r, root_view.records + f * plan.stride,
                                               hi > lo ? root_view.blob + lo : NULL, segs + used, n, r == partner,
                                               plan.stride};
            used += n;
        }
        if (used > 0) {
            s = zap_vsend_start(t, sranks, nsr, dev, &sender);
            if (s != ZAP_OK)
                goto out;
        }
        t1 = zap_clock_now();
        local = verify_slice(rank, &root_view, first, count, count, &prm, res.bitmap, &st);
        /* Balance: then the neighbour's segments it has not asked for yet,
         * from the end next to the root's shard, verified in place. */
        long k;
        uint64_t pf = 0, pc = 0, taken = 0;
        if (partner >= 0)
            zap_verify_shard(plan.n_items, nranks, partner, &pf, &pc);
        while (sender && local == ZAP_OK && (k = zap_vsend_take(sender, ipartner)) >= 0) {
            const zap_vseg_t *g = &sranks[ipartner].segs[k];
            zap_verify_stats_t ps;
            memset(&ps, 0, sizeof(ps));
            local = verify_slice(rank, &root_view, pf + g->item_off, g->items, count, &prm, res.bitmap, &ps);
            st.checked += ps.checked;
            st.invalid += ps.invalid;
            st.malformed += ps.malformed;
            st.seconds += ps.seconds;
            taken += g->items;
        }
        if (taken)
            vfirst = partner > root ? first : first - taken, vcount = count + taken;
        t_in_place = t1;
        if (sender) {
            int mismatches = 0;
            if (zap_verify_canceled())
                zap_vsend_abort(sender); /* a rank failed: the job is over, stream no more */
            s = zap_vsend_finish(sender, &t_in_place, &mismatches);
            if (s != ZAP_OK)
                goto out;
            if (mismatches && local == ZAP_OK)
                local = ZAP_ERR_CORRUPT; /* a rank read "taken" where the plans differ */
        }
    } else {
        /* Scatter, another rank: verify each segment as it arrives. */
        uint64_t slice_lo = var_scatter ? slices[2 * rank] : 0;
        uint64_t slice_len = var_scatter ? slices[2 * rank + 1] - slice_lo : 0;
        size_t nseg = plan_segments(rank, root, nranks, count, plan.stride, slice_len, seg_bytes(&plan), segs);
        uint64_t got = 0; /* record items verified; a shared stream's come from the far end */
        if (prepping) {
            pthread_join(prep_tid, NULL);
            prepping = 0;
        }
        if (nseg > 0) {
            zap_vrecv_opts_t ro = {gpu_planned && dev >= 0, rank == partner, var_scatter, plan.stride, slice_lo,
                                   slice_lo + slice_len};
            local = zap_vrecv_start(t, root, segs, nseg, dev, &ro, &stream);
            if (local != ZAP_OK) {
                /* The failure reaches the others in the allgatherv below. */
                zap_vrecv_refuse(t, root, segs, nseg, local);
                stream = NULL;
                nseg = 0;
            }
        }
        const uint8_t *blob_host = NULL, *blob_dev = NULL;
        shard.blob_len = slice_len;
        for (size_t k = 0; k < nseg && local == ZAP_OK; k++) {
            uint8_t *host = NULL;
            const uint8_t *devp = NULL;
            local = zap_vrecv_get(stream, k, &host, &devp);
            if (local != ZAP_OK || (!host && !devp))
                break; /* an error, or the root took k and the rest */
            if (segs[k].blob) {
                blob_host = host;
                blob_dev = devp;
                continue;
            }
            if (t1 == 0)
                t1 = zap_clock_now();
            zap_batch_view_t piece = shard;
            piece.n_items = segs[k].items;
            uint32_t *words = res.bitmap + (first + segs[k].item_off) / 32;
            zap_verify_stats_t ps;
            memset(&ps, 0, sizeof(ps));
            test_slow(rank);
            if (devp) {
                /* The device copy, on the GPU only: the CPU cannot read it. */
                zap_verify_params_t gp = prm;
                gp.verifier = ZAP_VERIFIER_GPU;
                piece.records = devp;
                piece.blob = blob_dev ? blob_dev : blob_host;
                local = zap_verify_piece(&piece, &gp, count, words, NULL, &ps);
                if (local != ZAP_OK && host)
                    zap_warn("verify: job: the gpu failed on the device copy of segment %zu (%s); verifying its "
                             "host bytes as the verifier setting says",
                             k, zap_status_string(local));
                else if (local != ZAP_OK)
                    zap_error("verify: job: the gpu failed on segment %zu (%s), which came through the staging "
                              "ring and exists only on the device",
                              k, zap_status_string(local));
            }
            if (!devp || (local != ZAP_OK && host)) { /* (through the ring there are no host bytes) */
                piece.records = host;
                piece.blob = blob_host;
                local = zap_verify_piece(&piece, &prm, count, words, NULL, &ps);
            }
            st.checked += ps.checked;
            st.invalid += ps.invalid;
            st.malformed += ps.malformed;
            st.used = ps.used;
            st.threads = ps.threads;
            st.seconds += ps.seconds;
            got += segs[k].items;
        }
        if (rank == partner) {
            vfirst = rank > root ? first + count - got : first;
            vcount = got;
        }
        t_in_place = zap_clock_now();
        if (stream) {
            zap_status_t rs = zap_vrecv_finish(stream, &t_in_place);
            if (local == ZAP_OK)
                local = rs;
        }
        if (vcount == 0)
            st.used = ZAP_VERIFIER_CPU; /* nothing verified (an empty shard, or the root took it all) */
    }
    if (t1 == 0)
        t1 = zap_clock_now();
    s = watch_end(watch, rank);
    watch = NULL;
    if (s != ZAP_OK)
        goto out; /* the peer's failure, now: the allgatherv below would only find it again */
    res.distribute_seconds = t1 - t0;
    /* Every rank's status and the range it verified, in one collective: the
     * worst status fails the job everywhere, and the ranges (moved by
     * balancing) must tile [0, n) in word-aligned pieces, as the combine
     * assumes. */
    uint64_t row3[3] = {(uint64_t)(int64_t)local, vfirst, vcount};
    for (int r = 0; r < nranks; r++) {
        counts[r] = 3;
        displs[r] = 3 * (size_t)r;
    }
    s = zap_allgatherv(comm, row3, 3, ranges, counts, displs, ZAP_DT_UINT64);
    if (s != ZAP_OK)
        goto out;
    int64_t worst = ZAP_OK;
    uint64_t end = 0;
    int tiled = 1;
    for (int r = 0; r < nranks; r++) {
        int64_t rs = (int64_t)ranges[3 * r];
        if (rs < worst)
            worst = rs;
        if (ranges[3 * r + 1] != end || (ranges[3 * r + 2] && end % 32) || ranges[3 * r + 2] > plan.n_items - end)
            tiled = 0;
        else
            end += ranges[3 * r + 2];
    }
    if (worst == ZAP_OK && (!tiled || end != plan.n_items)) {
        zap_error("verify: job: the ranges the ranks verified do not tile the %llu items",
                  (unsigned long long)plan.n_items);
        for (int r = 0; r < nranks; r++)
            zap_error("verify: job:   rank %d: [%llu, +%llu)", r, (unsigned long long)ranges[3 * r + 1],
                      (unsigned long long)ranges[3 * r + 2]);
        worst = ZAP_ERR_CORRUPT;
    }
    if (worst != ZAP_OK) {
        s = (zap_status_t)worst;
        if (local == ZAP_OK)
            zap_error("verify: job: another rank failed to verify its shard: %s", zap_status_string(s));
        goto out;
    }
    double t2 = zap_clock_now();
    res.verify_seconds = t2 - t1;

    /* 4. combine */
    if (res.bitmap_words > 0) {
        if (plan.combine == ZAP_COMBINE_OR_ALLREDUCE) {
            s = zap_allreduce(comm, ZAP_IN_PLACE, res.bitmap, res.bitmap_words, ZAP_DT_UINT32, ZAP_OP_BOR);
        } else {
            size_t my_words = (size_t)((vcount + 31) / 32);
            memcpy(mine, res.bitmap + vfirst / 32, my_words * sizeof(uint32_t));
            for (int r = 0; r < nranks; r++) {
                counts[r] = (size_t)((ranges[3 * r + 2] + 31) / 32);
                displs[r] = (size_t)(ranges[3 * r + 1] / 32);
            }
            s = zap_allgatherv(comm, mine, my_words, res.bitmap, counts, displs, ZAP_DT_UINT32);
        }
        if (s != ZAP_OK)
            goto out;
    }
    uint64_t sums[3] = {st.checked, st.invalid, st.malformed};
    s = zap_allreduce(comm, ZAP_IN_PLACE, sums, 3, ZAP_DT_UINT64, ZAP_OP_SUM);
    if (s != ZAP_OK)
        goto out;
    res.invalid = sums[1];
    res.malformed = sums[2];
    res.valid = popcount_words(res.bitmap, res.bitmap_words);
    double t3 = zap_clock_now();
    res.combine_seconds = t3 - t2;

    /* 5. agree */
    if (rank == zap_verify_test_flip_rank && res.bitmap_words > 0)
        res.bitmap[0] ^= 1u;
    digest_of(&res, res.digest);
    rank_row_t me;
    memset(&me, 0, sizeof(me));
    me.first = vfirst;
    me.items = vcount;
    me.used = (uint32_t)st.used;
    me.verify_seconds = st.seconds;
    me.peak_rss_kb = zap_verify_peak_rss_kb();
    me.in_place_seconds = t_in_place - t0;
    memcpy(me.digest, res.digest, 32);
    for (int r = 0; r < nranks; r++) {
        counts[r] = sizeof(rank_row_t);
        displs[r] = (size_t)r * sizeof(rank_row_t);
    }
    s = zap_allgatherv(comm, &me, sizeof(me), rows, counts, displs, ZAP_DT_UINT8);
    if (s != ZAP_OK)
        goto out;
    int disagree = 0;
    for (int r = 0; r < nranks; r++) {
        res.ranks[r].first = rows[r].first;
        res.ranks[r].items = rows[r].items;
        res.ranks[r].used = (zap_verifier_t)rows[r].used;
        res.ranks[r].verify_seconds = rows[r].verify_seconds;
        res.ranks[r].peak_rss_kb = rows[r].peak_rss_kb;
        res.ranks[r].in_place_seconds = rows[r].in_place_seconds;
        memcpy(res.ranks[r].digest, rows[r].digest, 32);
        if (memcmp(rows[r].digest, rows[0].digest, 32) != 0)
            disagree++;
    }
    res.agree_seconds = zap_clock_now() - t3;
    if (disagree) {
        char hex[2][17];
        for (int r = 0; r < nranks; r++) {
            if (memcmp(rows[r].digest, rows[0].digest, 32) == 0)
                continue;
            for (int k = 0; k < 8; k++) {
                snprintf(hex[0] + 2 * k, 3, "%02x", rows[0].digest[k]);
                snprintf(hex[1] + 2 * k, 3, "%02x", rows[r].digest[k]);
            }
            zap_error("verify: job: VERDICT MISMATCH: rank %d digest %s... differs from rank 0's %s...", r,
                      hex[1], hex[0]);
        }
        s = ZAP_ERR_MISMATCH;
    } else if (sums[0] != plan.n_items || res.valid != plan.n_items - (sums[1] <= plan.n_items ? sums[1] : 0) ||
               sums[1] > plan.n_items) {
        zap_error("verify: job: VERDICT MISMATCH: %llu of %llu items checked, %llu invalid, but %llu bits set "
                  "(expected %llu)",
                  (unsigned long long)sums[0], (unsigned long long)plan.n_items, (unsigned long long)sums[1],
                  (unsigned long long)res.valid, (unsigned long long)(plan.n_items - sums[1]));
        s = ZAP_ERR_MISMATCH;
    } else {
        s = ZAP_OK;
    }
    *result_p = res;
    memset(&res, 0, sizeof(res)); /* ownership moved to the caller */

out:
    if (watch) {
        zap_status_t ws = watch_end(watch, rank);
        if (ws != ZAP_OK)
            s = ws; /* not the CANCELED of the sender or verifier it stopped */
    }
    if (prepping)
        pthread_join(prep_tid, NULL);
    free(mine);
    free(ranges);
    free(rows);
    free(counts);
    free(displs);
    free(slices);
    zap_buf_free(&shard_buf);
    zap_vrecv_free(stream);
    free(segs);
    free(sranks);
    zap_verify_result_cleanup(&res);
    return s;
}
