/* The UCP tag layout of the UCX transport (zap/ucp.h): sender rank in the
 * upper ZAP_UCP_RANK_BITS bits, the contract tag in the lower ZAP_UCP_TAG_BITS
 * bits. Receives match the whole 64 bits, so a receive from rank p with tag t
 * takes only messages p sent with tag t. */
#ifndef ZAP_TRANSPORT_UCP_TAG_H
#define ZAP_TRANSPORT_UCP_TAG_H
#include <stdint.h>
#include "zap/ucp.h"

#define ZAP_UCP_TAG_MASK ((UINT64_C(1) << ZAP_UCP_TAG_BITS) - 1)
#define ZAP_UCP_MATCH_ALL UINT64_MAX

/* Contract tags below 2^44 are kept as they are; the bits above are xor-ed
 * into the low ones (a fold, not a hash: documented as may-collide). */
static inline uint64_t zap_ucp_tag(int src, uint64_t tag)
{
    uint64_t low = (tag ^ (tag >> ZAP_UCP_TAG_BITS)) & ZAP_UCP_TAG_MASK;
    return ((uint64_t)(uint32_t)src << ZAP_UCP_TAG_BITS) | low;
}

static inline int zap_ucp_tag_src(uint64_t ucp_tag) { return (int)(ucp_tag >> ZAP_UCP_TAG_BITS); }
#endif
