/* Failure notices of the UCX transport: ucp_notice.h says what and why. */
#include "transport/ucp_notice.h"
#include "transport/ucp_worker.h"
#include "zap/transport.h"
#include <stdlib.h>
#include <string.h>

#define NOTICE_MAGIC 0x7a617046u /* "zapF" */
#define REVOKE_MAGIC 0x7a617052u /* "zapR" */

/* msg (len bytes, valid until the sends complete) to every non-NULL eps[i],
 * then the flushes. */
static void send_all(ucp_worker_h worker, const void *msg, size_t len, int self, ucp_ep_h *eps, int n,
                     double deadline)
{
    ucs_status_ptr_t *reqs = calloc((size_t)n * 2, sizeof(*reqs));
    if (reqs == NULL)
        return;
    ucp_request_param_t sp = {.op_attr_mask = 0};
    for (int i = 0; i < n; i++)
        if (eps[i] != NULL)
            reqs[i] = ucp_tag_send_nbx(eps[i], msg, len, zap_ucp_tag(self, ZAP_UCP_NOTICE_TAG), &sp);
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

void zap_ucp_notice_send(ucp_worker_h worker, zap_ucp_notice_t *nb, int self, int failed, ucp_ep_h *eps, int n,
                         double deadline)
{
    nb->out[0] = NOTICE_MAGIC;
    nb->out[1] = (uint32_t)failed;
    send_all(worker, nb->out, sizeof(nb->out), self, eps, n, deadline);
}

void zap_ucp_notice_send_revoke(ucp_worker_h worker, zap_ucp_notice_t *nb, int self, const zap_notice_t *rv,
                                ucp_ep_h *eps, int n, double deadline)
{
    uint32_t *m = nb->rout;
    m[0] = REVOKE_MAGIC;
    m[1] = rv->channel;
    m[2] = (uint32_t)rv->seq;
    m[3] = (uint32_t)(rv->seq >> 32);
    m[4] = (uint32_t)rv->status;
    m[5] = (uint32_t)rv->culprit;
    m[6] = m[7] = 0;
    send_all(worker, m, sizeof(nb->rout), self, eps, n, deadline);
}

int zap_ucp_notice_waiting(ucp_worker_h worker)
{
    ucp_tag_recv_info_t info;
    return ucp_tag_probe_nb(worker, ZAP_UCP_NOTICE_TAG, ZAP_UCP_TAG_MASK, 0, &info) != NULL;
}

int zap_ucp_notice_take(ucp_worker_h worker, zap_ucp_notice_t *nb, int size, int *failed, int *from,
                        zap_notice_t *rv)
{
    for (;;) {
        ucp_tag_recv_info_t info;
        ucp_tag_message_h msg = ucp_tag_probe_nb(worker, ZAP_UCP_NOTICE_TAG, ZAP_UCP_TAG_MASK, 1, &info);
        if (msg == NULL)
            return 0;
        memset(nb->in, 0, sizeof(nb->in));
        ucp_request_param_t rp = {.op_attr_mask = 0};
        ucs_status_t s = zap_ucp_wait_ptr(worker, ucp_tag_msg_recv_nbx(worker, nb->in, sizeof(nb->in), msg, &rp),
                                          zap_clock_now() + 0.1);
        int src = zap_ucp_tag_src(info.sender_tag);
        const uint32_t *m = nb->in;
        if (s != UCS_OK || src >= size)
            continue;
        if (info.length == 2 * sizeof(uint32_t) && m[0] == NOTICE_MAGIC && (int)m[1] >= 0 && (int)m[1] < size) {
            *failed = (int)m[1];
            *from = src;
            return 1;
        }
        if (info.length == sizeof(nb->rout) && m[0] == REVOKE_MAGIC && (int32_t)m[5] >= -1 &&
            (int32_t)m[5] < size) {
            rv->channel = m[1];
            rv->seq = (uint64_t)m[2] | (uint64_t)m[3] << 32;
            rv->status = (int32_t)m[4];
            rv->culprit = (int32_t)m[5];
            rv->from = src;
            return 2;
        }
        /* Not a notice (a stray message on the reserved tag): dropped. */
    }
}
