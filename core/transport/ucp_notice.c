/* Failure notices of the UCX transport: ucp_notice.h says what and why. */
#include "transport/ucp_notice.h"
#include "transport/ucp_worker.h"
#include "zap/transport.h"
#include <stdlib.h>

#define NOTICE_MAGIC 0x7a617046u /* "zapF" */

void zap_ucp_notice_send(ucp_worker_h worker, zap_ucp_notice_t *nb, int self, int failed, ucp_ep_h *eps, int n,
                         double deadline)
{
    nb->out[0] = NOTICE_MAGIC;
    nb->out[1] = (uint32_t)failed;
    ucs_status_ptr_t *reqs = calloc((size_t)n * 2, sizeof(*reqs));
    if (reqs == NULL)
        return;
    ucp_request_param_t sp = {.op_attr_mask = 0};
    for (int i = 0; i < n; i++)
        if (eps[i] != NULL)
            reqs[i] = ucp_tag_send_nbx(eps[i], nb->out, sizeof(nb->out), zap_ucp_tag(self, ZAP_UCP_NOTICE_TAG), &sp);
    /* A completed send may still sit in the transport's socket buffer; the
     * sender is about to return an error and perhaps exit, so wait until the
     * peer has it. Flushing an endpoint also waits for that rank's earlier
     * traffic, hence the deadline. */
    ucp_request_param_t fp = {.op_attr_mask = 0};
    for (int i = 0; i < n; i++)
        if (eps[i] != NULL && !UCS_PTR_IS_ERR(reqs[i]))
            reqs[n + i] = ucp_ep_flush_nbx(eps[i], &fp);
    for (int i = 0; i < 2 * n; i++)
        if (UCS_PTR_IS_PTR(reqs[i]))
            (void)zap_ucp_wait_ptr(worker, reqs[i], deadline);
    free(reqs);
}

int zap_ucp_notice_waiting(ucp_worker_h worker)
{
    ucp_tag_recv_info_t info;
    return ucp_tag_probe_nb(worker, ZAP_UCP_NOTICE_TAG, ZAP_UCP_TAG_MASK, 0, &info) != NULL;
}

int zap_ucp_notice_take(ucp_worker_h worker, zap_ucp_notice_t *nb, int size, int *failed, int *from)
{
    for (;;) {
        ucp_tag_recv_info_t info;
        ucp_tag_message_h msg = ucp_tag_probe_nb(worker, ZAP_UCP_NOTICE_TAG, ZAP_UCP_TAG_MASK, 1, &info);
        if (msg == NULL)
            return 0;
        nb->in[0] = nb->in[1] = 0;
        ucp_request_param_t rp = {.op_attr_mask = 0};
        ucs_status_t s = zap_ucp_wait_ptr(worker, ucp_tag_msg_recv_nbx(worker, nb->in, sizeof(nb->in), msg, &rp),
                                          zap_clock_now() + 0.1);
        int src = zap_ucp_tag_src(info.sender_tag);
        if (s == UCS_OK && info.length == sizeof(nb->in) && nb->in[0] == NOTICE_MAGIC && (int)nb->in[1] >= 0 &&
            (int)nb->in[1] < size && src < size) {
            *failed = (int)nb->in[1];
            *from = src;
            return 1;
        }
        /* Not a notice (a stray message on the reserved tag): dropped. */
    }
}
