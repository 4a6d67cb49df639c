// The dtype names of serving stacks beside kvharness's own (docs/case-files.md "fp8 dtype names").
// A case file that says `kv_cache_dtype = ["fp8"]` (vLLM's --kv-cache-dtype) is refused with the
// kvharness name that corresponds, so the mapping is written once, here.
#pragma once
#include <string>
#include <vector>

namespace kvh {

/// One stack name and what it means in kvharness terms.
struct StackDtypeName {
  const char* name;     // as the stack spells it
  const char* meaning;  // the kvharness name(s) and where the stack's rule comes from
};

/// Every stack name known: vLLM's kv_cache_dtype strings (vllm/config/cache.py CacheDType:
/// auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2, fp8_inc, fp8_ds_mla, int8), torch's dtype
/// names (float8_e4m3fn, float8_e4m3fnuz, float16, bfloat16, half).
const std::vector<StackDtypeName>& stack_dtype_names();

/// " 'NAME' is <meaning>" for a stack name, "" for any other: appended to a case file's
/// "unknown value" error of the dtypes and kv_cache_dtype keys.
std::string stack_dtype_hint(const std::string& name);

}  // namespace kvh
