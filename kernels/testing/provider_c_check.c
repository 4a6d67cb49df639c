/* kvharness/provider.h is a C header: a minimal ABI 2 provider written in C99.
 * CTest checks it as C (provider_header_is_c99); it is also built (as C++, the
 * project's one language) into a library that registry_test loads with and
 * without a configuration string. */
#include <stdio.h>
#include <string.h>

#include "kvharness/provider.h"

static int write_nothing(void* context, const kvh_write_args* args, void* stream) {
  (void)context;
  (void)stream;
  return KVH_HAS_FIELD(args, kvh_write_args, block_size) ? 0 : 1;
}

static const char* no_error(void* context) {
  (void)context;
  return "";
}

static const int32_t head_sizes[] = {128};
static kvh_capabilities caps;
static kvh_kernel_desc kernels[1];

int kvh_provider_open(const kvh_open_args* args, kvh_provider* out) {
  if (strcmp(args->config, "") != 0) {
    snprintf(args->error, args->error_size, "this provider takes no configuration");
    return 1;
  }
  memset(&caps, 0, sizeof caps);
  caps.struct_size = sizeof caps;
  caps.head_sizes = head_sizes;
  caps.num_head_sizes = 1;
  memset(kernels, 0, sizeof kernels);
  kernels[0].struct_size = sizeof kernels[0];
  kernels[0].abi_version = KVH_ABI_VERSION;
  kernels[0].name = "c_write_nothing";
  kernels[0].description = "a C provider";
  kernels[0].role = KVH_ROLE_WRITER;
  kernels[0].cache_format = KVH_CACHE_NHD;
  kernels[0].write = write_nothing;
  kernels[0].last_error = no_error;
  kernels[0].capabilities = &caps;
  out->num_kernels = 1;
  out->kernels = kernels;
  return 0;
}
