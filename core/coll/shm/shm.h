/* A communicator's shared-memory segment: when every rank of a communicator
 * is a process on one host, small allreduces (and the argument agreement of
 * every allreduce) exchange through it instead of through the transport
 * (allreduce_shm.c has the protocol).
 *
 * Layout: a page holding a magic, a random token, each rank's pid and the
 * address it mapped the segment at (the single-copy probe), then two banks
 * of one slot per rank. Exchange k (1, 2, ... on the communicator)
 * uses bank k & 1. A slot is one cache line of sequence number and argument
 * words, then the payload (up to ZAP_COLL_SHM_PAYLOAD bytes): an 8-byte
 * vector and its header are one cache line. The writer stores the words and
 * the payload, then the sequence number with release order; readers wait
 * for it with acquire order.
 *
 * Why two banks are enough: a rank writes exchange k only after it has read
 * every slot of exchange k - 1, which every rank wrote only after reading
 * all of k - 2, the last exchange in the same bank. No rank therefore
 * overwrites a slot another rank still has to read.
 *
 * Then one line of flags per rank (input published, block reduced, done) and
 * the large area (ZAP_COLL_SHM_LARGE_BYTES, default 16 MiB, less on many
 * ranks): one input area of big_bytes per rank and one result area of
 * big_bytes (allreduce_shm_large.c and bcast_shm.c have those protocols;
 * allreduce_cma.c uses the flags alone).
 * The area is sized at creation and reserved as far as the large calls
 * need, growing (zap_coll_shm_reserve_large). */
#ifndef ZAP_COLL_SHM_H
#define ZAP_COLL_SHM_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "zap/coll.h"
#include "coll/coll_impl.h"

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

/* A rank's flags of the large protocols, each on its own cache line. Values
 * are zap_coll_shm_tag()s, increasing, so waits ask for at least one. */
typedef struct zap_coll_shm_ctl {
    _Atomic uint64_t in_seq;  /* this rank's input (a broadcast root's data) of that chunk is in place */
    uint64_t src_addr, dst_addr; /* the single-copy allreduce: this rank's buffers, in its own address space */
    unsigned char pad0[40];
    _Atomic uint64_t red_seq; /* this rank's block of that chunk's result is in place */
    unsigned char pad1[56];
    _Atomic uint64_t fin_seq; /* this rank is done with that large exchange (its result copied out) */
    unsigned char pad2[56];
} zap_coll_shm_ctl_t;

/* The large forms move data in chunks of this many bytes, so that what all
 * ranks write and read at once stays in cache (ZAP_COLL_PIPELINE_BYTES, when
 * set, replaces it: zap_coll_shm_large_chunk). */
#define ZAP_COLL_SHM_CHUNK_BYTES ((size_t)128 << 10)

/* The flag value for chunk j of large exchange k; zap_coll_shm_fin(k) is
 * above every chunk of k and below every chunk of k + 1. */
static inline uint64_t zap_coll_shm_tag(uint64_t k, size_t j) { return k << 24 | (uint64_t)(j + 1); }
static inline uint64_t zap_coll_shm_fin(uint64_t k) { return k << 24 | 0xffffff; }

typedef struct zap_coll_shm {
    void *base;
    size_t bytes;
    int rank, size;
    const volatile pid_t *pids; /* in the segment, by communicator rank */
    uint64_t next;              /* the last exchange number handed out */
    uint64_t done;              /* the last exchange this rank has read completely */
    bool abandoned;             /* an exchange was given up half way: the rest cannot run */
    /* The large area (big_bytes 0: none). */
    size_t big_bytes;           /* the largest vector it carries, a multiple of 4 KiB */
    zap_coll_shm_ctl_t *ctl;    /* by communicator rank */
    unsigned char *big_in;      /* rank q's input at big_in + q * big_bytes */
    unsigned char *big_out;     /* the result */
    uint64_t big_next, big_done; /* as next and done, for large exchanges */
    bool big_abandoned;
    _Atomic uint64_t *big_state; /* in the segment: bytes of each slot reserved, | ZAP_COLL_SHM_LARGE_FULL (rank 0 writes) */
    uint64_t big_known;          /* this rank's last copy of it */
    zap_coll_shm_wait_t big_wait; /* a wait for rank 0's state */
    bool big_waiting;
    int big_fd;                  /* rank 0: the segment's file, to reserve the area; else -1 */
    /* Single-copy reads of peers' memory (process_vm_readv), probed and
     * agreed at attach (allreduce_cma.c); needs the flags, so the large
     * area's size must not be 0. */
    bool cma;
    unsigned char *cma_scratch; /* this rank's: p chunks of operands */
    size_t cma_scratch_bytes;
    size_t *cma_pulled;         /* by rank: elements of its block this rank holds (one call at a time) */
} zap_coll_shm_t;

/* The large area's state: the bytes of every slot (the p inputs and the
 * result) reserved so far, growing with the calls, and this bit once
 * /dev/shm had no room for more: from then on it stays as it is, larger
 * calls go over the transport, and every rank decides alike. */
#define ZAP_COLL_SHM_LARGE_FULL (UINT64_C(1) << 63)

/* Elements [lo, hi) of block q of n split over p as evenly as it goes (the
 * first n % p blocks one longer): the block rank q reduces in the large
 * forms. */
static inline void zap_coll_shm_block(size_t n, int p, int q, size_t *lo, size_t *hi)
{
    size_t base = n / (size_t)p, extra = n % (size_t)p;
    *lo = base * (size_t)q + ((size_t)q < extra ? (size_t)q : extra);
    *hi = *lo + base + ((size_t)q < extra ? 1 : 0);
}

/* One bit per rank of s. */
static inline uint64_t zap_coll_shm_all_ranks(const zap_coll_shm_t *s)
{
    return s->size == 64 ? ~UINT64_C(0) : (UINT64_C(1) << s->size) - 1;
}

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
 * it off for all. want_cma likewise for single-copy reads (cma is set where
 * every rank wants them and could read every other rank's segment magic, at
 * the address that rank mapped it, with process_vm_readv). large_bytes is the
 * wish for the large area (rank 0's, capped, is what all get; the calls
 * reserve it). On ZAP_OK *shm_p is the segment or NULL (not shared), alike on
 * every rank; otherwise the collective error (the communicator cannot be
 * used). */
zap_status_t zap_coll_shm_attach(struct zap_comm *comm, bool want, bool want_cma, uint64_t large_bytes,
                                 zap_coll_shm_t **shm_p);
/* Rank 0, in a large call of bytes more than the area holds so far (and
 * never after a failure): reserves every slot up to at least bytes, twice
 * what it had or the whole area if less (posix_fallocate), and publishes the
 * new state for the other ranks; returns it. */
uint64_t zap_coll_shm_reserve_large(zap_coll_shm_t *s, size_t bytes);
/* Unmaps and frees; NULL is ignored. */
void zap_coll_shm_detach(zap_coll_shm_t *shm);
/* Whether comm rank q's process is gone (or a zombie): a dead rank is named
 * at once instead of after ZAP_TIMEOUT. Costs a system call or two. */
bool zap_coll_shm_peer_dead(const zap_coll_shm_t *shm, int q);
#endif
