// Planted-bug readers of long contexts (issue 23 B), for tests only: the
// general shuffle-layout kernel of paged_attention.h (paged_attention_rocm)
// with one rule replaced, each a bug class that only sequences past 32,767
// tokens, or a split-K reduce over hundreds of partitions, can show.
//   planted_context_len_int16     holds each sequence's length in an int16_t
//                                 (a 16-bit metadata field): 32,768 tokens and
//                                 more wrap negative, the sequence reads as empty
//   planted_context_len_uint16    holds it in a uint16_t: 65,536 tokens and more
//                                 wrap, the sequence is cut to its length mod 65,536
//   planted_reduce_fp16_exp_sum   the split-K reduce accumulates the partitions'
//                                 weights (their rescaled exp-sums) in fp16: every
//                                 addition rounds the total to 11 bits, and over
//                                 hundreds of partitions the denominator drifts by
//                                 ~0.1-1 %, one factor on the whole head's output
// cases/default.toml's long-context slice (issue 23 B) kills all three.
#include "registry/kernel_desc.h"
#include "readers/paged_attention.h"

namespace {

using kvh::kernels::CorrectVariant;

struct ContextLenInt16 : CorrectVariant {
  static KVH_HD int32_t context_len(int32_t stored) { return int16_t(stored); }
};
struct ContextLenUint16 : CorrectVariant {
  static KVH_HD int32_t context_len(int32_t stored) { return uint16_t(stored); }
};
// The running total kept as fp16 bits: each addition is done in float and rounded back to fp16.
struct ReduceFp16ExpSum : CorrectVariant {
  static KVH_HD float add_exp_sum(float total, float weight) { return kvh::to_float(kvh::to_fp16(total + weight)); }
};

template <class Variant>
int planted(const kvh_attention_args* a, void* stream) {
  return kvh::kernels::launch_paged_attention<KVH_CACHE_SHUFFLE, kvh::kernels::Only16BitCaches<Variant>>(*a, stream);
}

uint64_t workspace(const kvh_attention_args* a) { return kvh::kernels::paged_attention_workspace_bytes(*a); }

// The capabilities of paged_attention_rocm, which they stand in for: every score modifier.
kvh_capabilities modifier_caps() {
  kvh_capabilities c{};
  c.modifiers = KVH_MOD_SLIDING_WINDOW | KVH_MOD_SINKS | KVH_MOD_SOFTCAP | KVH_MOD_ALIBI;
  return c;
}
const kvh_capabilities kCaps = modifier_caps();

template <int (*F)(const kvh_attention_args*, void*)>
kvh_kernel_desc reader(const char* name, const char* description) {
  return kvh::kernels::reader_desc<F>(name, description, KVH_CACHE_SHUFFLE, 1,
                                      kvh::kernels::workspace_entry<workspace>, &kCaps);
}

const kvh_kernel_desc kPlanted[] = {
    reader<planted<ContextLenInt16>>("planted_context_len_int16",
                                     "PLANTED BUG: context_lens held as int16 (32,768 tokens and more read as empty)"),
    reader<planted<ContextLenUint16>>("planted_context_len_uint16",
                                      "PLANTED BUG: context_lens held as uint16 (lengths past 65,535 wrap)"),
    reader<planted<ReduceFp16ExpSum>>("planted_reduce_fp16_exp_sum",
                                      "PLANTED BUG: split-K reduce accumulates the partitions' exp-sums in fp16"),
};

}  // namespace

/// The planted long-context readers, provider-style (kvharness/provider.h); fixture = 1.
extern "C" const kvh_kernel_desc* kvh_planted_long_context(int32_t* count) {
  *count = int32_t(sizeof(kPlanted) / sizeof(kPlanted[0]));
  return kPlanted;
}
