/* The in-process transport: N ranks as threads in one process. It is the
 * reference behaviour of the contract in zap/transport.h and lets everything
 * above the transport be tested fast, without MPI. */
#ifndef ZAP_INPROC_H
#define ZAP_INPROC_H
#include "zap/transport.h"

typedef struct zap_inproc_world zap_inproc_world_t;

ZAP_BEGIN_DECLS
/* Creates a world of nranks ranks (1..4096) sharing pool (borrowed; it must
 * outlive the world) or, when pool is NULL, a pool the world creates from the
 * environment. Settings (ZAP_TIMEOUT, ZAP_INPROC_EAGER_BYTES) are read here,
 * once. Returns ZAP_ERR_INVALID_PARAM for a bad nranks or a malformed setting,
 * pool errors otherwise. Free with zap_inproc_world_destroy. */
ZAP_API zap_status_t zap_inproc_world_create(int nranks, zap_pool_t *pool, zap_inproc_world_t **world_p);

/* zap_inproc_world_create with options: params (borrowed for the call; NULL or
 * all-zero for the defaults) may set the timeout instead of ZAP_TIMEOUT. Also
 * ZAP_ERR_INVALID_PARAM for a timeout_s out of range. */
ZAP_API zap_status_t zap_inproc_world_create_ex(int nranks, zap_pool_t *pool, const zap_transport_params_t *params,
                                                zap_inproc_world_t **world_p);

/* The transport of one rank, created on first call and owned by the world
 * (zap_transport_close on it is allowed and makes that rank closed; peers
 * posting to it then get ZAP_ERR_PEER_FAILED). ZAP_ERR_NOT_FOUND for a bad
 * rank. Thread-safe. */
ZAP_API zap_status_t zap_inproc_transport(zap_inproc_world_t *world, int rank, zap_transport_t **t_p);

/* Places the world's ranks on emulated hosts: hosts[r] (nranks values,
 * copied) becomes rank r's host identity (zap_transport_host), and sends
 * between ranks of different identities count as other-host traffic
 * (zap_transport_traffic), so host-aware code can be tested in one process.
 * NULL puts every rank back on this process's host. Call it before any rank's
 * transport is used (communicators read the identities when they are
 * created). Returns ZAP_ERR_INVALID_PARAM for a NULL world, ZAP_ERR_NO_MEMORY.
 * Not thread-safe against use of the world's transports. */
ZAP_API zap_status_t zap_inproc_world_set_hosts(zap_inproc_world_t *world, const uint64_t *hosts);

/* Destroys the world and every rank's transport. Pending requests complete
 * with ZAP_ERR_CANCELED. NULL is accepted. */
ZAP_API void zap_inproc_world_destroy(zap_inproc_world_t *world);
ZAP_END_DECLS
#endif
