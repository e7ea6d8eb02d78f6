#include "zap/version.h"

const char *zap_version(void) { return ZAP_VERSION_STRING_PUBLIC; }
