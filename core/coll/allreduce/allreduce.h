/* The allreduce's algorithms, for its table (allreduce.c): one file each.
 * Every init reads the call from op->args and follows engine/select.h's
 * contract (ZAP_ERR_UNSUPPORTED: cannot run this call). */
#ifndef ZAP_COLL_ALLREDUCE_H
#define ZAP_COLL_ALLREDUCE_H
#include "coll/engine/op.h"

/* Indices in the table, in ZAP_ALLREDUCE_ALG's order after "auto". */
enum {
    ZAP_AR_RD,
    ZAP_AR_RABENSEIFNER,
    ZAP_AR_RING,
    ZAP_AR_DIRECT,
    ZAP_AR_SHM,
    ZAP_AR_CMA,
    ZAP_AR_HIER,
    ZAP_AR_GPU,
    ZAP_AR_NALGS
};

/* The hierarchical allreduce carries vectors up to this size in its
 * agreement (past it, UCX's eager limit puts every hop on a rendezvous). */
#define ZAP_AR_HIER_SMALL_BYTES ((size_t)8 << 10)

zap_status_t zap_allreduce_rd_init(zap_coll_op_t *op);           /* allreduce_rd.c */
zap_status_t zap_allreduce_rabenseifner_init(zap_coll_op_t *op); /* allreduce_rabenseifner.c */
zap_status_t zap_allreduce_ring_init(zap_coll_op_t *op);         /* allreduce_ring.c */
zap_status_t zap_allreduce_direct_init(zap_coll_op_t *op);       /* allreduce_direct.c: needs the flat form */
/* The fast form of the shared-memory allreduce up to a slot
 * (allreduce_direct.c, engine/fast.h). */
bool zap_allreduce_direct_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f);
void zap_allreduce_direct_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f);
zap_status_t zap_allreduce_shm_init(zap_coll_op_t *op);          /* allreduce_shm.c, allreduce_shm_large.c */
zap_status_t zap_allreduce_shm_large_init(zap_coll_op_t *op);
/* The largest vector the shared-memory allreduce carries in the slots on p
 * ranks (allreduce_shm.c says why it is smaller on many ranks); larger ones,
 * even where a slot would hold them, go through the large area. */
size_t zap_allreduce_shm_slot_bytes(int p);
zap_status_t zap_allreduce_cma_init(zap_coll_op_t *op);          /* allreduce_cma.c */
/* The single-copy engine of allreduce_cma.c; root >= 0: the rooted form (only
 * root gets the result in op->args.dst; the reduce's cma algorithm). */
zap_status_t zap_allreduce_cma_start(zap_coll_op_t *op, int root);
zap_status_t zap_allreduce_hier_init(zap_coll_op_t *op);         /* allreduce_hier.c: ranks on several hosts */
/* The single-copy allreduce's vote: this rank's buffers are host memory. */
bool zap_allreduce_cma_vote(const zap_coll_op_t *op);
#endif
