/* A watch on the peers of a rank that verifies (docs/verify.md, "A peer that
 * dies during verification"): while the verifier runs, the job makes no
 * transport call of its own, and UCX notices a dead peer only while it is
 * progressed over an endpoint to it. */
#ifndef ZAP_VERIFY_WATCH_H
#define ZAP_VERIFY_WATCH_H
#include "zap/transport.h"

typedef struct zap_verify_watch zap_verify_watch_t;

/* Posts a receive that is never matched from each of peers[0..n) and starts
 * a thread that tests them every 5 ms. NULL (no watch) on the inproc
 * transport (one process: no rank dies alone), with no peer, or when the
 * thread cannot start; a peer already failed sets the flag at once. */
zap_verify_watch_t *zap_verify_watch_start(zap_transport_t *t, const int *peers, int n);
/* The flag the verifier reads (zap_verify_set_cancel): nonzero once a
 * watched peer failed. NULL for NULL. */
const int *zap_verify_watch_flag(const zap_verify_watch_t *w);
/* Stops and joins the thread, cancels the receives, frees w; ZAP_OK, or the
 * status of the first watched receive that failed (ZAP_ERR_PEER_FAILED: the
 * transport has logged which rank failed first). NULL gives ZAP_OK. */
zap_status_t zap_verify_watch_stop(zap_verify_watch_t *w);
#endif
