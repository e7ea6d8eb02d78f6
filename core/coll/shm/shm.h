/* A communicator's shared-memory segment: when every rank of a communicator
 * is a process on one host, small allreduces (and the argument agreement of
 * every allreduce) exchange through it instead of through the transport
 * (allreduce_shm.c has the protocol).
 *
 * Layout: a page holding a magic, a random token and each rank's pid, then
 * two banks of one slot per rank. Exchange k (1, 2, ... on the communicator)
 * uses bank k & 1. A slot is one cache line of sequence number and argument
 * words, then the payload (up to ZAP_COLL_SHM_PAYLOAD bytes): an 8-byte
 * vector and its header are one cache line. The writer stores the words and
 * the payload, then the sequence number with release order; readers wait
 * for it with acquire order.
 *
 * Why two banks are enough: a rank writes exchange k only after it has read
 * every slot of exchange k - 1, which every rank wrote only after reading
 * all of k - 2, the last exchange in the same bank. No rank therefore
 * overwrites a slot another rank still has to read. */
#ifndef ZAP_COLL_SHM_H
#define ZAP_COLL_SHM_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "zap/coll.h"

#define ZAP_COLL_SHM_MAX_RANKS 64
#define ZAP_COLL_SHM_SLOT_BYTES 4096
#define ZAP_COLL_SHM_WORDS 4 /* the argument header's words, as this rank's own (min = max) */
/* The payload a slot carries: what the exchange's inline area (header and
 * payload, ZAP_COLL_RD_INLINE_BYTES) can hold as the result. */
#define ZAP_COLL_SHM_PAYLOAD ZAP_COLL_SHM_MAX_BYTES

typedef struct zap_coll_shm_slot {
    _Atomic uint64_t seq; /* the exchange whose words and payload are in place */
    uint64_t words[ZAP_COLL_SHM_WORDS];
    unsigned char payload[]; /* from byte 40; fits ZAP_COLL_SHM_SLOT_BYTES */
} zap_coll_shm_slot_t;

typedef struct zap_coll_shm {
    void *base;
    size_t bytes;
    int rank, size;
    const volatile pid_t *pids; /* in the segment, by communicator rank */
    uint64_t next;              /* the last exchange number handed out */
    uint64_t done;              /* the last exchange this rank has read completely */
    bool abandoned;             /* an exchange was given up half way: the rest cannot run */
} zap_coll_shm_t;

static inline zap_coll_shm_slot_t *zap_coll_shm_slot(const zap_coll_shm_t *s, uint64_t k, int rank)
{
    size_t i = (size_t)(k & 1) * (size_t)s->size + (size_t)rank;
    return (zap_coll_shm_slot_t *)((char *)s->base + ZAP_COLL_SHM_SLOT_BYTES * (1 + i));
}

struct zap_comm;
/* Collective over comm (every rank calls it right after the communicator is
 * made, with the same pattern of messages whatever each decides): rank 0 makes
 * a segment, the others map it by name, and the segment is kept only if every
 * rank mapped it and sees every other rank's process. want is this rank's
 * wish (setting, transport); any rank that does not want it, or cannot, turns
 * it off for all. On ZAP_OK *shm_p is the segment or NULL (not shared);
 * otherwise the collective error (the communicator cannot be used). */
zap_status_t zap_coll_shm_attach(struct zap_comm *comm, bool want, zap_coll_shm_t **shm_p);
/* Unmaps and frees; NULL is ignored. */
void zap_coll_shm_detach(zap_coll_shm_t *shm);
/* Whether comm rank q's process is gone (or a zombie): a dead rank is named
 * at once instead of after ZAP_TIMEOUT. Costs a system call or two. */
bool zap_coll_shm_peer_dead(const zap_coll_shm_t *shm, int q);
#endif
