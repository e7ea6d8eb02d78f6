/* Algorithm selection: every collective describes itself (zap_coll_desc_t:
 * its algorithms and its selection table) and the engine turns a call into
 * an ordered list of candidates (docs/collectives.md, "Selection").
 *
 * A table row names an algorithm and the predicates under which the
 * automatic choice takes it (rank count, bytes, and ZAP_COLL_PRED_* flags:
 * same host, fits the shared area, single copy permitted, oversubscribed,
 * GPU path wanted, memory kind). Every row that holds is a candidate, in
 * table order; a forced algorithm (ZAP_<COLL>_ALG, params) goes first and
 * the automatic candidates follow it, except single-copy rows, which run
 * only when named or chosen automatically. The GPU path goes first when its
 * predicates hold (this rank's buffers among them) and no algorithm is
 * forced; where the next candidate
 * would carry the agreement in its data for this size, the header names the
 * GPU path, so a rank that passed host memory to the same small call (it
 * agrees with its data) reports ZAP_ERR_MISMATCH with the others.
 *
 * The first candidate's init runs when the call is posted. An init that
 * cannot run returns ZAP_ERR_UNSUPPORTED and the next candidate's runs. After
 * the agreement a candidate that cannot go on hands over with
 * zap_coll_fall_back: one whose vote failed (some rank's buffers are of the
 * wrong memory kind: the engine casts every candidate's vote, each checks
 * its own in its first progress), or one that found the shared area could
 * not grow. Every such decision rests on what all
 * ranks share (the communicator, its settings, the agreed arguments and
 * votes), so all ranks take the same candidate. The header's algorithm lane
 * names the first candidate whose choice does not rest on this process alone
 * (all but the GPU path, whose vote settles it, except as said above), so
 * ranks whose choices differ report ZAP_ERR_MISMATCH.
 *
 * A candidate that does not run on device buffers itself (all but the GPU
 * path) gets a host copy of a call's device buffers (zap_coll_host_stage):
 * the CPU and a transport without CUDA support cannot touch them. */
#ifndef ZAP_COLL_ENGINE_SELECT_H
#define ZAP_COLL_ENGINE_SELECT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "zap/coll.h"
#include "base/config_table.h"
#include "coll/comm_impl.h"
#include "coll/engine/op.h"

typedef struct zap_coll_alg {
    const char *name;
    const char *description;
    /* Sets op up from op->args (and op->agreed): state, progress, and, when
     * the algorithm carries the agreement in its own exchange, that exchange
     * (op->agreeing set); otherwise the engine adds a header-only one.
     * ZAP_ERR_UNSUPPORTED: cannot run this call, try the next candidate. */
    zap_status_t (*init)(zap_coll_op_t *op);
    uint32_t require;  /* ZAP_COLL_PRED_* it needs wherever it is chosen (forced ones included) */
    int vote_lane;     /* ZAP_COLL_LANE_VOTE_* its vote rides (checked in its first progress), 0: none */
    bool (*vote)(const zap_coll_op_t *op); /* this rank's yes (memory kind) */
    size_t agrees_in_data; /* calls up to this many bytes carry the agreement in their data (0: none) */
    bool local;        /* its predicates rest on this process alone (settled by its vote) */
    bool gpu_buffers;  /* runs on device buffers itself; the others get a host copy of them (engine/mem.h) */
    bool by_name;      /* may be forced by name */
    bool declines;     /* its init declines calls no predicate tells apart (a v-form): the rows after it
                          stay candidates even where it needs nothing of the communicator */
} zap_coll_alg_t;

typedef struct zap_coll_row {
    uint8_t alg; /* index in the collective's algorithms */
    int min_ranks, max_ranks;
    size_t min_bytes, max_bytes; /* [min, max); max SIZE_MAX: no limit */
    uint32_t require, forbid;    /* ZAP_COLL_PRED_* */
    const char *rule;            /* one line: when and why (zap-info) */
} zap_coll_row_t;

typedef struct zap_coll_desc {
    const char *name; /* "allreduce" */
    zap_coll_kind_t kind;
    const zap_coll_alg_t *algs;
    int nalgs;
    const zap_coll_row_t *rows;
    int nrows;
    /* How a call agrees on comm (NULL: recursive doubling). */
    zap_coll_form_t (*form)(const zap_comm_t *comm);
    bool needs_setup;      /* its choice reads what a communicator's setup agrees */
    /* Across hosts its calls agree one way, down a tree from args.root
     * (agree/agree_tree.c), whatever algorithm then runs, so that every rank
     * of a call exchanges the same messages first. */
    bool tree_in_hier;
    zap_cfg_id_t setting;  /* ZAP_<COLL>_ALG, ZAP_CFG_COUNT: none */
    /* The fast form of its small blocking calls (engine/fast.h; NULL: none):
     * fast_alg is the algorithm whose shared-memory exchange carries them
     * whole; fast_setup says what this rank writes and reads (false: this
     * call is not one of them), and casts in f->words the votes every
     * candidate would (fast_votes: some does); fast_finish takes the result
     * from the slots read. */
    int fast_alg;
    bool fast_votes;
    bool (*fast_setup)(const zap_comm_t *comm, const zap_coll_args_t *a, zap_coll_shm_fast_t *f);
    void (*fast_finish)(const zap_comm_t *comm, const zap_coll_args_t *a, const zap_coll_shm_fast_t *f);
} zap_coll_desc_t;

/* zap_coll_args_t.call_flags: what a call's op rules out. NONCOMMUTATIVE
 * clears ZAP_COLL_PRED_COMMUTATIVE (algorithms that combine out of rank order
 * require it); NO_GPU clears ZAP_COLL_PRED_GPU_PATH (the op has no kernel). */
#define ZAP_COLL_CALL_NONCOMMUTATIVE 0x1u
#define ZAP_COLL_CALL_NO_GPU 0x2u
/* The flags of a reduction with op on dt. */
uint8_t zap_coll_call_flags(zap_dtype_t dt, zap_op_t op);

/* Every collective's description (in its folder), in one list for the
 * public table and the settings. */
extern const zap_coll_desc_t zap_allreduce_desc, zap_bcast_desc, zap_scatterv_desc, zap_allgatherv_desc,
    zap_barrier_desc, zap_reduce_desc, zap_reduce_scatter_desc, zap_gather_desc, zap_alltoall_desc, zap_scan_desc,
    zap_exscan_desc;
extern const zap_coll_desc_t *const zap_coll_descs[];
extern const int zap_coll_ndescs;

/* Whether op's call agrees one way down the tree (its collective's
 * tree_in_hier, across hosts): the header exchange of every rank of it, bad
 * arguments included. */
static inline bool zap_coll_agrees_by_tree(const zap_coll_op_t *op)
{
    return op->form == ZAP_COLL_FORM_HIER && op->desc != NULL && op->desc->tree_in_hier;
}

/* Posts a collective: takes an operation, records args, and (once comm is
 * set up) agrees on the form, chooses the candidates and runs the first init.
 * local is this rank's own argument error (the operation then takes part in
 * the agreement with its header marked bad and returns local). Returns
 * ZAP_OK and *req_p, or ZAP_ERR_NO_MEMORY (no operation). */
zap_status_t zap_coll_post(zap_comm_t *comm, const zap_coll_desc_t *desc, const zap_coll_args_t *args,
                           zap_status_t local, zap_request_t **req_p);
/* After the agreement: the next candidate, set up as agreed, its first
 * progress returned (docs above). */
zap_status_t zap_coll_fall_back(zap_coll_op_t *op);
/* A large shared-memory form's first progress step: its turn in the large
 * area for bytes (zap_coll_shm_large_turn), where no room for the area makes
 * the call take its next candidate on every rank alike (zap_coll_fall_back).
 * True once the turn is this call's; false with *st what the progress
 * returns (ZAP_INPROGRESS, an error, or the next candidate's first step). */
bool zap_coll_large_turn(zap_coll_op_t *op, size_t bytes, zap_status_t *st);
/* The candidates for a call of bytes on buffers of kind mem (this rank's)
 * on comm agreeing in form, forced algorithm force (-1: none), into cand
 * (ZAP_COLL_MAX_CANDS); returns their number. The call's op is taken to be
 * commutative with a GPU kernel (zap_coll_candidates_flags: with its
 * call_flags). */
int zap_coll_candidates(const zap_coll_desc_t *desc, const zap_comm_t *comm, size_t bytes, zap_mem_kind_t mem,
                        zap_coll_form_t form, int force, uint8_t *cand);
int zap_coll_candidates_flags(const zap_coll_desc_t *desc, const zap_comm_t *comm, size_t bytes, zap_mem_kind_t mem,
                              zap_coll_form_t form, int force, unsigned call_flags, uint8_t *cand);
/* How a call of desc on comm agrees: the collective's form, or through the
 * hosts' hierarchy where it would be recursive doubling and comm spans
 * hosts (coll/hier/hier.h). The same on every rank of comm. */
zap_coll_form_t zap_coll_form_of(const zap_coll_desc_t *desc, zap_comm_t *comm);
/* The collective's algorithm called name (by_name ones), or -1. */
int zap_coll_alg_find(const zap_coll_desc_t *desc, const char *name);
#endif
