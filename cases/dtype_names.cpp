#include "dtype_names.h"

namespace kvh {

// vLLM: "fp8" and "fp8_e4m3" are both E4M3 in the platform's fp8 dtype, current_platform.fp8_dtype():
// torch.float8_e4m3fnuz where RocmPlatform.is_fp8_fnuz() ("gfx94" in gcnArchName: MI300X/MI325X),
// torch.float8_e4m3fn elsewhere (CUDA; MI350/MI355X, gfx950) (vllm/platforms/rocm.py).
const std::vector<StackDtypeName>& stack_dtype_names() {
  static const std::vector<StackDtypeName> names = {
      {"fp8", "vLLM's kv_cache_dtype for fp8 E4M3: kvharness fp8_e4m3fnuz on MI300X/MI325X (gfx942, "
              "vLLM's is_fp8_fnuz), fp8_e4m3fn on CUDA and on MI350X/MI355X (gfx950)"},
      {"fp8_e4m3", "vLLM's kv_cache_dtype, the same as 'fp8': kvharness fp8_e4m3fnuz on MI300X/MI325X (gfx942), "
                   "fp8_e4m3fn on CUDA and on MI350X/MI355X (gfx950)"},
      {"fp8_e5m2", "vLLM's E5M2 kv_cache_dtype: no kvharness cache dtype (E5M2 caches are not modelled)"},
      {"fp8_inc", "vLLM's kv_cache_dtype for Intel Gaudi (Intel Neural Compressor): not modelled"},
      {"fp8_ds_mla", "vLLM's DeepSeek MLA fp8 layout (scales inside each token's entry): not modelled"},
      {"auto", "vLLM's kv_cache_dtype for 'the model's dtype': leave kv_cache_dtype out (the K/V dtype)"},
      {"float8_e4m3fn", "torch's name: kvharness fp8_e4m3fn"},
      {"float8_e4m3fnuz", "torch's name: kvharness fp8_e4m3fnuz"},
      {"float16", "torch's name: kvharness fp16"},
      {"half", "torch's name: kvharness fp16"},
      {"bfloat16", "torch's name: kvharness bf16"},
  };
  return names;
}

std::string stack_dtype_hint(const std::string& name) {
  for (const StackDtypeName& n : stack_dtype_names())
    if (name == n.name) return std::string(" '") + n.name + "' is " + n.meaning;
  return "";
}

}  // namespace kvh
