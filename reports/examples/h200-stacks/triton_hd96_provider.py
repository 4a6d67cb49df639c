"""A Triton flash writer written here whose tl.arange needs a power-of-two head size (the issue's
'Triton kernel that does not compile for head size 96'), and the same kernel refusing by Unsupported."""
import kvharness
import triton
import triton.language as tl
from kvharness import writer


@triton.jit
def _write(key, value, key_cache, value_cache, slots, ks_t, ks_h, vs_t, vs_h, kc_b, kc_t, kc_h, vc_b, vc_t, vc_h,
           block_size, D: tl.constexpr):
    t = tl.program_id(0)
    h = tl.program_id(1)
    slot = tl.load(slots + t)
    if slot < 0:
        return
    b = slot // block_size
    o = slot % block_size
    d = tl.arange(0, D)  # a power of two only
    tl.store(key_cache + b * kc_b + o * kc_t + h * kc_h + d, tl.load(key + t * ks_t + h * ks_h + d))
    tl.store(value_cache + b * vc_b + o * vc_t + h * vc_h + d, tl.load(value + t * vs_t + h * vs_h + d))


def _launch(key, value, key_cache, value_cache, slot_mapping, block_size):
    T, H, D = key.shape
    _write[(T, H)](key, value, key_cache, value_cache, slot_mapping, key.stride(0), key.stride(1), value.stride(0),
                   value.stride(1), key_cache.stride(0), key_cache.stride(1), key_cache.stride(2),
                   value_cache.stride(0), value_cache.stride(1), value_cache.stride(2), block_size, D=D)


@writer("demo_triton_flash_pow2", cache_format="flash")
def compiles_pow2_only(key, value, key_cache, value_cache, slot_mapping, block_size):
    _launch(key, value, key_cache, value_cache, slot_mapping, block_size)


@writer("demo_triton_flash_refuses", cache_format="flash")
def refuses(key, value, key_cache, value_cache, slot_mapping, block_size):
    d = key.shape[-1]
    if d & (d - 1):
        raise kvharness.Unsupported(f"head_size {d} is not a power of two (tl.arange)")
    _launch(key, value, key_cache, value_cache, slot_mapping, block_size)
