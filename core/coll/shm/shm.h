/* A communicator's shared-memory segment: when every rank of a communicator
 * is a process on one host, small allreduces and broadcasts (and the argument
 * agreement of every one) exchange through it instead of through the
 * transport (agree/agree_shm.c has the protocol), and larger ones move through
 * its large area or read each other's buffers (the large forms). Made by a
 * communicator's setup (comm_setup.c) from the pieces below
 * (shm_segment.c); the waits and turns every form shares are in shm_sync.c.
 *
 * Layout: a page holding a magic, a random token, each rank's pid and the
 * address it mapped the segment at (the single-copy probe), then
 * zap_coll_shm_banks(p) banks of one slot per rank, then one cache line per
 * rank holding the last exchange it has read through (its done line).
 * Exchange k (1, 2, ... on the communicator) uses bank k % banks. A slot is
 * the sequence number, the argument words and the chain (agree_shm.c), then
 * the payload (up to ZAP_COLL_SHM_PAYLOAD bytes): an 8-byte vector and its
 * header are one cache line. The writer stores the words and the payload,
 * then the sequence number with release order; readers wait for it with
 * acquire order.
 *
 * Every rank writes its slot in every exchange, but reads only the slots its
 * part needs: all of them for an allreduce, the root's for a small broadcast
 * or scatter, none on a non-root of a small gather or reduce (agree_shm.c,
 * "one-way"). So a rank may run up to BANKS exchanges ahead of a reader, and
 * before writing exchange k it waits until every rank's done line says it
 * has read through k - BANKS, the last exchange in the same bank: no rank
 * overwrites a slot another rank still has to read. A rank publishes its
 * done line once it has read what it needs of an exchange: at once where
 * the agreement copied it out, when the operation ends where its form reads
 * the slots itself (gather mode), and again when it writes its next slot.
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
#include "coll/comm_impl.h"
#include "coll/engine/op.h"
#include "coll/shm/shm_wait.h"

#define ZAP_COLL_SHM_MAX_RANKS 64
#define ZAP_COLL_SHM_SLOT_BYTES 4096
#define ZAP_COLL_SHM_WORDS 4 /* the argument header's words, as this rank's own (min = max) */
/* Banks of slots, a power of two: how far a writer may run ahead of its
 * readers. Deeper on few ranks, where it costs least and where a reader
 * descheduled on an oversubscribed node would stall a shallower pipeline:
 * 64 up to 4 ranks, 16 beyond, and 256 up to 4 ranks where the segment's
 * maker (rank 0) runs oversubscribed (4 MiB of slots at 4 ranks): there a
 * reader is descheduled for whole time slices. The maker writes the count
 * into the segment, so every rank uses the same one. */
static inline unsigned zap_coll_shm_banks(int p) { return p <= 4 ? 64u : 16u; }
#define ZAP_COLL_SHM_BANKS_OVERSUBSCRIBED 256u
static inline unsigned zap_coll_shm_banks_for(int p, bool oversubscribed)
{
    return oversubscribed && p <= 4 ? ZAP_COLL_SHM_BANKS_OVERSUBSCRIBED : zap_coll_shm_banks(p);
}
/* The payload a slot carries: what the exchange's inline area (header and
 * payload, ZAP_COLL_AGREE_INLINE_BYTES) can hold as the result. */
#define ZAP_COLL_SHM_PAYLOAD ZAP_COLL_SHM_MAX_BYTES

typedef struct zap_coll_shm_slot {
    _Atomic uint64_t seq; /* the exchange whose words and payload are in place */
    uint64_t words[ZAP_COLL_SHM_WORDS];
    uint64_t chain; /* the writer's chain before this exchange (agree_shm.c) */
    unsigned char payload[]; /* from byte 48; fits ZAP_COLL_SHM_SLOT_BYTES */
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
 * ranks write and read at once stays in cache (the pipeline setting, when
 * set, replaces it: zap_coll_shm_large_chunk). */
#define ZAP_COLL_SHM_CHUNK_BYTES ((size_t)128 << 10)
/* The chunk of the forms that wait for every rank at every chunk, where
 * some rank's node is oversubscribed (zap_coll_shm_sync_chunk). */
#define ZAP_COLL_SHM_OVERSUB_CHUNK_BYTES ((size_t)1 << 20)

/* The flag value for chunk j of large exchange k; zap_coll_shm_fin(k) is
 * above every chunk of k and below every chunk of k + 1. */
static inline uint64_t zap_coll_shm_tag(uint64_t k, size_t j) { return k << 24 | (uint64_t)(j + 1); }
static inline uint64_t zap_coll_shm_fin(uint64_t k) { return k << 24 | 0xffffff; }

typedef struct zap_coll_shm {
    void *base;
    size_t bytes;
    int rank, size;
    const volatile pid_t *pids; /* in the segment, by communicator rank */
    /* Revocation (engine/op.c): the lowest operation sequence any rank
     * revoked (0: none), and each rank's own (sequence, then status and
     * blamed transport rank), written before the word. */
    _Atomic uint64_t *revoked;
    _Atomic uint64_t *revoke_entry; /* 2 words per communicator rank */
    unsigned banks;             /* zap_coll_shm_banks_for(size, ...), as the segment's maker chose */
    uint64_t next;              /* the last exchange number handed out */
    uint64_t done;              /* the last exchange this rank has read completely */
    _Atomic uint64_t *done_line; /* rank q's published done at done_line + 8 q (one cache line each) */
    uint64_t safe;              /* every rank's done line was at least this when last read */
    uint64_t chain;             /* hash of the agreed arguments of exchanges 1 .. done (agree_shm.c) */
    uint64_t prepub;            /* an exchange the fast form wrote and handed to an operation (0: none) */
    bool abandoned;             /* an exchange was given up half way: the rest cannot run */
    /* The large area (big_bytes 0: none). */
    size_t big_bytes;           /* the largest vector it carries, a multiple of 4 KiB */
    zap_coll_shm_ctl_t *ctl;    /* by communicator rank */
    unsigned char *big_in;      /* rank q's input at big_in + q * big_bytes */
    unsigned char *big_out;     /* the result */
    uint64_t big_next, big_done; /* as next and done, for large exchanges */
    bool big_abandoned;
    /* The last large exchange that returned once this rank was done with it
     * (zap_coll_shm_end), not waiting for the others: the next exchange's
     * turn waits until every rank's fin_seq holds it (0: nothing owed). */
    uint64_t fin_owed;
    zap_coll_shm_wait_t owed_wait;
    _Atomic uint64_t *big_state; /* in the segment: bytes of each slot reserved, | ZAP_COLL_SHM_LARGE_FULL (rank 0 writes) */
    uint64_t big_known;          /* this rank's last copy of it */
    zap_coll_shm_wait_t big_wait; /* a wait for rank 0's state */
    bool big_waiting;
    int big_fd;                  /* rank 0: the segment's file, to reserve the area; else -1 */
    /* Single-copy reads of peers' memory (process_vm_readv), probed and
     * agreed at attach (allreduce_cma.c); needs the flags, so the large
     * area's size must not be 0. */
    bool cma;
    /* Some rank's probe found single-copy reads dear on this host
     * (zap_coll_shm_cma_fast; agreed at attach): the automatic choice keeps
     * allreduces in the shared area (round it beyond its size) and reads
     * peers' buffers only for the reduces and reduce-scatters it cannot carry. */
    bool cma_slow;
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

/* Rank q's done line (shm_segment.c lays them out a cache line apart). */
static inline _Atomic uint64_t *zap_coll_shm_done_line(const zap_coll_shm_t *s, int q) { return s->done_line + 8 * q; }

/* One bit per rank of s. */
static inline uint64_t zap_coll_shm_all_ranks(const zap_coll_shm_t *s)
{
    return s->size == 64 ? ~UINT64_C(0) : (UINT64_C(1) << s->size) - 1;
}

static inline zap_coll_shm_slot_t *zap_coll_shm_slot(const zap_coll_shm_t *s, uint64_t k, int rank)
{
    size_t i = (size_t)(k & (s->banks - 1)) * (size_t)s->size + (size_t)rank;
    return (zap_coll_shm_slot_t *)((char *)s->base + ZAP_COLL_SHM_SLOT_BYTES * (1 + i));
}

/* --- making one (shm_segment.c; comm_setup.c runs the exchanges) -------- */
/* What rank 0 tells the others: the name and the token it wrote. */
typedef struct zap_coll_shm_ref {
    char name[48]; /* "" when rank 0 has no segment */
    uint64_t token;
} zap_coll_shm_ref_t;

/* A segment mapped by this rank, not yet a communicator's. */
typedef struct zap_coll_shm_map {
    void *base; /* NULL: none */
    int fd;     /* rank 0: the segment's file, to reserve the large area; else -1 */
} zap_coll_shm_map_t;

/* Rank 0: a fresh segment for p ranks with banks banks of slots
 * (zap_coll_shm_banks_for, written into its head) and a large area sized for
 * large_bytes (capped by rank count), its slots and flags reserved, the area
 * not yet. On failure (logged at info: it only means no segment) m->base is
 * NULL and ref->name empty. */
void zap_coll_shm_make(int p, unsigned banks, uint64_t large_bytes, zap_coll_shm_ref_t *ref, zap_coll_shm_map_t *m);
/* Another rank: rank 0's segment if this rank sees it (same host) and it is
 * the one rank 0 made (magic, token, size, a bank count and file size that
 * fit p); m->base NULL otherwise. */
void zap_coll_shm_map(int p, const zap_coll_shm_ref_t *ref, zap_coll_shm_map_t *m);
/* Writes this rank's pid and mapping address into the segment. */
void zap_coll_shm_enter(const zap_coll_shm_map_t *m, int rank);
/* Rank 0, once every rank has mapped the segment or given up: the name goes,
 * so nothing is left in /dev/shm by a job that dies later. */
void zap_coll_shm_unlink(const zap_coll_shm_ref_t *ref);
/* Once every rank has entered: whether this rank sees every rank's process
 * (ok[0]) and, when want_cma, may read every other rank's memory (ok[1]; the
 * single-copy probe, which needs a large area). */
void zap_coll_shm_check(const zap_coll_shm_map_t *m, int rank, int p, bool want_cma, int32_t ok[2]);
/* Whether this host's single-copy reads move bytes at no more than a few
 * times a plain copy's time (shm_cma_probe.c): measured once per process,
 * at the first call, then remembered. Thread-safe. */
bool zap_coll_shm_cma_fast(void);
/* Makes the segment comm's (every rank agreed to keep it; cma: single-copy
 * reads agreed). ZAP_ERR_NO_MEMORY (logged): this rank cannot, the
 * communicator is unusable. */
zap_status_t zap_coll_shm_adopt(zap_coll_shm_map_t *m, int rank, int p, bool cma, zap_coll_shm_t **shm_p);
/* Unmaps a segment that was not adopted (NULL base ignored). */
void zap_coll_shm_unmap(zap_coll_shm_map_t *m);

/* Rank 0, in a large call of bytes more than the area holds so far (and
 * never after a failure): reserves every slot up to at least bytes, twice
 * what it had or the whole area if less (posix_fallocate), and publishes the
 * new state for the other ranks; returns it. */
uint64_t zap_coll_shm_reserve_large(zap_coll_shm_t *s, size_t bytes);
/* Unmaps and frees; NULL is ignored. */
void zap_coll_shm_detach(zap_coll_shm_t *shm);
/* Publishes this rank's revocation of the communicator from seq on (status,
 * blamed transport rank culprit) for every rank of the segment; the lowest
 * sequence wins. */
void zap_coll_shm_revoke(zap_coll_shm_t *s, uint64_t seq, zap_status_t status, int culprit);
/* The lowest revocation in the segment: its sequence (0: none), and its
 * status, blamed rank and the communicator rank that made it. */
uint64_t zap_coll_shm_revocation(const zap_coll_shm_t *s, zap_status_t *status_p, int *culprit_p, int *by_p);
/* Whether comm rank q's process is gone (or a zombie): a dead rank is named
 * at once instead of after the timeout. Costs a system call or two. */
bool zap_coll_shm_peer_dead(const zap_coll_shm_t *shm, int q);
/* The largest allreduce or broadcast s carries: a slot, or its large area. */
size_t zap_coll_shm_bytes(const zap_coll_shm_t *s);

/* --- waits and turns every form shares (shm_sync.c) ------------------------ */
/* One poll of a wait for seq (or, at_least, any larger value) in every
 * rank's flag (rank q's at first + q * stride bytes): ZAP_OK once all hold
 * it, ZAP_INPROGRESS, or ZAP_ERR_PEER_FAILED naming a missing rank whose
 * process is gone (looked for every 2 ms of waiting). Records w as op's
 * unfinished wait while it returns ZAP_INPROGRESS (zap_coll_shm_first_missing). */
zap_status_t zap_coll_shm_gather(zap_coll_op_t *op, const _Atomic uint64_t *first, size_t stride, uint64_t seq,
                                 bool at_least, zap_coll_shm_wait_t *w);
/* The first comm rank op still waits for in shared memory (a slot, a flag,
 * rank 0's reservation), or -1. */
int zap_coll_shm_first_missing(const zap_coll_op_t *op);
/* An operation released before its shared-memory exchanges completed (an
 * error or a timeout ended it, or it was freed and could not be drained):
 * the communicator's later exchanges fail with ZAP_ERR_CANCELED instead of
 * waiting on an order that can no longer hold. An operation whose exchange
 * in gather mode completed publishes this rank's done line (its form has
 * read the slots; other modes publish it as the exchange completes). */
void zap_coll_shm_settle(zap_coll_op_t *op);
/* What the large forms do first, once the arguments agreed: take op's large
 * exchange number (agreements complete in post order on every rank, and a
 * mismatched call takes none), then ZAP_OK once this rank's previous large
 * exchange is done and every rank is done with the last one that ended
 * without waiting for them (zap_coll_shm_end), ZAP_INPROGRESS before,
 * ZAP_ERR_CANCELED (logged) after an earlier one was abandoned; a rank that
 * died before it was done with that one fails this call, named. */
zap_status_t zap_coll_shm_turn(zap_coll_op_t *op);
/* Ends op's large exchange on this rank without waiting for the others to be
 * done with it: fin_seq published; the next exchange's turn waits for theirs
 * before anything is written. Only for forms whose peers read nothing but
 * the areas: a form that lets them read this rank's own buffers must wait
 * for every fin_seq before it returns, since the caller may then reuse them. */
void zap_coll_shm_end(zap_coll_op_t *op);
/* The same turn for a form that moves bytes per rank through the large
 * area: also reserves it for bytes (a call beyond what is reserved grows it).
 * ZAP_ERR_NO_MEMORY, on every rank alike, when /dev/shm had no room: the call
 * then falls back to its next candidate (zap_coll_fall_back). */
zap_status_t zap_coll_shm_large_turn(zap_coll_op_t *op, size_t bytes);
/* The chunk a large form moves: the default after an agreement without it
 * (agreed: a candidate that followed another), else the pipeline setting
 * when set, written into op's header so ranks set differently report a
 * mismatch. */
size_t zap_coll_shm_large_chunk(zap_coll_op_t *op, bool agreed);
/* The same for the forms whose every chunk waits for every rank (the large
 * area's allreduce and reduce): where the communicator is oversubscribed and
 * the pipeline setting unset, ZAP_COLL_SHM_OVERSUB_CHUNK_BYTES, since there
 * each wait costs the turns of descheduled ranks. Every rank decides alike
 * (the oversubscription is agreed at the setup). */
size_t zap_coll_shm_sync_chunk(zap_coll_op_t *op, bool agreed);
/* One whole large exchange, as the area forms of reduce_scatter, alltoall
 * and scan run it (x: in the algorithm's state, zeroed before the first
 * call; call again on ZAP_INPROGRESS):
 *   1. the turn, reserving reserve bytes per rank; copy_in puts what this
 *      rank's input gives the others into its input area; in_seq published;
 *   2. once every rank not in seen (0: every rank) has published its own,
 *      body reads the areas; with seen 0, ZAP_OK then, through
 *      zap_coll_shm_end (another rank may still read this one's input area:
 *      the next exchange's turn waits for it);
 *   3. else fin_seq published and ZAP_OK once every rank's holds: a rank not
 *      waited for that died before its input fails the call on the ranks
 *      that needed it, and must fail it on every rank.
 * ZAP_ERR_NO_MEMORY: no room for the area, on every rank alike (the caller
 * takes its next candidate, zap_coll_fall_back); else as zap_coll_shm_gather. */
typedef struct zap_coll_shm_exchange {
    int step;
    zap_coll_shm_wait_t wait;
} zap_coll_shm_exchange_t;
zap_status_t zap_coll_shm_exchange(zap_coll_op_t *op, zap_coll_shm_exchange_t *x, size_t reserve, uint64_t seen,
                                   void (*copy_in)(zap_coll_op_t *op), void (*body)(zap_coll_op_t *op));
/* Copies n elements from from + from_first to to + to_first (one of them a
 * user buffer, the other the large area), through zap_coll_copy, without
 * elements [lo, hi) of the range where skip: a block its rank moves itself. */
void zap_coll_shm_copy_but(const zap_coll_op_t *op, unsigned char *to, size_t to_first, const unsigned char *from,
                           size_t from_first, size_t es, size_t n, size_t lo, size_t hi, bool skip);

/* --- single-copy reads (shm_cma.c) ------------------------------------------ */
/* Reads bytes at comm rank q's address from (in q's address space) into to:
 * ZAP_OK; ZAP_ERR_PEER_FAILED (logged; q becomes op's culprit) when q's process is gone;
 * ZAP_ERR_TRANSPORT (logged) when the range is not readable. */
zap_status_t zap_coll_shm_read(zap_coll_op_t *op, int q, void *to, uint64_t from, size_t bytes);
/* The segment's single-copy scratch, grown to at least bytes (shared by the
 * single-copy forms, which run one at a time: large exchanges are in turn);
 * NULL (logged) without memory. */
void *zap_coll_shm_cma_scratch(zap_coll_shm_t *s, size_t bytes);
#endif
