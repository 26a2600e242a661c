/* tests/fuzz.h: what the libFuzzer harnesses share; included after slidecheck.h's implementation
   (they read files back with its sc__read_file). */
#include <stdio.h>

/* n bytes of b into path, after the byte lead where lead >= 0; 0 where it could not */
static int fz_write(const char *path, int lead, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    unsigned char c = (unsigned char)lead;
    int ok = (lead < 0 || fwrite(&c, 1, 1, f) == 1) && (!n || fwrite(b, 1, n, f) == n);
    return fclose(f) == 0 && ok;
}
