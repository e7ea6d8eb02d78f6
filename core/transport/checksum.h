/* Checksum mode (ZAP_CHECKSUM=1): a transport decorator that gives every
 * message a CRC32C, checked on receipt. Internal to zap; the collectives'
 * zap_comm_create applies it when the setting is 1.
 *
 * Wire: a message of len bytes with tag T goes out as two messages of the
 * wrapped transport: the payload itself with tag T (unchanged, sent from the
 * caller's buffer, so large messages keep their zero copy), then the 4-byte
 * little-endian CRC32C of the payload with tag T | ZAP_TRANSPORT_CHECKSUM_TAG_BIT.
 * Both streams keep their order between a pair of ranks, so the k-th payload
 * on (peer, T) pairs with the k-th checksum on (peer, T | bit). A receive
 * posts both; when both are in, the payload's CRC is recomputed and a
 * mismatch completes the request with ZAP_ERR_CORRUPT, logging the sending
 * rank, the tag, the length and both values. A truncated payload completes
 * with ZAP_ERR_TRUNCATED and its checksum message is still consumed, so the
 * next message pairs correctly.
 *
 * Both ends must use the mode (ZAP_CHECKSUM is read on every rank; a rank
 * without it leaves checksum messages unmatched and its peers wait). */
#ifndef ZAP_TRANSPORT_CHECKSUM_H
#define ZAP_TRANSPORT_CHECKSUM_H
#include "zap/transport.h"

/* The tag bit reserved for checksum messages: callers of a wrapped transport
 * must not set it (isend/irecv refuse such tags with ZAP_ERR_INVALID_PARAM).
 * Bit 42, not a high bit: the UCX transport maps tags below 2^44 one to one
 * and folds higher bits onto low ones, where a folded checksum tag could
 * collide with a collective's tag; collectives leave bit 42 free. */
#define ZAP_TRANSPORT_CHECKSUM_TAG_BIT (UINT64_C(1) << 42)

/* Returns in *t_p a transport with inner's ranks and pool that checksums
 * every message as above. inner is borrowed: it must outlive the wrapper, and
 * closing the wrapper (zap_transport_close) frees only the wrapper, never
 * inner. The wrapper's requests are its own (zap_request_* work on them).
 * Test hook: with ZAP_TEST_CORRUPT_RANK=r in the environment when the wrapper
 * is created, every payload received from rank r has one bit flipped before
 * its check, as a corrupting link would. Returns ZAP_OK;
 * ZAP_ERR_INVALID_PARAM for NULL arguments or a malformed
 * ZAP_TEST_CORRUPT_RANK; ZAP_ERR_CLOSED when inner is closed;
 * ZAP_ERR_NO_MEMORY. Thread-safe as inner is. */
zap_status_t zap_transport_checksum_wrap(zap_transport_t *inner, zap_transport_t **t_p);

/* 1 when t is a checksum wrapper, else 0. */
int zap_transport_is_checksum(const zap_transport_t *t);
#endif
