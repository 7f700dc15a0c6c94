/* For measurement only (bench/model_exchange/run.sh builds it and runs one
 * contender with it in LD_PRELOAD): cosim's watchdog of hung FMU calls
 * (crates/cosim-core/src/watchdog.rs) looks every 50 ms in a thread that
 * sleeps between looks, and the run joins that thread when it ends, so a
 * run waits for the rest of the current 50 ms sleep (from 0 to 50 ms) before
 * it exits. With this shim a sleep of exactly 50 ms sleeps 0.5 ms instead:
 * what a watchdog woken at the end of the run would cost. Nothing else in
 * cosim sleeps 50 ms. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>

static int is_watchdog_period(const struct timespec *req) {
    return req && req->tv_sec == 0 && req->tv_nsec == 50000000;
}

int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem) {
    static int (*real)(clockid_t, int, const struct timespec *, struct timespec *);
    if (!real) real = (int (*)(clockid_t, int, const struct timespec *, struct timespec *))dlsym(RTLD_NEXT, "clock_nanosleep");
    if (flags == 0 && is_watchdog_period(req)) {
        struct timespec shorter = {0, 500000};
        return real(clock, flags, &shorter, rem);
    }
    return real(clock, flags, req, rem);
}

int nanosleep(const struct timespec *req, struct timespec *rem) {
    static int (*real)(const struct timespec *, struct timespec *);
    if (!real) real = (int (*)(const struct timespec *, struct timespec *))dlsym(RTLD_NEXT, "nanosleep");
    if (is_watchdog_period(req)) {
        struct timespec shorter = {0, 500000};
        return real(&shorter, rem);
    }
    return real(req, rem);
}
