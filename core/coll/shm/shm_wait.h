/* A wait for a flag in every rank's part of the shared segment: the ranks
 * seen so far and the liveness clock (the poll itself: shm.h,
 * zap_coll_shm_gather). Its own header because the agreement's state holds
 * one (agree/agree.h) without needing the rest of the segment's layout. */
#ifndef ZAP_COLL_SHM_WAIT_H
#define ZAP_COLL_SHM_WAIT_H
#include <stdint.h>

typedef struct zap_coll_shm_wait {
    uint64_t seen; /* bit q: rank q's flag holds the value waited for */
    unsigned polls;
    double check_at;
} zap_coll_shm_wait_t;
#endif
