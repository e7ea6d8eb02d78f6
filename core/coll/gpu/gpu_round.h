/* The small-message exchanges of the GPU-resident path (gpu_round.c): each
 * round every rank sends one message to every other and receives one from
 * each, so every rank sees every rank's flags and ends a round with the same
 * decision. Used by gpu_allreduce.c and gpu_bcast.c. */
#ifndef ZAP_COLL_GPU_ROUND_H
#define ZAP_COLL_GPU_ROUND_H
#include <stddef.h>
#include <stdint.h>
#include "coll/comm_impl.h"
#include "coll/engine/op.h"
#include "coll/gpu/gpu.h"
#include "cuda_coll.h"

enum {
    ZAP_STAGE_CAN = 1u << 0, /* round 1: GPU-resident buffer, a slot, the work so far done */
    ZAP_STAGE_OK = 1u << 1   /* later rounds: this rank's part succeeded */
};

typedef struct zap_stage_msg {
    uint32_t magic;
    uint32_t flags;
    uint64_t seq;
    zap_stage_ref_t ref; /* only in round 1 from a rank with a slot */
} zap_stage_msg_t;
#define ZAP_STAGE_MSG_SHORT offsetof(zap_stage_msg_t, ref)

/* Per-operation exchange state (inside the algorithm's op->alg_state). A rank
 * that cannot take part still takes a slot without memory for its mailbox;
 * only when every slot is held has it none: then it sends the short form and
 * receives into a sink (peers' longer messages arrive truncated, which is
 * fine: its own missing flag already decides the round). */
typedef struct zap_stage_x {
    zap_stage_slot_t *slot; /* mailbox, stream and (when can) device memory */
    bool can;               /* the slot has the memory asked for and the work so far succeeded */
    zap_stage_msg_t *own; /* in the slot's mailbox, followed by in[p] */
    zap_stage_msg_t *in;
    uint64_t tiny[2];     /* own short message without a slot */
    uint64_t sink[2];
    zap_status_t rst[ZAP_STAGE_MAX_RANKS];
} zap_stage_x_t;

/* Takes a slot of bytes when can (x->can tells whether it got one) or a
 * slot for the mailbox alone, and prepares the messages. Never fails: a rank
 * without memory declines in round 1. */
void zap_stage_x_init(zap_coll_op_t *op, zap_stage_x_t *x, size_t bytes, bool can);
/* Posts round (1, 2, ...) with flags as this rank's word. */
zap_status_t zap_stage_x_post(zap_coll_op_t *op, zap_stage_x_t *x, int round, uint32_t flags);
/* Round 1 once this rank's copy into its slot is done: ZAP_INPROGRESS while
 * the copy runs; a failed copy votes no (x->can false), it fails nothing. */
zap_status_t zap_stage_x_post_ready(zap_coll_op_t *op, zap_stage_x_t *x);
/* After the round's requests completed: ZAP_OK and *all true when every rank
 * set flag (and, with flag ZAP_STAGE_CAN, all are on this host); a transport
 * error of a receive is returned. */
zap_status_t zap_stage_x_all(zap_coll_op_t *op, zap_stage_x_t *x, uint32_t flag, bool *all);
/* Releases the slot (after its stream went idle). */
void zap_stage_x_release(zap_stage_x_t *x);
#endif
