/* The machine's names for a program's report, and mkdir -p: shared by the demos (demo.h) and
   the bench programs, which do not draw figures. */
#ifndef DEMOS_MACHINE_H
#define DEMOS_MACHINE_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#ifndef DEMO_DEF
#if defined(__GNUC__)
#define DEMO_DEF static __attribute__((unused))
#else
#define DEMO_DEF static
#endif
#endif

/* mkdir -p: 0, or -1 with a message on stderr. */
DEMO_DEF int demo_mkdirs(const char *dir)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) {
        fprintf(stderr, "error: path too long: %s\n", dir);
        return -1;
    }
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || !*p) {
            char keep = *p;
            *p = 0;
            if (mkdir(buf, 0777) && errno != EEXIST) {
                fprintf(stderr, "error: cannot create directory %s: %s\n", buf, strerror(errno));
                return -1;
            }
            *p = keep;
            if (!keep) return 0;
        }
    }
}

/* The CPU's model name from /proc/cpuinfo ("cpu" where unknown). */
DEMO_DEF void demo__cpu_name(char *buf, size_t cap)
{
    snprintf(buf, cap, "cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        char *p = strchr(line, ':');
        if (!p) break;
        p++;
        while (*p == ' ' || *p == '\t') p++;
        p[strcspn(p, "\n")] = 0;
        snprintf(buf, cap, "%s", p);
        break;
    }
    fclose(f);
}

/* The NVIDIA kernel driver's version ("580.159.04"), from /proc/driver/nvidia/version. */
DEMO_DEF void demo__driver_version(char *buf, size_t cap)
{
    snprintf(buf, cap, "?");
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f) return;
    char line[512];
    if (fgets(line, sizeof line, f)) {
        /* "NVRM version: NVIDIA UNIX [Open Kernel Module for] x86_64 [Kernel Module]  580.159.04  Tue ...":
           the first word made of digits and dots, with a dot */
        for (char *w = strtok(line, " \t\n"); w; w = strtok(NULL, " \t\n"))
            if (strchr(w, '.') && strspn(w, "0123456789.") == strlen(w)) {
                snprintf(buf, cap, "%s", w);
                break;
            }
    }
    fclose(f);
}

#endif
