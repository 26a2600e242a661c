/* test_plot.c - checks demos/plot.h by drawing known scenes and probing pixels.

   Prints "PASS name" or "FAIL name: details" per check and ends with "N passed, M failed";
   exits non-zero on any failure. The scenes are also written under build/plot_test/ for a
   look by eye. */
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STB_TRUETYPE_IMPLEMENTATION
#define STBTT_STATIC
#include "demos/plot.h"

#include <sys/stat.h>

#include "check.h"


#define OUTDIR "build/plot_test"

static void save(const pl_canvas *c, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, OUTDIR "/%s.png", name);
    pl_write_png(c, path);
}

/* A part of the canvas, k times larger, for looking at details. */
static void save_zoom(const pl_canvas *c, const char *name, int x0, int y0, int w, int h, int k)
{
    unsigned char *z = (unsigned char *)malloc((size_t)w * k * h * k * 3);
    if (!z) return;
    for (int y = 0; y < h * k; y++)
        for (int x = 0; x < w * k; x++) {
            uint32_t p = pl_get(c, x0 + x / k, y0 + y / k);
            unsigned char *q = z + ((size_t)y * w * k + x) * 3;
            q[0] = (unsigned char)(p >> 16), q[1] = (unsigned char)(p >> 8), q[2] = (unsigned char)p;
        }
    char path[256];
    snprintf(path, sizeof path, OUTDIR "/zoom_%s.png", name);
    stbi_write_png(path, w * k, h * k, 3, z, w * k * 3);
    free(z);
}

/* Colour distance (max over channels). */
static int cdist(uint32_t a, uint32_t b)
{
    int d = 0;
    for (int k = 0; k < 24; k += 8) {
        int u = (int)((a >> k) & 255) - (int)((b >> k) & 255);
        if (u < 0) u = -u;
        if (u > d) d = u;
    }
    return d;
}

/* Bounding box of pixels that are not white within [x0, x1) x [y0, y1); 0 if none. */
static int ink_box(const pl_canvas *c, int x0, int y0, int x1, int y1, int box[4])
{
    int found = 0;
    box[0] = x1, box[1] = y1, box[2] = -1, box[3] = -1;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++)
            if (cdist(pl_get(c, x, y), 0xFFFFFF) > 40) {
                found = 1;
                if (x < box[0]) box[0] = x;
                if (y < box[1]) box[1] = y;
                if (x > box[2]) box[2] = x;
                if (y > box[3]) box[3] = y;
            }
    return found;
}

static int count_ink(const pl_canvas *c)
{
    int n = 0;
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++) n += cdist(pl_get(c, x, y), 0xFFFFFF) > 40;
    return n;
}

static int boxes_overlap(const pl_mark *a, const pl_mark *b)
{
    return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1;
}

/* ---- text and fonts ---- */

static void test_text(void)
{
    pl_canvas c;
    if (pl_init(&c, 400, 120)) {
        check(0, "text_init", "pl_init failed");
        return;
    }
    check(c.w == 400 && c.h == 120 && c.px != NULL, "text_init", "canvas not set up");
    pl_text(&c, 200, 60, 20, 0x000000, PL_CENTER | PL_MIDDLE, "Hello, plot");
    int b[4];
    int found = ink_box(&c, 0, 0, c.w, c.h, b);
    double tb[4];
    pl_text_box(&c, 200, 60, 20, PL_CENTER | PL_MIDDLE, "Hello, plot", tb);
    check(found && b[0] >= 0 && b[2] < c.w && b[1] >= 0 && b[3] < c.h, "text_inside_canvas", "box %d %d %d %d", b[0], b[1], b[2], b[3]);
    check(found && fabs((b[0] + b[2]) / 2.0 - 200) < 4 && b[1] < 60 && b[3] > 55, "text_near_anchor",
          "ink centre %.1f, rows %d..%d", (b[0] + b[2]) / 2.0, b[1], b[3]);
    check(found && b[0] >= tb[0] - 2 && b[2] <= tb[2] + 2 && b[1] >= tb[1] - 2 && b[3] <= tb[3] + 2, "text_box_holds_ink",
          "ink %d %d %d %d, box %.1f %.1f %.1f %.1f", b[0], b[1], b[2], b[3], tb[0], tb[1], tb[2], tb[3]);
    /* turned text is taller than wide */
    pl_fill(&c, 0xFFFFFF);
    pl_text(&c, 100, 60, 14, 0x000000, PL_CENTER | PL_MIDDLE | PL_ROT90, "vertical");
    found = ink_box(&c, 0, 0, c.w, c.h, b);
    check(found && b[3] - b[1] > 2 * (b[2] - b[0]) && fabs((b[1] + b[3]) / 2.0 - 60) < 4, "text_rot90",
          "box %d %d %d %d", b[0], b[1], b[2], b[3]);
    save(&c, "text_rot");
    pl_free(&c);
}

static void test_fallback_font(void)
{
    pl_set_font_paths("/nonexistent.ttf", NULL);
    pl_canvas c;
    int rc = pl_init(&c, 420, 200);
    pl_set_font_paths(NULL, NULL);
    check(rc == 0 && pl_font_is_fallback(&c), "fallback_init", "rc %d, fallback %d", rc, rc ? -1 : pl_font_is_fallback(&c));
    if (rc) return;
    double w = pl_text_width(&c, 16, 0, "Fallback 0123");
    pl_text(&c, 10, 30, 16, 0x000000, PL_LEFT | PL_BASELINE, "Fallback 0123");
    int b[4];
    int found = ink_box(&c, 0, 0, c.w, c.h, b);
    check(w > 0 && found && b[2] - b[0] > w * 0.8 && b[2] - b[0] < w + 3, "fallback_text", "width %.1f, ink %d..%d", w, b[0], b[2]);
    check(fabs(pl_text_width(&c, 16, 0, "\xE2\x88\x92\xC3\x97") - pl_text_width(&c, 16, 0, "-x")) < 1e-9, "fallback_non_ascii",
          "widths differ");
    pl_canvas d;
    pl_set_font_paths("/nonexistent.ttf", NULL);
    pl_init(&d, 420, 200);
    pl_set_font_paths(NULL, NULL);
    pl_text(&d, 10, 30, 16, 0x000000, 0, "Bold");
    int plain = count_ink(&d);
    pl_fill(&d, 0xFFFFFF);
    pl_text(&d, 10, 30, 16, 0x000000, PL_BOLD, "Bold");
    int bold = count_ink(&d);
    check(bold > plain, "fallback_bold", "bold %d, plain %d ink pixels", bold, plain);
    /* '±' has its own glyph: the '+' plus a bar below it (more ink, lower) */
    pl_fill(&d, 0xFFFFFF);
    pl_text(&d, 10, 30, 16, 0x000000, PL_BASELINE, "+");
    int plus = count_ink(&d), pb[4], qb[4];
    ink_box(&d, 0, 0, d.w, d.h, pb);
    pl_fill(&d, 0xFFFFFF);
    pl_text(&d, 10, 30, 16, 0x000000, PL_BASELINE, "\xC2\xB1");
    int pm = count_ink(&d);
    ink_box(&d, 0, 0, d.w, d.h, qb);
    check(pm > plus && qb[3] > pb[3], "fallback_plus_minus", "'\xC2\xB1' %d ink pixels (bottom row %d), '+' %d (%d)", pm,
          qb[3], plus, pb[3]);
    pl_free(&d);
    /* a sample sheet, to look at */
    pl_text(&c, 10, 60, 13, 0x222222, 0, "The quick brown fox jumps over the lazy dog.");
    pl_text(&c, 10, 85, 13, 0x222222, PL_BOLD, "THE QUICK BROWN FOX: 1/2/5 x 10^k (ms) [ok] {a|b} ~#$%&*+@");
    pl_text(&c, 10, 112, 20, 0x222222, 0, "gjpqy 3.14159 \xE2\x88\x92" "2 \xC3\x97" " 4 = 1e-5?");
    pl_rect(&c, 10, 130, 300, 150, 0x1F77B4);
    pl_text(&c, 20, 140, 13, 0x000000, PL_HALO | PL_MIDDLE, "halo over a bar");
    pl_text(&c, 400, 190, 13, 0x222222, PL_ROT90, "turned");
    save(&c, "fallback_font");
    save_zoom(&c, "fallback_font", 0, 40, 300, 80, 3);
    /* the halo clears the bar around the letters: white pixels appear inside the bar */
    int white = 0;
    for (int yy = 131; yy < 150; yy++)
        for (int xx = 12; xx < 150; xx++) white += cdist(pl_get(&c, xx, yy), 0xFFFFFF) < 20;
    check(white > 50, "fallback_halo", "%d white pixels in the bar", white);
    pl_free(&c);
}

/* ---- axes and mapping ---- */

static void test_log_axis(void)
{
    pl_canvas c;
    pl_init(&c, 600, 400);
    pl_chart ch;
    pl_chart_init(&ch, &c, 80, 20, 580, 350);
    pl_chart_x(&ch, 1, 1000, 1, "tokens");
    pl_chart_y(&ch, 0.01, 100, 1, "loss");
    double a = pl_chart_px(&ch, 100) - pl_chart_px(&ch, 10), b = pl_chart_px(&ch, 1000) - pl_chart_px(&ch, 100);
    double e = pl_chart_py(&ch, 1) - pl_chart_py(&ch, 10), f = pl_chart_py(&ch, 0.1) - pl_chart_py(&ch, 1);
    check(a > 50 && fabs(a - b) < 1e-6 && e > 20 && fabs(e - f) < 1e-6, "log_axis_decades", "%g vs %g, %g vs %g", a, b, e, f);
    check(isnan(pl_chart_px(&ch, 0)) && isnan(pl_chart_py(&ch, -1)), "log_axis_nonpositive", "not NaN");
    pl_chart_axes(&ch);
    double x[50], y[50];
    for (int i = 0; i < 50; i++) x[i] = pow(10, 3.0 * i / 49), y[i] = 50 / sqrt(x[i]);
    pl_chart_line(&ch, x, y, 50, pl_color(0), 1.8, 0, "50 / sqrt(t)");
    pl_chart_markers(&ch, x, y, 50, pl_color(0), PL_M_CIRCLE, 5, NULL);
    pl_chart_legend(&ch);
    save(&c, "log_axes");
    pl_free(&c);
}

static void test_format(void)
{
    char b[64];
    int ok = 1;
    char got[512] = "";
    struct { double v, step, ref; const char *want; } cases[] = {
        {0.30000000000000004, 0.1, 1, "0.3"}, {0.3, 0.1, 1, "0.3"}, {25000, 5000, 30000, "25000"},
        {250000, 50000, 300000, "250k"}, {1.5e6, 5e5, 2e6, "1.5M"}, {2e-5, 1e-5, 5e-5, "2e-5"},
        {0, 0.5, 2, "0.0"}, {1e-17, 0.1, 1, "0.0"}, {7e9, 1e9, 8e9, "7B"}, {0.0025, 0.0005, 0.005, "0.0025"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pl_format_tick(b, sizeof b, cases[i].v, cases[i].step, cases[i].ref);
        if (strcmp(b, cases[i].want)) {
            ok = 0;
            snprintf(got + strlen(got), sizeof got - strlen(got), "[%s want %s] ", b, cases[i].want);
        }
    }
    pl_format_tick(b, sizeof b, -2, 1, 5);
    if (strcmp(b, "\xE2\x88\x92" "2")) ok = 0, strcat(got, "[minus]");
    pl__format_log(b, sizeof b, 10000);
    if (strcmp(b, "10k")) ok = 0, strcat(got, "[10k]");
    pl__format_log(b, sizeof b, 0.001);
    if (strcmp(b, "0.001")) ok = 0, strcat(got, "[0.001]");
    check(ok, "tick_format", "%s", got);

    double lo = INFINITY, hi = -INFINITY, v[5] = {3, NAN, -2, INFINITY, 7};
    pl_range_of(v, 5, &lo, &hi);
    double lo0 = 0, hi0 = 0;
    pl_range_of(v, 5, &lo0, &hi0);
    check(lo == -2 && hi == 7 && lo0 == -2 && hi0 == 7, "range_of", "%g %g", lo, hi);

    pl_chart ch;
    pl_canvas c;
    pl_init(&c, 10, 10);
    pl_chart_init(&ch, &c, 0, 0, 10, 10);
    pl_chart_y(&ch, 0, 10, 0, NULL);
    check(ch.ylo == 0 && ch.yhi > 10, "range_zero_kept", "%g..%g", ch.ylo, ch.yhi);
    pl_free(&c);
}

/* ---- lines ---- */

static void test_line(void)
{
    pl_canvas c;
    pl_init(&c, 600, 400);
    pl_chart ch;
    pl_chart_init(&ch, &c, 80, 30, 570, 340);
    pl_chart_x(&ch, 0, 10, 0, "x");
    pl_chart_y(&ch, 0, 10, 0, "y");
    pl_chart_axes(&ch);
    double x[3] = {0, 5, 10}, y[3] = {0, 5, 10};
    uint32_t col = 0xD62728;
    pl_chart_line(&ch, x, y, 3, col, 2, 0, NULL);
    int px = (int)floor(pl_chart_px(&ch, 5)), py = (int)floor(pl_chart_py(&ch, 5));
    check(cdist(pl_get(&c, px, py), col) < 60, "line_through_point", "pixel %06X", (unsigned)pl_get(&c, px, py));
    /* clipped: a line leaving the plot area leaves no ink outside it */
    double x2[2] = {5, 20}, y2[2] = {2, 2};
    pl_chart_line(&ch, x2, y2, 2, 0x2CA02C, 2, 0, NULL);
    int row = (int)floor(pl_chart_py(&ch, 2));
    int inside = cdist(pl_get(&c, (int)ch.x1 - 3, row), 0x2CA02C) < 60, outside = 0;
    for (int xx = (int)ceil(ch.x1) + 1; xx < c.w; xx++) outside += cdist(pl_get(&c, xx, row), 0x2CA02C) < 100;
    check(inside && !outside, "line_clipped", "inside %d, outside %d", inside, outside);
    /* NaN breaks the line */
    double x3[3] = {1, 2, 3}, y3[3] = {8, NAN, 8};
    pl_chart_line(&ch, x3, y3, 3, 0x9467BD, 2, 0, NULL);
    int gap = cdist(pl_get(&c, (int)floor(pl_chart_px(&ch, 2)), (int)floor(pl_chart_py(&ch, 8))), 0x9467BD) < 100;
    check(!gap, "line_nan_breaks", "ink at the NaN");
    /* dashed horizontal line has gaps */
    pl_chart_hline(&ch, 9, 0x17BECF, 1, "target");
    int r9 = (int)floor(pl_chart_py(&ch, 9)), on = 0, off = 0;
    for (int xx = (int)ch.x0 + 5; xx < (int)ch.x1 - 5; xx++) {
        if (cdist(pl_get(&c, xx, r9), 0x17BECF) < 60) on++;
        else if (cdist(pl_get(&c, xx, r9), 0xFFFFFF) < 30) off++;
    }
    check(on > 100 && off > 50, "hline_dashed", "on %d, off %d", on, off);
    save(&c, "line");
    save_zoom(&c, "line_dash", (int)ch.x0, r9 - 15, 120, 40, 5);
    pl_free(&c);
}

/* ---- bars ---- */

static void test_bars(void)
{
    pl_canvas c;
    pl_init(&c, 700, 420);
    pl_chart ch;
    pl_chart_init(&ch, &c, 80, 40, 680, 350);
    const char *labels[3] = {"alpha", "beta", "gamma"};
    pl_chart_x_categories(&ch, 3, labels, "policy");
    pl_chart_y(&ch, 0, 10, 0, "ms");
    pl_chart_axes(&ch);
    double v[3] = {3, 7, 5};
    uint32_t col[1] = {0x1F77B4};
    pl_chart_bars(&ch, v, NULL, 3, 1, 0, col, NULL);
    int x = (int)floor(pl_chart_px(&ch, 1));
    double top = pl_chart_py(&ch, 7);
    int below = cdist(pl_get(&c, x, (int)floor(top) + 1), col[0]) < 10;
    int above = cdist(pl_get(&c, x, (int)floor(top) - 1), col[0]) > 100;
    check(below && above, "bar_top_edge", "top %.2f: below %06X above %06X", top, (unsigned)pl_get(&c, x, (int)floor(top) + 1),
          (unsigned)pl_get(&c, x, (int)floor(top) - 1));
    int base = cdist(pl_get(&c, x, (int)ceil(ch.y1) - 1), col[0]) < 10;
    check(base, "bar_starts_at_zero", "bottom row %06X", (unsigned)pl_get(&c, x, (int)ceil(ch.y1) - 1));
    save(&c, "bars_simple");
    pl_free(&c);

    /* stacked: cumulative tops */
    pl_init(&c, 700, 420);
    pl_chart_init(&ch, &c, 80, 40, 680, 350);
    pl_chart_x_categories(&ch, 3, labels, NULL);
    pl_chart_y(&ch, 0, 12, 0, "ms");
    pl_chart_axes(&ch);
    double sv[6] = {2, 3, 4, 4, 1, 6};
    const char *names[2] = {"forward", "backward"};
    pl_chart_bars(&ch, sv, NULL, 3, 2, 1, NULL, names);
    x = (int)floor(pl_chart_px(&ch, 0));
    double t1 = pl_chart_py(&ch, 2), t2 = pl_chart_py(&ch, 5);
    int ok1 = cdist(pl_get(&c, x, (int)floor(t1) + 2), pl_color(0)) < 10 && cdist(pl_get(&c, x, (int)floor(t1) - 2), pl_color(1)) < 10;
    int ok2 = cdist(pl_get(&c, x, (int)floor(t2) + 1), pl_color(1)) < 10 && cdist(pl_get(&c, x, (int)floor(t2) - 1), pl_color(1)) > 60;
    check(ok1 && ok2, "bars_stacked_tops", "first %d, top %d", ok1, ok2);
    pl_chart_legend(&ch);
    save(&c, "bars_stacked");
    pl_free(&c);

    /* grouped with error bars */
    pl_init(&c, 700, 420);
    pl_chart_init(&ch, &c, 80, 40, 680, 350);
    pl_chart_x_categories(&ch, 3, labels, NULL);
    pl_chart_y(&ch, 0, 10, 0, "ms");
    pl_chart_axes(&ch);
    double gv[6] = {3, 4, 6, 5, 2, 8}, ge[6] = {0.5, 1, NAN, 0.5, 0.3, 1};
    pl_chart_bars(&ch, gv, ge, 3, 2, 0, NULL, names);
    double xc = pl_chart_px(&ch, 0), slot = pl_chart_px(&ch, 1) - xc;
    int left = cdist(pl_get(&c, (int)(xc - slot * 0.2), (int)ch.y1 - 3), pl_color(0)) < 10;
    int right = cdist(pl_get(&c, (int)(xc + slot * 0.2), (int)ch.y1 - 3), pl_color(1)) < 10;
    check(left && right, "bars_grouped", "left %d right %d", left, right);
    /* the error bar of group 0 series 1: 4 +- 1, its top cap at py(5) */
    double xm = xc + slot * 0.2, cap_y = pl_chart_py(&ch, 5);
    int hit = 0;
    for (int dy = -1; dy <= 1; dy++) hit |= cdist(pl_get(&c, (int)floor(xm) + 3, (int)floor(cap_y) + dy), 0x262626) < 80;
    check(hit, "bars_error_cap", "no cap near row %.1f", cap_y);
    pl_chart_legend(&ch);
    save(&c, "bars_grouped");
    pl_free(&c);
}

static void test_errorbars_box_violin(void)
{
    pl_canvas c;
    pl_init(&c, 700, 420);
    pl_chart ch;
    pl_chart_init(&ch, &c, 80, 30, 680, 360);
    const char *labels[3] = {"error bars", "box", "violin"};
    pl_chart_x_categories(&ch, 3, labels, NULL);
    pl_chart_y(&ch, 0, 12, 0, "value");
    pl_chart_axes(&ch);
    double ex[1] = {0}, elo[1] = {2}, ehi[1] = {8};
    pl_chart_errorbars(&ch, ex, elo, ehi, 1, 0x000000, 14);
    int x = (int)floor(pl_chart_px(&ch, 0)) + 5, ok = 1;
    const double rows[2] = {2, 8};
    for (int k = 0; k < 2; k++) {
        int r = (int)floor(pl_chart_py(&ch, rows[k])), hit = 0;
        for (int dy = -1; dy <= 1; dy++) hit |= cdist(pl_get(&c, x, r + dy), 0) < 100;
        int clear = cdist(pl_get(&c, x, r - 4), 0) > 150 && cdist(pl_get(&c, x, r + 4), 0) > 150;
        ok &= hit && clear;
    }
    check(ok, "errorbar_caps", "caps not at rows py(2), py(8)");

    double v[9] = {9, 1, 8, 2, 7, 3, 6, 4, 5}, without[10];
    pl_chart_box(&ch, 1, v, 9, 60, 0x1F77B4);
    int bx = (int)floor(pl_chart_px(&ch, 1)) + 15;
    /* the median line: the darkest row near py(5) */
    int best = -1, darkest = 999;
    for (int r = (int)pl_chart_py(&ch, 6); r <= (int)pl_chart_py(&ch, 4); r++) {
        uint32_t p = pl_get(&c, bx, r);
        int lum = (int)((p >> 16) & 255) + (int)((p >> 8) & 255) + (int)(p & 255);
        if (lum < darkest) darkest = lum, best = r;
    }
    check(abs(best - (int)floor(pl_chart_py(&ch, 5))) <= 1, "box_median_row", "darkest row %d, py(5) %.1f", best, pl_chart_py(&ch, 5));
    /* the quartile box: numpy's linear quartiles of 1..9 are 3 and 7 */
    int qin = cdist(pl_get(&c, bx, (int)floor(pl_chart_py(&ch, 6.5))), 0xFFFFFF) > 20;
    int qout = cdist(pl_get(&c, bx, (int)floor(pl_chart_py(&ch, 7.5))), 0xFFFFFF) < 30;
    check(qin && qout, "box_quartiles", "inside %d outside %d", qin, qout);
    (void)without;

    double vv[200];
    for (int i = 0; i < 200; i++) vv[i] = 6 + 2.0 * sin(i * 0.7) * cos(i * 0.13) + (i % 7) * 0.1;
    pl_chart_violin(&ch, 2, vv, 200, 80, 0x2CA02C);
    double one = 3;
    pl_chart_violin(&ch, 2, &one, 1, 80, 0xD62728); /* a single value: a thin line */
    int w_mid = 0, w_end = 0, vx = (int)floor(pl_chart_px(&ch, 2));
    int rm = (int)floor(pl_chart_py(&ch, 6)) + 6, re = (int)floor(pl_chart_py(&ch, 7.9));
    for (int xx = vx - 45; xx <= vx + 45; xx++) {
        w_mid += cdist(pl_get(&c, xx, rm), 0xFFFFFF) > 20;
        w_end += cdist(pl_get(&c, xx, re), 0xFFFFFF) > 20;
    }
    int line = cdist(pl_get(&c, vx + 30, (int)floor(pl_chart_py(&ch, 3))), 0xD62728) < 80;
    check(w_mid > w_end && w_mid > 20 && line, "violin_shape", "width mid %d, end %d, single line %d", w_mid, w_end, line);
    save(&c, "box_violin");
    pl_free(&c);
}

/* ---- legend placement ---- */

static int legend_covers_data(const pl_canvas *c, const pl_chart *ch)
{
    return pl_marks_hit(c, ch->legend_x0, ch->legend_y0, ch->legend_x1, ch->legend_y1, PL_MARK_DATA);
}

static void test_legend(void)
{
    pl_canvas c;
    pl_init(&c, 800, 450);
    pl_chart ch;
    pl_chart_init(&ch, &c, 80, 30, 660, 380);
    pl_chart_x(&ch, 0, 10, 0, "step");
    pl_chart_y(&ch, 0, 10, 0, "value");
    pl_chart_axes(&ch);
    /* a rising line runs through the top-right corner; a flat one along the bottom */
    double x[11], y[11], z[11];
    for (int i = 0; i <= 10; i++) x[i] = i, y[i] = i, z[i] = 0.5 + 0.02 * i;
    pl_chart_line(&ch, x, y, 11, 0xD62728, 2, 0, "rising");
    pl_chart_line(&ch, x, z, 11, 0x1F77B4, 2, 1, "flat (dashed)");
    pl_chart_markers(&ch, x, y, 11, 0xD62728, PL_M_SQUARE, 6, "samples");
    /* which pixels are line-coloured before the legend goes on */
    unsigned char *red = (unsigned char *)calloc((size_t)c.w * c.h, 1);
    for (int yy = 0; yy < c.h; yy++)
        for (int xx = 0; xx < c.w; xx++) red[yy * c.w + xx] = cdist(pl_get(&c, xx, yy), 0xD62728) < 40;
    pl_chart_legend(&ch);
    int covered = 0;
    for (int yy = (int)ch.legend_y0; yy <= (int)ch.legend_y1; yy++)
        for (int xx = (int)ch.legend_x0; xx <= (int)ch.legend_x1; xx++)
            if (xx >= 0 && yy >= 0 && xx < c.w && yy < c.h) covered += red[yy * c.w + xx];
    free(red);
    int top_right = ch.legend_x1 > ch.x1 - 40 && ch.legend_y0 < ch.y0 + 40;
    check(ch.legend_x1 > ch.legend_x0 && !legend_covers_data(&c, &ch) && !covered && !top_right, "legend_avoids_data",
          "legend %.0f,%.0f-%.0f,%.0f covers %d marks, %d line pixels", ch.legend_x0, ch.legend_y0, ch.legend_x1, ch.legend_y1,
          legend_covers_data(&c, &ch), covered);
    check(ch.legend_where == 0 && ch.legend_x0 >= ch.x0 && ch.legend_x1 <= ch.x1, "legend_inside", "where %d", ch.legend_where);
    save(&c, "legend_inside");
    save_zoom(&c, "legend_inside", 0, 20, 240, 100, 3);
    pl_free(&c);

    /* every inside place is busy: a dense scatter; room on the right -> outside right */
    for (int variant = 0; variant < 2; variant++) {
        pl_init(&c, variant ? 700 : 900, 450);
        pl_chart_init(&ch, &c, 80, 70, 660, 380);
        pl_chart_x(&ch, 0, 1, 0, "x");
        pl_chart_y(&ch, 0, 1, 0, "y");
        pl_chart_axes(&ch);
        double sx[400], sy[400];
        for (int i = 0; i < 400; i++) sx[i] = (i % 20) / 19.0, sy[i] = (i / 20) / 19.0;
        pl_chart_markers(&ch, sx, sy, 400, pl_color(0), PL_M_CIRCLE, 6, "grid of points");
        pl_chart_line(&ch, sx, sy, 20, pl_color(1), 1.5, 0, "first row");
        pl_chart_legend(&ch);
        if (!variant)
            check(ch.legend_where == 1 && ch.legend_x0 >= ch.x1 && ch.legend_x1 <= c.w && !legend_covers_data(&c, &ch),
                  "legend_outside_right", "where %d at %.0f..%.0f", ch.legend_where, ch.legend_x0, ch.legend_x1);
        else
            check(ch.legend_where == 2 && ch.legend_y1 <= ch.y0 && ch.legend_y0 >= 0 && !legend_covers_data(&c, &ch),
                  "legend_above", "where %d at y %.0f..%.0f", ch.legend_where, ch.legend_y0, ch.legend_y1);
        save(&c, variant ? "legend_above" : "legend_right");
        pl_free(&c);
    }
}

/* ---- labels and categories ---- */

static void test_point_labels(void)
{
    pl_canvas c;
    pl_init(&c, 700, 450);
    pl_chart ch;
    pl_chart_init(&ch, &c, 80, 30, 680, 380);
    pl_chart_x(&ch, 0, 10, 0, "memory (GiB)");
    pl_chart_y(&ch, 0, 10, 0, "time (s)");
    pl_chart_axes(&ch);
    double x[8] = {1, 1.3, 1.6, 5, 5.2, 9.5, 9.8, 3}, y[8] = {9, 8.8, 9.1, 5, 5.3, 1, 1.2, 0.2};
    const char *lab[8] = {"full", "every 2", "every 4", "sqrt", "sqrt+1", "none", "none-2", "edge"};
    pl_chart_markers(&ch, x, y, 8, pl_color(3), PL_M_CIRCLE, 7, NULL);
    int m0 = c.nmarks;
    pl_chart_labels(&ch, x, y, lab, 8, 0x333333);
    int ok = 1, inside = 1;
    for (int i = m0; i < c.nmarks; i++) {
        const pl_mark *a = &c.marks[i];
        if (a->x0 < ch.x0 - 0.5 || a->x1 > ch.x1 + 0.5 || a->y0 < ch.y0 - 0.5 || a->y1 > ch.y1 + 0.5) inside = 0;
        for (int j = m0; j < i; j++) ok &= !boxes_overlap(a, &c.marks[j]);
    }
    check(c.nmarks - m0 == 8 && ok && inside, "labels_no_overlap", "%d labels, overlap-free %d, inside %d", c.nmarks - m0, ok, inside);
    save(&c, "labels");
    pl_free(&c);
}

static void test_categories(void)
{
    pl_canvas c;
    pl_init(&c, 1100, 420);
    pl_chart ch;
    pl_chart_init(&ch, &c, 80, 30, 1080, 340);
    char buf[200][16];
    const char *lab[200];
    for (int i = 0; i < 200; i++) snprintf(buf[i], sizeof buf[i], "%d", i), lab[i] = buf[i];
    pl_chart_x_categories(&ch, 28, lab, "layer");
    pl_chart_y(&ch, 0, 1, 0, "share");
    pl_chart_axes(&ch);
    int shown = 0, ok = 1;
    for (int i = 0; i < c.nmarks; i++) {
        if (c.marks[i].kind != PL_MARK_AXIS || c.marks[i].id < 0) continue;
        shown++;
        for (int j = 0; j < i; j++)
            if (c.marks[j].kind == PL_MARK_AXIS && c.marks[j].id >= 0) ok &= !boxes_overlap(&c.marks[i], &c.marks[j]);
    }
    check(shown == 28 && ok && ch.cat_step == 1, "categories_28_all", "shown %d, no overlap %d, step %d", shown, ok, ch.cat_step);
    double v[28];
    for (int i = 0; i < 28; i++) v[i] = 0.2 + 0.6 * (i % 5) / 4.0;
    pl_chart_bars(&ch, v, NULL, 28, 1, 0, NULL, NULL);
    save(&c, "categories_28");
    pl_free(&c);

    pl_init(&c, 1100, 420);
    pl_chart_init(&ch, &c, 80, 30, 1080, 340);
    pl_chart_x_categories(&ch, 200, lab, "step");
    pl_chart_y(&ch, 0, 1, 0, NULL);
    pl_chart_axes(&ch);
    shown = 0, ok = 1;
    for (int i = 0; i < c.nmarks; i++) {
        if (c.marks[i].kind != PL_MARK_AXIS || c.marks[i].id < 0) continue;
        shown++;
        for (int j = 0; j < i; j++)
            if (c.marks[j].kind == PL_MARK_AXIS && c.marks[j].id >= 0) ok &= !boxes_overlap(&c.marks[i], &c.marks[j]);
    }
    check(ch.cat_step > 1 && shown < 200 && shown >= 10 && ok, "categories_200_thinned", "step %d, shown %d, no overlap %d",
          ch.cat_step, shown, ok);
    save(&c, "categories_200");
    pl_free(&c);

    /* long names turn 90 degrees */
    pl_init(&c, 800, 500);
    pl_chart_init(&ch, &c, 80, 30, 780, 300);
    const char *names[12] = {"checkpoint every layer", "every 2nd", "every 4th", "sqrt(n)", "none", "offload",
                             "selective attention", "mlp only", "first half", "second half", "alternating", "custom plan"};
    pl_chart_x_categories(&ch, 12, names, "policy");
    pl_chart_y(&ch, 0, 100, 0, "MiB");
    pl_chart_axes(&ch);
    ok = 1;
    for (int i = 0; i < c.nmarks; i++)
        for (int j = 0; j < i; j++)
            if (c.marks[i].kind == PL_MARK_AXIS && c.marks[j].kind == PL_MARK_AXIS) ok &= !boxes_overlap(&c.marks[i], &c.marks[j]);
    check(ch.cat_rot == 1 && ok, "categories_rotated", "rot %d, no overlap %d", ch.cat_rot, ok);
    double v12[12] = {90, 60, 45, 40, 100, 20, 70, 55, 65, 65, 50, 35};
    pl_chart_bars(&ch, v12, NULL, 12, 1, 0, NULL, NULL);
    save(&c, "categories_rotated");
    pl_free(&c);
}

static void test_axis_titles(void)
{
    pl_canvas c;
    pl_init(&c, 600, 400);
    pl_chart ch;
    pl_chart_init(&ch, &c, 100, 30, 580, 340);
    pl_chart_x(&ch, 0, 1e6, 0, "tokens");
    pl_chart_y(&ch, -12345.5, 98765.25, 0, "a long y axis title");
    pl_chart_axes(&ch);
    int ok = 1, title = -1;
    for (int i = 0; i < c.nmarks; i++)
        if (c.marks[i].id == -2) title = i;
    for (int i = 0; i < c.nmarks && title >= 0; i++)
        if (i != title && boxes_overlap(&c.marks[i], &c.marks[title])) ok = 0;
    check(title >= 0 && ok && c.marks[title].x0 >= 0, "y_title_clear_of_ticks", "title %d, clear %d", title, ok);
    save(&c, "axis_titles");
    pl_free(&c);
}

static void test_png(void)
{
    pl_canvas c;
    int rc = pl_figure(&c, 320, 200, "A figure title", "and its subtitle");
    int b[4];
    int found = rc == 0 && ink_box(&c, 0, 0, c.w, 60, b);
    check(found && fabs((b[0] + b[2]) / 2.0 - 160) < 6 && c.top > 30 && c.top < 75, "figure_title", "rc %d top %.1f", rc, c.top);
    if (rc) return;
    const char *path = OUTDIR "/figure.png";
    remove(path);
    pl_write_png(&c, path);
    FILE *f = fopen(path, "rb");
    unsigned char sig[8] = {0};
    size_t n = f ? fread(sig, 1, 8, f) : 0;
    if (f) fclose(f);
    static const unsigned char want[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    check(n == 8 && !memcmp(sig, want, 8), "png_written", "signature missing");
    pl_free(&c);
}

/* A paper-style figure with everything on it, to look at. */
static void scene_showcase(void)
{
    pl_canvas c;
    if (pl_figure(&c, 1200, 600, "Training loss, three policies", "mean of 5 seeds, band: \xC2\xB1" "1 std")) return;
    pl_chart ch;
    pl_chart_init(&ch, &c, 95, 80, 1170, 520);
    double x[200], m[3][200], lo[3][200], hi[3][200];
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < 200; i++) {
            x[i] = i * 50;
            m[s][i] = 2.2 + (4.5 - s * 0.3) * exp(-i / (30.0 + 10 * s)) + 0.05 * sin(i * 0.3 + s);
            lo[s][i] = m[s][i] - 0.15 - 0.1 * exp(-i / 50.0);
            hi[s][i] = m[s][i] + 0.15 + 0.1 * exp(-i / 50.0);
        }
    double ylo = 0, yhi = -INFINITY;
    for (int s = 0; s < 3; s++) pl_range_of(hi[s], 200, &ylo, &yhi);
    pl_chart_x(&ch, 0, x[199], 0, "optimizer step");
    pl_chart_y(&ch, ylo, yhi, 0, "loss (nats)");
    pl_chart_axes(&ch);
    const char *names[3] = {"checkpoint all", "every 2nd layer", "no recompute"};
    for (int s = 0; s < 3; s++) pl_chart_band(&ch, x, lo[s], hi[s], 200, pl_color(s), 0.18, NULL);
    for (int s = 0; s < 3; s++) pl_chart_line(&ch, x, m[s], 200, pl_color(s), 1.8, s == 2, names[s]);
    pl_chart_hline(&ch, 2.2, 0x7F7F7F, 1, "floor");
    pl_chart_legend(&ch);
    save(&c, "showcase");
    pl_free(&c);
}

int main(void)
{
    mkdir("build", 0777);
    mkdir(OUTDIR, 0777);
    test_text();
    test_fallback_font();
    test_log_axis();
    test_format();
    test_line();
    test_bars();
    test_errorbars_box_violin();
    test_legend();
    test_point_labels();
    test_categories();
    test_axis_titles();
    test_png();
    scene_showcase();
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
