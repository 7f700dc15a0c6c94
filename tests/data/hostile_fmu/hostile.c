/* A minimal FMI 2.0 co-simulation FMU written by hand, for tests of status
 * codes the project's kit FMUs never return: y = time, and doStep
 * returns the integer parameter `status` (vr 1) once, in the step that
 * reaches `at` (vr 2), after logging a line. With `call` (vr 4) 1 it is
 * fmi2SetReal of the input u (vr 3) at the start of the first step from
 * `at` on that returns it, with 2 fmi2GetReal of y after the step that
 * reaches `at`. Built and packaged by tests/tests/faults.rs with the
 * system C compiler. */
#include <stdlib.h>
#include <string.h>

typedef void *fmi2Component;
typedef void *fmi2ComponentEnvironment;
typedef int fmi2Status;
typedef int fmi2Boolean;
typedef unsigned int fmi2ValueReference;
typedef const char *fmi2String;

typedef struct {
    void (*logger)(fmi2ComponentEnvironment, fmi2String, fmi2Status, fmi2String, fmi2String, ...);
    void *(*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void *);
    void (*stepFinished)(fmi2ComponentEnvironment, fmi2Status);
    fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;

typedef struct {
    fmi2CallbackFunctions cb;
    char name[64];
    double time;
    double at;
    double u;
    int status;
    int call;
    int fired;
    int stepped;
} Hostile;

#define EXPORT __attribute__((visibility("default")))
enum { OK = 0, ERROR = 3 };
enum { IN_DO_STEP = 0, IN_SET_REAL = 1, IN_GET_REAL = 2 };

/* Returns `status` once, from the call that `call` names, logging why. */
static fmi2Status fire(Hostile *h, const char *function) {
    h->fired = 1;
    h->cb.logger(h->cb.componentEnvironment, h->name, h->status, "logStatusWarning",
                 "Hostile: returning status %d from %s at %g", h->status, function, h->time);
    return h->status;
}

EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

EXPORT fmi2Component fmi2Instantiate(fmi2String name, int type, fmi2String guid, fmi2String resources,
                                     const fmi2CallbackFunctions *cb, fmi2Boolean visible,
                                     fmi2Boolean logging) {
    (void)resources; (void)visible; (void)logging;
    if (type != 1 || !cb || !cb->logger || !guid || strcmp(guid, "{cosim-test-hostile-1}") != 0)
        return NULL;
    Hostile *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->cb = *cb;
    strncpy(h->name, name ? name : "", sizeof h->name - 1);
    h->at = 0.5;
    h->status = 1;
    return h;
}

EXPORT void fmi2FreeInstance(fmi2Component c) { free(c); }

EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String *cats) {
    (void)c; (void)on; (void)n; (void)cats;
    return OK;
}

EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tol_defined, double tol, double start,
                                      fmi2Boolean stop_defined, double stop) {
    (void)tol_defined; (void)tol; (void)stop_defined; (void)stop;
    ((Hostile *)c)->time = start;
    return OK;
}

EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c) { (void)c; return OK; }
EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) { (void)c; return OK; }
EXPORT fmi2Status fmi2Terminate(fmi2Component c) { (void)c; return OK; }
EXPORT fmi2Status fmi2Reset(fmi2Component c) { (void)c; return OK; }

EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference *vr, size_t n, double *v) {
    Hostile *h = c;
    for (size_t i = 0; i < n; i++) {
        if (vr[i] == 0) v[i] = h->time;
        else if (vr[i] == 2) v[i] = h->at;
        else if (vr[i] == 3) v[i] = h->u;
        else return ERROR;
    }
    if (h->call == IN_GET_REAL && h->stepped && !h->fired && h->time >= h->at - 1e-12)
        return fire(h, "fmi2GetReal");
    return OK;
}

EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference *vr, size_t n, const double *v) {
    Hostile *h = c;
    for (size_t i = 0; i < n; i++) {
        if (vr[i] == 2) h->at = v[i];
        else if (vr[i] == 3) h->u = v[i];
        else return ERROR;
    }
    if (h->call == IN_SET_REAL && h->stepped && !h->fired && h->time >= h->at - 1e-12)
        return fire(h, "fmi2SetReal");
    return OK;
}

EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference *vr, size_t n, int *v) {
    Hostile *h = c;
    for (size_t i = 0; i < n; i++) {
        if (vr[i] == 1) v[i] = h->status;
        else if (vr[i] == 4) v[i] = h->call;
        else return ERROR;
    }
    return OK;
}

EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference *vr, size_t n, const int *v) {
    Hostile *h = c;
    for (size_t i = 0; i < n; i++) {
        if (vr[i] == 1) h->status = v[i];
        else if (vr[i] == 4) h->call = v[i];
        else return ERROR;
    }
    return OK;
}

EXPORT fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference *vr, size_t n, fmi2Boolean *v) {
    (void)c; (void)vr; (void)v;
    return n == 0 ? OK : ERROR;
}

EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference *vr, size_t n, const fmi2Boolean *v) {
    (void)c; (void)vr; (void)v;
    return n == 0 ? OK : ERROR;
}

EXPORT fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference *vr, size_t n, fmi2String *v) {
    (void)c; (void)vr; (void)v;
    return n == 0 ? OK : ERROR;
}

EXPORT fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference *vr, size_t n, const fmi2String *v) {
    (void)c; (void)vr; (void)v;
    return n == 0 ? OK : ERROR;
}

EXPORT fmi2Status fmi2DoStep(fmi2Component c, double t, double dt, fmi2Boolean no_set_prior) {
    (void)no_set_prior;
    Hostile *h = c;
    h->time = t + dt;
    h->stepped = 1;
    if (h->call == IN_DO_STEP && !h->fired && t + dt >= h->at - 1e-12) {
        h->fired = 1;
        h->cb.logger(h->cb.componentEnvironment, h->name, h->status, "logStatusWarning",
                     "Hostile: returning status %d in the step from %g to %g", h->status, t, t + dt);
        return h->status;
    }
    return OK;
}
