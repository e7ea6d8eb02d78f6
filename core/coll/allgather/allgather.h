/* The allgather's algorithms, for its table (allgather.c): ring (in
 * allgather.c) and the shared-memory forms (allgather_shm.c). Every init
 * reads the call from op->args (src: this rank's block, NULL in place; dst:
 * recvbuf; count: sendcount; counts and displs: the v-form's, NULL for the
 * fixed count) and follows engine/select.h's contract. */
#ifndef ZAP_COLL_ALLGATHER_H
#define ZAP_COLL_ALLGATHER_H
#include <stdbool.h>
#include "coll/engine/op.h"

/* Indices in the table. */
enum { ZAP_AG_RING, ZAP_AG_SHM, ZAP_AG_HIER, ZAP_AG_NALGS };

zap_status_t zap_allgather_shm_init(zap_coll_op_t *op); /* allgather_shm.c */
/* This rank's yes to the single-copy form: its buffers are host memory. */
bool zap_allgather_shm_vote(const zap_coll_op_t *op);
/* The fast form of its calls up to a slot (engine/fast.h). */
bool zap_allgather_shm_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f);
void zap_allgather_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f);
#endif
