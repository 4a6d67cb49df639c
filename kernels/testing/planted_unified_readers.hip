// Planted-bug unified (varlen) readers, for tests only (never in the builtin
// provider): readers/unified_attention.h with one rule of UnifiedCorrectVariant
// replaced, each a bug class of ragged-query kernels. The mutation test
// (kvharness_planted --list-mutants) runs each in place of the reader it
// stands in for; planted_readers_test.cpp shows each caught by a ragged case
// that unified_attention_2d / _3d passes.
//   planted_unified_gqa_pow2             the GQA group taken as the largest power of two
//                                        <= num_heads / num_kv_heads (a shift by log2 of
//                                        it): exact for power-of-two groups and for one
//                                        kv head; with ratio 6 or 12 and 2+ kv heads the
//                                        later groups read the wrong query heads and some
//                                        heads are never written
//   planted_unified_drops_last_query_token a multi-token sequence serves q - 1 of its q
//                                        query tokens (the last row of each chunk stays
//                                        unwritten); decode (q = 1) is exact
//   planted_unified_window_from_seq_end  the sliding window measured from the sequence's
//                                        last token (L - window) instead of the query's
//                                        position p: exact for decode and for the last
//                                        token of a chunk
//   planted_unified_alibi_from_seq_end   ALiBi as slope * (t - (L - 1)) instead of
//                                        slope * (t - p): a constant shift per query
//                                        token, which the softmax cancels, except against
//                                        an attention sink (only alibi + sinks shows it)
//   planted_unified_first_query_block_only  the one-pass grid covers only the first
//                                        block of query tokens (as if max_query_len were
//                                        1): the other rows of longer chunks stay unwritten
//   planted_unified_reads_past_query_start_loc  no clamp of query_start_loc and one
//                                        sequence program too many: it reads
//                                        query_start_loc[num_seqs + 1] (and seq_lens,
//                                        block_tables past their ends) and writes the
//                                        phantom sequence's row past `out`
//   planted_unified_reduce_skips_last_segment  (3d) the reduce merges a row's segments
//                                        but its last: the one with the row's own key
//   planted_unified_writes_past_workspace (3d) segm_expsum entries written (and read) one
//                                        query row late: every result is right, but the
//                                        last query row's entries land past the end of the
//                                        workspace, from its first element past it on
#include "registry/kernel_desc.h"
#include "readers/unified_attention.h"

namespace {

using kvh::kernels::ScoreModifiers;
using kvh::kernels::UnifiedCorrectVariant;

struct GqaPow2 : UnifiedCorrectVariant {
  static KVH_HD int query_head(int kv, int j, int group) { return kv * kvh::kernels::floor_pow2(group) + j; }
};
struct DropsLastQueryToken : UnifiedCorrectVariant {
  static KVH_HD int query_tokens(int q) { return q > 1 ? q - 1 : q; }
};
struct WindowFromSeqEnd : UnifiedCorrectVariant {
  static KVH_HD int first_key(const ScoreModifiers& m, int, int L) {
    return m.sliding_window > 0 && L - m.sliding_window > 0 ? L - m.sliding_window : 0;
  }
};
struct AlibiFromSeqEnd : UnifiedCorrectVariant {
  static KVH_HD float logit(const ScoreModifiers& m, float s, int h, int t, int, int L) {
    s = m.capped(s);
    return m.alibi ? s + m.alibi_slope(h) * float(t - (L - 1)) : s;
  }
};
struct FirstQueryBlockOnly : UnifiedCorrectVariant {
  static int query_blocks(int, int) { return 1; }
};
struct ReadsPastQueryStartLoc : UnifiedCorrectVariant {
  static int seq_programs(int num_seqs) { return num_seqs + 1; }
  static constexpr bool kClampQueryStart = false;
};
struct ReduceSkipsLastSegment : UnifiedCorrectVariant {
  static KVH_HD int reduce_end(int last_segment) { return last_segment; }
};
struct WritesPastWorkspace : UnifiedCorrectVariant {
  static constexpr int kExpSumRowShift = 1;
};

// Built for 16-bit caches only, as kCaps declares: none of these bugs needs an fp8 cache to
// show, and fp8 instances quadrupled the file's AMD compile time (about 490 s in CI).
template <class Variant, bool kSplit>
int planted(const kvh_attention_args* a, void* stream) {
  return kvh::kernels::launch_unified_attention<KVH_CACHE_NHD, kSplit, kvh::kernels::Only16BitCaches<Variant>>(*a,
                                                                                                          stream);
}
int workspaces(const kvh_attention_args* a, kvh_workspace_spec* specs, int32_t max_specs, int32_t* count) {
  return kvh::kernels::unified_attention_workspaces(a, specs, max_specs, count);
}

// The capabilities of unified_attention_2d / _3d (`--replace-kernel` runs them with these), 16-bit
// caches only (no cache_dtypes: the default).
kvh_capabilities caps() {
  kvh_capabilities c{};
  c.modifiers = KVH_MOD_SLIDING_WINDOW | KVH_MOD_SINKS | KVH_MOD_SOFTCAP | KVH_MOD_ALIBI | KVH_MOD_NON_CAUSAL;
  c.max_query_len = kvh::kernels::kUaMaxQueryLen;
  return c;
}
const kvh_capabilities kCaps = caps();

template <class Variant>
kvh_kernel_desc one_pass(const char* name, const char* description) {
  return kvh::kernels::reader_desc<planted<Variant, false>>(name, description, KVH_CACHE_NHD, 1, nullptr, &kCaps);
}
template <class Variant>
kvh_kernel_desc split(const char* name, const char* description) {
  return kvh::kernels::typed_reader_desc<planted<Variant, true>>(
      name, description, KVH_CACHE_NHD, 1, kvh::kernels::workspaces_entry<workspaces>, &kCaps);
}

const kvh_kernel_desc kPlanted[] = {
    one_pass<GqaPow2>("planted_unified_gqa_pow2",
                      "PLANTED BUG (unified 2d): GQA group rounded down to a power of two (wrong for ratio 6, 12 "
                      "with 2+ kv heads)"),
    one_pass<DropsLastQueryToken>("planted_unified_drops_last_query_token",
                                  "PLANTED BUG (unified 2d): the last query token of each multi-token chunk is "
                                  "never computed"),
    one_pass<WindowFromSeqEnd>("planted_unified_window_from_seq_end",
                               "PLANTED BUG (unified 2d): sliding window relative to the sequence end, not to the "
                               "query token's position"),
    one_pass<AlibiFromSeqEnd>("planted_unified_alibi_from_seq_end",
                              "PLANTED BUG (unified 2d): ALiBi relative to the sequence end, not to the query "
                              "token's position (visible with sinks)"),
    one_pass<FirstQueryBlockOnly>("planted_unified_first_query_block_only",
                                  "PLANTED BUG (unified 2d): the one-pass grid covers only the first block of "
                                  "query tokens of each sequence"),
    one_pass<ReadsPastQueryStartLoc>("planted_unified_reads_past_query_start_loc",
                                     "PLANTED BUG (unified 2d): processes num_seqs + 1 sequences, reading "
                                     "query_start_loc[num_seqs + 1] (a phantom sequence writes past out)"),
    split<ReduceSkipsLastSegment>("planted_unified_reduce_skips_last_segment",
                                  "PLANTED BUG (unified 3d): the reduce skips each row's last segment"),
    split<WritesPastWorkspace>("planted_unified_writes_past_workspace",
                               "PLANTED BUG (unified 3d): segm_expsum entries written one query row late (the last "
                               "row's past the end of the workspace)"),
};

}  // namespace

/// The planted unified readers, provider-style (kvharness/provider.h); fixture = 1.
extern "C" const kvh_kernel_desc* kvh_planted_unified_readers(int32_t* count) {
  *count = int32_t(sizeof(kPlanted) / sizeof(kPlanted[0]));
  return kPlanted;
}
