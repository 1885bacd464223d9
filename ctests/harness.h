/* A ten-line test harness for the C tests: CHECK records a failure with its location and
 * goes on; each test is a function; main() returns non-zero if anything failed. */
#ifndef ACLPROF_CTEST_HARNESS_H
#define ACLPROF_CTEST_HARNESS_H
#include <stdio.h>
#include <stdlib.h>

static int g_failures = 0;
#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            g_failures++;                                                           \
        }                                                                           \
    } while (0)
#define CHECK_EQ(a, b)                                                                          \
    do {                                                                                        \
        long long a_ = (long long)(a), b_ = (long long)(b);                                     \
        if (a_ != b_) {                                                                         \
            fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, #a, \
                    a_, #b, b_);                                                                \
            g_failures++;                                                                       \
        }                                                                                       \
    } while (0)
#define RUN(test)                                                                  \
    do {                                                                           \
        int before_ = g_failures;                                                  \
        test();                                                                    \
        printf("%s %s\n", g_failures == before_ ? "PASSED" : "FAILED", #test);     \
        fflush(stdout);                                                            \
    } while (0)
#define DONE() return g_failures == 0 ? 0 : 1

/* A new directory "aclprof-ctest-XXXXXX" under $TMPDIR (the Rust harness gives each program
 * one under target/, so nothing is left in /tmp), else under /tmp; path holds 4096 bytes. */
#define MAKE_TEMP_DIR(path)                                                              \
    do {                                                                                 \
        const char *t_ = getenv("TMPDIR");                                               \
        snprintf((path), 4096, "%s/aclprof-ctest-XXXXXX", t_ && *t_ ? t_ : "/tmp");      \
        CHECK(mkdtemp(path) != NULL);                                                    \
    } while (0)
#endif
