/* The clock every deadline is measured on, and the process-wide timeout
 * setting (ZAP_TIMEOUT). Objects that wait (transports, communicators, the
 * verification job) read the setting once, when they are created, and keep
 * the value: changing ZAP_TIMEOUT later does not change their deadlines. */
#ifndef ZAP_CLOCK_H
#define ZAP_CLOCK_H
#include "zap/common.h"
#include "zap/status.h"

/* The timeout, in seconds, when ZAP_TIMEOUT is not set. */
#define ZAP_TIMEOUT_DEFAULT_S 30.0

ZAP_BEGIN_DECLS
/* Seconds on a monotonic clock (CLOCK_MONOTONIC), for deadlines. Never fails;
 * thread-safe. */
ZAP_API double zap_clock_now(void);

/* Reads ZAP_TIMEOUT now, for a creator to keep: ZAP_TIMEOUT_DEFAULT_S when it
 * is unset, else its value (docs/config.md gives the accepted form and range).
 * Returns ZAP_OK and *seconds_p; ZAP_ERR_INVALID_PARAM for a NULL seconds_p or
 * a malformed or out-of-range value (logged with the value and the accepted
 * form; *seconds_p is then not written). Thread-safe; never blocks. */
ZAP_API zap_status_t zap_timeout_from_env(double *seconds_p);

/* ZAP_TIMEOUT as it is now, in seconds, for code that holds no transport or
 * communicator (whose own timeout, zap_transport_timeout, is the one their
 * waits use): ZAP_TIMEOUT_DEFAULT_S when unset or malformed (a malformed value
 * is logged by zap_timeout_from_env where an object is created). Reads the
 * environment at each call: not for a hot path. Thread-safe. */
ZAP_API double zap_timeout_seconds(void);
ZAP_END_DECLS
#endif
