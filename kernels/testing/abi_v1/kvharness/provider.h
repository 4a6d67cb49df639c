/* FROZEN COPY of include/kvharness/provider.h as of ABI 1 (kvharness 0.1), for
 * the test that an ABI 1 provider built against it still loads. Never edit. */
/* kvharness provider ABI: how a shared library supplies kernels to the harness.
 *
 * A provider exports one C function, KVH_PROVIDER_SYMBOL, returning an array
 * of kernel descriptors. The built-in kernels register through the same
 * function, so a production kernel build plugged in on a ROCm runner is tested
 * exactly like ours. All tensors are device pointers with PyTorch semantics:
 * `data` already includes the view's storage offset, shapes and strides are in
 * elements, outermost first, strides may be anything a view can have.
 *
 * Return value of every entry point: 0 on success, else a HIP error code
 * (hipErrorInvalidValue = 1 for arguments the kernel does not accept).
 */
#ifndef KVHARNESS_PROVIDER_H
#define KVHARNESS_PROVIDER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KVH_ABI_VERSION 1
#define KVH_PROVIDER_SYMBOL "kvh_provider_kernels"
#define KVH_MAX_DIMS 6

/** Element types. fp16 = IEEE binary16, bf16 = bfloat16, i64 = int64_t. */
typedef enum kvh_dtype { KVH_DT_F16 = 1, KVH_DT_BF16 = 2, KVH_DT_I64 = 3, KVH_DT_F32 = 4, KVH_DT_I32 = 5 } kvh_dtype;

/** Cache formats (DESIGN.md table), tensor shapes outermost first, x = 16 / sizeof(element):
 *  NHD:     K, V [num_blocks, block_size, num_kv_heads, head_size]
 *  PA_V1:   K [num_blocks, num_kv_heads, head_size/x, block_size, x]; V [num_blocks, num_kv_heads, head_size, block_size]
 *  SHUFFLE: K as PA_V1;  V [num_blocks, num_kv_heads, block_size/x, head_size, x]  */
typedef enum kvh_cache_format { KVH_CACHE_NHD = 0, KVH_CACHE_PA_V1 = 1, KVH_CACHE_SHUFFLE = 2 } kvh_cache_format;

/** A strided device tensor view. */
typedef struct kvh_tensor {
  void* data;       /* device pointer to element [0,...,0] of the view */
  int32_t dtype;    /* kvh_dtype */
  int32_t ndim;
  int64_t shape[KVH_MAX_DIMS];
  int64_t stride[KVH_MAX_DIMS]; /* elements */
} kvh_tensor;

/** Arguments of a cache writer (vLLM reshape_and_cache* semantics):
 *  key, value   [num_tokens, num_kv_heads, head_size], any strides (often views of a fused QKV buffer)
 *  key_cache, value_cache  in the writer's cache format
 *  slot_mapping [num_tokens] int64; slot = block_id * block_size + offset; negative = padding, write nothing. */
typedef struct kvh_write_args {
  kvh_tensor key, value, key_cache, value_cache, slot_mapping;
  int64_t block_size;
} kvh_write_args;

typedef int (*kvh_write_fn)(const kvh_write_args* args, void* stream);

/** Arguments of a paged decode-attention reader: one query token per sequence.
 *  out          [num_seqs, num_heads, head_size], dtype of query; written in full
 *  query        [num_seqs, num_heads, head_size], any strides (a view of a fused QKV buffer)
 *  key_cache    [num_blocks, num_kv_heads, head_size/x, block_size, x]
 *  value_cache  PA_V1 [num_blocks, num_kv_heads, head_size, block_size] or
 *               SHUFFLE [num_blocks, num_kv_heads, block_size/x, head_size, x]
 *  block_tables [num_seqs, max_blocks_per_seq] int32, physical block ids
 *  context_lens [num_seqs] int32, tokens of each sequence (>= 1)
 *  GQA: query head h reads kv head h / (num_heads / num_kv_heads) (vLLM, aiter).
 *  workspace: device memory of at least workspace_bytes(args) bytes, for split-K partials. */
typedef struct kvh_attention_args {
  kvh_tensor out, query, key_cache, value_cache, block_tables, context_lens;
  int64_t block_size;
  int32_t max_context_len;
  float scale;            /* softmax scale, usually 1/sqrt(head_size) */
  float k_scale, v_scale; /* dequant scales for quantized caches; 1.0 otherwise */
  int32_t partition_size; /* split-K partition in tokens; 0 = the kernel's default */
  void* workspace;
  uint64_t workspace_bytes;
} kvh_attention_args;

typedef int (*kvh_attention_fn)(const kvh_attention_args* args, void* stream);
typedef uint64_t (*kvh_workspace_fn)(const kvh_attention_args* args);

typedef enum kvh_role { KVH_ROLE_WRITER = 1, KVH_ROLE_READER = 2 } kvh_role;

/** One kernel a provider offers. `fixture` != 0 marks a known-bad kernel kept
 *  on purpose so that the harness can show it fails. */
typedef struct kvh_kernel_desc {
  uint32_t abi_version;    /* KVH_ABI_VERSION */
  const char* name;        /* unique, used in case files */
  const char* description;
  int32_t role;            /* kvh_role */
  int32_t cache_format;    /* kvh_cache_format */
  int32_t fixture;
  kvh_write_fn write;      /* role == KVH_ROLE_WRITER */
  kvh_attention_fn attention;       /* role == KVH_ROLE_READER */
  kvh_workspace_fn workspace_bytes; /* role == KVH_ROLE_READER; may be null (no workspace) */
  /* Declared capabilities of a reader; a launch outside them is a misroute.
   * head_sizes: the only head sizes supported (num_head_sizes = 0: any multiple of x up to 256). */
  const int32_t* head_sizes;
  int32_t num_head_sizes;
  void* reserved[3];       /* zero */
} kvh_kernel_desc;

typedef const kvh_kernel_desc* (*kvh_provider_fn)(int32_t* count);

#ifdef __cplusplus
}
#endif
#endif
