/* The automatic algorithm choice: per collective, rows of (rank range, byte
 * range, algorithm), first match wins. The rows live beside each collective's
 * algorithm table (allreduce.c, bcast.c); zap_coll_selection_table (public)
 * lists them all for zap-info. */
#ifndef ZAP_COLL_SELECTION_H
#define ZAP_COLL_SELECTION_H
#include <stdbool.h>
#include <stddef.h>
#include "zap/coll.h"
#include "coll/coll_impl.h"

extern const zap_coll_selection_row_t zap_allreduce_rows[];
extern const size_t zap_allreduce_nrows;
extern const zap_coll_selection_row_t zap_bcast_rows[];
extern const size_t zap_bcast_nrows;
extern const zap_coll_alg_t zap_allreduce_algs[ZAP_AR_NALGS];
extern const zap_coll_alg_t zap_bcast_algs[ZAP_BC_NALGS];

/* The algorithm name of the first row holding (bytes, ranks), or NULL. */
const char *zap_coll_select_row(const zap_coll_selection_row_t *rows, size_t nrows, size_t bytes, int ranks);

/* Whether any row for algorithm covers ranks, whatever the bytes: the
 * allreduce's flat argument exchange is used on exactly those rank counts. */
bool zap_coll_flat_ranks(const zap_coll_selection_row_t *rows, size_t nrows, const char *algorithm, int ranks);

/* Memory kind of the user buffer [ptr, ptr+len): the transport pool's kind
 * when the buffer is pool memory, else what CUDA reports (host without CUDA). */
zap_mem_kind_t zap_coll_mem_kind(zap_comm_t *comm, const void *ptr, size_t len);

/* Turns op into a header-only participant with its header marked bad, after
 * a local failure st: the other ranks then report ZAP_ERR_MISMATCH and this
 * one st, instead of anyone waiting for messages that never come. */
void zap_coll_op_fail_local(zap_coll_op_t *op, zap_status_t st);
#endif
