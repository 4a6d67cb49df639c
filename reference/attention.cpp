#include "attention.h"

#include <cmath>
#include <limits>
#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvh::reference {

namespace {
void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("decode_attention: " + what);
}

// `who` prefixes every message ("decode_attention: ", "ragged_attention: sequence 3: ").
void check(bool ok, const std::string& who, const std::string& what) {
  if (!ok) throw std::invalid_argument(who + what);
}

void check_params(const AttentionParams& p, const std::string& who) {
  const int64_t H = p.num_heads, KVH = p.num_kv_heads, D = p.head_size;
  check(H > 0 && KVH > 0 && D > 0, who, "num_heads, num_kv_heads and head_size must be positive");
  check(H % KVH == 0, who,
        "num_heads " + std::to_string(H) + " is not a multiple of num_kv_heads " + std::to_string(KVH));
  check(p.sliding_window >= 0, who, "sliding_window must be >= 0 (0 = off)");
  check(p.softcap >= 0, who, "softcap must be >= 0 (0 = off)");
  check(p.sinks.empty() || int64_t(p.sinks.size()) == H, who, "sinks must be empty or have num_heads entries");
  check(p.alibi_slopes.empty() || int64_t(p.alibi_slopes.size()) == H, who,
        "alibi_slopes must be empty or have num_heads entries");
}

void check_kv(const AttentionParams& p, const RowMatrix& K, const RowMatrix& V, const std::string& who) {
  check(K.cols() == p.num_kv_heads * p.head_size && V.cols() == p.num_kv_heads * p.head_size, who,
        "keys/values must have num_kv_heads * head_size columns");
  check(K.rows() == V.rows(), who, "keys and values of a sequence must have the same context_len");
}

void check_sequence(const AttentionParams& p, const Eigen::Ref<const RowMatrix>& q_rows, const RowMatrix& K,
                    const RowMatrix& V, const std::string& who) {
  check(q_rows.cols() == p.num_heads * p.head_size, who, "query must have num_heads * head_size columns");
  check_kv(p, K, V, who);
  check(q_rows.rows() <= K.rows(), who,
        "more query tokens (" + std::to_string(q_rows.rows()) + ") than context tokens (" +
            std::to_string(K.rows()) + ")");
}

// Doubles of logits a tile may hold (16 MiB): a prefill chunk of 1024 tokens over an
// 8k context is cut into tiles of query tokens instead of one [group * q, L] matrix.
constexpr int64_t kTileLogits = int64_t(1) << 21;

// ragged_sequence_attention without the checks. Per kv head, the query rows of its group
// are gathered token-major (row r: token j0 + r / group, head kvh * group + r % group) so
// that a tile of tokens needs only the keys [first visible of its first token, last
// visible of its last token]; one product gives the tile's logits.
RowMatrix sequence_attention(const AttentionParams& prm, const Eigen::Ref<const RowMatrix>& Q, const RowMatrix& K,
                             const RowMatrix& V, bool causal) {
  const int64_t H = prm.num_heads, KVH = prm.num_kv_heads, D = prm.head_size, group = H / KVH;
  const int64_t q = Q.rows(), L = K.rows(), W = prm.sliding_window;
  RowMatrix out = RowMatrix::Zero(q, H * D);
  if (q == 0) return out;
  // Visible keys of token j (position p = L - q + j): [lo(j), hi(j)], never empty (t = p is kept).
  auto lo = [&](int64_t j) { return W > 0 ? std::max<int64_t>(0, L - q + j - W + 1) : int64_t(0); };
  auto hi = [&](int64_t j) { return causal ? L - q + j : L - 1; };
  const int64_t tile_tokens = std::max<int64_t>(1, kTileLogits / (group * L));
  for (int64_t kvh = 0; kvh < KVH; ++kvh) {
    for (int64_t j0 = 0; j0 < q; j0 += tile_tokens) {
      const int64_t nj = std::min(tile_tokens, q - j0), rows = nj * group;
      const int64_t first = lo(j0), span = hi(j0 + nj - 1) - first + 1;
      RowMatrix Qt(rows, D);
      for (int64_t j = 0; j < nj; ++j)
        for (int64_t g = 0; g < group; ++g) Qt.row(j * group + g) = Q.row(j0 + j).segment((kvh * group + g) * D, D);
      const auto Ks = K.block(first, kvh * D, span, D);
      RowMatrix S = prm.scale * (Qt * Ks.transpose());  // [rows, span]: logits of keys first .. first + span - 1
      Eigen::VectorXd denom(rows);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t j = j0 + r / group, h = kvh * group + r % group, p = L - q + j;
        const int64_t a = lo(j) - first, n = hi(j) - lo(j) + 1;  // visible columns [a, a + n)
        auto row = S.row(r);
        auto kept = row.segment(a, n).array();
        if (prm.softcap > 0) kept = prm.softcap * (kept / prm.softcap).tanh();
        if (!prm.alibi_slopes.empty())
          for (int64_t c = 0; c < n; ++c) kept(c) += prm.alibi_slopes[size_t(h)] * double(first + a + c - p);
        double m = kept.maxCoeff();
        if (!prm.sinks.empty()) m = std::max(m, prm.sinks[size_t(h)]);
        kept = (kept - m).exp();
        // Probabilities below the smallest normal double (far below an ulp of the sum, which is
        // at least 1) are 0: subnormals would make the product below about 100 times slower
        // (a `values = "sink"` case: 73 s instead of well under 1 s on one core).
        kept = (kept < std::numeric_limits<double>::min()).select(0.0, kept);
        denom(r) = kept.sum() + (prm.sinks.empty() ? 0.0 : std::exp(prm.sinks[size_t(h)] - m));
        row.head(a).setZero();
        row.tail(span - a - n).setZero();
      }
      const RowMatrix O = (S * V.block(first, kvh * D, span, D)).array().colwise() / denom.array();
      for (int64_t r = 0; r < rows; ++r)
        out.row(j0 + r / group).segment((kvh * group + r % group) * D, D) = O.row(r);
    }
  }
  return out;
}
}  // namespace

std::vector<double> alibi_slopes(int64_t total_num_heads) {
  require(total_num_heads >= 1, "alibi_slopes: total_num_heads must be positive");
  int64_t n = 1;
  while (n * 2 <= total_num_heads) n *= 2;
  std::vector<double> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(std::exp2(-8.0 * double(i + 1) / double(n)));
  for (int64_t k = 0; n + k < total_num_heads; ++k) out.push_back(std::exp2(-4.0 * double(2 * k + 1) / double(n)));
  return out;
}

RowMatrix decode_attention(const DecodeAttentionInput& in) {
  const int64_t H = in.num_heads, KVH = in.num_kv_heads, D = in.head_size;
  check_params(in, "decode_attention: ");
  const int64_t num_seqs = in.query.rows();
  require(in.query.cols() == H * D, "query must have num_heads * head_size columns");
  require(int64_t(in.keys.size()) == num_seqs && int64_t(in.values.size()) == num_seqs,
          "keys and values need one matrix per sequence (query row)");
  const int64_t group = H / KVH;
  RowMatrix out = RowMatrix::Zero(num_seqs, H * D);
  for (int64_t s = 0; s < num_seqs; ++s) {
    const RowMatrix &K = in.keys[size_t(s)], &V = in.values[size_t(s)];
    check_kv(in, K, V, "decode_attention: ");
    if (K.rows() == 0) continue;
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kvh = h / group;
      const Eigen::VectorXd q = in.query.row(s).segment(h * D, D).transpose();
      const int64_t L = K.rows();
      Eigen::VectorXd logits = in.scale * (K.middleCols(kvh * D, D) * q);
      if (in.softcap > 0) logits = in.softcap * (logits / in.softcap).array().tanh();
      if (!in.alibi_slopes.empty())
        for (int64_t t = 0; t < L; ++t) logits(t) += in.alibi_slopes[size_t(h)] * double(t - (L - 1));
      // The window keeps tokens [first, L): the last sliding_window ones.
      const int64_t first = in.sliding_window > 0 && L > in.sliding_window ? L - in.sliding_window : 0;
      const Eigen::VectorXd kept = logits.segment(first, L - first);
      double m = kept.maxCoeff();
      if (!in.sinks.empty()) m = std::max(m, in.sinks[size_t(h)]);
      const Eigen::VectorXd p = (kept.array() - m).exp().matrix();
      const double denom = p.sum() + (in.sinks.empty() ? 0.0 : std::exp(in.sinks[size_t(h)] - m));
      out.row(s).segment(h * D, D) = (p.transpose() * V.middleRows(first, L - first).middleCols(kvh * D, D)) / denom;
    }
  }
  return out;
}

RowMatrix ragged_sequence_attention(const AttentionParams& params, const Eigen::Ref<const RowMatrix>& q_rows,
                                    const RowMatrix& K, const RowMatrix& V, bool causal) {
  const std::string who = "ragged_sequence_attention: ";
  check_params(params, who);
  check_sequence(params, q_rows, K, V, who);
  return sequence_attention(params, q_rows, K, V, causal);
}

RowMatrix ragged_attention(const RaggedAttentionInput& in) {
  const std::string who = "ragged_attention: ";
  check_params(in, who);
  check(in.query.cols() == in.num_heads * in.head_size, who, "query must have num_heads * head_size columns");
  const size_t num_seqs = in.keys.size();
  check(in.values.size() == num_seqs, who,
        "values has " + std::to_string(in.values.size()) + " sequences, keys " + std::to_string(num_seqs));
  const auto& loc = in.query_start_loc;
  check(loc.size() == num_seqs + 1, who,
        "query_start_loc needs num_seqs + 1 = " + std::to_string(num_seqs + 1) + " entries, has " +
            std::to_string(loc.size()));
  check(loc[0] == 0, who, "query_start_loc must start at 0, starts at " + std::to_string(loc[0]));
  for (size_t s = 0; s < num_seqs; ++s)
    check(loc[s + 1] >= loc[s], who, "query_start_loc decreases at sequence " + std::to_string(s));
  check(loc[num_seqs] == in.query.rows(), who,
        "query_start_loc ends at " + std::to_string(loc[num_seqs]) + ", query has " +
            std::to_string(in.query.rows()) + " rows");
  for (size_t s = 0; s < num_seqs; ++s)
    check_sequence(in, in.query.middleRows(loc[s], loc[s + 1] - loc[s]), in.keys[s], in.values[s],
                   who + "sequence " + std::to_string(s) + ": ");
  RowMatrix out(in.query.rows(), in.query.cols());
  for (size_t s = 0; s < num_seqs; ++s) {
    const int64_t q = loc[s + 1] - loc[s];
    out.middleRows(loc[s], q) =
        sequence_attention(in, in.query.middleRows(loc[s], q), in.keys[s], in.values[s], in.causal);
  }
  return out;
}

}  // namespace kvh::reference
