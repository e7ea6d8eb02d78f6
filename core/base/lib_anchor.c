/* libzap.so is assembled from the layer archives' objects; a shared library
 * target needs at least one source of its own, and this is it. */
typedef int zap_lib_anchor_t;
