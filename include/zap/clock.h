/* The clock every deadline is measured on, and the process-wide timeout
 * setting (ZAP_TIMEOUT). Objects that wait (transports, communicators, the
 * verification job) read the setting once, when they are created, and keep
 * the value: changing ZAP_TIMEOUT later does not change their deadlines.
 *
 * A deadline is opt-in. Unset (or "none"), ZAP_TIMEOUT gives no deadline, as
 * in MPI: a wait for a live peer lasts as long as the peer takes, while a
 * dead peer is detected by liveness (the transport's peer failure, the pid
 * check on one host) and reported as ZAP_ERR_PEER_FAILED (docs/faults.md).
 * "No deadline" is INFINITY wherever a timeout is a number of seconds, so
 * zap_clock_now() + timeout is a deadline that never passes. */
#ifndef ZAP_CLOCK_H
#define ZAP_CLOCK_H
#include "zap/common.h"
#include "zap/status.h"

ZAP_BEGIN_DECLS
/* Seconds on a monotonic clock (CLOCK_MONOTONIC), for deadlines. Never fails;
 * thread-safe. */
ZAP_API double zap_clock_now(void);

/* Reads ZAP_TIMEOUT now, for a creator to keep: INFINITY (no deadline) when
 * it is unset or "none", else its value (docs/config.md gives the accepted
 * form and range). Returns ZAP_OK and *seconds_p; ZAP_ERR_INVALID_PARAM for a
 * NULL seconds_p or a malformed or out-of-range value (logged with the value
 * and the accepted form; *seconds_p is then not written). Thread-safe; never
 * blocks. */
ZAP_API zap_status_t zap_timeout_from_env(double *seconds_p);

/* ZAP_TIMEOUT as it is now, in seconds, for code that holds no transport or
 * communicator (whose own timeout, zap_transport_timeout, is the one their
 * waits use): INFINITY when unset, "none" or malformed (a malformed value is
 * logged by zap_timeout_from_env where an object is created). Reads the
 * environment at each call: not for a hot path. Thread-safe. */
ZAP_API double zap_timeout_seconds(void);
ZAP_END_DECLS
#endif
