/* Blocking calls, and the fast form of small ones (fast.c).
 *
 * A small blocking call on a communicator whose ranks share a host, with
 * nothing else of the communicator in flight, runs its shared-memory
 * exchange itself instead of through an operation: it writes its slot,
 * reads the slots its part needs if they are already there (or come within
 * a few hundred polls), and returns. What it writes is what the operation
 * would write (the words from the same candidates, the same chain and
 * payload: agree/agree.h, "the fast form"), so each rank chooses for itself
 * and ranks that differ still meet in one exchange. Anything else (a slot
 * late, different words, a bad mark) hands the call, slot already written,
 * to an operation, which waits, names and reports as every call does
 * (docs/collectives.md, "The fast form"). */
#ifndef ZAP_COLL_ENGINE_FAST_H
#define ZAP_COLL_ENGINE_FAST_H
#include "coll/engine/select.h"

/* Runs the call of desc with args a (local: this rank's own argument error,
 * as for zap_coll_post) to completion and returns its status: the fast form
 * where it applies, else an operation posted and waited for. Blocks;
 * ZAP_ERR_NO_MEMORY when no operation can be taken. */
zap_status_t zap_coll_call(zap_comm_t *comm, const zap_coll_desc_t *desc, const zap_coll_args_t *a,
                           zap_status_t local);
/* The non-blocking form: the fast form where its slots are already there
 * (no polling), *req_p then being comm's shared completed request;
 * otherwise zap_coll_post's operation. Returns as zap_coll_post does. */
zap_status_t zap_coll_ipost(zap_comm_t *comm, const zap_coll_desc_t *desc, const zap_coll_args_t *a,
                            zap_status_t local, zap_request_t **req_p);
/* The ops of that shared request (test and wait: its status; free: nothing). */
extern const zap_transport_ops_t zap_coll_done_ops;
#endif
