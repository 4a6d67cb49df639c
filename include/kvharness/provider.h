/* kvharness provider ABI: how a shared library supplies kernels to the harness.
 *
 * ABI 2 (this header's KVH_ABI_VERSION). A provider exports
 *
 *   int kvh_provider_open(const kvh_open_args* args, kvh_provider* out);
 *
 * (KVH_PROVIDER_OPEN_SYMBOL) which receives a configuration string (for the
 * Python bridge: the module to load; one bridge library serves many modules)
 * and fills `out` with an array of kernel descriptors. Every kernel carries a
 * `context` pointer that the harness passes back on every call. The built-in
 * kernels register through this same interface.
 *
 * ABI 1 providers (a function KVH_PROVIDER_SYMBOL_V1 returning an array of
 * kvh_kernel_desc_v1) keep loading: the harness adapts them. Their structs are
 * frozen below under *_v1 names; a provider compiled against ABI 1's header
 * knew them without the suffix.
 *
 * Growable structs. Every struct that starts with `uint32_t struct_size` may
 * gain fields at its end in later versions, never anywhere else. Rules:
 *  - the caller (whoever fills the struct) zero-fills it and sets struct_size
 *    to sizeof(the struct as it was compiled); C++ callers get that from the
 *    default member initializer (KVH_STRUCT_SIZE), so `kvh_write_args a{};`
 *    is complete;
 *  - the callee reads only fields that lie entirely within struct_size
 *    (KVH_HAS_FIELD); a field beyond it has its documented default (zero,
 *    unless stated otherwise);
 *  - arrays of growable structs are walked with a stride of the first
 *    element's struct_size (kvh_provider.kernels).
 * So a provider compiled against a smaller struct ignores fields it does not
 * know, and one compiled against a larger struct sees the new fields absent.
 *
 * Tensors are device pointers with PyTorch semantics: `data` already includes
 * the view's storage offset, shapes and strides are in elements, outermost
 * first, and strides may be anything a view can have.
 *
 * Return value of every kernel entry point: 0 on success; KVH_RAISED when the
 * provider itself failed (a Python exception, a C++ exception caught at the
 * boundary): last_error(context) says what, and the harness records the case
 * as CRASH launch_error; any other value is a HIP error code from the kernel
 * (hipErrorInvalidValue = 1 for arguments the kernel does not accept: the
 * kernel refused, FAIL launch_error).
 * Appended in kvharness 0.5 (call-time refusal): KVH_UNSUPPORTED from a kernel
 * entry point, a workspace_bytes or a workspaces function means the kernel
 * declines this case at call time (a limit its capabilities cannot express: a
 * power-of-two head size, shared memory at a page size; Python providers raise
 * kvharness.Unsupported(reason)); last_error(context) is the reason. The harness
 * treats it like a case outside the declared capabilities: UNSUPPORTED when the
 * case names the kernel, `misroute` when a router picked it, XPASS when a
 * declaration expected the case to fail. The harness never calls it again for
 * that case, so the kernel need not leave its outputs written; it still checks
 * what lies outside them: a kernel that wrote outside its views, into its
 * inputs or (a reader) into the cache before declining is FAIL out_of_view_write.
 *
 * Routers (kvharness 0.5, KVH_ROLE_ROUTER): a descriptor whose `route` entry names the reader a
 * stack's own dispatcher picks for a case (kvh_route_args); the harness uses it as a routing
 * policy of the descriptor's name. KVH_RAISED from route is the case's CRASH (component router).
 */
#ifndef KVHARNESS_PROVIDER_H
#define KVHARNESS_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KVH_ABI_VERSION 2
#define KVH_PROVIDER_OPEN_SYMBOL "kvh_provider_open"
#define KVH_PROVIDER_SYMBOL_V1 "kvh_provider_kernels"
#define KVH_MAX_DIMS 6
#define KVH_MAX_WORKSPACES 8 /* typed workspaces of one reader call */
#define KVH_MAX_PLAN_TENSORS 8 /* plan tensors of one reader call (kvharness 0.6) */

/** Return code of a kernel entry point: the provider failed (raised), not the kernel. */
#define KVH_RAISED (-1)
/* ---- appended in kvharness 0.5 (call-time refusal) ---- */
/** Return code of a kernel, workspace_bytes or workspaces entry point: the kernel declines this
 *  case (last_error says why); the case is UNSUPPORTED (a misroute when a router picked the kernel). */
#define KVH_UNSUPPORTED (-2)

#ifdef __cplusplus
#define KVH_STRUCT_SIZE(T) uint32_t struct_size = sizeof(T)
#else
#define KVH_STRUCT_SIZE(T) uint32_t struct_size
#endif
/** Non-zero when `field` of growable struct type T lies within ptr->struct_size. */
#define KVH_HAS_FIELD(ptr, T, field) \
  ((size_t)(ptr)->struct_size >= offsetof(T, field) + sizeof(((T*)0)->field))

/** Element types. fp16 = IEEE binary16, bf16 = bfloat16, i64 = int64_t.
 *  FP8 codes (one byte each) appear only as cache dtypes (kvh_tensor.dtype of
 *  key_cache/value_cache):
 *  E4M3FN   (OCP FP8 E4M3, PyTorch float8_e4m3fn): bias 7, no Inf, NaN = S.1111.111, max 448, -0 exists;
 *  E4M3FNUZ (PyTorch float8_e4m3fnuz, MI300's native fp8): bias 8, no Inf, no -0,
 *           0x80 is the only NaN, max 240. The same bits decode 2x apart. */
typedef enum kvh_dtype {
  KVH_DT_F16 = 1, KVH_DT_BF16 = 2, KVH_DT_I64 = 3, KVH_DT_F32 = 4, KVH_DT_I32 = 5,
  KVH_DT_FP8_E4M3FN = 6, KVH_DT_FP8_E4M3FNUZ = 7,
  /* appended in kvharness 0.6: int8 KV caches (a cache dtype only, like the fp8 codes): symmetric,
   * value = code * scale; a writer stores clamp(round_half_even(value / scale), -127, 127) (the
   * division in float32). -128 is never written. */
  KVH_DT_I8 = 8
} kvh_dtype;

/** Granularity of fp8/int8 dequant scales (k_scales/v_scales tensors, f32, any strides):
 *  NONE   no tensors; the float k_scale/v_scale of the reader args apply (1.0 for fp16/bf16 caches)
 *  TENSOR [1]
 *  HEAD   [num_kv_heads]
 *  BLOCK  [num_blocks, num_kv_heads]             (physical block id, kv head)
 *  TOKEN  [num_blocks, num_kv_heads, block_size] (per kv head and slot: per token and head)
 *  SLOT   [num_blocks, block_size]               (kvharness 0.6: per slot, shared by every kv head:
 *                                                 per token)
 *  Cache value = decode(code) * scale; a writer stores encode(value / scale) (fp8: round to nearest
 *  even, saturating to the format's largest finite value; int8: KVH_DT_I8). Scales are inputs of
 *  the writer (static quantization), never outputs. */
typedef enum kvh_scale_granularity {
  KVH_SCALES_NONE = 0, KVH_SCALES_TENSOR = 1, KVH_SCALES_HEAD = 2, KVH_SCALES_BLOCK = 3, KVH_SCALES_TOKEN = 4,
  KVH_SCALES_SLOT = 5
} kvh_scale_granularity;

/** Score modifiers a reader may support (kvh_capabilities.modifiers bits). */
typedef enum kvh_modifier {
  KVH_MOD_SLIDING_WINDOW = 1, KVH_MOD_SINKS = 2, KVH_MOD_SOFTCAP = 4, KVH_MOD_ALIBI = 8,
  KVH_MOD_NON_CAUSAL = 16 /* ragged queries with causal = 0 (every query token sees the whole sequence) */
} kvh_modifier;

/** Cache formats (DESIGN.md table), tensor shapes outermost first, x = 16 / sizeof(cache element):
 *  NHD:     K, V [num_blocks, block_size, num_kv_heads, head_size]
 *  PA_V1:   K [num_blocks, num_kv_heads, head_size/x, block_size, x]; V [num_blocks, num_kv_heads, head_size, block_size]
 *  SHUFFLE: K as PA_V1;  V [num_blocks, num_kv_heads, block_size/x, head_size, x]
 *  HND:     K, V [num_blocks, num_kv_heads, block_size, head_size]
 *  All are strided views: head_interleaved caches are HND views whose head stride is not dense. */
typedef enum kvh_cache_format {
  KVH_CACHE_NHD = 0, KVH_CACHE_PA_V1 = 1, KVH_CACHE_SHUFFLE = 2, KVH_CACHE_HND = 3,
  KVH_CACHE_MLA = 4 /* kvharness 0.6: the latent cache of multi-head latent attention (below) */
} kvh_cache_format;

/** MLA (kvharness 0.6; DeepSeek-V2/V3, Kimi-K2; vLLM concat_and_cache_mla and its MLA backends).
 *  R = kv_lora_rank (512), P = qk_rope_head_dim (64). One latent vector of R + P elements per token
 *  and no kv heads (num_kv_heads is 1 wherever it is asked):
 *    cache        [num_blocks, block_size, R + P], any strides; key_cache and value_cache are the
 *                 same view (the latent cache holds both)
 *  Writer (kvh_write_args):
 *    key   = kv_c [num_tokens, R], value = k_pe [num_tokens, P], any strides (often column views of
 *            one [num_tokens, R + P] projection);
 *    cache[slot / block_size, slot % block_size, 0:R] = kv_c[t], [R:R+P] = k_pe[t]; negative slots
 *    write nothing. fp8 caches: one per-tensor scale (kv_scales TENSOR, k_scales [1]; v_scales is
 *    the same tensor), code = fp8_encode(value / scale) as for the other formats.
 *  Reader (kvh_attention_args), decode or ragged as for the other formats, absorbed form:
 *    query [num_query_tokens, num_heads, R + P], out [num_query_tokens, num_heads, R] (R = out.shape[2]);
 *    score of head h and token t = scale * sum_{d < R+P} q[h, d] * cache[t, d] (then the modifiers);
 *    out[h] = sum_t softmax_t(score) * cache[t, 0:R]: one latent head shared by every query head.
 *    `scale` is the model's (DeepSeek: 1/sqrt(qk_nope_head_dim + qk_rope_head_dim)), not
 *    1/sqrt(R + P). fp8 caches dequantize with k_scale (kv_scales TENSOR or NONE). */

/** Where tensors live; the values are DLPack's DLDeviceType codes. */
typedef enum kvh_device_type { KVH_DEVICE_CPU = 1, KVH_DEVICE_CUDA = 2, KVH_DEVICE_ROCM = 10 } kvh_device_type;

/** A strided device tensor view (fixed layout, shared by ABI 1 and 2). */
typedef struct kvh_tensor {
  void* data;       /* device pointer to element [0,...,0] of the view */
  int32_t dtype;    /* kvh_dtype */
  int32_t ndim;
  int64_t shape[KVH_MAX_DIMS];
  int64_t stride[KVH_MAX_DIMS]; /* elements */
} kvh_tensor;

/* ---- appended in kvharness 0.7 (issue 23 (D): launch configurations) ----
 * A kernel may declare launch configurations (kvh_kernel_desc.launch_configs): the same kernel
 * launched another way (threads per block, partition size; a Triton kernel's num_warps,
 * num_stages and block constants). A case file's `launch_configs` key runs one case per selected
 * configuration; the call then carries it (kvh_attention_args.launch_config,
 * kvh_write_args.launch_config). Without the key a case runs the kernel's default launch only,
 * with launch_config null. */
/** One launch configuration. Fixed layout (never grows).
 *  name    unique within the kernel, 1..64 characters of [A-Za-z0-9_.-]: case files, case ids
 *          ("/cfg=NAME") and reports name it
 *  params  "KEY=VALUE" pairs joined by ',' ("threads=64,partition_size=256"; "" = none); KEY is
 *          [A-Za-z_][A-Za-z0-9_]*, VALUE has no ',' (the Python bridge passes them as keyword
 *          arguments, integers and floats as numbers) */
typedef struct kvh_launch_config {
  const char* name;
  const char* params;
} kvh_launch_config;

/** Arguments of a cache writer (vLLM reshape_and_cache* semantics). Growable.
 *  key, value   [num_tokens, num_kv_heads, head_size], any strides (often views of a fused QKV buffer)
 *  key_cache, value_cache  in the writer's cache format
 *  slot_mapping [num_tokens] int64; slot = block_id * block_size + offset; negative = padding, write nothing. */
typedef struct kvh_write_args {
  KVH_STRUCT_SIZE(struct kvh_write_args);
  uint32_t reserved; /* zero */
  kvh_tensor key, value, key_cache, value_cache, slot_mapping;
  int64_t block_size;
  /* ---- appended in kvharness 0.3 (fp8 caches) ---- */
  int32_t kv_scales;          /* kvh_scale_granularity; 0 (NONE) for fp16/bf16 caches */
  int32_t reserved2;          /* zero */
  kvh_tensor k_scales, v_scales; /* f32, shapes per kvh_scale_granularity; data null when NONE */
  /* ---- appended in kvharness 0.7 (issue 23 (D): launch configurations) ---- */
  const kvh_launch_config* launch_config; /* as kvh_attention_args.launch_config; null = default */
  /* Later versions append fields here. */
} kvh_write_args;

/** Arguments of a paged attention reader. Growable.
 *  Decode (every ABI): one query token per sequence, num_query_tokens = num_seqs.
 *  Ragged (kvharness 0.4, a reader whose capabilities declare max_query_len > 1): sequence s
 *  has q_s = query_start_loc[s+1] - query_start_loc[s] new query tokens (1 <= q_s <= L_s, the
 *  last q_s of its L_s = seq_lens[s] tokens; chunked prefill, speculative decode), packed:
 *  query row query_start_loc[s] + j is token j of sequence s. Older readers only ever get
 *  decode calls (q_s = 1), where every field below means what it meant before.
 *  out          [num_query_tokens, num_heads, head_size], dtype of query; written in full
 *  query        [num_query_tokens, num_heads, head_size], any strides (a view of a fused QKV buffer)
 *  key_cache    PA_V1/SHUFFLE [num_blocks, num_kv_heads, head_size/x, block_size, x];
 *               NHD/HND as value_cache (the reader's cache_format says which)
 *  value_cache  PA_V1 [num_blocks, num_kv_heads, head_size, block_size] or
 *               SHUFFLE [num_blocks, num_kv_heads, block_size/x, head_size, x] or
 *               NHD [num_blocks, block_size, num_kv_heads, head_size] or
 *               HND [num_blocks, num_kv_heads, block_size, head_size]
 *  block_tables [num_seqs, max_blocks_per_seq] int32, physical block (kernel page) ids;
 *               entries past a sequence's last page are padding (out of range)
 *  context_lens [num_seqs] int32, tokens of each sequence (>= 1), the new query tokens included
 *  GQA: query head h reads kv head h / (num_heads / num_kv_heads) (vLLM, aiter).
 *  workspace: device memory of at least workspace_bytes(args) bytes, for split-K partials
 *  (or typed workspaces: kvh_kernel_desc.workspaces).
 *  Every array the harness passes (block_tables, context_lens, seq_lens, query_start_loc, the
 *  scale tensors, sinks, alibi_slopes, workspaces) sits in its own guarded allocation whose
 *  margins are checked after the call: writing outside an array (or into a read-only one) is
 *  FAIL out_of_view_write naming it. Margins read back as: block_tables the padding id (a NaN
 *  page), context_lens/seq_lens 1, query_start_loc num_query_tokens + 1 (a phantom sequence
 *  writes past `out`), workspaces NaN. */
typedef struct kvh_attention_args {
  KVH_STRUCT_SIZE(struct kvh_attention_args);
  uint32_t reserved; /* zero */
  kvh_tensor out, query, key_cache, value_cache, block_tables, context_lens;
  int64_t block_size;
  int32_t max_context_len;
  float scale;            /* softmax scale, usually 1/sqrt(head_size) */
  float k_scale, v_scale; /* dequant scales for quantized caches; 1.0 otherwise */
  int32_t partition_size; /* split-K partition in tokens; 0 = the kernel's default */
  void* workspace;
  uint64_t workspace_bytes;
  /* ---- appended in kvharness 0.3 (fp8 caches, score modifiers) ----
   * Score of query head h (local index) and token t of a sequence of L tokens:
   *   s = scale * q.k;  s = softcap * tanh(s / softcap) when softcap > 0;
   *   s += alibi_slopes[h] * (t - (L - 1)) when alibi_slopes.data is set;
   *   t is masked when sliding_window > 0 and t < L - sliding_window;
   *   softmax over the unmasked tokens plus, when sinks.data is set, one extra
   *   logit sinks[h] that joins the denominator once and carries no value. */
  int32_t kv_scales;          /* kvh_scale_granularity of k_scales/v_scales */
  int32_t sliding_window;     /* left window in tokens, the query's own token included; 0 = off */
  kvh_tensor k_scales, v_scales; /* f32, shapes per kvh_scale_granularity; data null when NONE */
  float softcap;              /* logits soft-cap; 0 = off */
  int32_t head_offset;        /* global index of local query head 0 (tp_rank * num_heads), for ALiBi */
  kvh_tensor sinks;           /* f32 [num_heads], per local query head; data null = off */
  kvh_tensor alibi_slopes;    /* f32 [num_heads], per local query head, from the global head index; null = off */
  int64_t cache_block_size;   /* the cache manager's block size when it is a multiple of the kernel's
                                 page (block_size); block_tables are in kernel pages; 0 = block_size */
  /* ---- appended in kvharness 0.4 (ragged queries) ----
   * Query token j of sequence s (q_s new tokens, L_s tokens in all) sits at position
   *   p = L_s - q_s + j
   * and, when causal, sees keys t <= p (aligned to the sequence's end); with causal = 0 it sees
   * every t < L_s. The modifiers are relative to p, as decode's are to L - 1:
   *   s += alibi_slopes[h] * (t - p);  t is masked when sliding_window > 0 and t <= p - sliding_window.
   * Decode is q_s = 1, p = L_s - 1. The harness fills these on decode calls too. */
  kvh_tensor query_start_loc; /* int32 [num_seqs + 1], query_start_loc[0] = 0, nondecreasing (cu_seqlens_q) */
  kvh_tensor seq_lens;        /* int32 [num_seqs], tokens of each sequence: the values of context_lens */
  int32_t max_query_len;      /* largest q_s (1: a decode call) */
  int32_t num_query_tokens;   /* rows of query and out: query_start_loc[num_seqs] */
  int32_t causal;             /* 1: causal within each chunk; 0: every query token sees the whole sequence */
  int32_t num_workspaces;     /* typed workspaces below (kvh_kernel_desc.workspaces); 0 = none */
  kvh_tensor k_scale_tensor, v_scale_tensor; /* f32 [1]: k_scale and v_scale as tensors (stacks pass tensors) */
  kvh_tensor workspaces[KVH_MAX_WORKSPACES]; /* typed workspaces, as the reader declared them, filled
                                 with NaN (f32/f16/bf16) or 0x7FC0DEAD words (integer types) */
  /* ---- appended in kvharness 0.6 (MLA, split plans) ----
   * MLA readers (KVH_CACHE_MLA) get the shapes written beside kvh_cache_format. */
  int32_t num_plan_tensors;   /* tensors in plan (the reader's planner built them); 0 = no planner */
  int32_t reserved3;          /* zero */
  kvh_tensor plan[KVH_MAX_PLAN_TENSORS]; /* read-only device tensors, dense, as kvh_plan gave them */
  /* ---- appended in kvharness 0.7 (issue 23 (D): launch configurations) ---- */
  const kvh_launch_config* launch_config; /* the case's choice among the kernel's declared
                                 launch_configs (the harness's copy: compare names, not pointers);
                                 null = the kernel's default launch */
  /* Later versions append fields here. */
} kvh_attention_args;


/** One typed workspace a reader asks for (kvh_kernel_desc.workspaces): a dense tensor of
 *  `shape` (elements, outermost first) and `dtype`; `name` (NUL-terminated) names it in verdicts. */
typedef struct kvh_workspace_spec {
  int32_t dtype; /* kvh_dtype */
  int32_t ndim;  /* 1 .. KVH_MAX_DIMS */
  int64_t shape[KVH_MAX_DIMS];
  char name[32];
} kvh_workspace_spec;

/** Kernel roles. KVH_ROLE_ROUTER (kvharness 0.5): not a kernel but a routing policy (kvh_kernel_desc.route). */
typedef enum kvh_role { KVH_ROLE_WRITER = 1, KVH_ROLE_READER = 2, KVH_ROLE_ROUTER = 3 } kvh_role;

/** What a kernel accepts. Growable. A case outside it is UNSUPPORTED when the
 *  case names the kernel, and `misroute` when a router picked it. */
typedef struct kvh_capabilities {
  KVH_STRUCT_SIZE(struct kvh_capabilities);
  int32_t num_head_sizes;     /* 0: readers any multiple of x (8) up to 256, writers any */
  const int32_t* head_sizes;
  int32_t num_block_sizes;    /* 0: any */
  uint32_t dtypes;            /* bit (1u << kvh_dtype) per K/V/query dtype; 0: fp16 and bf16 */
  const int32_t* block_sizes;
  uint32_t cache_formats;     /* bit (1u << kvh_cache_format); 0: the kernel's cache_format only */
  int32_t max_gqa_ratio;      /* largest num_heads / num_kv_heads; 0: any */
  /* ---- appended in kvharness 0.3 ---- */
  uint32_t cache_dtypes;      /* bit (1u << kvh_dtype) per cache element type; 0: the K/V dtype only */
  uint32_t kv_scales;         /* bit (1u << kvh_scale_granularity) per granularity; 0: NONE only */
  uint32_t modifiers;         /* kvh_modifier bits; 0: none */
  /* ---- appended in kvharness 0.4 ---- */
  int32_t max_query_len;      /* largest q_s the reader takes; 0 or 1: decode only (a ragged case is
                                 UNSUPPORTED, or misroute when a router picked it) */
} kvh_capabilities;

typedef int (*kvh_write_fn)(void* context, const kvh_write_args* args, void* stream);
typedef int (*kvh_attention_fn)(void* context, const kvh_attention_args* args, void* stream);
/** Sets *bytes to the workspace `args` needs (args.workspace is null then); returns 0, KVH_RAISED
 *  or KVH_UNSUPPORTED. */
typedef int (*kvh_workspace_fn)(void* context, const kvh_attention_args* args, uint64_t* bytes);
/** Typed workspaces: fills specs[0 .. *count) (*count <= max_specs = KVH_MAX_WORKSPACES) for
 *  `args` (its workspaces are not set yet); returns 0, KVH_RAISED or KVH_UNSUPPORTED. */
typedef int (*kvh_workspaces_fn)(void* context, const kvh_attention_args* args, kvh_workspace_spec* specs,
                                 int32_t max_specs, int32_t* count);
/** The message of the last KVH_RAISED (the reason of the last KVH_UNSUPPORTED) on this context (this
 *  thread); valid until the next call on it. */
typedef const char* (*kvh_last_error_fn)(void* context);

/* ---- appended in kvharness 0.5 (device timing of a provider's kernel) ---- */

/** How kvh_timing.kernel_us was measured. */
typedef enum kvh_timing_method {
  KVH_TIMING_NONE = 0,         /* not measured */
  KVH_TIMING_GRAPH = 1,        /* device events around replays of a CUDA/HIP graph that captured the call */
  KVH_TIMING_EVENTS_BATCH = 2, /* device events around a batch of back-to-back eager calls, total / calls
                                  (an upper bound when the calls are host-bound: the device waits for them) */
  KVH_TIMING_HOST = 3,         /* host clock around each call (the cpu backend, where calls are synchronous) */
  KVH_TIMING_EVENTS = 4        /* device events around each launch (the harness's own loop, never a provider's) */
} kvh_timing_method;

/** What a provider's `time` entry measured. Growable: the harness zero-fills it and sets
 *  struct_size; the provider writes only the fields within struct_size.
 *  kernel_us  median device microseconds of one call: what the device spends on it
 *  host_us    median host microseconds of one eager call (the bridge's and the provider's
 *             host overhead: argument conversion, launcher, allocations; 0 = not measured)
 *  method     kvh_timing_method of kernel_us */
typedef struct kvh_timing {
  KVH_STRUCT_SIZE(struct kvh_timing);
  int32_t method;
  double kernel_us;
  double host_us;
  /* Later versions append fields here. */
} kvh_timing;

/** Times the kernel on `args` (kvh_write_args* for a writer, kvh_attention_args* for a reader,
 *  exactly those of the call the verdict came from): `warmup` untimed calls, then at least `reps`
 *  timed ones, results in *out. Called only after a PASS (the harness's own timing rules): a call is
 *  idempotent, so the provider may call the kernel as often as it needs. Returns 0, KVH_RAISED
 *  (last_error says why: the harness notes "timing: <why>" and keeps the verdict), or the kernel's
 *  error code. A provider that cannot time a call returns 0 with method KVH_TIMING_NONE. */
typedef int (*kvh_time_fn)(void* context, const void* args, void* stream, int32_t warmup, int32_t reps,
                           kvh_timing* out);

/* ---- appended in kvharness 0.5: the router role ----
 * A router is a routing policy a provider supplies (the stack's own dispatcher, e.g. aiter's
 * paged_attention_common): given one decode/prefill step as the stack's launcher sees it, it
 * names the reader it chose. Case files name it like a built-in policy (`routers = [NAME]`),
 * and `kvharness run --replace-router BUILTIN=NAME` routes a built-in policy's cases with it. */

/** Routing inputs of one step. Growable. Head counts are per rank (after tensor parallelism). */
typedef struct kvh_route_args {
  KVH_STRUCT_SIZE(struct kvh_route_args);
  uint32_t reserved;         /* zero */
  int64_t num_seqs;          /* sequences of the batch */
  int64_t num_heads;         /* query heads */
  int64_t num_kv_heads;      /* kv heads; divides num_heads */
  int64_t head_size;
  int64_t block_size;        /* tokens per kernel page */
  int64_t num_query_tokens;  /* rows of the query (q.shape[0]); num_seqs for decode */
  int64_t max_query_len;     /* longest query of a sequence; 1 for decode */
  int64_t max_context_len;   /* longest sequence, its new tokens included */
  int64_t compute_units;     /* the device's, or the case's target's (MI300X: 304, ...) */
  int32_t dtype;             /* kvh_dtype of query and out (fp16, bf16) */
  int32_t cache_dtype;       /* kvh_dtype of the cache elements (the fp8 codes for fp8 caches) */
  int32_t kv_scales;         /* kvh_scale_granularity of the fp8 scales; NONE for 16-bit caches */
  int32_t cache_format;      /* kvh_cache_format the case's cache has, or -1 when the router picks it */
  int32_t high_precision;    /* aiter's high_precision mode, 0..2 */
  int32_t causal;            /* 1 unless the case is non-causal */
  const char* target;        /* the case's named target ("MI355X"), or "" (device / cus=N) */
  /* ---- appended in kvharness 0.6 (MLA routing) ---- */
  int64_t kv_lora_rank;      /* > 0: an MLA step over the latent cache (num_kv_heads 1, head_size =
                                kv_lora_rank + qk_rope_head_dim); 0: paged attention */
  /* Later versions append fields here. */
} kvh_route_args;

#define KVH_ROUTE_NAME_SIZE 128
#define KVH_ROUTE_REASON_SIZE 512
/** What a router decided. The harness zero-fills it; the router writes NUL-terminated strings
 *  (truncated to the array sizes). `kernel` must name a registered reader (a router may map the
 *  library's kernel names to the harness's: aiter's ASM paged attention -> pa_fwd_asm); another
 *  name is a misroute naming it. `reason` says why, in the library's terms. */
typedef struct kvh_route_result {
  char kernel[KVH_ROUTE_NAME_SIZE];
  char reason[KVH_ROUTE_REASON_SIZE];
} kvh_route_result;

/** Routes one step: 0 with `out` filled, or KVH_RAISED (last_error says why: the case is a CRASH). */
typedef int (*kvh_route_fn)(void* context, const kvh_route_args* args, kvh_route_result* out);

/* ---- appended in kvharness 0.6: split plans ----
 * A reader may declare a planner (kvh_kernel_desc.plan): a host function that, from the step's
 * sequence lengths, head counts and compute units, builds the split metadata the kernel needs
 * (work lists, split counts, reduce maps: aiter's get_mla_metadata, FlashInfer's plan). The
 * harness calls it before every call of the reader, copies each tensor into its own guarded
 * device allocation and passes them in kvh_attention_args.plan; the kernel must not write them
 * (FAIL out_of_view_write names the tensor). The case judges the planner and the kernel together:
 * a plan made for another kernel variant is that pair's wrong output.
 * Order of one reader call: plan, then workspaces / workspace_bytes (their args already carry
 * plan and num_plan_tensors, so a workspace may be sized from a plan tensor's shape), then the
 * reader. A plan is checked before it is copied: num_tensors 0..KVH_MAX_PLAN_TENSORS, each spec
 * ndim 1..KVH_MAX_DIMS, dtype F16..I32, shape 0..2^40, name NUL-terminated, data non-null when
 * the tensor has elements; else the case is a CRASH of component "planner" naming the tensor.
 * compute_units is the case's target's (a named target or cus=N), else the device's. */
/** The host-side inputs of a planner. Growable. Arrays are host memory, valid during the call. */
typedef struct kvh_plan_args {
  KVH_STRUCT_SIZE(struct kvh_plan_args);
  uint32_t reserved;          /* zero */
  int64_t num_seqs;
  int64_t num_heads;          /* query heads on this rank */
  int64_t num_kv_heads;       /* 1 for MLA */
  int64_t head_size;          /* query/key head size (MLA: R + P) */
  int64_t block_size;         /* tokens per kernel page */
  int64_t compute_units;      /* the device's, or the case's target's */
  int32_t max_query_len;      /* 1 for decode */
  int32_t num_query_tokens;
  int32_t dtype;              /* kvh_dtype of query/out */
  int32_t cache_dtype;        /* kvh_dtype of the cache elements */
  const int32_t* seq_lens;        /* [num_seqs], tokens, the new query tokens included */
  const int32_t* query_start_loc; /* [num_seqs + 1] */
  /* Later versions append fields here. */
} kvh_plan_args;

/** What a planner built: num_tensors dense tensors (specs[i] gives dtype, shape and name; data[i]
 *  its host bytes, row-major). The provider owns the bytes; they stay valid until the next plan
 *  call on the same context. */
typedef struct kvh_plan {
  int32_t num_tensors;        /* 0 .. KVH_MAX_PLAN_TENSORS */
  int32_t reserved;
  kvh_workspace_spec specs[KVH_MAX_PLAN_TENSORS];
  const void* data[KVH_MAX_PLAN_TENSORS];
} kvh_plan;

/** Builds the plan of one reader call: 0, KVH_RAISED (a CRASH, component planner) or KVH_UNSUPPORTED. */
typedef int (*kvh_plan_fn)(void* context, const kvh_plan_args* args, kvh_plan* out);

/** One kernel a provider offers (ABI 2). Growable. `fixture` != 0 marks a
 *  known-bad kernel kept on purpose so that the harness can show it fails. */
typedef struct kvh_kernel_desc {
  KVH_STRUCT_SIZE(struct kvh_kernel_desc);
  uint32_t abi_version;    /* KVH_ABI_VERSION */
  const char* name;        /* unique, used in case files */
  const char* description;
  int32_t role;            /* kvh_role */
  int32_t cache_format;    /* kvh_cache_format */
  int32_t fixture;
  int32_t reserved;        /* zero */
  void* context;           /* passed back as the first argument of every call */
  kvh_write_fn write;      /* role == KVH_ROLE_WRITER */
  kvh_attention_fn attention;       /* role == KVH_ROLE_READER */
  kvh_workspace_fn workspace_bytes; /* role == KVH_ROLE_READER; may be null (no workspace) */
  kvh_last_error_fn last_error;     /* may be null (the provider never returns KVH_RAISED/KVH_UNSUPPORTED) */
  const kvh_capabilities* capabilities; /* may be null: every default */
  /* ---- appended in kvharness 0.4 ---- */
  kvh_workspaces_fn workspaces;     /* role == KVH_ROLE_READER; may be null. When set, the harness asks it
                                       instead of workspace_bytes and passes kvh_attention_args.workspaces */
  /* ---- appended in kvharness 0.5 (device timing) ---- */
  kvh_time_fn time;                 /* may be null: the harness times the launches itself (device events
                                       around each). When set, the harness asks it instead (kvh_time_fn) */
  /* ---- appended in kvharness 0.5: the router role ---- */
  kvh_route_fn route;               /* role == KVH_ROLE_ROUTER (cache_format, capabilities unused) */
  /* ---- appended in kvharness 0.6: split plans ---- */
  kvh_plan_fn plan;                 /* role == KVH_ROLE_READER; may be null (no planner) */
  /* ---- appended in kvharness 0.7 (issue 23 (D): launch configurations) ---- */
  int32_t num_launch_configs;       /* 0: only the default launch */
  int32_t reserved4;                /* zero */
  const kvh_launch_config* launch_configs; /* num_launch_configs entries, names unique */
} kvh_kernel_desc;

/** What the harness tells a provider when it opens it. Growable. */
typedef struct kvh_open_args {
  KVH_STRUCT_SIZE(struct kvh_open_args);
  int32_t device_type;  /* kvh_device_type of every tensor the kernels will get */
  const char* config;   /* the provider's configuration string, never null (may be empty) */
  int32_t device_id;
  uint32_t error_size;  /* bytes at error */
  char* error;          /* on failure: a NUL-terminated message naming what failed */
} kvh_open_args;

/** What a provider hands back. Growable. Descriptors (and everything they
 *  point to) stay valid until close(provider_context), or for the process's
 *  life when close is null. */
typedef struct kvh_provider {
  KVH_STRUCT_SIZE(struct kvh_provider);
  int32_t num_kernels;
  const kvh_kernel_desc* kernels; /* num_kernels descriptors, kernels[0].struct_size bytes apart */
  void* provider_context;
  void (*close)(void* provider_context);
} kvh_provider;

/** The ABI 2 entry point: 0 on success, else non-zero with args->error filled
 *  (the harness stops before running any case: an untestable build). */
typedef int (*kvh_provider_open_fn)(const kvh_open_args* args, kvh_provider* out);
/** What a provider library defines (declared here so that a C++ definition gets C linkage). */
int kvh_provider_open(const kvh_open_args* args, kvh_provider* out);

/* ---- ABI 1, frozen: layouts of providers built against kvharness 0.1 ---- */

/** ABI 1 writer arguments (no struct_size; otherwise as kvh_write_args). */
typedef struct kvh_write_args_v1 {
  kvh_tensor key, value, key_cache, value_cache, slot_mapping;
  int64_t block_size;
} kvh_write_args_v1;

/** ABI 1 reader arguments (no struct_size; otherwise as kvh_attention_args). */
typedef struct kvh_attention_args_v1 {
  kvh_tensor out, query, key_cache, value_cache, block_tables, context_lens;
  int64_t block_size;
  int32_t max_context_len;
  float scale;
  float k_scale, v_scale;
  int32_t partition_size;
  void* workspace;
  uint64_t workspace_bytes;
} kvh_attention_args_v1;

typedef int (*kvh_write_fn_v1)(const kvh_write_args_v1* args, void* stream);
typedef int (*kvh_attention_fn_v1)(const kvh_attention_args_v1* args, void* stream);
typedef uint64_t (*kvh_workspace_fn_v1)(const kvh_attention_args_v1* args);

/** ABI 1 kernel descriptor: abi_version 1; head_sizes were its only capability. */
typedef struct kvh_kernel_desc_v1 {
  uint32_t abi_version;    /* 1 */
  const char* name;
  const char* description;
  int32_t role;
  int32_t cache_format;
  int32_t fixture;
  kvh_write_fn_v1 write;
  kvh_attention_fn_v1 attention;
  kvh_workspace_fn_v1 workspace_bytes;
  const int32_t* head_sizes;  /* num_head_sizes = 0: any multiple of x up to 256 */
  int32_t num_head_sizes;
  void* reserved[3];
} kvh_kernel_desc_v1;

typedef const kvh_kernel_desc_v1* (*kvh_provider_fn_v1)(int32_t* count);

#ifdef __cplusplus
}
#endif
#endif
