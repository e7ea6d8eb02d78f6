/* ucp_warm.h. */
#include "transport/ucp_warm.h"
#include "transport/ucp_worker.h"

/* A ring's worth of messages of about one receive buffer each, at a size
 * below the default buffer (8256 bytes) less the headers, so each message
 * fills one buffer. UCX 1.13's ring holds 64 buffers; with UCX 1.16 64
 * messages left the first calls faulting, 256 did not (docs/transport.md,
 * "Warm-up"). Where the ring is shallower, the extra messages go round the
 * pages already warmed; a deeper one is warmed in part. */
#define WARM_MESSAGES 256
#define WARM_BYTES 8192
#define PAGE 4096

static const unsigned char warm_payload[WARM_BYTES];

static ucs_status_t warm_recv(void *arg, const void *header, size_t header_length, void *data, size_t length,
                              const ucp_am_recv_param_t *param)
{
    (void)arg;
    (void)header;
    (void)header_length;
    /* Eager data sits in UCX's receive buffer during the callback; a
     * rendezvous one (not sent here) is only announced, and is dropped. */
    if (data != NULL && !(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV))
        for (size_t at = 0; at < length; at += PAGE)
            (void)*(volatile const unsigned char *)((const unsigned char *)data + at);
    return UCS_OK;
}

zap_status_t zap_ucp_warm_listen(ucp_worker_h worker, int rank)
{
    return zap_ucp_am_listen(worker, ZAP_UCP_WARM_AM_ID, warm_recv, NULL, rank);
}

static void warm_sent(void *request, ucs_status_t s, void *user_data)
{
    (void)s;
    (void)user_data;
    ucp_request_free(request);
}

void zap_ucp_warm_peer(ucp_ep_h ep)
{
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_FLAGS,
        .flags = UCP_AM_SEND_FLAG_EAGER,
        .cb.send = warm_sent,
    };
    for (int i = 0; i < WARM_MESSAGES; i++)
        if (UCS_PTR_IS_ERR(ucp_am_send_nbx(ep, ZAP_UCP_WARM_AM_ID, NULL, 0, warm_payload, WARM_BYTES, &p)))
            return; /* the endpoint failed: its error reaches the caller's own traffic */
}
