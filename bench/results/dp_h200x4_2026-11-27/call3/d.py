import json, struct, sys, array
def load(p):
    raw = open(p, 'rb').read(); n = struct.unpack('<Q', raw[:8])[0]; h = json.loads(raw[8:8 + n]); o = 8 + n
    return {k: raw[o + v['data_offsets'][0]:o + v['data_offsets'][1]] for k, v in h.items() if k != '__metadata__'}
a, b = load(sys.argv[1]), load(sys.argv[2])
for k in sorted(a):
    if a[k] != b[k]:
        x, y = array.array('f', a[k]), array.array('f', b[k])
        d = [i for i in range(len(x)) if x[i] != y[i]]
        print('  %s: %d of %d differ, first %d: %r %r, max |d| %.3g' % (k, len(d), len(x), d[0], x[d[0]], y[d[0]], max(abs(x[i] - y[i]) for i in d)))
