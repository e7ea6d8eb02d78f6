/* The scatter's algorithms, for its table (scatter.c): linear (in scatter.c)
 * and the shared-memory forms (scatter_shm.c, scatter_shm_copy.c). Every init reads the call
 * from op->args (src: the root's sendbuf; dst: recvbuf; count: recvcount;
 * fixed: the fixed-count form's count; counts and displs: the root's, for
 * scatterv; hdr_extra 1 for scatterv) and follows engine/select.h's
 * contract. */
#ifndef ZAP_COLL_SCATTER_H
#define ZAP_COLL_SCATTER_H
#include <stdbool.h>
#include "coll/engine/op.h"
#include "coll/shm/shm.h"

/* Indices in the table. */
enum { ZAP_SC_LINEAR, ZAP_SC_SHM, ZAP_SC_HIER, ZAP_SC_NALGS };

zap_status_t zap_scatter_shm_init(zap_coll_op_t *op); /* scatter_shm.c */
/* This rank's yes to the single-copy form: its buffers are host memory. */
bool zap_scatter_shm_vote(const zap_coll_op_t *op);

/* The largest total (p blocks, bytes) a scatter moves through the large area
 * (scatter_shm_copy.c) rather than each rank reading its block from the
 * root's sendbuf. With one reader the single copy wins from where its fixed
 * cost (a system call, the root waiting for the reader) is paid off; with
 * more, their reads of the one sendbuf at once cost more than the root's
 * pipelined copy in, until blocks are large enough (docs/collectives.md,
 * "scatter"). */
#define ZAP_SCATTER_SHM_COPY_MAX_TWO ((size_t)64 << 10)
#define ZAP_SCATTER_SHM_COPY_MAX ((size_t)512 << 10)
static inline size_t zap_scatter_shm_copy_max(int p)
{
    return p <= 2 ? ZAP_SCATTER_SHM_COPY_MAX_TWO : ZAP_SCATTER_SHM_COPY_MAX;
}
/* Whether blocks of total bytes in all that do not fit the root's slot take
 * the copy form on s: for scatter p times the agreed count's bytes, for
 * scatterv the root's sum, which its table carries to every rank; so every
 * rank decides alike. */
bool zap_scatter_shm_copies(const zap_coll_shm_t *s, size_t total);
/* Scatter's copy form, ahead of a header-only agreement (scatter_shm_init
 * calls it). */
zap_status_t zap_scatter_shm_copy_init(zap_coll_op_t *op);
/* Hands op to the copy form once agreed (scatterv: after its table): total
 * bytes packed in rank order, this rank's block at at, bytes long. The next
 * progress call runs it. */
void zap_scatter_shm_copy_start(zap_coll_op_t *op, size_t total, size_t at, size_t bytes);
/* The fast form of its calls up to a slot (engine/fast.h). */
bool zap_scatter_shm_fast_setup(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f);
void zap_scatter_shm_fast_finish(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f);
#endif
