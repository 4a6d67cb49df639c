// Planted-bug variants of the fixed-function head_size-128 reader (pa_fwd_asm,
// kernels/readers/pa_fwd_hd128.h), for the mutation test only (never in the builtin
// provider): each replaces one rule of AsmCorrectVariant.
//   planted_asm_gqa_modulo       query head h reads kv head h % num_kv_heads:
//                                invisible with one kv head per rank
//   planted_asm_reduce_tree_32   the softmax max/sum butterfly is sized for 32
//                                lanes: with 64 lanes a head (wavefront 64, 1
//                                or 2 query heads a block) each half keeps its own
//   planted_asm_no_rescale       the online softmax does not rescale the
//                                accumulator when a later 128-token chunk raises
//                                the running max
#include "registry/kernel_desc.h"
#include "readers/pa_fwd_hd128.h"

namespace {

using kvh::kernels::AsmCorrectVariant;

struct GqaModulo : AsmCorrectVariant {
  static KVH_HD int query_head(int kv, int j, int, int num_kv_heads) { return j * num_kv_heads + kv; }
};
struct ReduceTree32 : AsmCorrectVariant {
  static KVH_HD int reduce_width(int lanes) { return lanes < 32 ? lanes : 32; }
};
struct NoRescale : AsmCorrectVariant {
  static constexpr bool kRescaleAcc = false;
};

template <class Variant>
int planted(const kvh_attention_args* a, void* stream) {
  return kvh::kernels::launch_pa_fwd_hd128<Variant>(a, stream);
}

const int32_t kHeadSizes[] = {128};
kvh_capabilities caps() {
  kvh_capabilities c{};
  c.head_sizes = kHeadSizes;
  c.num_head_sizes = 1;
  c.modifiers = KVH_MOD_SLIDING_WINDOW | KVH_MOD_SINKS | KVH_MOD_SOFTCAP | KVH_MOD_ALIBI;  // as pa_fwd_asm
  c.max_query_len = kvh::kernels::kMaxQueryTokens;                                       // as pa_fwd_asm
  return c;
}
const kvh_capabilities kCaps = caps();

template <int (*F)(const kvh_attention_args*, void*)>
kvh_kernel_desc reader(const char* name, const char* description) {
  return kvh::kernels::reader_desc<F>(name, description, KVH_CACHE_SHUFFLE, 1, nullptr, &kCaps);
}

const kvh_kernel_desc kPlanted[] = {
    reader<planted<GqaModulo>>("planted_asm_gqa_modulo",
                               "PLANTED BUG (pa_fwd_asm): GQA maps query head h to kv head h % num_kv_heads"),
    reader<planted<ReduceTree32>>("planted_asm_reduce_tree_32",
                                  "PLANTED BUG (pa_fwd_asm): softmax reduction tree sized for 32 lanes"),
    reader<planted<NoRescale>>("planted_asm_no_rescale",
                               "PLANTED BUG (pa_fwd_asm): online softmax never rescales the accumulator"),
};

}  // namespace

/// The planted head_size-128 readers, provider-style (kvharness/provider.h); fixture = 1.
extern "C" const kvh_kernel_desc* kvh_planted_asm_readers(int32_t* count) {
  *count = int32_t(sizeof(kPlanted) / sizeof(kPlanted[0]));
  return kPlanted;
}
