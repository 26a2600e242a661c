/* check_outputs: checks the files a demo wrote, for tests/test_demos.sh.

     check_outputs png FILE W H          FILE is a PNG that decodes to W x H pixels (and is not
                                         one flat colour)
     check_outputs csv FILE COL,COL,...  FILE is a CSV whose header holds those columns, with at
                                         least one data row, and every numeric cell of those
                                         columns is finite (a cell may be empty or a word, such
                                         as a policy name or "OOM")
     check_outputs md FILE PNG...        FILE (summary.md) embeds each PNG named

   Prints "PASS what" or "FAIL what: why" and exits 0 or 1. */
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#endif
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const char *file, const char *why)
{
    printf("FAIL %s %s: %s\n", what, file, why);
    return 1;
}

static int check_png(const char *file, int w, int h)
{
    int x, y, n;
    unsigned char *px = stbi_load(file, &x, &y, &n, 3);
    if (!px) return fail("png", file, stbi_failure_reason());
    char why[128];
    int rc = 0;
    if (x != w || y != h) {
        snprintf(why, sizeof why, "decodes to %dx%d, expected %dx%d", x, y, w, h);
        rc = fail("png", file, why);
    } else {
        size_t i, total = (size_t)x * (size_t)y * 3;
        for (i = 3; i < total && !memcmp(px + i, px, 3); i += 3) {}
        if (i >= total) rc = fail("png", file, "every pixel has the same colour");
    }
    stbi_image_free(px);
    if (!rc) printf("PASS png %s %dx%d\n", file, w, h);
    return rc;
}

/* Split a CSV line in place at commas outside double quotes; returns the number of cells. */
static int split(char *line, char **cell, int cap)
{
    int n = 0, q = 0;
    char *p = line;
    line[strcspn(line, "\r\n")] = 0;
    if (n < cap) cell[n++] = p;
    for (; *p; p++) {
        if (*p == '"') q = !q;
        else if (*p == ',' && !q && n < cap) {
            *p = 0;
            cell[n++] = p + 1;
        }
    }
    return n;
}

static int check_csv(const char *file, const char *cols)
{
    FILE *f = fopen(file, "r");
    if (!f) return fail("csv", file, "cannot open");
    static char line[1 << 16], copy[1 << 16];
    char *head[512], *cell[512], why[256];
    if (!fgets(line, sizeof line, f)) {
        fclose(f);
        return fail("csv", file, "empty");
    }
    int nh = split(line, head, 512), idx[128], nc = 0;
    strncpy(copy, cols, sizeof copy - 1);
    for (char *c = strtok(copy, ","); c; c = strtok(NULL, ",")) {
        int k = -1;
        for (int i = 0; i < nh; i++)
            if (!strcmp(head[i], c)) k = i;
        if (k < 0) {
            snprintf(why, sizeof why, "no column '%s' in the header", c);
            fclose(f);
            return fail("csv", file, why);
        }
        if (nc < 128) idx[nc++] = k;
    }
    static char body[1 << 16];
    int rows = 0;
    while (fgets(body, sizeof body, f)) {
        int n = split(body, cell, 512);
        if (n == 1 && !cell[0][0]) continue;
        rows++;
        for (int j = 0; j < nc; j++) {
            if (idx[j] >= n) {
                snprintf(why, sizeof why, "row %d has %d cells, fewer than the header's %d", rows, n, nh);
                fclose(f);
                return fail("csv", file, why);
            }
            char *s = cell[idx[j]], *end;
            double v = strtod(s, &end);
            if (end != s && *end == 0 && !isfinite(v)) {
                snprintf(why, sizeof why, "row %d column '%s' is not finite: %s", rows, head[idx[j]], s);
                fclose(f);
                return fail("csv", file, why);
            }
            if (!strcmp(s, "nan") || !strcmp(s, "-nan") || !strcmp(s, "inf")) {
                snprintf(why, sizeof why, "row %d column '%s' is %s", rows, head[idx[j]], s);
                fclose(f);
                return fail("csv", file, why);
            }
        }
    }
    fclose(f);
    if (!rows) return fail("csv", file, "no data rows");
    printf("PASS csv %s (%d rows, %d columns checked)\n", file, rows, nc);
    return 0;
}

static int check_md(const char *file, int n, char **pngs)
{
    FILE *f = fopen(file, "r");
    if (!f) return fail("md", file, "cannot open");
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = 0;
    fclose(f);
    for (int i = 0; i < n; i++) {
        char want[512];
        snprintf(want, sizeof want, "(%s)", pngs[i]);
        if (!strstr(text, want)) {
            char why[600];
            snprintf(why, sizeof why, "does not embed %s", pngs[i]);
            return fail("md", file, why);
        }
    }
    printf("PASS md %s embeds %d figures\n", file, n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && !strcmp(argv[1], "png")) return check_png(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc == 4 && !strcmp(argv[1], "csv")) return check_csv(argv[2], argv[3]);
    if (argc >= 3 && !strcmp(argv[1], "md")) return check_md(argv[2], argc - 3, argv + 3);
    fprintf(stderr, "usage: check_outputs png FILE W H | csv FILE COLS | md FILE PNG...\n");
    return 2;
}
