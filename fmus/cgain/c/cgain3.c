/* CGain, FMI 3.0 co-simulation: y = k * u, direct feed-through, nothing to
 * integrate; the same model as cgain2.c. Value references: 0 time, 1 u
 * (input), 2 y (output), 3 k (parameter). */
#include <stdlib.h>
#include <string.h>

#include "fmi_min.h"

#define CGAIN_TOKEN "cosim:CGain:fmi3:1"

typedef struct {
    double time;
    double u;
    double k;
} CGain;

CGAIN_EXPORT const char *fmi3GetVersion(void) { return "3.0"; }

CGAIN_EXPORT fmi3Status fmi3SetDebugLogging(fmi3Instance c, fmi3Boolean on, size_t n,
                                            const fmi3String categories[]) {
    (void)c; (void)on; (void)n; (void)categories;
    return fmi3OK;
}

CGAIN_EXPORT fmi3Instance fmi3InstantiateCoSimulation(
    fmi3String name, fmi3String token, fmi3String resources, fmi3Boolean visible,
    fmi3Boolean logging, fmi3Boolean event_mode, fmi3Boolean early_return,
    const fmi3ValueReference required[], size_t n_required, fmi3InstanceEnvironment env,
    fmi3LogMessageCallback log, fmi3IntermediateUpdateCallback update) {
    (void)name; (void)resources; (void)visible; (void)logging; (void)event_mode;
    (void)early_return; (void)required; (void)n_required; (void)env; (void)log; (void)update;
    if (token == NULL || strcmp(token, CGAIN_TOKEN) != 0) {
        return NULL;
    }
    CGain *m = calloc(1, sizeof(CGain));
    if (m != NULL) {
        m->k = 1.0;
    }
    return m;
}

CGAIN_EXPORT void fmi3FreeInstance(fmi3Instance c) { free(c); }

CGAIN_EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance c, fmi3Boolean tol_defined,
                                                     fmi3Float64 tol, fmi3Float64 start,
                                                     fmi3Boolean stop_defined,
                                                     fmi3Float64 stop) {
    (void)tol_defined; (void)tol; (void)stop_defined; (void)stop;
    ((CGain *)c)->time = start;
    return fmi3OK;
}

CGAIN_EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance c) { (void)c; return fmi3OK; }
CGAIN_EXPORT fmi3Status fmi3Terminate(fmi3Instance c) { (void)c; return fmi3OK; }

CGAIN_EXPORT fmi3Status fmi3Reset(fmi3Instance c) {
    CGain *m = c;
    m->time = 0.0;
    m->u = 0.0;
    m->k = 1.0;
    return fmi3OK;
}

CGAIN_EXPORT fmi3Status fmi3GetFloat64(fmi3Instance c, const fmi3ValueReference vr[], size_t n,
                                       fmi3Float64 value[], size_t n_values) {
    const CGain *m = c;
    if (n_values != n) {
        return fmi3Error;
    }
    for (size_t i = 0; i < n; i++) {
        switch (vr[i]) {
        case 0: value[i] = m->time; break;
        case 1: value[i] = m->u; break;
        case 2: value[i] = m->k * m->u; break;
        case 3: value[i] = m->k; break;
        default: return fmi3Error;
        }
    }
    return fmi3OK;
}

CGAIN_EXPORT fmi3Status fmi3SetFloat64(fmi3Instance c, const fmi3ValueReference vr[], size_t n,
                                       const fmi3Float64 value[], size_t n_values) {
    CGain *m = c;
    if (n_values != n) {
        return fmi3Error;
    }
    for (size_t i = 0; i < n; i++) {
        switch (vr[i]) {
        case 1: m->u = value[i]; break;
        case 3: m->k = value[i]; break;
        default: return fmi3Error;
        }
    }
    return fmi3OK;
}

/* No variable of these types: only empty calls succeed. */
#define CGAIN_NONE(get, set, T)                                                                  \
    CGAIN_EXPORT fmi3Status get(fmi3Instance c, const fmi3ValueReference vr[], size_t n, T v[],   \
                                size_t nv) {                                                      \
        (void)c; (void)vr; (void)v; (void)nv;                                                     \
        return n == 0 ? fmi3OK : fmi3Error;                                                       \
    }                                                                                             \
    CGAIN_EXPORT fmi3Status set(fmi3Instance c, const fmi3ValueReference vr[], size_t n,          \
                                const T v[], size_t nv) {                                         \
        (void)c; (void)vr; (void)v; (void)nv;                                                     \
        return n == 0 ? fmi3OK : fmi3Error;                                                       \
    }

CGAIN_NONE(fmi3GetInt32, fmi3SetInt32, fmi3Int32)
CGAIN_NONE(fmi3GetInt64, fmi3SetInt64, fmi3Int64)
CGAIN_NONE(fmi3GetBoolean, fmi3SetBoolean, fmi3Boolean)
CGAIN_NONE(fmi3GetString, fmi3SetString, fmi3String)

CGAIN_EXPORT fmi3Status fmi3DoStep(fmi3Instance c, fmi3Float64 t, fmi3Float64 h,
                                   fmi3Boolean no_set_prior, fmi3Boolean *event_needed,
                                   fmi3Boolean *terminate, fmi3Boolean *early_return,
                                   fmi3Float64 *last_successful_time) {
    (void)no_set_prior;
    CGain *m = c;
    m->time = t + h;
    *event_needed = false;
    *terminate = false;
    *early_return = false;
    *last_successful_time = m->time;
    return fmi3OK;
}
