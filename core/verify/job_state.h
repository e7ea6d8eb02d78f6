/* The state of one verification job on one rank and its phases (job.c
 * drives them in order; docs/verify.md describes each):
 *
 *   job_plan.c        1. plan: the root's parse status and header, checked
 *                        by every rank; bookkeeping; blob slices
 *   job_distribute.c  2. distribute, overlapped with verify: bcast of the
 *                        whole batch, or the root's segment stream
 *   job_verify.c      3. verify: shard, segments, the root's balance; then
 *                        every rank's status and verified range
 *   job_combine.c     4. combine: the bitmaps and the counts
 *   job_agree.c       5. agree: digests, the table of ranks, the checks
 *
 * Each phase returns ZAP_OK to go on, or the status the job ends with (the
 * same on every rank: a local failure is shared through a collective before
 * the next bulk step). Internal to the verify layer. */
#ifndef ZAP_VERIFY_JOB_STATE_H
#define ZAP_VERIFY_JOB_STATE_H
#include <pthread.h>
#include <stdint.h>
#include "zap/coll.h"
#include "zap/verify.h"
#include "verify/job.h"
#include "verify/stream.h"
#include "verify/watch.h"

/* The root's plan: bytes on the wire (bcast), the same layout everywhere. */
typedef struct zap_verify_plan {
    int32_t status;          /* the root's parse status; ZAP_OK to go on */
    uint32_t scheme, flags, stride, fixed_msg_len;
    uint32_t mode, combine;
    uint32_t segment_bytes;  /* the first segment of a scatter stream; UINT32_MAX: no limit */
    uint64_t n_items, batch_id, blob_len;
    uint64_t total_len;      /* bytes of the whole batch (bcast mode) */
} zap_verify_plan_t;

/* One rank's row of the agreement table; fixed size, bytes on the wire. */
typedef struct zap_verify_row {
    uint64_t first, items;
    uint32_t used, pad;
    double verify_seconds;
    uint64_t peak_rss_kb;
    uint8_t digest[32];
    double in_place_seconds;
} zap_verify_row_t;

typedef struct zap_verify_job_state {
    /* the call */
    zap_comm_t *comm;
    zap_transport_t *t;
    const uint8_t *batch;            /* the root's; borrowed */
    size_t len;
    zap_verify_params_t prm;
    zap_verify_hooks_t hooks;
    int rank, nranks, root;
    int across_hosts;                /* the communicator's collectives go through the hosts' hierarchy */
    double timeout_s;                /* the communicator's (INFINITY: none): the segment stream's bound */

    /* 1. plan */
    zap_verify_plan_t plan;
    zap_batch_view_t root_view;      /* the root's parse of the batch */
    int fixed, var_scatter;
    int partner;                     /* the root's neighbour in scatter mode, else -1 */
    uint64_t first, count;           /* this rank's shard */
    zap_batch_view_t shard;          /* the view of a received shard, records and blob unset */
    uint64_t *slices;                /* 2 * nranks: blob [lo, hi) per rank, variable scatter only */
    size_t *counts;                  /* nranks each: the allgathervs' arguments */
    ptrdiff_t *displs;
    uint32_t *mine;                  /* this rank's bitmap words (allgatherv combine) */
    zap_verify_row_t *rows;          /* nranks */
    uint64_t *ranges;                /* 3 * nranks: status, first, count of what each verified */
    zap_verify_seg_t *segs;          /* segment tables: the root's for all ranks, a rank's own */
    zap_verify_stream_rank_t *sranks; /* the root's streams, nranks */

    /* 2 and 3. distribute and verify */
    pthread_t prep_tid;              /* a GPU rank's preparation (job_distribute.c) */
    int prep_dev, prepping;
    int gpu_planned, dev;            /* this rank verifies on the GPU; the stream threads' device */
    zap_verify_watch_t *watch;
    zap_buf_t shard_buf;             /* bcast mode: the whole batch on a non-root rank */
    zap_verify_stream_recv_t *stream;
    zap_status_t local;              /* this rank's own outcome so far */
    zap_verify_stats_t st;
    uint64_t vfirst, vcount;         /* what this rank verified: its shard, moved by balancing */

    /* clocks: start, verifying, all verified, combined; when in place */
    double t0, t1, t2, t3, t_in_place;
    uint64_t sums[3];                /* checked, invalid, malformed over all ranks (combine) */
    zap_verify_result_t res;         /* handed to the caller by agree */
} zap_verify_job_state_t;

/* Every rank's local status, MIN-reduced: all go on or all stop with the
 * same status (job.c). other_did: what another rank did, for the log. */
zap_status_t zap_verify_job_go(zap_verify_job_state_t *j, zap_status_t local, const char *other_did);

/* The segment plan of rank r's shard (count items) as the root and r both
 * compute it (job_plan.c); out may be NULL to count. */
size_t zap_verify_job_segments(const zap_verify_job_state_t *j, int r, uint64_t count, uint64_t blob_len,
                               zap_verify_seg_t *out);

/* Before the plan, a rank that will receive a scatter stream for its GPU
 * starts readying it on a helper thread (job_distribute.c; joined before its
 * stream starts, or at the end). */
void zap_verify_job_prepare(zap_verify_job_state_t *j);

/* The phases, in order. verified ends phase 3 (every rank's status and
 * range); agree hands the result to *result_p on ZAP_OK and on
 * ZAP_ERR_MISMATCH. */
zap_status_t zap_verify_job_plan(zap_verify_job_state_t *j);
zap_status_t zap_verify_job_distribute(zap_verify_job_state_t *j);
/* Scatter mode across hosts (job_distribute_hier.c). */
zap_status_t zap_verify_job_distribute_hier(zap_verify_job_state_t *j);
zap_status_t zap_verify_job_verified(zap_verify_job_state_t *j);
zap_status_t zap_verify_job_combine(zap_verify_job_state_t *j);
zap_status_t zap_verify_job_agree(zap_verify_job_state_t *j, zap_verify_result_t *result_p);

/* The verification steps of the distribute phase (job_verify.c). Items [first, first + items) of the batch in all, verified in place into
 * the result's bitmap as part of this rank's shard (the slow hook waits
 * first). */
zap_status_t zap_verify_job_slice(zap_verify_job_state_t *j, const zap_batch_view_t *all, uint64_t first,
                                  uint64_t items, zap_verify_stats_t *st);
/* Received segment k (host bytes and/or device copy), verified into the
 * bitmap; its counts added to the rank's. */
zap_status_t zap_verify_job_segment(zap_verify_job_state_t *j, size_t k, uint8_t *host, const uint8_t *devp,
                                    const uint8_t *blob_host, const uint8_t *blob_dev);
/* The root, done with its shard: its neighbour's segments (index ipartner
 * of the sender's ranks) that the neighbour has not asked for yet, from the
 * end next to the root's shard, verified in place; the root's range grows. */
zap_status_t zap_verify_job_balance(zap_verify_job_state_t *j, zap_verify_stream_send_t *sender, int ipartner);
/* The peer watch around verification (docs/verify.md, "A peer that dies
 * during verification"); end returns the failure it saw, or ZAP_OK. */
void zap_verify_job_watch_begin(zap_verify_job_state_t *j);
zap_status_t zap_verify_job_watch_end(zap_verify_job_state_t *j);
#endif
