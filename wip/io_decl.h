/* ------------------------------------------------------------------------------------------
   Files: config.json, safetensors, HF checkpoint directories, token files
   ------------------------------------------------------------------------------------------
   Every reader checks every offset, length and size it reads from a file, and reports a
   malformed file with SC_ERROR_FORMAT and a message naming the file, the tensor or key, and
   what is wrong. Writers write `path.tmp` and rename it over `path`, so a failed write leaves
   no half-written file behind. */

/* Parse config.json text (need not be NUL-terminated) into *cfg and validate it.
   model_type "qwen2" | "qwen3" (or, without model_type, architectures ["Qwen2ForCausalLM"] /
   ["Qwen3ForCausalLM"]). Required: vocab_size, hidden_size, intermediate_size,
   num_hidden_layers, num_attention_heads. Optional, with Hugging Face defaults:
   num_key_value_heads (= heads), head_dim (missing/null: hidden/heads), max_position_embeddings
   (32768), rms_norm_eps (1e-6), rope_theta or rope_parameters.rope_theta (10000),
   tie_word_embeddings (false), attention_bias (qwen3 only, false; qwen2 always has q/k/v
   biases), initializer_range (0.02), torch_dtype/dtype (float32/bfloat16/float16, checked
   only). RoPE scaling, sliding windows and activations other than silu: SC_ERROR_UNSUPPORTED.
   filename is used in messages only (may be NULL). */
SCDEF sc_result sc_config_from_json(sc_config *cfg, const char *text, size_t len,
                                    const char *filename);
/* Read and parse a config.json file. */
SCDEF sc_result sc_config_read(sc_config *cfg, const char *path);
/* Write a config.json that transformers (4.x and 5.x) loads. dtype: "float32", "bfloat16"
   or "float16" (NULL: "float32"). */
SCDEF sc_result sc_config_write_json(const sc_config *cfg, FILE *f, const char *dtype);
/* The same, to `path` (atomically: path.tmp, then rename). */
SCDEF sc_result sc_config_write(const sc_config *cfg, const char *path, const char *dtype);

/* ---- safetensors ---- */
#define SC_ST_MAX_DIMS 8
#define SC_ST_MAX_HEADER (100u * 1024u * 1024u)  /* the largest JSON header accepted */

typedef struct sc_st_tensor {
    const char *name;
    const char *dtype;         /* as in the file: "F32", "BF16", "F16", "I32", "I64", "U8", ... */
    int dtype_size;            /* bytes per element */
    int ndim;                  /* 0..SC_ST_MAX_DIMS */
    int64_t shape[SC_ST_MAX_DIMS];
    int64_t numel;
    uint64_t begin, end;       /* data_offsets, relative to the data section */
} sc_st_tensor;

/* An open safetensors file (or memory buffer) whose header has been read and validated.
   Tensor data is read on demand. Treat the fields as read-only. */
typedef struct sc_safetensors {
    char *path;                /* file name for messages ("<memory>" for buffers) */
    FILE *f;                   /* file mode */
    const unsigned char *mem;  /* memory mode: the caller's buffer, kept alive by the caller */
    uint64_t data_start;       /* 8 + header length */
    uint64_t data_size;        /* bytes after the header */
    int n_tensors;
    sc_st_tensor *tensors;     /* in header order */
    int n_meta;
    const char **meta_keys, **meta_values;
    char *strings_;            /* private: storage of every name and string */
} sc_safetensors;

/* Open `path`: read the 8-byte header length and the JSON header (not the data) and validate
   them: header length <= SC_ST_MAX_HEADER and within the file; every tensor has a known dtype,
   a shape of <= 8 non-negative dims, data_offsets [begin, end] whose length is
   numel * dtype size; tensors, sorted by offset, tile the data section exactly (no gaps,
   overlaps or trailing bytes); names are unique; __metadata__ is a string -> string map.
   SC_ERROR_IO if the file cannot be opened/read, SC_ERROR_FORMAT if it is malformed.
   On failure *st is left closed (nothing to free). */
SCDEF sc_result sc_safetensors_open(sc_safetensors *st, const char *path);
/* The same for a whole file held in memory (the buffer must outlive *st). */
SCDEF sc_result sc_safetensors_open_memory(sc_safetensors *st, const void *buf, size_t len);
SCDEF void sc_safetensors_close(sc_safetensors *st);
/* The tensor called name, or NULL. */
SCDEF const sc_st_tensor *sc_safetensors_find(const sc_safetensors *st, const char *name);
/* The __metadata__ value for key, or NULL. */
SCDEF const char *sc_safetensors_meta(const sc_safetensors *st, const char *key);
/* Read tensor `name` (F32, BF16 or F16) converted to float into dst (numel floats).
   If expect_shape is not NULL the tensor must have exactly ndim dims of that shape.
   Missing tensor: SC_ERROR_FORMAT; wrong shape or an integer dtype: SC_ERROR_SHAPE; another
   valid safetensors dtype (F64, U8, ...): SC_ERROR_UNSUPPORTED; short read: SC_ERROR_IO. */
SCDEF sc_result sc_safetensors_read_f32(sc_safetensors *st, const char *name, float *dst,
                                        int ndim, const int64_t *expect_shape);
/* Read tensor `name` (I32 or I64) into dst as int32; I64 values outside int32: SC_ERROR_RANGE. */
SCDEF sc_result sc_safetensors_read_i32(sc_safetensors *st, const char *name, int32_t *dst,
                                        int ndim, const int64_t *expect_shape);

/* One tensor to write. data holds numel little-endian values of `dtype` ("F32", "BF16",
   "F16", "I32" or "I64"), or, with data_is_f32, numel floats converted while writing to dtype
   "F32" or "BF16" (round to nearest even). numel may be 0 (data may then be NULL). */
typedef struct sc_st_entry {
    const char *name;
    const char *dtype;
    int ndim;                  /* 0..SC_ST_MAX_DIMS */
    int64_t shape[SC_ST_MAX_DIMS];
    const void *data;
    int data_is_f32;
} sc_st_entry;

/* Write a safetensors file: header (with __metadata__ from meta_kv = {key0, value0, key1, ...},
   n_meta pairs; NULL/0 for none) padded with spaces to a multiple of 8 bytes, then the data
   in entry order. Written to path.tmp, then renamed. */
SCDEF sc_result sc_safetensors_write(const char *path, const sc_st_entry *entries, int n,
                                     const char *const *meta_kv, int n_meta);

/* ---- Hugging Face checkpoint directories ---- */
/* Read dir/config.json. */
SCDEF sc_result sc_hf_read_config(const char *dir, sc_config *cfg);
/* Fill params (sc_config_num_params(cfg) floats) from dir/model.safetensors or, if that does
   not exist, from the shards listed in dir/model.safetensors.index.json. Every tensor of
   sc_config_params(cfg) must be present (F32, BF16 or F16) with exactly its shape. A tied
   config ignores a stored lm_head.weight. Tensors the model does not use are reported in one
   warning line on stderr, and otherwise ignored. */
SCDEF sc_result sc_hf_read_params(const char *dir, const sc_config *cfg, float *params);
/* Create dir (one level) if needed and write dir/config.json and dir/model.safetensors
   (F32, or BF16 if bf16 != 0) with HF names and shapes, each atomically. */
SCDEF sc_result sc_hf_write(const char *dir, const sc_config *cfg, const float *params, int bf16);

/* ---- token files ---- */
/* Read a safetensors file holding `input_ids` (I32 or I64) of shape [B, T] or [T] (B = 1).
   T < 2 or B == 0: SC_ERROR_FORMAT; negative ids or I64 beyond int32: SC_ERROR_RANGE.
   *ids is allocated with SC_MALLOC; free it with sc_tokens_free. */
SCDEF sc_result sc_tokens_read(const char *path, int32_t **ids, int *B, int *T);
/* Write ids [B, T] as `input_ids` I32. */
SCDEF sc_result sc_tokens_write(const char *path, const int32_t *ids, int B, int T);
/* Check every id is in [0, vocab_size) and T <= max_position (SC_ERROR_RANGE otherwise). */
SCDEF sc_result sc_tokens_check(const int32_t *ids, int B, int T, const sc_config *cfg);
SCDEF void sc_tokens_free(int32_t *ids);
