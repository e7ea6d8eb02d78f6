/* Host identities and per-class send counters (peer_class.h): the entry
 * points zap_transport_host and zap_transport_traffic, and the identity of
 * this process's host. Backends without the ops put every rank on this host
 * and count nothing. */
#include "transport/peer_class.h"
#include "transport/transport_impl.h"
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * UINT64_C(1099511628211);
    return h;
}

/* The boot id tells two kernels apart where the host names are the same
 * (containers named alike on different machines); the host name tells apart
 * namespace hosts of one kernel, which have names of their own. Where the
 * boot id cannot be read (not Linux, /proc not mounted) the name alone
 * decides. */
static uint64_t host_id_now(void)
{
    char buf[256];
    uint64_t h = UINT64_C(14695981039346656037);
    memset(buf, 0, sizeof(buf));
    if (gethostname(buf, sizeof(buf) - 1) == 0)
        h = fnv1a(h, buf, strlen(buf));
    h = fnv1a(h, "\n", 1);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
            n--;
        h = fnv1a(h, buf, n);
    }
    return h != 0 ? h : 1;
}

uint64_t zap_host_id(void)
{
    static _Atomic uint64_t id;
    uint64_t v = atomic_load_explicit(&id, memory_order_relaxed);
    if (v == 0) {
        v = host_id_now(); /* racing threads compute the same value */
        atomic_store_explicit(&id, v, memory_order_relaxed);
    }
    return v;
}

zap_status_t zap_transport_host(const zap_transport_t *t, int rank, uint64_t *host_p)
{
    if (t == NULL || host_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    if (rank < 0 || rank >= t->size)
        return ZAP_ERR_NOT_FOUND;
    if (atomic_load_explicit(&((zap_transport_t *)t)->closed, memory_order_acquire))
        return ZAP_ERR_CLOSED;
    *host_p = t->ops->host != NULL ? t->ops->host(t, rank) : zap_host_id();
    return ZAP_OK;
}

zap_status_t zap_transport_traffic(zap_transport_t *t, zap_transport_traffic_t *traffic_p)
{
    if (t == NULL || traffic_p == NULL)
        return ZAP_ERR_INVALID_PARAM;
    zap_transport_traffic_t c;
    memset(&c, 0, sizeof(c));
    if (t->ops->traffic != NULL)
        t->ops->traffic(t, &c);
    *traffic_p = c;
    return ZAP_OK;
}
