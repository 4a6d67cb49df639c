// Model presets from public configs, and their per-rank shapes under tensor
// parallelism (vLLM rule: heads split evenly, kv heads split down to one).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace kvh {

/// Attention shape of a model, whole-model counts (before tensor parallelism).
struct ModelPreset {
  std::string name;
  int num_heads = 0, num_kv_heads = 0, head_size = 0;
  bool hybrid = false;     // attention + mamba/linear-attention layers: blocks-first interleaved cache
  std::string source;      // where the numbers come from
  // MLA models (kv_lora_rank > 0): one latent kv head (num_kv_heads 1) of head_size
  // kv_lora_rank + qk_rope_head_dim; qk_nope_head_dim sets the softmax scale.
  int kv_lora_rank = 0, qk_rope_head_dim = 0, qk_nope_head_dim = 0;
  bool mla() const { return kv_lora_rank > 0; }
};

/// The built-in presets (Qwen3.5-397B-A17B, Qwen3-235B-A22B, ...).
const std::vector<ModelPreset>& model_presets();
std::optional<ModelPreset> find_preset(const std::string& name);

/// Heads on one rank: num_heads / tp (must divide) and max(1, num_kv_heads / tp) (MLA: the one
/// latent head, on every rank).
struct RankShape {
  int num_heads, num_kv_heads;
};
/// Throws std::invalid_argument when tp < 1 or does not divide num_heads.
RankShape per_rank(const ModelPreset& m, int tp);

}  // namespace kvh
