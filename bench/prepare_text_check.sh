#!/bin/sh
# demos/prepare_text.py with real tokenizer packages (on a machine that has `tokenizers` and
# `transformers`, none downloaded): a byte-level BPE of 512 tokens is trained on the repository's Markdown and
# saved as a local checkpoint directory; prepare_text.py writes shards with it, once through
# `tokenizers` and once through transformers' AutoTokenizer, and the two must be equal; then the
# tiny model (vocabulary 512) trains on them with validation.
#   sh bench/prepare_text_check.sh OUTDIR
set -eu
O=${1:?usage: prepare_text_check.sh OUTDIR}
mkdir -p "$O/ckpt"
python3 - "$O/ckpt" <<'PY'
import json, sys
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
d = sys.argv[1]
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.train(["README.md", "bench/RESULTS.md", "bench/README.md"], trainers.BpeTrainer(vocab_size=512, special_tokens=["<|endoftext|>"]))
tok.save(d + "/tokenizer.json")
json.dump({"eos_token": "<|endoftext|>", "tokenizer_class": "PreTrainedTokenizerFast"}, open(d + "/tokenizer_config.json", "w"))
print("vocab", tok.get_vocab_size())
PY
python3 demos/prepare_text.py --model "$O/ckpt" --out "$O/a" --val-tokens 3000 --shard-tokens 20000 --split blank \
    --tokenizer-lib tokenizers README.md bench/RESULTS.md bench/README.md
# the same through transformers' AutoTokenizer
python3 demos/prepare_text.py --model "$O/ckpt" --out "$O/b" --val-tokens 3000 --shard-tokens 20000 --split blank \
    --tokenizer-lib transformers README.md bench/RESULTS.md bench/README.md
for f in "$O"/a_*.bin; do cmp "$f" "$O/b_${f##*/a_}" && echo "same: ${f##*/}"; done
set -f
./build/slidecheck train --model tiny --data "$O/a_train_*.bin" --val-data "$O/a_val_*.bin" --val-every 5 --val-batches 2 \
    --seq 64 --batch 4 --steps 10 --lr 3e-3 --lr-schedule cosine --lr-warmup 2 --clip-grad-norm 1.0 --device cpu | grep -E '^(data|val|step 10 )'
