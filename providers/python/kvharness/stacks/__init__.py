"""Stack adapters: a serving stack's kernels and routers registered under their public names.

kvharness.stacks.aiter  the ROCm kernel library's paged-attention dispatch (paged_attention_common)
                        as a router (kvharness.router), judged by intercepting which kernel it calls.
"""
