# wip/fuzz.mk: libFuzzer harnesses for the file readers (include from the Makefile).
#   make fuzz          build both harnesses, seed the corpora, run each FUZZ_RUNS executions
#   make fuzz-build    only build build/fuzz_safetensors and build/fuzz_config
# Seeds: the files tests/test_io.c writes under build/tmp_io/, and tests/fixtures/*/ when
# present. The corpora grow in $(FUZZ_CORPUS)/ (git-ignored); crashes land in build/.
FUZZ_CC     ?= clang
FUZZ_FLAGS  ?= -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_DEFS   ?= -DSC_DEV_NO_MODEL
FUZZ_RUNS   ?= 1000000
FUZZ_CORPUS ?= fuzz-corpus
FUZZ_ARGS   ?= -print_final_stats=1 -artifact_prefix=build/

.PHONY: fuzz fuzz-build fuzz-seeds

fuzz: fuzz-build fuzz-seeds
	build/fuzz_safetensors $(FUZZ_CORPUS)/safetensors -runs=$(FUZZ_RUNS) -max_len=16384 \
	    -dict=build/fuzz_safetensors.dict $(FUZZ_ARGS)
	build/fuzz_config $(FUZZ_CORPUS)/config -runs=$(FUZZ_RUNS) -max_len=8192 \
	    -dict=build/fuzz_config.dict $(FUZZ_ARGS)

fuzz-build: build/fuzz_safetensors build/fuzz_config

build/fuzz_safetensors: tests/fuzz_safetensors.c slidecheck.h $(wildcard wip/*.h)
	@mkdir -p build
	$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_DEFS) -I. $< -o $@ -lm

build/fuzz_config: tests/fuzz_config.c slidecheck.h $(wildcard wip/*.h)
	@mkdir -p build
	$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_DEFS) -I. $< -o $@ -lm

# Seed corpora and dictionaries. build/fuzz_seedgen is tests/test_io.c, run for the sample
# files it writes (its own pass/fail output is not the point here).
fuzz-seeds:
	@mkdir -p build $(FUZZ_CORPUS)/safetensors $(FUZZ_CORPUS)/config
	gcc -std=c11 -O1 -I. $(FUZZ_DEFS) tests/test_io.c -o build/fuzz_seedgen -lm
	./build/fuzz_seedgen > /dev/null 2>&1 || true
	@for f in build/tmp_io/*.safetensors build/tmp_io/*/*.safetensors tests/fixtures/*/*.safetensors; do \
	    [ -f "$$f" ] && cp "$$f" "$(FUZZ_CORPUS)/safetensors/$$(echo "$$f" | tr / _)"; done; true
	@for f in build/tmp_io/*.json build/tmp_io/*/*.json tests/fixtures/*/*.json; do \
	    [ -f "$$f" ] && cp "$$f" "$(FUZZ_CORPUS)/config/$$(echo "$$f" | tr / _)"; done; true
	@printf '%s\n' '"{"' '"}"' '"["' '"]"' '":"' '","' '"\\u"' '"\\ud83d\\ude00"' '"true"' '"false"' '"null"' \
	    '"-0"' '"1e-06"' '"9223372036854775808"' '"\\"dtype\\""' '"\\"shape\\""' '"\\"data_offsets\\""' \
	    '"\\"__metadata__\\""' '"\\"F32\\""' '"\\"BF16\\""' '"\\"F16\\""' '"\\"I32\\""' '"\\"I64\\""' '"\\"U8\\""' \
	    '"\\"F64\\""' '"\\"input_ids\\""' '"\\"format\\""' '"\\"pt\\""' > build/fuzz_safetensors.dict
	@printf '%s\n' '"{"' '"}"' '"["' '"]"' '":"' '","' '"\\u"' '"true"' '"false"' '"null"' '"1e-06"' \
	    '"\\"model_type\\""' '"\\"qwen2\\""' '"\\"qwen3\\""' '"\\"architectures\\""' '"\\"Qwen3ForCausalLM\\""' \
	    '"\\"vocab_size\\""' '"\\"hidden_size\\""' '"\\"intermediate_size\\""' '"\\"num_hidden_layers\\""' \
	    '"\\"num_attention_heads\\""' '"\\"num_key_value_heads\\""' '"\\"head_dim\\""' \
	    '"\\"max_position_embeddings\\""' '"\\"rms_norm_eps\\""' '"\\"rope_theta\\""' '"\\"rope_parameters\\""' \
	    '"\\"rope_type\\""' '"\\"default\\""' '"\\"rope_scaling\\""' '"\\"tie_word_embeddings\\""' \
	    '"\\"attention_bias\\""' '"\\"initializer_range\\""' '"\\"torch_dtype\\""' '"\\"dtype\\""' \
	    '"\\"bfloat16\\""' '"\\"hidden_act\\""' '"\\"silu\\""' '"\\"use_sliding_window\\""' '"\\"layer_types\\""' \
	    '"\\"full_attention\\""' '"\\"quantization_config\\""' > build/fuzz_config.dict
