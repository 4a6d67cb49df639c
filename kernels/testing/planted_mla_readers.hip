// Planted-bug MLA readers, for tests only (never in the builtin provider):
// readers/mla_decode_kernel.h with one rule of MlaCorrectVariant replaced, each a bug
// class of absorbed-MLA kernels. The mutation test (kvharness_planted --list-mutants)
// runs each in place of mla_decode; mla_decode_test.cpp shows each caught.
//   planted_mla_rope_ignored     the score sums the first R dims only (the rope part of
//                                query and latent dropped)
//   planted_mla_value_last512    the value taken from cache[t, P:R+P] (the last R dims)
//                                instead of cache[t, 0:R]
//   planted_mla_splits_ignored   the reduce merges one split whatever the plan's
//                                num_splits says (exact where every sequence has one)
//   planted_mla_block_size_one   pages of one token assumed: key t at block_tables[s][t],
//                                slot 0 (exact at block_size 1)
#include "readers/mla_decode_kernel.h"

namespace {

using kvh::kernels::MlaCorrectVariant;

struct RopeIgnored : MlaCorrectVariant {
  static KVH_HD int score_dims(int R, int /*D*/) { return R; }
};
struct ValueLast512 : MlaCorrectVariant {
  static KVH_HD int value_offset(int R, int D) { return D - R; }
};
struct SplitsIgnored : MlaCorrectVariant {
  static KVH_HD int reduce_splits(int n) { return n < 1 ? n : 1; }
};
struct BlockSizeOne : MlaCorrectVariant {
  // Clamped into the table row and the cache so that the bug reads wrong rows, never memory
  // outside the buffers the harness gave it.
  static KVH_HD int64_t page_of(int t, int64_t /*bs*/, int64_t width) { return t < width ? t : width - 1; }
  static KVH_HD int64_t slot_of(int /*t*/, int64_t /*bs*/) { return 0; }
  static KVH_HD int64_t block_of(int64_t b, int64_t num_blocks) { return b < 0 ? 0 : (b >= num_blocks ? num_blocks - 1 : b); }
};

template <class V>
int planted(void*, const kvh_attention_args* a, void* stream) {
  return kvh::kernels::launch_mla_decode<V>(*a, stream);
}

const int32_t kHeadSizes[] = {576, 80};
kvh_capabilities caps() {
  kvh_capabilities c = kvh::kernels::mla_decode_capabilities();
  c.head_sizes = kHeadSizes;
  c.num_head_sizes = 2;
  return c;
}
const kvh_capabilities kCaps = caps();

template <class V>
kvh_kernel_desc mla(const char* name, const char* description) {
  kvh_kernel_desc d{};
  d.abi_version = KVH_ABI_VERSION;
  d.name = name;
  d.description = description;
  d.role = KVH_ROLE_READER;
  d.cache_format = KVH_CACHE_MLA;
  d.fixture = 1;
  d.capabilities = &kCaps;
  d.attention = planted<V>;
  d.workspaces = kvh::kernels::mla_decode_workspaces;
  d.plan = kvh::kernels::mla_decode_plan;
  d.last_error = kvh::kernels::mla_decode_last_error;
  return d;
}

const kvh_kernel_desc kPlanted[] = {
    mla<RopeIgnored>("planted_mla_rope_ignored",
                     "PLANTED BUG (mla_decode): the score sums the first kv_lora_rank dims only (rope part ignored)"),
    mla<ValueLast512>("planted_mla_value_last512",
                      "PLANTED BUG (mla_decode): the value is cache[t, P:R+P] (the last R dims) instead of "
                      "cache[t, 0:R]"),
    mla<SplitsIgnored>("planted_mla_splits_ignored",
                       "PLANTED BUG (mla_decode): the reduce merges one split, ignoring the plan's num_splits"),
    mla<BlockSizeOne>("planted_mla_block_size_one",
                      "PLANTED BUG (mla_decode): pages of one token assumed (key t at block_tables[s][t], slot 0)"),
};

}  // namespace

/// The planted MLA readers, provider-style (kvharness/provider.h); fixture = 1.
extern "C" const kvh_kernel_desc* kvh_planted_mla_readers(int32_t* count) {
  *count = int32_t(sizeof(kPlanted) / sizeof(kPlanted[0]));
  return kPlanted;
}
