#ifndef ZAP_VERSION_H
#define ZAP_VERSION_H
#include "zap/common.h"

#define ZAP_VERSION_MAJOR 0
#define ZAP_VERSION_MINOR 1
#define ZAP_VERSION_PATCH 0
#define ZAP_VERSION_STRING_PUBLIC "0.1.0"

ZAP_BEGIN_DECLS
/* The library's version string ("major.minor.patch"); a constant, never freed. */
ZAP_API const char *zap_version(void);
ZAP_END_DECLS
#endif
