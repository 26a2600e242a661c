#!/usr/bin/env python3
"""Compare two checkpoints' model.safetensors tensor by tensor (the standard library only: meant
for small models such as `tiny`).

    python3 bench/cmp_weights.py A/model.safetensors B/model.safetensors TOL

Prints, for the worst tensor, the normwise relative difference |a - b| / |b| (2-norms over the
tensor), and exits 1 when any tensor exceeds TOL or the two files do not hold the same names,
shapes and dtypes. Used by gpu_dp_checks.sh to check that a data-parallel run's saved weights
(gathered from the ranks) match a one-GPU run's."""
import array
import json
import math
import struct
import sys


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    out = {}
    for name, t in head.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        if t["dtype"] == "BF16":  # bf16: the high half of an f32
            h = array.array("H", body[a:b])
            v = array.array("I", (x << 16 for x in h))
            buf = array.array("f", v.tobytes())
        elif t["dtype"] == "F32":
            buf = array.array("f", body[a:b])
        else:
            sys.exit(f"{path}: {name}: dtype {t['dtype']} not handled")
        if sys.byteorder != "little":
            sys.exit("a little-endian host is assumed")
        out[name] = (t["dtype"], tuple(t["shape"]), buf)
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    A, B, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
    if sorted(A) != sorted(B):
        print("FAIL: the files hold different tensors")
        return 1
    worst, wname = 0.0, ""
    for name in A:
        (da, sa, a), (db, sb, b) = A[name], B[name]
        if (da, sa) != (db, sb):
            print(f"FAIL: {name}: {da} {sa} vs {db} {sb}")
            return 1
        nb = math.sqrt(sum(y * y for y in b))
        nd = math.sqrt(sum((x - y) * (x - y) for x, y in zip(a, b)))
        r = nd / nb if nb > 0 else nd
        if r > worst:
            worst, wname = r, name
    ok = worst <= tol
    print(f"{len(A)} tensors, worst normwise rel diff {worst:.3g} ({wname}), tol {tol:g}: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
