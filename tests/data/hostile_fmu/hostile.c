/* A minimal FMI 2.0 co-simulation FMU written by hand, for tests of status
 * codes the project's kit FMUs never return: y = time, and doStep
 * returns the integer parameter `status` (vr 1) once, in the step that
 * reaches `at` (vr 2), after logging a line. With `call` (vr 4) 1 it is
 * fmi2SetReal of the input u (vr 3) at the start of the first step from
 * `at` on that returns it, with 2 fmi2GetReal of y after the step that
 * reaches `at`.
 *
 * `misbehave` (vr 5) adds one misbehaviour the kit never shows:
 *   1  logger bombs: in the step that reaches `at`, log messages whose
 *      formats cost gigabytes to expand in full (%900000000d,
 *      %.900000000f, the same through `*` arguments) and a 1 MB message;
 *      doStep still returns OK (or `status` as usual)
 *   2  control bytes: the line logged before returning `status` (and its
 *      category) hold ESC sequences, BEL, CR and a C1 CSI
 *   3  a thread started when Initialization Mode is left that keeps
 *      calling into this library (sleeping between calls) after
 *      fmi2FreeInstance, until the process ends
 * With the environment variable COSIM_TEST_HOSTILE_CONSTRUCTOR_CRASH=1 the
 * library's constructor makes an invalid memory access when it is loaded.
 *
 * Built and packaged by tests/src/lib.rs (`hostile_fmu`) with the system C
 * compiler. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    int misbehave;
} Hostile;

#define EXPORT __attribute__((visibility("default")))
enum { OK = 0, ERROR = 3 };
enum { IN_DO_STEP = 0, IN_SET_REAL = 1, IN_GET_REAL = 2 };
enum { LOG_BOMBS = 1, CONTROL_BYTES = 2, LINGERING_THREAD = 3 };

static int *volatile nowhere = NULL;

/* A crash while the library is loaded, before any FMI call. */
__attribute__((constructor)) static void crash_in_constructor_if_asked(void) {
    const char *e = getenv("COSIM_TEST_HOSTILE_CONSTRUCTOR_CRASH");
    if (e && strcmp(e, "1") == 0) *nowhere = 1;
}

/* Code of this library that the lingering thread keeps running. */
static volatile unsigned long lingering_calls;
__attribute__((noinline)) static void linger_once(void) { lingering_calls++; }

static void *linger(void *arg) {
    (void)arg;
    for (;;) {
        usleep(200);
        linger_once();
    }
    return NULL;
}

static void start_lingering_thread(void) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, linger, NULL) == 0) pthread_detach(thread);
}

/* Messages whose formats alone would cost seconds and gigabytes to expand
 * in full, and one long message. */
static void log_bombs(Hostile *h) {
    fmi2ComponentEnvironment env = h->cb.componentEnvironment;
    h->cb.logger(env, h->name, 1, "logBomb", "width: %900000000d", 42);
    h->cb.logger(env, h->name, 1, "logBomb", "precision: %.900000000f", 3.25);
    h->cb.logger(env, h->name, 1, "logBomb", "star width: %*d", 900000000, 7);
    h->cb.logger(env, h->name, 1, "logBomb", "star precision: %.*e", 900000000, 2.5);
    size_t n = 1 << 20;
    char *long_text = malloc(n + 1);
    if (long_text) {
        memset(long_text, 'x', n);
        long_text[n] = 0;
        h->cb.logger(env, h->name, 1, "logBomb", "long: %s END", long_text);
        free(long_text);
    }
    h->cb.logger(env, h->name, 1, "logBomb", "after the bombs: %d %s %.3f", 5, "ok", 1.5);
}

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

/* The lingering thread (misbehave 3) is not stopped here. */
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
EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
    if (((Hostile *)c)->misbehave == LINGERING_THREAD) start_lingering_thread();
    return OK;
}
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
        else if (vr[i] == 5) v[i] = h->misbehave;
        else return ERROR;
    }
    return OK;
}

EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference *vr, size_t n, const int *v) {
    Hostile *h = c;
    for (size_t i = 0; i < n; i++) {
        if (vr[i] == 1) h->status = v[i];
        else if (vr[i] == 4) h->call = v[i];
        else if (vr[i] == 5) h->misbehave = v[i];
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
    int reached = t + dt >= h->at - 1e-12;
    if (h->misbehave == LOG_BOMBS && reached && !h->fired) log_bombs(h);
    if (h->call == IN_DO_STEP && !h->fired && reached) {
        h->fired = 1;
        if (h->misbehave == CONTROL_BYTES)
            h->cb.logger(h->cb.componentEnvironment, h->name, h->status, "log\x1b[1mCategory",
                         "Hostile: \x1b[2J\x1b[31mred\x1b[0m \x1b]0;title\x07 bell\r back \xc2\x9b csi;"
                         " returning status %d in the step from %g to %g", h->status, t, t + dt);
        else
            h->cb.logger(h->cb.componentEnvironment, h->name, h->status, "logStatusWarning",
                         "Hostile: returning status %d in the step from %g to %g", h->status, t, t + dt);
        return h->status;
    }
    return OK;
}

/* ---- The rest of the FMI 2.0 co-simulation API (a conforming binary
 * exports it all; importers such as FMPy resolve every function): this
 * FMU supports none of it, and refuses every call, saying so. */

typedef void *fmi2FMUstate;
typedef char fmi2Byte;
typedef int fmi2StatusKind;

static fmi2Status unsupported(fmi2Component c, const char *function) {
    Hostile *h = c;
    if (h)
        h->cb.logger(h->cb.componentEnvironment, h->name, ERROR, "logStatusError",
                     "Hostile: %s is not supported", function);
    return ERROR;
}

EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *s) {
    (void)s;
    return unsupported(c, "fmi2GetFMUstate");
}
EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate s) {
    (void)s;
    return unsupported(c, "fmi2SetFMUstate");
}
EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *s) {
    (void)s;
    return unsupported(c, "fmi2FreeFMUstate");
}
EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate s, size_t *n) {
    (void)s; (void)n;
    return unsupported(c, "fmi2SerializedFMUstateSize");
}
EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate s, fmi2Byte *b, size_t n) {
    (void)s; (void)b; (void)n;
    return unsupported(c, "fmi2SerializeFMUstate");
}
EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte *b, size_t n, fmi2FMUstate *s) {
    (void)b; (void)n; (void)s;
    return unsupported(c, "fmi2DeSerializeFMUstate");
}
EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference *u, size_t nu,
                                               const fmi2ValueReference *z, size_t nz, const double *dz,
                                               double *du) {
    (void)u; (void)nu; (void)z; (void)nz; (void)dz; (void)du;
    return unsupported(c, "fmi2GetDirectionalDerivative");
}
EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference *vr, size_t n,
                                              const int *order, const double *v) {
    (void)vr; (void)n; (void)order; (void)v;
    return unsupported(c, "fmi2SetRealInputDerivatives");
}
EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference *vr, size_t n,
                                               const int *order, double *v) {
    (void)vr; (void)n; (void)order; (void)v;
    return unsupported(c, "fmi2GetRealOutputDerivatives");
}
EXPORT fmi2Status fmi2CancelStep(fmi2Component c) { return unsupported(c, "fmi2CancelStep"); }
EXPORT fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind k, fmi2Status *v) {
    (void)k; (void)v;
    return unsupported(c, "fmi2GetStatus");
}
EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind k, double *v) {
    (void)k; (void)v;
    return unsupported(c, "fmi2GetRealStatus");
}
EXPORT fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind k, int *v) {
    (void)k; (void)v;
    return unsupported(c, "fmi2GetIntegerStatus");
}
EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind k, fmi2Boolean *v) {
    (void)k; (void)v;
    return unsupported(c, "fmi2GetBooleanStatus");
}
EXPORT fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind k, fmi2String *v) {
    (void)k; (void)v;
    return unsupported(c, "fmi2GetStringStatus");
}
