#include "runtime/pages.h"

#include <new>

// Under AddressSanitizer the blocks stay on the heap, where its redzones catch a kernel that
// reads past them.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VOXRT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define VOXRT_ASAN 1
#endif
#if (defined(__unix__) || defined(__APPLE__)) && !defined(VOXRT_ASAN)
#include <sys/mman.h>
#define VOXRT_HAVE_MMAP 1
#endif

namespace voxrt {

uint8_t* map_pages(size_t bytes, bool populate) {
  if (bytes == 0) bytes = 1;
#ifdef VOXRT_HAVE_MMAP
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0), -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return static_cast<uint8_t*>(p);
#else
  return new (std::align_val_t(4096)) uint8_t[bytes]();
#endif
}

void unmap_pages(uint8_t* p, size_t bytes) noexcept {
  if (!p) return;
  if (bytes == 0) bytes = 1;
#ifdef VOXRT_HAVE_MMAP
  munmap(p, bytes);
#else
  ::operator delete[](p, std::align_val_t(4096));
#endif
}

}  // namespace voxrt
