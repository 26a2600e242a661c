"""Data-parallel step model: from one GPU's trace and measured collectives, the step at W GPUs.

    python3 bench/dp_model.py --trace ONE_GPU_OUT_DIR --nvlink NV.csv [--socket SOCK.csv]
        [--model qwen3-1.7b | --config config.json] [--dtype bf16|fp32] [--gpus-per-node 8]
        [--inter-gbps G --inter-lat-us L] [--overlap-slowdown F] [--bwd-slowdown F] [--fwd-slowdown F]
        [--skew-ms S] [--seq 2048 --batch 4]
        [--logs DIR] [--measured KEY=MS ...] [--out FILE]
    python3 bench/dp_model.py --selftest

Inputs. The collectives: CSVs of bench/allreduce.c (op,bytes,world,...,median_us,...), one over
NVLink (--nvlink) and one over sockets (--socket). Per op and transport, t(n) = alpha + n / beta is
fitted to them (least squares on the relative error, so that small and large sizes both count).
The compute: the trace.json that `slidecheck train ... --out DIR` writes for a 1-GPU run; per
step (the first --skip dropped, medians over the others): the end of "lm_head+loss", the end of
each backward "layer" span (L-1 .. 0), the backward "embedding" span, the optimizer span and
the step's end, all relative to the step's start. The gradient buckets are slidecheck's
(sc__bucket), their sizes from the model's shape (--model, one of slidecheck's built-ins, or an HF
--config); one communication stream serves them in this order (sc__resident_pass): [final norm |
untied head] when the head's backward ends; a tied embedding's whole gradient (the head's part)
right after it; layers L-1 .. 0, each when its backward ends; then (sc__embedding_backward_gathered)
the all-gather of every rank's dL/dx_0 (--batch x --seq rows of hidden activations, the trace's
run's; 2 or 4 bytes as --dtype) and token ids once layer 0's backward ends. Every rank then adds
all W ranks' rows to the embedding's gradient alike, on the compute stream, after the gather and
every sum: the trace's embedding backward x W. An untied embedding is never summed (the gathered
rows make it whole on every rank).

Collectives at W ranks (ring, as NCCL's tuning model counts it). From a fit at W_m ranks: the
per-hop latency a = alpha / s(W_m) and the bus bandwidth B = beta x f(W_m), where all-reduce has
s(W) = 2(W-1) hops and moves f(W) = 2(W-1)/W of the buffer per rank, reduce-scatter and
all-gather s = W-1, f = (W-1)/W. Then
    t(n, W) = (s(W) - s_inter) a_intra + s_inter a_inter + f(W) n / min(B_intra, B_inter)
with s_inter = 2(nodes-1) hops (all-reduce) or nodes-1 (the others) crossing the network and
B_inter only where nodes > 1. The latency term grows linearly with W (a ring's hops); NCCL's tree
and NVLS algorithms grow slower, so at large W this is an upper bound for small buckets. A fit at
2 ranks cannot tell a collective's fixed cost (the launch) from its per-hop cost: all of alpha is
counted per hop unless --base-us X says X us of it are paid once (an upper bound otherwise). Intra-node
(up to --gpus-per-node GPUs): the NVLink fit, its 2-GPU bus bandwidth taken for every W <= 8 (an
NVSwitch gives each GPU the same links whatever W). Inter-node: the socket fit (two processes on
one host over loopback TCP: a floor, not a cluster), and, with --inter-gbps / --inter-lat-us, an
assumed cluster network (per GPU: G Gbit/s, L us a hop), printed as an assumption.

The layers' sums go in groups (sc__grads_sum_layers, --bucket-mb as the library's, default
640 MiB): consecutive layers from L-1 down until they reach that size, and at layer 1; layer 0
alone. A group is one collective (W = 2, plain: the all-reduce of the range; else its layers'
reduce-scatters in one NCCL launch, and plain data parallel's all-gathers in a second, each counted
as one of the whole), ready when its lowest layer's backward ends.
A bucket's sum (sc__sum_chunks) at W = 2: one all-reduce; at W > 2: a reduce-scatter of the first
W (n / W) elements, an all-reduce of the remainder (none where W divides n, as for every W here at
Qwen3-1.7B), then an all-gather, one interval on the stream.
The step at W (plain data parallel): the compute stream as measured on 1 GPU; a bucket's sum
starts at max(its ready time, the previous one's end), the gather at max(layer 0's end, the last
sum's end); the embedding backward (x W) waits for the gather. The optimizer runs as slidecheck's
does: the part of the layers 1.. and the norm/head once their sums are in, the embedding's and
layer 0's after the gather and the embedding backward (one compute stream: both parts follow the
embedding backward). Exposed comm = what ends after layer 0's backward. Hidden share = the
collectives' time that overlaps a compute interval (the backward, the embedding backward, the
optimizer), over all of their time (as bench/dp_hidden.py measures it).
ZeRO-1: each bucket reduce-scattered only (plus the remainder; the same order, W = 2 included), the
gather and the embedding backward as above, then the AdamW update on 1/W of each bucket (the
measured optimizer time x share / W) in bucket order (norm/head, layers L-1 .. 0, embedding). The
updated weights' all-gathers run under the next step's forward (sc__zero_ready), in the order it
reads them (embedding, layers 0 .., norm/head), piece p's queued when the forward reaches piece
p - 2, each forward piece (its start from the trace's forward spans) waiting for its own: the
compute from then on is delayed by the largest wait.
At large W the gather grows with W (each rank receives W x batch x seq x hidden) while the
embedding's all-reduce it replaced did not: past W ~ 2 vocab / (batch x seq) it moves more bytes,
and the embedding backward grows W-fold too.
--skew-ms S: the ranks drift apart over a step (two ranks' traces on one host reached layer 0's
sum up to 4.6 ms apart; the cause is not measured) and nothing makes one wait for another before
that sum: every rank waits there for the last. S is how long after the ranks' mean the last arrives, a step on average, measured at 2
ranks (bench/dp_hidden.py, given both ranks' traces); at W it is taken as S x E[max of W normals] /
E[max of 2] (each rank's drift independent and normal: an assumption, printed), added to the step
and to what is exposed.
--overlap-slowdown F: compute that runs beside a collective takes (1 + F) as long (NCCL's kernels
share the SMs and memory); --bwd-slowdown F: every backward layer at W > 1 takes (1 + F) as long,
whatever runs beside it. The H200 runs (2026-11-26) show every layer, not only those beside a
modelled collective, 9-11% slower at 2 GPUs and 15% at 4 (collectives beside compute also run
about 1.8 times their fitted time): with --logs, the check table prints the runs' backward against the
1-GPU one (layer_metrics.csv). --fwd-slowdown F: the forward and the loss at W > 1 take (1 + F) as
long, though no collective runs beside them in plain data parallel: on two H200s at their 700 W
limit (results/dp_power_h200x2_2026-11-28, 30-step runs, the first 12 left out) the 2-rank forward
took 4.8% longer than one GPU's and the backward 5.0%, while two independent 1-GPU runs at once
lost nothing. Default 0 for all three.

Check table: the measured steps (--measured 1=177.2 2=189.1 z2=188.4 sock2=...; or --logs DIR of
bench/gpu_dp_checks.sh: speed1.log, speed2.log, speedz.log, sock2.log) against the prediction.
"""
import argparse
import csv
import functools
import json
import math
import os
import re
import statistics
import sys
import tempfile

# slidecheck's built-in shapes (sc_config_named): vocab, hidden, intermediate, layers, heads,
# kv heads, head_dim, tied, arch
MODELS = {
    'tiny': (512, 128, 352, 4, 4, 2, 48, True, 'qwen3'),
    'qwen3-0.6b': (151936, 1024, 3072, 28, 16, 8, 128, True, 'qwen3'),
    'qwen3-1.7b': (151936, 2048, 6144, 28, 16, 8, 128, True, 'qwen3'),
    'qwen2.5-0.5b': (151936, 896, 4864, 24, 14, 2, 64, True, 'qwen2'),
    'qwen2.5-1.5b': (151936, 1536, 8960, 28, 12, 2, 128, True, 'qwen2'),
    'qwen2.5-7b': (152064, 3584, 18944, 28, 28, 4, 128, False, 'qwen2'),
}
WS = [1, 2, 4, 8, 16, 64, 256]
OPS = ('allreduce', 'reduce_scatter', 'allgather')


def shape_from_config(path):
    c = json.load(open(path))
    tc = c.get('text_config', c)
    H = tc['num_attention_heads']
    return (tc['vocab_size'], tc['hidden_size'], tc['intermediate_size'], tc['num_hidden_layers'], H,
            tc.get('num_key_value_heads', H), tc.get('head_dim') or tc['hidden_size'] // H,
            bool(tc.get('tie_word_embeddings', False)), 'qwen3' if 'qwen3' in tc.get('model_type', '') else 'qwen2')


def buckets(shape):
    """element counts of slidecheck's gradient buckets, in issue order: [norm | untied head],
    layer L-1 .. 0, embedding (sc__bucket); and the layer count"""
    V, C, I, L, H, KV, D, tied, arch = shape
    qkv = (H + 2 * KV) * D
    # ln1, qkv (+ its bias: Qwen2), q/k norms (Qwen3), o, ln2, gate|up, down: sc_config_layer_offsets
    layer = C + qkv * C + (qkv if arch == 'qwen2' else 0) + (2 * D if arch == 'qwen3' else 0) + C * H * D + C + \
        3 * I * C
    head = C + (0 if tied else V * C)
    return [head] + [layer] * L + [V * C], L


# ---- collectives ----

def read_csv(path):
    rows = []
    with open(path) as f:
        hdr = f.readline().strip().split(',')
        for line in f:
            v = line.strip().split(',')
            if len(v) == len(hdr):
                rows.append(dict(zip(hdr, v)))
    return rows


def fit(points):
    """t = alpha + n / beta by least squares on the relative error: minimise sum ((alpha + n x
    - t) / t)^2 over (alpha, x = 1/beta); points (n bytes, t us) -> (alpha us, beta bytes/us)"""
    s_aa = s_ax = s_xx = s_a = s_x = 0.0
    for n, t in points:
        w = 1.0 / (t * t)
        s_aa += w
        s_ax += w * n
        s_xx += w * n * n
        s_a += w * t
        s_x += w * n * t
    det = s_aa * s_xx - s_ax * s_ax
    if len(points) < 2 or det <= 0:
        raise SystemExit('fit: need two sizes or more')
    alpha = (s_a * s_xx - s_x * s_ax) / det
    x = (s_aa * s_x - s_ax * s_a) / det
    if alpha < 0:  # latency below the resolution: the bandwidth alone, through the origin
        alpha, x = 0.0, sum(n * t / (t * t) for n, t in points) / sum(n * n / (t * t) for n, t in points)
    return alpha, 1.0 / x


def hops(op, W):
    return 2 * (W - 1) if op == 'allreduce' else W - 1


def frac(op, W):
    return (2.0 if op == 'allreduce' else 1.0) * (W - 1) / W


class Link:
    """per op: per-hop latency (us) and bus bandwidth (bytes/us) of one transport"""

    def __init__(self, name, per_op, note, base=0.0):
        self.name, self.per_op, self.note, self.base = name, per_op, note, base

    @staticmethod
    def from_csv(name, path, base=0.0):
        rows = read_csv(path)
        per_op, notes = {}, []
        for op in OPS:
            pts = [(float(r['bytes']), float(r['median_us'])) for r in rows if r['op'] == op]
            if len(pts) < 2:
                continue
            Wm = int(next(r['world'] for r in rows if r['op'] == op))
            if Wm < 2:
                raise SystemExit('%s: %s measured on %d rank: need 2 or more' % (path, op, Wm))
            alpha, beta = fit(pts)
            per_op[op] = (max(0.0, alpha - base) / hops(op, Wm), beta * frac(op, Wm))
            worst = max(abs(alpha + n / beta - t) / t for n, t in pts)
            notes.append('%s alpha %.1f us, beta %.2f GB/s (bus %.2f GB/s; %d sizes at W=%d, worst misfit %.0f%%)' % (
                op, alpha, beta / 1e3, per_op[op][1] / 1e3, len(pts), Wm, 100 * worst))
        if 'allreduce' not in per_op:
            raise SystemExit('%s: no allreduce rows' % path)
        for op in OPS:  # a ring's reduce-scatter or all-gather: half an all-reduce
            per_op.setdefault(op, per_op['allreduce'])
        return Link(name, per_op, '; '.join(notes), base)

    @staticmethod
    def assumed(gbps, lat_us):
        bw = gbps / 8.0 * 1e3  # Gbit/s -> bytes/us
        return Link('cluster', {op: (lat_us, bw) for op in OPS},
                    'ASSUMED: %g Gbit/s a GPU (%.1f GB/s bus bandwidth), %g us a hop' % (gbps, bw / 1e3, lat_us))


def coll_time(op, nbytes, W, gpn, intra, inter):
    """us for one collective of nbytes (nccl-tests' size) over W ranks, gpn a node"""
    if W < 2:
        return 0.0
    nodes = -(-W // gpn)
    s = hops(op, W)
    a_in, b_in = intra.per_op[op]
    if nodes == 1:
        return intra.base + s * a_in + frac(op, W) * nbytes / b_in
    a_x, b_x = inter.per_op[op]
    s_x = hops(op, nodes)
    return max(intra.base, inter.base) + (s - s_x) * a_in + s_x * a_x + frac(op, W) * nbytes / min(b_in, b_x)


# ---- the 1-GPU compute from a trace ----

def read_trace(path, skip):
    if os.path.isdir(path):
        path = os.path.join(path, 'trace.json')
    ev = json.load(open(path))['traceEvents']
    names = {e['tid']: e['args']['name'] for e in ev if e.get('ph') == 'M' and e.get('name') == 'thread_name'}
    comp = {t for t, n in names.items() if n in ('gpu compute', 'cpu compute')}
    steps = sorted((e for e in ev if e.get('ph') == 'X' and e.get('cat') == 'step'), key=lambda e: e['ts'])
    if len(steps) <= skip:
        raise SystemExit('%s: %d steps, none after the %d skipped' % (path, len(steps), skip))
    spans = sorted((e for e in ev if e.get('ph') == 'X' and e.get('cat') != 'step' and e['tid'] in comp),
                   key=lambda e: e['ts'])
    per = []
    for st in steps[skip:]:
        t0, t1 = st['ts'], st['ts'] + st['dur']
        inside = [e for e in spans if t0 <= e['ts'] < t1]
        head = [e for e in inside if e['name'] == 'lm_head+loss']
        lay = {e['args']['layer']: e for e in inside if e['cat'] == 'bwd' and e['name'] == 'layer'}
        emb = [e for e in inside if e['cat'] == 'bwd' and e['name'] == 'embedding']
        fwd = {e['args']['layer']: e for e in inside if e['cat'] == 'fwd' and e['name'] in ('embedding', 'layer')}
        opt = [e for e in inside if e['cat'] == 'opt']
        if not head or not lay or not emb or not opt:
            continue
        L = max(lay) + 1
        if sorted(lay) != list(range(L)):
            continue
        end = lambda e: (e['ts'] + e['dur'] - t0) / 1e3  # ms from the step's start
        # the forward's pieces' starts: the embedding, layers 0 .., the head (evenly spread where
        # the trace has no forward spans)
        f0 = [fwd[i]['ts'] for i in range(-1, L) if i in fwd] + [head[0]['ts']]
        if len(f0) != L + 2:
            f0 = [t0 + (head[0]['ts'] - t0) * i / (L + 1) for i in range(L + 2)]
        per.append({'fwd': [(x - t0) / 1e3 for x in f0], 'head': end(head[-1]), 'layers': [end(lay[l]) for l in range(L)],
                    'dur': [lay[l]['dur'] / 1e3 for l in range(L)], 'emb': end(emb[-1]),
                    'embdur': emb[-1]['dur'] / 1e3,
                    'opt0': (opt[0]['ts'] - t0) / 1e3, 'opt': sum(e['dur'] for e in opt) / 1e3,
                    'step': st['dur'] / 1e3})
    if not per:
        raise SystemExit('%s: no step with the lm_head+loss, backward layer, embedding and optimizer spans' % path)
    med = lambda f: statistics.median(f(p) for p in per)
    L = len(per[0]['layers'])
    return {'L': L, 'n': len(per), 'head': med(lambda p: p['head']), 'emb': med(lambda p: p['emb']),
            'fwd': [med(lambda p: p['fwd'][i]) for i in range(L + 2)],
            'embdur': med(lambda p: p['embdur']),
            'layers': [med(lambda p: p['layers'][l]) for l in range(L)],
            'dur': [med(lambda p: p['dur'][l]) for l in range(L)],
            'opt0': med(lambda p: p['opt0']), 'opt': med(lambda p: p['opt']), 'step': med(lambda p: p['step'])}


# ---- the step ----

def merge(iv):
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def overlap(a0, a1, iv):
    return sum(max(0.0, min(a1, b1) - max(a0, b0)) for b0, b1 in iv)


def ready_times(tr, slow):
    """bucket ready times (ms): the head's end, then layers L-1 .. 0 (each stretched by slow[l]);
    and the end of layer 0's backward"""
    L = tr['L']
    ready, t, prev = [tr['head']], tr['head'], tr['head']
    for l in range(L - 1, -1, -1):
        gap = tr['layers'][l] - tr['dur'][l] - prev  # launch gaps as measured
        prev = tr['layers'][l]
        t += gap + tr['dur'][l] * (1.0 + slow[l])
        ready.append(t)
    return ready, t


def layer_groups(sizes, L, eb, cap):
    """the layers' buckets (1 .. L: layers L-1 .. 0) in the groups slidecheck sums them in
    (sc__grads_sum_layers): consecutive layers from L-1 down until they reach cap bytes or are
    as many as the layers below them, and at layer 1; layer 0 alone"""
    groups, cur, nb = [], [], 0
    for b in range(1, L + 1):
        cur.append(b)
        nb += sizes[b] * eb
        if L - b <= 1 or nb >= cap or len(cur) >= L - b:
            groups.append(cur)
            cur, nb = [], 0
    return groups


def sum_time(cost, n, W, eb, gather, ce=False):
    """ms of sc__sum_chunks: n gradient elements (eb bytes each) summed over W ranks. W = 2 and
    gather, or the copy engines' sums (ce: bench/allreduce.c --copy-engines 1 timed the chunks' sums
    and their gather as its all-reduce) and gather: one all-reduce; else a reduce-scatter of W
    (n / W), an all-reduce of the remainder, then (gather; not ZeRO-1) the all-gather of the chunks"""
    if W < 2:
        return 0.0
    if (W == 2 or ce) and gather:
        return cost('allreduce', n * eb)
    ch = n // W
    t = cost('reduce_scatter', ch * W * eb) if ch else 0.0
    if n > ch * W:
        t += cost('allreduce', (n - ch * W) * eb)
    if ch and gather:
        t += cost('allgather', ch * W * eb)
    return t


def gather_time(m, W, cost):
    """ms of the all-gather of every rank's dL/dx_0 (rows x hidden activations) and token ids"""
    if W < 2:
        return 0.0
    return cost('allgather', W * m['rows'] * m['hidden'] * m['ab']) + cost('allgather', W * m['rows'] * 4)


def gathers(m, W):
    """does slidecheck gather dL/dx_0 at W ranks (sc__emb_gathered)? over NCCL always, at any W and
    shape (one summation order for resident and slide mode)"""
    return W > 1


ZERO_AHEAD = 2  # the header's SC__ZERO_AHEAD


def zero_gathers(tr, m, W, cost):
    """ZeRO-1: the last update's all-gathers in the order the forward reads the weights (the
    embedding, layers 0 .., the norm / head), each forward piece waiting for its own; piece p's is
    queued when the forward reaches piece p - ZERO_AHEAD (pieces 0 .. ZERO_AHEAD at the step's
    start; sc__zero_ready): their intervals, and the delay they add to the forward"""
    sizes, L, eb = m['sizes'], tr['L'], m['eb']
    iv, t, d = [], 0.0, 0.0
    for i, b in enumerate([L + 1] + [L - l for l in range(L)] + [0]):
        if sizes[b] // W:
            t0 = max(t, tr['fwd'][i - ZERO_AHEAD] + d if i > ZERO_AHEAD else 0.0)
            iv.append((t0, t0 + cost('allgather', sizes[b] // W * W * eb)))
            t = iv[-1][1]
        d = max(d, t - tr['fwd'][i])  # piece i starts at fwd[i] + d, once its gather is done
    return iv, d


def simulate(tr, m, W, mode, cost, F, U=0.0, V=0.0):
    """one step at W ranks: (step ms, comm intervals, compute intervals, end of layer 0's backward).
    m: the model (sizes: bucket elements, tied, rows a rank, hidden, eb and ab: bytes of a gradient
    and of an activation); cost(op, bytes) -> ms; F: --overlap-slowdown, U: --bwd-slowdown, V:
    --fwd-slowdown (the forward and the loss, up to the head's end, stretched by 1 + V at W > 1)"""
    sizes, L, eb = m['sizes'], tr['L'], m['eb']
    N = float(sum(sizes))
    tail = tr['step'] - tr['opt0'] - tr['opt']
    gap = tr['opt0'] - tr['emb']  # between the embedding backward and the optimizer
    lead = tr['emb'] - tr['embdur'] - tr['layers'][0]  # between layer 0's backward and the embedding's
    # the communication stream's order: [norm | head], a tied embedding's head part (when gathering),
    # layers L-1 .. 0; then the gather
    g = gathers(m, W)
    order = [[0]] + ([[L + 1]] if m['tied'] and g else []) + layer_groups(sizes, L, eb, m.get('bucket', 0))
    slow = [U if W > 1 else 0.0] * L
    zg, zd = zero_gathers(tr, m, W, cost) if mode != 'dp' and W > 1 else ([], 0.0)
    for _ in range(8 if F > 0 and W > 1 else 1):  # fixed point: the layers a collective runs beside are slower
        ready, tb = ready_times(tr, slow)
        fd = V * tr['head'] if W > 1 else 0.0  # the forward and the loss, slower at W > 1
        ready, tb = [x + zd + fd for x in ready], tb + zd + fd  # ZeRO-1: the forward's wait for the gathers
        comm, t, done = list(zg), zg[-1][1] if zg else 0.0, {}
        if W > 1:
            for grp in order:
                s = max(ready[0] if grp == [L + 1] else ready[max(grp)], t)
                t = s + sum_time(cost, sum(sizes[b] for b in grp), W, eb, mode == 'dp', m.get('ce', False))
                comm.append((s, t))
                for b in grp:
                    done[b] = t
            if g:
                s = max(tb, t)  # every rank's dL/dx_0, once layer 0's backward has written it
                t = s + gather_time(m, W, cost)
                comm.append((s, t))
        comp = [(0.0, tb)]
        c = tb + lead
        if g:
            c = max(c, t)  # the embedding backward waits for every sum and the gather
            comp.append((c, c + tr['embdur'] * W))  # every rank's rows
            c += tr['embdur'] * W + gap
        else:  # one GPU: its own rows
            comp.append((c, c + tr['embdur']))
            c += tr['embdur'] + gap
        if mode == 'dp' or W == 1:
            fa = sum(sizes[:L]) / N  # the norm/head and layers L-1 .. 1: their sums are in first
            c = max([c] + [e for b, e in done.items() if b < L])
            comp.append((c, c + tr['opt'] * fa))
            c = max([c + tr['opt'] * fa] + [e for _, e in comm])  # layer 0 and the embedding: after the gather
            comp.append((c, c + tr['opt'] * (1 - fa)))
            end = c + tr['opt'] * (1 - fa)
        else:  # ZeRO-1: update 1/W of each bucket (the next step's forward gathers them)
            for b, n in enumerate(sizes):
                if b == L and done:
                    c = max(c, max(done.values()))  # layer 0's and the embedding's chunks: every sum in
                u = tr['opt'] * n / N / W
                comp.append((c, c + u))
                c += u
            end = c
        if F > 0 and W > 1:
            ci = merge(comm)
            nslow = []
            for l in range(L):
                b1 = ready[L - l]
                b0 = b1 - tr['dur'][l] * (1.0 + slow[l])
                nslow.append(U + F * overlap(b0, b1, ci) / max(b1 - b0, 1e-9))
            slow = nslow
    return end + tail, comm, comp, tb


@functools.lru_cache(maxsize=None)
def max_normal(W):
    """E[the largest of W independent standard normals] (0 at W = 1, 0.564 at 2), by the rectangle
    rule over [-10, 10]: E = integral of x W phi(x) Phi(x)^(W-1)"""
    if W < 2:
        return 0.0
    h, e = 0.001, 0.0
    for i in range(-10000, 10001):
        x = i * h
        e += x * W * math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi) * (0.5 * (1 + math.erf(x / math.sqrt(2)))) ** (W - 1)
    return e * h


def skew_ms(W, S):
    """the last rank's arrival at the last sum after the ranks' mean, at W ranks, from S measured at 2
    (--skew-ms, bench/dp_hidden.py): each rank's drift over a step taken as independent and normal"""
    return S * max_normal(W) / max_normal(2) if S and W > 1 else 0.0


def summarize(tr, m, W, mode, cost, F, U=0.0, S=0.0, V=0.0):
    step, comm, comp, tb = simulate(tr, m, W, mode, cost, F, U, V)
    busy = sum(b - a for a, b in comm)
    ci = merge(comp)
    hid = sum(overlap(a, b, ci) for a, b in comm)
    k = skew_ms(W, S)  # every rank waits for the last at layer 0's sum: nothing hides it
    step += k
    exposed = max(0.0, max((b for _, b in comm), default=0.0) - tb) + k
    return {'step': step, 'comm': busy, 'hidden': hid / busy if busy > 0 else float('nan'), 'exposed': exposed,
            'gather': gather_time(m, W, cost) if gathers(m, W) else 0.0}


# ---- measured steps ----

def median_step(path):
    for line in open(path):
        if line.startswith('summary:'):
            m = re.search(r'median step ([0-9.]+) ms', line)
            if m:
                return float(m.group(1))
    return None


def ranks_of(path, default):
    m = re.search(r'data parallel: (\d+) ranks', open(path).read())
    return int(m.group(1)) if m else default


def measured_from_logs(d, ce=False):
    """{key: ms} from bench/gpu_dp_checks.sh's logs: 1 (speed1), W (the sums modelled: speed2, the default's
    copy engines, with ce; else speed2n, --dp-sums nccl, where it ran), zW (speedz), sockW (sock2)"""
    out = {}
    dp = 'speed2.log' if ce or not os.path.exists(os.path.join(d, 'speed2n.log')) else 'speed2n.log'
    for name, key in (('speed1.log', '1'), (dp, ''), ('speedz.log', 'z'), ('sock2.log', 'sock')):
        p = os.path.join(d, name)
        if os.path.exists(p):
            ms = median_step(p)
            if ms is not None:
                out[key + str(ranks_of(p, 2)) if key != '1' else '1'] = ms
    return out


# ---- the report ----

def make_cost(W, gpn, intra, inter):
    """ms of one collective of nbytes at W ranks"""
    return lambda op, nbytes: coll_time(op, nbytes, W, gpn, intra, inter) / 1e3


def report(args, tr, m, L, intra, inters, out):
    sizes, gpn = m['sizes'], args.gpus_per_node
    say = lambda s='': out.write(s + '\n')
    say('compute (1 GPU trace, median of %d steps): step %.2f ms; head+loss ends %.2f, backward %d layers %.2f ms '
        '(each %.2f-%.2f), embedding backward %.2f ms (ends %.2f), optimizer %.2f ms' % (
            tr['n'], tr['step'], tr['head'], L, tr['layers'][0] - tr['head'], min(tr['dur']), max(tr['dur']),
            tr['embdur'], tr['emb'], tr['opt']))
    say('buckets: %d (norm/head %d, %d layers of %d, embedding %d elements%s; %s gradients, %.3f GB a step)' % (
        len(sizes), sizes[0], L, sizes[1], sizes[-1], ': tied, its head part summed at the head\'s end' if m['tied']
        else ': untied, never summed', args.dtype, sum(sizes) * m['eb'] / 1e9))
    grp = layer_groups(sizes, L, m['eb'], m['bucket'])
    say('the layers\' sums go in %d groups (--bucket-mb %d: %s layers)' % (
        len(grp), args.bucket_mb, ' + '.join(str(len(x)) for x in grp)))
    say('after the backward: all-gather of every rank\'s dL/dx_0, batch %d x seq %d x hidden %d (%.1f MB a rank) '
        'and ids, then the embedding backward over W ranks\' rows (W x %.2f ms)' % (
            args.batch, args.seq, m['hidden'], m['rows'] * m['hidden'] * m['ab'] / 1e6, tr['embdur']))
    say('intra-node (%s, up to %d GPUs a node): %s' % (intra.name, gpn, intra.note))
    for x in inters:
        say('inter-node (%s): %s' % (x.name, x.note))
    say('collectives: ring; t = (hops - inter hops) x a_intra + inter hops x a_inter + f(W) x bytes / min(B_intra, '
        'B_inter); hops 2(W-1) (all-reduce) or W-1; the latency term grows linearly with W; %s' % (
            'of each fitted alpha %.1f us paid once, the rest per hop' % args.base_us if args.base_us else
            'all of each fitted alpha counted per hop (an upper bound at large W; --base-us X pays X us of it once)'))
    if args.overlap_slowdown:
        say('ASSUMED: compute beside a collective %.1f%% slower (--overlap-slowdown)' % (100 * args.overlap_slowdown))
    if args.bwd_slowdown:
        say('ASSUMED: every backward layer %.1f%% slower at W > 1 (--bwd-slowdown)' % (100 * args.bwd_slowdown))
    if args.fwd_slowdown:
        say('ASSUMED: the forward and the loss %.1f%% slower at W > 1 (--fwd-slowdown)' % (100 * args.fwd_slowdown))
    if args.skew_ms:
        say('ASSUMED: the last rank reaches the last sum %.2f ms after the ranks\' mean at 2 ranks (--skew-ms), '
            'each rank\'s drift independent and normal: x E[max of W normals] / E[max of 2] at W (%s)' % (
                args.skew_ms, ', '.join('%d: %.2f ms' % (W, skew_ms(W, args.skew_ms)) for W in args.ws if W > 1)))
    say()
    say('%5s %5s %-10s %-6s %10s %8s %7s %9s %9s %9s' % ('W', 'nodes', 'transport', 'mode', 'step_ms', 'scaling',
                                                          'hidden', 'exposed', 'comm_ms', 'gather_ms'))
    pred = {}
    for W in args.ws:
        nodes = -(-W // gpn)
        for x in (inters if nodes > 1 else [None]):
            tname = '-' if W == 1 else intra.name if nodes == 1 else x.name
            for mode in ('dp', 'zero1'):
                if W == 1 and mode == 'zero1':
                    continue
                r = summarize(tr, m, W, mode, make_cost(W, gpn, intra, x or intra), args.overlap_slowdown,
                              args.bwd_slowdown, args.skew_ms, args.fwd_slowdown)
                pred[(W, tname, mode)] = r['step']
                say('%5d %5d %-10s %-6s %10.2f %7.3fx %7s %9.2f %9.2f %9.2f' % (
                    W, nodes, tname, mode, r['step'], W * pred[(1, '-', 'dp')] / r['step'],
                    '%.1f%%' % (100 * r['hidden']) if W > 1 else '-', r['exposed'], r['comm'], r['gather']))
    return pred


def bwd_layers_ms(path, skip):
    """the backward layers' ms a step, median over the steps after skip, from a run's layer_metrics.csv"""
    per = {}
    for r in csv.DictReader(open(path)):
        if int(r['step']) >= skip:
            per.setdefault(int(r['step']), []).append(float(r['bwd_ms']))
    return statistics.median(sum(v) for v in per.values()) if per else None


def check_table(args, tr, m, intra, socket, meas, out):
    say = lambda s='': out.write(s + '\n')
    if not meas:
        say('\ncheck: no measured steps (--measured KEY=MS or --logs DIR)')
        return
    say('\ncheck: measured against predicted (the 1 GPU trace\'s compute; W ranks on one node over NVLink, '
        '"sock" two nodes over sockets)')
    say('%-8s %5s %-10s %-6s %11s %12s %8s' % ('run', 'W', 'transport', 'mode', 'measured', 'predicted', 'error'))
    for key in sorted(meas, key=lambda k: (len(k), k)):
        mm = re.fullmatch(r'(z|sock)?(\d+)', key)
        if not mm:
            raise SystemExit('--measured %s: keys are W, zW (ZeRO-1) or sockW (two nodes over sockets)' % key)
        kind, W = mm.group(1) or '', int(mm.group(2))
        mode = 'zero1' if kind == 'z' else 'dp'
        if kind == 'sock':
            if socket is None:
                say('%-8s %5d   (no --socket CSV: not predicted)' % (key, W))
                continue
            cost, tname = make_cost(W, 1, socket, socket), 'socket'  # one GPU a "node"
        else:
            cost, tname = make_cost(W, args.gpus_per_node, intra, intra), intra.name if W > 1 else '-'
        p = summarize(tr, m, W, mode, cost, args.overlap_slowdown, args.bwd_slowdown, args.skew_ms,
                      args.fwd_slowdown)['step']
        say('%-8s %5d %-10s %-6s %8.2f ms %9.2f ms %+7.1f%%' % (key, W, tname, mode, meas[key], p,
                                                               100 * (p - meas[key]) / meas[key]))
    # what --overlap-slowdown and --bwd-slowdown stand for, where the logs' runs wrote layer_metrics.csv
    one = os.path.join(args.logs or '', 'speed1', 'layer_metrics.csv')
    for name in ('speed2', 'speedz'):
        other = os.path.join(args.logs or '', name, 'layer_metrics.csv')
        if args.logs and os.path.exists(one) and os.path.exists(other):
            a, b = bwd_layers_ms(one, args.skip), bwd_layers_ms(other, args.skip)
            if a and b:
                say('measured: %s\'s backward layers %.2f ms a step against 1 GPU\'s %.2f: %+.1f%%' % (
                    name, b, a, 100 * (b / a - 1)))


def main(argv=None):
    ap = argparse.ArgumentParser(description='data-parallel step model (see the file\'s docstring)')
    ap.add_argument('--trace', help='a 1-GPU run\'s --out DIR (or its trace.json)')
    ap.add_argument('--nvlink', help='bench/allreduce.c CSV over NVLink (one node)')
    ap.add_argument('--socket', help='bench/allreduce.c CSV over sockets (two nodes)')
    ap.add_argument('--model', default='qwen3-1.7b', help='a slidecheck built-in: ' + ', '.join(MODELS))
    ap.add_argument('--config', help='an HF config.json instead of --model')
    ap.add_argument('--dtype', default='bf16', choices=('bf16', 'fp32'), help='gradients and weights (bytes)')
    ap.add_argument('--gpus-per-node', type=int, default=8)
    ap.add_argument('--inter-gbps', type=float, help='assumed cluster network: Gbit/s a GPU')
    ap.add_argument('--inter-lat-us', type=float, help='assumed cluster network: us a hop')
    ap.add_argument('--overlap-slowdown', type=float, default=0.0,
                    help='compute beside a collective takes (1 + F) as long')
    ap.add_argument('--bwd-slowdown', type=float, default=0.0,
                    help='every backward layer at W > 1 takes (1 + F) as long')
    ap.add_argument('--fwd-slowdown', type=float, default=0.0,
                    help='the forward and the loss at W > 1 take (1 + F) as long')
    ap.add_argument('--skew-ms', type=float, default=0.0,
                    help='measured at 2 ranks (bench/dp_hidden.py with both ranks\' traces): how long after the '
                    'ranks\' mean the last reaches the last sum, a step on average')
    ap.add_argument('--seq', type=int, default=2048, help='the trace\'s run: tokens a sequence')
    ap.add_argument('--batch', type=int, default=4, help='the trace\'s run: sequences a rank')
    ap.add_argument('--base-us', type=float, default=0.0,
                    help='the part of each fitted alpha that is paid once a collective, not per hop')
    ap.add_argument('--skip', type=int, default=2, help='warm-up steps of the trace to drop')
    ap.add_argument('--copy-engines', action='store_true',
                    help='the --nvlink CSV is bench/allreduce.c --copy-engines 1\'s: a bucket\'s sum with its gather is '
                    'one all-reduce at any W (the library\'s default within a host)')
    ap.add_argument('--bucket-mb', type=int, default=640,
                    help='as train --bucket-mb: the layers summed by one NCCL launch up to this many MiB (0: one a layer)')
    ap.add_argument('--ws', default=','.join(map(str, WS)))
    ap.add_argument('--logs', help='bench/gpu_dp_checks.sh output dir: measured steps from its logs')
    ap.add_argument('--measured', nargs='*', default=[], help='KEY=MS: 1, 2 (W GPUs), z2 (ZeRO-1), sock2')
    ap.add_argument('--out', help='also write the tables here')
    ap.add_argument('--selftest', action='store_true')
    args = ap.parse_args(argv)
    if args.selftest:
        return selftest()
    if not args.trace or not args.nvlink:
        ap.error('--trace and --nvlink are needed (or --selftest)')
    args.ws = [int(w) for w in args.ws.split(',')]
    shape = shape_from_config(args.config) if args.config else MODELS.get(args.model)
    if shape is None:
        ap.error('--model: one of ' + ', '.join(MODELS))
    sizes, L = buckets(shape)
    eb = 2 if args.dtype == 'bf16' else 4
    m = {'sizes': sizes, 'tied': shape[7], 'rows': args.batch * args.seq, 'hidden': shape[1],
         'eb': eb, 'ab': eb, 'bucket': args.bucket_mb * 1048576, 'ce': args.copy_engines}
    tr = read_trace(args.trace, args.skip)
    if tr['L'] != L:
        raise SystemExit('the trace has %d layers, the model %d: pass the run\'s --model or --config' % (tr['L'], L))
    intra = Link.from_csv('nvlink', args.nvlink, args.base_us)
    socket = Link.from_csv('socket', args.socket, args.base_us) if args.socket else None
    inters = [socket] if socket else []
    if (args.inter_gbps is None) != (args.inter_lat_us is None):
        ap.error('--inter-gbps and --inter-lat-us go together')
    if args.inter_gbps is not None:
        inters.append(Link.assumed(args.inter_gbps, args.inter_lat_us))
    if not inters:
        inters.append(Link.assumed(400.0, 10.0))
        inters[-1].note += ' (default: no --socket CSV and no --inter-gbps)'
    meas = measured_from_logs(args.logs, args.copy_engines) if args.logs else {}
    for kv in args.measured:
        k, _, v = kv.partition('=')
        meas[k] = float(v)

    class Tee:
        def __init__(self, files):
            self.files = files

        def write(self, s):
            for f in self.files:
                f.write(s)

    files = [sys.stdout] + ([open(args.out, 'w')] if args.out else [])
    out = Tee(files)
    report(args, tr, m, L, intra, inters, out)
    check_table(args, tr, m, intra, socket, meas, out)
    for f in files[1:]:
        f.close()
    return 0


# ---- a check of the model on numbers worked out by hand ----

def selftest():
    fails, passes = [], []

    def ok(cond, what):
        print('%s %s' % ('PASS' if cond else 'FAIL', what))
        (passes if cond else fails).append(what)

    d = tempfile.mkdtemp(prefix='dp_model_')
    # the fit recovers alpha and beta from exact points, 8 KiB .. 1 GiB
    a0, b0 = 12.5, 40e3  # us, bytes/us (40 GB/s)
    pts = [(float(8192 << k), a0 + (8192 << k) / b0) for k in range(18)]
    a, b = fit(pts)
    ok(abs(a - a0) < 1e-6 * a0 and abs(b - b0) < 1e-6 * b0, 'fit: alpha %.6f us, beta %.6f GB/s from exact points' % (
        a, b / 1e3))
    # collectives: AR at 2 ranks 4 bytes/us alg (bus 4), RS and AG 8 alg (bus 4), no latency
    for name, alg in (('nv.csv', {'allreduce': 4.0, 'reduce_scatter': 8.0, 'allgather': 8.0}),):
        with open(os.path.join(d, name), 'w') as f:
            f.write('op,bytes,world,nodes,transport_hint,median_us,algbw_GBps,busbw_GBps,n\n')
            for op in OPS:
                for n in (2000, 12000, 24000, 1 << 20):
                    f.write('%s,%d,2,1,nvlink,%.6f,%.6f,%.6f,20\n' % (op, n, n / alg[op], alg[op] / 1e3,
                                                                   alg[op] * frac(op, 2) / 1e3))
    nv = Link.from_csv('nvlink', os.path.join(d, 'nv.csv'))
    ok(all(abs(nv.per_op[op][1] - 4.0) < 1e-9 and nv.per_op[op][0] == 0.0 for op in OPS),
       'CSV fit: bus bandwidth 4 bytes/us for every op, no latency')
    # W scaling: ring all-reduce at W = 4 in one node moves 2 x 3/4 of the buffer at the bus bandwidth
    ok(abs(coll_time('allreduce', 12000, 4, 8, nv, nv) - 1.5 * 12000 / 4.0) < 1e-9, 'all-reduce at W = 4: 2(W-1)/W')
    lat = Link('x', {op: (2.0, 4.0) for op in OPS}, '')
    net = Link('y', {op: (10.0, 1.0) for op in OPS}, '')
    t = coll_time('allreduce', 16000, 16, 8, lat, net)  # 30 hops, 2 across nodes; the network's bandwidth
    ok(abs(t - (28 * 2.0 + 2 * 10.0 + 2 * 15 / 16 * 16000 / 1.0)) < 1e-9, 'two nodes: inter hops and min bandwidth')
    # a synthetic 1-GPU trace: 2 layers; head ends 10 ms, layer 1 10..14, layer 0 14..18, embedding
    # 18..19, optimizer 19..21, step 22 ms; 4 steps, the first 2 skipped (one of them odd)
    ev = [{'ph': 'M', 'pid': 1, 'tid': 0, 'name': 'thread_name', 'args': {'name': 'gpu compute'}},
          {'ph': 'M', 'pid': 1, 'tid': 1000000, 'name': 'thread_name', 'args': {'name': 'steps'}}]
    for s in range(4):
        t0 = 100000.0 * s
        k = 3.0 if s == 0 else 1.0
        X = lambda name, cat, a, b, layer=-1: {'ph': 'X', 'pid': 1, 'tid': 0, 'name': name, 'cat': cat,
                                               'ts': t0 + a * 1e3 * k, 'dur': (b - a) * 1e3 * k,
                                               'args': {'layer': layer}}
        ev.append({'ph': 'X', 'pid': 1, 'tid': 1000000, 'name': 'step %d' % s, 'cat': 'step', 'ts': t0,
                   'dur': 22e3 * k, 'args': {}})
        ev += [X('embedding', 'fwd', 0, 1), X('layer', 'fwd', 1, 4, 0), X('layer', 'fwd', 4, 7, 1),
               X('lm_head+loss', 'loss', 7, 10), X('layer', 'bwd', 10, 14, 1), X('layer', 'bwd', 14, 18, 0),
               X('embedding', 'bwd', 18, 19), X('optimizer', 'opt', 19, 21)]
    os.makedirs(os.path.join(d, 'one'))
    json.dump({'traceEvents': ev}, open(os.path.join(d, 'one', 'trace.json'), 'w'))
    tr = read_trace(os.path.join(d, 'one'), 2)
    ok(tr['L'] == 2 and tr['head'] == 10 and tr['layers'] == [18, 14] and tr['emb'] == 19 and tr['opt'] == 2 and
       tr['step'] == 22, 'trace: head 10, layers end 14 and 18, embedding 19, optimizer 2, step 22 ms')
    ok(tr['embdur'] == 1, 'trace: the embedding backward 1 ms')
    # buckets (elements): norm 1000, layers 6000 each, embedding 12000 (tied); bf16: 2 bytes; a
    # rank's dL/dx_0: 100 rows of 10 (2000 bytes) and 100 ids (400 bytes)
    m = {'sizes': [1000, 6000, 6000, 12000], 'tied': True, 'rows': 100, 'hidden': 10, 'eb': 2, 'ab': 2}
    ok(not gathers(m, 1) and gathers(m, 2) and gathers(m, 24) and gathers(m, 256),
       'the gather of dL/dx_0 at every W > 1, past twice the vocabulary\'s bytes too (24 x 200 > 2 x 2400 a column)')
    cost = lambda op, nb: coll_time(op, nb, 2, 8, nv, nv) / 1e3
    r1 = summarize(tr, m, 1, 'dp', cost, 0.0)
    ok(abs(r1['step'] - 22.0) < 1e-9, 'W = 1: the measured step (22 ms): %.4f' % r1['step'])
    # how a bucket is summed: W = 2 one all-reduce; W > 2 (and ZeRO-1) reduce-scatter of W (n / W),
    # the remainder's all-reduce, the all-gather (not ZeRO-1)
    calls = []
    rec = lambda op, nb: calls.append((op, nb)) or 0.0
    sum_time(rec, 10, 2, 2, True), sum_time(rec, 10, 2, 2, False), sum_time(rec, 10, 4, 2, True)
    sum_time(rec, 10, 4, 2, False), sum_time(rec, 10, 4, 2, True, True), sum_time(rec, 10, 4, 2, False, True)
    ok(calls == [('allreduce', 20), ('reduce_scatter', 20), ('reduce_scatter', 16), ('allreduce', 4),
                 ('allgather', 16), ('reduce_scatter', 16), ('allreduce', 4), ('allreduce', 20),
                 ('reduce_scatter', 16), ('allreduce', 4)],
       'sums: W = 2 all-reduce, ZeRO-1 reduce-scatter; W = 4 reduce-scatter + remainder (+ all-gather); '
       'the copy engines one all-reduce')
    # by hand, W = 2: all-reduces 0.5 ms (norm), 6 (the tied embedding's head part), 3 (layers):
    # [10, 10.5], [10.5, 16.5], [16.5, 19.5], [19.5, 22.5]; the gather (4000 + 800 bytes, 0.5 + 0.1
    # ms) [22.5, 23.1]; the embedding backward over 2 ranks' rows 2 ms: 25.1; the optimizer's 28%
    # (0.56 ms) and the rest (1.44): 27.1; + 1
    r = summarize(tr, m, 2, 'dp', cost, 0.0)
    ok(abs(r['step'] - 28.1) < 1e-9, 'plain data parallel, W = 2: step 28.1 ms by hand: %.4f' % r['step'])
    ok(abs(r['exposed'] - 5.1) < 1e-9, 'exposed: 23.1 - 18 = 5.1 ms: %.4f' % r['exposed'])
    ok(abs(r['hidden'] - 8.0 / 13.1) < 1e-9, 'hidden: 8 of 13.1 ms beside the backward: %.2f%%' % (
        100 * r['hidden']))
    ok(abs(r['gather'] - 0.6) < 1e-9, 'the gather of dL/dx_0 and the ids: 0.6 ms: %.4f' % r['gather'])
    # untied: no early embedding sum, the embedding never summed: [10, 10.5], [14, 17], [18, 21],
    # the gather [21, 21.6], the embedding backward 23.6, the optimizer 25.6, + 1
    u = dict(m, tied=False)
    r = summarize(tr, u, 2, 'dp', cost, 0.0)
    ok(abs(r['step'] - 26.6) < 1e-9, 'untied head, W = 2: step 26.6 ms by hand: %.4f' % r['step'])
    ok(tr['fwd'] == [0, 1, 4, 7], 'trace: the forward pieces start at 0, 1, 4, 7 ms')
    # ZeRO-1, W = 2: the last update's all-gathers first, in the forward's order: embedding [0, 3],
    # layer 0 [3, 4.5], layer 1 [4.5, 6], norm [6, 6.25]; layer 0's forward (at 1) waits to 4.5: all
    # compute 3.5 ms later. Reduce-scatters [13.5, 13.75], [13.75, 16.75] (embedding), [17.5, 19],
    # [21.5, 23]; the gather [23, 23.6], the embedding backward to 25.6; updates 0.04, 0.24, 0.24,
    # 0.48: 26.6; + 1
    z = summarize(tr, m, 2, 'zero1', cost, 0.0)
    ok(abs(z['step'] - 27.6) < 1e-9, 'ZeRO-1, W = 2: step 27.6 ms by hand: %.4f' % z['step'])
    # fast collectives: the step is the 1-GPU step plus the second rank's rows; all but layer 0's
    # sum and the gather (after the backward, nothing beside them) hidden: 3.8 of 5.48 ns a byte
    fast = lambda op, nb: 1e-7 * nb
    r = summarize(tr, m, 2, 'dp', fast, 0.0)
    ok(abs(r['step'] - 23.0) < 0.02 and abs(r['hidden'] - 3.8 / 5.48) < 1e-9,
       'fast collectives: step %.3f ms, hidden %.1f%%' % (r['step'], 100 * r['hidden']))
    # a slowdown beside collectives lengthens the step, never shortens it; --bwd-slowdown 0.1
    # stretches both layers by 0.4 ms
    r2 = summarize(tr, m, 2, 'dp', cost, 0.1)
    ok(r2['step'] >= 28.1 - 1e-9, '--overlap-slowdown 0.1: step %.3f ms >= 28.1' % r2['step'])
    r3 = summarize(tr, m, 2, 'dp', fast, 0.0, 0.1)
    ok(abs(r3['step'] - 23.8) < 0.02, '--bwd-slowdown 0.1, fast collectives: step %.3f ms (23.8)' % r3['step'])
    # the ranks' skew: E[max] of 2 normals is 1 / sqrt(pi); of 4, 1.0294; S at 2 ranks adds S, at 4
    # S x 1.0294 sqrt(pi) (1.8246 S), nothing at 1
    ok(abs(max_normal(2) - 1 / math.sqrt(math.pi)) < 1e-6 and abs(max_normal(4) - 1.029375) < 1e-5 and
       max_normal(1) == 0.0, 'E[max of W normals]: %.6f at 2, %.6f at 4' % (max_normal(2), max_normal(4)))
    # --fwd-slowdown 0.1: the forward and loss (to the head's end, 10 ms) 1 ms longer at W = 2, every
    # later time with them; nothing at W = 1
    r5, r6 = summarize(tr, m, 2, 'dp', fast, 0.0, 0.0, 0.0, 0.1), summarize(tr, m, 1, 'dp', fast, 0.0, 0.0, 0.0, 0.1)
    ok(abs(r5['step'] - (r['step'] + 1.0)) < 1e-9 and abs(r6['step'] - 22.0) < 1e-9,
       '--fwd-slowdown 0.1, fast collectives: step %.3f ms (%.3f + 1), W = 1 %.3f (22)' % (r5['step'], r['step'], r6['step']))
    r4 = summarize(tr, m, 2, 'dp', cost, 0.0, 0.0, 0.5)
    ok(abs(r4['step'] - 28.6) < 1e-9 and abs(r4['exposed'] - 5.6) < 1e-9,
       '--skew-ms 0.5, W = 2: step 28.1 + 0.5 ms, exposed 5.1 + 0.5: %.4f, %.4f' % (r4['step'], r4['exposed']))
    ok(abs(skew_ms(4, 0.5) - 0.5 * 1.029375 * math.sqrt(math.pi)) < 1e-5 and skew_ms(1, 0.5) == 0.0,
       '--skew-ms 0.5 at 4 ranks: %.4f ms, at 1: 0' % skew_ms(4, 0.5))
    # the layers' groups: 5 layers of 12000 bytes, 30000 a group: layers 4, 3, 2 (36000), 1, 0; at
    # with a cap of one layer, one a layer; the 2-layer model above: 1, 0 whatever the cap
    sz = [1000] + [6000] * 5 + [12000]
    # without a cap: layers 4, 3, 2 (as many as below them: 1, 0), then 1, then 0
    ok(layer_groups(sz, 5, 2, 30000) == [[1, 2, 3], [4], [5]] and
       layer_groups(sz, 5, 2, 1) == [[1], [2], [3], [4], [5]] and layer_groups(m["sizes"], 2, 2, 1e12) == [[1], [2]] and
       layer_groups(sz, 5, 2, 1e12) == [[1, 2, 3], [4], [5]] and
       layer_groups([1000] + [6000] * 9 + [12000], 9, 2, 1e12) == [[1, 2, 3, 4, 5], [6, 7], [8], [9]],
       'layer groups: up to the cap or the layers below, layer 1 closes one, layer 0 alone')
    # bucket sizes of the real model: slidecheck prints params 1720574976 for qwen3-1.7b
    s, L = buckets(MODELS['qwen3-1.7b'])
    ok(sum(s) == 1720574976 and L == 28 and len(s) == 30, 'qwen3-1.7b buckets: %d parameters, %d buckets' % (
        sum(s), len(s)))
    g7 = layer_groups(s, L, 2, 640 * 1048576)
    ok([len(x) for x in g7] == [7, 7, 7, 4, 2, 1], 'qwen3-1.7b in bf16 at 640 MiB: groups of %s layers (7, 7, 7, 4, 2, 1)' % (
        [len(x) for x in g7]))
    # the whole report on the synthetic files, with a measured 2-GPU step
    with open(os.path.join(d, 'speed1.log'), 'w') as f:
        f.write('summary: first-step loss 1  median step 22.00 ms (n=2)\n')
    with open(os.path.join(d, 'speed2.log'), 'w') as f:
        f.write('data parallel: 2 ranks of --batch 2\nsummary: first-step loss 1  median step 30.00 ms (n=2)\n')
    for name, ms in (('speed1', 4.0), ('speed2', 4.4)):  # backward layers 10% slower at 2 GPUs
        os.makedirs(os.path.join(d, name))
        with open(os.path.join(d, name, 'layer_metrics.csv'), 'w') as f:
            f.write('step,layer,fwd_ms,recompute_ms,bwd_ms\n')
            for st in range(4):
                f.write(''.join('%d,%d,1,0,%g\n' % (st, l, ms * (3 if st == 0 else 1)) for l in range(2)))
    import io
    # tiny has 4 layers, the trace 2: refused
    try:
        main(['--trace', os.path.join(d, 'one'), '--nvlink', os.path.join(d, 'nv.csv'), '--model', 'tiny'])
        ok(False, 'a trace of 2 layers with --model tiny (4 layers): refused')
    except SystemExit as e:
        ok('the trace has 2 layers, the model 4' in str(e), 'a trace of 2 layers with --model tiny: refused (%s)' % e)
    MODELS['two'] = (64, 10, 20, 2, 1, 1, 10, True, 'qwen3')  # a 2-layer shape for the whole report
    old, buf = sys.stdout, io.StringIO()
    sys.stdout = buf
    try:
        main(['--trace', os.path.join(d, 'one'), '--nvlink', os.path.join(d, 'nv.csv'), '--model', 'two',
              '--logs', d, '--out', os.path.join(d, 'table.txt'), '--ws', '1,2,16', '--seq', '10', '--batch', '2', '--inter-gbps', '100',
              '--inter-lat-us', '5'])
    finally:
        sys.stdout = old
    txt = buf.getvalue()
    print(txt)
    ok(txt == open(os.path.join(d, 'table.txt')).read(), 'report: --out holds what was printed')
    ok('ASSUMED: 100 Gbit/s' in txt and re.search(r'\n +16 +2 cluster', txt) is not None,
       'report: W = 16 on 2 nodes over the assumed network, printed as an assumption')
    ok(re.search(r'\n1 +1 +- +dp +22\.00 ms +22\.00 ms', txt) is not None and re.search(r'\n2 +2 +nvlink', txt),
       'check table: measured 1 and 2 GPU steps beside the predictions')
    ok("speed2's backward layers 8.80 ms a step against 1 GPU's 8.00: +10.0%" in txt,
       'check table: the backward\'s slowdown at 2 GPUs from layer_metrics.csv')
    for root, _, fs in os.walk(d, topdown=False):
        for f in fs:
            os.remove(os.path.join(root, f))
        os.rmdir(root)
    print('%d passed, %d failed' % (len(passes), len(fails)))  # tests/run.sh reads this line
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
