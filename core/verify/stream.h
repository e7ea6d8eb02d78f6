/* The segment stream of a scatter (docs/verify.md, "The segment stream"):
 * the one header of both ends. The root's sender (stream_send.c) and a
 * rank's receiver (stream_recv.c) compute the same segment plan
 * (stream_seg.c), cut segments into the same chunks and speak the token
 * format defined here. Internal to the verify layer.
 *
 * Wire: a rank asks for segment k with a token on ZAP_VERIFY_STREAM_TAG_TOKEN
 * (24 bytes, little endian: status i32, k u32, its segment count u32, 4 zero
 * bytes, the length it expects u64); the root answers on
 * ZAP_VERIFY_STREAM_TAG_SEGMENT with the segment's chunks, or with one empty
 * message ("taken", or the plans differ). Both tags sit below the
 * collectives' bit 43 and far from small user tags. */
#ifndef ZAP_VERIFY_STREAM_H
#define ZAP_VERIFY_STREAM_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "zap/transport.h"
#include "base/le.h"

#define ZAP_VERIFY_STREAM_TAG_TOKEN 0x5A5600000001ull
#define ZAP_VERIFY_STREAM_TAG_SEGMENT 0x5A5600000002ull
#define ZAP_VERIFY_STREAM_TOKEN_BYTES 24

/* ---- segments (stream_seg.c) ---------------------------------------------- */

/* One segment of a rank's part: len bytes from src_off of the root's records
 * of that rank (or of its blob slice, blob = 1), holding items records from
 * item_off of the shard. */
typedef struct zap_verify_seg {
    uint64_t src_off, len;
    uint64_t item_off, items;
    int blob;
} zap_verify_seg_t;

/* The segments of a shard of count records of stride bytes and a blob slice
 * of blob_len bytes: the slice first (whole), then records in segments of
 * first_bytes, doubling each time (each a multiple of 32 items, so bitmap
 * words never straddle two). Writes them to out (when not NULL) and returns
 * how many there are; the root and the rank compute the same list. */
size_t zap_verify_seg_plan(uint64_t count, uint32_t stride, uint64_t blob_len, uint64_t first_bytes,
                           zap_verify_seg_t *out);

/* The segments of the root's neighbour (the rank whose shard the root may
 * finish, docs/verify.md "Balance"), in the order that rank asks for them:
 * the blob slice first, then records from the far end of the shard (its top
 * when from_top, else its bottom) toward the end next to the root. Sizes
 * start at first_bytes and double, but none takes more than half of what is
 * left (nor less than the first, a short rest riding with the last), so the
 * segments next to the root, which the root may take, are the small ones. */
size_t zap_verify_seg_plan_far(uint64_t count, uint32_t stride, uint64_t blob_len, uint64_t first_bytes,
                               int from_top, zap_verify_seg_t *out);

/* Each segment travels as messages of at most this many bytes (its chunks:
 * whole records for a record segment, the last one shorter), so a rank that
 * verifies on the GPU can receive it through the small pinned ring whatever
 * the segment's size. cap: a smaller chunk than the ring's slot (a test
 * hook, the same on both ends); 0 for the slot. */
uint64_t zap_verify_seg_chunk(const zap_verify_seg_t *g, uint32_t stride, uint64_t cap);

/* Rewrites the message offsets of count variable records (in place) from the
 * original blob's coordinates to the slice [lo, hi); a record whose message
 * lies outside it gets an offset and length that stay malformed. */
void zap_verify_seg_rebase(uint8_t *records, uint32_t stride, uint64_t count, uint64_t lo, uint64_t hi);

/* ---- the token -------------------------------------------------------------- */

typedef struct zap_verify_token {
    int32_t status; /* ZAP_OK: send segment k; else the rank stopped */
    uint32_t k, nseg;
    uint64_t len;   /* the bytes the rank expects for segment k */
} zap_verify_token_t;

static inline void zap_verify_token_encode(uint8_t b[ZAP_VERIFY_STREAM_TOKEN_BYTES], const zap_verify_token_t *t)
{
    zap_put_le32(b, (uint32_t)t->status);
    zap_put_le32(b + 4, t->k);
    zap_put_le32(b + 8, t->nseg);
    zap_put_le32(b + 12, 0);
    zap_put_le64(b + 16, t->len);
}

static inline void zap_verify_token_decode(const uint8_t b[ZAP_VERIFY_STREAM_TOKEN_BYTES], zap_verify_token_t *t)
{
    t->status = (int32_t)zap_get_le32(b);
    t->k = zap_get_le32(b + 4);
    t->nseg = zap_get_le32(b + 8);
    t->len = zap_get_le64(b + 16);
}

/* ---- threads and devices (stream_thread.c) ---------------------------------- */

/* The CUDA device the stream's threads must use (the calling thread's), or -1
 * when they never call CUDA (a host pool without a GPU verifier planned, or a
 * build without CUDA). */
int zap_verify_stream_device(zap_transport_t *t, int gpu_planned);

/* Makes dev the calling thread's device (nothing for dev < 0); a failure is
 * a warning, the thread goes on. */
void zap_verify_stream_adopt_device(int dev);

/* Runs fn(arg) on a new thread that first selects device dev (>= 0).
 * Returns 0, or -1 when the thread could not start. */
int zap_verify_stream_thread(pthread_t *tid, void *(*fn)(void *), void *arg, int dev);

/* ---- the root's sender (stream_send.c) ------------------------------------- */

/* One thread answers every rank's requests. What the root streams to one rank. */
typedef struct zap_verify_stream_rank {
    int rank;
    const uint8_t *records;       /* the rank's first record in the root's batch */
    const uint8_t *blob;          /* the start of its blob slice (NULL without one) */
    const zap_verify_seg_t *segs; /* borrowed until finish */
    size_t nseg;
    int shared;                   /* the root may take this rank's last segments (send_take) */
    uint32_t stride;              /* of the records: a record segment's chunks are whole records */
} zap_verify_stream_rank_t;

typedef struct zap_verify_stream_send zap_verify_stream_send_t;

/* Starts the sender thread (on device dev when >= 0) for ranks[0..nranks)
 * (copied); chunk_cap as for zap_verify_seg_chunk. It gives up with
 * ZAP_ERR_TIMED_OUT when no rank asks for anything for timeout_s (the job's
 * communicator's timeout; INFINITY: never). Without a thread it answers
 * every request before returning. ZAP_OK or ZAP_ERR_NO_MEMORY. */
zap_status_t zap_verify_stream_send_start(zap_transport_t *t, const zap_verify_stream_rank_t *ranks, int nranks,
                                          int dev, uint64_t chunk_cap, double timeout_s,
                                          zap_verify_stream_send_t **s_p);

/* For the root's own thread: takes the last segment of shared rank i (index
 * into the ranks given to start) that the rank has not asked for yet, so the
 * rank's later request is answered with an empty message, "taken". Returns
 * the segment's index into that rank's segs, or -1 when none is left. */
long zap_verify_stream_send_take(zap_verify_stream_send_t *s, int i);

/* Makes the sender stop answering (its status becomes ZAP_ERR_CANCELED):
 * the root's peer watch saw a rank fail, and the job is over. */
void zap_verify_stream_send_abort(zap_verify_stream_send_t *s);

/* Joins the sender; its status (transport errors, ZAP_ERR_TIMED_OUT) and when
 * its last send completed; *mismatch_p (may be NULL): how many requests did
 * not match the root's plan (each answered with an empty message, which a
 * shared rank reads as "taken": the root must fail the job). Frees s. */
zap_status_t zap_verify_stream_send_finish(zap_verify_stream_send_t *s, double *t_done_p, int *mismatch_p);

/* ---- a rank's receiver (stream_recv.c) ------------------------------------- */

/* An allocator and a receiver thread fill one buffer per segment (segs
 * borrowed until zap_verify_stream_recv_free). Without device_copy the
 * buffers come from the transport's pool. With it (a GPU verifier, CUDA
 * built) each segment gets a buffer in device memory of device dev, so the
 * GPU reads it in place: record segments arrive chunk by chunk in the pinned
 * staging ring (cuda/verify) and are copied from there on the ring's stream,
 * overlapping the next receive and the verification of the previous segment;
 * the blob slice (and every segment when the ring or a device buffer cannot
 * be had) is received into plain host memory and copied from there. Record
 * segments of variable batches are rebased (rebase, stride, the slice
 * [slice_lo, slice_hi)) on arrival. */
typedef struct zap_verify_stream_opts {
    int device_copy;
    /* The root may take this rank's last segments (the root's neighbour): an
     * empty reply ends the stream without error, and each request waits
     * until the verification queued before it would end within about twice
     * the segment's expected transfer time (both measured as the stream
     * goes), so the rank does not claim work it would reach only after the
     * root is free to do it. */
    int shared;
    int rebase;
    uint32_t stride;
    uint64_t slice_lo, slice_hi;
    uint64_t chunk_cap; /* as for zap_verify_seg_chunk: the root's */
    /* The job's communicator's timeout (INFINITY: none): the longest the
     * receiver waits for a segment it asked for, as the root's sender waits
     * at most that long for a request. Both ends bounded by the same value,
     * so a root that gives up on a slow rank never leaves it waiting. */
    double timeout_s;
    double first_ask_delay; /* test hook: seconds to wait before asking for segment 0 */
} zap_verify_stream_opts_t;

typedef struct zap_verify_stream_recv zap_verify_stream_recv_t;

zap_status_t zap_verify_stream_recv_start(zap_transport_t *t, int root, const zap_verify_seg_t *segs, size_t nseg,
                                          int dev, const zap_verify_stream_opts_t *o,
                                          zap_verify_stream_recv_t **r_p);

/* For a rank that cannot start its stream: tells the root (a failure token
 * for segment 0), so that it sends nothing and waits for nothing. */
void zap_verify_stream_recv_refuse(zap_transport_t *t, int root, const zap_verify_seg_t *segs, size_t nseg,
                                   zap_status_t why);

/* Blocks until segment k is in place: its host bytes (NULL when it came
 * through the ring: only its device copy exists) and its device copy (NULL
 * when there is none); the receiver's error when the stream ended before k.
 * On a shared stream that the root ended ("taken"), ZAP_OK with both NULL:
 * k and every later segment are the root's. Calling it also marks segment
 * k - 1 verified (the pacing of a shared stream). */
zap_status_t zap_verify_stream_recv_get(zap_verify_stream_recv_t *r, size_t k, uint8_t **host_p,
                                        const uint8_t **dev_p);

/* Joins both threads; the receiver's status and when it finished. */
zap_status_t zap_verify_stream_recv_finish(zap_verify_stream_recv_t *r, double *t_done_p);

/* Joins (if not yet) and frees the buffers and r. NULL is accepted. */
void zap_verify_stream_recv_free(zap_verify_stream_recv_t *r);
#endif
