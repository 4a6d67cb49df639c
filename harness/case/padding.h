// The padding tokens of a write case: which entries of slot_mapping are -1
// (vLLM's PAD_SLOT_ID: a token of a padded batch that writes nothing).
// Drawn per case, so that no token position is always padding: a writer that
// drops its first or last token, or that treats padding as a trailing run,
// meets a case where that token is a real one.
#pragma once
#include <cstdint>
#include <vector>

namespace kvh {

/// The padding token indices (ascending, in [0, num_tokens)) of a write case of
/// `num_tokens` tokens, from its data_seed alone (a stream of its own, so the
/// slots the case draws do not move). One case in four has none; one in four
/// has both the first and the last token as padding, plus others; the rest
/// have at least one, each token padding with probability 1/8. A case of two or
/// more tokens keeps at least one real token. Never throws.
std::vector<int64_t> padding_tokens(int64_t num_tokens, uint64_t data_seed);

}  // namespace kvh
