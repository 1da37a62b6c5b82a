// Counts the process's heap allocations (malloc, calloc, realloc, the aligned forms; operator new
// comes through malloc) from every thread while armed, and the heap it holds: the bytes allocated
// less the bytes freed since arm(), at their highest. Plain builds interpose the C allocator's entry
// points in the test executable; AddressSanitizer builds, whose allocator that would bypass, use the
// sanitizer's allocation hooks instead. Either way every allocation and every free is seen.
//
// Device buffers (aclrtMalloc / aclrtFree: the user's tensors and workspaces; device_buffers.cpp
// wraps them) are kept apart: not in the heap the library holds, but summed as requested.
#ifndef ACLNN_CPU_TESTS_ALLOC_COUNTER_HPP_
#define ACLNN_CPU_TESTS_ALLOC_COUNTER_HPP_

#include <cstddef>
#include <cstdint>

namespace alloc_counter {

struct Counts {
    uint64_t calls = 0;
    uint64_t bytes = 0;
    uint64_t largest = 0;
    // The heap held beyond what it held at arm(), at its highest (usable sizes of the blocks; the
    // device buffers' not counted), and the device bytes requested since arm().
    int64_t peak_held = 0;
    uint64_t device_bytes = 0;
};

void arm();
Counts disarm();  // what was allocated since arm()
// With ACLNN_CPU_TRAP_ALLOC=N in the environment an armed allocation of N bytes or more raises
// SIGTRAP (1: every one): run the test under gdb to see who allocates.

// While an object of this type lives, the calling thread's allocations and frees are a device
// buffer's: bytes (requested) goes to device_bytes, the blocks stay out of the heap held.
class DeviceScope {
public:
    explicit DeviceScope(size_t bytes);
    ~DeviceScope();
    DeviceScope(const DeviceScope &) = delete;
    DeviceScope &operator=(const DeviceScope &) = delete;
};

}  // namespace alloc_counter

#endif  // ACLNN_CPU_TESTS_ALLOC_COUNTER_HPP_
