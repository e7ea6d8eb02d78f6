/* The verification job's test hooks (internal to zap): the tests run
 * zap_verify_job_hooked to make one job slow, corrupt or finely chunked on
 * purpose; zap_verify_job is the same call without hooks. */
#ifndef ZAP_VERIFY_JOB_H
#define ZAP_VERIFY_JOB_H
#include <stdint.h>
#include "zap/verify.h"

/* All-zero: no hook. Every rank of a job must be given the same hooks. */
typedef struct zap_verify_hooks {
    /* Nonzero: rank flip_rank corrupts its combined verdict set (one bit
     * flipped before hashing), to show that disagreement fails every rank. */
    int flip;
    int flip_rank;
    /* slow_seconds > 0: rank slow_rank sleeps that long before each verifier
     * call (its shard, each segment, each segment the root takes), to show
     * the balancing of a scatter. */
    int slow_rank;
    double slow_seconds;
    /* Nonzero: the segment stream's chunks are at most this many bytes (and
     * whole records) instead of the staging ring's slot. */
    uint64_t chunk_bytes;
    /* stall_seconds > 0: rank stall_rank's stream receiver waits that long
     * before asking the root for its first segment, to show that a root
     * giving up on a silent rank leaves no rank waiting. */
    int stall_rank;
    double stall_seconds;
} zap_verify_hooks_t;

/* zap_verify_job (zap/verify.h) with hooks (borrowed for the call; NULL:
 * none). */
zap_status_t zap_verify_job_hooked(zap_comm_t *comm, const void *batch, size_t len, const zap_verify_params_t *params,
                                   const zap_verify_hooks_t *hooks, zap_verify_result_t *result_p);
#endif
