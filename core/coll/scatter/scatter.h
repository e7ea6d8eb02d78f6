/* The scatter's algorithms, for its table (scatter.c): linear (in scatter.c)
 * and the shared-memory forms (scatter_shm.c). Every init reads the call
 * from op->args (src: the root's sendbuf; dst: recvbuf; count: recvcount;
 * fixed: the fixed-count form's count; counts and displs: the root's, for
 * scatterv; hdr_extra 1 for scatterv) and follows engine/select.h's
 * contract. */
#ifndef ZAP_COLL_SCATTER_H
#define ZAP_COLL_SCATTER_H
#include <stdbool.h>
#include "coll/engine/op.h"

/* Indices in the table. */
enum { ZAP_SC_LINEAR, ZAP_SC_SHM, ZAP_SC_HIER, ZAP_SC_NALGS };

zap_status_t zap_scatter_shm_init(zap_coll_op_t *op); /* scatter_shm.c */
/* This rank's yes to the single-copy form: its buffers are host memory. */
bool zap_scatter_shm_vote(const zap_coll_op_t *op);
#endif
