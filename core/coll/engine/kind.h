/* The small vocabulary every part of core/coll shares: what an operation is
 * (its kind) and how its arguments are agreed (its form). */
#ifndef ZAP_COLL_ENGINE_KIND_H
#define ZAP_COLL_ENGINE_KIND_H

/* What an operation is. The value travels in the argument header's kind
 * lane, so it is part of the wire: append, never renumber. */
typedef enum zap_coll_kind {
    ZAP_COLL_ALLREDUCE = 1,
    ZAP_COLL_BCAST = 2,
    ZAP_COLL_SCATTERV = 3,
    ZAP_COLL_ALLGATHERV = 4,
    ZAP_COLL_COMM_CREATE = 5, /* zap_comm_create's id exchange */
    ZAP_COLL_BARRIER = 6,
    ZAP_COLL_SETUP = 7, /* a communicator's setup: oversubscription, shared segment (comm_setup.c) */
    ZAP_COLL_REDUCE = 8,
    ZAP_COLL_REDUCE_SCATTER = 9, /* and reduce_scatter_block (the header's extra word tells them apart) */
    ZAP_COLL_GATHER = 10,        /* and gatherv */
    ZAP_COLL_ALLTOALL = 11,      /* and alltoallv */
    ZAP_COLL_SCAN = 12,
    ZAP_COLL_EXSCAN = 13,
    ZAP_COLL_KIND_MAX = 14
} zap_coll_kind_t;

/* How a call's arguments are agreed (agree/): by recursive doubling, flat
 * (every rank with every other in one round), through the communicator's
 * shared segment, or through the hosts' hierarchy. Chosen from the communicator and its settings only, never
 * from the arguments: ranks that disagree must still exchange the same
 * messages, or some would wait for messages that never come. */
typedef enum zap_coll_form {
    ZAP_COLL_FORM_RD,
    ZAP_COLL_FORM_FLAT,
    ZAP_COLL_FORM_SHM,
    ZAP_COLL_FORM_HIER /* through the hosts' hierarchy (agree_hier.c): where a communicator spans hosts */
} zap_coll_form_t;
#endif
