#!/bin/sh
# Our CPU fp32 training runs over the train_qwen3 fixture's shards against the PyTorch loop that
# generated it (tests/fixtures/gen_train_fixture.py: torch.optim.AdamW, transformers' schedules,
# clip_grad_norm_, validation): loss and validation loss within 1e-4 relative, lr within 1e-6,
# the gradient norm within 1e-3, step by step (check_train.py against its float64 run).
cd "$(dirname "$0")/.." || exit 1
F=tests/fixtures/train_qwen3
T=build/tmp_train_ref
mkdir -p "$T"
pass=0; fail=0
for c in cosine linear constant; do
    cmd=$(grep '^build/slidecheck train' "$F/expected_cli.txt" | grep -- "--lr-schedule $c" | grep -- '--device cpu' | sed 's| > .*||')
    if [ -z "$cmd" ]; then echo "FAIL $c: no command in $F/expected_cli.txt"; fail=$((fail + 1)); continue; fi
    sh -c "$cmd" > "$T/$c.log" 2>&1
    if python3 tests/fixtures/check_train.py "$F/ref_train.json" "$T/$c.log" --config "$c" > "$T/$c.check" 2>&1; then
        echo "PASS $c: cpu fp32 == PyTorch's loop ($(grep '^max differences' "$T/$c.check"))"; pass=$((pass + 1))
    else
        echo "FAIL $c: $(tail -5 "$T/$c.check" | tr '\n' ' ')"; fail=$((fail + 1))
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
