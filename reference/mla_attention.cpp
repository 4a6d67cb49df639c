#include "mla_attention.h"

#include <stdexcept>
#include <string>

namespace kvh::reference {

namespace {
void check(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("mla_attention: " + what);
}
}  // namespace

RowMatrix mla_attention(const MlaAttentionInput& in) {
  const int64_t H = in.num_heads, R = in.kv_lora_rank, P = in.rope_dim, D = R + P;
  check(H > 0 && R > 0 && P >= 0, "num_heads and kv_lora_rank must be positive, rope_dim >= 0");
  check(in.query.cols() == H * D, "query must have num_heads * (kv_lora_rank + rope_dim) = " +
                                      std::to_string(H * D) + " columns, has " + std::to_string(in.query.cols()));
  const auto& qsl = in.query_start_loc;
  const int64_t S = int64_t(in.latent.size());
  check(int64_t(qsl.size()) == S + 1, "query_start_loc must have num_seqs + 1 = " + std::to_string(S + 1) + " entries");
  check(qsl.front() == 0 && qsl.back() == in.query.rows(), "query_start_loc must start at 0 and end at the query rows");
  RowMatrix out = RowMatrix::Zero(in.query.rows(), H * R);
  for (int64_t s = 0; s < S; ++s) {
    const std::string seq = "sequence " + std::to_string(s) + ": ";
    const RowMatrix& lat = in.latent[size_t(s)];
    const int64_t q = qsl[size_t(s) + 1] - qsl[size_t(s)], L = lat.rows();
    check(q >= 0, seq + "query_start_loc decreases");
    check(lat.cols() == D, seq + "latent must have kv_lora_rank + rope_dim columns");
    check(q <= L, seq + "more query tokens (" + std::to_string(q) + ") than context tokens (" + std::to_string(L) + ")");
    for (int64_t j = 0; j < q; ++j) {
      const int64_t row = qsl[size_t(s)] + j, n = in.causal ? L - q + j + 1 : L;  // visible keys [0, n)
      // Q_j [H, D]: the heads of this query token, one per row.
      const RowMatrix Qj = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>(
          in.query.row(row).data(), H, D, Eigen::OuterStride<>(D));
      RowMatrix Sc = in.scale * (Qj * lat.topRows(n).transpose());  // [H, n]: every dim scores
      for (int64_t h = 0; h < H; ++h) {
        auto r = Sc.row(h).array();
        r = (r - r.maxCoeff()).exp();
        r /= r.sum();
      }
      const RowMatrix O = Sc * lat.topRows(n).leftCols(R);  // values: the first R dims only
      for (int64_t h = 0; h < H; ++h) out.row(row).segment(h * R, R) = O.row(h);
    }
  }
  return out;
}

}  // namespace kvh::reference
