/* What the GPU path's two collectives share (gpu_chan.c): the communicator's
 * channel and its setup, the order the calls launch their kernels in, and the
 * small all-to-all rounds over the transport. Internal to core/coll/gpu. */
#ifndef ZAP_COLL_GPU_IMPL_H
#define ZAP_COLL_GPU_IMPL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "coll/comm_impl.h"
#include "coll/engine/op.h"
#include "coll/gpu/gpu.h"
#include "cuda_coll.h"

#define ZAP_COLL_GPU_ORDER_RING 8192 /* more than the operations a communicator can have in flight */

/* A communicator's part of the path (comm->gpu), made by the first call that
 * votes for it. Every rank launches the same kernels on the channel in the
 * same order, or the kernels' flags would pair different calls: calls take an
 * order number when they are posted (in post order) and launch, or step
 * aside, only in that order. */
typedef struct zap_coll_gpu {
    enum { ZAP_GPU_CHAN_NONE, ZAP_GPU_CHAN_SETUP, ZAP_GPU_CHAN_READY, ZAP_GPU_CHAN_FAILED } state;
    zap_gpu_chan_t *ch;
    uint64_t orders;   /* order numbers handed out */
    uint64_t next;     /* the next order that may launch */
    uint8_t settled[ZAP_COLL_GPU_ORDER_RING]; /* orders done out of turn */
} zap_coll_gpu_t;

enum {
    ZAP_GPU_MSG_CAN = 1u << 0, /* round 1: this rank can take part (its region or buffers exposed) */
    ZAP_GPU_MSG_OK = 1u << 1   /* the channel's round 2: it opened every peer's region */
};

typedef struct zap_coll_gpu_msg {
    uint32_t magic;
    uint32_t flags;
    uint64_t seq;         /* the operation's, against a stray message */
    zap_gpu_ref_t ref[2]; /* the channel's region; or a call's exposed input and output */
} zap_coll_gpu_msg_t;

/* Per-call state of the rounds and the order (inside the algorithm's state). */
typedef struct zap_coll_gpu_x {
    zap_coll_gpu_msg_t *mail; /* op->scratch2: this rank's message, then one slot per rank */
    void **in, **out;         /* after the mail: every rank's exposed input and output, opened here */
    zap_status_t rst[ZAP_COLL_GPU_MAX_RANKS];
    uint64_t order, ticket;
    uint8_t chan_step; /* 1, 2: this call is running the channel's setup rounds */
    bool ordered, settled, launched;
    bool holds_stage; /* this call holds the channel's staging buffer */
} zap_coll_gpu_x_t;

/* comm->gpu (made by the vote). */
static inline zap_coll_gpu_t *zap_coll_gpu_of(const zap_coll_op_t *op) { return (zap_coll_gpu_t *)op->comm->gpu; }

/* At init: an order number. */
void zap_coll_gpu_x_init(zap_coll_op_t *op, zap_coll_gpu_x_t *x);
/* Drives the channel's setup (once per communicator, by the first call that
 * needs it; later calls wait for it): ZAP_OK ready, ZAP_INPROGRESS,
 * ZAP_ERR_UNSUPPORTED when the channel failed (every rank alike: fall back),
 * or a transport error. */
zap_status_t zap_coll_gpu_chan_ready(zap_coll_op_t *op, zap_coll_gpu_x_t *x);
/* Posts an all-to-all round of step with flags and up to two refs (NULL: zero). */
zap_status_t zap_coll_gpu_round_post(zap_coll_op_t *op, zap_coll_gpu_x_t *x, int step, uint32_t flags,
                                     const zap_gpu_ref_t *r0, const zap_gpu_ref_t *r1);
/* After the round's step completed: whether every rank (this one included)
 * set flag; a receive's error or a malformed message is returned. */
zap_status_t zap_coll_gpu_round_all(zap_coll_op_t *op, zap_coll_gpu_x_t *x, uint32_t flag, bool *all);
/* Launches l once it is this call's turn: ZAP_INPROGRESS until then (or while
 * the channel has too many launches pending). */
zap_status_t zap_coll_gpu_launch(zap_coll_op_t *op, zap_coll_gpu_x_t *x, zap_gpu_launch_t *l);
/* The launch's outcome (zap_gpu_test). */
zap_status_t zap_coll_gpu_wait(zap_coll_op_t *op, zap_coll_gpu_x_t *x);
/* Gives the call's turn away (it falls back or ended), where its kernel is
 * still running waits for it, and gives back the staging buffer it holds:
 * the release hook of both collectives, whose state begins with their
 * zap_coll_gpu_x_t. */
void zap_coll_gpu_release(zap_coll_op_t *op);
/* Every rank agreed the path is out: counted, and the next candidate runs
 * the call on the untouched user buffers (the engine calls the release). */
zap_status_t zap_coll_gpu_fall_back(zap_coll_op_t *op);
void zap_coll_gpu_count(bool completed);
#endif
