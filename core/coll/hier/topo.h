/* Which ranks of a communicator share a host, from the transport's host
 * identities (zap_transport_host): the hosts in the order of their lowest
 * rank, each host's ranks in rank order, every rank's host and its index
 * there (its local rank). Every rank computes the same topology from the
 * same identities, without a message: the transport agreed on them at its
 * creation. The hierarchical algorithms (coll/hier/hier.h) read it. */
#ifndef ZAP_COLL_HIER_TOPO_H
#define ZAP_COLL_HIER_TOPO_H
#include <stdbool.h>
#include <stdint.h>
#include "zap/status.h"

typedef struct zap_coll_topo {
    int size;        /* ranks */
    int nhosts;      /* hosts (1: all on one host) */
    int *host;       /* [size]: rank -> host index, hosts numbered by their lowest rank */
    int *local;      /* [size]: rank -> index among its host's ranks (0: the host's leader) */
    int *host_size;  /* [nhosts]: ranks on each host */
    int *host_first; /* [nhosts + 1]: where each host's ranks start in members */
    int *members;    /* [size]: ranks grouped by host, in rank order within a host */
    int min_host_size, max_host_size;
} zap_coll_topo_t;

/* Builds the topology of size ranks whose host identities are ids[r].
 * Returns ZAP_OK and *topo_p (free with zap_coll_topo_free);
 * ZAP_ERR_INVALID_PARAM for size < 1; ZAP_ERR_NO_MEMORY. O(size log size). */
zap_status_t zap_coll_topo_build(const uint64_t *ids, int size, zap_coll_topo_t **topo_p);
void zap_coll_topo_free(zap_coll_topo_t *topo);

/* The rank of host h's local rank l, or -1 when the host has fewer ranks. */
static inline int zap_coll_topo_rank(const zap_coll_topo_t *topo, int h, int l)
{
    return l < topo->host_size[h] ? topo->members[topo->host_first[h] + l] : -1;
}

/* Whether a hierarchy can help: several hosts, and some host with several
 * ranks (one rank per host is already flat). */
static inline bool zap_coll_topo_layered(const zap_coll_topo_t *topo)
{
    return topo->nhosts > 1 && topo->max_host_size > 1;
}
#endif
