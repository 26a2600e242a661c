/* ---- files: JSON, config.json, safetensors, HF directories, token files ---- */
#include <limits.h>
#include <locale.h>
#include <sys/stat.h>
#include <sys/types.h>
#ifdef _WIN32
#include <direct.h>
#endif

/* ---- small helpers: growable text buffer, little-endian bytes, files ---- */
typedef struct sc__buf { char *p; size_t n, cap; int oom; } sc__buf;

static void sc__buf_put(sc__buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = (char *)SC_REALLOC(b->p, cap);
        if (!p) { b->oom = 1; return; }
        b->p = p; b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sc__buf_printf(sc__buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= sizeof tmp) { b->oom = 1; return; } /* only short items are printed */
    sc__buf_put(b, tmp, (size_t)k);
}

/* A JSON string literal, escaped. */
static void sc__buf_json_str(sc__buf *b, const char *s)
{
    sc__buf_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') { char e[2] = {'\\', (char)c}; sc__buf_put(b, e, 2); }
        else if (c < 0x20) sc__buf_printf(b, "\\u%04x", c);
        else sc__buf_put(b, s, 1);
    }
    sc__buf_put(b, "\"", 1);
}

/* A double that reads back exactly, always with a '.' or an exponent (so Python sees a float),
   and with '.' as decimal point whatever the C locale. */
static void sc__buf_double(sc__buf *b, double x)
{
    char s[40];
    char dp = localeconv()->decimal_point[0];
    if (x == floor(x) && fabs(x) < 1e16) snprintf(s, sizeof s, "%.0f", x); /* 10000.0, not 1e+04 */
    else for (int prec = 1; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, x);
        for (char *q = s; *q; q++) if (*q == dp) *q = '.';
        char t[40];
        snprintf(t, sizeof t, "%s", s);
        for (char *q = t; *q; q++) if (*q == '.') *q = dp;
        if (strtod(t, NULL) == x) break;
    }
    if (!strpbrk(s, ".eEn")) snprintf(s + strlen(s), sizeof s - strlen(s), ".0");
    sc__buf_put(b, s, strlen(s));
}

static uint64_t sc__le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static int sc__little_endian(void) { uint16_t x = 1; unsigned char c; memcpy(&c, &x, 1); return c == 1; }

static char *sc__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = (char *)SC_MALLOC(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* "a" + "b" (+ "c"), allocated; NULL when out of memory. */
static char *sc__concat(const char *a, const char *b, const char *c)
{
    size_t na = strlen(a), nb = strlen(b), nc = c ? strlen(c) : 0;
    char *p = (char *)SC_MALLOC(na + nb + nc + 1);
    if (!p) return NULL;
    memcpy(p, a, na); memcpy(p + na, b, nb); if (nc) memcpy(p + na + nb, c, nc);
    p[na + nb + nc] = 0;
    return p;
}
static char *sc__path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir);
    return sc__concat(dir, (n && (dir[n - 1] == '/' || dir[n - 1] == '\\')) ? "" : "/", name);
}

static int sc__fseek64(FILE *f, uint64_t off)
{
#ifdef _WIN32
    if (off > (uint64_t)INT64_MAX) return -1;
    return _fseeki64(f, (__int64)off, SEEK_SET);
#else
    if (off > (uint64_t)LONG_MAX) return -1;
    return fseek(f, (long)off, SEEK_SET);
#endif
}
static int sc__fsize(FILE *f, uint64_t *size)
{
#ifdef _WIN32
    if (_fseeki64(f, 0, SEEK_END)) return -1;
    __int64 n = _ftelli64(f);
#else
    if (fseek(f, 0, SEEK_END)) return -1;
    long n = ftell(f);
#endif
    if (n < 0) return -1;
    *size = (uint64_t)n;
    return sc__fseek64(f, 0);
}

static int sc__file_exists(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* Read a whole (small) file into a NUL-terminated allocated buffer. */
static sc_result sc__read_file(const char *path, size_t max, char **out, size_t *len)
{
    *out = NULL; *len = 0;
    FILE *f = fopen(path, "rb");
    uint64_t size;
    if (!f) return sc__fail(SC_ERROR_IO, "file '%s': cannot open: %s", path, strerror(errno));
    if (sc__fsize(f, &size)) { fclose(f); return sc__fail(SC_ERROR_IO, "file '%s': cannot seek", path); }
    if (size > max) {
        fclose(f);
        return sc__fail(SC_ERROR_FORMAT, "file '%s': %llu bytes, more than the %llu accepted", path,
                        (unsigned long long)size, (unsigned long long)max);
    }
    char *p = (char *)SC_MALLOC((size_t)size + 1);
    if (!p) { fclose(f); return sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", path); }
    if (fread(p, 1, (size_t)size, f) != (size_t)size) {
        SC_FREE(p); fclose(f);
        return sc__fail(SC_ERROR_IO, "file '%s': read failed", path);
    }
    fclose(f);
    p[size] = 0;
    *out = p; *len = (size_t)size;
    return SC_SUCCESS;
}

/* Atomic writes: write `path.tmp`, then sc__tmp_commit renames it over `path` (or removes it). */
static sc_result sc__tmp_open(const char *path, FILE **f, char **tmp)
{
    *f = NULL;
    *tmp = sc__concat(path, ".tmp", NULL);
    if (!*tmp) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", path);
    *f = fopen(*tmp, "wb");
    if (!*f) {
        sc_result r = sc__fail(SC_ERROR_IO, "file '%s': cannot create: %s", *tmp, strerror(errno));
        SC_FREE(*tmp); *tmp = NULL;
        return r;
    }
    return SC_SUCCESS;
}
static sc_result sc__tmp_commit(const char *path, FILE *f, char *tmp, sc_result r)
{
    int bad = ferror(f);
    if (fclose(f)) bad = 1;
    if (r == SC_SUCCESS && bad) r = sc__fail(SC_ERROR_IO, "file '%s': write failed: %s", tmp, strerror(errno));
#ifdef _WIN32
    if (r == SC_SUCCESS) remove(path);
#endif
    if (r == SC_SUCCESS && rename(tmp, path))
        r = sc__fail(SC_ERROR_IO, "file '%s': cannot rename to '%s': %s", tmp, path, strerror(errno));
    if (r != SC_SUCCESS) remove(tmp);
    SC_FREE(tmp);
    return r;
}

/* ---- JSON: parsed into one array of nodes; strings decoded into one buffer ---- */
enum { SC__J_NULL, SC__J_FALSE, SC__J_TRUE, SC__J_NUM, SC__J_STR, SC__J_ARR, SC__J_OBJ };
#define SC__JSON_MAX_DEPTH 64
#define SC__JSON_MAX_NODES (1 << 20) /* a 1000-layer checkpoint header needs ~10^4 */

typedef struct sc__jnode {
    int type;
    int is_int;           /* a number written without fraction/exponent that fits int64 */
    int first, next;      /* first child, next sibling; -1: none */
    int n;                /* number of children */
    size_t off;           /* byte offset of the value in the text */
    const char *key;      /* key of an object member (NULL otherwise) */
    size_t klen;
    const char *s;        /* string value, NUL-terminated (may hold NULs: see slen) */
    size_t slen;
    double num;
    int64_t i;
} sc__jnode;

typedef struct sc__json {
    const char *text;
    size_t len, pos;
    sc__jnode *nodes;
    int n, cap;
    char *strs;           /* decoded strings */
    size_t nstr;
    const char *fname;    /* for messages */
} sc__json;

static sc_result sc__json_err(const sc__json *j, size_t off, const char *what)
{
    return sc__fail(SC_ERROR_FORMAT, "file '%s': invalid JSON at byte %llu: %s", j->fname,
                    (unsigned long long)off, what);
}

static void sc__json_ws(sc__json *j)
{
    while (j->pos < j->len) {
        char c = j->text[j->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        j->pos++;
    }
}

static sc_result sc__json_node(sc__json *j, int type, int *idx)
{
    if (j->n == j->cap) {
        if (j->cap >= SC__JSON_MAX_NODES) return sc__json_err(j, j->pos, "too many values");
        int cap = j->cap ? j->cap * 2 : 64;
        sc__jnode *p = (sc__jnode *)SC_REALLOC(j->nodes, (size_t)cap * sizeof *p);
        if (!p) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory parsing JSON", j->fname);
        j->nodes = p; j->cap = cap;
    }
    sc__jnode *nd = &j->nodes[j->n];
    memset(nd, 0, sizeof *nd);
    nd->type = type; nd->first = nd->next = -1; nd->off = j->pos;
    *idx = j->n++;
    return SC_SUCCESS;
}

static int sc__json_hex4(const char *p, size_t avail, unsigned *out)
{
    unsigned v = 0;
    if (avail < 4) return 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

/* Parse the string at j->pos (a '"'); its decoded bytes go to j->strs. A decoded string is
   never longer than its source, so strs (len + 1 bytes) always has room for it and its NUL. */
static sc_result sc__json_string(sc__json *j, const char **s, size_t *slen)
{
    size_t start = j->pos;
    char *out = j->strs + j->nstr, *o = out;
    j->pos++; /* opening quote */
    for (;;) {
        if (j->pos >= j->len) return sc__json_err(j, start, "unterminated string");
        unsigned char c = (unsigned char)j->text[j->pos++];
        if (c == '"') break;
        if (c < 0x20) return sc__json_err(j, j->pos - 1, "control character in string");
        if (c != '\\') { *o++ = (char)c; continue; }
        if (j->pos >= j->len) return sc__json_err(j, start, "unterminated string");
        char e = j->text[j->pos++];
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned u, lo;
            if (!sc__json_hex4(j->text + j->pos, j->len - j->pos, &u))
                return sc__json_err(j, j->pos - 2, "bad \\u escape");
            j->pos += 4;
            if (u >= 0xD800 && u <= 0xDBFF && j->len - j->pos >= 6 && j->text[j->pos] == '\\' &&
                j->text[j->pos + 1] == 'u' && sc__json_hex4(j->text + j->pos + 2, 4, &lo) &&
                lo >= 0xDC00 && lo <= 0xDFFF) {
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                j->pos += 6;
            } else if (u >= 0xD800 && u <= 0xDFFF) u = 0xFFFD; /* lone surrogate */
            if (u < 0x80) *o++ = (char)u;
            else if (u < 0x800) { *o++ = (char)(0xC0 | (u >> 6)); *o++ = (char)(0x80 | (u & 63)); }
            else if (u < 0x10000) {
                *o++ = (char)(0xE0 | (u >> 12)); *o++ = (char)(0x80 | ((u >> 6) & 63));
                *o++ = (char)(0x80 | (u & 63));
            } else {
                *o++ = (char)(0xF0 | (u >> 18)); *o++ = (char)(0x80 | ((u >> 12) & 63));
                *o++ = (char)(0x80 | ((u >> 6) & 63)); *o++ = (char)(0x80 | (u & 63));
            }
            break;
        }
        default: return sc__json_err(j, j->pos - 2, "bad escape in string");
        }
    }
    *o = 0;
    *s = out;
    *slen = (size_t)(o - out);
    j->nstr += *slen + 1;
    return SC_SUCCESS;
}

static sc_result sc__json_number(sc__json *j, sc__jnode *nd)
{
    size_t a = j->pos, p = a;
    const char *t = j->text;
    int integral = 1;
    if (p < j->len && t[p] == '-') p++;
    if (p < j->len && t[p] == '0') p++;
    else if (p < j->len && t[p] >= '1' && t[p] <= '9') while (p < j->len && t[p] >= '0' && t[p] <= '9') p++;
    else return sc__json_err(j, a, "bad number");
    if (p < j->len && t[p] == '.') {
        integral = 0; p++;
        if (!(p < j->len && t[p] >= '0' && t[p] <= '9')) return sc__json_err(j, a, "bad number");
        while (p < j->len && t[p] >= '0' && t[p] <= '9') p++;
    }
    if (p < j->len && (t[p] == 'e' || t[p] == 'E')) {
        integral = 0; p++;
        if (p < j->len && (t[p] == '+' || t[p] == '-')) p++;
        if (!(p < j->len && t[p] >= '0' && t[p] <= '9')) return sc__json_err(j, a, "bad number");
        while (p < j->len && t[p] >= '0' && t[p] <= '9') p++;
    }
    char tmp[400];
    if (p - a >= sizeof tmp) return sc__json_err(j, a, "number too long");
    memcpy(tmp, t + a, p - a);
    tmp[p - a] = 0;
    char dp = localeconv()->decimal_point[0];
    for (char *q = tmp; *q; q++) if (*q == '.') *q = dp;
    nd->num = strtod(tmp, NULL);
    if (nd->num == HUGE_VAL || nd->num == -HUGE_VAL) return sc__json_err(j, a, "number out of range");
    if (integral) { /* exact int64, if it fits */
        uint64_t v = 0, lim = t[a] == '-' ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        int fits = 1;
        for (size_t q = a + (t[a] == '-'); q < p; q++) {
            unsigned d = (unsigned)(t[q] - '0');
            if (v > (lim - d) / 10) { fits = 0; break; }
            v = v * 10 + d;
        }
        if (fits) {
            nd->is_int = 1;
            nd->i = t[a] == '-' ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
        }
    }
    j->pos = p;
    return SC_SUCCESS;
}

static int sc__json_lit(sc__json *j, const char *w)
{
    size_t n = strlen(w);
    if (j->len - j->pos < n || memcmp(j->text + j->pos, w, n)) return 0;
    j->pos += n;
    return 1;
}

static sc_result sc__json_value(sc__json *j, int depth, int *idx)
{
    sc_result r;
    sc__json_ws(j);
    if (j->pos >= j->len) return sc__json_err(j, j->pos, "unexpected end of input");
    if (depth > SC__JSON_MAX_DEPTH) return sc__json_err(j, j->pos, "nested too deeply");
    char c = j->text[j->pos];
    int type = c == '{' ? SC__J_OBJ : c == '[' ? SC__J_ARR : c == '"' ? SC__J_STR :
               c == 't' ? SC__J_TRUE : c == 'f' ? SC__J_FALSE : c == 'n' ? SC__J_NULL : SC__J_NUM;
    if ((r = sc__json_node(j, type, idx)) != SC_SUCCESS) return r;
    int me = *idx;
    if (type == SC__J_STR) {
        const char *s; size_t n;
        if ((r = sc__json_string(j, &s, &n)) != SC_SUCCESS) return r;
        j->nodes[me].s = s; j->nodes[me].slen = n;
        return SC_SUCCESS;
    }
    if (type == SC__J_NUM) return sc__json_number(j, &j->nodes[me]);
    if (type == SC__J_TRUE || type == SC__J_FALSE || type == SC__J_NULL) {
        if (!sc__json_lit(j, type == SC__J_TRUE ? "true" : type == SC__J_FALSE ? "false" : "null"))
            return sc__json_err(j, j->pos, "unexpected character");
        return SC_SUCCESS;
    }
    /* array or object */
    char close = type == SC__J_OBJ ? '}' : ']';
    int last = -1;
    j->pos++;
    sc__json_ws(j);
    if (j->pos < j->len && j->text[j->pos] == close) { j->pos++; return SC_SUCCESS; }
    for (;;) {
        const char *key = NULL; size_t klen = 0;
        int child;
        if (type == SC__J_OBJ) {
            sc__json_ws(j);
            if (j->pos >= j->len || j->text[j->pos] != '"') return sc__json_err(j, j->pos, "expected a string key");
            if ((r = sc__json_string(j, &key, &klen)) != SC_SUCCESS) return r;
            sc__json_ws(j);
            if (j->pos >= j->len || j->text[j->pos] != ':') return sc__json_err(j, j->pos, "expected ':'");
            j->pos++;
        }
        if ((r = sc__json_value(j, depth + 1, &child)) != SC_SUCCESS) return r;
        j->nodes[child].key = key; j->nodes[child].klen = klen;
        if (last < 0) j->nodes[me].first = child; else j->nodes[last].next = child;
        last = child;
        j->nodes[me].n++;
        sc__json_ws(j);
        if (j->pos >= j->len) return sc__json_err(j, j->pos, "unexpected end of input");
        c = j->text[j->pos++];
        if (c == close) return SC_SUCCESS;
        if (c != ',') return sc__json_err(j, j->pos - 1, type == SC__J_OBJ ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static void sc__json_free(sc__json *j)
{
    SC_FREE(j->nodes);
    SC_FREE(j->strs);
    memset(j, 0, sizeof *j);
}

/* Parse text[0..len) completely (one value, surrounded by whitespace only). Root is node 0. */
static sc_result sc__json_parse(sc__json *j, const char *text, size_t len, const char *fname)
{
    memset(j, 0, sizeof *j);
    j->text = text; j->len = len; j->fname = fname ? fname : "<config>";
    if (len > (size_t)INT_MAX) return sc__json_err(j, 0, "text too long");
    j->strs = (char *)SC_MALLOC(len + 1);
    if (!j->strs) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory parsing JSON", j->fname);
    int root;
    sc_result r = sc__json_value(j, 0, &root);
    if (r == SC_SUCCESS) {
        sc__json_ws(j);
        if (j->pos != j->len) r = sc__json_err(j, j->pos, "trailing characters after the value");
    }
    if (r != SC_SUCCESS) sc__json_free(j);
    return r;
}

/* The member `key` of object node obj (the last one, as Python's json does), or -1. */
static int sc__json_get(const sc__json *j, int obj, const char *key)
{
    size_t n = strlen(key);
    int found = -1;
    if (obj < 0 || j->nodes[obj].type != SC__J_OBJ) return -1;
    for (int c = j->nodes[obj].first; c >= 0; c = j->nodes[c].next)
        if (j->nodes[c].klen == n && !memcmp(j->nodes[c].key, key, n)) found = c;
    return found;
}

static const char *sc__json_type_name(int t)
{
    static const char *const names[] = {"null", "false", "true", "a number", "a string", "an array", "an object"};
    return names[t];
}

/* ---- config.json ---- */
static int sc__cfg_get(const sc__json *j, const char *key)
{
    int i = sc__json_get(j, 0, key);
    return (i >= 0 && j->nodes[i].type == SC__J_NULL) ? -1 : i; /* null means "not set" */
}

static sc_result sc__cfg_int(const sc__json *j, const char *key, int required, int def, int *out)
{
    int i = sc__cfg_get(j, key);
    if (i < 0) {
        if (required) return sc__fail(SC_ERROR_FORMAT, "file '%s': key '%s' is missing", j->fname, key);
        *out = def;
        return SC_SUCCESS;
    }
    const sc__jnode *nd = &j->nodes[i];
    if (nd->type != SC__J_NUM)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': key '%s' must be an integer, not %s", j->fname, key,
                        sc__json_type_name(nd->type));
    if (!nd->is_int || nd->i < 1 || nd->i > INT_MAX)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': key '%s' must be an integer in [1, %d], not %.17g",
                        j->fname, key, INT_MAX, nd->num);
    *out = (int)nd->i;
    return SC_SUCCESS;
}

static sc_result sc__cfg_num(const sc__json *j, int i, const char *key, double *out)
{
    if (j->nodes[i].type != SC__J_NUM)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': key '%s' must be a number, not %s", j->fname, key,
                        sc__json_type_name(j->nodes[i].type));
    *out = j->nodes[i].num;
    return SC_SUCCESS;
}

static sc_result sc__cfg_bool(const sc__json *j, const char *key, int def, int *out)
{
    int i = sc__cfg_get(j, key);
    *out = def;
    if (i < 0) return SC_SUCCESS;
    if (j->nodes[i].type != SC__J_TRUE && j->nodes[i].type != SC__J_FALSE)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': key '%s' must be true or false, not %s", j->fname,
                        key, sc__json_type_name(j->nodes[i].type));
    *out = j->nodes[i].type == SC__J_TRUE;
    return SC_SUCCESS;
}

/* The string value of node i (-1: NULL), or an error naming key. */
static sc_result sc__cfg_str(const sc__json *j, int i, const char *key, const char **out)
{
    *out = NULL;
    if (i < 0) return SC_SUCCESS;
    if (j->nodes[i].type != SC__J_STR)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': key '%s' must be a string, not %s", j->fname, key,
                        sc__json_type_name(j->nodes[i].type));
    *out = j->nodes[i].s;
    return SC_SUCCESS;
}

/* rope_scaling / rope_parameters: only the default RoPE is supported. */
static sc_result sc__cfg_rope_type(const sc__json *j, int obj, const char *key)
{
    const char *t = NULL;
    sc_result r;
    if (obj < 0) return SC_SUCCESS;
    if (j->nodes[obj].type != SC__J_OBJ)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': key '%s' must be an object, not %s", j->fname, key,
                        sc__json_type_name(j->nodes[obj].type));
    int i = sc__json_get(j, obj, "rope_type");
    if (i < 0) i = sc__json_get(j, obj, "type");
    if ((r = sc__cfg_str(j, i, key, &t)) != SC_SUCCESS) return r;
    if (!t && !strcmp(key, "rope_scaling"))
        return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': '%s' without a rope_type is not supported", j->fname, key);
    if (t && strcmp(t, "default"))
        return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': %s.rope_type '%s' is not supported (only 'default')",
                        j->fname, key, t);
    return SC_SUCCESS;
}

static sc_result sc__cfg_parse(sc_config *cfg, const sc__json *j)
{
    sc_result r;
    const char *fn = j->fname, *s = NULL;
    int i;
    if (j->nodes[0].type != SC__J_OBJ)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': must hold a JSON object, not %s", fn, sc__json_type_name(j->nodes[0].type));
    memset(cfg, 0, sizeof *cfg);

    /* architecture: model_type, else the architectures list */
    if ((r = sc__cfg_str(j, sc__cfg_get(j, "model_type"), "model_type", &s)) != SC_SUCCESS) return r;
    if (s) {
        if (!strcmp(s, "qwen3")) cfg->arch = SC_ARCH_QWEN3;
        else if (!strcmp(s, "qwen2")) cfg->arch = SC_ARCH_QWEN2;
        else return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': model_type '%s' is not supported (only qwen2, qwen3)", fn, s);
    } else {
        int a = sc__cfg_get(j, "architectures"), ok = 0;
        if (a >= 0 && j->nodes[a].type == SC__J_ARR && j->nodes[a].n == 1 && j->nodes[j->nodes[a].first].type == SC__J_STR) {
            s = j->nodes[j->nodes[a].first].s;
            if (!strcmp(s, "Qwen3ForCausalLM")) { cfg->arch = SC_ARCH_QWEN3; ok = 1; }
            else if (!strcmp(s, "Qwen2ForCausalLM")) { cfg->arch = SC_ARCH_QWEN2; ok = 1; }
            else return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': architecture '%s' is not supported", fn, s);
        }
        if (!ok) return sc__fail(SC_ERROR_FORMAT, "file '%s': key 'model_type' is missing", fn);
    }
    snprintf(cfg->name, sizeof cfg->name, "%s", cfg->arch == SC_ARCH_QWEN3 ? "qwen3" : "qwen2");

    if ((r = sc__cfg_int(j, "vocab_size", 1, 0, &cfg->vocab_size)) ||
        (r = sc__cfg_int(j, "hidden_size", 1, 0, &cfg->hidden_size)) ||
        (r = sc__cfg_int(j, "intermediate_size", 1, 0, &cfg->intermediate_size)) ||
        (r = sc__cfg_int(j, "num_hidden_layers", 1, 0, &cfg->num_layers)) ||
        (r = sc__cfg_int(j, "num_attention_heads", 1, 0, &cfg->num_heads)) ||
        (r = sc__cfg_int(j, "num_key_value_heads", 0, cfg->num_heads, &cfg->num_kv_heads)) ||
        (r = sc__cfg_int(j, "head_dim", 0, cfg->hidden_size / cfg->num_heads, &cfg->head_dim)) ||
        (r = sc__cfg_int(j, "max_position_embeddings", 0, 32768, &cfg->max_position)) ||
        (r = sc__cfg_bool(j, "tie_word_embeddings", 0, &cfg->tie_embeddings)))
        return r;
    if (cfg->arch == SC_ARCH_QWEN2) { cfg->attention_bias = 1; cfg->qk_norm = 0; }
    else {
        if ((r = sc__cfg_bool(j, "attention_bias", 0, &cfg->attention_bias)) != SC_SUCCESS) return r;
        if (cfg->attention_bias) /* Qwen3 then also has an o_proj bias, which slidecheck lacks */
            return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': attention_bias true is not supported for qwen3", fn);
        cfg->qk_norm = 1;
    }

    cfg->rms_eps = 1e-6; cfg->init_std = 0.02; cfg->rope_theta = 10000.0;
    if ((i = sc__cfg_get(j, "rms_norm_eps")) >= 0 && (r = sc__cfg_num(j, i, "rms_norm_eps", &cfg->rms_eps))) return r;
    if ((i = sc__cfg_get(j, "initializer_range")) >= 0 && (r = sc__cfg_num(j, i, "initializer_range", &cfg->init_std))) return r;
    if (!(cfg->init_std >= 0))
        return sc__fail(SC_ERROR_FORMAT, "file '%s': key 'initializer_range' must not be negative", fn);

    /* RoPE: rope_theta at top level (transformers 4) and/or in rope_parameters (transformers 5) */
    int top = sc__cfg_get(j, "rope_theta"), rp = sc__cfg_get(j, "rope_parameters");
    if ((r = sc__cfg_rope_type(j, sc__cfg_get(j, "rope_scaling"), "rope_scaling")) ||
        (r = sc__cfg_rope_type(j, rp, "rope_parameters")))
        return r;
    if (top >= 0 && (r = sc__cfg_num(j, top, "rope_theta", &cfg->rope_theta))) return r;
    i = rp >= 0 ? sc__json_get(j, rp, "rope_theta") : -1;
    if (i >= 0) {
        double t;
        if ((r = sc__cfg_num(j, i, "rope_parameters.rope_theta", &t)) != SC_SUCCESS) return r;
        if (top >= 0 && t != cfg->rope_theta)
            return sc__fail(SC_ERROR_FORMAT, "file '%s': rope_theta (%.17g) and rope_parameters.rope_theta (%.17g) disagree",
                            fn, cfg->rope_theta, t);
        cfg->rope_theta = t;
    }

    /* things that would change the model and that slidecheck does not implement */
    static const char *const dkeys[2] = {"torch_dtype", "dtype"};
    for (int k = 0; k < 2; k++) {
        if ((r = sc__cfg_str(j, sc__cfg_get(j, dkeys[k]), dkeys[k], &s)) != SC_SUCCESS) return r;
        if (s && strcmp(s, "float32") && strcmp(s, "bfloat16") && strcmp(s, "float16"))
            return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': %s '%s' is not supported (float32, bfloat16, float16)",
                            fn, dkeys[k], s);
    }
    if ((r = sc__cfg_str(j, sc__cfg_get(j, "hidden_act"), "hidden_act", &s)) != SC_SUCCESS) return r;
    if (s && strcmp(s, "silu"))
        return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': hidden_act '%s' is not supported (only silu)", fn, s);
    int sw;
    if ((r = sc__cfg_bool(j, "use_sliding_window", 0, &sw)) != SC_SUCCESS) return r;
    if (sw) return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': use_sliding_window true is not supported", fn);
    if ((i = sc__cfg_get(j, "layer_types")) >= 0) {
        if (j->nodes[i].type != SC__J_ARR)
            return sc__fail(SC_ERROR_FORMAT, "file '%s': key 'layer_types' must be an array", fn);
        for (int c = j->nodes[i].first; c >= 0; c = j->nodes[c].next)
            if (j->nodes[c].type != SC__J_STR || strcmp(j->nodes[c].s, "full_attention"))
                return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': layer_types other than 'full_attention' are not supported", fn);
    }
    if (sc__cfg_get(j, "quantization_config") >= 0)
        return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': quantized checkpoints are not supported", fn);

    if ((r = sc_config_validate(cfg)) != SC_SUCCESS) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", sc_last_error());
        return sc__fail(r, "file '%s': %s", fn, msg);
    }
    return SC_SUCCESS;
}

SCDEF sc_result sc_config_from_json(sc_config *cfg, const char *text, size_t len, const char *filename)
{
    sc__json j;
    sc_result r;
    if (!cfg || (!text && len)) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_config_from_json: NULL argument");
    if ((r = sc__json_parse(&j, text ? text : "", len, filename)) != SC_SUCCESS) return r;
    r = sc__cfg_parse(cfg, &j);
    sc__json_free(&j);
    return r;
}

SCDEF sc_result sc_config_read(sc_config *cfg, const char *path)
{
    char *text;
    size_t len;
    sc_result r = sc__read_file(path, 16u << 20, &text, &len);
    if (r != SC_SUCCESS) return r;
    r = sc_config_from_json(cfg, text, len, path);
    SC_FREE(text);
    return r;
}

static sc_result sc__config_json(const sc_config *c, const char *dtype, sc__buf *b)
{
    sc_result r;
    const char *arch = c->arch == SC_ARCH_QWEN3 ? "qwen3" : "qwen2";
    if (!dtype) dtype = "float32";
    if (strcmp(dtype, "float32") && strcmp(dtype, "bfloat16") && strcmp(dtype, "float16"))
        return sc__fail(SC_ERROR_INVALID_ARGS, "config.json: dtype '%s' (use float32, bfloat16 or float16)", dtype);
    if ((r = sc_config_validate(c)) != SC_SUCCESS) return r;
    if (!isfinite(c->rope_theta) || !isfinite(c->rms_eps) || !isfinite(c->init_std) || c->init_std < 0)
        return sc__fail(SC_ERROR_INVALID_ARGS, "config.json: rope_theta, rms_eps and init_std must be finite");
    if (c->arch == SC_ARCH_QWEN2 ? (!c->attention_bias || c->qk_norm) : (c->attention_bias || !c->qk_norm))
        return sc__fail(SC_ERROR_UNSUPPORTED, "config.json: %s with attention_bias=%d, qk_norm=%d has no Hugging Face equivalent",
                        arch, c->attention_bias, c->qk_norm);
    sc__buf_printf(b, "{\n  \"architectures\": [\"%s\"],\n  \"model_type\": \"%s\",\n",
                   c->arch == SC_ARCH_QWEN3 ? "Qwen3ForCausalLM" : "Qwen2ForCausalLM", arch);
    sc__buf_printf(b, "  \"vocab_size\": %d,\n  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n",
                   c->vocab_size, c->hidden_size, c->intermediate_size);
    sc__buf_printf(b, "  \"num_hidden_layers\": %d,\n  \"num_attention_heads\": %d,\n  \"num_key_value_heads\": %d,\n",
                   c->num_layers, c->num_heads, c->num_kv_heads);
    sc__buf_printf(b, "  \"head_dim\": %d,\n  \"max_position_embeddings\": %d,\n", c->head_dim, c->max_position);
    sc__buf_printf(b, "  \"rms_norm_eps\": "); sc__buf_double(b, c->rms_eps);
    sc__buf_printf(b, ",\n  \"rope_theta\": "); sc__buf_double(b, c->rope_theta);
    sc__buf_printf(b, ",\n  \"rope_parameters\": {\"rope_theta\": "); sc__buf_double(b, c->rope_theta);
    sc__buf_printf(b, ", \"rope_type\": \"default\"},\n  \"initializer_range\": "); sc__buf_double(b, c->init_std);
    sc__buf_printf(b, ",\n  \"tie_word_embeddings\": %s,\n  \"attention_bias\": %s,\n  \"attention_dropout\": 0.0,\n",
                   c->tie_embeddings ? "true" : "false", c->attention_bias ? "true" : "false");
    sc__buf_printf(b, "  \"hidden_act\": \"silu\",\n  \"use_cache\": false,\n  \"use_sliding_window\": false,\n");
    sc__buf_printf(b, "  \"sliding_window\": null,\n  \"max_window_layers\": %d,\n  \"layer_types\": [", c->num_layers);
    for (int l = 0; l < c->num_layers; l++) sc__buf_printf(b, "%s\"full_attention\"", l ? ", " : "");
    sc__buf_printf(b, "],\n  \"dtype\": \"%s\"\n}\n", dtype);
    if (b->oom) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "config.json: out of memory");
    return SC_SUCCESS;
}

SCDEF sc_result sc_config_write_json(const sc_config *cfg, FILE *f, const char *dtype)
{
    sc__buf b = {NULL, 0, 0, 0};
    if (!cfg || !f) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_config_write_json: NULL argument");
    sc_result r = sc__config_json(cfg, dtype, &b);
    if (r == SC_SUCCESS && fwrite(b.p, 1, b.n, f) != b.n)
        r = sc__fail(SC_ERROR_IO, "config.json: write failed");
    SC_FREE(b.p);
    return r;
}

SCDEF sc_result sc_config_write(const sc_config *cfg, const char *path, const char *dtype)
{
    FILE *f;
    char *tmp;
    sc__buf b = {NULL, 0, 0, 0};
    if (!cfg || !path) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_config_write: NULL argument");
    sc_result r = sc__config_json(cfg, dtype, &b);
    if (r == SC_SUCCESS && (r = sc__tmp_open(path, &f, &tmp)) == SC_SUCCESS) {
        fwrite(b.p, 1, b.n, f);
        r = sc__tmp_commit(path, f, tmp, SC_SUCCESS);
    }
    SC_FREE(b.p);
    return r;
}

/* ---- safetensors ---- */
static int sc__st_dtype_size(const char *d)
{
    static const char *const names[] = {"F64", "I64", "U64", "F32", "I32", "U32", "F16", "BF16", "I16",
                                        "U16", "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2"};
    static const int sizes[] = {8, 8, 8, 4, 4, 4, 2, 2, 2, 2, 1, 1, 1, 1, 1};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (!strcmp(d, names[i])) return sizes[i];
    return 0;
}

typedef struct sc__st_span { uint64_t begin, end; int idx; } sc__st_span;
static int sc__st_span_cmp(const void *a, const void *b)
{
    const sc__st_span *x = (const sc__st_span *)a, *y = (const sc__st_span *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}
static int sc__strp_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void sc__shape_str(char *out, size_t cap, int ndim, const int64_t *shape)
{
    size_t k = (size_t)snprintf(out, cap, "[");
    for (int i = 0; i < ndim && k < cap; i++)
        k += (size_t)snprintf(out + k, cap - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < cap) snprintf(out + k, cap - k, "]");
}

static void sc__st_init(sc_safetensors *st) { memset(st, 0, sizeof *st); }

SCDEF void sc_safetensors_close(sc_safetensors *st)
{
    if (!st) return;
    if (st->f) fclose(st->f);
    SC_FREE(st->path);
    SC_FREE(st->tensors);
    SC_FREE((void *)st->meta_keys);
    SC_FREE(st->strings_);
    memset(st, 0, sizeof *st);
}

/* Validate the header length read from the first 8 bytes against the total size. */
static sc_result sc__st_check_len(const sc_safetensors *st, uint64_t hlen, uint64_t total)
{
    if (total < 8)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': %llu bytes, too short for a safetensors file", st->path,
                        (unsigned long long)total);
    if (hlen > SC_ST_MAX_HEADER || hlen > total - 8)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': header length %llu is beyond the file (%llu bytes) or over %u bytes",
                        st->path, (unsigned long long)hlen, (unsigned long long)total, SC_ST_MAX_HEADER);
    return SC_SUCCESS;
}

/* Validate a tensor entry of the header and fill *t. */
static sc_result sc__st_entry(const sc_safetensors *st, const sc__json *j, int v, sc_st_tensor *t)
{
    const char *fn = st->path, *nm = t->name;
    const sc__jnode *nd = j->nodes;
    if (nd[v].type != SC__J_OBJ)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': entry must be an object, not %s", fn, nm, sc__json_type_name(nd[v].type));
    int d = sc__json_get(j, v, "dtype"), s = sc__json_get(j, v, "shape"), o = sc__json_get(j, v, "data_offsets");
    if (d < 0 || s < 0 || o < 0)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': entry lacks '%s'", fn, nm, d < 0 ? "dtype" : s < 0 ? "shape" : "data_offsets");
    if (nd[d].type != SC__J_STR)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': dtype must be a string", fn, nm);
    t->dtype = nd[d].s;
    if (!(t->dtype_size = sc__st_dtype_size(t->dtype)))
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': unknown dtype '%s'", fn, nm, t->dtype);
    if (nd[s].type != SC__J_ARR || nd[s].n > SC_ST_MAX_DIMS)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': shape must be an array of at most %d integers", fn, nm, SC_ST_MAX_DIMS);
    uint64_t numel = 1;
    int zero = 0;
    t->ndim = 0;
    for (int c = nd[s].first; c >= 0; c = nd[c].next) {
        if (nd[c].type != SC__J_NUM || !nd[c].is_int || nd[c].i < 0)
            return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': shape must hold non-negative integers", fn, nm);
        uint64_t x = (uint64_t)nd[c].i;
        t->shape[t->ndim++] = nd[c].i;
        if (x == 0) zero = 1;
        else if (numel > (uint64_t)INT64_MAX / x) numel = (uint64_t)INT64_MAX + 1; /* sticky overflow */
        else numel *= x;
    }
    if (zero) numel = 0;
    if (numel > (uint64_t)INT64_MAX / (uint64_t)t->dtype_size)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': shape is too large", fn, nm);
    t->numel = (int64_t)numel;
    if (nd[o].type != SC__J_ARR || nd[o].n != 2)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': data_offsets must be [begin, end]", fn, nm);
    int b = nd[o].first, e = nd[b].next;
    if (nd[b].type != SC__J_NUM || !nd[b].is_int || nd[b].i < 0 || nd[e].type != SC__J_NUM || !nd[e].is_int || nd[e].i < 0)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': data_offsets must be non-negative integers", fn, nm);
    t->begin = (uint64_t)nd[b].i; t->end = (uint64_t)nd[e].i;
    if (t->begin > t->end)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': data_offsets [%llu, %llu] end before they begin", fn, nm,
                        (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end > st->data_size)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': data_offsets [%llu, %llu] run past the data (%llu bytes; file truncated?)",
                        fn, nm, (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)st->data_size);
    if (t->end - t->begin != numel * (uint64_t)t->dtype_size) {
        char sh[200];
        sc__shape_str(sh, sizeof sh, t->ndim, t->shape);
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': %llu data bytes, but %s %s needs %llu", fn, nm,
                        (unsigned long long)(t->end - t->begin), t->dtype, sh, (unsigned long long)(numel * (uint64_t)t->dtype_size));
    }
    return SC_SUCCESS;
}

/* Parse and validate the JSON header; st->path, data_start and data_size are set. On success
   st owns the decoded strings. One path for files and memory buffers. */
static sc_result sc__st_parse_header(sc_safetensors *st, const char *hdr, size_t hlen)
{
    sc__json j;
    sc_result r = sc__json_parse(&j, hdr, hlen, st->path);
    const char *fn = st->path;
    sc__st_span *spans = NULL;
    const char **names = NULL;
    int nt = 0, nm = 0;
    if (r != SC_SUCCESS) return r;
    if (j.nodes[0].type != SC__J_OBJ) { r = sc__fail(SC_ERROR_FORMAT, "file '%s': header must be a JSON object", fn); goto done; }
    for (int c = j.nodes[0].first; c >= 0; c = j.nodes[c].next) {
        if (strcmp(j.nodes[c].key, "__metadata__")) nt++;
        else if (j.nodes[c].type == SC__J_OBJ) nm += j.nodes[c].n;
    }
    st->tensors = (sc_st_tensor *)SC_MALLOC(((size_t)nt + 1) * sizeof *st->tensors);
    st->meta_keys = (const char **)SC_MALLOC(((size_t)nm * 2 + 1) * sizeof(char *));
    spans = (sc__st_span *)SC_MALLOC(((size_t)nt + 1) * sizeof *spans);
    names = (const char **)SC_MALLOC(((size_t)(nt > nm ? nt : nm) + 1) * sizeof *names);
    if (!st->tensors || !st->meta_keys || !spans || !names) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", fn); goto done; }
    st->meta_values = st->meta_keys + nm;
    for (int c = j.nodes[0].first; c >= 0; c = j.nodes[c].next) {
        const sc__jnode *nd = &j.nodes[c];
        if (strlen(nd->key) != nd->klen) { r = sc__fail(SC_ERROR_FORMAT, "file '%s': a tensor name holds a NUL byte", fn); goto done; }
        if (!strcmp(nd->key, "__metadata__")) {
            if (nd->type == SC__J_NULL) continue;
            if (nd->type != SC__J_OBJ) { r = sc__fail(SC_ERROR_FORMAT, "file '%s': __metadata__ must be an object", fn); goto done; }
            for (int m = nd->first; m >= 0; m = j.nodes[m].next) {
                if (j.nodes[m].type != SC__J_STR) {
                    r = sc__fail(SC_ERROR_FORMAT, "file '%s': __metadata__ '%s' must be a string, not %s", fn, j.nodes[m].key,
                                 sc__json_type_name(j.nodes[m].type));
                    goto done;
                }
                st->meta_keys[st->n_meta] = j.nodes[m].key;
                st->meta_values[st->n_meta++] = j.nodes[m].s;
            }
            continue;
        }
        sc_st_tensor *t = &st->tensors[st->n_tensors];
        memset(t, 0, sizeof *t);
        t->name = nd->key;
        if ((r = sc__st_entry(st, &j, c, t)) != SC_SUCCESS) goto done;
        spans[st->n_tensors].begin = t->begin; spans[st->n_tensors].end = t->end;
        spans[st->n_tensors].idx = st->n_tensors;
        st->n_tensors++;
    }
    /* names unique */
    for (int pass = 0; pass < 2; pass++) {
        int n = pass ? st->n_meta : st->n_tensors;
        for (int i = 0; i < n; i++) names[i] = pass ? st->meta_keys[i] : st->tensors[i].name;
        qsort((void *)names, (size_t)n, sizeof *names, sc__strp_cmp);
        for (int i = 1; i < n; i++)
            if (!strcmp(names[i - 1], names[i])) {
                r = sc__fail(SC_ERROR_FORMAT, "file '%s': %s '%s' appears twice", fn, pass ? "__metadata__ key" : "tensor", names[i]);
                goto done;
            }
    }
    /* sorted by offset, the tensors tile the data section exactly */
    qsort(spans, (size_t)st->n_tensors, sizeof *spans, sc__st_span_cmp);
    {
        uint64_t at = 0;
        for (int i = 0; i < st->n_tensors; i++) {
            if (spans[i].begin != at) {
                r = sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': data_offsets [%llu, %llu] %s (expected to begin at %llu)", fn,
                             st->tensors[spans[i].idx].name, (unsigned long long)spans[i].begin, (unsigned long long)spans[i].end,
                             spans[i].begin < at ? "overlap another tensor" : "leave a gap", (unsigned long long)at);
                goto done;
            }
            at = spans[i].end;
        }
        if (at != st->data_size) {
            r = sc__fail(SC_ERROR_FORMAT, "file '%s': %llu bytes of data after the last tensor", fn,
                         (unsigned long long)(st->data_size - at));
            goto done;
        }
    }
    st->strings_ = j.strs;
    j.strs = NULL;
done:
    SC_FREE(spans);
    SC_FREE((void *)names);
    sc__json_free(&j);
    return r;
}

SCDEF sc_result sc_safetensors_open_memory(sc_safetensors *st, const void *buf, size_t len)
{
    sc_result r;
    if (!st) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_safetensors_open_memory: NULL argument");
    sc__st_init(st);
    if (!buf && len) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_safetensors_open_memory: NULL buffer");
    if (!(st->path = sc__strdup("<memory>"))) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "out of memory");
    const unsigned char *p = (const unsigned char *)buf;
    uint64_t hlen = len >= 8 ? sc__le64(p) : 0;
    if ((r = sc__st_check_len(st, hlen, len)) == SC_SUCCESS) {
        st->mem = p;
        st->data_start = 8 + hlen;
        st->data_size = (uint64_t)len - st->data_start;
        r = sc__st_parse_header(st, (const char *)p + 8, (size_t)hlen);
    }
    if (r != SC_SUCCESS) sc_safetensors_close(st);
    return r;
}

SCDEF sc_result sc_safetensors_open(sc_safetensors *st, const char *path)
{
    sc_result r;
    unsigned char b8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    uint64_t size = 0, hlen;
    char *hdr = NULL;
    if (!st || !path) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_safetensors_open: NULL argument");
    sc__st_init(st);
    if (!(st->path = sc__strdup(path))) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "out of memory");
    if (!(st->f = fopen(path, "rb"))) r = sc__fail(SC_ERROR_IO, "file '%s': cannot open: %s", path, strerror(errno));
    else if (sc__fsize(st->f, &size)) r = sc__fail(SC_ERROR_IO, "file '%s': cannot seek", path);
    else if (size >= 8 && fread(b8, 1, 8, st->f) != 8) r = sc__fail(SC_ERROR_IO, "file '%s': read failed", path);
    else if ((r = sc__st_check_len(st, hlen = sc__le64(b8), size)) == SC_SUCCESS) {
        st->data_start = 8 + hlen;
        st->data_size = size - st->data_start;
        if (!(hdr = (char *)SC_MALLOC((size_t)hlen + 1))) r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", path);
        else if (fread(hdr, 1, (size_t)hlen, st->f) != (size_t)hlen) r = sc__fail(SC_ERROR_IO, "file '%s': header read failed", path);
        else r = sc__st_parse_header(st, hdr, (size_t)hlen);
    }
    SC_FREE(hdr);
    if (r != SC_SUCCESS) sc_safetensors_close(st);
    return r;
}

SCDEF const sc_st_tensor *sc_safetensors_find(const sc_safetensors *st, const char *name)
{
    for (int i = 0; st && name && i < st->n_tensors; i++)
        if (!strcmp(st->tensors[i].name, name)) return &st->tensors[i];
    return NULL;
}

SCDEF const char *sc_safetensors_meta(const sc_safetensors *st, const char *key)
{
    for (int i = 0; st && key && i < st->n_meta; i++)
        if (!strcmp(st->meta_keys[i], key)) return st->meta_values[i];
    return NULL;
}

/* Is `word` one of the space-separated words of `list`? */
static int sc__word_in(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
    return 0;
}

/* Find `name`, check its shape and that its dtype is one of `ok` (space-separated); a dtype of
   the other kind (`wrong`) is SC_ERROR_SHAPE, any other SC_ERROR_UNSUPPORTED. *out = NULL when
   there is nothing to read. */
static sc_result sc__st_prepare(sc_safetensors *st, const char *name, const void *dst, int ndim,
                                const int64_t *expect, const char *ok, const char *wrong, const sc_st_tensor **out)
{
    char want[200], got[200];
    *out = NULL;
    if (!st || !name) return sc__fail(SC_ERROR_INVALID_ARGS, "safetensors read: NULL argument");
    const sc_st_tensor *t = sc_safetensors_find(st, name);
    if (!t) return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s' is missing", st->path, name);
    if (expect) {
        int same = ndim == t->ndim;
        for (int i = 0; same && i < ndim; i++) same = expect[i] == t->shape[i];
        if (!same) {
            sc__shape_str(want, sizeof want, ndim < 0 ? 0 : ndim > 8 ? 8 : ndim, expect);
            sc__shape_str(got, sizeof got, t->ndim, t->shape);
            return sc__fail(SC_ERROR_SHAPE, "file '%s': tensor '%s': shape %s, expected %s", st->path, name, got, want);
        }
    }
    if (!sc__word_in(ok, t->dtype))
        return sc__fail(sc__word_in(wrong, t->dtype) ? SC_ERROR_SHAPE : SC_ERROR_UNSUPPORTED,
                        "file '%s': tensor '%s': dtype %s, expected one of %s", st->path, name, t->dtype, ok);
    if (!dst && t->numel) return sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': tensor '%s': NULL destination", st->path, name);
    *out = t->numel ? t : NULL; /* NULL: nothing to read */
    return SC_SUCCESS;
}

/* Copy n raw elements starting at element i0 of t into buf. */
static sc_result sc__st_raw(sc_safetensors *st, const sc_st_tensor *t, int64_t i0, int64_t n, void *buf)
{
    uint64_t pos = st->data_start + t->begin + (uint64_t)i0 * (uint64_t)t->dtype_size;
    size_t nb = (size_t)n * (size_t)t->dtype_size;
    if (st->mem) { memcpy(buf, st->mem + pos, nb); return SC_SUCCESS; }
    if (sc__fseek64(st->f, pos) || fread(buf, 1, nb, st->f) != nb)
        return sc__fail(SC_ERROR_IO, "file '%s': tensor '%s': cannot read %llu bytes at offset %llu (file truncated or changed?)",
                        st->path, t->name, (unsigned long long)nb, (unsigned long long)pos);
    return SC_SUCCESS;
}

#define SC__ST_CHUNK 65536 /* elements converted at a time */

SCDEF sc_result sc_safetensors_read_f32(sc_safetensors *st, const char *name, float *dst, int ndim,
                                        const int64_t *expect_shape)
{
    const sc_st_tensor *t;
    sc_result r = sc__st_prepare(st, name, dst, ndim, expect_shape, "F32 BF16 F16", "I32 I64", &t);
    if (r != SC_SUCCESS || !t) return r;
    if (t->dtype_size == 4) {
        if ((r = sc__st_raw(st, t, 0, t->numel, dst)) != SC_SUCCESS) return r;
        if (!sc__little_endian())
            for (int64_t i = 0; i < t->numel; i++) {
                unsigned char *p = (unsigned char *)(dst + i), c;
                c = p[0]; p[0] = p[3]; p[3] = c; c = p[1]; p[1] = p[2]; p[2] = c;
            }
        return SC_SUCCESS;
    }
    unsigned char *buf = (unsigned char *)SC_MALLOC(SC__ST_CHUNK * 2);
    if (!buf) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", st->path);
    int bf = !strcmp(t->dtype, "BF16");
    for (int64_t i0 = 0; i0 < t->numel && r == SC_SUCCESS; i0 += SC__ST_CHUNK) {
        int64_t n = t->numel - i0 < SC__ST_CHUNK ? t->numel - i0 : SC__ST_CHUNK;
        if ((r = sc__st_raw(st, t, i0, n, buf)) != SC_SUCCESS) break;
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = (uint16_t)(buf[2 * i] | (buf[2 * i + 1] << 8));
            dst[i0 + i] = bf ? sc_bf16_to_f32(h) : sc_f16_to_f32(h);
        }
    }
    SC_FREE(buf);
    return r;
}

SCDEF sc_result sc_safetensors_read_i32(sc_safetensors *st, const char *name, int32_t *dst, int ndim,
                                        const int64_t *expect_shape)
{
    const sc_st_tensor *t;
    sc_result r = sc__st_prepare(st, name, dst, ndim, expect_shape, "I32 I64", "F32 BF16 F16", &t);
    if (r != SC_SUCCESS || !t) return r;
    unsigned char *buf = (unsigned char *)SC_MALLOC(SC__ST_CHUNK * 8);
    if (!buf) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", st->path);
    for (int64_t i0 = 0; i0 < t->numel && r == SC_SUCCESS; i0 += SC__ST_CHUNK) {
        int64_t n = t->numel - i0 < SC__ST_CHUNK ? t->numel - i0 : SC__ST_CHUNK;
        if ((r = sc__st_raw(st, t, i0, n, buf)) != SC_SUCCESS) break;
        for (int64_t i = 0; i < n; i++) {
            if (t->dtype_size == 4) {
                const unsigned char *p = buf + 4 * i;
                dst[i0 + i] = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
            } else {
                int64_t v = (int64_t)sc__le64(buf + 8 * i);
                if (v < INT32_MIN || v > INT32_MAX) {
                    r = sc__fail(SC_ERROR_RANGE, "file '%s': tensor '%s': value %lld at flat index %lld does not fit int32",
                                 st->path, name, (long long)v, (long long)(i0 + i));
                    break;
                }
                dst[i0 + i] = (int32_t)v;
            }
        }
    }
    SC_FREE(buf);
    return r;
}

/* Write entry e's data (numel elements) to f, little-endian, converting floats if asked. */
static int sc__st_write_data(FILE *f, const sc_st_entry *e, int64_t numel, int size)
{
    if (!numel) return 1;
    if (!e->data_is_f32 && sc__little_endian())
        return fwrite(e->data, (size_t)size, (size_t)numel, f) == (size_t)numel;
    unsigned char buf[4096 * 8];
    const unsigned char *raw = (const unsigned char *)e->data;
    const float *x = (const float *)e->data;
    for (int64_t i0 = 0; i0 < numel; i0 += 4096) {
        int64_t n = numel - i0 < 4096 ? numel - i0 : 4096;
        for (int64_t i = 0; i < n; i++) {
            unsigned char *o = buf + i * size;
            uint64_t v;
            if (!e->data_is_f32) { /* raw little-endian values from a big-endian host: copy as stored */
                memcpy(o, raw + (i0 + i) * size, (size_t)size);
                continue;
            }
            if (size == 2) v = sc_f32_to_bf16(x[i0 + i]);
            else { uint32_t u; memcpy(&u, &x[i0 + i], 4); v = u; }
            for (int k = 0; k < size; k++) o[k] = (unsigned char)(v >> (8 * k));
        }
        if (fwrite(buf, (size_t)size, (size_t)n, f) != (size_t)n) return 0;
    }
    return 1;
}

SCDEF sc_result sc_safetensors_write(const char *path, const sc_st_entry *entries, int n,
                                     const char *const *meta_kv, int n_meta)
{
    sc__buf h = {NULL, 0, 0, 0};
    sc_result r = SC_SUCCESS;
    uint64_t at = 0;
    FILE *f;
    char *tmp;
    if (!path || n < 0 || n_meta < 0 || (n && !entries) || (n_meta && !meta_kv))
        return sc__fail(SC_ERROR_INVALID_ARGS, "sc_safetensors_write: bad arguments");
    sc__buf_put(&h, "{", 1);
    if (n_meta) {
        sc__buf_put(&h, "\"__metadata__\":{", 16);
        for (int i = 0; i < n_meta; i++) {
            if (!meta_kv[2 * i] || !meta_kv[2 * i + 1])
                { r = sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': NULL metadata key or value", path); goto done; }
            if (i) sc__buf_put(&h, ",", 1);
            sc__buf_json_str(&h, meta_kv[2 * i]);
            sc__buf_put(&h, ":", 1);
            sc__buf_json_str(&h, meta_kv[2 * i + 1]);
        }
        sc__buf_put(&h, "}", 1);
    }
    for (int i = 0; i < n; i++) {
        const sc_st_entry *e = &entries[i];
        const char *nm = e->name ? e->name : "(null)";
        int size = e->dtype ? sc__st_dtype_size(e->dtype) : 0;
        uint64_t numel = 1;
        if (!e->name || !e->dtype || (strcmp(e->dtype, "F32") && strcmp(e->dtype, "BF16") && strcmp(e->dtype, "F16") &&
                                      strcmp(e->dtype, "I32") && strcmp(e->dtype, "I64")))
            { r = sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': tensor '%s': no name or dtype not F32/BF16/F16/I32/I64", path, nm); goto done; }
        if (e->data_is_f32 && strcmp(e->dtype, "F32") && strcmp(e->dtype, "BF16"))
            { r = sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': tensor '%s': float data converts to F32 or BF16 only", path, nm); goto done; }
        if (e->ndim < 0 || e->ndim > SC_ST_MAX_DIMS)
            { r = sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': tensor '%s': ndim %d", path, nm, e->ndim); goto done; }
        for (int k = 0; k < e->ndim; k++) {
            if (e->shape[k] < 0 || (e->shape[k] && numel > (uint64_t)(INT64_MAX / 8) / (uint64_t)e->shape[k]))
                { r = sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': tensor '%s': bad shape", path, nm); goto done; }
            numel *= (uint64_t)e->shape[k];
        }
        if (numel && !e->data) { r = sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': tensor '%s': NULL data", path, nm); goto done; }
        for (int k = 0; k < i; k++)
            if (!strcmp(entries[k].name, e->name))
                { r = sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': tensor '%s' given twice", path, nm); goto done; }
        if (h.n > 1) sc__buf_put(&h, ",", 1);
        sc__buf_json_str(&h, e->name);
        sc__buf_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", e->dtype);
        for (int k = 0; k < e->ndim; k++) sc__buf_printf(&h, "%s%lld", k ? "," : "", (long long)e->shape[k]);
        sc__buf_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)at,
                       (unsigned long long)(at + numel * (uint64_t)size));
        at += numel * (uint64_t)size;
    }
    sc__buf_put(&h, "}", 1);
    while (h.n % 8) sc__buf_put(&h, " ", 1);
    if (h.oom) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", path); goto done; }
    if ((r = sc__tmp_open(path, &f, &tmp)) != SC_SUCCESS) goto done;
    {
        unsigned char b8[8];
        int ok = 1;
        for (int k = 0; k < 8; k++) b8[k] = (unsigned char)((uint64_t)h.n >> (8 * k));
        ok = fwrite(b8, 1, 8, f) == 8 && fwrite(h.p, 1, h.n, f) == h.n;
        for (int i = 0; ok && i < n; i++) {
            int64_t numel = 1;
            for (int k = 0; k < entries[i].ndim; k++) numel *= entries[i].shape[k];
            ok = sc__st_write_data(f, &entries[i], numel, sc__st_dtype_size(entries[i].dtype));
        }
        if (!ok) r = sc__fail(SC_ERROR_IO, "file '%s': write failed: %s", tmp, strerror(errno));
        r = sc__tmp_commit(path, f, tmp, r);
    }
done:
    SC_FREE(h.p);
    return r;
}

/* ---- Hugging Face checkpoint directories ---- */
SCDEF sc_result sc_hf_read_config(const char *dir, sc_config *cfg)
{
    if (!dir || !cfg) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_hf_read_config: NULL argument");
    char *p = sc__path_join(dir, "config.json");
    if (!p) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "out of memory");
    sc_result r = sc_config_read(cfg, p);
    SC_FREE(p);
    return r;
}

/* Is `name` a tensor the model reads (or a tied lm_head, which is ignored)? */
static int sc__hf_known(const sc_param_info *tab, int n, const sc_config *cfg, const char *name)
{
    if (cfg->tie_embeddings && !strcmp(name, "lm_head.weight")) return 1;
    for (int i = 0; i < n; i++)
        if (!strcmp(tab[i].name, name)) return 1;
    return 0;
}

static void sc__hf_warn_unused(const char *file, int unused, const char *first)
{
    if (unused)
        fprintf(stderr, "slidecheck: warning: '%s': %d tensor%s the model does not use (first: '%s') ignored\n",
                file, unused, unused > 1 ? "s" : "", first);
}

/* Read params tab[i] for every i with want[i] from an open file. */
static sc_result sc__hf_read_from(sc_safetensors *st, const sc_param_info *tab, int n, const char *want,
                                  float *params)
{
    for (int i = 0; i < n; i++) {
        if (want && !want[i]) continue;
        sc_result r = sc_safetensors_read_f32(st, tab[i].name, params + tab[i].offset, tab[i].ndim, tab[i].shape);
        if (r != SC_SUCCESS) return r;
    }
    return SC_SUCCESS;
}

typedef struct sc__hf_map { const char *name, *shard; } sc__hf_map;
static int sc__hf_map_cmp(const void *a, const void *b)
{
    return strcmp(((const sc__hf_map *)a)->name, ((const sc__hf_map *)b)->name);
}

static sc_result sc__hf_read_sharded(const char *dir, const char *ipath, const sc_config *cfg,
                                     const sc_param_info *tab, int n, float *params)
{
    sc__json j;
    char *text = NULL, *want = NULL, *spath = NULL;
    size_t len;
    sc__hf_map *map = NULL;
    const char **pshard = NULL;
    int nmap = 0, unused = 0;
    const char *first_unused = "";
    sc_result r = sc__read_file(ipath, 64u << 20, &text, &len);
    if (r != SC_SUCCESS) return r;
    if ((r = sc__json_parse(&j, text, len, ipath)) != SC_SUCCESS) { SC_FREE(text); return r; }
    int wm = sc__json_get(&j, 0, "weight_map");
    if (wm < 0 || j.nodes[wm].type != SC__J_OBJ) { r = sc__fail(SC_ERROR_FORMAT, "file '%s': no 'weight_map' object", ipath); goto done; }
    map = (sc__hf_map *)SC_MALLOC(((size_t)j.nodes[wm].n + 1) * sizeof *map);
    pshard = (const char **)SC_MALLOC(((size_t)n + 1) * sizeof *pshard);
    want = (char *)SC_MALLOC((size_t)n + 1);
    if (!map || !pshard || !want) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", ipath); goto done; }
    for (int c = j.nodes[wm].first; c >= 0; c = j.nodes[c].next) {
        const sc__jnode *nd = &j.nodes[c];
        if (nd->type != SC__J_STR || strlen(nd->s) != nd->slen || !nd->slen || strchr(nd->s, '/') ||
            strchr(nd->s, '\\') || strstr(nd->s, "..")) {
            r = sc__fail(SC_ERROR_FORMAT, "file '%s': weight_map: tensor '%s': shard must be a plain file name", ipath, nd->key);
            goto done;
        }
        map[nmap].name = nd->key; map[nmap++].shard = nd->s;
        if (!sc__hf_known(tab, n, cfg, nd->key) && !unused++) first_unused = nd->key;
    }
    qsort(map, (size_t)nmap, sizeof *map, sc__hf_map_cmp);
    for (int i = 1; i < nmap; i++)
        if (!strcmp(map[i - 1].name, map[i].name)) {
            r = sc__fail(SC_ERROR_FORMAT, "file '%s': weight_map: tensor '%s' appears twice", ipath, map[i].name);
            goto done;
        }
    for (int i = 0; i < n; i++) {
        sc__hf_map key = {tab[i].name, NULL};
        const sc__hf_map *m = (const sc__hf_map *)bsearch(&key, map, (size_t)nmap, sizeof *map, sc__hf_map_cmp);
        if (!m) { r = sc__fail(SC_ERROR_FORMAT, "file '%s': weight_map: tensor '%s' is missing", ipath, tab[i].name); goto done; }
        pshard[i] = m->shard;
    }
    memset(want, 0, (size_t)n);
    for (int i = 0; i < n; i++) {
        if (!pshard[i]) continue; /* already read */
        const char *shard = pshard[i];
        sc_safetensors st;
        for (int k = i; k < n; k++) {
            want[k] = pshard[k] && !strcmp(pshard[k], shard);
            if (want[k]) pshard[k] = NULL;
        }
        SC_FREE(spath);
        if (!(spath = sc__path_join(dir, shard))) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "out of memory"); goto done; }
        if ((r = sc_safetensors_open(&st, spath)) != SC_SUCCESS) goto done;
        r = sc__hf_read_from(&st, tab, n, want, params);
        sc_safetensors_close(&st);
        if (r != SC_SUCCESS) goto done;
        memset(want, 0, (size_t)n);
    }
    sc__hf_warn_unused(ipath, unused, first_unused);
done:
    SC_FREE(spath); SC_FREE(want); SC_FREE((void *)pshard); SC_FREE(map);
    sc__json_free(&j);
    SC_FREE(text);
    return r;
}

SCDEF sc_result sc_hf_read_params(const char *dir, const sc_config *cfg, float *params)
{
    if (!dir || !cfg || !params) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_hf_read_params: NULL argument");
    sc_result r = sc_config_validate(cfg);
    if (r != SC_SUCCESS) return r;
    int n = sc_config_params(cfg, NULL, 0);
    if (n < 1) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_hf_read_params: empty parameter table");
    sc_param_info *tab = (sc_param_info *)SC_MALLOC((size_t)n * sizeof *tab);
    char *single = sc__path_join(dir, "model.safetensors"), *index = sc__path_join(dir, "model.safetensors.index.json");
    if (!tab || !single || !index) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "out of memory"); goto done; }
    sc_config_params(cfg, tab, n);
    if (sc__file_exists(single) || !sc__file_exists(index)) { /* as transformers: the single file first */
        sc_safetensors st;
        if ((r = sc_safetensors_open(&st, single)) != SC_SUCCESS) goto done;
        r = sc__hf_read_from(&st, tab, n, NULL, params);
        if (r == SC_SUCCESS) {
            int unused = 0;
            const char *first = "";
            for (int i = 0; i < st.n_tensors; i++)
                if (!sc__hf_known(tab, n, cfg, st.tensors[i].name) && !unused++) first = st.tensors[i].name;
            sc__hf_warn_unused(single, unused, first);
        }
        sc_safetensors_close(&st);
    } else
        r = sc__hf_read_sharded(dir, index, cfg, tab, n, params);
done:
    SC_FREE(tab); SC_FREE(single); SC_FREE(index);
    return r;
}

SCDEF sc_result sc_hf_write(const char *dir, const sc_config *cfg, const float *params, int bf16)
{
    if (!dir || !cfg || !params) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_hf_write: NULL argument");
    sc_result r = sc_config_validate(cfg);
    if (r != SC_SUCCESS) return r;
#ifdef _WIN32
    int made = _mkdir(dir);
#else
    int made = mkdir(dir, 0777);
#endif
    if (made && errno != EEXIST) return sc__fail(SC_ERROR_IO, "directory '%s': cannot create: %s", dir, strerror(errno));
    int n = sc_config_params(cfg, NULL, 0);
    sc_param_info *tab = (sc_param_info *)SC_MALLOC((size_t)n * sizeof *tab);
    sc_st_entry *e = (sc_st_entry *)SC_MALLOC((size_t)n * sizeof *e);
    char *cpath = sc__path_join(dir, "config.json"), *mpath = sc__path_join(dir, "model.safetensors");
    if (!tab || !e || !cpath || !mpath) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "out of memory"); goto done; }
    sc_config_params(cfg, tab, n);
    for (int i = 0; i < n; i++) {
        memset(&e[i], 0, sizeof e[i]);
        e[i].name = tab[i].name;
        e[i].dtype = bf16 ? "BF16" : "F32";
        e[i].ndim = tab[i].ndim;
        e[i].shape[0] = tab[i].shape[0]; e[i].shape[1] = tab[i].shape[1];
        e[i].data = params + tab[i].offset;
        e[i].data_is_f32 = 1;
    }
    {
        static const char *const meta[2] = {"format", "pt"}; /* transformers requires it */
        if ((r = sc_config_write(cfg, cpath, bf16 ? "bfloat16" : "float32")) == SC_SUCCESS)
            r = sc_safetensors_write(mpath, e, n, meta, 1);
    }
done:
    SC_FREE(tab); SC_FREE(e); SC_FREE(cpath); SC_FREE(mpath);
    return r;
}

/* ---- token files ---- */
static sc_result sc__tokens_from_st(sc_safetensors *st, int32_t **ids, int *B, int *T)
{
    const sc_st_tensor *t = sc_safetensors_find(st, "input_ids");
    *ids = NULL; *B = *T = 0;
    if (!t) return sc__fail(SC_ERROR_FORMAT, "file '%s': no tensor 'input_ids'", st->path);
    if (t->ndim != 1 && t->ndim != 2)
        return sc__fail(SC_ERROR_SHAPE, "file '%s': tensor 'input_ids': %d dims, expected [B, T] or [T]", st->path, t->ndim);
    int64_t b = t->ndim == 2 ? t->shape[0] : 1, tt = t->shape[t->ndim - 1];
    if (b < 1 || tt < 2)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor 'input_ids': %lld sequences of %lld tokens; need at least one of >= 2",
                        st->path, (long long)b, (long long)tt);
    if (b > INT_MAX || tt > INT_MAX || t->numel > INT_MAX)
        return sc__fail(SC_ERROR_RANGE, "file '%s': tensor 'input_ids': too many tokens", st->path);
    int32_t *p = (int32_t *)SC_MALLOC((size_t)t->numel * sizeof *p);
    if (!p) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", st->path);
    sc_result r = sc_safetensors_read_i32(st, "input_ids", p, 0, NULL);
    for (int64_t i = 0; r == SC_SUCCESS && i < t->numel; i++)
        if (p[i] < 0)
            r = sc__fail(SC_ERROR_RANGE, "file '%s': token id %d at [%lld,%lld] is negative", st->path, p[i],
                         (long long)(i / tt), (long long)(i % tt));
    if (r != SC_SUCCESS) { SC_FREE(p); return r; }
    *ids = p; *B = (int)b; *T = (int)tt;
    return SC_SUCCESS;
}

SCDEF sc_result sc_tokens_read(const char *path, int32_t **ids, int *B, int *T)
{
    sc_safetensors st;
    if (!path || !ids || !B || !T) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_tokens_read: NULL argument");
    *ids = NULL; *B = *T = 0;
    sc_result r = sc_safetensors_open(&st, path);
    if (r != SC_SUCCESS) return r;
    r = sc__tokens_from_st(&st, ids, B, T);
    sc_safetensors_close(&st);
    return r;
}

SCDEF sc_result sc_tokens_write(const char *path, const int32_t *ids, int B, int T)
{
    sc_st_entry e;
    if (!path || !ids || B < 1 || T < 1) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_tokens_write: bad arguments");
    memset(&e, 0, sizeof e);
    e.name = "input_ids"; e.dtype = "I32"; e.ndim = 2; e.shape[0] = B; e.shape[1] = T; e.data = ids;
    return sc_safetensors_write(path, &e, 1, NULL, 0);
}

SCDEF sc_result sc_tokens_check(const int32_t *ids, int B, int T, const sc_config *cfg)
{
    if (!ids || !cfg || B < 1 || T < 1) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_tokens_check: bad arguments");
    if (T > cfg->max_position)
        return sc__fail(SC_ERROR_RANGE, "sequence length %d > max_position_embeddings %d", T, cfg->max_position);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int32_t v = ids[(size_t)b * T + t];
            if (v < 0)
                return sc__fail(SC_ERROR_RANGE, "token id %d at [%d,%d] is negative", v, b, t);
            if (v >= cfg->vocab_size)
                return sc__fail(SC_ERROR_RANGE, "token id %d at [%d,%d] \xe2\x89\xa5 vocab_size %d", v, b, t,
                                cfg->vocab_size);
        }
    return SC_SUCCESS;
}

SCDEF void sc_tokens_free(int32_t *ids) { SC_FREE(ids); }
