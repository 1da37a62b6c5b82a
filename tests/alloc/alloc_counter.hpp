// Counts the process's heap allocations (malloc, calloc, realloc, the aligned forms; operator new
// comes through malloc) from every thread while armed. Plain builds interpose the C allocator's
// entry points in the test executable; AddressSanitizer builds, whose allocator that would bypass,
// use the sanitizer's allocation hook instead. Either way every allocation is seen.
#ifndef ACLNN_CPU_TESTS_ALLOC_COUNTER_HPP_
#define ACLNN_CPU_TESTS_ALLOC_COUNTER_HPP_

#include <cstddef>
#include <cstdint>

namespace alloc_counter {

struct Counts {
    uint64_t calls = 0;
    uint64_t bytes = 0;
    uint64_t largest = 0;
};

void arm();
Counts disarm();  // what was allocated since arm()
// With ACLNN_CPU_TRAP_ALLOC=N in the environment an armed allocation of N bytes or more raises
// SIGTRAP (1: every one): run the test under gdb to see who allocates.

}  // namespace alloc_counter

#endif  // ACLNN_CPU_TESTS_ALLOC_COUNTER_HPP_
