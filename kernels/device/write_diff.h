// A failing write case explained where its caches live (issue 24): every element
// of the arena the writer left, against the reference writer's and against the
// cache as the writer found it, classified and counted by device threads and
// reduced on the device; the host downloads one small tally. The host version of
// the same rules is harness/check/write_check.cpp (the test's oracle).
#pragma once
#include <cstddef>
#include <cstdint>

namespace kvh::device {

/// How a cache element decodes for |got - want|: 16-bit floats, fp8 codes, int8 codes
/// (the code itself, scales apart, as write_check.h states).
enum class ElemDecode : int32_t { F16 = 0, BF16 = 1, E4m3fn = 2, E4m3fnuz = 3, Int8 = 4 };

/// The tally of one comparison. Element indices are storage elements (arena elements
/// minus the front margin; negative or >= the storage: in a margin); a first_* index means
/// something only where its class's count is above 0.
struct WriteDiff {
  int64_t out_of_view = 0, mismatched = 0, unwritten = 0;  // elements of each class
  int64_t first_out_of_view = -1, first_mismatched = -1, first_unwritten = -1;
  int64_t worst = -1;       // the owned element of largest |got - want| (the first of equals); -1: none
  double worst_abs = -1;    // its |got - want| (+inf for a non-finite got)
  uint32_t worst_got = 0, worst_want = 0;  // its bits (16-bit) or code (1-byte)
};

/// Compares arenas `actual`, `expected` and `before` (device memory of n_bytes each,
/// elem_bytes 1 or 2, margin_bytes in front of the storage of storage_elems elements)
/// element by element. owned: device bytes [storage_elems], nonzero where the K or V view
/// owns the element. A differing element (actual != expected) outside the storage or
/// not owned is out of view; an owned one that kept its `before` value is unwritten, any
/// other mismatched. Throws Error on a launch failure.
WriteDiff write_diff(const void* actual, const void* expected, const void* before, const uint8_t* owned,
                     size_t n_bytes, int64_t margin_bytes, int64_t storage_elems, int elem_bytes, ElemDecode decode);

}  // namespace kvh::device
