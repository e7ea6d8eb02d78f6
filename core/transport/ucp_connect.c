/* ucp_connect.h. */
#include "transport/ucp_connect.h"
#include "transport/ucp_warm.h"
#include "transport/ucp_worker.h"
#include <stdlib.h>

static ucs_status_t done_recv(void *arg, const void *header, size_t header_length, void *data, size_t length,
                              const ucp_am_recv_param_t *param)
{
    (void)header;
    (void)header_length;
    (void)data;
    (void)length;
    (void)param;
    ++*(unsigned *)arg;
    return UCS_OK;
}

zap_status_t zap_ucp_connect_listen(ucp_worker_h worker, unsigned *done, int rank)
{
    return zap_ucp_am_listen(worker, ZAP_UCP_CONNECT_AM_ID, done_recv, done, rank);
}

/* An empty eager active message on id to ep and, with flush, a flush of ep
 * behind it: their requests (or statuses) in req[0] and req[1]. */
static void post(ucp_ep_h ep, unsigned id, int flush, ucs_status_ptr_t *req)
{
    ucp_request_param_t sp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_AM_SEND_FLAG_EAGER};
    ucp_request_param_t fp = {.op_attr_mask = 0};
    req[0] = ucp_am_send_nbx(ep, id, NULL, 0, NULL, 0, &sp);
    req[1] = flush && !UCS_PTR_IS_ERR(req[0]) ? ucp_ep_flush_nbx(ep, &fp) : NULL;
}

static ucs_status_t wait_pair(ucp_worker_h worker, ucs_status_ptr_t *req, double deadline)
{
    ucs_status_t s = zap_ucp_wait_ptr(worker, req[0], deadline);
    ucs_status_t f = zap_ucp_wait_ptr(worker, req[1], deadline);
    return s != UCS_OK ? s : f;
}

int zap_ucp_connect_wait(ucp_worker_h worker, ucp_ep_h *eps, int n, double deadline, const unsigned *done,
                         ucs_status_t *status)
{
    ucs_status_ptr_t *reqs = calloc((size_t)n * 2 + 1, sizeof(*reqs));
    for (int i = 0; i < n; i++)
        status[i] = reqs != NULL ? UCS_OK : UCS_ERR_NO_MEMORY;
    if (reqs == NULL)
        return 0;
    for (int i = 0; i < n; i++)
        if (eps[i] != NULL)
            post(eps[i], ZAP_UCP_WARM_AM_ID, 1, &reqs[2 * i]);
    unsigned want = 0;
    for (int i = 0; i < n; i++)
        if (eps[i] != NULL) {
            status[i] = wait_pair(worker, &reqs[2 * i], deadline);
            want += status[i] == UCS_OK;
        }
    /* This side is done: say so, and wait until every peer has said so. */
    for (int i = 0; i < n; i++)
        if (eps[i] != NULL && status[i] == UCS_OK) {
            post(eps[i], ZAP_UCP_CONNECT_AM_ID, 0, &reqs[2 * i]);
            (void)wait_pair(worker, &reqs[2 * i], deadline);
        }
    unsigned polls = 0;
    while (*(volatile const unsigned *)done < want) {
        ucp_worker_progress(worker);
        if ((++polls & 63) == 0 && zap_clock_now() > deadline)
            break;
    }
    free(reqs);
    return *done >= want;
}
