/* Plain host backing: page-aligned memory from mmap, so chunks start on page
 * boundaries (what registration wants) and go back to the system whole. */
#include "pool/backing.h"
#include "base/log.h"
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

static zap_status_t host_init(int device, void **ctx_p)
{
    (void)device;
    *ctx_p = NULL;
    return ZAP_OK;
}

static zap_status_t host_alloc(void *ctx, size_t len, void **ptr_p, void **dev_p)
{
    (void)ctx;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        zap_error("pool: host backing: mmap of %zu bytes failed: %s", len, strerror(errno));
        return ZAP_ERR_NO_MEMORY;
    }
    *ptr_p = p;
    *dev_p = NULL;
    return ZAP_OK;
}

static void host_release(void *ctx, void *ptr, size_t len)
{
    (void)ctx;
    if (munmap(ptr, len) != 0)
        zap_error("pool: host backing: munmap of %zu bytes failed: %s", len, strerror(errno));
}

static void host_fini(void *ctx) { (void)ctx; }

const zap_backing_ops_t zap_backing_host = {
    .name = "host",
    .kind = ZAP_MEM_HOST,
    .init = host_init,
    .alloc = host_alloc,
    .release = host_release,
    .prefetch = NULL,
    .fini = host_fini,
};
