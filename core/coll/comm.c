/* Communicators (comm_impl.h): creation over a whole transport, a split, a
 * group of a transport's or a communicator's ranks; destruction; queries.
 * The operations that run on them are the engine's (engine/), their
 * settings are resolved in comm_params.c and their setup runs in
 * comm_setup.c. Not thread-safe: one thread drives a communicator. */
#include "coll/comm_impl.h"
#include "coll/engine/mem.h"
#include "coll/engine/op.h"
#include "coll/engine/fast.h"
#include "coll/engine/select.h"
#include "coll/engine/step.h"
#include "coll/gpu/gpu.h"
#include "coll/hier/hier.h"
#include "coll/shm/shm.h"
#include "transport/checksum.h"
#include "base/log.h"
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Ids zap gives the communicators it agrees on (zap_comm_create,
 * zap_comm_split): each rank proposes the next id it has not used and the
 * communicator takes the maximum over its ranks, so two communicators sharing
 * a rank never share an id (up to wrap-around after ZAP_COLL_ZAP_ID_MAX
 * creations). Process-wide because in-process ranks share a process. */
static atomic_uint next_comm_id = 1;

/* Each agreed id reserves the two after it for the communicators of its
 * hierarchy (coll/hier/hier.h: the node's and the leaders'), which are made
 * later without an exchange of their own. */
#define IDS_PER_COMM 3

uint32_t zap_coll_id_proposal(void) { return atomic_load(&next_comm_id); }

uint32_t zap_coll_id_wrap(uint64_t v)
{
    uint32_t id = (uint32_t)(v % (ZAP_COLL_ZAP_ID_MAX + 1));
    return id == 0 ? 1 : id; /* 0 is the creation exchange's */
}

void zap_coll_id_reserve(uint64_t agreed, unsigned n)
{
    unsigned cur = atomic_load(&next_comm_id);
    while (cur <= agreed + n - 1 && !atomic_compare_exchange_weak(&next_comm_id, &cur, (unsigned)(agreed + n)))
        ;
}

/* Polls of a waiting collective before it starts yielding the CPU: few when
 * the node runs more ranks than it has cores (a spinning rank would keep the
 * peer it waits for off the CPU), more otherwise (a yield costs a system call
 * and, on a shared machine, the rest of a time slice). */
#define ZAP_COLL_SPINS_OVERSUBSCRIBED 4
#define ZAP_COLL_SPINS_DEDICATED 256

static zap_comm_t *comm_alloc(zap_transport_t *t, int rank, int size, int *ranks, const zap_coll_settings_t *set)
{
    zap_comm_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->t = t;
    c->rank = rank;
    c->size = size;
    c->ranks = ranks;
    c->set = *set;
    c->ctx = ZAP_COLL_CTX_ZAP; /* zap's creation exchange, until the communicator has its own */
    zap_transport_base_init(&c->req_base, &zap_coll_req_ops, rank, size, NULL, false);
    c->req_base.timeout_s = set->timeout; /* zap_request_wait's default deadline on its requests */
    zap_transport_base_init(&c->done_base, &zap_coll_done_ops, rank, size, NULL, false);
    zap_request_base_init(&c->done_req, &c->done_base, ZAP_REQ_SEND, -1, 0);
    zap_request_complete(&c->done_req, ZAP_OK);
    c->notices_seen = zap_transport_notice_count(t); /* earlier ones are other communicators' */
    zap_transport_caps_t caps;
    c->sleeping_wait = zap_transport_caps(t, &caps) == ZAP_OK && strcmp(caps.name, "inproc") == 0;
    c->spins_before_yield = zap_coll_local_oversubscribed(set) ? ZAP_COLL_SPINS_OVERSUBSCRIBED
                                                                : ZAP_COLL_SPINS_DEDICATED;
    c->setup = ZAP_COLL_SETUP_DONE;
    c->layered = -1;
    return c;
}

static void comm_free(zap_comm_t *c)
{
    zap_coll_gpu_destroy(c);
    zap_coll_hier_free(c);
    zap_coll_shm_detach(c->shm);
    zap_coll_op_free_list(c);
    zap_coll_scratch_drop(c);
    free(c->origin_ranks);
    free(c->ranks);
    free(c);
}

/* Agrees on a fresh id over comm's ranks (the maximum of the proposals), and
 * on whether any of them runs oversubscribed (the maximum of the flags); the
 * two ids after it are the hierarchy's (*child_p: the first). */
static zap_status_t agree_id(zap_comm_t *comm, bool over, uint32_t *ctx_p, uint32_t *child_p, bool *over_p)
{
    uint64_t proposal[2] = {zap_coll_id_proposal(), over}, agreed[2] = {0, 0};
    zap_status_t st = zap_coll_agree_allreduce(comm, ZAP_COLL_COMM_CREATE, proposal, agreed, 2, ZAP_DT_UINT64,
                                               ZAP_OP_MAX);
    if (st != ZAP_OK)
        return st;
    /* Raise the process-wide counter past the agreed ids. */
    zap_coll_id_reserve(agreed[0], IDS_PER_COMM);
    *ctx_p = ZAP_COLL_CTX_ZAP | zap_coll_id_wrap(agreed[0]);
    *child_p = zap_coll_id_wrap(agreed[0] + 1);
    *over_p = agreed[1] != 0;
    return ZAP_OK;
}

/* Runs comm's setup now (zap_comm_create, zap_comm_split), or marks it for
 * the first collective that needs it (group communicators, lazy). Nothing is
 * needed where no segment can exist and the oversubscription is known. */
static zap_status_t setup(zap_comm_t *comm, bool now)
{
    if (comm->size == 1 && !comm->oversubscribed_known) { /* agreed with itself */
        comm->oversubscribed = zap_coll_local_oversubscribed(&comm->set);
        comm->oversubscribed_known = true;
    }
    /* A communicator across hosts without ids for its hierarchy (a group
     * communicator) agrees on them in its setup too. */
    bool ids = comm->child_ctx == 0 && zap_coll_hier_layered(comm);
    if (!zap_coll_setup_segment_possible(comm) && comm->oversubscribed_known && !ids)
        return ZAP_OK;
    comm->setup = ZAP_COLL_SETUP_NEEDED;
    if (!now)
        return ZAP_OK;
    zap_request_t *req = NULL;
    zap_status_t st = zap_coll_setup_post(comm, &req);
    return st == ZAP_OK ? zap_coll_wait_free(req) : st;
}

/* Checksum mode wraps the transport: every message of this communicator
 * carries a CRC32C checked on receipt. */
static zap_status_t wrap(zap_transport_t *t, const zap_coll_settings_t *set, zap_transport_t **wrapped_p)
{
    *wrapped_p = NULL;
    if (!set->checksum || zap_transport_is_checksum(t))
        return ZAP_OK;
    return zap_transport_checksum_wrap(t, wrapped_p);
}

zap_status_t zap_comm_create_ex(zap_transport_t *t, const zap_comm_params_t *params, zap_comm_t **comm_p)
{
    if (t == NULL || comm_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    /* Each id exchange on a transport has its own number, counted before
     * anything can fail here so that every rank numbers the same call alike
     * (every rank makes the same creations in the same order). It is the
     * exchange's sequence: a notice then says which exchange failed, and it
     * may arrive before this rank starts the exchange (the log is read from
     * its start, the notices of earlier exchanges skipped). */
    zap_transport_t *home = t->notice_home != NULL ? t->notice_home : t;
    uint64_t nth = (uint64_t)atomic_fetch_add(&home->creations, 1) + 1;
    zap_coll_settings_t set;
    zap_transport_t *wrapped = NULL;
    zap_status_t st = zap_coll_settings_resolve(params, NULL, &set);
    if (st != ZAP_OK || (st = wrap(t, &set, &wrapped)) != ZAP_OK)
        return st;
    zap_transport_t *use = wrapped != NULL ? wrapped : t;
    zap_comm_t *c = comm_alloc(use, zap_transport_rank(use), zap_transport_size(use), NULL, &set);
    if (c == NULL) {
        zap_transport_close(wrapped);
        return ZAP_ERR_NO_MEMORY;
    }
    c->checksum_t = wrapped;
    c->unwrapped = wrapped != NULL ? t : NULL;
    /* The id exchange runs on the communicator itself with zap's creation
     * context and the exchange's number as its sequence, so consecutive
     * creations cannot cross. */
    bool over = false;
    c->notices_seen = 0;
    c->notice_floor = nth;
    c->seq = nth - 1;
    c->origin_ctx = c->ctx;
    if ((st = agree_id(c, zap_coll_local_oversubscribed(&set), &c->ctx, &c->child_ctx, &over)) == ZAP_OK) {
        /* A rank that failed the exchange fails this communicator here. */
        c->origin_from = c->origin_seq = c->seq;
        c->notice_floor = 0;
        c->seq = 0;
        c->oversubscribed = over;
        c->oversubscribed_known = true;
        st = setup(c, true);
    }
    if (st != ZAP_OK) {
        comm_free(c);
        zap_transport_close(wrapped);
        return st;
    }
    *comm_p = c;
    return ZAP_OK;
}

zap_status_t zap_comm_create(zap_transport_t *t, zap_comm_t **comm_p) { return zap_comm_create_ex(t, NULL, comm_p); }

/* Members: same color, ordered by (key, old rank); insertion sort, p is
 * small. Returns their count; *newrank_p is this rank's place. */
static int split_members(const zap_comm_t *comm, const int64_t *all, int color, int *members, int *newrank_p)
{
    int n = 0;
    for (int r = 0; r < comm->size; r++) {
        if (all[2 * r] != color)
            continue;
        int i = n++;
        while (i > 0 && all[2 * members[i - 1] + 1] > all[2 * r + 1]) {
            members[i] = members[i - 1];
            i--;
        }
        members[i] = r;
    }
    for (int i = 0; i < n; i++) {
        if (members[i] == comm->rank)
            *newrank_p = i;
        members[i] = zap_coll_transport_rank(comm, members[i]);
    }
    return n;
}

zap_status_t zap_comm_split(zap_comm_t *comm, int color, int key, zap_comm_t **newcomm_p)
{
    if (comm == NULL || newcomm_p == NULL || (color < 0 && color != ZAP_COMM_UNDEFINED))
        return ZAP_ERR_INVALID_PARAM;
    int p = comm->size;
    int64_t *all = malloc(sizeof(int64_t) * 2 * (size_t)p);
    int *members = malloc(sizeof(int) * (size_t)p);
    if (all == NULL || members == NULL) {
        free(all);
        free(members);
        return ZAP_ERR_NO_MEMORY;
    }
    int64_t mine[2] = {color, key};
    uint32_t ctx = 0, child = 0;
    bool over = false;
    /* The parent's agreed flag where it has one: splits inherit it. */
    bool mine_over = comm->oversubscribed_known ? comm->oversubscribed : zap_coll_local_oversubscribed(&comm->set);
    /* The child reads the notices from here on: one that fails either
     * exchange on another rank after this one completed them revokes it. */
    unsigned notices = zap_transport_notice_count(comm->t);
    zap_status_t st = zap_allgather(comm, mine, 2, all, ZAP_DT_INT64);
    if (st == ZAP_OK)
        st = agree_id(comm, mine_over, &ctx, &child, &over);
    int newrank = -1, n = 0;
    if (st == ZAP_OK && color != ZAP_COMM_UNDEFINED)
        n = split_members(comm, all, color, members, &newrank);
    free(all);
    if (st != ZAP_OK || color == ZAP_COMM_UNDEFINED) {
        free(members);
        if (st == ZAP_OK)
            *newcomm_p = NULL;
        return st;
    }
    zap_comm_t *c = comm_alloc(comm->t, newrank, n, members, &comm->set);
    if (c == NULL) {
        free(members);
        return ZAP_ERR_NO_MEMORY;
    }
    c->ctx = ctx;
    c->child_ctx = child;
    c->notices_seen = notices;
    c->origin_ctx = comm->ctx;
    c->origin_from = 1; /* the parent revoked from any sequence up to the split's */
    c->origin_seq = comm->seq;
    c->origin_size = comm->size;
    if (comm->ranks != NULL) {
        c->origin_ranks = malloc(sizeof(int) * (size_t)comm->size);
        if (c->origin_ranks == NULL) {
            comm_free(c);
            return ZAP_ERR_NO_MEMORY;
        }
        memcpy(c->origin_ranks, comm->ranks, sizeof(int) * (size_t)comm->size);
    }
    c->unwrapped = comm->unwrapped; /* the wrapper, if any, stays the parent's */
    c->oversubscribed = over;
    c->oversubscribed_known = true;
    if ((st = setup(c, true)) != ZAP_OK) {
        comm_free(c);
        return st;
    }
    *newcomm_p = c;
    return ZAP_OK;
}

/* Transport ranks of a group: each listed once, this rank among them. A copy
 * of the list (NULL for the whole transport in order) and this rank's place. */
static zap_status_t group_ranks(const zap_comm_t *parent, int tsize, int me, const int *ranks, int n, int **out_p,
                                int *newrank_p)
{
    int limit = parent != NULL ? parent->size : tsize;
    int *out = malloc(sizeof(int) * (size_t)n);
    unsigned char *seen = calloc((size_t)limit, 1);
    zap_status_t st = out != NULL && seen != NULL ? ZAP_OK : ZAP_ERR_NO_MEMORY;
    bool identity = n == tsize;
    *newrank_p = -1;
    for (int i = 0; i < n && st == ZAP_OK; i++) {
        int r = ranks[i];
        if (r < 0 || r >= limit || seen[r]) {
            zap_error("coll: rank %d: group rank %d at %d is outside [0, %d) or listed twice", me, r, i, limit);
            st = ZAP_ERR_INVALID_PARAM;
            break;
        }
        seen[r] = 1;
        out[i] = parent != NULL ? zap_coll_transport_rank(parent, r) : r;
        identity = identity && out[i] == i;
        if (out[i] == me)
            *newrank_p = i;
    }
    if (st == ZAP_OK && *newrank_p < 0) {
        zap_error("coll: rank %d: a group communicator must list its caller (transport rank %d)", me, me);
        st = ZAP_ERR_INVALID_PARAM;
    }
    free(seen);
    if (st != ZAP_OK || identity) {
        free(out);
        out = NULL;
    }
    *out_p = out;
    return st;
}

/* Both group forms: t is the transport under any checksum wrapper. */
static zap_status_t create_group(zap_transport_t *t, const zap_comm_t *parent, const int *ranks, int n,
                                 uint32_t context_id, const zap_coll_settings_t *set, zap_comm_t **comm_p)
{
    int me = zap_transport_rank(t), *list = NULL, newrank = -1;
    if (context_id > ZAP_COMM_CONTEXT_ID_MAX) {
        zap_error("coll: rank %d: group context id %u is above %u", me, context_id, ZAP_COMM_CONTEXT_ID_MAX);
        return ZAP_ERR_INVALID_PARAM;
    }
    zap_status_t st = group_ranks(parent, zap_transport_size(t), me, ranks, n, &list, &newrank);
    zap_transport_t *wrapped = NULL;
    if (st != ZAP_OK || (st = wrap(t, set, &wrapped)) != ZAP_OK) {
        free(list);
        return st;
    }
    zap_comm_t *c = comm_alloc(wrapped != NULL ? wrapped : t, newrank, n, list, set);
    if (c == NULL) {
        free(list);
        zap_transport_close(wrapped);
        return ZAP_ERR_NO_MEMORY;
    }
    c->ctx = context_id;
    c->checksum_t = wrapped;
    c->unwrapped = wrapped != NULL ? t : NULL;
    if (parent != NULL && parent->oversubscribed_known) {
        c->oversubscribed = parent->oversubscribed;
        c->oversubscribed_known = true;
    }
    (void)setup(c, false);
    *comm_p = c;
    return ZAP_OK;
}

zap_status_t zap_coll_comm_child(zap_comm_t *parent, const int *ranks, int n, uint32_t ctx, zap_comm_t **comm_p)
{
    zap_coll_settings_t set = parent->set;
    set.hier = false; /* one host, or one rank per host: nothing below it */
    zap_transport_t *base = parent->unwrapped != NULL ? parent->unwrapped : parent->t;
    zap_status_t st = create_group(base, parent, ranks, n, 0, &set, comm_p);
    if (st == ZAP_OK)
        (*comm_p)->ctx = ctx;
    return st;
}

zap_status_t zap_comm_create_group(zap_transport_t *t, const int *ranks, int nranks, uint32_t context_id,
                                   const zap_comm_params_t *params, zap_comm_t **comm_p)
{
    if (t == NULL || ranks == NULL || nranks < 1 || comm_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    zap_coll_settings_t set;
    zap_status_t st = zap_coll_settings_resolve(params, NULL, &set);
    return st != ZAP_OK ? st : create_group(t, NULL, ranks, nranks, context_id, &set, comm_p);
}

zap_status_t zap_comm_create_subgroup(zap_comm_t *parent, const int *ranks, int nranks, uint32_t context_id,
                                      const zap_comm_params_t *params, zap_comm_t **comm_p)
{
    if (parent == NULL || ranks == NULL || nranks < 1 || comm_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    zap_coll_settings_t set;
    zap_status_t st = zap_coll_settings_resolve(params, &parent->set, &set);
    zap_transport_t *base = parent->unwrapped != NULL ? parent->unwrapped : parent->t;
    return st != ZAP_OK ? st : create_group(base, parent, ranks, nranks, context_id, &set, comm_p);
}

void zap_comm_destroy(zap_comm_t *comm)
{
    if (comm == NULL)
        return;
    /* Requests the caller never freed: cancel them so no transport request
     * outlives the communicator. */
    int left = zap_coll_op_cancel_all(comm);
    if (left > 0)
        zap_warn("coll: communicator %u destroyed with %d collective requests not freed (cancelled)",
                 zap_coll_comm_id(comm), left);
    zap_transport_t *wrapper = comm->checksum_t;
    zap_transport_t *inner = wrapper != NULL ? comm->unwrapped : comm->t;
    zap_transport_t *owned = comm->owns_transport ? inner : NULL;
    comm_free(comm);
    zap_transport_close(wrapper);
    zap_transport_close(owned);
}

int zap_comm_rank(const zap_comm_t *comm) { return comm ? comm->rank : -1; }
int zap_comm_size(const zap_comm_t *comm) { return comm ? comm->size : -1; }
zap_transport_t *zap_comm_transport(const zap_comm_t *comm) { return comm ? comm->t : NULL; }

/* The first algorithm a call of bytes on host memory runs under comm's
 * settings. */
static const char *first_algorithm(const zap_comm_t *comm, const zap_coll_desc_t *desc, size_t bytes)
{
    uint8_t cand[ZAP_COLL_MAX_CANDS];
    zap_coll_form_t form = zap_coll_form_of(desc, (zap_comm_t *)comm);
    int n = zap_coll_candidates(desc, comm, bytes, ZAP_MEM_HOST, form, comm->set.alg[desc->kind], cand);
    for (int i = 0; i < n; i++)
        if (!desc->algs[cand[i]].local)
            return desc->algs[cand[i]].name;
    return NULL;
}

zap_status_t zap_comm_query(const zap_comm_t *comm, zap_comm_attr_t *attr)
{
    if (comm == NULL || attr == NULL)
        return ZAP_ERR_INVALID_PARAM;
    uint64_t m = attr->field_mask;
    if (m & ZAP_COMM_ATTR_RANK)
        attr->rank = comm->rank;
    if (m & ZAP_COMM_ATTR_SIZE)
        attr->size = comm->size;
    if (m & ZAP_COMM_ATTR_TRANSPORT)
        attr->transport = comm->t;
    if (m & ZAP_COMM_ATTR_CONTEXT) {
        attr->context_id = comm->ctx & ~ZAP_COLL_CTX_ZAP;
        attr->context_by_zap = (comm->ctx & ZAP_COLL_CTX_ZAP) != 0;
    }
    if (m & ZAP_COMM_ATTR_SET_UP)
        attr->set_up = comm->setup == ZAP_COLL_SETUP_DONE;
    if (m & ZAP_COMM_ATTR_SHARED_MEMORY) {
        attr->shared_memory = comm->shm != NULL;
        attr->shared_memory_bytes = comm->shm_bytes;
    }
    if (m & ZAP_COMM_ATTR_SINGLE_COPY) {
        attr->single_copy = comm->shm != NULL && comm->shm->cma;
        attr->single_copy_dear = comm->shm != NULL && comm->shm->cma_slow;
    }
    if (m & ZAP_COMM_ATTR_OVERSUBSCRIBED)
        attr->oversubscribed = comm->oversubscribed;
    if (m & ZAP_COMM_ATTR_TIMEOUT)
        attr->timeout_s = isinf(comm->set.timeout) ? ZAP_COMM_TIMEOUT_NONE : comm->set.timeout;
    if (m & ZAP_COMM_ATTR_HOSTS) {
        attr->hierarchy = zap_coll_hier_layered((zap_comm_t *)comm);
        attr->hosts = attr->hierarchy ? comm->hier->topo->nhosts : zap_coll_hier_count_hosts(comm);
    }
    if (m & ZAP_COMM_ATTR_ALGORITHMS) {
        attr->allreduce_algorithm = first_algorithm(comm, &zap_allreduce_desc, attr->bytes);
        attr->bcast_algorithm = first_algorithm(comm, &zap_bcast_desc, attr->bytes);
    }
    return ZAP_OK;
}
