// kvharness_planted: the kvharness command line with the planted-bug kernels
// and routing policies registered beside the built-ins, for the mutation test
// (harness/check/mutation_score_test.sh). Never installed; the shipped kvharness
// knows none of them.
//
//   kvharness_planted --list-mutants
//       one line per mutant: KIND REAL PLANTED FILTERS BUG (tab-separated);
//       KIND is kernel or router; FILTERS are ';'-separated --filter
//       expressions that select every default-suite case that can run REAL
//       (the cases that name it, and the router cases that may pick it)
//   kvharness_planted run ... --replace-kernel REAL=PLANTED | --replace-router REAL=PLANTED
//       anything else goes to kvharness's own command line
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <cstring>
#include <string>

#include "planted_routers.h"
#include "registry/registry.h"

extern "C" const kvh_kernel_desc* kvh_planted_writers(int32_t* count);
extern "C" const kvh_kernel_desc* kvh_planted_cache_writers(int32_t* count);
extern "C" const kvh_kernel_desc* kvh_planted_readers(int32_t* count);
extern "C" const kvh_kernel_desc* kvh_planted_asm_readers(int32_t* count);
extern "C" const kvh_kernel_desc* kvh_planted_wide_readers(int32_t* count);
extern "C" const kvh_kernel_desc* kvh_planted_unified_readers(int32_t* count);
extern "C" const kvh_kernel_desc* kvh_planted_mla_writers(int32_t* count);  // issue 22 (MLA writer)
extern "C" const kvh_kernel_desc* kvh_planted_int8(int32_t* count);  // issue 22 (int8)
// ---- issue 22 (C): planted MLA readers ----
extern "C" const kvh_kernel_desc* kvh_planted_mla_readers(int32_t* count);
// ---- issue 23 (B long contexts): planted long-context readers ----
extern "C" const kvh_kernel_desc* kvh_planted_long_context(int32_t* count);
// ---- end issue 23 (B long contexts) ----
// ---- issue 23 (D launch configurations): planted launch-configuration readers ----
extern "C" const kvh_kernel_desc* kvh_planted_launch_configs(int32_t* count);
// ---- end issue 23 (D launch configurations) ----
// ---- issue 23 (C writer views, padding, value edges): planted edge writers and readers ----
extern "C" const kvh_kernel_desc* kvh_planted_edges(int32_t* count);
// ---- end issue 23 (C writer views, padding, value edges) ----

namespace kvh {
int cli_main(int argc, char** argv);
}

namespace {

// The routers that can pick a reader: the fixed policy under either name (the
// old policy's cases route the same below the threshold, and above it only to
// the ASM kernel, which the fixed policy's cases reach too).
constexpr const char* kRouted = "router_policy=aiter-v0.1.12|aiter-b4885d2";

struct Mutant {
  const char* kind;     // "kernel" or "router"
  const char* real;     // the built-in kernel or policy it stands in for
  const char* planted;  // the planted kernel or policy
  const char* filters;  // ';'-separated: the cases that can run `real`
};

// Every planted kernel and policy that models a realistic bug. Not here:
// planted_wild_write and planted_hangs (a fault and a hang, for the runner's
// own tests) and planted_missing_softmax_barrier (a race that only
// --random-order exposes; planted_readers_test covers it).
const Mutant kMutants[] = {
    {"kernel", "reshape_and_cache_flash", "planted_ignores_negative_slot", "writer=reshape_and_cache_flash"},
    {"kernel", "reshape_and_cache_flash", "planted_writes_one_past", "writer=reshape_and_cache_flash"},
    {"kernel", "reshape_and_cache_flash", "planted_swaps_kv", "writer=reshape_and_cache_flash"},
    {"kernel", "reshape_and_cache_flash", "planted_skips_last_token", "writer=reshape_and_cache_flash"},
    {"kernel", "reshape_and_cache_flash", "planted_flash_first_head_only", "writer=reshape_and_cache_flash"},
    {"kernel", "reshape_and_cache", "planted_pa_v1_first_head_only", "writer=reshape_and_cache"},
    {"kernel", "reshape_and_cache", "planted_pa_v1_block_mask", "writer=reshape_and_cache"},
    {"kernel", "reshape_and_cache_shuffle", "planted_shuffle_first_head_only", "writer=reshape_and_cache_shuffle"},
    {"kernel", "reshape_and_cache_shuffle", "planted_shuffle_v_token_swapped", "writer=reshape_and_cache_shuffle"},
    {"kernel", "paged_attention_v1", "planted_v1_gqa_modulo", "reader=paged_attention_v1"},
    {"kernel", "paged_attention_v1", "planted_v1_reduce_tree_32", "reader=paged_attention_v1"},
    {"kernel", "paged_attention_v1", "planted_v1_drop_tail_partition", "reader=paged_attention_v1"},
    {"kernel", "paged_attention_rocm", "planted_gqa_modulo", "reader=paged_attention_rocm;" },
    {"kernel", "paged_attention_rocm", "planted_reduce_tree_32", "reader=paged_attention_rocm;"},
    {"kernel", "paged_attention_rocm", "planted_drop_tail_partition", "reader=paged_attention_rocm;"},
    {"kernel", "paged_attention_rocm", "planted_reduce_last_max", "reader=paged_attention_rocm;"},
    {"kernel", "paged_attention_rocm", "planted_reduce_first_max", "reader=paged_attention_rocm;"},
    {"kernel", "paged_attention_rocm", "planted_reduce_no_exp_sum", "reader=paged_attention_rocm;"},
    {"kernel", "paged_attention_hnd", "planted_hnd_block_size_from_dim1", "reader=paged_attention_hnd"},
    {"kernel", "paged_attention_hnd", "planted_hnd_dense_head_stride", "reader=paged_attention_hnd"},
    {"kernel", "paged_attention_nhd", "planted_nhd_token_stride_from_heads", "reader=paged_attention_nhd"},
    {"kernel", "reshape_and_cache_flash", "planted_fp8_truncates", "writer=reshape_and_cache_flash"},
    {"kernel", "reshape_and_cache_flash", "planted_fp8_multiplies_scale", "writer=reshape_and_cache_flash"},
    {"kernel", "reshape_and_cache_flash", "planted_fp8_token_scale_swapped", "writer=reshape_and_cache_flash"},
    {"kernel", "paged_attention_rocm", "planted_scale_head_by_query_head", "reader=paged_attention_rocm;"},
    {"kernel", "paged_attention_rocm", "planted_scale_block_by_logical", "reader=paged_attention_rocm;"},
    {"kernel", "paged_attention_rocm", "planted_scale_token_swapped", "reader=paged_attention_rocm;"},
    {"kernel", "paged_attention_rocm", "planted_scale_dropped_on_v", "reader=paged_attention_rocm;"},
    {"kernel", "paged_attention_rocm", "planted_softcap_after_mask", "reader=paged_attention_rocm;"},
    {"kernel", "paged_attention_rocm", "planted_window_off_by_one", "reader=paged_attention_rocm;"},
    {"kernel", "paged_attention_rocm", "planted_partition_size_ignored", "reader=paged_attention_rocm;"},
    {"kernel", "paged_attention_rocm", "planted_empty_partition_reduce", "reader=paged_attention_rocm;"},
    {"kernel", "pa_fwd_asm", "planted_asm_gqa_modulo", "reader=pa_fwd_asm;"},
    {"kernel", "pa_fwd_asm", "planted_asm_reduce_tree_32", "reader=pa_fwd_asm;"},
    {"kernel", "pa_fwd_asm", "planted_asm_no_rescale", "reader=pa_fwd_asm;"},
    {"kernel", "unified_attention_2d", "planted_unified_gqa_pow2", "reader=unified_attention_2d"},
    {"kernel", "unified_attention_2d", "planted_unified_drops_last_query_token", "reader=unified_attention_2d"},
    {"kernel", "unified_attention_2d", "planted_unified_window_from_seq_end", "reader=unified_attention_2d"},
    {"kernel", "unified_attention_2d", "planted_unified_alibi_from_seq_end", "reader=unified_attention_2d"},
    {"kernel", "unified_attention_2d", "planted_unified_first_query_block_only", "reader=unified_attention_2d"},
    {"kernel", "unified_attention_2d", "planted_unified_reads_past_query_start_loc", "reader=unified_attention_2d"},
    {"kernel", "unified_attention_3d", "planted_unified_reduce_skips_last_segment", "reader=unified_attention_3d"},
    {"kernel", "unified_attention_3d", "planted_unified_writes_past_workspace", "reader=unified_attention_3d"},
    // issue 22 (MLA writer): the default suite's concat_and_cache_mla cases (16-bit and fp8).
    {"kernel", "concat_and_cache_mla", "planted_mla_fp8_scale_multiply", "writer=concat_and_cache_mla"},
    {"kernel", "concat_and_cache_mla", "planted_mla_fp8_value_convert", "writer=concat_and_cache_mla"},
    {"kernel", "concat_and_cache_mla", "planted_mla_swaps_halves", "writer=concat_and_cache_mla"},
    {"kernel", "concat_and_cache_mla", "planted_mla_writes_pad_columns", "writer=concat_and_cache_mla"},
    {"kernel", "concat_and_cache_mla", "planted_mla_ignores_padding", "writer=concat_and_cache_mla"},
    // ---- issue 22 (C): planted MLA readers, killed by the default suite's MLA slice ----
    {"kernel", "mla_decode", "planted_mla_rope_ignored", "reader=mla_decode"},
    {"kernel", "mla_decode", "planted_mla_value_last512", "reader=mla_decode"},
    {"kernel", "mla_decode", "planted_mla_splits_ignored", "reader=mla_decode"},
    {"kernel", "mla_decode", "planted_mla_block_size_one", "reader=mla_decode"},
    // ---- end issue 22 (C) ----
    // ---- issue 23 (E): modifier bugs, each killed by several independent tables ----
    {"kernel", "paged_attention_rocm", "planted_alibi_slope_by_kv_head", "reader=paged_attention_rocm;"},
    {"kernel", "paged_attention_v1", "planted_v1_window_off_by_one", "reader=paged_attention_v1"},
    {"kernel", "paged_attention_v1", "planted_v1_sink_every_partition", "reader=paged_attention_v1"},
    // ---- end issue 23 (E) ----
    {"router", "aiter-b4885d2", "planted_router_ge_threshold", ""},
    {"router", "aiter-b4885d2", "planted_router_one_cu", ""},
    {"router", "aiter-b4885d2", "planted_router_dtype_first", ""},
    {"router", "aiter-b4885d2", "planted_router_seqs_only", ""},
    // ---- issue 22, int8 KV caches (part A) ----
    {"kernel", "reshape_and_cache_flash", "planted_int8_scales_heads_swapped", "writer=reshape_and_cache_flash"},
    // MLA routing (issue 22): the routed MLA slice of cases/default.toml kills it.
    {"router", "vllm-rocm-mla-51011", "planted_mla_router_small_heads", "router_policy=vllm-rocm-mla-51011"},
    // ---- issue 23 (A sparse): index widths, killed by the default suite's sparse slice ----
    {"kernel", "reshape_and_cache_flash", "planted_writer_int32_offset", "writer=reshape_and_cache_flash,layout=large"},
    {"kernel", "paged_attention_rocm", "planted_int32_offset", "reader=paged_attention_rocm,id=*minblock=1100000*"},
    {"kernel", "paged_attention_rocm", "planted_uint16_block_id", "reader=paged_attention_rocm,id=*minblock=1100000*"},
    // ---- end issue 23 (A sparse) ----
    // ---- issue 23 (B long contexts): killed by the default suite's long-context slice ----
    {"kernel", "paged_attention_rocm", "planted_context_len_int16", "reader=paged_attention_rocm;"},
    {"kernel", "paged_attention_rocm", "planted_context_len_uint16", "reader=paged_attention_rocm;"},
    {"kernel", "paged_attention_rocm", "planted_reduce_fp16_exp_sum", "reader=paged_attention_rocm;"},
    // ---- end issue 23 (B long contexts) ----
    // ---- issue 23 (D launch configurations): killed by the default suite's launch_configs slice ----
    {"kernel", "paged_attention_rocm", "planted_reduce_assumes_128_threads", "reader=paged_attention_rocm;"},
    // ---- end issue 23 (D launch configurations) ----
    // ---- issue 23 (C writer views, padding, value edges): each killed by the default suite ----
    {"kernel", "reshape_and_cache_flash", "planted_skips_first_token", "writer=reshape_and_cache_flash"},
    {"kernel", "reshape_and_cache_flash_hnd", "planted_flash_hnd_block_size_from_dim1",
     "writer=reshape_and_cache_flash_hnd"},
    {"kernel", "reshape_and_cache_flash", "planted_flash_fp8_no_clamp", "writer=reshape_and_cache_flash"},
    {"kernel", "paged_attention_rocm", "planted_finite_max_sentinel", "reader=paged_attention_rocm;"},
    {"kernel", "paged_attention_v1", "planted_v1_finite_max_sentinel", "reader=paged_attention_v1"},
    // ---- end issue 23 (C writer views, padding, value edges) ----
};

// Planted kernels that are not mutants, and why (--list-mutants fails on any other unlisted one,
// so that a planted bug cannot be added without the mutation test running it).
const char* const kNotMutants[] = {
    "planted_wild_write",               // a fault: the runner's crash test
    "planted_hangs",                    // a hang: the runner's watchdog test
    "planted_aborts",                   // an abort: --isolate's crash test
    "planted_missing_softmax_barrier",  // a race only --random-order exposes (planted_readers_test)
};

// The planted kernel's or policy's one-line description.
std::string bug_of(const kvh::Registry& reg, const Mutant& m) {
  if (std::strcmp(m.kind, "router") == 0) {
    for (const auto& p : kvh::testing::planted_routers())
      if (m.planted == std::string(p.name)) return p.bug;
    return "";
  }
  const kvh::Kernel* k = reg.find(m.planted);
  return k ? k->description : "";
}

}  // namespace

int main(int argc, char** argv) {
  kvh::register_builtin_extension(kvh_planted_writers, "planted");
  kvh::register_builtin_extension(kvh_planted_cache_writers, "planted");
  kvh::register_builtin_extension(kvh_planted_readers, "planted");
  kvh::register_builtin_extension(kvh_planted_asm_readers, "planted");
  kvh::register_builtin_extension(kvh_planted_wide_readers, "planted");
  kvh::register_builtin_extension(kvh_planted_unified_readers, "planted");
  kvh::register_builtin_extension(kvh_planted_mla_writers, "planted");  // issue 22 (MLA writer)
  kvh::register_builtin_extension(kvh_planted_int8, "planted");  // issue 22 (int8)
  kvh::register_builtin_extension(kvh_planted_mla_readers, "planted");  // issue 22 (C)
  // ---- issue 23 (B long contexts): planted long-context readers ----
  kvh::register_builtin_extension(kvh_planted_long_context, "planted");
  // ---- end issue 23 (B long contexts) ----
  // ---- issue 23 (D launch configurations) ----
  kvh::register_builtin_extension(kvh_planted_launch_configs, "planted");
  // ---- end issue 23 (D launch configurations) ----
  // ---- issue 23 (C writer views, padding, value edges): planted edges ----
  kvh::register_builtin_extension(kvh_planted_edges, "planted");
  // ---- end issue 23 (C writer views, padding, value edges) ----
  kvh::testing::register_planted_routers();
  if (argc == 2 && std::strcmp(argv[1], "--list-mutants") == 0) {
    const kvh::Registry reg;
    int missing = 0;
    for (const Mutant& m : kMutants) {
      const std::string bug = bug_of(reg, m);
      if (bug.empty()) {
        std::fprintf(stderr, "kvharness_planted: mutant %s is not registered\n", m.planted);
        ++missing;
      }
      // Readers the routers pick are reached through the routed cases too.
      std::string filters = m.filters;
      if (filters.empty() || filters.back() == ';') filters += kRouted;
      std::printf("%s\t%s\t%s\t%s\t%s\n", m.kind, m.real, m.planted, filters.c_str(), bug.c_str());
    }
    for (const auto& name : reg.names()) {
      if (reg.origin(name) != "planted") continue;
      bool listed = std::any_of(std::begin(kNotMutants), std::end(kNotMutants), [&](const char* n) { return name == n; });
      for (const Mutant& m : kMutants) listed |= name == m.planted;
      if (!listed) {
        std::fprintf(stderr, "kvharness_planted: planted kernel %s is neither a mutant nor in kNotMutants\n", name.c_str());
        ++missing;
      }
    }
    for (const auto& p : kvh::testing::planted_routers()) {
      bool listed = false;
      for (const Mutant& m : kMutants) listed |= std::string(p.name) == m.planted;
      if (!listed) {
        std::fprintf(stderr, "kvharness_planted: planted policy %s is not a mutant\n", p.name);
        ++missing;
      }
    }
    return missing ? 1 : 0;
  }
  return kvh::cli_main(argc, argv);
}
