/* The mutating link of the wire fuzz targets: a transport decorator that,
 * once active, replaces (or alters) each message its rank receives with the
 * next chunk of the fuzz input, as a corrupting or malicious link would.
 *
 * Chunks, without modes: [u16 little-endian length][bytes]: the message is
 * replaced by the bytes. With modes: [u8 mode][u16 length][bytes]: mode % 3
 * is 0 (pass the message unchanged; the bytes are skipped), 1 (replace it) or
 * 2 (xor the bytes into it from offset 0, keeping its length). A replacement
 * longer than the receive buffer completes the receive with
 * ZAP_ERR_TRUNCATED, as the transport would. When the input runs out,
 * messages pass unchanged. */
#ifndef ZAP_TESTS_FUZZ_MUTATING_LINK_H
#define ZAP_TESTS_FUZZ_MUTATING_LINK_H
#include "transport/transport_impl.h"

typedef struct mut_transport {
    zap_transport_t base;
    zap_transport_ops_t ops;
    zap_transport_t *inner;
    const uint8_t *data; /* remaining fuzz chunks */
    size_t left;
    int with_modes;
    int active;          /* replace messages only once set */
    int replaced;        /* messages replaced or altered so far */
} mut_transport_t;

/* Sets up m over inner (borrowed) with the chunks at data (borrowed). */
void mut_link_init(mut_transport_t *m, zap_transport_t *inner, const uint8_t *data, size_t len, int with_modes);
#endif
