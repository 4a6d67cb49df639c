// The small arrays a reader gets beside `out` and the cache: metadata
// (block_tables, context_lens, seq_lens, query_start_loc), scale tensors,
// score-modifier vectors and typed workspaces. Each lives in a device
// allocation of its own with a guarded margin on both sides, so that a write
// outside it, or into an array the reader only reads, is a verdict naming
// the array (harness/case/attention_case.cpp, judge_out_of_view).
#pragma once
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "case/arena.h"
#include "case/decode_inputs.h"
#include "device/device.h"
#include "kvharness/provider.h"

namespace kvh {

class GuardedArray {
 public:
  /// What the reader may do with the array's elements (never with its margins).
  enum class Access { Read, Write };

  /// `shape` in elements, outermost first (dense); `elem_bytes` 1, 2, 4 or 8. The
  /// margins (margin_bytes each side, a multiple of 4096) hold position-dependent
  /// sentinels until fill_margins; the elements are zero until written.
  GuardedArray(std::string name, std::vector<int64_t> shape, kvh_dtype dtype, int64_t elem_bytes, Access access,
               int64_t margin_bytes = kSmallMargin);

  const std::string& name() const { return name_; }
  int64_t elems() const { return host_.storage_elems(); }
  /// The host image's element storage (write it before upload()).
  template <class T> T* host_as() { return host_.storage_as<T>(); }
  /// Every margin element becomes `value` (elem_bytes bytes): what a read past
  /// the array gets (e.g. a safe index that still shows up in the output).
  void fill_margins(const void* value);
  /// Every element becomes `value` (a workspace's NaN).
  void fill_elements(const void* value);
  /// Copies the host image (margins included) to the device.
  void upload();
  /// The reader's view of the elements.
  kvh_tensor tensor() const;
  /// After the call: the device bytes back, and "" when the reader kept to
  /// its access, else what it did, naming the array and the first changed
  /// byte ("the reader wrote into seq_lens (element 3)", "the reader wrote
  /// past workspace segm_max (byte 12 after its end)").
  std::string check_after() const;

 private:
  std::string name_;
  std::vector<int64_t> shape_;
  kvh_dtype dtype_;
  Access access_;
  GuardedArena host_;
  device::Buffer dev_;
};

/// The guarded arrays of one reader call, in the order verdicts name them.
struct GuardedArrays {
  std::deque<GuardedArray> arrays;  // a deque: add() keeps earlier references valid
  /// Adds an array, uploads nothing yet; returns it.
  GuardedArray& add(std::string name, std::vector<int64_t> shape, kvh_dtype dtype, int64_t elem_bytes,
                    GuardedArray::Access access, int64_t margin_bytes = kSmallMargin);
  /// An int32 array of `values` (read-only) whose margins read back as `margin`
  /// (nullopt: the sentinels); `shape` (elements, outermost first) defaults to
  /// [values.size()]; the margins span at least `reach` elements (a read indexed
  /// by query row instead of sequence).
  kvh_tensor add_i32(std::string name, const std::vector<int32_t>& values, std::optional<int32_t> margin,
                     std::vector<int64_t> shape = {}, int64_t reach = 0);
  /// A float32 array of `values` (read-only), sentinel margins; an empty tensor when values is empty.
  kvh_tensor add_f32(std::string name, const std::vector<float>& values);
  /// The first array the reader misused: check_after's text, or "".
  std::string check_after() const;
};

}  // namespace kvh
