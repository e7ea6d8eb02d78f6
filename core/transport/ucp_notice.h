/* Failure notices of the UCX transport (ucp.c): when a rank learns that a
 * peer failed, it tells every other live peer which rank failed first before
 * its own error reaches the caller (who may then leave). A rank that later
 * sees one of those peers disappear reads the notices that peer (and any
 * other) left in its unexpected queue and names the rank that failed first,
 * not the peer that merely left after it: without this the failure cascades
 * through a collective's pattern and ranks not talking to the dead one report
 * a survivor that exited.
 *
 * Best effort, and nothing is posted or matched in normal operation (no
 * wildcard receive sits in UCX's expected queue): notices are read when a
 * peer fails and, so that a rank whose own wait has not failed yet learns of
 * a failure too, by a probe of the unexpected queue every few thousand
 * progress calls.
 * A failure notice is an 8-byte message (magic, failed rank) on the reserved
 * contract tag ZAP_UCP_NOTICE_TAG, which is 2^44 - 1: in the collectives'
 * layout that is communicator 0x3ff in checksum mode, sequence 0xffff, phase
 * 15, step 4095, which no collective uses; other users of the transport must
 * not send on it either (docs/faults.md). The same tag carries revocation
 * notices (zap_transport_notify: a 32-byte message with its own magic), read
 * the same way. A message on that tag without a magic and length it knows is
 * ignored. */
#ifndef ZAP_TRANSPORT_UCP_NOTICE_H
#define ZAP_TRANSPORT_UCP_NOTICE_H
#include <stdint.h>
#include <ucp/api/ucp.h>
#include "transport/transport_impl.h"
#include "transport/ucp_tag.h"

#define ZAP_UCP_NOTICE_TAG ZAP_UCP_TAG_MASK

/* Per transport: the notice being sent and the one being read (UCX may use
 * the send buffer until the send completes). */
typedef struct zap_ucp_notice {
    uint32_t out[2];
    uint32_t rout[8];
    uint32_t in[8];
} zap_ucp_notice_t;

/* Sends "rank failed first" from rank self to each non-NULL endpoint of eps
 * (n of them) and flushes those endpoints, progressing the worker until every
 * flush is done or deadline (zap_clock_now seconds) passes. Worker lock held
 * by the caller; error callbacks may run inside. */
void zap_ucp_notice_send(ucp_worker_h worker, zap_ucp_notice_t *nb, int self, int failed, ucp_ep_h *eps, int n,
                         double deadline);
/* The same for a revocation notice (transport_impl.h). */
void zap_ucp_notice_send_revoke(ucp_worker_h worker, zap_ucp_notice_t *nb, int self, const zap_notice_t *rv,
                                ucp_ep_h *eps, int n, double deadline);

/* Whether a notice waits in the unexpected queue (not taken). Worker lock
 * held. */
int zap_ucp_notice_waiting(ucp_worker_h worker);

/* Takes one notice already received from any rank (it sits in the unexpected
 * queue). Returns 1 for a failure notice (*failed, and *from: the sender), 2
 * for a revocation (*rv, its from filled in), or 0 when there is none.
 * Worker lock held. */
int zap_ucp_notice_take(ucp_worker_h worker, zap_ucp_notice_t *nb, int size, int *failed, int *from,
                        zap_notice_t *rv);
#endif
