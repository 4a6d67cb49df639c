#if __has_include(<malloc.h>)
#include <malloc.h>
#endif

namespace kvh {
int cli_main(int argc, char** argv);
}

int main(int argc, char** argv) {
  // Keep freed memory in the process: a case's host buffers (float64 K/V of a sequence,
  // explanation arenas) are a few MiB each, and glibc would otherwise hand many of them
  // back to the kernel and fault fresh zeroed pages in for the next case (a tenth of the
  // cpu backend's time in page clearing). 32 MiB is glibc's largest mmap threshold.
#if defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)  // glibc
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  return kvh::cli_main(argc, argv);
}
