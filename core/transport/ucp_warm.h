/* Warming the shared-memory path to a peer on this host when the UCX
 * transport first connects to it (ucp.c).
 *
 * UCX's shared-memory transports (sysv, posix) pass each message through a
 * ring of receive buffers in the receiver's segment (UCX_MM_FIFO_SIZE of
 * UCX_MM_SEG_SIZE bytes each: 64 in UCX 1.13), which the sender writes through its
 * own mapping of that segment and the receiver reads through its own. Both
 * mappings start empty, so every buffer's first use takes page faults on both
 * sides, and a first-touch fault costs more than a whole small message: the
 * first ring's worth of messages of a few KiB each between two ranks cost
 * several times what the rest do (docs/transport.md, "Warm-up"), and a
 * program that times its first calls sees that.
 * So at the first connection to a same-host peer the sender sends one ring's
 * worth of buffer-sized active messages, fire and forget, which the receiver
 * reads page by page and drops: both sides fault once, together, inside that
 * first call, and later calls find the ring mapped.
 *
 * Nothing of the caller's traffic depends on these messages; a failed or
 * unfinished one is just released. They are not counted as sent traffic
 * (zap_transport_traffic counts the caller's bytes). */
#ifndef ZAP_TRANSPORT_UCP_WARM_H
#define ZAP_TRANSPORT_UCP_WARM_H
#include <ucp/api/ucp.h>
#include "zap/status.h"

/* The active-message id the warm-up uses; no other user of this worker may
 * register it. */
#define ZAP_UCP_WARM_AM_ID 0x7a70u

/* Receives warm-up messages on worker (the context has UCP_FEATURE_AM). Not
 * thread-safe: call before the worker is shared. ZAP_ERR_TRANSPORT (logged) if
 * UCX refuses. */
zap_status_t zap_ucp_warm_listen(ucp_worker_h worker, int rank);

/* Sends the warm-up to the peer behind ep, without waiting. Caller holds the
 * worker's lock. */
void zap_ucp_warm_peer(ucp_ep_h ep);
#endif
