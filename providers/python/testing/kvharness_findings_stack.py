"""A stand-in for a serving stack's kernel file (never a real stack), for the bridge's tests of
kvharness 0.5's findings: the provider kvharness_findings.py calls into it, and it raises the way
a Triton kernel's compile does, so that a CRASH names the provider's line and this file's."""


def compile_paged(head_size, num_seqs):
    """Raises for the head sizes a real kernel's compile rejects; the message carries per-case numbers."""
    if head_size == 96:
        required = 98304 + 1024 * num_seqs
        raise RuntimeError(f"out of resource: shared memory, Required: {required}, Hardware limit: 101376")  # STACK: compile error
    if head_size == 64:
        raise ValueError("tl.arange's range must be a power of 2")  # STACK: second error
