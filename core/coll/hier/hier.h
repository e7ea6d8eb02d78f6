/* The hosts' hierarchy of a communicator whose ranks span several hosts
 * (docs/collectives.md, "Across hosts"): its topology (topo.h), and the
 * communicators the hierarchical algorithms run their stages on, made from
 * the parent's ranks with zap's own ids and no UCX transport of their own:
 *
 *   node     this host's ranks, in the parent's rank order (NULL where a
 *            host has one rank). One host: the shared segment and the
 *            single-copy allreduce serve it where they are allowed.
 *   leaders  local rank s of every host, for this rank's s when every host
 *            has more than s ranks (s below `slices`, the smallest host's
 *            rank count), else NULL. Local rank 0 is the host's leader; the
 *            multi-leader allreduce gives slice s of a large vector to the
 *            leaders' communicator of local rank s.
 *
 * Every rank finds the same topology from the transport's host identities,
 * without a message, at the first collective that asks (creation costs
 * nothing more); the communicators are made at the first call that needs
 * them. Their ids were agreed with the parent's: zap_comm_create and
 * zap_comm_split reserve two after the parent's own, a group communicator
 * agrees on two in its setup (comm_setup.c). The node's communicators of
 * different hosts share an id, as do the leaders' of different local ranks:
 * they have no member in common. */
#ifndef ZAP_COLL_HIER_HIER_H
#define ZAP_COLL_HIER_HIER_H
#include <stdbool.h>
#include "coll/comm_impl.h"
#include "coll/hier/topo.h"

/* Operations that post on the hierarchy's communicators take turns, in the
 * order they were posted on the parent (which every rank shares): the node's
 * and the leaders' communicators then see every rank post the same calls in
 * the same order, however the ranks' operations progress. At most this many
 * such operations may wait for their turn at once (a later one waits until
 * an earlier one is done). */
#define ZAP_COLL_HIER_TURNS 1024

typedef struct zap_coll_hier {
    zap_coll_topo_t *topo;
    int host, local, nlocal; /* this rank's host, its index there, its host's rank count */
    int leader;              /* this host's local rank 0, as a rank of the parent */
    int slices;              /* leaders' communicators: one per local rank below this */
    bool children;           /* node and leaders made (or failed: children_status) */
    zap_status_t children_status;
    zap_comm_t *node;
    zap_comm_t *leaders;
    uint64_t tickets, serving;           /* turns taken, and the one whose turn it is */
    bool done[ZAP_COLL_HIER_TURNS];      /* turns given back ahead of their time (freed early) */
    int lost;                            /* the transport rank a failed stage blamed as dead, -1: none yet */
} zap_coll_hier_t;

/* Whether comm's collectives go through the hosts' hierarchy: the setting
 * allows it and the ranks span several hosts, some with more than one rank.
 * Decided once (the topology is built then and kept in comm->hier); the same
 * on every rank. */
bool zap_coll_hier_layered(zap_comm_t *comm);

/* The number of distinct host identities among comm's ranks (for
 * zap_comm_query; 1 when they cannot be read). */
int zap_coll_hier_count_hosts(const zap_comm_t *comm);

/* Makes comm's node and leaders' communicators (once; later calls return
 * the first outcome). Local: sends nothing. comm must be layered.
 * ZAP_ERR_NO_MEMORY, or ZAP_ERR_INVALID_PARAM when comm has no ids agreed for
 * them (not expected: every layered communicator gets them). */
zap_status_t zap_coll_hier_children(zap_comm_t *comm);

/* An operation's turn on the hierarchy's communicators: taken when it is
 * set up (in post order), its turn when zap_coll_hier_turn says so, given
 * back when it is done with them or released (zap_coll_hier_done, once).
 * ZAP_ERR_NO_RESOURCE when ZAP_COLL_HIER_TURNS are waiting already. */
zap_status_t zap_coll_hier_ticket(zap_comm_t *comm, uint64_t *ticket_p);
static inline bool zap_coll_hier_turn(const zap_comm_t *comm, uint64_t ticket) { return comm->hier->serving == ticket; }
void zap_coll_hier_done(zap_comm_t *comm, uint64_t ticket);

/* Frees a stage's request (on the node's or the leaders' communicator)
 * that its operation no longer waits for: one that failed or was freed
 * early. A pending one is cancelled on this rank without the wait that
 * freeing a pending shared-memory call does (its peers may be gone); the
 * stage's communicator is then unusable, as is its parent's after a failed
 * operation. Its other members learn why: where a stage of comm failed for
 * a dead peer (zap_coll_hier_stage_test), that peer, named, so that a rank
 * whose own stages saw nothing of it (a non-leader, say) still names it;
 * or, where comm's operation failed by another rank's revocation for a dead
 * peer, that peer; else that it was cancelled. NULL is accepted. */
void zap_coll_hier_abandon(zap_comm_t *comm, zap_request_t *req);

/* A stage failed with st. When a peer failed, the stage may have seen a
 * survivor that already left after its own error (its leader, say, gone
 * from the node's shared memory) rather than the rank that failed first;
 * the transport's failure notices name that one (core/transport/ucp.c). So
 * the transport is progressed for up to 0.1 s first, long enough for it to
 * look for a notice and log the rank that failed first. Returns st. */
zap_status_t zap_coll_hier_stage_failed(zap_comm_t *comm, zap_status_t st);

/* Tests a stage's request *req (NULL: none, ZAP_OK) of the operation op:
 * ZAP_INPROGRESS while pending; once done frees it, sets *req to NULL and
 * returns its status through zap_coll_hier_stage_failed. A stage that failed
 * for a dead peer makes that peer op's culprit, so that the revocation op's
 * failure sends names it on every rank. */
zap_status_t zap_coll_hier_stage_test(zap_coll_op_t *op, zap_request_t **req);

/* Gives back an operation's turn if it still holds it (*held), once. */
static inline void zap_coll_hier_give_back(zap_comm_t *comm, uint64_t ticket, bool *held)
{
    if (*held) {
        zap_coll_hier_done(comm, ticket);
        *held = false;
    }
}

/* Destroys what zap_coll_hier_layered and zap_coll_hier_children made. */
void zap_coll_hier_free(zap_comm_t *comm);

/* The hierarchical forms of the collectives without a header of their own
 * (scatter/scatter_hier.c, allgather/allgather_hier.c). */
zap_status_t zap_scatterv_hier_init(zap_coll_op_t *op);
zap_status_t zap_allgatherv_hier_init(zap_coll_op_t *op);

/* comm.c: a communicator over ranks (of parent) with the full context ctx
 * and parent's settings, without a hierarchy of its own; local, as a group
 * communicator. */
zap_status_t zap_coll_comm_child(zap_comm_t *parent, const int *ranks, int n, uint32_t ctx, zap_comm_t **comm_p);
#endif
