// Builders of ABI 2 kernel descriptors for kernels compiled into this binary
// (the built-in provider, the planted kernels of the tests): they wrap a plain
// `int fn(const args*, void* stream)` launcher into the context-taking entry
// points of kvharness/provider.h.
#pragma once
#include "kvharness/provider.h"

namespace kvh::kernels {

template <int (*F)(const kvh_write_args*, void*)>
int write_entry(void*, const kvh_write_args* a, void* stream) { return F(a, stream); }
template <int (*F)(const kvh_attention_args*, void*)>
int attention_entry(void*, const kvh_attention_args* a, void* stream) { return F(a, stream); }
template <uint64_t (*F)(const kvh_attention_args*)>
int workspace_entry(void*, const kvh_attention_args* a, uint64_t* bytes) {
  *bytes = F(a);
  return 0;
}

/// A typed-workspaces entry (kvh_workspaces_fn) for F, which fills specs[0 .. *count).
template <int (*F)(const kvh_attention_args*, kvh_workspace_spec*, int32_t, int32_t*)>
int workspaces_entry(void*, const kvh_attention_args* a, kvh_workspace_spec* specs, int32_t max_specs,
                     int32_t* count) {
  return F(a, specs, max_specs, count);
}

/// The fields every built-in descriptor sets; the entry points are the caller's.
inline kvh_kernel_desc base_desc(const char* name, const char* description, kvh_role role, kvh_cache_format format,
                                 int fixture, const kvh_capabilities* caps) {
  kvh_kernel_desc d{};
  d.abi_version = KVH_ABI_VERSION;
  d.name = name;
  d.description = description;
  d.role = role;
  d.cache_format = format;
  d.fixture = fixture;
  d.capabilities = caps;
  return d;
}

/// A writer descriptor for launcher F; capabilities may be null (defaults).
template <int (*F)(const kvh_write_args*, void*)>
kvh_kernel_desc writer_desc(const char* name, const char* description, kvh_cache_format format, int fixture,
                            const kvh_capabilities* caps = nullptr) {
  kvh_kernel_desc d = base_desc(name, description, KVH_ROLE_WRITER, format, fixture, caps);
  d.write = write_entry<F>;
  return d;
}

/// A reader descriptor for launcher F; workspace may be null (no workspace).
template <int (*F)(const kvh_attention_args*, void*)>
kvh_kernel_desc reader_desc(const char* name, const char* description, kvh_cache_format format, int fixture,
                            kvh_workspace_fn workspace, const kvh_capabilities* caps = nullptr) {
  kvh_kernel_desc d = base_desc(name, description, KVH_ROLE_READER, format, fixture, caps);
  d.attention = attention_entry<F>;
  d.workspace_bytes = workspace;
  return d;
}

/// A reader descriptor for launcher F with typed workspaces (kvh_kernel_desc.workspaces = W,
/// null: none) instead of a byte count.
template <int (*F)(const kvh_attention_args*, void*)>
kvh_kernel_desc typed_reader_desc(const char* name, const char* description, kvh_cache_format format, int fixture,
                                  kvh_workspaces_fn workspaces, const kvh_capabilities* caps) {
  kvh_kernel_desc d = reader_desc<F>(name, description, format, fixture, nullptr, caps);
  d.workspaces = workspaces;
  return d;
}

}  // namespace kvh::kernels
