/* The rooted reduce's algorithms, for its table (reduce_coll.c): one file
 * each. Every init reads the call from op->args and follows
 * engine/select.h's contract (ZAP_ERR_UNSUPPORTED: cannot run this call). */
#ifndef ZAP_COLL_REDUCE_COLL_H
#define ZAP_COLL_REDUCE_COLL_H
#include "coll/engine/op.h"

/* Indices in the table, in ZAP_REDUCE_ALG's order after "auto". */
enum { ZAP_RD_BINOMIAL, ZAP_RD_RABENSEIFNER, ZAP_RD_SHM, ZAP_RD_HIER, ZAP_RD_CMA, ZAP_RD_NALGS };

zap_status_t zap_reduce_binomial_init(zap_coll_op_t *op);     /* reduce_binomial.c */
zap_status_t zap_reduce_rabenseifner_init(zap_coll_op_t *op); /* reduce_rabenseifner.c */
zap_status_t zap_reduce_shm_init(zap_coll_op_t *op);          /* reduce_shm.c */
zap_status_t zap_reduce_hier_init(zap_coll_op_t *op);         /* reduce_hier.c: ranks on several hosts */
zap_status_t zap_reduce_cma_init(zap_coll_op_t *op);          /* reduce_cma.c: single copy on one host */
/* The fast form of its calls up to a slot (engine/fast.h). */
bool zap_reduce_shm_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f);
void zap_reduce_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f);
#endif
