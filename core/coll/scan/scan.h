/* Scan and exscan: the algorithms, for their tables (scan.c), one file
 * each; each serves both (op->kind says which). args.src is this rank's
 * vector (recvbuf in place), args.dst its result. */
#ifndef ZAP_COLL_SCAN_H
#define ZAP_COLL_SCAN_H
#include "coll/engine/op.h"

/* Indices in both tables, in ZAP_SCAN_ALG's and ZAP_EXSCAN_ALG's order after
 * "auto". */
enum { ZAP_SC_RD, ZAP_SC_LINEAR, ZAP_SC_SHM, ZAP_SC_BLOCKS, ZAP_SC_CHAIN, ZAP_SC_NALGS };

zap_status_t zap_scan_rd_init(zap_coll_op_t *op);     /* scan_rd.c */
zap_status_t zap_scan_linear_init(zap_coll_op_t *op); /* scan_linear.c */
zap_status_t zap_scan_shm_init(zap_coll_op_t *op);    /* scan_shm.c: up to a slot */
zap_status_t zap_scan_shm_large_init(zap_coll_op_t *op); /* scan_shm_large.c: the large area */
zap_status_t zap_scan_shm_blocks_init(zap_coll_op_t *op); /* scan_shm_blocks.c: the large area, a block per rank */
zap_status_t zap_scan_shm_chain_init(zap_coll_op_t *op);  /* scan_shm_chain.c: the large area, a pipelined chain */
/* The fast form of the shared-memory scan and exscan up to a slot
 * (scan_shm.c, engine/fast.h). */
bool zap_scan_shm_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f);
void zap_scan_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f);
void zap_exscan_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f);
#endif
