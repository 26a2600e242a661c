#!/usr/bin/env python3
"""Tokenize text files into llm.c token shards (uint32, magic 20240801) for sc_data_open.

    python3 demos/prepare_text.py --model CKPT_DIR --out data/mytext [--shard-tokens 100000000]
                                  [--val-tokens 1000000] [--split file|blank|line] FILE...

CKPT_DIR is a local Hugging Face checkpoint directory: its tokenizer.json is read with the
`tokenizers` package, or, without that package, the directory is loaded with transformers'
AutoTokenizer (local_files_only=True). Nothing is downloaded. Each document (a whole file, a
blank-line-separated paragraph, or a line: --split) is encoded without special tokens and
followed by the tokenizer's EOS token. The first --val-tokens tokens go to OUT_val_000000.bin,
the rest to OUT_train_000000.bin, OUT_train_000001.bin, ... of --shard-tokens tokens each (the
last one shorter); a document may continue in the next shard. Needs only the tokenizer package
(the shards are written with struct and array, no numpy). Then train on 'OUT_train_*.bin'."""
import argparse
import array
import json
import os
import struct
import sys


def load_tokenizer(model, lib="auto"):
    """(encode(text) -> list of ids, eos id, vocab size) from the checkpoint directory `model`;
    lib: "tokenizers", "transformers" or "auto" (tokenizers when it and tokenizer.json are there)."""
    if not os.path.isdir(model):
        sys.exit("%s: not a directory (give a local checkpoint directory)" % model)
    tj = os.path.join(model, "tokenizer.json")
    tokenizers = None
    if lib != "transformers":
        try:
            import tokenizers
        except ImportError:
            if lib == "tokenizers":
                sys.exit("--tokenizer-lib tokenizers: the `tokenizers` package is not installed")
        if lib == "tokenizers" and not os.path.isfile(tj):
            sys.exit("%s: no tokenizer.json for the `tokenizers` package" % model)
    if tokenizers is not None and os.path.isfile(tj):
        tok = tokenizers.Tokenizer.from_file(tj)
        eos = None
        for name, key in (("tokenizer_config.json", "eos_token"), ("config.json", "eos_token_id"),
                          ("generation_config.json", "eos_token_id")):
            path = os.path.join(model, name)
            if eos is None and os.path.isfile(path):
                with open(path, encoding="utf-8") as f:
                    v = json.load(f).get(key)
                if isinstance(v, dict):  # {"content": "<|endoftext|>", ...}
                    v = v.get("content")
                if isinstance(v, list):
                    v = v[0] if v else None
                eos = tok.token_to_id(v) if isinstance(v, str) else v
        if eos is None:
            sys.exit("%s: no EOS token in tokenizer_config.json, config.json or generation_config.json" % model)
        return (lambda text: tok.encode(text, add_special_tokens=False).ids), eos, tok.get_vocab_size()
    try:
        from transformers import AutoTokenizer
    except ImportError:
        sys.exit("%s: install the `tokenizers` package (with the checkpoint's tokenizer.json) or `transformers`"
                 % model if tokenizers is None else "%s: no tokenizer.json (and no `transformers` to try)" % model)
    try:
        tok = AutoTokenizer.from_pretrained(model, local_files_only=True)
    except (OSError, ValueError) as e:
        sys.exit("%s: no tokenizer here: %s" % (model, e))
    if tok.eos_token_id is None:
        sys.exit("%s: the tokenizer has no EOS token" % model)
    return (lambda text: tok.encode(text, add_special_tokens=False)), tok.eos_token_id, len(tok)


def documents(path, split):
    with open(path, encoding="utf-8") as f:
        if split == "file":
            yield f.read()
            return
        para = []
        for line in f:
            if split == "line":
                if line.strip():
                    yield line.rstrip("\n")
            elif line.strip():
                para.append(line)
            elif para:
                yield "".join(para)
                para = []
        if para:
            yield "".join(para)


def write_shard(path, toks):
    """llm.c's format: 256 little-endian int32 (magic 20240801, version 1, count), then uint32 tokens."""
    if toks.itemsize != 4:
        raise SystemExit("array('I') is not 4 bytes on this machine")
    out = array.array("I", toks)
    if sys.byteorder == "big":
        out.byteswap()
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<256i", 20240801, 1, len(toks), *([0] * 253)))
        out.tofile(f)
    os.replace(path + ".tmp", path)
    print("%s: %d tokens" % (path, len(toks)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="local HF checkpoint directory holding the tokenizer")
    ap.add_argument("--out", required=True, help="output prefix: OUT_train_000000.bin, OUT_val_000000.bin")
    ap.add_argument("--shard-tokens", type=int, default=100_000_000, help="tokens per train shard")
    ap.add_argument("--val-tokens", type=int, default=0, help="tokens of the first, validation shard (0: none)")
    ap.add_argument("--split", choices=("file", "blank", "line"), default="file",
                    help="a document is a whole file, a blank-line-separated paragraph, or a line")
    ap.add_argument("--tokenizer-lib", choices=("auto", "tokenizers", "transformers"), default="auto",
                    help="which package reads the tokenizer (auto: tokenizers with tokenizer.json, else transformers)")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    if a.shard_tokens < 1 or a.val_tokens < 0 or a.shard_tokens > 2**31 - 1 or a.val_tokens > 2**31 - 1:
        sys.exit("--shard-tokens must be in [1, 2^31) and --val-tokens in [0, 2^31)")
    encode, eos, vocab = load_tokenizer(a.model, a.tokenizer_lib)
    if os.path.dirname(a.out):
        os.makedirs(os.path.dirname(a.out), exist_ok=True)
    buf = array.array("I")
    val_left, n_train, total = a.val_tokens, 0, 0

    def flush(final):
        nonlocal buf, val_left, n_train
        while True:
            want = val_left if val_left > 0 else a.shard_tokens
            if len(buf) < want and not (final and len(buf) > 0):
                return
            take = min(want, len(buf))
            if val_left > 0:
                write_shard("%s_val_%06d.bin" % (a.out, 0), buf[:take])
                val_left = 0
            else:
                write_shard("%s_train_%06d.bin" % (a.out, n_train), buf[:take])
                n_train += 1
            buf = buf[take:]

    for path in a.files:
        for doc in documents(path, a.split):
            ids = encode(doc)
            ids.append(eos)
            buf.extend(ids)
            total += len(ids)
            flush(False)
    flush(True)
    if n_train == 0:
        sys.exit("no train tokens left after the %d validation tokens (%d in all)" % (a.val_tokens, total))
    print("%d tokens (vocab %d, EOS %d); train on '%s_train_*.bin'" % (total, vocab, eos, a.out))


if __name__ == "__main__":
    main()
