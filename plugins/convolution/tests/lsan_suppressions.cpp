// LeakSanitizer suppressions of this test executable (used only in sanitizer builds).
// libgomp allocates a per-thread ICV block the first time a thread it did not create calls
// omp_set_num_threads (our TBB workers pin oneDNN to one OpenMP thread) and never frees it when such
// a thread exits: 216 bytes per worker, reported when a worker exits before the leak scan.
extern "C" const char *__lsan_default_suppressions();
extern "C" const char *__lsan_default_suppressions() { return "leak:libgomp.so\n"; }
