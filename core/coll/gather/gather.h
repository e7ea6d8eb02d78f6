/* Gather and gatherv: the algorithms, for the table (gather.c), one file
 * each, and what they share. args.src is this rank's block (NULL for the
 * root in place), args.count its length, args.dst the root's recvbuf;
 * gatherv has args.counts and args.displs on the root (NULL elsewhere),
 * gather args.fixed (every rank's count) and counts NULL. */
#ifndef ZAP_COLL_GATHER_H
#define ZAP_COLL_GATHER_H
#include "coll/engine/op.h"
#include "coll/shm/shm.h"

/* Indices in the table, in ZAP_GATHER_ALG's order after "auto". */
enum { ZAP_GA_LINEAR, ZAP_GA_BINOMIAL, ZAP_GA_SHM, ZAP_GA_HIER, ZAP_GA_NALGS };

zap_status_t zap_gather_linear_init(zap_coll_op_t *op);   /* gather_linear.c */
zap_status_t zap_gather_binomial_init(zap_coll_op_t *op); /* gather_binomial.c: gather only */
zap_status_t zap_gather_shm_init(zap_coll_op_t *op);      /* gather_shm.c: gather only, up to a slot */
zap_status_t zap_gather_shm_copy_init(zap_coll_op_t *op); /* gather_shm_copy.c: above a slot, through the area */
/* Whether a gather of blocks of blk bytes goes through the large area
 * (gather_shm_copy.c): single-copy reads are dear here (or the shm form is
 * forced) and the p blocks fit the area, each at most 512 KiB. The same on
 * every rank for the same block and setting. */
bool zap_gather_shm_copies(const zap_coll_shm_t *s, size_t blk, bool forced);
zap_status_t zap_gather_hier_init(zap_coll_op_t *op);     /* gather_hier.c: ranks on several hosts */

/* Whether the call is gatherv (the header's extra word says so on every
 * rank; args.counts is set on the root only). */
static inline bool zap_ga_is_v(const zap_coll_args_t *a) { return (a->hdr_extra & 1) != 0; }

/* Rank r's block at the root: its length and displacement in elements. */
static inline size_t zap_ga_count(const zap_coll_args_t *a, int r) { return a->counts ? a->counts[r] : a->fixed; }
static inline ptrdiff_t zap_ga_displ(const zap_coll_args_t *a, int r)
{
    return a->counts ? a->displs[r] : (ptrdiff_t)((size_t)r * a->fixed);
}
/* The fast form of its calls up to a slot (engine/fast.h). */
bool zap_gather_shm_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f);
void zap_gather_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f);
#endif
