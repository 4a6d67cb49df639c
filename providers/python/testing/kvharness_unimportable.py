"""PLANTED: a provider module whose import fails (a dependency that is not
installed): kvharness must stop before any case with exit code 125."""

from kvharness import writer

import kvharness_no_such_dependency  # PLANTED: import fails


@writer("never_registered", cache_format="flash")
def never(key, value, key_cache, value_cache, slot_mapping, block_size):
    pass
