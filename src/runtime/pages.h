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

/// `bytes` of zeroed, page-aligned memory in a mapping of its own; throws std::bad_alloc. With
/// `populate`, every page is made present at once (MAP_POPULATE: one system call instead of a
/// page fault per page, for memory the caller is about to write whole).
uint8_t* map_pages(size_t bytes, bool populate = false);
/// Returns a map_pages(bytes) result to the system.
void unmap_pages(uint8_t* p, size_t bytes) noexcept;

}  // namespace voxrt
