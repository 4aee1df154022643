#include "runtime/pages.h"

#include <cstdlib>
#include <cstring>
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
#include <unistd.h>
#define VOXRT_HAVE_MMAP 1
#endif

namespace voxrt {

bool huge_pages_enabled() {
#if defined(VOXRT_HAVE_MMAP) && defined(MADV_HUGEPAGE)
  static const bool on = [] {
    const char* e = std::getenv("VOXRT_HUGEPAGES");
    return e && std::strcmp(e, "1") == 0;
  }();
  return on;
#else
  return false;
#endif
}

#ifdef VOXRT_HAVE_MMAP
namespace {

size_t page_size() {
  static const size_t size = [] {
    const long s = sysconf(_SC_PAGESIZE);
    return s > 0 ? static_cast<size_t>(s) : size_t{4096};
  }();
  return size;
}

// Every page of [p, p + len) present: one call where the kernel has MADV_POPULATE_WRITE (5.14),
// else a write to each page (the memory is fresh and zeroed, so writing a zero changes nothing).
void populate_range(uint8_t* p, size_t len) {
#ifdef MADV_POPULATE_WRITE
  if (madvise(p, len, MADV_POPULATE_WRITE) == 0) return;
#endif
  for (size_t at = 0; at < len; at += page_size()) reinterpret_cast<volatile uint8_t*>(p)[at] = 0;
}

}  // namespace
#endif

uint8_t* map_pages(size_t bytes, bool populate) {
  if (bytes == 0) bytes = 1;
#ifdef VOXRT_HAVE_MMAP
  if (bytes >= kHugePageBytes && huge_pages_enabled()) {
    // A mapping aligned to 2 MiB, whose whole 2 MiB spans the kernel may back with huge pages
    // (transparent huge pages in `madvise` or `always` mode): one fault, and on a
    // virtual machine one first touch, for 512 pages. The slack around it is unmapped again.
    const size_t len = (bytes + page_size() - 1) / page_size() * page_size();
    const size_t span = len + kHugePageBytes;
    void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t at = (begin + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
    if (at > begin) munmap(raw, at - begin);
    if (begin + span > at + len) munmap(reinterpret_cast<void*>(at + len), begin + span - at - len);
    uint8_t* p = reinterpret_cast<uint8_t*>(at);
    madvise(p, len, MADV_HUGEPAGE);  // advice: where the kernel refuses, small pages serve
    if (populate) populate_range(p, len);
    return p;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0), -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return static_cast<uint8_t*>(p);
#else
  (void)populate;  // heap memory, zeroed here: present as written
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
