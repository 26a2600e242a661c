/* The tests' one assertion: CHECK(cond, fmt, ...) prints "PASS msg" or "FAIL msg" and counts it;
   main ends with printf("%d passed, %d failed\n", npass, nfail) for tests/run.sh. */
#ifndef SC_TESTS_CHECK_H
#define SC_TESTS_CHECK_H
#include <stdio.h>

static int npass, nfail;
#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (cond) { npass++; printf("PASS "); } else { nfail++; printf("FAIL "); }       \
        printf(__VA_ARGS__); printf("\n");                                                 \
    } while (0)
#endif
