/* The public view of the selection rows and the shared matching helper. */
#include "coll/selection.h"
#include "coll/reduce/reduce.h"
#include "cuda_coll.h"
#include <string.h>

const char *zap_coll_select_row(const zap_coll_selection_row_t *rows, size_t nrows, size_t bytes, int ranks)
{
    for (size_t i = 0; i < nrows; i++)
        if (ranks >= rows[i].min_ranks && ranks <= rows[i].max_ranks && bytes >= rows[i].min_bytes &&
            (bytes < rows[i].max_bytes || rows[i].max_bytes == SIZE_MAX))
            return rows[i].algorithm;
    return NULL;
}

bool zap_coll_flat_ranks(const zap_coll_selection_row_t *rows, size_t nrows, const char *algorithm, int ranks)
{
    for (size_t i = 0; i < nrows; i++)
        if (ranks >= rows[i].min_ranks && ranks <= rows[i].max_ranks && strcmp(rows[i].algorithm, algorithm) == 0)
            return true;
    return false;
}

size_t zap_coll_selection_table(const zap_coll_selection_row_t **allreduce_p, size_t *nallreduce_p,
                                const zap_coll_selection_row_t **bcast_p, size_t *nbcast_p)
{
    if (allreduce_p)
        *allreduce_p = zap_allreduce_rows;
    if (nallreduce_p)
        *nallreduce_p = zap_allreduce_nrows;
    if (bcast_p)
        *bcast_p = zap_bcast_rows;
    if (nbcast_p)
        *nbcast_p = zap_bcast_nrows;
    return zap_allreduce_nrows + zap_bcast_nrows;
}

const char *zap_coll_auto_algorithm(const char *collective, size_t bytes, int ranks)
{
    if (collective == NULL)
        return NULL;
    if (strcmp(collective, "allreduce") == 0)
        return zap_coll_select_row(zap_allreduce_rows, zap_allreduce_nrows, bytes, ranks);
    if (strcmp(collective, "bcast") == 0)
        return zap_coll_select_row(zap_bcast_rows, zap_bcast_nrows, bytes, ranks);
    return NULL;
}

zap_mem_kind_t zap_coll_mem_kind(zap_comm_t *comm, const void *ptr, size_t len)
{
    if (ptr == NULL || len == 0)
        return ZAP_MEM_HOST;
    zap_pool_region_t region;
    zap_mem_kind_t kind;
    if (zap_pool_lookup(zap_transport_pool(comm->t), ptr, len, -1, &region) == ZAP_OK)
        kind = region.kind;
    else
        kind = zap_cuda_ptr_kind(ptr);
    return kind == ZAP_MEM_PINNED ? ZAP_MEM_HOST : kind;
}

void zap_coll_op_fail_local(zap_coll_op_t *op, zap_status_t st)
{
    for (int i = 0; i < op->nreqs; i++)
        zap_request_free(op->reqs[i]);
    op->nreqs = 0;
    (void)zap_buf_free(&op->scratch);
    (void)zap_buf_free(&op->scratch2);
    zap_coll_rd_release(op);
    op->local_error = st;
    zap_coll_hdr_set_bad(&op->hdr_own);
    (void)zap_coll_rd_init(op, 0, NULL, 0, ZAP_DT_UINT8, ZAP_OP_SUM);
    op->agreeing = true;
    op->progress = NULL;
}
