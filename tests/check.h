/* The tests' assertions, counted for tests/run.sh: main ends with
   printf("%d passed, %d failed\n", npass, nfail).
     CHECK(cond, fmt, ...)      prints "PASS msg" or "FAIL msg";
     check(ok, name, fmt, ...)  prints "PASS name", or "FAIL name: details" (details only on failure). */
#ifndef SC_TESTS_CHECK_H
#define SC_TESTS_CHECK_H
#include <stdarg.h>
#include <stdio.h>

static int npass, nfail;
#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (cond) { npass++; printf("PASS "); } else { nfail++; printf("FAIL "); }       \
        printf(__VA_ARGS__); printf("\n");                                                 \
    } while (0)

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline void check(int ok, const char *name, const char *fmt, ...)
{
    if (ok) {
        printf("PASS %s\n", name);
        npass++;
    } else {
        char buf[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        printf("FAIL %s: %s\n", name, buf);
        nfail++;
    }
    fflush(stdout); /* a crash later still leaves the verdicts so far */
}
#endif
