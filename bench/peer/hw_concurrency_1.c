/*
 * LD_PRELOAD shim for the libcosim peer of the speed benchmark
 * (bench/peer/libcosim_bench.py --workers 0).
 *
 * libcosim's fixed_step_algorithm sizes its worker pool as
 * min(workerThreadCount.value_or(hardware_concurrency() - 1), hardware_concurrency() - 1),
 * and libcosimc 0.11 (libcosimpy 0.0.6) offers no way to pass
 * workerThreadCount. Reporting one hardware thread makes the pool empty, so
 * libcosim steps every FMU inline on the calling thread: "worker threads 0".
 *
 * libcosimc.so imports std::thread::hardware_concurrency() from
 * libstdc++.so.6; a preloaded, unversioned definition of the same symbol
 * takes precedence for every importer in the process.
 */
unsigned int _ZNSt6thread20hardware_concurrencyEv(void) { return 1; }
