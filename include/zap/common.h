/* Shared by every public header: the export macro and C++ linkage. Plain C11,
 * no GNU extensions beyond the visibility attribute, which is guarded. */
#ifndef ZAP_COMMON_H
#define ZAP_COMMON_H

#if defined(__GNUC__)
#define ZAP_API __attribute__((visibility("default")))
#else
#define ZAP_API
#endif

#ifdef __cplusplus
#define ZAP_BEGIN_DECLS extern "C" {
#define ZAP_END_DECLS }
#else
#define ZAP_BEGIN_DECLS
#define ZAP_END_DECLS
#endif

#endif
