// concat_and_cache_mla: the built-in MLA cache writer (concat_and_cache_mla.h states it).
#include "writers/concat_and_cache_mla.h"

namespace kvh::kernels {
namespace {
KVH_DECLARE_MLA_WRITER_INSTANCES(concat_and_cache_mla, QuantizeFp8);
}  // namespace
}  // namespace kvh::kernels

extern "C" int kvh_concat_and_cache_mla(const kvh_write_args* a, void* stream) {
  return kvh::kernels::launch_concat_and_cache_mla<kvh::kernels::QuantizeFp8>(a, stream);
}
