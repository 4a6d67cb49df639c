#include "model.h"

#include <stdexcept>

namespace kvh {

namespace {

// kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128: the same in all three configs.
ModelPreset mla_preset(const char* name, int num_heads, const char* source) {
  ModelPreset m{name, num_heads, 1, 512 + 64, false, source};
  m.kv_lora_rank = 512, m.qk_rope_head_dim = 64, m.qk_nope_head_dim = 128;
  return m;
}

}  // namespace

const std::vector<ModelPreset>& model_presets() {
  // num_attention_heads, num_key_value_heads, head_dim from each model's
  // public Hugging Face config.json.
  static const std::vector<ModelPreset> presets{
      {"Qwen3.5-397B-A17B", 32, 2, 256, true, "Qwen/Qwen3.5-397B-A17B config.json (full-attention layers)"},
      {"Qwen3-235B-A22B", 64, 4, 128, false, "Qwen/Qwen3-235B-A22B config.json"},
      {"Qwen3-Next-80B-A3B", 16, 2, 256, true, "Qwen/Qwen3-Next-80B-A3B-Instruct config.json (full-attention layers)"},
      {"Llama-3.1-8B", 32, 8, 128, false, "meta-llama/Llama-3.1-8B config.json"},
      {"Llama-3.1-70B", 64, 8, 128, false, "meta-llama/Llama-3.1-70B config.json"},
      {"gpt-oss-120b", 64, 8, 64, false, "openai/gpt-oss-120b config.json"},
      {"Phi-3-mini-4k", 32, 32, 96, false, "microsoft/Phi-3-mini-4k-instruct config.json (3072 / 32)"},
      {"phi-2", 32, 32, 80, false, "microsoft/phi-2 config.json (2560 / 32)"},
      {"gemma-2-9b", 16, 8, 256, false, "google/gemma-2-9b config.json"},
      {"Qwen2.5-1.5B", 12, 2, 128, false, "Qwen/Qwen2.5-1.5B config.json (1536 / 12; GQA 6 over 2 kv heads)"},
      // MLA: num_attention_heads, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim of config.json;
      // num_kv_heads 1 and head_size kv_lora_rank + qk_rope_head_dim are the latent cache's.
      mla_preset("DeepSeek-V3", 128, "deepseek-ai/DeepSeek-V3 config.json (DeepSeek-R1's is the same)"),
      mla_preset("DeepSeek-V2-Lite", 16, "deepseek-ai/DeepSeek-V2-Lite config.json"),
      mla_preset("Kimi-K2", 64, "moonshotai/Kimi-K2-Instruct config.json"),
  };
  return presets;
}

std::optional<ModelPreset> find_preset(const std::string& name) {
  for (const auto& m : model_presets())
    if (m.name == name) return m;
  return std::nullopt;
}

RankShape per_rank(const ModelPreset& m, int tp) {
  if (tp < 1) throw std::invalid_argument("tp must be >= 1, got " + std::to_string(tp));
  if (m.num_heads % tp != 0)
    throw std::invalid_argument("tp " + std::to_string(tp) + " does not divide num_heads " +
                                std::to_string(m.num_heads) + " of " + m.name);
  return {m.num_heads / tp, std::max(1, m.num_kv_heads / tp)};
}

}  // namespace kvh
