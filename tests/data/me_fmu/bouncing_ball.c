/* A bouncing ball written by hand, for the tests of the binding's Model
 * Exchange calls (tests/tests/model_exchange.rs) before the kit exports
 * Model Exchange: h' = v, v' = -g, one event indicator z = h; at an event
 * with h <= 0 and v < 0 the ball bounces: h = 0, v = -e v, bounces += 1.
 *
 * One source for both standards and both interfaces, chosen when it is
 * compiled:
 *   -DFMI_VERSION=2 or 3   the FMI 2.0 or FMI 3.0 API
 *   -DMODEL_EXCHANGE       export the Model Exchange functions
 *   -DCO_SIMULATION        export the Co-Simulation ones (doStep: explicit
 *                          Euler in substeps of at most 1 ms, bouncing
 *                          where a substep ends below the floor)
 * A test leaves a function out with -D<name>=<another name> (the symbol is
 * then not exported).
 *
 * Value references (FMI 2: the same numbers for the one Integer): h 0,
 * der(h) 1, v 2, der(v) 3, g 4, e 5, bounces 6 (Integer / Int32), time 7,
 * FMI 3 z 8 (the event indicator's variable). v has nominal 10.
 *
 * It checks the state machine as the Reference FMUs do: a call in a state
 * that does not allow it returns Error after logging why, so that the tests
 * see any call the binding lets through out of order. It saves and
 * restores its state (fmi*GetFMUState: a copy of the model, its mode
 * included) and gives directional derivatives. Built and packaged by
 * tests/src/lib.rs (`bouncing_ball_fmu`) with the system C compiler. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FMI_VERSION
#error "compile with -DFMI_VERSION=2 or -DFMI_VERSION=3"
#endif

#define EXPORT __attribute__((visibility("default")))

enum { VR_H = 0, VR_DER_H = 1, VR_V = 2, VR_DER_V = 3, VR_G = 4, VR_E = 5, VR_BOUNCES = 6, VR_TIME = 7, VR_Z = 8 };

/* The state machine, one bit per state so that a call names the states it
 * is allowed in as a mask. */
enum {
    INSTANTIATED = 1 << 0,
    INITIALIZATION = 1 << 1,
    EVENT = 1 << 2,
    CONTINUOUS = 1 << 3,
    STEP = 1 << 4,
    TERMINATED = 1 << 5,
};
#define ANY_STATE (INSTANTIATED | INITIALIZATION | EVENT | CONTINUOUS | STEP | TERMINATED)

/* What the importer's environment and logger are. */
typedef void (*Logger)(void *env, int status, const char *category, const char *message);

/* The model, and what a saved FMU state is a copy of. */
typedef struct {
    int state;
    bool model_exchange;
    double time, h, v, g, e;
    int bounces;
} Model;

typedef struct {
    Model m;
    char name[128];
    void *env;
#if FMI_VERSION == 2
    void (*logger)(void *, const char *, int, const char *, const char *, ...);
#else
    void (*logger)(void *, int, const char *, const char *);
#endif
} Ball;

enum { OK = 0, ERROR = 3 };

static int fail(Ball *b, const char *format, ...) {
    char message[512];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    if (b && b->logger) {
#if FMI_VERSION == 2
        b->logger(b->env, b->name, ERROR, "logStatusError", "%s", message);
#else
        b->logger(b->env, ERROR, "logStatusError", message);
#endif
    }
    return ERROR;
}

static const char *state_name(int state) {
    switch (state) {
    case INSTANTIATED: return "Instantiated";
    case INITIALIZATION: return "Initialization Mode";
    case EVENT: return "Event Mode";
    case CONTINUOUS: return "Continuous-Time Mode";
    case STEP: return "Step Mode";
    case TERMINATED: return "Terminated";
    default: return "?";
    }
}

/* Returns Error from the calling function when it is not allowed now. */
#define ALLOWED(b, function, mask)                                                                 \
    do {                                                                                           \
        if (!(b)) return ERROR;                                                                    \
        if (!((b)->m.state & (mask)))                                                              \
            return fail((b), "%s called in state %s", (function), state_name((b)->m.state));       \
    } while (0)

static Ball *new_ball(const char *name, bool model_exchange) {
    Ball *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    snprintf(b->name, sizeof b->name, "%s", name ? name : "");
    b->m.state = INSTANTIATED;
    b->m.model_exchange = model_exchange;
    b->m.h = 1;
    b->m.v = 0;
    b->m.g = 9.81;
    b->m.e = 0.7;
    return b;
}

static void reset(Ball *b) {
    bool me = b->m.model_exchange;
    memset(&b->m, 0, sizeof b->m);
    b->m.state = INSTANTIATED;
    b->m.model_exchange = me;
    b->m.h = 1;
    b->m.g = 9.81;
    b->m.e = 0.7;
}

/* The ball bounces where it reached the floor moving down. */
static bool bounce(Model *m) {
    if (m->h <= 0 && m->v < 0) {
        m->h = 0;
        m->v = -m->e * m->v;
        m->bounces++;
        return true;
    }
    return false;
}

/* d(unknown)/d(known): der(h) = v, der(v) = -g, z = h. */
static double partial(unsigned unknown, unsigned known) {
    if (unknown == known && (known == VR_H || known == VR_V)) return 1;
    if (unknown == VR_DER_H && known == VR_V) return 1;
    if (unknown == VR_Z && known == VR_H) return 1;
    return 0;
}

static int get_real(Ball *b, unsigned vr, double *value) {
    switch (vr) {
    case VR_H: *value = b->m.h; return OK;
    case VR_DER_H: *value = b->m.v; return OK;
    case VR_V: *value = b->m.v; return OK;
    case VR_DER_V: *value = -b->m.g; return OK;
    case VR_G: *value = b->m.g; return OK;
    case VR_E: *value = b->m.e; return OK;
    case VR_TIME: *value = b->m.time; return OK;
#if FMI_VERSION == 3
    case VR_Z: *value = b->m.h; return OK;
#endif
    default: return fail(b, "no Real variable has value reference %u", vr);
    }
}

static int set_real(Ball *b, unsigned vr, double value) {
    switch (vr) {
    case VR_H: b->m.h = value; return OK;
    case VR_V: b->m.v = value; return OK;
    case VR_G:
        if (b->m.state != INSTANTIATED) return fail(b, "g is fixed: set it in Instantiated");
        b->m.g = value;
        return OK;
    case VR_E: b->m.e = value; return OK;
    default: return fail(b, "Real variable %u cannot be set", vr);
    }
}


#ifdef CO_SIMULATION
/* Co-Simulation: explicit Euler from the current time by `step`, bouncing
 * where a substep ends below the floor. */
static void advance(Model *m, double step) {
    const double max_substep = 1e-3;
    double done = 0;
    while (done < step) {
        double dt = step - done < max_substep ? step - done : max_substep;
        double v = m->v;
        m->h += dt * v;
        m->v -= dt * m->g;
        bounce(m);
        done += dt;
    }
    m->time += step;
}
#endif

/* The calls, once for both versions: each checks the state `function` is
 * called in. The exports of each version below only adapt the arguments. */

static int enter_initialization(Ball *b, const char *function, double start) {
    ALLOWED(b, function, INSTANTIATED);
    b->m.time = start;
    b->m.state = INITIALIZATION;
    return OK;
}

static int exit_initialization(Ball *b, const char *function) {
    ALLOWED(b, function, INITIALIZATION);
    b->m.state = b->m.model_exchange ? EVENT : STEP;
    return OK;
}

static int terminate(Ball *b, const char *function) {
    ALLOWED(b, function, EVENT | CONTINUOUS | STEP);
    b->m.state = TERMINATED;
    return OK;
}

static int reset_ball(Ball *b, const char *function) {
    ALLOWED(b, function, ANY_STATE);
    reset(b);
    return OK;
}

static int get_reals(Ball *b, const char *function, const unsigned vr[], size_t n, double value[]) {
    ALLOWED(b, function, INITIALIZATION | EVENT | CONTINUOUS | STEP | TERMINATED);
    for (size_t k = 0; k < n; k++)
        if (get_real(b, vr[k], &value[k]) != OK) return ERROR;
    return OK;
}

static int set_reals(Ball *b, const char *function, const unsigned vr[], size_t n, const double value[]) {
    ALLOWED(b, function, INSTANTIATED | INITIALIZATION | EVENT | STEP);
    for (size_t k = 0; k < n; k++)
        if (set_real(b, vr[k], value[k]) != OK) return ERROR;
    return OK;
}

static int get_bounces(Ball *b, const char *function, const unsigned vr[], size_t n, int32_t value[]) {
    ALLOWED(b, function, INITIALIZATION | EVENT | CONTINUOUS | STEP | TERMINATED);
    for (size_t k = 0; k < n; k++) {
        if (vr[k] != VR_BOUNCES) return fail(b, "%s: no integer variable has value reference %u", function, vr[k]);
        value[k] = b->m.bounces;
    }
    return OK;
}

static int get_state(Ball *b, const char *function, void **state) {
    ALLOWED(b, function, ANY_STATE);
    if (!*state) *state = malloc(sizeof(Model));
    if (!*state) return fail(b, "out of memory");
    memcpy(*state, &b->m, sizeof(Model));
    return OK;
}

static int set_state(Ball *b, const char *function, const void *state) {
    ALLOWED(b, function, ANY_STATE);
    if (!state) return fail(b, "%s: no state", function);
    memcpy(&b->m, state, sizeof(Model));
    return OK;
}

static int free_state(void **state) {
    free(*state);
    *state = NULL;
    return OK;
}

static int directional(Ball *b, const char *function, const unsigned unknowns[], size_t nu, const unsigned knowns[],
                       size_t nk, const double seed[], double sensitivity[]) {
    ALLOWED(b, function, INITIALIZATION | EVENT | CONTINUOUS | STEP | TERMINATED);
    for (size_t r = 0; r < nu; r++) {
        sensitivity[r] = 0;
        for (size_t j = 0; j < nk; j++) sensitivity[r] += partial(unknowns[r], knowns[j]) * seed[j];
    }
    return OK;
}

#ifdef MODEL_EXCHANGE

static int to_mode(Ball *b, const char *function, int from, int to) {
    ALLOWED(b, function, from);
    b->m.state = to;
    return OK;
}

/* One step of the event iteration: whether the states changed. */
static int update_discrete_states(Ball *b, const char *function, bool *values_changed) {
    ALLOWED(b, function, EVENT);
    *values_changed = bounce(&b->m);
    return OK;
}

static int completed_integrator_step(Ball *b, const char *function) {
    ALLOWED(b, function, CONTINUOUS);
    return OK;
}

static int set_time(Ball *b, const char *function, double time) {
    ALLOWED(b, function, EVENT | CONTINUOUS);
    b->m.time = time;
    return OK;
}

static int set_states(Ball *b, const char *function, const double x[], size_t n) {
    ALLOWED(b, function, CONTINUOUS);
    if (n != 2) return fail(b, "%s: %zu states given, the model has 2", function, n);
    b->m.h = x[0];
    b->m.v = x[1];
    return OK;
}

enum { DERIVATIVES, INDICATORS, STATES, NOMINALS };

/* Reads `what` into `out` (`n` values), in the states of `mask`. */
static int get_array(Ball *b, const char *function, int mask, int what, double out[], size_t n) {
    ALLOWED(b, function, mask);
    size_t expected = what == INDICATORS ? 1 : 2;
    if (n != expected) return fail(b, "%s: %zu values asked, the model has %zu", function, n, expected);
    switch (what) {
    case DERIVATIVES: out[0] = b->m.v; out[1] = -b->m.g; break;
    case INDICATORS: out[0] = b->m.h; break;
    case STATES: out[0] = b->m.h; out[1] = b->m.v; break;
    default: out[0] = 1; out[1] = 10; break;
    }
    return OK;
}

#define READING (INITIALIZATION | EVENT | CONTINUOUS | TERMINATED)

#endif /* MODEL_EXCHANGE */

/* ------------------------------------------------------------------------ */
#if FMI_VERSION == 2

typedef void *fmi2Component;
typedef int fmi2Status;
typedef int fmi2Boolean;
typedef unsigned int fmi2ValueReference;
typedef const char *fmi2String;
typedef void *fmi2FMUstate;

typedef struct {
    void (*logger)(void *, fmi2String, fmi2Status, fmi2String, fmi2String, ...);
    void *(*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void *);
    void (*stepFinished)(void *, fmi2Status);
    void *componentEnvironment;
} fmi2CallbackFunctions;

typedef struct {
    fmi2Boolean newDiscreteStatesNeeded;
    fmi2Boolean terminateSimulation;
    fmi2Boolean nominalsOfContinuousStatesChanged;
    fmi2Boolean valuesOfContinuousStatesChanged;
    fmi2Boolean nextEventTimeDefined;
    double nextEventTime;
} fmi2EventInfo;

static const char *GUID = "{cosim-test-bouncing-ball-2}";

EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cat[]) {
    (void)on; (void)n; (void)cat;
    ALLOWED((Ball *)c, "fmi2SetDebugLogging", ANY_STATE);
    return OK;
}

EXPORT fmi2Component fmi2Instantiate(fmi2String name, int type, fmi2String guid, fmi2String resources,
                                     const fmi2CallbackFunctions *cb, fmi2Boolean visible, fmi2Boolean logging) {
    (void)resources; (void)visible; (void)logging;
    if (!guid || strcmp(guid, GUID) != 0 || !cb) return NULL;
#ifndef MODEL_EXCHANGE
    if (type == 0) return NULL;
#endif
#ifndef CO_SIMULATION
    if (type == 1) return NULL;
#endif
    Ball *b = new_ball(name, type == 0);
    if (!b) return NULL;
    b->env = cb->componentEnvironment;
    b->logger = cb->logger;
    return b;
}

EXPORT void fmi2FreeInstance(fmi2Component c) { free(c); }

EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tolDefined, double tol, double start,
                                      fmi2Boolean stopDefined, double stop) {
    (void)tolDefined; (void)tol; (void)stopDefined; (void)stop;
    Ball *b = c;
    ALLOWED(b, "fmi2SetupExperiment", INSTANTIATED);
    b->m.time = start;
    return OK;
}

EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
    Ball *b = c;
    return enter_initialization(b, "fmi2EnterInitializationMode", b ? b->m.time : 0);
}

EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
    return exit_initialization(c, "fmi2ExitInitializationMode");
}

EXPORT fmi2Status fmi2Terminate(fmi2Component c) { return terminate(c, "fmi2Terminate"); }
EXPORT fmi2Status fmi2Reset(fmi2Component c) { return reset_ball(c, "fmi2Reset"); }

EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, double value[]) {
    return get_reals(c, "fmi2GetReal", vr, n, value);
}

EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const double value[]) {
    return set_reals(c, "fmi2SetReal", vr, n, value);
}

EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, int value[]) {
    return get_bounces(c, "fmi2GetInteger", vr, n, value);
}

/* The model has no other variables. */
#define NO_VARIABLES(function, type)                                                               \
    EXPORT fmi2Status function(fmi2Component c, const fmi2ValueReference vr[], size_t n, type v) {  \
        (void)vr; (void)v;                                                                         \
        return n == 0 ? OK : fail(c, #function ": no such variable");                              \
    }
NO_VARIABLES(fmi2SetInteger, const int *)
NO_VARIABLES(fmi2GetBoolean, fmi2Boolean *)
NO_VARIABLES(fmi2SetBoolean, const fmi2Boolean *)
NO_VARIABLES(fmi2GetString, fmi2String *)
NO_VARIABLES(fmi2SetString, const fmi2String *)

EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *state) {
    return get_state(c, "fmi2GetFMUstate", state);
}

EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state) {
    return set_state(c, "fmi2SetFMUstate", state);
}

EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *state) {
    (void)c;
    return free_state(state);
}

EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference unknowns[], size_t nu,
                                               const fmi2ValueReference knowns[], size_t nk, const double seed[],
                                               double sensitivity[]) {
    return directional(c, "fmi2GetDirectionalDerivative", unknowns, nu, knowns, nk, seed, sensitivity);
}

#ifdef MODEL_EXCHANGE

EXPORT fmi2Status fmi2EnterEventMode(fmi2Component c) {
    return to_mode(c, "fmi2EnterEventMode", CONTINUOUS, EVENT);
}

EXPORT fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *info) {
    bool changed = false;
    int status = update_discrete_states(c, "fmi2NewDiscreteStates", &changed);
    memset(info, 0, sizeof *info);
    info->valuesOfContinuousStatesChanged = changed;
    return status;
}

EXPORT fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) {
    return to_mode(c, "fmi2EnterContinuousTimeMode", EVENT, CONTINUOUS);
}

EXPORT fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean noSetPrior, fmi2Boolean *enterEventMode,
                                              fmi2Boolean *terminate) {
    (void)noSetPrior;
    *enterEventMode = 0;
    *terminate = 0;
    return completed_integrator_step(c, "fmi2CompletedIntegratorStep");
}

EXPORT fmi2Status fmi2SetTime(fmi2Component c, double time) { return set_time(c, "fmi2SetTime", time); }

EXPORT fmi2Status fmi2SetContinuousStates(fmi2Component c, const double x[], size_t nx) {
    return set_states(c, "fmi2SetContinuousStates", x, nx);
}

/* (FMI 2: derivatives not in Initialization Mode, nominals in Instantiated
 * instead.) */
EXPORT fmi2Status fmi2GetDerivatives(fmi2Component c, double dx[], size_t nx) {
    return get_array(c, "fmi2GetDerivatives", EVENT | CONTINUOUS | TERMINATED, DERIVATIVES, dx, nx);
}

EXPORT fmi2Status fmi2GetEventIndicators(fmi2Component c, double z[], size_t nz) {
    return get_array(c, "fmi2GetEventIndicators", READING, INDICATORS, z, nz);
}

EXPORT fmi2Status fmi2GetContinuousStates(fmi2Component c, double x[], size_t nx) {
    return get_array(c, "fmi2GetContinuousStates", READING, STATES, x, nx);
}

EXPORT fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, double x_nominal[], size_t nx) {
    return get_array(c, "fmi2GetNominalsOfContinuousStates", INSTANTIATED | EVENT | CONTINUOUS | TERMINATED,
                     NOMINALS, x_nominal, nx);
}

#endif /* MODEL_EXCHANGE */

#ifdef CO_SIMULATION

EXPORT fmi2Status fmi2DoStep(fmi2Component c, double t, double h, fmi2Boolean noSetPrior) {
    (void)t; (void)noSetPrior;
    Ball *b = c;
    ALLOWED(b, "fmi2DoStep", STEP);
    advance(&b->m, h);
    return OK;
}

#endif /* CO_SIMULATION */

/* ------------------------------------------------------------------------ */
#else /* FMI_VERSION == 3 */

typedef void *fmi3Instance;
typedef int fmi3Status;
typedef uint32_t fmi3ValueReference;
typedef const char *fmi3String;
typedef void *fmi3FMUState;
typedef void (*fmi3LogMessageCallback)(void *, fmi3Status, fmi3String, fmi3String);

static const char *TOKEN = "{cosim-test-bouncing-ball-3}";

EXPORT const char *fmi3GetVersion(void) { return "3.0"; }

EXPORT fmi3Status fmi3SetDebugLogging(fmi3Instance i, bool on, size_t n, const fmi3String cat[]) {
    (void)on; (void)n; (void)cat;
    ALLOWED((Ball *)i, "fmi3SetDebugLogging", ANY_STATE);
    return OK;
}

static Ball *instantiate(fmi3String name, fmi3String token, bool model_exchange, void *env,
                         fmi3LogMessageCallback log) {
    if (!token || strcmp(token, TOKEN) != 0) return NULL;
    Ball *b = new_ball(name, model_exchange);
    if (!b) return NULL;
    b->env = env;
    b->logger = log;
    return b;
}

EXPORT void fmi3FreeInstance(fmi3Instance i) { free(i); }

EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance i, bool tolDefined, double tol, double start,
                                              bool stopDefined, double stop) {
    (void)tolDefined; (void)tol; (void)stopDefined; (void)stop;
    return enter_initialization(i, "fmi3EnterInitializationMode", start);
}

EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance i) {
    return exit_initialization(i, "fmi3ExitInitializationMode");
}

EXPORT fmi3Status fmi3Terminate(fmi3Instance i) { return terminate(i, "fmi3Terminate"); }
EXPORT fmi3Status fmi3Reset(fmi3Instance i) { return reset_ball(i, "fmi3Reset"); }

/* FMI 3 getters and setters: one value per variable (no arrays). */
#define VALUES(function, call, type)                                                               \
    EXPORT fmi3Status function(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, type v,    \
                               size_t nv) {                                                        \
        if (nv != nvr) return fail(i, #function ": %zu values for %zu variables", nv, nvr);          \
        return call(i, #function, vr, nvr, v);                                                     \
    }
VALUES(fmi3GetFloat64, get_reals, double *)
VALUES(fmi3SetFloat64, set_reals, const double *)
VALUES(fmi3GetInt32, get_bounces, int32_t *)

/* The model has no other variables. */
#define NO_VARIABLES(function, type)                                                               \
    EXPORT fmi3Status function(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, type v,    \
                               size_t nv) {                                                        \
        (void)vr; (void)v; (void)nv;                                                               \
        return nvr == 0 ? OK : fail(i, #function ": no such variable");                            \
    }
NO_VARIABLES(fmi3SetInt32, const int32_t *)
NO_VARIABLES(fmi3GetInt64, int64_t *)
NO_VARIABLES(fmi3SetInt64, const int64_t *)
NO_VARIABLES(fmi3GetBoolean, bool *)
NO_VARIABLES(fmi3SetBoolean, const bool *)
NO_VARIABLES(fmi3GetString, fmi3String *)
NO_VARIABLES(fmi3SetString, const fmi3String *)

EXPORT fmi3Status fmi3GetFMUState(fmi3Instance i, fmi3FMUState *state) {
    return get_state(i, "fmi3GetFMUState", state);
}

EXPORT fmi3Status fmi3SetFMUState(fmi3Instance i, fmi3FMUState state) {
    return set_state(i, "fmi3SetFMUState", state);
}

EXPORT fmi3Status fmi3FreeFMUState(fmi3Instance i, fmi3FMUState *state) {
    (void)i;
    return free_state(state);
}

EXPORT fmi3Status fmi3GetDirectionalDerivative(fmi3Instance i, const fmi3ValueReference unknowns[], size_t nu,
                                               const fmi3ValueReference knowns[], size_t nk, const double seed[],
                                               size_t nseed, double sensitivity[], size_t nsens) {
    if (nseed != nk || nsens != nu) return fail(i, "fmi3GetDirectionalDerivative: sizes do not match");
    return directional(i, "fmi3GetDirectionalDerivative", unknowns, nu, knowns, nk, seed, sensitivity);
}

#ifdef MODEL_EXCHANGE

EXPORT fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token, fmi3String resources,
                                                 bool visible, bool logging, void *env,
                                                 fmi3LogMessageCallback log) {
    (void)resources; (void)visible; (void)logging;
    return instantiate(name, token, true, env, log);
}

EXPORT fmi3Status fmi3EnterEventMode(fmi3Instance i) {
    return to_mode(i, "fmi3EnterEventMode", CONTINUOUS, EVENT);
}

EXPORT fmi3Status fmi3UpdateDiscreteStates(fmi3Instance i, bool *needUpdate, bool *terminate,
                                           bool *nominalsChanged, bool *valuesChanged, bool *timeDefined,
                                           double *nextTime) {
    bool changed = false;
    int status = update_discrete_states(i, "fmi3UpdateDiscreteStates", &changed);
    *needUpdate = *terminate = *nominalsChanged = *timeDefined = false;
    *valuesChanged = changed;
    *nextTime = 0;
    return status;
}

EXPORT fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance i) {
    return to_mode(i, "fmi3EnterContinuousTimeMode", EVENT, CONTINUOUS);
}

EXPORT fmi3Status fmi3CompletedIntegratorStep(fmi3Instance i, bool noSetPrior, bool *enterEventMode,
                                              bool *terminate) {
    (void)noSetPrior;
    *enterEventMode = *terminate = false;
    return completed_integrator_step(i, "fmi3CompletedIntegratorStep");
}

EXPORT fmi3Status fmi3SetTime(fmi3Instance i, double time) { return set_time(i, "fmi3SetTime", time); }

EXPORT fmi3Status fmi3SetContinuousStates(fmi3Instance i, const double x[], size_t nx) {
    return set_states(i, "fmi3SetContinuousStates", x, nx);
}

EXPORT fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance i, double dx[], size_t nx) {
    return get_array(i, "fmi3GetContinuousStateDerivatives", READING, DERIVATIVES, dx, nx);
}

EXPORT fmi3Status fmi3GetEventIndicators(fmi3Instance i, double z[], size_t nz) {
    return get_array(i, "fmi3GetEventIndicators", READING, INDICATORS, z, nz);
}

EXPORT fmi3Status fmi3GetContinuousStates(fmi3Instance i, double x[], size_t nx) {
    return get_array(i, "fmi3GetContinuousStates", READING, STATES, x, nx);
}

EXPORT fmi3Status fmi3GetNominalsOfContinuousStates(fmi3Instance i, double nominals[], size_t nx) {
    return get_array(i, "fmi3GetNominalsOfContinuousStates", READING, NOMINALS, nominals, nx);
}

EXPORT fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance i, size_t *n) {
    ALLOWED((Ball *)i, "fmi3GetNumberOfEventIndicators", ANY_STATE);
    *n = 1;
    return OK;
}

EXPORT fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance i, size_t *n) {
    ALLOWED((Ball *)i, "fmi3GetNumberOfContinuousStates", ANY_STATE);
    *n = 2;
    return OK;
}

#endif /* MODEL_EXCHANGE */

#ifdef CO_SIMULATION

EXPORT fmi3Instance fmi3InstantiateCoSimulation(fmi3String name, fmi3String token, fmi3String resources,
                                                bool visible, bool logging, bool eventModeUsed,
                                                bool earlyReturnAllowed, const fmi3ValueReference required[],
                                                size_t nRequired, void *env, fmi3LogMessageCallback log,
                                                void *intermediateUpdate) {
    (void)resources; (void)visible; (void)logging; (void)earlyReturnAllowed; (void)required;
    (void)nRequired; (void)intermediateUpdate;
    if (eventModeUsed) return NULL;
    return instantiate(name, token, false, env, log);
}

EXPORT fmi3Status fmi3DoStep(fmi3Instance i, double t, double h, bool noSetPrior, bool *eventHandlingNeeded,
                             bool *terminate, bool *earlyReturn, double *lastSuccessfulTime) {
    (void)t; (void)noSetPrior;
    Ball *b = i;
    ALLOWED(b, "fmi3DoStep", STEP);
    advance(&b->m, h);
    *eventHandlingNeeded = *terminate = *earlyReturn = false;
    *lastSuccessfulTime = b->m.time;
    return OK;
}

#endif /* CO_SIMULATION */

#endif /* FMI_VERSION */
