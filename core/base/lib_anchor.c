/* libzap.so is assembled from the layer archives; a shared library target needs
 * at least one source of its own, and this is it. */
#include "zap/version.h"

ZAP_API const char *zap_version(void) { return ZAP_VERSION_STRING_PUBLIC; }
