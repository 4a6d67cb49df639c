"""Empty kernels: what a call through the bridge costs (kvharness bench
--provider python:providers/python/testing/kvharness_empty.py --kernel fixture_empty_python_writer)."""

from kvharness import reader, writer


@writer("fixture_empty_python_writer", cache_format="flash", fixture=True,
        description="does nothing: the bridge's per-call overhead (DLPack import of 5 tensors, the call)")
def empty_writer(key, value, key_cache, value_cache, slot_mapping, block_size):
    pass


@reader("fixture_empty_python_reader", cache_format="shuffle", fixture=True,
        description="does nothing: the bridge's per-call overhead for a reader (6 tensors)")
def empty_reader(out, query, key_cache, value_cache, block_tables, context_lens, block_size, max_context_len,
                 scale, k_scale, v_scale, partition_size, workspace):
    pass
