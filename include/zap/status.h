/* One status type for every zap call. ZAP_OK is zero, ZAP_INPROGRESS positive,
 * errors negative. Values are part of the ABI and are never renumbered. */
#ifndef ZAP_STATUS_H
#define ZAP_STATUS_H
#include "zap/common.h"

typedef enum zap_status {
    ZAP_OK = 0,
    ZAP_INPROGRESS = 1,            /* a non-blocking operation has not completed yet */
    ZAP_ERR_INVALID_PARAM = -1,    /* an argument or setting is wrong; nothing changed */
    ZAP_ERR_NO_MEMORY = -2,        /* the system or the pool budget is out of memory */
    ZAP_ERR_NO_RESOURCE = -3,      /* a temporary shortage; retrying may succeed */
    ZAP_ERR_BUSY = -4,             /* the object is in use (e.g. pool with buffers out) */
    ZAP_ERR_UNSUPPORTED = -5,      /* not built in, or a combination zap does not do */
    ZAP_ERR_NOT_FOUND = -6,        /* no such rank, pool, device or file */
    ZAP_ERR_TIMED_OUT = -7,        /* a wait passed its deadline (ZAP_TIMEOUT) */
    ZAP_ERR_PEER_FAILED = -8,      /* a peer rank died or its connection broke */
    ZAP_ERR_TRANSPORT = -9,        /* the transport (UCX, MPI) reported an error */
    ZAP_ERR_CUDA = -10,            /* a CUDA call failed */
    ZAP_ERR_VERSION = -11,         /* an incompatible version (UCX, file format) */
    ZAP_ERR_TRUNCATED = -12,       /* a message is larger than the receive buffer */
    ZAP_ERR_CLOSED = -13,          /* the object was closed or destroyed */
    ZAP_ERR_MISMATCH = -14,        /* ranks disagree (collective arguments, verdicts) */
    ZAP_ERR_CORRUPT = -15,         /* data failed a check (CRC, malformed file or message) */
    ZAP_ERR_CANCELED = -16,        /* the operation was cancelled before it completed */
    ZAP_ERR_REVOKED = -17          /* another rank failed this collective (or an earlier one on its
                                      communicator, or its creation); the communicator is unusable;
                                      the log names the rank and why (zap/coll.h, docs/faults.md) */
} zap_status_t;

ZAP_BEGIN_DECLS
/* A constant, human-readable description of status. Unknown values give the
 * fixed string "unknown status". Never allocates; thread-safe. */
ZAP_API const char *zap_status_string(zap_status_t status);
ZAP_END_DECLS
#endif
