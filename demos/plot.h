/* plot.h - a tiny RGB canvas for the demos: fill, rectangles, thick anti-aliased lines,
   TrueType text (stb_truetype) and PNG output (stb_image_write).

   Everything here is static, so include it from one .c file. Before including it, define the
   stb implementations there, static, so that a user's own copy of stb cannot clash:

       #define STB_IMAGE_WRITE_IMPLEMENTATION
       #define STB_IMAGE_WRITE_STATIC
       #define STB_TRUETYPE_IMPLEMENTATION
       #define STBTT_STATIC
       #include "plot.h"

   The headers come from Debian's libstb-dev (<stb/...>); the fonts from fonts-dejavu-core.

   Coordinates are pixels, x to the right and y down, as doubles; colours are 0xRRGGBB. */
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
#else
#define PL_DEF static
#endif

#define PL_FONT_REGULAR "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
#define PL_FONT_BOLD "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"

/* Text anchors: how (x, y) is placed relative to the text. Horizontal: left / centre / right
   edge; vertical: baseline, middle of the capital letters, or top of the capitals. PL_BOLD
   picks the bold face; PL_ROT90 turns the text 90 degrees anticlockwise (for y-axis labels),
   the anchor then applying to the turned text as it reads; PL_HALO (not turned text only)
   clears a two-pixel rim around the letters first. */
enum {
    PL_LEFT = 0, PL_CENTER = 1, PL_RIGHT = 2,
    PL_BASELINE = 0, PL_MIDDLE = 4, PL_TOP = 8,
    PL_BOLD = 16, PL_ROT90 = 32,
    PL_HALO = 64 /* a white rim around the letters, so that text stays legible over lines */
};

typedef struct pl_font {
    unsigned char *data;
    stbtt_fontinfo info;
    int ascent, descent, cap_height; /* font units */
} pl_font;

typedef struct pl_canvas {
    int w, h;
    unsigned char *px;               /* w * h * 3 bytes, RGB, row-major */
    pl_font font[2];                 /* regular, bold */
} pl_canvas;

PL_DEF int pl__load_font(pl_font *f, const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return -1;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    f->data = n > 0 ? (unsigned char *)malloc((size_t)n) : NULL;
    int ok = f->data && fread(f->data, 1, (size_t)n, fp) == (size_t)n;
    fclose(fp);
    if (!ok || !stbtt_InitFont(&f->info, f->data, stbtt_GetFontOffsetForIndex(f->data, 0))) {
        free(f->data);
        f->data = NULL;
        return -1;
    }
    int lg, x0, y0, x1, y1;
    stbtt_GetFontVMetrics(&f->info, &f->ascent, &f->descent, &lg);
    f->cap_height = stbtt_GetCodepointBox(&f->info, 'H', &x0, &y0, &x1, &y1) ? y1 : f->ascent * 7 / 10;
    return 0;
}

/* 0 when the regular font can be read; else -1 with a message on stderr. Call it before long
   work, so that a missing font is found at once. */
PL_DEF int pl_check_font(void)
{
    FILE *fp = fopen(PL_FONT_REGULAR, "rb");
    if (fp) {
        fclose(fp);
        return 0;
    }
    fprintf(stderr, "error: cannot read the font %s (install Debian's fonts-dejavu-core, or run demos/run)\n",
            PL_FONT_REGULAR);
    return -1;
}

/* A white canvas of w x h pixels. Returns 0, or -1 with a message on stderr when the font
   (DejaVu Sans) cannot be read: the bold face falls back to the regular one. */
PL_DEF int pl_init(pl_canvas *c, int w, int h)
{
    memset(c, 0, sizeof *c);
    if (pl__load_font(&c->font[0], PL_FONT_REGULAR)) {
        fprintf(stderr, "error: cannot read the font %s (install Debian's fonts-dejavu-core, or run demos/run)\n",
                PL_FONT_REGULAR);
        return -1;
    }
    if (pl__load_font(&c->font[1], PL_FONT_BOLD)) c->font[1] = c->font[0], c->font[1].data = NULL;
    c->w = w;
    c->h = h;
    c->px = (unsigned char *)malloc((size_t)w * (size_t)h * 3);
    if (!c->px) {
        fprintf(stderr, "error: out of memory for a %dx%d canvas\n", w, h);
        return -1;
    }
    memset(c->px, 255, (size_t)w * (size_t)h * 3);
    return 0;
}

PL_DEF void pl_free(pl_canvas *c)
{
    free(c->px);
    free(c->font[0].data);
    free(c->font[1].data);
    memset(c, 0, sizeof *c);
}

/* Blend colour rgb over pixel (x, y) with coverage a in [0, 1]. */
PL_DEF void pl_blend(pl_canvas *c, int x, int y, uint32_t rgb, double a)
{
    if (x < 0 || y < 0 || x >= c->w || y >= c->h || a <= 0) return;
    if (a > 1) a = 1;
    unsigned char *p = c->px + ((size_t)y * (size_t)c->w + (size_t)x) * 3;
    for (int k = 0; k < 3; k++) {
        double v = (double)((rgb >> (16 - 8 * k)) & 255);
        p[k] = (unsigned char)lround(p[k] + (v - p[k]) * a);
    }
}

PL_DEF void pl_fill(pl_canvas *c, uint32_t rgb)
{
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++) pl_blend(c, x, y, rgb, 1.0);
}

/* Filled rectangle between corners (x0, y0) and (x1, y1), in either order; edges that fall
   inside a pixel cover it partly, so thin bars stay visible and smooth. */
PL_DEF void pl_rect(pl_canvas *c, double x0, double y0, double x1, double y1, uint32_t rgb)
{
    if (x0 > x1) { double t = x0; x0 = x1; x1 = t; }
    if (y0 > y1) { double t = y0; y0 = y1; y1 = t; }
    for (int y = (int)floor(y0); y < (int)ceil(y1); y++) {
        double cy = fmin(y1, y + 1.0) - fmax(y0, (double)y);
        for (int x = (int)floor(x0); x < (int)ceil(x1); x++) {
            double cx = fmin(x1, x + 1.0) - fmax(x0, (double)x);
            pl_blend(c, x, y, rgb, cx * cy);
        }
    }
}

/* Rectangle outline, `t` pixels wide, drawn inside the rectangle. */
PL_DEF void pl_rect_outline(pl_canvas *c, double x0, double y0, double x1, double y1, double t, uint32_t rgb)
{
    pl_rect(c, x0, y0, x1, y0 + t, rgb);
    pl_rect(c, x0, y1 - t, x1, y1, rgb);
    pl_rect(c, x0, y0 + t, x0 + t, y1 - t, rgb);
    pl_rect(c, x1 - t, y0 + t, x1, y1 - t, rgb);
}

/* Anti-aliased line segment of the given thickness: each pixel is covered by how far its
   centre lies from the segment. */
PL_DEF void pl_line(pl_canvas *c, double x0, double y0, double x1, double y1, double thick, uint32_t rgb)
{
    double r = thick / 2, dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy;
    int xa = (int)floor(fmin(x0, x1) - r - 1), xb = (int)ceil(fmax(x0, x1) + r + 1);
    int ya = (int)floor(fmin(y0, y1) - r - 1), yb = (int)ceil(fmax(y0, y1) + r + 1);
    for (int y = ya; y <= yb; y++)
        for (int x = xa; x <= xb; x++) {
            double px = x + 0.5, py = y + 0.5;
            double t = len2 > 0 ? ((px - x0) * dx + (py - y0) * dy) / len2 : 0;
            t = t < 0 ? 0 : t > 1 ? 1 : t;
            double ex = px - (x0 + t * dx), ey = py - (y0 + t * dy);
            double d = sqrt(ex * ex + ey * ey);
            pl_blend(c, x, y, rgb, r + 0.5 - d);
        }
}

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

/* Width in pixels of `s` at pixel height `size`. */
PL_DEF double pl_text_width(const pl_canvas *c, double size, int flags, const char *s)
{
    const pl_font *f = &c->font[(flags & PL_BOLD) ? 1 : 0];
    float scale = stbtt_ScaleForPixelHeight(&f->info, (float)size);
    double w = 0;
    int prev = 0;
    while (*s) {
        int cp = pl__utf8(&s), adv, lsb;
        if (prev) w += scale * stbtt_GetCodepointKernAdvance(&f->info, prev, cp);
        stbtt_GetCodepointHMetrics(&f->info, cp, &adv, &lsb);
        w += scale * adv;
        prev = cp;
    }
    return w;
}

/* Draw `s` at pixel height `size` (the font's ascent-to-descent height), anchored at (x, y)
   by `flags`. The string is first rendered into a coverage mask one line high, then blended
   onto the canvas, turned if PL_ROT90 asks for it. */
PL_DEF void pl_text(pl_canvas *c, double x, double y, double size, uint32_t rgb, int flags, const char *s)
{
    const pl_font *f = &c->font[(flags & PL_BOLD) ? 1 : 0];
    float scale = stbtt_ScaleForPixelHeight(&f->info, (float)size);
    double width = pl_text_width(c, size, flags, s);
    int mw = (int)ceil(width) + 4, mh = (int)ceil(scale * (f->ascent - f->descent)) + 2;
    double base = scale * f->ascent + 1; /* baseline row in the mask */
    unsigned char *mask = (unsigned char *)calloc((size_t)mw * (size_t)mh, 1);
    if (!mask) return;
    double pen = 1;
    int prev = 0;
    while (*s) {
        int cp = pl__utf8(&s), adv, lsb, x0, y0, x1, y1;
        if (prev) pen += scale * stbtt_GetCodepointKernAdvance(&f->info, prev, cp);
        float sx = (float)(pen - floor(pen));
        stbtt_GetCodepointBitmapBoxSubpixel(&f->info, cp, scale, scale, sx, 0, &x0, &y0, &x1, &y1);
        int gw = x1 - x0, gh = y1 - y0, ox = (int)floor(pen) + x0, oy = (int)lround(base) + y0;
        if (gw > 0 && gh > 0) {
            unsigned char *g = (unsigned char *)calloc((size_t)gw * (size_t)gh, 1);
            if (g) {
                stbtt_MakeCodepointBitmapSubpixel(&f->info, g, gw, gh, gw, scale, scale, sx, 0, cp);
                for (int j = 0; j < gh; j++)
                    for (int i = 0; i < gw; i++) {
                        int mx = ox + i, my = oy + j;
                        if (mx < 0 || my < 0 || mx >= mw || my >= mh) continue;
                        int v = mask[my * mw + mx] + g[j * gw + i];
                        mask[my * mw + mx] = (unsigned char)(v > 255 ? 255 : v);
                    }
                free(g);
            }
        }
        stbtt_GetCodepointHMetrics(&f->info, cp, &adv, &lsb);
        pen += scale * adv;
        prev = cp;
    }
    /* the anchor point inside the mask */
    double ax = 1 + ((flags & 3) == PL_CENTER ? width / 2 : (flags & 3) == PL_RIGHT ? width : 0);
    double cap = scale * f->cap_height;
    double ay = base - ((flags & PL_TOP) ? cap : (flags & PL_MIDDLE) ? cap / 2 : 0);
    int ix = (int)lround(x - ax), iy = (int)lround(y - ay);
    if ((flags & PL_HALO) && !(flags & PL_ROT90))
        for (int j = -2; j < mh + 2; j++)
            for (int i = -2; i < mw + 2; i++) {
                int m = 0; /* the most coverage within two pixels */
                for (int dj = -2; dj <= 2; dj++)
                    for (int di = -2; di <= 2; di++) {
                        int u = i + di, v = j + dj;
                        if (u >= 0 && v >= 0 && u < mw && v < mh && mask[v * mw + u] > m) m = mask[v * mw + u];
                    }
                pl_blend(c, ix + i, iy + j, 0xFFFFFF, m / 255.0);
            }
    for (int j = 0; j < mh; j++)
        for (int i = 0; i < mw; i++) {
            if (!mask[j * mw + i]) continue;
            double a = mask[j * mw + i] / 255.0;
            if (flags & PL_ROT90) /* mask (i, j) -> canvas (x + (j - ay), y - (i - ax)) */
                pl_blend(c, (int)lround(x + (j - ay)), (int)lround(y - (i - ax)), rgb, a);
            else
                pl_blend(c, ix + i, iy + j, rgb, a);
        }
    free(mask);
}

/* pl_text, shrinking `size` (down to 60%) until the text is at most max_width wide. */
PL_DEF void pl_text_fit(pl_canvas *c, double x, double y, double size, double max_width, uint32_t rgb, int flags,
                        const char *s)
{
    double sz = size;
    while (sz > size * 0.6 && pl_text_width(c, sz, flags, s) > max_width) sz -= 0.5;
    pl_text(c, x, y, sz, rgb, flags, s);
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

#endif /* DEMOS_PLOT_H */
