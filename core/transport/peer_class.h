/* Host identities and the classes of peers (same host, other host) that the
 * transports count sent bytes by (zap_transport_traffic in zap/transport.h).
 * A backend learns every rank's host identity at create, gives each peer its
 * class once (zap_peer_class_of) and, per send, adds to that class's counter
 * (zap_peer_count): nothing else on the message path. */
#ifndef ZAP_TRANSPORT_PEER_CLASS_H
#define ZAP_TRANSPORT_PEER_CLASS_H
#include <stddef.h>
#include <stdint.h>
#include "zap/transport.h"

/* This process's host identity: FNV-1a over the host name (gethostname, so a
 * UTS namespace's own name), a newline and the kernel's boot id. Computed
 * once; never 0. */
uint64_t zap_host_id(void);

/* The class of peer seen from rank self, given every rank's host identity. */
static inline uint8_t zap_peer_class_of(const uint64_t *hosts, int self, int peer)
{
    if (peer == self)
        return ZAP_PEER_SELF;
    return hosts[peer] == hosts[self] ? ZAP_PEER_SAME_HOST : ZAP_PEER_OTHER_HOST;
}

/* One send of len bytes to a peer of class cls; the caller serialises (the
 * backend's lock). */
static inline void zap_peer_count(zap_transport_traffic_t *c, uint8_t cls, size_t len)
{
    c->bytes[cls] += len;
    c->messages[cls]++;
}
#endif
