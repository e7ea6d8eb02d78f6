/* UCP context, worker and address exchange for one rank (see ucp_worker.h).
 *
 * The bootstrap must never leave some ranks waiting in a collective that
 * others skipped: every step that can fail locally is followed by an
 * MPI_Allreduce of the statuses, and only when all ranks succeeded do they go
 * on to the next collective. */
#include "transport/ucp_worker.h"
#include "transport/peer_class.h"
#include "transport/ucp_vm.h"
#include "zap/transport.h"
#include "base/log.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <strings.h>

zap_status_t zap_ucp_status(ucs_status_t s)
{
    switch (s) {
    case UCS_OK:
        return ZAP_OK;
    case UCS_INPROGRESS:
        return ZAP_INPROGRESS;
    case UCS_ERR_NO_MEMORY:
        return ZAP_ERR_NO_MEMORY;
    case UCS_ERR_INVALID_PARAM:
        return ZAP_ERR_INVALID_PARAM;
    case UCS_ERR_NO_RESOURCE:
        return ZAP_ERR_NO_RESOURCE;
    case UCS_ERR_MESSAGE_TRUNCATED:
        return ZAP_ERR_TRUNCATED;
    case UCS_ERR_CANCELED:
        return ZAP_ERR_CANCELED;
    case UCS_ERR_TIMED_OUT:
        return ZAP_ERR_TIMED_OUT;
    case UCS_ERR_UNSUPPORTED:
        return ZAP_ERR_UNSUPPORTED;
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
        return ZAP_ERR_PEER_FAILED;
    default:
        return ZAP_ERR_TRANSPORT;
    }
}

/* Combines a local status over comm: the most negative one wins, so every
 * rank returns an error when any rank has one. */
static zap_status_t agree(zap_ucp_worker_t *w, zap_status_t local)
{
    if (w->oob.allgather != NULL)
        return zap_ucp_oob_agree(&w->oob, local);
    int mine = (int)local, all = 0;
    if (PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, w->comm) != MPI_SUCCESS) {
        zap_error("ucp: MPI_Allreduce failed during bootstrap");
        return ZAP_ERR_TRANSPORT;
    }
    if (all != ZAP_OK && local == ZAP_OK)
        zap_debug("ucp: another rank failed to set up UCX (status %d)", all);
    return (zap_status_t)all;
}

static int env_set(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0';
}

/* UCX's yes/no words (ucs_config_sscanf_bool). */
static int env_yes(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && (strcasecmp(v, "y") == 0 || strcasecmp(v, "yes") == 0 || strcasecmp(v, "on") == 0 ||
                         strcmp(v, "1") == 0);
}

/* Whether UCX_TLS lets UCX use one of the transports names[0..n-1], which
 * the aliases stand for together: unset or "all", a list naming one of them
 * or an alias, or an exclusion list ("^...") that leaves one of them in. A
 * setting UCX never applies draws a warning from it, so it is set only then. */
static int tls_allow(const char *const *names, int n, const char *const *aliases, int naliases)
{
    const char *tls = getenv("UCX_TLS");
    if (tls == NULL || tls[0] == '\0' || strcmp(tls, "all") == 0)
        return 1;
    int exclude = tls[0] == '^', alias = 0;
    unsigned named = 0;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", tls + exclude);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        for (int i = 0; i < naliases; i++)
            alias |= strcmp(t, aliases[i]) == 0;
        for (int i = 0; i < n; i++)
            named |= (unsigned)(strcmp(t, names[i]) == 0) << i;
    }
    if (exclude)
        return !alias && named != (1u << n) - 1;
    return alias || named != 0;
}

/* posix or sysv shared memory (the "mm" transports). */
static int mm_allowed(void)
{
    static const char *const names[] = {"posix", "sysv"}, *const aliases[] = {"sm", "shm", "mm"};
    return tls_allow(names, 2, aliases, 3);
}

static int tcp_allowed(void)
{
    static const char *const names[] = {"tcp"};
    return tls_allow(names, 1, NULL, 0);
}

/* Shared-memory peer failure detection (ucp_worker.h says why): on unless
 * the user chose for UCX. Returns whether same-host endpoints can ask for it. */
static int configure_peer_errors(zap_ucp_worker_t *w, ucp_config_t *config, double timeout_s)
{
    static const char *const user[] = {"UCX_MM_ERROR_HANDLING", "UCX_POSIX_ERROR_HANDLING",
                                       "UCX_SYSV_ERROR_HANDLING"};
    int chosen = 0, yes = 0;
    for (size_t i = 0; i < sizeof(user) / sizeof(user[0]); i++) {
        chosen |= env_set(user[i]);
        yes |= env_yes(user[i]);
    }
    if (!chosen && !mm_allowed())
        return 1; /* same-host traffic goes over a network transport, which has it */
    if (!chosen) {
        ucs_status_t s = ucp_config_modify(config, "MM_ERROR_HANDLING", "y");
        if (s != UCS_OK) {
            zap_info("ucp: rank %d: UCX does not take MM_ERROR_HANDLING (%s): a dead peer on this host will show "
                     "as ZAP_ERR_TIMED_OUT",
                     w->rank, ucs_status_string(s));
            return 0;
        }
        yes = 1;
    }
    if (yes && !env_set("UCX_KEEPALIVE_INTERVAL")) {
        double ka = timeout_s / 4; /* INFINITY without a timeout */
        ka = ka < 0.1 ? 0.1 : ka > ZAP_UCP_LIVENESS_S ? ZAP_UCP_LIVENESS_S : ka;
        char text[32];
        snprintf(text, sizeof(text), "%.0fms", ka * 1000);
        ucs_status_t s = ucp_config_modify(config, "KEEPALIVE_INTERVAL", text);
        if (s != UCS_OK)
            zap_info("ucp: rank %d: UCX does not take KEEPALIVE_INTERVAL=%s (%s)", w->rank, text,
                     ucs_status_string(s));
    }
    return yes;
}

/* Messages between hosts over TCP (docs/transport.md, "TCP between hosts"):
 * UCX sends anything above one 8 KiB segment by rendezvous, whose control
 * messages wait behind the data already queued on a busy link, a round trip
 * or more per message; at link rates that costs more than the copy an eager
 * message takes. So where the ranks span several hosts, UCX_TLS allows TCP
 * and no RDMA device is in use (none on the host, or UCX_TLS leaves them
 * out: UCX would take one between hosts, whose rendezvous is a zero-copy
 * read), messages up to ZAP_UCP_TCP_EAGER go eager, unless the user chose
 * UCX_RNDV_THRESH. The threshold is that high because a flat algorithm's
 * messages are half or a p-th of the vector, and at a few MiB the
 * rendezvous' control messages behind queued data still showed
 * (docs/performance.md, "TCP between hosts"); the price is that a receiver
 * that has not posted holds such a message in UCX's buffers until it does.
 * The setting is the context's: same-host messages up to that size go eager
 * over shared memory too (zap's collectives inside a host do not use UCX's
 * messages). A larger TCP transmit segment would do it for TCP alone, but
 * then a completed send may leave a whole message in its segment until the
 * sender's next progress call (docs/transport.md, "Progress"). A rank that
 * decides otherwise (another environment, a host with RDMA) only changes how
 * it sends: receivers take either protocol. */
#define ZAP_UCP_TCP_EAGER "16m"
static int several_hosts(const zap_ucp_worker_t *w)
{
    for (int r = 1; r < w->size; r++)
        if (w->host[r] != w->host[0])
            return 1;
    return 0;
}

/* UCX's InfiniBand/RoCE transports, which UCX_TLS may name one by one. */
static int rdma_allowed(void)
{
    static const char *const names[] = {"rc", "rc_v", "rc_x", "rc_verbs", "rc_mlx5", "dc", "dc_x", "dc_mlx5",
                                        "ud", "ud_v", "ud_x", "ud_verbs", "ud_mlx5"};
    static const char *const aliases[] = {"ib"};
    return tls_allow(names, (int)(sizeof(names) / sizeof(names[0])), aliases, 1);
}

static int rdma_device(void)
{
    DIR *d = opendir("/sys/class/infiniband");
    if (d == NULL)
        return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;)
        found = e->d_name[0] != '.';
    closedir(d);
    return found;
}

/* The receive segment bounds UCX's zero-copy TCP fragment (its largest is
 * the receive segment less a header): with UCX's 64 KiB a 64 KiB message goes
 * as a full fragment and a few bytes behind it, which at link rates cost
 * such messages far more than the bytes (docs/performance.md, "TCP between
 * hosts"). A zero-copy send completes only once the kernel holds all of it,
 * so unlike a wider transmit segment this leaves nothing behind in the
 * sender. The key goes without its table's TCP_ prefix: ucp_config_modify
 * matches field names (UCX 1.13 calls the prefixed one invalid), and only TCP
 * has it. */
#define ZAP_UCP_TCP_RX_SEG "1m"
static void configure_tcp(const zap_ucp_worker_t *w, ucp_config_t *config)
{
    if (!tcp_allowed() || !several_hosts(w) || (rdma_allowed() && rdma_device()))
        return;
    static const struct {
        const char *env, *key, *value;
    } settings[] = {{"UCX_RNDV_THRESH", "RNDV_THRESH", ZAP_UCP_TCP_EAGER},
                    {"UCX_TCP_RX_SEG_SIZE", "RX_SEG_SIZE", ZAP_UCP_TCP_RX_SEG}};
    for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
        if (env_set(settings[i].env))
            continue;
        ucs_status_t s = ucp_config_modify(config, settings[i].key, settings[i].value);
        if (s != UCS_OK)
            zap_info("ucp: rank %d: UCX does not take %s=%s (%s)", w->rank, settings[i].key, settings[i].value,
                     ucs_status_string(s));
    }
}

static zap_status_t open_ucp(zap_ucp_worker_t *w, double timeout_s)
{
    ucp_config_t *config = NULL;
    ucs_status_t s = ucp_config_read(NULL, NULL, &config);
    if (s != UCS_OK) {
        zap_error("ucp: rank %d: ucp_config_read failed: %s", w->rank, ucs_status_string(s));
        return ZAP_ERR_TRANSPORT;
    }
    w->same_host_errors = configure_peer_errors(w, config, timeout_s);
    configure_tcp(w, config);
    w->tcp_lingers = tcp_allowed() && (several_hosts(w) || !mm_allowed());
    w->tcp_other_hosts = tcp_allowed() && !(rdma_allowed() && rdma_device());
    w->tcp_this_host = tcp_allowed() && !mm_allowed();
    ucp_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                        UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_AM; /* AM: the shared-memory warm-up (ucp_warm.h) */
    /* The context is shared with pool hooks that map chunks from any thread. */
    params.mt_workers_shared = 1;
    params.estimated_num_eps = (size_t)w->size;
    s = ucp_init(&params, config, &w->context);
    ucp_config_release(config);
    if (s != UCS_OK) {
        zap_error("ucp: rank %d: ucp_init failed: %s", w->rank, ucs_status_string(s));
        w->context = NULL;
        return ZAP_ERR_TRANSPORT;
    }
    zap_ucp_vm_watch_start();
    ucp_worker_params_t wp;
    memset(&wp, 0, sizeof(wp));
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    s = ucp_worker_create(w->context, &wp, &w->worker);
    if (s != UCS_OK) {
        zap_error("ucp: rank %d: ucp_worker_create failed: %s", w->rank, ucs_status_string(s));
        ucp_cleanup(w->context);
        zap_ucp_vm_watch_stop();
        w->context = NULL;
        w->worker = NULL;
        return ZAP_ERR_TRANSPORT;
    }
    return ZAP_OK;
}

static zap_status_t exchange_addresses(zap_ucp_worker_t *w)
{
    ucp_address_t *addr = NULL;
    size_t len = 0;
    ucs_status_t s = ucp_worker_get_address(w->worker, &addr, &len);
    zap_status_t st = ZAP_OK;
    if (s != UCS_OK) {
        zap_error("ucp: rank %d: ucp_worker_get_address failed: %s", w->rank, ucs_status_string(s));
        st = ZAP_ERR_TRANSPORT;
    }
    w->addr_len = calloc((size_t)w->size, sizeof(int));
    w->addr_off = calloc((size_t)w->size, sizeof(int));
    if (st == ZAP_OK && (w->addr_len == NULL || w->addr_off == NULL))
        st = ZAP_ERR_NO_MEMORY;
    st = agree(w, st);
    if (st != ZAP_OK)
        goto out;
    if (w->oob.allgather != NULL) {
        st = zap_ucp_oob_exchange(w, addr, len);
        goto out;
    }
    int mine = (int)len;
    if (PMPI_Allgather(&mine, 1, MPI_INT, w->addr_len, 1, MPI_INT, w->comm) != MPI_SUCCESS) {
        st = ZAP_ERR_TRANSPORT;
        goto out;
    }
    size_t total = 0;
    for (int r = 0; r < w->size; r++) {
        w->addr_off[r] = (int)total;
        total += (size_t)w->addr_len[r];
    }
    w->addrs = malloc(total > 0 ? total : 1);
    st = agree(w, w->addrs == NULL ? ZAP_ERR_NO_MEMORY : ZAP_OK);
    if (st != ZAP_OK)
        goto out;
    if (PMPI_Allgatherv(addr, mine, MPI_BYTE, w->addrs, w->addr_len, w->addr_off, MPI_BYTE, w->comm) !=
        MPI_SUCCESS) {
        zap_error("ucp: rank %d: MPI_Allgatherv of worker addresses failed", w->rank);
        st = ZAP_ERR_TRANSPORT;
        goto out;
    }
out:
    if (addr != NULL)
        ucp_worker_release_address(w->worker, addr);
    return st;
}

/* Which ranks share a host: host name and boot id (peer_class.c). Before
 * the UCP context, whose TCP settings depend on it (configure_tcp). */
static zap_status_t exchange_hosts(zap_ucp_worker_t *w)
{
    if (w->oob.allgather != NULL)
        return zap_ucp_oob_hosts(w);
    uint64_t h = zap_host_id();
    w->host = calloc((size_t)w->size, sizeof(uint64_t));
    zap_status_t st = agree(w, w->host == NULL ? ZAP_ERR_NO_MEMORY : ZAP_OK);
    if (st == ZAP_OK && PMPI_Allgather(&h, 1, MPI_UINT64_T, w->host, 1, MPI_UINT64_T, w->comm) != MPI_SUCCESS)
        st = ZAP_ERR_TRANSPORT;
    return st;
}

zap_status_t zap_ucp_worker_init(zap_ucp_worker_t *w, MPI_Comm comm, double timeout_s)
{
    memset(w, 0, sizeof(*w));
    int inited = 0, finalized = 0;
    PMPI_Initialized(&inited);
    PMPI_Finalized(&finalized);
    if (!inited || finalized) {
        zap_error("ucp: MPI must be initialised (and not finalized) to bootstrap the UCX transport");
        return ZAP_ERR_INVALID_PARAM;
    }
    if (PMPI_Comm_dup(comm, &w->comm) != MPI_SUCCESS) {
        zap_error("ucp: MPI_Comm_dup failed");
        w->comm = MPI_COMM_NULL;
        return ZAP_ERR_TRANSPORT;
    }
    PMPI_Comm_rank(w->comm, &w->rank);
    PMPI_Comm_size(w->comm, &w->size);
    zap_status_t st = exchange_hosts(w);
    if (st == ZAP_OK)
        st = agree(w, open_ucp(w, timeout_s));
    if (st == ZAP_OK)
        st = exchange_addresses(w);
    if (st != ZAP_OK) {
        zap_ucp_worker_cleanup(w);
        return st;
    }
    return ZAP_OK;
}

zap_status_t zap_ucp_worker_init_oob(zap_ucp_worker_t *w, const zap_ucp_oob_t *oob, double timeout_s)
{
    memset(w, 0, sizeof(*w));
    w->comm = MPI_COMM_NULL;
    w->oob = *oob;
    w->rank = oob->rank;
    w->size = oob->size;
    zap_status_t st = exchange_hosts(w);
    if (st == ZAP_OK)
        st = agree(w, open_ucp(w, timeout_s));
    if (st == ZAP_OK)
        st = exchange_addresses(w);
    if (st != ZAP_OK) {
        zap_ucp_worker_cleanup(w);
        return st;
    }
    return ZAP_OK;
}

zap_status_t zap_ucp_worker_agree(zap_ucp_worker_t *w, zap_status_t local) { return agree(w, local); }

zap_status_t zap_ucp_ep_create(zap_ucp_worker_t *w, int peer, int peer_errors, ucp_err_handler_cb_t cb, void *arg,
                               ucp_ep_h *ep_p)
{
    ucp_ep_params_t ep;
    memset(&ep, 0, sizeof(ep));
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = (const ucp_address_t *)(w->addrs + w->addr_off[peer]);
    ep.err_mode = peer_errors ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
    if (peer_errors) {
        ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep.err_handler.cb = cb;
        ep.err_handler.arg = arg;
    }
    ucs_status_t s = ucp_ep_create(w->worker, &ep, ep_p);
    if (s == UCS_ERR_UNREACHABLE && peer_errors)
        return ZAP_ERR_UNSUPPORTED; /* the caller decides; nothing logged */
    if (s != UCS_OK) {
        /* A same-host peer's shared-memory FIFO is gone only once its
         * worker is: the segment is removed at its last detach, and the
         * owner holds it for life. So this is the peer failing, as a
         * refused connection is. */
        bool gone = zap_ucp_status(s) == ZAP_ERR_PEER_FAILED || s == UCS_ERR_SHMEM_SEGMENT;
        zap_error("ucp: rank %d: ucp_ep_create to rank %d failed: %s%s", w->rank, peer, ucs_status_string(s),
                  s == UCS_ERR_SHMEM_SEGMENT ? " (its shared memory is gone: it exited or failed)" : "");
        return gone ? ZAP_ERR_PEER_FAILED : ZAP_ERR_TRANSPORT;
    }
    return ZAP_OK;
}

int zap_ucp_want_peer_errors(const zap_ucp_worker_t *w, int peer)
{
    if (peer == w->rank)
        return 0;
    return w->host[peer] != w->host[w->rank] || w->same_host_errors;
}

zap_status_t zap_ucp_am_listen(ucp_worker_h worker, unsigned id, ucp_am_recv_callback_t cb, void *arg, int rank)
{
    ucp_am_handler_param_t hp = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG,
        .id = id,
        .cb = cb,
        .arg = arg,
    };
    ucs_status_t s = ucp_worker_set_am_recv_handler(worker, &hp);
    if (s != UCS_OK) {
        zap_error("ucp: rank %d: ucp_worker_set_am_recv_handler failed: %s", rank, ucs_status_string(s));
        return ZAP_ERR_TRANSPORT;
    }
    return ZAP_OK;
}

int zap_ucp_peer_over_tcp(const zap_ucp_worker_t *w, int peer)
{
    if (peer == w->rank)
        return 0;
    return w->host[peer] != w->host[w->rank] ? w->tcp_other_hosts : w->tcp_this_host;
}

ucs_status_t zap_ucp_wait_ptr(ucp_worker_h worker, ucs_status_ptr_t req, double deadline)
{
    if (!UCS_PTR_IS_PTR(req))
        return UCS_PTR_STATUS(req);
    ucs_status_t s;
    unsigned n = 0;
    while ((s = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
        if ((++n & 63) == 0 && zap_clock_now() > deadline) {
            s = UCS_ERR_TIMED_OUT;
            break;
        }
    }
    ucp_request_free(req);
    return s;
}

void zap_ucp_worker_cleanup(zap_ucp_worker_t *w)
{
    if (w->worker != NULL)
        ucp_worker_destroy(w->worker);
    if (w->context != NULL) {
        ucp_cleanup(w->context);
        zap_ucp_vm_watch_stop();
    }
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (w->comm != MPI_COMM_NULL && w->comm != 0 && !finalized)
        PMPI_Comm_free(&w->comm);
    free(w->addrs);
    free(w->addr_len);
    free(w->addr_off);
    free(w->host);
    memset(w, 0, sizeof(*w));
    w->comm = MPI_COMM_NULL;
}
