// Large buffers the runtime reuses (scratch blocks, activation arenas) come straight from the
// kernel, one mapping each, and go back to it when freed. From malloc, glibc decides per size
// whether a block is mapped or carved from its heap, and it raises that threshold to the
// largest mapped block freed so far: a load that happened to free a few large temporaries sent
// later scratch blocks to the heap, where a replaced block stays resident as a hole (+1.8 MiB
// of peak RSS for the spleen bundle's fp16 UNet after a change to the load's temporaries).
#pragma once

#include <cstddef>
#include <cstdint>

namespace voxrt {

/// Mappings of at least this many bytes start on a 2 MiB boundary and ask for huge pages.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

/// Whether map_pages asks for huge pages: where the system has them (Linux's transparent huge
/// pages) and the environment sets VOXRT_HUGEPAGES=1. Read once. Off by default: on this
/// project's virtual machines (AMD EPYC Zen 5) huge pages made a Session's first run of the
/// fixtures 1.15-2.8x shorter and nnU-Net 3d's at 128^3 6.8-7.7 s -> 5.6-5.8, but later runs took
/// 0.4-3.6% longer on nnU-Net 3d and 1.5-4.4% on nnU-Net 2d at 512x512 (fixtures level), and a
/// sliding window runs one shape many times (docs/PERFORMANCE.md, "Huge pages").
bool huge_pages_enabled();

/// `bytes` of zeroed, page-aligned memory in a mapping of its own; throws std::bad_alloc. With
/// `populate`, every page is made present at once (one system call instead of a page fault per
/// page, for memory the caller is about to write whole). From kHugePageBytes up, with
/// huge_pages_enabled(), the mapping is 2 MiB-aligned and advised as huge (MADV_HUGEPAGE): the
/// kernel backs each whole 2 MiB of it with one page where it has one free, one fault (and on a
/// virtual machine one first touch) for 512 small pages.
uint8_t* map_pages(size_t bytes, bool populate = false);
/// Returns a map_pages(bytes) result to the system.
void unmap_pages(uint8_t* p, size_t bytes) noexcept;

}  // namespace voxrt
