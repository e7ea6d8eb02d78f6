/* The entry points every zap fuzz target defines. Under ZAP_FUZZ=ON they are
 * driven by libFuzzer; in the normal build replay_main.c runs each corpus
 * file through the same function, so CI checks the corpus on every commit. */
#ifndef ZAP_TESTS_FUZZ_TARGET_H
#define ZAP_TESTS_FUZZ_TARGET_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
#ifdef __cplusplus
}
#endif

/* A failed property: print it and abort, so libFuzzer saves the input and
 * the replay driver's test fails. */
#define FUZZ_CHECK(cond)                                                                          \
    do {                                                                                          \
        if (!(cond))                                                                              \
            fuzz_fail(__FILE__, __LINE__, #cond);                                                 \
    } while (0)
void fuzz_fail(const char *file, int line, const char *what) __attribute__((noreturn));
#endif
