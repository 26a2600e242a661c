/* slidecheck.h - v0.1 - MIT licence (see end of file)

   Train a Qwen2/Qwen3 decoder stack and measure, exactly, what activation checkpointing
   (recompute) costs in time and saves in memory.

   Do this:
      #define SLIDECHECK_IMPLEMENTATION
   before you include this file in *one* C or C++ file to create the implementation.

ABOUT
   A CPU reference forward/backward of the Qwen2 (q/k/v biases) and Qwen3 (per-head q/k
   RMSNorm) decoder layer, checked against HF transformers, and a CUDA backend that mirrors it
   op for op; checkpoint policies whose replay runs the very same arithmetic, so loss and
   gradients are bitwise identical under every policy; an exact budget planner; a caching
   allocator with PyTorch's semantics through which every byte of model memory goes; a tracer
   (spans by phase and layer, one memory event per allocation and free, CPU RSS with its true
   peak); slide mode, which keeps weights, gradients and optimizer state on the host and streams
   the layers through the GPU with the same bits as resident mode; data parallel over processes
   launched as torchrun launches them; HF checkpoint and safetensors I/O that validates
   everything it reads. The CUDA backend lives in slidecheck_cuda.cu.

BUILDING
   SLIDECHECK_IMPLEMENTATION  in one translation unit: compile the implementation there.
   SLIDECHECK_STATIC          every function static (a private copy per translation unit);
                              CPU only (not with SLIDECHECK_CUDA).
   SLIDECHECK_CUDA            the GPU backend: link slidecheck_cuda.o (nvcc; sm_80-sm_90a) with
                              -lcublasLt -lcublas -lcudart. Without it the header is CPU-only
                              and `SC_DEVICE_CUDA` fails with SC_ERROR_NO_DEVICE.
   SLIDECHECK_TESTING         also declare the sc__ test hooks (the tests define it).
   SC_MALLOC, SC_FREE, SC_REALLOC  your own host allocator: define all three or none.
   SC_ASSERT                  your own assert.
   -fopenmp                   optional: the CPU ops run on all cores. Work is split by output
                              element and every sum runs in a fixed order, so the bits do not
                              depend on the number of threads.
   Compiles as C11 and as C++ with -Wall -Wextra -Werror.

   Read at run time: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
   (data parallel, as torchrun sets them); SLIDECHECK_RENDEZVOUS_PORT and
   SLIDECHECK_RENDEZVOUS_TIMEOUT (seconds, default 60); SLIDECHECK_NCCL (the NCCL library,
   default libnccl.so.2). NCCL_NVLS_ENABLE is set to 0 unless already set.

USAGE
   Every function that can fail returns sc_result (SC_SUCCESS = 0, errors < 0) and leaves a
   message naming the file / tensor / value in sc_last_error(). Nothing aborts on bad input.
   Config structs are zero-initialised or made by *_config_init(): zero means the default.
   Size letters: B batch, T sequence, N = B*T rows, C hidden, L layers, V vocabulary.

   A training loop (ids: accum*B*T token ids per step; a whole program is the example below):

       sc_config cfg;      sc_config_named(&cfg, "qwen3-1.7b");  // or sc_hf_read_config(dir, &cfg)
       sc_model_config mc = sc_model_config_init();              // CPU, fp32, SGD, lr 1e-4
       mc.optim = SC_OPTIM_ADAMW; mc.lr = 3e-4f;         // mc.device = SC_DEVICE_CUDA: the GPU
       mc.mode = SC_MODE_SLIDE;                          // optional: weights stay on the host
       sc_model *m;        sc_model_create(&m, &cfg, &mc, NULL);  // NULL: seeded random init
       sc_plan plan;       sc_plan_parse(&plan, "selective", cfg.num_layers);
       sc_tracer tr;       sc_tracer_config tc = {0};
       sc_model_tracer_timing(m, &tc); sc_tracer_init(&tr, &tc); sc_model_set_tracer(m, &tr);
       for (int s = 0; s < steps; s++) {
           float loss;
           sc_tracer_step_begin(&tr, 0, s);
           if (sc_model_step(m, &plan, ids, accum, B, T, 1, &loss))   // accum x [B, T], update
               { fprintf(stderr, "%s\n", sc_last_error()); break; }
           sc_tracer_step_end(&tr, loss, (double)accum * B * T, NULL);
       }
       sc_model_sync(m);                                 // slide: the last host updates land
       sc_tracer_write_all(&tr, "runs/x");               // CSVs and a Perfetto trace
       float *w = malloc(sizeof(float) * sc_config_num_params(&cfg));
       sc_model_get_params(m, w); sc_hf_write("ckpt", &cfg, w, 1);  // transformers loads it
       sc_model_destroy(m); sc_tracer_uninit(&tr);

   Errors
     sc_result_string(r)                 a fixed short text for a code
     sc_last_error()                     this thread's last message ("" if none)
     sc_set_error(r, fmt, ...)           record a message, return r (for code outside the header)

   Tensors and dtypes
     sc_dtype_size(t)                    bytes per element of SC_F32, SC_BF16, SC_I32
     sc_tensor_view(data, dt, dev, nd, shape, name)   a view (never owns memory), ndim <= 4
     sc_tensor_numel(t) / sc_tensor_nbytes(t)         elements / bytes of a view
     sc_f32_to_bf16(f) / sc_bf16_to_f32(h)            round to nearest even (NaN stays NaN) / exact
     sc_round_bf16_inplace(x, n)         round each float to the nearest bf16 value
     sc_f16_to_f32(h)                    IEEE half to float, exact
     sc_rng_seed(seed) / sc_rng_u64 / sc_rng_uniform / sc_rng_normal   one 64-bit state;
                                         uniform in [0,1), normal by Box-Muller

   Configs and HF checkpoints (one flat float buffer, one named view per HF parameter)
     sc_config_named(cfg, name)          a built-in: tiny | qwen3-0.6b | qwen3-1.7b | qwen2.5-0.5b
                                         | qwen2.5-1.5b | qwen2.5-7b; unknown -> INVALID_ARGS
     sc_config_names()                   those names, comma-separated (for help texts)
     sc_config_validate(cfg)             sizes positive, KV divides H, ...; else INVALID_ARGS
     sc_config_params(cfg, out, cap)     the parameter table (HF name, shape, offset); returns count
     sc_config_num_params(cfg)           floats in the flat buffer
     sc_config_layer_offsets(cfg)        offsets inside one layer's block (SIZE_MAX if absent)
     sc_config_layer_base / sc_config_norm_offset / sc_config_lm_head_offset   block offsets
     sc_config_train_flops(cfg, B, T)    model FLOPs of one step: 6 x matmul weights x tokens +
                                         causal attention, recompute not counted
     sc_config_from_json(cfg, text, len, name)   parse and validate config.json text; RoPE
                                         scaling, sliding windows, non-silu -> UNSUPPORTED
     sc_config_read(cfg, path)           the same from a file
     sc_config_write_json(cfg, f, dtype) / sc_config_write(cfg, path, dtype)   a config.json
                                         transformers 4.x and 5.x load
     sc_hf_read_config(dir, cfg)         dir/config.json
     sc_hf_read_params(dir, cfg, params) model.safetensors or its index and shards, every tensor
                                         with its exact shape; unused tensors: one warning
     sc_hf_write(dir, cfg, params, bf16) config.json + model.safetensors (F32 or BF16), atomic

   safetensors
     sc_safetensors_open(st, path)       read and validate the header (offsets tile the data,
                                         names unique, dtypes known); IO or FORMAT
     sc_safetensors_open_memory(st, buf, len)   the same over a buffer that outlives st
     sc_safetensors_close(st)            free what open holds
     sc_safetensors_find(st, name)       the tensor's entry, or NULL
     sc_safetensors_meta(st, key)        a __metadata__ value, or NULL
     sc_safetensors_read_f32(st, name, dst, nd, shape)   F32/BF16/F16 -> float; wrong shape or
                                         integer dtype -> SHAPE, F64/U8/... -> UNSUPPORTED
     sc_safetensors_read_i32(st, name, dst, nd, shape)   I32/I64 -> int32; I64 overflow -> RANGE
     sc_safetensors_write(path, entries, n, meta_kv, n_meta)   write via path.tmp + rename

   Tokens
     sc_tokens_read(path, &ids, &B, &T)  input_ids [B, T] or [T] (I32/I64); T < 2 -> FORMAT,
                                         negative ids -> RANGE; free with sc_tokens_free
     sc_tokens_write(path, ids, B, T)    input_ids as I32
     sc_tokens_check(ids, B, T, cfg)     every id < vocab and T <= max_position, else RANGE
     sc_tokens_free(ids)                 free what sc_tokens_read allocated

   Caching allocator (PyTorch's CUDACachingAllocator rules; see its section below)
     sc_allocator_init(a, cfg)           cfg NULL: host memory, no cap, no stream events
     sc_allocator_uninit(a)              give every segment back; live blocks listed on stderr
     sc_allocator_alloc(a, &p, bytes, stream, tag)   best fit; out of memory or over mem_cap ->
                                         OUT_OF_MEMORY naming the ten largest live blocks
     sc_allocator_free(a, p)             NULL ignored; reused after the recorded streams' events
     sc_allocator_record_stream(a, p, stream)   p is also used on another stream
     sc_allocator_empty_cache(a)         give fully free segments back
     sc_allocator_range_idle(a, p, n)    1 when [p, p+n) is inside a segment and not live
     sc_allocator_reset_peak(a) / sc_allocator_reset_accumulated(a)   as torch.cuda's resets
     sc_allocator_stats(a)               memory_stats(): allocated / reserved / active / ...
     sc_allocator_tag_of(a, p)           a live block's tag, or NULL
     sc_allocator_live_bytes_tagged(a, prefix)   requested bytes of live blocks by tag prefix
     sc_allocator_summary(a, buf, cap)   memory_summary()'s table (snprintf semantics)
     sc_allocator_snapshot_json(a, buf, cap)   memory_snapshot()'s segments and blocks as JSON
     sc_allocator_oom_snapshot(a)        the same JSON as the last failed request found it, or NULL
     sc_allocator_validate(a)            check every invariant; FORMAT naming the first broken

   Tracer and statistics (a NULL tracer makes every call a no-op; one thread drives it)
     sc_tracer_init(tr, cfg) / sc_tracer_uninit(tr)
     sc_tracer_step_begin(tr, epoch, step)   INVALID_ARGS when a step is already open
     sc_tracer_step_end(tr, loss, tokens, mem)   close the step: resolve GPU events, metrics
     sc_tracer_span_begin(tr, name, phase, layer, stream) -> id (-1 outside a step)
     sc_tracer_span_end(tr, id) / sc_tracer_span_bytes(tr, id, bytes)
     sc_tracer_span_add(tr, name, phase, layer, stream, t0, t1)   a span timed elsewhere
     sc_tracer_now_ns()                  the tracer's host clock
     sc_tracer_count_launches(tr, n)     add n launches to the innermost open span's phase
     sc_tracer_mem_record(tr, alloc, resv, delta, tag)   one memory event (the allocator hook)
     sc_tracer_step_note(tr, i, lr, grad_norm, val_loss)   step_metrics.csv's notes (NaN: keep)
     sc_tracer_step_count(tr) / sc_tracer_step_get(tr, i)   finished steps; NULL out of range
     sc_tracer_layer_ms(tr, i, layer, phase)   a (layer, phase) cell of step i; 0 if none
     sc_tracer_layer_stats / sc_tracer_phase_stats   mean, median, std, 95% CI after warm-up
     sc_tracer_peak_method(tr)           how the CPU peak was measured ("clear_refs", ...)
     sc_tracer_mem_count / sc_tracer_mem_get(tr, i, &ev)   the memory events; -1 out of range
     sc_tracer_span_count / sc_tracer_span_get(tr, i, &sp)   the spans; -1 out of range
     sc_tracer_write_all(tr, dir)        mkdir -p; step_metrics, layer_metrics, mem_trace,
                                         summary (.csv) and trace.json (Chrome / Perfetto)
     sc_tracer_write_{step_metrics,layer_metrics,mem_trace,summary,chrome_trace}(tr, path)
     sc_phase_name(p)                    "fwd", "bwd", "recompute", ...; "?" out of range
     sc_stats_compute(x, n)              n, mean, median, sample std, ci95 (Student's t), min, max
     sc_student_t_quantile(p, df) / sc_student_t_cdf(t, df)
     sc_cpu_rss_bytes() / sc_cpu_hwm_bytes()   this process's RSS and VmHWM (0 where unknown)

   CPU layer ops (the fp32 reference; sc_cuda_<same name> on the GPU). Outputs first, then what
   backward needs, then inputs, then sizes. Parameter gradients accumulate (+=), activation
   gradients are overwritten, except rmsnorm_backward's dinp (the residual stream), which adds.
     sc_cpu_embedding_{forward,backward}        sc_cpu_rmsnorm_{forward,backward}
     sc_cpu_add_rmsnorm_forward (add + norm)    sc_cpu_add_forward
     sc_cpu_matmul_{forward,backward}           sc_cpu_matmul_isa() ("avx512", "avx2", "scalar")
     sc_rope_table (HF's f32 cos/sin)           sc_cpu_qknorm_rope_{forward,backward}
     sc_cpu_attention_{forward,backward} (causal GQA, saves lse)
     sc_cpu_swiglu_{forward,backward}           sc_cpu_swiglu_backward_remat (both in one pass)
     sc_cpu_crossentropy_forward_backward       sc_cpu_crossentropy_slice_{stats,backward}
                                                (the LM head in vocabulary slices, two passes)
     sc_cpu_accumulate(acc, x, n, first)        acc = x or acc + x

   Optimizers (host and device give the same bits: every operation rounded on its own, no FMA)
     sc_cpu_sgd_update / sc_cpu_adamw_update    f32 arrays, torch.optim.AdamW semantics
     sc_optim_consts_make(lr, b1, b2, eps, wd, t)   one step's constants, computed once
     sc_cpu_adamw_range / sc_cpu_sgd_range      any dtypes of p, m/v and g on [0, n); bf16 out; IEEE
                                                arithmetic (subnormals kept) whatever the caller's MXCSR
     sc_cpu_adamw_mt / sc_cpu_sgd_mt            the same over threads; bits independent of them
     sc_cpu_optim_isa()                         the path the range functions take
     sc_cpu_optim_tune / sc_cpu_optim_choice    AdamW's prefetch and page size timed on this host
                                                (slide mode tunes once a process; the same bits)

   Checkpoint plans and the planner
     sc_plan_parse(plan, policy, L)      none | full | every:K | layers:a-b,c | selective |
                                         selective:mlp | selective:attn | selective:proj | sqrt;
                                         anything else -> INVALID_ARGS
     sc_plan_is_budget(policy, &bytes)   1 for budget:SIZE, 0 other policies, -1 malformed
     sc_keep_name(keep)                  "keep all", "selective", ...
     sc_plan_saved_bytes(cfg, plan, B, T, act_bytes)   saved activation bytes, closed form
                                         (equal to the allocator's count)
     sc_plan_saved_bytes_layer(cfg, plan, l, B, T, act_bytes)   the same for layer l
     sc_plan_estimate_costs(cfg, B, T, act_bytes, costs)   a roofline ESTIMATE per layer
     sc_plan_fixed_bytes(cfg, adamw, pb, gb)   weights + gradients (+ AdamW state)
     sc_plan_evaluate(rep, plan, cfg, B, T, ab, fixed, costs)   predicted peak and recompute
     sc_planner_plan(out, rep, cfg, B, T, ab, fixed, costs, budget)   exact DP: least recompute
                                         with peak <= budget; none fits -> INVALID_ARGS naming
                                         the smallest budget
     sc_plan_report_table(rep, plan, buf, cap)   one row per layer (snprintf semantics)
     sc_plan_budget_usable(budget, cfg, B, T)   what to plan for under an allocator cap
     sc_model_config_storage(mc, &pb, &gb, &ab)   bytes per parameter, gradient, activation
     sc_model_config_fixed_bytes(cfg, mc)   the planner's fixed bytes for a resident model
     sc_model_config_fixed_bytes_dp(cfg, mc, world)   the same for rank 0 of `world` ranks
     sc_model_plan_budget(plan, rep, m, ids, B, T, budget)   budget:SIZE on a live model: times
                                         one step per policy, then plans; gradients overwritten
     sc_plan_auto(&res, cfg, mc, &ac)    the fastest configuration (mode, plan, slide options)
                                         that fits ac.mem_cap, from a short profile; none fits ->
                                         OUT_OF_MEMORY naming the smallest cap (res.min_cap)
                                         (ac.profile: keep the profile, an sc_auto_profile, and
                                         reuse it for other caps of the same model and config)

   Model and training
     sc_model_config_init()              zero = defaults: CPU, fp32, SGD, lr 1e-4, AdamW's 0.9,
                                         0.999, 1e-8, resident mode, CUDA graph auto
     sc_model_create(&m, cfg, mc, params)   params NULL: seeded HF-style random init; a bad
                                         config -> INVALID_ARGS, no GPU -> NO_DEVICE
     sc_model_destroy(m)
     sc_model_step(m, plan, ids, accum, B, T, update, &loss)   accum micro-batches of [B, T],
                                         gradients summed in order, then (update) the optimizer;
                                         ids >= vocab or T > max_position -> RANGE; out of memory
                                         -> OUT_OF_MEMORY and the model stays usable
     sc_model_forward_backward(m, plan, ids, B, T, &loss)   one batch, gradients overwritten
     sc_model_optimizer_step(m)          SGD or AdamW on the current gradients
     sc_model_get_params / sc_model_get_grads(m, dst)   copies to host floats (flat order)
     sc_params_init(dst, cfg, seed)      the weights sc_model_create makes from seed (params NULL)
     sc_model_logits(m)                  the last forward's logits [B,T,V] (mc.keep_logits)
     sc_model_last_saved_bytes(m)        saved activations the allocator measured
     sc_model_cfg(m) / sc_model_allocator(m) / sc_model_cuda(m) (NULL on the CPU backend)
     sc_model_set_tracer(m, tr)          spans per layer and phase; NULL detaches
     sc_model_tracer_timing(m, &tc)      tc's event callbacks for the model's device
     sc_model_tracer_mem(m)              the allocator's and slide's counters for step_end
     sc_model_graph_steps(m) / sc_model_graph_kernels(m)   the whole-step CUDA graph
                                         (mc.cuda_graph): steps it ran, kernels it holds
     sc_parse_size("6GiB", &bytes)       0, or -1 for a malformed size

   Slide mode (mc.mode = SC_MODE_SLIDE; options mc.slide_*, all zero = off)
     sc_model_step(...)                  returns while host updates may still run; the next
                                         upload of a layer waits for that layer's update
     sc_model_sync(m)                    wait for the host updates (get_params does too)
     sc_model_slide_info(m)              the last step's bytes each way, pinned / host bytes,
                                         the device window, host optimizer time and wait
     sc_slide_window_bytes(cfg, mc, plan)   device bytes a plan needs before any activation
                                         (with the layers kept on the device)
     mc.slide_device_layers[l] = 1       layer l stays on the device with its gradients and
                                         optimizer state, updated there (the same bits);
                                         sc_layer_set_parse(mark, "all|none|first:K|last:K|a-b,c", L)

   Data parallel (one process per rank; mc.comm makes sc_model_step data parallel, mc.zero = 1
   ZeRO-1; on the GPU the resident step's NCCL collectives are nodes of its CUDA graph;
   mc.bucket_mb sets how many layers one NCCL launch sums). Every call ends in an error
   naming a rank that died or stalled past the timeout.
     sc_dist_env_read(&e)                torchrun's RANK, WORLD_SIZE, GROUP_RANK, MASTER_ADDR, ...
                                         or srun's SLURM_PROCID, SLURM_NTASKS, ...; none: 1 process;
                                         malformed -> INVALID_ARGS naming the variable
     sc_dist_rendezvous(&e, check, blob, n)   every rank meets rank 0 and gets its blob; a
                                         mismatch or a missing rank -> an error on every rank
     sc_hash_bytes(h, p, n)              FNV-1a, for the rendezvous check
     sc_dist_comm_open(&c, &e, check, blob, n)   the rendezvous, its connections kept open
     sc_dist_comm_close(c)
     sc_dist_comm_rank(c) / sc_dist_comm_world(c)   NULL comm: 0 of 1
     sc_dist_allreduce_f32(c, buf, n)    sum in rank order: the same bits on every rank
     sc_dist_gather / sc_dist_broadcast / sc_dist_allgather_f32 / sc_dist_barrier
     sc_dist_part(c, n, &lo, &hi)        this rank's part of n elements

   Training on token shards (llm.c's shards or 1-D .npy, memory-mapped; see sc_data_config)
     sc_data_open(&d, pattern, &dc) / sc_data_close(d)   a glob of shards, sorted by name; bad files
                                         (magic, version, size, token >= vocab) fail naming the file
     sc_data_next(d, ids)                this rank's next batch: B rows of T consecutive tokens
     sc_data_position(d) / sc_data_seek(d, pos)   global batches read; continue from there (resume)
     sc_data_epoch_batches / shard_count / shard_name / shard_tokens / hash   what was opened
     sc_data_write_shard(path, tokens, n, force_u32)   one llm.c shard (uint16 when it fits)
     sc_lr_factor(sched, step, warmup, total, min_ratio)   transformers' constant / linear / cosine
     sc_lr_schedule_parse(name, &s) / sc_lr_schedule_name(s)
     sc_model_set_lr(m, lr) / sc_model_lr(m)   the next update's learning rate
     mc.clip_grad_norm = C               torch's clip_grad_norm_ before every update, the same bits in every mode
     sc_model_grad_norm(m)               the 2-norm of the current gradients, before clipping
     sc_grad_norm(g, dt, n, threads) / sc_clip_scale(norm, C)   the same norm and factor on any buffer
     sc_model_steps_done(m)              optimizer steps taken (AdamW's t)
     sc_model_save_optimizer(m, path) / sc_model_load_optimizer(m, path)   m, v and master weights, exact
     sc_tracer_step_note(tr, i, lr, norm, val)   step_metrics.csv's lr, grad_norm and val_loss

     for (int s = 0; s < steps; s++) {   a loop over shards with warm-up + cosine and clipping
         sc_model_set_lr(m, lr * (float)sc_lr_factor(SC_LR_COSINE, s, warmup, steps, 0.1));
         for (int k = 0; k < accum; k++) sc_data_next(d, ids + (size_t)k * B * T);
         sc_model_step(m, &plan, ids, accum, B, T, 1, &loss);
         printf("step %d loss %.6f norm %.6f\n", s + 1, loss, sc_model_grad_norm(m));
     }

   CUDA backend (with SLIDECHECK_CUDA; ops are asynchronous on the compute stream, failures
   sticky in sc_cuda_status)
     sc_cuda_available()                 SC_SUCCESS if a usable GPU and driver exist
     sc_cuda_create(&cu, cfg) / sc_cuda_destroy(cu)
     cfg.gemm_tune = 1                   each GEMM shape's fastest cuBLASLt candidate with the bits of
                                         its first choice (mc.gemm_tune for a model)
     sc_cuda_status(cu) / sc_cuda_error_message(cu)   the first failure so far, and its text
     sc_cuda_synchronize(cu) / sc_cuda_device_name(cu) / sc_cuda_versions(&drv, &rt, &cublas)
     sc_cuda_launch_count(cu)            kernels launched so far
     sc_cuda_set_attention_path(cu, p)   SC_ATTENTION_DEFAULT | _PORTABLE | _REFERENCE
     sc_cuda_attention_hopper(cu)        1 where DEFAULT runs the Hopper kernels
     sc_cuda_attention_workspace(cu, ws, bytes)   the dS buffer (sc_attention_ds_bytes)
     sc_cuda_nvtx_push(name) / sc_cuda_nvtx_pop()   NVTX ranges for nsys
     sc_cuda_profile_ops / _collect / _report   per-kernel times (an event after each kernel)
     sc_cuda_graph_begin / _end / _launch / _kernels / _destroy   whole-step CUDA graphs
     sc_cuda_raw_alloc / _raw_free / _event_record / _event_query / _event_destroy
     sc_cuda_event_synchronize / _event_elapsed_ms   the allocator's and tracer's callbacks
     sc_cuda_mem_get_info(cu, &free, &total)
     sc_cuda_memset0 / _memset0_behind / _side_join / _upload / _download (waits)
     sc_cuda_grads_set(cu, on)           weight gradients set by their first write, not added
     sc_cuda_upload_f32 / _download_f32 (waits) / _convert   with dtype conversion
     sc_cuda_host_alloc / _host_free / _copy_async / _stream_wait   slide mode's pinned memory
                                         and streams (0 compute, 1 upload, 2 download)
     sc_cuda_nccl_unique_id / _nccl_open / _comm_wait / _allreduce_sum / _reduce_scatter_sum
     sc_cuda_allgather / _comm_count / _comm_join / _comm_settle   data parallel over NCCL;
                                         settle fails (never hangs) when a rank stalls
     sc_cuda_allreduce_chunks_sum   the chunks' sums and their gather in one pass
     sc_cuda_p2p_export / _import / _use / _on   ranks of one host: the sums by peer copies
     sc_cuda_grad_norm(cu, g, gt, n, max_norm) / sc_cuda_grad_norm_read   the clipping norm
     sc_cuda_grad_norm_chunks(cu, stream, part, g, gt, n)   its chunk sums on a stream (slide: into
                                         pinned host memory)
     sc_cuda_sgd_update / sc_cuda_adamw_update   the optimizers, the host's bits
     sc_cuda_sgd_update_norm / _adamw_update_norm   the same, and the gradient norm from the same read
     sc_cuda_<op>(cu, ...)               every CPU layer op above but rope_table, on the GPU:
                                         sc_cuda_embedding_forward, sc_cuda_attention_backward, ...

   Example: one training step with full recompute (expected output: a loss near ln(vocab)).
#if 0
   #define SLIDECHECK_IMPLEMENTATION
   #include "slidecheck.h"
   int main(void) {
       sc_config cfg; sc_config_named(&cfg, "tiny");
       sc_model_config mc = sc_model_config_init();
       sc_model *m; sc_plan plan; int32_t ids[2 * 64]; float loss;
       for (int i = 0; i < 128; i++) ids[i] = (i * 37) % cfg.vocab_size;
       if (sc_model_create(&m, &cfg, &mc, NULL) || sc_plan_parse(&plan, "full", cfg.num_layers) ||
           sc_model_forward_backward(m, &plan, ids, 2, 64, &loss)) {
           fprintf(stderr, "%s\n", sc_last_error());
           return 1;
       }
       sc_model_optimizer_step(m);
       printf("loss %.4f\n", loss);     // prints "loss 6.2583" (ln 512 = 6.24)
       sc_model_destroy(m);
       return 0;
   }
#endif

CREDITS
   Layout after stb (Sean Barrett) and llm.c (Andrej Karpathy); allocator semantics after
   PyTorch's CUDACachingAllocator. Written for slidecheck; no code copied.
*/
#ifndef SLIDECHECK_H
#define SLIDECHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef SLIDECHECK_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define SCDEF static __attribute__((unused))
#else
#define SCDEF static
#endif
#elif defined(__cplusplus)
#define SCDEF extern "C"
#else
#define SCDEF extern
#endif
/* The CUDA entry points live in slidecheck_cuda.cu, so they always have external linkage. */
#ifdef __cplusplus
#define SC_CUDA_DEF extern "C"
#else
#define SC_CUDA_DEF extern
#endif
#if defined(SLIDECHECK_STATIC) && defined(SLIDECHECK_CUDA)
#error "SLIDECHECK_STATIC is CPU-only: slidecheck_cuda.cu links against the header's public functions"
#endif

/* ------------------------------------------------------------------------------------------
   Results and errors
   ------------------------------------------------------------------------------------------ */
typedef enum sc_result {
    SC_SUCCESS = 0,
    SC_ERROR_INVALID_ARGS = -1,   /* a bad flag, name or value from the caller */
    SC_ERROR_OUT_OF_MEMORY = -2,  /* allocator or memory cap refused a request */
    SC_ERROR_IO = -3,             /* a file could not be opened, read or written */
    SC_ERROR_FORMAT = -4,         /* a file's contents are malformed or lie about themselves */
    SC_ERROR_SHAPE = -5,          /* a tensor has the wrong shape or dtype */
    SC_ERROR_RANGE = -6,          /* a value is out of its range (token id, sequence length) */
    SC_ERROR_UNSUPPORTED = -7,    /* valid request that this build cannot do */
    SC_ERROR_NO_DEVICE = -8,      /* no usable GPU */
    SC_ERROR_CUDA = -9,           /* a CUDA / cuBLAS call failed */
    SC_ERROR_TIMEOUT = -10        /* a peer process did not answer in time */
} sc_result;

/* A short fixed string for a result code. */
SCDEF const char *sc_result_string(sc_result r);
/* The detailed message of the last error raised by this thread ("" if none). Like
   stbi_failure_reason(): valid until the next failing call on the same thread. */
SCDEF const char *sc_last_error(void);
/* Record a message as this thread's last error and return r (for code outside the header's
   implementation, e.g. the CUDA file). Its arguments may include sc_last_error() itself. */
SCDEF sc_result sc_set_error(sc_result r, const char *fmt, ...);

/* ------------------------------------------------------------------------------------------
   Tensors
   ------------------------------------------------------------------------------------------ */
typedef enum sc_dtype { SC_F32 = 0, SC_BF16 = 1, SC_I32 = 2 } sc_dtype;
typedef enum sc_device { SC_DEVICE_CPU = 0, SC_DEVICE_CUDA = 1 } sc_device;

typedef struct sc_tensor {
    sc_dtype dtype;
    sc_device device;
    int ndim;              /* 0..4 */
    int64_t shape[4];
    void *data;            /* a view: the tensor never owns its memory */
    const char *name;
} sc_tensor;

SCDEF size_t sc_dtype_size(sc_dtype t);
SCDEF int64_t sc_tensor_numel(const sc_tensor *t);
SCDEF size_t sc_tensor_nbytes(const sc_tensor *t);
/* A view of `data` with the given shape (ndim <= 4). */
SCDEF sc_tensor sc_tensor_view(void *data, sc_dtype dtype, sc_device device, int ndim,
                               const int64_t *shape, const char *name);

/* bf16 <-> f32. f32 -> bf16 rounds to nearest even; NaN stays NaN. */
SCDEF uint16_t sc_f32_to_bf16(float f);
SCDEF float sc_bf16_to_f32(uint16_t h);
/* Round every value to the nearest bf16-representable float, in place. */
SCDEF void sc_round_bf16_inplace(float *x, size_t n);
SCDEF float sc_f16_to_f32(uint16_t h);

/* ------------------------------------------------------------------------------------------
   Model configuration: one struct for Qwen2 and Qwen3
   ------------------------------------------------------------------------------------------ */
typedef enum sc_arch { SC_ARCH_QWEN3 = 0, SC_ARCH_QWEN2 = 1 } sc_arch;

typedef struct sc_config {
    sc_arch arch;               /* qwen2: q/k/v biases; qwen3: q_norm/k_norm */
    int vocab_size;
    int hidden_size;            /* C */
    int intermediate_size;      /* I */
    int num_layers;             /* L */
    int num_heads;              /* H */
    int num_kv_heads;           /* KV, divides H */
    int head_dim;               /* D, need not be C/H */
    int max_position;           /* max_position_embeddings */
    int tie_embeddings;         /* lm_head shares embed_tokens */
    int attention_bias;         /* q/k/v biases (Qwen2: 1) */
    int qk_norm;                /* per-head RMSNorm on q and k (Qwen3: 1) */
    double rope_theta;
    double rms_eps;
    double init_std;            /* initializer_range for random init */
    char name[64];
} sc_config;

/* Fill *cfg with a built-in config: "tiny", "qwen3-0.6b", "qwen3-1.7b", "qwen2.5-0.5b",
   "qwen2.5-1.5b", "qwen2.5-7b". Returns SC_ERROR_INVALID_ARGS for an unknown name. */
SCDEF sc_result sc_config_named(sc_config *cfg, const char *name);
/* Comma-separated list of the built-in names (for help texts). */
SCDEF const char *sc_config_names(void);
/* Check internal consistency (positive sizes, KV divides H, ...). */
SCDEF sc_result sc_config_validate(const sc_config *cfg);

/* Parameters live in one flat float buffer; each has a named view. Layout:
   embed_tokens, then per layer one contiguous block (so one layer can be copied in one go):
     input_layernorm, q_proj.weight, k_proj.weight, v_proj.weight, [q,k,v biases],
     [q_norm, k_norm], o_proj, post_attention_layernorm, gate_proj, up_proj, down_proj
   then model.norm and (untied) lm_head.
   q/k/v weights are adjacent, so together they are one [(H+2KV)*D, C] matrix; gate and up
   likewise form one [2I, C] matrix. */
typedef struct sc_param_info {
    char name[96];          /* HF name, e.g. "model.layers.3.mlp.up_proj.weight" */
    int ndim;               /* 1 or 2 */
    int64_t shape[2];       /* HF shape ([out, in] for linear weights) */
    size_t offset;          /* in floats, into the flat buffer */
    size_t numel;
    int layer;              /* -1 for embed / final norm / lm_head */
} sc_param_info;

/* Per-layer parameter offsets (floats from the start of the layer's block). */
typedef struct sc_layer_offsets {
    size_t ln1, wqkv, bqkv, qnorm, knorm, wo, ln2, wgu, wd, size; /* bqkv/qnorm/knorm = SIZE_MAX if absent */
} sc_layer_offsets;

SCDEF sc_layer_offsets sc_config_layer_offsets(const sc_config *cfg);
/* Write up to `cap` entries of the parameter table into out (out may be NULL); returns the
   number of parameters. Tied models have no lm_head entry. */
SCDEF int sc_config_params(const sc_config *cfg, sc_param_info *out, int cap);
/* Total floats in the flat parameter buffer. */
SCDEF size_t sc_config_num_params(const sc_config *cfg);
/* Offset (floats) of layer l's block, of the final norm, and of lm_head (embed if tied). */
SCDEF size_t sc_config_layer_base(const sc_config *cfg, int l);
SCDEF size_t sc_config_norm_offset(const sc_config *cfg);
SCDEF size_t sc_config_lm_head_offset(const sc_config *cfg);
/* Model FLOPs of one training step (forward + backward, no recompute) on B sequences of T
   tokens: 6 * (matmul weights: the layers' projections and the LM head; the embedding lookup
   is no matmul) * tokens, plus causal attention: QK^T and PV, 2*B*H*T*T*D each in forward,
   halved for causality, times 3 for forward + backward. Recompute is not counted: a policy
   that recomputes does more work for the same model FLOPs. */
SCDEF double sc_config_train_flops(const sc_config *cfg, int B, int T);

/* ------------------------------------------------------------------------------------------
   Deterministic random numbers (splitmix64 / xoshiro-free: one 64-bit state)
   ------------------------------------------------------------------------------------------ */
typedef struct sc_rng { uint64_t s; } sc_rng;
SCDEF sc_rng sc_rng_seed(uint64_t seed);
SCDEF uint64_t sc_rng_u64(sc_rng *r);
SCDEF float sc_rng_uniform(sc_rng *r);          /* [0,1) */
SCDEF float sc_rng_normal(sc_rng *r);           /* N(0,1), Box-Muller */

/* ------------------------------------------------------------------------------------------
   Caching allocator: a device-independent copy of PyTorch's CUDACachingAllocator
   ------------------------------------------------------------------------------------------
   Raw memory comes from callbacks (cudaMalloc/cudaFree, an aligned host malloc, a pinned-host
   allocator), so the same code and the same numbers serve every device. The rules are
   PyTorch's defaults (no max_split_size, no expandable segments, no garbage collection):

   - sizes round up to 512 bytes (kMinBlockSize); a request of 0 bytes gets its own 512-byte
     block and a unique non-NULL pointer that must be freed (PyTorch's tensor allocate() hands
     out nullptr there instead; DeviceCachingAllocator::malloc itself rounds 0 to 512, as here);
   - rounded sizes <= 1 MiB come from the small pool, whose segments are 2 MiB; larger ones
     from the large pool, whose segments are 20 MiB for sizes under 10 MiB and the size rounded
     up to 2 MiB otherwise;
   - a request takes the best fit among the free blocks of its pool on its own stream: the
     smallest block that is large enough, the lowest address among equals;
   - a block is split when the remainder is >= 512 bytes (small pool) or > 1 MiB (large pool);
     a freed block merges with free neighbours of its segment;
   - blocks belong to the stream they were allocated on for ever. sc_allocator_record_stream()
     notes that another stream also used a block; at free time an event is recorded on each such
     stream and the block stays out of the pool ("pending free": still counted in active_bytes
     and requested_bytes) until every one of those events has completed. Events are polled at
     the start of every allocation and on empty_cache. With no event callbacks everything is
     synchronous and record_stream does nothing;
   - when a new segment cannot be had (the raw allocator fails, or reserved + segment would
     exceed mem_cap) every fully free cached segment is released and the segment is tried once
     more (alloc_retries += 1); if that fails too: num_ooms += 1, an SC_MEM_OOM event, and
     SC_ERROR_OUT_OF_MEMORY with a message that names the request, allocated / reserved / cap
     and the ten largest live allocations with their tags.

   Not thread-safe: use one allocator per thread or lock around it. */

#define SC_ALLOCATOR_TAG_MAX 64      /* bytes of tag kept per block, including the NUL */

typedef enum sc_mem_event_kind {
    SC_MEM_ALLOC = 0,          /* a block was handed out */
    SC_MEM_FREE = 1,           /* a block was given back (it may still wait on stream events) */
    SC_MEM_SEGMENT_ALLOC = 2,  /* raw memory was taken from the device */
    SC_MEM_SEGMENT_FREE = 3,   /* raw memory was given back to the device */
    SC_MEM_OOM = 4             /* a request failed */
} sc_mem_event_kind;

typedef struct sc_mem_event {
    sc_mem_event_kind kind;
    void *ptr;                 /* the block or segment (NULL for OOM) */
    size_t size;               /* rounded block size, or segment size */
    size_t requested;          /* the caller's byte count (segments: the request that caused it) */
    int64_t allocated_bytes;   /* totals after the event */
    int64_t reserved_bytes;
    int stream;
    const char *tag;           /* what the memory is; "" when unknown; valid during the call */
    const char *device;        /* the allocator's name */
} sc_mem_event;

typedef struct sc_allocator_config {
    void *(*raw_alloc)(size_t bytes, void *user);   /* NULL = aligned host malloc (256-byte aligned) */
    void (*raw_free)(void *ptr, size_t bytes, void *user);
    void *raw_user;
    size_t mem_cap;              /* 0 = no cap; else behave as a card of this many bytes
                                    (reserved never exceeds it) */
    /* stream events (NULL = everything is synchronous, e.g. CPU): */
    void *(*event_record)(int stream, void *user);  /* record an event on `stream`, return a handle
                                                       (NULL = nothing to wait for) */
    int (*event_query)(void *event, void *user);     /* 1 when complete */
    void (*event_destroy)(void *event, void *user);
    void (*event_synchronize)(void *event, void *user); /* optional: wait for the event. Used where
                                    PyTorch synchronizes (empty_cache, the retry before an OOM);
                                    NULL = only query, so blocks whose events are still running
                                    stay cached */
    void *event_user;
    /* memory-event hook for the tracer (NULL = off, costs nothing): */
    void (*on_event)(const struct sc_mem_event *ev, void *user);
    void *on_event_user;
    const char *name;            /* "cuda:0", "cpu", "pinned" - used in summaries (copied) */
} sc_allocator_config;

/* One counter in PyTorch's manner. peak is resettable; the totals only grow. */
typedef struct sc_stat {
    int64_t current, peak, allocated_total, freed_total;
} sc_stat;

/* Every stat array is indexed by these, as torch.cuda.memory_stats()'s all/small_pool/large_pool. */
enum { SC_STAT_ALL = 0, SC_STAT_SMALL_POOL = 1, SC_STAT_LARGE_POOL = 2, SC_STAT_TYPES = 3 };

typedef struct sc_memory_stats {
    sc_stat allocation[SC_STAT_TYPES];        /* number of live blocks */
    sc_stat segment[SC_STAT_TYPES];           /* number of raw segments held */
    sc_stat active[SC_STAT_TYPES];            /* live + pending-free blocks */
    sc_stat inactive_split[SC_STAT_TYPES];    /* free blocks inside partly used segments */
    sc_stat allocated_bytes[SC_STAT_TYPES];   /* rounded sizes of live blocks */
    sc_stat reserved_bytes[SC_STAT_TYPES];    /* sizes of raw segments held */
    sc_stat active_bytes[SC_STAT_TYPES];      /* rounded sizes of live + pending-free blocks */
    sc_stat inactive_split_bytes[SC_STAT_TYPES]; /* "non-releasable memory" */
    sc_stat requested_bytes[SC_STAT_TYPES];   /* unrounded request sizes of live + pending-free
                                                 blocks (PyTorch drops them at the real free) */
    int64_t alloc_retries;                    /* raw allocations retried after emptying the cache */
    int64_t num_ooms;                         /* requests that failed */
} sc_memory_stats;

struct sc__allocator_block;
struct sc__allocator_segment;

/* Caller-owned; treat the fields as private. Zero it or not: sc_allocator_init sets them all. */
typedef struct sc_allocator {
    sc_allocator_config cfg;
    char name[32];
    sc_memory_stats stats;
    struct sc__allocator_block **pool[2];    /* free blocks, small / large, sorted by (stream, size, ptr) */
    size_t pool_n[2], pool_cap[2];
    size_t pool_blocks[2];               /* all blocks of each pool: bounds pool_n, so a free never grows */
    struct sc__allocator_block **active;     /* live + pending-free blocks, sorted by ptr */
    size_t active_n, active_cap;
    size_t pending_n;                    /* how many of those wait on events */
    struct sc__allocator_segment **segs;     /* sorted by base address */
    size_t seg_n, seg_cap;
    struct sc__allocator_block *spare_blocks; /* recycled structs, so the bookkeeping cannot fail mid-way */
    struct sc__allocator_segment *spare_segs;
    char *oom_json;                      /* sc_allocator_snapshot_json at the last failed request */
} sc_allocator;

/* cfg may be NULL (host memory, no cap, no events). */
SCDEF sc_result sc_allocator_init(sc_allocator *a, const sc_allocator_config *cfg);
/* Gives every segment back. Live blocks at this point are a caller bug: listed on stderr. */
SCDEF void sc_allocator_uninit(sc_allocator *a);
/* tag (may be NULL) says what the memory is, e.g. "layer 12 mlp.up (saved activation)";
   it is copied, truncated to SC_ALLOCATOR_TAG_MAX-1 bytes. */
SCDEF sc_result sc_allocator_alloc(sc_allocator *a, void **out, size_t bytes, int stream,
                                   const char *tag);
/* NULL is ignored; a pointer this allocator did not hand out is reported on stderr. */
SCDEF void sc_allocator_free(sc_allocator *a, void *ptr);
/* ptr (live) is also used on `stream`: when freed it is reused only after that stream's work
   queued up to the free has completed. */
SCDEF void sc_allocator_record_stream(sc_allocator *a, void *ptr, int stream);
/* Give every fully free segment back to the raw allocator. */
SCDEF void sc_allocator_empty_cache(sc_allocator *a);
/* 1 when [p, p + n) lies inside one of the allocator's segments and overlaps no live (or
   pending-free) block: memory that a captured CUDA graph may write again when it replays. */
SCDEF int sc_allocator_range_idle(const sc_allocator *a, const void *p, size_t n);
/* peak = current for every stat. */
SCDEF void sc_allocator_reset_peak(sc_allocator *a);
/* allocated_total = freed_total = 0 for every stat, alloc_retries = num_ooms = 0. */
SCDEF void sc_allocator_reset_accumulated(sc_allocator *a);
SCDEF sc_memory_stats sc_allocator_stats(const sc_allocator *a);
/* The tag of a live block, NULL if ptr is not one. */
SCDEF const char *sc_allocator_tag_of(const sc_allocator *a, const void *ptr);
/* Sum of requested bytes of live blocks whose tag starts with tag_prefix (NULL or "" = all). */
SCDEF size_t sc_allocator_live_bytes_tagged(const sc_allocator *a, const char *tag_prefix);
/* A table in the manner of torch.cuda.memory_summary(). snprintf semantics: returns the full
   length, writes at most cap bytes including the NUL (buf may be NULL when cap is 0). */
SCDEF int sc_allocator_summary(const sc_allocator *a, char *buf, size_t cap);
/* Segments and their blocks as JSON, in the manner of torch.cuda.memory_snapshot():
   {"device":..., "segments":[{"address", "total_size", "allocated_size", "active_size",
   "requested_size", "stream", "segment_type", "blocks":[{"offset", "address", "size",
   "requested_size", "state", "tag"}]}]}; state is "active_allocated", "active_pending_free" or
   "inactive". snprintf semantics as above. */
SCDEF int sc_allocator_snapshot_json(const sc_allocator *a, char *buf, size_t cap);
/* The same JSON as the allocator stood when a request last failed (before the caller freed
   anything), to see what the reserved memory held; NULL when none failed (or the host could not
   hold the copy). Owned by the allocator, valid until the next failure or sc_allocator_uninit. */
SCDEF const char *sc_allocator_oom_snapshot(const sc_allocator *a);
/* Check every internal invariant (blocks tile their segments, pools sorted and complete, no two
   free neighbours, stats equal the sums over blocks, reserved <= cap). SC_ERROR_FORMAT with the
   first broken one. Costs O(blocks); for tests and debugging. */
SCDEF sc_result sc_allocator_validate(const sc_allocator *a);
/* ------------------------------------------------------------------------------------------
   Tracing: spans, per-step metrics, memory events, statistics, CSV / Chrome-trace writers

   Usage from a training loop (one thread drives the tracer; it is not thread-safe):

       sc_tracer tr; sc_tracer_config tc = {0};          // zero = defaults
       sc_tracer_init(&tr, &tc);
       for each step:
           sc_tracer_step_begin(&tr, epoch, step);
           int s = sc_tracer_span_begin(&tr, "layer", SC_PHASE_FWD, l, stream);
           ...                                            // also sc_tracer_count_launches()
           sc_tracer_span_end(&tr, s);
           sc_tracer_step_end(&tr, loss, tokens, &mem);  // mem: GPU allocator counters or NULL
       sc_tracer_write_all(&tr, "runs/x");
       sc_tracer_uninit(&tr);

   Every function accepts a NULL tracer and returns at once, so tracing off costs one branch.

   Timing. Without event callbacks spans are timed with the monotonic CPU clock. With
   event_record + event_elapsed_ms set (GPU mode) each span records one event at begin and
   one at end on its stream; nothing is synchronised per span: all events of a step are
   resolved in sc_tracer_step_end (event_elapsed_ms may block there until they complete)
   and then destroyed. The step's wall_ms is always the CPU monotonic clock from step_begin
   to step_end; set device_sync so that it includes the GPU work still queued.

   Nesting rule (phase totals). A span's parent is the innermost span still open on the
   same stream when it begins. A span is added to its phase total only if no ancestor has
   the same phase; it is added to its (layer, phase) cell only if layer >= 0 and no ancestor
   has the same phase and the same layer. So FWD "model" > FWD "layer 3" > FWD "attn"
   counts the outer span once in fwd_ms and "layer 3" once in layer 3's fwd cell. Phases
   are inclusive: a RECOMPUTE span inside a BWD span counts in both recompute_ms and
   bwd_ms (bwd_ms - recompute_ms is then the backward time proper).

   Spans begun outside a step are ignored (id -1). Span names are copied (truncated to
   SC_TRACER_NAME_LEN-1 bytes), so any temporary string will do. Span ids are valid until
   the step ends; spans still open at step_end are closed there.
   ------------------------------------------------------------------------------------------ */
typedef enum sc_phase {
    SC_PHASE_FWD = 0,
    SC_PHASE_BWD,
    SC_PHASE_RECOMPUTE,
    SC_PHASE_OPT,
    SC_PHASE_H2D,
    SC_PHASE_D2H,
    SC_PHASE_LOSS,
    SC_PHASE_OTHER,
    SC_PHASE_COMM,      /* data parallel: collectives on the communication stream */
    SC_PHASE_COUNT
} sc_phase;
/* the stream id of data parallel's collectives (0 compute, 1 upload, 2 download) */
#define SC_STREAM_COMM 16

/* "fwd", "bwd", "recompute", "opt", "h2d", "d2h", "loss", "other", "comm"; "?" when out of range. */
SCDEF const char *sc_phase_name(sc_phase p);

#define SC_TRACER_NAME_LEN 32

typedef struct sc_tracer_config {
    int warmup_steps;      /* first steps left out of summary.csv; 0 = 1, negative = none */
    int64_t max_spans;     /* spans kept for trace.json over the run; 0 = 1<<20 (the current
                              step's spans are always kept for its totals) */
    int64_t max_mem_rows;  /* memory-event rows kept; 0 = 1<<20; the rest are counted */
    int no_clear_refs;     /* 1: never write /proc/self/clear_refs (it resets the process's
                              VmHWM); per-step CPU peaks then come from samples */
    /* GPU timing (all NULL = CPU clock). event_destroy and device_sync are optional. */
    void *(*event_record)(int stream, void *user);
    float (*event_elapsed_ms)(void *ev_start, void *ev_end, void *user);
    void (*event_destroy)(void *ev, void *user);
    void (*device_sync)(void *user);   /* called at step_end before the wall clock stops */
    void *user;
    int world;             /* data-parallel ranks (0 = 1): trace.json gives the collectives' bus
                              bandwidth as NCCL's tests do: algorithm bandwidth x 2 (W - 1) / W
                              for spans named "allreduce", x (W - 1) / W for the others
                              ("reduce-scatter", "all-gather") */
} sc_tracer_config;

/* GPU memory counters at step end (the allocator's view), in bytes. */
typedef struct sc_tracer_mem {
    int64_t allocated, reserved;            /* current */
    int64_t peak_allocated, peak_reserved;  /* peak during the step */
    int64_t host_pinned;                    /* pinned host bytes held (slide mode), 0 if none */
} sc_tracer_mem;

/* One step's metrics (one row of step_metrics.csv). Phase times in ms follow the nesting
   rule above; phase_ms[SC_PHASE_FWD] == fwd_ms etc. */
typedef struct sc_step_metrics {
    int epoch, step;          /* as given to step_begin */
    int64_t global_step;      /* 0, 1, 2, ... over the tracer's life */
    double wall_ms, cum_wall_ms;
    double phase_ms[SC_PHASE_COUNT];
    int64_t launches[SC_PHASE_COUNT];
    int64_t bytes[SC_PHASE_COUNT];          /* bytes of the spans that carry them (h2d, d2h) */
    double loss, tokens, tps;
    int64_t cpu_rss, cpu_peak_rss;          /* bytes: at step end, and true peak in the step */
    int cpu_peak_method;                    /* 0 none, 1 clear_refs+VmHWM, 2 samples */
    sc_tracer_mem gpu;
    double lr, grad_norm, val_loss;         /* training notes (sc_tracer_step_note); NaN when none */
    /* private: where this step's spans and layer cells live */
    int64_t span_first, span_count;
    int64_t layer_first;
    int num_layers;
    int64_t t0_ns;
} sc_step_metrics;

typedef struct sc__trace_span {
    char name[SC_TRACER_NAME_LEN];
    int phase, layer, stream, parent;   /* parent: span index, -1 none */
    int counts_phase, counts_layer;     /* passes the nesting rule (see above) */
    int open;
    int64_t launches, bytes;
    int64_t t0_ns, t1_ns;               /* CPU clock, ns since tracer init */
    void *ev0, *ev1;
    double ts_ms, dur_ms;               /* resolved: start since tracer init, duration */
} sc__trace_span;

typedef struct sc__trace_mem_row {
    int64_t step, event, t_ns, t_step_ns, allocated, reserved, delta, rss;
    int tag;                            /* index into the tag table */
} sc__trace_mem_row;

/* Caller-owned; treat the fields as private. */
typedef struct sc_tracer {
    sc_tracer_config cfg;
    int gpu;                            /* event callbacks present */
    int64_t t_init_ns;
    /* spans: history [0, step_span_first) + current step [step_span_first, nspans) */
    sc__trace_span *spans; int64_t nspans, cap_spans, spans_dropped;
    int *open; int64_t nopen, cap_open;
    /* steps */
    sc_step_metrics *steps; int64_t nsteps, cap_steps;
    sc_step_metrics cur; int in_step; void *step_ev;
    double *layer_ms; int64_t nlayer_ms, cap_layer_ms;     /* per step: num_layers x phases */
    int max_layers; unsigned char *layer_seen; int64_t cap_seen; /* (layer, phase) counted */
    int streams[64]; int nstreams;                         /* ids seen, for trace.json */
    /* memory events */
    sc__trace_mem_row *rows; int64_t nrows, cap_rows, rows_dropped, step_events;
    char **tags; int64_t ntags, cap_tags; int *tag_hash; int64_t cap_hash;
    /* CPU RSS */
    int statm_fd; int64_t page_size;
    int64_t last_rss, last_rss_ns;      /* memory events reuse a sample younger than 0.2 ms */
    int clear_refs_ok;                  /* 1 works, 0 untried, -1 failed */
    int64_t step_rss_max, step_hwm_begin;
    int any_clear_refs, any_samples;
} sc_tracer;

SCDEF sc_result sc_tracer_init(sc_tracer *tr, const sc_tracer_config *cfg);
SCDEF void sc_tracer_uninit(sc_tracer *tr);

/* Returns SC_ERROR_INVALID_ARGS when a step is already open. */
SCDEF sc_result sc_tracer_step_begin(sc_tracer *tr, int epoch, int step);
/* Closes the step: resolves GPU events, computes the step's metrics. mem may be NULL.
   tokens: tokens processed in the step (tps = tokens / wall seconds). */
SCDEF sc_result sc_tracer_step_end(sc_tracer *tr, double loss, double tokens,
                                   const sc_tracer_mem *mem);

/* Returns a span id (>= 0), or -1 when tr is NULL, no step is open or memory ran out. */
SCDEF int sc_tracer_span_begin(sc_tracer *tr, const char *name, sc_phase phase, int layer,
                               int stream);
SCDEF void sc_tracer_span_end(sc_tracer *tr, int id);
/* Bytes a span moved (copies): summed per phase into the step and shown with GB/s in trace.json. */
SCDEF void sc_tracer_span_bytes(sc_tracer *tr, int id, int64_t bytes);
/* A span timed elsewhere, on the host clock of sc_tracer_now_ns() (host worker threads, the CPU
   backend's copy threads): added as it is, with no parent. Returns its id or -1. Streams: 0
   compute, 1 upload, 2 download, 3 and up host optimizer threads. */
SCDEF int sc_tracer_span_add(sc_tracer *tr, const char *name, sc_phase phase, int layer, int stream,
                             int64_t t0_ns, int64_t t1_ns);
SCDEF int64_t sc_tracer_now_ns(void);
/* Adds n kernel launches to the phase of the innermost open span (any stream), or to
   SC_PHASE_OTHER when none is open. */
SCDEF void sc_tracer_count_launches(sc_tracer *tr, int64_t n);

/* One memory event (call it from the allocator's hook): the allocator's counters after the
   event, the change (+alloc / -free), and a tag (copied; may be NULL). Also samples RSS.
   Events outside a step are kept with step -1 and t_ms counted from sc_tracer_init. */
SCDEF void sc_tracer_mem_record(sc_tracer *tr, int64_t allocated, int64_t reserved,
                                int64_t delta, const char *tag);

/* Statistics over a sample. std is the sample std (n-1); ci95 is the half-width
   t_{0.975,n-1} * std / sqrt(n). std and ci95 are NaN for n < 2; everything is NaN for
   n == 0. */
typedef struct sc_stats {
    int n;
    double mean, median, std, ci95, min, max;
} sc_stats;
SCDEF sc_stats sc_stats_compute(const double *x, int n);

/* Results. sc_tracer_step_get returns NULL when i is out of range; i counts finished
   steps from 0. sc_tracer_layer_ms returns 0 for a cell the step did not have. */
SCDEF int64_t sc_tracer_step_count(const sc_tracer *tr);
/* Notes on step i (after its step_end) for step_metrics.csv's lr, grad_norm and val_loss
   columns; NaN leaves a value as it is. */
SCDEF void sc_tracer_step_note(sc_tracer *tr, int64_t i, double lr, double grad_norm, double val_loss);
SCDEF const sc_step_metrics *sc_tracer_step_get(const sc_tracer *tr, int64_t i);
SCDEF double sc_tracer_layer_ms(const sc_tracer *tr, int64_t i, int layer, sc_phase phase);
/* Statistics of a (layer, phase) cell, or of a step-level phase total, over the steps
   after the warm-up. */
SCDEF sc_stats sc_tracer_layer_stats(const sc_tracer *tr, int layer, sc_phase phase);
SCDEF sc_stats sc_tracer_phase_stats(const sc_tracer *tr, sc_phase phase);
/* "none", "clear_refs" or "samples" (how cpu_peak_rss was measured), "mixed" if it changed */
SCDEF const char *sc_tracer_peak_method(const sc_tracer *tr);
/* The recorded memory events, oldest first (for timelines: t_ms is the host clock within the
   event's step, or since sc_tracer_init for step -1). tag points into the tracer (valid while it
   lives; "" when none). sc_tracer_mem_get returns 0, or -1 when i is out of range. */
typedef struct sc_tracer_mem_event {
    int64_t step, event;
    double t_ms;
    int64_t allocated, reserved, delta, rss;   /* bytes: the allocator's counters after it; RSS */
    const char *tag;
} sc_tracer_mem_event;
SCDEF int64_t sc_tracer_mem_count(const sc_tracer *tr);
SCDEF int sc_tracer_mem_get(const sc_tracer *tr, int64_t i, sc_tracer_mem_event *ev);
/* The recorded spans (step s holds [span_first, span_first + span_count) of its sc_step_metrics).
   counts_phase / counts_layer: the span passes the nesting rule and counts toward its phase /
   layer totals. parent: index of the enclosing span, -1 none. ts_ms: start since sc_tracer_init.
   sc_tracer_span_get returns 0, or -1 when i is out of range; name points into the tracer. */
typedef struct sc_tracer_span_info {
    const char *name;
    sc_phase phase;
    int layer, stream, parent, counts_phase, counts_layer;
    int64_t launches, bytes;
    double ts_ms, dur_ms;
} sc_tracer_span_info;
SCDEF int64_t sc_tracer_span_count(const sc_tracer *tr);
SCDEF int sc_tracer_span_get(const sc_tracer *tr, int64_t i, sc_tracer_span_info *out);

/* CPU resident set size of this process in bytes (0 where unknown), and its VmHWM. */
SCDEF int64_t sc_cpu_rss_bytes(void);
SCDEF int64_t sc_cpu_hwm_bytes(void);

/* Quantile of Student's t with df > 0 degrees of freedom (need not be an integer):
   the t with P(T <= t) = p. NaN for df <= 0 or p outside [0,1]; +-inf at p = 1 / 0. */
SCDEF double sc_student_t_quantile(double p, double df);
/* P(T <= t) for Student's t with df degrees of freedom. */
SCDEF double sc_student_t_cdf(double t, double df);

/* Writers. write_all creates dir (like mkdir -p) and writes step_metrics.csv,
   layer_metrics.csv, mem_trace.csv, summary.csv and trace.json into it. In trace.json
   each stream id is one track (tid = stream), steps have a track of their own, memory is
   two counter tracks; GPU span times are placed relative to the step's first event, so
   GPU tracks line up with the CPU clock at each step start. */
SCDEF sc_result sc_tracer_write_all(const sc_tracer *tr, const char *dir);
SCDEF sc_result sc_tracer_write_step_metrics(const sc_tracer *tr, const char *path);
SCDEF sc_result sc_tracer_write_layer_metrics(const sc_tracer *tr, const char *path);
SCDEF sc_result sc_tracer_write_mem_trace(const sc_tracer *tr, const char *path);
SCDEF sc_result sc_tracer_write_summary(const sc_tracer *tr, const char *path);
SCDEF sc_result sc_tracer_write_chrome_trace(const sc_tracer *tr, const char *path);
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

/* ---- token shards (training data) ----
   A glob(3) pattern names the shards, taken in strcmp order of their paths. Each shard is
   llm.c's format (a 256 x int32 little-endian header: magic 20240520 with uint16 tokens or
   20240801 with uint32 tokens, version 1 (llm.c's uint32 shards: 7), token count; then the tokens) or a 1-D .npy of
   '<u2', '<u4' or '<i4' (told apart by the "\x93NUMPY" magic, not the extension). Shards are
   memory-mapped read-only, so a dataset larger than RAM works. A batch is the next B*T
   tokens of the current shard (B rows of T); a shard's tail shorter than B*T is skipped, and
   after the last shard the first comes again (a new epoch). With `world` data-parallel ranks,
   rank r takes global batches r, r+W, r+2W, ... of this one stream. POSIX only (mmap, glob):
   elsewhere sc_data_open fails with SC_ERROR_UNSUPPORTED. */
typedef struct sc_data_config {
    int B, T;               /* rows and tokens a row of one batch */
    int rank, world;        /* data parallel: rank r takes global batches r, r+W, ... (0, 0 -> 0 of 1) */
    int shuffle;            /* 1: permute each shard's batches, per epoch, from shuffle_seed */
    uint64_t shuffle_seed;
    int vocab_size;         /* > 0: every token is checked < vocab_size when the shards open */
} sc_data_config;
typedef struct sc_data sc_data; /* opaque */
/* Open the shards matching pattern. No match -> IO naming the pattern; a file that cannot be
   opened -> IO; bad magic or version, or a size that disagrees with the token count (short or
   long) -> FORMAT; a .npy not 1-D, in Fortran order or of another dtype -> SHAPE; a token >=
   vocab_size (or negative, or >= 2^31) -> RANGE with the position in its shard and the value;
   each naming the file. No shard holding one batch, or bad B/T/rank/world -> INVALID_ARGS.
   sc_data_next returns RANGE for a negative or >= 2^31 token when vocab_size was 0. */
SCDEF sc_result sc_data_open(sc_data **out, const char *pattern, const sc_data_config *cfg);
SCDEF void sc_data_close(sc_data *d);
SCDEF sc_result sc_data_next(sc_data *d, int32_t *ids);     /* this rank's next batch: B*T tokens */
SCDEF int64_t sc_data_position(const sc_data *d);            /* global batches consumed so far (all ranks) */
SCDEF sc_result sc_data_seek(sc_data *d, int64_t position);  /* continue as if `position` global batches were read */
SCDEF int64_t sc_data_epoch_batches(const sc_data *d);       /* batches in one pass over all shards */
SCDEF int sc_data_shard_count(const sc_data *d);
SCDEF const char *sc_data_shard_name(const sc_data *d, int i);
SCDEF uint64_t sc_data_shard_tokens(const sc_data *d, int i);
/* Of the shards' file names (without directories, so a moved dataset still matches), token
   counts and widths, and B, T, shuffle and shuffle_seed (not rank or world: every rank, and
   a resume on another number of ranks, sees the same global stream). */
SCDEF uint64_t sc_data_hash(const sc_data *d);
/* Writes tokens as one llm.c shard: uint16 (magic 20240520) when every token < 65536 and !force_u32, else uint32 (20240801). */
SCDEF sc_result sc_data_write_shard(const char *path, const int32_t *tokens, size_t n, int force_u32);
/* ------------------------------------------------------------------------------------------
   Layer ops (CPU reference). Size letters, as in llm.c:
     B batch, T sequence, N = B*T rows, C hidden, I intermediate, H query heads, KV kv heads,
     D head_dim, Q = (H+2KV)*D the fused q|k|v width, K = (H+KV)*D the rotated q|k width, V vocab.
   Every op: outputs first, then what is saved for backward, then inputs, then sizes.
   Gradients of parameters accumulate (+=); gradients of activations overwrite (=), except
   rmsnorm_backward's dinp, whose input is the residual stream: it adds (+=) to it.
   Work is split by output element and every sum runs in a fixed order, so results do not
   depend on the number of threads, and a replay (recompute) gives the same bits.
   ------------------------------------------------------------------------------------------ */
SCDEF void sc_cpu_embedding_forward(float *out, const int32_t *ids, const float *wte, int N, int C);
SCDEF void sc_cpu_embedding_backward(float *dwte, const float *dout, const int32_t *ids, int N, int C);
SCDEF void sc_cpu_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w, int N, int C, float eps);
SCDEF void sc_cpu_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                                   const float *rstd, int N, int C);
/* res = a + b, then out = rmsnorm(res): the residual add fused with the next norm. */
SCDEF void sc_cpu_add_rmsnorm_forward(float *res, float *out, float *rstd, const float *a, const float *b,
                                      const float *w, int N, int C, float eps);
SCDEF void sc_cpu_add_forward(float *out, const float *a, const float *b, size_t n);
/* out[N,OC] = inp[N,IC] @ w[OC,IC]^T (+ bias[OC]) */
SCDEF void sc_cpu_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC);
/* dinp = dout @ w (if dinp); dw += dout^T @ inp (if dw); dbias += sum_n dout (if dbias) */
SCDEF void sc_cpu_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                                  const float *w, int N, int IC, int OC);
/* The matmuls are blocked, vectorised (AVX-512 or AVX2 + FMA, chosen at run time) and split over OpenMP threads;
   every output element is one chain over k in a fixed order, so the bits never depend on the thread count. The
   vector paths fuse multiply-adds and agree with each other bit for bit; the scalar path rounds products on their own
   (other bits, same tolerance). "avx512", "avx2" or "scalar": the path they take on this CPU (attention too). */
SCDEF const char *sc_cpu_matmul_isa(void);
#ifdef SLIDECHECK_TESTING
/* Test hook (private): forces "avx512", "avx2" or "scalar"; returns 0 if this CPU cannot run it. NULL: automatic. */
SCDEF int sc__cpu_matmul_force(const char *isa);
#endif
/* RoPE tables, HF convention: inv_freq in float32, cos/sin of (pos * inv_freq) in float32; [maxT, D/2]. */
SCDEF void sc_rope_table(float *cosb, float *sinb, int maxT, int D, double theta);
/* qk[N,K] = rope(qknorm(qkv[:, :K])) per head (norm only if qnorm_w != NULL); rstd[N, H+KV]. */
SCDEF void sc_cpu_qknorm_rope_forward(float *qk, float *rstd, const float *qkv, const float *qnorm_w,
                                      const float *knorm_w, const float *cosb, const float *sinb,
                                      int B, int T, int H, int KV, int D, float eps);
/* dqkv[:, :K] = backward of the above (overwrites q|k columns only); dqnorm_w/dknorm_w +=. */
SCDEF void sc_cpu_qknorm_rope_backward(float *dqkv, float *dqnorm_w, float *dknorm_w, const float *dqk,
                                       const float *qkv, const float *qnorm_w, const float *knorm_w,
                                       const float *rstd, const float *cosb, const float *sinb,
                                       int B, int T, int H, int KV, int D);
/* Causal GQA attention. q|k from qk[N,K], v from qkv[N,Q] (columns K..Q). out[N,H*D], lse[B,H,T]. */
SCDEF void sc_cpu_attention_forward(float *out, float *lse, const float *qk, const float *qkv,
                                    int B, int T, int H, int KV, int D);
/* dqk[N,K] =, dqkv[:, K:Q] (the v columns) = */
SCDEF void sc_cpu_attention_backward(float *dqk, float *dqkv, const float *dout, const float *qk,
                                     const float *qkv, const float *out, const float *lse,
                                     int B, int T, int H, int KV, int D);
/* m[N,I] = silu(gu[:, :I]) * gu[:, I:] */
SCDEF void sc_cpu_swiglu_forward(float *m, const float *gu, int N, int I);
SCDEF void sc_cpu_swiglu_backward(float *dgu, const float *dm, const float *gu, int N, int I);
/* both: dgu as sc_cpu_swiglu_backward and m as sc_cpu_swiglu_forward (the same bits), one pass */
SCDEF void sc_cpu_swiglu_backward_remat(float *dgu, float *m, const float *dm, const float *gu, int N, int I);
/* Cross-entropy over rows of logits[n, V] with target[n] (< 0: row ignored). Writes
   dlogits = (softmax - onehot) * scale for kept rows, 0 for ignored rows (may alias logits),
   and rowloss[n] (0 for ignored rows); the caller sums row losses in a fixed order. */
SCDEF void sc_cpu_crossentropy_forward_backward(float *dlogits, float *rowloss, const float *logits,
                                                const int32_t *target, int n, int V, float scale);
/* The same over vocabulary slices, for an LM head computed slice by slice (two passes).
   Pass 1, slice [v0, v0 + Vs) of logits[n, Vs]: folds the slice's max and sum of exp into
   ms[n][2] (started afresh at v0 == 0) and picks the target's logit into tl[n]. Pass 2: dlogits
   of the slice = (softmax - onehot) * scale with lse = max + log(sum) (0 for ignored rows; may
   alias logits), and at v0 == 0 rowloss = lse - tl. */
SCDEF void sc_cpu_crossentropy_slice_stats(float *ms, float *tl, const float *logits, const int32_t *target, int v0,
                                           int n, int Vs);
SCDEF void sc_cpu_crossentropy_slice_backward(float *dlogits, float *rowloss, const float *logits, const float *ms,
                                              const float *tl, const int32_t *target, int v0, int n, int Vs,
                                              float scale);
/* acc[n] = x (first) or acc + x, in f32 (partial sums of the sliced head's input gradient) */
SCDEF void sc_cpu_accumulate(float *acc, const float *x, size_t n, int first);
SCDEF void sc_cpu_sgd_update(float *p, const float *g, size_t n, float lr, float weight_decay);
SCDEF void sc_cpu_adamw_update(float *p, float *m, float *v, const float *g, size_t n, float lr, float beta1,
                               float beta2, float eps, float weight_decay, int t);
/* Optimizers on host arrays for slide mode (and the CPU backend): the constants of one step are
   computed once; per element the arithmetic is exactly that of the CUDA kernels (every operation
   rounded on its own, no FMA), so host and device updates give the same bits. p, m, v have dtype
   pt (SC_BF16: uint16_t bits, stored round-to-nearest-even), AdamW's m and v dtype st (bf16 state
   halves the host memory of f32 master weights' optimizer), g has dtype gt; wout (may be NULL)
   receives the updated p as bf16 (the working copy uploaded in master-weights mode). On the AVX2 / AVX-512
   paths wout, which is written without being read, takes non-temporal stores (no read of its lines first), fenced
   before the range function returns. */
typedef struct sc_optim_consts {
    float lr, beta1, beta2, eps, weight_decay;
    float decay;      /* 1 - lr * weight_decay */
    float omb1, omb2; /* 1 - beta1, 1 - beta2 */
    float step;       /* lr / (1 - beta1^t) */
    float bc2s;       /* sqrt(1 - beta2^t) */
    float gscale;     /* each gradient is first multiplied by this (gradient clipping; 1 by default:
                         g * 1 == g, the same bits as without) */
} sc_optim_consts;
SCDEF sc_optim_consts sc_optim_consts_make(float lr, float beta1, float beta2, float eps, float weight_decay, int t);
/* AdamW / SGD over [0, n) on the calling thread (AVX-512 / AVX2 chosen at run time). */
SCDEF void sc_cpu_adamw_range(void *p, void *m, void *v, sc_dtype pt, sc_dtype st, const void *g, sc_dtype gt,
                              uint16_t *wout, size_t n, const sc_optim_consts *k);
SCDEF void sc_cpu_sgd_range(void *p, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout, size_t n,
                            const sc_optim_consts *k);
/* The same split in fixed chunks over `threads` OpenMP threads (0: all); bits do not depend on it. */
SCDEF void sc_cpu_adamw_mt(void *p, void *m, void *v, sc_dtype pt, sc_dtype st, const void *g, sc_dtype gt,
                           uint16_t *wout, size_t n, const sc_optim_consts *k, int threads);
SCDEF void sc_cpu_sgd_mt(void *p, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout, size_t n,
                         const sc_optim_consts *k, int threads);
/* "avx512", "avx2" or "scalar": the path the range functions take on this CPU. */
SCDEF const char *sc_cpu_optim_isa(void);
/* How the host AdamW runs on this host (process-wide): software prefetch in its loops, and transparent huge pages
   for slide mode's pageable host state (f32 master weights, m, v) allocated from then on. Neither changes a bit.
   sc_cpu_optim_tune times the four pairs on n parameters (0: 24 Mi) laid out as slide's (f32 weights, m, v and
   gradients, bf16 weights out; 18 B a parameter, once per page kind), interleaved over 5 rounds after one to warm
   up, with `threads` threads (0: all), and keeps the fastest unless the pair in use is within 2% of it. Slide mode
   calls it once per process, before allocating, where the host updates at least 64 Mi AdamW parameters. On Linux the
   processes of one host take turns (a lock on $TMPDIR or /tmp's slidecheck-host-optim.lock; where that file cannot
   be opened, they time at once): data-parallel ranks timing together shared the cores and the memory and chose
   from those rates. Out of memory for the buffers: SC_ERROR_OUT_OF_MEMORY, the choice unchanged. Not to be called
   while an update runs.
   sc_cpu_optim_choice: the pair in use (before any tuning: prefetch on, huge pages on) and the rates last
   measured. */
typedef struct sc_cpu_optim_tuning {
    int tuned;              /* 1 once sc_cpu_optim_tune has measured this host */
    int prefetch;           /* software prefetch in the AdamW loops (2 KiB of f32 ahead) */
    int huge_pages;         /* transparent huge pages asked for slide's pageable host state */
    int threads;            /* the threads it timed */
    size_t n;               /* the parameters it timed */
    double gparams_s[2][2]; /* [huge_pages][prefetch]: median AdamW rate, G parameters/s */
} sc_cpu_optim_tuning;
SCDEF sc_result sc_cpu_optim_tune(int threads, size_t n);
SCDEF sc_cpu_optim_tuning sc_cpu_optim_choice(void);
/* Gradient clipping, torch.nn.utils.clip_grad_norm_'s semantics. sc_grad_norm: the 2-norm of
   g[0, n) (dtype gt), summed in f64 in a fixed order that the CUDA kernel repeats (chunks of
   SC_GRAD_NORM_CHUNK; in each, 256 lanes of strided sums meet in a halving tree; the chunk sums
   likewise): the same bits on the host and the device, for any thread count. sc_clip_scale: the
   factor min(1, max_norm / (norm + 1e-6)) every gradient is multiplied by (NaN stays NaN, as
   in torch). */
#define SC_GRAD_NORM_CHUNK 65536
SCDEF double sc_grad_norm(const void *g, sc_dtype gt, size_t n, int threads);
#if defined(__CUDACC__)
__host__ __device__
#endif
static inline float sc_clip_scale(double norm, float max_norm)
{
    double c = (double)max_norm / (norm + 1e-6);
    return (c < 1.0 || c != c) ? (float)c : 1.0f;
}
/* Learning-rate schedules, transformers' formulas (get_constant_schedule_with_warmup,
   get_linear_schedule_with_warmup, get_cosine_with_min_lr_schedule_with_warmup): the factor of
   the base rate at optimizer step `step` (0-based) of `total`; warm-up from 0 (step 0 has lr 0
   when warmup > 0). */
typedef enum sc_lr_schedule { SC_LR_CONSTANT = 0, SC_LR_LINEAR = 1, SC_LR_COSINE = 2 } sc_lr_schedule;
SCDEF double sc_lr_factor(sc_lr_schedule s, int64_t step, int64_t warmup, int64_t total, double min_lr_ratio);
/* "constant", "linear" or "cosine"; SC_ERROR_INVALID_ARGS for anything else */
SCDEF sc_result sc_lr_schedule_parse(const char *name, sc_lr_schedule *out);
SCDEF const char *sc_lr_schedule_name(sc_lr_schedule s);
#ifdef SLIDECHECK_TESTING
/* Test hook (private): forces "avx512", "avx2" or "scalar"; returns 0 if this CPU cannot run it. NULL: automatic. */
SCDEF int sc__cpu_optim_force(const char *isa);
/* Test / bench hook (private): wout's stores, 1 non-temporal (the default), 0 ordinary; returns the previous
   setting. The bits are the same either way. Not to be called while an update runs. */
SCDEF int sc__cpu_optim_stream(int on);
/* Test / bench hook (private): the AdamW loops' software prefetch, 1 on, 0 off; returns the previous setting. */
SCDEF int sc__cpu_optim_prefetch(int on);
/* Test hook (private): when this process's last sc_cpu_optim_tune held the host's turn, [*t0, *t1] in ns of the
   monotonic clock (both 0 before any) */
SCDEF void sc__cpu_optim_tune_window(int64_t *t0, int64_t *t1);
#endif

/* ------------------------------------------------------------------------------------------
   Checkpoint policies. A policy is a per-layer plan:
     keep[l]: what layer l saves when it is not inside a recomputed segment;
     seg[l]:  the first layer of the recomputed segment that holds l, or -1 (not recomputed).
   A recomputed segment [s, e) saves only its input x_s; in backward its forward is replayed
   once (phase "recompute") and then back-propagated layer by layer.
   ------------------------------------------------------------------------------------------ */
typedef enum sc_keep {
    SC_KEEP_ALL = 0,        /* every activation the backward needs */
    SC_KEEP_SELECTIVE = 1,  /* outputs of GEMMs and attention; norms, RoPE, SwiGLU recomputed */
    SC_KEEP_SELECTIVE_MLP = 2, /* attention block kept; the whole MLP block recomputed */
    SC_KEEP_SELECTIVE_ATTN = 3, /* input, residual and gate_up kept (over half of the bytes saved):
                                  ln1, qkv, q/k-norm + RoPE, attention, ln2 and SwiGLU recomputed */
    SC_KEEP_SELECTIVE_PROJ = 4  /* input, attention output and gate_up kept (as many bytes saved as
                                  selective:attn): ln1, the qkv and o projections, q/k-norm + RoPE,
                                  residual + ln2 and SwiGLU recomputed, attention itself not */
} sc_keep;
#define SC_KEEP_COUNT 5

#define SC_MAX_LAYERS 256
typedef struct sc_plan {
    int num_layers;
    unsigned char keep[SC_MAX_LAYERS];
    short seg[SC_MAX_LAYERS];
    char name[128];
} sc_plan;

/* Parse a policy: none | full | every:K | layers:a-b,c,... | selective | selective:mlp |
   selective:attn | selective:proj | sqrt.
   ("budget:SIZE" needs costs: use sc_planner_plan.) */
SCDEF sc_result sc_plan_parse(sc_plan *plan, const char *policy, int num_layers);
/* A set of layers: all | none | first:K | last:K | a-b,c,... (the list of layers:LIST); mark[l]
   = 1 for the layers in it, 0 for the others (num_layers entries written). */
SCDEF sc_result sc_layer_set_parse(unsigned char *mark, const char *spec, int num_layers);
/* "keep all", "selective", "selective:mlp", "selective:attn", "selective:proj" */
SCDEF const char *sc_keep_name(int keep);
/* Bytes that layer l keeps after forward under `plan` (closed form), in the model's storage. */
SCDEF size_t sc_plan_saved_bytes_layer(const sc_config *cfg, const sc_plan *plan, int l, int B, int T,
                                       int act_bytes);
SCDEF size_t sc_plan_saved_bytes(const sc_config *cfg, const sc_plan *plan, int B, int T, int act_bytes);

/* ------------------------------------------------------------------------------------------
   Model and training
   ------------------------------------------------------------------------------------------ */
typedef enum sc_optim { SC_OPTIM_SGD = 0, SC_OPTIM_ADAMW = 1 } sc_optim;
/* resident: everything on the device. slide: weights, gradients and optimizer state live on the
   host; each layer's weights are uploaded just before use (prefetched on their own stream), its
   gradients go back to pinned host memory as soon as they are complete, and host threads update
   it while the device works on the layers below. The arithmetic is that of resident mode: losses,
   gradients and weights are bitwise equal, for every checkpoint policy. */
typedef enum sc_mode { SC_MODE_RESIDENT = 0, SC_MODE_SLIDE = 1 } sc_mode;
/* The whole-step CUDA graph. AUTO (zero, the default) uses it where it works: the CUDA backend,
   resident mode (data parallel over NCCL too, ZeRO-1 included: the collectives are nodes of the
   graph), no keep_logits. Each shape's second step is captured and the later ones replay it: the
   same bits as eager steps. ON fails where it cannot be; OFF runs eagerly. */
typedef enum sc_cuda_graph { SC_CUDA_GRAPH_AUTO = 0, SC_CUDA_GRAPH_ON = 1, SC_CUDA_GRAPH_OFF = 2 } sc_cuda_graph;

typedef struct sc_model_config {
    sc_device device;          /* SC_DEVICE_CPU (default) or SC_DEVICE_CUDA */
    int bf16;                  /* bf16 storage (CUDA); the CPU rounds stored values to bf16 */
    size_t mem_cap;            /* bytes; 0 = none */
    uint64_t seed;             /* random init (0 -> 1234) */
    sc_optim optim;
    float lr;                  /* 0 -> 1e-4 */
    float beta1, beta2, eps;   /* 0 -> 0.9, 0.999, 1e-8 */
    float weight_decay;        /* plain value (0 means 0) */
    int keep_logits;           /* copy logits of the last forward to host (for `grad`) */
    int master_weights;        /* CUDA bf16: f32 master weights, f32 gradients and optimizer state
                                  (slide: f32 master and state on the host, bf16 working copies) */
    int state_bf16;            /* AdamW's m and v stored as bf16 (both modes, both backends): with
                                  f32 master weights, 8 instead of 12 bytes per parameter of state
                                  and master on the host. Other arithmetic than f32 state. */
    sc_mode mode;              /* SC_MODE_RESIDENT (default) or SC_MODE_SLIDE */
    int slide_prefetch;        /* slide: layers uploaded ahead of the one computing (0 -> 1) */
    int slide_cpu_threads;     /* slide: threads of the host optimizer (0 -> all cores but one) */
    int head_slice;            /* 0: the LM head in one piece. R > 0: in vocabulary slices of R rows,
                                  the loss by an online log-sum-exp over two passes; slide mode then
                                  streams the head slice by slice and, for one micro-batch of at most
                                  1024 rows, sends its gradient down slice by slice: no whole-head
                                  buffer on the device. Other arithmetic than the whole head (both
                                  modes alike); the head's weights cross twice per pass. */
    int slide_dpu;             /* slide: one-step-delayed parameter update (ZeRO-Offload's DPU). The host
                                  applies step s-1's update while the device runs step s, which uses
                                  weights without it: OTHER MATHEMATICS than resident mode (W[s+1] =
                                  update(W[s], g[s-1])). A gradient-only step applies the pending update
                                  too; get_params / sync / save see every update. Two host working
                                  copies of the weights (dtype of the device weights). */
    int slide_keep_head;       /* slide: the embedding, final norm and LM head stay on the device with
                                  their gradients and optimizer state (the device optimizer, as in
                                  resident mode) while the layers stream; the same bits. More device
                                  memory (sc_slide_window_bytes counts it), no head traffic. Not with
                                  slide_dpu. */
    unsigned char slide_device_layers[SC_MAX_LAYERS]; /* slide: nonzero = layer l stays on the device (weights, gradients and optimizer state, the device optimizer); zero = streamed (the default) */
                               /* a device layer is never uploaded nor downloaded and is updated
                                  right after its last backward by resident mode's kernels (the
                                  same bits); its bytes are allocations of their own, counted by
                                  sc_slide_window_bytes, and the window has no more slots than
                                  streamed layers. Not with slide_dpu, slide_device_update,
                                  clip_grad_norm or data parallel (comm). */
    int slide_device_update;   /* slide with SGD: each layer's SGD step runs on the device, in its slot,
                                  as soon as backward has its gradients (resident mode's kernel: the
                                  same bits), and the updated weights go down instead of the
                                  gradients. The host then only copies (no 6 bytes a parameter of
                                  host optimizer traffic beside the transfers) and the layers still
                                  in slots at the end of backward are the next forward's first,
                                  uploaded no more. The embedding and head keep the host update (or
                                  the device's, with slide_keep_head); with slide_head_once and one
                                  micro-batch of at most 1024 rows the LM head's SGD runs on the
                                  device too, slice by slice (a tied head's rows that a token touched
                                  stay the host's, after the embedding backward). SGD without master weights
                                  (no optimizer state), one process, not with slide_dpu; after an
                                  update step the layers' gradients are not on the host
                                  (sc_model_get_grads fails: a gradient-only step keeps them). */
    int slide_head_once;       /* slide with head_slice: the whole LM head goes up once a step into the
                                  head slot and serves both passes of the sliced loss (one upload
                                  instead of two); the gradients and logits stay in slices. A whole
                                  head of weights on the device (sc_slide_window_bytes counts it).
                                  The same bits as head_slice alone. Not with slide_keep_head. */
    int verbose;               /* 1: progress lines on stderr (host allocation in slide mode) */
    struct sc_dist_comm *comm; /* data parallel over these processes (sc_dist_comm_open): each step's
                                  gradients and loss are summed over the ranks (rank order: the same
                                  bits on every rank) before the update, each rank giving its shard
                                  of the batch, so the replicas stay equal. On the GPU (resident
                                  mode) the gradients are summed by NCCL (loaded at run time) on a
                                  communication stream, layer by layer as backward completes them
                                  (at W > 2 as reduce-scatter + all-gather, ZeRO-1's order); every
                                  rank adds every rank's embedding rows, from a gather of dL/dx_0
                                  (W x the micro-batches' activations on each device), to the summed
                                  head part, as slide mode's hosts do; the loss over this channel. Slide mode (CPU backend, without
                                  DPU and keep-head): the host gradients are summed once all have
                                  landed, then one host update; the same bits as resident mode. */
    int zero;                  /* 1, with comm and AdamW: ZeRO-1, each rank keeps and updates the AdamW
                                  state of its 1/W of the parameters, then the ranks exchange the
                                  updated parameters (on the GPU, resident: at the start of the next
                                  step, under its forward, bucket by bucket as it reads them, or
                                  when sc_model_get_params reads them); the same bits as plain data
                                  parallel. Slide mode: the host state of this rank's chunk of each
                                  layer (the split its host updates), the embedding, final norm and
                                  head's whole on every rank */
    int bucket_mb;             /* data parallel over NCCL, resident: the gradients of consecutive
                                  layers (from the last down) are summed by one NCCL launch once
                                  they reach bucket_mb MiB or hold as many layers as are left below
                                  them (the last groups: 4, 2, 1 layers, so that their sums end
                                  under the backward), and at layer 1; layer 0's alone, so that
                                  the update of the others starts under its backward. Two ranks,
                                  plain: one all-reduce of the range; else each layer's
                                  reduce-scatter and remainder grouped in one launch (and plain data
                                  parallel's all-gathers in a second), each adding as it would
                                  alone: the same bits whatever bucket_mb. Fewer launches slow the
                                  backward less: at 2048 x 4 a GPU, 7 layers a sum scaled
                                  1.880-1.892x where one a layer scaled 1.861-1.866x (2 x H200), and
                                  3.689x against 3.643x at 4 GPUs (4 x H200). The last groups'
                                  halving: 1.925x against 1.917x (2 x H200, alternating runs);
                                  4 x H200, copy engines: 3.793x, where an earlier call with one
                                  group from layer 6 to 1 gave 3.749x. 0: SC_BUCKET_MB;
                                  SC_BUCKET_LAYER (or a size under one layer's): one a layer */
    int dp_sums;               /* data parallel on the GPU, 2 to 8 ranks of one host:
                                  SC_DP_SUMS_AUTO (0) sums the gradients by the copy engines (peer
                                  copies, no SM taken from the backward; resident mode, a scratch of
                                  (W - 1) / W of the gradients) where every GPU reaches the others
                                  and NCCL_P2P_DISABLE is not set, else by NCCL; SC_DP_SUMS_NCCL
                                  always by NCCL. At two ranks the same bits either way. Past two,
                                  auto adds the ranks' parts in rank order (f32, one rounding) and
                                  slide mode does too (over NCCL's copies, W - 1 pieces of 8 MiB
                                  of scratch), so resident and slide keep the same bits; NCCL's
                                  ring adds in its own order: bits of its own, within rounding. */
    int gpu;                   /* CUDA device ordinal (data parallel: the process's local rank) */
    sc_cuda_graph cuda_graph;  /* whole-step CUDA graph: AUTO (default), ON or OFF (see the enum) */
    int gemm_tune;             /* CUDA: 1 times each GEMM shape's candidates with the bits of
                                  cuBLASLt's first choice and keeps the fastest
                                  (sc_cuda_config.gemm_tune); 0 (default): the first choice.
                                  Needs the CUDA backend and no mem_cap (the tuning's scratch
                                  is outside the allocator's accounting): else create fails */
    float clip_grad_norm;      /* > 0: before each update every gradient is multiplied by
                                  sc_clip_scale(norm, clip_grad_norm), norm the 2-norm over all
                                  gradients (torch's clip_grad_norm_); the same bits in every mode
                                  and policy. Slide mode then updates after the whole backward
                                  (the norm needs every gradient), layer by layer from the first.
                                  Not with slide_dpu, slide_keep_head, slide_device_update. ZeRO-1
                                  on the GPU then all-reduces the gradients (the norm reads every
                                  sum) where it would reduce-scatter them. 0: no clipping */
} sc_model_config;

#define SC_BUCKET_MB 640 /* sc_model_config.bucket_mb's default: 7 layers of Qwen3-1.7B in bf16 */
#define SC_BUCKET_LAYER (-1) /* sc_model_config.bucket_mb: one sum a layer, whatever its size */
#define SC_DP_SUMS_AUTO 0     /* sc_model_config.dp_sums */
#define SC_DP_SUMS_NCCL 1
#define SC_CUDA_P2P_PIECE_BYTES (8u << 20) /* the ordered sums' pieces (sc_cuda_p2p_export) */
#define SC_CUDA_P2P_COPIES 2               /* sc_cuda_p2p_on */
#define SC_CUDA_P2P_ORDERED 1

typedef struct sc_model sc_model; /* opaque */
typedef struct sc_cuda sc_cuda;

SCDEF sc_model_config sc_model_config_init(void);
/* Create a model with random init (params == NULL) or from a flat host float buffer. */
SCDEF sc_result sc_model_create(sc_model **out, const sc_config *cfg, const sc_model_config *mc,
                                const float *params);
SCDEF void sc_model_destroy(sc_model *m);
SCDEF const sc_config *sc_model_cfg(const sc_model *m);
SCDEF sc_allocator *sc_model_allocator(sc_model *m);
SCDEF void sc_model_set_tracer(sc_model *m, sc_tracer *tr);
/* Forward + backward on ids[B*T]: loss = mean next-token cross-entropy over B*(T-1).
   Gradients are overwritten (zeroed first). Checks ids < vocab and T <= max_position. */
SCDEF sc_result sc_model_forward_backward(sc_model *m, const sc_plan *plan, const int32_t *ids, int B, int T,
                                          float *loss);
SCDEF sc_result sc_model_optimizer_step(sc_model *m);
/* One training step over `accum` micro-batches of [B, T] (ids holds accum*B*T tokens):
   gradients summed in micro-batch order, loss = mean over all accum*B*(T-1) targets, then (with
   update) the optimizer. In slide mode the update of each layer overlaps the backward of the
   layers below, and each layer crosses to the device once for all micro-batches. The host
   updates may still run when the call returns (the next step's upload of a layer waits for its
   update; sc_model_get_params / get_grads / sc_model_sync wait for all): ids may be reused at
   once, and the mathematics is that of the update before the next step (with slide_dpu: before
   the step after next). */
SCDEF sc_result sc_model_step(sc_model *m, const sc_plan *plan, const int32_t *ids, int accum, int B, int T,
                              int update, float *loss);
/* Slide mode: waits for the host updates still running and hands their spans to the tracer
   (call it inside the last traced step). SC_SUCCESS at once in resident mode. */
SCDEF sc_result sc_model_sync(sc_model *m);
/* Steps whose device work ran as one CUDA graph launch (the capturing step included), and the
   kernels (cuBLASLt calls included) the current graph holds; 0 without a graph. */
SCDEF int64_t sc_model_graph_steps(const sc_model *m);
SCDEF int64_t sc_model_graph_kernels(const sc_model *m);
/* Slide mode: bytes the last step moved host -> device and device -> host, host bytes held
   (pinned and pageable) and the device bytes of the smallest window a plan needs (weight slots
   of the widest recomputed segment + prefetch, the head slot and the layer gradient buffers: the
   widest segment's, one more where more layers stream; with slide_keep_head the kept head's
   weights, gradients and optimizer state instead of its slot). */
typedef struct sc_slide_info {
    uint64_t h2d_bytes, d2h_bytes;   /* last step */
    uint64_t h2d_first_bytes;        /* last step's uploads queued before its head and loss (the
                                        forward's: the step's downloads of gradients or updated
                                        weights come from the head and the backward) */
    size_t host_update_params;       /* parameters the host optimizer updated in the last step (all,
                                        less what the device updated with slide_keep_head or
                                        slide_device_update, and over NCCL less the other ranks'
                                        chunks; 0 without an update) */
    size_t pinned_bytes, host_bytes; /* held now */
    size_t window_bytes;             /* device bytes of the slots and gradient buffers (and of the
                                        layers kept on the device: sc_slide_window_bytes) */
    double opt_ms;                   /* host optimizer time of the last step's updates (summed over
                                        its tasks, also those that ran into the next step) */
    double opt_wait_ms;              /* time the step waited for the optimizer at its end */
} sc_slide_info;
SCDEF sc_slide_info sc_model_slide_info(const sc_model *m);
SCDEF size_t sc_slide_window_bytes(const sc_config *cfg, const sc_model_config *mc, const sc_plan *plan);
#ifdef SLIDECHECK_TESTING
/* Test hook (private): 1 lays out slide's gradient of an untied head as over NCCL, [final norm | LM head],
   on any backend (resident's bits either way); returns the previous setting. */
SCDEF int sc__slide_norm_first_force(int on);
/* Test hook (private): slide over NCCL, a tied head of V rows of C split over W ranks: rank r's
   norm chunks of the embedding, [k[0], k[1]), and the rows of the head's gradients its host
   holds, [lo[i], hi[i]) (sc__slide_head_norm_chunks, sc__slide_grad_rows). */
SCDEF void sc__slide_split_head_rows(int V, int C, int W, int r, size_t k[2], size_t lo[2], size_t hi[2]);
#endif
/* The weights sc_model_create makes when given params NULL, into dst (sc_config_num_params
   floats, flat order): HF's init (normal(0, init_std) for linear and embedding weights, 1 for
   norms, 0 for biases) from mc.seed = seed, the same values on any machine and thread count.
   OUT_OF_MEMORY only for its small parameter table. */
SCDEF sc_result sc_params_init(float *dst, const sc_config *cfg, uint64_t seed);
/* Copy parameters / gradients / last logits ([B,T,V]) to host floats. In slide mode's data
   parallel on the GPU each rank's host holds current weights and gradients for its chunks of each
   layer and of a tied head's rows only, and after a resident
   ZeRO-1 update on the GPU each rank's device holds its own chunks' (the next step's forward
   gathers the others'), so get_params and, in slide mode, get_grads gather them over the comm:
   every rank must call them. */
SCDEF sc_result sc_model_get_params(sc_model *m, float *dst);
SCDEF sc_result sc_model_get_grads(sc_model *m, float *dst);
SCDEF const float *sc_model_logits(const sc_model *m);
/* Bytes currently kept as saved activations (sum of requested sizes of tensors tagged
   "(saved activation)"), as measured by the allocator, after the last forward. */
SCDEF size_t sc_model_last_saved_bytes(const sc_model *m);
/* The model's CUDA context (NULL on the CPU backend): for tracer event callbacks. */
SCDEF sc_cuda *sc_model_cuda(sc_model *m);
/* Set tc's timing callbacks for m: on the GPU, CUDA events on the model's streams and a device
   sync at each step's end (so wall times include the queued work); on the CPU, none (the CPU
   clock). The other fields of tc are left as they are. */
SCDEF void sc_model_tracer_timing(sc_model *m, sc_tracer_config *tc);
/* The memory counters sc_tracer_step_end takes, now: the model's allocator (current and peak
   allocated and reserved; reset the peaks with sc_allocator_reset_peak) and slide's pinned bytes. */
SCDEF sc_tracer_mem sc_model_tracer_mem(const sc_model *m);
/* Sizes like "6GiB", "512MiB", "1.5GB", "4096" (bytes). 0 on success, -1 on a malformed size. */
SCDEF int sc_parse_size(const char *s, size_t *out);
/* The learning rate of the next update (a schedule sets it before each step), and the current one. */
SCDEF void sc_model_set_lr(sc_model *m, float lr);
SCDEF float sc_model_lr(const sc_model *m);
/* Optimizer steps taken so far (the AdamW bias correction's t). */
SCDEF int sc_model_steps_done(const sc_model *m);
/* The 2-norm of the current gradients, before clipping (sc_grad_norm's order: the same bits in
   every mode): the one the last update clipped with, else computed now (waits for the device
   or the host optimizer). In slide mode, unclipped: once asked, the later updating steps sum
   each layer's part as its gradients land, ahead of its update (over NCCL on the device, after
   its sum), and the norm waits for those sums and the head's and embedding's tasks only, not
   for the layers' updates, which run on beside the next step; the parts kept on the device
   (slide_device_layers, slide_keep_head) are summed there. Over NCCL every rank calls it: a
   tied head's rows are split over the ranks, whose hosts exchange their parts of its sums. NaN
   where the gradients are not all in one place (slide_device_update after an update, GPU
   ZeRO-1). */
SCDEF double sc_model_grad_norm(sc_model *m);
/* The optimizer's state as a safetensors file: "exp_avg" and "exp_avg_sq" (AdamW's m and v) and
   "master" (f32 master weights, where the model has them), each F32 [nparams] in the flat
   parameter order, with the step count, optimizer and sizes as metadata. load checks them against
   the model (a mismatch is an error naming the file, and changes nothing) and restores the exact
   bits, so training goes on as if never stopped. Not with slide_keep_head. Written to path.tmp, then renamed. Data
   parallel: every rank calls save (the parts of ZeRO-1 and of slide's chunks are gathered) and
   rank 0 writes path (NULL on the others); every rank loads the file and takes its part. */
SCDEF sc_result sc_model_save_optimizer(sc_model *m, const char *path);
SCDEF sc_result sc_model_load_optimizer(sc_model *m, const char *path);

/* ------------------------------------------------------------------------------------------
   CUDA backend entry points (slidecheck_cuda.cu). Define SLIDECHECK_CUDA where you include
   this header and link slidecheck_cuda.o to run on the GPU. Every op mirrors the CPU op of
   the same name, with the context first. Buffers typed void* hold the context's storage
   dtype: activations and weights in `act` (f32, or bf16 with bf16=1), parameter gradients
   in `grad` (f32, or bf16 in pure-bf16 mode); float* buffers are always f32 (rstd, lse,
   rope tables, row losses). Ops are asynchronous on the context's compute stream; any
   failure is sticky and reported by sc_cuda_status(). All kernels are deterministic.
   ------------------------------------------------------------------------------------------ */
typedef struct sc_cuda_config {
    int bf16;          /* activations and weights in bf16 */
    int grads_f32;     /* with bf16: parameter gradients in f32 (master-weights mode) */
    int device;        /* CUDA device ordinal */
    int gemm_tune;     /* 0 (default): every GEMM runs cuBLASLt's first heuristic choice. 1: at a
                          GEMM shape's first use outside a graph capture, its top 8 candidates run
                          on random operands of that shape; those whose output has the first
                          choice's bits (the same summation order) are timed, each after the L2
                          cache is flushed, and the fastest is kept. The bits are the first
                          choice's either way; only the time changes. Outputs under 2^18
                          values in bf16 (2^12 in f32) are not tuned: too few to show another
                          summation order through the output's rounding. Needs scratch for the two
                          operands, two outputs and twice the L2 cache, at most 1 GiB and a
                          quarter of the free memory, else that shape runs the first choice */
} sc_cuda_config;

SC_CUDA_DEF sc_result sc_cuda_available(void);  /* SC_SUCCESS if a usable GPU and driver exist */
SC_CUDA_DEF sc_result sc_cuda_create(sc_cuda **out, const sc_cuda_config *cfg);
SC_CUDA_DEF void sc_cuda_destroy(sc_cuda *cu);
SC_CUDA_DEF sc_result sc_cuda_status(sc_cuda *cu);     /* the first failure so far (sticky) */
SC_CUDA_DEF const char *sc_cuda_error_message(sc_cuda *cu); /* its message ("" if none) */
/* Which kernels the attention ops run in bf16 mode. The tensor-core paths take head_dim 64 and
   128 with 16-byte aligned operands; other head_dims, unaligned operands and f32 storage always
   run the REFERENCE kernels. Every path is deterministic: the same inputs, the same bits, on a
   given GPU and build.
   - SC_ATTENTION_DEFAULT: the fastest path this GPU and build have. On compute capability 9.0
     (H100, H200) running this build's sm_90a code, head_dim 128 takes the Hopper kernels: a wgmma
     forward, dK/dV and dQ, each fed by TMA (where the driver has no TMA, PORTABLE's forward and
     dQ, and a dK/dV that loads with cp.async, the same bits).
     Everywhere else, and for head_dim 64, it is PORTABLE. The Hopper kernels give PORTABLE's
     bits: the same tiles in the same order, and wgmma adds a 16-term product as mma.sync does
     (bench/mma_order.c).
   - SC_ATTENTION_PORTABLE: the mma.sync / cp.async kernels that sm_80, sm_86, sm_89 and GPUs
     newer than Hopper run by default, forced on any GPU (an H100 can check them). Their bits do
     not depend on the GPU's shared memory (where it is short, as the 99 KiB a block of sm_86 /
     sm_89, head_dim 128's backward runs blocks of fewer warps, the same arithmetic per row).
     Sequences longer than 32 * head_dim (sc_attention_ds_bytes 0) take the dQ kernel that
     recomputes S and dP, on every tensor-core path.
   - SC_ATTENTION_REFERENCE: the plain tiled kernels, no tensor cores, f32 arithmetic on the
     stored inputs (P and dS not rounded to bf16): the GPU's reference for the other paths
     (the tests check every path against the CPU). Much slower than the others.
   A new context starts with DEFAULT. set_attention_path returns SC_ERROR_INVALID_ARGS (and
   changes nothing) for another value; attention_hopper is 1 where DEFAULT runs the Hopper
   kernels, 0 where it is PORTABLE. */
typedef enum sc_attention_path {
    SC_ATTENTION_DEFAULT = 0,
    SC_ATTENTION_PORTABLE = 1,
    SC_ATTENTION_REFERENCE = 2
} sc_attention_path;
SC_CUDA_DEF sc_result sc_cuda_set_attention_path(sc_cuda *cu, sc_attention_path p);
SC_CUDA_DEF int sc_cuda_attention_hopper(const sc_cuda *cu);
#ifdef SLIDECHECK_TESTING
/* Test hook (private): the mma.sync kernels pick their warps a block as on a GPU that gives a
   block `bytes` of shared memory (sm_86 / sm_89: 101376), so that an H100 runs the blocks such a
   GPU runs; 0: the device's own. */
SC_CUDA_DEF void sc__cuda_attention_smem_cap(sc_cuda *cu, int bytes);
/* Test hooks (private): the bit-identical GEMM tuning so far (sc_cuda_config.gemm_tune).
   out[0] GEMM shapes seen, [1] of those with more than one candidate and an output large
   enough to compare (2^18 values in bf16, 2^12 in f32), [2] of those tuned (their scratch
   fit), [3] candidates beyond the first run there, [4] of those with the first choice's bits,
   [5] shapes whose fastest kept candidate is not the first. _differs: the tuning's
   comparison of two m x n outputs (leading dimension ld, bf16 or f32): 1 if any bit differs, 0
   if none, -1 on a failure. */
SC_CUDA_DEF void sc__cuda_gemm_tune_stats(sc_cuda *cu, long long out[6]);
SC_CUDA_DEF int sc__cuda_gemm_tune_differs(sc_cuda *cu, const void *a, const void *b, int m, int n, int ld, int is_bf16);
/* Test hook (private): A B^T for A 64 x k, B 128 x k (bf16 bits, rows of 64 values, k 16..64 by
   16) summed by wgmma and by mma.sync in the same k16 order, into wg and mma (64 x 128 f32,
   row-major); SC_ERROR_UNSUPPORTED without the sm_90a code. bench/mma_order.c compares them. */
SC_CUDA_DEF sc_result sc__cuda_mma_order_probe(sc_cuda *cu, float *wg, float *mma, const uint16_t *a, const uint16_t *b,
                                               int k);
#endif
/* The dS workspace (sc_attention_ds_bytes) the next attention backward uses; NULL: a scratch
   buffer of the context's own. The model passes one from its caching allocator, so that the
   bytes count in its peak. */
SC_CUDA_DEF void sc_cuda_attention_workspace(sc_cuda *cu, void *ws, size_t bytes);
SC_CUDA_DEF sc_result sc_cuda_synchronize(sc_cuda *cu);
SC_CUDA_DEF const char *sc_cuda_device_name(sc_cuda *cu);
/* Versions as the CUDA APIs report them (e.g. 12080 for 12.8): the CUDA version the driver
   supports, the runtime's and cuBLAS's. Any may be NULL. */
SC_CUDA_DEF sc_result sc_cuda_versions(int *driver, int *runtime, int *cublas);
SC_CUDA_DEF int64_t sc_cuda_launch_count(sc_cuda *cu);  /* kernels launched so far */
/* NVTX ranges (nvtx3, header-only): the model opens one per tracer span ("fwd layer 3"), so an
   nsys timeline reads like trace.json. Without a profiler attached each costs a short snprintf
   of its name and a branch. */
SC_CUDA_DEF void sc_cuda_nvtx_push(const char *name);
/* Per-kernel profile of the compute stream: an event after every kernel and cuBLASLt call; a
   kernel's time runs from the previous one's end to its own (launch gaps fall into it).
   collect (after a step): synchronises and adds the step's times (keep = 0: warm-up, dropped);
   report: a table per step (divided by `steps`), longest first, snprintf-style. */
SC_CUDA_DEF sc_result sc_cuda_profile_ops(sc_cuda *cu, int on);
SC_CUDA_DEF sc_result sc_cuda_profile_collect(sc_cuda *cu, int keep);
SC_CUDA_DEF int sc_cuda_profile_report(sc_cuda *cu, char *buf, size_t cap, int steps);
SC_CUDA_DEF void sc_cuda_nvtx_pop(void);
/* Whole-step CUDA graphs: begin captures the compute stream (nothing runs), and the communication
   stream from the first sc_cuda_comm_wait on, its collectives included; end joins them and
   instantiates the graph into *graph, or returns why it could not (the context stays usable);
   launch replays it with the step's optimizer constants (k; NULL when it has none), and the next
   sc_cuda_comm_settle polls its collectives; kernels: launches captured. */
SC_CUDA_DEF sc_result sc_cuda_graph_begin(sc_cuda *cu);
SC_CUDA_DEF sc_result sc_cuda_graph_end(sc_cuda *cu, void **graph);
SC_CUDA_DEF sc_result sc_cuda_graph_launch(sc_cuda *cu, void *graph, const sc_optim_consts *k);
SC_CUDA_DEF long long sc_cuda_graph_kernels(void *graph);
SC_CUDA_DEF void sc_cuda_graph_destroy(sc_cuda *cu, void *graph);
/* allocator and tracer callbacks (user = the sc_cuda*) */
SC_CUDA_DEF void *sc_cuda_raw_alloc(size_t bytes, void *user);
SC_CUDA_DEF void sc_cuda_raw_free(void *ptr, size_t bytes, void *user);
SC_CUDA_DEF void *sc_cuda_event_record(int stream, void *user);
SC_CUDA_DEF int sc_cuda_event_query(void *event, void *user);
SC_CUDA_DEF void sc_cuda_event_destroy(void *event, void *user);
SC_CUDA_DEF void sc_cuda_event_synchronize(void *event, void *user);
SC_CUDA_DEF float sc_cuda_event_elapsed_ms(void *start, void *end, void *user);
SC_CUDA_DEF sc_result sc_cuda_mem_get_info(sc_cuda *cu, size_t *free_bytes, size_t *total_bytes);
/* Data parallel over NCCL (libnccl.so.2, or $SLIDECHECK_NCCL, loaded at first use). Rank 0 makes
   the unique id (SC_NCCL_ID_BYTES), every rank opens the communicator with it. comm_wait: the
   communication stream (SC_STREAM_COMM) waits for the compute stream's work so far;
   allreduce_sum sums buf in place over the ranks on the communication stream; comm_join: the
   compute stream waits for collectives queued so far (below). NCCL's order of summation is fixed
   for a fixed topology: two runs, the same bits. */
#define SC_NCCL_ID_BYTES 128
SC_CUDA_DEF sc_result sc_cuda_nccl_unique_id(void *id);
/* nccl_open: NCCL's initialisation waits for every rank; past timeout_s seconds (<= 0: no bound)
   it fails with SC_ERROR_TIMEOUT and a message instead of hanging. sc_model_create passes the
   control channel's wait (SLIDECHECK_RENDEZVOUS_TIMEOUT, with its grace on ranks other than 0). */
SC_CUDA_DEF sc_result sc_cuda_nccl_open(sc_cuda *cu, int world, int rank, const void *id, double timeout_s);
SC_CUDA_DEF void sc_cuda_comm_wait(sc_cuda *cu);
SC_CUDA_DEF void sc_cuda_allreduce_sum(sc_cuda *cu, void *buf, size_t n, sc_dtype t);
/* ZeRO-1: buf holds W chunks of n elements; reduce_scatter_sum leaves the sum of chunk `rank`
   over the ranks in this rank's chunk, allgather copies every rank's own chunk to all (in place) */
SC_CUDA_DEF void sc_cuda_reduce_scatter_sum(sc_cuda *cu, void *buf, size_t n, sc_dtype t);
SC_CUDA_DEF void sc_cuda_allgather(sc_cuda *cu, void *buf, size_t n, sc_dtype t);
/* comm_group(cu, 1) ... comm_group(cu, 0): the collectives between go as one NCCL launch and run
   together (none may read what another writes); each gives the sums it gives alone (the layers'
   groups saved one-a-layer's bytes at 2 and 4 ranks); sc_cuda_comm_count counts the group as one */
SC_CUDA_DEF void sc_cuda_comm_group(sc_cuda *cu, int begin);
/* comm_count: the collectives queued since the last settle; comm_join(k): the compute stream
   waits for the first k of them (in queue order, so for everything queued before the k-th) */
SC_CUDA_DEF size_t sc_cuda_comm_count(const sc_cuda *cu);
SC_CUDA_DEF void sc_cuda_comm_join(sc_cuda *cu, size_t k);
/* allreduce_chunks_sum: buf holds W chunks of n; each becomes their sum over the ranks
   (reduce_scatter_sum then allgather, pipelined where the copy engines sum). */
SC_CUDA_DEF void sc_cuda_allreduce_chunks_sum(sc_cuda *cu, void *buf, size_t n, sc_dtype t);
/* Ranks of one host (2 .. 8): the sums of a registered region by the copy engines instead of
   NCCL's kernels, which take SMs from the backward they overlap. p2p_export registers region
   (bytes: the gradients) and a scratch the peers write into: (W - 1) ceil(bytes / W) bytes, and
   past two ranks (W - 1) SC_CUDA_P2P_PIECE_BYTES more at its end for the ordered sums; region NULL
   (bytes 0, W > 2: slide mode) registers only that. It fills blob (SC_CUDA_P2P_BLOB_BYTES);
   p2p_import takes every rank's blob (W of them, in rank order) and maps the peers' (ranks of this
   host, GPUs this one reaches: else an error, and the context stays usable); p2p_use(1) once
   every rank imported, p2p_use(0) to drop it. Then the sums of ranges inside the region (an even
   offset and count) go by peer copies and an add on the communication stream: allreduce_sum at two
   ranks, reduce_scatter_sum and allreduce_chunks_sum at any. Two ranks add a + b in f32, rounded
   once, as NCCL does: the same bits. Past two the ranks' parts are added in rank order in f32 and
   rounded once, where NCCL's ring rounds each partial sum in its own order; reduce_scatter_sum and
   allreduce_chunks_sum of buffers outside the region then add in that order too, moved by NCCL's
   point-to-point copies (the ordered sums), so that every buffer's sums have the same bits.
   p2p_on: SC_CUDA_P2P_COPIES (region registered), SC_CUDA_P2P_ORDERED (W > 2, none), 0 (NCCL). */
#define SC_CUDA_P2P_BLOB_BYTES 512
SC_CUDA_DEF sc_result sc_cuda_p2p_export(sc_cuda *cu, void *region, size_t bytes, void *scratch, size_t scratch_bytes,
                                         void *blob);
SC_CUDA_DEF sc_result sc_cuda_p2p_import(sc_cuda *cu, const void *blobs);
SC_CUDA_DEF void sc_cuda_p2p_use(sc_cuda *cu, int on);
SC_CUDA_DEF int sc_cuda_p2p_on(const sc_cuda *cu);
/* Waits for the compute stream, polling this step's collectives (a graph launch's too): if none
   finishes for timeout_s (a rank died or stalls) or NCCL reports an error, aborts the
   communicator and fails with a message (SC_ERROR_TIMEOUT / SC_ERROR_CUDA) instead of hanging.
   The abort is given 10 s (NCCL's can wait on a dead peer without end); past that the
   communicator is left behind, and the message says so. */
SC_CUDA_DEF sc_result sc_cuda_comm_settle(sc_cuda *cu, double timeout_s);
/* copies: host buffers are plain memory; *_f32 convert to/from the dtype on the way */
SC_CUDA_DEF void sc_cuda_memset0(sc_cuda *cu, void *dst, size_t bytes);
/* zeroes dst on a side stream behind the compute stream's work so far, overlapping what comes
   next; sc_cuda_side_join makes the compute stream wait for it (sc_cuda_synchronize does too) */
SC_CUDA_DEF void sc_cuda_memset0_behind(sc_cuda *cu, void *dst, size_t bytes);
SC_CUDA_DEF void sc_cuda_side_join(sc_cuda *cu);
/* on: the weight-gradient writers (matmul_backward's dw and dbias, the norms' weights) set their
   gradients instead of adding to them, so that a step's first write needs no zeroed buffer. The
   bits are those of adding to zeros: a sum that starts at +0 is never -0. */
SC_CUDA_DEF void sc_cuda_grads_set(sc_cuda *cu, int on);
SC_CUDA_DEF void sc_cuda_upload(sc_cuda *cu, void *dst, const void *src, size_t bytes);
SC_CUDA_DEF void sc_cuda_download(sc_cuda *cu, void *dst, const void *src, size_t bytes); /* waits */
SC_CUDA_DEF void sc_cuda_upload_f32(sc_cuda *cu, void *dst, sc_dtype dt, const float *src, size_t n);
SC_CUDA_DEF void sc_cuda_download_f32(sc_cuda *cu, float *dst, const void *src, sc_dtype dt, size_t n); /* waits */
SC_CUDA_DEF void sc_cuda_convert(sc_cuda *cu, void *dst, sc_dtype dt, const void *src, sc_dtype st, size_t n);

SC_CUDA_DEF void sc_cuda_embedding_forward(sc_cuda *cu, void *out, const int32_t *ids, const void *wte, int N, int C);
/* ids on the device, sorted there: each token's rows are summed in position order */
SC_CUDA_DEF void sc_cuda_embedding_backward(sc_cuda *cu, void *dwte, const void *dout, const int32_t *ids, int N, int C);
SC_CUDA_DEF void sc_cuda_rmsnorm_forward(sc_cuda *cu, void *out, float *rstd, const void *inp, const void *w, int N, int C, float eps);
SC_CUDA_DEF void sc_cuda_rmsnorm_backward(sc_cuda *cu, void *dinp, void *dw, const void *dout, const void *inp, const void *w,
                                    const float *rstd, int N, int C);
SC_CUDA_DEF void sc_cuda_add_rmsnorm_forward(sc_cuda *cu, void *res, void *out, float *rstd, const void *a, const void *b,
                                       const void *w, int N, int C, float eps);
SC_CUDA_DEF void sc_cuda_add_forward(sc_cuda *cu, void *out, const void *a, const void *b, size_t n);
SC_CUDA_DEF void sc_cuda_matmul_forward(sc_cuda *cu, void *out, const void *inp, const void *w, const void *bias, int N, int IC, int OC);
SC_CUDA_DEF void sc_cuda_matmul_backward(sc_cuda *cu, void *dinp, void *dw, void *dbias, const void *dout, const void *inp,
                                   const void *w, int N, int IC, int OC);
SC_CUDA_DEF void sc_cuda_qknorm_rope_forward(sc_cuda *cu, void *qk, float *rstd, const void *qkv, const void *qnorm_w,
                                       const void *knorm_w, const float *cosb, const float *sinb,
                                       int B, int T, int H, int KV, int D, float eps);
SC_CUDA_DEF void sc_cuda_qknorm_rope_backward(sc_cuda *cu, void *dqkv, void *dqnorm_w, void *dknorm_w, const void *dqk,
                                        const void *qkv, const void *qnorm_w, const void *knorm_w, const float *rstd,
                                        const float *cosb, const float *sinb, int B, int T, int H, int KV, int D);
SC_CUDA_DEF void sc_cuda_attention_forward(sc_cuda *cu, void *out, float *lse, const void *qk, const void *qkv,
                                     int B, int T, int H, int KV, int D);
SC_CUDA_DEF void sc_cuda_attention_backward(sc_cuda *cu, void *dqk, void *dqkv, const void *dout, const void *qk,
                                      const void *qkv, const void *out, const float *lse, int B, int T, int H, int KV, int D);
SC_CUDA_DEF void sc_cuda_swiglu_forward(sc_cuda *cu, void *m, const void *gu, int N, int I);
SC_CUDA_DEF void sc_cuda_swiglu_backward(sc_cuda *cu, void *dgu, const void *dm, const void *gu, int N, int I);
SC_CUDA_DEF void sc_cuda_swiglu_backward_remat(sc_cuda *cu, void *dgu, void *m, const void *dm, const void *gu, int N, int I);
SC_CUDA_DEF void sc_cuda_crossentropy_forward_backward(sc_cuda *cu, void *dlogits, float *rowloss, const void *logits,
                                                 const int32_t *target, int n, int V, float scale);
SC_CUDA_DEF void sc_cuda_crossentropy_slice_stats(sc_cuda *cu, float *ms, float *tl, const void *logits,
                                                  const int32_t *target, int v0, int n, int Vs);
SC_CUDA_DEF void sc_cuda_crossentropy_slice_backward(sc_cuda *cu, void *dlogits, float *rowloss, const void *logits,
                                                     const float *ms, const float *tl, const int32_t *target, int v0,
                                                     int n, int Vs, float scale);
/* acc (f32) = x or acc + x, x in the activation dtype */
SC_CUDA_DEF void sc_cuda_accumulate(sc_cuda *cu, float *acc, const void *x, size_t n, int first);
/* p in dtype pt, AdamW's m, v in dtype st; g in dtype gt. Every operation rounded on its own (no
   FMA), so the host optimizer (sc_cpu_adamw_range) gives the same bits. */
SC_CUDA_DEF void sc_cuda_sgd_update(sc_cuda *cu, void *p, sc_dtype pt, const void *g, sc_dtype gt, size_t n,
                                    const sc_optim_consts *k);
/* Both multiply each gradient by the scale of the last sc_cuda_grad_norm (1 until one runs).
   grad_norm queues the 2-norm of g[0, n) in sc_grad_norm's order (the same bits) and, with
   max_norm > 0, the scale sc_clip_scale gives (else 1); read waits for the compute stream and
   returns both. The kernels read them from device memory, so a CUDA graph replays them. */
SC_CUDA_DEF void sc_cuda_grad_norm(sc_cuda *cu, const void *g, sc_dtype gt, size_t n, float max_norm);
SC_CUDA_DEF sc_result sc_cuda_grad_norm_read(sc_cuda *cu, double *norm, float *scale);
/* The squares' sums of g[0, n) chunk by chunk, SC_GRAD_NORM_CHUNK elements each, into part[0,
   ceil(n / SC_GRAD_NORM_CHUNK)) on `stream` (0 the compute stream, 1 and 2 the upload and
   download streams, SC_STREAM_COMM the collectives'): where g starts at a chunk of a gradient
   vector, sc_grad_norm's chunk sums of it, bit for bit. part is device memory or pinned host
   memory (sc_cuda_host_alloc: with unified addressing the kernel writes it where it is). */
SC_CUDA_DEF void sc_cuda_grad_norm_chunks(sc_cuda *cu, int stream, double *part, const void *g, sc_dtype gt, size_t n);
SC_CUDA_DEF void sc_cuda_adamw_update(sc_cuda *cu, void *p, void *m, void *v, sc_dtype pt, sc_dtype st, const void *g,
                                sc_dtype gt, size_t n, const sc_optim_consts *k);
/* The update and the 2-norm of g in one pass over g: the bits of the update followed by
   sc_cuda_grad_norm(cu, g, gt, n, 0) (read it with sc_cuda_grad_norm_read). For updates that
   clip nothing: the norm is of the gradients the update reads. */
SC_CUDA_DEF void sc_cuda_sgd_update_norm(sc_cuda *cu, void *p, sc_dtype pt, const void *g, sc_dtype gt, size_t n,
                                         const sc_optim_consts *k);
SC_CUDA_DEF void sc_cuda_adamw_update_norm(sc_cuda *cu, void *p, void *m, void *v, sc_dtype pt, sc_dtype st,
                                           const void *g, sc_dtype gt, size_t n, const sc_optim_consts *k);
/* Slide mode. Streams: 0 compute, 1 upload, 2 download (sc_cuda_event_record takes the same
   numbers). Pinned host memory: NULL on failure (message in sc_last_error()). */
SC_CUDA_DEF void *sc_cuda_host_alloc(sc_cuda *cu, size_t bytes);
SC_CUDA_DEF void sc_cuda_host_free(sc_cuda *cu, void *p);
/* bytes from src to dst (host or device, either way) queued on `stream` */
SC_CUDA_DEF void sc_cuda_copy_async(sc_cuda *cu, int stream, void *dst, const void *src, size_t bytes);
/* work queued on `stream` after this call waits for `event` */
SC_CUDA_DEF void sc_cuda_stream_wait(sc_cuda *cu, int stream, void *event);
/* Bytes of the dS workspace of one attention backward on the GPU's tensor-core path (bf16
   storage, act_bytes 2, head_dim 64 or 128): dS of every (batch, query head) in 16 x 16 blocks at
   and below the diagonal, so that dQ = dS K is one product over it instead of recomputing S and
   dP. 0 where that path is not taken: other storage or head dims, or T > 32 * head_dim, where
   dS (quadratic in T) would outgrow the activations (those sequences keep the recomputing dQ
   kernel). The model allocates it with the layer's backward scratch. */
static inline size_t sc_attention_ds_bytes(int B, int T, int H, int D, int act_bytes)
{
    size_t nb = ((size_t)T + 15) / 16;
    if (act_bytes != 2 || (D != 64 && D != 128) || T > 32 * D) return 0;
    return (size_t)B * (size_t)H * (nb * (nb + 1) / 2) * 512;
}
/* ------------------------------------------------------------------------------------------
   Checkpoint planner: "budget:SIZE". Picks, per layer, keep all / selective / selective:mlp /
   selective:attn / selective:proj or
   a recomputed segment so that the predicted peak fits the budget and the recompute time is
   least. The chain is cut into units: a single kept layer, or a recomputed segment [s, e) that
   saves only x_s. Bytes are exact and closed form, in the model's storage (act_bytes per
   activation element, 4 per statistic), using the same slot sizes as the model:
     S_k(l)  saved bytes of layer l kept with mode k, A(l) = S_ALL(l), X = N*C*act_bytes;
     W       backward scratch of one layer = (N*max(2I, Q+K) + N*max(I, H*D) + N*C)*act_bytes
             + sc_attention_ds_bytes(B, T, H, D, act_bytes);
     Hd      head transient = 3X (final norm out, its grad, the residual grad) + 4N + chunk*V*act_bytes;
     saved(l) = S_k(l) (kept), X (first layer of a segment), 0 (other layers of a segment);
     Peak = F + max( sum_l saved(l) + X + Hd,  max_units u [ P(u) + sum_{j in u} A(j) + W + X ] )
   with P(u) the saved bytes of all layers before u. Recompute time of a unit: 0 (keep all),
   rsel (selective), rmlp (selective:mlp), rattn (selective:attn), rproj (selective:proj), sum of
   fwd over a segment.
   ------------------------------------------------------------------------------------------ */
typedef struct sc_layer_cost {
    double fwd_s;   /* forward of the whole layer (= replay cost inside a segment) */
    double rsel_s;  /* recompute of a SC_KEEP_SELECTIVE layer */
    double rmlp_s;  /* recompute of a SC_KEEP_SELECTIVE_MLP layer */
    double rattn_s; /* recompute of a SC_KEEP_SELECTIVE_ATTN layer */
    double rproj_s; /* recompute of a SC_KEEP_SELECTIVE_PROJ layer */
} sc_layer_cost;

typedef struct sc_plan_row {
    int unit_start, unit_end; /* the unit holding this layer: layers [unit_start, unit_end) */
    int segment;              /* 1: inside a recomputed segment, 0: kept with keep[l] */
    size_t saved_bytes;       /* saved(l) */
    double recompute_s;       /* this layer's share of its unit's recompute time */
} sc_plan_row;

typedef struct sc_plan_report {
    size_t budget;            /* 0 when the report comes from sc_plan_evaluate */
    size_t fixed_bytes;       /* F */
    size_t peak_bytes;        /* predicted Peak (includes F) */
    size_t fwd_end_bytes;     /* F + sum saved + X + Hd: live at the end of forward */
    size_t bwd_peak_bytes;    /* F + the worst backward unit */
    int bwd_peak_unit;        /* first layer of that unit */
    size_t saved_bytes;       /* sum_l saved(l) + X (the stack's output), as sc_plan_saved_bytes */
    size_t min_budget;        /* smallest feasible budget (set by sc_planner_plan, also on failure) */
    double recompute_s;       /* predicted recompute time per step */
    double step_estimate_s;   /* 3 * sum fwd: a no-recompute step (forward + 2x backward) */
    double recompute_frac;    /* recompute_s / step_estimate_s */
    int num_layers;
    sc_plan_row rows[SC_MAX_LAYERS];
} sc_plan_report;

/* Roofline ESTIMATE of per-layer times (t = flops / 700e12 + bytes / 3.0e12, an H100-class
   guess, not a measurement): fwd = all GEMMs + causal attention + elementwise ops; rsel = the
   elementwise ops only (two RMSNorms, q/k-norm + RoPE, SwiGLU); rmlp = ln2 + gate_up GEMM +
   SwiGLU. Fills costs[0 .. num_layers-1]. Weights are counted at act_bytes per element. */
SCDEF void sc_plan_estimate_costs(const sc_config *cfg, int B, int T, int act_bytes, sc_layer_cost *costs);
/* Weights + grads (+ AdamW m and v, stored like the parameters): nparams * (param_bytes +
   grad_bytes [+ 2 * param_bytes]). Not included: f32 master weights (add nparams * 4 and pass
   param_bytes = 4 for the states yourself), RoPE tables, ids/targets/row losses. */
SCDEF size_t sc_plan_fixed_bytes(const sc_config *cfg, int optim_adamw, int param_bytes, int grad_bytes);
/* Predicted peak, saved bytes and recompute time of any plan under the cost model above
   (costs may be NULL: times 0). rep->budget and rep->min_budget are left 0. */
SCDEF sc_result sc_plan_evaluate(sc_plan_report *rep, const sc_plan *plan, const sc_config *cfg, int B, int T,
                                 int act_bytes, size_t fixed_bytes, const sc_layer_cost *costs);
/* Exact optimum: the plan of least predicted recompute time with Peak <= budget (ties: lower
   peak). costs[l] >= 0 (NULL: sc_plan_estimate_costs); rep may be NULL. When nothing fits:
   SC_ERROR_INVALID_ARGS with the smallest feasible budget in the message and rep->min_budget. */
SCDEF sc_result sc_planner_plan(sc_plan *out, sc_plan_report *rep, const sc_config *cfg, int B, int T,
                                int act_bytes, size_t fixed_bytes, const sc_layer_cost *costs, size_t budget);
/* A text table of the plan (one row per layer) and summary lines; snprintf semantics. */
SCDEF int sc_plan_report_table(const sc_plan_report *rep, const sc_plan *plan, char *buf, size_t cap);
/* The bytes per element a model config stores: parameters, their gradients, activations (bf16
   on the GPU with mc->bf16, f32 gradients with master weights; f32 otherwise). */
SCDEF void sc_model_config_storage(const sc_model_config *mc, int *param_bytes, int *grad_bytes, int *act_bytes);
/* The fixed device bytes of a resident model as the planner counts them: weights, gradients,
   AdamW state and, with master weights, the f32 master copy; with mc->zero and a comm of W > 1,
   one rank's share of the AdamW state (ZeRO-1). Data parallel sums the gradients in place, per
   layer, so there are no bucket buffers to count (NCCL's own buffers are outside the allocator);
   on the GPU at 2 to 8 ranks (dp_sums not NCCL) the copy-engine sums' scratch is counted, whether
   or not the GPUs then reach each other: resident, (W - 1) / W of the gradients; past two ranks
   (slide too) W - 1 pieces of SC_CUDA_P2P_PIECE_BYTES. */
SCDEF size_t sc_model_config_fixed_bytes(const sc_config *cfg, const sc_model_config *mc);
/* The same as if over `world` ranks with no comm yet (the plan command): rank 0's share. */
SCDEF size_t sc_model_config_fixed_bytes_dp(const sc_config *cfg, const sc_model_config *mc, int world);
/* The budget to plan for under an allocator cap of `budget` bytes. The planner counts tensor
   bytes; the cap counts reserved segments: 512-byte rounding, partly used 2 MiB small-pool and
   20 MiB mid-size segments, large blocks rounded to 2 MiB, and small buffers (RoPE tables, ids,
   targets, row losses). Usable = the budget less 2% + 2 x 2 MiB + 20 MiB + those buffers. */
SCDEF size_t sc_plan_budget_usable(size_t budget, const sc_config *cfg, int B, int T);
/* budget:SIZE on a live model: times one forward+backward each under full, selective, selective:mlp and
   selective:attn on ids[B*T] (their recompute spans give each layer's replay cost; the forward
   span of the `full` step its whole-layer cost), then plans for sc_plan_budget_usable(budget).
   The model's gradients are overwritten; no optimizer step is taken. rep may be NULL. */
SCDEF sc_result sc_model_plan_budget(sc_plan *plan, sc_plan_report *rep, sc_model *m, const int32_t *ids, int B,
                                     int T, size_t budget);
/* 1 and *budget set for "budget:SIZE" (SIZE as sc_parse_size, > 0); 0 for any other policy;
   -1 for a malformed or zero budget (message in sc_last_error()). */
SCDEF int sc_plan_is_budget(const char *policy, size_t *budget);

/* ------------------------------------------------------------------------------------------
   Automatic configuration: sc_plan_auto picks, for a device memory cap, the fastest
   configuration whose mathematics is the caller's (every choice it makes gives the same bits):
   resident or slide mode; the checkpoint plan (the exact planner, per layer); slide's prefetch
   depth, slide_keep_head, slide_head_once (with the caller's head_slice), slide_cpu_threads,
   slide_device_update (SGD) and slide_device_layers (the first k layers). It never sets
   slide_dpu, head_slice, state_bf16 or master_weights (other arithmetic), and keeps every expert
   field the caller set: mode = SC_MODE_SLIDE allows slide only, slide_prefetch > 0 keeps that
   depth, and so on.
   Memory: Peak = F + the activations of sc_plan_evaluate, F being sc_model_config_fixed_bytes
   (resident) or sc_slide_window_bytes, which counts the device layers' weights, gradients, f32
   master and AdamW state and past two GPU ranks the ordered sums' scratch (slide); a configuration fits when Peak <= sc_plan_budget_usable(mem_cap).
   Slide with accum micro-batches runs each layer over all of them in turn (one upload a layer),
   so what one saves stays for every one: Peak + (accum - 1) x the plan's saved bytes.
   Time: one profile on a copy of the model with 2 layers (random weights, no cap, on the
   caller's device): sc_model_plan_budget's per-layer recompute costs, one measured step (the
   layers' fwd + bwd spans, the head and loss, the optimizer and the rest), copy bandwidth each way
   over one layer's weights (pinned memory on the GPU, memcpy on the CPU), alone and both at once;
   on the GPU the host optimizer inside slide steps: its rate over the layers (a copy with up to 4
   layers, all streamed, the head kept) and while both copy directions run throughout (the busy
   rate), and a streamed head's time (the 2-layer copy with the head streamed too, less its
   layers at that rate: the host also sums the embedding's gradient rows there).
     compute = accum x (rest + L x layer + recompute(plan)) + device params / device rate
     resident: step = compute
     slide:    step = max(compute + exposed, copy, host)
               copy = max(u, d) + duplex x min(u, d),  u = up / bw_h2d, d = down / bw_d2h
               hopt = h + min(u, d, h) x (1 - busy rate / host rate),
               h = host layer params / host rate + a streamed head's time
               host = the step the host optimizer's order gives (sc__auto_host_chain): from one
                      backward's start, gradients land layer by layer (a streamed head's first);
                      the host takes the head, then the lowest landed layer, each at its share of
                      hopt; the next forward runs each streamed layer once it is updated and up
                      again, then the head and loss. With accum > 1: host = hopt + idle, idle =
                      one upload + (L - k) x layer fwd + rest + one layer bwd (a streamed head:
                      one upload + one layer fwd + rest + the head's gradients' download) +
                      (accum - 1) x (rest + L x layer)
   with device params = what the device updates (every parameter when resident; the device
   layers, a kept head, the streamed layers under slide_device_update); up = the streamed layers'
   weights twice (forward and backward) less those still in the P + W slots, plus the head's
   unless kept; down = their gradients (updated weights with slide_device_update) and the head's;
   host params = what the host optimizer updates; exposed = the first layer's upload and the last
   layer's host update, which the next step waits for (zero when the first layer stays on the
   device), and a whole streamed head's upload less P - 1 layer forwards (issued in the forward
   once the head's update has run, it was still measured in the step; not on the CPU backend,
   where copy counts it). The lowest landed layer first means that a host slower than the
   backward ends its step with a late layer's update, so the next forward waits for a few layers,
   not for all. duplex (0..1) is measured: (both at once - the longer alone) / the shorter alone;
   min(u, d) bounds the time both directions copy at once, which slows the host optimizer where
   its memory is the copies' too. On the CPU backend the host side runs on the compute's cores:
   step = compute + copy + hopt + exposed, duplex = 1, and the host optimizer runs at the
   profile's own update rate over every parameter it updates. On the GPU a slide step at
   prefetch 1 is counted 1.1% longer than these terms give: they predict prefetch 1 and 2 alike,
   while hand runs that differed only there measured prefetch 1 that much slower (the geometric
   mean of 134 pairs on H100 hosts, bench/prefetch_pairs.py), so that auto takes prefetch 2 in a tie.
   ------------------------------------------------------------------------------------------ */
/* What the profile measured (the rates of the time model above). A caller that plans the same
   model, device, dtypes, optimizer, threads and micro-batch again (other caps, other pinned
   options) may keep one and pass it back through sc_plan_auto_config.profile. */
typedef struct sc_auto_profile {
    int valid;               /* 0: the next sc_plan_auto fills it; 1: it is used as it is */
    sc_layer_cost lc;        /* one layer's recompute costs (sc_model_plan_budget's) */
    double layer_s;          /* forward + backward of one layer, no recompute, seconds */
    double rest_s;           /* the rest of a step: embedding, head and loss (not the optimizer) */
    double head_s;           /* of which the LM head and the loss, forward and backward */
    double dopt_pps;         /* the device optimizer's parameters a second (the resident update) */
    double h2d_Bps, d2h_Bps; /* copy bandwidth each way, bytes a second */
    double duplex;           /* 0..1: how much the two copy directions slow each other */
    double opt_pps;          /* the host optimizer's layer parameters a second, inside slide steps */
    double opt_busy_pps;     /* the same with uploads and downloads running throughout */
    double head_opt_s;       /* the host's seconds for a streamed head's tasks in one step */
    int serial;              /* the CPU backend: the host side runs on the compute's cores */
} sc_auto_profile;

typedef struct sc_plan_auto_config {
    size_t mem_cap;          /* bytes the allocator may reserve on the device; 0 = no cap */
    int B, T;                /* the micro-batch */
    int accum;               /* micro-batches per step (0 -> 1) */
    const int32_t *ids;      /* B*T token ids for the profile (NULL: a fixed pattern) */
    const sc_plan *plan;     /* a checkpoint plan to keep (NULL: chosen) */
    int max_device_layers;   /* slide: at most this many layers on the device (0: any, -1: none) */
    int profile_layers;      /* layers of the profiled copy (0 -> 2, at most the model's) */
    int resident_only;       /* 1: resident mode only (the planner's plan under the cap) */
    sc_auto_profile *profile; /* NULL: profile on every call; else filled where !valid, then reused */
} sc_plan_auto_config;

typedef struct sc_plan_auto_result {
    sc_model_config mc;      /* the caller's config with the chosen mode and slide fields */
    sc_plan plan;            /* the chosen checkpoint plan */
    size_t peak_bytes;       /* predicted peak allocated bytes */
    size_t fixed_bytes;      /* its F (see above) */
    size_t min_cap;          /* the smallest mem_cap some configuration fits (also on failure) */
    double step_ms;          /* predicted step time */
    double compute_ms, copy_ms, host_opt_ms; /* its parts (copy and host optimizer: slide only) */
    int device_layers;       /* slide: layers kept on the device (the first ones) */
    int candidates;          /* configurations evaluated */
    char desc[256];          /* one line: "slide prefetch 2, ..., policy ..." */
} sc_plan_auto_result;

/* Profile, search and choose (see above). mc: the caller's config (device, dtype, optimizer,
   ...); cfg: the model. OUT_OF_MEMORY when no configuration fits mem_cap, with the smallest cap
   that would in the message and out->min_cap; INVALID_ARGS for a bad shape; a profile failure
   as it came. Takes a few steps of a 2-layer model's time (and its device memory, uncapped). */
SCDEF sc_result sc_plan_auto(sc_plan_auto_result *out, const sc_config *cfg, const sc_model_config *mc,
                             const sc_plan_auto_config *ac);

/* ------------------------------------------------------------------------------------------
   Several processes (data parallel): the launch environment and the rendezvous. A launcher
   starts one process per GPU and says who each one is:
     torchrun (and MPI-style scripts): RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK
       (this machine's index: torchrun --node_rank), GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
       as PyTorch's env:// reads them;
     Slurm's srun (RANK and WORLD_SIZE unset, SLURM_PROCID and SLURM_NTASKS set inside a job step,
       SLURM_STEP_ID): rank SLURM_PROCID of SLURM_NTASKS, local rank SLURM_LOCALID, node
       SLURM_NODEID; ranks per node SLURM_NTASKS_PER_NODE where it is one number, else this node's
       entry of SLURM_TASKS_PER_NODE ("4(x2),3": nodes 0 and 1 run 4, node 2 runs 3). MASTER_ADDR
       and MASTER_PORT where set, else the first host of SLURM_STEP_NODELIST (or
       SLURM_JOB_NODELIST, SLURM_NODELIST: "gpu[003-010],cpu7" -> gpu003) and the port
       20000 + SLURM_JOB_ID % 12768 (the same on every task, below Linux's ephemeral ports).
       An sbatch script itself has SLURM_PROCID=0 but no SLURM_STEP_ID: one process there.
   torchrun's variables win where both are set (torchrun under srun). Rank 0 listens on
   MASTER_PORT (the port after it where torchrun's agent holds MASTER_PORT for its own store;
   SLIDECHECK_RENDEZVOUS_PORT overrides both) at:
     the address of the interface NCCL_SOCKET_IFNAME names, as NCCL reads it: a comma list of
       name prefixes ("eth,ib"), exact names after "=" ("=eth0"), every interface but those after
       "^" ("^docker,lo"); IPv4 first, loopback interfaces last. No interface matching is an
       error naming the variable. Where MASTER_ADDR is a loopback address every rank is on this
       machine and rank 0 listens there, whatever interface the variable names;
     else MASTER_ADDR itself where it is a loopback address (127.x.y.z, ::1, localhost);
     else every interface (a host name may resolve to 127.0.1.1 on its own machine, as Debian's
       /etc/hosts has it, while the other machines reach it by its network address).
   Every other rank connects to MASTER_ADDR (an address, or a host name resolved with
   getaddrinfo, each of its addresses tried in turn), says who it is and what it runs (a hash of
   the model config, shapes and token file), and receives rank 0's blob (the NCCL unique id). A
   rank that never arrives, a rank 0 that cannot be reached and a mismatch all end in a clear
   error on every rank within the timeout, never a hang. Errors name a rank as "rank 3", or
   "rank 3 (node 1)" when the ranks span several machines; a node none of whose ranks arrived is
   named as such.
   ------------------------------------------------------------------------------------------ */
typedef struct sc_dist_env {
    int rank, local_rank, world_size, local_world_size;
    int node;       /* this machine's index: GROUP_RANK, SLURM_NODEID, else RANK / LOCAL_WORLD_SIZE */
    int node_count; /* GROUP_WORLD_SIZE, the entries of SLURM_TASKS_PER_NODE, SLURM_NNODES, else
                       WORLD_SIZE / LOCAL_WORLD_SIZE rounded up */
    int gpu;        /* the device this rank uses: LOCAL_RANK modulo the number of devices that
                       CUDA_VISIBLE_DEVICES lists (Slurm's --gpus-per-task or --gpu-bind shows each
                       task its own, as device 0), LOCAL_RANK where it is unset */
    char master_addr[256];
    int master_port; /* the rendezvous port: SLIDECHECK_RENDEZVOUS_PORT, else MASTER_PORT (+ 1 under
                        torchrun's agent store, TORCHELASTIC_USE_AGENT_STORE=True), else Slurm's */
    char socket_ifname[256]; /* NCCL_SOCKET_IFNAME: where rank 0 listens (see above); "" = unset */
    double timeout_s; /* SLIDECHECK_RENDEZVOUS_TIMEOUT, default 60. The other ranks wait for rank 0
                         1 s and a tenth longer, so that rank 0, which sees every rank, is the one to
                         name a rank that stalls. NCCL's initialisation gets the same bound */
} sc_dist_env;

/* Reads the environment. None of RANK / WORLD_SIZE / an srun step: one process (rank 0 of 1). A
   variable that is malformed, out of range or missing where needed: SC_ERROR_INVALID_ARGS naming
   it. MASTER_ADDR (or Slurm's first host): an IPv4 or IPv6 address, or a host name (getaddrinfo:
   POSIX builds, and Linux under strict -std=c11). */
SCDEF sc_result sc_dist_env_read(sc_dist_env *e);
/* The rendezvous described above. check: what must agree across ranks; blob: in on rank 0, out
   on the others (the same blob_bytes on every rank, at most 65536). */
SCDEF sc_result sc_dist_rendezvous(const sc_dist_env *e, uint64_t check, void *blob, size_t blob_bytes);
/* FNV-1a over bytes, chained from h (start with 0): for sc_dist_rendezvous's check. */
SCDEF uint64_t sc_hash_bytes(uint64_t h, const void *p, size_t n);
/* The control channel: the rendezvous above with its connections (rank 0 to each other rank)
   kept open, for small collectives between the processes: per-rank metrics for rank 0's merged
   summary, barriers, the config checks of later steps. Deterministic: rank 0 combines in rank
   order, so every rank gets the same bits, run after run. Bounded: a rank that dies or stalls
   ends every call in an error naming it and its node (rank 0 sees it, SC_ERROR_IO, or
   SC_ERROR_TIMEOUT after the environment's timeout, and tells the others, SC_ERROR_IO) on every
   rank, never a hang; a rank 0 that dies or stalls is named by the others. The comm is then
   broken and every later call fails at once, saying why. Values travel in the host's byte order
   (ranks of one architecture).
   Gradients on the GPU go over NCCL, not over this channel. With one process every call is a
   no-op that succeeds. */
typedef struct sc_dist_comm sc_dist_comm;
SCDEF sc_result sc_dist_comm_open(sc_dist_comm **out, const sc_dist_env *e, uint64_t check, void *blob,
                                  size_t blob_bytes);
SCDEF void sc_dist_comm_close(sc_dist_comm *c);
/* buf[0, n) = the sum over the ranks' buf, added in rank order ((r0 + r1) + r2 ...) */
SCDEF sc_result sc_dist_allreduce_f32(sc_dist_comm *c, float *buf, size_t n);
/* rank 0: all[r * bytes ...] = rank r's `mine`, for every rank; the others may pass all = NULL */
SCDEF sc_result sc_dist_gather(sc_dist_comm *c, const void *mine, void *all, size_t bytes);
/* buf[0, bytes) = rank 0's, on every rank (copied bit for bit) */
SCDEF sc_result sc_dist_broadcast(sc_dist_comm *c, void *buf, size_t bytes);
/* buf[0, n): each rank holds its part (sc_dist_part: W nearly equal runs in rank order); after
   the call every rank holds all of it, copied bit for bit */
SCDEF sc_result sc_dist_allgather_f32(sc_dist_comm *c, float *buf, size_t n);
/* rank r's part [*lo, *hi) of n elements over the comm's ranks */
SCDEF void sc_dist_part(const sc_dist_comm *c, size_t n, size_t *lo, size_t *hi);
/* returns on every rank once every rank has called it */
SCDEF sc_result sc_dist_barrier(sc_dist_comm *c);
/* this process's rank and the number of ranks (NULL: 0 of 1) */
SCDEF int sc_dist_comm_rank(const sc_dist_comm *c);
SCDEF int sc_dist_comm_world(const sc_dist_comm *c);

#endif /* SLIDECHECK_H */

/* ========================================================================================== */
#ifdef SLIDECHECK_IMPLEMENTATION
#ifndef SLIDECHECK_IMPLEMENTATION_DONE
#define SLIDECHECK_IMPLEMENTATION_DONE

#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <stdarg.h>
#include <errno.h>

#if defined(SC_MALLOC) || defined(SC_FREE) || defined(SC_REALLOC)
#if !defined(SC_MALLOC) || !defined(SC_FREE) || !defined(SC_REALLOC)
#error "Define all of SC_MALLOC, SC_FREE and SC_REALLOC, or none of them."
#endif
#else
#define SC_MALLOC(sz) malloc(sz)
#define SC_FREE(p) free(p)
#define SC_REALLOC(p, sz) realloc(p, sz)
#endif

#ifndef SC_ASSERT
#include <assert.h>
#define SC_ASSERT(x) assert(x)
#endif

/* OpenMP is optional: without -fopenmp the pragmas vanish and everything runs on one thread.
   Work is always split by output element, so results do not depend on the thread count. */
#ifdef _OPENMP
#define SC__OMP(x) _Pragma(#x)
#else
#define SC__OMP(x)
#endif

#if defined(__cplusplus)
#define SC__TLS thread_local
#elif defined(_MSC_VER)
#define SC__TLS __declspec(thread)
#else
#define SC__TLS _Thread_local
#endif

static SC__TLS char sc__errbuf[1024];

SCDEF const char *sc_last_error(void) { return sc__errbuf; }

SCDEF sc_result sc_set_error(sc_result r, const char *fmt, ...)
{
    /* formatted aside first: an argument may be sc_last_error() itself (a message that wraps the last one) */
    char msg[sizeof sc__errbuf];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(sc__errbuf, msg, sizeof msg);
    return r;
}

/* The implementation's name for it: `return sc__fail(SC_ERROR_..., "message", ...)`. */
#define sc__fail sc_set_error

SCDEF const char *sc_result_string(sc_result r)
{
    switch (r) {
    case SC_SUCCESS: return "success";
    case SC_ERROR_INVALID_ARGS: return "invalid arguments";
    case SC_ERROR_OUT_OF_MEMORY: return "out of memory";
    case SC_ERROR_IO: return "i/o error";
    case SC_ERROR_FORMAT: return "malformed input";
    case SC_ERROR_SHAPE: return "wrong shape";
    case SC_ERROR_RANGE: return "value out of range";
    case SC_ERROR_UNSUPPORTED: return "unsupported";
    case SC_ERROR_NO_DEVICE: return "no usable GPU";
    case SC_ERROR_CUDA: return "CUDA error";
    case SC_ERROR_TIMEOUT: return "timed out";
    }
    return "unknown result";
}

/* ---- tensors ---- */
SCDEF size_t sc_dtype_size(sc_dtype t) { return t == SC_BF16 ? 2 : 4; }

SCDEF int64_t sc_tensor_numel(const sc_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

SCDEF size_t sc_tensor_nbytes(const sc_tensor *t)
{
    return (size_t)sc_tensor_numel(t) * sc_dtype_size(t->dtype);
}

SCDEF sc_tensor sc_tensor_view(void *data, sc_dtype dtype, sc_device device, int ndim,
                               const int64_t *shape, const char *name)
{
    sc_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.device = device;
    t.ndim = ndim < 0 ? 0 : (ndim > 4 ? 4 : ndim);
    for (int i = 0; i < t.ndim; i++) t.shape[i] = shape[i];
    t.data = data;
    t.name = name;
    return t;
}

SCDEF uint16_t sc_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

SCDEF float sc_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

SCDEF void sc_round_bf16_inplace(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = sc_bf16_to_f32(sc_f32_to_bf16(x[i]));
}

SCDEF float sc_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0) {
        if (man == 0) u = sign;
        else { /* subnormal: normalise */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400));
            u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) u = sign | 0x7f800000u | (man << 13);
    else u = sign | ((exp - 15 + 127) << 23) | (man << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- configs ---- */
static void sc__config_base(sc_config *c, const char *name, sc_arch arch, int V, int C, int I,
                            int L, int H, int KV, int D, int maxpos, int tie, double theta,
                            double eps)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->arch = arch;
    c->vocab_size = V; c->hidden_size = C; c->intermediate_size = I; c->num_layers = L;
    c->num_heads = H; c->num_kv_heads = KV; c->head_dim = D; c->max_position = maxpos;
    c->tie_embeddings = tie;
    c->attention_bias = arch == SC_ARCH_QWEN2;
    c->qk_norm = arch == SC_ARCH_QWEN3;
    c->rope_theta = theta; c->rms_eps = eps; c->init_std = 0.02;
}

static const char *sc__config_name_list =
    "tiny, qwen3-0.6b, qwen3-1.7b, qwen2.5-0.5b, qwen2.5-1.5b, qwen2.5-7b";

SCDEF const char *sc_config_names(void) { return sc__config_name_list; }

SCDEF sc_result sc_config_named(sc_config *cfg, const char *name)
{
    if (!cfg || !name) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_config_named: NULL argument");
    /* tiny: a Qwen3 small enough for a CPU demo, with GQA and head_dim != C/H. */
    if (!strcmp(name, "tiny"))
        sc__config_base(cfg, name, SC_ARCH_QWEN3, 512, 128, 352, 4, 4, 2, 48, 256, 1, 10000.0, 1e-6);
    else if (!strcmp(name, "qwen3-0.6b"))
        sc__config_base(cfg, name, SC_ARCH_QWEN3, 151936, 1024, 3072, 28, 16, 8, 128, 40960, 1, 1000000.0, 1e-6);
    else if (!strcmp(name, "qwen3-1.7b"))
        sc__config_base(cfg, name, SC_ARCH_QWEN3, 151936, 2048, 6144, 28, 16, 8, 128, 40960, 1, 1000000.0, 1e-6);
    else if (!strcmp(name, "qwen2.5-0.5b"))
        sc__config_base(cfg, name, SC_ARCH_QWEN2, 151936, 896, 4864, 24, 14, 2, 64, 32768, 1, 1000000.0, 1e-6);
    else if (!strcmp(name, "qwen2.5-1.5b"))
        sc__config_base(cfg, name, SC_ARCH_QWEN2, 151936, 1536, 8960, 28, 12, 2, 128, 32768, 1, 1000000.0, 1e-6);
    else if (!strcmp(name, "qwen2.5-7b"))
        sc__config_base(cfg, name, SC_ARCH_QWEN2, 152064, 3584, 18944, 28, 28, 4, 128, 32768, 0, 1000000.0, 1e-6);
    else
        return sc__fail(SC_ERROR_INVALID_ARGS, "unknown model name '%s' (known: %s)", name,
                        sc__config_name_list);
    return SC_SUCCESS;
}

SCDEF sc_result sc_config_validate(const sc_config *c)
{
    if (c->vocab_size <= 0 || c->hidden_size <= 0 || c->intermediate_size <= 0 ||
        c->num_layers <= 0 || c->num_heads <= 0 || c->num_kv_heads <= 0 || c->head_dim <= 0 ||
        c->max_position <= 0)
        return sc__fail(SC_ERROR_FORMAT, "config: every size must be positive");
    if (c->num_heads % c->num_kv_heads)
        return sc__fail(SC_ERROR_FORMAT, "config: num_key_value_heads (%d) must divide num_attention_heads (%d)",
                        c->num_kv_heads, c->num_heads);
    if (c->head_dim % 2)
        return sc__fail(SC_ERROR_FORMAT, "config: head_dim (%d) must be even for RoPE", c->head_dim);
    if (!(c->rms_eps > 0) || !(c->rope_theta > 0))
        return sc__fail(SC_ERROR_FORMAT, "config: rms_norm_eps and rope_theta must be positive");
    /* keep every index computation inside 63 bits and every per-layer size inside size_t */
    if ((double)c->vocab_size * c->hidden_size > 4e12 || c->hidden_size > (1 << 20) ||
        c->intermediate_size > (1 << 22) || c->num_layers > 4096 || c->num_heads > 4096 ||
        c->head_dim > 4096 || c->vocab_size > (1 << 24))
        return sc__fail(SC_ERROR_FORMAT, "config: sizes beyond what slidecheck supports");
    return SC_SUCCESS;
}

SCDEF double sc_config_train_flops(const sc_config *c, int B, int T)
{
    double C = c->hidden_size, I = c->intermediate_size, D = c->head_dim, H = c->num_heads, KV = c->num_kv_heads;
    double layer = C * (H + 2 * KV) * D + H * D * C + 3 * C * I; /* qkv, o, gate|up, down */
    double w = c->num_layers * layer + (double)c->vocab_size * C;
    double tokens = (double)B * T, attn = c->num_layers * 3.0 * (2.0 * 2.0 * B * H * (double)T * T * D / 2.0);
    return 6.0 * w * tokens + attn;
}

SCDEF sc_layer_offsets sc_config_layer_offsets(const sc_config *c)
{
    sc_layer_offsets o;
    size_t C = (size_t)c->hidden_size, I = (size_t)c->intermediate_size, D = (size_t)c->head_dim;
    size_t qkv = (size_t)(c->num_heads + 2 * c->num_kv_heads) * D, p = 0;
    o.ln1 = p; p += C;
    o.wqkv = p; p += qkv * C;
    o.bqkv = SIZE_MAX; if (c->attention_bias) { o.bqkv = p; p += qkv; }
    o.qnorm = o.knorm = SIZE_MAX;
    if (c->qk_norm) { o.qnorm = p; p += D; o.knorm = p; p += D; }
    o.wo = p; p += C * (size_t)c->num_heads * D;
    o.ln2 = p; p += C;
    o.wgu = p; p += 2 * I * C;
    o.wd = p; p += C * I;
    o.size = p;
    return o;
}

SCDEF size_t sc_config_layer_base(const sc_config *c, int l)
{
    return (size_t)c->vocab_size * c->hidden_size + (size_t)l * sc_config_layer_offsets(c).size;
}
SCDEF size_t sc_config_norm_offset(const sc_config *c) { return sc_config_layer_base(c, c->num_layers); }
SCDEF size_t sc_config_lm_head_offset(const sc_config *c)
{
    return c->tie_embeddings ? 0 : sc_config_norm_offset(c) + (size_t)c->hidden_size;
}
SCDEF size_t sc_config_num_params(const sc_config *c)
{
    return sc_config_norm_offset(c) + (size_t)c->hidden_size +
           (c->tie_embeddings ? 0 : (size_t)c->vocab_size * c->hidden_size);
}

static void sc__param_put(sc_param_info *out, int cap, int *n, const char *name, int ndim,
                          int64_t d0, int64_t d1, size_t offset, int layer)
{
    if (out && *n < cap) {
        sc_param_info *p = &out[*n];
        snprintf(p->name, sizeof p->name, "%s", name);
        p->ndim = ndim; p->shape[0] = d0; p->shape[1] = ndim == 2 ? d1 : 0;
        p->offset = offset; p->numel = (size_t)d0 * (size_t)(ndim == 2 ? d1 : 1); p->layer = layer;
    }
    (*n)++;
}

SCDEF int sc_config_params(const sc_config *c, sc_param_info *out, int cap)
{
    int n = 0;
    char nm[96];
    int64_t C = c->hidden_size, I = c->intermediate_size, D = c->head_dim;
    int64_t HD = (int64_t)c->num_heads * D, KD = (int64_t)c->num_kv_heads * D;
    sc_layer_offsets o = sc_config_layer_offsets(c);
    sc__param_put(out, cap, &n, "model.embed_tokens.weight", 2, c->vocab_size, C, 0, -1);
    for (int l = 0; l < c->num_layers; l++) {
        size_t b = sc_config_layer_base(c, l);
#define SC__P(suffix, nd, d0, d1, off)                                              \
        snprintf(nm, sizeof nm, "model.layers.%d.%s", l, suffix);                   \
        sc__param_put(out, cap, &n, nm, nd, d0, d1, b + (off), l)
        SC__P("input_layernorm.weight", 1, C, 0, o.ln1);
        SC__P("self_attn.q_proj.weight", 2, HD, C, o.wqkv);
        SC__P("self_attn.k_proj.weight", 2, KD, C, o.wqkv + (size_t)(HD * C));
        SC__P("self_attn.v_proj.weight", 2, KD, C, o.wqkv + (size_t)((HD + KD) * C));
        if (c->attention_bias) {
            SC__P("self_attn.q_proj.bias", 1, HD, 0, o.bqkv);
            SC__P("self_attn.k_proj.bias", 1, KD, 0, o.bqkv + (size_t)HD);
            SC__P("self_attn.v_proj.bias", 1, KD, 0, o.bqkv + (size_t)(HD + KD));
        }
        if (c->qk_norm) {
            SC__P("self_attn.q_norm.weight", 1, D, 0, o.qnorm);
            SC__P("self_attn.k_norm.weight", 1, D, 0, o.knorm);
        }
        SC__P("self_attn.o_proj.weight", 2, C, HD, o.wo);
        SC__P("post_attention_layernorm.weight", 1, C, 0, o.ln2);
        SC__P("mlp.gate_proj.weight", 2, I, C, o.wgu);
        SC__P("mlp.up_proj.weight", 2, I, C, o.wgu + (size_t)(I * C));
        SC__P("mlp.down_proj.weight", 2, C, I, o.wd);
#undef SC__P
    }
    sc__param_put(out, cap, &n, "model.norm.weight", 1, C, 0, sc_config_norm_offset(c), -1);
    if (!c->tie_embeddings)
        sc__param_put(out, cap, &n, "lm_head.weight", 2, c->vocab_size, C,
                      sc_config_lm_head_offset(c), -1);
    return n;
}

/* ---- rng ---- */
SCDEF sc_rng sc_rng_seed(uint64_t seed) { sc_rng r; r.s = seed * 0x9E3779B97F4A7C15ull + 1; return r; }
SCDEF uint64_t sc_rng_u64(sc_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
SCDEF float sc_rng_uniform(sc_rng *r) { return (float)(sc_rng_u64(r) >> 40) * (1.0f / 16777216.0f); }
SCDEF float sc_rng_normal(sc_rng *r)
{
    float u1 = sc_rng_uniform(r), u2 = sc_rng_uniform(r);
    if (u1 < 1e-30f) u1 = 1e-30f;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}

/* ---- caching allocator (PyTorch CUDACachingAllocator rules, see the declarations) ---- */

#define SC__ALLOCATOR_MIN_BLOCK ((size_t)512)            /* kMinBlockSize */
#define SC__ALLOCATOR_SMALL_SIZE ((size_t)1 << 20)       /* kSmallSize: largest small-pool request */
#define SC__ALLOCATOR_SMALL_BUFFER ((size_t)2 << 20)     /* kSmallBuffer: small-pool segment */
#define SC__ALLOCATOR_LARGE_BUFFER ((size_t)20 << 20)    /* kLargeBuffer: segment for 1..10 MiB */
#define SC__ALLOCATOR_MIN_LARGE ((size_t)10 << 20)       /* kMinLargeAlloc */
#define SC__ALLOCATOR_ROUND_LARGE ((size_t)2 << 20)      /* kRoundLarge */
#define SC__ALLOCATOR_MAX_REQUEST ((size_t)1 << 56)      /* beyond any device; keeps rounding exact */

typedef struct sc__allocator_use {
    int stream;
    void *event;                 /* recorded at free time; NULL once complete */
} sc__allocator_use;

typedef struct sc__allocator_block {
    char *ptr;
    size_t size;                 /* rounded */
    size_t requested;            /* the caller's bytes (live and pending blocks) */
    int stream;                  /* the stream it was allocated on; never changes */
    int pool;                    /* 0 small, 1 large */
    int allocated;
    int event_count;             /* events still running (pending free when > 0) */
    sc__allocator_use *uses;     /* other streams that used the block (record_stream) */
    int n_uses, cap_uses;
    struct sc__allocator_block *prev, *next; /* neighbours inside the segment */
    struct sc__allocator_segment *seg;
    char tag[SC_ALLOCATOR_TAG_MAX];
} sc__allocator_block;

typedef struct sc__allocator_segment {
    char *base;
    size_t size;
    int stream, pool;
    sc__allocator_block *first;  /* lowest-address block */
    struct sc__allocator_segment *next_spare;
} sc__allocator_segment;

/* ---- small helpers ---- */

static size_t sc__allocator_round(size_t n)
{
    const size_t m = SC__ALLOCATOR_MIN_BLOCK;
    return n < m ? m : (n + m - 1) / m * m;
}

static size_t sc__allocator_segment_size(size_t rounded)
{
    if (rounded <= SC__ALLOCATOR_SMALL_SIZE) return SC__ALLOCATOR_SMALL_BUFFER;
    if (rounded < SC__ALLOCATOR_MIN_LARGE) return SC__ALLOCATOR_LARGE_BUFFER;
    return (rounded + SC__ALLOCATOR_ROUND_LARGE - 1) / SC__ALLOCATOR_ROUND_LARGE * SC__ALLOCATOR_ROUND_LARGE;
}

static void sc__allocator_stat_inc(sc_stat *s, int pool, int64_t amount)
{
    int idx[2];
    idx[0] = SC_STAT_ALL;
    idx[1] = pool ? SC_STAT_LARGE_POOL : SC_STAT_SMALL_POOL;
    for (int i = 0; i < 2; i++) {
        s[idx[i]].current += amount;
        if (s[idx[i]].current > s[idx[i]].peak) s[idx[i]].peak = s[idx[i]].current;
        s[idx[i]].allocated_total += amount;
    }
}

static void sc__allocator_stat_dec(sc_stat *s, int pool, int64_t amount)
{
    int idx[2];
    idx[0] = SC_STAT_ALL;
    idx[1] = pool ? SC_STAT_LARGE_POOL : SC_STAT_SMALL_POOL;
    for (int i = 0; i < 2; i++) {
        s[idx[i]].current -= amount;
        s[idx[i]].freed_total += amount;
    }
}

static int sc__allocator_is_split(const sc__allocator_block *b) { return b->prev || b->next; }

static void sc__allocator_emit(sc_allocator *a, sc_mem_event_kind kind, void *ptr, size_t size,
                           size_t requested, int stream, const char *tag)
{
    sc_mem_event ev;
    if (!a->cfg.on_event) return;
    ev.kind = kind;
    ev.ptr = ptr;
    ev.size = size;
    ev.requested = requested;
    ev.allocated_bytes = a->stats.allocated_bytes[SC_STAT_ALL].current;
    ev.reserved_bytes = a->stats.reserved_bytes[SC_STAT_ALL].current;
    ev.stream = stream;
    ev.tag = tag ? tag : "";
    ev.device = a->name;
    a->cfg.on_event(&ev, a->cfg.on_event_user);
}

/* Copy a tag, truncating on a UTF-8 character boundary so the JSON stays valid. */
static void sc__allocator_copy_tag(char *dst, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n > SC_ALLOCATOR_TAG_MAX - 1) {
        n = SC_ALLOCATOR_TAG_MAX - 1;
        while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80) n--;
    }
    if (n) memcpy(dst, src, n);
    dst[n] = 0;
}

/* PyTorch's format_size(), for the OOM message. */
static void sc__allocator_human(char *buf, size_t cap, uint64_t n)
{
    if (n <= 1024) snprintf(buf, cap, "%llu bytes", (unsigned long long)n);
    else if (n <= 1048576) snprintf(buf, cap, "%.2f KiB", (double)n / 1024.0);
    else if (n <= 1073741824ull) snprintf(buf, cap, "%.2f MiB", (double)n / 1048576.0);
    else snprintf(buf, cap, "%.2f GiB", (double)n / 1073741824.0);
}

/* Default raw allocator: host memory aligned to 256 bytes, like cudaMalloc. The original
   pointer sits just before the aligned one. */
static void *sc__allocator_host_raw(size_t bytes, void *user)
{
    unsigned char *raw;
    uintptr_t p;
    (void)user;
    raw = (unsigned char *)SC_MALLOC(bytes + 256 + sizeof(void *));
    if (!raw) return NULL;
    p = ((uintptr_t)(raw + sizeof(void *)) + 255) & ~(uintptr_t)255;
    memcpy((void *)(p - sizeof(void *)), &raw, sizeof raw);
    return (void *)p;
}

static void sc__allocator_host_raw_free(void *ptr, size_t bytes, void *user)
{
    void *raw;
    (void)bytes; (void)user;
    memcpy(&raw, (unsigned char *)ptr - sizeof(void *), sizeof raw);
    SC_FREE(raw);
}

/* ---- sorted pointer arrays ---- */

/* Order of a pool: (stream, size, address), as PyTorch's BlockComparatorSize. */
static int sc__allocator_pool_less(const sc__allocator_block *x, int stream, size_t size, const char *ptr)
{
    if (x->stream != stream) return x->stream < stream;
    if (x->size != size) return x->size < size;
    return (uintptr_t)x->ptr < (uintptr_t)ptr;
}

/* First index whose block is not less than the key. */
static size_t sc__allocator_pool_lower(const sc_allocator *a, int pool, int stream, size_t size,
                                   const char *ptr)
{
    size_t lo = 0, hi = a->pool_n[pool];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sc__allocator_pool_less(a->pool[pool][mid], stream, size, ptr)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Capacity was reserved by sc__allocator_reserve (pool_cap >= pool_blocks), so this cannot fail. */
static void sc__allocator_pool_insert(sc_allocator *a, sc__allocator_block *b)
{
    int p = b->pool;
    size_t i = sc__allocator_pool_lower(a, p, b->stream, b->size, b->ptr);
    SC_ASSERT(a->pool_n[p] < a->pool_cap[p]);
    memmove(a->pool[p] + i + 1, a->pool[p] + i, (a->pool_n[p] - i) * sizeof *a->pool[p]);
    a->pool[p][i] = b;
    a->pool_n[p]++;
}

static void sc__allocator_pool_erase(sc_allocator *a, sc__allocator_block *b)
{
    int p = b->pool;
    size_t i = sc__allocator_pool_lower(a, p, b->stream, b->size, b->ptr);
    SC_ASSERT(i < a->pool_n[p] && a->pool[p][i] == b);
    memmove(a->pool[p] + i, a->pool[p] + i + 1, (a->pool_n[p] - i - 1) * sizeof *a->pool[p]);
    a->pool_n[p]--;
}

/* First index of the active array whose ptr is >= ptr. */
static size_t sc__allocator_active_lower(const sc_allocator *a, const void *ptr)
{
    size_t lo = 0, hi = a->active_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)a->active[mid]->ptr < (uintptr_t)ptr) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static sc__allocator_block *sc__allocator_active_find(const sc_allocator *a, const void *ptr)
{
    size_t i = sc__allocator_active_lower(a, ptr);
    return i < a->active_n && a->active[i]->ptr == (const char *)ptr ? a->active[i] : NULL;
}

SCDEF int sc_allocator_range_idle(const sc_allocator *a, const void *p, size_t n)
{
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    int inside = 0;
    for (size_t k = 0; k < a->seg_n && !inside; k++) /* segments: a few dozen */
        inside = lo >= (uintptr_t)a->segs[k]->base && hi <= (uintptr_t)a->segs[k]->base + a->segs[k]->size;
    if (!inside) return 0;
    size_t i = sc__allocator_active_lower(a, p);
    if (i > 0 && (uintptr_t)a->active[i - 1]->ptr + a->active[i - 1]->size > lo) return 0;
    return !(i < a->active_n && (uintptr_t)a->active[i]->ptr < hi);
}

static void sc__allocator_active_erase(sc_allocator *a, sc__allocator_block *b)
{
    size_t i = sc__allocator_active_lower(a, b->ptr);
    SC_ASSERT(i < a->active_n && a->active[i] == b);
    memmove(a->active + i, a->active + i + 1, (a->active_n - i - 1) * sizeof *a->active);
    a->active_n--;
}

/* A pointer array with room for at least `need` elements (realloc'd, *cap updated), or NULL
   on host out-of-memory with the old array untouched. */
static void *sc__allocator_grow(void *arr, size_t *cap, size_t need)
{
    size_t n = *cap ? *cap : 16;
    void *p;
    if (need <= *cap) return arr;
    while (n < need) n *= 2;
    p = SC_REALLOC(arr, n * sizeof(void *));
    if (p) *cap = n;
    return p;
}

/* Everything an allocation may need from the host heap, taken before anything changes: then an
   allocation either happens completely or leaves no trace, and a free never allocates. */
static int sc__allocator_reserve(sc_allocator *a)
{
    int nspare = 0;
    void *g;
    for (sc__allocator_block *b = a->spare_blocks; b && nspare < 2; b = b->next) nspare++;
    for (; nspare < 2; nspare++) {
        sc__allocator_block *b = (sc__allocator_block *)SC_MALLOC(sizeof *b);
        if (!b) return 0;
        memset(b, 0, sizeof *b);
        b->next = a->spare_blocks;
        a->spare_blocks = b;
    }
    if (!a->spare_segs) {
        sc__allocator_segment *s = (sc__allocator_segment *)SC_MALLOC(sizeof *s);
        if (!s) return 0;
        memset(s, 0, sizeof *s);
        a->spare_segs = s;
    }
    for (int p = 0; p < 2; p++) {
        g = sc__allocator_grow(a->pool[p], &a->pool_cap[p], a->pool_blocks[p] + 2);
        if (!g) return 0;
        a->pool[p] = (sc__allocator_block **)g;
    }
    g = sc__allocator_grow(a->active, &a->active_cap, a->active_n + 1);
    if (!g) return 0;
    a->active = (sc__allocator_block **)g;
    g = sc__allocator_grow(a->segs, &a->seg_cap, a->seg_n + 1);
    if (!g) return 0;
    a->segs = (sc__allocator_segment **)g;
    return 1;
}

static sc__allocator_block *sc__allocator_new_block(sc_allocator *a, int pool)
{
    sc__allocator_block *b = a->spare_blocks;
    SC_ASSERT(b);
    a->spare_blocks = b->next;
    memset(b, 0, sizeof *b);
    b->pool = pool;
    a->pool_blocks[pool]++;
    return b;
}

static void sc__allocator_recycle_block(sc_allocator *a, sc__allocator_block *b)
{
    a->pool_blocks[b->pool]--;
    SC_FREE(b->uses);
    b->uses = NULL;
    b->next = a->spare_blocks;
    a->spare_blocks = b;
}

/* ---- the PyTorch algorithm ---- */

/* get_free_block: best fit on the same stream, or NULL. */
static sc__allocator_block *sc__allocator_get_free_block(sc_allocator *a, int pool, int stream, size_t size)
{
    size_t i = sc__allocator_pool_lower(a, pool, stream, size, NULL);
    sc__allocator_block *b;
    if (i == a->pool_n[pool] || a->pool[pool][i]->stream != stream) return NULL;
    b = a->pool[pool][i];
    memmove(a->pool[pool] + i, a->pool[pool] + i + 1, (a->pool_n[pool] - i - 1) * sizeof *a->pool[pool]);
    a->pool_n[pool]--;
    return b;
}

/* alloc_block: a new segment as one free block (not in the pool), or NULL. */
static sc__allocator_block *sc__allocator_new_segment(sc_allocator *a, int pool, int stream, size_t seg_size,
                                              size_t requested, const char *tag, int is_retry)
{
    sc__allocator_segment *s;
    sc__allocator_block *b;
    char *ptr;
    size_t i;
    if (is_retry) a->stats.alloc_retries++;
    if (a->cfg.mem_cap &&
        (uint64_t)a->stats.reserved_bytes[SC_STAT_ALL].current + seg_size > a->cfg.mem_cap)
        return NULL;
    ptr = (char *)a->cfg.raw_alloc(seg_size, a->cfg.raw_user);
    if (!ptr) return NULL;
    s = a->spare_segs;
    a->spare_segs = s->next_spare;
    memset(s, 0, sizeof *s);
    s->base = ptr;
    s->size = seg_size;
    s->stream = stream;
    s->pool = pool;
    b = sc__allocator_new_block(a, pool);
    b->ptr = ptr;
    b->size = seg_size;
    b->stream = stream;
    b->seg = s;
    s->first = b;
    for (i = a->seg_n; i > 0 && (uintptr_t)a->segs[i - 1]->base > (uintptr_t)ptr; i--)
        a->segs[i] = a->segs[i - 1];
    a->segs[i] = s;
    a->seg_n++;
    sc__allocator_stat_inc(a->stats.segment, pool, 1);
    sc__allocator_stat_inc(a->stats.reserved_bytes, pool, (int64_t)seg_size);
    sc__allocator_emit(a, SC_MEM_SEGMENT_ALLOC, ptr, seg_size, requested, stream, tag);
    return b;
}

/* release_block: give a whole free segment (one block, in its pool) back. */
static void sc__allocator_release_segment(sc_allocator *a, sc__allocator_block *b)
{
    sc__allocator_segment *s = b->seg;
    size_t i;
    int pool = b->pool;
    sc__allocator_pool_erase(a, b);
    for (i = 0; i < a->seg_n && a->segs[i] != s; i++) {}
    SC_ASSERT(i < a->seg_n);
    memmove(a->segs + i, a->segs + i + 1, (a->seg_n - i - 1) * sizeof *a->segs);
    a->seg_n--;
    a->cfg.raw_free(s->base, s->size, a->cfg.raw_user);
    sc__allocator_stat_dec(a->stats.segment, pool, 1);
    sc__allocator_stat_dec(a->stats.reserved_bytes, pool, (int64_t)s->size);
    sc__allocator_emit(a, SC_MEM_SEGMENT_FREE, s->base, s->size, 0, s->stream, "");
    sc__allocator_recycle_block(a, b);
    s->next_spare = a->spare_segs;
    a->spare_segs = s;
}

/* try_merge_blocks: fold src (a free neighbour in the pool) into dst; returns src's size or 0. */
static size_t sc__allocator_try_merge(sc_allocator *a, sc__allocator_block *dst, sc__allocator_block *src)
{
    size_t subsumed;
    if (!src || src->allocated || src->event_count > 0) return 0;
    sc__allocator_pool_erase(a, src);
    if (dst->prev == src) { /* [src dst] */
        dst->ptr = src->ptr;
        dst->prev = src->prev;
        if (dst->prev) dst->prev->next = dst;
        else dst->seg->first = dst;
    } else { /* [dst src] */
        dst->next = src->next;
        if (dst->next) dst->next->prev = dst;
    }
    subsumed = src->size;
    dst->size += subsumed;
    sc__allocator_recycle_block(a, src);
    return subsumed;
}

/* free_block: a block nobody uses any more goes back to its pool, merged with free neighbours. */
static void sc__allocator_free_block(sc_allocator *a, sc__allocator_block *b)
{
    size_t orig_size = b->size, requested = b->requested;
    int64_t d_blocks = 0, d_bytes = 0;
    sc__allocator_block *cand[2];
    SC_ASSERT(!b->allocated && b->event_count == 0);
    b->n_uses = 0;
    sc__allocator_active_erase(a, b); /* before merging: merging may move b->ptr */
    cand[0] = b->prev;
    cand[1] = b->next;
    for (int i = 0; i < 2; i++) {
        size_t sub = sc__allocator_try_merge(a, b, cand[i]);
        if (sub) { d_blocks -= 1; d_bytes -= (int64_t)sub; }
    }
    sc__allocator_pool_insert(a, b);
    if (sc__allocator_is_split(b)) { d_blocks += 1; d_bytes += (int64_t)b->size; }
    if (d_blocks > 0) sc__allocator_stat_inc(a->stats.inactive_split, b->pool, d_blocks);
    if (d_blocks < 0) sc__allocator_stat_dec(a->stats.inactive_split, b->pool, -d_blocks);
    if (d_bytes > 0) sc__allocator_stat_inc(a->stats.inactive_split_bytes, b->pool, d_bytes);
    if (d_bytes < 0) sc__allocator_stat_dec(a->stats.inactive_split_bytes, b->pool, -d_bytes);
    sc__allocator_stat_dec(a->stats.active, b->pool, 1);
    sc__allocator_stat_dec(a->stats.active_bytes, b->pool, (int64_t)orig_size);
    sc__allocator_stat_dec(a->stats.requested_bytes, b->pool, (int64_t)requested);
    b->requested = 0;
    b->tag[0] = 0;
}

/* process_events: pending blocks whose events have all completed are really freed. With
   `wait`, synchronize on each event first (synchronize_and_free_events). */
static void sc__allocator_process_events(sc_allocator *a, int wait)
{
    size_t i = 0;
    if (!a->pending_n) return;
    while (i < a->active_n) {
        sc__allocator_block *b = a->active[i];
        if (b->event_count > 0) {
            for (int u = 0; u < b->n_uses; u++) {
                void *ev = b->uses[u].event;
                if (!ev) continue;
                if (wait && a->cfg.event_synchronize) a->cfg.event_synchronize(ev, a->cfg.event_user);
                if (!a->cfg.event_query(ev, a->cfg.event_user)) continue;
                if (a->cfg.event_destroy) a->cfg.event_destroy(ev, a->cfg.event_user);
                b->uses[u].event = NULL;
                b->event_count--;
            }
            if (b->event_count == 0) {
                a->pending_n--;
                sc__allocator_free_block(a, b); /* removes b from active: index i is the next one */
                continue;
            }
        }
        i++;
    }
}

/* release_cached_blocks: wait for pending frees, then give back every whole free segment. */
static void sc__allocator_release_cached(sc_allocator *a)
{
    sc__allocator_process_events(a, 1);
    for (int p = 1; p >= 0; p--) { /* large pool first, as PyTorch */
        size_t i = 0;
        while (i < a->pool_n[p]) {
            sc__allocator_block *b = a->pool[p][i];
            if (!b->prev && !b->next) sc__allocator_release_segment(a, b);
            else i++;
        }
    }
}

static int sc__allocator_should_split(const sc__allocator_block *b, size_t size)
{
    size_t remaining = b->size - size;
    return b->pool == 0 ? remaining >= SC__ALLOCATOR_MIN_BLOCK : remaining > SC__ALLOCATOR_SMALL_SIZE;
}

/* alloc_found_block: carve `size` off the front of free block b and make it live. */
static sc__allocator_block *sc__allocator_take_block(sc_allocator *a, sc__allocator_block *b, size_t size,
                                             size_t requested, int stream, const char *tag)
{
    int already_split = sc__allocator_is_split(b), pool = b->pool;
    size_t i;
    if (sc__allocator_should_split(b, size)) {
        sc__allocator_block *rest = b;
        b = sc__allocator_new_block(a, pool);
        b->ptr = rest->ptr;
        b->size = size;
        b->stream = stream;
        b->seg = rest->seg;
        b->prev = rest->prev;
        if (b->prev) b->prev->next = b;
        else b->seg->first = b;
        b->next = rest;
        rest->prev = b;
        rest->ptr += size;
        rest->size -= size;
        sc__allocator_pool_insert(a, rest);
        if (already_split) {
            sc__allocator_stat_dec(a->stats.inactive_split_bytes, pool, (int64_t)size);
        } else {
            sc__allocator_stat_inc(a->stats.inactive_split_bytes, pool, (int64_t)rest->size);
            sc__allocator_stat_inc(a->stats.inactive_split, pool, 1);
        }
    } else if (already_split) {
        sc__allocator_stat_dec(a->stats.inactive_split_bytes, pool, (int64_t)b->size);
        sc__allocator_stat_dec(a->stats.inactive_split, pool, 1);
    }
    b->allocated = 1;
    b->requested = requested;
    sc__allocator_copy_tag(b->tag, tag);
    i = sc__allocator_active_lower(a, b->ptr);
    memmove(a->active + i + 1, a->active + i, (a->active_n - i) * sizeof *a->active);
    a->active[i] = b;
    a->active_n++;
    sc__allocator_stat_inc(a->stats.allocation, pool, 1);
    sc__allocator_stat_inc(a->stats.allocated_bytes, pool, (int64_t)b->size);
    sc__allocator_stat_inc(a->stats.active, pool, 1);
    sc__allocator_stat_inc(a->stats.active_bytes, pool, (int64_t)b->size);
    sc__allocator_stat_inc(a->stats.requested_bytes, pool, (int64_t)requested);
    return b;
}

static sc_result sc__allocator_oom(sc_allocator *a, size_t bytes, size_t size, size_t seg_size,
                               int stream, const char *tag, int cap_hit)
{
    const sc__allocator_block *top[10];
    int ntop = 0, len;
    char msg[1024], h1[32], h2[32], h3[32], h4[32], h5[32], h6[32];
    int64_t alloc = a->stats.allocated_bytes[SC_STAT_ALL].current;
    int64_t resv = a->stats.reserved_bytes[SC_STAT_ALL].current;
    size_t largest = 0; /* the largest free block of the request's stream and pool */
    int pool = size <= SC__ALLOCATOR_SMALL_SIZE ? 0 : 1;
    for (size_t i = 0; i < a->pool_n[pool]; i++)
        if (a->pool[pool][i]->stream == stream && a->pool[pool][i]->size > largest) largest = a->pool[pool][i]->size;
    a->stats.num_ooms++;
    SC_FREE(a->oom_json);
    a->oom_json = NULL;
    int jn = sc_allocator_snapshot_json(a, NULL, 0);
    if (jn > 0 && (a->oom_json = (char *)SC_MALLOC((size_t)jn + 1)) != NULL)
        sc_allocator_snapshot_json(a, a->oom_json, (size_t)jn + 1);
    sc__allocator_emit(a, SC_MEM_OOM, NULL, size, bytes, stream, tag);
    /* the ten largest live blocks, by insertion into a sorted top list */
    for (size_t i = 0; i < a->active_n; i++) {
        const sc__allocator_block *b = a->active[i];
        int j;
        if (!b->allocated) continue;
        if (ntop == 10 && b->requested <= top[9]->requested) continue;
        j = ntop < 10 ? ntop++ : 9;
        for (; j > 0 && top[j - 1]->requested < b->requested; j--) top[j] = top[j - 1];
        top[j] = b;
    }
    sc__allocator_human(h1, sizeof h1, seg_size ? seg_size : size);
    sc__allocator_human(h2, sizeof h2, (uint64_t)alloc);
    sc__allocator_human(h3, sizeof h3, (uint64_t)resv);
    sc__allocator_human(h4, sizeof h4, (uint64_t)(resv - alloc));
    if (a->cfg.mem_cap) sc__allocator_human(h5, sizeof h5, a->cfg.mem_cap);
    else snprintf(h5, sizeof h5, "none");
    sc__allocator_human(h6, sizeof h6, largest);
    len = snprintf(msg, sizeof msg,
                   "%s out of memory: tried to allocate %s for %llu bytes \"%.48s\" on stream %d "
                   "(%s); %s allocated, %s reserved (%s reserved but unallocated, the largest free "
                   "block of that stream %s), cap %s. Largest live:",
                   a->name, h1, (unsigned long long)bytes, tag ? tag : "", stream,
                   cap_hit ? "the cap would be exceeded" : "the raw allocator failed",
                   h2, h3, h4, h6, h5);
    for (int i = 0; i < ntop && len > 0 && (size_t)len < sizeof msg; i++) {
        sc__allocator_human(h1, sizeof h1, top[i]->requested);
        len += snprintf(msg + len, sizeof msg - (size_t)len, "%s %s \"%.48s\"", i ? ";" : "", h1,
                        top[i]->tag);
    }
    if (!ntop) snprintf(msg + len, sizeof msg - (size_t)len, " none");
    return sc__fail(SC_ERROR_OUT_OF_MEMORY, "%s", msg);
}

/* ---- public API ---- */

SCDEF sc_result sc_allocator_init(sc_allocator *a, const sc_allocator_config *cfg)
{
    if (!a) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_allocator_init: NULL allocator");
    memset(a, 0, sizeof *a);
    if (cfg) a->cfg = *cfg;
    if (!a->cfg.raw_alloc != !a->cfg.raw_free)
        return sc__fail(SC_ERROR_INVALID_ARGS, "sc_allocator_init: set both raw_alloc and raw_free, or neither");
    if (a->cfg.event_record && !a->cfg.event_query)
        return sc__fail(SC_ERROR_INVALID_ARGS, "sc_allocator_init: event_record needs event_query");
    snprintf(a->name, sizeof a->name, "%s",
             a->cfg.name ? a->cfg.name : (a->cfg.raw_alloc ? "device" : "cpu"));
    a->cfg.name = a->name;
    if (!a->cfg.raw_alloc) {
        a->cfg.raw_alloc = sc__allocator_host_raw;
        a->cfg.raw_free = sc__allocator_host_raw_free;
    }
    return SC_SUCCESS;
}

SCDEF void sc_allocator_uninit(sc_allocator *a)
{
    size_t live = 0, live_bytes = 0;
    if (!a) return;
    for (size_t i = 0; i < a->active_n; i++) {
        sc__allocator_block *b = a->active[i];
        if (b->allocated) {
            if (live < 10)
                fprintf(stderr, "slidecheck: allocator %s: uninit with a live block %p of %zu bytes \"%s\"\n",
                        a->name, (void *)b->ptr, b->requested, b->tag);
            live++;
            live_bytes += b->requested;
        }
        for (int u = 0; u < b->n_uses; u++)
            if (b->uses[u].event && a->cfg.event_destroy)
                a->cfg.event_destroy(b->uses[u].event, a->cfg.event_user);
    }
    if (live)
        fprintf(stderr, "slidecheck: allocator %s: %zu block(s), %zu bytes, never freed (a caller bug)\n",
                a->name, live, live_bytes);
    /* every block belongs to a segment: walk them and free it all */
    for (size_t i = 0; i < a->seg_n; i++) {
        sc__allocator_segment *s = a->segs[i];
        sc__allocator_block *b = s->first;
        a->cfg.raw_free(s->base, s->size, a->cfg.raw_user);
        while (b) {
            sc__allocator_block *n = b->next;
            SC_FREE(b->uses);
            SC_FREE(b);
            b = n;
        }
        SC_FREE(s);
    }
    while (a->spare_blocks) {
        sc__allocator_block *n = a->spare_blocks->next;
        SC_FREE(a->spare_blocks);
        a->spare_blocks = n;
    }
    while (a->spare_segs) {
        sc__allocator_segment *n = a->spare_segs->next_spare;
        SC_FREE(a->spare_segs);
        a->spare_segs = n;
    }
    SC_FREE(a->pool[0]);
    SC_FREE(a->pool[1]);
    SC_FREE(a->active);
    SC_FREE(a->segs);
    SC_FREE(a->oom_json);
    memset(a, 0, sizeof *a);
}

SCDEF sc_result sc_allocator_alloc(sc_allocator *a, void **out, size_t bytes, int stream,
                                   const char *tag)
{
    size_t size, seg_size;
    int pool;
    sc__allocator_block *b;
    if (!a || !out) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_allocator_alloc: NULL argument");
    *out = NULL;
    if (bytes > SC__ALLOCATOR_MAX_REQUEST) return sc__allocator_oom(a, bytes, bytes, 0, stream, tag, 0);
    if (!sc__allocator_reserve(a))
        return sc__fail(SC_ERROR_OUT_OF_MEMORY, "%s: out of host memory for allocator bookkeeping", a->name);
    sc__allocator_process_events(a, 0);
    size = sc__allocator_round(bytes);
    pool = size <= SC__ALLOCATOR_SMALL_SIZE ? 0 : 1;
    seg_size = sc__allocator_segment_size(size);
    b = sc__allocator_get_free_block(a, pool, stream, size);
    if (!b) b = sc__allocator_new_segment(a, pool, stream, seg_size, bytes, tag, 0);
    if (!b) {
        /* free every cached segment, then one more try (release_cached_blocks) */
        sc__allocator_release_cached(a);
        b = sc__allocator_new_segment(a, pool, stream, seg_size, bytes, tag, 1);
    }
    if (!b) {
        int cap_hit = a->cfg.mem_cap &&
                      (uint64_t)a->stats.reserved_bytes[SC_STAT_ALL].current + seg_size > a->cfg.mem_cap;
        return sc__allocator_oom(a, bytes, size, seg_size, stream, tag, cap_hit);
    }
    b = sc__allocator_take_block(a, b, size, bytes, stream, tag);
    *out = b->ptr;
    sc__allocator_emit(a, SC_MEM_ALLOC, b->ptr, b->size, bytes, stream, b->tag);
    return SC_SUCCESS;
}

SCDEF void sc_allocator_free(sc_allocator *a, void *ptr)
{
    sc__allocator_block *b;
    if (!a || !ptr) return;
    b = sc__allocator_active_find(a, ptr);
    if (!b || !b->allocated) {
        fprintf(stderr, "slidecheck: allocator %s: free of %p, which is not a live block here%s\n",
                a->name, ptr, b ? " (freed twice)" : "");
        return;
    }
    b->allocated = 0;
    sc__allocator_stat_dec(a->stats.allocation, b->pool, 1);
    sc__allocator_stat_dec(a->stats.allocated_bytes, b->pool, (int64_t)b->size);
    sc__allocator_emit(a, SC_MEM_FREE, b->ptr, b->size, b->requested, b->stream, b->tag);
    /* insert_events: the block waits for the work queued so far on every other stream using it */
    for (int u = 0; u < b->n_uses; u++) {
        b->uses[u].event = a->cfg.event_record(b->uses[u].stream, a->cfg.event_user);
        if (b->uses[u].event) b->event_count++;
    }
    if (b->event_count) a->pending_n++;
    else sc__allocator_free_block(a, b);
}

SCDEF void sc_allocator_record_stream(sc_allocator *a, void *ptr, int stream)
{
    sc__allocator_block *b;
    if (!a || !ptr) return;
    b = sc__allocator_active_find(a, ptr);
    if (!b || !b->allocated) {
        fprintf(stderr, "slidecheck: allocator %s: record_stream of %p, which is not a live block here\n",
                a->name, ptr);
        return;
    }
    /* uses on the allocation stream need no synchronisation; without events nothing does */
    if (stream == b->stream || !a->cfg.event_record) return;
    for (int u = 0; u < b->n_uses; u++)
        if (b->uses[u].stream == stream) return;
    if (b->n_uses == b->cap_uses) {
        int n = b->cap_uses ? 2 * b->cap_uses : 4;
        sc__allocator_use *p = (sc__allocator_use *)SC_REALLOC(b->uses, (size_t)n * sizeof *p);
        if (!p) {
            fprintf(stderr, "slidecheck: allocator %s: out of host memory in record_stream\n", a->name);
            return;
        }
        b->uses = p;
        b->cap_uses = n;
    }
    b->uses[b->n_uses].stream = stream;
    b->uses[b->n_uses].event = NULL;
    b->n_uses++;
}

SCDEF void sc_allocator_empty_cache(sc_allocator *a)
{
    if (a) sc__allocator_release_cached(a);
}

/* Every sc_stat array of the allocator, for the resets below. */
static void sc__allocator_stat_arrays(sc_allocator *a, sc_stat *all[9])
{
    all[0] = a->stats.allocation; all[1] = a->stats.segment; all[2] = a->stats.active;
    all[3] = a->stats.inactive_split; all[4] = a->stats.allocated_bytes;
    all[5] = a->stats.reserved_bytes; all[6] = a->stats.active_bytes;
    all[7] = a->stats.inactive_split_bytes; all[8] = a->stats.requested_bytes;
}

SCDEF void sc_allocator_reset_peak(sc_allocator *a)
{
    sc_stat *all[9];
    if (!a) return;
    sc__allocator_stat_arrays(a, all);
    for (int i = 0; i < 9; i++)
        for (int t = 0; t < SC_STAT_TYPES; t++) all[i][t].peak = all[i][t].current;
}

SCDEF void sc_allocator_reset_accumulated(sc_allocator *a)
{
    sc_stat *all[9];
    if (!a) return;
    sc__allocator_stat_arrays(a, all);
    for (int i = 0; i < 9; i++)
        for (int t = 0; t < SC_STAT_TYPES; t++) all[i][t].allocated_total = all[i][t].freed_total = 0;
    a->stats.alloc_retries = 0;
    a->stats.num_ooms = 0;
}

SCDEF sc_memory_stats sc_allocator_stats(const sc_allocator *a)
{
    sc_memory_stats s;
    if (a) return a->stats;
    memset(&s, 0, sizeof s);
    return s;
}

SCDEF const char *sc_allocator_tag_of(const sc_allocator *a, const void *ptr)
{
    const sc__allocator_block *b = a && ptr ? sc__allocator_active_find(a, ptr) : NULL;
    return b && b->allocated ? b->tag : NULL;
}

SCDEF size_t sc_allocator_live_bytes_tagged(const sc_allocator *a, const char *tag_prefix)
{
    size_t sum = 0, n = tag_prefix ? strlen(tag_prefix) : 0;
    if (!a) return 0;
    for (size_t i = 0; i < a->active_n; i++) {
        const sc__allocator_block *b = a->active[i];
        if (b->allocated && !strncmp(b->tag, tag_prefix ? tag_prefix : "", n)) sum += b->requested;
    }
    return sum;
}

/* snprintf into buf at *len, keeping snprintf's "length it would have had" semantics. */
static void sc__allocator_appendf(char *buf, size_t cap, int *len, const char *fmt, ...)
{
    va_list ap;
    int n;
    size_t at = (size_t)*len;
    va_start(ap, fmt);
    n = vsnprintf(at < cap ? buf + at : NULL, at < cap ? cap - at : 0, fmt, ap);
    va_end(ap);
    if (n > 0) *len += n;
}

/* torch.cuda.memory._format_size / _format_count: the unit follows the "all" row's value. */
static void sc__allocator_fmt_size(char *out, size_t cap, int64_t sz, int64_t pref)
{
    static const char *prefixes[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int p = 0;
    double pf = (double)pref;
    while (p < 5 && !(pf < 768.0 * 1024.0)) { p++; sz /= 1024; pf /= 1024.0; }
    snprintf(out, cap, "%6lld %s", (long long)sz, prefixes[p]);
}

static void sc__allocator_fmt_count(char *out, size_t cap, int64_t cnt, int64_t pref)
{
    static const char *prefixes[] = {" ", "K", "M"};
    int p = 0;
    double pf = (double)pref;
    while (p < 2 && !(pf < 750.0 * 1000.0)) { p++; cnt /= 1000; pf /= 1000.0; }
    snprintf(out, cap, "%7lld %s ", (long long)cnt, prefixes[p]);
}

SCDEF int sc_allocator_summary(const sc_allocator *a, char *buf, size_t cap)
{
    static const char *sub[3] = {NULL, "      from large pool", "      from small pool"};
    static const int subidx[3] = {SC_STAT_ALL, SC_STAT_LARGE_POOL, SC_STAT_SMALL_POOL};
    const char *rule = "===================================================================================";
    const char *thin = "-----------------------------------------------------------------------------------";
    char label[40], reserved_mem[40], reserved_seg[40], title[80];
    const sc_stat *rows[11];
    const char *names[11];
    int is_bytes[11];
    int len = 0, nrows = 0;
    if (cap && buf) buf[0] = 0;
    if (!a) return 0;
    snprintf(reserved_mem, sizeof reserved_mem, "%.8s reserved memory", a->name);
    snprintf(reserved_seg, sizeof reserved_seg, "%.8s reserved segments", a->name);
#define SC__ROW(st, nm, b) (rows[nrows] = (st), names[nrows] = (nm), is_bytes[nrows++] = (b))
    SC__ROW(a->stats.allocated_bytes, "Allocated memory", 1);
    SC__ROW(a->stats.active_bytes, "Active memory", 1);
    SC__ROW(a->stats.requested_bytes, "Requested memory", 1);
    SC__ROW(a->stats.reserved_bytes, reserved_mem, 1);
    SC__ROW(a->stats.inactive_split_bytes, "Non-releasable memory", 1);
    SC__ROW(a->stats.allocation, "Allocations", 0);
    SC__ROW(a->stats.active, "Active allocs", 0);
    SC__ROW(a->stats.segment, reserved_seg, 0);
    SC__ROW(a->stats.inactive_split, "Non-releasable allocs", 0);
#undef SC__ROW
    snprintf(title, sizeof title, "slidecheck memory summary, %s", a->name);
    sc__allocator_appendf(buf, cap, &len, "|%s|\n| %-81s |\n|%s|\n", rule, title, thin);
    {
        char c1[64], c2[64];
        snprintf(c1, sizeof c1, "OOMs: %lld", (long long)a->stats.num_ooms);
        snprintf(c2, sizeof c2, "raw allocation retries: %lld", (long long)a->stats.alloc_retries);
        sc__allocator_appendf(buf, cap, &len, "| %-33s | %-45s |\n|%s|\n", c1, c2, rule);
    }
    sc__allocator_appendf(buf, cap, &len, "| %-29s | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n",
                      "Metric");
    for (int r = 0; r < nrows; r++) {
        const sc_stat *all = &rows[r][SC_STAT_ALL];
        sc__allocator_appendf(buf, cap, &len, "|%s|\n", thin);
        for (int s = 0; s < 3; s++) {
            const sc_stat *st = &rows[r][subidx[s]];
            int64_t v[4], pref[4];
            char cell[4][32];
            v[0] = st->current; v[1] = st->peak; v[2] = st->allocated_total; v[3] = st->freed_total;
            pref[0] = all->current; pref[1] = all->peak; pref[2] = all->allocated_total;
            pref[3] = all->freed_total;
            for (int c = 0; c < 4; c++) {
                if (is_bytes[r]) sc__allocator_fmt_size(cell[c], sizeof cell[c], v[c], pref[c]);
                else sc__allocator_fmt_count(cell[c], sizeof cell[c], v[c], pref[c]);
            }
            snprintf(label, sizeof label, "%s", s ? sub[s] : names[r]);
            sc__allocator_appendf(buf, cap, &len, "| %-29s | %s | %s | %s | %s |\n", label, cell[0],
                              cell[1], cell[2], cell[3]);
        }
    }
    sc__allocator_appendf(buf, cap, &len, "|%s|\n", rule);
    return len;
}

static void sc__allocator_json_string(char *buf, size_t cap, int *len, const char *s)
{
    sc__allocator_appendf(buf, cap, len, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') sc__allocator_appendf(buf, cap, len, "\\%c", c);
        else if (c == '\n') sc__allocator_appendf(buf, cap, len, "\\n");
        else if (c == '\t') sc__allocator_appendf(buf, cap, len, "\\t");
        else if (c == '\r') sc__allocator_appendf(buf, cap, len, "\\r");
        else if (c < 0x20) sc__allocator_appendf(buf, cap, len, "\\u%04x", c);
        else sc__allocator_appendf(buf, cap, len, "%c", c);
    }
    sc__allocator_appendf(buf, cap, len, "\"");
}

SCDEF const char *sc_allocator_oom_snapshot(const sc_allocator *a) { return a ? a->oom_json : NULL; }

SCDEF int sc_allocator_snapshot_json(const sc_allocator *a, char *buf, size_t cap)
{
    int len = 0;
    if (cap && buf) buf[0] = 0;
    if (!a) return 0;
    sc__allocator_appendf(buf, cap, &len, "{\"device\": ");
    sc__allocator_json_string(buf, cap, &len, a->name);
    sc__allocator_appendf(buf, cap, &len, ", \"mem_cap\": %llu, \"segments\": [",
                      (unsigned long long)a->cfg.mem_cap);
    for (size_t i = 0; i < a->seg_n; i++) {
        const sc__allocator_segment *s = a->segs[i];
        size_t alloc = 0, active = 0, req = 0;
        for (const sc__allocator_block *b = s->first; b; b = b->next) {
            if (b->allocated) alloc += b->size;
            if (b->allocated || b->event_count) { active += b->size; req += b->requested; }
        }
        sc__allocator_appendf(buf, cap, &len,
                          "%s\n {\"address\": %llu, \"total_size\": %zu, \"allocated_size\": %zu, "
                          "\"active_size\": %zu, \"requested_size\": %zu, \"stream\": %d, "
                          "\"segment_type\": \"%s\", \"blocks\": [",
                          i ? "," : "", (unsigned long long)(uintptr_t)s->base, s->size, alloc, active,
                          req, s->stream, s->pool ? "large" : "small");
        for (const sc__allocator_block *b = s->first; b; b = b->next) {
            const char *state = b->allocated ? "active_allocated"
                                : b->event_count ? "active_pending_free" : "inactive";
            sc__allocator_appendf(buf, cap, &len,
                              "%s\n  {\"offset\": %zu, \"address\": %llu, \"size\": %zu, "
                              "\"requested_size\": %zu, \"state\": \"%s\", \"tag\": ",
                              b == s->first ? "" : ",", (size_t)(b->ptr - s->base),
                              (unsigned long long)(uintptr_t)b->ptr, b->size, b->requested, state);
            sc__allocator_json_string(buf, cap, &len, b->tag);
            sc__allocator_appendf(buf, cap, &len, "}");
        }
        sc__allocator_appendf(buf, cap, &len, "]}");
    }
    sc__allocator_appendf(buf, cap, &len, "]}\n");
    return len;
}

SCDEF sc_result sc_allocator_validate(const sc_allocator *a)
{
    int64_t sum[2][6]; /* per pool: allocated bytes, count, active bytes, count, requested, reserved */
    int64_t split[2][2]; /* per pool: inactive split count, bytes */
    size_t nfree[2] = {0, 0}, nblocks[2] = {0, 0}, nactive = 0, npending = 0;
    const sc_memory_stats *st = &a->stats;
    memset(sum, 0, sizeof sum);
    memset(split, 0, sizeof split);
    for (size_t i = 0; i < a->seg_n; i++) {
        const sc__allocator_segment *s = a->segs[i];
        const sc__allocator_block *prev = NULL;
        char *at = s->base;
        int p = s->pool;
        if (i && (uintptr_t)a->segs[i - 1]->base + a->segs[i - 1]->size > (uintptr_t)s->base)
            return sc__fail(SC_ERROR_FORMAT, "allocator: segments %zu and %zu overlap", i - 1, i);
        sum[p][5] += (int64_t)s->size;
        for (const sc__allocator_block *b = s->first; b; prev = b, b = b->next) {
            int is_free = !b->allocated && !b->event_count;
            nblocks[p]++;
            if (b->ptr != at || b->prev != prev || b->seg != s || b->pool != p || b->stream != s->stream)
                return sc__fail(SC_ERROR_FORMAT, "allocator: block %p breaks the tiling of segment %p",
                                (void *)b->ptr, (void *)s->base);
            if (!b->size || b->size % SC__ALLOCATOR_MIN_BLOCK)
                return sc__fail(SC_ERROR_FORMAT, "allocator: block size %zu is not a multiple of 512", b->size);
            if (is_free && prev && !prev->allocated && !prev->event_count)
                return sc__fail(SC_ERROR_FORMAT, "allocator: two free neighbours at %p", (void *)b->ptr);
            if (is_free) {
                size_t k = sc__allocator_pool_lower(a, p, b->stream, b->size, b->ptr);
                if (k >= a->pool_n[p] || a->pool[p][k] != b)
                    return sc__fail(SC_ERROR_FORMAT, "allocator: free block %p missing from its pool",
                                    (void *)b->ptr);
                nfree[p]++;
                if (b->prev || b->next) { split[p][0]++; split[p][1] += (int64_t)b->size; }
            } else {
                if (sc__allocator_active_find(a, b->ptr) != b)
                    return sc__fail(SC_ERROR_FORMAT, "allocator: block %p missing from the active list",
                                    (void *)b->ptr);
                nactive++;
                if (b->allocated) { sum[p][0] += (int64_t)b->size; sum[p][1]++; }
                else npending++;
                sum[p][2] += (int64_t)b->size;
                sum[p][3]++;
                sum[p][4] += (int64_t)b->requested;
            }
            at += b->size;
        }
        if (at != s->base + s->size)
            return sc__fail(SC_ERROR_FORMAT, "allocator: blocks do not cover segment %p", (void *)s->base);
    }
    for (int p = 0; p < 2; p++) {
        int t = p ? SC_STAT_LARGE_POOL : SC_STAT_SMALL_POOL;
        if (nfree[p] != a->pool_n[p] || nblocks[p] != a->pool_blocks[p])
            return sc__fail(SC_ERROR_FORMAT, "allocator: pool %d holds %zu blocks, %zu free ones exist",
                            p, a->pool_n[p], nfree[p]);
        for (size_t k = 1; k < a->pool_n[p]; k++) {
            const sc__allocator_block *x = a->pool[p][k - 1], *y = a->pool[p][k];
            if (!sc__allocator_pool_less(x, y->stream, y->size, y->ptr))
                return sc__fail(SC_ERROR_FORMAT, "allocator: pool %d is not sorted", p);
        }
        if (st->allocated_bytes[t].current != sum[p][0] || st->allocation[t].current != sum[p][1] ||
            st->active_bytes[t].current != sum[p][2] || st->active[t].current != sum[p][3] ||
            st->requested_bytes[t].current != sum[p][4] || st->reserved_bytes[t].current != sum[p][5] ||
            st->inactive_split[t].current != split[p][0] ||
            st->inactive_split_bytes[t].current != split[p][1])
            return sc__fail(SC_ERROR_FORMAT, "allocator: pool %d stats differ from its blocks", p);
    }
    if (nactive != a->active_n || npending != a->pending_n)
        return sc__fail(SC_ERROR_FORMAT, "allocator: active list holds %zu blocks, %zu exist",
                        a->active_n, nactive);
    if (a->cfg.mem_cap && (uint64_t)st->reserved_bytes[SC_STAT_ALL].current > a->cfg.mem_cap)
        return sc__fail(SC_ERROR_FORMAT, "allocator: reserved exceeds the cap");
    for (int k = 0; k < 9; k++) {
        const sc_stat *arr = k == 0 ? st->allocation : k == 1 ? st->segment : k == 2 ? st->active
                           : k == 3 ? st->inactive_split : k == 4 ? st->allocated_bytes
                           : k == 5 ? st->reserved_bytes : k == 6 ? st->active_bytes
                           : k == 7 ? st->inactive_split_bytes : st->requested_bytes;
        if (arr[SC_STAT_ALL].current != arr[1].current + arr[2].current ||
            arr[SC_STAT_ALL].peak < arr[SC_STAT_ALL].current)
            return sc__fail(SC_ERROR_FORMAT, "allocator: stat %d is inconsistent", k);
    }
    return SC_SUCCESS;
}
/* ---- tracing: spans, steps, memory events, statistics, writers ---- */
#include <time.h>
#ifdef __linux__
#include <fcntl.h>
#include <unistd.h>
#endif
#ifdef _WIN32
#include <direct.h>
#else
#include <sys/stat.h>
#include <sys/types.h>
#endif

/* Strict -std=c11 hides the POSIX clocks in <time.h>, but glibc still exports
   clock_gettime and CLOCK_MONOTONIC is 1 in the Linux ABI, so declare what we use. */
#if defined(__linux__) && !defined(CLOCK_MONOTONIC)
#ifdef __cplusplus
extern "C"
#endif
int clock_gettime(int clk, struct timespec *ts);
#define SC__TRACE_CLOCK 1
#elif defined(CLOCK_MONOTONIC)
#define SC__TRACE_CLOCK CLOCK_MONOTONIC
#endif

static int64_t sc__trace_now_ns(void)
{
    struct timespec ts;
#ifdef SC__TRACE_CLOCK
    clock_gettime(SC__TRACE_CLOCK, &ts);
#else
    timespec_get(&ts, TIME_UTC); /* no monotonic clock known here: the best C11 offers */
#endif
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Grow an array to hold `need` elements (doubling). Returns the (possibly moved) array, or
   NULL with *cap untouched when memory ran out; the old array then stays valid. */
static void *sc__trace_grow(void *p, int64_t *cap, int64_t need, size_t elem)
{
    if (need <= *cap) return p;
    int64_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = SC_REALLOC(p, (size_t)c * elem);
    if (q) *cap = c;
    return q;
}

/* ---- CPU resident set size ---- */
#ifdef __linux__
/* Resident pages from /proc/<self>/statm: the second number. Kept open, so one sample costs
   an lseek and a read. */
static int64_t sc__trace_statm(int fd, int64_t page)
{
    char buf[128];
    if (fd < 0 || lseek(fd, 0, SEEK_SET) != 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n <= 0) return 0;
    buf[n] = 0;
    char *e;
    strtoll(buf, &e, 10);
    return strtoll(e, NULL, 10) * page;
}

static int64_t sc__trace_page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? p : 4096;
}

/* A "Key:   123 kB" line of /proc/self/status, in bytes (0 when absent). */
static int64_t sc__trace_status_bytes(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    size_t kl = strlen(key);
    int64_t v = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') { v = strtoll(line + kl + 1, NULL, 10) * 1024; break; }
    fclose(f);
    return v;
}

/* Writing "5" to clear_refs resets VmHWM to the current RSS, so VmHWM read later is the
   peak since this call (Linux >= 4.0). Returns 1 on success. */
static int sc__trace_clear_refs(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY);
    if (fd < 0) return 0;
    int ok = write(fd, "5", 1) == 1;
    close(fd);
    return ok;
}
#endif

SCDEF int64_t sc_cpu_rss_bytes(void)
{
#ifdef __linux__
    int fd = open("/proc/self/statm", O_RDONLY);
    int64_t r = sc__trace_statm(fd, sc__trace_page_size());
    if (fd >= 0) close(fd);
    return r;
#else
    return 0;
#endif
}

SCDEF int64_t sc_cpu_hwm_bytes(void)
{
#ifdef __linux__
    return sc__trace_status_bytes("VmHWM");
#else
    return 0;
#endif
}

/* One RSS sample through the tracer's open statm; also feeds the step's sampled maximum. */
static int64_t sc__trace_rss_sample(sc_tracer *tr)
{
#ifdef __linux__
    int64_t r = sc__trace_statm(tr->statm_fd, tr->page_size);
#else
    int64_t r = 0;
#endif
    if (tr->in_step && r > tr->step_rss_max) tr->step_rss_max = r;
    return r;
}

/* ---- phases ---- */
SCDEF const char *sc_phase_name(sc_phase p)
{
    static const char *names[SC_PHASE_COUNT] = {"fwd", "bwd", "recompute", "opt",
                                                "h2d", "d2h", "loss", "other", "comm"};
    return (int)p >= 0 && (int)p < SC_PHASE_COUNT ? names[p] : "?";
}

/* ---- init / uninit ---- */
SCDEF sc_result sc_tracer_init(sc_tracer *tr, const sc_tracer_config *cfg)
{
    if (!tr) return SC_SUCCESS;
    memset(tr, 0, sizeof *tr);
    tr->statm_fd = -1; /* so that uninit after a failed init closes nothing */
    if (cfg) tr->cfg = *cfg;
    if (tr->cfg.warmup_steps == 0) tr->cfg.warmup_steps = 1;
    if (tr->cfg.warmup_steps < 0) tr->cfg.warmup_steps = 0;
    if (tr->cfg.max_spans <= 0) tr->cfg.max_spans = (int64_t)1 << 20;
    if (tr->cfg.max_mem_rows <= 0) tr->cfg.max_mem_rows = (int64_t)1 << 20;
    if ((tr->cfg.event_record == NULL) != (tr->cfg.event_elapsed_ms == NULL))
        return sc__fail(SC_ERROR_INVALID_ARGS,
                        "sc_tracer_init: set both event_record and event_elapsed_ms, or neither");
    tr->gpu = tr->cfg.event_record != NULL;
    tr->t_init_ns = sc__trace_now_ns();
#ifdef __linux__
    tr->statm_fd = open("/proc/self/statm", O_RDONLY);
    tr->page_size = sc__trace_page_size();
#endif
    if (tr->cfg.no_clear_refs) tr->clear_refs_ok = -1;
    return SC_SUCCESS;
}

SCDEF void sc_tracer_uninit(sc_tracer *tr)
{
    if (!tr) return;
    /* a step left open still owns events */
    if (tr->gpu && tr->in_step && tr->cfg.event_destroy) {
        for (int64_t i = tr->cur.span_first; i < tr->nspans; i++) {
            if (tr->spans[i].ev0) tr->cfg.event_destroy(tr->spans[i].ev0, tr->cfg.user);
            if (tr->spans[i].ev1) tr->cfg.event_destroy(tr->spans[i].ev1, tr->cfg.user);
        }
        if (tr->step_ev) tr->cfg.event_destroy(tr->step_ev, tr->cfg.user);
    }
#ifdef __linux__
    if (tr->statm_fd >= 0) close(tr->statm_fd);
#endif
    for (int64_t i = 0; i < tr->ntags; i++) SC_FREE(tr->tags[i]);
    SC_FREE(tr->tags);
    SC_FREE(tr->tag_hash);
    SC_FREE(tr->spans);
    SC_FREE(tr->open);
    SC_FREE(tr->steps);
    SC_FREE(tr->layer_ms);
    SC_FREE(tr->layer_seen);
    SC_FREE(tr->rows);
    memset(tr, 0, sizeof *tr);
    tr->statm_fd = -1;
}

/* ---- steps ---- */
SCDEF sc_result sc_tracer_step_begin(sc_tracer *tr, int epoch, int step)
{
    if (!tr) return SC_SUCCESS;
    if (tr->in_step) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_tracer_step_begin: step already open");
    /* reserve the step's row now so that step_end cannot run out of memory */
    void *p = sc__trace_grow(tr->steps, &tr->cap_steps, tr->nsteps + 1, sizeof *tr->steps);
    if (!p) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "sc_tracer_step_begin: out of memory");
    tr->steps = (sc_step_metrics *)p;
    memset(&tr->cur, 0, sizeof tr->cur);
    tr->cur.lr = tr->cur.grad_norm = tr->cur.val_loss = NAN;
    tr->cur.epoch = epoch;
    tr->cur.step = step;
    tr->cur.global_step = tr->nsteps;
    tr->cur.span_first = tr->nspans;
    tr->cur.layer_first = tr->nlayer_ms;
    tr->nopen = 0;
    tr->step_events = 0;
#ifdef __linux__
    if (tr->clear_refs_ok >= 0) tr->clear_refs_ok = sc__trace_clear_refs() ? 1 : -1;
    tr->step_hwm_begin = tr->clear_refs_ok == 1 ? 0 : sc__trace_status_bytes("VmHWM");
#endif
    tr->in_step = 1;
    tr->step_rss_max = 0;
    sc__trace_rss_sample(tr);
    /* the clock starts after the tracer's own housekeeping */
    tr->cur.t0_ns = sc__trace_now_ns();
    tr->step_ev = tr->gpu ? tr->cfg.event_record(0, tr->cfg.user) : NULL;
    return SC_SUCCESS;
}

/* Event time in ms, or -1 when the callback gave nothing usable. */
static double sc__trace_elapsed(sc_tracer *tr, void *a, void *b)
{
    if (!a || !b) return -1;
    double ms = tr->cfg.event_elapsed_ms(a, b, tr->cfg.user);
    return ms >= 0 && ms < 1e12 ? ms : -1; /* also rejects NaN */
}

SCDEF sc_result sc_tracer_step_end(sc_tracer *tr, double loss, double tokens,
                                   const sc_tracer_mem *mem)
{
    if (!tr) return SC_SUCCESS;
    if (!tr->in_step) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_tracer_step_end: no step open");
    if (tr->cfg.device_sync) tr->cfg.device_sync(tr->cfg.user);
    int64_t t_end = sc__trace_now_ns();
    sc_step_metrics *m = &tr->cur;

    /* close what is still open */
    for (int64_t k = 0; k < tr->nopen; k++) {
        sc__trace_span *s = &tr->spans[tr->open[k]];
        s->t1_ns = t_end;
        if (tr->gpu) s->ev1 = tr->cfg.event_record(s->stream, tr->cfg.user);
        s->open = 0;
    }
    tr->nopen = 0;

    /* CPU memory: current and the step's true peak */
    m->cpu_rss = sc__trace_rss_sample(tr);
    m->cpu_peak_rss = tr->step_rss_max;
#ifdef __linux__
    {
        int64_t hwm = sc__trace_status_bytes("VmHWM");
        if (tr->clear_refs_ok == 1) {
            m->cpu_peak_method = 1;
            tr->any_clear_refs = 1;
            if (hwm > m->cpu_peak_rss) m->cpu_peak_rss = hwm;
        } else {
            /* a lifetime peak raised during this step was reached in this step */
            m->cpu_peak_method = 2;
            tr->any_samples = 1;
            if (hwm > tr->step_hwm_begin && hwm > m->cpu_peak_rss) m->cpu_peak_rss = hwm;
        }
    }
#endif

    /* resolve times: GPU events once per step, here; CPU clock otherwise */
    int64_t nl = m->num_layers;
    double *cells = nl ? tr->layer_ms + m->layer_first : NULL;
    if (nl) memset(cells, 0, sizeof *cells * (size_t)(nl * SC_PHASE_COUNT));
    for (int64_t i = m->span_first; i < tr->nspans; i++) {
        sc__trace_span *s = &tr->spans[i];
        s->ts_ms = (double)(s->t0_ns - tr->t_init_ns) / 1e6;
        s->dur_ms = (double)(s->t1_ns - s->t0_ns) / 1e6;
        if (tr->gpu) {
            double dur = sc__trace_elapsed(tr, s->ev0, s->ev1);
            double off = sc__trace_elapsed(tr, tr->step_ev, s->ev0);
            if (dur >= 0) s->dur_ms = dur;
            if (off >= 0) s->ts_ms = (double)(m->t0_ns - tr->t_init_ns) / 1e6 + off;
            if (tr->cfg.event_destroy) {
                if (s->ev0) tr->cfg.event_destroy(s->ev0, tr->cfg.user);
                if (s->ev1) tr->cfg.event_destroy(s->ev1, tr->cfg.user);
            }
            s->ev0 = s->ev1 = NULL;
        }
        if (s->counts_phase) m->phase_ms[s->phase] += s->dur_ms;
        m->bytes[s->phase] += s->bytes;
        if (s->counts_layer) {
            cells[(int64_t)s->layer * SC_PHASE_COUNT + s->phase] += s->dur_ms;
            tr->layer_seen[(int64_t)s->layer * SC_PHASE_COUNT + s->phase] = 1;
        }
    }
    if (tr->step_ev && tr->cfg.event_destroy) tr->cfg.event_destroy(tr->step_ev, tr->cfg.user);
    tr->step_ev = NULL;

    m->wall_ms = (double)(t_end - m->t0_ns) / 1e6;
    m->cum_wall_ms = (tr->nsteps ? tr->steps[tr->nsteps - 1].cum_wall_ms : 0) + m->wall_ms;
    m->loss = loss;
    m->tokens = tokens;
    m->tps = m->wall_ms > 0 ? tokens / (m->wall_ms / 1000.0) : 0;
    if (mem) m->gpu = *mem;
    tr->nlayer_ms = m->layer_first + nl * SC_PHASE_COUNT;

    /* keep at most max_spans for the trace, dropping from the newest step's tail */
    int64_t keep = tr->cfg.max_spans > m->span_first ? tr->cfg.max_spans : m->span_first;
    if (tr->nspans > keep) {
        tr->spans_dropped += tr->nspans - keep;
        tr->nspans = keep;
    }
    m->span_count = tr->nspans - m->span_first;
    tr->steps[tr->nsteps++] = *m;
    tr->in_step = 0;
    tr->step_events = 0;
    return SC_SUCCESS;
}

/* ---- spans ---- */
#define SC__TRACE_MAX_LAYER 65536

/* the step's per-layer cells reach layer `layer`; 0 when out of memory */
static int sc__trace_layer_room(sc_tracer *tr, int layer)
{
    if (layer < tr->cur.num_layers) return 1;
    int64_t need = tr->cur.layer_first + (int64_t)(layer + 1) * SC_PHASE_COUNT;
    void *p = sc__trace_grow(tr->layer_ms, &tr->cap_layer_ms, need, sizeof *tr->layer_ms);
    if (!p) return 0;
    tr->layer_ms = (double *)p;
    if (layer >= tr->max_layers) {
        int64_t old = tr->cap_seen;
        p = sc__trace_grow(tr->layer_seen, &tr->cap_seen, (int64_t)(layer + 1) * SC_PHASE_COUNT, 1);
        if (!p) return 0;
        tr->layer_seen = (unsigned char *)p;
        memset(tr->layer_seen + old, 0, (size_t)(tr->cap_seen - old));
        tr->max_layers = layer + 1;
    }
    tr->cur.num_layers = layer + 1;
    return 1;
}

SCDEF int sc_tracer_span_begin(sc_tracer *tr, const char *name, sc_phase phase, int layer,
                               int stream)
{
    if (!tr || !tr->in_step) return -1;
    if ((int)phase < 0 || (int)phase >= SC_PHASE_COUNT) phase = SC_PHASE_OTHER;
    if (layer < -1 || layer >= SC__TRACE_MAX_LAYER) layer = -1;
    int64_t id = tr->nspans - tr->cur.span_first;
    if (id >= INT32_MAX) return -1;
    /* reserve everything first so a failure leaves the tracer unchanged */
    void *p = sc__trace_grow(tr->spans, &tr->cap_spans, tr->nspans + 1, sizeof *tr->spans);
    if (!p) { tr->spans_dropped++; return -1; }
    tr->spans = (sc__trace_span *)p;
    p = sc__trace_grow(tr->open, &tr->cap_open, tr->nopen + 1, sizeof *tr->open);
    if (!p) { tr->spans_dropped++; return -1; }
    tr->open = (int *)p;
    if (!sc__trace_layer_room(tr, layer)) { tr->spans_dropped++; return -1; }

    int64_t idx = tr->nspans++;
    sc__trace_span *s = &tr->spans[idx];
    memset(s, 0, sizeof *s);
    if (name) {
        size_t n = strlen(name);
        if (n >= SC_TRACER_NAME_LEN) { /* truncate, but never inside a UTF-8 sequence */
            n = SC_TRACER_NAME_LEN - 1;
            while (n > 0 && ((unsigned char)name[n] & 0xC0) == 0x80) n--;
        }
        memcpy(s->name, name, n);
        s->name[n] = 0;
    }
    s->phase = (int)phase;
    s->layer = layer;
    s->stream = stream;
    s->open = 1;
    s->parent = -1;
    for (int64_t k = tr->nopen - 1; k >= 0; k--)
        if (tr->spans[tr->open[k]].stream == stream) { s->parent = tr->open[k]; break; }
    /* the nesting rule (see trace_decl.h), decided once here */
    s->counts_phase = 1;
    s->counts_layer = layer >= 0;
    for (int a = s->parent; a >= 0; a = tr->spans[a].parent) {
        if (tr->spans[a].phase != s->phase) continue;
        s->counts_phase = 0;
        if (tr->spans[a].layer == layer) s->counts_layer = 0;
    }
    tr->open[tr->nopen++] = (int)idx;
    int known = 0;
    for (int k = 0; k < tr->nstreams; k++) known |= tr->streams[k] == stream;
    if (!known && tr->nstreams < (int)(sizeof tr->streams / sizeof tr->streams[0]))
        tr->streams[tr->nstreams++] = stream;
    if (tr->clear_refs_ok != 1) sc__trace_rss_sample(tr); /* only the fallback needs samples */
    s->t0_ns = sc__trace_now_ns();
    if (tr->gpu) s->ev0 = tr->cfg.event_record(stream, tr->cfg.user);
    return (int)id;
}

SCDEF void sc_tracer_span_end(sc_tracer *tr, int id)
{
    if (!tr || !tr->in_step || id < 0) return;
    int64_t idx = tr->cur.span_first + id;
    if (idx >= tr->nspans || !tr->spans[idx].open) return;
    sc__trace_span *s = &tr->spans[idx];
    if (tr->gpu) s->ev1 = tr->cfg.event_record(s->stream, tr->cfg.user);
    s->t1_ns = sc__trace_now_ns();
    s->open = 0;
    /* usually the top of the stack, but spans on different streams may end out of order */
    for (int64_t k = tr->nopen - 1; k >= 0; k--)
        if (tr->open[k] == (int)idx) {
            memmove(tr->open + k, tr->open + k + 1, sizeof *tr->open * (size_t)(tr->nopen - k - 1));
            tr->nopen--;
            break;
        }
    if (tr->clear_refs_ok != 1) sc__trace_rss_sample(tr);
}

SCDEF int64_t sc_tracer_now_ns(void) { return sc__trace_now_ns(); }

SCDEF void sc_tracer_span_bytes(sc_tracer *tr, int id, int64_t bytes)
{
    if (!tr || !tr->in_step || id < 0) return;
    int64_t idx = tr->cur.span_first + id;
    if (idx < tr->nspans) tr->spans[idx].bytes += bytes;
}

SCDEF int sc_tracer_span_add(sc_tracer *tr, const char *name, sc_phase phase, int layer, int stream,
                             int64_t t0_ns, int64_t t1_ns)
{
    if (!tr || !tr->in_step) return -1;
    /* begin it with nothing open (no parent) and no events (host clock), then set its times */
    int64_t nopen = tr->nopen;
    int *saved = NULL;
    if (nopen) {
        saved = (int *)SC_MALLOC(sizeof(int) * (size_t)nopen);
        if (!saved) return -1;
        memcpy(saved, tr->open, sizeof(int) * (size_t)nopen);
    }
    tr->nopen = 0;
    int gpu = tr->gpu;
    tr->gpu = 0;
    int id = sc_tracer_span_begin(tr, name, phase, layer, stream);
    tr->gpu = gpu;
    if (id >= 0) {
        sc__trace_span *sp = &tr->spans[tr->cur.span_first + id];
        sp->t0_ns = t0_ns;
        sp->t1_ns = t1_ns;
        sp->open = 0;
    }
    tr->nopen = 0;
    if (nopen) {
        memcpy(tr->open, saved, sizeof(int) * (size_t)nopen);
        tr->nopen = nopen;
        SC_FREE(saved);
    }
    return id;
}

SCDEF void sc_tracer_count_launches(sc_tracer *tr, int64_t n)
{
    if (!tr || !tr->in_step) return;
    if (tr->nopen) {
        sc__trace_span *s = &tr->spans[tr->open[tr->nopen - 1]];
        s->launches += n;
        tr->cur.launches[s->phase] += n;
    } else {
        tr->cur.launches[SC_PHASE_OTHER] += n;
    }
}

#ifdef SLIDECHECK_CUDA
/* A CUDA graph's spans (sc_model): spans [from, nspans) of the open step, all closed, copied
   out at capture (parents made relative), appended again at each replay (their events are
   nodes of the graph, recorded on every replay; step_end reads them as usual), or dropped when
   a capture failed. */
static sc__trace_span *sc__tracer_spans_copy(const sc_tracer *tr, int64_t from, int64_t *n)
{
    *n = 0;
    if (!tr || !tr->in_step || from < 0 || from >= tr->nspans) return NULL;
    int64_t k = tr->nspans - from;
    sc__trace_span *c = (sc__trace_span *)SC_MALLOC(sizeof *c * (size_t)k);
    if (!c) return NULL;
    memcpy(c, tr->spans + from, sizeof *c * (size_t)k);
    for (int64_t i = 0; i < k; i++) c[i].parent = c[i].parent >= from ? (int)(c[i].parent - from) : -1;
    *n = k;
    return c;
}

static void sc__tracer_spans_replay(sc_tracer *tr, const sc__trace_span *src, int64_t n)
{
    if (!tr || !tr->in_step) return;
    int64_t first = tr->nspans, now = sc__trace_now_ns();
    int outer = tr->nopen ? tr->open[tr->nopen - 1] : -1;
    for (int64_t i = 0; i < n; i++) {
        void *p = sc__trace_grow(tr->spans, &tr->cap_spans, tr->nspans + 1, sizeof *tr->spans);
        if (!p || !sc__trace_layer_room(tr, src[i].layer)) { tr->spans_dropped += n - i; return; }
        tr->spans = (sc__trace_span *)p;
        sc__trace_span *s = &tr->spans[tr->nspans++];
        *s = src[i];
        s->parent = src[i].parent >= 0 ? (int)(first + src[i].parent)
                                       : (outer >= 0 && tr->spans[outer].stream == s->stream ? outer : -1);
        s->launches = 0; /* one launch ran them all */
        s->t0_ns = s->t1_ns = now;
        s->open = 0;
    }
}

static void sc__tracer_spans_rewind(sc_tracer *tr, int64_t to)
{
    if (!tr || !tr->in_step || to < tr->cur.span_first || to > tr->nspans) return;
    tr->nspans = to;
    int64_t k = 0;
    for (int64_t i = 0; i < tr->nopen; i++)
        if (tr->open[i] < to) tr->open[k++] = tr->open[i];
    tr->nopen = k;
}
#endif

/* ---- memory events ---- */
static uint64_t sc__trace_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

/* Index of tag in the tag table, adding it if new; -1 for no tag or out of memory. Tags are
   interned so rows stay small and callers may pass temporary strings. */
static int sc__trace_intern(sc_tracer *tr, const char *tag)
{
    if (!tag) return -1;
    uint64_t h = sc__trace_hash(tag);
    if (tr->cap_hash) {
        for (int64_t i = (int64_t)(h & (uint64_t)(tr->cap_hash - 1));; i = (i + 1) & (tr->cap_hash - 1)) {
            int t = tr->tag_hash[i];
            if (t < 0) break;
            if (!strcmp(tr->tags[t], tag)) return t;
        }
    }
    if (tr->ntags >= INT32_MAX / 2) return -1;
    void *p = sc__trace_grow(tr->tags, &tr->cap_tags, tr->ntags + 1, sizeof *tr->tags);
    if (!p) return -1;
    tr->tags = (char **)p;
    if (2 * (tr->ntags + 1) > tr->cap_hash) { /* rebuild at half load */
        int64_t cap = tr->cap_hash ? 2 * tr->cap_hash : 64;
        int *nh = (int *)SC_MALLOC(sizeof(int) * (size_t)cap);
        if (!nh) return -1;
        for (int64_t i = 0; i < cap; i++) nh[i] = -1;
        for (int64_t t = 0; t < tr->ntags; t++) {
            int64_t i = (int64_t)(sc__trace_hash(tr->tags[t]) & (uint64_t)(cap - 1));
            while (nh[i] >= 0) i = (i + 1) & (cap - 1);
            nh[i] = (int)t;
        }
        SC_FREE(tr->tag_hash);
        tr->tag_hash = nh;
        tr->cap_hash = cap;
    }
    size_t n = strlen(tag);
    char *copy = (char *)SC_MALLOC(n + 1);
    if (!copy) return -1;
    memcpy(copy, tag, n + 1);
    int64_t i = (int64_t)(h & (uint64_t)(tr->cap_hash - 1));
    while (tr->tag_hash[i] >= 0) i = (i + 1) & (tr->cap_hash - 1);
    tr->tag_hash[i] = (int)tr->ntags;
    tr->tags[tr->ntags] = copy;
    return (int)tr->ntags++;
}

SCDEF void sc_tracer_mem_record(sc_tracer *tr, int64_t allocated, int64_t reserved,
                                int64_t delta, const char *tag)
{
    if (!tr) return;
    int64_t now = sc__trace_now_ns();
    /* a training step makes hundreds of allocations in a millisecond: reading /proc for each
       would cost more than the step's kernel launches; the step's true peak comes from VmHWM */
    if (now - tr->last_rss_ns > 200000 || tr->last_rss_ns == 0) {
        tr->last_rss = sc__trace_rss_sample(tr);
        tr->last_rss_ns = now;
    }
    int64_t rss = tr->last_rss;
    int64_t event = tr->step_events++;
    if (tr->nrows >= tr->cfg.max_mem_rows) { tr->rows_dropped++; return; }
    void *p = sc__trace_grow(tr->rows, &tr->cap_rows, tr->nrows + 1, sizeof *tr->rows);
    if (!p) { tr->rows_dropped++; return; }
    tr->rows = (sc__trace_mem_row *)p;
    sc__trace_mem_row *r = &tr->rows[tr->nrows++];
    r->step = tr->in_step ? tr->cur.global_step : -1;
    r->event = event;
    r->t_ns = now - tr->t_init_ns;
    r->t_step_ns = now - (tr->in_step ? tr->cur.t0_ns : tr->t_init_ns);
    r->allocated = allocated;
    r->reserved = reserved;
    r->delta = delta;
    r->rss = rss;
    r->tag = sc__trace_intern(tr, tag);
}

/* ---- results ---- */
SCDEF int64_t sc_tracer_step_count(const sc_tracer *tr) { return tr ? tr->nsteps : 0; }

SCDEF int64_t sc_tracer_mem_count(const sc_tracer *tr) { return tr ? tr->nrows : 0; }

SCDEF int64_t sc_tracer_span_count(const sc_tracer *tr) { return tr ? (int64_t)tr->nspans : 0; }

SCDEF int sc_tracer_span_get(const sc_tracer *tr, int64_t i, sc_tracer_span_info *out)
{
    if (!tr || !out || i < 0 || i >= (int64_t)tr->nspans) return -1;
    const sc__trace_span *s = &tr->spans[i];
    out->name = s->name;
    out->phase = (sc_phase)s->phase;
    out->layer = s->layer, out->stream = s->stream, out->parent = s->parent;
    out->counts_phase = s->counts_phase, out->counts_layer = s->counts_layer;
    out->launches = s->launches, out->bytes = s->bytes;
    out->ts_ms = s->ts_ms, out->dur_ms = s->dur_ms;
    return 0;
}

SCDEF int sc_tracer_mem_get(const sc_tracer *tr, int64_t i, sc_tracer_mem_event *ev)
{
    if (!tr || !ev || i < 0 || i >= tr->nrows) return -1;
    const sc__trace_mem_row *w = &tr->rows[i];
    ev->step = w->step;
    ev->event = w->event;
    ev->t_ms = (double)w->t_step_ns / 1e6;
    ev->allocated = w->allocated;
    ev->reserved = w->reserved;
    ev->delta = w->delta;
    ev->rss = w->rss;
    ev->tag = w->tag >= 0 ? tr->tags[w->tag] : "";
    return 0;
}

SCDEF const sc_step_metrics *sc_tracer_step_get(const sc_tracer *tr, int64_t i)
{
    return tr && i >= 0 && i < tr->nsteps ? &tr->steps[i] : NULL;
}

SCDEF double sc_tracer_layer_ms(const sc_tracer *tr, int64_t i, int layer, sc_phase phase)
{
    const sc_step_metrics *m = sc_tracer_step_get(tr, i);
    if (!m || layer < 0 || layer >= m->num_layers || (int)phase < 0 || (int)phase >= SC_PHASE_COUNT)
        return 0;
    return tr->layer_ms[m->layer_first + (int64_t)layer * SC_PHASE_COUNT + phase];
}

SCDEF const char *sc_tracer_peak_method(const sc_tracer *tr)
{
    if (!tr) return "none";
    if (tr->any_clear_refs && tr->any_samples) return "mixed";
    return tr->any_clear_refs ? "clear_refs" : tr->any_samples ? "samples" : "none";
}

/* ---- statistics ---- */
/* Continued fraction of the incomplete beta function (modified Lentz). */
static double sc__trace_betacf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    if (fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 100000; m++) {
        double aa = m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m));
        d = 1 + aa * d; if (fabs(d) < tiny) d = tiny;
        c = 1 + aa / c; if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        h *= d * c;
        aa = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m));
        d = 1 + aa * d; if (fabs(d) < tiny) d = tiny;
        c = 1 + aa / c; if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-16) break;
    }
    return h;
}

/* Regularized incomplete beta I_x(a, b). */
static double sc__trace_ibeta(double a, double b, double x)
{
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    /* the fraction converges fast only on this side; use the symmetry otherwise */
    if (x < (a + 1) / (a + b + 2)) return exp(lbt) * sc__trace_betacf(a, b, x) / a;
    return 1 - exp(lbt) * sc__trace_betacf(b, a, 1 - x) / b;
}

/* P(T > t) for t >= 0. Past df = 1e8 the normal tail is closer than the fraction's
   convergence (t and normal quantiles differ by ~(z^3+z)/(4 df)). */
static double sc__trace_t_upper(double t, double df)
{
    if (df > 1e8) return 0.5 * erfc(t / sqrt(2.0));
    return 0.5 * sc__trace_ibeta(df / 2, 0.5, df / (df + t * t));
}

SCDEF double sc_student_t_cdf(double t, double df)
{
    if (!(df > 0) || t != t) return NAN;
    return t >= 0 ? 1 - sc__trace_t_upper(t, df) : sc__trace_t_upper(-t, df);
}

SCDEF double sc_student_t_quantile(double p, double df)
{
    if (!(df > 0) || !(p >= 0 && p <= 1)) return NAN;
    if (p == 0.5) return 0;
    if (p == 0) return -INFINITY;
    if (p == 1) return INFINITY;
    /* solve P(T > t) = q on t > 0 by bisection: robust for every df, and the upper tail
       avoids the cancellation of 1 - cdf */
    double q = p > 0.5 ? 1 - p : p;
    double lo = 0, hi = 1;
    while (sc__trace_t_upper(hi, df) > q) {
        lo = hi;
        hi *= 2;
        if (hi > 1e300) return p > 0.5 ? INFINITY : -INFINITY;
    }
    for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (sc__trace_t_upper(mid, df) > q) lo = mid; else hi = mid;
    }
    double t = 0.5 * (lo + hi);
    return p > 0.5 ? t : -t;
}

static int sc__trace_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

SCDEF sc_stats sc_stats_compute(const double *x, int n)
{
    sc_stats s;
    s.n = n > 0 ? n : 0;
    s.mean = s.median = s.std = s.ci95 = s.min = s.max = NAN;
    if (n <= 0 || !x) return s;
    double sum = 0;
    s.min = s.max = x[0];
    for (int i = 0; i < n; i++) {
        sum += x[i];
        if (x[i] < s.min) s.min = x[i];
        if (x[i] > s.max) s.max = x[i];
    }
    s.mean = sum / n;
    double *c = (double *)SC_MALLOC(sizeof *c * (size_t)n);
    if (c) {
        memcpy(c, x, sizeof *c * (size_t)n);
        qsort(c, (size_t)n, sizeof *c, sc__trace_cmp_double);
        s.median = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
        SC_FREE(c);
    }
    if (n >= 2) {
        double ss = 0; /* two passes: no cancellation for large means */
        for (int i = 0; i < n; i++) ss += (x[i] - s.mean) * (x[i] - s.mean);
        s.std = sqrt(ss / (n - 1));
        s.ci95 = sc_student_t_quantile(0.975, n - 1) * s.std / sqrt((double)n);
    }
    return s;
}

/* The value of one step-level quantity; `what` indexes sc__trace_step_rows. */
typedef struct sc__trace_step_row { const char *name, *unit; int phase; } sc__trace_step_row;
static const sc__trace_step_row sc__trace_step_rows[] = {
    {"wall", "ms", -1}, {"fwd", "ms", SC_PHASE_FWD}, {"bwd", "ms", SC_PHASE_BWD},
    {"recompute", "ms", SC_PHASE_RECOMPUTE}, {"opt", "ms", SC_PHASE_OPT},
    {"h2d", "ms", SC_PHASE_H2D}, {"d2h", "ms", SC_PHASE_D2H}, {"loss", "ms", SC_PHASE_LOSS},
    {"other", "ms", SC_PHASE_OTHER}, {"tps", "tokens/s", -2}, {"cpu_peak_rss", "GiB", -3},
    {"gpu_peak_alloc", "GiB", -4}, {"gpu_peak_resv", "GiB", -5}, {"launches", "count", -6},
};
#define SC__TRACE_NSTEP_ROWS ((int)(sizeof sc__trace_step_rows / sizeof sc__trace_step_rows[0]))

static double sc__trace_step_value(const sc_step_metrics *m, int what)
{
    const double gib = 1073741824.0;
    int ph = sc__trace_step_rows[what].phase;
    if (ph >= 0) return m->phase_ms[ph];
    int64_t l = 0;
    switch (ph) {
    case -1: return m->wall_ms;
    case -2: return m->tps;
    case -3: return (double)m->cpu_peak_rss / gib;
    case -4: return (double)m->gpu.peak_allocated / gib;
    case -5: return (double)m->gpu.peak_reserved / gib;
    default:
        for (int p = 0; p < SC_PHASE_COUNT; p++) l += m->launches[p];
        return (double)l;
    }
}

/* Stats over post-warm-up steps of a layer cell (layer >= 0) or a step-level row. */
static sc_stats sc__trace_stats(const sc_tracer *tr, int layer, int phase, int what)
{
    int64_t first = tr ? tr->cfg.warmup_steps : 0, n = tr ? tr->nsteps - first : 0;
    if (n <= 0 || n > INT32_MAX) return sc_stats_compute(NULL, 0);
    double *x = (double *)SC_MALLOC(sizeof *x * (size_t)n);
    if (!x) return sc_stats_compute(NULL, 0);
    for (int64_t i = 0; i < n; i++)
        x[i] = layer >= 0 ? sc_tracer_layer_ms(tr, first + i, layer, (sc_phase)phase)
                          : sc__trace_step_value(&tr->steps[first + i], what);
    sc_stats s = sc_stats_compute(x, (int)n);
    SC_FREE(x);
    return s;
}

SCDEF sc_stats sc_tracer_layer_stats(const sc_tracer *tr, int layer, sc_phase phase)
{
    if (layer < 0 || (int)phase < 0 || (int)phase >= SC_PHASE_COUNT) return sc_stats_compute(NULL, 0);
    return sc__trace_stats(tr, layer, (int)phase, 0);
}

SCDEF sc_stats sc_tracer_phase_stats(const sc_tracer *tr, sc_phase phase)
{
    for (int w = 0; w < SC__TRACE_NSTEP_ROWS; w++)
        if (sc__trace_step_rows[w].phase == (int)phase) return sc__trace_stats(tr, -1, 0, w);
    return sc_stats_compute(NULL, 0);
}

/* ---- writers ---- */
static FILE *sc__trace_open(const char *path, sc_result *r)
{
    if (!path) { *r = sc__fail(SC_ERROR_INVALID_ARGS, "trace writer: NULL path"); return NULL; }
    FILE *f = fopen(path, "w");
    if (!f) *r = sc__fail(SC_ERROR_IO, "cannot open '%s' for writing: %s", path, strerror(errno));
    return f;
}

/* Close f, turning any earlier write error into a message naming the file. */
static sc_result sc__trace_close(FILE *f, const char *path)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return sc__fail(SC_ERROR_IO, "error writing '%s'", path);
    return SC_SUCCESS;
}

/* A CSV field: quoted (with "" for ") only when it holds a comma, quote or line break. */
static void sc__trace_csv_str(FILE *f, const char *s)
{
    if (!s) s = "";
    if (!strpbrk(s, ",\"\r\n")) { fputs(s, f); return; }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* A JSON string literal. */
static void sc__trace_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* JSON has no NaN or infinity: write null instead. Times (us) get ns resolution. */
static void sc__trace_json_num(FILE *f, double v)
{
    if (v == v && v - v == 0) fprintf(f, "%.9g", v);
    else fputs("null", f);
}
static void sc__trace_json_us(FILE *f, double us)
{
    if (us == us && us - us == 0) fprintf(f, "%.3f", us);
    else fputs("0", f);
}

SCDEF sc_result sc_tracer_write_step_metrics(const sc_tracer *tr, const char *path)
{
    if (!tr) return SC_SUCCESS;
    sc_result r = SC_SUCCESS;
    FILE *f = sc__trace_open(path, &r);
    if (!f) return r;
    const double gib = 1073741824.0;
    fputs("epoch,step,global_step,wall_ms,fwd_ms,bwd_ms,opt_ms,loss,tps,cpu_rss_gib,"
          "gpu_alloc_gib,gpu_resv_gib,peak_alloc_gib,peak_resv_gib,cum_wall_ms,"
          "recompute_ms,h2d_ms,d2h_ms,loss_ms,other_ms,tokens,cpu_peak_rss_gib,launches", f);
    for (int p = 0; p < SC_PHASE_COUNT; p++) fprintf(f, ",launches_%s", sc_phase_name((sc_phase)p));
    fputs(",h2d_bytes,d2h_bytes,host_pinned_gib,comm_ms,comm_bytes,lr,grad_norm,val_loss", f);
    fputc('\n', f);
    for (int64_t i = 0; i < tr->nsteps; i++) {
        const sc_step_metrics *m = &tr->steps[i];
        int64_t l = 0;
        for (int p = 0; p < SC_PHASE_COUNT; p++) l += m->launches[p];
        fprintf(f, "%d,%d,%lld,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,"
                   "%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%lld",
                m->epoch, m->step, (long long)m->global_step, m->wall_ms,
                m->phase_ms[SC_PHASE_FWD], m->phase_ms[SC_PHASE_BWD], m->phase_ms[SC_PHASE_OPT],
                m->loss, m->tps, (double)m->cpu_rss / gib, (double)m->gpu.allocated / gib,
                (double)m->gpu.reserved / gib, (double)m->gpu.peak_allocated / gib,
                (double)m->gpu.peak_reserved / gib, m->cum_wall_ms,
                m->phase_ms[SC_PHASE_RECOMPUTE], m->phase_ms[SC_PHASE_H2D],
                m->phase_ms[SC_PHASE_D2H], m->phase_ms[SC_PHASE_LOSS],
                m->phase_ms[SC_PHASE_OTHER], m->tokens, (double)m->cpu_peak_rss / gib,
                (long long)l);
        for (int p = 0; p < SC_PHASE_COUNT; p++) fprintf(f, ",%lld", (long long)m->launches[p]);
        fprintf(f, ",%lld,%lld,%.9g,%.9g,%lld", (long long)m->bytes[SC_PHASE_H2D], (long long)m->bytes[SC_PHASE_D2H],
                (double)m->gpu.host_pinned / gib, m->phase_ms[SC_PHASE_COMM], (long long)m->bytes[SC_PHASE_COMM]);
        fprintf(f, ",%.9g,%.9g,%.9g", m->lr, m->grad_norm, m->val_loss); /* nan where not noted */
        fputc('\n', f);
    }
    return sc__trace_close(f, path);
}

SCDEF void sc_tracer_step_note(sc_tracer *tr, int64_t i, double lr, double grad_norm, double val_loss)
{
    if (!tr || i < 0 || i >= tr->nsteps) return;
    sc_step_metrics *m = &tr->steps[i];
    if (lr == lr) m->lr = lr;
    if (grad_norm == grad_norm) m->grad_norm = grad_norm;
    if (val_loss == val_loss) m->val_loss = val_loss;
}

SCDEF sc_result sc_tracer_write_layer_metrics(const sc_tracer *tr, const char *path)
{
    if (!tr) return SC_SUCCESS;
    sc_result r = SC_SUCCESS;
    FILE *f = sc__trace_open(path, &r);
    if (!f) return r;
    /* step is the global step; epoch and the epoch's step follow at the end */
    static const sc_phase cols[] = {SC_PHASE_FWD, SC_PHASE_RECOMPUTE, SC_PHASE_BWD,
                                    SC_PHASE_H2D, SC_PHASE_D2H, SC_PHASE_OPT};
    fputs("step,layer,fwd_ms,recompute_ms,bwd_ms,h2d_ms,d2h_ms,opt_ms,epoch,epoch_step\n", f);
    for (int64_t i = 0; i < tr->nsteps; i++)
        for (int l = 0; l < tr->max_layers; l++) {
            fprintf(f, "%lld,%d", (long long)tr->steps[i].global_step, l);
            for (int c = 0; c < 6; c++) fprintf(f, ",%.9g", sc_tracer_layer_ms(tr, i, l, cols[c]));
            fprintf(f, ",%d,%d\n", tr->steps[i].epoch, tr->steps[i].step);
        }
    return sc__trace_close(f, path);
}

SCDEF sc_result sc_tracer_write_mem_trace(const sc_tracer *tr, const char *path)
{
    if (!tr) return SC_SUCCESS;
    sc_result r = SC_SUCCESS;
    FILE *f = sc__trace_open(path, &r);
    if (!f) return r;
    /* step -1: outside any step, t_ms then counts from sc_tracer_init */
    fputs("step,event,t_ms,allocated_bytes,reserved_bytes,rss_bytes,tag,delta_bytes\n", f);
    for (int64_t i = 0; i < tr->nrows; i++) {
        const sc__trace_mem_row *w = &tr->rows[i];
        fprintf(f, "%lld,%lld,%.6f,%lld,%lld,%lld,", (long long)w->step, (long long)w->event,
                (double)w->t_step_ns / 1e6, (long long)w->allocated, (long long)w->reserved,
                (long long)w->rss);
        sc__trace_csv_str(f, w->tag >= 0 ? tr->tags[w->tag] : "");
        fprintf(f, ",%lld\n", (long long)w->delta);
    }
    return sc__trace_close(f, path);
}

static void sc__trace_summary_row(FILE *f, int layer, const char *phase, sc_stats s,
                                  const char *unit, const char *method)
{
    fprintf(f, "%d,%s,%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%s,%s\n", layer, phase, s.n, s.mean,
            s.median, s.std, s.ci95, s.min, s.max, unit, method);
}

SCDEF sc_result sc_tracer_write_summary(const sc_tracer *tr, const char *path)
{
    if (!tr) return SC_SUCCESS;
    sc_result r = SC_SUCCESS;
    FILE *f = sc__trace_open(path, &r);
    if (!f) return r;
    const char *method = sc_tracer_peak_method(tr);
    /* layer >= 0: a (layer, phase) cell; layer -1: a step-level quantity in `unit` (the
       *_ms columns then hold that unit). Warm-up steps are left out. */
    fputs("layer,phase,n,mean_ms,median_ms,std_ms,ci95_ms,min_ms,max_ms,unit,cpu_peak_method\n", f);
    for (int l = 0; l < tr->max_layers; l++)
        for (int p = 0; p < SC_PHASE_COUNT; p++)
            if (tr->layer_seen[(int64_t)l * SC_PHASE_COUNT + p])
                sc__trace_summary_row(f, l, sc_phase_name((sc_phase)p),
                                      sc__trace_stats(tr, l, p, 0), "ms", method);
    for (int w = 0; w < SC__TRACE_NSTEP_ROWS; w++)
        sc__trace_summary_row(f, -1, sc__trace_step_rows[w].name, sc__trace_stats(tr, -1, 0, w),
                              sc__trace_step_rows[w].unit, method);
    return sc__trace_close(f, path);
}

/* Chrome trace-event format (chrome://tracing, Perfetto): one track per stream / thread,
   spans as complete ("X") events, steps on their own track, memory as counters. */
SCDEF sc_result sc_tracer_write_chrome_trace(const sc_tracer *tr, const char *path)
{
    if (!tr) return SC_SUCCESS;
    sc_result r = SC_SUCCESS;
    FILE *f = sc__trace_open(path, &r);
    if (!f) return r;
    const int steps_tid = 1000000;
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
    fputs("{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"slidecheck\"}}", f);
    fprintf(f, ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":\"steps\"}}", steps_tid);
    fprintf(f, ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":-1}}", steps_tid);
    for (int k = 0; k < tr->nstreams; k++) {
        /* 0 compute, 1 upload, 2 download, 3.. host optimizer threads (slide mode), SC_STREAM_COMM */
        int id = tr->streams[k];
        const char *nm = id == 1 ? "h2d (upload stream)" : id == 2 ? "d2h (download stream)"
                         : id == SC_STREAM_COMM ? "nccl (communication stream)"
                         : id >= 3 ? "cpu optimizer" : tr->gpu ? "gpu compute" : "cpu compute";
        fprintf(f, ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":\"%s\"}}",
                id, nm);
    }
    for (int64_t i = 0; i < tr->nsteps; i++) {
        const sc_step_metrics *m = &tr->steps[i];
        fprintf(f, ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"name\":\"step %lld\",\"cat\":\"step\",\"ts\":",
                steps_tid, (long long)m->global_step);
        sc__trace_json_us(f, (double)(m->t0_ns - tr->t_init_ns) / 1e3);
        fputs(",\"dur\":", f);
        sc__trace_json_us(f, m->wall_ms * 1e3);
        fprintf(f, ",\"args\":{\"epoch\":%d,\"step\":%d,\"loss\":", m->epoch, m->step);
        sc__trace_json_num(f, m->loss);
        fputs(",\"tps\":", f);
        sc__trace_json_num(f, m->tps);
        fputs("}}", f);
        for (int64_t j = m->span_first; j < m->span_first + m->span_count; j++) {
            const sc__trace_span *s = &tr->spans[j];
            fprintf(f, ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"name\":", s->stream);
            sc__trace_json_str(f, s->name[0] ? s->name : sc_phase_name((sc_phase)s->phase));
            fprintf(f, ",\"cat\":\"%s\",\"ts\":", sc_phase_name((sc_phase)s->phase));
            sc__trace_json_us(f, s->ts_ms * 1e3);
            fputs(",\"dur\":", f);
            sc__trace_json_us(f, s->dur_ms * 1e3);
            fprintf(f, ",\"args\":{\"phase\":\"%s\",\"layer\":%d,\"step\":%lld,\"launches\":%lld",
                    sc_phase_name((sc_phase)s->phase), s->layer, (long long)m->global_step,
                    (long long)s->launches);
            if (s->bytes) {
                fprintf(f, ",\"bytes\":%lld,\"GB/s\":", (long long)s->bytes);
                double gbs = s->dur_ms > 0 ? (double)s->bytes / (s->dur_ms * 1e6) : 0.0;
                sc__trace_json_num(f, gbs);
                int W = tr->cfg.world > 1 ? tr->cfg.world : 1;
                if (s->phase == SC_PHASE_COMM) { /* an all-reduce moves 2 (W - 1) / W of its bytes per rank */
                    fputs(",\"bus GB/s\":", f);
                    sc__trace_json_num(f, gbs * (strcmp(s->name, "allreduce") ? 1.0 : 2.0) * (W - 1) / W);
                }
            }
            fputs("}}", f);
        }
    }
    for (int64_t i = 0; i < tr->nrows; i++) {
        const sc__trace_mem_row *w = &tr->rows[i];
        double ts = (double)w->t_ns / 1e3;
        fprintf(f, ",\n{\"ph\":\"C\",\"pid\":1,\"name\":\"gpu memory\",\"ts\":%.3f,"
                   "\"args\":{\"allocated\":%lld,\"reserved\":%lld}}",
                ts, (long long)w->allocated, (long long)w->reserved);
        fprintf(f, ",\n{\"ph\":\"C\",\"pid\":1,\"name\":\"cpu rss\",\"ts\":%.3f,\"args\":{\"rss\":%lld}}",
                ts, (long long)w->rss);
    }
    fputs("\n]}\n", f);
    return sc__trace_close(f, path);
}

/* mkdir -p */
static sc_result sc__trace_mkdir_p(const char *dir)
{
    char buf[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof buf) return sc__fail(SC_ERROR_INVALID_ARGS, "bad directory name '%s'", dir);
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char c = buf[i];
        buf[i] = 0;
#ifdef _WIN32
        int rc = _mkdir(buf);
#else
        int rc = mkdir(buf, 0777);
#endif
        if (rc != 0 && errno != EEXIST)
            return sc__fail(SC_ERROR_IO, "cannot create directory '%s': %s", buf, strerror(errno));
        buf[i] = c;
    }
    return SC_SUCCESS;
}

SCDEF sc_result sc_tracer_write_all(const sc_tracer *tr, const char *dir)
{
    if (!tr) return SC_SUCCESS;
    if (!dir) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_tracer_write_all: NULL directory");
    sc_result r = sc__trace_mkdir_p(dir);
    if (r != SC_SUCCESS) return r;
    static const char *names[] = {"step_metrics.csv", "layer_metrics.csv", "mem_trace.csv",
                                  "summary.csv", "trace.json"};
    for (int k = 0; k < 5; k++) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", dir, names[k]) >= (int)sizeof path)
            return sc__fail(SC_ERROR_INVALID_ARGS, "path too long: '%s/%s'", dir, names[k]);
        switch (k) {
        case 0: r = sc_tracer_write_step_metrics(tr, path); break;
        case 1: r = sc_tracer_write_layer_metrics(tr, path); break;
        case 2: r = sc_tracer_write_mem_trace(tr, path); break;
        case 3: r = sc_tracer_write_summary(tr, path); break;
        default: r = sc_tracer_write_chrome_trace(tr, path); break;
        }
        if (r != SC_SUCCESS) return r;
    }
    return SC_SUCCESS;
}
/* ---- files: JSON, config.json, safetensors, HF directories, token files ---- */
#include <limits.h>
#include <locale.h>
#include <sys/stat.h>
#include <sys/types.h>
#ifdef _WIN32
#include <direct.h>
#endif

/* ---- small helpers: growable text buffer, little-endian bytes, files ---- */
typedef struct sc__buf { char *p; size_t n, cap; int oom; } sc__buf;

static void sc__buf_put(sc__buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = (char *)SC_REALLOC(b->p, cap);
        if (!p) { b->oom = 1; return; }
        b->p = p; b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sc__buf_printf(sc__buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= sizeof tmp) { b->oom = 1; return; } /* only short items are printed */
    sc__buf_put(b, tmp, (size_t)k);
}

/* A JSON string literal, escaped. */
static void sc__buf_json_str(sc__buf *b, const char *s)
{
    sc__buf_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') { char e[2] = {'\\', (char)c}; sc__buf_put(b, e, 2); }
        else if (c < 0x20) sc__buf_printf(b, "\\u%04x", c);
        else sc__buf_put(b, s, 1);
    }
    sc__buf_put(b, "\"", 1);
}

/* A double that reads back exactly, always with a '.' or an exponent (so Python sees a float),
   and with '.' as decimal point whatever the C locale. */
static void sc__buf_double(sc__buf *b, double x)
{
    char s[40];
    char dp = localeconv()->decimal_point[0];
    if (x == floor(x) && fabs(x) < 1e16) snprintf(s, sizeof s, "%.0f", x); /* 10000.0, not 1e+04 */
    else for (int prec = 1; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, x);
        for (char *q = s; *q; q++) if (*q == dp) *q = '.';
        char t[40];
        snprintf(t, sizeof t, "%s", s);
        for (char *q = t; *q; q++) if (*q == '.') *q = dp;
        if (strtod(t, NULL) == x) break;
    }
    if (!strpbrk(s, ".eEn")) snprintf(s + strlen(s), sizeof s - strlen(s), ".0");
    sc__buf_put(b, s, strlen(s));
}

static uint64_t sc__le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static int sc__little_endian(void) { uint16_t x = 1; unsigned char c; memcpy(&c, &x, 1); return c == 1; }

static char *sc__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = (char *)SC_MALLOC(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* "a" + "b" (+ "c"), allocated; NULL when out of memory. */
static char *sc__concat(const char *a, const char *b, const char *c)
{
    size_t na = strlen(a), nb = strlen(b), nc = c ? strlen(c) : 0;
    char *p = (char *)SC_MALLOC(na + nb + nc + 1);
    if (!p) return NULL;
    memcpy(p, a, na); memcpy(p + na, b, nb); if (nc) memcpy(p + na + nb, c, nc);
    p[na + nb + nc] = 0;
    return p;
}
static char *sc__path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir);
    return sc__concat(dir, (n && (dir[n - 1] == '/' || dir[n - 1] == '\\')) ? "" : "/", name);
}

static int sc__fseek64(FILE *f, uint64_t off)
{
#ifdef _WIN32
    if (off > (uint64_t)INT64_MAX) return -1;
    return _fseeki64(f, (__int64)off, SEEK_SET);
#else
    if (off > (uint64_t)LONG_MAX) return -1;
    return fseek(f, (long)off, SEEK_SET);
#endif
}
static int sc__fsize(FILE *f, uint64_t *size)
{
#ifdef _WIN32
    if (_fseeki64(f, 0, SEEK_END)) return -1;
    __int64 n = _ftelli64(f);
#else
    if (fseek(f, 0, SEEK_END)) return -1;
    long n = ftell(f);
#endif
    if (n < 0) return -1;
    *size = (uint64_t)n;
    return sc__fseek64(f, 0);
}

static int sc__file_exists(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* Read a whole (small) file into a NUL-terminated allocated buffer. */
static sc_result sc__read_file(const char *path, size_t max, char **out, size_t *len)
{
    *out = NULL; *len = 0;
    FILE *f = fopen(path, "rb");
    uint64_t size;
    if (!f) return sc__fail(SC_ERROR_IO, "file '%s': cannot open: %s", path, strerror(errno));
    if (sc__fsize(f, &size)) { fclose(f); return sc__fail(SC_ERROR_IO, "file '%s': cannot seek", path); }
    if (size > max) {
        fclose(f);
        return sc__fail(SC_ERROR_FORMAT, "file '%s': %llu bytes, more than the %llu accepted", path,
                        (unsigned long long)size, (unsigned long long)max);
    }
    char *p = (char *)SC_MALLOC((size_t)size + 1);
    if (!p) { fclose(f); return sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", path); }
    if (fread(p, 1, (size_t)size, f) != (size_t)size) {
        SC_FREE(p); fclose(f);
        return sc__fail(SC_ERROR_IO, "file '%s': read failed", path);
    }
    fclose(f);
    p[size] = 0;
    *out = p; *len = (size_t)size;
    return SC_SUCCESS;
}

/* Atomic writes: write `path.tmp`, then sc__tmp_commit renames it over `path` (or removes it). */
static sc_result sc__tmp_open(const char *path, FILE **f, char **tmp)
{
    *f = NULL;
    *tmp = sc__concat(path, ".tmp", NULL);
    if (!*tmp) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", path);
    *f = fopen(*tmp, "wb");
    if (!*f) {
        sc_result r = sc__fail(SC_ERROR_IO, "file '%s': cannot create: %s", *tmp, strerror(errno));
        SC_FREE(*tmp); *tmp = NULL;
        return r;
    }
    return SC_SUCCESS;
}
static sc_result sc__tmp_commit(const char *path, FILE *f, char *tmp, sc_result r)
{
    int bad = ferror(f);
    if (fclose(f)) bad = 1;
    if (r == SC_SUCCESS && bad) r = sc__fail(SC_ERROR_IO, "file '%s': write failed: %s", tmp, strerror(errno));
#ifdef _WIN32
    if (r == SC_SUCCESS) remove(path);
#endif
    if (r == SC_SUCCESS && rename(tmp, path))
        r = sc__fail(SC_ERROR_IO, "file '%s': cannot rename to '%s': %s", tmp, path, strerror(errno));
    if (r != SC_SUCCESS) remove(tmp);
    SC_FREE(tmp);
    return r;
}

/* ---- JSON: parsed into one array of nodes; strings decoded into one buffer ---- */
enum { SC__J_NULL, SC__J_FALSE, SC__J_TRUE, SC__J_NUM, SC__J_STR, SC__J_ARR, SC__J_OBJ };
#define SC__JSON_MAX_DEPTH 64
#define SC__JSON_MAX_NODES (1 << 20) /* a 1000-layer checkpoint header needs ~10^4 */

typedef struct sc__jnode {
    int type;
    int is_int;           /* a number written without fraction/exponent that fits int64 */
    int first, next;      /* first child, next sibling; -1: none */
    int n;                /* number of children */
    size_t off;           /* byte offset of the value in the text */
    const char *key;      /* key of an object member (NULL otherwise) */
    size_t klen;
    const char *s;        /* string value, NUL-terminated (may hold NULs: see slen) */
    size_t slen;
    double num;
    int64_t i;
} sc__jnode;

typedef struct sc__json {
    const char *text;
    size_t len, pos;
    sc__jnode *nodes;
    int n, cap;
    char *strs;           /* decoded strings */
    size_t nstr;
    const char *fname;    /* for messages */
} sc__json;

static sc_result sc__json_err(const sc__json *j, size_t off, const char *what)
{
    return sc__fail(SC_ERROR_FORMAT, "file '%s': invalid JSON at byte %llu: %s", j->fname,
                    (unsigned long long)off, what);
}

static void sc__json_ws(sc__json *j)
{
    while (j->pos < j->len) {
        char c = j->text[j->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        j->pos++;
    }
}

static sc_result sc__json_node(sc__json *j, int type, int *idx)
{
    if (j->n == j->cap) {
        if (j->cap >= SC__JSON_MAX_NODES) return sc__json_err(j, j->pos, "too many values");
        int cap = j->cap ? j->cap * 2 : 64;
        sc__jnode *p = (sc__jnode *)SC_REALLOC(j->nodes, (size_t)cap * sizeof *p);
        if (!p) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory parsing JSON", j->fname);
        j->nodes = p; j->cap = cap;
    }
    sc__jnode *nd = &j->nodes[j->n];
    memset(nd, 0, sizeof *nd);
    nd->type = type; nd->first = nd->next = -1; nd->off = j->pos;
    *idx = j->n++;
    return SC_SUCCESS;
}

static int sc__json_hex4(const char *p, size_t avail, unsigned *out)
{
    unsigned v = 0;
    if (avail < 4) return 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

/* Parse the string at j->pos (a '"'); its decoded bytes go to j->strs. A decoded string is
   never longer than its source, so strs (len + 1 bytes) always has room for it and its NUL. */
static sc_result sc__json_string(sc__json *j, const char **s, size_t *slen)
{
    size_t start = j->pos;
    char *out = j->strs + j->nstr, *o = out;
    j->pos++; /* opening quote */
    for (;;) {
        if (j->pos >= j->len) return sc__json_err(j, start, "unterminated string");
        unsigned char c = (unsigned char)j->text[j->pos++];
        if (c == '"') break;
        if (c < 0x20) return sc__json_err(j, j->pos - 1, "control character in string");
        if (c != '\\') { *o++ = (char)c; continue; }
        if (j->pos >= j->len) return sc__json_err(j, start, "unterminated string");
        char e = j->text[j->pos++];
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned u, lo;
            if (!sc__json_hex4(j->text + j->pos, j->len - j->pos, &u))
                return sc__json_err(j, j->pos - 2, "bad \\u escape");
            j->pos += 4;
            if (u >= 0xD800 && u <= 0xDBFF && j->len - j->pos >= 6 && j->text[j->pos] == '\\' &&
                j->text[j->pos + 1] == 'u' && sc__json_hex4(j->text + j->pos + 2, 4, &lo) &&
                lo >= 0xDC00 && lo <= 0xDFFF) {
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                j->pos += 6;
            } else if (u >= 0xD800 && u <= 0xDFFF) u = 0xFFFD; /* lone surrogate */
            if (u < 0x80) *o++ = (char)u;
            else if (u < 0x800) { *o++ = (char)(0xC0 | (u >> 6)); *o++ = (char)(0x80 | (u & 63)); }
            else if (u < 0x10000) {
                *o++ = (char)(0xE0 | (u >> 12)); *o++ = (char)(0x80 | ((u >> 6) & 63));
                *o++ = (char)(0x80 | (u & 63));
            } else {
                *o++ = (char)(0xF0 | (u >> 18)); *o++ = (char)(0x80 | ((u >> 12) & 63));
                *o++ = (char)(0x80 | ((u >> 6) & 63)); *o++ = (char)(0x80 | (u & 63));
            }
            break;
        }
        default: return sc__json_err(j, j->pos - 2, "bad escape in string");
        }
    }
    *o = 0;
    *s = out;
    *slen = (size_t)(o - out);
    j->nstr += *slen + 1;
    return SC_SUCCESS;
}

static sc_result sc__json_number(sc__json *j, sc__jnode *nd)
{
    size_t a = j->pos, p = a;
    const char *t = j->text;
    int integral = 1;
    if (p < j->len && t[p] == '-') p++;
    if (p < j->len && t[p] == '0') p++;
    else if (p < j->len && t[p] >= '1' && t[p] <= '9') while (p < j->len && t[p] >= '0' && t[p] <= '9') p++;
    else return sc__json_err(j, a, "bad number");
    if (p < j->len && t[p] == '.') {
        integral = 0; p++;
        if (!(p < j->len && t[p] >= '0' && t[p] <= '9')) return sc__json_err(j, a, "bad number");
        while (p < j->len && t[p] >= '0' && t[p] <= '9') p++;
    }
    if (p < j->len && (t[p] == 'e' || t[p] == 'E')) {
        integral = 0; p++;
        if (p < j->len && (t[p] == '+' || t[p] == '-')) p++;
        if (!(p < j->len && t[p] >= '0' && t[p] <= '9')) return sc__json_err(j, a, "bad number");
        while (p < j->len && t[p] >= '0' && t[p] <= '9') p++;
    }
    char tmp[400];
    if (p - a >= sizeof tmp) return sc__json_err(j, a, "number too long");
    memcpy(tmp, t + a, p - a);
    tmp[p - a] = 0;
    char dp = localeconv()->decimal_point[0];
    for (char *q = tmp; *q; q++) if (*q == '.') *q = dp;
    nd->num = strtod(tmp, NULL);
    if (nd->num == HUGE_VAL || nd->num == -HUGE_VAL) return sc__json_err(j, a, "number out of range");
    if (integral) { /* exact int64, if it fits */
        uint64_t v = 0, lim = t[a] == '-' ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        int fits = 1;
        for (size_t q = a + (t[a] == '-'); q < p; q++) {
            unsigned d = (unsigned)(t[q] - '0');
            if (v > (lim - d) / 10) { fits = 0; break; }
            v = v * 10 + d;
        }
        if (fits) {
            nd->is_int = 1;
            nd->i = t[a] == '-' ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
        }
    }
    j->pos = p;
    return SC_SUCCESS;
}

static int sc__json_lit(sc__json *j, const char *w)
{
    size_t n = strlen(w);
    if (j->len - j->pos < n || memcmp(j->text + j->pos, w, n)) return 0;
    j->pos += n;
    return 1;
}

static sc_result sc__json_value(sc__json *j, int depth, int *idx)
{
    sc_result r;
    sc__json_ws(j);
    if (j->pos >= j->len) return sc__json_err(j, j->pos, "unexpected end of input");
    if (depth > SC__JSON_MAX_DEPTH) return sc__json_err(j, j->pos, "nested too deeply");
    char c = j->text[j->pos];
    int type = c == '{' ? SC__J_OBJ : c == '[' ? SC__J_ARR : c == '"' ? SC__J_STR :
               c == 't' ? SC__J_TRUE : c == 'f' ? SC__J_FALSE : c == 'n' ? SC__J_NULL : SC__J_NUM;
    if ((r = sc__json_node(j, type, idx)) != SC_SUCCESS) return r;
    int me = *idx;
    if (type == SC__J_STR) {
        const char *s; size_t n;
        if ((r = sc__json_string(j, &s, &n)) != SC_SUCCESS) return r;
        j->nodes[me].s = s; j->nodes[me].slen = n;
        return SC_SUCCESS;
    }
    if (type == SC__J_NUM) return sc__json_number(j, &j->nodes[me]);
    if (type == SC__J_TRUE || type == SC__J_FALSE || type == SC__J_NULL) {
        if (!sc__json_lit(j, type == SC__J_TRUE ? "true" : type == SC__J_FALSE ? "false" : "null"))
            return sc__json_err(j, j->pos, "unexpected character");
        return SC_SUCCESS;
    }
    /* array or object */
    char close = type == SC__J_OBJ ? '}' : ']';
    int last = -1;
    j->pos++;
    sc__json_ws(j);
    if (j->pos < j->len && j->text[j->pos] == close) { j->pos++; return SC_SUCCESS; }
    for (;;) {
        const char *key = NULL; size_t klen = 0;
        int child;
        if (type == SC__J_OBJ) {
            sc__json_ws(j);
            if (j->pos >= j->len || j->text[j->pos] != '"') return sc__json_err(j, j->pos, "expected a string key");
            if ((r = sc__json_string(j, &key, &klen)) != SC_SUCCESS) return r;
            sc__json_ws(j);
            if (j->pos >= j->len || j->text[j->pos] != ':') return sc__json_err(j, j->pos, "expected ':'");
            j->pos++;
        }
        if ((r = sc__json_value(j, depth + 1, &child)) != SC_SUCCESS) return r;
        j->nodes[child].key = key; j->nodes[child].klen = klen;
        if (last < 0) j->nodes[me].first = child; else j->nodes[last].next = child;
        last = child;
        j->nodes[me].n++;
        sc__json_ws(j);
        if (j->pos >= j->len) return sc__json_err(j, j->pos, "unexpected end of input");
        c = j->text[j->pos++];
        if (c == close) return SC_SUCCESS;
        if (c != ',') return sc__json_err(j, j->pos - 1, type == SC__J_OBJ ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static void sc__json_free(sc__json *j)
{
    SC_FREE(j->nodes);
    SC_FREE(j->strs);
    memset(j, 0, sizeof *j);
}

/* Parse text[0..len) completely (one value, surrounded by whitespace only). Root is node 0. */
static sc_result sc__json_parse(sc__json *j, const char *text, size_t len, const char *fname)
{
    memset(j, 0, sizeof *j);
    j->text = text; j->len = len; j->fname = fname ? fname : "<config>";
    if (len > (size_t)INT_MAX) return sc__json_err(j, 0, "text too long");
    j->strs = (char *)SC_MALLOC(len + 1);
    if (!j->strs) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory parsing JSON", j->fname);
    int root;
    sc_result r = sc__json_value(j, 0, &root);
    if (r == SC_SUCCESS) {
        sc__json_ws(j);
        if (j->pos != j->len) r = sc__json_err(j, j->pos, "trailing characters after the value");
    }
    if (r != SC_SUCCESS) sc__json_free(j);
    return r;
}

/* The member `key` of object node obj (the last one, as Python's json does), or -1. */
static int sc__json_get(const sc__json *j, int obj, const char *key)
{
    size_t n = strlen(key);
    int found = -1;
    if (obj < 0 || j->nodes[obj].type != SC__J_OBJ) return -1;
    for (int c = j->nodes[obj].first; c >= 0; c = j->nodes[c].next)
        if (j->nodes[c].klen == n && !memcmp(j->nodes[c].key, key, n)) found = c;
    return found;
}

static const char *sc__json_type_name(int t)
{
    static const char *const names[] = {"null", "false", "true", "a number", "a string", "an array", "an object"};
    return names[t];
}

/* ---- config.json ---- */
static int sc__cfg_get(const sc__json *j, const char *key)
{
    int i = sc__json_get(j, 0, key);
    return (i >= 0 && j->nodes[i].type == SC__J_NULL) ? -1 : i; /* null means "not set" */
}

static sc_result sc__cfg_int(const sc__json *j, const char *key, int required, int def, int *out)
{
    int i = sc__cfg_get(j, key);
    if (i < 0) {
        if (required) return sc__fail(SC_ERROR_FORMAT, "file '%s': key '%s' is missing", j->fname, key);
        *out = def;
        return SC_SUCCESS;
    }
    const sc__jnode *nd = &j->nodes[i];
    if (nd->type != SC__J_NUM)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': key '%s' must be an integer, not %s", j->fname, key,
                        sc__json_type_name(nd->type));
    if (!nd->is_int || nd->i < 1 || nd->i > INT_MAX)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': key '%s' must be an integer in [1, %d], not %.17g",
                        j->fname, key, INT_MAX, nd->num);
    *out = (int)nd->i;
    return SC_SUCCESS;
}

static sc_result sc__cfg_num(const sc__json *j, int i, const char *key, double *out)
{
    if (j->nodes[i].type != SC__J_NUM)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': key '%s' must be a number, not %s", j->fname, key,
                        sc__json_type_name(j->nodes[i].type));
    *out = j->nodes[i].num;
    return SC_SUCCESS;
}

static sc_result sc__cfg_bool(const sc__json *j, const char *key, int def, int *out)
{
    int i = sc__cfg_get(j, key);
    *out = def;
    if (i < 0) return SC_SUCCESS;
    if (j->nodes[i].type != SC__J_TRUE && j->nodes[i].type != SC__J_FALSE)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': key '%s' must be true or false, not %s", j->fname,
                        key, sc__json_type_name(j->nodes[i].type));
    *out = j->nodes[i].type == SC__J_TRUE;
    return SC_SUCCESS;
}

/* The string value of node i (-1: NULL), or an error naming key. */
static sc_result sc__cfg_str(const sc__json *j, int i, const char *key, const char **out)
{
    *out = NULL;
    if (i < 0) return SC_SUCCESS;
    if (j->nodes[i].type != SC__J_STR)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': key '%s' must be a string, not %s", j->fname, key,
                        sc__json_type_name(j->nodes[i].type));
    *out = j->nodes[i].s;
    return SC_SUCCESS;
}

/* rope_scaling / rope_parameters: only the default RoPE is supported. */
static sc_result sc__cfg_rope_type(const sc__json *j, int obj, const char *key)
{
    const char *t = NULL;
    sc_result r;
    if (obj < 0) return SC_SUCCESS;
    if (j->nodes[obj].type != SC__J_OBJ)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': key '%s' must be an object, not %s", j->fname, key,
                        sc__json_type_name(j->nodes[obj].type));
    int i = sc__json_get(j, obj, "rope_type");
    if (i < 0) i = sc__json_get(j, obj, "type");
    if ((r = sc__cfg_str(j, i, key, &t)) != SC_SUCCESS) return r;
    if (!t && !strcmp(key, "rope_scaling"))
        return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': '%s' without a rope_type is not supported", j->fname, key);
    if (t && strcmp(t, "default"))
        return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': %s.rope_type '%s' is not supported (only 'default')",
                        j->fname, key, t);
    return SC_SUCCESS;
}

static sc_result sc__cfg_parse(sc_config *cfg, const sc__json *j)
{
    sc_result r;
    const char *fn = j->fname, *s = NULL;
    int i;
    if (j->nodes[0].type != SC__J_OBJ)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': must hold a JSON object, not %s", fn, sc__json_type_name(j->nodes[0].type));
    memset(cfg, 0, sizeof *cfg);

    /* architecture: model_type, else the architectures list */
    if ((r = sc__cfg_str(j, sc__cfg_get(j, "model_type"), "model_type", &s)) != SC_SUCCESS) return r;
    if (s) {
        if (!strcmp(s, "qwen3")) cfg->arch = SC_ARCH_QWEN3;
        else if (!strcmp(s, "qwen2")) cfg->arch = SC_ARCH_QWEN2;
        else return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': model_type '%s' is not supported (only qwen2, qwen3)", fn, s);
    } else {
        int a = sc__cfg_get(j, "architectures"), ok = 0;
        if (a >= 0 && j->nodes[a].type == SC__J_ARR && j->nodes[a].n == 1 && j->nodes[j->nodes[a].first].type == SC__J_STR) {
            s = j->nodes[j->nodes[a].first].s;
            if (!strcmp(s, "Qwen3ForCausalLM")) { cfg->arch = SC_ARCH_QWEN3; ok = 1; }
            else if (!strcmp(s, "Qwen2ForCausalLM")) { cfg->arch = SC_ARCH_QWEN2; ok = 1; }
            else return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': architecture '%s' is not supported", fn, s);
        }
        if (!ok) return sc__fail(SC_ERROR_FORMAT, "file '%s': key 'model_type' is missing", fn);
    }
    snprintf(cfg->name, sizeof cfg->name, "%s", cfg->arch == SC_ARCH_QWEN3 ? "qwen3" : "qwen2");

    if ((r = sc__cfg_int(j, "vocab_size", 1, 0, &cfg->vocab_size)) ||
        (r = sc__cfg_int(j, "hidden_size", 1, 0, &cfg->hidden_size)) ||
        (r = sc__cfg_int(j, "intermediate_size", 1, 0, &cfg->intermediate_size)) ||
        (r = sc__cfg_int(j, "num_hidden_layers", 1, 0, &cfg->num_layers)) ||
        (r = sc__cfg_int(j, "num_attention_heads", 1, 0, &cfg->num_heads)) ||
        (r = sc__cfg_int(j, "num_key_value_heads", 0, cfg->num_heads, &cfg->num_kv_heads)) ||
        (r = sc__cfg_int(j, "head_dim", 0, cfg->hidden_size / cfg->num_heads, &cfg->head_dim)) ||
        (r = sc__cfg_int(j, "max_position_embeddings", 0, 32768, &cfg->max_position)) ||
        (r = sc__cfg_bool(j, "tie_word_embeddings", 0, &cfg->tie_embeddings)))
        return r;
    if (cfg->arch == SC_ARCH_QWEN2) { cfg->attention_bias = 1; cfg->qk_norm = 0; }
    else {
        if ((r = sc__cfg_bool(j, "attention_bias", 0, &cfg->attention_bias)) != SC_SUCCESS) return r;
        if (cfg->attention_bias) /* Qwen3 then also has an o_proj bias, which slidecheck lacks */
            return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': attention_bias true is not supported for qwen3", fn);
        cfg->qk_norm = 1;
    }

    cfg->rms_eps = 1e-6; cfg->init_std = 0.02; cfg->rope_theta = 10000.0;
    if ((i = sc__cfg_get(j, "rms_norm_eps")) >= 0 && (r = sc__cfg_num(j, i, "rms_norm_eps", &cfg->rms_eps))) return r;
    if ((i = sc__cfg_get(j, "initializer_range")) >= 0 && (r = sc__cfg_num(j, i, "initializer_range", &cfg->init_std))) return r;
    if (!(cfg->init_std >= 0))
        return sc__fail(SC_ERROR_FORMAT, "file '%s': key 'initializer_range' must not be negative", fn);

    /* RoPE: rope_theta at top level (transformers 4) and/or in rope_parameters (transformers 5) */
    int top = sc__cfg_get(j, "rope_theta"), rp = sc__cfg_get(j, "rope_parameters");
    if ((r = sc__cfg_rope_type(j, sc__cfg_get(j, "rope_scaling"), "rope_scaling")) ||
        (r = sc__cfg_rope_type(j, rp, "rope_parameters")))
        return r;
    if (top >= 0 && (r = sc__cfg_num(j, top, "rope_theta", &cfg->rope_theta))) return r;
    i = rp >= 0 ? sc__json_get(j, rp, "rope_theta") : -1;
    if (i >= 0) {
        double t;
        if ((r = sc__cfg_num(j, i, "rope_parameters.rope_theta", &t)) != SC_SUCCESS) return r;
        if (top >= 0 && t != cfg->rope_theta)
            return sc__fail(SC_ERROR_FORMAT, "file '%s': rope_theta (%.17g) and rope_parameters.rope_theta (%.17g) disagree",
                            fn, cfg->rope_theta, t);
        cfg->rope_theta = t;
    }

    /* things that would change the model and that slidecheck does not implement */
    static const char *const dkeys[2] = {"torch_dtype", "dtype"};
    for (int k = 0; k < 2; k++) {
        if ((r = sc__cfg_str(j, sc__cfg_get(j, dkeys[k]), dkeys[k], &s)) != SC_SUCCESS) return r;
        if (s && strcmp(s, "float32") && strcmp(s, "bfloat16") && strcmp(s, "float16"))
            return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': %s '%s' is not supported (float32, bfloat16, float16)",
                            fn, dkeys[k], s);
    }
    if ((r = sc__cfg_str(j, sc__cfg_get(j, "hidden_act"), "hidden_act", &s)) != SC_SUCCESS) return r;
    if (s && strcmp(s, "silu"))
        return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': hidden_act '%s' is not supported (only silu)", fn, s);
    int sw;
    if ((r = sc__cfg_bool(j, "use_sliding_window", 0, &sw)) != SC_SUCCESS) return r;
    if (sw) return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': use_sliding_window true is not supported", fn);
    if ((i = sc__cfg_get(j, "layer_types")) >= 0) {
        if (j->nodes[i].type != SC__J_ARR)
            return sc__fail(SC_ERROR_FORMAT, "file '%s': key 'layer_types' must be an array", fn);
        for (int c = j->nodes[i].first; c >= 0; c = j->nodes[c].next)
            if (j->nodes[c].type != SC__J_STR || strcmp(j->nodes[c].s, "full_attention"))
                return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': layer_types other than 'full_attention' are not supported", fn);
    }
    if (sc__cfg_get(j, "quantization_config") >= 0)
        return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': quantized checkpoints are not supported", fn);

    if ((r = sc_config_validate(cfg)) != SC_SUCCESS) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", sc_last_error());
        return sc__fail(r, "file '%s': %s", fn, msg);
    }
    return SC_SUCCESS;
}

SCDEF sc_result sc_config_from_json(sc_config *cfg, const char *text, size_t len, const char *filename)
{
    sc__json j;
    sc_result r;
    if (!cfg || (!text && len)) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_config_from_json: NULL argument");
    if ((r = sc__json_parse(&j, text ? text : "", len, filename)) != SC_SUCCESS) return r;
    r = sc__cfg_parse(cfg, &j);
    sc__json_free(&j);
    return r;
}

SCDEF sc_result sc_config_read(sc_config *cfg, const char *path)
{
    char *text;
    size_t len;
    sc_result r = sc__read_file(path, 16u << 20, &text, &len);
    if (r != SC_SUCCESS) return r;
    r = sc_config_from_json(cfg, text, len, path);
    SC_FREE(text);
    return r;
}

static sc_result sc__config_json(const sc_config *c, const char *dtype, sc__buf *b)
{
    sc_result r;
    const char *arch = c->arch == SC_ARCH_QWEN3 ? "qwen3" : "qwen2";
    if (!dtype) dtype = "float32";
    if (strcmp(dtype, "float32") && strcmp(dtype, "bfloat16") && strcmp(dtype, "float16"))
        return sc__fail(SC_ERROR_INVALID_ARGS, "config.json: dtype '%s' (use float32, bfloat16 or float16)", dtype);
    if ((r = sc_config_validate(c)) != SC_SUCCESS) return r;
    if (!isfinite(c->rope_theta) || !isfinite(c->rms_eps) || !isfinite(c->init_std) || c->init_std < 0)
        return sc__fail(SC_ERROR_INVALID_ARGS, "config.json: rope_theta, rms_eps and init_std must be finite");
    if (c->arch == SC_ARCH_QWEN2 ? (!c->attention_bias || c->qk_norm) : (c->attention_bias || !c->qk_norm))
        return sc__fail(SC_ERROR_UNSUPPORTED, "config.json: %s with attention_bias=%d, qk_norm=%d has no Hugging Face equivalent",
                        arch, c->attention_bias, c->qk_norm);
    sc__buf_printf(b, "{\n  \"architectures\": [\"%s\"],\n  \"model_type\": \"%s\",\n",
                   c->arch == SC_ARCH_QWEN3 ? "Qwen3ForCausalLM" : "Qwen2ForCausalLM", arch);
    sc__buf_printf(b, "  \"vocab_size\": %d,\n  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n",
                   c->vocab_size, c->hidden_size, c->intermediate_size);
    sc__buf_printf(b, "  \"num_hidden_layers\": %d,\n  \"num_attention_heads\": %d,\n  \"num_key_value_heads\": %d,\n",
                   c->num_layers, c->num_heads, c->num_kv_heads);
    sc__buf_printf(b, "  \"head_dim\": %d,\n  \"max_position_embeddings\": %d,\n", c->head_dim, c->max_position);
    sc__buf_printf(b, "  \"rms_norm_eps\": "); sc__buf_double(b, c->rms_eps);
    sc__buf_printf(b, ",\n  \"rope_theta\": "); sc__buf_double(b, c->rope_theta);
    sc__buf_printf(b, ",\n  \"rope_parameters\": {\"rope_theta\": "); sc__buf_double(b, c->rope_theta);
    sc__buf_printf(b, ", \"rope_type\": \"default\"},\n  \"initializer_range\": "); sc__buf_double(b, c->init_std);
    sc__buf_printf(b, ",\n  \"tie_word_embeddings\": %s,\n  \"attention_bias\": %s,\n  \"attention_dropout\": 0.0,\n",
                   c->tie_embeddings ? "true" : "false", c->attention_bias ? "true" : "false");
    sc__buf_printf(b, "  \"hidden_act\": \"silu\",\n  \"use_cache\": false,\n  \"use_sliding_window\": false,\n");
    sc__buf_printf(b, "  \"sliding_window\": null,\n  \"max_window_layers\": %d,\n  \"layer_types\": [", c->num_layers);
    for (int l = 0; l < c->num_layers; l++) sc__buf_printf(b, "%s\"full_attention\"", l ? ", " : "");
    sc__buf_printf(b, "],\n  \"dtype\": \"%s\"\n}\n", dtype);
    if (b->oom) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "config.json: out of memory");
    return SC_SUCCESS;
}

SCDEF sc_result sc_config_write_json(const sc_config *cfg, FILE *f, const char *dtype)
{
    sc__buf b = {NULL, 0, 0, 0};
    if (!cfg || !f) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_config_write_json: NULL argument");
    sc_result r = sc__config_json(cfg, dtype, &b);
    if (r == SC_SUCCESS && fwrite(b.p, 1, b.n, f) != b.n)
        r = sc__fail(SC_ERROR_IO, "config.json: write failed");
    SC_FREE(b.p);
    return r;
}

SCDEF sc_result sc_config_write(const sc_config *cfg, const char *path, const char *dtype)
{
    FILE *f;
    char *tmp;
    sc__buf b = {NULL, 0, 0, 0};
    if (!cfg || !path) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_config_write: NULL argument");
    sc_result r = sc__config_json(cfg, dtype, &b);
    if (r == SC_SUCCESS && (r = sc__tmp_open(path, &f, &tmp)) == SC_SUCCESS) {
        fwrite(b.p, 1, b.n, f);
        r = sc__tmp_commit(path, f, tmp, SC_SUCCESS);
    }
    SC_FREE(b.p);
    return r;
}

/* ---- safetensors ---- */
static int sc__st_dtype_size(const char *d)
{
    static const char *const names[] = {"F64", "I64", "U64", "F32", "I32", "U32", "F16", "BF16", "I16",
                                        "U16", "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2"};
    static const int sizes[] = {8, 8, 8, 4, 4, 4, 2, 2, 2, 2, 1, 1, 1, 1, 1};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (!strcmp(d, names[i])) return sizes[i];
    return 0;
}

typedef struct sc__st_span { uint64_t begin, end; int idx; } sc__st_span;
static int sc__st_span_cmp(const void *a, const void *b)
{
    const sc__st_span *x = (const sc__st_span *)a, *y = (const sc__st_span *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}
static int sc__strp_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void sc__shape_str(char *out, size_t cap, int ndim, const int64_t *shape)
{
    size_t k = (size_t)snprintf(out, cap, "[");
    for (int i = 0; i < ndim && k < cap; i++)
        k += (size_t)snprintf(out + k, cap - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < cap) snprintf(out + k, cap - k, "]");
}

static void sc__st_init(sc_safetensors *st) { memset(st, 0, sizeof *st); }

SCDEF void sc_safetensors_close(sc_safetensors *st)
{
    if (!st) return;
    if (st->f) fclose(st->f);
    SC_FREE(st->path);
    SC_FREE(st->tensors);
    SC_FREE((void *)st->meta_keys);
    SC_FREE(st->strings_);
    memset(st, 0, sizeof *st);
}

/* Validate the header length read from the first 8 bytes against the total size. */
static sc_result sc__st_check_len(const sc_safetensors *st, uint64_t hlen, uint64_t total)
{
    if (total < 8)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': %llu bytes, too short for a safetensors file", st->path,
                        (unsigned long long)total);
    if (hlen > SC_ST_MAX_HEADER || hlen > total - 8)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': header length %llu is beyond the file (%llu bytes) or over %u bytes",
                        st->path, (unsigned long long)hlen, (unsigned long long)total, SC_ST_MAX_HEADER);
    return SC_SUCCESS;
}

/* Validate a tensor entry of the header and fill *t. */
static sc_result sc__st_entry(const sc_safetensors *st, const sc__json *j, int v, sc_st_tensor *t)
{
    const char *fn = st->path, *nm = t->name;
    const sc__jnode *nd = j->nodes;
    if (nd[v].type != SC__J_OBJ)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': entry must be an object, not %s", fn, nm, sc__json_type_name(nd[v].type));
    int d = sc__json_get(j, v, "dtype"), s = sc__json_get(j, v, "shape"), o = sc__json_get(j, v, "data_offsets");
    if (d < 0 || s < 0 || o < 0)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': entry lacks '%s'", fn, nm, d < 0 ? "dtype" : s < 0 ? "shape" : "data_offsets");
    if (nd[d].type != SC__J_STR)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': dtype must be a string", fn, nm);
    t->dtype = nd[d].s;
    if (!(t->dtype_size = sc__st_dtype_size(t->dtype)))
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': unknown dtype '%s'", fn, nm, t->dtype);
    if (nd[s].type != SC__J_ARR || nd[s].n > SC_ST_MAX_DIMS)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': shape must be an array of at most %d integers", fn, nm, SC_ST_MAX_DIMS);
    uint64_t numel = 1;
    int zero = 0;
    t->ndim = 0;
    for (int c = nd[s].first; c >= 0; c = nd[c].next) {
        if (nd[c].type != SC__J_NUM || !nd[c].is_int || nd[c].i < 0)
            return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': shape must hold non-negative integers", fn, nm);
        uint64_t x = (uint64_t)nd[c].i;
        t->shape[t->ndim++] = nd[c].i;
        if (x == 0) zero = 1;
        else if (numel > (uint64_t)INT64_MAX / x) numel = (uint64_t)INT64_MAX + 1; /* sticky overflow */
        else numel *= x;
    }
    if (zero) numel = 0;
    if (numel > (uint64_t)INT64_MAX / (uint64_t)t->dtype_size)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': shape is too large", fn, nm);
    t->numel = (int64_t)numel;
    if (nd[o].type != SC__J_ARR || nd[o].n != 2)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': data_offsets must be [begin, end]", fn, nm);
    int b = nd[o].first, e = nd[b].next;
    if (nd[b].type != SC__J_NUM || !nd[b].is_int || nd[b].i < 0 || nd[e].type != SC__J_NUM || !nd[e].is_int || nd[e].i < 0)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': data_offsets must be non-negative integers", fn, nm);
    t->begin = (uint64_t)nd[b].i; t->end = (uint64_t)nd[e].i;
    if (t->begin > t->end)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': data_offsets [%llu, %llu] end before they begin", fn, nm,
                        (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end > st->data_size)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': data_offsets [%llu, %llu] run past the data (%llu bytes; file truncated?)",
                        fn, nm, (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)st->data_size);
    if (t->end - t->begin != numel * (uint64_t)t->dtype_size) {
        char sh[200];
        sc__shape_str(sh, sizeof sh, t->ndim, t->shape);
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': %llu data bytes, but %s %s needs %llu", fn, nm,
                        (unsigned long long)(t->end - t->begin), t->dtype, sh, (unsigned long long)(numel * (uint64_t)t->dtype_size));
    }
    return SC_SUCCESS;
}

/* Parse and validate the JSON header; st->path, data_start and data_size are set. On success
   st owns the decoded strings. One path for files and memory buffers. */
static sc_result sc__st_parse_header(sc_safetensors *st, const char *hdr, size_t hlen)
{
    sc__json j;
    sc_result r = sc__json_parse(&j, hdr, hlen, st->path);
    const char *fn = st->path;
    sc__st_span *spans = NULL;
    const char **names = NULL;
    int nt = 0, nm = 0;
    if (r != SC_SUCCESS) return r;
    if (j.nodes[0].type != SC__J_OBJ) { r = sc__fail(SC_ERROR_FORMAT, "file '%s': header must be a JSON object", fn); goto done; }
    for (int c = j.nodes[0].first; c >= 0; c = j.nodes[c].next) {
        if (strcmp(j.nodes[c].key, "__metadata__")) nt++;
        else if (j.nodes[c].type == SC__J_OBJ) nm += j.nodes[c].n;
    }
    st->tensors = (sc_st_tensor *)SC_MALLOC(((size_t)nt + 1) * sizeof *st->tensors);
    st->meta_keys = (const char **)SC_MALLOC(((size_t)nm * 2 + 1) * sizeof(char *));
    spans = (sc__st_span *)SC_MALLOC(((size_t)nt + 1) * sizeof *spans);
    names = (const char **)SC_MALLOC(((size_t)(nt > nm ? nt : nm) + 1) * sizeof *names);
    if (!st->tensors || !st->meta_keys || !spans || !names) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", fn); goto done; }
    st->meta_values = st->meta_keys + nm;
    for (int c = j.nodes[0].first; c >= 0; c = j.nodes[c].next) {
        const sc__jnode *nd = &j.nodes[c];
        if (strlen(nd->key) != nd->klen) { r = sc__fail(SC_ERROR_FORMAT, "file '%s': a tensor name holds a NUL byte", fn); goto done; }
        if (!strcmp(nd->key, "__metadata__")) {
            if (nd->type == SC__J_NULL) continue;
            if (nd->type != SC__J_OBJ) { r = sc__fail(SC_ERROR_FORMAT, "file '%s': __metadata__ must be an object", fn); goto done; }
            for (int m = nd->first; m >= 0; m = j.nodes[m].next) {
                if (j.nodes[m].type != SC__J_STR) {
                    r = sc__fail(SC_ERROR_FORMAT, "file '%s': __metadata__ '%s' must be a string, not %s", fn, j.nodes[m].key,
                                 sc__json_type_name(j.nodes[m].type));
                    goto done;
                }
                st->meta_keys[st->n_meta] = j.nodes[m].key;
                st->meta_values[st->n_meta++] = j.nodes[m].s;
            }
            continue;
        }
        sc_st_tensor *t = &st->tensors[st->n_tensors];
        memset(t, 0, sizeof *t);
        t->name = nd->key;
        if ((r = sc__st_entry(st, &j, c, t)) != SC_SUCCESS) goto done;
        spans[st->n_tensors].begin = t->begin; spans[st->n_tensors].end = t->end;
        spans[st->n_tensors].idx = st->n_tensors;
        st->n_tensors++;
    }
    /* names unique */
    for (int pass = 0; pass < 2; pass++) {
        int n = pass ? st->n_meta : st->n_tensors;
        for (int i = 0; i < n; i++) names[i] = pass ? st->meta_keys[i] : st->tensors[i].name;
        qsort((void *)names, (size_t)n, sizeof *names, sc__strp_cmp);
        for (int i = 1; i < n; i++)
            if (!strcmp(names[i - 1], names[i])) {
                r = sc__fail(SC_ERROR_FORMAT, "file '%s': %s '%s' appears twice", fn, pass ? "__metadata__ key" : "tensor", names[i]);
                goto done;
            }
    }
    /* sorted by offset, the tensors tile the data section exactly */
    qsort(spans, (size_t)st->n_tensors, sizeof *spans, sc__st_span_cmp);
    {
        uint64_t at = 0;
        for (int i = 0; i < st->n_tensors; i++) {
            if (spans[i].begin != at) {
                r = sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s': data_offsets [%llu, %llu] %s (expected to begin at %llu)", fn,
                             st->tensors[spans[i].idx].name, (unsigned long long)spans[i].begin, (unsigned long long)spans[i].end,
                             spans[i].begin < at ? "overlap another tensor" : "leave a gap", (unsigned long long)at);
                goto done;
            }
            at = spans[i].end;
        }
        if (at != st->data_size) {
            r = sc__fail(SC_ERROR_FORMAT, "file '%s': %llu bytes of data after the last tensor", fn,
                         (unsigned long long)(st->data_size - at));
            goto done;
        }
    }
    st->strings_ = j.strs;
    j.strs = NULL;
done:
    SC_FREE(spans);
    SC_FREE((void *)names);
    sc__json_free(&j);
    return r;
}

SCDEF sc_result sc_safetensors_open_memory(sc_safetensors *st, const void *buf, size_t len)
{
    sc_result r;
    if (!st) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_safetensors_open_memory: NULL argument");
    sc__st_init(st);
    if (!buf && len) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_safetensors_open_memory: NULL buffer");
    if (!(st->path = sc__strdup("<memory>"))) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "out of memory");
    const unsigned char *p = (const unsigned char *)buf;
    uint64_t hlen = len >= 8 ? sc__le64(p) : 0;
    if ((r = sc__st_check_len(st, hlen, len)) == SC_SUCCESS) {
        st->mem = p;
        st->data_start = 8 + hlen;
        st->data_size = (uint64_t)len - st->data_start;
        r = sc__st_parse_header(st, (const char *)p + 8, (size_t)hlen);
    }
    if (r != SC_SUCCESS) sc_safetensors_close(st);
    return r;
}

SCDEF sc_result sc_safetensors_open(sc_safetensors *st, const char *path)
{
    sc_result r;
    unsigned char b8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    uint64_t size = 0, hlen;
    char *hdr = NULL;
    if (!st || !path) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_safetensors_open: NULL argument");
    sc__st_init(st);
    if (!(st->path = sc__strdup(path))) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "out of memory");
    if (!(st->f = fopen(path, "rb"))) r = sc__fail(SC_ERROR_IO, "file '%s': cannot open: %s", path, strerror(errno));
    else if (sc__fsize(st->f, &size)) r = sc__fail(SC_ERROR_IO, "file '%s': cannot seek", path);
    else if (size >= 8 && fread(b8, 1, 8, st->f) != 8) r = sc__fail(SC_ERROR_IO, "file '%s': read failed", path);
    else if ((r = sc__st_check_len(st, hlen = sc__le64(b8), size)) == SC_SUCCESS) {
        st->data_start = 8 + hlen;
        st->data_size = size - st->data_start;
        if (!(hdr = (char *)SC_MALLOC((size_t)hlen + 1))) r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", path);
        else if (fread(hdr, 1, (size_t)hlen, st->f) != (size_t)hlen) r = sc__fail(SC_ERROR_IO, "file '%s': header read failed", path);
        else r = sc__st_parse_header(st, hdr, (size_t)hlen);
    }
    SC_FREE(hdr);
    if (r != SC_SUCCESS) sc_safetensors_close(st);
    return r;
}

SCDEF const sc_st_tensor *sc_safetensors_find(const sc_safetensors *st, const char *name)
{
    for (int i = 0; st && name && i < st->n_tensors; i++)
        if (!strcmp(st->tensors[i].name, name)) return &st->tensors[i];
    return NULL;
}

SCDEF const char *sc_safetensors_meta(const sc_safetensors *st, const char *key)
{
    for (int i = 0; st && key && i < st->n_meta; i++)
        if (!strcmp(st->meta_keys[i], key)) return st->meta_values[i];
    return NULL;
}

/* Is `word` one of the space-separated words of `list`? */
static int sc__word_in(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
    return 0;
}

/* Find `name`, check its shape and that its dtype is one of `ok` (space-separated); a dtype of
   the other kind (`wrong`) is SC_ERROR_SHAPE, any other SC_ERROR_UNSUPPORTED. *out = NULL when
   there is nothing to read. */
static sc_result sc__st_prepare(sc_safetensors *st, const char *name, const void *dst, int ndim,
                                const int64_t *expect, const char *ok, const char *wrong, const sc_st_tensor **out)
{
    char want[200], got[200];
    *out = NULL;
    if (!st || !name) return sc__fail(SC_ERROR_INVALID_ARGS, "safetensors read: NULL argument");
    const sc_st_tensor *t = sc_safetensors_find(st, name);
    if (!t) return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor '%s' is missing", st->path, name);
    if (expect) {
        int same = ndim == t->ndim;
        for (int i = 0; same && i < ndim; i++) same = expect[i] == t->shape[i];
        if (!same) {
            sc__shape_str(want, sizeof want, ndim < 0 ? 0 : ndim > 8 ? 8 : ndim, expect);
            sc__shape_str(got, sizeof got, t->ndim, t->shape);
            return sc__fail(SC_ERROR_SHAPE, "file '%s': tensor '%s': shape %s, expected %s", st->path, name, got, want);
        }
    }
    if (!sc__word_in(ok, t->dtype))
        return sc__fail(sc__word_in(wrong, t->dtype) ? SC_ERROR_SHAPE : SC_ERROR_UNSUPPORTED,
                        "file '%s': tensor '%s': dtype %s, expected one of %s", st->path, name, t->dtype, ok);
    if (!dst && t->numel) return sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': tensor '%s': NULL destination", st->path, name);
    *out = t->numel ? t : NULL; /* NULL: nothing to read */
    return SC_SUCCESS;
}

/* Copy n raw elements starting at element i0 of t into buf. */
static sc_result sc__st_raw(sc_safetensors *st, const sc_st_tensor *t, int64_t i0, int64_t n, void *buf)
{
    uint64_t pos = st->data_start + t->begin + (uint64_t)i0 * (uint64_t)t->dtype_size;
    size_t nb = (size_t)n * (size_t)t->dtype_size;
    if (st->mem) { memcpy(buf, st->mem + pos, nb); return SC_SUCCESS; }
    if (sc__fseek64(st->f, pos) || fread(buf, 1, nb, st->f) != nb)
        return sc__fail(SC_ERROR_IO, "file '%s': tensor '%s': cannot read %llu bytes at offset %llu (file truncated or changed?)",
                        st->path, t->name, (unsigned long long)nb, (unsigned long long)pos);
    return SC_SUCCESS;
}

#define SC__ST_CHUNK 65536 /* elements converted at a time */

SCDEF sc_result sc_safetensors_read_f32(sc_safetensors *st, const char *name, float *dst, int ndim,
                                        const int64_t *expect_shape)
{
    const sc_st_tensor *t;
    sc_result r = sc__st_prepare(st, name, dst, ndim, expect_shape, "F32 BF16 F16", "I32 I64", &t);
    if (r != SC_SUCCESS || !t) return r;
    if (t->dtype_size == 4) {
        if ((r = sc__st_raw(st, t, 0, t->numel, dst)) != SC_SUCCESS) return r;
        if (!sc__little_endian())
            for (int64_t i = 0; i < t->numel; i++) {
                unsigned char *p = (unsigned char *)(dst + i), c;
                c = p[0]; p[0] = p[3]; p[3] = c; c = p[1]; p[1] = p[2]; p[2] = c;
            }
        return SC_SUCCESS;
    }
    unsigned char *buf = (unsigned char *)SC_MALLOC(SC__ST_CHUNK * 2);
    if (!buf) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", st->path);
    int bf = !strcmp(t->dtype, "BF16");
    for (int64_t i0 = 0; i0 < t->numel && r == SC_SUCCESS; i0 += SC__ST_CHUNK) {
        int64_t n = t->numel - i0 < SC__ST_CHUNK ? t->numel - i0 : SC__ST_CHUNK;
        if ((r = sc__st_raw(st, t, i0, n, buf)) != SC_SUCCESS) break;
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = (uint16_t)(buf[2 * i] | (buf[2 * i + 1] << 8));
            dst[i0 + i] = bf ? sc_bf16_to_f32(h) : sc_f16_to_f32(h);
        }
    }
    SC_FREE(buf);
    return r;
}

SCDEF sc_result sc_safetensors_read_i32(sc_safetensors *st, const char *name, int32_t *dst, int ndim,
                                        const int64_t *expect_shape)
{
    const sc_st_tensor *t;
    sc_result r = sc__st_prepare(st, name, dst, ndim, expect_shape, "I32 I64", "F32 BF16 F16", &t);
    if (r != SC_SUCCESS || !t) return r;
    unsigned char *buf = (unsigned char *)SC_MALLOC(SC__ST_CHUNK * 8);
    if (!buf) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", st->path);
    for (int64_t i0 = 0; i0 < t->numel && r == SC_SUCCESS; i0 += SC__ST_CHUNK) {
        int64_t n = t->numel - i0 < SC__ST_CHUNK ? t->numel - i0 : SC__ST_CHUNK;
        if ((r = sc__st_raw(st, t, i0, n, buf)) != SC_SUCCESS) break;
        for (int64_t i = 0; i < n; i++) {
            if (t->dtype_size == 4) {
                const unsigned char *p = buf + 4 * i;
                dst[i0 + i] = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
            } else {
                int64_t v = (int64_t)sc__le64(buf + 8 * i);
                if (v < INT32_MIN || v > INT32_MAX) {
                    r = sc__fail(SC_ERROR_RANGE, "file '%s': tensor '%s': value %lld at flat index %lld does not fit int32",
                                 st->path, name, (long long)v, (long long)(i0 + i));
                    break;
                }
                dst[i0 + i] = (int32_t)v;
            }
        }
    }
    SC_FREE(buf);
    return r;
}

/* Write entry e's data (numel elements) to f, little-endian, converting floats if asked. */
static int sc__st_write_data(FILE *f, const sc_st_entry *e, int64_t numel, int size)
{
    if (!numel) return 1;
    if (!e->data_is_f32 && sc__little_endian())
        return fwrite(e->data, (size_t)size, (size_t)numel, f) == (size_t)numel;
    unsigned char buf[4096 * 8];
    const unsigned char *raw = (const unsigned char *)e->data;
    const float *x = (const float *)e->data;
    for (int64_t i0 = 0; i0 < numel; i0 += 4096) {
        int64_t n = numel - i0 < 4096 ? numel - i0 : 4096;
        for (int64_t i = 0; i < n; i++) {
            unsigned char *o = buf + i * size;
            uint64_t v;
            if (!e->data_is_f32) { /* raw little-endian values from a big-endian host: copy as stored */
                memcpy(o, raw + (i0 + i) * size, (size_t)size);
                continue;
            }
            if (size == 2) v = sc_f32_to_bf16(x[i0 + i]);
            else { uint32_t u; memcpy(&u, &x[i0 + i], 4); v = u; }
            for (int k = 0; k < size; k++) o[k] = (unsigned char)(v >> (8 * k));
        }
        if (fwrite(buf, (size_t)size, (size_t)n, f) != (size_t)n) return 0;
    }
    return 1;
}

SCDEF sc_result sc_safetensors_write(const char *path, const sc_st_entry *entries, int n,
                                     const char *const *meta_kv, int n_meta)
{
    sc__buf h = {NULL, 0, 0, 0};
    sc_result r = SC_SUCCESS;
    uint64_t at = 0;
    FILE *f;
    char *tmp;
    if (!path || n < 0 || n_meta < 0 || (n && !entries) || (n_meta && !meta_kv))
        return sc__fail(SC_ERROR_INVALID_ARGS, "sc_safetensors_write: bad arguments");
    sc__buf_put(&h, "{", 1);
    if (n_meta) {
        sc__buf_put(&h, "\"__metadata__\":{", 16);
        for (int i = 0; i < n_meta; i++) {
            if (!meta_kv[2 * i] || !meta_kv[2 * i + 1])
                { r = sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': NULL metadata key or value", path); goto done; }
            if (i) sc__buf_put(&h, ",", 1);
            sc__buf_json_str(&h, meta_kv[2 * i]);
            sc__buf_put(&h, ":", 1);
            sc__buf_json_str(&h, meta_kv[2 * i + 1]);
        }
        sc__buf_put(&h, "}", 1);
    }
    for (int i = 0; i < n; i++) {
        const sc_st_entry *e = &entries[i];
        const char *nm = e->name ? e->name : "(null)";
        int size = e->dtype ? sc__st_dtype_size(e->dtype) : 0;
        uint64_t numel = 1;
        if (!e->name || !e->dtype || (strcmp(e->dtype, "F32") && strcmp(e->dtype, "BF16") && strcmp(e->dtype, "F16") &&
                                      strcmp(e->dtype, "I32") && strcmp(e->dtype, "I64")))
            { r = sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': tensor '%s': no name or dtype not F32/BF16/F16/I32/I64", path, nm); goto done; }
        if (e->data_is_f32 && strcmp(e->dtype, "F32") && strcmp(e->dtype, "BF16"))
            { r = sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': tensor '%s': float data converts to F32 or BF16 only", path, nm); goto done; }
        if (e->ndim < 0 || e->ndim > SC_ST_MAX_DIMS)
            { r = sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': tensor '%s': ndim %d", path, nm, e->ndim); goto done; }
        for (int k = 0; k < e->ndim; k++) {
            if (e->shape[k] < 0 || (e->shape[k] && numel > (uint64_t)(INT64_MAX / 8) / (uint64_t)e->shape[k]))
                { r = sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': tensor '%s': bad shape", path, nm); goto done; }
            numel *= (uint64_t)e->shape[k];
        }
        if (numel && !e->data) { r = sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': tensor '%s': NULL data", path, nm); goto done; }
        for (int k = 0; k < i; k++)
            if (!strcmp(entries[k].name, e->name))
                { r = sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': tensor '%s' given twice", path, nm); goto done; }
        if (h.n > 1) sc__buf_put(&h, ",", 1);
        sc__buf_json_str(&h, e->name);
        sc__buf_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", e->dtype);
        for (int k = 0; k < e->ndim; k++) sc__buf_printf(&h, "%s%lld", k ? "," : "", (long long)e->shape[k]);
        sc__buf_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)at,
                       (unsigned long long)(at + numel * (uint64_t)size));
        at += numel * (uint64_t)size;
    }
    sc__buf_put(&h, "}", 1);
    while (h.n % 8) sc__buf_put(&h, " ", 1);
    if (h.oom) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", path); goto done; }
    if ((r = sc__tmp_open(path, &f, &tmp)) != SC_SUCCESS) goto done;
    {
        unsigned char b8[8];
        int ok = 1;
        for (int k = 0; k < 8; k++) b8[k] = (unsigned char)((uint64_t)h.n >> (8 * k));
        ok = fwrite(b8, 1, 8, f) == 8 && fwrite(h.p, 1, h.n, f) == h.n;
        for (int i = 0; ok && i < n; i++) {
            int64_t numel = 1;
            for (int k = 0; k < entries[i].ndim; k++) numel *= entries[i].shape[k];
            ok = sc__st_write_data(f, &entries[i], numel, sc__st_dtype_size(entries[i].dtype));
        }
        if (!ok) r = sc__fail(SC_ERROR_IO, "file '%s': write failed: %s", tmp, strerror(errno));
        r = sc__tmp_commit(path, f, tmp, r);
    }
done:
    SC_FREE(h.p);
    return r;
}

/* ---- Hugging Face checkpoint directories ---- */
SCDEF sc_result sc_hf_read_config(const char *dir, sc_config *cfg)
{
    if (!dir || !cfg) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_hf_read_config: NULL argument");
    char *p = sc__path_join(dir, "config.json");
    if (!p) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "out of memory");
    sc_result r = sc_config_read(cfg, p);
    SC_FREE(p);
    return r;
}

/* Is `name` a tensor the model reads (or a tied lm_head, which is ignored)? */
static int sc__hf_known(const sc_param_info *tab, int n, const sc_config *cfg, const char *name)
{
    if (cfg->tie_embeddings && !strcmp(name, "lm_head.weight")) return 1;
    for (int i = 0; i < n; i++)
        if (!strcmp(tab[i].name, name)) return 1;
    return 0;
}

static void sc__hf_warn_unused(const char *file, int unused, const char *first)
{
    if (unused)
        fprintf(stderr, "slidecheck: warning: '%s': %d tensor%s the model does not use (first: '%s') ignored\n",
                file, unused, unused > 1 ? "s" : "", first);
}

/* Read params tab[i] for every i with want[i] from an open file. */
static sc_result sc__hf_read_from(sc_safetensors *st, const sc_param_info *tab, int n, const char *want,
                                  float *params)
{
    for (int i = 0; i < n; i++) {
        if (want && !want[i]) continue;
        sc_result r = sc_safetensors_read_f32(st, tab[i].name, params + tab[i].offset, tab[i].ndim, tab[i].shape);
        if (r != SC_SUCCESS) return r;
    }
    return SC_SUCCESS;
}

typedef struct sc__hf_map { const char *name, *shard; } sc__hf_map;
static int sc__hf_map_cmp(const void *a, const void *b)
{
    return strcmp(((const sc__hf_map *)a)->name, ((const sc__hf_map *)b)->name);
}

static sc_result sc__hf_read_sharded(const char *dir, const char *ipath, const sc_config *cfg,
                                     const sc_param_info *tab, int n, float *params)
{
    sc__json j;
    char *text = NULL, *want = NULL, *spath = NULL;
    size_t len;
    sc__hf_map *map = NULL;
    const char **pshard = NULL;
    int nmap = 0, unused = 0;
    const char *first_unused = "";
    sc_result r = sc__read_file(ipath, 64u << 20, &text, &len);
    if (r != SC_SUCCESS) return r;
    if ((r = sc__json_parse(&j, text, len, ipath)) != SC_SUCCESS) { SC_FREE(text); return r; }
    int wm = sc__json_get(&j, 0, "weight_map");
    if (wm < 0 || j.nodes[wm].type != SC__J_OBJ) { r = sc__fail(SC_ERROR_FORMAT, "file '%s': no 'weight_map' object", ipath); goto done; }
    map = (sc__hf_map *)SC_MALLOC(((size_t)j.nodes[wm].n + 1) * sizeof *map);
    pshard = (const char **)SC_MALLOC(((size_t)n + 1) * sizeof *pshard);
    want = (char *)SC_MALLOC((size_t)n + 1);
    if (!map || !pshard || !want) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", ipath); goto done; }
    for (int c = j.nodes[wm].first; c >= 0; c = j.nodes[c].next) {
        const sc__jnode *nd = &j.nodes[c];
        if (nd->type != SC__J_STR || strlen(nd->s) != nd->slen || !nd->slen || strchr(nd->s, '/') ||
            strchr(nd->s, '\\') || strstr(nd->s, "..")) {
            r = sc__fail(SC_ERROR_FORMAT, "file '%s': weight_map: tensor '%s': shard must be a plain file name", ipath, nd->key);
            goto done;
        }
        map[nmap].name = nd->key; map[nmap++].shard = nd->s;
        if (!sc__hf_known(tab, n, cfg, nd->key) && !unused++) first_unused = nd->key;
    }
    qsort(map, (size_t)nmap, sizeof *map, sc__hf_map_cmp);
    for (int i = 1; i < nmap; i++)
        if (!strcmp(map[i - 1].name, map[i].name)) {
            r = sc__fail(SC_ERROR_FORMAT, "file '%s': weight_map: tensor '%s' appears twice", ipath, map[i].name);
            goto done;
        }
    for (int i = 0; i < n; i++) {
        sc__hf_map key = {tab[i].name, NULL};
        const sc__hf_map *m = (const sc__hf_map *)bsearch(&key, map, (size_t)nmap, sizeof *map, sc__hf_map_cmp);
        if (!m) { r = sc__fail(SC_ERROR_FORMAT, "file '%s': weight_map: tensor '%s' is missing", ipath, tab[i].name); goto done; }
        pshard[i] = m->shard;
    }
    memset(want, 0, (size_t)n);
    for (int i = 0; i < n; i++) {
        if (!pshard[i]) continue; /* already read */
        const char *shard = pshard[i];
        sc_safetensors st;
        for (int k = i; k < n; k++) {
            want[k] = pshard[k] && !strcmp(pshard[k], shard);
            if (want[k]) pshard[k] = NULL;
        }
        SC_FREE(spath);
        if (!(spath = sc__path_join(dir, shard))) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "out of memory"); goto done; }
        if ((r = sc_safetensors_open(&st, spath)) != SC_SUCCESS) goto done;
        r = sc__hf_read_from(&st, tab, n, want, params);
        sc_safetensors_close(&st);
        if (r != SC_SUCCESS) goto done;
        memset(want, 0, (size_t)n);
    }
    sc__hf_warn_unused(ipath, unused, first_unused);
done:
    SC_FREE(spath); SC_FREE(want); SC_FREE((void *)pshard); SC_FREE(map);
    sc__json_free(&j);
    SC_FREE(text);
    return r;
}

SCDEF sc_result sc_hf_read_params(const char *dir, const sc_config *cfg, float *params)
{
    if (!dir || !cfg || !params) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_hf_read_params: NULL argument");
    sc_result r = sc_config_validate(cfg);
    if (r != SC_SUCCESS) return r;
    int n = sc_config_params(cfg, NULL, 0);
    if (n < 1) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_hf_read_params: empty parameter table");
    sc_param_info *tab = (sc_param_info *)SC_MALLOC((size_t)n * sizeof *tab);
    char *single = sc__path_join(dir, "model.safetensors"), *index = sc__path_join(dir, "model.safetensors.index.json");
    if (!tab || !single || !index) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "out of memory"); goto done; }
    sc_config_params(cfg, tab, n);
    if (sc__file_exists(single) || !sc__file_exists(index)) { /* as transformers: the single file first */
        sc_safetensors st;
        if ((r = sc_safetensors_open(&st, single)) != SC_SUCCESS) goto done;
        r = sc__hf_read_from(&st, tab, n, NULL, params);
        if (r == SC_SUCCESS) {
            int unused = 0;
            const char *first = "";
            for (int i = 0; i < st.n_tensors; i++)
                if (!sc__hf_known(tab, n, cfg, st.tensors[i].name) && !unused++) first = st.tensors[i].name;
            sc__hf_warn_unused(single, unused, first);
        }
        sc_safetensors_close(&st);
    } else
        r = sc__hf_read_sharded(dir, index, cfg, tab, n, params);
done:
    SC_FREE(tab); SC_FREE(single); SC_FREE(index);
    return r;
}

SCDEF sc_result sc_hf_write(const char *dir, const sc_config *cfg, const float *params, int bf16)
{
    if (!dir || !cfg || !params) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_hf_write: NULL argument");
    sc_result r = sc_config_validate(cfg);
    if (r != SC_SUCCESS) return r;
#ifdef _WIN32
    int made = _mkdir(dir);
#else
    int made = mkdir(dir, 0777);
#endif
    if (made && errno != EEXIST) return sc__fail(SC_ERROR_IO, "directory '%s': cannot create: %s", dir, strerror(errno));
    int n = sc_config_params(cfg, NULL, 0);
    sc_param_info *tab = (sc_param_info *)SC_MALLOC((size_t)n * sizeof *tab);
    sc_st_entry *e = (sc_st_entry *)SC_MALLOC((size_t)n * sizeof *e);
    char *cpath = sc__path_join(dir, "config.json"), *mpath = sc__path_join(dir, "model.safetensors");
    if (!tab || !e || !cpath || !mpath) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "out of memory"); goto done; }
    sc_config_params(cfg, tab, n);
    for (int i = 0; i < n; i++) {
        memset(&e[i], 0, sizeof e[i]);
        e[i].name = tab[i].name;
        e[i].dtype = bf16 ? "BF16" : "F32";
        e[i].ndim = tab[i].ndim;
        e[i].shape[0] = tab[i].shape[0]; e[i].shape[1] = tab[i].shape[1];
        e[i].data = params + tab[i].offset;
        e[i].data_is_f32 = 1;
    }
    {
        static const char *const meta[2] = {"format", "pt"}; /* transformers requires it */
        if ((r = sc_config_write(cfg, cpath, bf16 ? "bfloat16" : "float32")) == SC_SUCCESS)
            r = sc_safetensors_write(mpath, e, n, meta, 1);
    }
done:
    SC_FREE(tab); SC_FREE(e); SC_FREE(cpath); SC_FREE(mpath);
    return r;
}

/* ---- token files ---- */
static sc_result sc__tokens_from_st(sc_safetensors *st, int32_t **ids, int *B, int *T)
{
    const sc_st_tensor *t = sc_safetensors_find(st, "input_ids");
    *ids = NULL; *B = *T = 0;
    if (!t) return sc__fail(SC_ERROR_FORMAT, "file '%s': no tensor 'input_ids'", st->path);
    if (t->ndim != 1 && t->ndim != 2)
        return sc__fail(SC_ERROR_SHAPE, "file '%s': tensor 'input_ids': %d dims, expected [B, T] or [T]", st->path, t->ndim);
    int64_t b = t->ndim == 2 ? t->shape[0] : 1, tt = t->shape[t->ndim - 1];
    if (b < 1 || tt < 2)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': tensor 'input_ids': %lld sequences of %lld tokens; need at least one of >= 2",
                        st->path, (long long)b, (long long)tt);
    if (b > INT_MAX || tt > INT_MAX || t->numel > INT_MAX)
        return sc__fail(SC_ERROR_RANGE, "file '%s': tensor 'input_ids': too many tokens", st->path);
    int32_t *p = (int32_t *)SC_MALLOC((size_t)t->numel * sizeof *p);
    if (!p) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", st->path);
    sc_result r = sc_safetensors_read_i32(st, "input_ids", p, 0, NULL);
    for (int64_t i = 0; r == SC_SUCCESS && i < t->numel; i++)
        if (p[i] < 0)
            r = sc__fail(SC_ERROR_RANGE, "file '%s': token id %d at [%lld,%lld] is negative", st->path, p[i],
                         (long long)(i / tt), (long long)(i % tt));
    if (r != SC_SUCCESS) { SC_FREE(p); return r; }
    *ids = p; *B = (int)b; *T = (int)tt;
    return SC_SUCCESS;
}

SCDEF sc_result sc_tokens_read(const char *path, int32_t **ids, int *B, int *T)
{
    sc_safetensors st;
    if (!path || !ids || !B || !T) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_tokens_read: NULL argument");
    *ids = NULL; *B = *T = 0;
    sc_result r = sc_safetensors_open(&st, path);
    if (r != SC_SUCCESS) return r;
    r = sc__tokens_from_st(&st, ids, B, T);
    sc_safetensors_close(&st);
    return r;
}

SCDEF sc_result sc_tokens_write(const char *path, const int32_t *ids, int B, int T)
{
    sc_st_entry e;
    if (!path || !ids || B < 1 || T < 1) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_tokens_write: bad arguments");
    memset(&e, 0, sizeof e);
    e.name = "input_ids"; e.dtype = "I32"; e.ndim = 2; e.shape[0] = B; e.shape[1] = T; e.data = ids;
    return sc_safetensors_write(path, &e, 1, NULL, 0);
}

SCDEF sc_result sc_tokens_check(const int32_t *ids, int B, int T, const sc_config *cfg)
{
    if (!ids || !cfg || B < 1 || T < 1) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_tokens_check: bad arguments");
    if (T > cfg->max_position)
        return sc__fail(SC_ERROR_RANGE, "sequence length %d > max_position_embeddings %d", T, cfg->max_position);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int32_t v = ids[(size_t)b * T + t];
            if (v < 0)
                return sc__fail(SC_ERROR_RANGE, "token id %d at [%d,%d] is negative", v, b, t);
            if (v >= cfg->vocab_size)
                return sc__fail(SC_ERROR_RANGE, "token id %d at [%d,%d] \xe2\x89\xa5 vocab_size %d", v, b, t,
                                cfg->vocab_size);
        }
    return SC_SUCCESS;
}

SCDEF void sc_tokens_free(int32_t *ids) { SC_FREE(ids); }

/* ---- token shards ---- */
#ifndef _WIN32
#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#define SC__SHARD_MAGIC16 20240520
#define SC__SHARD_MAGIC32 20240801
#define SC__SHARD_HEADER 1024 /* 256 x int32 */

typedef struct sc__shard {
    char *path;
    void *map;                 /* the whole file, mapped read-only; NULL: not mapped */
    size_t map_len;
    const unsigned char *tok;  /* the first token (little-endian, possibly unaligned in a .npy) */
    uint64_t ntok;
    int width;                 /* bytes a token: 2 or 4 */
    int is_signed;             /* '<i4' */
    int64_t nbatch, first;     /* its whole batches; index of the first of them in an epoch */
} sc__shard;

struct sc_data {
    int B, T, rank, world, shuffle, vocab_size;
    uint64_t seed;
    int n;
    sc__shard *sh;
    int64_t epoch_batches, pos;
    int64_t *perm;             /* shuffle: the order of shard perm_shard's batches in epoch perm_epoch */
    int64_t perm_epoch;
    int perm_shard;            /* -1: perm holds nothing yet */
};

static uint32_t sc__data_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
/* Token i as uint32 (an '<i4' negative comes out >= 2^31). Byte loads: a .npy's data need not be aligned. */
static uint32_t sc__data_tok(const sc__shard *s, uint64_t i)
{
    const unsigned char *p = s->tok + i * (uint64_t)s->width;
    return s->width == 2 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 : sc__data_le32(p);
}
static uint64_t sc__data_hash_u64(uint64_t h, uint64_t v)
{
    unsigned char b[8];
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)(v >> (8 * k));
    return sc_hash_bytes(h, b, 8);
}

/* Map s->path whole, read-only. */
static sc_result sc__shard_map(sc__shard *s)
{
#ifdef _WIN32
    return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': token shards need mmap (POSIX)", s->path);
#else
    int fd = open(s->path, O_RDONLY);
    if (fd < 0) return sc__fail(SC_ERROR_IO, "file '%s': cannot open: %s", s->path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st)) {
        int e = errno;
        close(fd);
        return sc__fail(SC_ERROR_IO, "file '%s': cannot stat: %s", s->path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) { close(fd); return sc__fail(SC_ERROR_IO, "file '%s': not a regular file", s->path); }
    if (st.st_size == 0) { close(fd); return sc__fail(SC_ERROR_FORMAT, "file '%s': empty, not a token shard", s->path); }
    if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
        close(fd);
        return sc__fail(SC_ERROR_UNSUPPORTED, "file '%s': too large to map on this machine", s->path);
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd); /* the mapping keeps the file */
    if (m == MAP_FAILED) return sc__fail(SC_ERROR_IO, "file '%s': cannot map: %s", s->path, strerror(e));
    s->map = m;
    s->map_len = (size_t)st.st_size;
    return SC_SUCCESS;
#endif
}

static void sc__shard_unmap(sc__shard *s)
{
#ifndef _WIN32
    if (s->map) munmap(s->map, s->map_len);
#endif
    s->map = NULL;
}

/* The value of `key` in a .npy header dict (numpy writes 'key': value); NULL if absent. */
static const char *sc__npy_value(const char *h, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = h; *p; p++) {
        if ((*p != '\'' && *p != '"') || strncmp(p + 1, key, n) || p[1 + n] != *p) continue;
        p += n + 2;
        while (*p == ' ') p++;
        if (*p != ':') return NULL;
        p++;
        while (*p == ' ') p++;
        return p;
    }
    return NULL;
}

/* The dtype, order and shape of a .npy header dict (h, NUL-terminated): *n tokens. */
static sc_result sc__npy_dict(sc__shard *s, const char *h, uint64_t *n)
{
    const char *descr = sc__npy_value(h, "descr"), *fo = sc__npy_value(h, "fortran_order"),
               *shape = sc__npy_value(h, "shape");
    if (!descr || !fo || !shape || (*descr != '\'' && *descr != '"') || *shape != '(')
        return sc__fail(SC_ERROR_FORMAT, "file '%s': .npy header lacks descr, fortran_order or shape: %s", s->path, h);
    static const char *const types[3] = {"<u2", "<u4", "<i4"};
    int t = 0;
    while (t < 3 && (strncmp(descr + 1, types[t], 3) || descr[4] != descr[0])) t++;
    if (t == 3) {
        const char *e = strchr(descr + 1, descr[0]);
        return sc__fail(SC_ERROR_SHAPE, "file '%s': .npy dtype %.*s; token shards are '<u2', '<u4' or '<i4'", s->path,
                        e ? (int)(e - descr + 1) : 16, descr);
    }
    s->width = t ? 4 : 2;
    s->is_signed = t == 2;
    if (!strncmp(fo, "True", 4))
        return sc__fail(SC_ERROR_SHAPE, "file '%s': .npy has fortran_order True; token shards are C order", s->path);
    if (strncmp(fo, "False", 5))
        return sc__fail(SC_ERROR_FORMAT, "file '%s': .npy fortran_order is neither True nor False", s->path);
    int ndim = 0;
    for (const char *p = shape + 1;;) { /* "(n,)", "( n , )", "(2, 6)", "()" */
        while (*p == ' ') p++;
        if (*p == ')') break;
        if (*p < '0' || *p > '9') return sc__fail(SC_ERROR_FORMAT, "file '%s': .npy shape is malformed: %s", s->path, h);
        uint64_t v = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
            if (v > (UINT64_MAX - 9) / 10) return sc__fail(SC_ERROR_FORMAT, "file '%s': .npy shape overflows", s->path);
            v = v * 10 + (uint64_t)(*p - '0');
        }
        if (*p == 'L') p++; /* written by Python 2 */
        *n = v;
        ndim++;
        while (*p == ' ') p++;
        if (*p == ',') p++;
        else if (*p != ')') return sc__fail(SC_ERROR_FORMAT, "file '%s': .npy shape is malformed: %s", s->path, h);
    }
    if (ndim != 1)
        return sc__fail(SC_ERROR_SHAPE, "file '%s': .npy has %d dimensions; token shards are 1-D", s->path, ndim);
    return SC_SUCCESS;
}

/* A .npy header: where the data starts, how many tokens, and their width and signedness. */
static sc_result sc__npy_parse(sc__shard *s, uint64_t *off, uint64_t *n)
{
    const unsigned char *b = (const unsigned char *)s->map;
    size_t len = s->map_len, hl, start;
    if (len < 10) return sc__fail(SC_ERROR_FORMAT, "file '%s': .npy header is truncated", s->path);
    start = b[6] == 1 ? 10 : 12;
    if (b[6] < 1 || b[6] > 3)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': .npy version %d.%d (1.0, 2.0 and 3.0 are read)", s->path, b[6], b[7]);
    if (len < start) return sc__fail(SC_ERROR_FORMAT, "file '%s': .npy header is truncated", s->path);
    hl = b[6] == 1 ? (size_t)b[8] | (size_t)b[9] << 8 : (size_t)sc__data_le32(b + 8);
    if (hl > len - start) return sc__fail(SC_ERROR_FORMAT, "file '%s': .npy header runs past the end of the file", s->path);
    if (hl > (1u << 20)) return sc__fail(SC_ERROR_FORMAT, "file '%s': .npy header of %zu bytes", s->path, hl);
    char *h = (char *)SC_MALLOC(hl + 1);
    if (!h) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "file '%s': out of memory", s->path);
    memcpy(h, b + start, hl);
    size_t e = hl;
    while (e > 0 && (h[e - 1] == ' ' || h[e - 1] == '\n')) e--; /* the padding, out of messages */
    h[e] = 0;
    *n = 0;
    *off = start + hl;
    sc_result r = sc__npy_dict(s, h, n);
    SC_FREE(h);
    return r;
}

/* Magic, version and the size the header promises against the file's. */
static sc_result sc__shard_parse(sc__shard *s)
{
    const unsigned char *b = (const unsigned char *)s->map;
    uint64_t off = 0, n = 0, len = s->map_len;
    if (len >= 6 && !memcmp(b, "\x93NUMPY", 6)) {
        sc_result r = sc__npy_parse(s, &off, &n);
        if (r != SC_SUCCESS) return r;
    } else {
        if (len < SC__SHARD_HEADER)
            return sc__fail(SC_ERROR_FORMAT, "file '%s': %llu bytes, shorter than a token shard's %d-byte header", s->path,
                            (unsigned long long)len, SC__SHARD_HEADER);
        uint32_t magic = sc__data_le32(b), version = sc__data_le32(b + 4), count = sc__data_le32(b + 8);
        if (magic == SC__SHARD_MAGIC16) s->width = 2;
        else if (magic == SC__SHARD_MAGIC32) s->width = 4;
        else
            return sc__fail(SC_ERROR_FORMAT, "file '%s': bad magic %u (a token shard has %d for uint16 tokens, %d for uint32,"
                            " or is a .npy)", s->path, magic, SC__SHARD_MAGIC16, SC__SHARD_MAGIC32);
        /* llm.c writes version 1 for its uint16 (GPT-2) shards and 7 for its uint32 (Llama 3) ones */
        if (version != 1 && !(version == 7 && s->width == 4))
            return sc__fail(SC_ERROR_FORMAT, "file '%s': token shard version %u, expected 1 (or 7 with uint32 tokens)",
                            s->path, version);
        if (count > INT32_MAX) /* llm.c's header is int32 */
            return sc__fail(SC_ERROR_FORMAT, "file '%s': negative token count %d", s->path, (int32_t)count);
        off = SC__SHARD_HEADER;
        n = count;
        s->is_signed = 0;
    }
    if (n > (UINT64_MAX - off) / (uint64_t)s->width || len < off + n * (uint64_t)s->width)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': truncated: %llu bytes, but its header counts %llu tokens of %d bytes after"
                        " %llu header bytes", s->path, (unsigned long long)len, (unsigned long long)n, s->width,
                        (unsigned long long)off);
    if (len > off + n * (uint64_t)s->width)
        return sc__fail(SC_ERROR_FORMAT, "file '%s': %llu bytes after the %llu tokens its header counts (a wrong count, or"
                        " trailing data)", s->path, (unsigned long long)(len - off - n * (uint64_t)s->width),
                        (unsigned long long)n);
    s->tok = b + off;
    s->ntok = n;
    return SC_SUCCESS;
}

/* Every token <= limit: a scan of the whole mapped shard, on all cores. */
static sc_result sc__shard_scan(const sc__shard *s, uint32_t limit, int vocab_size)
{
    int64_t n = (int64_t)s->ntok, bad = n;
    if (s->width == 2) {
        SC__OMP(omp parallel for schedule(static) reduction(min : bad))
        for (int64_t i = 0; i < n; i++)
            if (i < bad && ((uint32_t)s->tok[2 * i] | (uint32_t)s->tok[2 * i + 1] << 8) > limit) bad = i;
    } else {
        SC__OMP(omp parallel for schedule(static) reduction(min : bad))
        for (int64_t i = 0; i < n; i++)
            if (i < bad && sc__data_le32(s->tok + 4 * i) > limit) bad = i;
    }
    if (bad == n) return SC_SUCCESS;
    uint32_t v = sc__data_tok(s, (uint64_t)bad);
    long long at = (long long)bad;
    if (s->is_signed && v > (uint32_t)INT32_MAX)
        return sc__fail(SC_ERROR_RANGE, "file '%s': token at position %lld is negative (%d)", s->path, at, (int)(int32_t)v);
    if (v > (uint32_t)INT32_MAX)
        return sc__fail(SC_ERROR_RANGE, "file '%s': token at position %lld is %u, beyond int32", s->path, at, v);
    return sc__fail(SC_ERROR_RANGE, "file '%s': token at position %lld is %u, not below vocab_size %d", s->path, at, v,
                    vocab_size);
}

static int sc__data_strcmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The paths matching pattern, in strcmp order (glob's own order follows the locale). */
static sc_result sc__data_glob(const char *pattern, char ***paths, int *n)
{
    *paths = NULL;
    *n = 0;
#ifdef _WIN32
    return sc__fail(SC_ERROR_UNSUPPORTED, "pattern '%s': token shards need glob and mmap (POSIX)", pattern);
#else
    glob_t g;
    memset(&g, 0, sizeof g);
    int rc = glob(pattern, 0, NULL, &g);
    if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0)) {
        globfree(&g);
        return sc__fail(SC_ERROR_IO, "no file matches '%s'", pattern);
    }
    if (rc) {
        globfree(&g);
        return sc__fail(rc == GLOB_NOSPACE ? SC_ERROR_OUT_OF_MEMORY : SC_ERROR_IO, "pattern '%s': glob failed (%s)", pattern,
                        rc == GLOB_NOSPACE ? "out of memory" : "a directory could not be read");
    }
    if (g.gl_pathc > (size_t)INT_MAX / 2) {
        globfree(&g);
        return sc__fail(SC_ERROR_INVALID_ARGS, "pattern '%s': too many files", pattern);
    }
    char **p = (char **)SC_MALLOC(g.gl_pathc * sizeof *p);
    int k = 0;
    if (p)
        for (; k < (int)g.gl_pathc; k++)
            if (!(p[k] = sc__concat(g.gl_pathv[k], "", NULL))) break;
    if (!p || k < (int)g.gl_pathc) {
        while (p && k > 0) SC_FREE(p[--k]);
        SC_FREE(p);
        globfree(&g);
        return sc__fail(SC_ERROR_OUT_OF_MEMORY, "pattern '%s': out of memory", pattern);
    }
    globfree(&g);
    qsort(p, (size_t)k, sizeof *p, sc__data_strcmp);
    *paths = p;
    *n = k;
    return SC_SUCCESS;
#endif
}

SCDEF void sc_data_close(sc_data *d)
{
    if (!d) return;
    for (int i = 0; i < d->n; i++) {
        sc__shard_unmap(&d->sh[i]);
        SC_FREE(d->sh[i].path);
    }
    SC_FREE(d->sh);
    SC_FREE(d->perm);
    SC_FREE(d);
}

SCDEF sc_result sc_data_open(sc_data **out, const char *pattern, const sc_data_config *cfg)
{
    if (!out || !pattern || !cfg) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_data_open: NULL argument");
    *out = NULL;
    int world = cfg->world, rank = cfg->rank;
    if (world == 0 && rank == 0) world = 1;
    if (cfg->B < 1 || cfg->T < 1)
        return sc__fail(SC_ERROR_INVALID_ARGS, "sc_data_open: B = %d, T = %d; both must be >= 1", cfg->B, cfg->T);
    if (world < 1 || rank < 0 || rank >= world)
        return sc__fail(SC_ERROR_INVALID_ARGS, "sc_data_open: rank %d of world %d", cfg->rank, cfg->world);
    if (cfg->vocab_size < 0) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_data_open: vocab_size %d", cfg->vocab_size);
    sc_data *d = (sc_data *)SC_MALLOC(sizeof *d);
    if (!d) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "sc_data_open: out of memory");
    memset(d, 0, sizeof *d);
    d->B = cfg->B; d->T = cfg->T; d->rank = rank; d->world = world;
    d->shuffle = cfg->shuffle != 0; d->seed = cfg->shuffle_seed; d->vocab_size = cfg->vocab_size;
    d->perm_shard = -1;
    char **paths;
    int n;
    sc_result r = sc__data_glob(pattern, &paths, &n);
    if (r != SC_SUCCESS) { SC_FREE(d); return r; }
    d->sh = (sc__shard *)SC_MALLOC((size_t)n * sizeof *d->sh);
    if (!d->sh) {
        for (int i = 0; i < n; i++) SC_FREE(paths[i]);
        SC_FREE(paths); SC_FREE(d);
        return sc__fail(SC_ERROR_OUT_OF_MEMORY, "sc_data_open: out of memory");
    }
    memset(d->sh, 0, (size_t)n * sizeof *d->sh);
    for (int i = 0; i < n; i++) d->sh[i].path = paths[i]; /* the shards own them now */
    SC_FREE(paths);
    d->n = n;
    uint64_t bt = (uint64_t)d->B * (uint64_t)d->T, most = 0;
    int64_t maxb = 0;
    for (int i = 0; i < n && r == SC_SUCCESS; i++) {
        sc__shard *s = &d->sh[i];
        if ((r = sc__shard_map(s)) != SC_SUCCESS || (r = sc__shard_parse(s)) != SC_SUCCESS) break;
        if (d->vocab_size > 0 && (r = sc__shard_scan(s, (uint32_t)d->vocab_size - 1, d->vocab_size)) != SC_SUCCESS) break;
        s->nbatch = (int64_t)(s->ntok / bt);
        s->first = d->epoch_batches;
        d->epoch_batches += s->nbatch;
        if (s->ntok > most) most = s->ntok;
        if (s->nbatch > maxb) maxb = s->nbatch;
    }
    if (r == SC_SUCCESS && d->epoch_batches == 0)
        r = sc__fail(SC_ERROR_INVALID_ARGS, "no shard matching '%s' holds one batch of B*T = %llu tokens (the largest holds"
                     " %llu)", pattern, (unsigned long long)bt, (unsigned long long)most);
    if (r == SC_SUCCESS && d->shuffle && !(d->perm = (int64_t *)SC_MALLOC((size_t)maxb * sizeof *d->perm)))
        r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "sc_data_open: out of memory for a shuffle of %lld batches", (long long)maxb);
    if (r != SC_SUCCESS) { sc_data_close(d); return r; }
    *out = d;
    return SC_SUCCESS;
}

/* Fisher-Yates over shard s's batches, seeded from (seed, epoch, s): the same on every rank
   and after any seek. */
static void sc__data_permute(sc_data *d, int64_t epoch, int s)
{
    if (d->perm_shard == s && d->perm_epoch == epoch) return;
    int64_t n = d->sh[s].nbatch, *p = d->perm;
    for (int64_t i = 0; i < n; i++) p[i] = i;
    uint64_t h = sc__data_hash_u64(sc__data_hash_u64(sc__data_hash_u64(0, d->seed), (uint64_t)epoch), (uint64_t)s);
    sc_rng rng = sc_rng_seed(h);
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(sc_rng_u64(&rng) % (uint64_t)(i + 1)), t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    d->perm_epoch = epoch;
    d->perm_shard = s;
}

SCDEF sc_result sc_data_next(sc_data *d, int32_t *ids)
{
    if (!d || !ids) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_data_next: NULL argument");
    int64_t g = d->pos + d->rank, epoch = g / d->epoch_batches, k = g % d->epoch_batches;
    int lo = 0, hi = d->n - 1;
    while (lo < hi) { /* the last shard whose first batch is <= k: it has k (empty shards share `first` with the next) */
        int mid = lo + (hi - lo + 1) / 2;
        if (d->sh[mid].first <= k) lo = mid;
        else hi = mid - 1;
    }
    const sc__shard *s = &d->sh[lo];
    int64_t j = k - s->first;
    if (d->shuffle) {
        sc__data_permute(d, epoch, lo);
        j = d->perm[j];
    }
    uint64_t bt = (uint64_t)d->B * (uint64_t)d->T, base = (uint64_t)j * bt;
    uint32_t limit = d->vocab_size > 0 ? (uint32_t)d->vocab_size - 1 : (uint32_t)INT32_MAX, bad = 0;
    for (uint64_t i = 0; i < bt; i++) {
        uint32_t v = sc__data_tok(s, base + i);
        bad |= v > limit;
        ids[i] = (int32_t)(v & 0x7fffffffu);
    }
    if (bad) /* only without vocab_size (open checked the rest): a negative or huge token */
        for (uint64_t i = 0; i < bt; i++) {
            uint32_t v = sc__data_tok(s, base + i);
            if (v > limit)
                return sc__fail(SC_ERROR_RANGE, "file '%s': token at position %llu is %s%u", s->path,
                                (unsigned long long)(base + i), s->is_signed ? "negative: -" : "beyond int32: ",
                                s->is_signed ? 0u - v : v);
        }
    d->pos += d->world;
    return SC_SUCCESS;
}

SCDEF int64_t sc_data_position(const sc_data *d) { return d ? d->pos : 0; }

SCDEF sc_result sc_data_seek(sc_data *d, int64_t position)
{
    if (!d || position < 0 || position > INT64_MAX / 2) /* room for next()'s pos + rank and pos += world */
        return sc__fail(SC_ERROR_INVALID_ARGS, "sc_data_seek: position %lld", (long long)position);
    d->pos = position; /* next() derives epoch, shard and permutation from it */
    return SC_SUCCESS;
}

SCDEF int64_t sc_data_epoch_batches(const sc_data *d) { return d ? d->epoch_batches : 0; }
SCDEF int sc_data_shard_count(const sc_data *d) { return d ? d->n : 0; }
SCDEF const char *sc_data_shard_name(const sc_data *d, int i) { return d && i >= 0 && i < d->n ? d->sh[i].path : NULL; }
SCDEF uint64_t sc_data_shard_tokens(const sc_data *d, int i) { return d && i >= 0 && i < d->n ? d->sh[i].ntok : 0; }

SCDEF uint64_t sc_data_hash(const sc_data *d)
{
    if (!d) return 0;
    uint64_t h = sc__data_hash_u64(0, (uint64_t)d->n);
    for (int i = 0; i < d->n; i++) {
        const char *name = strrchr(d->sh[i].path, '/');
        name = name ? name + 1 : d->sh[i].path;
        h = sc_hash_bytes(h, name, strlen(name) + 1);
        h = sc__data_hash_u64(h, d->sh[i].ntok);
    }
    h = sc__data_hash_u64(h, (uint64_t)d->B);
    h = sc__data_hash_u64(h, (uint64_t)d->T);
    h = sc__data_hash_u64(h, (uint64_t)d->shuffle);
    return sc__data_hash_u64(h, d->shuffle ? d->seed : 0);
}

SCDEF sc_result sc_data_write_shard(const char *path, const int32_t *tokens, size_t n, int force_u32)
{
    if (!path || (!tokens && n)) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_data_write_shard: NULL argument");
    if (n > (size_t)INT32_MAX)
        return sc__fail(SC_ERROR_INVALID_ARGS, "file '%s': %zu tokens; a shard's header counts at most 2^31-1", path, n);
    int wide = force_u32 != 0;
    for (size_t i = 0; i < n; i++) {
        if (tokens[i] < 0) return sc__fail(SC_ERROR_RANGE, "file '%s': token %zu is negative (%d)", path, i, tokens[i]);
        if (tokens[i] > 65535) wide = 1;
    }
    unsigned char buf[4096];
    memset(buf, 0, SC__SHARD_HEADER);
    uint32_t head[3] = {(uint32_t)(wide ? SC__SHARD_MAGIC32 : SC__SHARD_MAGIC16), 1, (uint32_t)n};
    for (int f = 0; f < 3; f++)
        for (int k = 0; k < 4; k++) buf[4 * f + k] = (unsigned char)(head[f] >> (8 * k));
    FILE *fp;
    char *tmp;
    sc_result r = sc__tmp_open(path, &fp, &tmp);
    if (r != SC_SUCCESS) return r;
    fwrite(buf, 1, SC__SHARD_HEADER, fp);
    int w = wide ? 4 : 2;
    for (size_t i = 0; i < n;) {
        size_t m = 0;
        for (; i < n && m + (size_t)w <= sizeof buf; i++)
            for (int k = 0; k < w; k++) buf[m++] = (unsigned char)((uint32_t)tokens[i] >> (8 * k));
        fwrite(buf, 1, m, fp);
    }
    return sc__tmp_commit(path, fp, tmp, r);
}
/* ==========================================================================================
   CPU reference ops
   ========================================================================================== */

/* Dot product with 8 fixed partial sums: vectorisable, and the same order on every call. */
static float sc__dot(const float *a, const float *b, int n)
{
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += a[i + k] * b[i + k];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

SCDEF void sc_cpu_embedding_forward(float *out, const int32_t *ids, const float *wte, int N, int C)
{
    SC__OMP(omp parallel for)
    for (int n = 0; n < N; n++) memcpy(out + (size_t)n * C, wte + (size_t)ids[n] * C, sizeof(float) * C);
}

SCDEF void sc_cpu_embedding_backward(float *dwte, const float *dout, const int32_t *ids, int N, int C)
{
    /* split by column blocks; every row's contributions land in token order */
    SC__OMP(omp parallel for)
    for (int c0 = 0; c0 < C; c0 += 64) {
        int c1 = c0 + 64 < C ? c0 + 64 : C;
        for (int n = 0; n < N; n++) {
            float *d = dwte + (size_t)ids[n] * C;
            const float *g = dout + (size_t)n * C;
            for (int c = c0; c < c1; c++) d[c] += g[c];
        }
    }
}

static void sc__rmsnorm_row(float *out, float *rstd, const float *x, const float *w, int C, float eps)
{
    float ss = sc__dot(x, x, C);
    float r = 1.0f / sqrtf(ss / (float)C + eps);
    for (int c = 0; c < C; c++) out[c] = (x[c] * r) * w[c];
    *rstd = r;
}

SCDEF void sc_cpu_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w, int N, int C, float eps)
{
    SC__OMP(omp parallel for)
    for (int n = 0; n < N; n++)
        sc__rmsnorm_row(out + (size_t)n * C, rstd + n, inp + (size_t)n * C, w, C, eps);
}

SCDEF void sc_cpu_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                                   const float *rstd, int N, int C)
{
    /* y = x * r * w, r = (mean(x^2) + eps)^-1/2:
       dx = r * (dy*w) - x * r^3 / C * sum(dy*w*x);  dw += sum_n dy * x * r */
    SC__OMP(omp parallel for)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
        float *dx = dinp + (size_t)n * C, r = rstd[n], dot = 0.0f;
        for (int c = 0; c < C; c++) dot += dy[c] * w[c] * x[c];
        float k = dot * r * r * r / (float)C;
        for (int c = 0; c < C; c++) dx[c] += dy[c] * w[c] * r - x[c] * k;
    }
    SC__OMP(omp parallel for)
    for (int c = 0; c < C; c++) {
        float s = 0.0f;
        for (int n = 0; n < N; n++) s += dout[(size_t)n * C + c] * inp[(size_t)n * C + c] * rstd[n];
        dw[c] += s;
    }
}

SCDEF void sc_cpu_add_forward(float *out, const float *a, const float *b, size_t n)
{
    SC__OMP(omp parallel for)
    for (long long i = 0; i < (long long)n; i++) out[i] = a[i] + b[i];
}

SCDEF void sc_cpu_add_rmsnorm_forward(float *res, float *out, float *rstd, const float *a, const float *b,
                                      const float *w, int N, int C, float eps)
{
    /* norm of the stored sum, by the same row function as rmsnorm_forward: a replay of the
       norm alone from `res` gives the same bits */
    SC__OMP(omp parallel for)
    for (int n = 0; n < N; n++) {
        size_t o = (size_t)n * C;
        for (int c = 0; c < C; c++) res[o + c] = a[o + c] + b[o + c];
        sc__rmsnorm_row(out + o, rstd + n, res + o, w, C, eps);
    }
}

/* ---- CPU matmuls: register-blocked, vectorised, multithreaded GEMM with a fixed summation order ----
   C[M,Nn] = (or +=) sum_k A(m,k) B(k,n), with A(m,k) = a[m*am + k*ak] where ak == 1 (rows of A contiguous in k)
   or am == 1 (columns contiguous), and B(k,n) = b[k*bk + n*bn] where bn == 1 (rows of B read in place) or bk == 1
   (B^T stored: each thread packs it block by block, transposed).
   Order: every element of C is ONE chain over k = 0, 1, ..., K-1 in that order, started from 0 (C =) or from C's
   old value (C +=): acc = fma(A, B, acc) on the AVX-512 and AVX2 paths (which therefore give the same bits), and
   acc = acc + A*B, two roundings, on the scalar path. A block of k stores the partial sum in C and the next block
   reloads it, which is exact; a bias is added to the finished sum. So an element's bits depend neither on the tiling
   nor on the thread count nor on which thread computes it, only on the ISA path: deterministic per path. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SC__MM_X86 1
#include <immintrin.h>
#else
#define SC__MM_X86 0
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#define SC__MM_KC 256 /* k per block: B's block (KC x NC) stays in L2 while A's tiles sweep over it */
#define SC__MM_NC 256
#define SC__MM_MRMAX 6

typedef void (*sc__mm_kernel)(int kc, const float *a, ptrdiff_t am, ptrdiff_t ak, const float *b, ptrdiff_t ldb,
                              float *c, ptrdiff_t ldc, int mr, int nr, int load, const float *bias);

/* scalar: 4 x 16, separate multiply and add */
static void sc__mmk_scalar(int kc, const float *a, ptrdiff_t am, ptrdiff_t ak, const float *b, ptrdiff_t ldb,
                           float *c, ptrdiff_t ldc, int mr, int nr, int load, const float *bias)
{
    float acc[4][16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 16; j++) acc[i][j] = load && i < mr && j < nr ? c[i * ldc + j] : 0.0f;
    if (nr == 16) {
        for (int k = 0; k < kc; k++)
            for (int i = 0; i < 4; i++) {
                float x = a[i * am + k * ak];
                for (int j = 0; j < 16; j++) acc[i][j] += x * b[k * ldb + j];
            }
    } else {
        for (int k = 0; k < kc; k++)
            for (int i = 0; i < 4; i++) {
                float x = a[i * am + k * ak];
                for (int j = 0; j < nr; j++) acc[i][j] += x * b[k * ldb + j];
            }
    }
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) c[i * ldc + j] = bias ? acc[i][j] + bias[j] : acc[i][j];
}

#if SC__MM_X86
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define SC__MM512 __attribute__((target("avx512f")))
#define SC__MM256 __attribute__((target("avx2,fma")))
#define SC__MMINL static inline __attribute__((always_inline))

/* AVX-512: 6 rows x 64 columns (24 accumulators); the last columns by masks */
SC__MM512 SC__MMINL void sc__mmk512_body(int kc, const float *a, ptrdiff_t am, ptrdiff_t ak, const float *b,
                                          ptrdiff_t ldb, float *c, ptrdiff_t ldc, int mr, int nr, int load,
                                          const float *bias, int rows)
{
    __mmask16 mk[4];
    __m512 acc[6][4];
    for (int v = 0; v < 4; v++) {
        int r = nr - 16 * v;
        r = r < 0 ? 0 : r > 16 ? 16 : r;
        mk[v] = (__mmask16)((1u << r) - 1u);
    }
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            acc[i][v] = load && i < mr ? _mm512_maskz_loadu_ps(mk[v], c + i * ldc + 16 * v) : _mm512_setzero_ps();
    for (int k = 0; k < kc; k++) {
        const float *bp = b + k * ldb;
        __m512 b0 = _mm512_maskz_loadu_ps(mk[0], bp), b1 = _mm512_maskz_loadu_ps(mk[1], bp + 16);
        __m512 b2 = _mm512_maskz_loadu_ps(mk[2], bp + 32), b3 = _mm512_maskz_loadu_ps(mk[3], bp + 48);
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            __m512 x = _mm512_set1_ps(rows ? a[i * am + k] : a[k * ak + i]);
            acc[i][0] = _mm512_fmadd_ps(x, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(x, b1, acc[i][1]);
            acc[i][2] = _mm512_fmadd_ps(x, b2, acc[i][2]);
            acc[i][3] = _mm512_fmadd_ps(x, b3, acc[i][3]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            if (i < mr) {
                __m512 r = acc[i][v];
                if (bias) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mk[v], bias + 16 * v));
                _mm512_mask_storeu_ps(c + i * ldc + 16 * v, mk[v], r);
            }
}

SC__MM512 static void sc__mmk_avx512(int kc, const float *a, ptrdiff_t am, ptrdiff_t ak, const float *b,
                                     ptrdiff_t ldb, float *c, ptrdiff_t ldc, int mr, int nr, int load,
                                     const float *bias)
{
    if (ak == 1) sc__mmk512_body(kc, a, am, 1, b, ldb, c, ldc, mr, nr, load, bias, 1);
    else sc__mmk512_body(kc, a, 1, ak, b, ldb, c, ldc, mr, nr, load, bias, 0);
}

/* AVX2 + FMA: 6 rows x 16 columns (12 accumulators); the last columns by masked loads */
SC__MM256 SC__MMINL void sc__mmk256_body(int kc, const float *a, ptrdiff_t am, ptrdiff_t ak, const float *b,
                                          ptrdiff_t ldb, float *c, ptrdiff_t ldc, int mr, int nr, int load,
                                          const float *bias, int rows, int full)
{
    __m256i mk[2];
    __m256 acc[6][2];
    for (int v = 0; v < 2; v++) {
        __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        mk[v] = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr - 8 * v), lane);
    }
#define SC__LD8(p, v) (full ? _mm256_loadu_ps(p) : _mm256_maskload_ps((p), mk[v]))
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
#pragma GCC unroll 2
        for (int v = 0; v < 2; v++) acc[i][v] = load && i < mr ? SC__LD8(c + i * ldc + 8 * v, v) : _mm256_setzero_ps();
    for (int k = 0; k < kc; k++) {
        const float *bp = b + k * ldb;
        __m256 b0 = SC__LD8(bp, 0), b1 = SC__LD8(bp + 8, 1);
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            __m256 x = _mm256_set1_ps(rows ? a[i * am + k] : a[k * ak + i]);
            acc[i][0] = _mm256_fmadd_ps(x, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(x, b1, acc[i][1]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++)
#pragma GCC unroll 2
        for (int v = 0; v < 2; v++)
            if (i < mr) {
                __m256 r = acc[i][v];
                if (bias) r = _mm256_add_ps(r, SC__LD8(bias + 8 * v, v));
                if (full) _mm256_storeu_ps(c + i * ldc + 8 * v, r);
                else _mm256_maskstore_ps(c + i * ldc + 8 * v, mk[v], r);
            }
#undef SC__LD8
}

SC__MM256 static void sc__mmk_avx2(int kc, const float *a, ptrdiff_t am, ptrdiff_t ak, const float *b,
                                   ptrdiff_t ldb, float *c, ptrdiff_t ldc, int mr, int nr, int load,
                                   const float *bias)
{
    if (nr == 16) {
        if (ak == 1) sc__mmk256_body(kc, a, am, 1, b, ldb, c, ldc, mr, 16, load, bias, 1, 1);
        else sc__mmk256_body(kc, a, 1, ak, b, ldb, c, ldc, mr, 16, load, bias, 0, 1);
    } else {
        if (ak == 1) sc__mmk256_body(kc, a, am, 1, b, ldb, c, ldc, mr, nr, load, bias, 1, 0);
        else sc__mmk256_body(kc, a, 1, ak, b, ldb, c, ldc, mr, nr, load, bias, 0, 0);
    }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif /* SC__MM_X86 */

/* ---- dispatch: chosen once (0: not yet, 1: scalar, 2: avx2 + fma, 3: avx512) ---- */
static int sc__mm_path;

static int sc__mm_best(void)
{
#if SC__MM_X86
    if (__builtin_cpu_supports("avx512f")) return 3;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 2;
#endif
    return 1;
}

static int sc__mm_pick(void)
{
    int path = __atomic_load_n(&sc__mm_path, __ATOMIC_RELAXED);
    if (!path) __atomic_store_n(&sc__mm_path, path = sc__mm_best(), __ATOMIC_RELAXED);
    return path;
}

/* The run-time ISA paths (matmuls and the host optimizer): 3 AVX-512, 2 AVX2, 1 scalar. */
static const char *sc__isa_name(int path) { return path == 3 ? "avx512" : path == 2 ? "avx2" : "scalar"; }
SCDEF const char *sc_cpu_matmul_isa(void) { return sc__isa_name(sc__mm_pick()); }

#ifdef SLIDECHECK_TESTING
/* A test hook's ISA name as a path (NULL: the best one); 0 when unknown. */
static int sc__isa_code(const char *isa, int best)
{
    return !isa ? best : !strcmp(isa, "avx512") ? 3 : !strcmp(isa, "avx2") ? 2 : !strcmp(isa, "scalar") ? 1 : 0;
}

SCDEF int sc__cpu_matmul_force(const char *isa)
{
    int want = sc__isa_code(isa, sc__mm_best());
    if (!want || want > sc__mm_best()) return 0;
    __atomic_store_n(&sc__mm_path, want, __ATOMIC_RELAXED);
    return 1;
}
#endif

typedef struct sc__gemm {
    int M, N, K;
    const float *a;
    ptrdiff_t am, ak;
    const float *b;
    ptrdiff_t bk, bn;
    float *c;
    ptrdiff_t ldc;
    int acc;           /* 1: C +=, 0: C = */
    const float *bias; /* [N], added to the finished sums */
} sc__gemm;

/* One task: rows [m0, m1) x columns [n0, n1) of C, all of k. bpack: KC x NC floats (bk == 1 only). */
static void sc__gemm_task(const sc__gemm *g, sc__mm_kernel kern, int MR, int NR, int m0, int m1, int n0, int n1,
                          int kc0, float *bpack, float *apack)
{
    for (int k0 = 0; k0 < g->K || k0 == 0; k0 += kc0) {
        int kc = g->K - k0 < kc0 ? g->K - k0 : kc0, load = g->acc || k0 > 0, last = k0 + kc >= g->K;
        const float *bb;
        ptrdiff_t ldb;
        if (g->bn == 1) {
            bb = g->b + (ptrdiff_t)k0 * g->bk + n0;
            ldb = g->bk;
        } else {
            /* pack B(k0.., n0..) = b[n*bn + k] as rows of k, transposed in 8 x 8 blocks */
            int nw = n1 - n0;
            ldb = (nw + 15) & ~15;
            for (int j0 = 0; j0 < nw; j0 += 8)
                for (int q0 = 0; q0 < kc; q0 += 8) {
                    int je = j0 + 8 < nw ? j0 + 8 : nw, qe = q0 + 8 < kc ? q0 + 8 : kc;
                    for (int j = j0; j < je; j++) {
                        const float *src = g->b + (ptrdiff_t)(n0 + j) * g->bn + k0;
                        for (int q = q0; q < qe; q++) bpack[(ptrdiff_t)q * ldb + j] = src[q];
                    }
                }
            bb = bpack;
        }
        for (int m = m0; m < m1; m += MR) {
            int mr = m1 - m < MR ? m1 - m : MR;
            const float *a = g->a + (ptrdiff_t)m * g->am + (ptrdiff_t)k0 * g->ak;
            ptrdiff_t am = g->am, ak = g->ak;
            if (mr < MR) { /* the last rows: a copy padded with zero rows, so the kernel reads only what exists */
                for (int i = 0; i < MR; i++)
                    for (int q = 0; q < kc; q++) apack[i * kc + q] = i < mr ? a[i * am + q * ak] : 0.0f;
                a = apack, am = kc, ak = 1;
            }
            for (int n = n0; n < n1; n += NR) {
                int nr = n1 - n < NR ? n1 - n : NR;
                kern(kc, a, am, ak, bb + (n - n0), ldb, g->c + (ptrdiff_t)m * g->ldc + n, g->ldc, mr, nr, load,
                     last && g->bias ? g->bias + n : NULL);
            }
        }
        if (g->K == 0) break;
    }
}

/* the kernel and the blocking of one product */
typedef struct sc__mm_plan {
    sc__mm_kernel kern;
    int MR, NR, kc0, nc, nnb;
} sc__mm_plan;

static sc__mm_plan sc__mm_plan_make(const sc__gemm *g)
{
    sc__mm_plan p = {sc__mmk_scalar, 4, 16, 0, 0, 0};
    int path = sc__mm_pick();
#if SC__MM_X86
    if (path == 3) p.kern = sc__mmk_avx512, p.MR = 6, p.NR = 64;
    else if (path == 2) p.kern = sc__mmk_avx2, p.MR = 6, p.NR = 16;
#endif
    (void)path;
    /* k in nearly equal blocks of at most KC; columns in blocks of at most NC, multiples of NR */
    int nkb = (g->K + SC__MM_KC - 1) / SC__MM_KC, nnb = (g->N + SC__MM_NC - 1) / SC__MM_NC;
    p.kc0 = nkb > 0 ? (g->K + nkb - 1) / nkb : 0;
    p.nc = ((g->N + nnb - 1) / nnb + p.NR - 1) / p.NR * p.NR;
    p.nnb = (g->N + p.nc - 1) / p.nc;
    return p;
}

/* the whole product on the calling thread; bpack: KC x NC floats when bk == 1 */
static void sc__gemm_serial(const sc__gemm *g, float *apack, float *bpack)
{
    if (g->M <= 0 || g->N <= 0) return;
    sc__mm_plan p = sc__mm_plan_make(g);
    for (int nb = 0; nb < p.nnb; nb++) {
        int n0 = nb * p.nc, n1 = n0 + p.nc < g->N ? n0 + p.nc : g->N;
        sc__gemm_task(g, p.kern, p.MR, p.NR, 0, g->M, n0, n1, p.kc0, bpack, apack);
    }
}

static void sc__gemm_run(const sc__gemm *g)
{
    if (g->M <= 0 || g->N <= 0) return;
    sc__mm_plan p = sc__mm_plan_make(g);
    int MR = p.MR, NR = p.NR, kc0 = p.kc0, nc = p.nc, nnb = p.nnb;
    sc__mm_kernel kern = p.kern;
    int mt = (g->M + MR - 1) / MR, P = 1;
#ifdef _OPENMP
    P = omp_get_max_threads();
    if (2.0 * g->M * g->N * (double)g->K < 2e5) P = 1;
#endif
    /* row chunks: one per thread, at least ~96 rows each (a packed B block is then used often enough) */
    int mch = g->M / 96 < P ? g->M / 96 : P;
    if (mch < 1) mch = 1;
    if (mch > mt) mch = mt;
    int ntask = mch * nnb;
    size_t bsz = g->bn == 1 ? 0 : (size_t)(kc0 > 0 ? kc0 : 1) * (size_t)((nc + 15) & ~15);
    (void)P;
    SC__OMP(omp parallel num_threads(P) if (P > 1 && ntask > 1))
    {
        float apack[SC__MM_MRMAX * SC__MM_KC], bsmall[32 * SC__MM_NC];
        float *bpack = bsz ? (float *)SC_MALLOC(sizeof(float) * bsz) : NULL, *bp = bpack;
        int kcb = kc0;
        if (bsz && !bpack) bp = bsmall, kcb = kc0 < 32 ? kc0 : 32; /* no memory: shorter k blocks, same sums */
        SC__OMP(omp for schedule(static))
        for (int t = 0; t < ntask; t++) {
            int ci = t / nnb, nb = t % nnb;
            int m0 = (int)((long long)mt * ci / mch) * MR, m1 = (int)((long long)mt * (ci + 1) / mch) * MR;
            int n0 = nb * nc, n1 = n0 + nc < g->N ? n0 + nc : g->N;
            if (m1 > g->M) m1 = g->M;
            sc__gemm_task(g, kern, MR, NR, m0, m1, n0, n1, kcb, bp, apack);
        }
        SC_FREE(bpack);
    }
}

SCDEF void sc_cpu_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int N, int IC, int OC)
{
    sc__gemm g = {N, OC, IC, inp, IC, 1, w, 1, IC, out, OC, 0, bias};
    sc__gemm_run(&g);
}

SCDEF void sc_cpu_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                                  const float *w, int N, int IC, int OC)
{
    if (dinp) { /* dinp[N,IC] = dout[N,OC] @ w[OC,IC] */
        sc__gemm g = {N, IC, OC, dout, OC, 1, w, IC, 1, dinp, IC, 0, NULL};
        sc__gemm_run(&g);
    }
    if (dw) { /* dw[OC,IC] += dout^T @ inp: A(o,n) = dout[n*OC + o] */
        sc__gemm g = {OC, IC, N, dout, 1, OC, inp, IC, 1, dw, IC, 1, NULL};
        sc__gemm_run(&g);
    }
    if (dbias) { /* per column, rows summed in order */
        SC__OMP(omp parallel for if (OC >= 512))
        for (int o0 = 0; o0 < OC; o0 += 256) {
            int o1 = o0 + 256 < OC ? o0 + 256 : OC;
            double s[256];
            for (int o = o0; o < o1; o++) s[o - o0] = 0.0;
            for (int n = 0; n < N; n++) {
                const float *g = dout + (size_t)n * OC;
                for (int o = o0; o < o1; o++) s[o - o0] += (double)g[o];
            }
            for (int o = o0; o < o1; o++) dbias[o] += (float)s[o - o0];
        }
    }
}

SCDEF void sc_rope_table(float *cosb, float *sinb, int maxT, int D, double theta)
{
    int half = D / 2;
    for (int i = 0; i < half; i++) {
        /* HF: inv_freq = 1 / base ** (arange(0, D, 2).float() / D), in float32 */
        float inv = (float)(1.0 / pow(theta, (double)(float)((float)(2 * i) / (float)D)));
        for (int t = 0; t < maxT; t++) {
            float f = (float)t * inv; /* float32 product, as HF's position @ inv_freq */
            cosb[(size_t)t * half + i] = (float)cos((double)f);
            sinb[(size_t)t * half + i] = (float)sin((double)f);
        }
    }
}

SCDEF void sc_cpu_qknorm_rope_forward(float *qk, float *rstd, const float *qkv, const float *qnorm_w,
                                      const float *knorm_w, const float *cosb, const float *sinb,
                                      int B, int T, int H, int KV, int D, float eps)
{
    int NH = H + KV, Q = (H + 2 * KV) * D, K = NH * D, half = D / 2;
    SC__OMP(omp parallel for)
    for (int n = 0; n < B * T; n++) {
        int t = n % T;
        const float *cs = cosb + (size_t)t * half, *sn = sinb + (size_t)t * half;
        for (int h = 0; h < NH; h++) {
            const float *x = qkv + (size_t)n * Q + (size_t)h * D;
            float *y = qk + (size_t)n * K + (size_t)h * D;
            float tmp[4096];
            const float *src = x;
            if (qnorm_w) {
                sc__rmsnorm_row(tmp, rstd + (size_t)n * NH + h, x, h < H ? qnorm_w : knorm_w, D, eps);
                src = tmp;
            }
            for (int i = 0; i < half; i++) {
                float a = src[i], b = src[i + half];
                y[i] = a * cs[i] - b * sn[i];
                y[i + half] = b * cs[i] + a * sn[i];
            }
        }
    }
}

SCDEF void sc_cpu_qknorm_rope_backward(float *dqkv, float *dqnorm_w, float *dknorm_w, const float *dqk,
                                       const float *qkv, const float *qnorm_w, const float *knorm_w,
                                       const float *rstd, const float *cosb, const float *sinb,
                                       int B, int T, int H, int KV, int D)
{
    int NH = H + KV, Q = (H + 2 * KV) * D, K = NH * D, half = D / 2, N = B * T;
    /* dy = rope^T(dqk); then the per-head RMSNorm backward */
    SC__OMP(omp parallel for)
    for (int n = 0; n < N; n++) {
        int t = n % T;
        const float *cs = cosb + (size_t)t * half, *sn = sinb + (size_t)t * half;
        for (int h = 0; h < NH; h++) {
            const float *g = dqk + (size_t)n * K + (size_t)h * D;
            float *dx = dqkv + (size_t)n * Q + (size_t)h * D;
            float dy[4096];
            for (int i = 0; i < half; i++) {
                dy[i] = g[i] * cs[i] + g[i + half] * sn[i];
                dy[i + half] = g[i + half] * cs[i] - g[i] * sn[i];
            }
            if (!qnorm_w) {
                memcpy(dx, dy, sizeof(float) * D);
                continue;
            }
            const float *x = qkv + (size_t)n * Q + (size_t)h * D, *w = h < H ? qnorm_w : knorm_w;
            float r = rstd[(size_t)n * NH + h], dot = 0.0f;
            for (int i = 0; i < D; i++) dot += dy[i] * w[i] * x[i];
            float k = dot * r * r * r / (float)D;
            for (int i = 0; i < D; i++) dx[i] = dy[i] * w[i] * r - x[i] * k;
        }
    }
    if (!qnorm_w) return;
    /* weight grads: one thread per (q|k, i), rows and heads summed in a fixed order */
    SC__OMP(omp parallel for)
    for (int j = 0; j < 2 * D; j++) {
        int isk = j >= D, i = j % D, hi = isk ? NH : H, lo = isk ? H : 0;
        int ip = i < half ? i : i - half;
        float s = 0.0f;
        for (int n = 0; n < N; n++) {
            int t = n % T;
            float c = cosb[(size_t)t * half + ip], sv = sinb[(size_t)t * half + ip];
            for (int h = lo; h < hi; h++) {
                const float *g = dqk + (size_t)n * K + (size_t)h * D;
                float dyi = i < half ? g[i] * c + g[i + half] * sv : g[i] * c - g[i - half] * sv;
                s += dyi * qkv[(size_t)n * Q + (size_t)h * D + i] * rstd[(size_t)n * NH + h];
            }
        }
        (isk ? dknorm_w : dqnorm_w)[i] += s;
    }
}

/* Attention by rows and dot products: only when the blocked versions below cannot get their scratch memory. */
static void sc__attention_forward_ref(float *out, float *lse, const float *qk, const float *qkv, int B, int T,
                                      int H, int KV, int D)
{
    int K = (H + KV) * D, Q = (H + 2 * KV) * D, G = H / KV;
    float scale = 1.0f / sqrtf((float)D);
    SC__OMP(omp parallel for collapse(2))
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            float *s = (float *)SC_MALLOC(sizeof(float) * (size_t)T);
            int kh = h / G;
            for (int i = 0; i < T; i++) {
                const float *q = qk + ((size_t)b * T + i) * K + (size_t)h * D;
                float mx = -INFINITY, sum = 0.0f;
                for (int j = 0; j <= i; j++) {
                    s[j] = sc__dot(q, qk + ((size_t)b * T + j) * K + (size_t)(H + kh) * D, D) * scale;
                    if (s[j] > mx) mx = s[j];
                }
                for (int j = 0; j <= i; j++) { s[j] = expf(s[j] - mx); sum += s[j]; }
                float *o = out + ((size_t)b * T + i) * H * D + (size_t)h * D, inv = 1.0f / sum;
                for (int d = 0; d < D; d++) o[d] = 0.0f;
                for (int j = 0; j <= i; j++) {
                    const float *v = qkv + ((size_t)b * T + j) * Q + K + (size_t)kh * D;
                    float p = s[j] * inv;
                    for (int d = 0; d < D; d++) o[d] += p * v[d];
                }
                lse[((size_t)b * H + h) * T + i] = mx + logf(sum);
            }
            SC_FREE(s);
        }
}

static void sc__attention_backward_ref(float *dqk, float *dqkv, const float *dout, const float *qk,
                                       const float *qkv, const float *out, const float *lse,
                                       int B, int T, int H, int KV, int D)
{
    int K = (H + KV) * D, Q = (H + 2 * KV) * D, G = H / KV, HD = H * D;
    float scale = 1.0f / sqrtf((float)D);
    /* one thread per (batch, kv head): it owns dk and dv of that head, and dq of its group */
    SC__OMP(omp parallel for collapse(2))
    for (int b = 0; b < B; b++)
        for (int kh = 0; kh < KV; kh++) {
            for (int j = 0; j < T; j++) {
                memset(dqk + ((size_t)b * T + j) * K + (size_t)(H + kh) * D, 0, sizeof(float) * D);
                memset(dqkv + ((size_t)b * T + j) * Q + K + (size_t)kh * D, 0, sizeof(float) * D);
            }
            float *p = (float *)SC_MALLOC(sizeof(float) * (size_t)T * 2), *ds = p + T;
            for (int h = kh * G; h < (kh + 1) * G; h++)
                for (int i = 0; i < T; i++) {
                    size_t row = (size_t)b * T + i;
                    const float *q = qk + row * K + (size_t)h * D, *go = dout + row * HD + (size_t)h * D;
                    float L = lse[((size_t)b * H + h) * T + i];
                    float Di = sc__dot(go, out + row * HD + (size_t)h * D, D);
                    for (int j = 0; j <= i; j++) {
                        size_t rj = (size_t)b * T + j;
                        p[j] = expf(sc__dot(q, qk + rj * K + (size_t)(H + kh) * D, D) * scale - L);
                        float dp = sc__dot(go, qkv + rj * Q + K + (size_t)kh * D, D);
                        ds[j] = p[j] * (dp - Di) * scale;
                    }
                    float *dq = dqk + row * K + (size_t)h * D;
                    for (int d = 0; d < D; d++) dq[d] = 0.0f;
                    for (int j = 0; j <= i; j++) {
                        size_t rj = (size_t)b * T + j;
                        const float *kj = qk + rj * K + (size_t)(H + kh) * D;
                        float *dk = dqk + rj * K + (size_t)(H + kh) * D;
                        float *dv = dqkv + rj * Q + K + (size_t)kh * D;
                        for (int d = 0; d < D; d++) {
                            dq[d] += ds[j] * kj[d];
                            dk[d] += ds[j] * q[d];
                            dv[d] += p[j] * go[d];
                        }
                    }
                }
            SC_FREE(p);
        }
}

/* Attention in blocks of RB query rows by the matmul kernels (so on the matmul ISA path, one fixed chain per element,
   whatever the thread count): per (batch, head) S = Q K^T over the keys 0 .. (last row of the block), the masked
   softmax on S, then O = P V; backward per (batch, kv head) dQ = dS K, and dK += dS^T Q, dV += P^T dO over the group's
   heads and the row blocks in order. K^T and V^T are transposed once per (batch, kv head). */
#define SC__ATT_RB 48 /* a multiple of every kernel's MR */

static void sc__transpose_rows(float *dst, const float *src, ptrdiff_t ld, int T, int D)
{
    for (int j0 = 0; j0 < T; j0 += 16) {
        int j1 = j0 + 16 < T ? j0 + 16 : T;
        for (int d = 0; d < D; d++)
            for (int j = j0; j < j1; j++) dst[(size_t)d * T + j] = src[(ptrdiff_t)j * ld + d];
    }
}

SCDEF void sc_cpu_attention_forward(float *out, float *lse, const float *qk, const float *qkv,
                                    int B, int T, int H, int KV, int D)
{
    int K = (H + KV) * D, Q = (H + 2 * KV) * D, G = H / KV, HD = H * D, fail = 0;
    float scale = 1.0f / sqrtf((float)D);
    sc__mm_pick(); /* choose the path before the threads start */
    SC__OMP(omp parallel for collapse(2) schedule(static) reduction(|| : fail))
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            int kh = h / G;
            float *kt = (float *)SC_MALLOC(sizeof(float) * ((size_t)D * T + (size_t)SC__ATT_RB * T)), *s;
            float apack[SC__MM_MRMAX * SC__MM_KC];
            if (!kt) { fail = 1; continue; }
            s = kt + (size_t)D * T;
            sc__transpose_rows(kt, qk + (size_t)b * T * K + (size_t)(H + kh) * D, K, T, D);
            const float *v = qkv + (size_t)b * T * Q + K + (size_t)kh * D;
            for (int i0 = 0; i0 < T; i0 += SC__ATT_RB) {
                int rb = T - i0 < SC__ATT_RB ? T - i0 : SC__ATT_RB, jn = i0 + rb; /* keys 0 .. jn-1 */
                sc__gemm gs = {rb, jn, D, qk + ((size_t)b * T + i0) * K + (size_t)h * D, K, 1, kt, T, 1, s, jn, 0, NULL};
                sc__gemm_serial(&gs, apack, NULL);
                for (int r = 0; r < rb; r++) {
                    int i = i0 + r;
                    float *sr = s + (size_t)r * jn, mx = -INFINITY, sum = 0.0f;
                    for (int j = 0; j <= i; j++) {
                        sr[j] *= scale;
                        if (sr[j] > mx) mx = sr[j];
                    }
                    for (int j = 0; j <= i; j++) { sr[j] = expf(sr[j] - mx); sum += sr[j]; }
                    float inv = 1.0f / sum;
                    for (int j = 0; j <= i; j++) sr[j] *= inv;
                    for (int j = i + 1; j < jn; j++) sr[j] = 0.0f;
                    lse[((size_t)b * H + h) * T + i] = mx + logf(sum);
                }
                sc__gemm go = {rb, D, jn, s, jn, 1, v, Q, 1, out + ((size_t)b * T + i0) * HD + (size_t)h * D, HD, 0, NULL};
                sc__gemm_serial(&go, apack, NULL);
            }
            SC_FREE(kt);
        }
    if (fail) sc__attention_forward_ref(out, lse, qk, qkv, B, T, H, KV, D);
}

SCDEF void sc_cpu_attention_backward(float *dqk, float *dqkv, const float *dout, const float *qk,
                                     const float *qkv, const float *out, const float *lse,
                                     int B, int T, int H, int KV, int D)
{
    int K = (H + KV) * D, Q = (H + 2 * KV) * D, G = H / KV, HD = H * D, fail = 0;
    float scale = 1.0f / sqrtf((float)D);
    sc__mm_pick();
    /* one thread per (batch, kv head): it owns dk and dv of that head, and dq of its group */
    SC__OMP(omp parallel for collapse(2) schedule(static) reduction(|| : fail))
    for (int b = 0; b < B; b++)
        for (int kh = 0; kh < KV; kh++) {
            size_t dt = (size_t)D * T, rt = (size_t)SC__ATT_RB * T;
            float *kt = (float *)SC_MALLOC(sizeof(float) * (2 * dt + 2 * rt)), *vt, *p, *ds;
            float apack[SC__MM_MRMAX * SC__MM_KC];
            if (!kt) { fail = 1; continue; }
            vt = kt + dt, p = vt + dt, ds = p + rt;
            const float *kb = qk + (size_t)b * T * K + (size_t)(H + kh) * D;
            float *dk = dqk + (size_t)b * T * K + (size_t)(H + kh) * D, *dv = dqkv + (size_t)b * T * Q + K + (size_t)kh * D;
            sc__transpose_rows(kt, kb, K, T, D);
            sc__transpose_rows(vt, qkv + (size_t)b * T * Q + K + (size_t)kh * D, Q, T, D);
            for (int j = 0; j < T; j++) {
                memset(dk + (size_t)j * K, 0, sizeof(float) * D);
                memset(dv + (size_t)j * Q, 0, sizeof(float) * D);
            }
            for (int h = kh * G; h < (kh + 1) * G; h++)
                for (int i0 = 0; i0 < T; i0 += SC__ATT_RB) {
                    int rb = T - i0 < SC__ATT_RB ? T - i0 : SC__ATT_RB, jn = i0 + rb;
                    size_t row = (size_t)b * T + i0;
                    const float *q = qk + row * K + (size_t)h * D, *go = dout + row * HD + (size_t)h * D;
                    sc__gemm gs = {rb, jn, D, q, K, 1, kt, T, 1, p, jn, 0, NULL};   /* S */
                    sc__gemm gp = {rb, jn, D, go, HD, 1, vt, T, 1, ds, jn, 0, NULL}; /* dP = dO V^T */
                    sc__gemm_serial(&gs, apack, NULL);
                    sc__gemm_serial(&gp, apack, NULL);
                    for (int r = 0; r < rb; r++) {
                        int i = i0 + r;
                        float L = lse[((size_t)b * H + h) * T + i];
                        float *pr = p + (size_t)r * jn, *dr = ds + (size_t)r * jn;
                        double sp = 0.0, spd = 0.0;
                        for (int j = 0; j <= i; j++) {
                            pr[j] = expf(pr[j] * scale - L);
                            sp += (double)pr[j];
                            spd += (double)pr[j] * (double)dr[j];
                        }
                        float Di = (float)(spd / sp);
                        for (int j = 0; j <= i; j++) dr[j] = pr[j] * (dr[j] - Di) * scale;
                        for (int j = i + 1; j < jn; j++) pr[j] = dr[j] = 0.0f;
                    }
                    sc__gemm gq = {rb, D, jn, ds, jn, 1, kb, K, 1, dqk + row * K + (size_t)h * D, K, 0, NULL}; /* dQ = dS K */
                    sc__gemm gk = {jn, D, rb, ds, 1, jn, q, K, 1, dk, K, 1, NULL};  /* dK += dS^T Q */
                    sc__gemm gv = {jn, D, rb, p, 1, jn, go, HD, 1, dv, Q, 1, NULL}; /* dV += P^T dO */
                    sc__gemm_serial(&gq, apack, NULL);
                    sc__gemm_serial(&gk, apack, NULL);
                    sc__gemm_serial(&gv, apack, NULL);
                }
            SC_FREE(kt);
        }
    if (fail) sc__attention_backward_ref(dqk, dqkv, dout, qk, qkv, out, lse, B, T, H, KV, D);
}

static float sc__silu(float x) { return x / (1.0f + expf(-x)); }

SCDEF void sc_cpu_swiglu_forward(float *m, const float *gu, int N, int I)
{
    SC__OMP(omp parallel for)
    for (int n = 0; n < N; n++) {
        const float *g = gu + (size_t)n * 2 * I, *u = g + I;
        for (int i = 0; i < I; i++) m[(size_t)n * I + i] = sc__silu(g[i]) * u[i];
    }
}

SCDEF void sc_cpu_swiglu_backward(float *dgu, const float *dm, const float *gu, int N, int I)
{
    SC__OMP(omp parallel for)
    for (int n = 0; n < N; n++) {
        const float *g = gu + (size_t)n * 2 * I, *u = g + I, *d = dm + (size_t)n * I;
        float *dg = dgu + (size_t)n * 2 * I, *du = dg + I;
        for (int i = 0; i < I; i++) {
            float sg = 1.0f / (1.0f + expf(-g[i]));
            float s = g[i] * sg;
            du[i] = d[i] * s;
            dg[i] = d[i] * u[i] * sg * (1.0f + g[i] * (1.0f - sg));
        }
    }
}

SCDEF void sc_cpu_swiglu_backward_remat(float *dgu, float *m, const float *dm, const float *gu, int N, int I)
{
    sc_cpu_swiglu_backward(dgu, dm, gu, N, I);
    sc_cpu_swiglu_forward(m, gu, N, I);
}

SCDEF void sc_cpu_crossentropy_forward_backward(float *dlogits, float *rowloss, const float *logits,
                                                const int32_t *target, int n, int V, float scale)
{
    SC__OMP(omp parallel for)
    for (int r = 0; r < n; r++) {
        const float *l = logits + (size_t)r * V;
        float *d = dlogits + (size_t)r * V;
        if (target[r] < 0) {
            rowloss[r] = 0.0f;
            for (int v = 0; v < V; v++) d[v] = 0.0f;
            continue;
        }
        float mx = -INFINITY;
        for (int v = 0; v < V; v++) mx = l[v] > mx ? l[v] : mx;
        double sum = 0.0;
        for (int v = 0; v < V; v++) sum += exp((double)(l[v] - mx));
        double lse = (double)mx + log(sum);
        rowloss[r] = (float)(lse - (double)l[target[r]]);
        for (int v = 0; v < V; v++) {
            float p = (float)exp((double)l[v] - lse);
            d[v] = (p - (v == target[r] ? 1.0f : 0.0f)) * scale;
        }
    }
}

SCDEF void sc_cpu_crossentropy_slice_stats(float *ms, float *tl, const float *logits, const int32_t *target, int v0,
                                           int n, int Vs)
{
    SC__OMP(omp parallel for)
    for (int r = 0; r < n; r++) {
        const float *l = logits + (size_t)r * Vs;
        float mx = -INFINITY;
        for (int v = 0; v < Vs; v++) mx = l[v] > mx ? l[v] : mx;
        double sum = 0.0;
        for (int v = 0; v < Vs; v++) sum += exp((double)(l[v] - mx));
        if (v0 == 0 || mx > ms[2 * r]) { /* rescale the running sum to the new max */
            double old = v0 == 0 ? 0.0 : (double)ms[2 * r + 1] * exp((double)ms[2 * r] - (double)mx);
            ms[2 * r] = mx, ms[2 * r + 1] = (float)(old + sum);
        } else {
            ms[2 * r + 1] = (float)((double)ms[2 * r + 1] + sum * exp((double)mx - (double)ms[2 * r]));
        }
        int t = target[r];
        if (t >= v0 && t < v0 + Vs) tl[r] = l[t - v0];
    }
}

SCDEF void sc_cpu_crossentropy_slice_backward(float *dlogits, float *rowloss, const float *logits, const float *ms,
                                              const float *tl, const int32_t *target, int v0, int n, int Vs,
                                              float scale)
{
    SC__OMP(omp parallel for)
    for (int r = 0; r < n; r++) {
        const float *l = logits + (size_t)r * Vs;
        float *d = dlogits + (size_t)r * Vs;
        int t = target[r];
        double lse = (double)ms[2 * r] + log((double)ms[2 * r + 1]);
        if (v0 == 0) rowloss[r] = t < 0 ? 0.0f : (float)(lse - (double)tl[r]);
        for (int v = 0; v < Vs; v++)
            d[v] = t < 0 ? 0.0f : ((float)exp((double)l[v] - lse) - (v0 + v == t ? 1.0f : 0.0f)) * scale;
    }
}

SCDEF void sc_cpu_accumulate(float *acc, const float *x, size_t n, int first)
{
    SC__OMP(omp parallel for schedule(static))
    for (long long i = 0; i < (long long)n; i++) acc[i] = first ? x[i] : acc[i] + x[i];
}

/* element i of an f32 or bf16 host buffer */
static float sc__ld(const void *p, sc_dtype t, size_t i)
{
    return t == SC_BF16 ? sc_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}
static void sc__st(void *p, sc_dtype t, size_t i, float v)
{
    if (t == SC_BF16) ((uint16_t *)p)[i] = sc_f32_to_bf16(v);
    else ((float *)p)[i] = v;
}
/* ---- host optimizer: scalar path (also the tail of the vector paths), AVX2, AVX-512 ---- */
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SC__OPTIM_X86 1
#include <immintrin.h>
#else
#define SC__OPTIM_X86 0
#endif

/* No a*b+c may become an FMA. gcc in GNU mode (-ffp-contract=fast by default) fuses even _mm*_mul_ps + _mm*_add_ps
   inside a target("avx512f") function, and clang fuses a*b+c within one expression whenever FMA is available (its
   avx512f implies fma), whatever the pragmas say under -ffp-contract=fast. An empty asm that "changes" the product
   hides it from the optimizer, so every product is rounded on its own; it costs no instruction. Elsewhere we rely
   on the compiler not contracting (MSVC does not by default); -ffast-math is not supported. */
#if defined(__GNUC__) && defined(__x86_64__)
#define SC__NOFUSE(x) __asm__("" : "+v"(x))
#elif defined(__GNUC__) && defined(__aarch64__)
#define SC__NOFUSE(x) __asm__("" : "+w"(x))
#else
#define SC__NOFUSE(x) ((void)0)
#endif

static inline float sc__mulf(float a, float b)
{
    float r = a * b;
    SC__NOFUSE(r);
    return r;
}

SCDEF sc_optim_consts sc_optim_consts_make(float lr, float beta1, float beta2, float eps, float weight_decay, int t)
{
    sc_optim_consts c;
    c.lr = lr, c.beta1 = beta1, c.beta2 = beta2, c.eps = eps, c.weight_decay = weight_decay;
    c.decay = 1.0f - sc__mulf(lr, weight_decay);
    c.omb1 = 1.0f - beta1;
    c.omb2 = 1.0f - beta2;
    float bc1 = 1.0f - powf(beta1, (float)t), bc2 = 1.0f - powf(beta2, (float)t);
    c.step = lr / bc1;
    c.bc2s = sqrtf(bc2);
    c.gscale = 1.0f;
    return c;
}

static void sc__adamw_scalar(void *p, void *m, void *v, sc_dtype pt, sc_dtype st, const void *g, sc_dtype gt,
                             uint16_t *wout, size_t i, size_t n, const sc_optim_consts *k)
{
    for (; i < n; i++) {
        float gi = sc__mulf(sc__ld(g, gt, i), k->gscale);
        float pd = sc__mulf(sc__ld(p, pt, i), k->decay);
        float mi = sc__mulf(k->beta1, sc__ld(m, st, i)) + sc__mulf(k->omb1, gi);
        float vi = sc__mulf(k->beta2, sc__ld(v, st, i)) + sc__mulf(sc__mulf(k->omb2, gi), gi);
        sc__st(m, st, i, mi);
        sc__st(v, st, i, vi);
        float pn = pd - sc__mulf(k->step, mi / (sqrtf(vi) / k->bc2s + k->eps)); /* unrounded mi, vi */
        sc__st(p, pt, i, pn);
        if (wout) wout[i] = sc_f32_to_bf16(pn);
    }
}

static void sc__sgd_scalar(void *p, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout, size_t i, size_t n,
                           const sc_optim_consts *k)
{
    for (; i < n; i++) {
        float pi = sc__ld(p, pt, i);
        float pn = pi - sc__mulf(k->lr, sc__mulf(sc__ld(g, gt, i), k->gscale) + sc__mulf(k->weight_decay, pi));
        sc__st(p, pt, i, pn);
        if (wout) wout[i] = sc_f32_to_bf16(pn);
    }
}

/* Software prefetch distance of the AdamW loops' streams, in elements (0: off), and whether slide's pageable host
   state asks for transparent huge pages. Which is faster differs between hosts: on eight H100 and H200 hosts
   (bench/cpu_optim.sh) the prefetch ran 1.00-1.11x the loop without it, huge pages 0.85-1.23x. sc_cpu_optim_tune
   times them on the host at hand. Neither changes a bit of the result. */
#define SC__OPTIM_PF 512
static size_t sc__optim_pf = SC__OPTIM_PF;
static int sc__optim_huge = 1;
static sc_cpu_optim_tuning sc__optim_tuned;

/* ---- vector paths. The bodies take the dtypes as constants (P, G: bf16?, W: wout?) and are always inlined into a
   switch over the 8 combinations, so each combination gets its own branch-free loop. ---- */
#if SC__OPTIM_X86
/* g++ 12 at -O2+ warns inside its own avx512fintrin.h (the "__Y = __Y" of _mm512_undefined_*; GCC PR 105593) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define SC__AVX512 __attribute__((target("avx512f")))
#define SC__AVX2 __attribute__((target("avx2")))
#define SC__INL static inline __attribute__((always_inline))
#define SC__OPTIM_CASES(CALL)                                                                                     \
    switch ((pt == SC_BF16) * 4 + (gt == SC_BF16) * 2 + (wout != NULL)) {                                        \
    case 0: CALL(0, 0, 0); break;                                                                                \
    case 1: CALL(0, 0, 1); break;                                                                                \
    case 2: CALL(0, 1, 0); break;                                                                                \
    case 3: CALL(0, 1, 1); break;                                                                                \
    case 4: CALL(1, 0, 0); break;                                                                                \
    case 5: CALL(1, 0, 1); break;                                                                                \
    case 6: CALL(1, 1, 0); break;                                                                                \
    default: CALL(1, 1, 1); break;                                                                               \
    }

/* AdamW also takes the state's dtype (S): 16 combinations */
#define SC__ADAMW_CASES(CALL)                                                                                     \
    switch ((pt == SC_BF16) * 8 + (st == SC_BF16) * 4 + (gt == SC_BF16) * 2 + (wout != NULL)) {                \
    case 0: CALL(0, 0, 0, 0); break;                                                                             \
    case 1: CALL(0, 0, 1, 0); break;                                                                             \
    case 2: CALL(0, 1, 0, 0); break;                                                                             \
    case 3: CALL(0, 1, 1, 0); break;                                                                             \
    case 4: CALL(0, 0, 0, 1); break;                                                                             \
    case 5: CALL(0, 0, 1, 1); break;                                                                             \
    case 6: CALL(0, 1, 0, 1); break;                                                                             \
    case 7: CALL(0, 1, 1, 1); break;                                                                             \
    case 8: CALL(1, 0, 0, 0); break;                                                                             \
    case 9: CALL(1, 0, 1, 0); break;                                                                             \
    case 10: CALL(1, 1, 0, 0); break;                                                                            \
    case 11: CALL(1, 1, 1, 0); break;                                                                            \
    case 12: CALL(1, 0, 0, 1); break;                                                                            \
    case 13: CALL(1, 0, 1, 1); break;                                                                            \
    case 14: CALL(1, 1, 0, 1); break;                                                                            \
    default: CALL(1, 1, 1, 1); break;                                                                            \
    }

/* wout is written without being read: with ordinary stores each of its lines is first read (a read-for-ownership,
   2 more bytes per parameter on top of AdamW's 28 or SGD's 12), non-temporal stores skip that. They need aligned
   addresses, so the elements before wout's first `align`-byte boundary go through the scalar path (the same bits,
   as for the tail). Returns that count (at most n); *nt = 0 and 0 without streaming (off, no wout, an odd address). */
static int sc__optim_nt = 1;
static size_t sc__optim_head(const uint16_t *wout, size_t n, size_t align, int *nt)
{
    uintptr_t a = (uintptr_t)wout;
    *nt = wout && sc__optim_nt && !(a & 1);
    size_t h = *nt ? (size_t)((0 - a) & (align - 1)) / 2 : 0;
    return h < n ? h : n;
}

/* a hint to bring the line d bytes past x into the cache: never faults, so past an array's end is harmless */
SC__INL void sc__pf_at(const void *x, size_t d) { _mm_prefetch((const char *)((uintptr_t)x + d), _MM_HINT_T0); }
/* the AdamW loop's four read streams, pf elements past element i (P, S, G: that stream is bf16) */
SC__INL void sc__optim_prefetch(const void *p, const void *m, const void *v, const void *g, size_t i, size_t pf, int P,
                                int S, int G)
{
    size_t j = i + pf;
    sc__pf_at(p, j << (P ? 1 : 2)), sc__pf_at(m, j << (S ? 1 : 2)), sc__pf_at(v, j << (S ? 1 : 2));
    sc__pf_at(g, j << (G ? 1 : 2));
}

/* AVX-512F, 16 lanes */
SC__AVX512 SC__INL __m512 sc__mul16(__m512 a, __m512 b)
{
    __m512 r = _mm512_mul_ps(a, b);
    SC__NOFUSE(r);
    return r;
}
SC__AVX512 SC__INL __m512 sc__ld16(const void *x, int bf, size_t i)
{
    if (!bf) return _mm512_loadu_ps((const float *)x + i);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)x + i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
SC__AVX512 SC__INL __m256i sc__bf16x16(__m512 f) /* exactly sc_f32_to_bf16 */
{
    __m512i u = _mm512_castps_si512(f), hi = _mm512_srli_epi32(u, 16);
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1))));
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_or_epi32(_mm512_srli_epi32(r, 16), nan, hi, _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}
SC__AVX512 SC__INL void sc__st16(void *x, int bf, size_t i, __m512 f)
{
    if (bf) _mm256_storeu_si256((__m256i *)((uint16_t *)x + i), sc__bf16x16(f));
    else _mm512_storeu_ps((float *)x + i, f);
}

/* wout: a streaming store needs wout + i 32-byte aligned (the caller's head makes it so) */
SC__AVX512 SC__INL void sc__stw16(uint16_t *w, __m256i h, int NT)
{
    if (NT) _mm256_stream_si256((__m256i *)w, h);
    else _mm256_storeu_si256((__m256i *)w, h);
}

/* [i, n) in steps of 16; returns where the scalar tail starts */
SC__AVX512 SC__INL size_t sc__adamw16(void *p, void *m, void *v, const void *g, uint16_t *wout, size_t i, size_t n,
                                       const sc_optim_consts *k, int P, int G, int W, int S, int NT)
{
    const __m512 decay = _mm512_set1_ps(k->decay), b1 = _mm512_set1_ps(k->beta1), b2 = _mm512_set1_ps(k->beta2);
    const __m512 omb1 = _mm512_set1_ps(k->omb1), omb2 = _mm512_set1_ps(k->omb2), step = _mm512_set1_ps(k->step);
    const __m512 bc2s = _mm512_set1_ps(k->bc2s), eps = _mm512_set1_ps(k->eps), gs = _mm512_set1_ps(k->gscale);
    const size_t pf = sc__optim_pf;
    for (; i + 16 <= n; i += 16) {
        if (pf) sc__optim_prefetch(p, m, v, g, i, pf, P, S, G);
        __m512 gi = sc__mul16(sc__ld16(g, G, i), gs);
        __m512 pd = sc__mul16(sc__ld16(p, P, i), decay);
        __m512 mi = _mm512_add_ps(sc__mul16(b1, sc__ld16(m, S, i)), sc__mul16(omb1, gi));
        __m512 vi = _mm512_add_ps(sc__mul16(b2, sc__ld16(v, S, i)), sc__mul16(sc__mul16(omb2, gi), gi));
        sc__st16(m, S, i, mi);
        sc__st16(v, S, i, vi);
        __m512 den = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), bc2s), eps);
        __m512 pn = _mm512_sub_ps(pd, sc__mul16(step, _mm512_div_ps(mi, den)));
        sc__st16(p, P, i, pn);
        if (W) sc__stw16(wout + i, sc__bf16x16(pn), NT);
    }
    return i;
}

SC__AVX512 SC__INL size_t sc__sgd16(void *p, const void *g, uint16_t *wout, size_t i, size_t n,
                                     const sc_optim_consts *k, int P, int G, int W, int NT)
{
    const __m512 lr = _mm512_set1_ps(k->lr), wd = _mm512_set1_ps(k->weight_decay), gs = _mm512_set1_ps(k->gscale);
    for (; i + 16 <= n; i += 16) {
        __m512 pi = sc__ld16(p, P, i);
        __m512 pn = _mm512_sub_ps(pi, sc__mul16(lr, _mm512_add_ps(sc__mul16(sc__ld16(g, G, i), gs), sc__mul16(wd, pi))));
        sc__st16(p, P, i, pn);
        if (W) sc__stw16(wout + i, sc__bf16x16(pn), NT);
    }
    return i;
}

SC__AVX512 static void sc__adamw_avx512(void *p, void *m, void *v, sc_dtype pt, sc_dtype st, const void *g,
                                        sc_dtype gt, uint16_t *wout, size_t n, const sc_optim_consts *k)
{
    int nt;
    size_t i = sc__optim_head(wout, n, 32, &nt); /* streaming: the head up to wout's first aligned element in scalar */
    sc__adamw_scalar(p, m, v, pt, st, g, gt, wout, 0, i, k);
#define SC__CALL(P, G, W, S)                                                                                         \
    i = W && nt ? sc__adamw16(p, m, v, g, wout, i, n, k, P, G, W, S, 1)                                              \
                : sc__adamw16(p, m, v, g, wout, i, n, k, P, G, W, S, 0)
    SC__ADAMW_CASES(SC__CALL)
#undef SC__CALL
    sc__adamw_scalar(p, m, v, pt, st, g, gt, wout, i, n, k);
    if (nt) _mm_sfence(); /* the streamed lines are visible to whoever learns this range is done */
}

SC__AVX512 static void sc__sgd_avx512(void *p, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout, size_t n,
                                      const sc_optim_consts *k)
{
    int nt;
    size_t i = sc__optim_head(wout, n, 32, &nt);
    sc__sgd_scalar(p, pt, g, gt, wout, 0, i, k);
#define SC__CALL(P, G, W)                                                                                            \
    i = W && nt ? sc__sgd16(p, g, wout, i, n, k, P, G, W, 1)                                                         \
                : sc__sgd16(p, g, wout, i, n, k, P, G, W, 0)
    SC__OPTIM_CASES(SC__CALL)
#undef SC__CALL
    sc__sgd_scalar(p, pt, g, gt, wout, i, n, k);
    if (nt) _mm_sfence();
}

/* AVX2, 8 lanes: the same code with 256-bit registers */
SC__AVX2 SC__INL __m256 sc__mul8(__m256 a, __m256 b)
{
    __m256 r = _mm256_mul_ps(a, b);
    SC__NOFUSE(r);
    return r;
}
SC__AVX2 SC__INL __m256 sc__ld8(const void *x, int bf, size_t i)
{
    if (!bf) return _mm256_loadu_ps((const float *)x + i);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)x + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
SC__AVX2 SC__INL __m128i sc__bf16x8(__m256 f) /* exactly sc_f32_to_bf16 */
{
    __m256i u = _mm256_castps_si256(f), hi = _mm256_srli_epi32(u, 16);
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1))));
    /* |u| > inf, as a signed compare: both sides are below 2^31 */
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    r = _mm256_blendv_epi8(_mm256_srli_epi32(r, 16), _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)); /* all lanes <= 0xffff */
}
SC__AVX2 SC__INL void sc__st8(void *x, int bf, size_t i, __m256 f)
{
    if (bf) _mm_storeu_si128((__m128i *)((uint16_t *)x + i), sc__bf16x8(f));
    else _mm256_storeu_ps((float *)x + i, f);
}

SC__AVX2 SC__INL void sc__stw8(uint16_t *w, __m128i h, int NT) /* streaming: w 16-byte aligned */
{
    if (NT) _mm_stream_si128((__m128i *)w, h);
    else _mm_storeu_si128((__m128i *)w, h);
}

SC__AVX2 SC__INL size_t sc__adamw8(void *p, void *m, void *v, const void *g, uint16_t *wout, size_t i, size_t n,
                                    const sc_optim_consts *k, int P, int G, int W, int S, int NT)
{
    const __m256 decay = _mm256_set1_ps(k->decay), b1 = _mm256_set1_ps(k->beta1), b2 = _mm256_set1_ps(k->beta2);
    const __m256 omb1 = _mm256_set1_ps(k->omb1), omb2 = _mm256_set1_ps(k->omb2), step = _mm256_set1_ps(k->step);
    const __m256 bc2s = _mm256_set1_ps(k->bc2s), eps = _mm256_set1_ps(k->eps), gs = _mm256_set1_ps(k->gscale);
    const size_t pf = sc__optim_pf;
    for (; i + 8 <= n; i += 8) {
        if (pf) sc__optim_prefetch(p, m, v, g, i, pf, P, S, G);
        __m256 gi = sc__mul8(sc__ld8(g, G, i), gs);
        __m256 pd = sc__mul8(sc__ld8(p, P, i), decay);
        __m256 mi = _mm256_add_ps(sc__mul8(b1, sc__ld8(m, S, i)), sc__mul8(omb1, gi));
        __m256 vi = _mm256_add_ps(sc__mul8(b2, sc__ld8(v, S, i)), sc__mul8(sc__mul8(omb2, gi), gi));
        sc__st8(m, S, i, mi);
        sc__st8(v, S, i, vi);
        __m256 den = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), bc2s), eps);
        __m256 pn = _mm256_sub_ps(pd, sc__mul8(step, _mm256_div_ps(mi, den)));
        sc__st8(p, P, i, pn);
        if (W) sc__stw8(wout + i, sc__bf16x8(pn), NT);
    }
    return i;
}

SC__AVX2 SC__INL size_t sc__sgd8(void *p, const void *g, uint16_t *wout, size_t i, size_t n,
                                  const sc_optim_consts *k, int P, int G, int W, int NT)
{
    const __m256 lr = _mm256_set1_ps(k->lr), wd = _mm256_set1_ps(k->weight_decay), gs = _mm256_set1_ps(k->gscale);
    for (; i + 8 <= n; i += 8) {
        __m256 pi = sc__ld8(p, P, i);
        __m256 pn = _mm256_sub_ps(pi, sc__mul8(lr, _mm256_add_ps(sc__mul8(sc__ld8(g, G, i), gs), sc__mul8(wd, pi))));
        sc__st8(p, P, i, pn);
        if (W) sc__stw8(wout + i, sc__bf16x8(pn), NT);
    }
    return i;
}

SC__AVX2 static void sc__adamw_avx2(void *p, void *m, void *v, sc_dtype pt, sc_dtype st, const void *g,
                                    sc_dtype gt, uint16_t *wout, size_t n, const sc_optim_consts *k)
{
    int nt;
    size_t i = sc__optim_head(wout, n, 16, &nt); /* streaming: the head up to wout's first aligned element in scalar */
    sc__adamw_scalar(p, m, v, pt, st, g, gt, wout, 0, i, k);
#define SC__CALL(P, G, W, S)                                                                                         \
    i = W && nt ? sc__adamw8(p, m, v, g, wout, i, n, k, P, G, W, S, 1)                                               \
                : sc__adamw8(p, m, v, g, wout, i, n, k, P, G, W, S, 0)
    SC__ADAMW_CASES(SC__CALL)
#undef SC__CALL
    sc__adamw_scalar(p, m, v, pt, st, g, gt, wout, i, n, k);
    if (nt) _mm_sfence();
}

SC__AVX2 static void sc__sgd_avx2(void *p, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout, size_t n,
                                  const sc_optim_consts *k)
{
    int nt;
    size_t i = sc__optim_head(wout, n, 16, &nt);
    sc__sgd_scalar(p, pt, g, gt, wout, 0, i, k);
#define SC__CALL(P, G, W)                                                                                            \
    i = W && nt ? sc__sgd8(p, g, wout, i, n, k, P, G, W, 1)                                                          \
                : sc__sgd8(p, g, wout, i, n, k, P, G, W, 0)
    SC__OPTIM_CASES(SC__CALL)
#undef SC__CALL
    sc__sgd_scalar(p, pt, g, gt, wout, i, n, k);
    if (nt) _mm_sfence();
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif /* SC__OPTIM_X86 */

/* ---- dispatch: the path is chosen once (0: not yet, 1: scalar, 2: avx2, 3: avx512) ---- */
static int sc__optim_path;

static int sc__optim_best(void)
{
#if SC__OPTIM_X86
    if (__builtin_cpu_supports("avx512f")) return 3;
    if (__builtin_cpu_supports("avx2")) return 2;
#endif
    return 1;
}

static int sc__optim_pick(void)
{
#if SC__OPTIM_X86
    /* atomics only so that first calls from several threads are not a data race; the value is idempotent */
    int path = __atomic_load_n(&sc__optim_path, __ATOMIC_RELAXED);
    if (!path) __atomic_store_n(&sc__optim_path, path = sc__optim_best(), __ATOMIC_RELAXED);
    return path;
#else
    return 1;
#endif
}

SCDEF const char *sc_cpu_optim_isa(void) { return sc__isa_name(sc__optim_pick()); }

#ifdef SLIDECHECK_TESTING
SCDEF int sc__cpu_optim_force(const char *isa)
{
    int want = sc__isa_code(isa, sc__optim_best());
    if (!want || want > sc__optim_best()) return 0;
    sc__optim_path = want;
    return 1;
}

SCDEF int sc__cpu_optim_prefetch(int on)
{
    int was = sc__optim_pf != 0;
    sc__optim_pf = on ? SC__OPTIM_PF : 0;
    return was;
}

SCDEF int sc__cpu_optim_stream(int on)
{
#if SC__OPTIM_X86
    int was = sc__optim_nt;
    sc__optim_nt = on != 0;
    return was;
#else
    (void)on;
    return 0;
#endif
}
#endif

/* The updates run with MXCSR's flush-to-zero, denormals-are-zero and rounding mode at IEEE's defaults, whatever the
   calling thread set (code built with -ffast-math sets FTZ and DAZ at start-up): a subnormal moment or weight then
   gets the device's bits. Subnormals cost x86 cores a microcode assist per instruction; with every lane subnormal the
   AdamW loop ran 4.1-4.7x slower on an Intel host (bench/cpu_subnormal.c). An FTZ loop with an exact second pass over the
   flushed vectors was tried and dropped: the second pass takes the same assists, and the checks cost the ordinary
   case up to 14% there. */
#if SC__OPTIM_X86
#define SC__MXCSR_IEEE(c) ((c) & ~0xe040u) /* FTZ (bit 15), rounding (bits 13-14: nearest), DAZ (bit 6) cleared */
#endif

SCDEF void sc_cpu_adamw_range(void *p, void *m, void *v, sc_dtype pt, sc_dtype st, const void *g, sc_dtype gt,
                              uint16_t *wout, size_t n, const sc_optim_consts *k)
{
#if SC__OPTIM_X86
    unsigned c0 = _mm_getcsr();
    int path = sc__optim_pick();
    _mm_setcsr(SC__MXCSR_IEEE(c0));
    if (path == 3) sc__adamw_avx512(p, m, v, pt, st, g, gt, wout, n, k);
    else if (path == 2) sc__adamw_avx2(p, m, v, pt, st, g, gt, wout, n, k);
    else sc__adamw_scalar(p, m, v, pt, st, g, gt, wout, 0, n, k);
    _mm_setcsr(c0);
#else
    sc__adamw_scalar(p, m, v, pt, st, g, gt, wout, 0, n, k);
#endif
}

SCDEF void sc_cpu_sgd_range(void *p, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout, size_t n,
                            const sc_optim_consts *k)
{
#if SC__OPTIM_X86
    unsigned c0 = _mm_getcsr();
    int path = sc__optim_pick();
    _mm_setcsr(SC__MXCSR_IEEE(c0));
    if (path == 3) sc__sgd_avx512(p, pt, g, gt, wout, n, k);
    else if (path == 2) sc__sgd_avx2(p, pt, g, gt, wout, n, k);
    else sc__sgd_scalar(p, pt, g, gt, wout, 0, n, k);
    _mm_setcsr(c0);
#else
    sc__sgd_scalar(p, pt, g, gt, wout, 0, n, k);
#endif
}

/* ---- multithreaded: fixed chunks, so the split (and, element-wise, the result) never depends on the thread
   count; 64K elements (~1.8 MB of AdamW traffic) keep scheduling overhead negligible. Chunks are handed
   out dynamically: beside a GPU stream's DMA and the thread driving the GPU, a static split waits for
   its slowest thread (on the H100 host, with one core also left to that thread by slide mode: AdamW in
   a slide step 523 -> 405 ms a step). ---- */
#define SC__OPTIM_CHUNK ((size_t)1 << 16)

/* The CPUs a cgroup's quota allows (cgroup v2 cpu.max, else v1 cfs_quota_us / cfs_period_us), rounded up; 0: no
   quota or unknown. OpenMP's default counts the affinity mask only: in a container whose quota is below its mask,
   more threads than may run at once are throttled, the thread that drives the device with them. Read once. */
#ifdef _OPENMP
static int sc__cpu_quota(void)
{
#if defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
    static int q; /* 0: not read yet, -1: none; idempotent, atomics only against a data race */
    int r = __atomic_load_n(&q, __ATOMIC_RELAXED);
    if (r) return r > 0 ? r : 0;
    double quota = 0.0, period = 0.0;
    char s[32] = "";
    FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
    if (f) {
        if (fscanf(f, "%31s %lf", s, &period) == 2 && strcmp(s, "max")) quota = atof(s);
        fclose(f);
    } else if ((f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "r"))) {
        if (fscanf(f, "%lf", &quota) != 1) quota = 0.0;
        fclose(f);
        if ((f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "r"))) {
            if (fscanf(f, "%lf", &period) != 1) period = 0.0;
            fclose(f);
        }
    }
    r = quota > 0.0 && period > 0.0 ? (int)ceil(quota / period) : -1;
    __atomic_store_n(&q, r, __ATOMIC_RELAXED);
    return r > 0 ? r : 0;
#else
    return 0;
#endif
}
#endif

/* threads > 0, else OpenMP's default (the affinity mask, or OMP_NUM_THREADS), capped at the cgroup's CPU quota
   unless OMP_NUM_THREADS names a count */
static int sc__optim_threads(int threads)
{
#ifdef _OPENMP
    if (threads > 0) return threads;
    int d = omp_get_max_threads(), q = getenv("OMP_NUM_THREADS") ? 0 : sc__cpu_quota();
    return q > 0 && q < d ? q : d;
#else
    (void)threads;
    return 1;
#endif
}

SCDEF void sc_cpu_adamw_mt(void *p, void *m, void *v, sc_dtype pt, sc_dtype st, const void *g, sc_dtype gt,
                           uint16_t *wout, size_t n, const sc_optim_consts *k, int threads)
{
    size_t ps = sc_dtype_size(pt), ss = sc_dtype_size(st), gs = sc_dtype_size(gt);
    long long nc = (long long)((n + SC__OPTIM_CHUNK - 1) / SC__OPTIM_CHUNK);
    int nt = sc__optim_threads(threads);
    (void)nt;
    sc__optim_pick(); /* choose the path before the threads start */
    SC__OMP(omp parallel for num_threads(nt) schedule(dynamic, 4))
    for (long long c = 0; c < nc; c++) {
        size_t o = (size_t)c * SC__OPTIM_CHUNK, len = n - o < SC__OPTIM_CHUNK ? n - o : SC__OPTIM_CHUNK;
        sc_cpu_adamw_range((char *)p + o * ps, (char *)m + o * ss, (char *)v + o * ss, pt, st,
                           (const char *)g + o * gs, gt, wout ? wout + o : NULL, len, k);
    }
}

SCDEF void sc_cpu_sgd_mt(void *p, sc_dtype pt, const void *g, sc_dtype gt, uint16_t *wout, size_t n,
                         const sc_optim_consts *k, int threads)
{
    size_t ps = sc_dtype_size(pt), gs = sc_dtype_size(gt);
    long long nc = (long long)((n + SC__OPTIM_CHUNK - 1) / SC__OPTIM_CHUNK);
    int nt = sc__optim_threads(threads);
    (void)nt;
    sc__optim_pick();
    SC__OMP(omp parallel for num_threads(nt) schedule(dynamic, 4))
    for (long long c = 0; c < nc; c++) {
        size_t o = (size_t)c * SC__OPTIM_CHUNK, len = n - o < SC__OPTIM_CHUNK ? n - o : SC__OPTIM_CHUNK;
        sc_cpu_sgd_range((char *)p + o * ps, pt, (const char *)g + o * gs, gt, wout ? wout + o : NULL, len, k);
    }
}

/* Pageable buffers the host optimizer streams (slide's master weights, AdamW's m and v) ask for transparent huge
   pages before their first touch (huge = 1), or not to get them (0): on 4 KiB pages the optimizer takes a TLB miss,
   and its hardware prefetchers stop, at every page, but on some hosts it ran faster there (sc_cpu_optim_tune). A
   hint only (Linux, THP in "madvise" or "always" mode), on the whole 2 MiB pages inside the block; <sys/mman.h>
   declares madvise only under _DEFAULT_SOURCE, hence the private name for the same symbol. */
#if defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
extern int sc__madvise(void *addr, size_t len, int advice) __asm__("madvise");
#endif
static void sc__host_huge(void *p, size_t bytes, int huge)
{
#if defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
    const uintptr_t H = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)p + H - 1) & ~(H - 1), e = ((uintptr_t)p + bytes) & ~(H - 1);
    /* MADV_HUGEPAGE, MADV_NOHUGEPAGE (<asm-generic/mman-common.h>) */
    if (e > a) (void)sc__madvise((void *)a, (size_t)(e - a), huge ? 14 : 15);
#else
    (void)p, (void)bytes, (void)huge;
#endif
}

/* ---- the host AdamW's variants on this host ---- */
SCDEF sc_cpu_optim_tuning sc_cpu_optim_choice(void)
{
    sc_cpu_optim_tuning t = sc__optim_tuned;
    t.prefetch = sc__optim_pf != 0, t.huge_pages = sc__optim_huge;
    return t;
}

/* The host's turn to time its AdamW, shared by the processes of this host through a lock on one file (closing the
   file gives it up); -1 where there is no such file (and no turn: the caller times at once). */
static int64_t sc__tune_win[2];
static int sc__tune_turn(void)
{
#ifdef __linux__
    const char *d = getenv("TMPDIR");
    char path[640];
    snprintf(path, sizeof path, "%s/slidecheck-host-optim.lock", d && *d ? d : "/tmp");
    int fd = open(path, O_RDWR | O_CREAT, 0666);
    if (fd < 0) return -1;
    struct flock l;
    memset(&l, 0, sizeof l);
    l.l_type = F_WRLCK, l.l_whence = SEEK_SET;
    while (fcntl(fd, F_SETLKW, &l) != 0)
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    return fd;
#else
    return -1;
#endif
}

#ifdef SLIDECHECK_TESTING
SCDEF void sc__cpu_optim_tune_window(int64_t *t0, int64_t *t1) { *t0 = sc__tune_win[0], *t1 = sc__tune_win[1]; }
#endif

static sc_result sc__cpu_optim_tune_now(int threads, size_t n);
SCDEF sc_result sc_cpu_optim_tune(int threads, size_t n)
{
    int fd = sc__tune_turn();
    int64_t t0 = sc__trace_now_ns();
    sc_result r = sc__cpu_optim_tune_now(threads, n);
    sc__tune_win[0] = fd >= 0 ? t0 : 0, sc__tune_win[1] = fd >= 0 ? sc__trace_now_ns() : 0;
#ifdef __linux__
    if (fd >= 0) close(fd);
#endif
    return r;
}

static sc_result sc__cpu_optim_tune_now(int threads, size_t n)
{
    enum { R = 5 };
    if (!n) n = (size_t)24 << 20;
    int nt = sc__optim_threads(threads);
    /* per page kind: f32 weights, m, v, gradients, then the bf16 weights out */
    void *b[2][5] = {{NULL}};
    int ok = 1;
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 5 && ok; i++) {
            size_t bytes = n * (i < 4 ? 4 : 2);
            if ((b[h][i] = SC_MALLOC(bytes)) != NULL) sc__host_huge(b[h][i], bytes, h);
            else ok = 0;
        }
    for (int h = 0; h < 2 && ok; h++) { /* first touch, on the threads that will stream them */
        float *p = (float *)b[h][0], *m = (float *)b[h][1], *v = (float *)b[h][2], *g = (float *)b[h][3];
        SC__OMP(omp parallel for num_threads(nt) schedule(static))
        for (long long i = 0; i < (long long)n; i++) {
            p[i] = 0.02f * (float)(i % 97) - 1.0f, m[i] = v[i] = 0.0f;
            g[i] = 1e-3f * (float)(i % 89 + 1);
        }
        memset(b[h][4], 0, n * 2);
    }
    sc_optim_consts k = sc_optim_consts_make(1e-4f, 0.9f, 0.999f, 1e-8f, 0.01f, 1);
    size_t pf_was = sc__optim_pf;
    double t[4][R];
    for (int r = 0; r <= R && ok; r++) /* round 0 warms up; each round starts at another variant */
        for (int q = 0; q < 4; q++) {
            int var = (q + r) % 4, h = var >> 1;
            sc__optim_pf = (var & 1) ? SC__OPTIM_PF : 0;
            int64_t t0 = sc__trace_now_ns();
            sc_cpu_adamw_mt(b[h][0], b[h][1], b[h][2], SC_F32, SC_F32, b[h][3], SC_F32, (uint16_t *)b[h][4], n, &k, nt);
            if (r) t[var][r - 1] = (double)(sc__trace_now_ns() - t0) * 1e-9;
        }
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 5; i++) SC_FREE(b[h][i]);
    sc__optim_pf = pf_was;
    if (!ok) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "sc_cpu_optim_tune: host memory for %zu parameters", n);
    sc_cpu_optim_tuning *o = &sc__optim_tuned;
    int cur = 2 * sc__optim_huge + (pf_was != 0), best = cur;
    for (int var = 0; var < 4; var++) {
        double med = sc_stats_compute(t[var], R).median;
        o->gparams_s[var >> 1][var & 1] = med > 0 ? (double)n / med * 1e-9 : 0.0;
    }
    for (int var = 0; var < 4; var++)
        if (o->gparams_s[var >> 1][var & 1] > o->gparams_s[best >> 1][best & 1]) best = var;
    if (o->gparams_s[best >> 1][best & 1] < 1.02 * o->gparams_s[cur >> 1][cur & 1]) best = cur;
    sc__optim_pf = (best & 1) ? SC__OPTIM_PF : 0;
    sc__optim_huge = best >> 1;
    o->tuned = 1, o->threads = nt, o->n = n;
    return SC_SUCCESS;
}

/* 256 lane sums meeting in a halving tree: the order k_sumsq_chunks and k_grad_norm use */
static double sc__tree256(double *s)
{
    for (int w = 128; w >= 1; w >>= 1)
        for (int t = 0; t < w; t++) s[t] = s[t] + s[t + w];
    return s[0];
}

/* Lane t of lane[] adds x * x for the elements r + t of [o, e), rows of 256 side by side. The full rows go
   through a loop per dtype with a fixed trip count, which compilers vectorize across the lanes (each lane keeps
   its order: the same bits); a generic loop through sc__ld stayed scalar, some 5 cycles an element, and the host
   norm of a 7B model's gradients took 0.9 s a step. x * x is exact in f64: contraction changes nothing. */
static void sc__sumsq_lanes(double *lane, const void *g, sc_dtype gt, size_t o, size_t e)
{
    size_t r = o;
    if (gt == SC_BF16) {
        const uint16_t *h = (const uint16_t *)g;
        for (; r + 256 <= e; r += 256)
            for (int t = 0; t < 256; t++) {
                double x = (double)sc_bf16_to_f32(h[r + t]);
                lane[t] = lane[t] + x * x;
            }
    } else {
        const float *p = (const float *)g;
        for (; r + 256 <= e; r += 256)
            for (int t = 0; t < 256; t++) {
                double x = (double)p[r + t];
                lane[t] = lane[t] + x * x;
            }
    }
    for (size_t t = 0; r + t < e; t++) {
        double x = (double)sc__ld(g, gt, r + t);
        lane[t] = lane[t] + x * x;
    }
}

/* The chunk sums [c0, c1) of g[0, n): each depends on its own chunk only, so a chunk can be
   summed whenever its gradients are final (slide mode sums each layer's as it lands). */
static void sc__grad_norm_chunk(double *part, const void *g, sc_dtype gt, size_t n, size_t c)
{
    double lane[256] = {0};
    size_t o = c * SC_GRAD_NORM_CHUNK, e = o + SC_GRAD_NORM_CHUNK < n ? o + SC_GRAD_NORM_CHUNK : n;
    sc__sumsq_lanes(lane, g, gt, o, e);
    part[c] = sc__tree256(lane);
}

static void sc__grad_norm_chunks(double *part, const void *g, sc_dtype gt, size_t n, size_t c0, size_t c1, int threads)
{
    int nt = sc__optim_threads(threads);
    (void)nt;
    SC__OMP(omp parallel for num_threads(nt) schedule(dynamic, 4))
    for (long long c = (long long)c0; c < (long long)c1; c++) sc__grad_norm_chunk(part, g, gt, n, (size_t)c);
}

static double sc__grad_norm_finish(const double *part, size_t nc)
{
    double lane[256] = {0};
    for (size_t i = 0; i < nc; i++) lane[i % 256] = lane[i % 256] + part[i];
    return sqrt(sc__tree256(lane));
}

SCDEF double sc_grad_norm(const void *g, sc_dtype gt, size_t n, int threads)
{
    size_t nc = (n + SC_GRAD_NORM_CHUNK - 1) / SC_GRAD_NORM_CHUNK;
    double *part = (double *)SC_MALLOC(sizeof(double) * (nc ? nc : 1));
    if (!part) return NAN;
    sc__grad_norm_chunks(part, g, gt, n, 0, nc, threads);
    double r = sc__grad_norm_finish(part, nc);
    SC_FREE(part);
    return r;
}

SCDEF double sc_lr_factor(sc_lr_schedule s, int64_t step, int64_t warmup, int64_t total, double min_lr_ratio)
{
    if (step < warmup) return (double)step / (double)(warmup > 1 ? warmup : 1);
    double rest = (double)(total - warmup > 1 ? total - warmup : 1);
    if (s == SC_LR_LINEAR) {
        double f = (double)(total - step) / rest;
        return f > 0.0 ? f : 0.0;
    }
    if (s == SC_LR_COSINE) {
        double progress = (double)(step - warmup) / rest;
        double f = 0.5 * (1.0 + cos(3.14159265358979323846 * 0.5 * 2.0 * progress));
        f = f * (1.0 - min_lr_ratio) + min_lr_ratio;
        return f > 0.0 ? f : 0.0;
    }
    return 1.0;
}

static const char *const sc__lr_names[3] = {"constant", "linear", "cosine"};

SCDEF sc_result sc_lr_schedule_parse(const char *name, sc_lr_schedule *out)
{
    for (int i = 0; i < 3; i++)
        if (name && !strcmp(name, sc__lr_names[i])) {
            *out = (sc_lr_schedule)i;
            return SC_SUCCESS;
        }
    return sc_set_error(SC_ERROR_INVALID_ARGS, "lr schedule '%s': expected constant, linear or cosine", name ? name : "");
}

SCDEF const char *sc_lr_schedule_name(sc_lr_schedule s)
{
    return (int)s >= 0 && (int)s < 3 ? sc__lr_names[s] : "?";
}

SCDEF void sc_cpu_sgd_update(float *p, const float *g, size_t n, float lr, float weight_decay)
{
    sc_optim_consts k = sc_optim_consts_make(lr, 0.0f, 0.0f, 0.0f, weight_decay, 1);
    sc_cpu_sgd_mt(p, SC_F32, g, SC_F32, NULL, n, &k, 0);
}

SCDEF void sc_cpu_adamw_update(float *p, float *m, float *v, const float *g, size_t n, float lr, float beta1,
                               float beta2, float eps, float weight_decay, int t)
{
    /* torch.optim.AdamW (foreach=False): decoupled decay, bias correction, eps outside sqrt */
    sc_optim_consts k = sc_optim_consts_make(lr, beta1, beta2, eps, weight_decay, t);
    sc_cpu_adamw_mt(p, m, v, SC_F32, SC_F32, g, SC_F32, NULL, n, &k, 0);
}

/* ==========================================================================================
   Checkpoint policies
   ========================================================================================== */
static int sc__parse_int(const char *s, const char **end, int *out)
{
    if (*s < '0' || *s > '9') return 0;
    long v = 0;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s - '0');
        if (v > 1000000) return 0;
        s++;
    }
    *out = (int)v;
    *end = s;
    return 1;
}

static void sc__plan_segments(sc_plan *p, int K)
{
    for (int l = 0; l < p->num_layers; l++) p->seg[l] = (short)(l - l % K);
}

SCDEF const char *sc_keep_name(int keep)
{
    static const char *names[SC_KEEP_COUNT] = {"keep all", "selective", "selective:mlp", "selective:attn",
                                                "selective:proj"};
    return keep >= 0 && keep < SC_KEEP_COUNT ? names[keep] : "?";
}

/* a-b,c,... into mark[0..L) (the list of layers:LIST); `what` names the text in errors */
static sc_result sc__layer_list_parse(unsigned char *mark, const char *list, int L, const char *what)
{
    const char *s = list, *e;
    memset(mark, 0, (size_t)L);
    for (;;) {
        int a, b;
        if (!sc__parse_int(s, &e, &a))
            return sc__fail(SC_ERROR_INVALID_ARGS, "%s: expected a layer number at '%s'", what, s);
        b = a;
        if (*e == '-' && !sc__parse_int(e + 1, &e, &b)) return sc__fail(SC_ERROR_INVALID_ARGS, "%s: bad range", what);
        if (a > b || b >= L)
            return sc__fail(SC_ERROR_INVALID_ARGS, "%s: range %d-%d outside layers 0-%d", what, a, b, L - 1);
        for (int l = a; l <= b; l++) mark[l] = 1;
        if (!*e) return SC_SUCCESS;
        if (*e != ',') return sc__fail(SC_ERROR_INVALID_ARGS, "%s: expected ',' at '%s'", what, e);
        s = e + 1;
    }
}

SCDEF sc_result sc_layer_set_parse(unsigned char *mark, const char *spec, int L)
{
    if (!mark || !spec) return sc__fail(SC_ERROR_INVALID_ARGS, "layer set: NULL argument");
    if (L <= 0 || L > SC_MAX_LAYERS)
        return sc__fail(SC_ERROR_INVALID_ARGS, "layer set: %d layers (at most %d supported)", L, SC_MAX_LAYERS);
    const char *e;
    int k, first = !strncmp(spec, "first:", 6), last = !strncmp(spec, "last:", 5);
    memset(mark, !strcmp(spec, "all"), (size_t)L);
    if (!strcmp(spec, "all") || !strcmp(spec, "none")) return SC_SUCCESS;
    if (first || last) {
        if (!sc__parse_int(spec + (first ? 6 : 5), &e, &k) || *e || k > L)
            return sc__fail(SC_ERROR_INVALID_ARGS, "layer set '%s': %s:K needs an integer K from 0 to %d", spec,
                            first ? "first" : "last", L);
        for (int l = 0; l < k; l++) mark[first ? l : L - 1 - l] = 1;
        return SC_SUCCESS;
    }
    char what[160];
    snprintf(what, sizeof what, "layer set '%s' (all, none, first:K, last:K or a-b,c,...)", spec);
    return sc__layer_list_parse(mark, spec, L, what);
}

SCDEF sc_result sc_plan_parse(sc_plan *p, const char *policy, int L)
{
    if (!p || !policy) return sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint policy: NULL argument");
    if (L <= 0 || L > SC_MAX_LAYERS)
        return sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint policy: %d layers (at most %d supported)", L, SC_MAX_LAYERS);
    memset(p, 0, sizeof *p);
    p->num_layers = L;
    for (int l = 0; l < L; l++) { p->keep[l] = SC_KEEP_ALL; p->seg[l] = -1; }
    snprintf(p->name, sizeof p->name, "%s", policy);
    const char *e;
    int k;
    if (!strcmp(policy, "none")) return SC_SUCCESS;
    if (!strcmp(policy, "full")) { sc__plan_segments(p, 1); return SC_SUCCESS; }
    if (!strcmp(policy, "selective")) { memset(p->keep, SC_KEEP_SELECTIVE, (size_t)L); return SC_SUCCESS; }
    if (!strcmp(policy, "selective:mlp")) { memset(p->keep, SC_KEEP_SELECTIVE_MLP, (size_t)L); return SC_SUCCESS; }
    if (!strcmp(policy, "selective:attn")) { memset(p->keep, SC_KEEP_SELECTIVE_ATTN, (size_t)L); return SC_SUCCESS; }
    if (!strcmp(policy, "selective:proj")) { memset(p->keep, SC_KEEP_SELECTIVE_PROJ, (size_t)L); return SC_SUCCESS; }
    if (!strcmp(policy, "sqrt")) {
        k = (int)ceil(sqrt((double)L));
        sc__plan_segments(p, k);
        return SC_SUCCESS;
    }
    if (!strncmp(policy, "every:", 6)) {
        if (!sc__parse_int(policy + 6, &e, &k) || *e || k <= 0)
            return sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint policy '%s': every:K needs an integer K >= 1", policy);
        sc__plan_segments(p, k);
        return SC_SUCCESS;
    }
    if (!strncmp(policy, "layers:", 7)) {
        unsigned char mark[SC_MAX_LAYERS];
        char what[160];
        snprintf(what, sizeof what, "checkpoint policy '%s'", policy);
        sc_result r = sc__layer_list_parse(mark, policy + 7, L, what);
        if (r != SC_SUCCESS) return r;
        for (int l = 0; l < L; l++)
            if (mark[l]) p->seg[l] = (short)l;
        return SC_SUCCESS;
    }
    if (!strncmp(policy, "budget:", 7))
        return sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint policy '%s' needs per-layer costs: use sc_plan_is_budget() "
                        "and sc_planner_plan()", policy);
    return sc__fail(SC_ERROR_INVALID_ARGS,
                    "unknown checkpoint policy '%s' (known: none, full, every:K, layers:LIST, selective, "
                    "selective:mlp, selective:attn, selective:proj, sqrt, budget:SIZE)", policy);
}

/* Activation slots of one layer: their sizes, and which ones each keep mode saves. */
enum {
    SC__A_X, SC__A_RSTD1, SC__A_A, SC__A_QKV, SC__A_QK, SC__A_RSTDQK, SC__A_O, SC__A_LSE, SC__A_X2,
    SC__A_RSTD2, SC__A_B, SC__A_GU, SC__A_M, SC__A_COUNT
};
static const char *sc__act_names[SC__A_COUNT] = {
    "input", "ln1.rstd", "ln1.out", "attn.qkv", "attn.qk_rope", "attn.qk_norm.rstd", "attn.out", "attn.lse",
    "residual", "ln2.rstd", "ln2.out", "mlp.gate_up", "mlp.act"};

static unsigned sc__keep_mask(int keep)
{
    unsigned all = (1u << SC__A_COUNT) - 1;
    if (keep == SC_KEEP_SELECTIVE)
        return (1u << SC__A_X) | (1u << SC__A_QKV) | (1u << SC__A_O) | (1u << SC__A_LSE) | (1u << SC__A_X2) |
               (1u << SC__A_GU);
    if (keep == SC_KEEP_SELECTIVE_MLP)
        return all & ~((1u << SC__A_RSTD2) | (1u << SC__A_B) | (1u << SC__A_GU) | (1u << SC__A_M));
    if (keep == SC_KEEP_SELECTIVE_ATTN) /* recompute costs the qkv GEMM and the attention forward */
        return (1u << SC__A_X) | (1u << SC__A_X2) | (1u << SC__A_GU);
    if (keep == SC_KEEP_SELECTIVE_PROJ) /* recompute costs the qkv and o GEMMs, not attention */
        return (1u << SC__A_X) | (1u << SC__A_O) | (1u << SC__A_LSE) | (1u << SC__A_GU);
    return all;
}

/* Element count and element size of each slot (act_bytes for activations, 4 for statistics). */
static size_t sc__act_numel(const sc_config *c, int slot, int B, int T)
{
    size_t N = (size_t)B * T, C = (size_t)c->hidden_size, D = (size_t)c->head_dim;
    size_t H = (size_t)c->num_heads, KV = (size_t)c->num_kv_heads, I = (size_t)c->intermediate_size;
    switch (slot) {
    case SC__A_X: case SC__A_A: case SC__A_X2: case SC__A_B: return N * C;
    case SC__A_RSTD1: case SC__A_RSTD2: return N;
    case SC__A_QKV: return N * (H + 2 * KV) * D;
    case SC__A_QK: return N * (H + KV) * D;
    case SC__A_RSTDQK: return c->qk_norm ? N * (H + KV) : 0;
    case SC__A_O: return N * H * D;
    case SC__A_LSE: return N * H;
    case SC__A_GU: return N * 2 * I;
    case SC__A_M: return N * I;
    }
    return 0;
}
static int sc__act_is_stat(int slot)
{
    return slot == SC__A_RSTD1 || slot == SC__A_RSTD2 || slot == SC__A_RSTDQK || slot == SC__A_LSE;
}
static size_t sc__act_bytes(const sc_config *c, int slot, int B, int T, int act_bytes)
{
    return sc__act_numel(c, slot, B, T) * (sc__act_is_stat(slot) ? 4u : (size_t)act_bytes);
}

/* The mask of slots layer l keeps after forward. */
static unsigned sc__plan_mask(const sc_plan *p, int l)
{
    if (p->seg[l] >= 0) return p->seg[l] == l ? (1u << SC__A_X) : 0u;
    return sc__keep_mask(p->keep[l]);
}

SCDEF size_t sc_plan_saved_bytes_layer(const sc_config *cfg, const sc_plan *plan, int l, int B, int T, int act_bytes)
{
    unsigned mask = sc__plan_mask(plan, l);
    size_t s = 0;
    for (int a = 0; a < SC__A_COUNT; a++)
        if (mask & (1u << a)) s += sc__act_bytes(cfg, a, B, T, act_bytes);
    return s;
}

SCDEF size_t sc_plan_saved_bytes(const sc_config *cfg, const sc_plan *plan, int B, int T, int act_bytes)
{
    size_t s = sc__act_bytes(cfg, SC__A_X, B, T, act_bytes); /* the last layer's output */
    for (int l = 0; l < cfg->num_layers; l++) s += sc_plan_saved_bytes_layer(cfg, plan, l, B, T, act_bytes);
    return s;
}

/* ==========================================================================================
   The model
   ========================================================================================== */
/* The whole-step CUDA graph of a model (sc__graph_step) */
typedef struct sc__graph_state {
    void *exec;                /* NULL: none captured */
    int B, T, accum, update, traced, seen, drops, off;
    int norm;                  /* the step queues the gradients' norm (clipping, or the update's read) */
    sc_plan plan;
    void **blk;                /* blocks the capture was handed: checked idle before a replay */
    size_t *blkn, nblk, capblk;
    int rec;                   /* recording them */
    sc__trace_span *spans;     /* the capture's tracer spans, appended at each replay */
    int64_t nspans, steps, peak[3];
    size_t saved;
} sc__graph_state;

struct sc_model {
    sc_config cfg;
    sc_model_config mc;
    sc_allocator alloc;
    sc_tracer *tr;
    sc_cuda *cu;                   /* NULL on the CPU backend */
    int nccl;                      /* data parallel on the GPU: gradients summed over NCCL */
    int zero_gpu;                  /* ... with ZeRO-1: reduce-scatter, update of this rank's chunks, all-gather */
    int zero_stale;                /* ... the other ranks' chunks of the last update are not gathered yet */
    size_t coll_l1, coll_emb;      /* collectives queued before layer 0's sum, and up to the embedding's */
    char devname[24];              /* the allocator's name: "cuda:0" */
    int pb, gb, ab;                /* bytes per element: parameters, their gradients, activations */
    sc_dtype pdt, gdt;
    float *params, *grads, *master, *opt_m, *opt_v; /* device buffers (dtype by pb/gb) */
    float *p2p_scratch;            /* two ranks, copy-engine sums: the half of the gradients the peer sends */
    size_t nparams;
    float *rope_cos, *rope_sin;
    int rope_T;
    int t;                         /* optimizer steps taken */
    float gscale;                  /* the host optimizer's gradient factor this update (clipping; 1) */
    double gnorm;                  /* the last update's gradient norm (NaN: not computed) */
    int gnorm_step;                /* ... at optimizer step t == gnorm_step */
    /* activation slots of the current micro-batch (act_store + mb * (L + 1)) */
    float *(*acts)[SC__A_COUNT];
    float *(*act_store)[SC__A_COUNT];
    float *bws;                    /* the layers' backward scratch during a backward pass (sc__bwd_scratch) */
    int accum, mb, accum_cap;      /* micro-batches of the step, the current one, slots held for */
    int gset;                      /* resident on the GPU, the first micro-batch: weight gradients are
                                      set by their first write (sc_cuda_grads_set), not zeroed first */
    const int32_t *ids, *ids_all;  /* host: the current micro-batch, all of them */
    int32_t *ids_dev, *targets;    /* device, current micro-batch (views into the *_all buffers) */
    int32_t *ids_dev_all, *targets_all;
    float *rowloss, *rowloss_all;  /* device, [N] / [accum * N] */
    float **dres0;                 /* per micro-batch: dL/dx_0, kept for the embedding backward */
    float lscale;                  /* 1 / (accum * B * (T - 1)): the loss is the mean over all */
    struct sc__slide *sl;          /* slide mode state (NULL when resident) */
    int B, T;
    float *logits_host, *rowloss_host;
    size_t logits_cap, rowloss_cap;
    size_t last_saved;
    int64_t launch_mark;
    sc__graph_state gs;            /* the whole-step CUDA graph (sc__graph_step) */
};

/* The optimizer's constants of update m->t, with the host's clipping factor */
static sc_optim_consts sc__model_consts(const sc_model *m)
{
    sc_optim_consts k = sc_optim_consts_make(m->mc.lr, m->mc.beta1, m->mc.beta2, m->mc.eps, m->mc.weight_decay, m->t);
    k.gscale = m->gscale;
    return k;
}

/* One call for both backends: the CPU op, or the CUDA op of the same name. */
#ifdef SLIDECHECK_CUDA
#define SC__OP(m, name, ...) \
    do { if ((m)->cu) sc_cuda_##name((m)->cu, __VA_ARGS__); else sc_cpu_##name(__VA_ARGS__); } while (0)
#else
#define SC__OP(m, name, ...) sc_cpu_##name(__VA_ARGS__)
#endif
#define SC__TRY(x) do { sc_result sc__r_ = (x); if (sc__r_ != SC_SUCCESS) return sc__r_; } while (0)

/* Element idx of a buffer whose elements are esize bytes (bf16 buffers travel as float*). */
static float *sc__at(const void *base, size_t idx, int esize)
{
    return base ? (float *)((char *)base + idx * (size_t)esize) : NULL;
}

SCDEF sc_model_config sc_model_config_init(void)
{
    sc_model_config mc;
    memset(&mc, 0, sizeof mc);
    return mc;
}

SCDEF const sc_config *sc_model_cfg(const sc_model *m) { return &m->cfg; }
SCDEF sc_allocator *sc_model_allocator(sc_model *m) { return &m->alloc; }
SCDEF const float *sc_model_logits(const sc_model *m) { return m->logits_host; }
SCDEF size_t sc_model_last_saved_bytes(const sc_model *m) { return m->last_saved; }

SCDEF void sc_model_config_storage(const sc_model_config *mc, int *param_bytes, int *grad_bytes, int *act_bytes)
{
    int gpu_bf16 = mc->device == SC_DEVICE_CUDA && mc->bf16;
    *param_bytes = *act_bytes = gpu_bf16 ? 2 : 4;
    *grad_bytes = gpu_bf16 && !mc->master_weights ? 2 : 4;
}

/* Data parallel's buckets, in the order backward completes them: 0 the final norm | untied LM
   head, 1..L the layers L-1..0, L+1 the embedding (which a tied head's rows add to last). */
static void sc__bucket(const sc_config *c, size_t np, int b, size_t *off, size_t *n)
{
    int L = c->num_layers;
    if (b == 0) *off = sc_config_norm_offset(c), *n = np - *off;
    else if (b <= L) *off = sc_config_layer_base(c, L - b), *n = sc_config_layer_offsets(c).size;
    else *off = 0, *n = sc_config_layer_base(c, 0);
}

/* A rank's share of n elements split over W ranks: its chunk [r (n / W), (r + 1) (n / W)) and
   the remainder [W (n / W), n) that every rank takes alike. at[] and cnt[] are offsets in [0, n). */
static void sc__chunk(size_t n, int W, int r, size_t at[2], size_t cnt[2])
{
    size_t ch = n / (size_t)W;
    at[0] = (size_t)r * ch, cnt[0] = ch;
    at[1] = ch * (size_t)W, cnt[1] = n - ch * (size_t)W;
}

/* ZeRO-1 on the GPU: bucket b's first W * (n / W) elements are W chunks, rank r owning chunk r
   (reduce-scatter, its update, all-gather); the last n % W elements are summed by all-reduce and
   updated on every rank alike. A rank's AdamW state holds its chunk and that remainder of every
   bucket, bucket after bucket; this is where bucket b's starts (b = L + 2: the total). */
static size_t sc__zero_state_offset(const sc_config *c, size_t np, int W, int b)
{
    size_t at = 0, off, n;
    for (int i = 0; i < b; i++) {
        sc__bucket(c, np, i, &off, &n);
        at += n / (size_t)W + n % (size_t)W;
    }
    return at;
}

static void sc__part(size_t n, int r, int W, size_t *lo, size_t *hi);

SCDEF size_t sc_model_config_fixed_bytes(const sc_config *cfg, const sc_model_config *mc)
{
    return sc_model_config_fixed_bytes_dp(cfg, mc, sc_dist_comm_world(mc->comm));
}

/* Ranks of one host may sum by the copy engines (dp_sums, sc_cuda_p2p_*): resident mode's scratch
   for the parts the peers send ((W - 1) / W of the gradients) and, past two ranks, the ordered sums'
   pieces (slide too) */
static size_t sc__p2p_ordered_bytes(const sc_model_config *mc, int W)
{
    int on = mc->device == SC_DEVICE_CUDA && W > 2 && W <= 8 && mc->dp_sums != SC_DP_SUMS_NCCL;
    return on ? (size_t)(W - 1) * SC_CUDA_P2P_PIECE_BYTES : 0;
}

static size_t sc__p2p_scratch_bytes(const sc_model_config *mc, size_t n, int gb, int W)
{
    if (mc->device != SC_DEVICE_CUDA || W < 2 || W > 8 || mc->dp_sums == SC_DP_SUMS_NCCL) return 0;
    size_t parts = (size_t)(W - 1) * ((n + (size_t)W - 1) / (size_t)W) * (size_t)gb;
    return (mc->mode == SC_MODE_RESIDENT ? (parts + 255) / 256 * 256 : 0) /* the ordered slots 256-aligned */ +
           sc__p2p_ordered_bytes(mc, W);
}

SCDEF size_t sc_model_config_fixed_bytes_dp(const sc_config *cfg, const sc_model_config *mc, int W)
{
    int pb, gb, ab;
    sc_model_config_storage(mc, &pb, &gb, &ab);
    int adamw = mc->optim == SC_OPTIM_ADAMW, mb = mc->master_weights ? 4 : pb;
    size_t n = sc_config_num_params(cfg), f = sc_plan_fixed_bytes(cfg, adamw, mb, gb);
    if (adamw && mc->state_bf16) f -= n * 2 * (size_t)(mb - 2); /* m and v in 2 bytes */
    if (mc->master_weights) f += n * (size_t)pb;               /* + the bf16 working copy */
    f += sc__p2p_scratch_bytes(mc, n, gb, W); /* counted wherever the GPUs may reach each other */
    if (adamw && mc->zero && W > 1) { /* ZeRO-1: this rank's part of m and v only (rank 0's: the largest) */
        size_t s2 = n * 2 * (size_t)(mc->state_bf16 ? 2 : mb), lo, hi;
        sc__part(n, mc->comm ? sc_dist_comm_rank(mc->comm) : 0, W, &lo, &hi);
        if (mc->device == SC_DEVICE_CUDA) /* a chunk of every bucket and its remainder */
            lo = 0, hi = sc__zero_state_offset(cfg, n, W, cfg->num_layers + 2);
        f = f - s2 + (hi - lo) * 2 * (size_t)(mc->state_bf16 ? 2 : mb);
    }
    return f;
}

SCDEF size_t sc_plan_budget_usable(size_t budget, const sc_config *cfg, int B, int T)
{
    size_t small = (size_t)T * (size_t)cfg->head_dim * 4 + (size_t)B * T * 12;
    /* reserved exceeds allocated by the allocator's rounding: a partly used 2 MiB small-pool
       segment per stream (compute and copy), one partly used 20 MiB segment for 1..10 MiB
       requests, and 4% for fragmentation and the 2 MiB rounding of large blocks (slide runs of
       the 1.7B shape reserved 2.5-3.6% over their peak allocated on an H200) */
    size_t margin = budget / 25 + 2 * SC__ALLOCATOR_SMALL_BUFFER + SC__ALLOCATOR_LARGE_BUFFER + small;
    return budget > margin ? budget - margin : 1;
}

/* Per-layer costs on a live model: after an untimed step, one forward+backward under each of
   full, selective, selective:mlp, selective:attn and selective:proj; their recompute spans give
   each layer's replay cost, the forward span of the `full` step its whole-layer cost. Gradients
   overwritten. */
static sc_result sc__model_profile_costs(sc_model *m, const int32_t *ids, int B, int T, sc_layer_cost *costs)
{
    static const char *prof[SC_KEEP_COUNT] = {"full", "selective", "selective:mlp", "selective:attn", "selective:proj"};
    const sc_config *cfg = &m->cfg;
    sc_tracer tr, *user_tr = m->tr;
    sc_tracer_config tc;
    memset(&tc, 0, sizeof tc);
    tc.warmup_steps = -1;
    tc.no_clear_refs = 1;
    sc_model_tracer_timing(m, &tc);
    tc.device_sync = NULL; /* per-layer spans only: no wall time is read */
    float wl;
    sc_plan wp; /* one untimed step first: the first one pays for GEMM plans and caches */
    sc_plan_parse(&wp, prof[0], cfg->num_layers);
    sc_result r = sc_model_forward_backward(m, &wp, ids, B, T, &wl);
    if (r == SC_SUCCESS) r = sc_tracer_init(&tr, &tc);
    if (r != SC_SUCCESS) return r;
    m->tr = &tr;
    for (int k = 0; k < SC_KEEP_COUNT && r == SC_SUCCESS; k++) {
        sc_plan p;
        float loss;
        sc_plan_parse(&p, prof[k], cfg->num_layers);
        sc_tracer_step_begin(&tr, 0, k);
        r = sc_model_forward_backward(m, &p, ids, B, T, &loss);
        sc_tracer_step_end(&tr, loss, (double)B * T, NULL);
        for (int l = 0; l < cfg->num_layers && r == SC_SUCCESS; l++) {
            double sec = sc_tracer_layer_ms(&tr, k, l, SC_PHASE_RECOMPUTE) / 1000.0;
            /* a segment replays whole layers: take the forward span of the layer (it includes the
               down_proj and residual add that a one-layer replay skips) */
            if (k == 0) costs[l].fwd_s = sc_tracer_layer_ms(&tr, k, l, SC_PHASE_FWD) / 1000.0;
            else if (k == 1) costs[l].rsel_s = sec;
            else if (k == 2) costs[l].rmlp_s = sec;
            else if (k == 3) costs[l].rattn_s = sec;
            else costs[l].rproj_s = sec;
        }
    }
    m->tr = user_tr;
    sc_tracer_uninit(&tr);
    return r;
}

SCDEF sc_result sc_model_plan_budget(sc_plan *plan, sc_plan_report *rep, sc_model *m, const int32_t *ids, int B,
                                     int T, size_t budget)
{
    const sc_config *cfg = &m->cfg;
    sc_layer_cost *costs = (sc_layer_cost *)calloc((size_t)cfg->num_layers, sizeof(sc_layer_cost));
    if (!costs) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "sc_model_plan_budget: host memory");
    sc_result r = sc__model_profile_costs(m, ids, B, T, costs);
    if (r == SC_SUCCESS) {
        int pb, gb, ab;
        sc_model_config_storage(&m->mc, &pb, &gb, &ab);
        size_t usable = sc_plan_budget_usable(budget, cfg, B, T);
        r = sc_planner_plan(plan, rep, cfg, B, T, ab, sc_model_config_fixed_bytes(cfg, &m->mc), costs, usable);
        if (r != SC_SUCCESS) {
            char why[1024]; /* the message is rewritten below: copy it out first */
            snprintf(why, sizeof why, "%s", sc_last_error());
            r = sc__fail(r, "budget %.3f GiB (%.3f GiB after the allocator margin): %s", (double)budget / 1073741824.0,
                         (double)usable / 1073741824.0, why);
        }
        else snprintf(plan->name, sizeof plan->name, "budget:%.3fGiB", (double)budget / 1073741824.0);
    }
    free(costs);
    return r;
}
SCDEF sc_cuda *sc_model_cuda(sc_model *m) { return m->cu; }

#ifdef SLIDECHECK_CUDA
static void sc__tracer_cuda_sync(void *user) { sc_cuda_synchronize((sc_cuda *)user); }
#endif

SCDEF sc_tracer_mem sc_model_tracer_mem(const sc_model *m)
{
    sc_memory_stats st = sc_allocator_stats(&m->alloc);
    sc_tracer_mem mem;
    mem.allocated = st.allocated_bytes[SC_STAT_ALL].current;
    mem.reserved = st.reserved_bytes[SC_STAT_ALL].current;
    mem.peak_allocated = st.allocated_bytes[SC_STAT_ALL].peak;
    mem.peak_reserved = st.reserved_bytes[SC_STAT_ALL].peak;
    mem.host_pinned = (int64_t)sc_model_slide_info(m).pinned_bytes;
    return mem;
}

SCDEF void sc_model_tracer_timing(sc_model *m, sc_tracer_config *tc)
{
    tc->event_record = NULL;
    tc->event_elapsed_ms = NULL;
    tc->event_destroy = NULL;
    tc->device_sync = NULL;
    tc->user = NULL;
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        tc->event_record = sc_cuda_event_record;
        tc->event_elapsed_ms = sc_cuda_event_elapsed_ms;
        tc->event_destroy = sc_cuda_event_destroy;
        tc->device_sync = sc__tracer_cuda_sync;
        tc->user = m->cu;
    }
#else
    (void)m;
#endif
}

SCDEF int sc_parse_size(const char *s, size_t *out)
{
    static const struct { const char *suffix; double mult; } units[] = {
        {"", 1.0}, {"B", 1.0}, {"K", 1024.0}, {"KiB", 1024.0}, {"KB", 1e3}, {"M", 1048576.0},
        {"MiB", 1048576.0}, {"MB", 1e6}, {"G", 1073741824.0}, {"GiB", 1073741824.0}, {"GB", 1e9},
        {"T", 1099511627776.0}, {"TiB", 1099511627776.0}, {"TB", 1e12}};
    char *end;
    if (!s || !*s || *s == '-' || *s == '+') return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v >= 0) || v > 1e18) return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].suffix)) {
            double b = v * units[i].mult;
            if (b > 9.0e18) return -1;
            *out = (size_t)b;
            return 0;
        }
    return -1;
}

static void sc__graph_note_block(sc_model *m, void *p, size_t n);

static void sc__model_mem_hook(const sc_mem_event *ev, void *user)
{
    sc_model *m = (sc_model *)user;
    if (m->gs.rec && ev->kind == SC_MEM_ALLOC) sc__graph_note_block(m, ev->ptr, ev->size);
    if (m->tr && (ev->kind == SC_MEM_ALLOC || ev->kind == SC_MEM_FREE))
        sc_tracer_mem_record(m->tr, ev->allocated_bytes, ev->reserved_bytes,
                             ev->kind == SC_MEM_ALLOC ? (int64_t)ev->size : -(int64_t)ev->size, ev->tag);
}

SCDEF void sc_model_set_tracer(sc_model *m, sc_tracer *tr)
{
    m->tr = tr;
    m->alloc.cfg.on_event = tr || m->cu ? sc__model_mem_hook : NULL; /* (a graph capture records its blocks) */
    m->alloc.cfg.on_event_user = m;
}

/* Kernel launches since the last span boundary go to the span that was open (GPU only). */
static void sc__flush_launches(sc_model *m)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        int64_t n = sc_cuda_launch_count(m->cu);
        sc_tracer_count_launches(m->tr, n - m->launch_mark);
        m->launch_mark = n;
    }
#else
    (void)m;
#endif
}

static int sc__span_begin(sc_model *m, const char *name, sc_phase ph, int layer)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        char nv[96];
        if (layer >= 0) snprintf(nv, sizeof nv, "%s %s %d", sc_phase_name(ph), name, layer);
        else snprintf(nv, sizeof nv, "%s %s", sc_phase_name(ph), name);
        sc_cuda_nvtx_push(nv);
    }
#endif
    if (!m->tr) return -1;
    sc__flush_launches(m);
    return sc_tracer_span_begin(m->tr, name, ph, layer, 0);
}

static void sc__span_end(sc_model *m, int id)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu) sc_cuda_nvtx_pop();
#endif
    if (!m->tr) return;
    sc__flush_launches(m);
    sc_tracer_span_end(m->tr, id);
}

static sc_result sc__alloc_bytes(sc_model *m, float **out, size_t n, int esize, const char *tag)
{
    void *p = NULL;
    sc_result r = sc_allocator_alloc(&m->alloc, &p, n * (size_t)esize, 0, tag);
    *out = (float *)p;
    return r;
}
#define sc__alloc_act(m, out, n, tag) sc__alloc_bytes(m, out, n, (m)->ab, tag)
#define sc__alloc_f32(m, out, n, tag) sc__alloc_bytes(m, out, n, 4, tag)

static void sc__free(sc_model *m, void *p) { sc_allocator_free(&m->alloc, p); }

/* CPU bf16 mode: values are rounded to bf16 as the GPU would store them. */
static void sc__round(const sc_model *m, float *x, size_t n)
{
    if (m->mc.bf16 && !m->cu) sc_round_bf16_inplace(x, n);
}

static void sc__memset0(sc_model *m, void *p, size_t bytes)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu) { sc_cuda_memset0(m->cu, p, bytes); return; }
#endif
    (void)m;
    memset(p, 0, bytes);
}

static void sc__upload(sc_model *m, void *dst, const void *src, size_t bytes)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu) { sc_cuda_upload(m->cu, dst, src, bytes); return; }
#endif
    (void)m;
    memcpy(dst, src, bytes);
}

static void sc__host_to_f32(float *dst, const void *src, sc_dtype t, size_t n);

/* n floats of a buffer with esize-byte elements (f32 or bf16) into host f32. */
static sc_result sc__download_f32(sc_model *m, float *dst, const void *src, int esize, size_t n)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        sc_cuda_download_f32(m->cu, dst, src, esize == 2 ? SC_BF16 : SC_F32, n);
        return sc_cuda_status(m->cu);
    }
#endif
    (void)m;
    if (esize == 2) sc__host_to_f32(dst, src, SC_BF16, n); /* the CPU backend's bf16 optimizer state */
    else memcpy(dst, src, n * sizeof(float));
    return SC_SUCCESS;
}

static sc_result sc__upload_f32(sc_model *m, void *dst, int esize, const float *src, size_t n)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        sc_cuda_upload_f32(m->cu, dst, esize == 2 ? SC_BF16 : SC_F32, src, n);
        return sc_cuda_status(m->cu);
    }
#endif
    (void)m;
    if (esize == 2)
        for (size_t i = 0; i < n; i++) sc__st(dst, SC_BF16, i, src[i]);
    else memcpy(dst, src, n * sizeof(float));
    return SC_SUCCESS;
}

/* ==========================================================================================
   Slide mode, part 1: streams, events and host threads
   Streams: 0 compute, 1 upload (h2d), 2 download (d2h). On the GPU they are CUDA streams and
   events. On the CPU backend compute runs on the calling thread (stream 0 is always complete)
   and streams 1 and 2 are copy threads working through FIFO queues; an event there is a
   (stream, sequence number) pair, complete once the stream has done that many operations. The
   host optimizer is one more thread that takes a layer's update as soon as the event of its
   gradients' download has completed, and runs it over cpu_threads OpenMP threads.
   ========================================================================================== */
#ifndef _WIN32
#include <pthread.h>
#define SC__HAVE_THREADS 1
#endif

typedef struct sc__ev { void *cu; int stream; uint64_t seq; } sc__ev;   /* cu: a CUDA event */
typedef struct sc__op { int wait, wstream, unit, phase; uint64_t wseq; void *dst; const void *src; size_t bytes; } sc__op;
typedef struct sc__cq { sc__op *ops; size_t cap, head, n; uint64_t enq, done; } sc__cq;
enum { SC__TASK_LAYER = 0, SC__TASK_HEAD_EARLY = 1, SC__TASK_HEAD_LATE = 2, SC__TASK_CLIPPED = 3, SC__TASK_HEAD_ROWS = 4,
       SC__TASK_NORM = 5 };
/* A host task: the update of one unit once its gradients have landed (ev); dev: the device
   updated the layer and ev is the download of its new weights (nothing to run: the unit's next
   upload waits for it through pend[]); devhead: the device updated the LM head's rows (the host
   the final norm and the rows the embedding adds to). rank orders the
   tasks that have landed by when the next step needs them: an older step's first (DPU has two in
   flight), then the embedding and head (the next step starts with the embedding rows), then
   layer 0, 1, ... par: the parity of its update number (the pend[] it counts in, the working
   copy it writes); sb: the step buffers it reads. */
typedef struct sc__task { int kind, unit, landed, update, par, sb, dev, devhead, step2, r0, r1, parts; long long rank; uint64_t seq; sc__ev ev; sc_optim_consts k; } sc__task;
typedef struct sc__hspan { int phase, unit, stream; int64_t t0, t1, bytes; } sc__hspan;
typedef struct sc__slot { void *w; int unit; sc__ev ready, free; } sc__slot;
struct sc__slide;
typedef struct sc__qarg { struct sc__slide *sl; int i; } sc__qarg;

/* What one step's embedding and head tasks read: its ids (M x N), the rows they touch ([V])
   and the pinned staging buffer (embedding rows up, dL/dx_0 down). DPU keeps two: the last
   step's tasks still read theirs while the next step fills the other. */
typedef struct sc__stepbuf {
    void *stage; size_t stage_bytes;
    int32_t *ids; int M, N, ids_cap;
    unsigned char *touched;
    int32_t *tlist; int ntouched, tcap;
} sc__stepbuf;

typedef struct sc__slide {
    /* host: parameters (f32, or bf16 in pure-bf16 mode), gradients, AdamW state (dtype hst) and
       the working copies that uploads read, in the device weights' dtype (NULL: uploads read hp):
       master mode's bf16 copy in hw[0]; with DPU two, because step s reads what update s-2 wrote
       while update s-1 runs (update k writes hw[k & 1]) */
    void *hp, *hg, *hm, *hv, *hw[2];
    sc_dtype hpt, hst;
    sc__stepbuf sb[2];
    int cur;                       /* this step's sb (DPU alternates) */
    size_t pinned_bytes, host_bytes;
    int hp_pinned;
    int zero;                      /* ZeRO-1: hm and hv hold this rank's part only (sc__slide_state_at) */
    /* device: weight slots of the layers, the head slot, per-unit pointers while resident */
    sc__slot *slots, head;
    int nslots;
    float *lw[SC_MAX_LAYERS + 1], *lg[SC_MAX_LAYERS + 1];
    float *head_g;
    /* head_g's layout: [LM head | final norm], or [final norm | LM head] (norm_first: an untied head
       summed over NCCL, so that its one sum is resident mode's bucket 0, element for element) */
    int norm_first;
    /* layers kept on the device (mc.slide_device_layers): weights, gradients, f32 master and
       AdamW state of their own, outside the window; ndev of them */
    float *dw[SC_MAX_LAYERS], *dg[SC_MAX_LAYERS], *dmw[SC_MAX_LAYERS], *dm[SC_MAX_LAYERS], *dv[SC_MAX_LAYERS];
    int ndev;
    /* a sliced LM head: two slice buffers of weights, and with per-slice gradients two of
       gradients (unit = which use they hold) */
    sc__slot hs[2], hsg[2];
    int hs_pergrad;
    /* the window's device memory is one block (pool), carved at fixed offsets by sc__slide_slots:
       the slots, the head slot and slices, then the gradient area (garea, gbytes): the head's
       gradients in its first ghead bytes, a ring of nring layer gradient buffers from its end.
       Reused step after step: a buffer waits in stream order for its last download instead of
       a new segment from the allocator while the download runs (rfree[k], hgfree). */
    void *pool;
    size_t pool_bytes, gbytes, ghead;
    char *garea;
    int nring, rnext, lgk[SC_MAX_LAYERS + 1];
    sc__ev rfree[SC_MAX_LAYERS + 1], hgfree;
    sc__ev hfree[SC_MAX_LAYERS + 1]; /* ring buffer k's share of the head's gradients has gone down */
    /* the step's schedule: groups of units that must be resident together (unit L = head) */
    int ngroups, gfirst[2 * SC_MAX_LAYERS + 2], glast[2 * SC_MAX_LAYERS + 2];
    sc_optim_consts k;
    int update;
    /* slide_device_update: this step updates the layers on the device (devup); the slots hold
       the current weights of their layers, for the next step (keep_slots); the layers' gradients
       of the last step did not come down (no_host_grads) */
    int devup, keep_slots, no_host_grads;
    /* ... and the LM head too, slice by slice in the head slot (devhead); host_params: what the
       host updated */
    int devhead;
    size_t host_params;
    /* the head slot keeps the LM head between steps (devhead steps): hfresh, its rows are the
       current weights but for those the host updated last (hrefresh: a tied head's touched rows
       and the final norm, uploaded before the slot is read again); a tied head's rows that the
       step's tokens touch come down before the host updates them */
    int hfresh, hrefresh;
    /* parities of update numbers this step: rb = the hw it uploads from, wp = the updates its
       uploads wait for, pp = the last update's (its gradient downloads wait for that one: it
       reads hg), par = its own tasks'. pending: DPU, the last step's update is not in this
       step's weights. */
    int rb, wp, pp, par, pending;
    uint64_t nstep;
    sc_result task_err;            /* a host task that failed (reported at the step's end) */
    uint64_t h2d, d2h, h2d_first;
    int past_fwd;                  /* the step's head and loss have begun */
    double opt_ms[2], wait_ms;      /* opt_ms: by the parity of the step that queued the task */
    int head_parts;                /* SC__TASK_HEAD_ROWS tasks the last step queued */
#ifdef SC__HAVE_THREADS
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t qth[2], oth;
    int qstarted[2], ostarted, stop, sync_ok;
    sc__qarg qarg[2];
#endif
    sc__cq q[2];
    /* queued host tasks in queue order; pend[p][u]: tasks of unit u (L: the head and embedding)
       of update-number parity p not yet run. Updates of one step may still run while the next
       step starts: a unit's upload waits for its own update only. */
    sc__task *tasks; size_t tcap, tn; uint64_t tqueued, tdone;
    int pend[2][SC_MAX_LAYERS + 1];
    /* the gradient norm's chunk sums, those of each layer summed as it lands: for clipping, or
       unclipped once sc_model_grad_norm was asked for. gn_split: unclipped, one process or NCCL: the
       updating steps queue each layer's sums as a task of their own, ahead of the updates, so
       that the norm waits for them and not for the updates; gn_now: this step did; gn_tasks:
       those queued and not yet run */
    double *gn_part;
    unsigned char *gn_done;
    size_t gn_nc;
    int gn_split, gn_now, gn_tasks;
    int gn_dev; /* the device sums each streamed layer's chunks before its gradients go down, into
                   gn_part (pinned): the host's task only marks them (one process, or NCCL) */
    sc__hspan *hspans; size_t nhspans, chspans;
    struct sc_model *m;
} sc__slide;

#ifdef SC__HAVE_THREADS
#define SC__LOCK(sl) pthread_mutex_lock(&(sl)->mu)
#define SC__UNLOCK(sl) pthread_mutex_unlock(&(sl)->mu)
#define SC__WAIT(sl) pthread_cond_wait(&(sl)->cv, &(sl)->mu)
#define SC__WAKE(sl) pthread_cond_broadcast(&(sl)->cv)
#else
#define SC__LOCK(sl) (void)0
#define SC__UNLOCK(sl) (void)0
#define SC__WAIT(sl) (void)0
#define SC__WAKE(sl) (void)0
#endif

static int sc__ev_done_locked(const sc__slide *sl, const sc__ev *e)
{
    return e->stream <= 0 || e->seq == 0 || sl->q[e->stream - 1].done >= e->seq;
}

/* a host span from a worker thread (under the lock); flushed to the tracer at the step's end */
static void sc__hspan_push(sc__slide *sl, int phase, int unit, int stream, int64_t t0, int64_t t1, int64_t bytes)
{
    if (sl->nhspans == sl->chspans) {
        size_t n = sl->chspans ? 2 * sl->chspans : 256;
        sc__hspan *p = (sc__hspan *)SC_REALLOC(sl->hspans, n * sizeof *p);
        if (!p) return; /* a lost span, never a lost result */
        sl->hspans = p;
        sl->chspans = n;
    }
    sc__hspan h;
    h.phase = phase; h.unit = unit; h.stream = stream; h.t0 = t0; h.t1 = t1; h.bytes = bytes;
    sl->hspans[sl->nhspans++] = h;
}

#ifdef SC__HAVE_THREADS
/* a CPU-backend copy stream: runs its queue in order */
static void *sc__cq_main(void *arg)
{
    sc__qarg *qa = (sc__qarg *)arg;
    sc__slide *sl = qa->sl;
    sc__cq *q = &sl->q[qa->i];
    SC__LOCK(sl);
    for (;;) {
        while (!sl->stop && q->n == 0) SC__WAIT(sl);
        if (q->n == 0) break;
        sc__op op = q->ops[q->head];
        if (op.wait) {
            sc__ev e;
            e.cu = NULL; e.stream = op.wstream; e.seq = op.wseq;
            while (!sc__ev_done_locked(sl, &e)) SC__WAIT(sl);
        } else {
            SC__UNLOCK(sl);
            int64_t t0 = sc__trace_now_ns();
            memcpy(op.dst, op.src, op.bytes);
            int64_t t1 = sc__trace_now_ns();
            SC__LOCK(sl);
            sc__hspan_push(sl, op.phase, op.unit, qa->i + 1, t0, t1, (int64_t)op.bytes);
        }
        q->head = (q->head + 1) % q->cap;
        q->n--;
        q->done++;
        SC__WAKE(sl);
    }
    SC__UNLOCK(sl);
    return NULL;
}
#endif

/* queue an operation on CPU stream s (1 or 2); returns its sequence number, 0 on no memory */
static uint64_t sc__cq_push(sc__slide *sl, int s, const sc__op *op)
{
    sc__cq *q = &sl->q[s - 1];
    uint64_t seq = 0;
    SC__LOCK(sl);
    if (q->n == q->cap) {
        size_t n = q->cap ? 2 * q->cap : 64;
        sc__op *p = (sc__op *)SC_MALLOC(n * sizeof *p);
        if (!p) { SC__UNLOCK(sl); return 0; }
        for (size_t i = 0; i < q->n; i++) p[i] = q->ops[(q->head + i) % q->cap];
        SC_FREE(q->ops);
        q->ops = p;
        q->cap = n;
        q->head = 0;
    }
    q->ops[(q->head + q->n) % q->cap] = *op;
    q->n++;
    seq = ++q->enq;
    SC__WAKE(sl);
    SC__UNLOCK(sl);
    return seq;
}

static sc__ev sc__ev_record(sc_model *m, int stream)
{
    sc__ev e;
    e.cu = NULL; e.stream = stream; e.seq = 0;
#ifdef SLIDECHECK_CUDA
    if (m->cu) { e.cu = sc_cuda_event_record(stream, m->cu); return e; }
#endif
    if (stream > 0) {
        SC__LOCK(m->sl);
        e.seq = m->sl->q[stream - 1].enq;
        SC__UNLOCK(m->sl);
    }
    return e;
}

/* has the event completed? (caller holds the lock) */
static int sc__ev_query_locked(sc_model *m, const sc__ev *e)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu) return !e->cu || sc_cuda_event_query(e->cu, m->cu);
#endif
    return sc__ev_done_locked(m->sl, e);
}

/* host waits for the event */
static void sc__ev_sync(sc_model *m, const sc__ev *e)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu) { if (e->cu) sc_cuda_event_synchronize(e->cu, m->cu); return; }
#endif
    sc__slide *sl = m->sl;
    SC__LOCK(sl);
    while (!sc__ev_done_locked(sl, e)) SC__WAIT(sl);
    SC__UNLOCK(sl);
}

static void sc__ev_release(sc_model *m, sc__ev *e)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu && e->cu) sc_cuda_event_destroy(e->cu, m->cu);
#else
    (void)m;
#endif
    e->cu = NULL;
    e->seq = 0;
    e->stream = 0;
}

/* work queued on `stream` from now on waits for e */
static void sc__stream_wait(sc_model *m, int stream, const sc__ev *e)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu) { if (e->cu) sc_cuda_stream_wait(m->cu, stream, e->cu); return; }
#endif
    if (e->stream <= 0 || e->seq == 0 || e->stream == stream) return;
    if (stream == 0) { sc__ev_sync(m, e); return; }
    sc__op op;
    memset(&op, 0, sizeof op);
    op.wait = 1; op.wstream = e->stream; op.wseq = e->seq;
    sc__cq_push(m->sl, stream, &op);
}

/* bytes from src to dst on `stream`; a span of `phase` for `unit` (layer, or -1 for the head) */
static void sc__copy_async(sc_model *m, int stream, void *dst, const void *src, size_t bytes, sc_phase phase, int unit)
{
    if (!bytes) return;
    if (phase == SC_PHASE_H2D) m->sl->h2d += bytes;
    if (phase == SC_PHASE_H2D && !m->sl->past_fwd) m->sl->h2d_first += bytes;
    if (phase == SC_PHASE_D2H) m->sl->d2h += bytes;
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        int sp = -1;
        if (m->tr && stream > 0) {
            sp = sc_tracer_span_begin(m->tr, phase == SC_PHASE_H2D ? "h2d" : "d2h", phase, unit, stream);
            sc_tracer_span_bytes(m->tr, sp, (int64_t)bytes);
        }
        sc_cuda_copy_async(m->cu, stream, dst, src, bytes);
        if (sp >= 0) sc_tracer_span_end(m->tr, sp);
        return;
    }
#endif
    if (stream == 0) { memcpy(dst, src, bytes); return; }
    sc__op op;
    memset(&op, 0, sizeof op);
    op.dst = dst; op.src = src; op.bytes = bytes; op.unit = unit; op.phase = (int)phase;
    if (!sc__cq_push(m->sl, stream, &op)) memcpy(dst, src, bytes); /* no memory for the queue: copy now */
}

/* CPU-backend events for the caching allocator, so that a block freed while a copy thread still
   reads it is reused only after that copy (record_stream, as on the GPU) */
static void *sc__cpu_event_record(int stream, void *user)
{
    sc_model *m = (sc_model *)user;
    if (stream <= 0 || !m->sl) return NULL;
    sc__ev *e = (sc__ev *)SC_MALLOC(sizeof *e);
    if (!e) { sc__ev ev = sc__ev_record(m, stream); sc__ev_sync(m, &ev); return NULL; }
    *e = sc__ev_record(m, stream);
    return e;
}
static int sc__cpu_event_query(void *event, void *user)
{
    sc_model *m = (sc_model *)user;
    SC__LOCK(m->sl);
    int done = sc__ev_done_locked(m->sl, (const sc__ev *)event);
    SC__UNLOCK(m->sl);
    return done;
}
static void sc__cpu_event_destroy(void *event, void *user) { (void)user; SC_FREE(event); }
static void sc__cpu_event_synchronize(void *event, void *user) { sc__ev_sync((sc_model *)user, (const sc__ev *)event); }

static void sc__slide_destroy(sc_model *m);
static sc_result sc__slide_create(sc_model *m, const float *init);

static void sc__act_drop(sc_model *m, int l, int a)
{
    sc__free(m, m->acts[l][a]);
    m->acts[l][a] = NULL;
}

/* every micro-batch's activations */
static void sc__bwd_scratch_free(sc_model *m);

static void sc__model_drop_acts(sc_model *m)
{
    sc__bwd_scratch_free(m);
    size_t n = (size_t)m->accum_cap * (size_t)(m->cfg.num_layers + 1);
    for (size_t i = 0; i < n; i++)
        for (int a = 0; a < SC__A_COUNT; a++) {
            sc__free(m, m->act_store[i][a]);
            m->act_store[i][a] = NULL;
        }
}

static void sc__free_dres(sc_model *m)
{
    for (int k = 0; k < m->accum_cap; k++) {
        sc__free(m, m->dres0[k]);
        m->dres0[k] = NULL;
    }
}

static void sc__graph_drop(sc_model *m);
static double sc__comm_wait_s(const sc_dist_comm *c);

#ifdef SLIDECHECK_CUDA
/* Ranks of one host: the gradient sums by the copy engines (sc_cuda_p2p_*), which leave the
   backward every SM, where NCCL's kernels slowed the GEMMs they overlapped. Resident mode
   registers the gradients and a scratch for the parts the peers send ((W - 1) / W of them) and
   maps the peers'. Past two ranks those sums add in rank order, not in NCCL's ring's, so slide mode
   (nothing registered) sums in that order too, over NCCL's copies. Used only where every rank
   succeeded, else NCCL sums (and the scratch goes). Every rank always exchanges here, so that a
   rank that opts out (dp_sums) or fails tells the others. */
static sc_result sc__p2p_setup(sc_model *m)
{
    sc_dist_comm *c = m->mc.comm;
    int W = sc_dist_comm_world(c), resident = m->mc.mode == SC_MODE_RESIDENT;
    if (!m->nccl || W < 2 || W > 8 || (W == 2 && !resident)) return SC_SUCCESS;
    const char *nop2p = getenv("NCCL_P2P_DISABLE"); /* the user keeps NCCL off peer access: so do we */
    int want = m->mc.dp_sums != SC_DP_SUMS_NCCL && !(nop2p && *nop2p && strcmp(nop2p, "0"));
    unsigned char mine[SC_CUDA_P2P_BLOB_BYTES], all[8 * SC_CUDA_P2P_BLOB_BYTES];
    memset(mine, 0, sizeof mine);
    size_t sb = sc__p2p_scratch_bytes(&m->mc, m->nparams, m->gb, W);
    sc_result r = SC_ERROR_UNSUPPORTED, e;
    if (want && (r = sc__alloc_bytes(m, &m->p2p_scratch, sb / (size_t)m->gb, m->gb,
                                     "copy-engine sums: the peers' parts")) == SC_SUCCESS)
        r = sc_cuda_p2p_export(m->cu, resident ? m->grads : NULL, resident ? m->nparams * (size_t)m->gb : 0,
                               m->p2p_scratch, sb, mine);
    if ((e = sc_dist_gather(c, mine, all, sizeof mine)) != SC_SUCCESS ||
        (e = sc_dist_broadcast(c, all, (size_t)W * sizeof mine)) != SC_SUCCESS)
        return e;
    if (r == SC_SUCCESS) r = sc_cuda_p2p_import(m->cu, all);
    float ok = r == SC_SUCCESS ? 1.0f : 0.0f;
    if ((e = sc_dist_allreduce_f32(c, &ok, 1)) != SC_SUCCESS) return e;
    sc_cuda_p2p_use(m->cu, ok == (float)W);
    if (ok != (float)W) {
        if (want && m->mc.verbose)
            fprintf(stderr, "data parallel: the gradients are summed by NCCL (copy engines: %s)\n",
                    r != SC_SUCCESS ? sc_last_error() : "another rank could not use them");
        sc__free(m, m->p2p_scratch);
        m->p2p_scratch = NULL;
    }
    return SC_SUCCESS;
}
#endif

SCDEF void sc_model_destroy(sc_model *m)
{
    if (!m) return;
    sc__graph_drop(m);
    SC_FREE(m->gs.blk);
    SC_FREE(m->gs.blkn);
    if (m->sl) sc__slide_destroy(m);
    if (m->act_store) sc__model_drop_acts(m);
    if (m->dres0) sc__free_dres(m);
    SC_FREE(m->act_store);
    SC_FREE(m->dres0);
#ifdef SLIDECHECK_CUDA
    sc_cuda_p2p_use(m->cu, 0); /* the peer's mappings closed before the buffers go */
#endif
    void *bufs[] = {m->params, m->grads, m->master, m->opt_m, m->opt_v, m->rope_cos, m->rope_sin,
                    m->ids_dev_all, m->targets_all, m->rowloss_all, m->p2p_scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) sc__free(m, bufs[i]);
    sc_allocator_uninit(&m->alloc);
#ifdef SLIDECHECK_CUDA
    sc_cuda_destroy(m->cu);
#endif
    SC_FREE(m->logits_host);
    SC_FREE(m->rowloss_host);
    SC_FREE(m);
}

/* HF init: normal(0, initializer_range) for linear and embedding weights, 1 for norms, 0 for
   biases. Element k of parameter i comes from its own counter-based stream (seed, i, k), so the
   values do not depend on the layout or the thread count, and init runs on all cores. */
SCDEF sc_result sc_params_init(float *dst, const sc_config *cfg, uint64_t seed)
{
    int np = sc_config_params(cfg, NULL, 0);
    sc_param_info *pi = (sc_param_info *)SC_MALLOC(sizeof(sc_param_info) * (size_t)np);
    if (!pi) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc of the parameter table failed");
    sc_config_params(cfg, pi, np);
    for (int i = 0; i < np; i++) {
        float *p = dst + pi[i].offset;
        int is_norm = strstr(pi[i].name, "norm") != NULL, is_bias = strstr(pi[i].name, ".bias") != NULL;
        float std = (float)cfg->init_std;
        uint64_t base = seed * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xD1B54A32D192ED03ull;
        SC__OMP(omp parallel for)
        for (long long k = 0; k < (long long)pi[i].numel; k++) {
            sc_rng r = sc_rng_seed(base + (uint64_t)k);
            p[k] = is_norm ? 1.0f : is_bias ? 0.0f : std * sc_rng_normal(&r);
        }
    }
    SC_FREE(pi);
    return SC_SUCCESS;
}

SCDEF sc_result sc_model_create(sc_model **out, const sc_config *cfg, const sc_model_config *mcin,
                                const float *params)
{
    sc_result r;
    *out = NULL;
    SC__TRY(sc_config_validate(cfg));
    if (cfg->num_layers > SC_MAX_LAYERS)
        return sc__fail(SC_ERROR_UNSUPPORTED, "%d layers: at most %d supported", cfg->num_layers, SC_MAX_LAYERS);
    sc_model_config mc = mcin ? *mcin : sc_model_config_init();
    if (!mc.seed) mc.seed = 1234;
    if (mc.lr == 0.0f) mc.lr = 1e-4f;
    if (mc.beta1 == 0.0f) mc.beta1 = 0.9f;
    if (mc.beta2 == 0.0f) mc.beta2 = 0.999f;
    if (mc.eps == 0.0f) mc.eps = 1e-8f;
    sc_model *m = (sc_model *)SC_MALLOC(sizeof *m);
    if (!m) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc of the model struct failed");
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->mc = mc;
    m->gscale = 1.0f;
    m->gnorm = NAN;
    m->pb = m->gb = m->ab = 4;
    m->pdt = m->gdt = SC_F32;
    sc_allocator_config ac;
    memset(&ac, 0, sizeof ac);
    ac.mem_cap = mc.mem_cap;
    ac.name = "cpu";
    if (mc.device == SC_DEVICE_CUDA) {
#ifdef SLIDECHECK_CUDA
        sc_cuda_config cc;
        memset(&cc, 0, sizeof cc);
        cc.bf16 = mc.bf16;
        cc.grads_f32 = mc.master_weights;
        cc.device = mc.gpu;
        cc.gemm_tune = mc.gemm_tune;
        if ((r = sc_cuda_create(&m->cu, &cc)) != SC_SUCCESS) { SC_FREE(m); return r; }
        if (mc.bf16) {
            m->pb = m->ab = 2;
            m->pdt = SC_BF16;
            if (!mc.master_weights) { m->gb = 2; m->gdt = SC_BF16; }
        }
        snprintf(m->devname, sizeof m->devname, "cuda:%d", mc.gpu);
        ac.name = m->devname;
        ac.raw_alloc = sc_cuda_raw_alloc;
        ac.raw_free = sc_cuda_raw_free;
        ac.raw_user = m->cu;
        ac.event_record = sc_cuda_event_record;
        ac.event_query = sc_cuda_event_query;
        ac.event_destroy = sc_cuda_event_destroy;
        ac.event_synchronize = sc_cuda_event_synchronize;
        ac.event_user = m->cu;
#else
        SC_FREE(m);
        return sc__fail(SC_ERROR_NO_DEVICE, "this build has no CUDA backend (build with nvcc: make)");
#endif
    }
    if (mc.mode == SC_MODE_SLIDE && !m->cu) {
        /* the CPU backend's copy threads read "device" blocks: reuse waits for them, as on a GPU */
        ac.event_record = sc__cpu_event_record;
        ac.event_query = sc__cpu_event_query;
        ac.event_destroy = sc__cpu_event_destroy;
        ac.event_synchronize = sc__cpu_event_synchronize;
        ac.event_user = m;
    }
    if ((r = sc_allocator_init(&m->alloc, &ac)) != SC_SUCCESS) {
#ifdef SLIDECHECK_CUDA
        sc_cuda_destroy(m->cu);
#endif
        SC_FREE(m);
        return r;
    }
    m->alloc.cfg.on_event = m->cu ? sc__model_mem_hook : NULL;
    m->alloc.cfg.on_event_user = m;
    m->nparams = sc_config_num_params(cfg);
    float *host = NULL;
    if (mc.cuda_graph != SC_CUDA_GRAPH_AUTO && mc.cuda_graph != SC_CUDA_GRAPH_ON && mc.cuda_graph != SC_CUDA_GRAPH_OFF) {
        r = sc__fail(SC_ERROR_INVALID_ARGS, "cuda_graph is SC_CUDA_GRAPH_AUTO, _ON or _OFF, not %d", (int)mc.cuda_graph);
        goto fail;
    }
    if (mc.cuda_graph == SC_CUDA_GRAPH_ON && (!m->cu || mc.mode != SC_MODE_RESIDENT || mc.keep_logits)) {
        r = sc__fail(SC_ERROR_UNSUPPORTED, "a whole-step CUDA graph needs the CUDA backend, resident mode and no kept "
                     "logits");
        goto fail;
    }
    if (mc.gemm_tune && (!m->cu || mc.mem_cap)) {
        r = sc__fail(SC_ERROR_UNSUPPORTED, "gemm_tune needs the CUDA backend and no mem_cap (its scratch is outside "
                     "the allocator's accounting)");
        goto fail;
    }
    if (mc.mode != SC_MODE_RESIDENT && mc.mode != SC_MODE_SLIDE) {
        r = sc__fail(SC_ERROR_INVALID_ARGS, "unknown mode %d", (int)mc.mode);
        goto fail;
    }
    if (mc.slide_prefetch < 0 || (mc.mode == SC_MODE_SLIDE && mc.slide_prefetch > cfg->num_layers)) {
        r = sc__fail(SC_ERROR_INVALID_ARGS, "slide_prefetch %d: must be between 1 and the layer count (%d)",
                     mc.slide_prefetch, cfg->num_layers);
        goto fail;
    }
    if (mc.head_slice < 0) {
        r = sc__fail(SC_ERROR_INVALID_ARGS, "head slice %d: must be 0 (whole head) or a row count", mc.head_slice);
        goto fail;
    }
    if (mc.head_slice >= cfg->vocab_size) mc.head_slice = m->mc.head_slice = 0; /* one slice: the whole head */
    if ((mc.slide_dpu || mc.slide_keep_head) && mc.mode != SC_MODE_SLIDE) {
        r = sc__fail(SC_ERROR_INVALID_ARGS, "%s needs slide mode",
                     mc.slide_dpu ? "the delayed parameter update (slide_dpu)" : "slide_keep_head");
        goto fail;
    }
    if (mc.slide_dpu && mc.slide_keep_head) { /* the device holds one copy of the head: a read-back
                                                 would need the update the next step must not see */
        r = sc__fail(SC_ERROR_UNSUPPORTED, "slide_keep_head and slide_dpu together are not supported");
        goto fail;
    }
    if (mc.bucket_mb < SC_BUCKET_LAYER) {
        r = sc__fail(SC_ERROR_INVALID_ARGS,
                     "bucket_mb %d: must be 0 (the default, %d MiB), SC_BUCKET_LAYER (%d: one sum a layer) or a size in MiB",
                     mc.bucket_mb, SC_BUCKET_MB, SC_BUCKET_LAYER);
        goto fail;
    }
    if (mc.dp_sums != SC_DP_SUMS_AUTO && mc.dp_sums != SC_DP_SUMS_NCCL) {
        r = sc__fail(SC_ERROR_INVALID_ARGS, "dp_sums %d: must be SC_DP_SUMS_AUTO (0) or SC_DP_SUMS_NCCL (1)", mc.dp_sums);
        goto fail;
    }
    if (!(mc.clip_grad_norm >= 0.0f) || mc.clip_grad_norm > 1e30f) {
        r = sc__fail(SC_ERROR_INVALID_ARGS, "clip_grad_norm %g: must be 0 (off) or a positive norm", (double)mc.clip_grad_norm);
        goto fail;
    }
    /* the norm needs every gradient before any update: these update some of them during the
       backward, or never bring them to the host */
    if (mc.clip_grad_norm > 0.0f && (mc.slide_dpu || mc.slide_keep_head || mc.slide_device_update)) {
        r = sc__fail(SC_ERROR_UNSUPPORTED, "clip_grad_norm needs every gradient in one place before any update: not with "
                     "slide_dpu, slide_keep_head or slide_device_update");
        goto fail;
    }
    if (mc.slide_head_once && (mc.mode != SC_MODE_SLIDE || mc.slide_keep_head || mc.head_slice <= 0)) {
        r = sc__fail(SC_ERROR_INVALID_ARGS, "slide_head_once needs slide mode, a sliced head (head_slice) and no "
                     "slide_keep_head");
        goto fail;
    }
    if (mc.slide_device_update &&
        (mc.mode != SC_MODE_SLIDE || mc.optim != SC_OPTIM_SGD || mc.master_weights || mc.slide_dpu ||
         sc_dist_comm_world(mc.comm) > 1)) {
        r = sc__fail(mc.mode != SC_MODE_SLIDE ? SC_ERROR_INVALID_ARGS : SC_ERROR_UNSUPPORTED,
                     "slide_device_update needs slide mode with SGD, no master weights, no slide_dpu and one process "
                     "(AdamW's state and an f32 master stay on the host, so their update does too)");
        goto fail;
    }
    {
        int ndev = 0;
        for (int l = 0; l < cfg->num_layers; l++) ndev += mc.slide_device_layers[l] != 0;
        if (ndev && mc.mode != SC_MODE_SLIDE) {
            r = sc__fail(SC_ERROR_INVALID_ARGS, "slide_device_layers (%d layers on the device) needs slide mode: "
                         "resident mode keeps every layer there", ndev);
            goto fail;
        }
        /* DPU reads weights a step behind, the device update and the norm's update after the whole
           backward have orders of their own, and data parallel sums host gradients: not built for
           the layers that never leave the device */
        if (ndev && (mc.slide_dpu || mc.slide_device_update || mc.clip_grad_norm > 0.0f || mc.comm)) {
            r = sc__fail(SC_ERROR_UNSUPPORTED, "slide_device_layers (%d layers on the device) is not supported with %s",
                         ndev, mc.slide_dpu ? "slide_dpu" : mc.slide_device_update ? "slide_device_update"
                               : mc.clip_grad_norm > 0.0f ? "clip_grad_norm" : "data parallel (comm)");
            goto fail;
        }
    }
    if (sc_dist_comm_world(mc.comm) > 1 && mc.mode == SC_MODE_SLIDE && (mc.slide_dpu || mc.slide_keep_head)) {
        r = sc__fail(SC_ERROR_UNSUPPORTED, "slide mode's data parallel runs without slide_dpu and slide_keep_head, for now");
        goto fail;
    }
    /* slide mode's AdamW state is on the host, sharded alike with or without master weights */
    if (mc.comm && mc.device == SC_DEVICE_CUDA && mc.zero && mc.master_weights && mc.mode == SC_MODE_RESIDENT) {
        r = sc__fail(SC_ERROR_UNSUPPORTED, "ZeRO-1 on the GPU shards the AdamW state of the weights the step uses "
                     "(bf16 or f32); with f32 master weights (--master-weights) it is not built yet");
        goto fail;
    }
#ifdef SLIDECHECK_CUDA
    /* rank 0's NCCL id over the control channel. A comm of one process takes this path too: the
       sums are copies, so the GPU's data-parallel step can be checked on one GPU */
    if (mc.comm && m->cu &&
        (mc.mode == SC_MODE_RESIDENT || (!mc.slide_dpu && !mc.slide_keep_head))) {
        unsigned char id[SC_NCCL_ID_BYTES];
        memset(id, 0, sizeof id);
        if (sc_dist_comm_rank(mc.comm) == 0 && (r = sc_cuda_nccl_unique_id(id)) != SC_SUCCESS) goto fail;
        if ((r = sc_dist_broadcast(mc.comm, id, sizeof id)) != SC_SUCCESS) goto fail;
        if ((r = sc_cuda_nccl_open(m->cu, sc_dist_comm_world(mc.comm), sc_dist_comm_rank(mc.comm), id,
                                   sc__comm_wait_s(mc.comm))) != SC_SUCCESS)
            goto fail;
        m->nccl = 1;
        m->zero_gpu = mc.zero && mc.optim == SC_OPTIM_ADAMW && mc.mode == SC_MODE_RESIDENT;
    }
#endif
    if (mc.mode == SC_MODE_SLIDE) {
        /* weights, gradients and optimizer state on the host; the device holds only slots */
        host = (float *)SC_MALLOC(sizeof(float) * m->nparams);
        if (!host) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc of %zu parameters failed", m->nparams); goto fail; }
        if (params) memcpy(host, params, sizeof(float) * m->nparams);
        else if ((r = sc_params_init(host, cfg, mc.seed)) != SC_SUCCESS) goto fail;
        if (mc.bf16) sc_round_bf16_inplace(host, m->nparams);
        if ((r = sc__slide_create(m, host)) != SC_SUCCESS) goto fail;
        SC_FREE(host);
        host = NULL;
#ifdef SLIDECHECK_CUDA
        if ((r = sc__p2p_setup(m)) != SC_SUCCESS) goto fail;
#endif
        *out = m;
        return SC_SUCCESS;
    }
    if ((r = sc__alloc_bytes(m, &m->params, m->nparams, m->pb, "weights")) != SC_SUCCESS ||
        (r = sc__alloc_bytes(m, &m->grads, m->nparams, m->gb, "grad")) != SC_SUCCESS)
        goto fail;
    if (m->cu && mc.master_weights &&
        (r = sc__alloc_f32(m, &m->master, m->nparams, "master weights")) != SC_SUCCESS)
        goto fail;
    host = (float *)SC_MALLOC(sizeof(float) * m->nparams);
    if (!host) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc of %zu parameters failed", m->nparams); goto fail; }
    if (params) memcpy(host, params, sizeof(float) * m->nparams);
    else if ((r = sc_params_init(host, cfg, mc.seed)) != SC_SUCCESS) goto fail;
    if (mc.bf16) sc_round_bf16_inplace(host, m->nparams);
    if ((r = sc__upload_f32(m, m->params, m->pb, host, m->nparams)) != SC_SUCCESS) goto fail;
    if (m->master && (r = sc__upload_f32(m, m->master, 4, host, m->nparams)) != SC_SUCCESS) goto fail;
    SC_FREE(host);
    host = NULL;
#ifdef SLIDECHECK_CUDA
    if ((r = sc__p2p_setup(m)) != SC_SUCCESS) goto fail;
#endif
    *out = m;
    return SC_SUCCESS;
fail:
    SC_FREE(host);
    sc_model_destroy(m);
    return r;
}

static sc_result sc__ensure_rope(sc_model *m, int T)
{
    if (m->rope_T >= T) return SC_SUCCESS;
    sc__free(m, m->rope_cos);
    sc__free(m, m->rope_sin);
    m->rope_cos = m->rope_sin = NULL;
    m->rope_T = 0;
    size_t n = (size_t)T * (size_t)(m->cfg.head_dim / 2);
    float *hc = (float *)SC_MALLOC(sizeof(float) * n * 2);
    if (!hc) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc of the RoPE table failed");
    sc_rope_table(hc, hc + n, T, m->cfg.head_dim, m->cfg.rope_theta);
    sc_result r;
    if ((r = sc__alloc_f32(m, &m->rope_cos, n, "rope.cos")) == SC_SUCCESS &&
        (r = sc__alloc_f32(m, &m->rope_sin, n, "rope.sin")) == SC_SUCCESS) {
        sc__upload(m, m->rope_cos, hc, n * sizeof(float));
        sc__upload(m, m->rope_sin, hc + n, n * sizeof(float));
        m->rope_T = T;
    }
    SC_FREE(hc);
    return r;
}

/* Allocate activation slot `a` of layer l (slot X of layer L is the stack's output). */
static sc_result sc__act_get(sc_model *m, int l, int a)
{
    if (m->acts[l][a]) return SC_SUCCESS;
    char tag[64];
    snprintf(tag, sizeof tag, "layer %d %s (saved activation)", l, sc__act_names[a]);
    size_t n = sc__act_numel(&m->cfg, a, m->B, m->T);
    if (!n) return SC_SUCCESS; /* e.g. q/k-norm statistics of a model without q/k norms */
    return sc__alloc_bytes(m, &m->acts[l][a], n, sc__act_is_stat(a) ? 4 : m->ab, tag);
}

/* Layer l's weights and gradients: in the flat buffers (resident), or in its slot and its
   gradient buffer (slide). */
static float *sc__lw(sc_model *m, int l, size_t off)
{
    if (off == SIZE_MAX) return NULL;
    if (m->sl) return sc__at(m->sl->lw[l], off, m->pb);
    return sc__at(m->params, sc_config_layer_base(&m->cfg, l) + off, m->pb);
}
static float *sc__lg(sc_model *m, int l, size_t off)
{
    if (off == SIZE_MAX) return NULL;
    if (m->sl) return sc__at(m->sl->lg[l], off, m->gb);
    return sc__at(m->grads, sc_config_layer_base(&m->cfg, l) + off, m->gb);
}
/* The LM head (norm = 0) or final norm (norm = 1) weights / gradients (grad = 1). Slide keeps
   them in the head slot: [lm head: V*C | norm: C]. */
static int sc__head_rows(const sc_model *m) { return m->mc.head_slice > 0 ? m->mc.head_slice : m->cfg.vocab_size; }

/* Slide keeping the head (m->params != NULL in slide mode): the device holds the parameters
   outside the layers, [embedding | final norm | untied LM head]; flat offset off maps to
   sc__kept_off. */
static size_t sc__kept_numel(const sc_config *c)
{
    return (size_t)c->vocab_size * c->hidden_size + sc_config_num_params(c) - sc_config_norm_offset(c);
}
static size_t sc__kept_off(const sc_config *c, size_t off)
{
    size_t e = (size_t)c->vocab_size * c->hidden_size;
    return off < e ? off : off - sc_config_norm_offset(c) + e;
}

static float *sc__head_ptr(sc_model *m, int grad, int norm)
{
    const sc_config *c = &m->cfg;
    if (m->sl && !m->params) { /* a sliced head's slot holds only the norm, as does its gradient with per-slice gradients */
        int lm = grad ? !m->sl->hs_pergrad : sc__head_rows(m) == c->vocab_size || m->mc.slide_head_once;
        size_t off = norm && lm ? (size_t)c->vocab_size * c->hidden_size : 0;
        if (grad && lm && m->sl->norm_first) off = norm ? 0 : (size_t)c->hidden_size;
        return grad ? sc__at(m->sl->head_g, off, m->gb) : sc__at(m->sl->head.w, off, m->pb);
    }
    size_t off = norm ? sc_config_norm_offset(c) : sc_config_lm_head_offset(c);
    if (m->sl) off = sc__kept_off(c, off);
    return grad ? sc__at(m->grads, off, m->gb) : sc__at(m->params, off, m->pb);
}

/* sc__layer_fill's mask bit: leave the SwiGLU output m to the backward that follows (a
   recompute of the layer about to be back-propagated), which writes it beside its own
   gradient from the same loads (sc__layer_backward) */
#define SC__FILL_M_LATER (1u << 31)

/* Compute every activation of layer l that is missing, from what is there (x at least).
   The forward pass is this on an empty layer; a recompute is this on a partial one, so both
   run the very same arithmetic. `mask` = slots to keep afterwards (the others are freed at
   their last use here). */
static sc_result sc__layer_fill(sc_model *m, int l, unsigned mask)
{
    const sc_config *c = &m->cfg;
    sc_layer_offsets o = sc_config_layer_offsets(c);
    int B = m->B, T = m->T, N = B * T, C = c->hidden_size, I = c->intermediate_size;
    int H = c->num_heads, KV = c->num_kv_heads, D = c->head_dim, Q = (H + 2 * KV) * D;
    float eps = (float)c->rms_eps;
    float **A = m->acts[l];
#define SC__HAVE(s) (A[s] != NULL)
#define SC__KEEP(s) (mask & (1u << (s)))
#define SC__DONE(s) do { if (!SC__KEEP(s)) sc__act_drop(m, l, s); } while (0)
    if (!SC__HAVE(SC__A_A) && (!SC__HAVE(SC__A_QKV) || SC__KEEP(SC__A_A))) {
        SC__TRY(sc__act_get(m, l, SC__A_A));
        SC__TRY(sc__act_get(m, l, SC__A_RSTD1));
        SC__OP(m, rmsnorm_forward, A[SC__A_A], A[SC__A_RSTD1], A[SC__A_X], sc__lw(m, l, o.ln1), N, C, eps);
        sc__round(m, A[SC__A_A], (size_t)N * C);
    }
    if (!SC__HAVE(SC__A_QKV)) {
        SC__TRY(sc__act_get(m, l, SC__A_QKV));
        SC__OP(m, matmul_forward, A[SC__A_QKV], A[SC__A_A], sc__lw(m, l, o.wqkv), sc__lw(m, l, o.bqkv), N, C, Q);
        sc__round(m, A[SC__A_QKV], (size_t)N * Q);
    }
    if (SC__HAVE(SC__A_A)) { SC__DONE(SC__A_A); SC__DONE(SC__A_RSTD1); }
    int need_attn = !SC__HAVE(SC__A_O) || !SC__HAVE(SC__A_LSE);
    if (!SC__HAVE(SC__A_QK) && (need_attn || SC__KEEP(SC__A_QK))) {
        SC__TRY(sc__act_get(m, l, SC__A_QK));
        SC__TRY(sc__act_get(m, l, SC__A_RSTDQK));
        SC__OP(m, qknorm_rope_forward, A[SC__A_QK], A[SC__A_RSTDQK], A[SC__A_QKV], sc__lw(m, l, o.qnorm),
               sc__lw(m, l, o.knorm), m->rope_cos, m->rope_sin, B, T, H, KV, D, eps);
        sc__round(m, A[SC__A_QK], (size_t)N * (H + KV) * D);
    }
    if (need_attn) {
        SC__TRY(sc__act_get(m, l, SC__A_O));
        SC__TRY(sc__act_get(m, l, SC__A_LSE));
        SC__OP(m, attention_forward, A[SC__A_O], A[SC__A_LSE], A[SC__A_QK], A[SC__A_QKV], B, T, H, KV, D);
        sc__round(m, A[SC__A_O], (size_t)N * H * D);
    }
    if (SC__HAVE(SC__A_QK)) { SC__DONE(SC__A_QK); SC__DONE(SC__A_RSTDQK); }
    SC__DONE(SC__A_QKV);
    int need_b = !SC__HAVE(SC__A_B) && (!SC__HAVE(SC__A_GU) || SC__KEEP(SC__A_B));
    if (!SC__HAVE(SC__A_X2)) {
        float *tmp = NULL;
        SC__TRY(sc__act_get(m, l, SC__A_X2));
        SC__TRY(sc__act_get(m, l, SC__A_B));
        SC__TRY(sc__act_get(m, l, SC__A_RSTD2));
        SC__TRY(sc__alloc_act(m, &tmp, (size_t)N * C, "attn.o_proj out (temporary)"));
        SC__OP(m, matmul_forward, tmp, A[SC__A_O], sc__lw(m, l, o.wo), NULL, N, H * D, C);
        sc__round(m, tmp, (size_t)N * C);
        SC__OP(m, add_rmsnorm_forward, A[SC__A_X2], A[SC__A_B], A[SC__A_RSTD2], A[SC__A_X], tmp,
               sc__lw(m, l, o.ln2), N, C, eps);
        if (m->mc.bf16 && !m->cu) {
            /* the GPU normalises the stored (bf16) sum: do the same */
            sc__round(m, A[SC__A_X2], (size_t)N * C);
            sc_cpu_rmsnorm_forward(A[SC__A_B], A[SC__A_RSTD2], A[SC__A_X2], sc__lw(m, l, o.ln2), N, C, eps);
        }
        sc__round(m, A[SC__A_B], (size_t)N * C);
        sc__free(m, tmp);
    } else if (need_b) {
        SC__TRY(sc__act_get(m, l, SC__A_B));
        SC__TRY(sc__act_get(m, l, SC__A_RSTD2));
        SC__OP(m, rmsnorm_forward, A[SC__A_B], A[SC__A_RSTD2], A[SC__A_X2], sc__lw(m, l, o.ln2), N, C, eps);
        sc__round(m, A[SC__A_B], (size_t)N * C);
    }
    SC__DONE(SC__A_O);
    SC__DONE(SC__A_LSE);
    if (!SC__HAVE(SC__A_GU)) {
        SC__TRY(sc__act_get(m, l, SC__A_GU));
        SC__OP(m, matmul_forward, A[SC__A_GU], A[SC__A_B], sc__lw(m, l, o.wgu), NULL, N, C, 2 * I);
        sc__round(m, A[SC__A_GU], (size_t)N * 2 * I);
    }
    if (SC__HAVE(SC__A_B)) { SC__DONE(SC__A_B); SC__DONE(SC__A_RSTD2); }
    if (!SC__HAVE(SC__A_M) && !(mask & SC__FILL_M_LATER)) {
        SC__TRY(sc__act_get(m, l, SC__A_M));
        SC__OP(m, swiglu_forward, A[SC__A_M], A[SC__A_GU], N, I);
        sc__round(m, A[SC__A_M], (size_t)N * I);
    }
    SC__DONE(SC__A_GU);
#undef SC__HAVE
#undef SC__KEEP
#undef SC__DONE
    return SC_SUCCESS;
}

/* x_{l+1} = x2 + down_proj(m); frees m and x2 unless `mask` keeps them. */
static sc_result sc__layer_output(sc_model *m, int l, unsigned mask)
{
    const sc_config *c = &m->cfg;
    sc_layer_offsets o = sc_config_layer_offsets(c);
    int N = m->B * m->T, C = c->hidden_size, I = c->intermediate_size;
    float *tmp = NULL;
    SC__TRY(sc__act_get(m, l + 1, SC__A_X));
    SC__TRY(sc__alloc_act(m, &tmp, (size_t)N * C, "mlp.down_proj out (temporary)"));
    SC__OP(m, matmul_forward, tmp, m->acts[l][SC__A_M], sc__lw(m, l, o.wd), NULL, N, I, C);
    sc__round(m, tmp, (size_t)N * C);
    SC__OP(m, add_forward, m->acts[l + 1][SC__A_X], m->acts[l][SC__A_X2], tmp, (size_t)N * C);
    sc__round(m, m->acts[l + 1][SC__A_X], (size_t)N * C);
    sc__free(m, tmp);
    if (!(mask & (1u << SC__A_M))) sc__act_drop(m, l, SC__A_M);
    if (!(mask & (1u << SC__A_X2))) sc__act_drop(m, l, SC__A_X2);
    return SC_SUCCESS;
}

/* The scratch of the layers' backward (W in the planner): dbig, dsmall, dc and attention's dS in
   one block, taken at the first layer's backward of a pass and kept until sc__bwd_scratch_free
   after its last. Taken and freed layer by layer, its holes went to the next layer's replay,
   whose activations split them, and a plan at the planner's peak failed under its cap with
   0.72 GiB free in pieces (Qwen3-1.7B shape under 16 GiB). Each part starts at a multiple of
   the allocator's block size, so the block holds what four allocations held. */
static sc_result sc__bwd_scratch(sc_model *m, float **dbig, float **dsmall, float **dc, float **dS)
{
    const sc_config *c = &m->cfg;
    int N = m->B * m->T, C = c->hidden_size, I = c->intermediate_size;
    int H = c->num_heads, KV = c->num_kv_heads, D = c->head_dim, Q = (H + 2 * KV) * D;
    size_t ab = (size_t)m->ab;
    size_t part[4];
    part[0] = sc__allocator_round((size_t)N * (size_t)(2 * I > Q + (H + KV) * D ? 2 * I : Q + (H + KV) * D) * ab);
    part[1] = sc__allocator_round((size_t)N * (size_t)(I > H * D ? I : H * D) * ab);
    part[2] = sc__allocator_round((size_t)N * (size_t)C * ab);
    part[3] = sc_attention_ds_bytes(m->B, m->T, H, D, m->ab);
    if (!m->bws) {
        float *p = NULL;
        SC__TRY(sc__alloc_bytes(m, &p, part[0] + part[1] + part[2] + part[3], 1, "backward scratch"));
        m->bws = p;
    }
    *dbig = m->bws;
    *dsmall = (float *)((char *)m->bws + part[0]);
    *dc = (float *)((char *)m->bws + part[0] + part[1]);
    *dS = part[3] ? (float *)((char *)m->bws + part[0] + part[1] + part[2]) : NULL;
    return SC_SUCCESS;
}

static void sc__bwd_scratch_free(sc_model *m)
{
    sc__free(m, m->bws);
    m->bws = NULL;
}

/* Back-propagate layer l. dres holds dL/d(output of layer l) and becomes dL/d(its input). */
static sc_result sc__layer_backward(sc_model *m, int l, float *dres)
{
    const sc_config *c = &m->cfg;
    sc_layer_offsets o = sc_config_layer_offsets(c);
    int B = m->B, T = m->T, N = B * T, C = c->hidden_size, I = c->intermediate_size;
    int H = c->num_heads, KV = c->num_kv_heads, D = c->head_dim, Q = (H + 2 * KV) * D;
    float **A = m->acts[l];
    float *dbig = NULL, *dsmall = NULL, *dc = NULL, *dS = NULL;
    int remat = A[SC__A_M] == NULL; /* the recompute left m to the SwiGLU backward */
    SC__TRY(sc__bwd_scratch(m, &dbig, &dsmall, &dc, &dS));
    if (remat) SC__TRY(sc__act_get(m, l, SC__A_M));
    /* MLP: out = x2 + down(swiglu(gate_up(ln2(x2)))) */
    if (!remat) {
        SC__OP(m, matmul_backward, dsmall, sc__lg(m, l, o.wd), NULL, dres, A[SC__A_M], sc__lw(m, l, o.wd), N, I, C);
        SC__OP(m, swiglu_backward, dbig, dsmall, A[SC__A_GU], N, I);
    } else { /* dm first; then m (the forward's bits) with dgate_up from one pass over gate_up; then dW */
        SC__OP(m, matmul_backward, dsmall, NULL, NULL, dres, NULL, sc__lw(m, l, o.wd), N, I, C);
        SC__OP(m, swiglu_backward_remat, dbig, A[SC__A_M], dsmall, A[SC__A_GU], N, I);
        sc__round(m, A[SC__A_M], (size_t)N * I);
        SC__OP(m, matmul_backward, NULL, sc__lg(m, l, o.wd), NULL, dres, A[SC__A_M], sc__lw(m, l, o.wd), N, I, C);
    }
    SC__OP(m, matmul_backward, dc, sc__lg(m, l, o.wgu), NULL, dbig, A[SC__A_B], sc__lw(m, l, o.wgu), N, C, 2 * I);
    SC__OP(m, rmsnorm_backward, dres, sc__lg(m, l, o.ln2), dc, A[SC__A_X2], sc__lw(m, l, o.ln2), A[SC__A_RSTD2], N, C);
    /* attention: x2 = x + o_proj(attn(rope(qknorm(qkv(ln1(x)))))) */
    SC__OP(m, matmul_backward, dsmall, sc__lg(m, l, o.wo), NULL, dres, A[SC__A_O], sc__lw(m, l, o.wo), N, H * D, C);
    float *dqkv = dbig, *dqk = sc__at(dbig, (size_t)N * Q, m->ab);
#ifdef SLIDECHECK_CUDA
    if (m->cu) sc_cuda_attention_workspace(m->cu, dS, sc_attention_ds_bytes(B, T, H, D, m->ab));
#endif
    SC__OP(m, attention_backward, dqk, dqkv, dsmall, A[SC__A_QK], A[SC__A_QKV], A[SC__A_O], A[SC__A_LSE],
           B, T, H, KV, D);
#ifdef SLIDECHECK_CUDA
    if (m->cu) sc_cuda_attention_workspace(m->cu, NULL, 0);
#endif
    SC__OP(m, qknorm_rope_backward, dqkv, sc__lg(m, l, o.qnorm), sc__lg(m, l, o.knorm), dqk, A[SC__A_QKV],
           sc__lw(m, l, o.qnorm), sc__lw(m, l, o.knorm), A[SC__A_RSTDQK], m->rope_cos, m->rope_sin, B, T, H, KV, D);
    SC__OP(m, matmul_backward, dc, sc__lg(m, l, o.wqkv), sc__lg(m, l, o.bqkv), dqkv, A[SC__A_A],
           sc__lw(m, l, o.wqkv), N, C, Q);
    SC__OP(m, rmsnorm_backward, dres, sc__lg(m, l, o.ln1), dc, A[SC__A_X], sc__lw(m, l, o.ln1), A[SC__A_RSTD1], N, C);
    return SC_SUCCESS;
}

static int sc__seg_end(const sc_plan *p, int l)
{
    int e = l;
    while (e + 1 < p->num_layers && p->seg[e + 1] == p->seg[l]) e++;
    return e + 1;
}

/* the device's weight-gradient writers set (on) or add (off): see sc_model.gset */
static void sc__grads_set(sc_model *m, int on)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu) sc_cuda_grads_set(m->cu, on);
#else
    (void)m, (void)on;
#endif
}

/* Final norm, LM head and loss, in row chunks so that the logits never exist whole; leaves
   dL/d(x_L) in *dres_out. */
static const float *sc__head_w(sc_model *m, int q, int ns);
static void sc__head_w_done(sc_model *m, int q);
static float *sc__head_g(sc_model *m, int j);
static void sc__head_g_done(sc_model *m, int j);

/* The LM head in vocabulary slices for rows [r0, r0 + n): pass 1 folds each slice's logits
   into the rows' log-sum-exp, pass 2 recomputes them and back-propagates slice by slice; dx
   (the rows' input gradient) is summed over slices in f32. */
static sc_result sc__head_sliced(sc_model *m, float *dx, const float *xr, int r0, int n, float *lg, float *ms,
                                 float *tl, float *acc, float *part)
{
    const sc_config *c = &m->cfg;
    int V = c->vocab_size, C = c->hidden_size, S = sc__head_rows(m), ns = (V + S - 1) / S, N = m->B * m->T;
    sc_result r;
    if (m->sl) m->sl->hs[0].unit = m->sl->hs[1].unit = -1;
    for (int q = 0; q < 2 * ns; q++) {
        int j = q % ns, v0 = j * S, vs = V - v0 < S ? V - v0 : S;
        const float *w = sc__head_w(m, q, ns);
        SC__OP(m, matmul_forward, lg, xr, w, NULL, n, C, vs);
        sc__round(m, lg, (size_t)n * vs);
        if (q < ns) {
            for (int i = 0; m->mc.keep_logits && i < n; i++)
                if ((r = sc__download_f32(m, m->logits_host + ((size_t)m->mb * N + r0 + i) * V + v0,
                                          sc__at(lg, (size_t)i * vs, m->ab), m->ab, (size_t)vs)) != SC_SUCCESS)
                    return r;
            SC__OP(m, crossentropy_slice_stats, ms, tl, lg, m->targets + r0, v0, n, vs);
        } else {
            SC__OP(m, crossentropy_slice_backward, lg, m->rowloss + r0, lg, ms, tl, m->targets + r0, v0, n, vs, m->lscale);
            sc__round(m, lg, (size_t)n * vs);
            SC__OP(m, matmul_backward, part, sc__head_g(m, j), NULL, lg, xr, w, n, C, vs);
            sc__round(m, part, (size_t)n * C);
            SC__OP(m, accumulate, acc, part, (size_t)n * C, j == 0);
            sc__head_g_done(m, j);
        }
        sc__head_w_done(m, q);
    }
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        sc_cuda_convert(m->cu, dx, m->ab == 2 ? SC_BF16 : SC_F32, acc, SC_F32, (size_t)n * C);
        return SC_SUCCESS;
    }
#endif
    memcpy(dx, acc, sizeof(float) * (size_t)n * C);
    sc__round(m, dx, (size_t)n * C);
    return SC_SUCCESS;
}

static sc_result sc__head_forward_backward(sc_model *m, float **dres_out)
{
    const sc_config *c = &m->cfg;
    int L = c->num_layers, C = c->hidden_size, V = c->vocab_size, N = m->B * m->T;
    int chunk = N < 1024 ? N : 1024, S = sc__head_rows(m);
    float *xn = NULL, *rstd = NULL, *dxn = NULL, *lg = NULL, *dres = NULL, *ms = NULL, *tl = NULL, *acc = NULL;
    float *part = NULL;
    const float *wlm = sc__head_ptr(m, 0, 0), *nw = sc__head_ptr(m, 0, 1);
    float *dwlm = sc__head_ptr(m, 1, 0);
    sc_result r;
    if ((r = sc__alloc_act(m, &xn, (size_t)N * C, "final norm out")) != SC_SUCCESS ||
        (r = sc__alloc_f32(m, &rstd, (size_t)N, "final norm rstd")) != SC_SUCCESS ||
        (r = sc__alloc_act(m, &dxn, (size_t)N * C, "final norm grad")) != SC_SUCCESS ||
        (r = sc__alloc_act(m, &lg, (size_t)chunk * S, "logits chunk")) != SC_SUCCESS)
        goto done;
    if (S < V && ((r = sc__alloc_f32(m, &ms, (size_t)2 * chunk, "head lse")) != SC_SUCCESS ||
                  (r = sc__alloc_f32(m, &tl, (size_t)chunk, "head target logit")) != SC_SUCCESS ||
                  (r = sc__alloc_f32(m, &acc, (size_t)chunk * C, "head dx sum")) != SC_SUCCESS ||
                  (r = sc__alloc_act(m, &part, (size_t)chunk * C, "head dx part")) != SC_SUCCESS))
        goto done;
    if (m->mc.keep_logits && m->logits_cap < (size_t)m->accum * N * V) {
        size_t lrows = (size_t)m->accum * N;
        SC_FREE(m->logits_host);
        m->logits_host = (float *)SC_MALLOC(sizeof(float) * lrows * V);
        m->logits_cap = m->logits_host ? lrows * V : 0;
        if (!m->logits_host) { r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc of the logits failed"); goto done; }
    }
    SC__OP(m, rmsnorm_forward, xn, rstd, m->acts[L][SC__A_X], nw, N, C, (float)c->rms_eps);
    sc__round(m, xn, (size_t)N * C);
    for (int r0 = 0; r0 < N; r0 += chunk) {
        int n = N - r0 < chunk ? N - r0 : chunk;
        float *xr = sc__at(xn, (size_t)r0 * C, m->ab);
        sc__grads_set(m, m->gset && r0 == 0); /* the later row chunks add to the head's gradient */
        if (S < V) {
            if ((r = sc__head_sliced(m, sc__at(dxn, (size_t)r0 * C, m->ab), xr, r0, n, lg, ms, tl, acc, part)) != SC_SUCCESS)
                goto done;
            continue;
        }
        SC__OP(m, matmul_forward, lg, xr, wlm, NULL, n, C, V);
        sc__round(m, lg, (size_t)n * V);
        if (m->mc.keep_logits && (r = sc__download_f32(m, m->logits_host + ((size_t)m->mb * N + r0) * V, lg, m->ab,
                                                        (size_t)n * V)) != SC_SUCCESS)
            goto done;
        SC__OP(m, crossentropy_forward_backward, lg, m->rowloss + r0, lg, m->targets + r0, n, V, m->lscale);
        sc__round(m, lg, (size_t)n * V);
        SC__OP(m, matmul_backward, sc__at(dxn, (size_t)r0 * C, m->ab), dwlm, NULL, lg, xr, wlm, n, C, V);
    }
    sc__free(m, lg);
    lg = NULL;
    /* dres = dL/d(x_L): the final norm's backward adds into zeros */
    sc__grads_set(m, m->gset);
    if ((r = sc__alloc_act(m, &dres, (size_t)N * C, "residual grad")) != SC_SUCCESS) goto done;
    sc__memset0(m, dres, (size_t)N * C * (size_t)m->ab);
    SC__OP(m, rmsnorm_backward, dres, sc__head_ptr(m, 1, 1), dxn, m->acts[L][SC__A_X], nw, rstd, N, C);
    sc__act_drop(m, L, SC__A_X);
done:
    sc__free(m, xn);
    sc__free(m, rstd);
    sc__free(m, dxn);
    sc__free(m, lg);
    sc__free(m, ms);
    sc__free(m, tl);
    sc__free(m, acc);
    sc__free(m, part);
    *dres_out = dres;
    return r;
}

/* ==========================================================================================
   Slide mode, part 2: host buffers, the host optimizer, the slot cache and the step
   ========================================================================================== */
static size_t sc__layer_numel(const sc_config *c) { return sc_config_layer_offsets(c).size; }
static size_t sc__head_numel(const sc_config *c) { return (size_t)c->vocab_size * c->hidden_size + c->hidden_size; }

/* the host optimizer's threads: cpu_threads, or all cores but one, which stays with the thread that drives
   the device (and its copies) */
static int sc__slide_threads(const sc_model *m)
{
    int all = sc__optim_threads(0);
    return m->mc.slide_cpu_threads > 0 ? m->mc.slide_cpu_threads : all > 1 ? all - 1 : 1;
}

/* Slide's data parallel splits each layer's host update (split = 1): this rank's chunk of it and
   the remainder that every rank updates alike (sc__chunk, ZeRO-Offload's split; the upload's
   all-gather or the CPU backend's exchange brings the other chunks). split = 0: the whole layer. */
static void sc__slide_layer_chunk(const sc_model *m, int split, size_t at[2], size_t cnt[2])
{
    sc__chunk(sc__layer_numel(&m->cfg), split ? sc_dist_comm_world(m->mc.comm) : 1,
              split ? sc_dist_comm_rank(m->mc.comm) : 0, at, cnt);
}

/* Slide over NCCL with a tied LM head that goes up whole (not kept, not in slices, not updated on
   the device): the host update of the embedding's rows is split as the layers' are, rank r its
   chunk of rows and every rank the remainder (sc__chunk); the head's upload gathers the other
   ranks' rows on the device, and the embedding's forward reads them there. */
static int sc__slide_head_split(const sc_model *m)
{
    return m->nccl && sc_dist_comm_world(m->mc.comm) > 1 && m->cfg.tie_embeddings && !m->mc.slide_keep_head &&
           !m->mc.slide_device_update && (sc__head_rows(m) >= m->cfg.vocab_size || m->mc.slide_head_once);
}

/* The embedding rows this rank updates: [at[i], at[i] + cnt[i]), all of them unless the head is split */
static void sc__slide_row_chunk(const sc_model *m, size_t at[2], size_t cnt[2])
{
    int split = sc__slide_head_split(m);
    sc__chunk((size_t)m->cfg.vocab_size, split ? sc_dist_comm_world(m->mc.comm) : 1,
              split ? sc_dist_comm_rank(m->mc.comm) : 0, at, cnt);
}

/* A split head's norm chunks that rank r sums on its host: the whole chunks of the embedding
   whose first element lies in its rows (the last rank's run on over the remainder), [*k0, *k1).
   sc__slide_norm_exchange gives every rank the others' sums. */
static void sc__slide_head_norm_chunks(const sc_model *m, int r, size_t *k0, size_t *k1)
{
    size_t at[2], cnt[2], C = (size_t)m->cfg.hidden_size, e = (size_t)m->cfg.vocab_size * C, K = SC_GRAD_NORM_CHUNK;
    int W = sc_dist_comm_world(m->mc.comm);
    sc__chunk((size_t)m->cfg.vocab_size, W, r, at, cnt);
    size_t a = at[0] * C, b = r == W - 1 ? e : (at[0] + cnt[0]) * C, whole = e / K;
    *k0 = (a + K - 1) / K, *k1 = (b + K - 1) / K;
    if (*k1 > whole) *k1 = whole;
    if (*k0 > *k1) *k0 = *k1;
}

/* The rows of a split head's gradients that this rank's host holds, [lo[i], hi[i]) (the second
   run may be empty): those it updates (sc__slide_row_chunk), those its norm chunks cover, and
   those of the chunk the embedding shares with layer 0, which every rank's norm sums. The host
   adds the embedding's gradient into these rows only, and only these come down. Unsplit: every
   row. */
static void sc__slide_grad_rows(const sc_model *m, size_t lo[2], size_t hi[2])
{
    size_t V = (size_t)m->cfg.vocab_size, C = (size_t)m->cfg.hidden_size, K = SC_GRAD_NORM_CHUNK, at[2], cnt[2], k0, k1;
    lo[0] = 0, hi[0] = V, lo[1] = hi[1] = 0;
    if (!sc__slide_head_split(m)) return;
    sc__slide_row_chunk(m, at, cnt);
    sc__slide_head_norm_chunks(m, sc_dist_comm_rank(m->mc.comm), &k0, &k1);
    size_t p0 = at[0], p1 = at[0] + cnt[0];
    if (k1 > k0 && k0 * K / C < p0) p0 = k0 * K / C;
    if (k1 > k0 && (k1 * K + C - 1) / C > p1) p1 = (k1 * K + C - 1) / C;
    size_t q0 = (V * C / K) * K / C; /* the last chunk's rows, */
    if (at[1] < q0) q0 = at[1];      /* and the remainder's */
    if (q0 <= p1) { /* one run */
        lo[0] = p0 < q0 ? p0 : q0, hi[0] = V;
        return;
    }
    lo[0] = p0, hi[0] = p1, lo[1] = q0, hi[1] = V;
}

/* Over NCCL: how many of the parameters the host updates belong to the other ranks' chunks (of
   the streamed layers, unless the device updates them, and of a split head's rows) */
static int sc__dev_layer(const sc_model *m, int l);
static size_t sc__slide_others(const sc_model *m)
{
    const sc_config *c = &m->cfg;
    size_t at[2], cnt[2], n = 0, ln = sc__layer_numel(c);
    if (!m->nccl || sc_dist_comm_world(m->mc.comm) < 2) return 0;
    sc__slide_layer_chunk(m, 1, at, cnt);
    for (int l = 0; l < c->num_layers && !m->mc.slide_device_update; l++)
        if (!sc__dev_layer(m, l)) n += ln - cnt[0] - cnt[1];
    sc__slide_row_chunk(m, at, cnt);
    return n + ((size_t)c->vocab_size - cnt[0] - cnt[1]) * (size_t)c->hidden_size;
}

/* Where parameter `off`'s AdamW state sits in hm / hv. ZeRO-1 (sl->zero): a rank keeps state
   only for what it updates, in parameter order: the embedding, its chunks of each layer (the
   split above) and the final norm with an untied head. The embedding, norm and head keep whole
   state on every rank (a split head's rank updates its rows only: the others' state idles there;
   an untied one's every rank updates alike). Without ZeRO-1: off itself. off = nparams gives the
   state's size. Only offsets this rank updates have a place. */
static size_t sc__slide_state_at(const sc_model *m, size_t off)
{
    const sc_config *c = &m->cfg;
    size_t at[2], cnt[2], e = sc_config_layer_base(c, 0), no = sc_config_norm_offset(c), ln = sc__layer_numel(c);
    if (!m->sl->zero || off < e) return off;
    sc__slide_layer_chunk(m, 1, at, cnt);
    size_t per = cnt[0] + cnt[1], L = (size_t)c->num_layers;
    if (off >= no) return e + L * per + (off - no);
    size_t l = (off - e) / ln, j = off - e - l * ln;
    SC_ASSERT((j >= at[0] && j < at[0] + cnt[0]) || j >= at[1]);
    return e + l * per + (j < at[1] ? j - at[0] : cnt[0] + (j - at[1]));
}

/* Update [off, off + n) of the host parameters with the step's constants; the working copy
   hw[wb] (if any) gets the new weights. With ZeRO-1 the range lies in one piece of this rank's
   part (its state is contiguous there). */
static void sc__slide_update(sc_model *m, const sc_optim_consts *k, size_t off, size_t n, int threads, int wb)
{
    sc__slide *sl = m->sl;
    if (n == 0) return; /* an empty remainder: its offset is the next layer's, maybe not this rank's */
    size_t pe = sc_dtype_size(sl->hpt), se = sc_dtype_size(sl->hst), ge = sc_dtype_size(m->gdt), so = sc__slide_state_at(m, off);
    void *p = (char *)sl->hp + off * pe, *hm = (char *)sl->hm + so * se, *hv = (char *)sl->hv + so * se;
    const void *g = (const char *)sl->hg + off * ge;
    /* bf16 working weights (master mode; pure bf16 with DPU, where the optimizer's bf16 out equals
       hp's new bits) are written by the optimizer's own threads in the same pass */
    uint16_t *w = sl->hw[wb] && m->pdt == SC_BF16 ? (uint16_t *)sl->hw[wb] + off : NULL;
    if (m->mc.optim == SC_OPTIM_ADAMW) {
        if (threads < 0) sc_cpu_adamw_range(p, hm, hv, sl->hpt, sl->hst, g, m->gdt, w, n, k);
        else sc_cpu_adamw_mt(p, hm, hv, sl->hpt, sl->hst, g, m->gdt, w, n, k, threads);
    } else {
        if (threads < 0) sc_cpu_sgd_range(p, sl->hpt, g, m->gdt, w, n, k);
        else sc_cpu_sgd_mt(p, sl->hpt, g, m->gdt, w, n, k, threads);
    }
    if (!m->cu && m->mc.bf16) sc_round_bf16_inplace((float *)p, n); /* the CPU backend's bf16 storage */
    if (sl->hw[wb] && !w) { /* DPU with f32 weights: a copy of hp, in blocks over the threads */
        size_t nb = (n * pe + ((size_t)1 << 22) - 1) >> 22;
        (void)nb;
        int nt = threads > 0 ? threads : 1;
        (void)nt;
        SC__OMP(omp parallel for num_threads(nt) schedule(dynamic, 1) if (nt > 1 && nb > 1))
        for (long long b = 0; b < (long long)nb; b++) {
            size_t o = (size_t)b << 22, len = n * pe - o < ((size_t)1 << 22) ? n * pe - o : ((size_t)1 << 22);
            memcpy((char *)sl->hw[wb] + off * pe + o, (const char *)p + o, len);
        }
    }
}

/* Update the embedding rows of [v0, v1) that the step's tokens touched (want = 1) or the others
   (want = 0), in blocks of rows over the optimizer's threads. */
static void sc__slide_update_rows(sc_model *m, const sc_optim_consts *k, const unsigned char *touched, int want,
                                  int wb, int v0, int v1)
{
    int C = m->cfg.hidden_size, nt = sc__slide_threads(m);
    long long nb = (v1 - v0 + 63) / 64;
    (void)nt;
    SC__OMP(omp parallel for num_threads(nt) schedule(dynamic, 4) if (nt > 1))
    for (long long b = 0; b < nb; b++) {
        int r0 = v0 + (int)b * 64, r1 = r0 + 64 < v1 ? r0 + 64 : v1;
        for (int r = r0; r < r1;) {
            if ((touched[r] != 0) != want) { r++; continue; }
            int e = r;
            while (e < r1 && (touched[e] != 0) == want) e++;
            sc__slide_update(m, k, (size_t)r * C, (size_t)(e - r) * C, -1, wb);
            r = e;
        }
    }
}

/* ... of the rows this rank updates (sc__slide_row_chunk) */
static void sc__slide_update_own_rows(sc_model *m, const sc_optim_consts *k, const unsigned char *touched, int want,
                                      int wb)
{
    size_t at[2], cnt[2];
    sc__slide_row_chunk(m, at, cnt);
    for (int i = 0; i < 2; i++)
        if (cnt[i]) sc__slide_update_rows(m, k, touched, want, wb, (int)at[i], (int)(at[i] + cnt[i]));
}

/* The embedding backward on the host, with the CUDA kernel's arithmetic: each token's rows are
   summed in position order into an f32 accumulator that starts from the stored gradient, and
   stored once (in f32 the same as adding row by row, as sc_cpu_embedding_backward does). lo, hi:
   only the rows in [lo[i], hi[i]), i = 0, 1 (NULL: every row). */
static int sc__cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}
static sc_result sc__host_embedding_backward(void *dwte, sc_dtype gt, const void *dout, sc_dtype at, const int32_t *ids,
                                             int N, int C, int nt, const size_t *lo, const size_t *hi)
{
    uint64_t *key = (uint64_t *)SC_MALLOC(sizeof(uint64_t) * (size_t)N);
    int *run = (int *)SC_MALLOC(sizeof(int) * ((size_t)N + 1));
    if (!key || !run) {
        SC_FREE(key);
        SC_FREE(run);
        return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc in the embedding backward failed");
    }
    for (int n = 0; n < N; n++) key[n] = ((uint64_t)(uint32_t)ids[n] << 32) | (uint32_t)n;
    qsort(key, (size_t)N, sizeof *key, sc__cmp_u64); /* by token, then position */
    int nu = 0;
    for (int i = 0; i < N; i++)
        if (i == 0 || (key[i] >> 32) != (key[i - 1] >> 32)) run[nu++] = i;
    run[nu] = N;
    (void)nt;
    SC__OMP(omp parallel for num_threads(nt) schedule(dynamic, 4) if (nt > 1))
    for (int u = 0; u < nu; u++) {
        size_t id = (size_t)(key[run[u]] >> 32), row = id * (size_t)C;
        if (lo && !(id >= lo[0] && id < hi[0]) && !(id >= lo[1] && id < hi[1])) continue; /* not this host's rows */
        /* 256 columns at a time, the positions in order for each: the same sums as column by column, with the
           rows read along (and one loop per dtype, which compilers vectorize) */
        for (int c0 = 0; c0 < C; c0 += 256) {
            int cn = C - c0 < 256 ? C - c0 : 256;
            float acc[256];
            for (int c = 0; c < cn; c++) acc[c] = sc__ld(dwte, gt, row + (size_t)(c0 + c));
            for (int i = run[u]; i < run[u + 1]; i++) {
                size_t o = (size_t)(uint32_t)key[i] * C + (size_t)c0;
                if (at == SC_BF16)
                    for (int c = 0; c < cn; c++) acc[c] += sc_bf16_to_f32(((const uint16_t *)dout)[o + (size_t)c]);
                else
                    for (int c = 0; c < cn; c++) acc[c] += ((const float *)dout)[o + (size_t)c];
            }
            for (int c = 0; c < cn; c++) sc__st(dwte, gt, row + (size_t)(c0 + c), acc[c]);
        }
    }
    SC_FREE(key);
    SC_FREE(run);
    return SC_SUCCESS;
}

static size_t sc__slide_ring_at(const sc_model *m, int k);

/* Rows [r0, r1) of the LM head (tied: the embedding rows among them no token touched). */
static void sc__slide_head_rows(sc_model *m, const sc_optim_consts *k, const unsigned char *touched, int r0, int r1,
                                int nt, int wb)
{
    const sc_config *c = &m->cfg;
    if (c->tie_embeddings) sc__slide_update_rows(m, k, touched, 0, wb, r0, r1);
    else sc__slide_update(m, k, sc_config_lm_head_offset(c) + (size_t)r0 * c->hidden_size,
                          (size_t)(r1 - r0) * c->hidden_size, nt, wb);
}

/* The LM head's rows that two of the head's gradient downloads share (sc__slide_head_grads_down's
   ranges: each ring buffer's share of the head's area, and the part below the ring), into out
   (at most 2 x nring), sorted, each once; their count. */
static int sc__slide_split_rows(const sc_model *m, int *out)
{
    const sc_config *c = &m->cfg;
    size_t gb = (size_t)m->gb, rb = (size_t)c->hidden_size * gb, e = (size_t)c->vocab_size * rb, tot = e + rb;
    size_t lgb = sc__allocator_round(sc__layer_numel(c) * gb);
    int n = 0;
    for (int k = 0; k < m->sl->nring; k++) {
        size_t at = sc__slide_ring_at(m, k), p[2];
        if (at >= tot) continue;
        p[0] = at, p[1] = at + lgb < tot ? at + lgb : tot;
        for (int i = 0; i < 2; i++)
            if (p[i] < e && p[i] % rb) out[n++] = (int)(p[i] / rb);
    }
    for (int i = 1; i < n; i++) /* insertion sort: a few dozen at most */
        for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
            int x = out[j];
            out[j] = out[j - 1], out[j - 1] = x;
        }
    int u = 0;
    for (int i = 0; i < n; i++)
        if (u == 0 || out[u - 1] != out[i]) out[u++] = out[i];
    return u;
}

static void *sc__host_alloc(sc_model *m, size_t bytes, int pinned);
static void sc__host_free(sc_model *m, void *p, int pinned);

/* The norm's chunk sums and which of them the layer tasks summed (none yet). Only while no task
   runs: they read sl->gn_part. */
static sc_result sc__slide_norm_sums(sc__slide *sl)
{
    sc_model *m = sl->m;
    sl->gn_nc = (sc_config_num_params(&m->cfg) + SC_GRAD_NORM_CHUNK - 1) / SC_GRAD_NORM_CHUNK;
    /* on the GPU, in one process or over NCCL (after each layer's sum, on the download stream):
       the device's kernels write the layers' sums into pinned memory, and no host pass reads them */
    sl->gn_dev = m->cu != NULL && (m->nccl || sc_dist_comm_world(m->mc.comm) <= 1);
    sl->gn_part = (double *)sc__host_alloc(m, sizeof(double) * (sl->gn_nc ? sl->gn_nc : 1), sl->gn_dev);
    sl->gn_done = (unsigned char *)SC_MALLOC(sl->gn_nc ? sl->gn_nc : 1);
    if (sl->gn_done) memset(sl->gn_done, 0, sl->gn_nc ? sl->gn_nc : 1);
    if (sl->gn_part && sl->gn_done) return SC_SUCCESS;
    sc__host_free(m, sl->gn_part, sl->gn_dev);
    SC_FREE(sl->gn_done);
    sl->gn_part = NULL, sl->gn_done = NULL;
    return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc failed (gradient norm)");
}

/* The whole chunks inside the gradients [gs, gs + n): [*c0, *c1), none when *c1 <= *c0 */
static int sc__norm_chunks_in(size_t gs, size_t n, size_t *c0, size_t *c1)
{
    *c0 = (gs + SC_GRAD_NORM_CHUNK - 1) / SC_GRAD_NORM_CHUNK, *c1 = (gs + n) / SC_GRAD_NORM_CHUNK;
    return *c1 > *c0;
}

/* The sums of chunks [c0, c1) into gn_part from p, the gradients from gs on where the backend
   keeps them (on the GPU: device memory, and the kernel writes the pinned gn_part) */
static void sc__slide_norm_sum(sc_model *m, const void *p, size_t gs, size_t c0, size_t c1)
{
    sc__slide *sl = m->sl;
    const char *g = (const char *)p + (c0 * SC_GRAD_NORM_CHUNK - gs) * (size_t)m->gb;
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        /* over NCCL the download stream, which waits for the sums, not the compute stream */
        sc_cuda_grad_norm_chunks(m->cu, m->nccl ? 2 : 0, sl->gn_part + c0, g, m->gdt, (c1 - c0) * SC_GRAD_NORM_CHUNK);
        return;
    }
#endif
    sc__grad_norm_chunks(sl->gn_part + c0, g, m->gdt, (c1 - c0) * SC_GRAD_NORM_CHUNK, 0, c1 - c0, sc__slide_threads(m));
}

/* Layer l's gradients on the device (dev) are final: its chunk sums there, before they go down
   (sc__slide_grads_down follows in the compute stream's order); its host task marks them */
static void sc__slide_norm_dev(sc_model *m, int l, const void *dev)
{
    size_t c0, c1, base = sc_config_layer_base(&m->cfg, l);
    if (m->sl->gn_part && m->sl->gn_dev && sc__norm_chunks_in(base, sc__layer_numel(&m->cfg), &c0, &c1))
        sc__slide_norm_sum(m, dev, base, c0, c1);
}

/* The norm's parts whose gradients stay on the device: its layers (dg) and a kept embedding and
   head (grads). The chunks inside each are summed there (on the GPU into the pinned gn_part),
   and the rest of each, less than a chunk at either end that a neighbour shares, is copied into
   hg, where sc__slide_norm_finish sums the chunks across. After the step, in one process. */
static sc_result sc__slide_norm_kept(sc_model *m)
{
    sc__slide *sl = m->sl;
    const sc_config *c = &m->cfg;
    size_t C = SC_GRAD_NORM_CHUNK, gb = (size_t)m->gb, e = (size_t)c->vocab_size * c->hidden_size;
    size_t no = sc_config_norm_offset(c), c0, c1;
    for (int i = -2; i < c->num_layers; i++) { /* -2, -1: a kept embedding, final norm and head */
        if (i < 0 ? !m->params : !sc__dev_layer(m, i)) continue;
        size_t gs = i == -2 ? 0 : i == -1 ? no : sc_config_layer_base(c, i);
        size_t n = i == -2 ? e : i == -1 ? m->nparams - no : sc__layer_numel(c);
        const char *p = i < 0 ? (const char *)m->grads + (i == -2 ? 0 : e * gb) : (const char *)sl->dg[i];
        int whole = sc__norm_chunks_in(gs, n, &c0, &c1);
        size_t a = whole ? c0 * C - gs : n, b = whole ? c1 * C - gs : n; /* [a, b): the whole chunks */
        size_t cut[2][2] = {{0, a}, {b, n}};
        if (whole) {
            sc__slide_norm_sum(m, p, gs, c0, c1);
            memset(sl->gn_done + c0, 1, c1 - c0);
        }
        for (int j = 0; j < 2; j++) {
            char *dst = (char *)sl->hg + (gs + cut[j][0]) * gb;
            size_t bytes = (cut[j][1] - cut[j][0]) * gb;
            if (!bytes) continue;
#ifdef SLIDECHECK_CUDA
            if (m->cu) { sc_cuda_copy_async(m->cu, 0, dst, p + cut[j][0] * gb, bytes); continue; }
#endif
            memcpy(dst, p + cut[j][0] * gb, bytes);
        }
    }
#ifdef SLIDECHECK_CUDA
    if (m->cu) return sc_cuda_synchronize(m->cu);
#endif
    return SC_SUCCESS;
}

/* A split head: each rank's host summed its own norm chunks of the embedding
   (sc__slide_head_norm_chunks); every rank gets every rank's, copied bit for bit over the
   control channel (each rank's run padded to the longest). */
static sc_result sc__slide_norm_exchange(sc_model *m)
{
    sc__slide *sl = m->sl;
    int W = sc_dist_comm_world(m->mc.comm), me = sc_dist_comm_rank(m->mc.comm);
    size_t k0, k1, most = 0;
    for (int r = 0; r < W; r++) {
        sc__slide_head_norm_chunks(m, r, &k0, &k1);
        if (k1 - k0 > most) most = k1 - k0;
    }
    if (!most) return SC_SUCCESS;
    size_t per = most * (sizeof(double) / sizeof(float)); /* floats a rank */
    float *buf = (float *)SC_MALLOC(sizeof(float) * per * (size_t)W);
    if (!buf) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc failed (gradient norm)");
    memset(buf, 0, sizeof(float) * per * (size_t)W);
    sc__slide_head_norm_chunks(m, me, &k0, &k1);
    memcpy(buf + per * (size_t)me, sl->gn_part + k0, (k1 - k0) * sizeof(double));
    sc_result r = sc_dist_allgather_f32(m->mc.comm, buf, per * (size_t)W);
    for (int q = 0; q < W && r == SC_SUCCESS; q++) {
        sc__slide_head_norm_chunks(m, q, &k0, &k1);
        memcpy(sl->gn_part + k0, buf + per * (size_t)q, (k1 - k0) * sizeof(double));
        memset(sl->gn_done + k0, 1, k1 - k0);
    }
    SC_FREE(buf);
    return r;
}

/* The norm from the chunk sums: those the layer tasks left (the embedding, norm and head, and the
   chunks across a layer boundary) summed now, then sc_grad_norm's bits. After a drain. Over NCCL
   every rank calls it (a split head's sums are exchanged). */
static sc_result sc__slide_norm_finish(sc_model *m, double *out)
{
    sc__slide *sl = m->sl;
    int nt = sc__slide_threads(m);
    (void)nt;
    if (sc__slide_head_split(m)) SC__TRY(sc__slide_norm_exchange(m));
    /* one parallel region, not one a run of chunks (some 60: the layers' ends): a region's threads
       all meet at its end, and while another rank's updates shared the cores those meetings held
       the step's end many times the work (bench/RESULTS.md, slide on two GPUs) */
    SC__OMP(omp parallel for num_threads(nt) schedule(dynamic, 64))
    for (long long c = 0; c < (long long)sl->gn_nc; c++)
        if (!sl->gn_done[c]) sc__grad_norm_chunk(sl->gn_part, sl->hg, m->gdt, m->nparams, (size_t)c);
    memset(sl->gn_done, 0, sl->gn_nc);
    *out = sc__grad_norm_finish(sl->gn_part, sl->gn_nc);
    return SC_SUCCESS;
}

static void sc__slide_run_task(sc_model *m, const sc__task *t)
{
    sc__slide *sl = m->sl;
    const sc_config *c = &m->cfg;
    const sc__stepbuf *b = &sl->sb[t->sb];
    int nt = sc__slide_threads(m), wb = m->mc.slide_dpu ? t->par : 0;
    if (t->kind == SC__TASK_CLIPPED) { /* the update after clipping: unit L the embedding, norm and head */
        size_t e = sc_config_layer_base(c, 0), no = sc_config_norm_offset(c);
        if (t->unit == c->num_layers) { /* the embedding: this rank's rows (sc__slide_row_chunk) */
            size_t at[2], cnt[2], C = (size_t)c->hidden_size;
            sc__slide_row_chunk(m, at, cnt);
            SC_ASSERT(e == (size_t)c->vocab_size * C);
            for (int i = 0; i < 2; i++) sc__slide_update(m, &t->k, at[i] * C, cnt[i] * C, nt, wb);
            sc__slide_update(m, &t->k, no, m->nparams - no, nt, wb);
        } else { /* over NCCL this rank's chunks (the upload gathers the rest), as SC__TASK_LAYER */
            size_t at[2], cnt[2], base = sc_config_layer_base(c, t->unit);
            sc__slide_layer_chunk(m, m->nccl, at, cnt);
            for (int i = 0; i < 2; i++) sc__slide_update(m, &t->k, base + at[i], cnt[i], nt, wb);
        }
    } else if (t->kind == SC__TASK_NORM || t->kind == SC__TASK_LAYER) {
        size_t at[2], cnt[2], base = sc_config_layer_base(c, t->unit), c0, c1;
        /* this layer's gradients are final: its norm sums here (or the device's landed with
           them: over NCCL they always do), or in a task of their own */
        int marks = t->kind == SC__TASK_NORM || !t->update || (sl->gn_dev && m->nccl);
        if (sl->gn_part && marks && sc__norm_chunks_in(base, sc__layer_numel(c), &c0, &c1)) {
            if (!sl->gn_dev) sc__grad_norm_chunks(sl->gn_part, sl->hg, m->gdt, m->nparams, c0, c1, nt);
            memset(sl->gn_done + c0, 1, c1 - c0);
        }
        if (t->kind == SC__TASK_NORM) return;
        /* over NCCL, a rank updates its chunks of the layer only (the upload gathers the rest) */
        sc__slide_layer_chunk(m, m->nccl, at, cnt);
        for (int i = 0; i < 2 && t->update; i++) sc__slide_update(m, &t->k, base + at[i], cnt[i], nt, wb);
    } else if (t->kind == SC__TASK_HEAD_ROWS) {
        if (t->update) sc__slide_head_rows(m, &t->k, b->touched, t->r0, t->r1, nt, wb);
    } else if (t->kind == SC__TASK_HEAD_EARLY && t->parts) {
        /* the LM head's rows went by SC__TASK_HEAD_ROWS as their gradients landed, but those two
           downloads share: these, the final norm and an untied model's untouched embedding rows */
        if (t->update) {
            int split[2 * (SC_MAX_LAYERS + 1)], ns = sc__slide_split_rows(m, split);
            for (int i = 0; i < ns; i++) sc__slide_head_rows(m, &t->k, b->touched, split[i], split[i] + 1, nt, wb);
            sc__slide_update(m, &t->k, sc_config_norm_offset(c), (size_t)c->hidden_size, nt, wb);
            if (!c->tie_embeddings) sc__slide_update_rows(m, &t->k, b->touched, 0, wb, 0, c->vocab_size);
        }
    } else if (t->kind == SC__TASK_HEAD_EARLY) {
        /* every parameter outside the layers whose gradient is final: the final norm, an untied
           LM head and the embedding rows no token of this step touched */
        if (t->update) { /* devhead: the device updated the LM head (tied: the rows no token touched) */
            size_t off = sc_config_norm_offset(c);
            sc__slide_update(m, &t->k, off, t->devhead ? (size_t)c->hidden_size : m->nparams - off, nt, wb);
            if (!t->devhead || !c->tie_embeddings) sc__slide_update_own_rows(m, &t->k, b->touched, 0, wb);
        }
    } else {
        int N = b->N;
        size_t lo[2], hi[2];
        sc__slide_grad_rows(m, lo, hi);
        for (int k = 0; k < b->M; k++) /* micro-batches in order, as resident mode adds them */
            if (sc__host_embedding_backward(sl->hg, m->gdt, (const char *)b->stage + (size_t)k * N * c->hidden_size * m->ab,
                                            m->ab == 2 ? SC_BF16 : SC_F32, b->ids + (size_t)k * N, N,
                                            c->hidden_size, nt, lo, hi) != SC_SUCCESS)
                sl->task_err = SC_ERROR_OUT_OF_MEMORY;
        if (t->update) sc__slide_update_own_rows(m, &t->k, b->touched, 1, wb);
        /* every gradient outside the layers is final now: their chunks' norm sums here, in turn
           with the updates, rather than by the norm's caller on threads of its own beside them
           (0.3B gradients at the 1.7B shape, on cores the updates use) */
        if (sl->gn_part) { /* (a split head: this rank's chunks of the embedding) */
            size_t e = sc_config_layer_base(c, 0), no = sc_config_norm_offset(c), c0, c1;
            if (sc__slide_head_split(m)) sc__slide_head_norm_chunks(m, sc_dist_comm_rank(m->mc.comm), &c0, &c1);
            else sc__norm_chunks_in(0, e, &c0, &c1);
            if (c1 > c0) {
                sc__grad_norm_chunks(sl->gn_part, sl->hg, m->gdt, m->nparams, c0, c1, nt);
                memset(sl->gn_done + c0, 1, c1 - c0);
            }
            if (sc__norm_chunks_in(no, m->nparams - no, &c0, &c1)) {
                sc__grad_norm_chunks(sl->gn_part, sl->hg, m->gdt, m->nparams, c0, c1, nt);
                memset(sl->gn_done + c0, 1, c1 - c0);
            }
        }
    }
}

#ifdef SC__HAVE_THREADS
static void *sc__opt_main(void *arg)
{
    sc__slide *sl = (sc__slide *)arg;
    sc_model *m = sl->m;
    SC__LOCK(sl);
    for (;;) {
        while (!sl->stop && sl->tn == 0) SC__WAIT(sl);
        if (sl->tn == 0) break;
        /* which tasks' gradients have landed: their events are on the download stream, so they
           complete in queue order */
        size_t i = 0;
        for (; i < sl->tn && sl->tasks[i].landed; i++) {}
        for (; i < sl->tn && sc__ev_query_locked(m, &sl->tasks[i].ev); i++) sl->tasks[i].landed = 1;
        int best = -1;
        for (size_t j = 0; j < sl->tn; j++)
            if (sl->tasks[j].landed && (best < 0 || sl->tasks[j].rank < sl->tasks[best].rank)) best = (int)j;
        if (best < 0) { /* none yet: wait for the oldest */
            sc__ev e = sl->tasks[0].ev;
            uint64_t seq = sl->tasks[0].seq;
            SC__UNLOCK(sl);
            sc__ev_sync(m, &e);
            SC__LOCK(sl);
            for (size_t j = 0; j < sl->tn; j++)
                if (sl->tasks[j].seq == seq) sl->tasks[j].landed = 1;
            continue;
        }
        sc__task t = sl->tasks[best];
        memmove(sl->tasks + best, sl->tasks + best + 1, (sl->tn - (size_t)best - 1) * sizeof t);
        sl->tn--;
        SC__UNLOCK(sl);
        sc__ev_release(m, &t.ev);
        int64_t t0 = sc__trace_now_ns();
        sc__slide_run_task(m, &t);
        int64_t t1 = sc__trace_now_ns();
        SC__LOCK(sl);
        sl->gn_tasks -= t.kind == SC__TASK_NORM;
        if (!t.dev) {
            int lay = t.kind == SC__TASK_LAYER || t.kind == SC__TASK_NORM ||
                      (t.kind == SC__TASK_CLIPPED && t.unit < m->cfg.num_layers);
            sc__hspan_push(sl, SC_PHASE_OPT, lay ? t.unit : -1, 3, t0, t1, 0);
            sl->opt_ms[t.step2] += (double)(t1 - t0) / 1e6;
        }
        sl->pend[t.par][t.unit]--;
        sl->tdone++;
        SC__WAKE(sl);
    }
    SC__UNLOCK(sl);
    return NULL;
}
#endif

/* Queue a host task once event ev completes; rows [r0, r1) for SC__TASK_HEAD_ROWS, parts for
   SC__TASK_HEAD_EARLY: the LM head's rows went by SC__TASK_HEAD_ROWS. */
static void sc__slide_queue_ex(sc_model *m, int kind, int unit, sc__ev ev, int r0, int r1, int parts)
{
    sc__slide *sl = m->sl;
    sc__task t;
    memset(&t, 0, sizeof t);
    t.kind = kind; t.unit = unit; t.ev = ev; t.k = sl->k; t.update = sl->update; t.par = sl->par; t.sb = sl->cur;
    t.r0 = r0; t.r1 = r1; t.parts = parts;
    t.step2 = (int)(sl->nstep & 1);
    t.dev = kind == SC__TASK_LAYER && sl->devup;
    t.devhead = kind == SC__TASK_HEAD_EARLY && sl->devhead;
    if (t.dev) t.update = 0;
    /* the lowest rank runs first: the norm's sums, the head's tasks, then the layers from the first */
    int lay = kind == SC__TASK_LAYER || (kind == SC__TASK_CLIPPED && unit < m->cfg.num_layers);
    t.rank = (long long)sl->nstep * (SC_MAX_LAYERS + 2) + (kind == SC__TASK_NORM ? -1 : lay ? unit + 1 : 0);
    SC__LOCK(sl);
    if (sl->tn == sl->tcap) {
        size_t n = sl->tcap ? 2 * sl->tcap : 64;
        sc__task *p = (sc__task *)SC_MALLOC(n * sizeof *p);
        if (!p) { /* no room to queue: run it here */
            SC__UNLOCK(sl);
            sc__ev_sync(m, &t.ev);
            sc__ev_release(m, &t.ev);
            sc__slide_run_task(m, &t);
            return;
        }
        if (sl->tn) memcpy(p, sl->tasks, sl->tn * sizeof *p);
        SC_FREE(sl->tasks);
        sl->tasks = p;
        sl->tcap = n;
    }
    t.seq = ++sl->tqueued;
    sl->gn_tasks += kind == SC__TASK_NORM;
    sl->tasks[sl->tn++] = t;
    sl->pend[t.par][unit]++;
    SC__WAKE(sl);
    SC__UNLOCK(sl);
}

static void sc__slide_queue(sc_model *m, int kind, int unit, sc__ev ev) { sc__slide_queue_ex(m, kind, unit, ev, 0, 0, 0); }

/* wait until every queued update has run */
static void sc__slide_drain(sc_model *m)
{
    sc__slide *sl = m->sl;
    SC__LOCK(sl);
    while (sl->tdone < sl->tqueued) SC__WAIT(sl);
    SC__UNLOCK(sl);
}

/* wait until the queued tasks of `unit` (L: the head and the embedding) whose update number has
   parity par have run; the wait counts as optimizer wait */
static void sc__slide_wait_unit(sc_model *m, int par, int unit)
{
    sc__slide *sl = m->sl;
    SC__LOCK(sl);
    if (sl->pend[par][unit]) {
        int64_t t0 = sc__trace_now_ns();
        while (sl->pend[par][unit]) SC__WAIT(sl);
        sl->wait_ms += (double)(sc__trace_now_ns() - t0) / 1e6;
    }
    SC__UNLOCK(sl);
}

static int sc__slide_unit_ready(sc__slide *sl, int par, int unit)
{
    SC__LOCK(sl);
    int ok = sl->pend[par][unit] == 0;
    SC__UNLOCK(sl);
    return ok;
}

/* the host weights this step uploads */
static const char *sc__slide_src(const sc__slide *sl)
{
    return (const char *)(sl->hw[sl->rb] ? sl->hw[sl->rb] : sl->hp);
}

static void *sc__host_alloc(sc_model *m, size_t bytes, int pinned)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu && pinned) {
        void *p = sc_cuda_host_alloc(m->cu, bytes);
        if (p) m->sl->pinned_bytes += bytes;
        return p;
    }
#endif
    (void)pinned;
    void *p = SC_MALLOC(bytes ? bytes : 1);
    if (p) m->sl->host_bytes += bytes, sc__host_huge(p, bytes, sc__optim_huge);
    return p;
}
static void sc__host_free(sc_model *m, void *p, int pinned)
{
    if (!p) return;
#ifdef SLIDECHECK_CUDA
    if (m->cu && pinned) { sc_cuda_host_free(m->cu, p); return; }
#endif
    (void)m; (void)pinned;
    SC_FREE(p);
}

/* The window's block back to the allocator (it waits there for the copies that read or write it)
   and every event and pointer into it dropped. */
static void sc__slide_pool_release(sc_model *m)
{
    sc__slide *sl = m->sl;
    for (int i = 0; i < sl->nslots; i++) {
        sc__ev_release(m, &sl->slots[i].ready);
        sc__ev_release(m, &sl->slots[i].free);
    }
    for (int i = 0; i < 2; i++) {
        sc__slot *b[3] = {&sl->hs[i], &sl->hsg[i], i ? &sl->head : NULL};
        for (int k = 0; k < 3; k++) {
            if (!b[k]) continue;
            sc__ev_release(m, &b[k]->ready);
            sc__ev_release(m, &b[k]->free);
            b[k]->w = NULL;
            b[k]->unit = -1;
        }
    }
    for (int k = 0; k < sl->nring; k++) sc__ev_release(m, &sl->rfree[k]), sc__ev_release(m, &sl->hfree[k]);
    sc__ev_release(m, &sl->hgfree);
    SC_FREE(sl->slots);
    sl->slots = NULL;
    sl->nslots = sl->nring = sl->rnext = 0;
    sc__free(m, sl->pool);
    sl->pool = NULL;
    sl->garea = NULL;
    sl->head_g = NULL;
    sl->pool_bytes = sl->gbytes = sl->ghead = 0;
}

/* ------------------------------------------------------------------------------------------
   Layers kept on the device (mc.slide_device_layers): resident mode's buffers for those layers
   only, each an allocation of its own; the step skips their uploads, downloads and host updates.
   ------------------------------------------------------------------------------------------ */

static int sc__dev_layer(const sc_model *m, int l)
{
    return m->sl && l >= 0 && l < m->cfg.num_layers && m->mc.slide_device_layers[l];
}

/* the element size of their AdamW state: resident mode's (bf16 state, else the updated weights') */
static int sc__dev_state_bytes(const sc_model *m)
{
    int master = m->cu && m->mc.bf16 && m->mc.master_weights;
    return m->mc.state_bf16 ? 2 : master ? 4 : m->pb;
}

static void sc__dev_layers_free(sc_model *m)
{
    sc__slide *sl = m->sl;
    for (int l = 0; l < m->cfg.num_layers; l++) {
        float **b[5] = {&sl->dw[l], &sl->dg[l], &sl->dmw[l], &sl->dm[l], &sl->dv[l]};
        for (int i = 0; i < 5; i++) {
            sc__free(m, *b[i]);
            *b[i] = NULL;
        }
    }
    sl->ndev = 0;
}

/* weights (and the f32 master) from the initial f32 values, zero gradients and state */
static sc_result sc__dev_layers_create(sc_model *m, const float *init)
{
    sc__slide *sl = m->sl;
    const sc_config *c = &m->cfg;
    size_t ln = sc__layer_numel(c);
    int master = m->cu && m->mc.bf16 && m->mc.master_weights, adam = m->mc.optim == SC_OPTIM_ADAMW;
    int sb = sc__dev_state_bytes(m);
    char tag[64];
    for (int l = 0; l < c->num_layers; l++) {
        if (!sc__dev_layer(m, l)) continue;
        const float *w = init + sc_config_layer_base(c, l);
        snprintf(tag, sizeof tag, "device layer %d weights", l);
        SC__TRY(sc__alloc_bytes(m, &sl->dw[l], ln, m->pb, tag));
        snprintf(tag, sizeof tag, "device layer %d grad", l);
        SC__TRY(sc__alloc_bytes(m, &sl->dg[l], ln, m->gb, tag));
        if (master) {
            snprintf(tag, sizeof tag, "device layer %d master weights", l);
            SC__TRY(sc__alloc_bytes(m, &sl->dmw[l], ln, 4, tag));
            SC__TRY(sc__upload_f32(m, sl->dmw[l], 4, w, ln));
        }
        if (adam) {
            snprintf(tag, sizeof tag, "device layer %d adamw.m", l);
            SC__TRY(sc__alloc_bytes(m, &sl->dm[l], ln, sb, tag));
            snprintf(tag, sizeof tag, "device layer %d adamw.v", l);
            SC__TRY(sc__alloc_bytes(m, &sl->dv[l], ln, sb, tag));
            sc__memset0(m, sl->dm[l], ln * (size_t)sb);
            sc__memset0(m, sl->dv[l], ln * (size_t)sb);
        }
        SC__TRY(sc__upload_f32(m, sl->dw[l], m->pb, w, ln));
        sc__memset0(m, sl->dg[l], ln * (size_t)m->gb);
        sl->ndev++;
    }
    return SC_SUCCESS;
}

/* Device layer l's optimizer step from its gradients, on the compute stream: resident mode's
   update (sc__device_update_range) on the layer's own buffers, so the same bits. */
static void sc__dev_layer_update(sc_model *m, int l, const sc_optim_consts *k)
{
    sc__slide *sl = m->sl;
    size_t n = sc__layer_numel(&m->cfg);
    float *p = sl->dmw[l] ? sl->dmw[l] : sl->dw[l];
    int adam = m->mc.optim == SC_OPTIM_ADAMW;
    sc_dtype st = sc__dev_state_bytes(m) == 2 ? SC_BF16 : SC_F32;
    int sp = sc__span_begin(m, "optimizer", SC_PHASE_OPT, l);
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        sc_dtype pt = sl->dmw[l] || m->pb == 4 ? SC_F32 : SC_BF16;
        if (adam) sc_cuda_adamw_update(m->cu, p, sl->dm[l], sl->dv[l], pt, st, sl->dg[l], m->gdt, n, k);
        else sc_cuda_sgd_update(m->cu, p, pt, sl->dg[l], m->gdt, n, k);
        if (sl->dmw[l]) sc_cuda_convert(m->cu, sl->dw[l], m->pdt, p, SC_F32, n);
        sc__span_end(m, sp);
        return;
    }
#endif
    /* the CPU backend's compute thread: one thread, beside the host optimizer's (bits independent of it) */
    if (adam) sc_cpu_adamw_mt(p, sl->dm[l], sl->dv[l], SC_F32, st, sl->dg[l], SC_F32, NULL, n, k, 1);
    else sc_cpu_sgd_mt(p, SC_F32, sl->dg[l], SC_F32, NULL, n, k, 1);
    sc__round(m, p, n);
    sc__span_end(m, sp);
}

/* The device layers' values in their places of a flat f32 buffer (load = 0), or from there (load =
   1). which: 0 the weights (the f32 master where there is one), 1 gradients, 2 AdamW m, 3 v, 4 the
   master (loading it rounds the working weights from it, as an update does). */
static sc_result sc__dev_layers_io(sc_model *m, int which, float *buf, int load)
{
    sc__slide *sl = m->sl;
    size_t n = sc__layer_numel(&m->cfg);
    for (int l = 0; l < m->cfg.num_layers; l++) {
        if (!sc__dev_layer(m, l)) continue;
        void *d = which == 0 ? (sl->dmw[l] ? sl->dmw[l] : sl->dw[l]) : which == 1 ? sl->dg[l] : which == 2 ? sl->dm[l]
                  : which == 3 ? sl->dv[l] : sl->dmw[l];
        int es = which == 0 ? (sl->dmw[l] ? 4 : m->pb) : which == 1 ? m->gb : which == 4 ? 4 : sc__dev_state_bytes(m);
        float *b = buf + sc_config_layer_base(&m->cfg, l);
        if (!d) continue;
        SC__TRY(load ? sc__upload_f32(m, d, es, b, n) : sc__download_f32(m, b, d, es, n));
#ifdef SLIDECHECK_CUDA
        if (load && which == 4 && m->cu) {
            sc_cuda_convert(m->cu, sl->dw[l], m->pdt, sl->dmw[l], SC_F32, n);
            SC__TRY(sc_cuda_status(m->cu));
        }
#endif
    }
    return SC_SUCCESS;
}

static void sc__slide_destroy(sc_model *m)
{
    sc__slide *sl = m->sl;
    if (!sl) return;
#ifdef SC__HAVE_THREADS
    SC__LOCK(sl);
    sl->stop = 1;
    SC__WAKE(sl);
    SC__UNLOCK(sl);
    for (int i = 0; i < 2; i++)
        if (sl->qstarted[i]) pthread_join(sl->qth[i], NULL);
    if (sl->ostarted) pthread_join(sl->oth, NULL);
#endif
#ifdef SLIDECHECK_CUDA
    if (m->cu) sc_cuda_synchronize(m->cu);
#endif
    sc__slide_pool_release(m);
    sc__dev_layers_free(m);
    sc__host_free(m, sl->gn_part, sl->gn_dev);
    SC_FREE(sl->gn_done);
    int gpu = m->cu != NULL;
    sc__host_free(m, sl->hp, sl->hp_pinned);
    sc__host_free(m, sl->hg, gpu);
    for (int i = 0; i < 2; i++) {
        sc__host_free(m, sl->hw[i], gpu);
        sc__host_free(m, sl->sb[i].stage, gpu);
        SC_FREE(sl->sb[i].touched);
        SC_FREE(sl->sb[i].tlist);
        SC_FREE(sl->sb[i].ids);
    }
    SC_FREE(sl->hm);
    SC_FREE(sl->hv);
    SC_FREE(sl->q[0].ops);
    SC_FREE(sl->q[1].ops);
    SC_FREE(sl->tasks);
    SC_FREE(sl->hspans);
#ifdef SC__HAVE_THREADS
    if (sl->sync_ok) {
        pthread_mutex_destroy(&sl->mu);
        pthread_cond_destroy(&sl->cv);
    }
#endif
    SC_FREE(sl);
    m->sl = NULL;
}

/* Host memory the machine has (0: unknown). */
static size_t sc__host_phys_bytes(void)
{
#if defined(__linux__)
    long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
    if (pages > 0 && ps > 0) return (size_t)pages * (size_t)ps;
#endif
    return 0;
}

static void sc__gib_str(char *buf, size_t cap, size_t b) { snprintf(buf, cap, "%.2f GiB", (double)b / 1073741824.0); }

/* Host buffers of slide mode, allocated and touched up front; `init` = the f32 initial weights. */
static sc_result sc__slide_create(sc_model *m, const float *init)
{
#ifndef SC__HAVE_THREADS
    (void)init;
    return sc__fail(SC_ERROR_UNSUPPORTED, "slide mode needs POSIX threads (not available in this build)");
#else
    const sc_config *c = &m->cfg;
    sc__slide *sl = (sc__slide *)SC_MALLOC(sizeof *sl);
    if (!sl) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc of the slide state failed");
    memset(sl, 0, sizeof *sl);
    sl->m = m;
    m->sl = sl;
    sl->head.unit = -1;
    if (pthread_mutex_init(&sl->mu, NULL) || pthread_cond_init(&sl->cv, NULL))
        return sc__fail(SC_ERROR_OUT_OF_MEMORY, "slide: pthread mutex/cond init failed");
    sl->sync_ok = 1;
    /* the norm's sums from the start with clipping, and over NCCL, where the device sums each
       layer's chunks and only this rank's share of its gradients comes down (sc__slide_layer_down) */
    if ((m->mc.clip_grad_norm > 0.0f || (m->nccl && sc_dist_comm_world(m->mc.comm) > 1)) &&
        sc__slide_norm_sums(sl) != SC_SUCCESS)
        return SC_ERROR_OUT_OF_MEMORY;
    int gpu = m->cu != NULL, master = gpu && m->mc.bf16 && m->mc.master_weights;
    int dpu = m->mc.slide_dpu != 0, nw = dpu ? 2 : master; /* working copies */
    size_t n = m->nparams;
    sl->hpt = (gpu && m->mc.bf16 && !master) ? SC_BF16 : SC_F32;
    sl->hst = m->mc.state_bf16 ? SC_BF16 : sl->hpt;
    size_t pe = sc_dtype_size(sl->hpt), se = sc_dtype_size(sl->hst), ge = (size_t)m->gb;
    int adam = m->mc.optim == SC_OPTIM_ADAMW;
    /* ZeRO-1 shards m and v only. The weights hp (the f32 master copy on a bf16 GPU) stay whole:
       on the CPU backend every rank's next forward reads all of them; over NCCL the uploads read
       only this rank's chunks of the layers, so the others' chunks of hp, of the working copies
       and of hg are idle there, but the uploads, the embedding rows, get_params and the updates
       index them by parameter offset: not sharded yet. */
    sl->zero = adam && m->mc.zero && sc_dist_comm_world(m->mc.comm) > 1;
    size_t ns = sc__slide_state_at(m, n); /* AdamW state elements */
    sl->hp_pinned = gpu && !nw; /* uploads read hp unless there are working copies */
    size_t pinned = n * ge + (sl->hp_pinned ? n * pe : 0) + (size_t)nw * n * (size_t)m->pb;
    size_t pageable = (sl->hp_pinned ? 0 : n * pe) + (adam ? 2 * ns * se : 0);
    size_t phys = sc__host_phys_bytes();
    char a[32], b[32], d[32];
    sc__gib_str(a, sizeof a, pinned);
    sc__gib_str(b, sizeof b, pageable);
    sc__gib_str(d, sizeof d, phys);
    if (phys && pinned + pageable > phys)
        return sc__fail(SC_ERROR_OUT_OF_MEMORY, "slide mode needs %s pinned + %s pageable host memory for weights, "
                        "gradients and optimizer state; this machine has %s", a, b, d);
    if (m->mc.verbose)
        fprintf(stderr, "slide: allocating and touching %s pinned + %s pageable host memory up front "
                "(weights, gradients, optimizer state)...\n", a, b);
    /* which AdamW loop and page size run fastest on this host, once a process, where it matters (out of memory
       for its buffers: the defaults) */
    if (adam && ns >= ((size_t)64 << 20) && !sc_cpu_optim_choice().tuned) {
        if (m->mc.verbose) fprintf(stderr, "slide: timing the host AdamW's loops and page sizes on this host...\n");
        (void)sc_cpu_optim_tune(sc__slide_threads(m), 0);
    }
    int ok = 1;
    for (int i = 0; i < nw; i++) ok = ok && (sl->hw[i] = sc__host_alloc(m, n * (size_t)m->pb, gpu)) != NULL;
    for (int i = 0; i < 1 + dpu; i++)
        ok = ok && (sl->sb[i].touched = (unsigned char *)SC_MALLOC((size_t)c->vocab_size)) != NULL;
    if (!ok || !(sl->hp = sc__host_alloc(m, n * pe, sl->hp_pinned)) || !(sl->hg = sc__host_alloc(m, n * ge, gpu)) ||
        (adam && (!(sl->hm = sc__host_alloc(m, ns * se, 0)) || !(sl->hv = sc__host_alloc(m, ns * se, 0))))) {
        char e[1100];
        snprintf(e, sizeof e, "%s", sc_last_error());
        return sc__fail(SC_ERROR_OUT_OF_MEMORY, "slide mode: host allocation failed (needs %s pinned + %s pageable; "
                        "this machine has %s): %s", a, b, d, e);
    }
    for (int i = 0; i < 1 + dpu; i++) memset(sl->sb[i].touched, 0, (size_t)c->vocab_size);
    /* weights (and working copies), zero gradients and state, touched now in parallel */
    SC__OMP(omp parallel for schedule(static))
    for (long long i = 0; i < (long long)n; i++) {
        float v = init[i];
        sc__st(sl->hp, sl->hpt, (size_t)i, v);
        for (int b = 0; b < nw; b++) sc__st(sl->hw[b], m->pdt, (size_t)i, v);
        sc__st(sl->hg, m->gdt, (size_t)i, 0.0f);
    }
    SC__OMP(omp parallel for schedule(static))
    for (long long i = 0; i < (long long)(adam ? ns : 0); i++) {
        sc__st(sl->hm, sl->hst, (size_t)i, 0.0f);
        sc__st(sl->hv, sl->hst, (size_t)i, 0.0f);
    }
    SC__TRY(sc__dev_layers_create(m, init));
    if (!gpu)
        for (int i = 0; i < 2; i++) {
            sl->qarg[i].sl = sl;
            sl->qarg[i].i = i;
            if (pthread_create(&sl->qth[i], NULL, sc__cq_main, &sl->qarg[i]))
                return sc__fail(SC_ERROR_OUT_OF_MEMORY, "slide: could not start a copy thread");
            sl->qstarted[i] = 1;
        }
    if (pthread_create(&sl->oth, NULL, sc__opt_main, sl))
        return sc__fail(SC_ERROR_OUT_OF_MEMORY, "slide: could not start the optimizer thread");
    sl->ostarted = 1;
    if (m->mc.verbose) fprintf(stderr, "slide: host memory ready\n");
    return SC_SUCCESS;
#endif
}

/* The widest group of layers that must be resident together (a recomputed segment). */
static int sc__plan_widest(const sc_plan *p)
{
    int w = 1;
    for (int l = 0; l < p->num_layers; l++)
        if (p->seg[l] >= 0 && l - p->seg[l] + 1 > w) w = l - p->seg[l] + 1;
    return w;
}

/* Layer gradient buffers the window holds at least: the widest group's W, and one more where
   more layers stream, so that a layer's gradients go down while the next layer's backward writes
   the other buffer (with one buffer each backward waited for the last download: on the 1.7B shape
   3.9 ms a layer). A streamed head's gradient area, when larger, gives the ring more. */
static int sc__slide_rings(int W, int streamed) { return W + (streamed > W); }

SCDEF size_t sc_slide_window_bytes(const sc_config *c, const sc_model_config *mc, const sc_plan *plan)
{
    int P = mc && mc->slide_prefetch > 0 ? mc->slide_prefetch : 1, W = plan ? sc__plan_widest(plan) : 1;
    int gpu = mc && mc->device == SC_DEVICE_CUDA, bf = gpu && mc->bf16;
    size_t pb = bf ? 2 : 4, gb = bf && !mc->master_weights ? 2 : 4;
    size_t ln = sc__layer_numel(c), hn = sc__head_numel(c), C = (size_t)c->hidden_size;
    size_t hw = hn; /* head weights on the device */
    if (mc && mc->head_slice > 0 && mc->head_slice < c->vocab_size) { /* the norm and two slices (or the whole
                                                                          head once), and (one micro-batch)
                                                                          two slices of gradients */
        hn = C + 2 * (size_t)mc->head_slice * C;
        hw = mc->slide_head_once ? sc__head_numel(c) : hn;
    }
    /* layers on the device: their weights, gradients, master and AdamW state; the window holds no
       more slots (nor layer gradient buffers) than there are streamed layers */
    int master = bf && mc->master_weights, ndev = 0, S;
    size_t mb = master ? 4 : pb, sb = mc && mc->state_bf16 ? 2 : mb;
    size_t per = pb + gb + (master ? 4 : 0) + (mc && mc->optim == SC_OPTIM_ADAMW ? 2 * sb : 0);
    for (int l = 0; mc && l < c->num_layers && l < SC_MAX_LAYERS; l++) ndev += mc->slide_device_layers[l] != 0;
    S = c->num_layers - ndev;
    if (P + W > S) P = S - W > 0 ? S - W : 0;
    if (W > S) W = S;
    size_t dev = (size_t)ndev * ln * per;
    size_t R = (size_t)sc__slide_rings(W, S);
    size_t grads = R * ln * gb > hn * gb ? R * ln * gb : hn * gb;
    if (mc && mc->slide_keep_head) /* the kept head's weights, gradients, master and AdamW state */
        return (size_t)(P + W) * ln * pb + R * ln * gb + sc__kept_numel(c) * per + dev;
    /* past two GPU ranks, the ordered sums' scratch (sc__p2p_setup) */
    size_t ord = mc && mc->comm ? sc__p2p_ordered_bytes(mc, sc_dist_comm_world(mc->comm)) : 0;
    return (size_t)(P + W) * ln * pb + hw * pb + grads + dev + ord;
}

static int sc__group_has(const sc__slide *sl, int g, int unit)
{
    return g >= 0 && g < sl->ngroups && unit >= sl->gfirst[g] && unit <= sl->glast[g];
}

/* the first group after g that needs `unit` (INT_MAX: none this step) */
static int sc__next_use(const sc__slide *sl, int unit, int g)
{
    for (int h = g + 1; h < sl->ngroups; h++)
        if (sc__group_has(sl, h, unit)) return h;
    return INT_MAX;
}

static sc__slot *sc__slot_of(sc__slide *sl, int unit, int L)
{
    if (unit == L) return sl->head.unit == L ? &sl->head : NULL;
    for (int i = 0; i < sl->nslots; i++)
        if (sl->slots[i].unit == unit) return &sl->slots[i];
    return NULL;
}

#ifdef SLIDECHECK_CUDA
/* Slide over NCCL: once this rank's chunk of `unit` (ch elements at rank r's place in slot s, in
   rank order) and the remainder are up, NCCL gathers the other ranks' chunks into the slot; it is
   ready on the comm stream. */
static int sc__slide_gather_up(sc_model *m, sc__slot *s, int unit, size_t ch)
{
    int W = sc_dist_comm_world(m->mc.comm);
    sc__ev up;
    up.stream = 1, up.seq = 0, up.cu = sc_cuda_event_record(1, m->cu);
    sc__stream_wait(m, SC_STREAM_COMM, &up);
    sc__ev_release(m, &up);
    int sp = m->tr ? sc_tracer_span_begin(m->tr, "all-gather", SC_PHASE_COMM, unit < m->cfg.num_layers ? unit : -1,
                                          SC_STREAM_COMM) : -1;
    if (sp >= 0) sc_tracer_span_bytes(m->tr, sp, (int64_t)(ch * (size_t)W * (size_t)m->pb));
    sc_cuda_allgather(m->cu, s->w, ch, m->pdt);
    if (sp >= 0) sc_tracer_span_end(m->tr, sp);
    s->ready.stream = SC_STREAM_COMM, s->ready.seq = 0, s->ready.cu = sc_cuda_event_record(SC_STREAM_COMM, m->cu);
    s->unit = unit;
    return 1;
}
#endif

/* Upload `unit` into a slot, for its use in group `gu` while group g computes. Returns 0 when no
   slot can take it without evicting a layer needed sooner (Belady's rule). */
static int sc__slide_load(sc_model *m, int unit, int gu, int g)
{
    sc__slide *sl = m->sl;
    const sc_config *c = &m->cfg;
    int L = c->num_layers;
    sc__slot *s = NULL;
    if (unit == L) s = &sl->head;
    else {
        int best = -1, best_score = -1;
        for (int i = 0; i < sl->nslots; i++) {
            int u = sl->slots[i].unit, score;
            if (u < 0) score = INT_MAX;
            else if (sc__group_has(sl, g, u) || sc__group_has(sl, gu, u)) continue;
            else if ((score = sc__next_use(sl, u, g)) <= gu) continue; /* needed sooner */
            if (score > best_score) { best = i; best_score = score; }
        }
        if (best < 0) return 0;
        s = &sl->slots[best];
    }
    if (s->unit >= 0 && s->unit != L) sl->lw[s->unit] = NULL;
    sc__stream_wait(m, 1, &s->free); /* the compute that read the old layer is done */
    sc__ev_release(m, &s->free);
    sc__ev_release(m, &s->ready);
    const char *src = sc__slide_src(sl);
    size_t pb = (size_t)m->pb;
    if (unit == L) { /* [lm head | norm], or the norm only when the head goes up in slices; a split
                        head (sc__slide_head_split): this rank's rows, and NCCL gathers the others' */
        size_t C = (size_t)c->hidden_size, ho = sc_config_lm_head_offset(c), at[2] = {0, 0}, cnt[2] = {0, 0};
        size_t lm = sc__head_rows(m) < c->vocab_size && !m->mc.slide_head_once ? 0 : (size_t)c->vocab_size * C;
        int split = sc__slide_head_split(m);
        if (split) sc__slide_row_chunk(m, at, cnt);
        else cnt[0] = lm / C;
        for (int i = 0; i < 2; i++)
            sc__copy_async(m, 1, (char *)s->w + at[i] * C * pb, src + (ho + at[i] * C) * pb, cnt[i] * C * pb, SC_PHASE_H2D, -1);
        sc__copy_async(m, 1, (char *)s->w + lm * pb, src + sc_config_norm_offset(c) * pb, C * pb, SC_PHASE_H2D, -1);
#ifdef SLIDECHECK_CUDA
        if (split) return sc__slide_gather_up(m, s, unit, cnt[0] * C);
#endif
    } else if (!m->nccl) {
        sc__copy_async(m, 1, s->w, src + sc_config_layer_base(c, unit) * pb, sc__layer_numel(c) * pb, SC_PHASE_H2D, unit);
        sl->lw[unit] = (float *)s->w;
    } else {
#ifdef SLIDECHECK_CUDA
        /* data parallel: this rank's host holds the current weights of its chunks of the layer
           only (it updates only those): they go up, and NCCL gathers the others' */
        size_t at[2], cnt[2], base = sc_config_layer_base(c, unit);
        sc__slide_layer_chunk(m, 1, at, cnt);
        for (int i = 0; i < 2; i++)
            sc__copy_async(m, 1, (char *)s->w + at[i] * pb, src + (base + at[i]) * pb, cnt[i] * pb, SC_PHASE_H2D, unit);
        sl->lw[unit] = (float *)s->w;
        return sc__slide_gather_up(m, s, unit, cnt[0]);
#endif
    }
    s->ready = sc__ev_record(m, 1);
    s->unit = unit;
    return 1;
}

/* Upload the `prefetch` units after group g, in schedule order, while slots allow. */
static void sc__slide_prefetch(sc_model *m, int g)
{
    sc__slide *sl = m->sl;
    int L = m->cfg.num_layers, P = m->mc.slide_prefetch > 0 ? m->mc.slide_prefetch : 1;
    int ahead = 0;
    for (int h = g + 1; h < sl->ngroups && ahead < P; h++)
        for (int u = sl->gfirst[h]; u <= sl->glast[h] && ahead < P; u++) {
            if (sc__group_has(sl, g, u) || sc__dev_layer(m, u)) continue;
            /* not before its update has run (the next acquire tries again). Over NCCL each load is
               a collective, so every rank must load the same units in the same order: wait */
            if (!sc__slot_of(sl, u, L) && m->nccl) sc__slide_wait_unit(m, sl->wp, u);
            if (!sc__slot_of(sl, u, L) && (!sc__slide_unit_ready(sl, sl->wp, u) || !sc__slide_load(m, u, h, g))) {
                ahead = P;
                break;
            }
            ahead++;
        }
    /* a streamed head goes up once its update has run, in the forward, not in its turn behind the
       last layer's upload, which a host-bound step issues last: the loss then waited for it */
    if (g < L && !m->nccl && !sc__slot_of(sl, L, L) && sc__slide_unit_ready(sl, sl->wp, L)) sc__slide_load(m, L, L, g);
}

/* Make group g's units resident (the compute stream waits for their uploads), and with pre
   prefetch. Without, the caller prefetches once it has queued the group's compute: over NCCL,
   where a prefetch waits for its unit's update (each load is a collective), the compute then
   runs meanwhile. */
static void sc__slide_acquire_ex(sc_model *m, int g, int pre)
{
    sc__slide *sl = m->sl;
    int L = m->cfg.num_layers;
    for (int u = sl->gfirst[g]; u <= sl->glast[g]; u++)
        if (!sc__dev_layer(m, u) && !sc__slot_of(sl, u, L)) { /* (a device layer is always resident) */
            sc__slide_wait_unit(m, sl->wp, u); /* the update of u this step's weights come from */
            sc__slide_load(m, u, g, g);
        }
    if (pre) sc__slide_prefetch(m, g);
    int sp = sc__span_begin(m, "wait h2d", SC_PHASE_OTHER, sl->gfirst[g] == L ? -1 : sl->gfirst[g]);
    for (int u = sl->gfirst[g]; u <= sl->glast[g]; u++) {
        if (sc__dev_layer(m, u)) continue;
        sc__slot *s = sc__slot_of(sl, u, L);
        sc__stream_wait(m, 0, &s->ready);
        sc__ev_release(m, &s->ready);
    }
    sc__span_end(m, sp);
}

static void sc__slide_acquire(sc_model *m, int g) { sc__slide_acquire_ex(m, g, 1); }

/* Group g's compute is queued: its slots may be overwritten once it has run. */
static void sc__slide_release(sc_model *m, int g)
{
    sc__slide *sl = m->sl;
    int L = m->cfg.num_layers;
    for (int u = sl->gfirst[g]; u <= sl->glast[g]; u++) {
        if (sc__dev_layer(m, u)) continue;
        sc__slot *s = sc__slot_of(sl, u, L);
        sc__ev_release(m, &s->free);
        s->free = sc__ev_record(m, 0);
    }
}

/* What the download stream queues from now on waits for the compute queued so far. */
static void sc__d2h_after_compute(sc_model *m)
{
    sc__ev done = sc__ev_record(m, 0);
    sc__stream_wait(m, 2, &done);
    sc__ev_release(m, &done);
}

/* Download a device gradient buffer to the host once the compute queued so far has written it
   (the caller records when the buffer is free again). */
static void sc__slide_grads_down(sc_model *m, void *dev, void *host, size_t bytes, int unit)
{
    sc__slide_wait_unit(m, m->sl->pp, unit); /* DPU: the last update of unit still reads host gradients */
    sc__d2h_after_compute(m);
    sc__copy_async(m, 2, host, dev, bytes, SC_PHASE_D2H, unit);
}
/* Layer l's gradients (summed) down into hg. Over NCCL, where the device sums the norm's whole
   chunks, only what this host reads: its chunks of the layer (sc__slide_layer_chunk) and the ends
   of the layer that share a chunk of the norm with a neighbour (sc__slide_norm_finish sums those
   on the host). The rest of hg's layer is left stale there (sc_model_get_grads gathers it). */
static void sc__slide_layer_down(sc_model *m, int l)
{
    sc__slide *sl = m->sl;
    size_t gb = (size_t)m->gb, ln = sc__layer_numel(&m->cfg), base = sc_config_layer_base(&m->cfg, l), c0, c1;
    char *host = (char *)sl->hg + base * gb, *dev = (char *)sl->lg[l];
    if (!m->nccl || sc_dist_comm_world(m->mc.comm) < 2 || !sl->gn_part || !sl->gn_dev ||
        !sc__norm_chunks_in(base, ln, &c0, &c1)) {
        sc__slide_grads_down(m, dev, host, ln * gb, l);
        return;
    }
    size_t at[2], cnt[2], a = c0 * SC_GRAD_NORM_CHUNK - base, b = c1 * SC_GRAD_NORM_CHUNK - base;
    sc__slide_layer_chunk(m, 1, at, cnt);
    size_t piece[4][2] = {{at[0], cnt[0]}, {at[1], cnt[1]}, {0, a}, {b, ln - b}};
    size_t lo = at[0], hi = at[0] + cnt[0] == at[1] ? ln : at[0] + cnt[0]; /* (the last rank's chunk meets the remainder) */
    for (int i = 0; i < 4; i++) {
        size_t o = piece[i][0], n = piece[i][1];
        if (i >= 2 && o >= lo && o + n <= hi) continue; /* an end inside what came down already */
        if (n) sc__slide_grads_down(m, dev + o * gb, host + o * gb, n * gb, l);
    }
}

/* SGD on n device weights from n device gradients: resident mode's update */
static void sc__slide_sgd(sc_model *m, void *w, const void *g, size_t n)
{
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        sc_optim_consts k = sc__model_consts(m);
        sc_cuda_sgd_update(m->cu, w, m->pdt, g, m->gdt, n, &k);
        return;
    }
#endif
    sc_optim_consts k = sc__model_consts(m);
    sc_cpu_sgd_mt(w, SC_F32, g, SC_F32, NULL, n, &k, 0);
    sc__round(m, (float *)w, n);
}

/* A kept head slot (hfresh): the rows the host updated last step (a tied head's touched rows, the
   final norm) go up into it, on the upload stream; the slot is ready once they have. */
static void sc__slide_head_refresh(sc_model *m)
{
    sc__slide *sl = m->sl;
    const sc_config *c = &m->cfg;
    const sc__stepbuf *b = &sl->sb[sl->cur];
    size_t pb = (size_t)m->pb, C = (size_t)c->hidden_size, V = (size_t)c->vocab_size, go = sc_config_lm_head_offset(c);
    if (!sl->hfresh || !sl->hrefresh) return;
    sc__stream_wait(m, 1, &sl->head.free);
    for (int u = 0; c->tie_embeddings && u < b->ntouched; u++)
        sc__copy_async(m, 1, (char *)sl->head.w + (size_t)b->tlist[u] * C * pb,
                       (const char *)sl->hp + (go + (size_t)b->tlist[u] * C) * pb, C * pb, SC_PHASE_H2D, -1);
    sc__copy_async(m, 1, (char *)sl->head.w + V * C * pb, (const char *)sl->hp + sc_config_norm_offset(c) * pb,
                   C * pb, SC_PHASE_H2D, -1);
    sc__ev_release(m, &sl->head.ready);
    sl->head.ready = sc__ev_record(m, 1);
    sl->hrefresh = 0;
}

/* A kept head slot and a tied head: the rows this step's tokens touch, which the host updates
   after the embedding backward, come down first (the host copy of a row no token touched last
   step is stale); the host's update of them waits for this through the download stream. */
static void sc__slide_head_pull(sc_model *m, const sc__stepbuf *b)
{
    sc__slide *sl = m->sl;
    const sc_config *c = &m->cfg;
    size_t pb = (size_t)m->pb, C = (size_t)c->hidden_size;
    if (!sl->hfresh || !c->tie_embeddings) return;
    sc__stream_wait(m, 2, &sl->head.ready);
    for (int u = 0; u < b->ntouched; u++)
        sc__copy_async(m, 2, (char *)sl->hp + (size_t)b->tlist[u] * C * pb, (const char *)sl->head.w +
                       (size_t)b->tlist[u] * C * pb, C * pb, SC_PHASE_D2H, -1);
}

/* A kept head slot's LM head down into the host copy (after its refresh), waited for: the host
   then holds the current weights. keep = 0: the slot is given up (the host updates the head
   next, or the next step uploads it). */
static void sc__slide_head_flush(sc_model *m, int keep)
{
    sc__slide *sl = m->sl;
    const sc_config *c = &m->cfg;
    if (!sl->hfresh) return;
    sc__slide_head_refresh(m);
    sc__stream_wait(m, 2, &sl->head.ready);
    sc__copy_async(m, 2, (char *)sl->hp + sc_config_lm_head_offset(c) * (size_t)m->pb, sl->head.w,
                   (size_t)c->vocab_size * c->hidden_size * (size_t)m->pb, SC_PHASE_D2H, -1);
    sc__ev e = sc__ev_record(m, 2);
    sc__ev_sync(m, &e);
    sc__ev_release(m, &e);
    sl->hfresh = keep;
}

/* slide_device_update with the head up once and one micro-batch: slice j's SGD step in the head
   slot as soon as its gradient is complete, so no head gradient waits to go down before the
   layers' backward. A tied head's rows that a token touched also take the embedding's gradient:
   their head gradient goes down and the host updates them after the embedding backward, as
   without (the slot's copy of those rows is stale, and overwritten on the host after it lands). */
static void sc__slide_head_slice_update(sc_model *m, int j)
{
    sc__slide *sl = m->sl;
    const sc_config *c = &m->cfg;
    int S = sc__head_rows(m), V = c->vocab_size, C = c->hidden_size, v0 = j * S, v1 = v0 + S < V ? v0 + S : V;
    const unsigned char *touched = c->tie_embeddings ? sl->sb[sl->cur].touched : NULL;
    sc__slot *b = &sl->hsg[j & 1];
    size_t pb = (size_t)m->pb, gb = (size_t)m->gb, go = sc_config_lm_head_offset(c);
    int down = 0;
    for (int r = v0; r < v1;) {
        int t = touched && touched[r], e = r;
        while (e < v1 && (touched && touched[e]) == t) e++;
        size_t n = (size_t)(e - r) * C;
        const char *g = (const char *)b->w + (size_t)(r - v0) * C * gb;
        if (!t) sc__slide_sgd(m, (char *)sl->head.w + (size_t)r * C * pb, g, n);
        else {
            if (!down) {
                sc__d2h_after_compute(m);
                down = 1;
            }
            sc__copy_async(m, 2, (char *)sl->hg + (go + (size_t)r * C) * gb, g, n * gb, SC_PHASE_D2H, -1);
        }
        r = e;
    }
    sc__ev_release(m, &b->free);
    b->free = sc__ev_record(m, down ? 2 : 0);
}

/* slide_device_update: layer l's SGD step in its slot, from the gradients backward has just
   completed (resident mode's update, so the same bits), then the new weights go down into the
   host copy the next upload reads. The slot is free again once they are down, and it keeps the
   new weights: the next forward starts with the layers this backward ends with. */
static void sc__slide_weights_down(sc_model *m, int l)
{
    sc__slide *sl = m->sl;
    const sc_config *c = &m->cfg;
    size_t ln = sc__layer_numel(c), pb = (size_t)m->pb;
    sc__slot *s = sc__slot_of(sl, l, c->num_layers);
    int sp = sc__span_begin(m, "optimizer", SC_PHASE_OPT, l);
    sc__slide_sgd(m, s->w, sl->lg[l], ln);
    sc__span_end(m, sp);
    sc__ev_release(m, &sl->rfree[sl->lgk[l]]);
    sl->rfree[sl->lgk[l]] = sc__ev_record(m, 0);
    sl->lg[l] = NULL;
    sc__slide_wait_unit(m, sl->pp, l); /* the last download of l into the host copy has landed */
    sc__d2h_after_compute(m);
    SC_ASSERT(sc_dtype_size(sl->hpt) == pb && !sl->hw[0]); /* uploads read hp, in the slots' dtype */
    sc__copy_async(m, 2, (char *)sl->hp + sc_config_layer_base(c, l) * pb, s->w, ln * pb, SC_PHASE_D2H, l);
    sc__ev_release(m, &s->free);
    s->free = sc__ev_record(m, 2);
    sc__slide_queue(m, SC__TASK_LAYER, l, sc__ev_record(m, 2));
}

/* ==========================================================================================
   The step: shared per-layer pieces, the resident order and the slide order
   ========================================================================================== */
static void sc__mb_select(sc_model *m, int k)
{
    size_t N = (size_t)m->B * m->T;
    m->mb = k;
    m->acts = m->act_store + (size_t)k * (size_t)(m->cfg.num_layers + 1);
    m->ids = m->ids_all + (size_t)k * N;
    m->ids_dev = m->ids_dev_all + (size_t)k * N;
    m->targets = m->targets_all + (size_t)k * N;
    m->rowloss = m->rowloss_all + (size_t)k * N;
}

static sc_result sc__layer_forward(sc_model *m, const sc_plan *plan, int l)
{
    unsigned mask = sc__plan_mask(plan, l);
    int sp = sc__span_begin(m, "layer", SC_PHASE_FWD, l);
    SC__TRY(sc__layer_fill(m, l, mask));
    SC__TRY(sc__layer_output(m, l, mask));
    if (!(mask & (1u << SC__A_X))) sc__act_drop(m, l, SC__A_X);
    sc__span_end(m, sp);
    return SC_SUCCESS;
}

/* Backward of layer l for the current micro-batch: first replay what the plan dropped (a
   segment's forward at its last layer, or a selective layer's cheap parts), then back-propagate;
   dres goes from dL/d(output of l) to dL/d(its input). */
static void sc__slide_grad_take(sc_model *m, int l);

static sc_result sc__layer_backward_step(sc_model *m, const sc_plan *plan, int l, float *dres)
{
    int sp;
    if (plan->seg[l] >= 0 && sc__seg_end(plan, l) == l + 1) {
        for (int j = plan->seg[l]; j <= l; j++) {
            sp = sc__span_begin(m, "layer", SC_PHASE_RECOMPUTE, j);
            SC__TRY(sc__layer_fill(m, j, j < l ? ~SC__FILL_M_LATER : ~0u));
            if (j < l) SC__TRY(sc__layer_output(m, j, ~0u));
            sc__span_end(m, sp);
        }
    } else if (plan->seg[l] < 0 && plan->keep[l] != SC_KEEP_ALL) {
        sp = sc__span_begin(m, "layer", SC_PHASE_RECOMPUTE, l);
        SC__TRY(sc__layer_fill(m, l, ~0u));
        sc__span_end(m, sp);
    }
    /* slide: the layer's gradient buffer, taken after the replay, so that the replay runs while
       the buffer's last download finishes; on the GPU its first micro-batch's writes set the
       gradients (sc__grads_set), the later ones add */
    int take = m->sl && !m->sl->lg[l];
    if (take) sc__slide_grad_take(m, l);
    if (m->sl) sc__grads_set(m, take);
    sp = sc__span_begin(m, "layer", SC_PHASE_BWD, l);
    sc_result r = sc__layer_backward(m, l, dres);
    if (m->sl) sc__grads_set(m, 0);
    SC__TRY(r);
    for (int a = 0; a < SC__A_COUNT; a++) sc__act_drop(m, l, a);
    sc__span_end(m, sp);
    return SC_SUCCESS;
}

/* Resident: one micro-batch through forward, head and backward; dL/dx_0 is kept in dres0[k]
   for the embedding backward, which runs after all micro-batches (so that a tied embedding
   adds its rows after every LM-head contribution, in both modes). */
#ifdef SLIDECHECK_CUDA
static double sc__comm_timeout(const sc_dist_comm *c); /* the control channel's, in seconds */
#endif

#ifdef SLIDECHECK_CUDA
/* n gradients on the device summed over the ranks, in place, on the communication stream once
   the compute stream has written them; the span (stream "nccl") times the sum */
/* n gradients summed over the W ranks as ZeRO-1 splits them: the reduce-scatter of the first
   W (n / W) (rank r's chunk r), the all-reduce of the remainder, then (gather) the all-gather of
   the chunks. Plain data parallel and ZeRO-1 (gather 0) thus add in the same order; NCCL's
   all-reduce of the whole may add in another at W > 2. At W = 2 a sum is one addition whoever
   makes it, and the whole all-reduce (one collective, no slower) gives the same bits. */
static void sc__sum_chunks(sc_model *m, void *g, size_t n, int gather)
{
    int W = sc_dist_comm_world(m->mc.comm);
    size_t ch = n / (size_t)W;
    if (W == 2 && gather) {
        sc_cuda_allreduce_sum(m->cu, g, n, m->gdt);
        return;
    }
    int own = sc_cuda_p2p_on(m->cu) != 0; /* our copies and adds: the gather with the sums */
    if (ch && gather && own) sc_cuda_allreduce_chunks_sum(m->cu, g, ch, m->gdt);
    else if (ch) sc_cuda_reduce_scatter_sum(m->cu, g, ch, m->gdt);
    if (n > ch * W) sc_cuda_allreduce_sum(m->cu, (char *)g + ch * W * (size_t)m->gb, n - ch * W, m->gdt);
    if (ch && gather && !own) sc_cuda_allgather(m->cu, g, ch, m->gdt);
}

static void sc__dev_sum(sc_model *m, void *g, size_t n, int layer)
{
    sc_cuda_comm_wait(m->cu); /* first, so that the span measures the sum, not the wait */
    int sp = m->tr ? sc_tracer_span_begin(m->tr, "allreduce", SC_PHASE_COMM, layer, SC_STREAM_COMM) : -1;
    if (sp >= 0) sc_tracer_span_bytes(m->tr, sp, (int64_t)(n * (size_t)m->gb));
    sc__sum_chunks(m, g, n, 1);
    if (sp >= 0) sc_tracer_span_end(m->tr, sp);
}

/* slide over NCCL: the head's gradient summed in resident mode's buckets, so that each element
   adds in the same order at any W (sc__sum_chunks): a tied head's [LM head rows (lm) | final norm]
   as the embedding's bucket's rows and the norm alone (bucket 0); an untied head's
   [final norm | LM head] (norm_first) as bucket 0, in one sum. */
static void sc__slide_head_sum(sc_model *m, size_t lm)
{
    size_t C = (size_t)m->cfg.hidden_size;
    if (!m->cfg.tie_embeddings || !lm) {
        sc__dev_sum(m, m->sl->head_g, lm + C, -1);
        return;
    }
    sc__dev_sum(m, m->sl->head_g, lm, -1);
    sc__dev_sum(m, (char *)m->sl->head_g + lm * (size_t)m->gb, C, -1);
}

/* slide over NCCL: a device buffer is summed (or gathered) before the download stream reads it */
static void sc__d2h_after_comm(sc_model *m)
{
    sc__ev e;
    e.stream = SC_STREAM_COMM, e.seq = 0;
    e.cu = sc_cuda_event_record(SC_STREAM_COMM, m->cu);
    sc__stream_wait(m, 2, &e);
    sc__ev_release(m, &e);
}
#endif

/* Data parallel on the GPU: sum buckets b0 .. b1 (adjacent: one range of the gradients) over the
   ranks with NCCL, on the communication stream, once the compute stream has finished them (the
   last micro-batch's backward of a layer), so that the sums overlap the backward of the layers
   below. Plain data parallel (and clipping, whose norm reads every sum) gives every rank the sums;
   ZeRO-1 only this rank's chunks and the remainders (sc__sum_chunks). At W = 2 plain data parallel
   is one all-reduce of the range. Else each bucket's reduce-scatter and remainder go in one NCCL
   launch, the all-gathers in a second: an all-gather reads the chunk its reduce-scatter writes, and
   NCCL runs a group's collectives together. Either way each sum adds as one bucket's would. */
static void sc__grads_sum_range(sc_model *m, int b0, int b1, int layer)
{
#ifdef SLIDECHECK_CUDA
    if (!m->nccl) return;
    int W = sc_dist_comm_world(m->mc.comm);
    int gather = !m->zero_gpu || m->mc.clip_grad_norm > 0.0f;
    size_t lo = SIZE_MAX, hi = 0;
    for (int b = b0; b <= b1; b++) {
        size_t off, n;
        sc__bucket(&m->cfg, m->nparams, b, &off, &n);
        if (off < lo) lo = off;
        if (off + n > hi) hi = off + n;
    }
    if (W == 2 && gather) {
        sc__dev_sum(m, (char *)m->grads + lo * (size_t)m->gb, hi - lo, layer);
        return;
    }
    sc_cuda_comm_wait(m->cu); /* first, so that the span measures the collectives, not the wait */
    int sp = m->tr ? sc_tracer_span_begin(m->tr, gather ? "allreduce" : "reduce-scatter", SC_PHASE_COMM, layer,
                                          SC_STREAM_COMM)
                   : -1;
    if (sp >= 0) sc_tracer_span_bytes(m->tr, sp, (int64_t)((hi - lo) * (size_t)m->gb));
    int own = sc_cuda_p2p_on(m->cu) != 0; /* our copies and adds: bucket by bucket, no NCCL group */
    for (int b = b0; own && b <= b1; b++) {
        size_t off, n;
        sc__bucket(&m->cfg, m->nparams, b, &off, &n);
        sc__sum_chunks(m, (char *)m->grads + off * (size_t)m->gb, n, gather);
    }
    for (int pass = 0; !own && pass <= gather; pass++) {
        sc_cuda_comm_group(m->cu, 1);
        for (int b = b0; b <= b1; b++) {
            size_t off, n;
            sc__bucket(&m->cfg, m->nparams, b, &off, &n);
            char *g = (char *)m->grads + off * (size_t)m->gb;
            if (!pass) sc__sum_chunks(m, g, n, 0);
            else if (n / (size_t)W) sc_cuda_allgather(m->cu, g, n / (size_t)W, m->gdt);
        }
        sc_cuda_comm_group(m->cu, 0);
    }
    if (sp >= 0) sc_tracer_span_end(m->tr, sp);
#else
    (void)m, (void)b0, (void)b1, (void)layer;
#endif
}

/* bucket b alone: the final norm and untied LM head (0), layer L - b, the embedding (L + 1) */
static void sc__grads_sum(sc_model *m, int b)
{
    int L = m->cfg.num_layers;
    sc__grads_sum_range(m, b, b, b >= 1 && b <= L ? L - b : -1);
}

/* Layer l's gradients are complete, those of l + 1 .. top too, unsummed: queue the sum of layers
   top .. l once they reach sc_model_config.bucket_mb, or once they are as many as the layers below
   l (whose backward is all that is left to hide the sum behind: the last groups halve, 4, 2, 1
   layers, where one group of bucket_mb would end its sum well after the backward), and at layers 1
   and 0 (layer 0 alone, so that the first optimizer piece starts under the embedding's backward).
   Returns the new top. */
static int sc__grads_sum_layers(sc_model *m, int l, int top)
{
    int L = m->cfg.num_layers, k = top - l + 1;
    size_t n = sc_config_layer_offsets(&m->cfg).size * (size_t)k;
    int mb = m->mc.bucket_mb == SC_BUCKET_LAYER ? 0 : m->mc.bucket_mb ? m->mc.bucket_mb : SC_BUCKET_MB;
    double cap = mb * 1048576.0;
    if (l > 1 && k < l && (double)n * m->gb < cap) return top;
    sc__grads_sum_range(m, L - top, L - l, l);
    return l - 1;
}

/* Over NCCL every rank adds every rank's embedding rows (gathering dL/dx_0 and the ids) to the
   summed head part, rather than summing the embedding's gradient after its backward: that order is
   the only one slide mode's hosts can follow (they add the rows to the summed head), so it is
   resident's too, at any W and shape, and the two keep the same bits. The gather moves W x the
   micro-batches' activations (the sum twice the vocabulary's rows: less past 36 ranks at the
   Qwen3-1.7B shape, 2048 x 4) and holds them on each device. */
static int sc__emb_gathered(const sc_model *m) { return m->nccl; }

#ifdef SLIDECHECK_CUDA
/* ZeRO-1: every rank's updated chunk of bucket b into every rank's weights (traced: a span) */
static void sc__zero_gather_bucket(sc_model *m, int b, int traced)
{
    int W = sc_dist_comm_world(m->mc.comm), L = m->cfg.num_layers;
    size_t off, n;
    sc__bucket(&m->cfg, m->nparams, b, &off, &n);
    size_t ch = n / (size_t)W;
    int sp = m->tr && traced ? sc_tracer_span_begin(m->tr, "all-gather", SC_PHASE_COMM, b >= 1 && b <= L ? L - b : -1,
                                                    SC_STREAM_COMM) : -1;
    if (sp >= 0) sc_tracer_span_bytes(m->tr, sp, (int64_t)(ch * W * (size_t)m->pb));
    if (ch) sc_cuda_allgather(m->cu, (char *)m->params + off * (size_t)m->pb, ch, m->pdt);
    if (sp >= 0) sc_tracer_span_end(m->tr, sp);
}

/* ZeRO-1: piece p of the last update's gathers, after what the compute stream has queued so far
   (a graph's replay then cannot run the gathers ahead of the forward: a whole step's of them
   queued at once held a replay's first layer back until most had run, ~5 ms on two H200s).
   Pieces in the order the forward reads the weights: 0 the embedding, 1 + l layer l, L + 1 the
   final norm / head. at[p]: the collectives queued up to piece p. traced: a span (in a step). */
static void sc__zero_gather_piece(sc_model *m, size_t *at, int p, int traced)
{
    int L = m->cfg.num_layers;
    sc_cuda_comm_wait(m->cu);
    sc__zero_gather_bucket(m, p == 0 ? L + 1 : p <= L ? L + 1 - p : 0, traced);
    at[p] = sc_cuda_comm_count(m->cu);
}
#endif

#define SC__ZERO_AHEAD 2 /* ZeRO-1: the forward reads piece i while pieces up to i + 2 are gathered */

/* ZeRO-1, the first forward of a step (zg non-NULL): piece i's weights are gathered before the
   compute stream reads them, and piece i + SC__ZERO_AHEAD's gather is queued (piece 0: the first
   ones), so that each runs under the forward of the pieces before it. Before the first update
   every rank's chunks are alike: the gathers then move the same bits and change nothing. */
static void sc__zero_ready(sc_model *m, size_t *zg, int i)
{
#ifdef SLIDECHECK_CUDA
    if (!zg) return;
    int last = m->cfg.num_layers + 1;
    for (int p = i ? i + SC__ZERO_AHEAD : 0; p <= i + SC__ZERO_AHEAD && p <= last; p++) sc__zero_gather_piece(m, zg, p, 1);
    sc_cuda_comm_join(m->cu, zg[i]);
#else
    (void)m, (void)zg, (void)i;
#endif
}

static sc_result sc__resident_pass(sc_model *m, const sc_plan *plan, int k)
{
    const sc_config *c = &m->cfg;
    int L = c->num_layers, N = m->B * m->T;
    float *dres = NULL;
    sc__mb_select(m, k);
    size_t *zg = NULL; /* ZeRO-1: the first forward reads each bucket once gathered */
#ifdef SLIDECHECK_CUDA
    size_t zgat[SC_MAX_LAYERS + 2];
    if (m->zero_gpu && k == 0) zg = zgat;
#endif
    SC__TRY(sc__act_get(m, 0, SC__A_X));
    int sp = sc__span_begin(m, "embedding", SC_PHASE_FWD, -1);
    sc__zero_ready(m, zg, 0);
    SC__OP(m, embedding_forward, m->acts[0][SC__A_X], m->ids_dev, m->params, N, c->hidden_size);
    sc__span_end(m, sp);
    for (int l = 0; l < L; l++) {
        sc__zero_ready(m, zg, 1 + l);
        SC__TRY(sc__layer_forward(m, plan, l));
    }
    sc__zero_ready(m, zg, L + 1);
    if (k == 0) m->last_saved = sc_allocator_live_bytes_tagged(&m->alloc, "layer ");
#ifdef SLIDECHECK_CUDA
    if (m->cu) sc_cuda_side_join(m->cu); /* the gradients' zeroing (sc__resident_step) ran beside the forward */
#endif
    sp = sc__span_begin(m, "lm_head+loss", SC_PHASE_LOSS, -1);
    m->gset = m->cu && k == 0;
    sc_result r = sc__head_forward_backward(m, &dres); /* leaves the writers as m->gset says */
    m->dres0[k] = dres;
    SC__TRY(r);
    sc__span_end(m, sp);
    int last = k == m->accum - 1;
    if (last) sc__grads_sum(m, 0); /* [final norm | untied LM head] is complete: its sum overlaps the backward */
    /* over NCCL a tied head's part of the embedding's gradient is complete too: summed now, beside
       the backward; the rows dL/dx_0 adds come from every rank later (sc__embedding_backward_gathered) */
    if (last && m->cfg.tie_embeddings && sc__emb_gathered(m)) sc__grads_sum(m, L + 1);
    int top = L - 1; /* the highest layer whose sum is not queued yet */
    for (int l = L - 1; l >= 0; l--) {
        SC__TRY(sc__layer_backward_step(m, plan, l, dres));
        if (l == 0) sc__bwd_scratch_free(m);
#ifdef SLIDECHECK_CUDA
        /* the optimizer of the buckets before layer 0's waits only for these: they finished while
           layer 0's backward ran, and layer 0's and the embedding's sums run under it */
        if (last && l == 0 && m->nccl) m->coll_l1 = sc_cuda_comm_count(m->cu);
#endif
        if (last) top = sc__grads_sum_layers(m, l, top);
    }
    return SC_SUCCESS;
}

#ifdef SLIDECHECK_CUDA
/* Data parallel over NCCL: every rank's dL/dx_0 and token ids of every micro-batch gathered (rank
   r's at r's place), then every rank adds all of their rows to the embedding's gradient alike.
   The embedding's sum (the vocabulary's rows: 622 MB in bf16 at Qwen3-1.7B) then no longer runs
   after the backward with the optimizer waiting for it: a tied head's part was summed beside the
   backward (sc__resident_pass) and only the rows (W x B x T x hidden) travel here. */
static sc_result sc__embedding_backward_gathered(sc_model *m)
{
    int W = sc_dist_comm_world(m->mc.comm), r = sc_dist_comm_rank(m->mc.comm), M = m->accum;
    int N = m->B * m->T, C = m->cfg.hidden_size;
    size_t one = (size_t)N * C * (size_t)m->ab, nid = (size_t)M * N;
    sc_dtype at = m->ab == 2 ? SC_BF16 : SC_F32;
    void *rows = NULL, *ids = NULL;
    SC__TRY(sc_allocator_alloc(&m->alloc, &rows, one * M * W, 0, "dL/dx_0 of every rank"));
    SC__TRY(sc_allocator_alloc(&m->alloc, &ids, nid * W * sizeof(int32_t), 0, "token ids of every rank"));
    for (int k = 0; k < M; k++) sc_cuda_copy_async(m->cu, 0, (char *)rows + ((size_t)r * M + k) * one, m->dres0[k], one);
    sc_cuda_copy_async(m->cu, 0, (char *)ids + (size_t)r * nid * sizeof(int32_t), m->ids_dev_all, nid * sizeof(int32_t));
    sc_cuda_comm_wait(m->cu);
    int sp = m->tr ? sc_tracer_span_begin(m->tr, "all-gather", SC_PHASE_COMM, -1, SC_STREAM_COMM) : -1;
    if (sp >= 0) sc_tracer_span_bytes(m->tr, sp, (int64_t)((one * M + nid * sizeof(int32_t)) * W));
    sc_cuda_allgather(m->cu, rows, one * M / (size_t)m->ab, at);
    sc_cuda_allgather(m->cu, ids, nid, SC_F32); /* four bytes an id: a gather moves bits, adds nothing */
    if (sp >= 0) sc_tracer_span_end(m->tr, sp);
    sc_cuda_comm_join(m->cu, sc_cuda_comm_count(m->cu)); /* also the tied head's sum the rows add to */
    sp = sc__span_begin(m, "embedding", SC_PHASE_BWD, -1);
    sc_cuda_embedding_backward(m->cu, m->grads, rows, (const int32_t *)ids, W * M * N, C);
    sc__span_end(m, sp);
    sc__free(m, rows);
    sc__free(m, ids);
    return sc_cuda_status(m->cu);
}
#endif

/* The embedding backward on the device, every micro-batch's dL/dx_0 into m->grads (offset 0) */
static void sc__embedding_backward(sc_model *m)
{
    int N = m->B * m->T, C = m->cfg.hidden_size;
    int sp = sc__span_begin(m, "embedding", SC_PHASE_BWD, -1);
    for (int k = 0; k < m->accum; k++) {
        sc__mb_select(m, k);
#ifdef SLIDECHECK_CUDA
        if (m->cu) sc_cuda_embedding_backward(m->cu, m->grads, m->dres0[k], m->ids_dev, N, C);
        else
#endif
            sc_cpu_embedding_backward(m->grads, m->dres0[k], m->ids, N, C);
    }
    sc__span_end(m, sp);
}

static sc_result sc__device_update_range(sc_model *m, size_t n, size_t off, size_t cnt, int norm);

#ifdef SLIDECHECK_CUDA
/* ZeRO-1: AdamW on this rank's chunk and the remainder of bucket b (which every rank updates
   alike). The other ranks' chunks come with the next step's forward (sc__zero_ready). */
static void sc__zero_update_bucket(sc_model *m, int b, const sc_optim_consts *k)
{
    int W = sc_dist_comm_world(m->mc.comm), r = sc_dist_comm_rank(m->mc.comm), sb = m->mc.state_bf16 ? 2 : m->pb;
    size_t off, n;
    sc__bucket(&m->cfg, m->nparams, b, &off, &n);
    size_t ch = n / (size_t)W, so = sc__zero_state_offset(&m->cfg, m->nparams, W, b);
    size_t at[2] = {off + (size_t)r * ch, off + ch * W}, cnt[2] = {ch, n - ch * W};
    sc_dtype st = sb == 2 ? SC_BF16 : SC_F32;
    for (int i = 0; i < 2; i++, so += ch)
        sc_cuda_adamw_update(m->cu, (char *)m->params + at[i] * (size_t)m->pb, (char *)m->opt_m + so * (size_t)sb,
                             (char *)m->opt_v + so * (size_t)sb, m->pdt, st, (char *)m->grads + at[i] * (size_t)m->gb,
                             m->gdt, cnt[i], k);
}
#endif

static sc_result sc__zero_update(sc_model *m)
{
#ifdef SLIDECHECK_CUDA
    int L = m->cfg.num_layers, W = sc_dist_comm_world(m->mc.comm), sb = m->mc.state_bf16 ? 2 : m->pb;
    if (!m->opt_m) {
        size_t ns = sc__zero_state_offset(&m->cfg, m->nparams, W, L + 2);
        SC__TRY(sc__alloc_bytes(m, &m->opt_m, ns, sb, "adamw.m (ZeRO-1 shard)"));
        SC__TRY(sc__alloc_bytes(m, &m->opt_v, ns, sb, "adamw.v (ZeRO-1 shard)"));
        sc__memset0(m, m->opt_m, ns * (size_t)sb);
        sc__memset0(m, m->opt_v, ns * (size_t)sb);
    }
    sc_optim_consts k = sc__model_consts(m);
    sc_cuda_comm_join(m->cu, m->coll_l1);
    for (int b = 0; b < L; b++) sc__zero_update_bucket(m, b, &k);
    sc_cuda_comm_join(m->cu, m->coll_emb);
    for (int b = L; b < L + 2; b++) sc__zero_update_bucket(m, b, &k);
    m->zero_stale = 1; /* the next step's forward gathers the other ranks' chunks */
    return sc_cuda_status(m->cu);
#else
    (void)m;
    return SC_ERROR_UNSUPPORTED;
#endif
}

/* The norm of the gradients this update clips with: on the GPU queued (the kernels read the
   scale from device memory; the host reads the norm when asked), on the host computed now into
   m->gscale. Data parallel: after every sum. */
static void sc__clip_norm(sc_model *m)
{
    m->gnorm_step = m->t;
#ifdef SLIDECHECK_CUDA
    if (m->cu && !m->sl) {
        if (m->nccl) sc_cuda_comm_join(m->cu, sc_cuda_comm_count(m->cu));
        sc_cuda_grad_norm(m->cu, m->grads, m->gdt, m->nparams, m->mc.clip_grad_norm);
        m->gnorm = NAN; /* read back on request */
        return;
    }
#endif
    const void *g = m->sl ? m->sl->hg : (const void *)m->grads;
    m->gnorm = sc_grad_norm(g, m->gdt, m->nparams, m->sl ? sc__slide_threads(m) : 0);
    m->gscale = sc_clip_scale(m->gnorm, m->mc.clip_grad_norm);
}

/* The optimizer on the device, enqueued behind the step (no wait for the loss); with NCCL, the
   buckets whose sums are in first (the layers 1.. and the final norm / head) while the embedding's
   and layer 0's sums still run, then the rest. The update is per element: the same bits as one
   call. */
static sc_result sc__resident_update(sc_model *m)
{
    int sp = sc__span_begin(m, "optimizer", SC_PHASE_OPT, -1);
    m->t++;
    if (m->mc.clip_grad_norm > 0.0f) sc__clip_norm(m);
    size_t n = m->nparams, cut = m->nccl ? sc_config_layer_base(&m->cfg, 1) : 0;
    sc_result r;
    if (m->zero_gpu) r = sc__zero_update(m);
    else {
#ifdef SLIDECHECK_CUDA
        if (cut) sc_cuda_comm_join(m->cu, m->coll_l1);
#endif
        /* one piece, nothing clipped: the norm the log asks for comes from the update's read */
        int norm = !cut && !(m->mc.clip_grad_norm > 0.0f);
        r = sc__device_update_range(m, n, cut, n - cut, norm);
        if (norm && m->cu) m->gnorm_step = m->t, m->gnorm = NAN; /* read back on request */
#ifdef SLIDECHECK_CUDA
        if (r == SC_SUCCESS && cut) {
            sc_cuda_comm_join(m->cu, sc_cuda_comm_count(m->cu));
            r = sc__device_update_range(m, n, 0, cut, 0);
        }
#endif
    }
    m->gscale = 1.0f;
    sc__span_end(m, sp);
    return r;
}

static sc_result sc__resident_step(sc_model *m, const sc_plan *plan, int update)
{
#ifdef SLIDECHECK_CUDA
    /* on the GPU the first micro-batch's writes set the gradients (sc_model.gset), except an
       untied embedding's, whose rows are added to: zeroed beside the first forward (the first
       write waits for it) */
    if (m->cu) {
        if (!m->cfg.tie_embeddings)
            sc_cuda_memset0_behind(m->cu, m->grads, (size_t)m->cfg.vocab_size * m->cfg.hidden_size * (size_t)m->gb);
    } else
#endif
        sc__memset0(m, m->grads, m->nparams * (size_t)m->gb);
    for (int k = 0; k < m->accum; k++) {
        sc_result r = sc__resident_pass(m, plan, k);
        m->gset = 0;
        sc__grads_set(m, 0); /* later micro-batches add, also after a failure */
#ifdef SLIDECHECK_CUDA
        if (m->cu) sc_cuda_side_join(m->cu); /* also where the forward failed */
#endif
        SC__TRY(r);
    }
#ifdef SLIDECHECK_CUDA
    if (sc__emb_gathered(m)) SC__TRY(sc__embedding_backward_gathered(m)); /* every rank's rows: the sum is complete */
    else
#endif
    {
        sc__embedding_backward(m);
        sc__grads_sum(m, m->cfg.num_layers + 1); /* the embedding: last to complete */
    }
#ifdef SLIDECHECK_CUDA
    if (m->nccl) m->coll_emb = sc_cuda_comm_count(m->cu);
#endif
    if (update) return sc__resident_update(m);
#ifdef SLIDECHECK_CUDA
    if (m->nccl) sc_cuda_comm_join(m->cu, m->coll_emb); /* whoever reads the gradients reads the sums */
#endif
    return SC_SUCCESS;
}

/* Slide: the same pieces, layer by layer. Every micro-batch passes through a layer while its
   weights are resident; gradients go down as soon as a group of layers is done and the host
   optimizer updates them while the device works on the layers below. */
static void sc__slide_schedule(sc_model *m, const sc_plan *plan)
{
    sc__slide *sl = m->sl;
    int L = m->cfg.num_layers, g = 0;
    for (int l = 0; l <= L; l++) { sl->gfirst[g] = sl->glast[g] = l; g++; } /* forward, then the head */
    for (int l = L - 1; l >= 0;) {
        int s = (plan->seg[l] >= 0 && sc__seg_end(plan, l) == l + 1) ? plan->seg[l] : l;
        sl->gfirst[g] = s;
        sl->glast[g] = l;
        g++;
        l = s - 1;
    }
    sl->ngroups = g;
}

/* A cap below slide's fixed window is refused before anything is allocated, with the number. */
static sc_result sc__slide_check_window(sc_model *m, const sc_plan *plan)
{
    if (!m->mc.mem_cap) return SC_SUCCESS;
    sc_model_config mc = m->mc;
    mc.device = m->cu ? SC_DEVICE_CUDA : SC_DEVICE_CPU;
    size_t need = sc_slide_window_bytes(&m->cfg, &mc, plan);
    if (need <= m->mc.mem_cap) return SC_SUCCESS;
    char a[32], b[32];
    sc__gib_str(a, sizeof a, need);
    sc__gib_str(b, sizeof b, m->mc.mem_cap);
    return sc__fail(SC_ERROR_OUT_OF_MEMORY, "slide mode needs at least %s of device memory for its window (%d layer "
                    "slots for prefetch %d and policy %s, the head %s, the gradient buffers) before any "
                    "activation; the memory cap is %s", a, (m->mc.slide_prefetch > 0 ? m->mc.slide_prefetch : 1) +
                    sc__plan_widest(plan), m->mc.slide_prefetch > 0 ? m->mc.slide_prefetch : 1, plan->name,
                    m->mc.slide_keep_head ? "kept with its gradients and optimizer state" : "slot", b);
}

static sc_result sc__slide_slots(sc_model *m, const sc_plan *plan)
{
    sc__slide *sl = m->sl;
    const sc_config *c = &m->cfg;
    int P = m->mc.slide_prefetch > 0 ? m->mc.slide_prefetch : 1, W = sc__plan_widest(plan), want = P + W;
    int S = sc__head_rows(m), keep = m->mc.slide_keep_head, sliced = S < c->vocab_size && !keep;
    /* no more slots nor gradient buffers than streamed layers (sc_slide_window_bytes) */
    int streamed = c->num_layers - sl->ndev;
    if (want > streamed) want = streamed;
    if (W > streamed) W = streamed;
    int once = sliced && m->mc.slide_head_once; /* the whole head in the slot, no slice buffers */
    /* the window of sc_slide_window_bytes, each piece rounded as the allocator rounds a block: the
       slots, the head slot (a sliced head's holds the final norm only) and two slices, then the
       gradient area: the head's gradients (with per-slice gradients: the norm's and two slices')
       or the ring of layer gradients (sc__slide_rings), whichever is larger */
    size_t C = (size_t)c->hidden_size, pb = (size_t)m->pb, gb = (size_t)m->gb, ln = sc__layer_numel(c);
    size_t lw = sc__allocator_round(ln * pb), lgb = sc__allocator_round(ln * gb);
    size_t hw = keep ? 0 : sc__allocator_round((sliced && !once ? C : sc__head_numel(c)) * pb);
    size_t sw = sliced && !once ? sc__allocator_round((size_t)S * C * pb) : 0;
    size_t hg = keep ? 0 : sc__allocator_round((sl->hs_pergrad ? C : sc__head_numel(c)) * gb);
    size_t sg = sl->hs_pergrad ? sc__allocator_round((size_t)S * C * gb) : 0;
    size_t R = (size_t)sc__slide_rings(W, streamed);
    size_t ghead = hg + 2 * sg, gbytes = R * lgb > ghead ? R * lgb : ghead;
    size_t bytes = (size_t)want * lw + hw + 2 * sw + gbytes;
    if ((!sl->pool && bytes) || !sl->slots || sl->nslots != want || sl->pool_bytes != bytes || sl->ghead != ghead) {
        int had = sl->slots != NULL; /* (every layer on the device with the head kept: no block) */
        if (had) { /* another plan or batch shape: a new layout (the kept head comes down first) */
            sc__slide_head_flush(m, 0);
            sc__slide_pool_release(m);
            sc_allocator_empty_cache(&m->alloc); /* the old block's segment is not held beside the new one */
        }
        sl->slots = (sc__slot *)SC_MALLOC(sizeof(sc__slot) * (size_t)(want ? want : 1));
        if (!sl->slots) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc of the slot table failed");
        memset(sl->slots, 0, sizeof(sc__slot) * (size_t)(want ? want : 1));
        if (bytes) {
            SC__TRY(sc_allocator_alloc(&m->alloc, &sl->pool, bytes, 0, "slide window (slots, head, gradients)"));
            sc_allocator_record_stream(&m->alloc, sl->pool, 1);
            sc_allocator_record_stream(&m->alloc, sl->pool, 2);
        }
        sl->pool_bytes = bytes;
        char *p = (char *)sl->pool;
        for (int i = 0; i < want; i++, p += lw) {
            sl->slots[i].w = p;
            sl->slots[i].unit = -1;
        }
        sl->nslots = want;
        if (hw) sl->head.w = p, p += hw;
        for (int i = 0; i < 2 && sw; i++, p += sw) sl->hs[i].w = p;
        sl->garea = p;
        sl->gbytes = gbytes;
        sl->ghead = ghead;
        for (int i = 0; i < 2 && sg; i++) sl->hsg[i].w = p + hg + (size_t)i * sg;
        sl->nring = (int)(gbytes / lgb) < SC_MAX_LAYERS + 1 ? (int)(gbytes / lgb) : SC_MAX_LAYERS + 1;
        sl->rnext = 0;
        sl->keep_slots = 0;
    }
    /* last step's copies are stale: the weights changed (on the host). With the device update they
       are the current weights: the layers of the slots need no upload. */
    for (int l = 0; l <= c->num_layers; l++) sl->lw[l] = NULL;
    for (int i = 0; i < sl->nslots; i++) {
        if (!sl->keep_slots) sl->slots[i].unit = -1;
        if (sl->slots[i].unit >= 0) sl->lw[sl->slots[i].unit] = (float *)sl->slots[i].w;
    }
    for (int l = 0; l < c->num_layers; l++)
        if (sc__dev_layer(m, l)) sl->lw[l] = sl->dw[l];
    sl->keep_slots = 0;
    sl->head.unit = keep || sl->hfresh ? c->num_layers : -1; /* a kept head is always resident */
    return SC_SUCCESS;
}

/* Weights of use q of the head's slices (pass q / ns, slice q % ns). Resident: a pointer into
   the weights. Slide: the slice goes up into one of two buffers, and the next use is uploaded
   ahead into the other once the compute that read it is done. */
static const float *sc__head_w(sc_model *m, int q, int ns)
{
    const sc_config *c = &m->cfg;
    int S = sc__head_rows(m), V = c->vocab_size;
    if (!m->sl || m->params || m->mc.slide_head_once)
        return sc__at(sc__head_ptr(m, 0, 0), (size_t)(q % ns) * S * c->hidden_size, m->pb);
    sc__slide *sl = m->sl;
    const char *src = sc__slide_src(sl);
    for (int k = q; k <= q + 1 && k < 2 * ns; k++) {
        sc__slot *b = &sl->hs[k & 1];
        if (b->unit == k) continue;
        size_t v0 = (size_t)(k % ns) * S, vs = V - v0 < (size_t)S ? V - v0 : (size_t)S;
        sc__stream_wait(m, 1, &b->free);
        sc__ev_release(m, &b->free);
        sc__ev_release(m, &b->ready);
        sc__copy_async(m, 1, b->w, src + (sc_config_lm_head_offset(c) + v0 * c->hidden_size) * (size_t)m->pb,
                       vs * c->hidden_size * (size_t)m->pb, SC_PHASE_H2D, -1);
        b->ready = sc__ev_record(m, 1);
        b->unit = k;
    }
    sc__slot *b = &sl->hs[q & 1];
    sc__stream_wait(m, 0, &b->ready);
    sc__ev_release(m, &b->ready);
    return (const float *)b->w;
}

static void sc__head_w_done(sc_model *m, int q)
{
    if (!m->sl || m->params || m->mc.slide_head_once) return;
    sc__slot *b = &m->sl->hs[q & 1];
    sc__ev_release(m, &b->free);
    b->free = sc__ev_record(m, 0);
}

/* Where slice j's gradient accumulates: the head's gradient buffer, or with per-slice gradients
   (slide, one micro-batch of one row chunk) a zeroed buffer that goes down when the slice is done. */
static float *sc__head_g(sc_model *m, int j)
{
    const sc_config *c = &m->cfg;
    size_t v0 = (size_t)j * sc__head_rows(m);
    if (!m->sl || !m->sl->hs_pergrad) return sc__at(sc__head_ptr(m, 1, 0), v0 * c->hidden_size, m->gb);
    sc__slot *b = &m->sl->hsg[j & 1];
    sc__stream_wait(m, 0, &b->free); /* its last slice has gone down */
    sc__ev_release(m, &b->free);
    sc__memset0(m, b->w, (size_t)sc__head_rows(m) * c->hidden_size * (size_t)m->gb);
    return (float *)b->w;
}

static void sc__head_g_done(sc_model *m, int j)
{
    if (!m->sl || !m->sl->hs_pergrad) return;
    if (m->sl->devhead) { sc__slide_head_slice_update(m, j); return; }
    const sc_config *c = &m->cfg;
    sc__slide *sl = m->sl;
    int S = sc__head_rows(m);
    size_t v0 = (size_t)j * S, vs = c->vocab_size - v0 < (size_t)S ? c->vocab_size - v0 : (size_t)S;
    sc__slot *b = &sl->hsg[j & 1];
    sc__d2h_after_compute(m);
    sc__copy_async(m, 2, (char *)sl->hg + (sc_config_lm_head_offset(c) + v0 * c->hidden_size) * (size_t)m->gb, b->w,
                   vs * c->hidden_size * (size_t)m->gb, SC_PHASE_D2H, -1);
    b->free = sc__ev_record(m, 2);
}

/* Ring buffer k of the gradient area: the k-th layer gradient from its end. */
static size_t sc__slide_ring_at(const sc_model *m, int k)
{
    return m->sl->gbytes - (size_t)(k + 1) * sc__allocator_round(sc__layer_numel(&m->cfg) * (size_t)m->gb);
}

static int sc__norm_first_force; /* sc__slide_norm_first_force */
#ifdef SLIDECHECK_TESTING
SCDEF int sc__slide_norm_first_force(int on)
{
    int was = sc__norm_first_force;
    sc__norm_first_force = on != 0;
    return was;
}
#endif

/* Bytes [a, b) of the head's gradients on the device (the LM head's lm elements, then the final
   norm's; norm_first: the other way round) down into their places among the host gradients; of a
   split head's rows, those this host holds (sc__slide_grad_rows). */
static void sc__slide_head_range_down(sc_model *m, size_t a, size_t b, size_t lm)
{
    const sc_config *c = &m->cfg;
    size_t gb = (size_t)m->gb, e = lm * gb, off[2] = {sc_config_lm_head_offset(c), sc_config_norm_offset(c)};
    char *hg = (char *)m->sl->hg;
    const char *d = (const char *)m->sl->head_g;
    if (lm && sc__slide_head_split(m)) { /* tied: the rows at offset 0, then the final norm */
        size_t lo[2], hi[2], rb = (size_t)c->hidden_size * gb;
        sc__slide_grad_rows(m, lo, hi);
        for (int i = 0; i < 2; i++) {
            size_t x = lo[i] * rb > a ? lo[i] * rb : a, y = hi[i] * rb < b ? hi[i] * rb : b;
            if (y > x) sc__copy_async(m, 2, hg + x, d + x, y - x, SC_PHASE_D2H, -1);
        }
        a = a > e ? a : e; /* the final norm's bytes, below */
        if (b <= a) return;
    }
    if (m->sl->norm_first && lm) {
        size_t t = off[0];
        e = (size_t)c->hidden_size * gb, off[0] = off[1], off[1] = t;
    }
    if (a < e) sc__copy_async(m, 2, hg + off[0] * gb + a, d + a, (b < e ? b : e) - a, SC_PHASE_D2H, -1);
    if (b > e) {
        size_t s = a > e ? a : e;
        sc__copy_async(m, 2, hg + off[1] * gb + (s - e), d + s, b - s, SC_PHASE_D2H, -1);
    }
}

/* With parts, the LM head's rows that bytes [a, b) of its gradients hold whole go to the host
   optimizer once those bytes are down (the rows two ranges share wait for the whole head). */
static void sc__slide_head_rows_queue(sc_model *m, size_t a, size_t b, size_t lm)
{
    size_t rb = (size_t)m->cfg.hidden_size * (size_t)m->gb, e = lm * (size_t)m->gb;
    size_t r0 = (a + rb - 1) / rb, r1 = (b < e ? b : e) / rb;
    if (r1 <= r0) return;
    sc__slide_queue_ex(m, SC__TASK_HEAD_ROWS, m->cfg.num_layers, sc__ev_record(m, 2), (int)r0, (int)r1, 0);
    m->sl->head_parts++;
}

/* The head's gradients down, once computed. The ring's layer buffers lie in their area: each
   buffer's share goes first, in the order the backward takes the buffers, so that a layer's
   backward waits for its own buffer's bytes (hfree[k]) instead of the whole head (1.2 GB of f32
   at the 1.7B shape, 22.5 ms on an H100 host). hgfree: all of it. parts: the host optimizer takes
   the LM head's rows as their bytes land (elementwise, so the same bits as in one task), instead
   of waiting for the whole download. */
static void sc__slide_head_grads_down(sc_model *m, size_t lm, int parts)
{
    sc__slide *sl = m->sl;
    size_t gb = (size_t)m->gb, tot = (lm + (size_t)m->cfg.hidden_size) * gb;
    size_t lgb = sc__allocator_round(sc__layer_numel(&m->cfg) * gb), lo = tot;
    for (int j = 0; j < sl->nring; j++) {
        int k = (sl->rnext + j) % sl->nring;
        size_t at = sc__slide_ring_at(m, k), end = at + lgb < tot ? at + lgb : tot;
        sc__ev_release(m, &sl->hfree[k]);
        if (at < lo) lo = at;
        if (at >= tot) continue;
        sc__slide_head_range_down(m, at, end, lm);
        sl->hfree[k] = sc__ev_record(m, 2);
        if (parts) sc__slide_head_rows_queue(m, at, end, lm);
    }
    if (lo > 0) { /* below the ring */
        sc__slide_head_range_down(m, 0, lo, lm);
        if (parts) sc__slide_head_rows_queue(m, 0, lo, lm);
    }
    sl->hgfree = sc__ev_record(m, 2);
}

/* Layer l's gradient: the next ring buffer, once the compute stream has waited for its last
   download (and, where it overlaps them, for the head's gradients' downloads); zeroed on the CPU,
   where the backward adds to it (the GPU's first write sets it: sc__layer_backward_step). */
static void sc__slide_grad_take(sc_model *m, int l)
{
    sc__slide *sl = m->sl;
    if (sc__dev_layer(m, l)) { /* its own buffer (nothing reads it now) */
        sl->lg[l] = sl->dg[l];
        if (!m->cu) sc__memset0(m, sl->lg[l], sc__layer_numel(&m->cfg) * (size_t)m->gb);
        return;
    }
    int k = sl->rnext;
    size_t at = sc__slide_ring_at(m, k);
    sl->rnext = (k + 1) % sl->nring;
    sc__stream_wait(m, 0, &sl->rfree[k]);
    sc__ev_release(m, &sl->rfree[k]);
    if (at < sl->ghead) {
        sc__stream_wait(m, 0, &sl->hfree[k]);
        sc__ev_release(m, &sl->hfree[k]);
        for (int i = 0; i < 2; i++) {
            sc__stream_wait(m, 0, &sl->hsg[i].free);
            sc__ev_release(m, &sl->hsg[i].free);
        }
    }
    sl->lg[l] = (float *)(void *)(sl->garea + at);
    sl->lgk[l] = k;
    if (!m->cu) sc__memset0(m, sl->lg[l], sc__layer_numel(&m->cfg) * (size_t)m->gb);
}

/* The head's gradients at the gradient area's start, zeroed once the ring buffers there have
   gone down. */
static void sc__slide_head_grad_take(sc_model *m, size_t n)
{
    sc__slide *sl = m->sl;
    for (int k = 0; k < sl->nring; k++)
        if (sc__slide_ring_at(m, k) < sl->ghead) {
            sc__stream_wait(m, 0, &sl->rfree[k]);
            sc__ev_release(m, &sl->rfree[k]);
        }
    sc__stream_wait(m, 0, &sl->hgfree);
    sc__ev_release(m, &sl->hgfree);
    sl->head_g = (float *)(void *)sl->garea;
    sc__memset0(m, sl->head_g, n * (size_t)m->gb);
}

/* host spans so far (copy threads, the optimizer thread) into the tracer */
static void sc__slide_flush_spans(sc_model *m)
{
    sc__slide *sl = m->sl;
    SC__LOCK(sl);
    if (m->tr) {
        char name[32];
        for (size_t i = 0; i < sl->nhspans; i++) {
            const sc__hspan *h = &sl->hspans[i];
            snprintf(name, sizeof name, "%s", h->phase == SC_PHASE_OPT ? "cpu optimizer" : sc_phase_name((sc_phase)h->phase));
            int id = sc_tracer_span_add(m->tr, name, (sc_phase)h->phase, h->unit, h->stream, h->t0, h->t1);
            sc_tracer_span_bytes(m->tr, id, h->bytes);
        }
    }
    sl->nhspans = 0;
    SC__UNLOCK(sl);
}

/* The device optimizer (step m->t) over the first n device weights: all of them in resident
   mode, the kept head ([embedding | norm | untied LM head]) in slide mode. */
/* The optimizer over parameters [off, off + cnt) of the n that the device updates (its state is
   sized for n): data parallel updates the layers while the embedding's all-reduce still runs.
   The update is per element, so the pieces give the bits of one call. */
/* norm (the GPU, the whole range): the same update, with the gradients' norm (sc_model_grad_norm)
   from its read of them */
static sc_result sc__device_update_range(sc_model *m, size_t n, size_t off, size_t cnt, int norm)
{
    float *p = m->master ? m->master : m->params;
    int pb = m->master ? 4 : m->pb, sb = m->mc.state_bf16 ? 2 : pb;
    /* ZeRO-1 (CPU backend): this rank's AdamW state covers its part [lo, hi) only */
    size_t lo = 0, hi = n;
    int zero = m->mc.zero && m->mc.optim == SC_OPTIM_ADAMW && sc_dist_comm_world(m->mc.comm) > 1 && !m->cu;
    if (zero) sc_dist_part(m->mc.comm, n, &lo, &hi);
    if (m->mc.optim == SC_OPTIM_ADAMW && !m->opt_m) {
        SC__TRY(sc__alloc_bytes(m, &m->opt_m, hi - lo, sb, "adamw.m"));
        SC__TRY(sc__alloc_bytes(m, &m->opt_v, hi - lo, sb, "adamw.v"));
        sc__memset0(m, m->opt_m, (hi - lo) * (size_t)sb);
        sc__memset0(m, m->opt_v, (hi - lo) * (size_t)sb);
    }
    sc_dtype st = sb == 2 ? SC_BF16 : SC_F32;
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        sc_dtype pt = pb == 2 ? SC_BF16 : SC_F32;
        char *pp = (char *)p + off * (size_t)pb;
        const char *g = (const char *)m->grads + off * (size_t)m->gb;
        sc_optim_consts k = sc__model_consts(m);
        char *om = (char *)m->opt_m + off * (size_t)sb, *ov = (char *)m->opt_v + off * (size_t)sb;
        if (m->mc.optim == SC_OPTIM_ADAMW && norm) sc_cuda_adamw_update_norm(m->cu, pp, om, ov, pt, st, g, m->gdt, cnt, &k);
        else if (m->mc.optim == SC_OPTIM_ADAMW) sc_cuda_adamw_update(m->cu, pp, om, ov, pt, st, g, m->gdt, cnt, &k);
        else if (norm) sc_cuda_sgd_update_norm(m->cu, pp, pt, g, m->gdt, cnt, &k);
        else sc_cuda_sgd_update(m->cu, pp, pt, g, m->gdt, cnt, &k);
        if (m->master) sc_cuda_convert(m->cu, (char *)m->params + off * (size_t)m->pb, m->pdt, pp, SC_F32, cnt);
        return sc_cuda_status(m->cu);
    }
#endif
    (void)norm; /* the CPU backend computes the norm when asked (sc_model_grad_norm) */
    SC_ASSERT(off == 0 && cnt == n); /* the CPU backend updates in one piece */
    sc_optim_consts k = sc__model_consts(m);
    if (m->mc.optim == SC_OPTIM_ADAMW) /* the CPU backend holds f32 parameters and gradients */
        sc_cpu_adamw_mt(p + lo, m->opt_m, m->opt_v, SC_F32, st, m->grads + lo, SC_F32, NULL, hi - lo, &k, 0);
    else
        sc_cpu_sgd_mt(p, SC_F32, m->grads, SC_F32, NULL, n, &k, 0);
    sc__round(m, m->params + lo, hi - lo);
    /* the update is per element: the parts exchanged equal plain data parallel's, bit for bit */
    if (zero) SC__TRY(sc_dist_allgather_f32(m->mc.comm, m->params, n));
    return SC_SUCCESS;
}

static sc_result sc__device_update(sc_model *m, size_t n)
{
    return sc__device_update_range(m, n, 0, n, 0);
}

/* host buffer of dtype t into f32 */
static void sc__host_to_f32(float *dst, const void *src, sc_dtype t, size_t n)
{
    SC__OMP(omp parallel for schedule(static))
    for (long long i = 0; i < (long long)n; i++) dst[i] = sc__ld(src, t, (size_t)i);
}

/* an untied embedding's gradient rows that step buffer b's tokens touched, back to zero */
static void sc__slide_zero_rows(sc_model *m, const sc__stepbuf *b)
{
    size_t C = (size_t)m->cfg.hidden_size;
    if (m->cfg.tie_embeddings) return;
    for (int u = 0; u < b->ntouched; u++)
        for (size_t j = 0; j < C; j++) sc__st(m->sl->hg, m->gdt, (size_t)b->tlist[u] * C + j, 0.0f);
}

/* Fill step buffer b for the host embedding and head: the ids, the rows they touch (an untied
   embedding's last touched rows are zeroed first, with DPU before the head once the last update
   has read them) and room to stage M x N rows. */
/* The step's host buffer: the tokens whose embedding rows the host updates (M micro-batches of
   B x T: slide over NCCL, every rank's, in rank order), the rows they touch and the staging
   buffer that the embedding's rows go up in and every micro-batch's dL/dx_0 comes down in. */
static sc_result sc__slide_stepbuf(sc_model *m, sc__stepbuf *b, const int32_t *ids, int M)
{
    int V = m->cfg.vocab_size, NA = M * m->B * m->T;
    size_t need_stage = (size_t)NA * m->cfg.hidden_size * (size_t)m->ab;
    if (b->ids_cap < NA) {
        SC_FREE(b->ids);
        b->ids = (int32_t *)SC_MALLOC(sizeof(int32_t) * (size_t)NA);
        b->ids_cap = b->ids ? NA : 0;
        if (!b->ids) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc failed");
    }
    memcpy(b->ids, ids, sizeof(int32_t) * (size_t)NA);
    b->M = M, b->N = m->B * m->T;
    if (!m->mc.slide_dpu) sc__slide_zero_rows(m, b);
    memset(b->touched, 0, (size_t)V);
    if (b->tcap < NA) {
        SC_FREE(b->tlist);
        b->tlist = (int32_t *)SC_MALLOC(sizeof(int32_t) * (size_t)NA);
        b->tcap = b->tlist ? NA : 0;
        if (!b->tlist) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc failed");
    }
    b->ntouched = 0;
    for (int i = 0; i < NA; i++)
        if (!b->touched[ids[i]]) { b->touched[ids[i]] = 1; b->tlist[b->ntouched++] = ids[i]; }
    if (b->stage_bytes < need_stage) {
        sc__host_free(m, b->stage, m->cu != NULL);
        if (!(b->stage = sc__host_alloc(m, need_stage, 1))) {
            b->stage_bytes = 0;
            return sc__fail(SC_ERROR_OUT_OF_MEMORY, "slide: host staging buffer of %zu bytes: %s", need_stage, sc_last_error());
        }
        b->stage_bytes = need_stage;
    }
    return SC_SUCCESS;
}

/* Slide keeping the head: its device weights (from the host's, on first use: before that
   get_params and the optimizer see them there) and its gradients zeroed, as resident mode's. */
static sc_result sc__slide_keep_head(sc_model *m)
{
    const sc_config *c = &m->cfg;
    size_t n = sc__kept_numel(c), e = (size_t)c->vocab_size * c->hidden_size, no = sc_config_norm_offset(c);
    if (!m->params) {
        float *h = (float *)SC_MALLOC(sizeof(float) * n), *p = NULL, *g = NULL, *w = NULL;
        if (!h) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc failed");
        sc__host_to_f32(h, m->sl->hp, m->sl->hpt, e);
        sc__host_to_f32(h + e, (const char *)m->sl->hp + no * sc_dtype_size(m->sl->hpt), m->sl->hpt, n - e);
        int master = m->cu && m->mc.bf16 && m->mc.master_weights;
        sc_result r = sc__alloc_bytes(m, &p, n, m->pb, "kept head weights");
        if (r == SC_SUCCESS) r = sc__alloc_bytes(m, &g, n, m->gb, "kept head grad");
        if (r == SC_SUCCESS && master) r = sc__alloc_f32(m, &w, n, "kept head master weights");
        if (r == SC_SUCCESS) r = sc__upload_f32(m, p, m->pb, h, n);
        if (r == SC_SUCCESS && master) r = sc__upload_f32(m, w, 4, h, n);
        SC_FREE(h);
        if (r != SC_SUCCESS) {
            sc__free(m, p);
            sc__free(m, g);
            sc__free(m, w);
            return r;
        }
        m->params = p, m->grads = g, m->master = w;
    }
    sc__memset0(m, m->grads, n * (size_t)m->gb);
    return SC_SUCCESS;
}

/* slide keeping the head: its device values (weights or gradients) into their places of dst */
static sc_result sc__kept_download(sc_model *m, float *dst, const void *src, int esize)
{
    const sc_config *c = &m->cfg;
    size_t e = (size_t)c->vocab_size * c->hidden_size, no = sc_config_norm_offset(c);
    sc_result r = m->params ? sc__download_f32(m, dst, src, esize, e) : SC_SUCCESS;
    return r == SC_SUCCESS && m->params ? sc__download_f32(m, dst + no, sc__at(src, e, esize), esize, m->nparams - no) : r;
}

/* Slide over NCCL: the step buffer holds every rank's tokens (rank r's accum x B x T at r's
   place, exchanged over the control channel), so that every rank adds the same embedding rows
   and updates the same rows: the replicas stay equal. */
static sc_result sc__slide_stepbuf_ranks(sc_model *m, sc__stepbuf *b)
{
    int W = sc_dist_comm_world(m->mc.comm), r = sc_dist_comm_rank(m->mc.comm);
    size_t NA = (size_t)m->accum * m->B * m->T;
    float *all = (float *)SC_MALLOC(sizeof(float) * NA * (size_t)W);
    if (!all) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc failed");
    memcpy(all + NA * (size_t)r, m->ids_all, sizeof(int32_t) * NA); /* the bits travel, not values */
    sc_result res = sc_dist_allgather_f32(m->mc.comm, all, NA * (size_t)W);
    if (res == SC_SUCCESS) res = sc__slide_stepbuf(m, b, (const int32_t *)(const void *)all, m->accum * W);
    SC_FREE(all);
    return res;
}

#ifdef SLIDECHECK_CUDA
/* Slide over NCCL: every micro-batch's dL/dx_0 of every rank gathered on the device (rank r's at
   r's place), then down into the staging buffer in one copy */
static sc_result sc__slide_gather_dres(sc_model *m, sc__stepbuf *b)
{
    int W = sc_dist_comm_world(m->mc.comm), r = sc_dist_comm_rank(m->mc.comm), M = m->accum;
    size_t one = (size_t)m->B * m->T * m->cfg.hidden_size, ab = (size_t)m->ab;
    sc_dtype at = m->ab == 2 ? SC_BF16 : SC_F32;
    void *all = NULL;
    SC__TRY(sc_allocator_alloc(&m->alloc, &all, one * M * W * ab, 0, "slide dL/dx_0 of every rank"));
    for (int k = 0; k < M; k++) {
        sc_cuda_convert(m->cu, (char *)all + ((size_t)r * M + k) * one * ab, at, m->dres0[k], at, one);
        sc__free(m, m->dres0[k]);
        m->dres0[k] = NULL;
    }
    sc_cuda_comm_wait(m->cu);
    int sp = m->tr ? sc_tracer_span_begin(m->tr, "all-gather", SC_PHASE_COMM, -1, SC_STREAM_COMM) : -1;
    if (sp >= 0) sc_tracer_span_bytes(m->tr, sp, (int64_t)(one * M * W * ab));
    sc_cuda_allgather(m->cu, all, one * M, at);
    if (sp >= 0) sc_tracer_span_end(m->tr, sp);
    sc__d2h_after_comm(m);
    sc__copy_async(m, 2, b->stage, all, one * M * W * ab, SC_PHASE_D2H, -1);
    sc_allocator_record_stream(&m->alloc, all, 2);
    sc__free(m, all);
    return sc_cuda_status(m->cu);
}
#endif

/* Slide's data parallel: every rank's chunk of each layer (and of a split head's rows) into dst
   (f32, parameter order), over the control channel; the remainders every rank holds alike. A
   chunk is the part sc_dist_part gives the rank of the first W x chunk elements. */
static sc_result sc__slide_gather_chunks(sc_model *m, float *dst)
{
    int W = sc_dist_comm_world(m->mc.comm);
    size_t ch = sc__layer_numel(&m->cfg) / (size_t)W, at[2], cnt[2];
    for (int l = 0; l < m->cfg.num_layers; l++)
        SC__TRY(sc_dist_allgather_f32(m->mc.comm, dst + sc_config_layer_base(&m->cfg, l), ch * (size_t)W));
    if (sc__slide_head_split(m)) {
        sc__slide_row_chunk(m, at, cnt);
        SC__TRY(sc_dist_allgather_f32(m->mc.comm, dst + sc_config_lm_head_offset(&m->cfg),
                                      cnt[0] * (size_t)m->cfg.hidden_size * (size_t)W));
    }
    return SC_SUCCESS;
}

/* One host update of every parameter, over the optimizer's threads (wb: the working copy). With
   ZeRO-1 this rank's part only (its state holds no other), then on the CPU backend the layers'
   chunks are exchanged so that every rank holds every weight for the next step (over NCCL the
   uploads gather them). The update is per element: the bits are those of one whole update. */
static sc_result sc__slide_update_all(sc_model *m, const sc_optim_consts *k, int wb)
{
    sc__slide *sl = m->sl;
    int nt = sc__slide_threads(m);
    if (!sl->zero) {
        sc__slide_update(m, k, 0, m->nparams, nt, wb);
        return SC_SUCCESS;
    }
    const sc_config *c = &m->cfg;
    size_t at[2], cnt[2], e = sc_config_layer_base(c, 0), no = sc_config_norm_offset(c);
    sc__slide_layer_chunk(m, 1, at, cnt);
    sc__slide_update(m, k, 0, e, nt, wb);
    for (int l = 0; l < c->num_layers; l++)
        for (int i = 0; i < 2; i++) sc__slide_update(m, k, sc_config_layer_base(c, l) + at[i], cnt[i], nt, wb);
    sc__slide_update(m, k, no, m->nparams - no, nt, wb);
    SC_ASSERT(m->nccl || sl->hpt == SC_F32); /* the CPU backend's host weights are f32 */
    return m->nccl ? SC_SUCCESS : sc__slide_gather_chunks(m, (float *)sl->hp);
}

/* Slide mode's data parallel (CPU backend): once every gradient is on the host, the embedding
   backward there, the sum over the ranks (rank order, as resident mode's), then one host update
   of every parameter: per element the same arithmetic as the per-layer tasks. No overlap: the
   sums travel over the control channel, which fits tests and small models. */
static sc_result sc__slide_dp_update(sc_model *m, const sc__stepbuf *b, int update)
{
    sc__slide *sl = m->sl;
    const sc_config *c = &m->cfg;
    sc__ev e = sc__ev_record(m, 2); /* every download */
    sc__ev_sync(m, &e);
    sc__ev_release(m, &e);
    /* an untied embedding's rows: the last sum left every rank's touched rows nonzero here, not
       only this rank's (which sc__slide_zero_rows clears) */
    if (!c->tie_embeddings) memset(sl->hg, 0, (size_t)c->vocab_size * c->hidden_size * (size_t)m->gb);
    for (int k = 0; k < b->M; k++)
        SC__TRY(sc__host_embedding_backward(sl->hg, m->gdt, (const char *)b->stage + (size_t)k * b->N * c->hidden_size * m->ab,
                                            m->ab == 2 ? SC_BF16 : SC_F32, b->ids + (size_t)k * b->N, b->N, c->hidden_size,
                                            sc__slide_threads(m), NULL, NULL));
    SC__TRY(sc_dist_allreduce_f32(m->mc.comm, (float *)sl->hg, m->nparams));
    sc_result r = SC_SUCCESS;
    if (update) {
        int sp = sc__span_begin(m, "optimizer", SC_PHASE_OPT, -1);
        r = sc__slide_update_all(m, &sl->k, 0);
        sc__span_end(m, sp);
    }
    return r;
}

static sc_result sc__slide_step(sc_model *m, const sc_plan *plan, int update)
{
    sc__slide *sl = m->sl;
    const sc_config *c = &m->cfg;
    int L = c->num_layers, C = c->hidden_size, V = c->vocab_size, N = m->B * m->T, M = m->accum;
    size_t ab = (size_t)m->ab, ln = sc__layer_numel(c);
    sc_result r = SC_SUCCESS;
    int sp, g;
    int dpu = m->mc.slide_dpu != 0, keep = m->mc.slide_keep_head != 0;
    /* data parallel: over NCCL (GPU) each gradient is summed on the device before it goes down,
       so the host updates overlap as without; over the control channel (CPU backend) no update
       before the sums */
    int W = sc_dist_comm_world(m->mc.comm), dpn = m->nccl, dp = !dpn && W > 1;
    sl->h2d = sl->d2h = sl->h2d_first = 0;
    sl->past_fwd = sl->head_parts = 0;
    /* a step's host optimizer time is that of the tasks it queues, wherever they run: the last
       step's still running add to the other counter */
    SC__LOCK(sl);
    sl->opt_ms[(sl->nstep + 1) & 1] = sl->wait_ms = 0;
    SC__UNLOCK(sl);
    /* the updates this step's weights include: all, or with DPU all but the last step's */
    int vis = m->t - (dpu && sl->pending);
    sl->pp = m->t & 1;
    sl->wp = vis & 1;
    sl->rb = dpu ? vis & 1 : 0;
    sl->cur ^= dpu;
    sl->nstep++;
    sc__stepbuf *sb = &sl->sb[sl->cur];
    sl->update = update;
    if (update) {
        m->t++;
        sl->k = sc__model_consts(m);
    }
    sl->par = m->t & 1;
    sl->gn_now = sl->gn_split && update;
    sl->devup = update && m->mc.slide_device_update;
    sl->no_host_grads = sl->devup;
    sl->hs_pergrad = !keep && !dpn && sc__head_rows(m) < V && M == 1 && N <= 1024; /* one pass over the head */
    sl->norm_first = (dpn || sc__norm_first_force) && !c->tie_embeddings;
    sl->devhead = sl->devup && m->mc.slide_head_once && sl->hs_pergrad;
    if (sl->hfresh && !sl->devhead) { /* the host updates the head this step, or reads it: bring it down */
        sc__slide_wait_unit(m, sl->wp, L);
        sc__slide_head_flush(m, 0);
    }
    SC__TRY(sc__slide_slots(m, plan));
    sc__slide_schedule(m, plan);
    /* the first group's uploads start while the host may still be updating the last step's
       embedding rows (over NCCL, where each load is a collective, the plain order) */
    if (!dpn) sc__slide_acquire(m, 0);
    /* the embedding and head tasks that read sb last (and wrote the rows gathered below) */
    sc__slide_wait_unit(m, sl->wp, L);
    sc__slide_head_refresh(m); /* a kept head slot: the rows the host updated (sb's last tokens) */
    if (keep) SC__TRY(sc__slide_keep_head(m));
    else if (dpn) SC__TRY(sc__slide_stepbuf_ranks(m, sb));
    else SC__TRY(sc__slide_stepbuf(m, sb, m->ids_all, M));
    sc__slide_head_pull(m, sb);
    /* a split head: each host holds its own rows current only, so the head goes up first (its
       update has run: waited above) and the embedding's rows come from the slot */
    int hsplit = sc__slide_head_split(m);
    if (hsplit) sc__slide_load(m, L, L, 0);

    /* forward: the embedding rows are gathered on the host and go up with the activations (a
       kept embedding: on the device, as resident mode) */
    sp = sc__span_begin(m, "embedding", SC_PHASE_FWD, -1);
    {
        const char *src = sc__slide_src(sl);
        size_t row = (size_t)C * m->pb;
        for (int k = 0; k < M; k++) {
            sc__mb_select(m, k);
            if ((r = sc__act_get(m, 0, SC__A_X)) != SC_SUCCESS) goto done;
            if (keep) {
                SC__OP(m, embedding_forward, m->acts[0][SC__A_X], m->ids_dev, m->params, N, C);
                continue;
            }
            if ((sl->hfresh || hsplit) && c->tie_embeddings) { /* the head slot holds the current rows */
                sc__stream_wait(m, 0, &sl->head.ready);
                SC__OP(m, embedding_forward, m->acts[0][SC__A_X], m->ids_dev, (const float *)sl->head.w, N, C);
                continue;
            }
            char *st = (char *)sb->stage + (size_t)k * N * row;
            for (int n = 0; n < N; n++) memcpy(st + (size_t)n * row, src + (size_t)m->ids[n] * row, row);
            sc__copy_async(m, 0, m->acts[0][SC__A_X], st, (size_t)N * row, SC_PHASE_H2D, -1);
        }
    }
    sc__span_end(m, sp);
    for (g = 0; g < L; g++) {
        sc__slide_acquire_ex(m, g, !dpn);
        for (int k = 0; k < M && r == SC_SUCCESS; k++) {
            sc__mb_select(m, k);
            r = sc__layer_forward(m, plan, g);
        }
        if (dpn) sc__slide_prefetch(m, g);
        sc__slide_release(m, g);
        if (r != SC_SUCCESS) goto done;
    }
    m->mb = 0;
    m->last_saved = sc_allocator_live_bytes_tagged(&m->alloc, "layer ");

    /* the head: norm, LM head and loss for every micro-batch; its gradients go down at once
       (after the last update of the head and embedding has read theirs) */
    sc__slide_wait_unit(m, sl->pp, L);
    if (dpu) sc__slide_zero_rows(m, &sl->sb[sl->cur ^ 1]);
    sc__slide_acquire(m, L);
    sl->past_fwd = 1;
    if (!keep) sc__slide_head_grad_take(m, sl->hs_pergrad ? (size_t)C : sc__head_numel(c));
    for (int k = 0; k < M && r == SC_SUCCESS; k++) {
        sc__mb_select(m, k);
        sp = sc__span_begin(m, "lm_head+loss", SC_PHASE_LOSS, -1);
        r = sc__head_forward_backward(m, &m->dres0[k]);
        sc__span_end(m, sp);
    }
    sc__slide_release(m, L);
    if (r != SC_SUCCESS) goto done;
    if (!keep) {
        size_t lm = sl->hs_pergrad ? 0 : (size_t)V * C; /* per-slice gradients went down already */
        sc__d2h_after_compute(m);
#ifdef SLIDECHECK_CUDA
        if (dpn) sc__slide_head_sum(m, lm), sc__d2h_after_comm(m);
#endif
        /* the head's rows in parts where one host task would otherwise wait for all of them
           (not over NCCL or ZeRO-1, whose head tasks stay whole) */
        int parts = !dp && !dpn && !sl->zero && lm > 0 && sl->update && !sl->norm_first; /* (parts' rows: lm first) */
        sc__slide_head_grads_down(m, lm, parts);
        sl->head_g = NULL;
        if (!dp) sc__slide_queue_ex(m, SC__TASK_HEAD_EARLY, L, sc__ev_record(m, 2), 0, 0, parts);
    }

    /* backward, group by group (a recomputed segment is one group: its layers are resident
       together while every micro-batch replays and back-propagates through it) */
    for (g = L + 1; g < sl->ngroups; g++) {
        int s = sl->gfirst[g], e = sl->glast[g];
        sc__slide_acquire(m, g);
        for (int l = s; l <= e; l++) sl->lg[l] = NULL; /* each taken before its first backward */
        for (int k = 0; k < M && r == SC_SUCCESS; k++) {
            sc__mb_select(m, k);
            for (int l = e; l >= s && r == SC_SUCCESS; l--) r = sc__layer_backward_step(m, plan, l, m->dres0[k]);
        }
        sc__slide_release(m, g);
        for (int l = e; l >= s; l--) {
            if (!sl->lg[l]) continue;
            if (sc__dev_layer(m, l)) { /* updated where it lives, right after its last backward */
                if (r == SC_SUCCESS && update) sc__dev_layer_update(m, l, &sl->k);
            } else if (r == SC_SUCCESS && sl->devup) {
                sc__slide_weights_down(m, l);
            } else if (r == SC_SUCCESS) {
#ifdef SLIDECHECK_CUDA
                if (dpn) sc__dev_sum(m, sl->lg[l], ln, l), sc__d2h_after_comm(m);
#endif
                sc__slide_norm_dev(m, l, sl->lg[l]);
                sc__slide_layer_down(m, l);
                sl->rfree[sl->lgk[l]] = sc__ev_record(m, 2);
                if (!dp && sl->gn_now) sc__slide_queue(m, SC__TASK_NORM, l, sc__ev_record(m, 2));
                if (!dp) sc__slide_queue(m, SC__TASK_LAYER, l, sc__ev_record(m, 2));
            }
            sl->lg[l] = NULL;
        }
        if (r != SC_SUCCESS) goto done;
    }
    sc__bwd_scratch_free(m);

    if (keep) { /* the kept embedding's backward and the head's update on the device, as resident mode */
        sc__embedding_backward(m);
        if (update) {
            sp = sc__span_begin(m, "optimizer", SC_PHASE_OPT, -1);
            r = sc__device_update(m, sc__kept_numel(c));
            sc__span_end(m, sp);
        }
        goto done;
    }
    /* the embedding: dL/dx_0 of every micro-batch goes down; the host adds it to the touched rows */
    sp = sc__span_begin(m, "embedding", SC_PHASE_BWD, -1);
#ifdef SLIDECHECK_CUDA
    if (dpn) { /* every rank's dL/dx_0 comes down: the host adds every rank's rows, in rank order */
        r = sc__slide_gather_dres(m, sb);
        if (r != SC_SUCCESS) goto done;
        sc__slide_queue(m, SC__TASK_HEAD_LATE, L, sc__ev_record(m, 2));
    } else
#endif
    {
        sc__d2h_after_compute(m);
        for (int k = 0; k < M; k++) {
            sc__copy_async(m, 2, (char *)sb->stage + (size_t)k * N * C * ab, m->dres0[k], (size_t)N * C * ab,
                           SC_PHASE_D2H, -1);
            sc_allocator_record_stream(&m->alloc, m->dres0[k], 2);
            sc__free(m, m->dres0[k]);
            m->dres0[k] = NULL;
        }
        if (!dp) sc__slide_queue(m, SC__TASK_HEAD_LATE, L, sc__ev_record(m, 2));
    }
    sc__span_end(m, sp);
    if (dp) r = sc__slide_dp_update(m, sb, update);
done:
    {
        /* every queued copy finishes before the step returns; the updates too after an error or
           without an update (the gradients are the result). Otherwise they may run on while the
           next step starts: each upload waits for its own unit's update. */
        if (r != SC_SUCCESS || !update) {
            int64_t t0 = sc__trace_now_ns();
            sc__slide_drain(m);
            sl->wait_ms += (double)(sc__trace_now_ns() - t0) / 1e6;
        }
        sl->pending = dpu && update && r == SC_SUCCESS;
        sl->keep_slots = m->mc.slide_device_update && r == SC_SUCCESS;
        /* the head slot holds the updated head (the host's rows go up next step); after an error
           the host copy takes what the slot holds, as the layers keep what their updates did */
        if (r != SC_SUCCESS && sl->hfresh) sc__slide_head_flush(m, 0);
        sl->hfresh = sl->hrefresh = sl->devhead && r == SC_SUCCESS;
    }
    {
        size_t layers = sc_config_norm_offset(c) - sc_config_layer_base(c, 0);
        sl->host_params = !update ? 0
                          : sl->devhead ? (size_t)C * (1 + (c->tie_embeddings ? (size_t)sb->ntouched : (size_t)V))
                          : (sl->devup ? m->nparams - layers : m->nparams) - (keep ? sc__kept_numel(c) : 0) -
                                (size_t)sl->ndev * ln - sc__slide_others(m);
    }
    if (r == SC_SUCCESS && sl->task_err != SC_SUCCESS)
        r = sc__fail(sl->task_err, "slide: a host optimizer task ran out of memory");
    sl->task_err = SC_SUCCESS;
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        sc_result r2 = sc_cuda_synchronize(m->cu);
        if (r == SC_SUCCESS) r = r2;
    }
#endif
    if (!m->cu) { /* the copy threads' queues are empty once their last events completed */
        sc__ev e1 = sc__ev_record(m, 1), e2 = sc__ev_record(m, 2);
        sc__ev_sync(m, &e1);
        sc__ev_sync(m, &e2);
    }
    sc__slide_flush_spans(m);
    return r;
}

/* Sizes the micro-batch buffers for accum x [B, T]. */
static sc_result sc__step_buffers(sc_model *m, int accum, int B, int T)
{
    int L = m->cfg.num_layers;
    size_t NA = (size_t)accum * B * T;
    if (accum > m->accum_cap) {
        if (m->act_store) sc__model_drop_acts(m);
        if (m->dres0) sc__free_dres(m);
        SC_FREE(m->act_store);
        SC_FREE(m->dres0);
        m->accum_cap = 0;
        m->act_store = (float *(*)[SC__A_COUNT])SC_MALLOC(sizeof(*m->act_store) * (size_t)accum * (size_t)(L + 1));
        m->dres0 = (float **)SC_MALLOC(sizeof(float *) * (size_t)accum);
        if (!m->act_store || !m->dres0) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc failed");
        memset(m->act_store, 0, sizeof(*m->act_store) * (size_t)accum * (size_t)(L + 1));
        memset(m->dres0, 0, sizeof(float *) * (size_t)accum);
        m->accum_cap = accum;
    }
    if (B != m->B || T != m->T || accum != m->accum) {
        sc__free(m, m->ids_dev_all);
        sc__free(m, m->targets_all);
        sc__free(m, m->rowloss_all);
        m->ids_dev_all = m->targets_all = NULL;
        m->rowloss_all = NULL;
        m->B = m->T = m->accum = 0;
        void *p1 = NULL, *p2 = NULL;
        SC__TRY(sc_allocator_alloc(&m->alloc, &p1, sizeof(int32_t) * NA, 0, "input ids"));
        m->ids_dev_all = (int32_t *)p1;
        SC__TRY(sc_allocator_alloc(&m->alloc, &p2, sizeof(int32_t) * NA, 0, "targets"));
        m->targets_all = (int32_t *)p2;
        SC__TRY(sc__alloc_f32(m, &m->rowloss_all, NA, "row losses"));
        if (m->rowloss_cap < NA) {
            SC_FREE(m->rowloss_host);
            m->rowloss_host = (float *)SC_MALLOC(sizeof(float) * NA);
            m->rowloss_cap = m->rowloss_host ? NA : 0;
            if (!m->rowloss_host) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc failed");
        }
    }
    m->B = B;
    m->T = T;
    m->accum = accum;
    return SC_SUCCESS;
}

/* ==========================================================================================
   Whole-step CUDA graph (resident mode, one GPU or NCCL data parallel). The step's device work --
   zeroing the gradients, forward, recompute, backward, the collectives, loss and optimizer -- is
   captured on the second step of a shape (the first sizes every cache: allocator, scratch, GEMM
   plans) and replayed from then on: the same kernels with the same arguments, so the same bits as
   launching them one by one. What changes per step lives in device memory: the tokens and
   targets (uploaded before), the optimizer's bias corrections (refilled before each replay), the
   embedding backward's token order (sorted on the device). The caching allocator serves the
   capture as it serves an eager step; the blocks it handed out are the graph's scratch and are
   checked idle before each replay (held by someone else, or their segment given back: the graph
   is dropped and captured again). The tracer's spans are event nodes of the graph (those of the
   communication stream too), appended at each replay.
   Data parallel: the communication stream joins the capture at the first sc_cuda_comm_wait, so
   each collective is a node of the graph, in the eager step's order, with the eager step's joins
   as edges; the capture ends joined to it. A replay runs no host code: an event node after each
   collective stands for the pooled events that sc_cuda_comm_settle polls after an eager step, so
   the settle after a replay has the same timeout and abort. A rank whose capture failed runs the
   same collectives eagerly, in the same order as the others' graphs.
   ========================================================================================== */
static void sc__graph_note_block(sc_model *m, void *p, size_t n)
{
    sc__graph_state *g = &m->gs;
    if (g->nblk == g->capblk) {
        size_t cap = g->capblk ? 2 * g->capblk : 256;
        void **b = (void **)SC_REALLOC(g->blk, sizeof *b * cap);
        if (b) g->blk = b;
        size_t *bn = (size_t *)SC_REALLOC(g->blkn, sizeof *bn * cap);
        if (bn) g->blkn = bn;
        if (!b || !bn) { g->rec = -1; return; } /* out of host memory: the capture is dropped */
        g->capblk = cap;
    }
    g->blk[g->nblk] = p;
    g->blkn[g->nblk++] = n;
}

static void sc__graph_drop(sc_model *m)
{
    sc__graph_state *g = &m->gs;
#ifdef SLIDECHECK_CUDA
    if (g->exec) sc_cuda_graph_destroy(m->cu, g->exec);
#endif
    g->exec = NULL;
    SC_FREE(g->spans);
    g->spans = NULL;
    g->nspans = 0;
    g->nblk = 0;
}

/* (the CUDA backend's data parallel is NCCL's, whose collectives a graph holds; the CPU
   backend's sums on the host are not graphed, nor is slide mode) */
static int sc__graph_wanted(const sc_model *m)
{
    return m->cu && !m->sl && (m->nccl || sc_dist_comm_world(m->mc.comm) == 1) && !m->mc.keep_logits &&
           m->mc.cuda_graph != SC_CUDA_GRAPH_OFF && !m->gs.off;
}

#ifdef SLIDECHECK_CUDA
static sc_optim_consts sc__step_consts(const sc_model *m)
{
    return sc__model_consts(m);
}

/* Capture the step and run it once. A capture that fails leaves nothing behind: the step runs
   eagerly and so do the later ones (the reason on stderr; with SC_CUDA_GRAPH_ON it is an error). */
static sc_result sc__graph_capture(sc_model *m, const sc_plan *plan, int update)
{
    sc__graph_state *g = &m->gs;
    int t0 = m->t;
    int64_t mark = m->tr && m->tr->in_step ? m->tr->nspans : -1;
    sc_result r = sc_cuda_graph_begin(m->cu), e;
    if (r == SC_SUCCESS) {
        g->nblk = 0;
        g->rec = 1;
        r = sc__resident_step(m, plan, update);
        if (r == SC_SUCCESS && g->rec < 0) r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc failed (graph blocks)");
        g->rec = 0;
        void *exec = NULL;
        e = sc_cuda_graph_end(m->cu, &exec);
        if (r == SC_SUCCESS) r = e;
        if (r == SC_SUCCESS) g->exec = exec;
        else if (exec) sc_cuda_graph_destroy(m->cu, exec);
    }
    if (!g->exec) { /* nothing of it ran: undo its bookkeeping, then the eager step */
        char why[1024];
        snprintf(why, sizeof why, "%s", sc_last_error());
        sc__model_drop_acts(m);
        sc__free_dres(m);
        m->t = t0;
        if (mark >= 0) sc__tracer_spans_rewind(m->tr, mark);
        g->off = 1;
        if (m->mc.cuda_graph == SC_CUDA_GRAPH_ON) return sc__fail(SC_ERROR_UNSUPPORTED, "cuda_graph on: %s", why);
        fprintf(stderr, "slidecheck: whole-step CUDA graph off, steps run eagerly: %s\n", why);
        return sc__resident_step(m, plan, update);
    }
    g->spans = sc__tracer_spans_copy(m->tr, mark, &g->nspans);
    g->saved = m->last_saved;
    g->norm = m->gnorm_step == m->t; /* its replays leave the norm for sc_model_grad_norm too */
    g->peak[0] = m->alloc.stats.allocated_bytes[SC_STAT_ALL].peak;
    g->peak[1] = m->alloc.stats.active_bytes[SC_STAT_ALL].peak;
    g->peak[2] = m->alloc.stats.requested_bytes[SC_STAT_ALL].peak;
    sc_optim_consts k = sc__step_consts(m);
    g->steps++;
    return sc_cuda_graph_launch(m->cu, g->exec, &k);
}
#endif

/* The resident step, through the graph where it works. */
static sc_result sc__graph_step(sc_model *m, const sc_plan *plan, int update)
{
    sc__graph_state *g = &m->gs;
    if (!sc__graph_wanted(m)) return sc__resident_step(m, plan, update);
#ifdef SLIDECHECK_CUDA
    int traced = m->tr != NULL;
    int same = g->B == m->B && g->T == m->T && g->accum == m->accum && g->update == update && g->traced == traced &&
               !memcmp(&g->plan, plan, sizeof *plan);
    int idle = 1;
    for (size_t i = 0; g->exec && same && idle && i < g->nblk; i++)
        idle = sc_allocator_range_idle(&m->alloc, g->blk[i], g->blkn[i]);
    if (g->exec && (!same || !idle)) {
        sc__graph_drop(m);
        /* memory the capture held keeps being taken between steps: stop capturing */
        if (same && ++g->drops >= 3) {
            g->off = 1;
            fprintf(stderr, "slidecheck: whole-step CUDA graph off: its memory is taken between steps\n");
            return sc__resident_step(m, plan, update);
        }
    }
    if (!same) {
        g->B = m->B, g->T = m->T, g->accum = m->accum, g->update = update, g->traced = traced;
        g->plan = *plan;
        g->seen = 0;
    }
    if (!g->exec && g->seen++ < 1) return sc__resident_step(m, plan, update); /* sizes every cache */
    if (!g->exec) return sc__graph_capture(m, plan, update);
    /* replay: what the captured step did on the host, then one launch */
    if (update) m->t++;
    if (g->norm) m->gnorm_step = m->t, m->gnorm = NAN; /* the graph queued the norm: read on request */
    sc_optim_consts k = sc__step_consts(m);
    sc__tracer_spans_replay(m->tr, g->spans, g->nspans);
    m->last_saved = g->saved;
    int64_t *pk[3] = {&m->alloc.stats.allocated_bytes[SC_STAT_ALL].peak, &m->alloc.stats.active_bytes[SC_STAT_ALL].peak,
                      &m->alloc.stats.requested_bytes[SC_STAT_ALL].peak};
    for (int i = 0; i < 3; i++) /* the replay holds the blocks the capture was given */
        if (*pk[i] < g->peak[i]) *pk[i] = g->peak[i];
    g->steps++;
    sc_result r = sc_cuda_graph_launch(m->cu, g->exec, &k);
    if (m->tr) sc__flush_launches(m); /* the one launch */
    return r;
#else
    (void)g;
    return sc__resident_step(m, plan, update);
#endif
}

SCDEF int64_t sc_model_graph_steps(const sc_model *m) { return m ? m->gs.steps : 0; }

SCDEF int64_t sc_model_graph_kernels(const sc_model *m)
{
#ifdef SLIDECHECK_CUDA
    return m && m->gs.exec ? (int64_t)sc_cuda_graph_kernels(m->gs.exec) : 0;
#else
    (void)m;
    return 0;
#endif
}

/* Slide mode with clipping: once every gradient is on the host (and the embedding's backward
   has run there), the norm, then the clipped update queued to the optimizer thread unit by unit,
   the embedding and head first and then the layers from the first, so that the next step's first
   uploads wait only for their own units while the host goes on with the rest. */
static sc_result sc__slide_clipped_update(sc_model *m)
{
    sc__slide *sl = m->sl;
    int L = m->cfg.num_layers;
    sc__slide_drain(m);
    if (sl->task_err != SC_SUCCESS) return sc__fail(sl->task_err, "slide: a host task ran out of memory");
    m->t++;
    m->gnorm_step = m->t;
    SC__TRY(sc__slide_norm_finish(m, &m->gnorm));
    m->gscale = sc_clip_scale(m->gnorm, m->mc.clip_grad_norm);
    sl->k = sc__model_consts(m);
    m->gscale = 1.0f; /* the tasks carry the scale in their constants */
    sl->update = 1;
    /* clipping keeps every parameter on the host (refused at create otherwise) */
    sl->host_params = m->nparams - sc__slide_others(m);
    sl->par = m->t & 1;
    sl->pending = 0;
    if (sl->zero && !m->nccl) { /* the CPU backend's ZeRO-1: its update ends with the exchange */
        sc_result r = sc__slide_update_all(m, &sl->k, 0);
        sl->keep_slots = 0;
        return r;
    }
    sc__slide_queue(m, SC__TASK_CLIPPED, L, sc__ev_record(m, 2));
    for (int l = 0; l < L; l++) sc__slide_queue(m, SC__TASK_CLIPPED, l, sc__ev_record(m, 2));
    sl->keep_slots = 0; /* the host weights change: the slots' copies are stale */
    return SC_SUCCESS;
}

#ifdef SLIDECHECK_CUDA
/* The step's collectives, settled within the control channel's timeout (sc_cuda_comm_settle).
   When they fail, NCCL seldom says which rank is gone: the control channel does (a barrier: at
   once where a rank's process died, its timeout where one stalls), and its message comes first. */
static sc_result sc__comm_settle(sc_model *m)
{
    sc_result r = sc_cuda_comm_settle(m->cu, sc__comm_timeout(m->mc.comm));
    if (r == SC_SUCCESS || sc_dist_comm_world(m->mc.comm) < 2) return r;
    char why[sizeof sc__errbuf];
    snprintf(why, sizeof why, "%s", sc_last_error());
    if (sc_dist_barrier(m->mc.comm) == SC_SUCCESS) return sc__fail(r, "%s", why); /* every rank is there */
    char who[sizeof sc__errbuf];
    snprintf(who, sizeof who, "%s", sc_last_error());
    return sc__fail(r, "%s (%s)", who, why);
}
#endif

SCDEF sc_result sc_model_step(sc_model *m, const sc_plan *plan, const int32_t *ids, int accum, int B, int T,
                              int update, float *loss)
{
    const sc_config *c = &m->cfg;
    int L = c->num_layers, V = c->vocab_size;
    if (!plan || plan->num_layers != L)
        return sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint plan is for %d layers, the model has %d",
                        plan ? plan->num_layers : -1, L);
    if (accum < 1 || accum > 65536)
        return sc__fail(SC_ERROR_INVALID_ARGS, "gradient accumulation needs 1 to 65536 micro-batches (got %d)", accum);
    if (B <= 0 || T < 2)
        return sc__fail(SC_ERROR_INVALID_ARGS, "need batch >= 1 and sequence >= 2 (got %d x %d)", B, T);
    if (T > c->max_position)
        return sc__fail(SC_ERROR_RANGE, "sequence length %d exceeds max_position_embeddings %d", T, c->max_position);
    if ((int64_t)accum * B * T > ((int64_t)1 << 30))
        return sc__fail(SC_ERROR_RANGE, "accum x batch x sequence = %lld is too large", (long long)accum * B * T);
    int N = B * T, NA = accum * N;
    for (int i = 0; i < NA; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return sc__fail(SC_ERROR_RANGE, "token id %d at [%d,%d] is outside the vocabulary [0, %d)", ids[i],
                            i / T, i % T, V);
    sc_result r;
    if (m->sl) SC__TRY(sc__slide_check_window(m, plan));
    sc__model_drop_acts(m);
    SC__TRY(sc__step_buffers(m, accum, B, T));
    m->ids_all = ids;
    /* data parallel: each rank's gradients are a share of the mean over every rank's tokens */
    int W = sc_dist_comm_world(m->mc.comm);
    m->lscale = 1.0f / (float)((double)W * accum * B * (T - 1));
    SC__TRY(sc__ensure_rope(m, T));
    /* targets: the next token; the last position of each sequence has none (HF's shift) */
    int32_t *tg = (int32_t *)SC_MALLOC(sizeof(int32_t) * (size_t)NA);
    if (!tg) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "host malloc failed");
    for (int i = 0; i < NA; i++) tg[i] = (i % T) < T - 1 ? ids[i + 1] : -1;
    sc__upload(m, m->targets_all, tg, sizeof(int32_t) * (size_t)NA);
    sc__upload(m, m->ids_dev_all, ids, sizeof(int32_t) * (size_t)NA);
#ifdef SLIDECHECK_CUDA
    if (m->cu) sc_cuda_synchronize(m->cu); /* tg is freed next */
#endif
    SC_FREE(tg);
    /* the device's optimizer is queued behind the step; the CPU backend's follows the loss */
    /* clipping in slide mode: the update needs the norm of every gradient, so it follows the
       whole backward (sc_model_optimizer_step below) */
    int slide_clip = m->sl && m->mc.clip_grad_norm > 0.0f;
    m->gnorm = NAN;
    m->gnorm_step = -1;
    r = m->sl ? sc__slide_step(m, plan, update && !slide_clip) : sc__graph_step(m, plan, update && m->cu);
#ifdef SLIDECHECK_CUDA
    if (r == SC_SUCCESS && m->nccl) r = sc__comm_settle(m); /* never a hang */
    m->coll_l1 = m->coll_emb = 0; /* settled: an optimizer step after this one waits for nothing */
    /* ZeRO-1: the forward gathered the last update's chunks; this one's wait for the next step (a
       graph's replay runs sc__zero_update on the device only: the flag is set here) */
    if (r == SC_SUCCESS && m->zero_gpu) m->zero_stale = update;
#endif
    /* the loss last: reading it waits for the device, which by now has the whole step queued */
    if (r == SC_SUCCESS) r = sc__download_f32(m, m->rowloss_host, m->rowloss_all, 4, (size_t)NA);
    if (r == SC_SUCCESS) {
        double lsum = 0.0;
        for (int i = 0; i < NA; i++) lsum += (double)m->rowloss_host[i];
        *loss = (float)(lsum / ((double)accum * B * (T - 1)));
        if (W > 1) { /* the sums over the ranks, in rank order: every replica takes the same update */
            float ls = (float)lsum;
            r = sc_dist_allreduce_f32(m->mc.comm, &ls, 1);
            /* (slide mode summed its host gradients before its update) */
            if (r == SC_SUCCESS && !m->nccl && !m->sl) r = sc_dist_allreduce_f32(m->mc.comm, (float *)m->grads, m->nparams);
            *loss = (float)((double)ls / ((double)W * accum * B * (T - 1)));
        }
    }
#ifdef SLIDECHECK_CUDA
    if (r == SC_SUCCESS && m->cu) r = sc_cuda_status(m->cu);
#endif
    sc__model_drop_acts(m);
    sc__free_dres(m);
    if (r == SC_SUCCESS && update && !m->sl && !m->cu) r = sc_model_optimizer_step(m);
    if (r == SC_SUCCESS && update && slide_clip) r = sc__slide_clipped_update(m);
    return r;
}

SCDEF sc_result sc_model_sync(sc_model *m)
{
    if (!m->sl) return SC_SUCCESS;
    int64_t t0 = sc__trace_now_ns();
    sc__slide_drain(m);
    m->sl->wait_ms += (double)(sc__trace_now_ns() - t0) / 1e6;
    sc__slide_flush_spans(m);
    sc_result r = m->sl->task_err;
    m->sl->task_err = SC_SUCCESS;
    return r == SC_SUCCESS ? SC_SUCCESS : sc__fail(r, "slide: a host optimizer task ran out of memory");
}

SCDEF sc_result sc_model_forward_backward(sc_model *m, const sc_plan *plan, const int32_t *ids, int B, int T,
                                          float *loss)
{
    return sc_model_step(m, plan, ids, 1, B, T, 0, loss);
}

SCDEF sc_result sc_model_optimizer_step(sc_model *m)
{
    if (!m->sl) {
        sc_result r = sc__resident_update(m);
#ifdef SLIDECHECK_CUDA
        if (r == SC_SUCCESS && m->nccl) r = sc__comm_settle(m); /* the sums (ZeRO-1 gathers with the next step) */
#endif
        return r;
    }
    /* slide: the gradients are on the host: update there, but a head kept on the device there */
    if (m->sl->no_host_grads)
        return sc__fail(SC_ERROR_UNSUPPORTED, "slide_device_update: the last step updated its layers on the device "
                        "and their gradients are not on the host; sc_model_optimizer_step follows a gradient-only step");
    int sp = sc__span_begin(m, "optimizer", SC_PHASE_OPT, -1);
    sc_result r = SC_SUCCESS;
    m->t++;
    size_t off = m->params ? sc_config_layer_base(&m->cfg, 0) : 0;
    size_t end = m->params ? sc_config_norm_offset(&m->cfg) : m->nparams;
    sc__slide_drain(m);
    sc__slide_head_flush(m, 0); /* a kept head slot: the host updates the head now */
    if (m->mc.clip_grad_norm > 0.0f) sc__clip_norm(m);
    sc_optim_consts k = sc__model_consts(m);
    int wb = m->mc.slide_dpu ? m->t & 1 : 0;
    if (m->params) sc__slide_update(m, &k, off, end - off, sc__slide_threads(m), wb); /* kept head: the layers */
    else r = sc__slide_update_all(m, &k, wb);
    m->sl->pending = 0; /* applied now: the next step sees it */
    m->sl->keep_slots = 0; /* the host weights changed: the slots' copies are stale */
    if (m->params && r == SC_SUCCESS) r = sc__device_update(m, sc__kept_numel(&m->cfg));
    for (int l = 0; l < m->cfg.num_layers && r == SC_SUCCESS; l++) /* (their host copies are not read) */
        if (sc__dev_layer(m, l)) sc__dev_layer_update(m, l, &k);
#ifdef SLIDECHECK_CUDA
    if (r == SC_SUCCESS && m->sl->ndev && m->cu) r = sc_cuda_status(m->cu);
#endif
    m->gscale = 1.0f;
    sc__span_end(m, sp);
    return r;
}

#ifdef SLIDECHECK_CUDA
/* Every rank's chunks of the last update into the weights now (a reader outside the steps) */
static sc_result sc__zero_flush(sc_model *m)
{
    if (!m->zero_stale) return SC_SUCCESS;
    size_t at[SC_MAX_LAYERS + 2];
    for (int p = 0; p <= m->cfg.num_layers + 1; p++) sc__zero_gather_piece(m, at, p, 0);
    sc_cuda_comm_join(m->cu, at[m->cfg.num_layers + 1]);
    sc_result r = sc__comm_settle(m);
    if (r == SC_SUCCESS) m->zero_stale = 0;
    return r;
}
#endif

SCDEF sc_result sc_model_get_params(sc_model *m, float *dst)
{
#ifdef SLIDECHECK_CUDA
    if (m->zero_gpu) SC__TRY(sc__zero_flush(m));
#endif
    if (m->sl) {
        sc__slide_drain(m);
        sc__slide_head_flush(m, 1); /* a kept head slot: the host copy gets its rows (it stays kept) */
        sc__host_to_f32(dst, m->sl->hp, m->sl->hpt, m->nparams);
        if (m->nccl && sc_dist_comm_world(m->mc.comm) > 1) SC__TRY(sc__slide_gather_chunks(m, dst));
        SC__TRY(sc__dev_layers_io(m, 0, dst, 0));
        return sc__kept_download(m, dst, m->master ? m->master : m->params, m->master ? 4 : m->pb);
    }
    return m->master ? sc__download_f32(m, dst, m->master, 4, m->nparams)
                     : sc__download_f32(m, dst, m->params, m->pb, m->nparams);
}

SCDEF sc_result sc_model_get_grads(sc_model *m, float *dst)
{
    if (m->sl && m->sl->no_host_grads)
        return sc__fail(SC_ERROR_UNSUPPORTED, "slide_device_update: the last step updated its layers on the device and "
                        "their gradients never came to the host; a gradient-only step (update = 0) keeps them");
    if (m->sl) {
        sc__slide_drain(m);
        sc__host_to_f32(dst, m->sl->hg, m->gdt, m->nparams);
        /* over NCCL a host holds its chunks of each layer's gradients (sc__slide_layer_down) and
           of a split head's rows (sc__slide_grad_rows) */
        if (m->nccl && sc_dist_comm_world(m->mc.comm) > 1) SC__TRY(sc__slide_gather_chunks(m, dst));
        SC__TRY(sc__dev_layers_io(m, 1, dst, 0));
        return sc__kept_download(m, dst, m->grads, m->gb);
    }
    return sc__download_f32(m, dst, m->grads, m->gb, m->nparams);
}

SCDEF void sc_model_set_lr(sc_model *m, float lr) { m->mc.lr = lr; }
SCDEF float sc_model_lr(const sc_model *m) { return m->mc.lr; }
SCDEF int sc_model_steps_done(const sc_model *m) { return m->t; }

SCDEF double sc_model_grad_norm(sc_model *m)
{
    if (m->gnorm_step == m->t && m->gnorm == m->gnorm) return m->gnorm;
#ifdef SLIDECHECK_CUDA
    if (m->cu && !m->sl) {
        if (m->zero_gpu && !(m->mc.clip_grad_norm > 0.0f)) return NAN; /* each rank holds its chunk of the sums only */
        if (m->gnorm_step != m->t) { /* not clipped: compute it now */
            sc_cuda_grad_norm(m->cu, m->grads, m->gdt, m->nparams, 0.0f);
            m->gnorm_step = m->t;
        }
        double nrm = NAN;
        if (sc_cuda_grad_norm_read(m->cu, &nrm, NULL) != SC_SUCCESS) return NAN;
        return m->gnorm = nrm;
    }
#endif
    if (m->sl) {
        sc__slide *sl = m->sl;
        if (sl->no_host_grads) return NAN; /* the layers' gradients were in the device's ring only */
        if (sl->gn_now) { /* the layers' sums and the head's and embedding's tasks, not the updates */
            SC__LOCK(sl);
            while (sl->gn_tasks) SC__WAIT(sl);
            SC__UNLOCK(sl);
            sc__slide_wait_unit(m, sl->par, m->cfg.num_layers);
        } else {
            sc__slide_drain(m);
        }
        /* in one process or over NCCL (every host holds the sums of what it updates): asked
           once, the next steps sum each layer's chunks as it lands (over NCCL on the device,
           after its sum), and the norm adds those sums instead of reading every gradient again. Unclipped
           it no longer waits for the updates, which then run beside the next step (over NCCL
           its forward issues each prefetch once the layer before is queued: sc__slide_prefetch).
           The CPU backend's data parallel sums after the backward (and its ZeRO-1 exchanges the
           updates): there the norm follows them all, in one pass. */
        int one = m->nccl || sc_dist_comm_world(m->mc.comm) <= 1;
        if (one && !sl->gn_part && sc__slide_norm_sums(sl) != SC_SUCCESS) return NAN;
        sl->gn_split = one && !(m->mc.clip_grad_norm > 0.0f) && !m->mc.slide_dpu;
        if (one) {
            if ((sl->ndev || m->params) && sc__slide_norm_kept(m) != SC_SUCCESS) return NAN;
            if (sc__slide_norm_finish(m, &m->gnorm) != SC_SUCCESS) return NAN;
            m->gnorm_step = m->t;
            return m->gnorm;
        }
    }
    m->gnorm_step = m->t;
    return m->gnorm = sc_grad_norm(m->sl ? m->sl->hg : (const void *)m->grads, m->gdt, m->nparams,
                                   m->sl ? sc__slide_threads(m) : 0);
}

/* Slide mode's host state: full arrays, or with ZeRO-1 this rank's part of m and v
   (sc__slide_state_at: the embedding, its chunks of each layer, the final norm and head). Where a
   rank updates only its chunks of each layer (ZeRO-1, or slide over NCCL), the save gathers every
   rank's chunks over the control channel. */
static sc_result sc__slide_state_io(sc_model *m, int which, float *buf, int load)
{
    sc__slide *sl = m->sl;
    const sc_config *c = &m->cfg;
    size_t n = m->nparams;
    void *h = which == 0 ? sl->hm : which == 1 ? sl->hv : sl->hp;
    sc_dtype t = which == 2 ? sl->hpt : sl->hst;
    int part = which < 2 && sl->zero, W = sc_dist_comm_world(m->mc.comm);
    size_t e = sc_config_layer_base(c, 0), no = sc_config_norm_offset(c), at[2], cnt[2];
    sc__slide_layer_chunk(m, 1, at, cnt);
    /* the ranges this rank holds, in parameter order: everything, or its part */
    for (int i = -1; i <= (part ? 2 * c->num_layers : -1); i++) {
        size_t off = 0, len = n;
        if (part && i == -1) len = e;
        else if (part && i == 2 * c->num_layers) off = no, len = n - no;
        else if (part) off = sc_config_layer_base(c, i / 2) + at[i % 2], len = cnt[i % 2];
        if (!len) continue;
        size_t s0 = part ? sc__slide_state_at(m, off) : off, es = sc_dtype_size(t);
        if (!load) {
            sc__host_to_f32(buf + off, (const char *)h + s0 * es, t, len);
            continue;
        }
        SC__OMP(omp parallel for schedule(static))
        for (long long j = 0; j < (long long)len; j++) sc__st(h, t, s0 + (size_t)j, buf[off + (size_t)j]);
    }
    if (!load && W > 1 && (m->nccl || part)) SC__TRY(sc__slide_gather_chunks(m, buf));
    SC__TRY(sc__dev_layers_io(m, which + 2, buf, load)); /* the layers on the device: their state is there */
    if (load && which == 2 && sl->hw[0] && m->pdt == SC_BF16) { /* the bf16 working copy the uploads read */
        uint16_t *w = (uint16_t *)sl->hw[0];
        SC__OMP(omp parallel for schedule(static))
        for (long long i = 0; i < (long long)n; i++) w[i] = sc_f32_to_bf16(buf[i]);
    }
    if (load) sl->keep_slots = 0; /* the slots' copies are stale */
    return SC_SUCCESS;
}

#ifdef SLIDECHECK_CUDA
/* ZeRO-1 on the GPU: a rank's state holds its chunk and the remainder of each bucket
   (sc__zero_state_offset); the save gathers every rank's chunks over the control channel. */
static sc_result sc__zero_state_io(sc_model *m, int which, float *buf, int load)
{
    const sc_config *c = &m->cfg;
    int L = c->num_layers, W = sc_dist_comm_world(m->mc.comm), r = sc_dist_comm_rank(m->mc.comm);
    int sb = m->mc.state_bf16 ? 2 : m->pb;
    SC_ASSERT(which < 2); /* ZeRO-1 on the GPU has no master weights */
    if (!m->opt_m) {
        size_t ns = sc__zero_state_offset(c, m->nparams, W, L + 2);
        if (!load) { memset(buf, 0, m->nparams * sizeof(float)); return SC_SUCCESS; }
        SC__TRY(sc__alloc_bytes(m, &m->opt_m, ns, sb, "adamw.m (ZeRO-1 shard)"));
        SC__TRY(sc__alloc_bytes(m, &m->opt_v, ns, sb, "adamw.v (ZeRO-1 shard)"));
        sc__memset0(m, m->opt_m, ns * (size_t)sb);
        sc__memset0(m, m->opt_v, ns * (size_t)sb);
    }
    char *d = (char *)(which == 0 ? m->opt_m : m->opt_v);
    for (int b = 0; b < L + 2; b++) {
        size_t off, nb;
        sc__bucket(c, m->nparams, b, &off, &nb);
        size_t ch = nb / (size_t)W, so = sc__zero_state_offset(c, m->nparams, W, b);
        size_t at[2] = {off + (size_t)r * ch, off + ch * W}, cnt[2] = {ch, nb - ch * W};
        for (int i = 0; i < 2; i++, so += ch) {
            if (load) SC__TRY(sc__upload_f32(m, d + so * (size_t)sb, sb, buf + at[i], cnt[i]));
            else SC__TRY(sc__download_f32(m, buf + at[i], d + so * (size_t)sb, sb, cnt[i]));
        }
        if (!load) SC__TRY(sc_dist_allgather_f32(m->mc.comm, buf + off, ch * (size_t)W));
    }
    return SC_SUCCESS;
}
#endif

/* The optimizer state's f32 arrays: which = 0 m, 1 v, 2 master; NULL where the model has none.
   For save, a host buffer of nparams floats is filled (every rank's part, gathered: under data
   parallel every rank calls it); for load, it is written back (each rank takes its part). */
static sc_result sc__opt_state_io(sc_model *m, int which, float *buf, int load)
{
    size_t n = m->nparams;
    if (m->sl) return sc__slide_state_io(m, which, buf, load);
#ifdef SLIDECHECK_CUDA
    if (m->zero_gpu) return sc__zero_state_io(m, which, buf, load);
#endif
    /* ZeRO-1 on the CPU backend: m and v cover this rank's part [lo, hi) */
    size_t lo = 0, hi = n;
    int zero = which < 2 && m->mc.zero && m->mc.optim == SC_OPTIM_ADAMW && sc_dist_comm_world(m->mc.comm) > 1 && !m->cu;
    if (zero) sc_dist_part(m->mc.comm, n, &lo, &hi);
    int sb = m->mc.state_bf16 ? 2 : (m->master ? 4 : m->pb);
    if (which < 2 && !m->opt_m) { /* before the first update: the state is zero */
        if (!load) { memset(buf, 0, n * sizeof(float)); return SC_SUCCESS; }
        SC__TRY(sc__alloc_bytes(m, &m->opt_m, hi - lo, sb, "adamw.m"));
        SC__TRY(sc__alloc_bytes(m, &m->opt_v, hi - lo, sb, "adamw.v"));
    }
    float *d = which == 0 ? m->opt_m : which == 1 ? m->opt_v : m->master;
    int es = which == 2 ? 4 : sb;
    if (!load) {
        SC__TRY(sc__download_f32(m, buf + lo, d, es, hi - lo));
        return zero ? sc_dist_allgather_f32(m->mc.comm, buf, n) : SC_SUCCESS;
    }
    SC__TRY(sc__upload_f32(m, d, es, buf + lo, hi - lo));
#ifdef SLIDECHECK_CUDA
    if (which == 2 && m->cu) { /* the working weights: the master's rounding, as after an update */
        sc_cuda_convert(m->cu, m->params, m->pdt, m->master, SC_F32, n);
        return sc_cuda_status(m->cu);
    }
#endif
    return SC_SUCCESS;
}

static sc_result sc__opt_state_check(const sc_model *m, const char *what)
{
    if (m->sl && m->params)
        return sc__fail(SC_ERROR_UNSUPPORTED, "%s: the optimizer state of slide_keep_head runs is not saved yet", what);
    return SC_SUCCESS;
}

SCDEF sc_result sc_model_save_optimizer(sc_model *m, const char *path)
{
    int root = sc_dist_comm_rank(m->mc.comm) == 0;
    if (root && !path) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_model_save_optimizer: no path (rank 0 writes it)");
    if (!path) path = "the optimizer state";
    SC__TRY(sc__opt_state_check(m, path));
    if (m->sl) sc__slide_drain(m);
    int adam = m->mc.optim == SC_OPTIM_ADAMW, master = m->master || (m->sl && m->sl->hpt == SC_F32 && m->pdt == SC_BF16);
    size_t n = m->nparams;
    float *buf = (float *)SC_MALLOC(sizeof(float) * n * (size_t)(2 * adam + master) + 1);
    if (!buf) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "%s: host malloc of the optimizer state failed", path);
    sc_st_entry e[3];
    int ne = 0;
    sc_result r = SC_SUCCESS;
    const char *names[3] = {"exp_avg", "exp_avg_sq", "master"};
    for (int w = 0; w < 3 && r == SC_SUCCESS; w++) {
        if ((w < 2 && !adam) || (w == 2 && !master)) continue;
        float *b = buf + (size_t)ne * n;
        r = sc__opt_state_io(m, w, b, 0);
        memset(&e[ne], 0, sizeof e[ne]);
        e[ne].name = names[w];
        e[ne].dtype = "F32";
        e[ne].ndim = 1;
        e[ne].shape[0] = (int64_t)n;
        e[ne].data = b;
        ne++;
    }
    char step[32], np[32];
    snprintf(step, sizeof step, "%d", m->t);
    snprintf(np, sizeof np, "%zu", n);
    const char *meta[] = {"format", "slidecheck-optimizer-1", "optim", adam ? "adamw" : "sgd", "step", step,
                          "nparams", np, "master", master ? "1" : "0", "state_bf16", m->mc.state_bf16 ? "1" : "0"};
    if (r == SC_SUCCESS && root) r = sc_safetensors_write(path, e, ne, meta, 6);
    SC_FREE(buf);
    return r;
}

SCDEF sc_result sc_model_load_optimizer(sc_model *m, const char *path)
{
    SC__TRY(sc__opt_state_check(m, path));
    if (m->sl) sc__slide_drain(m);
    sc_safetensors st;
    SC__TRY(sc_safetensors_open(&st, path));
    int adam = m->mc.optim == SC_OPTIM_ADAMW, master = m->master || (m->sl && m->sl->hpt == SC_F32 && m->pdt == SC_BF16);
    const char *f = sc_safetensors_meta(&st, "format"), *o = sc_safetensors_meta(&st, "optim");
    const char *sp = sc_safetensors_meta(&st, "step"), *np = sc_safetensors_meta(&st, "nparams");
    const char *ms = sc_safetensors_meta(&st, "master"), *sb = sc_safetensors_meta(&st, "state_bf16");
    char want[32];
    snprintf(want, sizeof want, "%zu", m->nparams);
    sc_result r = SC_SUCCESS;
    long step = sp ? strtol(sp, NULL, 10) : -1;
    if (!f || strcmp(f, "slidecheck-optimizer-1") || !o || !sp || !np || !ms || !sb || step < 0 || step > 2147483647L)
        r = sc__fail(SC_ERROR_FORMAT, "%s: not a slidecheck optimizer state (metadata missing)", path);
    else if (strcmp(o, adam ? "adamw" : "sgd"))
        r = sc__fail(SC_ERROR_SHAPE, "%s: saved for %s, the model trains with %s", path, o, adam ? "adamw" : "sgd");
    else if (strcmp(np, want))
        r = sc__fail(SC_ERROR_SHAPE, "%s: %s parameters, the model has %s", path, np, want);
    else if (strcmp(ms, master ? "1" : "0") || strcmp(sb, m->mc.state_bf16 ? "1" : "0"))
        r = sc__fail(SC_ERROR_SHAPE, "%s: master weights %s / bf16 state %s, the model has %d / %d", path, ms, sb, master,
                     m->mc.state_bf16 != 0);
    float *buf = r == SC_SUCCESS ? (float *)SC_MALLOC(sizeof(float) * m->nparams + 1) : NULL;
    if (r == SC_SUCCESS && !buf) r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "%s: host malloc failed", path);
    const char *names[3] = {"exp_avg", "exp_avg_sq", "master"};
    int64_t shape[1] = {(int64_t)m->nparams};
    /* every tensor checked (as sc_safetensors_read_f32 checks it) before any is read: a refused file
       leaves the state as it was (the header was checked against the file's size at open; only an
       I/O error while reading can still stop it part-way) */
    for (int w = 0; w < 3 && r == SC_SUCCESS; w++) {
        const sc_st_tensor *t;
        if ((w < 2 && adam) || (w == 2 && master))
            r = sc__st_prepare(&st, names[w], buf, 1, shape, "F32 BF16 F16", "I32 I64", &t);
    }
    for (int w = 0; w < 3 && r == SC_SUCCESS; w++) {
        if ((w < 2 && !adam) || (w == 2 && !master)) continue;
        r = sc_safetensors_read_f32(&st, names[w], buf, 1, shape); /* its errors name the file */
        if (r == SC_SUCCESS) r = sc__opt_state_io(m, w, buf, 1);
    }
    SC_FREE(buf);
    sc_safetensors_close(&st);
    if (r == SC_SUCCESS) m->t = (int)step;
    return r;
}

SCDEF sc_slide_info sc_model_slide_info(const sc_model *m)
{
    sc_slide_info s;
    memset(&s, 0, sizeof s);
    if (!m->sl) return s;
    s.h2d_bytes = m->sl->h2d;
    s.d2h_bytes = m->sl->d2h;
    s.h2d_first_bytes = m->sl->h2d_first;
    s.host_update_params = m->sl->host_params;
    s.pinned_bytes = m->sl->pinned_bytes + (m->cu ? m->sl->sb[0].stage_bytes + m->sl->sb[1].stage_bytes : 0);
    s.host_bytes = m->sl->host_bytes;
    SC__LOCK(m->sl); /* host updates may still run (and add to opt_ms) */
    s.opt_ms = m->sl->opt_ms[m->sl->nstep & 1];
    SC__UNLOCK(m->sl);
    s.opt_wait_ms = m->sl->wait_ms;
    sc_model_config mc = m->mc;
    mc.device = m->cu ? SC_DEVICE_CUDA : SC_DEVICE_CPU;
    s.window_bytes = sc_slide_window_bytes(&m->cfg, &mc, NULL);
    return s;
}
/* ==========================================================================================
   Checkpoint planner (budget:SIZE): closed-form cost model and an exact Pareto DP
   ========================================================================================== */

/* The byte sizes of the cost model; every layer of a config has the same sizes. */
typedef struct sc__pl_sizes {
    size_t S[SC_KEEP_COUNT]; /* saved bytes of one layer kept with each sc_keep mode */
    size_t X, W, Hd;
} sc__pl_sizes;

static sc__pl_sizes sc__pl_sizes_of(const sc_config *c, int B, int T, int ab)
{
    sc__pl_sizes z;
    size_t N = (size_t)B * T, C = (size_t)c->hidden_size, I = (size_t)c->intermediate_size;
    size_t H = (size_t)c->num_heads, KV = (size_t)c->num_kv_heads, D = (size_t)c->head_dim;
    size_t Q = (H + 2 * KV) * D, K = (H + KV) * D, V = (size_t)c->vocab_size;
    for (int k = 0; k < SC_KEEP_COUNT; k++) {
        unsigned mask = sc__keep_mask(k);
        z.S[k] = 0;
        for (int a = 0; a < SC__A_COUNT; a++)
            if (mask & (1u << a)) z.S[k] += sc__act_bytes(c, a, B, T, ab);
    }
    z.X = N * C * (size_t)ab;
    z.W = (N * (2 * I > Q + K ? 2 * I : Q + K) + N * (I > H * D ? I : H * D) + N * C) * (size_t)ab +
          sc_attention_ds_bytes(B, T, (int)H, (int)D, ab);
    z.Hd = 3 * z.X + 4 * N + (N < 1024 ? N : 1024) * V * (size_t)ab;
    return z;
}

#define SC__PL_SEG SC_KEEP_COUNT /* a unit's kind: an sc_keep mode, or this: a recomputed segment */

static double sc__pl_unit_time(const sc_layer_cost *costs, int kind, int s, int e)
{
    double t = 0.0;
    if (!costs) return 0.0;
    if (kind == SC__PL_SEG)
        for (int j = s; j < e; j++) t += costs[j].fwd_s;
    else if (kind == SC_KEEP_SELECTIVE) t = costs[s].rsel_s;
    else if (kind == SC_KEEP_SELECTIVE_MLP) t = costs[s].rmlp_s;
    else if (kind == SC_KEEP_SELECTIVE_ATTN) t = costs[s].rattn_s;
    else if (kind == SC_KEEP_SELECTIVE_PROJ) t = costs[s].rproj_s;
    return t;
}

static double sc__gib(size_t b) { return (double)b / 1073741824.0; }

static void sc__fmt_size(char *buf, size_t cap, size_t b)
{
    if (b && b % 1073741824u == 0) snprintf(buf, cap, "%zuGiB", b / 1073741824u);
    else if (b && b % 1048576u == 0) snprintf(buf, cap, "%zuMiB", b / 1048576u);
    else snprintf(buf, cap, "%zu", b);
}

SCDEF void sc_plan_estimate_costs(const sc_config *c, int B, int T, int act_bytes, sc_layer_cost *costs)
{
    const double peak = 700e12, bw = 3.0e12;
    double N = (double)B * T, C = c->hidden_size, I = c->intermediate_size, H = c->num_heads;
    double KV = c->num_kv_heads, D = c->head_dim, ab = act_bytes, Q = (H + 2 * KV) * D, K = (H + KV) * D;
    /* GEMM out[N,OC] = inp[N,IC] @ w[OC,IC]^T: flops, and bytes of inp + w + out */
#define SC__GEMM_F(IC, OC) (2.0 * N * (IC) * (OC))
#define SC__GEMM_B(IC, OC) ((N * (IC) + (OC) * (IC) + N * (OC)) * ab)
    double gemm_f = SC__GEMM_F(C, Q) + SC__GEMM_F(H * D, C) + SC__GEMM_F(C, 2 * I) + SC__GEMM_F(I, C);
    double gemm_b = SC__GEMM_B(C, Q) + SC__GEMM_B(H * D, C) + SC__GEMM_B(C, 2 * I) + SC__GEMM_B(I, C);
    /* causal attention: QK^T and PV, 2*B*H*T*T*D flops each, halved for causality */
    double attn_f = 2.0 * B * H * (double)T * T * D;
    double attn_b = (N * K + N * KV * D + N * H * D) * ab + N * H * 4;
    /* elementwise ops, bytes read + written */
    double norm = 2 * N * C * ab + 4 * N;                       /* one RMSNorm */
    double qkrope = 2 * N * K * ab + (c->qk_norm ? 4 * N * (H + KV) : 0);
    double swiglu = 3 * N * I * ab;
    double adds = 2 * 3 * N * C * ab;                           /* two residual adds */
    double elem = 2 * norm + qkrope + swiglu;
    for (int l = 0; l < c->num_layers; l++) {
        costs[l].fwd_s = (gemm_f + attn_f) / peak + (gemm_b + attn_b + elem + adds) / bw;
        costs[l].rsel_s = elem / bw;
        costs[l].rmlp_s = SC__GEMM_F(C, 2 * I) / peak + (norm + SC__GEMM_B(C, 2 * I) + swiglu) / bw;
        costs[l].rattn_s = (SC__GEMM_F(C, Q) + attn_f) / peak + (SC__GEMM_B(C, Q) + attn_b + elem) / bw;
        costs[l].rproj_s = (SC__GEMM_F(C, Q) + SC__GEMM_F(H * D, C)) / peak +
                           (SC__GEMM_B(C, Q) + SC__GEMM_B(H * D, C) + elem + adds / 2) / bw;
    }
#undef SC__GEMM_F
#undef SC__GEMM_B
}

SCDEF size_t sc_plan_fixed_bytes(const sc_config *cfg, int optim_adamw, int param_bytes, int grad_bytes)
{
    size_t n = sc_config_num_params(cfg);
    return n * (size_t)(param_bytes + grad_bytes + (optim_adamw ? 2 * param_bytes : 0));
}

static sc_result sc__pl_check(const sc_config *cfg, int B, int T, int act_bytes)
{
    if (!cfg) return sc__fail(SC_ERROR_INVALID_ARGS, "planner: NULL config");
    SC__TRY(sc_config_validate(cfg));
    if (cfg->num_layers > SC_MAX_LAYERS)
        return sc__fail(SC_ERROR_INVALID_ARGS, "planner: %d layers (at most %d supported)", cfg->num_layers,
                        SC_MAX_LAYERS);
    if (B < 1 || T < 1 || act_bytes < 1)
        return sc__fail(SC_ERROR_INVALID_ARGS, "planner: need B, T, act_bytes >= 1 (got %d, %d, %d)", B, T, act_bytes);
    return SC_SUCCESS;
}

SCDEF sc_result sc_plan_evaluate(sc_plan_report *rep, const sc_plan *plan, const sc_config *cfg, int B, int T,
                                 int act_bytes, size_t fixed_bytes, const sc_layer_cost *costs)
{
    SC__TRY(sc__pl_check(cfg, B, T, act_bytes));
    int L = cfg->num_layers;
    if (!rep || !plan || plan->num_layers != L)
        return sc__fail(SC_ERROR_INVALID_ARGS, "sc_plan_evaluate: NULL argument or plan for the wrong layer count");
    for (int l = 0; l < L; l++) {
        int s = plan->seg[l];
        if (s >= 0 ? (s != l && (l == 0 || plan->seg[l - 1] != s)) : plan->keep[l] >= SC_KEEP_COUNT)
            return sc__fail(SC_ERROR_INVALID_ARGS, "sc_plan_evaluate: layer %d has a bad keep/seg entry", l);
    }
    sc__pl_sizes z = sc__pl_sizes_of(cfg, B, T, act_bytes);
    memset(rep, 0, sizeof *rep);
    rep->fixed_bytes = fixed_bytes;
    rep->num_layers = L;
    size_t P = 0, bwd = 0;
    for (int s = 0; s < L;) {
        int kind = plan->seg[s] >= 0 ? SC__PL_SEG : plan->keep[s];
        int e = kind == SC__PL_SEG ? sc__seg_end(plan, s) : s + 1;
        size_t need = P + (size_t)(e - s) * z.S[0] + z.W + z.X;
        if (need > bwd || s == 0) { bwd = need; rep->bwd_peak_unit = s; }
        for (int j = s; j < e; j++) {
            sc_plan_row *r = &rep->rows[j];
            r->unit_start = s;
            r->unit_end = e;
            r->segment = kind == SC__PL_SEG;
            r->saved_bytes = kind == SC__PL_SEG ? (j == s ? z.X : 0) : z.S[kind];
            r->recompute_s = sc__pl_unit_time(costs, kind, kind == SC__PL_SEG ? j : s, kind == SC__PL_SEG ? j + 1 : e);
            P += r->saved_bytes;
            rep->recompute_s += r->recompute_s;
            if (costs) rep->step_estimate_s += 3.0 * costs[j].fwd_s;
        }
        s = e;
    }
    rep->saved_bytes = P + z.X;
    rep->fwd_end_bytes = fixed_bytes + P + z.X + z.Hd;
    rep->bwd_peak_bytes = fixed_bytes + bwd;
    rep->peak_bytes = rep->fwd_end_bytes > rep->bwd_peak_bytes ? rep->fwd_end_bytes : rep->bwd_peak_bytes;
    rep->recompute_frac = rep->step_estimate_s > 0 ? rep->recompute_s / rep->step_estimate_s : 0.0;
    return SC_SUCCESS;
}

/* A DP state at a unit boundary: saved bytes so far P, worst backward need so far M (without
   F), recompute time t, and the unit that led here (layers [start, end), kind: an sc_keep mode
   or SC__PL_SEG) with the index of the state it came from. */
typedef struct sc__pl_state {
    size_t P, M;
    double t;
    int prev;
    short start, end;
    unsigned char kind;
} sc__pl_state;

typedef struct sc__pl_vec {
    sc__pl_state *v;
    size_t n, cap;
} sc__pl_vec;

static int sc__pl_push(sc__pl_vec *a, sc__pl_state s)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 256;
        sc__pl_state *v = (sc__pl_state *)SC_REALLOC(a->v, cap * sizeof *v);
        if (!v) return 0;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = s;
    return 1;
}

static int sc__pl_cmp(const void *pa, const void *pb)
{
    const sc__pl_state *a = (const sc__pl_state *)pa, *b = (const sc__pl_state *)pb;
    if (a->P != b->P) return a->P < b->P ? -1 : 1;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    if (a->M != b->M) return a->M < b->M ? -1 : 1;
    return 0;
}

static int sc__pl_cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

/* Keep the states of cand[from..] that no other state dominates in (P, t, M), in place:
   in (P, t, M) order, a state is dominated iff an earlier one has t and M no larger, found
   with a Fenwick tree of the least M over ranks of t. */
static int sc__pl_prune(sc__pl_vec *cand, size_t from)
{
    sc__pl_state *c = cand->v + from;
    size_t n = cand->n - from, k = 0, m = 0;
    double *ts = (double *)SC_MALLOC((n + 1) * sizeof *ts);
    size_t *fw = (size_t *)SC_MALLOC((n + 1) * sizeof *fw);
    if (!ts || !fw) { SC_FREE(ts); SC_FREE(fw); return 0; }
    qsort(c, n, sizeof *c, sc__pl_cmp);
    for (size_t i = 0; i < n; i++) ts[i] = c[i].t;
    qsort(ts, n, sizeof *ts, sc__pl_cmp_double);
    for (size_t i = 0; i < n; i++)
        if (!m || ts[m - 1] != ts[i]) ts[m++] = ts[i];
    for (size_t i = 0; i <= m; i++) fw[i] = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t lo = 0, hi = m, best = (size_t)-1;
        while (lo < hi) { /* rank (1-based) of c[i].t among the distinct times */
            size_t mid = (lo + hi) / 2;
            if (ts[mid] < c[i].t) lo = mid + 1; else hi = mid;
        }
        for (size_t r = lo + 1; r > 0; r -= r & (~r + 1)) best = fw[r] < best ? fw[r] : best;
        if (best <= c[i].M) continue;
        for (size_t r = lo + 1; r <= m; r += r & (~r + 1)) fw[r] = c[i].M < fw[r] ? c[i].M : fw[r];
        c[k++] = c[i];
    }
    cand->n = from + k;
    SC_FREE(ts);
    SC_FREE(fw);
    return 1;
}

/* Run the DP; *best is the index in st of the chosen final state (least t, then least peak),
   or -1 if no plan fits. With track_m == 0 the states ignore M (a 2-D (P, t) front: exact for
   the least time, not for the tie-break); with costs == NULL every t is 0. */
static sc_result sc__pl_dp(sc__pl_vec *st, int *best, const sc__pl_sizes *z, int L, size_t F,
                           const sc_layer_cost *costs, int track_m, size_t budget, double tmax)
{
    int beg[SC_MAX_LAYERS + 2];
    sc__pl_state s0 = {0, 0, 0.0, -1, 0, 0, 0};
    *best = -1;
    st->n = 0;
    if (!sc__pl_push(st, s0)) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "planner: host malloc failed");
    beg[0] = 0;
    beg[1] = 1;
    for (int j = 1; j <= L; j++) {
        size_t from = st->n;
        double seg_t = 0.0;
        for (int i = j - 1; i >= 0; i--) {
            seg_t += costs ? costs[i].fwd_s : 0.0;
            for (int si = beg[i]; si < beg[i + 1]; si++) {
                sc__pl_state p = st->v[si], q;
                for (int kind = i == j - 1 ? 0 : SC__PL_SEG; kind <= SC__PL_SEG; kind++) {
                    size_t need = p.P + (size_t)(j - i) * z->S[0] + z->W + z->X;
                    q.P = p.P + (kind == SC__PL_SEG ? z->X : z->S[kind]);
                    if (F + need > budget || F + q.P + z->X + z->Hd > budget) continue;
                    q.M = !track_m ? 0 : need > p.M ? need : p.M;
                    q.t = p.t + (kind == SC__PL_SEG ? seg_t : sc__pl_unit_time(costs, kind, i, j));
                    if (q.t > tmax) continue; /* times only grow */
                    q.prev = si;
                    q.start = (short)i;
                    q.end = (short)j;
                    q.kind = (unsigned char)kind;
                    if (!sc__pl_push(st, q)) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "planner: host malloc failed");
                }
            }
        }
        if (!sc__pl_prune(st, from)) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "planner: host malloc failed");
        beg[j + 1] = (int)st->n;
    }
    double tbest = 0.0;
    size_t pbest = 0;
    for (int si = beg[L]; si < beg[L + 1]; si++) {
        const sc__pl_state *s = &st->v[si];
        size_t peak = F + (s->P + z->X + z->Hd > s->M ? s->P + z->X + z->Hd : s->M);
        int better = *best < 0 || s->t < tbest * (1.0 - 1e-12) ||
                     (s->t <= tbest * (1.0 + 1e-12) && peak < pbest);
        if (better) { *best = si; tbest = s->t; pbest = peak; }
    }
    return SC_SUCCESS;
}

/* The plan of least time under `budget`, ties to the least peak: the least time t* from a 2-D
   (P, t) DP, then the exact 3-D (P, t, M) DP over the states whose time stays within t*. */
static sc_result sc__pl_solve(sc__pl_vec *st, int *best, const sc__pl_sizes *z, int L, size_t F,
                              const sc_layer_cost *costs, size_t budget)
{
    SC__TRY(sc__pl_dp(st, best, z, L, F, costs, 0, budget, HUGE_VAL));
    if (*best < 0) return SC_SUCCESS;
    double tstar = st->v[*best].t;
    return sc__pl_dp(st, best, z, L, F, costs, 1, budget, tstar + fabs(tstar) * 1e-12);
}

SCDEF sc_result sc_planner_plan(sc_plan *out, sc_plan_report *rep, const sc_config *cfg, int B, int T,
                                int act_bytes, size_t fixed_bytes, const sc_layer_cost *costs, size_t budget)
{
    SC__TRY(sc__pl_check(cfg, B, T, act_bytes));
    if (!out) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_planner_plan: NULL plan");
    int L = cfg->num_layers;
    sc_layer_cost est[SC_MAX_LAYERS];
    if (!costs) sc_plan_estimate_costs(cfg, B, T, act_bytes, est), costs = est;
    for (int l = 0; l < L; l++)
        if (!(costs[l].fwd_s >= 0 && costs[l].rsel_s >= 0 && costs[l].rmlp_s >= 0 && costs[l].rattn_s >= 0 &&
              costs[l].rproj_s >= 0) ||
            costs[l].fwd_s + costs[l].rsel_s + costs[l].rmlp_s + costs[l].rattn_s + costs[l].rproj_s > 1e30)
            return sc__fail(SC_ERROR_INVALID_ARGS, "planner: layer %d has a negative or non-finite cost", l);
    sc__pl_sizes z = sc__pl_sizes_of(cfg, B, T, act_bytes);
    sc__pl_vec st = {NULL, 0, 0};
    int best = -1, minb;
    size_t min_budget = 0;
    /* the smallest feasible budget: all times 0, so the DP keeps the least peak */
    sc_result r = sc__pl_dp(&st, &minb, &z, L, fixed_bytes, NULL, 1, (size_t)-1, HUGE_VAL);
    if (r == SC_SUCCESS) {
        const sc__pl_state *s = &st.v[minb];
        min_budget = fixed_bytes + (s->P + z.X + z.Hd > s->M ? s->P + z.X + z.Hd : s->M);
        if (budget >= min_budget) r = sc__pl_solve(&st, &best, &z, L, fixed_bytes, costs, budget);
    }
    if (rep) {
        memset(rep, 0, sizeof *rep);
        rep->min_budget = min_budget;
        rep->budget = budget;
    }
    if (r == SC_SUCCESS && best < 0) {
        if (budget < fixed_bytes)
            r = sc__fail(SC_ERROR_INVALID_ARGS,
                         "budget %.4g GiB is below the fixed memory %.4g GiB (weights, grads, optimizer state); "
                         "the smallest feasible budget is %.4g GiB (%zu bytes)",
                         sc__gib(budget), sc__gib(fixed_bytes), sc__gib(min_budget), min_budget);
        else
            r = sc__fail(SC_ERROR_INVALID_ARGS,
                         "budget %.4g GiB does not fit B=%d x T=%d with any checkpoint plan: the smallest feasible "
                         "budget is %.4g GiB (%zu bytes; fixed memory %.4g GiB)",
                         sc__gib(budget), B, T, sc__gib(min_budget), min_budget, sc__gib(fixed_bytes));
    }
    if (r == SC_SUCCESS) {
        char sz[48];
        memset(out, 0, sizeof *out);
        out->num_layers = L;
        for (int si = best; st.v[si].prev >= 0; si = st.v[si].prev) {
            const sc__pl_state *s = &st.v[si];
            for (int l = s->start; l < s->end; l++) {
                out->keep[l] = (unsigned char)(s->kind == SC__PL_SEG ? (int)SC_KEEP_ALL : s->kind);
                out->seg[l] = (short)(s->kind == SC__PL_SEG ? s->start : -1);
            }
        }
        sc__fmt_size(sz, sizeof sz, budget);
        snprintf(out->name, sizeof out->name, "budget:%s", sz);
        if (rep && (r = sc_plan_evaluate(rep, out, cfg, B, T, act_bytes, fixed_bytes, costs)) == SC_SUCCESS) {
            rep->min_budget = min_budget;
            rep->budget = budget;
        }
    }
    SC_FREE(st.v);
    return r;
}

static void sc__cat(char *buf, size_t cap, size_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf && *n < cap ? buf + *n : NULL, buf && *n < cap ? cap - *n : 0, fmt, ap);
    va_end(ap);
    if (k > 0) *n += (size_t)k;
}

SCDEF int sc_plan_report_table(const sc_plan_report *rep, const sc_plan *plan, char *buf, size_t cap)
{
    size_t n = 0;
    const double MiB = 1048576.0;
    if (buf && cap) buf[0] = '\0';
    if (!rep || !plan) return 0;
    sc__cat(buf, cap, &n, "plan %s\n%5s  %-7s  %-26s %10s %13s\n", plan->name, "layer", "unit", "mode", "saved MiB",
            "recompute ms");
    for (int l = 0; l < rep->num_layers; l++) {
        const sc_plan_row *r = &rep->rows[l];
        char unit[24], mode[48];
        if (r->unit_end - r->unit_start > 1) snprintf(unit, sizeof unit, "%d-%d", r->unit_start, r->unit_end - 1);
        else snprintf(unit, sizeof unit, "%d", r->unit_start);
        if (r->segment) snprintf(mode, sizeof mode, "recompute (segment %s)", unit);
        else snprintf(mode, sizeof mode, "%s", sc_keep_name(plan->keep[l]));
        sc__cat(buf, cap, &n, "%5d  %-7s  %-26s %10.1f %13.3f\n", l, unit, mode, (double)r->saved_bytes / MiB,
                r->recompute_s * 1e3);
    }
    if (rep->budget) sc__cat(buf, cap, &n, "budget               %9.3f GiB\n", sc__gib(rep->budget));
    sc__cat(buf, cap, &n, "fixed                %9.3f GiB (weights, grads, optimizer state)\n",
            sc__gib(rep->fixed_bytes));
    sc__cat(buf, cap, &n, "predicted peak       %9.3f GiB (end of forward %.3f GiB, backward %.3f GiB at layer %d)\n",
            sc__gib(rep->peak_bytes), sc__gib(rep->fwd_end_bytes), sc__gib(rep->bwd_peak_bytes), rep->bwd_peak_unit);
    if (rep->min_budget)
        sc__cat(buf, cap, &n, "smallest feasible    %9.3f GiB\n", sc__gib(rep->min_budget));
    sc__cat(buf, cap, &n, "saved activations    %9.3f GiB\n", sc__gib(rep->saved_bytes));
    sc__cat(buf, cap, &n, "predicted recompute  %9.3f ms per step", rep->recompute_s * 1e3);
    if (rep->step_estimate_s > 0)
        sc__cat(buf, cap, &n, " (%.1f%% of a 3 x forward step, %.3f ms)", 100.0 * rep->recompute_frac,
                rep->step_estimate_s * 1e3);
    sc__cat(buf, cap, &n, "\n");
    return (int)n;
}

SCDEF int sc_plan_is_budget(const char *policy, size_t *budget)
{
    size_t b = 0;
    if (!policy || strncmp(policy, "budget:", 7)) return 0;
    if (sc_parse_size(policy + 7, &b) != 0) {
        sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint policy '%s': budget:SIZE needs a size like 24GiB or 512MiB",
                 policy);
        return -1;
    }
    if (b == 0) {
        sc__fail(SC_ERROR_INVALID_ARGS, "checkpoint policy '%s': the budget must be positive", policy);
        return -1;
    }
    if (budget) *budget = b;
    return 1;
}

/* ------------------------------------------------------------------------------------------
   sc_plan_auto: the model of memory and time is the note above its declaration.
   ------------------------------------------------------------------------------------------ */

static double sc__auto_now(void) { return (double)sc_tracer_now_ns() * 1e-9; }

static size_t sc__auto_clamp(size_t x, size_t lo, size_t hi) { return x < lo ? lo : x > hi ? hi : x; }

/* The copy bandwidth of `nb` bytes each way, and how much the two directions slow each other
   (duplex: 0 when both at once take the longer one's time, 1 when they take the sum): each timed
   alone and both at once, the best of 3. Pinned host memory and the copy streams on the GPU;
   memcpy on the CPU backend, where slide's copies run on the compute's cores (duplex 1). */
static sc_result sc__auto_copy_rates(sc_auto_profile *pr, sc_model *m, size_t nb)
{
    double t[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL}; /* h2d, d2h, both */
    sc_result r = SC_SUCCESS;
    pr->duplex = 1.0;
#ifdef SLIDECHECK_CUDA
    if (m->cu) {
        void *h = NULL, *d = NULL;
        if (!(h = sc_cuda_host_alloc(m->cu, 2 * nb)))
            r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "sc_plan_auto: pinned host memory for the copy profile");
        else r = sc_allocator_alloc(&m->alloc, &d, 2 * nb, 0, "auto profile (copies)");
        for (int rep = 0; rep < 3 && r == SC_SUCCESS; rep++)
            for (int kind = 0; kind < 3 && r == SC_SUCCESS; kind++) {
                double t0 = sc__auto_now();
                if (kind != 1) sc_cuda_copy_async(m->cu, 1, d, h, nb);
                if (kind != 0) sc_cuda_copy_async(m->cu, 2, (char *)h + nb, (char *)d + nb, nb);
                r = sc_cuda_synchronize(m->cu);
                double dt = sc__auto_now() - t0;
                t[kind] = dt < t[kind] ? dt : t[kind];
            }
        if (d) sc_allocator_free(&m->alloc, d);
        if (h) sc_cuda_host_free(m->cu, h);
        double lo = t[0] < t[1] ? t[0] : t[1], hi = t[0] < t[1] ? t[1] : t[0];
        double f = lo > 0 && lo < HUGE_VAL ? (t[2] - hi) / lo : 1.0;
        pr->duplex = f < 0 ? 0.0 : f > 1 ? 1.0 : f;
    } else
#endif
    {
        (void)m;
        char *a = (char *)malloc(nb), *b = (char *)malloc(nb);
        if (!a || !b) r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "sc_plan_auto: host memory for the copy profile");
        else memset(a, 1, nb), memset(b, 2, nb);
        for (int rep = 0; rep < 3 && r == SC_SUCCESS; rep++)
            for (int kind = 0; kind < 2; kind++) {
                double t0 = sc__auto_now();
                memcpy(kind ? a : b, kind ? b : a, nb);
                double dt = sc__auto_now() - t0;
                t[kind] = dt < t[kind] ? dt : t[kind];
            }
        free(a);
        free(b);
    }
    pr->h2d_Bps = t[0] > 0 && t[0] < HUGE_VAL ? (double)nb / t[0] : 1e12;
    pr->d2h_Bps = t[1] > 0 && t[1] < HUGE_VAL ? (double)nb / t[1] : 1e12;
    return r;
}

#ifdef SLIDECHECK_CUDA
/* The host optimizer's rate while both copy directions run, as in slide's backward (layers going
   up again, gradients coming down): the update of the profiled model's layers, timed while
   uploads and downloads queued ahead of it last about three times its expected length. On an H100
   host AdamW's update ran at 0.65x its rate alone beside both, 0.95x beside one. The best of 2. */
static sc_result sc__auto_host_opt_busy(sc_auto_profile *pr, sc_model *s)
{
    const sc_config *c = &s->cfg;
    size_t n = sc__layer_numel(c) * (size_t)c->num_layers, nb = (size_t)64 << 20;
    double bw = pr->h2d_Bps < pr->d2h_Bps ? pr->h2d_Bps : pr->d2h_Bps, best = 0.0;
    int reps = (int)(3.0 * ((double)n / pr->opt_pps) * bw / (double)nb) + 1;
    void *h = NULL, *d = NULL;
    sc_result r = SC_SUCCESS;
    if (!(h = sc_cuda_host_alloc(s->cu, 2 * nb)))
        r = sc__fail(SC_ERROR_OUT_OF_MEMORY, "sc_plan_auto: pinned host memory for the copy profile");
    else r = sc_allocator_alloc(&s->alloc, &d, 2 * nb, 0, "auto profile (copies)");
    if (r == SC_SUCCESS) memset(h, 0, 2 * nb);
    for (int rep = 0; rep < 2 && r == SC_SUCCESS; rep++) {
        for (int i = 0; i < reps; i++) {
            sc_cuda_copy_async(s->cu, 1, d, h, nb);
            sc_cuda_copy_async(s->cu, 2, (char *)h + nb, (char *)d + nb, nb);
        }
        double t0 = sc__auto_now();
        sc__slide_update(s, &s->sl->k, sc_config_layer_base(c, 0), n, sc__slide_threads(s), 0);
        double t1 = sc__auto_now();
        r = sc_cuda_synchronize(s->cu);
        /* counted only where the copies outlasted the update */
        if (r == SC_SUCCESS && sc__auto_now() - t1 > 0.1 * (t1 - t0) && (double)n / (t1 - t0) > best)
            best = (double)n / (t1 - t0);
    }
    if (d) sc_allocator_free(&s->alloc, d);
    if (h) sc_cuda_host_free(s->cu, h);
    pr->opt_busy_pps = best > 0 && best < pr->opt_pps ? best : pr->opt_pps;
    return r;
}
#endif

/* The host optimizer's seconds in one slide step of `pc` (the median of steps 2-4, over the
   tasks' own spans: sc_slide_info's opt_ms) and the parameters it updated. prefetch 1, every
   layer streamed, the head kept on the device or not. `keep_s`: where non-NULL, the model stays
   for the caller (the busy rate below runs on it). */
static sc_result sc__auto_slide_opt(double *opt_s, size_t *params, sc_model **keep_s, const sc_config *pc,
                                    const sc_model_config *pm, int keep_head, const int32_t *ids, int B, int T,
                                    int threads)
{
    sc_model_config sm = *pm;
    sm.mode = SC_MODE_SLIDE;
    sm.slide_prefetch = 1, sm.slide_cpu_threads = threads, sm.slide_keep_head = keep_head;
    sc_model *s = NULL;
    sc_result r = sc_model_create(&s, pc, &sm, NULL);
    sc_plan none;
    sc_plan_parse(&none, "none", pc->num_layers);
    double t[3] = {0.0, 0.0, 0.0};
    *params = 0;
    for (int st = 0; st < 4 && r == SC_SUCCESS; st++) {
        float loss = 0.0f;
        r = sc_model_step(s, &none, ids, 1, B, T, 1, &loss);
        if (r == SC_SUCCESS) r = sc_model_sync(s);
        sc_slide_info si = sc_model_slide_info(s);
        if (st > 0) t[st - 1] = si.opt_ms * 1e-3;
        *params = si.host_update_params;
    }
    /* the median of three */
    double lo = t[0] < t[1] ? t[0] : t[1], hi = t[0] < t[1] ? t[1] : t[0];
    *opt_s = t[2] < lo ? lo : t[2] > hi ? hi : t[2];
    if (keep_s && r == SC_SUCCESS) *keep_s = s;
    else if (s) sc_model_destroy(s);
    return r;
}

/* The host optimizer as slide runs it (GPU), timed inside slide steps, beside their copies and
   the other host threads, which an optimizer timed alone does not see (on an H100 host one timed
   alone ran 1.3x the rate slide's steps got):
   - the layers' rate: a copy of the model with up to 4 layers, all streamed, the head kept on the
     device, so that every host task is a layer's update with the step's copies around it, as in
     the steps auto plans under most caps;
   - a streamed head's time: the profiled 2-layer copy with the head streamed too, less its layers
     at that rate. The head's tasks are not only an update: the host sums the embedding's
     gradient rows and takes the LM head's rows as they land. Folded into one rate with the
     layers', they made it 10-30% lower than the planned steps (head kept) reached on three H100
     hosts, and every prediction under 16 GiB 1.11-1.27x too long.
   On the CPU backend slide's host optimizer is the resident update on the same cores: the
   profile's own rate (pr->dopt_pps), every part one after the other (pr->serial). */
static sc_result sc__auto_host_opt_rate(sc_auto_profile *pr, const sc_config *cfg, const sc_config *pc,
                                        const sc_model_config *pm, const int32_t *ids, int B, int T, int threads)
{
    if (pm->device != SC_DEVICE_CUDA) {
        pr->serial = 1;
        pr->opt_pps = pr->opt_busy_pps = pr->dopt_pps;
        return SC_SUCCESS;
    }
    sc_config lc = *cfg;
    lc.num_layers = cfg->num_layers < 4 ? cfg->num_layers : 4;
    double s_lay = 0.0, s_all = 0.0;
    size_t n_lay = 0, n_all = 0;
    sc_model *s = NULL;
    sc_result r = sc__auto_slide_opt(&s_lay, &n_lay, &s, &lc, pm, 1, ids, B, T, threads);
    pr->opt_pps = r == SC_SUCCESS && s_lay > 0 && n_lay > 0 ? (double)n_lay / s_lay : 1e12;
    pr->opt_busy_pps = pr->opt_pps;
#ifdef SLIDECHECK_CUDA
    if (r == SC_SUCCESS && s && s->cu && s_lay > 0) r = sc__auto_host_opt_busy(pr, s);
#endif
    if (s) sc_model_destroy(s);
    if (r == SC_SUCCESS) r = sc__auto_slide_opt(&s_all, &n_all, NULL, pc, pm, 0, ids, B, T, threads);
    if (r == SC_SUCCESS) {
        double lay = (double)(sc__layer_numel(pc) * (size_t)pc->num_layers) / pr->opt_pps;
        pr->head_opt_s = s_all > lay ? s_all - lay : 0.0;
    }
    return r;
}

/* The profile: a copy of the model with ac->profile_layers layers on the caller's device,
   resident, uncapped and eager (as slide's steps are). */
static sc_result sc__auto_profile(sc_auto_profile *pr, const sc_config *cfg, const sc_model_config *mc,
                                  const sc_plan_auto_config *ac, int threads)
{
    int L = cfg->num_layers, Lp = ac->profile_layers > 0 ? ac->profile_layers : 2, B = ac->B, T = ac->T;
    Lp = Lp < L ? Lp : L;
    sc_config pc = *cfg;
    pc.num_layers = Lp;
    sc_model_config pm = *mc;
    pm.mode = SC_MODE_RESIDENT;
    pm.mem_cap = 0, pm.comm = NULL, pm.zero = 0, pm.keep_logits = 0, pm.verbose = 0, pm.clip_grad_norm = 0.0f;
    pm.cuda_graph = SC_CUDA_GRAPH_OFF;
    pm.slide_prefetch = pm.slide_cpu_threads = pm.slide_dpu = pm.slide_keep_head = 0;
    pm.slide_device_update = pm.slide_head_once = 0;
    memset(pm.slide_device_layers, 0, sizeof pm.slide_device_layers);
    memset(pr, 0, sizeof *pr);
    int32_t *own = NULL;
    const int32_t *ids = ac->ids;
    if (!ids) {
        own = (int32_t *)malloc(sizeof(int32_t) * (size_t)B * (size_t)T);
        if (!own) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "sc_plan_auto: host memory");
        for (size_t i = 0; i < (size_t)B * (size_t)T; i++) own[i] = (int32_t)((i * 7919 + 13) % (size_t)cfg->vocab_size);
        ids = own;
    }
    sc_layer_cost costs[SC_MAX_LAYERS];
    memset(costs, 0, sizeof costs);
    sc_model *m = NULL;
    sc_result r = sc_model_create(&m, &pc, &pm, NULL);
    if (r == SC_SUCCESS) r = sc__model_profile_costs(m, ids, B, T, costs);
    double wall = HUGE_VAL, layer = 0.0, opt = 0.0, head = 0.0;
    if (r == SC_SUCCESS) { /* steps with the update, the device synchronised; the first is a warm-up */
        sc_tracer tr;
        sc_tracer_config tc;
        memset(&tc, 0, sizeof tc);
        tc.warmup_steps = -1;
        tc.no_clear_refs = 1;
        sc_model_tracer_timing(m, &tc);
        if ((r = sc_tracer_init(&tr, &tc)) == SC_SUCCESS) {
            sc_plan none;
            sc_plan_parse(&none, "none", Lp);
            sc_model_set_tracer(m, &tr);
            for (int s = 0; s < 3 && r == SC_SUCCESS; s++) {
                float loss = 0.0f;
                sc_tracer_step_begin(&tr, 0, s);
                r = sc_model_step(m, &none, ids, 1, B, T, 1, &loss);
                sc_tracer_step_end(&tr, loss, (double)B * T, NULL);
                const sc_step_metrics *sm = sc_tracer_step_get(&tr, s);
                if (r != SC_SUCCESS || s == 0 || !sm || sm->wall_ms * 1e-3 >= wall) continue;
                wall = sm->wall_ms * 1e-3;
                opt = sm->phase_ms[SC_PHASE_OPT] * 1e-3;
                head = sm->phase_ms[SC_PHASE_LOSS] * 1e-3;
                layer = 0.0;
                for (int l = 0; l < Lp; l++)
                    layer += (sc_tracer_layer_ms(&tr, s, l, SC_PHASE_FWD) + sc_tracer_layer_ms(&tr, s, l, SC_PHASE_BWD)) *
                             1e-3 / Lp;
            }
            sc_model_set_tracer(m, NULL);
            sc_tracer_uninit(&tr);
        }
    }
    if (r == SC_SUCCESS) {
        for (int l = 0; l < Lp; l++) {
            pr->lc.fwd_s += costs[l].fwd_s / Lp, pr->lc.rsel_s += costs[l].rsel_s / Lp;
            pr->lc.rmlp_s += costs[l].rmlp_s / Lp, pr->lc.rattn_s += costs[l].rattn_s / Lp;
            pr->lc.rproj_s += costs[l].rproj_s / Lp;
        }
        pr->layer_s = layer;
        pr->rest_s = wall - Lp * layer - opt > 0 ? wall - Lp * layer - opt : 0.0;
        pr->head_s = head < pr->rest_s ? head : pr->rest_s;
        /* the update scales with the parameters the device holds, not with the profile's two layers */
        pr->dopt_pps = opt > 0 ? (double)sc_config_num_params(&pc) / opt : 1e12;
        int pb, gb, ab;
        sc_model_config_storage(mc, &pb, &gb, &ab);
        size_t ln = sc__layer_numel(cfg);
        r = sc__auto_copy_rates(pr, m, sc__auto_clamp(ln * (size_t)pb, (size_t)1 << 20, (size_t)256 << 20));
    }
    if (m) sc_model_destroy(m);
    if (r == SC_SUCCESS) r = sc__auto_host_opt_rate(pr, cfg, &pc, &pm, ids, B, T, threads);
    free(own);
    return r;
}

#define SC__AUTO_P1_SLOWER 1.011 /* a prefetch-1 slide step against the same at prefetch 2 (below) */

typedef struct sc__auto_best {
    int have;
    sc_model_config mc;
    sc_plan plan;
    size_t peak, fixed;
    int k;
    double step, comp, copy, hopt;
} sc__auto_best;

/* Keep the candidate when faster (ties: resident first, then the lower peak). */
static void sc__auto_offer(sc__auto_best *b, const sc_model_config *mc, const sc_plan *p, size_t peak, size_t fixed,
                           int k, double comp, double copy, double hopt, double step)
{
    int res = mc->mode == SC_MODE_RESIDENT, bres = b->have && b->mc.mode == SC_MODE_RESIDENT;
    int tie = b->have && fabs(step - b->step) <= 1e-9 * (b->step > 0 ? b->step : 1.0);
    if (b->have && !(step < b->step && !tie) && !(tie && (res > bres || (res == bres && peak < b->peak)))) return;
    b->have = 1, b->mc = *mc, b->plan = *p, b->peak = peak, b->fixed = fixed, b->k = k;
    b->comp = comp, b->copy = copy, b->hopt = hopt, b->step = step;
}

/* A size a user can pass back: MiB or GiB rounded up, so that it is never below the bytes. */
static void sc__auto_size(char *buf, size_t cap, size_t b)
{
    if (b < ((size_t)1 << 30)) snprintf(buf, cap, "%.2fMiB", ceil((double)b / 1048576.0 * 100.0) / 100.0);
    else snprintf(buf, cap, "%.3fGiB", ceil((double)b / 1073741824.0 * 1000.0) / 1000.0);
}

/* "planned: 3 keep all, 2 selective, 4 recomputed in 2 segments" */
static void sc__auto_plan_name(sc_plan *p)
{
    int n[SC_KEEP_COUNT] = {0}, seg = 0, segs = 0;
    size_t len = (size_t)snprintf(p->name, sizeof p->name, "planned:");
    for (int l = 0; l < p->num_layers; l++) {
        if (p->seg[l] >= 0) seg++, segs += p->seg[l] == l;
        else n[p->keep[l]]++;
    }
    const char *sep = " ";
    for (int k = 0; k < SC_KEEP_COUNT && len < sizeof p->name; k++)
        if (n[k]) len += (size_t)snprintf(p->name + len, sizeof p->name - len, "%s%d %s", sep, n[k], sc_keep_name(k)), sep = ", ";
    if (seg && len < sizeof p->name)
        snprintf(p->name + len, sizeof p->name - len, "%s%d recomputed in %d segment%s", sep, seg, segs, segs > 1 ? "s" : "");
}

/* The smallest cap whose usable part holds `need` bytes (sc_plan_budget_usable is monotone). */
static size_t sc__auto_cap_for(size_t need, const sc_config *cfg, int B, int T)
{
    size_t lo = need, hi = need + need / 8 + ((size_t)64 << 20);
    while (sc_plan_budget_usable(hi, cfg, B, T) < need) hi += hi / 2;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sc_plan_budget_usable(mid, cfg, B, T) >= need) hi = mid; else lo = mid + 1;
    }
    return lo;
}

/* Slide's step as the host optimizer's order makes it (GPU): from one step's backward to the
   next one's. Time 0 is the start of the backward; gradients come down one after the other (a
   streamed head's first, then layer L-1 down to k, each after its backward); the host takes the
   head, then the lowest layer whose gradients have landed (the order sc__opt_main keeps, so
   that the next forward's first layers are ready first); layer i goes up again once updated,
   and the next forward runs layer i once it is there and layer i-1 is done, then the head and
   the loss. When the host is behind the backward, its last update is a late layer's (L - 2 when
   it runs slower than two backwards a layer), not the first streamed one's: the host's idle time
   at the step's end is then the forward of a few layers, not of all streamed layers.
   u, uh: the host's time for one layer, for a streamed head (0: kept); up1 / d1: one layer's
   upload / gradient download; dh / hup: a streamed head's download / upload; fwd, bwd, head:
   one layer's forward, backward (recompute included), the head and loss; gpu: the GPU's own
   step, from which the forward of the streamed layers may start at gpu - (L - k) fwd - head. */
static double sc__auto_host_chain(int L, int k, double u, double uh, double up1, double d1, double dh, double hup,
                                  double fwd, double bwd, double head, double gpu)
{
    double land[SC_MAX_LAYERS], done[SC_MAX_LAYERS], dstream = uh > 0 ? dh : 0.0, h = 0.0, hdone = 0.0;
    char taken[SC_MAX_LAYERS] = {0};
    for (int i = L - 1; i >= k; i--) {
        double ready = (L - i) * bwd;
        dstream = (dstream > ready ? dstream : ready) + d1;
        land[i] = dstream;
    }
    /* a streamed head's task has the lowest rank; it takes the head's gradient rows as they land
       (its download, dh, comes first), so it ends when both are done */
    if (uh > 0) h = hdone = dh > uh ? dh : uh;
    for (int n = k; n < L; n++) {
        int best = -1;
        for (int i = k; i < L && best < 0; i++)
            if (!taken[i] && land[i] <= h) best = i;
        if (best < 0) { /* none landed yet: wait for the next, the highest not yet taken */
            for (int i = L - 1; i >= k && best < 0; i--)
                if (!taken[i]) best = i;
            h = land[best];
        }
        taken[best] = 1;
        h += u;
        done[best] = h;
    }
    double f = gpu - (L - k) * fwd - head;
    for (int i = k; i < L; i++) {
        double ready = done[i] + up1;
        f = (f > ready ? f : ready) + fwd;
    }
    if (uh > 0 && hdone + hup > f) f = hdone + hup;
    return f + head;
}

SCDEF sc_result sc_plan_auto(sc_plan_auto_result *out, const sc_config *cfg, const sc_model_config *mc,
                             const sc_plan_auto_config *ac)
{
    if (!out || !cfg || !mc || !ac) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_plan_auto: NULL argument");
    memset(out, 0, sizeof *out);
    int B = ac->B, T = ac->T, accum = ac->accum > 0 ? ac->accum : 1;
    int pb, gb, ab;
    sc_model_config_storage(mc, &pb, &gb, &ab);
    SC__TRY(sc__pl_check(cfg, B, T, ab));
    int L = cfg->num_layers;
    if (ac->plan && ac->plan->num_layers != L)
        return sc__fail(SC_ERROR_INVALID_ARGS, "sc_plan_auto: the plan has %d layers, the model %d", ac->plan->num_layers, L);
    if (sc_dist_comm_world(mc->comm) > 1) /* each rank's profile could choose another configuration */
        return sc__fail(SC_ERROR_UNSUPPORTED, "sc_plan_auto: one process only (data parallel: choose once, then pass "
                        "the configuration to every rank)");
    int all = sc__optim_threads(0);
    int threads = mc->slide_cpu_threads > 0 ? mc->slide_cpu_threads : all > 1 ? all - 1 : 1;
    sc_auto_profile pr;
    if (ac->profile && ac->profile->valid) pr = *ac->profile;
    else {
        SC__TRY(sc__auto_profile(&pr, cfg, mc, ac, threads));
        pr.valid = 1;
        if (ac->profile) *ac->profile = pr;
    }
    sc_layer_cost costs[SC_MAX_LAYERS];
    for (int l = 0; l < L; l++) costs[l] = pr.lc;
    size_t usable = ac->mem_cap ? sc_plan_budget_usable(ac->mem_cap, cfg, B, T) : (size_t)-1, minpeak = (size_t)-1;
    sc__auto_best best;
    memset(&best, 0, sizeof best);
    sc_plan_report rep;
    int ncand = 0;
    /* any slide field the caller set asks for slide mode */
    int user_dl = 0;
    for (int l = 0; l < L; l++) user_dl += mc->slide_device_layers[l] != 0;
    int want_slide = mc->mode == SC_MODE_SLIDE || mc->slide_prefetch > 0 || mc->slide_cpu_threads > 0 || mc->slide_dpu ||
                     mc->slide_keep_head || mc->slide_device_update || mc->slide_head_once || user_dl;
    double base = pr.rest_s + L * pr.layer_s; /* a step's compute without recompute, one micro-batch */
    size_t ln = sc__layer_numel(cfg), hn = sc__head_numel(cfg), kn = sc__kept_numel(cfg);

    if (want_slide && ac->resident_only)
        return sc__fail(SC_ERROR_INVALID_ARGS, "sc_plan_auto: resident_only with slide mode or slide options set");
    if (!want_slide) { /* resident: the planner's plan (or the caller's) under F */
        sc_model_config c = *mc;
        c.mode = SC_MODE_RESIDENT;
        size_t F = sc_model_config_fixed_bytes(cfg, &c);
        sc_plan p;
        sc_result r;
        if (ac->plan) p = *ac->plan, r = sc_plan_evaluate(&rep, &p, cfg, B, T, ab, F, costs);
        else r = sc_planner_plan(&p, &rep, cfg, B, T, ab, F, costs, usable);
        if (!ac->plan && r == SC_SUCCESS) sc__auto_plan_name(&p);
        size_t need = ac->plan ? rep.peak_bytes : rep.min_budget;
        if (need && need < minpeak) minpeak = need;
        ncand++;
        if (r == SC_SUCCESS && rep.peak_bytes <= usable) {
            double comp = accum * (base + rep.recompute_s) + (double)sc_config_num_params(cfg) / pr.dopt_pps;
            sc__auto_offer(&best, &c, &p, rep.peak_bytes, F, 0, comp, 0.0, 0.0, comp);
        }
    }

    /* slide: every combination of the options the caller left open */
    if (!ac->resident_only || want_slide) {
        static const char *pols[] = {"none", "selective", "selective:proj", "selective:attn", "selective:mlp", "every:2",
                                     "sqrt", "full"};
        int sliced = mc->head_slice > 0 && mc->head_slice < cfg->vocab_size, adamw = mc->optim == SC_OPTIM_ADAMW;
        int can_keep = !mc->slide_dpu && !(mc->clip_grad_norm > 0.0f) && !mc->comm;
        int can_devup = !adamw && !mc->master_weights && !mc->slide_dpu && !mc->comm && !(mc->clip_grad_norm > 0.0f);
        int Pmax = mc->slide_prefetch > 0 ? mc->slide_prefetch : L < 4 ? L : 4, Pmin = mc->slide_prefetch > 0 ? Pmax : 1;
        /* device layers: the first k (their uploads would start the step, their host updates end it);
           none with DPU or data parallel, whose slide paths stream every layer */
        int kmax = user_dl ? user_dl : ac->max_device_layers < 0 || mc->slide_dpu || mc->comm || mc->clip_grad_norm > 0.0f ? 0
                   : ac->max_device_layers > 0 && ac->max_device_layers < L - 1 ? ac->max_device_layers : L - 1;
        int kstep = kmax > 16 ? (kmax + 15) / 16 : 1;
        for (int P = Pmin; P <= Pmax; P++)
            for (int keep = mc->slide_keep_head ? 1 : 0; keep <= (can_keep || mc->slide_keep_head ? 1 : 0); keep++)
                for (int once = mc->slide_head_once ? 1 : 0; once <= (sliced && !keep ? 1 : 0); once++)
                    for (int k = user_dl ? user_dl : 0; k <= kmax; k = k < kmax && k + kstep > kmax ? kmax : k + kstep) {
                        sc_model_config c = *mc;
                        c.mode = SC_MODE_SLIDE;
                        c.slide_prefetch = P, c.slide_keep_head = keep, c.slide_head_once = once;
                        c.slide_cpu_threads = threads;
                        if (!user_dl) {
                            memset(c.slide_device_layers, 0, sizeof c.slide_device_layers);
                            memset(c.slide_device_layers, 1, (size_t)k);
                        }
                        size_t dev = 0; /* sc_slide_window_bytes counts the device layers */
                        sc_plan cand[16];
                        int nc = 0;
                        if (ac->plan) cand[nc++] = *ac->plan;
                        else {
                            /* the planner under a one-layer window (its segments may widen the
                               window: evaluated below with the true one), and the fixed policies */
                            size_t F1 = sc_slide_window_bytes(cfg, &c, NULL) + dev;
                            if (sc_planner_plan(&cand[nc], NULL, cfg, B, T, ab, F1, costs, usable) == SC_SUCCESS) {
                                sc__auto_plan_name(&cand[nc]);
                                nc++;
                            }
                            /* every micro-batch's saved activations at once (below): the planner
                               at accum x B too, which counts them (and its transients, larger) */
                            if (accum > 1 &&
                                sc_planner_plan(&cand[nc], NULL, cfg, accum * B, T, ab, F1, costs, usable) == SC_SUCCESS) {
                                sc__auto_plan_name(&cand[nc]);
                                nc++;
                            }
                            for (size_t i = 0; i < sizeof pols / sizeof *pols; i++)
                                if (sc_plan_parse(&cand[nc], pols[i], L) == SC_SUCCESS) nc++;
                        }
                        for (int i = 0; i < nc; i++) {
                            size_t F = sc_slide_window_bytes(cfg, &c, &cand[i]) + dev;
                            if (sc_plan_evaluate(&rep, &cand[i], cfg, B, T, ab, F, costs) != SC_SUCCESS) continue;
                            rep.peak_bytes += (size_t)(accum - 1) * rep.saved_bytes; /* see the note above */
                            ncand++;
                            if (rep.peak_bytes < minpeak) minpeak = rep.peak_bytes;
                            if (rep.peak_bytes > usable) continue;
                            double comp = accum * (base + rep.recompute_s);
                            int Ls = L - k, slots = P + sc__plan_widest(&cand[i]), reuse = slots < Ls ? slots : Ls;
                            for (int du = mc->slide_device_update ? 1 : 0; du <= (can_devup && !k ? 1 : 0); du++) {
                                c.slide_device_update = du;
                                /* up: forward and backward, less the layers still in slots (with the
                                   device update also those the next forward finds there) */
                                double up = (double)(2 * Ls - (du ? 2 : 1) * reuse) * (double)(ln * (size_t)pb);
                                double down = (double)Ls * (double)(ln * (size_t)(du ? pb : gb));
                                double hostp = (du ? 0.0 : (double)Ls * (double)ln), hhead = 0.0;
                                if (!keep) {
                                    up += (double)(hn * (size_t)pb) * (sliced && !once ? 2.0 : 1.0);
                                    down += (double)(kn * (size_t)gb);
                                    if (pr.serial) hostp += (double)kn;
                                    else hhead = pr.head_opt_s;
                                }
                                if (up < 0) up = 0;
                                /* the device's updates: its layers, a kept head, SGD's device update */
                                double devp = (double)k * (double)ln + (keep ? (double)kn : 0.0) +
                                              (du ? (double)Ls * (double)ln : 0.0);
                                double comp_k = comp + devp / pr.dopt_pps;
                                /* the copies each way, as much overlapped as the profile found them */
                                double u = up / pr.h2d_Bps, d = down / pr.d2h_Bps, hopt = hostp / pr.opt_pps + hhead;
                                /* while both directions copy (at most the shorter's time) the host
                                   optimizer runs at its busy rate */
                                double both = u < d ? u : d;
                                hopt += (both < hopt ? both : hopt) * (1.0 - pr.opt_busy_pps / pr.opt_pps);
                                double copy = (u > d ? u : d) + pr.duplex * (u > d ? d : u);
                                double up1 = (double)(ln * (size_t)pb) / pr.h2d_Bps;
                                double exposed = k > 0 ? 0.0 : up1 + (du ? 0.0 : (double)ln / pr.opt_pps);
                                /* a whole streamed head's upload, less a layer's forward for each
                                   prefetch past the first. The upload is issued in the forward once
                                   the head's update ran, but without this term the model chose a
                                   streamed head under 24 GiB (AdamW) whose runs measured 1.08-1.15x
                                   their predictions; with it, a kept head (predicted 0.94-1.01x) */
                                double hup1 = keep || sliced ? 0.0 : (double)(hn * (size_t)pb) / pr.h2d_Bps;
                                double hup = hup1 - (P - 1) * pr.lc.fwd_s, step;
                                if (pr.serial) step = comp_k + copy + hopt + exposed;
                                else {
                                    step = comp_k + exposed + (hup > 0 ? hup : 0.0);
                                    step = copy > step ? copy : step;
                                    if (hopt > 0 && accum > 1) {
                                        /* several micro-batches: the chain below predicted the 7B
                                           shape's host-bound steps (4 micro-batches) 19-35% short,
                                           where this bound (the host idle from its last update to
                                           the next step's first gradient, the earlier micro-batches
                                           counted whole) chooses a plan that ran 0.93-0.98x its
                                           prediction on two hosts */
                                        double idle = keep ? up1 + (L - k) * pr.lc.fwd_s + pr.rest_s + (pr.layer_s - pr.lc.fwd_s)
                                                           : up1 + pr.lc.fwd_s + pr.rest_s + (double)(kn * (size_t)gb) / pr.d2h_Bps;
                                        idle += (accum - 1) * base;
                                        step = hopt + idle > step ? hopt + idle : step;
                                    } else if (hopt > 0) { /* the host's tasks, slowed as above alike */
                                        double plain = hostp / pr.opt_pps + hhead, slow = plain > 0 ? hopt / plain : 1.0;
                                        double host = sc__auto_host_chain(
                                            L, k, du ? 0.0 : slow * (double)ln / pr.opt_pps, slow * hhead, up1,
                                            (double)(ln * (size_t)(du ? pb : gb)) / pr.d2h_Bps,
                                            (double)(kn * (size_t)gb) / pr.d2h_Bps, hup1, pr.lc.fwd_s,
                                            pr.layer_s - pr.lc.fwd_s + rep.recompute_s / L,
                                            pr.head_s, comp_k);
                                        step = host > step ? host : step;
                                    }
                                }
                                /* prefetch 1: the terms above predict it as prefetch 2, but in 134 pairs
                                   of hand runs that differed only there (36 sweeps on H100 hosts,
                                   bench/prefetch_pairs.py) its step was 1.1% longer (geometric mean;
                                   longer in 86 of them): measured, so counted */
                                if (P == 1 && !pr.serial) step *= SC__AUTO_P1_SLOWER;
                                sc__auto_offer(&best, &c, &cand[i], rep.peak_bytes, F, k, comp_k, copy, hopt, step);
                            }
                        }
                    }
    }

    out->candidates = ncand;
    if (minpeak != (size_t)-1) out->min_cap = sc__auto_cap_for(minpeak, cfg, B, T);
    if (!best.have) {
        char a[32], b[32];
        sc__auto_size(a, sizeof a, ac->mem_cap);
        sc__auto_size(b, sizeof b, out->min_cap);
        return sc__fail(SC_ERROR_OUT_OF_MEMORY, "no configuration (%s) fits a memory cap of %s (%zu bytes) at B=%d T=%d: "
                        "the smallest cap that fits is %s (%zu bytes)", want_slide ? "slide mode" : "resident or slide",
                        a, ac->mem_cap, B, T, b, out->min_cap);
    }
    out->mc = best.mc;
    if (!mc->mem_cap) out->mc.mem_cap = ac->mem_cap;
    out->plan = best.plan;
    out->peak_bytes = best.peak;
    out->fixed_bytes = best.fixed;
    out->device_layers = best.k;
    out->step_ms = best.step * 1e3, out->compute_ms = best.comp * 1e3;
    out->copy_ms = best.copy * 1e3, out->host_opt_ms = best.hopt * 1e3;
    const sc_model_config *c = &best.mc;
    if (c->mode == SC_MODE_RESIDENT) snprintf(out->desc, sizeof out->desc, "resident, policy %s", best.plan.name);
    else
        snprintf(out->desc, sizeof out->desc, "slide, prefetch %d, head %s, %d host optimizer threads%s, %d device "
                 "layers, policy %s", c->slide_prefetch, c->slide_keep_head ? "kept" : c->slide_head_once ? "once" : "slot",
                 c->slide_cpu_threads, c->slide_device_update ? ", device update" : "", best.k, best.plan.name);
    return SC_SUCCESS;
}

/* ==========================================================================================
   Several processes: the launch environment and the TCP rendezvous
   ========================================================================================== */
#ifndef _WIN32
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <fcntl.h>
#include <unistd.h>
#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif
#if defined(__linux__) || defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || defined(__NetBSD__)
#include <ifaddrs.h>
#define SC__HAVE_IFADDRS 1
#endif
/* Host names go through getaddrinfo. Strict -std=c11 hides it and struct addrinfo in <netdb.h>;
   glibc and musl still export it, with this layout, so declare what we use there (as for
   clock_gettime above). */
#if defined(AI_PASSIVE)
typedef struct addrinfo sc__addrinfo;
#define SC__HAVE_GAI 1
#elif defined(__linux__)
typedef struct sc__addrinfo {
    int ai_flags, ai_family, ai_socktype, ai_protocol;
    socklen_t ai_addrlen;
    struct sockaddr *ai_addr;
    char *ai_canonname;
    struct sc__addrinfo *ai_next;
} sc__addrinfo;
#ifdef __cplusplus
extern "C" {
#endif
int getaddrinfo(const char *node, const char *service, const sc__addrinfo *hints, sc__addrinfo **res);
void freeaddrinfo(sc__addrinfo *res);
const char *gai_strerror(int code);
#ifdef __cplusplus
}
#endif
#define SC__HAVE_GAI 1
#endif
#endif

SCDEF uint64_t sc_hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    if (!h) h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* 1: absent, or an integer in [lo, hi] stored in *out; 0: malformed or out of range */
static int sc__env_int(const char *name, long lo, long hi, int *out, int *present)
{
    const char *v = getenv(name);
    *present = v && *v;
    if (!*present) return 1;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) return 0;
    *out = (int)x;
    return 1;
}

/* the variable's value, NULL when unset or empty; "" for messages */
static const char *sc__env_str(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}
static const char *sc__env_show(const char *name) { return getenv(name) ? getenv(name) : ""; }

static int sc__is_digit(char ch) { return ch >= '0' && ch <= '9'; }

/* Slurm's tasks per node, "4(x2),3": *count = entry `at` (nodes 0 and 1: 4, node 2: 3; -1 past
   the end), *entries = 3. 0 when malformed. */
static int sc__tasks_per_node(const char *s, int at, int *count, int *entries)
{
    const long big = 1 << 20;
    *count = -1, *entries = 0;
    for (const char *p = s;;) {
        char *end;
        if (!sc__is_digit(*p)) return 0;
        long c = strtol(p, &end, 10), rep = 1;
        if (c < 1 || c > big) return 0;
        p = end;
        if (*p == '(') {
            if (p[1] != 'x' || !sc__is_digit(p[2])) return 0;
            rep = strtol(p + 2, &end, 10);
            if (*end != ')' || rep < 1 || rep > big) return 0;
            p = end + 1;
        }
        if (*entries + rep > big) return 0;
        if (at >= *entries && at < *entries + rep) *count = (int)c;
        *entries += (int)rep;
        if (!*p) return 1;
        if (*p++ != ',') return 0;
    }
}

/* The first host of a Slurm host list: "node[01-04,07]" -> node01, "gpu-a[003-010],gpu-b7" ->
   gpu-a003, "n[1-3]x" -> n1x, "r[1-2]n[01-04]" -> r1n01 (zero padding kept: the first number
   is copied as written). 0, or -1 when malformed or longer than cap. */
static int sc__hostlist_first(const char *list, char *out, size_t cap)
{
    size_t n = 0;
    const char *p = list;
    while (*p && *p != ',') {
        const char *from = p;
        size_t k = 1;
        if (*p == ']') return -1;
        if (*p == '[') { /* digits, then "-digits", then ",digits[-digits]" ... up to ']' */
            from = ++p;
            while (sc__is_digit(*p)) p++;
            k = (size_t)(p - from);
            if (!k) return -1;
            for (int first = 1; *p != ']'; first = 0) {
                if (!first && *p++ != ',') return -1;
                if (!first && !sc__is_digit(*p)) return -1;
                while (!first && sc__is_digit(*p)) p++;
                if (*p == '-') {
                    if (!sc__is_digit(*++p)) return -1;
                    while (sc__is_digit(*p)) p++;
                }
            }
            p++;
        } else
            p++;
        if (n + k >= cap) return -1;
        memcpy(out + n, from, k);
        n += k;
    }
    if (!n) return -1;
    out[n] = 0;
    return 0;
}

/* torchrun's variables (see sc_dist_env) */
static sc_result sc__dist_env_torchrun(sc_dist_env *e)
{
    int hw, hr, hl, hlw, hg, hgw, gw = 0, big = 1 << 20;
    if (!sc__env_int("WORLD_SIZE", 1, big, &e->world_size, &hw))
        return sc__fail(SC_ERROR_INVALID_ARGS, "WORLD_SIZE='%s': need an integer in [1, %d]", getenv("WORLD_SIZE"), big);
    if (!sc__env_int("RANK", 0, big, &e->rank, &hr))
        return sc__fail(SC_ERROR_INVALID_ARGS, "RANK='%s': need an integer >= 0", getenv("RANK"));
    if (hw != hr)
        return sc__fail(SC_ERROR_INVALID_ARGS, "RANK and WORLD_SIZE go together (RANK %s, WORLD_SIZE %s)",
                        hr ? "set" : "unset", hw ? "set" : "unset");
    if (e->rank >= e->world_size)
        return sc__fail(SC_ERROR_INVALID_ARGS, "RANK=%d is not below WORLD_SIZE=%d", e->rank, e->world_size);
    e->local_rank = e->rank;
    e->local_world_size = e->world_size;
    if (!sc__env_int("LOCAL_WORLD_SIZE", 1, big, &e->local_world_size, &hlw))
        return sc__fail(SC_ERROR_INVALID_ARGS, "LOCAL_WORLD_SIZE='%s': need an integer >= 1", getenv("LOCAL_WORLD_SIZE"));
    if (!sc__env_int("LOCAL_RANK", 0, big, &e->local_rank, &hl) || e->local_rank >= e->local_world_size)
        return sc__fail(SC_ERROR_INVALID_ARGS, "LOCAL_RANK='%s': need an integer in [0, LOCAL_WORLD_SIZE=%d)",
                        sc__env_show("LOCAL_RANK"), e->local_world_size);
    /* torchrun numbers ranks node by node: without GROUP_RANK the node follows from the rank */
    e->node = e->rank / e->local_world_size;
    e->node_count = (e->world_size + e->local_world_size - 1) / e->local_world_size;
    if (!sc__env_int("GROUP_WORLD_SIZE", 1, big, &gw, &hgw))
        return sc__fail(SC_ERROR_INVALID_ARGS, "GROUP_WORLD_SIZE='%s': need an integer >= 1 (the number of nodes)",
                        getenv("GROUP_WORLD_SIZE"));
    if (!sc__env_int("GROUP_RANK", 0, hgw ? gw - 1 : big, &e->node, &hg)) {
        if (hgw)
            return sc__fail(SC_ERROR_INVALID_ARGS, "GROUP_RANK='%s': need an integer in [0, GROUP_WORLD_SIZE=%d) (the "
                            "node's index, torchrun --node_rank)", getenv("GROUP_RANK"), gw);
        return sc__fail(SC_ERROR_INVALID_ARGS, "GROUP_RANK='%s': need an integer >= 0 (the node's index, torchrun "
                        "--node_rank)", getenv("GROUP_RANK"));
    }
    if (hgw) e->node_count = gw;
    else if (e->node >= e->node_count) e->node_count = e->node + 1;
    return SC_SUCCESS;
}

/* Slurm's srun (see sc_dist_env); rank 0's host and port are read by the caller */
static sc_result sc__dist_env_slurm(sc_dist_env *e)
{
    int h, big = 1 << 20, count = -1, entries = 0, lw = 0;
    if (!sc__env_int("SLURM_NTASKS", 1, big, &e->world_size, &h))
        return sc__fail(SC_ERROR_INVALID_ARGS, "SLURM_NTASKS='%s': need an integer in [1, %d]", getenv("SLURM_NTASKS"),
                        big);
    if (!sc__env_int("SLURM_PROCID", 0, big, &e->rank, &h) || e->rank >= e->world_size)
        return sc__fail(SC_ERROR_INVALID_ARGS, "SLURM_PROCID='%s': need an integer in [0, SLURM_NTASKS=%d)",
                        getenv("SLURM_PROCID"), e->world_size);
    e->local_rank = e->rank;
    e->local_world_size = e->world_size;
    if (!sc__env_int("SLURM_LOCALID", 0, big, &e->local_rank, &h) || (!h && e->world_size > 1))
        return sc__fail(SC_ERROR_INVALID_ARGS, "SLURM_LOCALID='%s': need an integer >= 0 (srun sets it for each task)",
                        sc__env_show("SLURM_LOCALID"));
    if (!sc__env_int("SLURM_NODEID", 0, big, &e->node, &h) || (!h && e->world_size > 1))
        return sc__fail(SC_ERROR_INVALID_ARGS, "SLURM_NODEID='%s': need an integer >= 0 (srun sets it for each task)",
                        sc__env_show("SLURM_NODEID"));
    const char *tpn = sc__env_str("SLURM_TASKS_PER_NODE");
    if (tpn && !sc__tasks_per_node(tpn, e->node, &count, &entries))
        return sc__fail(SC_ERROR_INVALID_ARGS, "SLURM_TASKS_PER_NODE='%s': need task counts like 4 or 4(x2),3", tpn);
    if (tpn && count < 0)
        return sc__fail(SC_ERROR_INVALID_ARGS, "SLURM_NODEID=%d: SLURM_TASKS_PER_NODE='%s' lists %d nodes", e->node,
                        tpn, entries);
    /* SLURM_NTASKS_PER_NODE (--ntasks-per-node) where it is one number; else this node's entry */
    if (sc__env_int("SLURM_NTASKS_PER_NODE", 1, big, &lw, &h) && h) e->local_world_size = lw;
    else if (tpn) e->local_world_size = count;
    if (e->local_world_size > e->world_size) e->local_world_size = e->world_size; /* a step smaller than the job */
    if (e->local_rank >= e->local_world_size)
        return sc__fail(SC_ERROR_INVALID_ARGS, "SLURM_LOCALID=%d is not below this node's %d tasks (%s)", e->local_rank,
                        e->local_world_size, tpn ? "SLURM_TASKS_PER_NODE" : "SLURM_NTASKS_PER_NODE");
    e->node_count = (e->world_size + e->local_world_size - 1) / e->local_world_size;
    if (tpn) e->node_count = entries;
    else if (!sc__env_int("SLURM_NNODES", 1, big, &e->node_count, &h))
        return sc__fail(SC_ERROR_INVALID_ARGS, "SLURM_NNODES='%s': need an integer >= 1", getenv("SLURM_NNODES"));
    if (e->node >= e->node_count)
        return sc__fail(SC_ERROR_INVALID_ARGS, "SLURM_NODEID=%d is not below the job's %d nodes", e->node, e->node_count);
    return SC_SUCCESS;
}

SCDEF sc_result sc_dist_env_read(sc_dist_env *e)
{
    if (!e) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_dist_env_read: NULL");
    memset(e, 0, sizeof *e);
    e->world_size = e->local_world_size = e->node_count = 1;
    e->timeout_s = 60.0;
    snprintf(e->master_addr, sizeof e->master_addr, "127.0.0.1");
    /* srun's tasks: SLURM_PROCID in a job step (an sbatch script itself has SLURM_PROCID=0 and
       SLURM_NTASKS of the whole job, but no step id: it is one process) */
    int slurm = !sc__env_str("RANK") && !sc__env_str("WORLD_SIZE") && sc__env_str("SLURM_PROCID") &&
                sc__env_str("SLURM_NTASKS") && (sc__env_str("SLURM_STEP_ID") || sc__env_str("SLURM_STEPID"));
    SC__TRY(slurm ? sc__dist_env_slurm(e) : sc__dist_env_torchrun(e));
    e->gpu = e->local_rank;
    const char *cvd = sc__env_str("CUDA_VISIBLE_DEVICES");
    if (cvd) { /* this process sees k devices: each task its own (Slurm), or all of this node's */
        int k = 0;
        for (const char *p = cvd; *p; p++) k += *p != ',' && (p == cvd || p[-1] == ',');
        if (k > 0) e->gpu = e->local_rank % k;
    }
    const char *t = getenv("SLIDECHECK_RENDEZVOUS_TIMEOUT");
    if (t && *t) {
        char *end;
        double x = strtod(t, &end);
        if (end == t || *end || !(x > 0.0) || x > 86400.0)
            return sc__fail(SC_ERROR_INVALID_ARGS, "SLIDECHECK_RENDEZVOUS_TIMEOUT='%s': need seconds in (0, 86400]", t);
        e->timeout_s = x;
    }
    const char *ifn = sc__env_str("NCCL_SOCKET_IFNAME");
    if (ifn && strlen(ifn) >= sizeof e->socket_ifname)
        return sc__fail(SC_ERROR_INVALID_ARGS, "NCCL_SOCKET_IFNAME is too long");
    if (ifn) snprintf(e->socket_ifname, sizeof e->socket_ifname, "%s", ifn);
    if (e->world_size == 1) return SC_SUCCESS;
    /* rank 0's address: MASTER_ADDR, else (srun) the first host of the step's nodes */
    const char *a = sc__env_str("MASTER_ADDR");
    const char *lists[3] = {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}, *lv = NULL;
    for (int i = 0; slurm && !a && !lv && i < 3; i++)
        if (sc__env_str(lists[i])) lv = lists[i];
    if (a) {
        if (strlen(a) >= sizeof e->master_addr) return sc__fail(SC_ERROR_INVALID_ARGS, "MASTER_ADDR is too long");
        snprintf(e->master_addr, sizeof e->master_addr, "%s", a);
    } else if (lv) {
        if (sc__hostlist_first(getenv(lv), e->master_addr, sizeof e->master_addr))
            return sc__fail(SC_ERROR_INVALID_ARGS, "%s='%s': need a host list like node[01-04,07],gpu3 (its first host "
                            "is rank 0's; or set MASTER_ADDR)", lv, getenv(lv));
    } else if (slurm)
        return sc__fail(SC_ERROR_INVALID_ARGS, "MASTER_ADDR is not set, nor SLURM_STEP_NODELIST or SLURM_JOB_NODELIST "
                        "(SLURM_NTASKS=%d needs rank 0's host)", e->world_size);
    else
        return sc__fail(SC_ERROR_INVALID_ARGS, "MASTER_ADDR is not set (WORLD_SIZE=%d needs rank 0's address)",
                        e->world_size);
    int hp, rp = 0;
    if (!sc__env_int("MASTER_PORT", 1, 65535, &e->master_port, &hp) || (!hp && !slurm))
        return sc__fail(SC_ERROR_INVALID_ARGS, "MASTER_PORT='%s': need a port in [1, 65535]", sc__env_show("MASTER_PORT"));
    if (hp) {
        /* torchrun's agent serves its own TCP store on MASTER_PORT and tells its workers so with
           TORCHELASTIC_USE_AGENT_STORE=True; the rendezvous then takes the port after it */
        const char *as = getenv("TORCHELASTIC_USE_AGENT_STORE");
        rp = e->master_port + (as && !strcmp(as, "True") && e->master_port < 65535);
    } else { /* srun: a port from the job id, the same on every task */
        const char *jv = sc__env_str("SLURM_JOB_ID") ? "SLURM_JOB_ID" : sc__env_str("SLURM_JOBID") ? "SLURM_JOBID" : NULL;
        const char *j = jv ? getenv(jv) : NULL;
        char *end = NULL;
        errno = 0;
        unsigned long long id = j && sc__is_digit(*j) ? strtoull(j, &end, 10) : 0;
        if (!jv) return sc__fail(SC_ERROR_INVALID_ARGS, "MASTER_PORT is not set, nor SLURM_JOB_ID (the port comes from it)");
        if (!end || *end || errno)
            return sc__fail(SC_ERROR_INVALID_ARGS, "%s='%s': need an integer (the rendezvous port comes from it; or set "
                            "MASTER_PORT)", jv, j);
        rp = 20000 + (int)(id % 12768);
    }
    if (!sc__env_int("SLIDECHECK_RENDEZVOUS_PORT", 1, 65535, &rp, &hp))
        return sc__fail(SC_ERROR_INVALID_ARGS, "SLIDECHECK_RENDEZVOUS_PORT='%s': need a port in [1, 65535]",
                        getenv("SLIDECHECK_RENDEZVOUS_PORT"));
    e->master_port = rp;
    return SC_SUCCESS;
}

#ifndef _WIN32
/* A grace the ranks other than 0 add to their waits on rank 0: rank 0 sees every rank and
   should be the one to report a rank that stalls, before the others give up on rank 0. */
static double sc__dist_grace_s(double timeout_s) { return 1.0 + 0.1 * timeout_s; }

/* "rank 3", or "rank 3 (node 1)" when the ranks span several machines (multi) */
static const char *sc__rank_name(char *buf, size_t cap, int rank, int node, int multi)
{
    if (multi && node >= 0) snprintf(buf, cap, "rank %d (node %d)", rank, node);
    else snprintf(buf, cap, "rank %d", rank);
    return buf;
}

static int64_t sc__dist_ms_left(int64_t deadline_ns) { return (deadline_ns - sc__trace_now_ns()) / 1000000; }

/* poll one fd for ev until the deadline: its revents, 0 at the deadline, -1 on error */
static int sc__dist_poll(int fd, short ev, int64_t deadline_ns)
{
    for (;;) {
        int64_t left = sc__dist_ms_left(deadline_ns);
        if (left <= 0) return 0;
        struct pollfd p;
        p.fd = fd, p.events = ev, p.revents = 0;
        int r = poll(&p, 1, (int)(left < 1000 ? left : 1000));
        if (r > 0) return p.revents ? p.revents : -1;
        if (r < 0 && errno != EINTR) return -1;
    }
}

/* 1 ready, 0 deadline passed, -1 error */
static int sc__dist_wait(int fd, short ev, int64_t deadline_ns)
{
    int w = sc__dist_poll(fd, ev, deadline_ns);
    return w <= 0 ? w : (w & (ev | POLLHUP | POLLERR)) ? 1 : -1;
}

/* n bytes each way before the deadline: 1 done, 0 deadline passed, -1 error or closed. watch:
   while sending, stop with 2 as soon as the peer has something to say (rank 0 stopping the
   channel while this rank sends to it) */
static int sc__dist_io(int fd, void *buf, size_t n, int sending, int64_t deadline_ns, int watch)
{
    char *p = (char *)buf;
    while (n) {
        short ev = sending ? (short)(POLLOUT | (watch ? POLLIN : 0)) : (short)POLLIN;
        int w = sc__dist_poll(fd, ev, deadline_ns);
        if (w <= 0) return w;
        if (sending && watch && (w & (POLLIN | POLLHUP | POLLERR))) return 2;
        if (!(w & (ev | POLLHUP | POLLERR))) return -1;
        ssize_t k = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (k == 0) return -1; /* the peer closed */
        if (k < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            return -1;
        }
        p += k, n -= (size_t)k;
    }
    return 1;
}

static void sc__put32(unsigned char *b, uint32_t v) { for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i)); }
static uint32_t sc__get32(const unsigned char *b)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)b[i] << (8 * i);
    return v;
}

static void sc__dist_set_port(struct sockaddr_storage *ss, int port)
{
    if (ss->ss_family == AF_INET) ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
    else ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
}

/* an address as text, without the port ("10.0.0.7", "fd00::2") */
static const char *sc__dist_host(const struct sockaddr_storage *ss, char *buf, size_t cap)
{
    const void *a = ss->ss_family == AF_INET ? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
                                             : (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
    if ((ss->ss_family != AF_INET && ss->ss_family != AF_INET6) || !inet_ntop(ss->ss_family, a, buf, (socklen_t)cap))
        snprintf(buf, cap, "?");
    return buf;
}

static int sc__dist_is_loopback(const struct sockaddr_storage *ss)
{
    unsigned char b[16];
    static const unsigned char one[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (ss->ss_family == AF_INET) return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    if (ss->ss_family != AF_INET6) return 0;
    memcpy(b, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
    return !memcmp(b, one, 16) || (!memcmp(b, v4mapped, 12) && b[12] == 127);
}

/* h as a numeric address (or "localhost" as 127.0.0.1) with the port: 1, else 0 */
static int sc__dist_numeric(const char *h, int port, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof *ss);
    if (!strcmp(h, "localhost")) h = "127.0.0.1";
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, h, &a4->sin_addr) == 1) ss->ss_family = AF_INET, *len = sizeof *a4;
    else if (inet_pton(AF_INET6, h, &a6->sin6_addr) == 1) ss->ss_family = AF_INET6, *len = sizeof *a6;
    else return 0;
    sc__dist_set_port(ss, port);
    return 1;
}

#define SC__DIST_ADDRS 8 /* MASTER_ADDR's addresses that the other ranks try in turn */

/* MASTER_ADDR's addresses with the port: *n of them (1 to SC__DIST_ADDRS) */
static sc_result sc__dist_resolve(const sc_dist_env *e, struct sockaddr_storage *ss, socklen_t *len, int *n)
{
    *n = 0;
    if (sc__dist_numeric(e->master_addr, e->master_port, &ss[0], &len[0])) {
        *n = 1;
        return SC_SUCCESS;
    }
#ifdef SC__HAVE_GAI
    sc__addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(e->master_addr, NULL, &hints, &res);
    if (rc || !res)
        return sc__fail(SC_ERROR_IO, "MASTER_ADDR '%s': %s", e->master_addr, rc ? gai_strerror(rc) : "no address");
    for (const sc__addrinfo *a = res; a && *n < SC__DIST_ADDRS; a = a->ai_next) {
        if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) || a->ai_addrlen > sizeof ss[0]) continue;
        memset(&ss[*n], 0, sizeof ss[0]);
        memcpy(&ss[*n], a->ai_addr, a->ai_addrlen);
        len[*n] = (socklen_t)a->ai_addrlen;
        sc__dist_set_port(&ss[(*n)++], e->master_port);
    }
    freeaddrinfo(res);
    if (!*n) return sc__fail(SC_ERROR_IO, "MASTER_ADDR '%s': no IPv4 or IPv6 address", e->master_addr);
    return SC_SUCCESS;
#else
    return sc__fail(SC_ERROR_INVALID_ARGS, "MASTER_ADDR '%s' is not an IP address or localhost, and this build has no "
                    "getaddrinfo (compile with -D_POSIX_C_SOURCE=200112L to resolve host names)", e->master_addr);
#endif
}

#ifdef SC__HAVE_IFADDRS
/* NCCL_SOCKET_IFNAME's syntax (see sc_dist_env): 1 when it names interface `name` */
static int sc__ifname_match(const char *spec, const char *name)
{
    int neg = *spec == '^', exact, hit = 0;
    spec += neg;
    exact = *spec == '=';
    spec += exact;
    for (const char *p = spec; !hit;) {
        const char *q = strchr(p, ',');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        if (n) hit = !strncmp(name, p, n) && (!exact || name[n] == 0);
        if (!q) break;
        p = q + 1;
    }
    return neg ? !hit : hit;
}


/* The address rank 0 binds on the interface NCCL_SOCKET_IFNAME names (spec): the first match in
   getifaddrs' order, preferring a non-loopback interface, then family fam; IPv6 link-local
   addresses are skipped (they need a scope). *ifn gets the interface's name. */
static sc_result sc__dist_ifaddr(const char *spec, int fam, struct sockaddr_storage *ss, socklen_t *len, char *ifn,
                                 size_t cap)
{
    const unsigned up = 0x1, loopback = 0x8; /* IFF_UP, IFF_LOOPBACK: <net/if.h> hides them under strict C */
    struct ifaddrs *all = NULL;
    if (getifaddrs(&all))
        return sc__fail(SC_ERROR_IO, "NCCL_SOCKET_IFNAME='%s': getifaddrs: %s", spec, strerror(errno));
    const struct ifaddrs *best = NULL;
    int best_score = 1 << 30, named = 0;
    char seen[256] = "";
    size_t ns = 0;
    for (const struct ifaddrs *i = all; i; i = i->ifa_next) {
        if (!i->ifa_name) continue;
        size_t nl = strlen(i->ifa_name);
        const char *at = strstr(seen, i->ifa_name); /* each name once in the list for the error */
        int listed = 0;
        for (; at && !listed; at = strstr(at + 1, i->ifa_name))
            listed = (at == seen || at[-1] == ' ') && (at[nl] == ',' || at[nl] == 0);
        if (!listed && ns + nl + 3 < sizeof seen) ns += (size_t)snprintf(seen + ns, sizeof seen - ns, "%s%s", ns ? ", " : "", i->ifa_name);
        if (!sc__ifname_match(spec, i->ifa_name)) continue;
        named = 1;
        if (!i->ifa_addr || !(i->ifa_flags & up)) continue;
        int f = i->ifa_addr->sa_family;
        if (f != AF_INET && f != AF_INET6) continue;
        if (f == AF_INET6) {
            unsigned char b[16];
            memcpy(b, &((const struct sockaddr_in6 *)(const void *)i->ifa_addr)->sin6_addr, 16);
            if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) continue; /* fe80::/10 */
        }
        int score = ((i->ifa_flags & loopback) ? 2 : 0) + (f != fam);
        if (score < best_score) best = i, best_score = score;
    }
    if (best) {
        socklen_t l = best->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
        memset(ss, 0, sizeof *ss);
        memcpy(ss, best->ifa_addr, l);
        *len = l;
        snprintf(ifn, cap, "%s", best->ifa_name);
    }
    freeifaddrs(all);
    if (!best)
        return sc__fail(SC_ERROR_INVALID_ARGS, "NCCL_SOCKET_IFNAME='%s': %s (this machine has: %s)", spec,
                        named ? "the interfaces it names have no address that is up" : "no interface matches it", seen);
    return SC_SUCCESS;
}
#endif

/* Where rank 0 listens (see sc_dist_env); desc gets what that is, for messages */
static sc_result sc__dist_listen_addr(const sc_dist_env *e, struct sockaddr_storage *ss, socklen_t *len, char *desc,
                                      size_t cap)
{
    struct sockaddr_storage m;
    socklen_t ml = 0;
    int numeric = sc__dist_numeric(e->master_addr, e->master_port, &m, &ml), loop = numeric && sc__dist_is_loopback(&m);
    desc[0] = 0;
    if (e->socket_ifname[0]) {
#ifdef SC__HAVE_IFADDRS
        char ifn[64];
        /* checked even where it is not used, as NCCL would fail on it */
        SC__TRY(sc__dist_ifaddr(e->socket_ifname, numeric && m.ss_family == AF_INET6 ? AF_INET6 : AF_INET, ss, len, ifn,
                                sizeof ifn));
        if (!loop) {
            char h[64];
            sc__dist_set_port(ss, e->master_port);
            snprintf(desc, cap, " (rank 0 on %s:%d, interface %s of NCCL_SOCKET_IFNAME=%.64s)", sc__dist_host(ss, h, sizeof h),
                     e->master_port, ifn, e->socket_ifname);
            return SC_SUCCESS;
        }
#else
        return sc__fail(SC_ERROR_UNSUPPORTED, "NCCL_SOCKET_IFNAME='%s': this system has no getifaddrs to find it",
                        e->socket_ifname);
#endif
    }
    if (loop) { /* every rank is on this machine */
        *ss = m, *len = ml;
        return SC_SUCCESS;
    }
    /* every interface: IPv6's any address takes IPv4 too (IPV6_V6ONLY off) where the system has
       IPv6; the listening socket falls back to IPv4's */
    memset(ss, 0, sizeof *ss);
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    ss->ss_family = fd >= 0 ? AF_INET6 : AF_INET;
    *len = fd >= 0 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (fd >= 0) close(fd);
    sc__dist_set_port(ss, e->master_port);
    snprintf(desc, cap, " (rank 0 on every interface)");
    return SC_SUCCESS;
}

static int sc__dist_socket(int family)
{
    int fd = socket(family, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int fl = fcntl(fd, F_GETFL, 0);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* rank 0's listening socket on ss (an IPv6 any address falls back to IPv4's); -1 with errno */
static int sc__dist_listen(struct sockaddr_storage *ss, socklen_t *len, int backlog)
{
    static const unsigned char any6[16] = {0};
    for (;;) {
        int fd = sc__dist_socket(ss->ss_family), one = 1, zero = 0;
        int any = ss->ss_family == AF_INET6 && !memcmp(&((struct sockaddr_in6 *)ss)->sin6_addr, any6, 16);
        if (fd >= 0) {
            (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
#ifdef IPV6_V6ONLY
            if (any) (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
#endif
            if (!bind(fd, (const struct sockaddr *)ss, *len) && !listen(fd, backlog)) return fd;
            int err = errno;
            close(fd);
            errno = err;
        }
        if (!any || errno == EADDRINUSE) return -1;
        int port = ntohs(((struct sockaddr_in6 *)ss)->sin6_port);
        memset(ss, 0, sizeof *ss);
        ss->ss_family = AF_INET, *len = sizeof(struct sockaddr_in);
        sc__dist_set_port(ss, port);
    }
}

#define SC__RV_MAGIC 0x56524353u /* "SCRV" */
#define SC__RV_VERSION 2
#define SC__RV_HELLO 32 /* magic, version, rank, world, check (2 words), blob bytes, node */
#define SC__RV_REPLY 16 /* status (0 or a negative sc_result), message bytes, rank 0's node, multi */

/* rank 0: the reply to one peer: the header, the message, then the blob */
static void sc__dist_reply(int fd, sc_result status, const char *msg, int node0, int multi, const void *blob,
                           size_t blob_bytes, int64_t dl)
{
    unsigned char h[SC__RV_REPLY];
    size_t ml = strlen(msg);
    sc__put32(h, (uint32_t)(int32_t)status);
    sc__put32(h + 4, (uint32_t)ml);
    sc__put32(h + 8, (uint32_t)node0);
    sc__put32(h + 12, (uint32_t)multi);
    if (sc__dist_io(fd, h, sizeof h, 1, dl, 0) == 1 && sc__dist_io(fd, (void *)msg, ml, 1, dl, 0) == 1 &&
        status == SC_SUCCESS)
        (void)sc__dist_io(fd, (void *)blob, blob_bytes, 1, dl, 0);
}

/* the other end of a connection as text */
static const char *sc__dist_peer(int fd, char *buf, size_t cap)
{
    struct sockaddr_storage pa;
    socklen_t pl = sizeof pa;
    memset(&pa, 0, sizeof pa);
    if (getpeername(fd, (struct sockaddr *)&pa, &pl)) snprintf(buf, cap, "?");
    else sc__dist_host(&pa, buf, cap);
    return buf;
}

/* keep != NULL: on success the connections stay open, keep[r] = rank r's (keep[0] unused), and
   nodes[r] = rank r's node, *multi = whether the ranks span several nodes */
static sc_result sc__dist_serve(const sc_dist_env *e, struct sockaddr_storage *ss, socklen_t len, const char *desc,
                                uint64_t check, const void *blob, size_t blob_bytes, int64_t dl, int *keep, int *nodes_out,
                                int *multi_out)
{
    int W = e->world_size, arrived = 0, multi = e->node_count > 1;
    char where[720], msg[1024] = "", ha[64], hb[64], na[48];
    snprintf(where, sizeof where, "%s:%d%s", e->master_addr, e->master_port, desc);
    int lfd = sc__dist_listen(ss, &len, W < 4096 ? W : 4096);
    if (lfd < 0) {
        int err = errno;
        return sc__fail(SC_ERROR_IO, "rendezvous: rank 0 cannot listen on %s:%d%s: %s%s", sc__dist_host(ss, ha, sizeof ha),
                        e->master_port, desc, strerror(err),
                        err == EADDRINUSE ? " (another program holds the port: set SLIDECHECK_RENDEZVOUS_PORT)"
                        : err == EADDRNOTAVAIL ? " (not an address of this machine)" : "");
    }
    int *fds = (int *)SC_MALLOC(sizeof(int) * (size_t)W), *nodes = (int *)SC_MALLOC(sizeof(int) * (size_t)W);
    if (!fds || !nodes) {
        SC_FREE(fds), SC_FREE(nodes), close(lfd);
        return sc__fail(SC_ERROR_OUT_OF_MEMORY, "rendezvous: host malloc failed");
    }
    for (int i = 0; i < W; i++) fds[i] = nodes[i] = -1;
    nodes[0] = e->node;
    sc_result r = SC_SUCCESS;
    while (arrived < W - 1 && r == SC_SUCCESS) {
        int w = sc__dist_wait(lfd, POLLIN, dl);
        if (w == 0) {
            char miss[256] = "", gone[160] = "";
            size_t n = 0, g = 0;
            for (int i = 1; i < W && n + 12 < sizeof miss; i++)
                if (fds[i] < 0) n += (size_t)snprintf(miss + n, sizeof miss - n, "%s%d", n ? ", " : "", i);
            /* nodes none of whose ranks came: their launcher did not start, or cannot reach here */
            unsigned char *here = multi && e->node_count > 0 ? (unsigned char *)SC_MALLOC((size_t)e->node_count) : NULL;
            if (here) memset(here, 0, (size_t)e->node_count);
            for (int i = 0; here && i < W; i++)
                if (nodes[i] >= 0 && nodes[i] < e->node_count) here[nodes[i]] = 1;
            for (int d = 0; here && d < e->node_count && g + 12 < sizeof gone; d++)
                if (!here[d]) g += (size_t)snprintf(gone + g, sizeof gone - g, "%s%d", g ? ", " : "", d);
            SC_FREE(here);
            r = sc__fail(SC_ERROR_TIMEOUT, "rendezvous on %s: %d of %d ranks arrived within %g s; missing: rank %s%s%s%s",
                         where, arrived + 1, W, e->timeout_s, miss, g ? "; no rank of node " : "", gone,
                         g ? " arrived (its launcher did not start, or cannot reach rank 0)" : "");
            break;
        }
        int c = w > 0 ? accept(lfd, NULL, NULL) : -1;
        if (c < 0) {
            if (w > 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED)) continue;
            r = sc__fail(SC_ERROR_IO, "rendezvous on %s: accept: %s", where, strerror(errno));
            break;
        }
        int fl = fcntl(c, F_GETFL, 0);
        if (fl >= 0) (void)fcntl(c, F_SETFL, fl | O_NONBLOCK);
        unsigned char h[SC__RV_HELLO];
        int got = sc__dist_io(c, h, 8, 0, dl, 0);
        if (got <= 0 || sc__get32(h) != SC__RV_MAGIC) { close(c); continue; } /* not one of ours, or it left */
        if (sc__get32(h + 4) != SC__RV_VERSION) {
            snprintf(msg, sizeof msg, "a peer at %s speaks rendezvous protocol %u, rank 0 speaks %d (another build of "
                     "slidecheck)", sc__dist_peer(c, ha, sizeof ha), sc__get32(h + 4), SC__RV_VERSION);
            sc__dist_reply(c, SC_ERROR_INVALID_ARGS, msg, e->node, multi, NULL, 0, sc__trace_now_ns() + 2000000000ll);
            close(c);
            r = sc__fail(SC_ERROR_INVALID_ARGS, "rendezvous on %s: %s", where, msg);
            break;
        }
        if (sc__dist_io(c, h + 8, sizeof h - 8, 0, dl, 0) != 1) { close(c); continue; }
        int rank = (int)sc__get32(h + 8), world = (int)sc__get32(h + 12), node = (int)sc__get32(h + 28);
        uint64_t ck = (uint64_t)sc__get32(h + 16) | (uint64_t)sc__get32(h + 20) << 32;
        size_t bb = sc__get32(h + 24);
        multi = multi || node != e->node;
        if (world != W || rank < 1 || rank >= W || fds[rank] >= 0 || bb != blob_bytes || ck != check) {
            sc__dist_peer(c, ha, sizeof ha);
            if (world != W)
                snprintf(msg, sizeof msg, "%s at %s says WORLD_SIZE=%d, rank 0 has %d",
                         sc__rank_name(na, sizeof na, rank, node, multi), ha, world, W);
            else if (rank < 1 || rank >= W)
                snprintf(msg, sizeof msg, "a peer at %s (node %d) claims rank %d of %d", ha, node, rank, W);
            else if (fds[rank] >= 0 && !multi && !strcmp(sc__dist_peer(fds[rank], hb, sizeof hb), ha))
                snprintf(msg, sizeof msg, "rank %d arrived twice", rank);
            else if (fds[rank] >= 0) /* the usual cause across machines: a launcher without its node rank */
                snprintf(msg, sizeof msg, "rank %d arrived twice (node %d at %s, then node %d at %s: two launchers "
                         "start the same ranks: give each machine its own GROUP_RANK, torchrun --node_rank)", rank,
                         nodes[rank], sc__dist_peer(fds[rank], hb, sizeof hb), node, ha);
            else if (ck != check)
                snprintf(msg, sizeof msg, "%s runs another configuration than rank 0 (check %016llx vs %016llx: model, "
                         "shapes, optimizer, data-parallel settings or token file differ)", sc__rank_name(na, sizeof na, rank, node, multi),
                         (unsigned long long)ck, (unsigned long long)check);
            else snprintf(msg, sizeof msg, "%s: protocol mismatch", sc__rank_name(na, sizeof na, rank, node, multi));
            sc__dist_reply(c, SC_ERROR_INVALID_ARGS, msg, e->node, multi, NULL, 0, sc__trace_now_ns() + 2000000000ll);
            close(c);
            r = sc__fail(SC_ERROR_INVALID_ARGS, "rendezvous on %s: %s", where, msg);
            break;
        }
        fds[rank] = c;
        nodes[rank] = node;
        arrived++;
    }
    /* everyone who came hears the outcome, so no rank waits for its own timeout (the replies get
       2 s of their own: the deadline may be what ended the wait) */
    int64_t rdl = sc__trace_now_ns() + 2000000000ll;
    for (int i = 1; i < W; i++)
        if (fds[i] >= 0) {
            sc__dist_reply(fds[i], r, r == SC_SUCCESS ? "" : sc_last_error(), e->node, multi, blob, blob_bytes, rdl);
            if (keep && r == SC_SUCCESS) keep[i] = fds[i];
            else close(fds[i]);
        }
    if (keep && r == SC_SUCCESS) {
        memcpy(nodes_out, nodes, sizeof(int) * (size_t)W);
        *multi_out = multi;
    }
    SC_FREE(fds);
    SC_FREE(nodes);
    close(lfd);
    return r;
}

/* keep != NULL: on success the connection to rank 0 stays open in *keep, *node0 = rank 0's node
   and *multi = whether the ranks span several nodes. ss: MASTER_ADDR's n addresses, tried in
   turn until rank 0 listens or the deadline. */
static sc_result sc__dist_join(const sc_dist_env *e, const struct sockaddr_storage *ss, const socklen_t *len, int n,
                               uint64_t check, void *blob, size_t blob_bytes, int64_t dl, int *keep, int *node0, int *multi)
{
    char where[300], last[160] = "no answer", me[48], ha[64];
    snprintf(where, sizeof where, "%s:%d", e->master_addr, e->master_port);
    sc__rank_name(me, sizeof me, e->rank, e->node, e->node_count > 1);
    int fd = -1;
    for (int k = 0; fd < 0; k++) { /* rank 0 may not listen yet: retry until the deadline */
        if (sc__dist_ms_left(dl) <= 0)
            return sc__fail(SC_ERROR_TIMEOUT, "rendezvous: %s could not reach rank 0 at %s within %g s (%s)", me, where,
                            e->timeout_s, last);
        const struct sockaddr_storage *a = &ss[k % n];
        fd = sc__dist_socket(a->ss_family);
        if (fd < 0) return sc__fail(SC_ERROR_IO, "rendezvous: socket: %s", strerror(errno));
        int ok = connect(fd, (const struct sockaddr *)a, len[k % n]) == 0, err = ok ? 0 : errno;
        if (!ok && err == EINPROGRESS) {
            int64_t step = sc__trace_now_ns() + 1000000000ll;
            int w = sc__dist_wait(fd, POLLOUT, step < dl ? step : dl);
            socklen_t el = sizeof err;
            err = 0;
            ok = w == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0;
        }
        if (!ok) {
            if (n > 1) snprintf(last, sizeof last, "%s: %s", sc__dist_host(a, ha, sizeof ha), err ? strerror(err) : "no answer");
            else snprintf(last, sizeof last, "%s", err ? strerror(err) : "no answer");
            close(fd);
            fd = -1;
            if ((k + 1) % n == 0) { /* 50 ms between rounds */
                struct pollfd none;
                none.fd = -1, none.events = 0, none.revents = 0;
                (void)poll(&none, 0, 50);
            }
        }
    }
    /* connected: rank 0 answers once every rank is there, or at its own deadline */
    double grace = sc__dist_grace_s(e->timeout_s);
    dl += (int64_t)(grace * 1e9);
    unsigned char h[SC__RV_HELLO];
    sc__put32(h, SC__RV_MAGIC);
    sc__put32(h + 4, SC__RV_VERSION);
    sc__put32(h + 8, (uint32_t)e->rank);
    sc__put32(h + 12, (uint32_t)e->world_size);
    sc__put32(h + 16, (uint32_t)check);
    sc__put32(h + 20, (uint32_t)(check >> 32));
    sc__put32(h + 24, (uint32_t)blob_bytes);
    sc__put32(h + 28, (uint32_t)e->node);
    unsigned char rh[SC__RV_REPLY];
    int io = sc__dist_io(fd, h, sizeof h, 1, dl, 0);
    if (io == 1) io = sc__dist_io(fd, rh, sizeof rh, 0, dl, 0);
    sc_result r = SC_SUCCESS;
    if (io != 1) {
        r = io == 0 ? sc__fail(SC_ERROR_TIMEOUT, "rendezvous: %s reached %s but rank 0 did not answer within %g s "
                               "(it waits for every rank)", me, where, e->timeout_s + grace)
                    : sc__fail(SC_ERROR_IO, "rendezvous: %s: rank 0 at %s closed the connection", me, where);
    } else {
        int32_t st = (int32_t)sc__get32(rh);
        uint32_t ml = sc__get32(rh + 4);
        char msg[1100] = "";
        if (node0) *node0 = (int)sc__get32(rh + 8);
        if (multi) *multi = sc__get32(rh + 12) != 0;
        if (ml >= sizeof msg || sc__dist_io(fd, msg, ml, 0, dl, 0) != 1)
            r = sc__fail(SC_ERROR_IO, "rendezvous: %s: a malformed answer from rank 0", me);
        else if (st != 0) {
            msg[ml] = 0;
            sc_result code = st == SC_ERROR_TIMEOUT ? SC_ERROR_TIMEOUT : st == SC_ERROR_IO ? SC_ERROR_IO : SC_ERROR_INVALID_ARGS;
            r = sc__fail(code, "rendezvous: rank 0 stopped: %s", msg);
        } else if (sc__dist_io(fd, blob, blob_bytes, 0, dl, 0) != 1)
            r = sc__fail(SC_ERROR_IO, "rendezvous: %s: rank 0's id did not arrive", me);
    }
    if (keep && r == SC_SUCCESS) *keep = fd;
    else close(fd);
    return r;
}
#endif

#define SC__RV_MAX_BLOB 65536

/* keep, nodes, multi: see sc__dist_serve and sc__dist_join (NULL: a rendezvous only) */
static sc_result sc__dist_meet(const sc_dist_env *e, uint64_t check, void *blob, size_t blob_bytes, int *keep, int *nodes,
                               int *multi)
{
    if (!e || (blob_bytes && !blob) || blob_bytes > SC__RV_MAX_BLOB)
        return sc__fail(SC_ERROR_INVALID_ARGS, "sc_dist_rendezvous: NULL argument or blob over %d bytes", SC__RV_MAX_BLOB);
    if (e->world_size <= 1) return SC_SUCCESS;
#ifdef _WIN32
    (void)check, (void)keep, (void)nodes, (void)multi;
    return sc__fail(SC_ERROR_UNSUPPORTED, "sc_dist_rendezvous: several processes need a POSIX system");
#else
    if (e->rank < 0 || e->rank >= e->world_size || e->master_port < 1 || e->master_port > 65535 || !(e->timeout_s > 0) ||
        e->node < 0 || (e->node_count > 0 && e->node >= e->node_count))
        return sc__fail(SC_ERROR_INVALID_ARGS, "sc_dist_rendezvous: rank %d of %d, node %d of %d, port %d, timeout %g s",
                        e->rank, e->world_size, e->node, e->node_count, e->master_port, e->timeout_s);
    int64_t dl = sc__trace_now_ns() + (int64_t)(e->timeout_s * 1e9);
    if (e->rank == 0) {
        struct sockaddr_storage ss;
        socklen_t len = 0;
        char desc[400];
        SC__TRY(sc__dist_listen_addr(e, &ss, &len, desc, sizeof desc));
        return sc__dist_serve(e, &ss, len, desc, check, blob, blob_bytes, dl, keep, nodes, multi);
    }
    struct sockaddr_storage ss[SC__DIST_ADDRS];
    socklen_t len[SC__DIST_ADDRS];
    int n = 0;
    SC__TRY(sc__dist_resolve(e, ss, len, &n));
    return sc__dist_join(e, ss, len, n, check, blob, blob_bytes, dl, keep, nodes, multi);
#endif
}

SCDEF sc_result sc_dist_rendezvous(const sc_dist_env *e, uint64_t check, void *blob, size_t blob_bytes)
{
    return sc__dist_meet(e, check, blob, blob_bytes, NULL, NULL, NULL);
}

struct sc_dist_comm {
    int rank, world, broken, multi;
    double timeout_s;
    int *fds;   /* rank 0: fds[r] to rank r (r >= 1); the others: fds[0] to rank 0 */
    int *nodes; /* rank 0: every rank's node; the others: rank 0's and their own */
    char why[400]; /* what broke the channel, for the calls after */
};

SCDEF sc_result sc_dist_comm_open(sc_dist_comm **out, const sc_dist_env *e, uint64_t check, void *blob,
                                  size_t blob_bytes)
{
    if (!out || !e) return sc__fail(SC_ERROR_INVALID_ARGS, "sc_dist_comm_open: NULL argument");
    *out = NULL;
    sc_dist_comm *c = (sc_dist_comm *)SC_MALLOC(sizeof *c);
    int W = e->world_size > 1 ? e->world_size : 1;
    int *fds = (int *)SC_MALLOC(sizeof(int) * (size_t)W), *nodes = (int *)SC_MALLOC(sizeof(int) * (size_t)W);
    if (!c || !fds || !nodes) {
        SC_FREE(c);
        SC_FREE(fds);
        SC_FREE(nodes);
        return sc__fail(SC_ERROR_OUT_OF_MEMORY, "sc_dist_comm_open: host malloc failed");
    }
    memset(c, 0, sizeof *c);
    for (int i = 0; i < W; i++) fds[i] = nodes[i] = -1;
    c->rank = W > 1 ? e->rank : 0, c->world = W, c->timeout_s = e->timeout_s, c->fds = fds, c->nodes = nodes;
    c->multi = e->node_count > 1;
    nodes[c->rank] = e->node;
    sc_result r = sc__dist_meet(e, check, blob, blob_bytes, fds, nodes, &c->multi);
    if (r != SC_SUCCESS) {
        sc_dist_comm_close(c);
        return r;
    }
    *out = c;
    return SC_SUCCESS;
}

SCDEF void sc_dist_comm_close(sc_dist_comm *c)
{
    if (!c) return;
#ifndef _WIN32
    for (int i = 0; i < c->world; i++)
        if (c->fds[i] >= 0) close(c->fds[i]);
#endif
    SC_FREE(c->fds);
    SC_FREE(c->nodes);
    SC_FREE(c);
}

/* each exchange's deadline: the environment's timeout from now, with the grace on the ranks
   other than 0 (sc__dist_grace_s) */
static double sc__comm_wait_s(const sc_dist_comm *c)
{
#ifndef _WIN32
    if (c->rank > 0) return c->timeout_s + sc__dist_grace_s(c->timeout_s);
#endif
    return c->timeout_s;
}
static int64_t sc__comm_deadline(const sc_dist_comm *c) { return sc__trace_now_ns() + (int64_t)(sc__comm_wait_s(c) * 1e9); }

#ifndef _WIN32
/* Rank 0's messages to the others start with a head: DATA (the bytes follow) or STOP (rank 0
   stopped the channel: the rank that broke it, its node, how, and the timeout in ms follow), so
   that every rank names the rank that broke it, not only rank 0. The others send their bytes
   bare: rank 0 knows what comes. */
#define SC__CH_DATA 0x41544144u /* "DATA" */
#define SC__CH_STOP 0x504f5453u /* "STOP" */
#define SC__CH_HEAD 20

/* The channel breaks because rank `peer` (node `node`) closed it (how 0) or did not answer in
   time (how 1). Rank 0 first tells every other rank so (a STOP head); then every connection
   closes, so the others' calls end at once instead of at their timeouts, and every later call
   fails at once. `stop` is the message of a STOP head this rank received from rank 0. */
static sc_result sc__comm_break(sc_dist_comm *c, int peer, int node, int how, double timeout_s, int stop,
                                const char *what)
{
    char me[48], who[48];
    sc__rank_name(me, sizeof me, c->rank, c->nodes[c->rank], c->multi);
    sc__rank_name(who, sizeof who, peer, node, c->multi);
    if (c->rank == 0) {
        unsigned char h[SC__CH_HEAD];
        double ms = timeout_s * 1e3;
        sc__put32(h, SC__CH_STOP);
        sc__put32(h + 4, (uint32_t)peer);
        sc__put32(h + 8, (uint32_t)node);
        sc__put32(h + 12, (uint32_t)how);
        sc__put32(h + 16, (uint32_t)(ms < 4e9 ? ms : 4e9));
        int64_t dl = sc__trace_now_ns() + 1000000000ll; /* the others read their heads: room in every buffer */
        for (int q = 1; q < c->world; q++)
            if (q != peer && c->fds[q] >= 0 && sc__dist_io(c->fds[q], h, sizeof h, 1, dl, 0) == 1)
                (void)shutdown(c->fds[q], SHUT_WR); /* the head, then the end: no reset before it */
    }
    for (int i = 0; i < c->world; i++)
        if (c->fds[i] >= 0) close(c->fds[i]), c->fds[i] = -1;
    c->broken = 1;
    if (how == 1) snprintf(c->why, sizeof c->why, "%s did not answer within %g s", who, timeout_s);
    else snprintf(c->why, sizeof c->why, "%s closed the connection (it stopped, or broke the channel)", who);
    if (stop) {
        size_t n = strlen(c->why);
        snprintf(c->why + n, sizeof c->why - n, "; rank 0 stopped the channel");
    }
    return sc__fail(how == 1 && !stop ? SC_ERROR_TIMEOUT : SC_ERROR_IO, "%s: %s: %s", what, me, c->why);
}

/* the ranks other than 0: rank 0's head; SC_SUCCESS when data follows */
static sc_result sc__comm_head(sc_dist_comm *c, int64_t dl, const char *what)
{
    unsigned char h[SC__CH_HEAD];
    int io = sc__dist_io(c->fds[0], h, sizeof h, 0, dl, 0);
    if (io != 1) return sc__comm_break(c, 0, c->nodes[0], io == 0, sc__comm_wait_s(c), 0, what);
    uint32_t tag = sc__get32(h);
    if (tag == SC__CH_DATA) return SC_SUCCESS;
    if (tag != SC__CH_STOP) return sc__comm_break(c, 0, c->nodes[0], 0, 0, 0, what);
    return sc__comm_break(c, (int)sc__get32(h + 4), (int)sc__get32(h + 8), sc__get32(h + 12) == 1,
                          sc__get32(h + 16) / 1e3, 1, what);
}

/* rank 0: n bytes from rank p */
static sc_result sc__comm_recv(sc_dist_comm *c, int p, void *buf, size_t n, int64_t dl, const char *what)
{
    int io = sc__dist_io(c->fds[p], buf, n, 0, dl, 0);
    return io == 1 ? SC_SUCCESS : sc__comm_break(c, p, c->nodes[p], io == 0, c->timeout_s, 0, what);
}

/* rank 0: a DATA head and n bytes to rank p */
static sc_result sc__comm_send(sc_dist_comm *c, int p, const void *buf, size_t n, int64_t dl, const char *what)
{
    unsigned char h[SC__CH_HEAD];
    memset(h, 0, sizeof h);
    sc__put32(h, SC__CH_DATA);
    int io = sc__dist_io(c->fds[p], h, sizeof h, 1, dl, 0);
    if (io == 1) io = sc__dist_io(c->fds[p], (void *)buf, n, 1, dl, 0);
    return io == 1 ? SC_SUCCESS : sc__comm_break(c, p, c->nodes[p], io == 0, c->timeout_s, 0, what);
}

/* the others: n bytes up to rank 0, or rank 0's STOP if it comes meanwhile */
static sc_result sc__comm_up(sc_dist_comm *c, const void *buf, size_t n, int64_t dl, const char *what)
{
    int io = sc__dist_io(c->fds[0], (void *)buf, n, 1, dl, 1);
    if (io == 1) return SC_SUCCESS;
    if (io != 2) return sc__comm_break(c, 0, c->nodes[0], io == 0, sc__comm_wait_s(c), 0, what);
    sc_result r = sc__comm_head(c, dl, what); /* rank 0 sends nothing unasked but a STOP */
    return r != SC_SUCCESS ? r : sc__comm_break(c, 0, c->nodes[0], 0, 0, 0, what);
}

/* the others: rank 0's head, then n bytes */
static sc_result sc__comm_down(sc_dist_comm *c, void *buf, size_t n, int64_t dl, const char *what)
{
    SC__TRY(sc__comm_head(c, dl, what));
    int io = sc__dist_io(c->fds[0], buf, n, 0, dl, 0);
    return io == 1 ? SC_SUCCESS : sc__comm_break(c, 0, c->nodes[0], io == 0, sc__comm_wait_s(c), 0, what);
}
#else /* no sockets: a comm never holds more than one rank here, so the collectives never get this far */
static sc_result sc__comm_none(const char *what)
{
    return sc__fail(SC_ERROR_UNSUPPORTED, "%s: several processes need a POSIX system", what);
}
static sc_result sc__comm_recv(sc_dist_comm *c, int p, void *buf, size_t n, int64_t dl, const char *what)
{
    (void)c, (void)p, (void)buf, (void)n, (void)dl;
    return sc__comm_none(what);
}
static sc_result sc__comm_send(sc_dist_comm *c, int p, const void *buf, size_t n, int64_t dl, const char *what)
{
    (void)c, (void)p, (void)buf, (void)n, (void)dl;
    return sc__comm_none(what);
}
static sc_result sc__comm_up(sc_dist_comm *c, const void *buf, size_t n, int64_t dl, const char *what)
{
    (void)c, (void)buf, (void)n, (void)dl;
    return sc__comm_none(what);
}
static sc_result sc__comm_down(sc_dist_comm *c, void *buf, size_t n, int64_t dl, const char *what)
{
    (void)c, (void)buf, (void)n, (void)dl;
    return sc__comm_none(what);
}
#endif

/* rank r's part [lo, hi) of n elements over W ranks: the first n % W parts one element longer */
static void sc__part(size_t n, int r, int W, size_t *lo, size_t *hi)
{
    size_t q = n / (size_t)W, e = n % (size_t)W, rr = (size_t)r;
    *lo = q * rr + (rr < e ? rr : e);
    *hi = *lo + q + (rr < e);
}

static sc_result sc__comm_ready(const sc_dist_comm *c, const char *what)
{
    if (!c) return sc__fail(SC_ERROR_INVALID_ARGS, "%s: NULL comm", what);
    if (c->broken) return sc__fail(SC_ERROR_IO, "%s: rank %d: the channel broke earlier (%s)", what, c->rank, c->why);
    return SC_SUCCESS;
}

/* a collective over one buffer of n elements: the channel usable, and *skip = 1 when there is
   nothing to move (one rank, or n = 0) */
static sc_result sc__comm_start(const sc_dist_comm *c, const char *what, const void *buf, size_t n, int *skip)
{
    *skip = 1;
    SC__TRY(sc__comm_ready(c, what));
    if (c->world == 1 || n == 0) return SC_SUCCESS;
    if (!buf) return sc__fail(SC_ERROR_INVALID_ARGS, "%s: NULL buffer", what);
    *skip = 0;
    return SC_SUCCESS;
}

#define SC__COMM_CHUNK ((size_t)1 << 16) /* floats per round: rank 0 holds one chunk of one peer */

SCDEF sc_result sc_dist_allreduce_f32(sc_dist_comm *c, float *buf, size_t n)
{
    const char *what = "allreduce";
    int skip;
    SC__TRY(sc__comm_start(c, what, buf, n, &skip));
    if (skip) return SC_SUCCESS;
    float *tmp = c->rank == 0 ? (float *)SC_MALLOC(sizeof(float) * (n < SC__COMM_CHUNK ? n : SC__COMM_CHUNK)) : NULL;
    if (c->rank == 0 && !tmp) return sc__fail(SC_ERROR_OUT_OF_MEMORY, "allreduce: host malloc failed");
    sc_result r = SC_SUCCESS;
    for (size_t off = 0; off < n && r == SC_SUCCESS; off += SC__COMM_CHUNK) {
        size_t m = n - off < SC__COMM_CHUNK ? n - off : SC__COMM_CHUNK;
        int64_t dl = sc__comm_deadline(c);
        if (c->rank == 0) {
            for (int p = 1; p < c->world && r == SC_SUCCESS; p++) {
                r = sc__comm_recv(c, p, tmp, m * sizeof(float), dl, what);
                for (size_t i = 0; r == SC_SUCCESS && i < m; i++) buf[off + i] += tmp[i];
            }
            for (int p = 1; p < c->world && r == SC_SUCCESS; p++)
                r = sc__comm_send(c, p, buf + off, m * sizeof(float), dl, what);
        } else {
            r = sc__comm_up(c, buf + off, m * sizeof(float), dl, what);
            if (r == SC_SUCCESS) r = sc__comm_down(c, buf + off, m * sizeof(float), dl, what);
        }
    }
    SC_FREE(tmp);
    return r;
}

SCDEF sc_result sc_dist_gather(sc_dist_comm *c, const void *mine, void *all, size_t bytes)
{
    const char *what = "gather";
    SC__TRY(sc__comm_ready(c, what));
    if (bytes && (!mine || (c->rank == 0 && !all))) return sc__fail(SC_ERROR_INVALID_ARGS, "gather: NULL buffer");
    if (c->rank == 0 && bytes) memcpy(all, mine, bytes);
    if (c->world == 1 || bytes == 0) return SC_SUCCESS;
    int64_t dl = sc__comm_deadline(c);
    if (c->rank != 0) return sc__comm_up(c, mine, bytes, dl, what);
    for (int p = 1; p < c->world; p++) SC__TRY(sc__comm_recv(c, p, (char *)all + (size_t)p * bytes, bytes, dl, what));
    return SC_SUCCESS;
}

/* rank 0's buf[0, bytes) to every rank, in chunks (each with its own deadline) */
static sc_result sc__comm_from0(sc_dist_comm *c, void *buf, size_t bytes, const char *what)
{
    const size_t chunk = SC__COMM_CHUNK * sizeof(float);
    for (size_t off = 0; off < bytes; off += chunk) {
        size_t m = bytes - off < chunk ? bytes - off : chunk;
        int64_t dl = sc__comm_deadline(c);
        if (c->rank != 0) SC__TRY(sc__comm_down(c, (char *)buf + off, m, dl, what));
        else
            for (int p = 1; p < c->world; p++) SC__TRY(sc__comm_send(c, p, (char *)buf + off, m, dl, what));
    }
    return SC_SUCCESS;
}

SCDEF sc_result sc_dist_broadcast(sc_dist_comm *c, void *buf, size_t bytes)
{
    const char *what = "broadcast";
    int skip;
    SC__TRY(sc__comm_start(c, what, buf, bytes, &skip));
    return skip ? SC_SUCCESS : sc__comm_from0(c, buf, bytes, what);
}

SCDEF void sc_dist_part(const sc_dist_comm *c, size_t n, size_t *lo, size_t *hi)
{
    sc__part(n, c ? c->rank : 0, c ? c->world : 1, lo, hi);
}

SCDEF sc_result sc_dist_allgather_f32(sc_dist_comm *c, float *buf, size_t n)
{
    const char *what = "allgather";
    int skip;
    SC__TRY(sc__comm_start(c, what, buf, n, &skip));
    if (skip) return SC_SUCCESS;
    /* rank 0 collects every part in place, then hands the whole buffer to each rank, in chunks */
    int64_t dl = sc__comm_deadline(c);
    size_t lo, hi;
    if (c->rank != 0) { /* this rank's part up */
        sc__part(n, c->rank, c->world, &lo, &hi);
        SC__TRY(sc__comm_up(c, buf + lo, (hi - lo) * sizeof(float), dl, what));
    } else
        for (int p = 1; p < c->world; p++) { /* every other part in */
            sc__part(n, p, c->world, &lo, &hi);
            SC__TRY(sc__comm_recv(c, p, buf + lo, (hi - lo) * sizeof(float), dl, what));
        }
    return sc__comm_from0(c, buf, n * sizeof(float), what);
}

SCDEF int sc_dist_comm_rank(const sc_dist_comm *c) { return c ? c->rank : 0; }
#ifdef SLIDECHECK_CUDA
static double sc__comm_timeout(const sc_dist_comm *c) { return c ? c->timeout_s : 60.0; }
#endif
SCDEF int sc_dist_comm_world(const sc_dist_comm *c) { return c ? c->world : 1; }

SCDEF sc_result sc_dist_barrier(sc_dist_comm *c)
{
    float x = 0.0f;
    return sc_dist_allreduce_f32(c, &x, 1);
}

#ifdef SLIDECHECK_TESTING
SCDEF void sc__slide_split_head_rows(int V, int C, int W, int r, size_t k[2], size_t lo[2], size_t hi[2])
{
    sc_model *m = (sc_model *)SC_MALLOC(sizeof *m);
    sc_dist_comm cm;
    SC_ASSERT(m);
    memset(m, 0, sizeof *m);
    memset(&cm, 0, sizeof cm);
    cm.rank = r, cm.world = W;
    m->cfg.vocab_size = V, m->cfg.hidden_size = C, m->cfg.tie_embeddings = 1;
    m->mc.comm = &cm;
    m->nccl = 1;
    sc__slide_head_norm_chunks(m, r, &k[0], &k[1]);
    sc__slide_grad_rows(m, lo, hi);
    SC_FREE(m);
}
#endif
#endif /* SLIDECHECK_IMPLEMENTATION_DONE */
#endif /* SLIDECHECK_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
MIT License

Copyright (c) 2026 the slidecheck authors

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
*/
