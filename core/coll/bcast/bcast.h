/* The broadcast's algorithms, for its table (bcast.c): one file each. Every
 * init reads the call from op->args (dst: the buffer, bytes, root) and
 * follows engine/select.h's contract. */
#ifndef ZAP_COLL_BCAST_H
#define ZAP_COLL_BCAST_H
#include "coll/engine/op.h"

/* Indices in the table, in ZAP_BCAST_ALG's order after "auto". */
enum {
    ZAP_BC_BINOMIAL,
    ZAP_BC_SCATTER_ALLGATHER,
    ZAP_BC_CHAIN,
    ZAP_BC_RD,
    ZAP_BC_SHM,
    ZAP_BC_HIER,
    ZAP_BC_GPU,
    ZAP_BC_NALGS
};

/* The hierarchical broadcast carries messages up to this size in its
 * one-way tree's message (agree/agree_tree.c). */
#define ZAP_BC_HIER_SMALL_BYTES ((size_t)64 << 10)

zap_status_t zap_bcast_binomial_init(zap_coll_op_t *op);          /* bcast_binomial.c */
zap_status_t zap_bcast_scatter_allgather_init(zap_coll_op_t *op); /* bcast_scatter_allgather.c */
zap_status_t zap_bcast_chain_init(zap_coll_op_t *op);             /* bcast_chain.c */
zap_status_t zap_bcast_rd_init(zap_coll_op_t *op);                /* bcast_rd.c */
/* The fast form of the shared-memory broadcast up to a slot (bcast_rd.c,
 * engine/fast.h). */
bool zap_bcast_rd_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f);
void zap_bcast_rd_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f);
zap_status_t zap_bcast_shm_init(zap_coll_op_t *op);               /* bcast_shm.c */
zap_status_t zap_bcast_hier_init(zap_coll_op_t *op);              /* bcast_hier.c: ranks on several hosts */
#endif
