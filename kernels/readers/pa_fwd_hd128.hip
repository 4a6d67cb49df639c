// Reader `pa_fwd_asm`: the fixed-function head_size-128 decode kernel of
// pa_fwd_hd128.h (design there), built with its correct rules.
#include "readers/pa_fwd_hd128.h"

/// Reader `pa_fwd_asm`. Checks ranks, dtypes and extents (check_attention_args
/// without the head-size test); returns hipErrorInvalidValue without launching
/// when they are wrong. Ignores partition_size and the workspace.
extern "C" int kvh_pa_fwd_asm(const kvh_attention_args* a, void* stream) {
  return kvh::kernels::launch_pa_fwd_hd128<>(a, stream);
}
