/* Reduce_scatter and reduce_scatter_block: the algorithms, for the table
 * (reduce_scatter.c), one file each, and the block arithmetic they share.
 * Both forms run on the same algorithms: rank r's part is counts[r]
 * elements (args.counts) or args.fixed of them (the block form, counts
 * NULL), starting where the parts of the ranks below it end. args.count is
 * the whole vector's length; args.src holds it (recvbuf in place), args.dst
 * receives rank r's part at its start. */
#ifndef ZAP_COLL_REDUCE_SCATTER_H
#define ZAP_COLL_REDUCE_SCATTER_H
#include "coll/engine/op.h"

/* Indices in the table, in ZAP_REDUCE_SCATTER_ALG's order after "auto". */
enum { ZAP_RS_RHALVING, ZAP_RS_RING, ZAP_RS_SHM, ZAP_RS_CMA, ZAP_RS_HIER, ZAP_RS_NALGS };

zap_status_t zap_reduce_scatter_rhalving_init(zap_coll_op_t *op); /* reduce_scatter_rhalving.c */
zap_status_t zap_reduce_scatter_ring_init(zap_coll_op_t *op);     /* reduce_scatter_ring.c */
zap_status_t zap_reduce_scatter_shm_init(zap_coll_op_t *op);      /* reduce_scatter_shm.c */
zap_status_t zap_reduce_scatter_cma_init(zap_coll_op_t *op);      /* reduce_scatter_cma.c */
zap_status_t zap_reduce_scatter_hier_init(zap_coll_op_t *op);     /* reduce_scatter_hier.c: ranks on several hosts */
/* The fast form of calls up to a slot (engine/fast.h), reduce_scatter_shm.c. */
bool zap_reduce_scatter_shm_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f);
void zap_reduce_scatter_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f);
/* The single-copy form's vote: this rank's buffers are host memory. */
bool zap_reduce_scatter_cma_vote(const zap_coll_op_t *op);

/* The header's extra word carries this bit for a call in place (MPI wants
 * every rank or none in place; the single-copy form reads peers' inputs
 * and must know). */
#define ZAP_RS_EXTRA_IN_PLACE (UINT64_C(1) << 63)

/* Rank r's part: its length and where it starts in the whole vector. */
static inline size_t zap_rs_count(const zap_coll_args_t *a, int r) { return a->counts ? a->counts[r] : a->fixed; }
static inline size_t zap_rs_offset(const zap_coll_args_t *a, int r)
{
    if (a->counts == NULL)
        return (size_t)r * a->fixed;
    size_t off = 0;
    for (int q = 0; q < r; q++)
        off += a->counts[q];
    return off;
}
#endif
