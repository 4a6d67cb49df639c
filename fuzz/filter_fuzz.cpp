// libFuzzer target: cases/filter.h Filter (the parser) and Filter::matches.
//
// Contract checked: Filter(text) either builds a filter or throws
// FilterError (a std::invalid_argument); a built filter answers matches()
// for any case without throwing. The cases matched against are the ones
// cases/default.toml's first tables would make, built here by hand so that
// this target depends on filter.* and case.* only: one of each kind, with
// every string field set, so every filter key reaches a non-empty value.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "filter.h"

namespace {

std::vector<kvh::Case> sample_cases() {
  kvh::Case w;
  w.kind = kvh::CaseKind::Write;
  w.model = "Qwen3.5-397B-A17B";
  w.tp = 8;
  w.num_heads = 4;
  w.num_kv_heads = 1;
  w.head_size = 256;
  w.layout = kvh::Scheme::Interleaved;
  w.block_size = 16;
  w.batch_size = 512;
  w.writer = "reshape_and_cache_shuffle";
  w.seed = 7;
  w.source = "fuzz.toml:1";
  kvh::Case a = w;
  a.kind = kvh::CaseKind::Attention;
  a.writer.clear();
  a.reader = "pa_fwd_hd128";
  a.context_len_min = 700;
  a.context_len_max = 1300;
  kvh::Case p = w;
  p.kind = kvh::CaseKind::Pipeline;
  p.dtype = kvh::DType::BF16;
  p.router_policy = "aiter-v0.1.10.post3";
  p.target = "MI355X";
  p.variant_name = "after fix (shuffle=1)";
  p.context_len_min = p.context_len_max = 4096;
  return {w, a, p};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<kvh::Case> cases = sample_cases();
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const kvh::Filter f(text);
    for (const kvh::Case& c : cases) {
      volatile bool m = f.matches(c);
      (void)m;
    }
  } catch (const kvh::FilterError&) {
    // A rejected filter: the documented outcome for bad input.
  }
  return 0;
}
