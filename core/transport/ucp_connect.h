/* Connecting to peers while the UCX transport is created (ucp.c,
 * ZAP_UCP_PRECONNECT).
 *
 * UCX connects an endpoint at its first message. Over TCP, when the peer's
 * process ends while that connection is half made, UCX's TCP transport can
 * fail an assertion and abort the connecting rank (tcp_ep.c, in the failed
 * endpoint's deferred destroy; the same code in UCX 1.13 and 1.16; seen with
 * 1.13 in the kill trials, tests/faults). After a failure that is a common
 * moment: a survivor reports the error and leaves, while another survivor
 * connects to it for the first time to send its failure or revocation
 * notices; the rank that was to name the dead peer dies itself. A connection made while every rank is alive is not
 * at risk: a peer that goes later closes an established socket, which UCX
 * reports through the endpoint's error handler.
 *
 * So the transport connects to the peers it reaches over TCP at creation:
 * one empty active message to each on the warm-up id (ucp_warm.h, whose
 * handler drops it) and a flush of each endpoint. Both complete only once
 * UCX has wired the endpoint up with the peer. Wiring up takes messages
 * both ways, and the peer may be done with its own side first and leave
 * creation, making no progress call for a while: so each rank, once its side
 * is done, sends every peer a second empty message, on ZAP_UCP_CONNECT_AM_ID,
 * and waits for one from each. A rank that has all of them knows every peer
 * finished its side, and the ones it sent need no progress of its own to
 * arrive. Every rank must pick the same peers (the same UCX_TLS and setting,
 * as under mpirun); a peer that does not answer only costs the deadline. */
#ifndef ZAP_TRANSPORT_UCP_CONNECT_H
#define ZAP_TRANSPORT_UCP_CONNECT_H
#include <ucp/api/ucp.h>
#include "zap/status.h"

/* The active-message id of the second message; no other user of this
 * worker may register it. */
#define ZAP_UCP_CONNECT_AM_ID 0x7a71u

/* Counts the second messages that reach worker in *done (which must outlive
 * the worker). Call before any peer may connect (before the creation's last
 * agreement). Not thread-safe. ZAP_ERR_TRANSPORT (logged) if UCX refuses. */
zap_status_t zap_ucp_connect_listen(ucp_worker_h worker, unsigned *done, int rank);

/* Connects to every non-NULL eps[i] (n of them) as above, progressing worker
 * until all are done or deadline (zap_clock_now seconds) passes. status[i]
 * gets UCS_OK, the endpoint's error (the peer failed), or UCS_ERR_TIMED_OUT,
 * whose requests then finish in the background; NULL endpoints get UCS_OK.
 * Returns whether every peer whose side worked said it was done before the
 * deadline. UCS_ERR_NO_MEMORY in every status (and 0) when the request table
 * cannot be allocated. done is the counter given to zap_ucp_connect_listen.
 * Caller holds the worker. */
int zap_ucp_connect_wait(ucp_worker_h worker, ucp_ep_h *eps, int n, double deadline, const unsigned *done,
                         ucs_status_t *status);
#endif
