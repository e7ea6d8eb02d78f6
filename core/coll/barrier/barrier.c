/* Barrier: the argument agreement alone. Every rank's header meets every
 * other's (log2(p) rounds of recursive doubling, +2 when p is not a power of
 * two), so no rank leaves before every rank has entered. */
#include "coll/comm_impl.h"
#include "coll/engine/select.h"

static zap_status_t agreement_only(zap_coll_op_t *op)
{
    op->progress = NULL; /* done once the header exchange is */
    return ZAP_OK;
}

static const zap_coll_alg_t algs[] = {
    {.name = "rd", .description = "the argument agreement's recursive doubling alone", .init = agreement_only},
};
static const zap_coll_row_t rows[] = {
    {0, 1, INT32_MAX, 0, SIZE_MAX, 0, 0, "log2(p) rounds of one header each"},
};
const zap_coll_desc_t zap_barrier_desc = {
    .name = "barrier",
    .kind = ZAP_COLL_BARRIER,
    .algs = algs,
    .nalgs = 1,
    .rows = rows,
    .nrows = 1,
    .setting = ZAP_CFG_COUNT,
};

zap_status_t zap_ibarrier(zap_comm_t *comm, zap_request_t **req_p)
{
    if (comm == NULL || req_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    zap_coll_args_t a = {.dt = ZAP_DT_UINT8, .op = ZAP_OP_SUM, .root = -1, .mem = ZAP_MEM_HOST};
    return zap_coll_post(comm, &zap_barrier_desc, &a, ZAP_OK, req_p);
}

zap_status_t zap_barrier(zap_comm_t *comm)
{
    zap_request_t *req = NULL;
    zap_status_t st = zap_ibarrier(comm, &req);
    if (st != ZAP_OK)
        return st;
    return zap_coll_wait_free(req);
}
