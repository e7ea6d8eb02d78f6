/* Alltoall and alltoallv: the algorithms, for the table (alltoall.c), one
 * file each, and the block arithmetic they share.
 *
 * args: src the send buffer (NULL in place), dst the receive buffer; the
 * alltoall form has args.fixed elements per block and counts NULL; the
 * alltoallv form has counts/displs (send side) and rcounts/rdispls (receive
 * side). In place the blocks to send are recvbuf's, laid out as the receive
 * side says: an algorithm that sends from it while receiving into it first
 * takes a packed image of it (zap_a2a_image). */
#ifndef ZAP_COLL_ALLTOALL_H
#define ZAP_COLL_ALLTOALL_H
#include "coll/engine/op.h"

/* Indices in the table, in ZAP_ALLTOALL_ALG's order after "auto". */
enum { ZAP_A2A_PAIRWISE, ZAP_A2A_BRUCK, ZAP_A2A_LINEAR, ZAP_A2A_SHM, ZAP_A2A_CMA, ZAP_A2A_NALGS };

zap_status_t zap_alltoall_pairwise_init(zap_coll_op_t *op); /* alltoall_pairwise.c */
zap_status_t zap_alltoall_bruck_init(zap_coll_op_t *op);    /* alltoall_bruck.c: alltoall only */
zap_status_t zap_alltoall_linear_init(zap_coll_op_t *op);   /* alltoall_linear.c */
zap_status_t zap_alltoall_shm_init(zap_coll_op_t *op);      /* alltoall_shm.c: alltoall only */
zap_status_t zap_alltoall_cma_init(zap_coll_op_t *op);      /* alltoall_cma.c: alltoall only, not in place */
bool zap_alltoall_cma_vote(const zap_coll_op_t *op);

/* The header's extra word: bit 0 the v-form, this bit in place (MPI: every
 * rank or none). */
#define ZAP_A2A_EXTRA_IN_PLACE (UINT64_C(1) << 63)
static inline bool zap_a2a_is_v(const zap_coll_args_t *a) { return (a->hdr_extra & 1) != 0; }
static inline bool zap_a2a_in_place(const zap_coll_args_t *a) { return a->src == NULL; }

/* The block for rank j: its length, where it is sent from (this rank's
 * send side) and where the one from rank j lands (the receive side). */
static inline size_t zap_a2a_scount(const zap_coll_args_t *a, int j)
{
    return zap_a2a_in_place(a) ? (a->rcounts ? a->rcounts[j] : a->fixed) : a->counts ? a->counts[j] : a->fixed;
}
static inline size_t zap_a2a_rcount(const zap_coll_args_t *a, int j) { return a->rcounts ? a->rcounts[j] : a->fixed; }
static inline ptrdiff_t zap_a2a_rdispl(const zap_coll_args_t *a, int j)
{
    return a->rcounts ? a->rdispls[j] : (ptrdiff_t)((size_t)j * a->fixed);
}
static inline ptrdiff_t zap_a2a_sdispl(const zap_coll_args_t *a, int j)
{
    return zap_a2a_in_place(a) ? zap_a2a_rdispl(a, j) : a->counts ? a->displs[j] : (ptrdiff_t)((size_t)j * a->fixed);
}

/* Where the blocks to send are read from: the caller's send buffer, or in
 * place the image taken of recvbuf. */
typedef struct zap_a2a_send {
    const char *base;       /* block j at base + displ(j) * es */
    const ptrdiff_t *displ; /* the image's packed displacements; NULL: the caller's (zap_a2a_sdispl) */
} zap_a2a_send_t;
/* Sets *snd up for op; in place, copies recvbuf's blocks packed into
 * buf (a scratch buffer of op, allocated here) first. ZAP_OK or the
 * scratch's error. */
zap_status_t zap_a2a_image(zap_coll_op_t *op, zap_buf_t *buf, zap_a2a_send_t *snd);
static inline const char *zap_a2a_block(const zap_coll_op_t *op, const zap_a2a_send_t *snd, int j)
{
    ptrdiff_t d = snd->displ ? snd->displ[j] : zap_a2a_sdispl(&op->args, j);
    return snd->base + d * (ptrdiff_t)zap_dtype_size(op->args.dt);
}
/* A receive that came in: for alltoallv it must carry exactly rcount(j)
 * elements (a transport error is the call's; a wrong length is logged and
 * *bad set). */
zap_status_t zap_a2a_check_recv(const zap_coll_op_t *op, int j, zap_status_t st, size_t len, bool *bad);
/* The v-form's closing exchange (phase 3): every rank learns whether one saw
 * a wrong count. Call with started false the first time; returns
 * ZAP_INPROGRESS, ZAP_OK, ZAP_ERR_INVALID_PARAM (this rank saw one),
 * ZAP_ERR_MISMATCH (another did) or a transport error. */
zap_status_t zap_a2a_status(zap_coll_op_t *op, bool bad, bool *started);
/* The fast form of the shared-memory alltoall up to a slot (alltoall_shm.c,
 * engine/fast.h). */
bool zap_alltoall_shm_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f);
void zap_alltoall_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f);
#endif
