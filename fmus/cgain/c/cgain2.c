/* CGain, FMI 2.0 co-simulation: y = k * u, direct feed-through, nothing to
 * integrate. As cheap per call as an FMU can be: no logging, no state
 * machine beyond what the calls need, no allocation after fmi2Instantiate.
 * Value references: 0 time, 1 u (input), 2 y (output), 3 k (parameter). */
#include <stdlib.h>
#include <string.h>

#include "fmi_min.h"

#define CGAIN_GUID "cosim:CGain:fmi2:1"

typedef struct {
    double time;
    double u;
    double k;
} CGain;

static fmi2Status get_one(const CGain *m, fmi2ValueReference vr, fmi2Real *v) {
    switch (vr) {
    case 0: *v = m->time; return fmi2OK;
    case 1: *v = m->u; return fmi2OK;
    case 2: *v = m->k * m->u; return fmi2OK;
    case 3: *v = m->k; return fmi2OK;
    default: return fmi2Error;
    }
}

CGAIN_EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
CGAIN_EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

CGAIN_EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n,
                                            const fmi2String categories[]) {
    (void)c; (void)on; (void)n; (void)categories;
    return fmi2OK;
}

CGAIN_EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid,
                                           fmi2String resources,
                                           const fmi2CallbackFunctions *functions,
                                           fmi2Boolean visible, fmi2Boolean logging) {
    (void)name; (void)resources; (void)functions; (void)visible; (void)logging;
    if (type != fmi2CoSimulation || guid == NULL || strcmp(guid, CGAIN_GUID) != 0) {
        return NULL;
    }
    CGain *m = calloc(1, sizeof(CGain));
    if (m != NULL) {
        m->k = 1.0;
    }
    return m;
}

CGAIN_EXPORT void fmi2FreeInstance(fmi2Component c) { free(c); }

CGAIN_EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tol_defined,
                                            fmi2Real tol, fmi2Real start,
                                            fmi2Boolean stop_defined, fmi2Real stop) {
    (void)tol_defined; (void)tol; (void)stop_defined; (void)stop;
    ((CGain *)c)->time = start;
    return fmi2OK;
}

CGAIN_EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
CGAIN_EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
CGAIN_EXPORT fmi2Status fmi2Terminate(fmi2Component c) { (void)c; return fmi2OK; }

CGAIN_EXPORT fmi2Status fmi2Reset(fmi2Component c) {
    CGain *m = c;
    m->time = 0.0;
    m->u = 0.0;
    m->k = 1.0;
    return fmi2OK;
}

CGAIN_EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                    fmi2Real value[]) {
    const CGain *m = c;
    for (size_t i = 0; i < n; i++) {
        if (get_one(m, vr[i], &value[i]) != fmi2OK) {
            return fmi2Error;
        }
    }
    return fmi2OK;
}

CGAIN_EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                    const fmi2Real value[]) {
    CGain *m = c;
    for (size_t i = 0; i < n; i++) {
        switch (vr[i]) {
        case 1: m->u = value[i]; break;
        case 3: m->k = value[i]; break;
        default: return fmi2Error;
        }
    }
    return fmi2OK;
}

CGAIN_EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                       fmi2Integer value[]) {
    (void)c; (void)vr; (void)value;
    return n == 0 ? fmi2OK : fmi2Error;
}

CGAIN_EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                       const fmi2Integer value[]) {
    (void)c; (void)vr; (void)value;
    return n == 0 ? fmi2OK : fmi2Error;
}

CGAIN_EXPORT fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                       fmi2Boolean value[]) {
    (void)c; (void)vr; (void)value;
    return n == 0 ? fmi2OK : fmi2Error;
}

CGAIN_EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                       const fmi2Boolean value[]) {
    (void)c; (void)vr; (void)value;
    return n == 0 ? fmi2OK : fmi2Error;
}

CGAIN_EXPORT fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                      fmi2String value[]) {
    (void)c; (void)vr; (void)value;
    return n == 0 ? fmi2OK : fmi2Error;
}

CGAIN_EXPORT fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                      const fmi2String value[]) {
    (void)c; (void)vr; (void)value;
    return n == 0 ? fmi2OK : fmi2Error;
}

CGAIN_EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h,
                                   fmi2Boolean no_set_prior) {
    (void)no_set_prior;
    ((CGain *)c)->time = t + h;
    return fmi2OK;
}

CGAIN_EXPORT fmi2Status fmi2CancelStep(fmi2Component c) { (void)c; return fmi2Error; }

CGAIN_EXPORT fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *v) {
    (void)c; (void)s; (void)v;
    return fmi2Discard;
}

CGAIN_EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *v) {
    if (s != fmi2LastSuccessfulTime) {
        return fmi2Discard;
    }
    *v = ((CGain *)c)->time;
    return fmi2OK;
}

CGAIN_EXPORT fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s,
                                             fmi2Integer *v) {
    (void)c; (void)s; (void)v;
    return fmi2Discard;
}

CGAIN_EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s,
                                             fmi2Boolean *v) {
    (void)c;
    if (s != fmi2Terminated) {
        return fmi2Discard;
    }
    *v = 0;
    return fmi2OK;
}

CGAIN_EXPORT fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s,
                                            fmi2String *v) {
    (void)c; (void)s; (void)v;
    return fmi2Discard;
}

/* The optional functions CGain's modelDescription.xml does not claim (no
 * FMU state, no derivatives): present, since some importers (FMI Library,
 * libcosim) resolve every function of the interface, and refusing. */
CGAIN_EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *s) {
    (void)c; (void)s;
    return fmi2Error;
}

CGAIN_EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate s) {
    (void)c; (void)s;
    return fmi2Error;
}

CGAIN_EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *s) {
    (void)c; (void)s;
    return fmi2Error;
}

CGAIN_EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate s, size_t *n) {
    (void)c; (void)s; (void)n;
    return fmi2Error;
}

CGAIN_EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate s, fmi2Byte b[],
                                              size_t n) {
    (void)c; (void)s; (void)b; (void)n;
    return fmi2Error;
}

CGAIN_EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte b[], size_t n,
                                                fmi2FMUstate *s) {
    (void)c; (void)b; (void)n; (void)s;
    return fmi2Error;
}

CGAIN_EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c,
                                                     const fmi2ValueReference u[], size_t nu,
                                                     const fmi2ValueReference z[], size_t nz,
                                                     const fmi2Real dv[], fmi2Real dz[]) {
    (void)c; (void)u; (void)nu; (void)z; (void)nz; (void)dv; (void)dz;
    return fmi2Error;
}

CGAIN_EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c,
                                                    const fmi2ValueReference vr[], size_t n,
                                                    const fmi2Integer order[],
                                                    const fmi2Real value[]) {
    (void)c; (void)vr; (void)n; (void)order; (void)value;
    return fmi2Error;
}

CGAIN_EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c,
                                                     const fmi2ValueReference vr[], size_t n,
                                                     const fmi2Integer order[], fmi2Real value[]) {
    (void)c; (void)vr; (void)n; (void)order; (void)value;
    return fmi2Error;
}
