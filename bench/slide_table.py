"""Puts the floors beside each slide / resident figure of bench/slide.sh.
transfer floor = max(h2d / H2D bw, d2h / D2H bw, (h2d + d2h) / both-directions bw), the pinned
bandwidths measured by bench/floors.cu in the same run; CPU-optimizer floor = bytes the host
update touches / host bandwidth (the triad of bench/cpu_optim.c, counting 12 B per element as
STREAM does); resident = the resident step of the same shape. ratio = step / max(floors).
host floor (shown, not in the ratio): uploads, downloads and the update all go through host
memory, so the bytes it serves (h2d read + d2h written + the update's reads and writes) over the
triad's real rate (16 B per element: the 12 counted plus the write-allocate read) bound the step
from below too when they cannot overlap anything else.
shared floor (shown, not in the ratio): the transfer floor with the pinned bandwidths measured while
the host optimizer's kernels run beside the copies (floors_shared.csv), as they do in a slide step.
phase floor: the transfer floor with the step's phases. A step's downloads of gradients or updated
weights all come from its head and backward, and the next step's forward waits for them (its first
layer's update needs the last download), so the uploads queued before the step's head (h2d_first,
the forward's) can only use the H2D bandwidth: phase floor = h2d_first / H2D bw + transfer floor of
the rest (h2d - h2d_first, d2h).
ratio/ph = step / max(phase floor, CPU-optimizer floor, resident step).
The CPU-optimizer floor counts the parameters the host updates (host_params: all of them, less the
layers with --slide-device-update and the embedding and head with --slide-keep-head)."""
import csv, os, sys

d = sys.argv[1]
bw = {r['floor']: float(r['median_gb_s']) for r in csv.DictReader(open(os.path.join(d, 'floors.csv')))}
sp = os.path.join(d, 'floors_shared.csv')
bws = {r['floor']: float(r['median_gb_s']) for r in csv.DictReader(open(sp))} if os.path.exists(sp) else None
triad = None
lines = open(os.path.join(d, 'cpu_optim.txt')).read().split('csv\n', 1)[1].splitlines()
for r in csv.DictReader(lines):
    if r['kernel'].startswith('triad'):
        triad = float(r['gb_s'])
rows = list(csv.DictReader(open(os.path.join(d, 'slide.csv'))))
# bytes per parameter the host update reads + writes
BPP = {('pure-bf16', 'sgd'): 6, ('pure-bf16', 'adamw'): 14, ('master', 'sgd'): 14, ('master', 'adamw'): 30,
       ('f32', 'sgd'): 12, ('f32', 'adamw'): 28}
print('H2D %.1f GB/s, D2H %.1f GB/s, both %.1f GB/s (pinned); host triad %.1f GB/s' %
      (bw['h2d_pinned'], bw['d2h_pinned'], bw['both_pinned'], triad))
if bws:
    print('beside the host optimizer: H2D %.1f GB/s, D2H %.1f GB/s, both %.1f GB/s' %
          (bws['h2d_pinned'], bws['d2h_pinned'], bws['both_pinned']))
def xfer(b, h, dd):
    return 1e3 * max(h / b['h2d_pinned'], dd / b['d2h_pinned'], (h + dd) / b['both_pinned'])
hdr = ('label', 'mode', 'seq x b x acc', 'optim', 'ckpt', 'pf', 'step ms', 'n', 'alloc GiB', 'resv GiB', 'rss GiB',
       'h2d GB', 'd2h GB', 'TFLOP/s', 'xfer floor', 'opt floor', 'resident', 'ratio', 'host floor', 'shared',
       'phase floor', 'ratio/ph')
print(('%-9s %-8s %-14s %-5s %-5s %-2s %9s %3s %9s %8s %7s %6s %6s %7s %10s %9s %8s %6s %10s %7s %11s %8s') % hdr)
for r in rows:
    if r['status'] != 'ok':
        print('%-9s %-8s %-14s %-5s %-5s  %s' % (r['label'], r['mode'], '%sx%sx%s' % (r['seq'], r['batch'], r['accum']),
                                                r['optim'], r['ckpt'], r['status']))
        continue
    ms = float(r['step_ms'])
    xf = of = rs = hf = sh = pf = ''
    phase = None
    floors = []
    if r['mode'] == 'slide':
        h, dd = float(r['h2d_gb']), float(r['d2h_gb'])
        x = xfer(bw, h, dd)
        sh = '%.1f' % xfer(bws, h, dd) if bws else ''
        # --slide-dpu in pure bf16 also writes the bf16 working copy that uploads read (master mode's
        # bytes count its working copy already)
        bpp = BPP[(r['precision'], r['optim'])] + (2 if r['label'].endswith('dpu') and r['precision'] == 'pure-bf16' else 0)
        hp = int(r['host_params']) if r.get('host_params') else int(r['params'])
        o = 1e3 * hp * bpp / 1e9 / triad
        if r.get('h2d_first_gb'):
            f = float(r['h2d_first_gb'])
            phase = 1e3 * f / bw['h2d_pinned'] + xfer(bw, h - f, dd)
            pf = '%.1f' % phase
        xf, of = '%.1f' % x, '%.1f' % o
        hb = h + dd + hp * bpp / 1e9
        hf = '%.1f' % (1e3 * hb / (triad * 16 / 12))
        floors += [x, o]
        same = [q for q in rows if q['mode'] == 'resident' and q['status'] == 'ok' and q['model'] == r['model']
                and q['seq'] == r['seq'] and q['batch'] == r['batch'] and q['optim'] == r['optim']]
        if same:
            rs = same[0]['step_ms']
            floors.append(float(rs) * int(r['accum']) / int(same[0]['accum']))
    ratio = '%.2f' % (ms / max(floors)) if floors else ''
    ratio_ph = '%.2f' % (ms / max([phase] + floors[1:])) if phase else ''
    print('%-9s %-8s %-14s %-5s %-5s %-2s %9.2f %3s %9s %8s %7s %6s %6s %7s %10s %9s %8s %6s %10s %7s %11s %8s' % (
        r['label'], r['mode'], '%sx%sx%s' % (r['seq'], r['batch'], r['accum']), r['optim'], r['ckpt'], r['prefetch'],
        ms, r['n'], r['peak_alloc_gib'], r['peak_resv_gib'], r['peak_rss_gib'], r['h2d_gb'] or '-', r['d2h_gb'] or '-',
        r['tflops'], xf, of, rs, ratio, hf, sh, pf, ratio_ph))
