/* plot.h - a small charting layer for the demos' figures: an RGB canvas with anti-aliased
   shapes and text, PNG output, and on top of it charts in the spirit of a tiny matplotlib
   (axes with nice ticks, lines, markers, bands, error bars, bars, box and violin plots, point
   labels and a legend that keeps off the data).

   Everything here is static, so include it from one .c file. Before including it, define the
   stb implementations there, static, so that a user's own copy of stb cannot clash:

       #define STB_IMAGE_WRITE_IMPLEMENTATION
       #define STB_IMAGE_WRITE_STATIC
       #define STB_TRUETYPE_IMPLEMENTATION
       #define STBTT_STATIC
       #include "plot.h"

   The headers come from Debian's libstb-dev (<stb/...>); the fonts from fonts-dejavu-core.
   Without DejaVu the text is drawn with a built-in stroke font (plain, but legible), so a
   figure never fails for want of a font.

   Coordinates are pixels, x to the right and y down, as doubles; colours are 0xRRGGBB.

   A chart, in short:

       pl_canvas c;
       pl_figure(&c, 1200, 600, "Loss", "seed 0, 3 runs");
       pl_chart ch;
       pl_chart_init(&ch, &c, 90, 80, 1170, 530);       plot area in pixels
       pl_chart_x(&ch, 0, steps, 0, "step");
       pl_chart_y(&ch, 0.1, 10, 1, "loss");             log axis
       pl_chart_axes(&ch);                              grid, ticks, titles
       pl_chart_band(&ch, x, lo, hi, n, pl_color(0), 0.2, NULL);
       pl_chart_line(&ch, x, mean, n, pl_color(0), 1.8, 0, "mean of 3 seeds");
       pl_chart_legend(&ch);                            after the data, so that it can avoid it
       pl_write_png(&c, "loss.png");
       pl_free(&c);

   Every data element drawn through a chart is recorded on the canvas (pl_canvas.marks), so
   the legend and point labels can find places that cover nothing. */
#ifndef DEMOS_PLOT_H
#define DEMOS_PLOT_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* stb is not written for -Wall -Wextra -Werror: silence it, for its own lines only. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wtype-limits"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wcast-qual"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wdouble-promotion"
#endif
#include <stb/stb_image_write.h>
#include <stb/stb_truetype.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/* Every function is static; unused ones are fine. */
#if defined(__GNUC__)
#define PL_DEF static __attribute__((unused))
#define PL_DATA static __attribute__((unused))
#else
#define PL_DEF static
#define PL_DATA static
#endif

#define PL_FONT_REGULAR "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
#define PL_FONT_BOLD "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"

/* Text anchors: how (x, y) is placed relative to the text. Horizontal: left / centre / right
   edge; vertical: baseline, middle of the capital letters, or top of the capitals. PL_BOLD
   picks the bold face; PL_ROT90 turns the text 90 degrees anticlockwise (for y-axis labels),
   the anchor then applying to the turned text as it reads; PL_HALO clears a two-pixel rim
   around the letters first. */
enum {
    PL_LEFT = 0, PL_CENTER = 1, PL_RIGHT = 2,
    PL_BASELINE = 0, PL_MIDDLE = 4, PL_TOP = 8,
    PL_BOLD = 16, PL_ROT90 = 32,
    PL_HALO = 64 /* a white rim around the letters, so that text stays legible over lines */
};

/* The default colour cycle: matplotlib's "tab10" (Tableau's classic ten), distinct from each
   other, dark enough for thin lines on white, and familiar to readers of papers. */
PL_DATA const uint32_t pl_palette[10] = {
    0x1F77B4, 0xFF7F0E, 0x2CA02C, 0xD62728, 0x9467BD,
    0x8C564B, 0xE377C2, 0x7F7F7F, 0xBCBD22, 0x17BECF,
};

/* Colour i of the cycle (any i, negative too). */
PL_DEF uint32_t pl_color(int i) { return pl_palette[((i % 10) + 10) % 10]; }

/* Colour a mixed towards b by t in [0, 1] (t = 0: a). For lighter fills and darker edges. */
PL_DEF uint32_t pl_mix(uint32_t a, uint32_t b, double t)
{
    uint32_t r = 0;
    for (int k = 16; k >= 0; k -= 8) {
        double u = (double)((a >> k) & 255), v = (double)((b >> k) & 255);
        r |= (uint32_t)lround(u + (v - u) * t) << k;
    }
    return r;
}

typedef struct pl_font {
    unsigned char *data;             /* the .ttf file; NULL for the built-in font or a shared copy */
    stbtt_fontinfo info;
    int ascent, descent, cap_height; /* font units (the built-in font: tenths of the size) */
    int fallback;                    /* the built-in stroke font */
    int fake_bold;                   /* no bold face: draw the regular one twice, 1 px apart */
} pl_font;

/* What a chart drew, for placing legends and labels where they cover nothing. */
enum { PL_MARK_DATA = 1, PL_MARK_TEXT = 2, PL_MARK_LEGEND = 4, PL_MARK_AXIS = 8 };
typedef struct pl_mark {
    float x0, y0, x1, y1; /* pixels, x0 <= x1, y0 <= y1 */
    int kind;             /* PL_MARK_* */
    int id;               /* category labels: the slot; y-axis title: -2; else -1 */
} pl_mark;

typedef struct pl_canvas {
    int w, h;
    unsigned char *px;               /* w * h * 3 bytes, RGB, row-major */
    pl_font font[2];                 /* regular, bold */
    int clip_x0, clip_y0, clip_x1, clip_y1; /* drawing is limited to [x0, x1) x [y0, y1) */
    double top;                      /* pl_figure: the bottom of the title block, else 0 */
    pl_mark *marks;                  /* everything charts drew, in order */
    int nmarks, cap_marks;
} pl_canvas;

/* ---- fonts ---------------------------------------------------------------------------- */

static const char *pl__font_path[2]; /* pl_set_font_paths; NULL: $PL_FONT, then DejaVu */
static int pl__fallback_noted;       /* the note about the built-in font is printed once */

/* Use these TrueType files for regular and bold text in canvases made from now on. NULL keeps
   the default: for the regular face $PL_FONT if set, else DejaVu Sans; for the bold face
   DejaVu Sans Bold when the regular face is DejaVu, else the regular face drawn bolder. */
PL_DEF void pl_set_font_paths(const char *regular, const char *bold)
{
    pl__font_path[0] = regular;
    pl__font_path[1] = bold;
}

PL_DEF const char *pl__regular_path(void)
{
    const char *env = getenv("PL_FONT");
    return pl__font_path[0] ? pl__font_path[0] : env && *env ? env : PL_FONT_REGULAR;
}

PL_DEF void pl__note_fallback(const char *path)
{
    if (pl__fallback_noted++) return;
    fprintf(stderr, "note: cannot read the font %s; drawing text with plot.h's built-in font "
                    "(install Debian's fonts-dejavu-core for nicer figures)\n", path);
}

PL_DEF int pl__load_font(pl_font *f, const char *path)
{
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp) return -1;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    f->data = n > 0 ? (unsigned char *)malloc((size_t)n) : NULL;
    int ok = f->data && fread(f->data, 1, (size_t)n, fp) == (size_t)n;
    fclose(fp);
    if (!ok || stbtt_GetFontOffsetForIndex(f->data, 0) < 0 ||
        !stbtt_InitFont(&f->info, f->data, stbtt_GetFontOffsetForIndex(f->data, 0))) {
        free(f->data);
        f->data = NULL;
        return -1;
    }
    int lg, x0, y0, x1, y1;
    stbtt_GetFontVMetrics(&f->info, &f->ascent, &f->descent, &lg);
    f->cap_height = stbtt_GetCodepointBox(&f->info, 'H', &x0, &y0, &x1, &y1) ? y1 : f->ascent * 7 / 10;
    return 0;
}

/* The built-in font: a 5 x 9 grid per glyph (7 rows down to the baseline, 2 for descenders),
   advance 6 columns; metrics in grid units, a unit being a tenth of the text size. */
PL_DEF void pl__fallback_font(pl_font *f, int bold)
{
    memset(f, 0, sizeof *f);
    f->fallback = 1;
    f->fake_bold = bold;
    f->ascent = 8;
    f->descent = -2;
    f->cap_height = 7;
}

/* Always 0: says on stderr (once) when the regular font cannot be read and the built-in one
   will be used. Kept for callers that check the font before long work. */
PL_DEF int pl_check_font(void)
{
    const char *path = pl__regular_path();
    FILE *fp = fopen(path, "rb");
    if (fp) fclose(fp);
    else pl__note_fallback(path);
    return 0;
}

/* A white canvas of w x h pixels. Returns 0, or -1 with a message on stderr when out of
   memory. A font that cannot be read is no error: the built-in font takes its place. */
PL_DEF int pl_init(pl_canvas *c, int w, int h)
{
    memset(c, 0, sizeof *c);
    const char *reg = pl__regular_path();
    if (pl__load_font(&c->font[0], reg)) {
        pl__note_fallback(reg);
        pl__fallback_font(&c->font[0], 0);
        pl__fallback_font(&c->font[1], 1);
    } else {
        /* a bold face that matches: DejaVu's with DejaVu, else none (the regular one, bolder) */
        const char *bold = pl__font_path[1] ? pl__font_path[1] : !strcmp(reg, PL_FONT_REGULAR) ? PL_FONT_BOLD : NULL;
        if (!bold || pl__load_font(&c->font[1], bold)) {
            c->font[1] = c->font[0];
            c->font[1].data = NULL; /* shared: freed once, with font[0] */
            c->font[1].fake_bold = 1;
        }
    }
    if (w < 1) w = 1;
    if (h < 1) h = 1;
    c->w = w;
    c->h = h;
    c->clip_x1 = w;
    c->clip_y1 = h;
    c->px = (unsigned char *)malloc((size_t)w * (size_t)h * 3);
    if (!c->px) {
        fprintf(stderr, "error: out of memory for a %dx%d canvas\n", w, h);
        free(c->font[0].data);
        free(c->font[1].data);
        memset(c, 0, sizeof *c);
        return -1;
    }
    memset(c->px, 255, (size_t)w * (size_t)h * 3);
    return 0;
}

/* 1 when the canvas draws text with the built-in font (no TrueType font could be read). */
PL_DEF int pl_font_is_fallback(const pl_canvas *c) { return c->font[0].fallback; }

PL_DEF void pl_free(pl_canvas *c)
{
    free(c->px);
    free(c->font[0].data);
    free(c->font[1].data);
    free(c->marks);
    memset(c, 0, sizeof *c);
}

/* ---- pixels and clipping ---------------------------------------------------------------- */

/* Limit drawing to the pixels [x0, x1) x [y0, y1) (rounded outwards, kept on the canvas). */
PL_DEF void pl_clip(pl_canvas *c, double x0, double y0, double x1, double y1)
{
    c->clip_x0 = (int)fmax(0, floor(fmin(x0, (double)c->w)));
    c->clip_y0 = (int)fmax(0, floor(fmin(y0, (double)c->h)));
    c->clip_x1 = (int)fmin((double)c->w, ceil(fmax(x1, 0.0)));
    c->clip_y1 = (int)fmin((double)c->h, ceil(fmax(y1, 0.0)));
}

PL_DEF void pl_unclip(pl_canvas *c)
{
    c->clip_x0 = c->clip_y0 = 0;
    c->clip_x1 = c->w;
    c->clip_y1 = c->h;
}

/* Blend colour rgb over pixel (x, y) with coverage a in [0, 1]. */
PL_DEF void pl_blend(pl_canvas *c, int x, int y, uint32_t rgb, double a)
{
    if (x < c->clip_x0 || y < c->clip_y0 || x >= c->clip_x1 || y >= c->clip_y1 || !(a > 0)) return;
    if (a > 1) a = 1;
    unsigned char *p = c->px + ((size_t)y * (size_t)c->w + (size_t)x) * 3;
    for (int k = 0; k < 3; k++) {
        double v = (double)((rgb >> (16 - 8 * k)) & 255);
        p[k] = (unsigned char)lround(p[k] + (v - p[k]) * a);
    }
}

/* The colour of pixel (x, y); white outside the canvas. */
PL_DEF uint32_t pl_get(const pl_canvas *c, int x, int y)
{
    if (x < 0 || y < 0 || x >= c->w || y >= c->h) return 0xFFFFFF;
    const unsigned char *p = c->px + ((size_t)y * (size_t)c->w + (size_t)x) * 3;
    return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

PL_DEF void pl_fill(pl_canvas *c, uint32_t rgb)
{
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++) pl_blend(c, x, y, rgb, 1.0);
}

/* Keep a coordinate where int conversion is safe and loops stay short: far-off points (a log
   axis at 1e-300, say) only need to lie off the canvas. */
PL_DEF double pl__cl(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Filled rectangle between corners (x0, y0) and (x1, y1), in either order, at opacity alpha;
   edges that fall inside a pixel cover it partly, so thin bars stay visible and smooth. */
PL_DEF void pl_rect_alpha(pl_canvas *c, double x0, double y0, double x1, double y1, uint32_t rgb, double alpha)
{
    if (!(x0 == x0 && x1 == x1 && y0 == y0 && y1 == y1)) return; /* NaN */
    if (x0 > x1) { double t = x0; x0 = x1; x1 = t; }
    if (y0 > y1) { double t = y0; y0 = y1; y1 = t; }
    x0 = pl__cl(x0, c->clip_x0 - 1, c->clip_x1 + 1);
    x1 = pl__cl(x1, c->clip_x0 - 1, c->clip_x1 + 1);
    y0 = pl__cl(y0, c->clip_y0 - 1, c->clip_y1 + 1);
    y1 = pl__cl(y1, c->clip_y0 - 1, c->clip_y1 + 1);
    for (int y = (int)floor(y0); y < (int)ceil(y1); y++) {
        double cy = fmin(y1, y + 1.0) - fmax(y0, (double)y);
        for (int x = (int)floor(x0); x < (int)ceil(x1); x++) {
            double cx = fmin(x1, x + 1.0) - fmax(x0, (double)x);
            pl_blend(c, x, y, rgb, cx * cy * alpha);
        }
    }
}

PL_DEF void pl_rect(pl_canvas *c, double x0, double y0, double x1, double y1, uint32_t rgb)
{
    pl_rect_alpha(c, x0, y0, x1, y1, rgb, 1.0);
}

/* Rectangle outline, `t` pixels wide, drawn inside the rectangle. */
PL_DEF void pl_rect_outline(pl_canvas *c, double x0, double y0, double x1, double y1, double t, uint32_t rgb)
{
    if (x0 > x1) { double u = x0; x0 = x1; x1 = u; }
    if (y0 > y1) { double u = y0; y0 = y1; y1 = u; }
    pl_rect(c, x0, y0, x1, y0 + t, rgb);
    pl_rect(c, x0, y1 - t, x1, y1, rgb);
    pl_rect(c, x0, y0 + t, x0 + t, y1 - t, rgb);
    pl_rect(c, x1 - t, y0 + t, x1, y1 - t, rgb);
}

/* ---- coverage masks ------------------------------------------------------------------------
   Shapes made of several strokes (a polyline, a glyph of the built-in font) are first drawn
   into a coverage mask, keeping the largest coverage per pixel, and then blended once: where
   strokes overlap (joints, dashes, glyph strokes) the colour is not laid on twice. */
typedef struct pl__mask {
    unsigned char *a; /* coverage 0..255 of the pixels [x, x + w) x [y, y + h) */
    int x, y, w, h;
} pl__mask;

PL_DEF int pl__mask_new(pl__mask *m, int x, int y, int w, int h)
{
    m->x = x, m->y = y, m->w = w > 0 ? w : 0, m->h = h > 0 ? h : 0;
    m->a = m->w && m->h ? (unsigned char *)calloc((size_t)m->w * (size_t)m->h, 1) : NULL;
    return m->a ? 0 : -1;
}

/* A round-capped segment of radius r (half the width): each pixel is covered by how far its
   centre lies from the segment, which anti-aliases any slope. */
PL_DEF void pl__mask_seg(pl__mask *m, double x0, double y0, double x1, double y1, double r)
{
    double dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy;
    double fx0 = fmax(fmin(x0, x1) - r - 1, m->x), fx1 = fmin(fmax(x0, x1) + r + 1, m->x + m->w);
    double fy0 = fmax(fmin(y0, y1) - r - 1, m->y), fy1 = fmin(fmax(y0, y1) + r + 1, m->y + m->h);
    if (!(fx0 < fx1 && fy0 < fy1)) return; /* off the mask, or NaN */
    for (int y = (int)floor(fy0); y < (int)ceil(fy1); y++)
        for (int x = (int)floor(fx0); x < (int)ceil(fx1); x++) {
            double px = x + 0.5, py = y + 0.5;
            double t = len2 > 0 ? ((px - x0) * dx + (py - y0) * dy) / len2 : 0;
            t = t < 0 ? 0 : t > 1 ? 1 : t;
            double ex = px - (x0 + t * dx), ey = py - (y0 + t * dy);
            double cov = r + 0.5 - sqrt(ex * ex + ey * ey);
            if (cov <= 0) continue;
            unsigned char v = (unsigned char)lround(fmin(cov, 1.0) * 255);
            unsigned char *p = &m->a[(size_t)(y - m->y) * (size_t)m->w + (size_t)(x - m->x)];
            if (v > *p) *p = v;
        }
}

PL_DEF void pl__mask_blit(pl_canvas *c, const pl__mask *m, uint32_t rgb, double alpha)
{
    for (int j = 0; j < m->h; j++)
        for (int i = 0; i < m->w; i++) {
            unsigned char v = m->a[(size_t)j * (size_t)m->w + (size_t)i];
            if (v) pl_blend(c, m->x + i, m->y + j, rgb, alpha * v / 255.0);
        }
}

/* Anti-aliased line segment of the given thickness. */
PL_DEF void pl_line(pl_canvas *c, double x0, double y0, double x1, double y1, double thick, uint32_t rgb)
{
    double r = thick / 2;
    double bx0 = pl__cl(fmin(x0, x1) - r - 1, c->clip_x0, c->clip_x1), bx1 = pl__cl(fmax(x0, x1) + r + 2, c->clip_x0, c->clip_x1);
    double by0 = pl__cl(fmin(y0, y1) - r - 1, c->clip_y0, c->clip_y1), by1 = pl__cl(fmax(y0, y1) + r + 2, c->clip_y0, c->clip_y1);
    if (!(bx0 < bx1 && by0 < by1)) return;
    pl__mask m;
    if (pl__mask_new(&m, (int)floor(bx0), (int)floor(by0), (int)ceil(bx1) - (int)floor(bx0),
                     (int)ceil(by1) - (int)floor(by0)))
        return;
    pl__mask_seg(&m, x0, y0, x1, y1, r);
    pl__mask_blit(c, &m, rgb, 1.0);
    free(m.a);
}

/* Liang-Barsky: the part [*t0, *t1] of the segment (x0, y0)-(x1, y1) inside the box; 0 when
   none of it is. */
PL_DEF int pl__clip_seg(double x0, double y0, double x1, double y1, double bx0, double by0, double bx1, double by1,
                        double *t0, double *t1)
{
    double p[4] = {-(x1 - x0), x1 - x0, -(y1 - y0), y1 - y0};
    double q[4] = {x0 - bx0, bx1 - x0, y0 - by0, by1 - y0};
    *t0 = 0, *t1 = 1;
    for (int k = 0; k < 4; k++) {
        if (p[k] == 0) {
            if (q[k] < 0) return 0;
            continue;
        }
        double t = q[k] / p[k];
        if (p[k] < 0) *t0 = fmax(*t0, t);
        else *t1 = fmin(*t1, t);
    }
    return *t0 <= *t1;
}

/* Polyline through n points, `width` pixels wide, at opacity alpha; a NaN coordinate breaks
   it. dashed: dashes 3.7 widths long with gaps of 1.6 widths (matplotlib's pattern), the
   pattern running on along the line rather than restarting at every vertex. */
PL_DEF void pl_polyline(pl_canvas *c, const double *x, const double *y, int n, double width, uint32_t rgb,
                        double alpha, int dashed)
{
    double r = width / 2, bx0 = INFINITY, by0 = INFINITY, bx1 = -INFINITY, by1 = -INFINITY;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) {
            bx0 = fmin(bx0, x[i]), bx1 = fmax(bx1, x[i]);
            by0 = fmin(by0, y[i]), by1 = fmax(by1, y[i]);
        }
    bx0 = pl__cl(bx0 - r - 1, c->clip_x0, c->clip_x1), bx1 = pl__cl(bx1 + r + 2, c->clip_x0, c->clip_x1);
    by0 = pl__cl(by0 - r - 1, c->clip_y0, c->clip_y1), by1 = pl__cl(by1 + r + 2, c->clip_y0, c->clip_y1);
    if (!(bx0 < bx1 && by0 < by1)) return;
    pl__mask m;
    if (pl__mask_new(&m, (int)floor(bx0), (int)floor(by0), (int)ceil(bx1) - (int)floor(bx0),
                     (int)ceil(by1) - (int)floor(by0)))
        return;
    double on = fmax(3.7 * width, 4), off = fmax(1.6 * width, 2.5), phase = 0;
    for (int i = 0; i + 1 < n; i++) {
        if (!(isfinite(x[i]) && isfinite(y[i]) && isfinite(x[i + 1]) && isfinite(y[i + 1]))) {
            phase = 0;
            continue;
        }
        double dx = x[i + 1] - x[i], dy = y[i + 1] - y[i], len = sqrt(dx * dx + dy * dy);
        if (!dashed) {
            pl__mask_seg(&m, x[i], y[i], x[i + 1], y[i + 1], r);
            continue;
        }
        /* only the part on the mask is walked (a far-off vertex must not cost a dash per pixel
           of its distance); the part cut off in front still advances the pattern */
        double t0 = 0, t1 = 1;
        if (!pl__clip_seg(x[i], y[i], x[i + 1], y[i + 1], m.x - r - 1, m.y - r - 1, m.x + m.w + r + 1,
                          m.y + m.h + r + 1, &t0, &t1)) {
            phase = fmod(phase + len, on + off);
            continue;
        }
        if (!(len > 0)) continue;
        /* walk the visible part, u pixels from where it starts, through the pattern; phase is
           the distance into on + off */
        double ux = dx / len, uy = dy / len, sx = x[i] + dx * t0, sy = y[i] + dy * t0;
        double u = 0, L = (t1 - t0) * len;
        phase = fmod(phase + t0 * len, on + off);
        while (u < L) {
            double e = fmin(L, u + (phase < on ? on - phase : on + off - phase));
            if (phase < on) {
                /* round caps would eat the gaps: pull the dash's own ends in by the radius */
                double a = u + (phase < 1e-9 ? fmin(r, on / 3) : 0), b = e - (phase + (e - u) >= on - 1e-9 ? fmin(r, on / 3) : 0);
                if (b > a) pl__mask_seg(&m, sx + ux * a, sy + uy * a, sx + ux * b, sy + uy * b, r);
            }
            phase = fmod(phase + (e - u), on + off);
            if (e - u < 1e-9) phase = phase < on ? on : 0; /* a step lost in rounding */
            u = e;
        }
        phase = fmod(phase + (1 - t1) * len, on + off);
    }
    pl__mask_blit(c, &m, rgb, alpha);
    free(m.a);
}

/* Filled polygon (even-odd rule) at opacity alpha. Each pixel row is sampled on 4 sub-rows;
   along a sub-row the covered part of each pixel is computed exactly, so edges of any slope
   come out smooth. */
PL_DEF void pl_polygon(pl_canvas *c, const double *x, const double *y, int n, uint32_t rgb, double alpha)
{
    if (n < 3) return;
    double bx0 = INFINITY, by0 = INFINITY, bx1 = -INFINITY, by1 = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (!(isfinite(x[i]) && isfinite(y[i]))) return;
        bx0 = fmin(bx0, x[i]), bx1 = fmax(bx1, x[i]), by0 = fmin(by0, y[i]), by1 = fmax(by1, y[i]);
    }
    int xa = (int)floor(pl__cl(bx0, c->clip_x0, c->clip_x1)), xb = (int)ceil(pl__cl(bx1, c->clip_x0, c->clip_x1));
    int ya = (int)floor(pl__cl(by0, c->clip_y0, c->clip_y1)), yb = (int)ceil(pl__cl(by1, c->clip_y0, c->clip_y1));
    if (xa >= xb || ya >= yb) return;
    float *acc = (float *)malloc(sizeof(float) * (size_t)(xb - xa));
    double *xs = (double *)malloc(sizeof(double) * (size_t)n);
    if (!acc || !xs) {
        free(acc);
        free(xs);
        return;
    }
    const int S = 4;
    for (int py = ya; py < yb; py++) {
        memset(acc, 0, sizeof(float) * (size_t)(xb - xa));
        int any = 0;
        for (int s = 0; s < S; s++) {
            double sy = py + (s + 0.5) / S;
            int k = 0;
            for (int i = 0, j = n - 1; i < n; j = i++)
                if ((y[i] > sy) != (y[j] > sy)) xs[k++] = x[i] + (sy - y[i]) * (x[j] - x[i]) / (y[j] - y[i]);
            for (int i = 1; i < k; i++) /* insertion sort: few crossings per row */
                for (int j = i; j > 0 && xs[j - 1] > xs[j]; j--) {
                    double t = xs[j];
                    xs[j] = xs[j - 1];
                    xs[j - 1] = t;
                }
            for (int i = 0; i + 1 < k; i += 2) {
                double a = pl__cl(xs[i], xa, xb), b = pl__cl(xs[i + 1], xa, xb);
                for (int px = (int)floor(a); px < (int)ceil(b); px++) {
                    double cov = fmin(b, px + 1.0) - fmax(a, (double)px);
                    if (cov > 0) acc[px - xa] += (float)(cov / S), any = 1;
                }
            }
        }
        if (any)
            for (int px = xa; px < xb; px++)
                if (acc[px - xa] > 0) pl_blend(c, px, py, rgb, alpha * fmin(1.0, acc[px - xa]));
    }
    free(acc);
    free(xs);
}

/* Filled disc of radius r at opacity alpha. */
PL_DEF void pl_circle(pl_canvas *c, double cx, double cy, double r, uint32_t rgb, double alpha)
{
    if (!(isfinite(cx) && isfinite(cy) && r > 0)) return;
    int xa = (int)floor(pl__cl(cx - r - 1, c->clip_x0, c->clip_x1)), xb = (int)ceil(pl__cl(cx + r + 1, c->clip_x0, c->clip_x1));
    int ya = (int)floor(pl__cl(cy - r - 1, c->clip_y0, c->clip_y1)), yb = (int)ceil(pl__cl(cy + r + 1, c->clip_y0, c->clip_y1));
    for (int y = ya; y < yb; y++)
        for (int x = xa; x < xb; x++) {
            double d = hypot(x + 0.5 - cx, y + 0.5 - cy);
            pl_blend(c, x, y, rgb, alpha * fmin(1.0, r + 0.5 - d));
        }
}

/* Circle outline of radius r, `width` pixels wide. */
PL_DEF void pl_ring(pl_canvas *c, double cx, double cy, double r, double width, uint32_t rgb)
{
    if (!(isfinite(cx) && isfinite(cy) && r > 0)) return;
    double R = r + width / 2;
    int xa = (int)floor(pl__cl(cx - R - 1, c->clip_x0, c->clip_x1)), xb = (int)ceil(pl__cl(cx + R + 1, c->clip_x0, c->clip_x1));
    int ya = (int)floor(pl__cl(cy - R - 1, c->clip_y0, c->clip_y1)), yb = (int)ceil(pl__cl(cy + R + 1, c->clip_y0, c->clip_y1));
    for (int y = ya; y < yb; y++)
        for (int x = xa; x < xb; x++) {
            double d = hypot(x + 0.5 - cx, y + 0.5 - cy);
            pl_blend(c, x, y, rgb, fmin(1.0, width / 2 + 0.5 - fabs(d - r)));
        }
}

/* ---- text ------------------------------------------------------------------------------- */

/* The built-in font, ASCII 32..126 and then '±' (as code 127): 9 rows per glyph, top to bottom
   (rows 0..6 stand on the baseline, 7..8 hang below it), 5 columns per row, bit 4 the leftmost.
   Drawn as strokes between neighbouring cells (see pl__fallback_glyphs), which makes it smooth
   at any size. */
PL_DATA const unsigned char pl__font5x9[96][9] = {
    {0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00}, {0x04,0x04,0x04,0x04,0x04,0x00,0x04,0x00,0x00}, {0x0A,0x0A,0x0A,0x00,0x00,0x00,0x00,0x00,0x00}, {0x0A,0x0A,0x1F,0x0A,0x1F,0x0A,0x0A,0x00,0x00}, /* ' ' '!' '"' '#' */
    {0x04,0x0F,0x14,0x0E,0x05,0x1E,0x04,0x00,0x00}, {0x18,0x19,0x02,0x04,0x08,0x13,0x03,0x00,0x00}, {0x0C,0x12,0x14,0x08,0x15,0x12,0x0D,0x00,0x00}, {0x04,0x04,0x04,0x00,0x00,0x00,0x00,0x00,0x00}, /* '$' '%' '&' "'" */
    {0x02,0x04,0x08,0x08,0x08,0x04,0x02,0x00,0x00}, {0x08,0x04,0x02,0x02,0x02,0x04,0x08,0x00,0x00}, {0x00,0x04,0x15,0x0E,0x15,0x04,0x00,0x00,0x00}, {0x00,0x04,0x04,0x1F,0x04,0x04,0x00,0x00,0x00}, /* '(' ')' '*' '+' */
    {0x00,0x00,0x00,0x00,0x00,0x00,0x04,0x04,0x08}, {0x00,0x00,0x00,0x1F,0x00,0x00,0x00,0x00,0x00}, {0x00,0x00,0x00,0x00,0x00,0x00,0x04,0x00,0x00}, {0x01,0x01,0x02,0x04,0x08,0x10,0x10,0x00,0x00}, /* ',' '-' '.' '/' */
    {0x0E,0x11,0x13,0x15,0x19,0x11,0x0E,0x00,0x00}, {0x04,0x0C,0x04,0x04,0x04,0x04,0x0E,0x00,0x00}, {0x0E,0x11,0x01,0x02,0x04,0x08,0x1F,0x00,0x00}, {0x1F,0x02,0x04,0x02,0x01,0x11,0x0E,0x00,0x00}, /* '0' '1' '2' '3' */
    {0x02,0x06,0x0A,0x12,0x1F,0x02,0x02,0x00,0x00}, {0x1F,0x10,0x1E,0x01,0x01,0x11,0x0E,0x00,0x00}, {0x06,0x08,0x10,0x1E,0x11,0x11,0x0E,0x00,0x00}, {0x1F,0x01,0x02,0x04,0x08,0x08,0x08,0x00,0x00}, /* '4' '5' '6' '7' */
    {0x0E,0x11,0x11,0x0E,0x11,0x11,0x0E,0x00,0x00}, {0x0E,0x11,0x11,0x0F,0x01,0x02,0x0C,0x00,0x00}, {0x00,0x00,0x04,0x00,0x00,0x00,0x04,0x00,0x00}, {0x00,0x00,0x04,0x00,0x00,0x00,0x04,0x04,0x08}, /* '8' '9' ':' ';' */
    {0x02,0x04,0x08,0x10,0x08,0x04,0x02,0x00,0x00}, {0x00,0x00,0x1F,0x00,0x1F,0x00,0x00,0x00,0x00}, {0x08,0x04,0x02,0x01,0x02,0x04,0x08,0x00,0x00}, {0x0E,0x11,0x01,0x02,0x04,0x00,0x04,0x00,0x00}, /* '<' '=' '>' '?' */
    {0x0E,0x11,0x17,0x15,0x17,0x10,0x0E,0x00,0x00}, {0x0E,0x11,0x11,0x1F,0x11,0x11,0x11,0x00,0x00}, {0x1E,0x11,0x11,0x1E,0x11,0x11,0x1E,0x00,0x00}, {0x0E,0x11,0x10,0x10,0x10,0x11,0x0E,0x00,0x00}, /* '@' 'A' 'B' 'C' */
    {0x1E,0x11,0x11,0x11,0x11,0x11,0x1E,0x00,0x00}, {0x1F,0x10,0x10,0x1E,0x10,0x10,0x1F,0x00,0x00}, {0x1F,0x10,0x10,0x1E,0x10,0x10,0x10,0x00,0x00}, {0x0E,0x11,0x10,0x17,0x11,0x11,0x0F,0x00,0x00}, /* 'D' 'E' 'F' 'G' */
    {0x11,0x11,0x11,0x1F,0x11,0x11,0x11,0x00,0x00}, {0x0E,0x04,0x04,0x04,0x04,0x04,0x0E,0x00,0x00}, {0x07,0x02,0x02,0x02,0x02,0x12,0x0C,0x00,0x00}, {0x11,0x12,0x14,0x18,0x14,0x12,0x11,0x00,0x00}, /* 'H' 'I' 'J' 'K' */
    {0x10,0x10,0x10,0x10,0x10,0x10,0x1F,0x00,0x00}, {0x11,0x1B,0x15,0x15,0x11,0x11,0x11,0x00,0x00}, {0x11,0x11,0x19,0x15,0x13,0x11,0x11,0x00,0x00}, {0x0E,0x11,0x11,0x11,0x11,0x11,0x0E,0x00,0x00}, /* 'L' 'M' 'N' 'O' */
    {0x1E,0x11,0x11,0x1E,0x10,0x10,0x10,0x00,0x00}, {0x0E,0x11,0x11,0x11,0x15,0x12,0x0D,0x00,0x00}, {0x1E,0x11,0x11,0x1E,0x14,0x12,0x11,0x00,0x00}, {0x0F,0x10,0x10,0x0E,0x01,0x01,0x1E,0x00,0x00}, /* 'P' 'Q' 'R' 'S' */
    {0x1F,0x04,0x04,0x04,0x04,0x04,0x04,0x00,0x00}, {0x11,0x11,0x11,0x11,0x11,0x11,0x0E,0x00,0x00}, {0x11,0x11,0x11,0x11,0x11,0x0A,0x04,0x00,0x00}, {0x11,0x11,0x11,0x15,0x15,0x15,0x0A,0x00,0x00}, /* 'T' 'U' 'V' 'W' */
    {0x11,0x11,0x0A,0x04,0x0A,0x11,0x11,0x00,0x00}, {0x11,0x11,0x0A,0x04,0x04,0x04,0x04,0x00,0x00}, {0x1F,0x01,0x02,0x04,0x08,0x10,0x1F,0x00,0x00}, {0x0E,0x08,0x08,0x08,0x08,0x08,0x0E,0x00,0x00}, /* 'X' 'Y' 'Z' '[' */
    {0x10,0x10,0x08,0x04,0x02,0x01,0x01,0x00,0x00}, {0x0E,0x02,0x02,0x02,0x02,0x02,0x0E,0x00,0x00}, {0x04,0x0A,0x11,0x00,0x00,0x00,0x00,0x00,0x00}, {0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x1F,0x00}, /* '\\' ']' '^' '_' */
    {0x08,0x04,0x00,0x00,0x00,0x00,0x00,0x00,0x00}, {0x00,0x00,0x0E,0x01,0x0F,0x11,0x0F,0x00,0x00}, {0x10,0x10,0x16,0x19,0x11,0x11,0x1E,0x00,0x00}, {0x00,0x00,0x0E,0x10,0x10,0x11,0x0E,0x00,0x00}, /* '`' 'a' 'b' 'c' */
    {0x01,0x01,0x0D,0x13,0x11,0x11,0x0F,0x00,0x00}, {0x00,0x00,0x0E,0x11,0x1F,0x10,0x0E,0x00,0x00}, {0x06,0x09,0x08,0x1C,0x08,0x08,0x08,0x00,0x00}, {0x00,0x00,0x0F,0x11,0x11,0x11,0x0F,0x01,0x0E}, /* 'd' 'e' 'f' 'g' */
    {0x10,0x10,0x16,0x19,0x11,0x11,0x11,0x00,0x00}, {0x04,0x00,0x0C,0x04,0x04,0x04,0x0E,0x00,0x00}, {0x02,0x00,0x06,0x02,0x02,0x02,0x02,0x12,0x0C}, {0x10,0x10,0x12,0x14,0x18,0x14,0x12,0x00,0x00}, /* 'h' 'i' 'j' 'k' */
    {0x0C,0x04,0x04,0x04,0x04,0x04,0x0E,0x00,0x00}, {0x00,0x00,0x1A,0x15,0x15,0x15,0x11,0x00,0x00}, {0x00,0x00,0x16,0x19,0x11,0x11,0x11,0x00,0x00}, {0x00,0x00,0x0E,0x11,0x11,0x11,0x0E,0x00,0x00}, /* 'l' 'm' 'n' 'o' */
    {0x00,0x00,0x1E,0x11,0x11,0x11,0x1E,0x10,0x10}, {0x00,0x00,0x0F,0x11,0x11,0x11,0x0F,0x01,0x01}, {0x00,0x00,0x16,0x19,0x10,0x10,0x10,0x00,0x00}, {0x00,0x00,0x0F,0x10,0x0E,0x01,0x1E,0x00,0x00}, /* 'p' 'q' 'r' 's' */
    {0x08,0x08,0x1C,0x08,0x08,0x09,0x06,0x00,0x00}, {0x00,0x00,0x11,0x11,0x11,0x13,0x0D,0x00,0x00}, {0x00,0x00,0x11,0x11,0x11,0x0A,0x04,0x00,0x00}, {0x00,0x00,0x11,0x11,0x15,0x15,0x0A,0x00,0x00}, /* 't' 'u' 'v' 'w' */
    {0x00,0x00,0x11,0x0A,0x04,0x0A,0x11,0x00,0x00}, {0x00,0x00,0x11,0x11,0x11,0x11,0x0F,0x01,0x0E}, {0x00,0x00,0x1F,0x02,0x04,0x08,0x1F,0x00,0x00}, {0x03,0x04,0x04,0x08,0x04,0x04,0x03,0x00,0x00}, /* 'x' 'y' 'z' '{' */
    {0x04,0x04,0x04,0x04,0x04,0x04,0x04,0x04,0x00}, {0x18,0x04,0x04,0x02,0x04,0x04,0x18,0x00,0x00}, {0x00,0x00,0x00,0x08,0x15,0x02,0x00,0x00,0x00}, /* '|' '}' '~' */
    {0x00,0x04,0x04,0x1F,0x04,0x04,0x1F,0x00,0x00}, /* '±' (code 127 here: CIs are written with it) */
};

/* Next code point of a UTF-8 string (so labels may hold e.g. "×" or "−"). */
PL_DEF int pl__utf8(const char **s)
{
    const unsigned char *p = (const unsigned char *)*s;
    int cp = *p++, extra = cp >= 0xF0 ? 3 : cp >= 0xE0 ? 2 : cp >= 0xC0 ? 1 : 0;
    if (extra) cp &= 0x3F >> extra;
    while (extra-- > 0 && (*p & 0xC0) == 0x80) cp = (cp << 6) | (*p++ & 0x3F);
    *s = (const char *)p;
    return cp;
}

/* The built-in font's stand-in for a code point: itself when ASCII, else the closest ASCII
   character for the few signs figures use, else '?'. */
PL_DEF int pl__ascii(int cp)
{
    if (cp >= 32 && cp < 127) return cp;
    switch (cp) {
    case 0x2212: case 0x2010: case 0x2011: case 0x2012: case 0x2013: case 0x2014: return '-';
    case 0x00D7: return 'x';
    case 0x00B7: case 0x2022: case 0x22C5: case 0x2026: return '.';
    case 0x00A0: case 0x2009: case 0x202F: return ' ';
    case 0x00B1: return 127; /* its own glyph */
    case 0x00B5: case 0x03BC: return 'u';
    case 0x00B0: return 'o';
    case 0x2018: case 0x2019: return '\'';
    case 0x201C: case 0x201D: return '"';
    case 0x2264: case 0x2190: return '<';
    case 0x2265: case 0x2192: return '>';
    case 0x2248: case 0x223C: return '~';
    case 0x03B1: return 'a';
    case 0x03B2: return 'b';
    case 0x03C3: return 's';
    default: return '?';
    }
}

PL_DEF const pl_font *pl__face(const pl_canvas *c, int flags) { return &c->font[(flags & PL_BOLD) ? 1 : 0]; }

/* Pixels per font unit at text size `size` (the ascent-to-descent height, in pixels). */
PL_DEF double pl__scale(const pl_font *f, double size)
{
    return f->fallback ? size / 10.0 : stbtt_ScaleForPixelHeight(&f->info, (float)size);
}

/* Width in pixels of `s` at pixel height `size`. */
PL_DEF double pl_text_width(const pl_canvas *c, double size, int flags, const char *s)
{
    const pl_font *f = pl__face(c, flags);
    double scale = pl__scale(f, size), w = 0;
    int prev = 0;
    while (*s) {
        int cp = pl__utf8(&s), adv, lsb;
        if (f->fallback) {
            w += 6 * scale;
            continue;
        }
        if (prev) w += scale * stbtt_GetCodepointKernAdvance(&f->info, prev, cp);
        stbtt_GetCodepointHMetrics(&f->info, cp, &adv, &lsb);
        w += scale * adv;
        prev = cp;
    }
    return w > 0 && f->fake_bold ? w + 1 : w;
}

/* The built-in font into mask m: every set cell is a dot, joined by a stroke to its set
   neighbours to the right and below, and diagonally where no such neighbour already turns
   the corner (so that '/' is a line, but an 'L' keeps a sharp corner). */
PL_DEF void pl__fallback_glyphs(pl__mask *m, double scale, double pen, double base, const char *s)
{
    double r = fmax(0.5, 0.55 * scale); /* strokes a little over a grid unit wide */
    while (*s) {
        const unsigned char *g = pl__font5x9[pl__ascii(pl__utf8(&s)) - 32];
#define PL__ON(col, row) ((col) >= 0 && (col) < 5 && (row) < 9 && ((g[row] >> (4 - (col))) & 1))
        for (int row = 0; row < 9; row++)
            for (int col = 0; col < 5; col++) {
                if (!PL__ON(col, row)) continue;
                double x = pen + (col + 1) * scale, y = base - (6.5 - row) * scale;
                pl__mask_seg(m, x, y, x, y, r);
                if (PL__ON(col + 1, row)) pl__mask_seg(m, x, y, x + scale, y, r);
                if (PL__ON(col, row + 1)) pl__mask_seg(m, x, y, x, y + scale, r);
                if (PL__ON(col + 1, row + 1) && !PL__ON(col + 1, row) && !PL__ON(col, row + 1))
                    pl__mask_seg(m, x, y, x + scale, y + scale, r);
                if (PL__ON(col - 1, row + 1) && !PL__ON(col - 1, row) && !PL__ON(col, row + 1))
                    pl__mask_seg(m, x, y, x - scale, y + scale, r);
            }
#undef PL__ON
        pen += 6 * scale;
    }
}

/* A TrueType string into mask m, glyph by glyph at sub-pixel positions. Coverage is added
   (not maxed): neighbouring glyphs that share a pixel each cover part of it. */
PL_DEF void pl__ttf_glyphs(pl__mask *m, const pl_font *f, double scale, double pen, double base, const char *s)
{
    int prev = 0;
    while (*s) {
        int cp = pl__utf8(&s), adv, lsb, x0, y0, x1, y1;
        if (prev) pen += scale * stbtt_GetCodepointKernAdvance(&f->info, prev, cp);
        float sx = (float)(pen - floor(pen));
        stbtt_GetCodepointBitmapBoxSubpixel(&f->info, cp, (float)scale, (float)scale, sx, 0, &x0, &y0, &x1, &y1);
        int gw = x1 - x0, gh = y1 - y0, ox = (int)floor(pen) + x0, oy = (int)lround(base) + y0;
        if (gw > 0 && gh > 0) {
            unsigned char *g = (unsigned char *)calloc((size_t)gw * (size_t)gh, 1);
            if (g) {
                stbtt_MakeCodepointBitmapSubpixel(&f->info, g, gw, gh, gw, (float)scale, (float)scale, sx, 0, cp);
                for (int j = 0; j < gh; j++)
                    for (int i = 0; i < gw; i++) {
                        int mx = ox + i, my = oy + j;
                        if (mx < 0 || my < 0 || mx >= m->w || my >= m->h) continue;
                        int v = m->a[my * m->w + mx] + g[j * gw + i];
                        m->a[my * m->w + mx] = (unsigned char)(v > 255 ? 255 : v);
                    }
                free(g);
            }
        }
        stbtt_GetCodepointHMetrics(&f->info, cp, &adv, &lsb);
        pen += scale * adv;
        prev = cp;
    }
}

/* Draw `s` at pixel height `size` (the font's ascent-to-descent height), anchored at (x, y)
   by `flags`. The string is first rendered into a coverage mask one line high, then blended
   onto the canvas, turned if PL_ROT90 asks for it. */
PL_DEF void pl_text(pl_canvas *c, double x, double y, double size, uint32_t rgb, int flags, const char *s)
{
    if (!s || !*s || !(size > 0) || !isfinite(x) || !isfinite(y)) return;
    const pl_font *f = pl__face(c, flags);
    double scale = pl__scale(f, size), width = pl_text_width(c, size, flags, s);
    pl__mask m;
    if (pl__mask_new(&m, 0, 0, (int)ceil(width) + 4, (int)ceil(scale * (f->ascent - f->descent)) + 2)) return;
    double base = scale * f->ascent + 1; /* baseline row in the mask */
    if (f->fallback) pl__fallback_glyphs(&m, scale, 1, base, s);
    else pl__ttf_glyphs(&m, f, scale, 1, base, s);
    if (f->fake_bold) /* the letters again, one pixel to the right */
        for (int j = 0; j < m.h; j++)
            for (int i = m.w - 1; i > 0; i--) {
                unsigned char *p = &m.a[j * m.w + i];
                if (p[-1] > *p) *p = p[-1];
            }
    /* the anchor point inside the mask */
    double ax = 1 + ((flags & 3) == PL_CENTER ? width / 2 : (flags & 3) == PL_RIGHT ? width : 0);
    double cap = scale * f->cap_height;
    double ay = base - ((flags & PL_TOP) ? cap : (flags & PL_MIDDLE) ? cap / 2 : 0);
    /* mask (i, j) lands on canvas (ox + i, oy + j), or turned: (ox + j, oy - i) */
    int rot = (flags & PL_ROT90) != 0;
    int ox = rot ? (int)lround(x - ay) : (int)lround(x - ax), oy = rot ? (int)lround(y + ax) : (int)lround(y - ay);
    if (x - ox > 1e6 || ox - x > 1e6 || y - oy > 1e6 || oy - y > 1e6) { /* off any canvas */
        free(m.a);
        return;
    }
    if (flags & PL_HALO) /* white under every pixel within two of a letter */
        for (int j = -2; j < m.h + 2; j++)
            for (int i = -2; i < m.w + 2; i++) {
                int best = 0;
                for (int dj = -2; dj <= 2; dj++)
                    for (int di = -2; di <= 2; di++) {
                        int u = i + di, v = j + dj;
                        if (u >= 0 && v >= 0 && u < m.w && v < m.h && m.a[v * m.w + u] > best) best = m.a[v * m.w + u];
                    }
                if (rot) pl_blend(c, ox + j, oy - i, 0xFFFFFF, best / 255.0);
                else pl_blend(c, ox + i, oy + j, 0xFFFFFF, best / 255.0);
            }
    for (int j = 0; j < m.h; j++)
        for (int i = 0; i < m.w; i++) {
            unsigned char v = m.a[j * m.w + i];
            if (!v) continue;
            if (rot) pl_blend(c, ox + j, oy - i, rgb, v / 255.0);
            else pl_blend(c, ox + i, oy + j, rgb, v / 255.0);
        }
    free(m.a);
}

/* The box that pl_text(c, x, y, size, rgb, flags, s) covers, as {x0, y0, x1, y1}: from a bit
   above the capitals (ascenders) to the bottom of descenders, turned with PL_ROT90. */
PL_DEF void pl_text_box(const pl_canvas *c, double x, double y, double size, int flags, const char *s, double box[4])
{
    const pl_font *f = pl__face(c, flags);
    double scale = pl__scale(f, size), w = pl_text_width(c, size, flags, s);
    double cap = scale * f->cap_height, desc = -scale * f->descent * 0.9, asc = cap * 1.06;
    double left = -((flags & 3) == PL_CENTER ? w / 2 : (flags & 3) == PL_RIGHT ? w : 0);
    double base = (flags & PL_TOP) ? cap : (flags & PL_MIDDLE) ? cap / 2 : 0; /* below the anchor */
    /* in the text's own frame (u along the text, v down): [left, left + w] x [base - asc, base + desc] */
    double u0 = left, u1 = left + w, v0 = base - asc, v1 = base + desc;
    if (flags & PL_ROT90) { /* u runs up the canvas, v to the right */
        box[0] = x + v0, box[1] = y - u1, box[2] = x + v1, box[3] = y - u0;
    } else {
        box[0] = x + u0, box[1] = y + v0, box[2] = x + u1, box[3] = y + v1;
    }
}

/* The largest size, from `size` down to `min_size`, at which `s` is at most max_width wide. */
PL_DEF double pl_fit_size(const pl_canvas *c, double size, double min_size, double max_width, int flags, const char *s)
{
    double sz = size;
    while (sz > min_size && pl_text_width(c, sz, flags, s) > max_width) sz -= 0.5;
    return sz < min_size ? min_size : sz;
}

/* pl_text, shrinking `size` (down to 60%) until the text is at most max_width wide. */
PL_DEF void pl_text_fit(pl_canvas *c, double x, double y, double size, double max_width, uint32_t rgb, int flags,
                        const char *s)
{
    pl_text(c, x, y, pl_fit_size(c, size, size * 0.6, max_width, flags, s), rgb, flags, s);
}

/* printf-style pl_text. */
#if defined(__GNUC__)
__attribute__((format(printf, 7, 8)))
#endif
PL_DEF void pl_textf(pl_canvas *c, double x, double y, double size, uint32_t rgb, int flags, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pl_text(c, x, y, size, rgb, flags, buf);
}

/* ---- the old helpers (still used by some demos) ---------------------------------------- */

/* A "nice" tick step (1, 2 or 5 times a power of ten) for about `n` ticks up to vmax. */
PL_DEF double pl_nice_step(double vmax, int n)
{
    if (!(vmax > 0)) return 1;
    double raw = vmax / n, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* Plot area [x0, x1] x [y0, y1] (y0 the top) for values 0 .. vmax on the y axis: light grid
   lines at nice values with tick labels on the left, the y-axis title turned along the left
   edge, and the axes themselves. Returns the top of the scale (vmax, or 1 if vmax <= 0). */
PL_DEF double pl_axes_y(pl_canvas *c, double x0, double y0, double x1, double y1, double vmax,
                        const char *ytitle)
{
    double top = vmax > 0 ? vmax : 1, step = pl_nice_step(top, 5);
    int digits = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    for (int k = 0; k * step <= top * (1 + 1e-9); k++) {
        double y = y1 - (y1 - y0) * (k * step) / top;
        if (k) pl_line(c, x0, y, x1, y, 1, 0xE3E3E3);
        pl_textf(c, x0 - 8, y, 13, 0x444444, PL_RIGHT | PL_MIDDLE, "%.*f", digits, k * step);
    }
    pl_line(c, x0, y0, x0, y1, 1.2, 0x555555);
    pl_line(c, x0, y1, x1, y1, 1.2, 0x555555);
    char widest[64];
    snprintf(widest, sizeof widest, "%.*f", digits, step * floor(top / step));
    double lw = fmax(pl_text_width(c, 13, 0, widest), pl_text_width(c, 13, 0, "000"));
    pl_text(c, x0 - lw - 22, (y0 + y1) / 2, 14, 0x222222, PL_CENTER | PL_BASELINE | PL_ROT90, ytitle);
    return top;
}

/* A legend entry: a colour swatch and its label; returns the x where the next one may go. */
PL_DEF double pl_legend_item(pl_canvas *c, double x, double y, uint32_t rgb, const char *label)
{
    pl_rect(c, x, y - 6, x + 14, y + 6, rgb);
    pl_text(c, x + 20, y, 13, 0x222222, PL_LEFT | PL_MIDDLE, label);
    return x + 20 + pl_text_width(c, 13, 0, label) + 18;
}

/* Write the canvas as a PNG. Returns 0, or -1 with a message on stderr. */
PL_DEF int pl_write_png(const pl_canvas *c, const char *path)
{
    if (!stbi_write_png(path, c->w, c->h, 3, c->px, c->w * 3)) {
        fprintf(stderr, "error: cannot write %s\n", path);
        return -1;
    }
    return 0;
}

/* ---- figures ------------------------------------------------------------------------------ */

/* pl_init, then a bold title centred at the top and a grey subtitle under it (either may be
   NULL), each shrunk to fit the width. c->top is set to the bottom of this title block, so
   that charts (and legends placed above them) can keep clear of it. Returns pl_init's
   result. */
PL_DEF int pl_figure(pl_canvas *c, int w, int h, const char *title, const char *subtitle)
{
    int rc = pl_init(c, w, h);
    if (rc) return rc;
    double bottom = 0, y = 24;
    if (title && *title) {
        double sz = pl_fit_size(c, 20, 6, w - 30, PL_BOLD, title);
        pl_text(c, w / 2.0, y, sz, 0x111111, PL_CENTER | PL_MIDDLE | PL_BOLD, title);
        bottom = y + sz * 0.45;
        y += 24;
    }
    if (subtitle && *subtitle) {
        double sz = pl_fit_size(c, 14, 6, w - 30, 0, subtitle);
        pl_text(c, w / 2.0, y, sz, 0x5F5F5F, PL_CENTER | PL_MIDDLE, subtitle);
        bottom = y + sz * 0.5;
    }
    c->top = bottom > 0 ? bottom + 6 : 0;
    return 0;
}

/* ---- records of what was drawn ---------------------------------------------------------- */

/* Note that the rectangle [x0, x1] x [y0, y1] holds something of `kind` (PL_MARK_*). */
PL_DEF void pl_mark_add(pl_canvas *c, double x0, double y0, double x1, double y1, int kind, int id)
{
    if (!(x0 <= x1 && y0 <= y1)) return;
    if (c->nmarks == c->cap_marks) {
        int cap = c->cap_marks ? 2 * c->cap_marks : 1024;
        pl_mark *m = (pl_mark *)realloc(c->marks, sizeof(pl_mark) * (size_t)cap);
        if (!m) return; /* the figure still draws; placement just knows less */
        c->marks = m;
        c->cap_marks = cap;
    }
    pl_mark *m = &c->marks[c->nmarks++];
    m->x0 = (float)x0, m->y0 = (float)y0, m->x1 = (float)x1, m->y1 = (float)y1;
    m->kind = kind;
    m->id = id;
}

/* How many records of the given kinds (PL_MARK_* or-ed) touch [x0, x1] x [y0, y1]. */
PL_DEF int pl_marks_hit(const pl_canvas *c, double x0, double y0, double x1, double y1, int kinds)
{
    int n = 0;
    for (int i = 0; i < c->nmarks; i++) {
        const pl_mark *m = &c->marks[i];
        if ((m->kind & kinds) && m->x1 >= x0 && m->x0 <= x1 && m->y1 >= y0 && m->y0 <= y1) n++;
    }
    return n;
}

/* ---- charts ----------------------------------------------------------------------------- */

enum { PL_M_CIRCLE, PL_M_SQUARE, PL_M_TRIANGLE, PL_M_DIAMOND, PL_M_CROSS };
enum { PL_LEG_LINE, PL_LEG_MARKER, PL_LEG_BOX, PL_LEG_BAND };
#define PL_MAX_LEGEND 32

typedef struct pl_legend_entry {
    char label[96];
    uint32_t rgb;
    int kind;     /* PL_LEG_*: how the sample is drawn */
    int shape;    /* PL_M_*, for markers */
    int dashed;   /* lines */
    double width; /* lines: width; markers: size */
    double alpha; /* bands */
} pl_legend_entry;

typedef struct pl_chart {
    pl_canvas *c;
    double x0, y0, x1, y1;     /* the plot area in pixels, y0 the top */
    double xlo, xhi, ylo, yhi; /* the data ranges shown */
    int xlog, ylog;            /* log10 axes */
    double pad;                /* part of the range added at each end by pl_chart_x / _y (0.04); 0: exact */
    char xtitle[160], ytitle[160];
    int ncat;                  /* categorical x: the number of slots, else 0 */
    int cat_step, cat_rot;     /* every cat_step-th category labelled; labels turned 90 degrees */
    double cat_size, cat_bottom; /* their text size; the lowest pixel row they reach */
    pl_legend_entry legend[PL_MAX_LEGEND];
    int nlegend;
    double legend_x0, legend_y0, legend_x1, legend_y1; /* where pl_chart_legend put it; all 0: none */
    int legend_where;          /* 0 none or inside, 1 right of the plot area, 2 above it */
} pl_chart;

/* A chart whose plot area is the pixels [x0, x1] x [y0, y1] (y0 the top). Leave room around it
   for the tick labels and axis titles: about 80 px on the left and 55 below. */
PL_DEF void pl_chart_init(pl_chart *ch, pl_canvas *c, double x0, double y0, double x1, double y1)
{
    memset(ch, 0, sizeof *ch);
    ch->c = c;
    ch->x0 = fmin(x0, x1), ch->x1 = fmax(x0, x1);
    ch->y0 = fmin(y0, y1), ch->y1 = fmax(y0, y1);
    if (ch->x1 - ch->x0 < 1) ch->x1 = ch->x0 + 1;
    if (ch->y1 - ch->y0 < 1) ch->y1 = ch->y0 + 1;
    ch->xlo = ch->ylo = 0;
    ch->xhi = ch->yhi = 1;
    ch->pad = 0.04;
    ch->cat_step = 1;
    ch->cat_size = 13;
}

/* Set *plo..*phi from lo..hi: sane for the axis kind, then widened by `pad` of the span at
   each end (matplotlib's margins, so that data does not sit on the frame), except, with
   keep_zero (the y axis), at an end that is exactly 0 on a linear axis: bars and counts start
   at the axis. */
PL_DEF void pl__range(double *plo, double *phi, double lo, double hi, int lg, double pad, int keep_zero)
{
    if (!isfinite(lo) && !isfinite(hi)) lo = lg ? 1 : 0, hi = lg ? 10 : 1;
    else if (!isfinite(lo)) lo = hi;
    else if (!isfinite(hi)) hi = lo;
    if (lo > hi) { double t = lo; lo = hi; hi = t; }
    if (!(pad >= 0)) pad = 0;
    if (lg) {
        if (!(hi > 0)) lo = 1, hi = 10;
        else if (!(lo > 0)) lo = hi / 1000;
        if (lo == hi) lo /= sqrt(10.0), hi *= sqrt(10.0);
        double k = pow(hi / lo, pad);
        lo /= k, hi *= k;
    } else {
        if (lo == hi) {
            double d = lo == 0 ? 1 : fabs(lo) * 0.1;
            if (lo != 0) lo -= d;
            hi += d;
        }
        double span = hi - lo;
        if (lo != 0 || !keep_zero) lo -= pad * span;
        if (hi != 0 || !keep_zero) hi += pad * span;
    }
    *plo = lo, *phi = hi;
}

/* The x range (lo..hi, a log10 axis if log10_axis) and the axis title (may be NULL). */
PL_DEF void pl_chart_x(pl_chart *ch, double lo, double hi, int log10_axis, const char *title)
{
    ch->xlog = log10_axis != 0;
    ch->ncat = 0;
    pl__range(&ch->xlo, &ch->xhi, lo, hi, ch->xlog, ch->pad, 0);
    snprintf(ch->xtitle, sizeof ch->xtitle, "%s", title ? title : "");
}

PL_DEF void pl_chart_y(pl_chart *ch, double lo, double hi, int log10_axis, const char *title)
{
    ch->ylog = log10_axis != 0;
    pl__range(&ch->ylo, &ch->yhi, lo, hi, ch->ylog, ch->pad, 1);
    snprintf(ch->ytitle, sizeof ch->ytitle, "%s", title ? title : "");
}

/* Extend *lo / *hi to take in v[0..n) (NaN and infinities ignored). Start from +inf / -inf,
   or from bounds that must be shown anyway (0 for bars). */
PL_DEF void pl_range_of(const double *v, int n, double *lo, double *hi)
{
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) {
            if (v[i] < *lo) *lo = v[i];
            if (v[i] > *hi) *hi = v[i];
        }
}

/* Data to pixels; NaN where the value cannot be shown (<= 0 on a log axis). */
PL_DEF double pl_chart_px(const pl_chart *ch, double x)
{
    double t = ch->xlog ? (x > 0 ? log10(x / ch->xlo) / log10(ch->xhi / ch->xlo) : NAN) : (x - ch->xlo) / (ch->xhi - ch->xlo);
    return ch->x0 + t * (ch->x1 - ch->x0);
}

PL_DEF double pl_chart_py(const pl_chart *ch, double y)
{
    double t = ch->ylog ? (y > 0 ? log10(y / ch->ylo) / log10(ch->yhi / ch->ylo) : NAN) : (y - ch->ylo) / (ch->yhi - ch->ylo);
    return ch->y1 - t * (ch->y1 - ch->y0);
}

/* Pixels back to data. */
PL_DEF double pl_chart_data_x(const pl_chart *ch, double px)
{
    double t = (px - ch->x0) / (ch->x1 - ch->x0);
    return ch->xlog ? ch->xlo * pow(ch->xhi / ch->xlo, t) : ch->xlo + t * (ch->xhi - ch->xlo);
}

PL_DEF double pl_chart_data_y(const pl_chart *ch, double py)
{
    double t = (ch->y1 - py) / (ch->y1 - ch->y0);
    return ch->ylog ? ch->ylo * pow(ch->yhi / ch->ylo, t) : ch->ylo + t * (ch->yhi - ch->ylo);
}

/* Where bars and the like start: 0, or the bottom of the axis when 0 is not on it. */
PL_DEF double pl__base(const pl_chart *ch)
{
    if (ch->ylog) return ch->ylo;
    return ch->ylo > 0 ? ch->ylo : ch->yhi < 0 ? ch->yhi : 0;
}

PL_DEF void pl__clip_chart(pl_chart *ch) { pl_clip(ch->c, ch->x0, ch->y0, ch->x1, ch->y1); }

/* Record data drawn at [x0, x1] x [y0, y1] (any order), the part inside the plot area. */
PL_DEF void pl__mark_data(pl_chart *ch, double x0, double y0, double x1, double y1)
{
    if (x0 > x1) { double t = x0; x0 = x1; x1 = t; }
    if (y0 > y1) { double t = y0; y0 = y1; y1 = t; }
    x0 = fmax(x0, ch->x0), x1 = fmin(x1, ch->x1), y0 = fmax(y0, ch->y0), y1 = fmin(y1, ch->y1);
    if (x0 <= x1 && y0 <= y1) pl_mark_add(ch->c, x0, y0, x1, y1, PL_MARK_DATA, -1);
}

/* Record a polyline in pixels as squares of half-size r every 3 px along it, so that a
   rectangle (a legend, a label) that any of it crosses finds one of them. */
PL_DEF void pl__mark_polyline(pl_chart *ch, const double *px, const double *py, int n, double r)
{
    for (int i = 0; i + 1 < n; i++) {
        if (!(isfinite(px[i]) && isfinite(py[i]) && isfinite(px[i + 1]) && isfinite(py[i + 1]))) continue;
        double t0, t1, dx = px[i + 1] - px[i], dy = py[i + 1] - py[i];
        if (!pl__clip_seg(px[i], py[i], px[i + 1], py[i + 1], ch->x0 - r, ch->y0 - r, ch->x1 + r, ch->y1 + r, &t0, &t1))
            continue;
        double len = (t1 - t0) * sqrt(dx * dx + dy * dy);
        int steps = (int)ceil(len / 3);
        for (int k = 0; k <= steps; k++) {
            double t = t0 + (t1 - t0) * (steps ? (double)k / steps : 0);
            double x = px[i] + dx * t, y = py[i] + dy * t;
            pl__mark_data(ch, x - r, y - r, x + r, y + r);
        }
    }
}

PL_DEF void pl__legend_add(pl_chart *ch, const char *label, uint32_t rgb, int kind, int shape, int dashed,
                           double width, double alpha)
{
    if (!label || !*label || ch->nlegend >= PL_MAX_LEGEND) return;
    pl_legend_entry *e = &ch->legend[ch->nlegend++];
    memset(e, 0, sizeof *e);
    snprintf(e->label, sizeof e->label, "%.*s", (int)sizeof e->label - 1, label); /* cut long labels */
    e->rgb = rgb, e->kind = kind, e->shape = shape, e->dashed = dashed, e->width = width, e->alpha = alpha;
}

/* ---- axes ---- */

/* The smallest of 1, 2, 5 x 10^k that is >= raw. */
PL_DEF double pl__step_up(double raw)
{
    if (!(raw > 0) || !isfinite(raw)) return 1;
    double p = pow(10, floor(log10(raw))), m = raw / p;
    return (m <= 1 + 1e-9 ? 1 : m <= 2 + 1e-9 ? 2 : m <= 5 + 1e-9 ? 5 : 10) * p;
}

/* Decimals that show multiples of `step` exactly (0.25 needs 2, 5 needs 0). */
PL_DEF int pl__decimals(double step)
{
    int d = 0;
    while (d < 12 && fabs(step * pow(10, d) - floor(step * pow(10, d) + 0.5)) > 1e-6 * step * pow(10, d)) d++;
    return d;
}

/* "-" as the typographic minus, as in matplotlib (the built-in font shows '-'). */
PL_DEF void pl__minus(char *buf, size_t n)
{
    if (buf[0] != '-' || strlen(buf) + 3 >= n) return;
    memmove(buf + 3, buf + 1, strlen(buf));
    memcpy(buf, "\xE2\x88\x92", 3);
}

/* "2.0e-05" -> "2e-5": scientific notation without the noise. */
PL_DEF void pl__tidy_exp(char *buf)
{
    char *e = strchr(buf, 'e');
    if (!e) return;
    int ex = atoi(e + 1);
    char *m = e; /* drop trailing zeros of the mantissa, and a bare point */
    if (strchr(buf, '.') && strchr(buf, '.') < e) {
        while (m[-1] == '0') m--;
        if (m[-1] == '.') m--;
    }
    sprintf(m, "e%d", ex);
}

/* A tick label for v on a linear axis with ticks `step` apart, `ref` the largest magnitude on
   the axis: decimals just enough to tell ticks apart (never "0.30000000000000004"); 100000
   and up as 100k / 2.5M / 7B; steps below 1e-4 (or values from 1e15) in scientific notation. */
PL_DEF void pl_format_tick(char *buf, size_t n, double v, double step, double ref)
{
    if (!isfinite(v)) {
        snprintf(buf, n, "%s", v != v ? "nan" : v > 0 ? "inf" : "-inf");
        return;
    }
    if (!(step > 0) || !isfinite(step)) step = fabs(v) > 0 ? fabs(v) : 1;
    if (fabs(v) < step * 1e-6) v = 0;
    ref = fmax(fabs(ref), fabs(v));
    if (v != 0 && (step < 1e-4 || ref >= 1e15)) {
        int digits = (int)floor(log10(fabs(v))) - (int)floor(log10(step) + 1e-9);
        snprintf(buf, n, "%.*e", digits < 0 ? 0 : digits > 15 ? 15 : digits, v);
        pl__tidy_exp(buf);
    } else if (ref >= 1e5 && step >= 1) {
        double div = ref < 1e6 ? 1e3 : ref < 1e9 ? 1e6 : ref < 1e12 ? 1e9 : 1e12;
        const char *suffix = ref < 1e6 ? "k" : ref < 1e9 ? "M" : ref < 1e12 ? "B" : "T";
        snprintf(buf, n, "%.*f%s", pl__decimals(step / div), v / div, v == 0 ? "" : suffix);
    } else {
        snprintf(buf, n, "%.*f", pl__decimals(step), v);
    }
    pl__minus(buf, n);
}

/* A tick label on a log axis: 0.01, 0.5, 1, 20, 500, 1k, 10k, 1M, ...; beyond, 1e-5 / 1e18. */
PL_DEF void pl__format_log(char *buf, size_t n, double v)
{
    double a = fabs(v);
    if (a >= 1e3 && a < 1e15) {
        double div = a < 1e6 ? 1e3 : a < 1e9 ? 1e6 : a < 1e12 ? 1e9 : 1e12;
        snprintf(buf, n, "%g%s", v / div, a < 1e6 ? "k" : a < 1e9 ? "M" : a < 1e12 ? "B" : "T");
    } else if (a >= 1e-4 || a == 0) {
        snprintf(buf, n, "%g", v);
    } else {
        snprintf(buf, n, "%.1e", v);
        pl__tidy_exp(buf);
    }
    pl__minus(buf, n);
}

typedef struct pl__tick {
    double v;
    int major; /* labelled, with a grid line; else a short minor tick */
} pl__tick;

/* Ticks for lo..hi along len_px pixels, labelled ones at least min_gap_px apart. Linear: a
   1/2/5 step; log: decades (every k-th if they are crowded), with 2 and 5 labelled too when
   there is room and the range is a few decades or less, 1..9 when under one decade; unlabelled
   minor ticks at the other integers x 10^k where they fit. *step gets the linear step. */
PL_DEF int pl__ticks(double lo, double hi, int lg, double len_px, double min_gap_px, pl__tick *t, int max, double *step)
{
    int n = 0;
    *step = 0;
    if (!lg) {
        double s = pl__step_up((hi - lo) * min_gap_px / fmax(len_px, 1));
        *step = s;
        double k0 = ceil(lo / s - 1e-9), k1 = floor(hi / s + 1e-9);
        for (double k = k0; k <= k1 && n < max; k++) {
            t[n].v = fabs(k) < 1e-9 ? 0 : k * s;
            t[n++].major = 1;
        }
        return n;
    }
    double llo = log10(lo), lhi = log10(hi), decades = lhi - llo, dec_px = len_px / fmax(decades, 1e-9);
    int level = decades < 1 && dec_px * log10(10.0 / 9) >= min_gap_px ? 2
                : decades <= 3.2 && dec_px * log10(2.0) >= min_gap_px ? 1 : 0;
    int stride = 1; /* decades between labels */
    while (stride * dec_px < min_gap_px && stride < 1000) stride = stride < 2 ? 2 : stride < 3 ? 3 : stride < 5 ? 5 : stride * 2;
    int minor = stride == 1 && dec_px >= 45;
    for (int e = (int)floor(llo) - 1; e <= (int)ceil(lhi) && n < max; e++)
        for (int m = 1; m <= 9 && n < max; m++) {
            double v = m * pow(10, e);
            if (v < lo * (1 - 1e-9) || v > hi * (1 + 1e-9)) continue;
            int major = level == 2 || (m == 1 && e % stride == 0) || (level == 1 && (m == 2 || m == 5));
            if (!major && !minor && level == 0) continue;
            t[n].v = v;
            t[n++].major = major;
        }
    return n;
}

/* The tick label for t on an axis. */
PL_DEF void pl__tick_label(char *buf, size_t n, const pl__tick *t, int lg, double step, double ref)
{
    if (lg) pl__format_log(buf, n, t->v);
    else pl_format_tick(buf, n, t->v, step, ref);
}

#define PL_TICK_SIZE 13.0
#define PL_TITLE_SIZE 14.5
#define PL_INK 0x333333   /* tick labels */
#define PL_SPINE 0x4D4D4D /* axis lines and ticks */
#define PL_GRID 0xE5E5E5

/* The pixel row of the x axis (just below the plot area, which data fills) and the pixel
   column of the y axis (just left of it). */
PL_DEF int pl__axis_row(const pl_chart *ch) { return (int)ceil(ch->y1); }
PL_DEF int pl__axis_col(const pl_chart *ch) { return (int)floor(ch->x0) - 1; }

/* Smallest of 1, 2, 5, 10, 20, 50, ... that is >= r. */
PL_DEF int pl__nice_int(double r)
{
    for (int p = 1; p < 100000000; p *= 10) {
        if (p >= r) return p;
        if (2 * p >= r) return 2 * p;
        if (5 * p >= r) return 5 * p;
    }
    return 100000000;
}

/* A categorical x axis: slot i centred at x = i, so the range is [-0.5, n - 0.5]; the labels
   (drawn now, under the axis) are turned 90 degrees when they do not fit across their slots,
   and only every k-th (k = 1, 2, 5, 10, ...) is shown when even that is too crowded. */
PL_DEF void pl_chart_x_categories(pl_chart *ch, int n, const char *const *labels, const char *title)
{
    pl_canvas *c = ch->c;
    ch->ncat = n > 0 ? n : 0;
    ch->xlog = 0;
    ch->xlo = -0.5;
    ch->xhi = ch->ncat > 0 ? ch->ncat - 0.5 : 0.5;
    snprintf(ch->xtitle, sizeof ch->xtitle, "%s", title ? title : "");
    int B = pl__axis_row(ch);
    ch->cat_bottom = B + 6;
    ch->cat_step = 1;
    ch->cat_rot = 0;
    if (!labels || ch->ncat == 0) return;
    double slot = (ch->x1 - ch->x0) / n, size = PL_TICK_SIZE, maxw = 0;
    for (int i = 0; i < n; i++)
        if (labels[i]) maxw = fmax(maxw, pl_text_width(c, size, 0, labels[i]));
    double across = size * 1.25; /* a turned label's thickness, with a gap */
    int step = 1, rot = 0;
    if (maxw + 8 > slot) {
        if (across <= slot) rot = 1;
        else {
            int kh = pl__nice_int((maxw + 8) / slot), kr = pl__nice_int(across / slot);
            if (kh <= 2 * kr) step = kh; /* level labels read better, at twice the thinning */
            else step = kr, rot = 1;
        }
    }
    double top = B + 8;
    if (rot) { /* long turned labels: smaller, so that they (and the axis title) stay on the canvas */
        double avail = c->h - top - (ch->xtitle[0] ? 28 : 4);
        if (maxw > avail && avail > 0) size = fmax(8, size * avail / maxw);
    }
    ch->cat_step = step, ch->cat_rot = rot, ch->cat_size = size;
    for (int i = 0; i < n; i += step) {
        if (!labels[i] || !*labels[i]) continue;
        double x = pl_chart_px(ch, i), box[4];
        int flags = rot ? PL_RIGHT | PL_MIDDLE | PL_ROT90 : PL_CENTER | PL_TOP;
        pl_text(c, x, top, size, PL_INK, flags, labels[i]);
        pl_text_box(c, x, top, size, flags, labels[i], box);
        pl_mark_add(c, box[0], box[1], box[2], box[3], PL_MARK_AXIS, i);
        ch->cat_bottom = fmax(ch->cat_bottom, box[3]);
    }
}

/* Grid, ticks, tick labels, axis titles and the two axis lines (left and bottom). */
PL_DEF void pl_chart_axes(pl_chart *ch)
{
    pl_canvas *c = ch->c;
    const double ts = PL_TICK_SIZE;
    int L = pl__axis_col(ch), B = pl__axis_row(ch), top = (int)floor(ch->y0);
    pl__tick t[256];
    double step, box[4];
    char buf[64];

    /* y: about one label per 48 px */
    int n = pl__ticks(ch->ylo, ch->yhi, ch->ylog, ch->y1 - ch->y0, 48, t, 256, &step);
    double ref = fmax(fabs(ch->ylo), fabs(ch->yhi)), maxw = 0;
    for (int i = 0; i < n; i++) {
        double py = pl_chart_py(ch, t[i].v);
        if (!(py >= ch->y0 - 0.5 && py <= ch->y1 + 0.5)) continue;
        int row = (int)floor(py);
        if (row > B) row = B;
        if (!t[i].major) {
            pl_rect(c, L - 3, row, L, row + 1, PL_SPINE);
            continue;
        }
        if (row < B && row >= top) pl_rect(c, ch->x0, row, ch->x1, row + 1, PL_GRID);
        pl_rect(c, L - 5, row, L, row + 1, PL_SPINE);
        pl__tick_label(buf, sizeof buf, &t[i], ch->ylog, step, ref);
        pl_text(c, L - 8, row + 0.5, ts, PL_INK, PL_RIGHT | PL_MIDDLE, buf);
        pl_text_box(c, L - 8, row + 0.5, ts, PL_RIGHT | PL_MIDDLE, buf, box);
        pl_mark_add(c, box[0], box[1], box[2], box[3], PL_MARK_AXIS, -1);
        maxw = fmax(maxw, box[2] - box[0]);
    }

    /* x */
    double bottom = B + 6;
    if (ch->ncat) {
        for (int i = 0; i < ch->ncat; i += ch->cat_step) {
            int col = (int)floor(pl_chart_px(ch, i));
            pl_rect(c, col, B + 1, col + 1, B + 6, PL_SPINE);
        }
        bottom = ch->cat_bottom;
    } else {
        /* widen the spacing until the widest label fits between neighbours */
        double gap = 90;
        ref = fmax(fabs(ch->xlo), fabs(ch->xhi));
        for (int tries = 0; tries < 6; tries++) {
            n = pl__ticks(ch->xlo, ch->xhi, ch->xlog, ch->x1 - ch->x0, gap, t, 256, &step);
            double need = 0, prev = NAN, closest = INFINITY;
            for (int i = 0; i < n; i++) {
                if (!t[i].major) continue;
                pl__tick_label(buf, sizeof buf, &t[i], ch->xlog, step, ref);
                need = fmax(need, pl_text_width(c, ts, 0, buf) + 16);
                double px = pl_chart_px(ch, t[i].v);
                if (prev == prev) closest = fmin(closest, px - prev);
                prev = px;
            }
            if (closest >= need) break;
            gap = fmax(gap * 1.5, need);
        }
        for (int i = 0; i < n; i++) {
            double px = pl_chart_px(ch, t[i].v);
            if (!(px >= ch->x0 - 0.5 && px <= ch->x1 + 0.5)) continue;
            int col = (int)floor(px);
            if (col < L) col = L;
            if (!t[i].major) {
                pl_rect(c, col, B + 1, col + 1, B + 4, PL_SPINE);
                continue;
            }
            if (col > L && col < (int)ceil(ch->x1)) pl_rect(c, col, ch->y0, col + 1, B, PL_GRID);
            pl_rect(c, col, B + 1, col + 1, B + 6, PL_SPINE);
            pl__tick_label(buf, sizeof buf, &t[i], ch->xlog, step, ref);
            double x = col + 0.5;
            pl_text_box(c, x, B + 9, ts, PL_CENTER | PL_TOP, buf, box);
            if (box[0] < 2) x += 2 - box[0]; /* keep the end labels on the canvas */
            if (box[2] > c->w - 2) x -= box[2] - (c->w - 2);
            pl_text(c, x, B + 9, ts, PL_INK, PL_CENTER | PL_TOP, buf);
            pl_text_box(c, x, B + 9, ts, PL_CENTER | PL_TOP, buf, box);
            pl_mark_add(c, box[0], box[1], box[2], box[3], PL_MARK_AXIS, -1);
            bottom = fmax(bottom, box[3]);
        }
    }

    /* the axis lines, outside the plot area so that data never hides them */
    pl_rect(c, L, ch->y0, L + 1, B + 1, PL_SPINE);
    pl_rect(c, L, B, ch->x1, B + 1, PL_SPINE);

    /* titles: x under the tick labels; y turned, left of the widest y tick label */
    if (ch->xtitle[0]) {
        double sz = pl_fit_size(c, PL_TITLE_SIZE, 9, fmax(ch->x1 - ch->x0, 40), 0, ch->xtitle);
        double y = bottom + 8;
        pl_text(c, (ch->x0 + ch->x1) / 2, y, sz, 0x1A1A1A, PL_CENTER | PL_TOP, ch->xtitle);
        pl_text_box(c, (ch->x0 + ch->x1) / 2, y, sz, PL_CENTER | PL_TOP, ch->xtitle, box);
        pl_mark_add(c, box[0], box[1], box[2], box[3], PL_MARK_AXIS, -3);
    }
    if (ch->ytitle[0]) {
        double sz = pl_fit_size(c, PL_TITLE_SIZE, 9, fmax(ch->y1 - ch->y0, 40), 0, ch->ytitle);
        /* the turned text's descenders face the tick labels: its baseline sits a descent
           further left */
        double right = L - 8 - maxw - 10, x = right - sz * 0.22;
        x = fmax(x, sz * 0.85);
        pl_text(c, x, (ch->y0 + ch->y1) / 2, sz, 0x1A1A1A, PL_CENTER | PL_BASELINE | PL_ROT90, ch->ytitle);
        pl_text_box(c, x, (ch->y0 + ch->y1) / 2, sz, PL_CENTER | PL_BASELINE | PL_ROT90, ch->ytitle, box);
        pl_mark_add(c, box[0], box[1], box[2], box[3], PL_MARK_AXIS, -2);
    }
}

/* ---- data ---- */

/* Pixel positions of data points (x NULL: 0, 1, 2, ...); NULL when out of memory. */
PL_DEF double *pl__to_px(const pl_chart *ch, const double *x, const double *y, int n)
{
    double *p = (double *)malloc(sizeof(double) * 2 * (size_t)(n > 0 ? n : 1));
    if (!p) return NULL;
    for (int i = 0; i < n; i++) {
        p[i] = pl_chart_px(ch, x ? x[i] : i);
        p[n + i] = pl_chart_py(ch, y[i]);
    }
    return p;
}

/* A polyline through (x[i], y[i]) (x NULL: 0, 1, 2, ...), `width` px wide, clipped to the plot
   area; a NaN (or a value <= 0 on a log axis) breaks it. label (may be NULL): a legend entry. */
PL_DEF void pl_chart_line(pl_chart *ch, const double *x, const double *y, int n, uint32_t rgb, double width,
                          int dashed, const char *label)
{
    pl__legend_add(ch, label, rgb, PL_LEG_LINE, 0, dashed, width, 1);
    double *p = n > 0 ? pl__to_px(ch, x, y, n) : NULL;
    if (!p) return;
    pl__clip_chart(ch);
    pl_polyline(ch->c, p, p + n, n, width, rgb, 1, dashed);
    pl_unclip(ch->c);
    pl__mark_polyline(ch, p, p + n, n, width / 2 + 1);
    free(p);
}

/* One marker of `shape` (PL_M_*), `size` px across, centred at pixel (x, y). */
PL_DEF void pl_marker(pl_canvas *c, double x, double y, int shape, double size, uint32_t rgb)
{
    double r = size / 2;
    switch (shape) {
    case PL_M_SQUARE: /* a bit smaller than the circle, which looks the same size */
        pl_rect(c, x - 0.88 * r, y - 0.88 * r, x + 0.88 * r, y + 0.88 * r, rgb);
        break;
    case PL_M_TRIANGLE: {
        double xs[3] = {x, x + 1.1 * r, x - 1.1 * r}, ys[3] = {y - 1.15 * r, y + 0.8 * r, y + 0.8 * r};
        pl_polygon(c, xs, ys, 3, rgb, 1);
        break;
    }
    case PL_M_DIAMOND: {
        double xs[4] = {x, x + 0.85 * r, x, x - 0.85 * r}, ys[4] = {y - 1.15 * r, y, y + 1.15 * r, y};
        pl_polygon(c, xs, ys, 4, rgb, 1);
        break;
    }
    case PL_M_CROSS: {
        double w = fmax(1.5, size / 5), d = 0.8 * r;
        pl_line(c, x - d, y - d, x + d, y + d, w, rgb);
        pl_line(c, x - d, y + d, x + d, y - d, w, rgb);
        break;
    }
    default:
        pl_circle(c, x, y, r, rgb, 1);
    }
}

/* Markers at the points; each gets a thin white rim, so that overlapping ones stay apart. */
PL_DEF void pl_chart_markers(pl_chart *ch, const double *x, const double *y, int n, uint32_t rgb, int shape,
                             double size_px, const char *label)
{
    pl__legend_add(ch, label, rgb, PL_LEG_MARKER, shape, 0, size_px, 1);
    pl__clip_chart(ch);
    for (int i = 0; i < n; i++) {
        double px = pl_chart_px(ch, x ? x[i] : i), py = pl_chart_py(ch, y[i]);
        if (!(isfinite(px) && isfinite(py))) continue;
        if (shape != PL_M_CROSS) pl_marker(ch->c, px, py, shape, size_px + 2, 0xFFFFFF);
        pl_marker(ch->c, px, py, shape, size_px, rgb);
        pl__mark_data(ch, px - size_px / 2 - 1, py - size_px / 2 - 1, px + size_px / 2 + 1, py + size_px / 2 + 1);
    }
    pl_unclip(ch->c);
}

/* The area between lo[i] and hi[i], at opacity alpha (0.2 suits a band under its line); runs
   of points with a NaN between them make separate pieces. */
PL_DEF void pl_chart_band(pl_chart *ch, const double *x, const double *lo, const double *hi, int n, uint32_t rgb,
                          double alpha, const char *label)
{
    pl__legend_add(ch, label, rgb, PL_LEG_BAND, 0, 0, 0, alpha);
    if (n < 2) return;
    double *px = (double *)malloc(sizeof(double) * 3 * (size_t)n), *pa = px + n, *pb = px + 2 * n;
    double *poly = (double *)malloc(sizeof(double) * 4 * (size_t)n);
    if (!px || !poly) {
        free(px);
        free(poly);
        return;
    }
    for (int i = 0; i < n; i++) {
        px[i] = pl_chart_px(ch, x ? x[i] : i);
        pa[i] = pl_chart_py(ch, lo[i]);
        pb[i] = pl_chart_py(ch, hi[i]);
    }
    pl__clip_chart(ch);
    for (int i = 0; i < n;) {
        int j = i; /* the run [i, j) of usable points */
        while (j < n && isfinite(px[j]) && isfinite(pa[j]) && isfinite(pb[j])) j++;
        if (j - i >= 2) {
            int m = j - i;
            for (int k = 0; k < m; k++) { /* along the top, back along the bottom */
                poly[k] = px[i + k], poly[2 * m + k] = pb[i + k];
                poly[2 * m - 1 - k] = px[i + k], poly[4 * m - 1 - k] = pa[i + k];
            }
            pl_polygon(ch->c, poly, poly + 2 * m, 2 * m, rgb, alpha);
            /* record the band as slices a few pixels wide */
            for (int k = i; k + 1 < j; k++) {
                int steps = (int)fmin(2000, ceil(fabs(px[k + 1] - px[k]) / 4));
                if (steps < 1) steps = 1;
                for (int s = 0; s < steps; s++) {
                    double t0 = (double)s / steps, t1 = (double)(s + 1) / steps;
                    double ya = pa[k] + (pa[k + 1] - pa[k]) * t0, yb = pb[k] + (pb[k + 1] - pb[k]) * t0;
                    double yc = pa[k] + (pa[k + 1] - pa[k]) * t1, yd = pb[k] + (pb[k + 1] - pb[k]) * t1;
                    pl__mark_data(ch, px[k] + (px[k + 1] - px[k]) * t0, fmin(fmin(ya, yb), fmin(yc, yd)),
                                  px[k] + (px[k + 1] - px[k]) * t1, fmax(fmax(ya, yb), fmax(yc, yd)));
                }
            }
        }
        i = j + 1;
    }
    pl_unclip(ch->c);
    free(px);
    free(poly);
}

/* Vertical error bars from lo[i] to hi[i] at x[i], with caps cap_px wide (0: none). */
PL_DEF void pl_chart_errorbars(pl_chart *ch, const double *x, const double *lo, const double *hi, int n, uint32_t rgb,
                               double cap_px)
{
    pl__clip_chart(ch);
    for (int i = 0; i < n; i++) {
        double px = pl_chart_px(ch, x ? x[i] : i), a = pl_chart_py(ch, lo[i]), b = pl_chart_py(ch, hi[i]);
        if (!(isfinite(px) && isfinite(a) && isfinite(b))) continue;
        pl_line(ch->c, px, a, px, b, 1.5, rgb);
        if (cap_px > 0) {
            pl_line(ch->c, px - cap_px / 2, a, px + cap_px / 2, a, 1.5, rgb);
            pl_line(ch->c, px - cap_px / 2, b, px + cap_px / 2, b, 1.5, rgb);
        }
        double hw = fmax(cap_px / 2, 1);
        pl__mark_data(ch, px - hw, fmin(a, b) - 1, px + hw, fmax(a, b) + 1);
    }
    pl_unclip(ch->c);
}

/* Bars over a categorical x axis: v[g * nseries + s] for group g, series s. Grouped
   (stacked = 0): the series side by side within 80% of the slot, with error bars of half
   width err[...] (err may be NULL, an entry NaN); stacked: each group's segments piled from
   0 upwards in series order (negative values downwards), err ignored. colors NULL: the
   palette. Bars start at 0, or at the bottom of the axis when 0 is not on it (log axes). */
PL_DEF void pl_chart_bars(pl_chart *ch, const double *v, const double *err, int ngroups, int nseries, int stacked,
                          const uint32_t *colors, const char *const *series_labels)
{
    if (ngroups <= 0 || nseries <= 0) return;
    for (int s = 0; s < nseries; s++)
        pl__legend_add(ch, series_labels ? series_labels[s] : NULL, colors ? colors[s] : pl_color(s), PL_LEG_BOX, 0,
                       0, 0, 1);
    double base = pl__base(ch), ybase = pl_chart_py(ch, base);
    pl__clip_chart(ch);
    for (int g = 0; g < ngroups; g++) {
        double xc = pl_chart_px(ch, g), slot = fabs(pl_chart_px(ch, g + 0.5) - pl_chart_px(ch, g - 0.5));
        if (!isfinite(xc) || !isfinite(slot)) continue;
        if (stacked) {
            double w = slot * 0.7, up = 0, down = 0, xl = xc - w / 2, xr = xc + w / 2;
            double joints[64];
            int nj = 0;
            for (int s = 0; s < nseries; s++) {
                double val = v[g * nseries + s];
                if (!isfinite(val) || val == 0) continue;
                double from = val > 0 ? up : down, to = from + val;
                if (val > 0) up = to;
                else down = to;
                double ya = from == 0 ? ybase : pl_chart_py(ch, from), yb = pl_chart_py(ch, to);
                if (!isfinite(ya)) ya = ybase;
                if (!isfinite(yb)) continue;
                pl_rect(ch->c, xl, ya, xr, yb, colors ? colors[s] : pl_color(s));
                pl__mark_data(ch, xl, ya, xr, yb);
                if (from != 0 && nj < 64) joints[nj++] = ya;
            }
            for (int k = 0; k < nj; k++) /* a hairline between segments, as in print */
                pl_rect_alpha(ch->c, xl, joints[k] - 0.5, xr, joints[k] + 0.5, 0xFFFFFF, 0.8);
        } else {
            double gw = slot * 0.8, bw = gw / nseries, gap = bw > 8 ? 0.5 : 0;
            for (int s = 0; s < nseries; s++) {
                double val = v[g * nseries + s], y = pl_chart_py(ch, val);
                if (!isfinite(y)) continue;
                double xl = xc - gw / 2 + s * bw + gap, xr = xl + bw - 2 * gap;
                pl_rect(ch->c, xl, ybase, xr, y, colors ? colors[s] : pl_color(s));
                pl__mark_data(ch, xl, ybase, xr, y);
                double e = err ? err[g * nseries + s] : NAN;
                if (isfinite(e) && e > 0) {
                    double lo = val - e, hi = val + e, xm = (xl + xr) / 2;
                    pl_unclip(ch->c);
                    pl__clip_chart(ch);
                    double a = pl_chart_py(ch, lo), b = pl_chart_py(ch, hi), cap = fmin(fmax(bw * 0.4, 4), 12);
                    if (!isfinite(a)) a = ybase;
                    if (isfinite(b)) {
                        pl_line(ch->c, xm, a, xm, b, 1.4, 0x262626);
                        pl_line(ch->c, xm - cap / 2, a, xm + cap / 2, a, 1.4, 0x262626);
                        pl_line(ch->c, xm - cap / 2, b, xm + cap / 2, b, 1.4, 0x262626);
                        pl__mark_data(ch, xm - cap / 2, fmin(a, b), xm + cap / 2, fmax(a, b));
                    }
                }
            }
        }
    }
    pl_unclip(ch->c);
}

/* Sorted copy of the finite values; *m gets their number. NULL when none (or no memory). */
PL_DEF double *pl__sorted(const double *v, int n, int *m)
{
    double *s = (double *)malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    *m = 0;
    if (!s) return NULL;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) s[(*m)++] = v[i];
    for (int i = 1; i < *m; i++) { /* insertion sort with a binary search: n is modest */
        double t = s[i];
        int a = 0, b = i;
        while (a < b) {
            int mid = (a + b) / 2;
            if (s[mid] <= t) a = mid + 1;
            else b = mid;
        }
        memmove(s + a + 1, s + a, sizeof(double) * (size_t)(i - a));
        s[a] = t;
    }
    if (!*m) {
        free(s);
        return NULL;
    }
    return s;
}

/* Quantile p of sorted s[0..n), interpolating linearly between order statistics (numpy's
   default, so box plots match what readers compute themselves). */
PL_DEF double pl_quantile(const double *s, int n, double p)
{
    double h = (n - 1) * p;
    int i = (int)floor(h);
    if (i >= n - 1) return s[n - 1];
    if (i < 0) return s[0];
    return s[i] + (h - i) * (s[i + 1] - s[i]);
}

/* A box plot at data x: the quartile box, lightly filled, a median line, whiskers to the
   furthest points within 1.5 IQR of the box, and the points beyond as small open circles. */
PL_DEF void pl_chart_box(pl_chart *ch, double x, const double *v, int n, double width_px, uint32_t rgb)
{
    int m;
    double *s = pl__sorted(v, n, &m);
    if (!s) return;
    double q1 = pl_quantile(s, m, 0.25), med = pl_quantile(s, m, 0.5), q3 = pl_quantile(s, m, 0.75);
    double iqr = q3 - q1, wlo = q1, whi = q3;
    for (int i = 0; i < m; i++) /* the furthest data within the fences */
        if (s[i] >= q1 - 1.5 * iqr) { wlo = fmin(s[i], q1); break; }
    for (int i = m - 1; i >= 0; i--)
        if (s[i] <= q3 + 1.5 * iqr) { whi = fmax(s[i], q3); break; }
    double px = pl_chart_px(ch, x), hw = width_px / 2, y1 = pl_chart_py(ch, q1), y3 = pl_chart_py(ch, q3);
    double ym = pl_chart_py(ch, med), ylo = pl_chart_py(ch, wlo), yhi = pl_chart_py(ch, whi);
    uint32_t dark = pl_mix(rgb, 0x000000, 0.35);
    pl__clip_chart(ch);
    if (isfinite(px) && isfinite(y1) && isfinite(y3)) {
        pl_line(ch->c, px, y3, px, yhi, 1.4, rgb); /* whiskers and their caps */
        pl_line(ch->c, px, y1, px, ylo, 1.4, rgb);
        pl_line(ch->c, px - hw / 2, yhi, px + hw / 2, yhi, 1.4, rgb);
        pl_line(ch->c, px - hw / 2, ylo, px + hw / 2, ylo, 1.4, rgb);
        pl_rect_alpha(ch->c, px - hw, y3, px + hw, y1, rgb, 0.25);
        pl_rect_outline(ch->c, px - hw, y3 - 0.75, px + hw, y1 + 0.75, 1.5, rgb);
        pl_line(ch->c, px - hw + 0.75, ym, px + hw - 0.75, ym, 2.2, dark);
        pl__mark_data(ch, px - hw, fmin(y3, yhi), px + hw, fmax(y1, ylo));
        for (int i = 0; i < m; i++)
            if (s[i] < wlo || s[i] > whi) {
                double py = pl_chart_py(ch, s[i]);
                pl_ring(ch->c, px, py, 3, 1.2, rgb);
                pl__mark_data(ch, px - 4, py - 4, px + 4, py + 4);
            }
    }
    pl_unclip(ch->c);
    free(s);
}

/* A violin at data x: the Gaussian kernel density (Silverman's bandwidth) between the
   smallest and largest value, mirrored, translucent, at most width_px across; a dark bar over
   the quartiles and a white median tick across it. A single value, or values all equal: a
   thin line. */
PL_DEF void pl_chart_violin(pl_chart *ch, double x, const double *v, int n, double width_px, uint32_t rgb)
{
    int m;
    double *s = pl__sorted(v, n, &m);
    if (!s) return;
    double px = pl_chart_px(ch, x), hw = width_px / 2, med = pl_quantile(s, m, 0.5);
    double mean = 0, var = 0;
    for (int i = 0; i < m; i++) mean += s[i];
    mean /= m;
    for (int i = 0; i < m; i++) var += (s[i] - mean) * (s[i] - mean);
    double sd = m > 1 ? sqrt(var / (m - 1)) : 0, iqr = pl_quantile(s, m, 0.75) - pl_quantile(s, m, 0.25);
    double spread = iqr > 0 ? fmin(sd, iqr / 1.34) : sd, h = 0.9 * spread * pow(m, -0.2);
    uint32_t dark = pl_mix(rgb, 0x000000, 0.45);
    pl__clip_chart(ch);
    double ya = pl_chart_py(ch, s[0]), yb = pl_chart_py(ch, s[m - 1]);
    if (!isfinite(px) || !isfinite(ya) || !isfinite(yb)) {
    } else if (m == 1 || !(h > 0) || s[m - 1] == s[0]) {
        double y = pl_chart_py(ch, med);
        pl_line(ch->c, px - hw, y, px + hw, y, 1.5, rgb);
        pl__mark_data(ch, px - hw, y - 1, px + hw, y + 1);
    } else {
        /* density sampled every ~2 px between the extremes, evenly in pixels (log axes too) */
        int k = (int)fmin(400, fmax(16, fabs(ya - yb) / 2));
        double *poly = (double *)malloc(sizeof(double) * 4 * (size_t)(k + 1)), *d = (double *)malloc(sizeof(double) * (size_t)(k + 1));
        if (poly && d) {
            double dmax = 0;
            for (int i = 0; i <= k; i++) {
                double y = pl_chart_data_y(ch, ya + (yb - ya) * i / k), sum = 0;
                for (int j = 0; j < m; j++) {
                    double u = (y - s[j]) / h;
                    if (u * u < 60) sum += exp(-0.5 * u * u);
                }
                d[i] = sum;
                dmax = fmax(dmax, sum);
            }
            int np = 2 * (k + 1);
            for (int i = 0; i <= k; i++) {
                double w = d[i] / dmax * hw, y = ya + (yb - ya) * i / k;
                poly[i] = px + w, poly[np + i] = y;                       /* down the right side */
                poly[np - 1 - i] = px - w, poly[2 * np - 1 - i] = y;      /* back up the left */
                pl__mark_data(ch, px - w, y - fabs(yb - ya) / k, px + w, y + fabs(yb - ya) / k);
            }
            pl_polygon(ch->c, poly, poly + np, np, rgb, 0.35);
            double ox[2 * 402], oy[2 * 402]; /* the outline, closed */
            for (int i = 0; i < np; i++) ox[i] = poly[i], oy[i] = poly[np + i];
            ox[np] = poly[0], oy[np] = poly[np];
            pl_polyline(ch->c, ox, oy, np + 1, 1.2, rgb, 1, 0);
            double q1 = pl_chart_py(ch, pl_quantile(s, m, 0.25)), q3 = pl_chart_py(ch, pl_quantile(s, m, 0.75));
            double ym = pl_chart_py(ch, med), bw = fmin(fmax(width_px * 0.06, 3), 6);
            pl_rect(ch->c, px - bw / 2, q3, px + bw / 2, q1, dark);
            pl_line(ch->c, px - fmax(bw * 1.6, width_px * 0.12), ym, px + fmax(bw * 1.6, width_px * 0.12), ym, 2, dark);
            pl_circle(ch->c, px, ym, bw * 0.45, 0xFFFFFF, 1);
        }
        free(poly);
        free(d);
    }
    pl_unclip(ch->c);
    free(s);
}

/* A horizontal line across the plot area at data y (a baseline, a target). */
PL_DEF void pl_chart_hline(pl_chart *ch, double y, uint32_t rgb, int dashed, const char *label)
{
    pl__legend_add(ch, label, rgb, PL_LEG_LINE, 0, dashed, 1.5, 1);
    double py = pl_chart_py(ch, y);
    if (!isfinite(py)) return;
    double xs[2] = {ch->x0, ch->x1}, ys[2] = {py, py};
    pl__clip_chart(ch);
    pl_polyline(ch->c, xs, ys, 2, 1.5, rgb, 1, dashed);
    pl_unclip(ch->c);
    pl__mark_polyline(ch, xs, ys, 2, 1.75);
}

/* Text at data coordinates (anchored by flags, as pl_text). */
PL_DEF void pl_chart_text(pl_chart *ch, double x, double y, double size, uint32_t rgb, int flags, const char *s)
{
    double px = pl_chart_px(ch, x), py = pl_chart_py(ch, y), box[4];
    if (!(isfinite(px) && isfinite(py)) || !s) return;
    pl_text(ch->c, px, py, size, rgb, flags, s);
    pl_text_box(ch->c, px, py, size, flags, s, box);
    pl_mark_add(ch->c, box[0], box[1], box[2], box[3], PL_MARK_TEXT, -1);
}

/* How much of box b the records of `kinds` cover (pixels, roughly), ignoring those that hold
   the point (ix, iy): a label's own marker. */
PL_DEF double pl__overlap(const pl_canvas *c, const double b[4], int kinds, double ix, double iy)
{
    double sum = 0;
    for (int i = 0; i < c->nmarks; i++) {
        const pl_mark *m = &c->marks[i];
        if (!(m->kind & kinds)) continue;
        if (m->x0 <= ix && ix <= m->x1 && m->y0 <= iy && iy <= m->y1) continue;
        double w = fmin(b[2], m->x1 + 0.5) - fmax(b[0], m->x0 - 0.5), h = fmin(b[3], m->y1 + 0.5) - fmax(b[1], m->y0 - 0.5);
        if (w > 0 && h > 0) sum += w * h;
    }
    return sum;
}

/* A label next to each point: of 8 places around it, the first that overlaps nothing drawn
   (data, other labels, a legend) and stays in the plot area, else the least covered; drawn
   with a white halo so that lines under it do not hurt. */
PL_DEF void pl_chart_labels(pl_chart *ch, const double *x, const double *y, const char *const *labels, int n, uint32_t rgb)
{
    static const double dir[8][2] = {{1, 0}, {0.75, -0.75}, {0.75, 0.75}, {0, -1}, {0, 1}, {-1, 0}, {-0.75, -0.75}, {-0.75, 0.75}};
    static const int anchor[8] = {PL_LEFT | PL_MIDDLE, PL_LEFT | PL_BASELINE, PL_LEFT | PL_TOP, PL_CENTER | PL_BASELINE,
                                  PL_CENTER | PL_TOP, PL_RIGHT | PL_MIDDLE, PL_RIGHT | PL_BASELINE, PL_RIGHT | PL_TOP};
    const double size = 12, d = 7;
    for (int i = 0; i < n; i++) {
        if (!labels[i] || !*labels[i]) continue;
        double px = pl_chart_px(ch, x ? x[i] : i), py = pl_chart_py(ch, y[i]);
        if (!(px >= ch->x0 && px <= ch->x1 && py >= ch->y0 && py <= ch->y1)) continue;
        int best = 0;
        double best_score = INFINITY, box[4];
        for (int k = 0; k < 8; k++) {
            double ax = px + dir[k][0] * d, ay = py + dir[k][1] * d;
            pl_text_box(ch->c, ax, ay, size, anchor[k], labels[i], box);
            double out = fmax(0, ch->x0 - box[0]) + fmax(0, box[2] - ch->x1) + fmax(0, ch->y0 - box[1]) + fmax(0, box[3] - ch->y1);
            double score = pl__overlap(ch->c, box, PL_MARK_DATA | PL_MARK_TEXT | PL_MARK_LEGEND, px, py) + 1e4 * out;
            if (score < best_score) best_score = score, best = k;
            if (score == 0) break;
        }
        double ax = px + dir[best][0] * d, ay = py + dir[best][1] * d;
        pl_text(ch->c, ax, ay, size, rgb, anchor[best] | PL_HALO, labels[i]);
        pl_text_box(ch->c, ax, ay, size, anchor[best], labels[i], box);
        pl_mark_add(ch->c, box[0], box[1], box[2], box[3], PL_MARK_TEXT, i);
    }
}

/* ---- legend ---- */

#define PL_LEG_SAMPLE 26.0 /* the width of a legend entry's sample */

PL_DEF void pl__legend_sample(pl_canvas *c, const pl_legend_entry *e, double x, double cy)
{
    switch (e->kind) {
    case PL_LEG_LINE: {
        double xs[2] = {x + 1, x + PL_LEG_SAMPLE - 1}, ys[2] = {cy, cy};
        pl_polyline(c, xs, ys, 2, e->width, e->rgb, 1, e->dashed);
        break;
    }
    case PL_LEG_MARKER:
        pl_marker(c, x + PL_LEG_SAMPLE / 2, cy, e->shape, fmin(e->width, 11), e->rgb);
        break;
    case PL_LEG_BAND:
        pl_rect_alpha(c, x + 2, cy - 5.5, x + PL_LEG_SAMPLE - 2, cy + 5.5, e->rgb, fmax(e->alpha, 0.15));
        break;
    default:
        pl_rect(c, x + 2, cy - 5.5, x + PL_LEG_SAMPLE - 2, cy + 5.5, e->rgb);
    }
}

/* The legend, boxed, one entry per line in the order added, at text size ts: its size. */
PL_DEF void pl__legend_size(const pl_chart *ch, double ts, double *w, double *h)
{
    double maxw = 0;
    for (int i = 0; i < ch->nlegend; i++) maxw = fmax(maxw, pl_text_width(ch->c, ts, 0, ch->legend[i].label));
    *w = 8 + PL_LEG_SAMPLE + 7 + maxw + 9;
    *h = 16 + ch->nlegend * (ts + 6) - 6;
}

PL_DEF void pl__legend_draw(pl_chart *ch, double x, double y, double ts)
{
    double w, h;
    pl__legend_size(ch, ts, &w, &h);
    pl_rect_alpha(ch->c, x, y, x + w, y + h, 0xFFFFFF, 0.92);
    pl_rect_outline(ch->c, x, y, x + w, y + h, 1, 0xCCCCCC);
    for (int i = 0; i < ch->nlegend; i++) {
        double cy = y + 8 + i * (ts + 6) + ts / 2;
        pl__legend_sample(ch->c, &ch->legend[i], x + 8, cy);
        pl_text(ch->c, x + 8 + PL_LEG_SAMPLE + 7, cy, ts, 0x222222, PL_LEFT | PL_MIDDLE, ch->legend[i].label);
    }
    ch->legend_x0 = x, ch->legend_y0 = y, ch->legend_x1 = x + w, ch->legend_y1 = y + h;
}

/* The legend, unboxed, as rows of entries above the plot area (when nothing inside is free),
   wrapped to the plot's width. draw = 0: only the height. */
PL_DEF double pl__legend_above(pl_chart *ch, double ts, int draw)
{
    double rowh = ts + 7, avail = ch->x1 - ch->x0, rows_w[PL_MAX_LEGEND];
    int row_of[PL_MAX_LEGEND], rows = 0;
    double cur = 0;
    for (int i = 0; i < ch->nlegend; i++) {
        double w = PL_LEG_SAMPLE + 6 + pl_text_width(ch->c, ts, 0, ch->legend[i].label);
        if (cur > 0 && cur + 18 + w > avail) rows_w[rows++] = cur, cur = 0;
        cur += (cur > 0 ? 18 : 0) + w;
        row_of[i] = rows;
    }
    rows_w[rows++] = cur;
    double height = rows * rowh, top = ch->y0 - 8 - height;
    if (!draw) return height;
    double x = 0;
    int r = -1;
    ch->legend_x0 = INFINITY, ch->legend_x1 = -INFINITY;
    for (int i = 0; i < ch->nlegend; i++) {
        if (row_of[i] != r) r = row_of[i], x = (ch->x0 + ch->x1) / 2 - rows_w[r] / 2;
        double cy = top + r * rowh + rowh / 2, w = PL_LEG_SAMPLE + 6 + pl_text_width(ch->c, ts, 0, ch->legend[i].label);
        pl__legend_sample(ch->c, &ch->legend[i], x, cy);
        pl_text(ch->c, x + PL_LEG_SAMPLE + 6, cy, ts, 0x222222, PL_LEFT | PL_MIDDLE, ch->legend[i].label);
        ch->legend_x0 = fmin(ch->legend_x0, x), ch->legend_x1 = fmax(ch->legend_x1, x + w);
        x += w + 18;
    }
    ch->legend_y0 = top, ch->legend_y1 = top + height;
    return height;
}

/* The legend (entries in the order added), where it covers no data: the first free one of the
   inside corners (top right first), the middles of the top and bottom edges, of the sides, and
   the centre, preferring a place that hides no labels either; when every one of those covers
   data, outside the plot area to the right if the canvas has room there, else above the plot
   area, its text shrunk if needed. Call it after all the data is drawn. */
PL_DEF void pl_chart_legend(pl_chart *ch)
{
    pl_canvas *c = ch->c;
    ch->legend_x0 = ch->legend_y0 = ch->legend_x1 = ch->legend_y1 = 0;
    ch->legend_where = 0;
    if (ch->nlegend == 0) return;
    const double ts = 13, inset = 10;
    double w, h;
    pl__legend_size(ch, ts, &w, &h);
    double xs[3] = {ch->x1 - inset - w, ch->x0 + inset, (ch->x0 + ch->x1 - w) / 2};
    double ys[3] = {ch->y0 + inset, ch->y1 - inset - h, (ch->y0 + ch->y1 - h) / 2};
    static const int order[9][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {2, 0}, {2, 1}, {0, 2}, {1, 2}, {2, 2}};
    int pick = -1, pick_clean = -1;
    if (w <= ch->x1 - ch->x0 - 2 * inset && h <= ch->y1 - ch->y0 - 2 * inset)
        for (int k = 0; k < 9 && pick_clean < 0; k++) {
            double x = xs[order[k][0]], y = ys[order[k][1]];
            if (pl_marks_hit(c, x - 2, y - 2, x + w + 2, y + h + 2, PL_MARK_DATA)) continue;
            if (pick < 0) pick = k;
            if (!pl_marks_hit(c, x - 2, y - 2, x + w + 2, y + h + 2, PL_MARK_TEXT | PL_MARK_LEGEND)) pick_clean = k;
        }
    if (pick_clean >= 0) pick = pick_clean;
    if (pick >= 0) {
        pl__legend_draw(ch, xs[order[pick][0]], ys[order[pick][1]], ts);
    } else {
        /* outside, right: the text may shrink to fit the canvas height */
        double x = ch->x1 + 14, size = ts;
        for (; size >= 9; size -= 1) {
            pl__legend_size(ch, size, &w, &h);
            if (x + w <= c->w - 4 && ch->y0 + h <= c->h - 4 &&
                !pl_marks_hit(c, x, ch->y0, x + w, ch->y0 + h, PL_MARK_DATA | PL_MARK_AXIS | PL_MARK_TEXT))
                break;
        }
        if (size >= 9) {
            pl__legend_draw(ch, x, ch->y0, size);
            ch->legend_where = 1;
        } else {
            double room = ch->y0 - 8 - (c->top > 0 ? c->top : 2);
            for (size = ts; size > 9 && pl__legend_above(ch, size, 0) > room; size -= 0.5) {}
            pl__legend_above(ch, size, 1);
            ch->legend_where = 2;
        }
    }
    pl_mark_add(c, ch->legend_x0, ch->legend_y0, ch->legend_x1, ch->legend_y1, PL_MARK_LEGEND, -1);
}

#endif /* DEMOS_PLOT_H */
