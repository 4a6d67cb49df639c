// An ABI 1 provider compiled against the frozen ABI 1 header
// (testing/abi_v1/kvharness/provider.h), loaded by registry_test through
// dlopen exactly as a provider built for kvharness 0.1 would be. Its kernels
// record the arguments they received in the first elements of their output
// tensor so that the test can prove the harness's ABI 2 arguments were
// translated field by field.
#include "kvharness/provider.h"

#if KVH_ABI_VERSION != 1
#error "this provider must be built against the frozen ABI 1 header"
#endif

namespace {

// key_cache (i64 view): [block_size, num_tokens, key.stride[0], value_cache.shape[1]].
int record_write(const kvh_write_args* a, void*) {
  int64_t* o = static_cast<int64_t*>(a->key_cache.data);
  o[0] = a->block_size;
  o[1] = a->slot_mapping.shape[0];
  o[2] = a->key.stride[0];
  o[3] = a->value_cache.shape[1];
  return 0;
}

// out (f32 view): [scale, k_scale, max_context_len, partition_size, workspace_bytes].
int record_attention(const kvh_attention_args* a, void*) {
  float* o = static_cast<float*>(a->out.data);
  o[0] = a->scale;
  o[1] = a->k_scale;
  o[2] = float(a->max_context_len);
  o[3] = float(a->partition_size);
  o[4] = float(a->workspace_bytes);
  return a->block_size == 7 ? 1 /* hipErrorInvalidValue: the kernel refuses */ : 0;
}

uint64_t workspace(const kvh_attention_args* a) { return uint64_t(a->block_size) * 3; }

const int32_t kHeadSizes[] = {64, 128};

const kvh_kernel_desc kKernels[] = {
    {KVH_ABI_VERSION, "v1_record_write", "records its arguments", KVH_ROLE_WRITER, KVH_CACHE_PA_V1, 0, record_write,
     nullptr, nullptr, nullptr, 0, {}},
    {KVH_ABI_VERSION, "v1_fixture_record_attention", "records its arguments", KVH_ROLE_READER, KVH_CACHE_SHUFFLE, 1, nullptr,
     record_attention, workspace, kHeadSizes, 2, {}},
};

}  // namespace

extern "C" const kvh_kernel_desc* kvh_provider_kernels(int32_t* count) {
  *count = 2;
  return kKernels;
}
