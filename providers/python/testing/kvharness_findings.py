"""PLANTED call-time refusals and stack crashes for the bridge's tests (never a real provider):
kvharness.Unsupported at call time (reader, writer, workspace sizing), a crash raised two modules
down (kvharness_findings_stack.py) with per-case numbers in its message, and a shuffle reader that
stands in for paged_attention_rocm under --replace-kernel. bridge_e2e_test.py `findings` runs them."""

import kvharness
from kvharness import reader, writer

import kvharness_findings_stack as stack
import kvharness_torch


def _pow2(n):
    return n > 0 and n & (n - 1) == 0


@reader("findings_pow2_reader", cache_format="pa_v1",
        description="the torch pa_v1 reader, refusing head sizes that are not a power of two at call time")
def pow2_reader(query, **kwargs):
    if not _pow2(query.shape[2]):
        raise kvharness.Unsupported(f"head_size {query.shape[2]} is not a power of two")
    kvharness_torch.paged_attention_v1(query=query, **kwargs)


@reader("findings_compile_error_reader", cache_format="pa_v1",
        description="the torch pa_v1 reader after a 'compile' in the stand-in stack that fails for head sizes 64 and 96")
def compile_error_reader(query, **kwargs):
    stack.compile_paged(query.shape[2], query.shape[0])  # PROVIDER: calls the stack
    kvharness_torch.paged_attention_v1(query=query, **kwargs)


def _refuse_big_pages(block_size, **kwargs):
    if block_size > 256:
        raise kvharness.Unsupported(f"block_size {block_size} needs more shared memory than the device has")
    return 0


@reader("findings_ws_refuses", cache_format="pa_v1", workspace_bytes=_refuse_big_pages,
        description="the torch pa_v1 reader whose workspace sizing refuses pages above 256 tokens")
def ws_refuses(**kwargs):
    kvharness_torch.paged_attention_v1(**kwargs)


@writer("findings_refusing_writer", cache_format="flash",
        description="the torch NHD writer, refusing pages above 256 tokens at call time")
def refusing_writer(key, value, key_cache, value_cache, slot_mapping, block_size):
    if block_size > 256:
        raise kvharness.Unsupported(f"block_size {block_size} needs more shared memory than the device has")
    kvharness_torch.reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, block_size)


@reader("findings_shuffle_128_only", cache_format="shuffle",
        description="the torch shuffle reader, refusing every head size but 128 at call time")
def shuffle_128_only(query, **kwargs):
    if query.shape[2] != 128:
        raise kvharness.Unsupported(f"head_size {query.shape[2]}: this build has 128 only")
    kvharness_torch.paged_attention_shuffle(query=query, **kwargs)
