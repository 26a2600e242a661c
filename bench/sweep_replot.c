/* Redraws sweep's pareto.png and seq_scaling.png from a run's pareto.csv and seq_scaling.csv with
   demos/sweep.c's own figure code (pareto_png, seq_png), for a run whose numbers are final but
   whose figure code changed afterwards: the README's sweep figures of 2026-11-23 are the H100
   run's sweep_pareto.csv and sweep_seq_scaling.csv (measured by build/sweep of commit 8452322)
   drawn by the sweep.c that zooms on the resident runs and keeps the legend off the right panel.
   The device name and date are the run's (arguments). From the repository root, on any machine:
     cc -std=c11 -O2 -fopenmp -I. bench/sweep_replot.c -o /tmp/replot -lm -pthread
     mkdir -p /tmp/csv && cp bench/results/demos_h100_2026-11-23/sweep_pareto.csv /tmp/csv/pareto.csv
     cp bench/results/demos_h100_2026-11-23/sweep_seq_scaling.csv /tmp/csv/seq_scaling.csv
     /tmp/replot /tmp/csv /tmp/out "NVIDIA H100 80GB HBM3" 2026-11-23 /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf */
#define main sweep_main
#include "demos/sweep.c"
#undef main

static int split(char *line, char **f, int max)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = 0;
    for (char *p = line;;) {
        if (n < max) f[n++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0, p = c + 1;
    }
    return n;
}

static void fill(point *p, char **f, int c) /* c: index of the n column */
{
    p->n = atoi(f[c]);
    p->median = atof(f[c + 1]), p->ci = atof(f[c + 2]), p->mean = atof(f[c + 3]);
    p->mlo = atof(f[c + 4]), p->mhi = atof(f[c + 5]), p->mcov = atof(f[c + 6]);
    p->alloc = atof(f[c + 7]), p->reserved = atof(f[c + 8]), p->saved = atof(f[c + 9]);
    p->bitwise = *f[c + 10] ? atoi(f[c + 10]) : -1;
}

int main(int argc, char **argv)
{
    if (argc != 6) return 2;
    char *av[] = {"sweep", "--device", "cpu", "--model", "qwen3-1.7b", "--out", argv[2], "--font", argv[5], NULL};
    demo d;
    const char *seqs = NULL;
    demo_begin(&d, "sweep", 9, av, usage, take_flag, &seqs);
    d.mc.device = SC_DEVICE_CUDA, d.on_gpu = 1, d.bf16 = 1, d.mc.bf16 = 1, d.mc.master_weights = 1;
    snprintf(d.device_name, sizeof d.device_name, "%s", argv[3]);
    snprintf(d.date, sizeof d.date, "%s", argv[4]);
    char path[4096], line[4096], *f[32];
    point pt[MAXP];
    int np = 0, order[MAXP], nf = 0;
    snprintf(path, sizeof path, "%s/pareto.csv", argv[1]);
    FILE *in = fopen(path, "r");
    if (!in || !fgets(line, sizeof line, in)) return 1;
    while (np < MAXP && fgets(line, sizeof line, in)) {
        int n = split(line, f, 32);
        if (n < 18) return 1;
        point *p = &pt[np];
        memset(p, 0, sizeof *p);
        snprintf(p->policy, sizeof p->policy, "%s", f[0]);
        snprintf(p->label, sizeof p->label, "%s", f[1]);
        p->mode = strcmp(f[2], "slide") ? 0 : SC_MODE_SLIDE;
        fill(p, f, 3);
        p->frontier = atoi(f[14]);
        p->budget = *f[15] ? atof(f[15]) : 0;
        p->capfit = *f[16] ? (atoi(f[16]) ? 1 : -1) : 0;
        snprintf(p->layout, sizeof p->layout, "%s", f[17]);
        p->color = p->mode ? 8 : p->budget > 0 ? 9 : np;
        p->marker = p->mode ? PL_M_SQUARE : p->budget > 0 ? PL_M_DIAMOND : PL_M_CIRCLE;
        np++;
    }
    fclose(in);
    for (int i = 0; i < np; i++) {
        if (!pt[i].frontier) continue;
        order[nf++] = i;
        for (int j = nf - 1; j > 0 && pt[order[j]].median < pt[order[j - 1]].median; j--)
            { int t = order[j]; order[j] = order[j - 1], order[j - 1] = t; }
    }
    static point sp[5][MAXSEQ];
    int seq[MAXSEQ], ns = 0;
    snprintf(path, sizeof path, "%s/seq_scaling.csv", argv[1]);
    in = fopen(path, "r");
    if (!in || !fgets(line, sizeof line, in)) return 1;
    while (fgets(line, sizeof line, in)) {
        int n = split(line, f, 32);
        if (n < 14) return 1;
        int k = !strcmp(f[1], "slide") ? 4 : -1, T = atoi(f[2]), s = 0;
        for (int j = 0; j < 4 && k < 0; j++) k = strcmp(spol[j], f[0]) ? -1 : j;
        while (s < ns && seq[s] != T) s++;
        if (s == ns) seq[ns++] = T;
        fill(&sp[k][s], f, 3);
    }
    fclose(in);
    pareto_png(&d, pt, np, order, nf, 4, 1024, DEMO_GIB);
    seq_png(&d, sp, seq, ns, 4, DEMO_GIB);
    printf("wrote %s/pareto.png, seq_scaling.png (np %d, frontier %d, %d lengths)\n", argv[2], np, nf, ns);
    return 0;
}
