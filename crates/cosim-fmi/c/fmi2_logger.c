/*
 * The FMI 2.0 logger callback is C-variadic (printf-style). Rust cannot define
 * a variadic function on stable, so this shim formats the message with
 * vsnprintf and hands the finished string to a Rust sink.
 *
 * The component environment the FMU passes back is a `cosim_fmi2_env*`
 * (built by the Rust side); its `sink` receives the formatted message.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*cosim_fmi2_sink)(void *ctx, const char *instance_name, int status,
                                const char *category, const char *message);

typedef struct {
    cosim_fmi2_sink sink;
    void *ctx;
} cosim_fmi2_env;

void cosim_fmi2_logger(void *env, const char *instance_name, int status,
                       const char *category, const char *message, ...) {
    cosim_fmi2_env *e = (cosim_fmi2_env *)env;
    if (e == NULL || e->sink == NULL) {
        return;
    }
    if (message == NULL) {
        e->sink(e->ctx, instance_name, status, category, "");
        return;
    }
    char stack_buf[1024];
    va_list args;
    va_start(args, message);
    va_list args_copy;
    va_copy(args_copy, args);
    int n = vsnprintf(stack_buf, sizeof stack_buf, message, args);
    va_end(args);
    if (n < 0) {
        va_end(args_copy);
        e->sink(e->ctx, instance_name, status, category, message);
        return;
    }
    if ((size_t)n < sizeof stack_buf) {
        va_end(args_copy);
        e->sink(e->ctx, instance_name, status, category, stack_buf);
        return;
    }
    /* Long message: format again into a heap buffer of the exact size. */
    char *heap_buf = (char *)malloc((size_t)n + 1);
    if (heap_buf == NULL) {
        va_end(args_copy);
        e->sink(e->ctx, instance_name, status, category, stack_buf);
        return;
    }
    vsnprintf(heap_buf, (size_t)n + 1, message, args_copy);
    va_end(args_copy);
    e->sink(e->ctx, instance_name, status, category, heap_buf);
    free(heap_buf);
}
