/* A hand-written FMI 3.0 co-simulation FMU for the tests of values the
 * project's kit FMUs cannot hold (the kit keeps numbers as doubles and has
 * no Binary type): each output is its input, at every time, for a
 * continuous and a discrete Float64, an Int64 and a UInt64 over their whole
 * range, and a Binary. Variables and value references in
 * modelDescription.xml. Every FMI 3.0 function is exported (a conforming
 * binary has them all); those of Model Exchange, Scheduled Execution,
 * clocks, FMU states and derivatives, which this FMU does not support,
 * return fmi3Error with a message. Built by tests/src/lib.rs
 * `feedthrough_fmu` with the system C compiler. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *fmi3Instance;
typedef void *fmi3InstanceEnvironment;
typedef void *fmi3FMUState;
typedef uint32_t fmi3ValueReference;
typedef bool fmi3Boolean;
typedef const char *fmi3String;
typedef const uint8_t *fmi3Binary;
typedef uint8_t fmi3Byte;
typedef bool fmi3Clock;
typedef enum { fmi3OK, fmi3Warning, fmi3Discard, fmi3Error, fmi3Fatal } fmi3Status;
typedef int fmi3DependencyKind;
typedef int fmi3IntervalQualifier;
typedef void (*fmi3LogMessageCallback)(fmi3InstanceEnvironment, fmi3Status, fmi3String, fmi3String);
typedef void (*fmi3Callback)(void);

#define EXPORT __attribute__((visibility("default")))

enum {
    VR_TIME = 0,
    VR_F64_C_IN = 1, VR_F64_C_OUT = 2,
    VR_F64_D_IN = 3, VR_F64_D_OUT = 4,
    VR_I64_IN = 5, VR_I64_OUT = 6,
    VR_U64_IN = 7, VR_U64_OUT = 8,
    VR_BIN_IN = 9, VR_BIN_OUT = 10,
};

enum { INSTANTIATED, INITIALIZATION, STEP, TERMINATED };

typedef struct {
    fmi3InstanceEnvironment env;
    fmi3LogMessageCallback log;
    int state;
    double time;
    double f64_c, f64_d;
    int64_t i64;
    uint64_t u64;
    uint8_t *bin;
    size_t bin_size;
} Feedthrough;

static const char *TOKEN = "{cosim-test-feedthrough-1}";

static fmi3Status fail(Feedthrough *f, const char *format, ...) {
    char message[512];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    if (f && f->log) f->log(f->env, fmi3Error, "logStatusError", message);
    return fmi3Error;
}

static fmi3Status set_binary(Feedthrough *f, const uint8_t *bytes, size_t size) {
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return fail(f, "out of memory");
    if (size) memcpy(copy, bytes, size);
    free(f->bin);
    f->bin = copy;
    f->bin_size = size;
    return fmi3OK;
}

EXPORT const char *fmi3GetVersion(void) { return "3.0"; }

EXPORT fmi3Status fmi3SetDebugLogging(fmi3Instance i, fmi3Boolean on, size_t n, const fmi3String c[]) {
    (void)i; (void)on; (void)n; (void)c;
    return fmi3OK;
}

EXPORT fmi3Instance fmi3InstantiateCoSimulation(
    fmi3String name, fmi3String token, fmi3String resources, fmi3Boolean visible, fmi3Boolean logging,
    fmi3Boolean eventModeUsed, fmi3Boolean earlyReturnAllowed, const fmi3ValueReference required[],
    size_t nRequired, fmi3InstanceEnvironment env, fmi3LogMessageCallback log, fmi3Callback update) {
    (void)name; (void)resources; (void)visible; (void)logging; (void)earlyReturnAllowed;
    (void)required; (void)nRequired; (void)update;
    if (!token || strcmp(token, TOKEN) != 0 || eventModeUsed) return NULL;
    Feedthrough *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->env = env;
    f->log = log;
    if (set_binary(f, (const uint8_t *)"foo", 3) != fmi3OK) {
        free(f);
        return NULL;
    }
    return f;
}

EXPORT fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token, fmi3String resources,
                                                 fmi3Boolean visible, fmi3Boolean logging,
                                                 fmi3InstanceEnvironment env, fmi3LogMessageCallback log) {
    (void)name; (void)token; (void)resources; (void)visible; (void)logging; (void)env; (void)log;
    return NULL;
}

EXPORT fmi3Instance fmi3InstantiateScheduledExecution(
    fmi3String name, fmi3String token, fmi3String resources, fmi3Boolean visible, fmi3Boolean logging,
    fmi3InstanceEnvironment env, fmi3LogMessageCallback log, fmi3Callback clock, fmi3Callback lock,
    fmi3Callback unlock) {
    (void)name; (void)token; (void)resources; (void)visible; (void)logging; (void)env; (void)log;
    (void)clock; (void)lock; (void)unlock;
    return NULL;
}

EXPORT void fmi3FreeInstance(fmi3Instance i) {
    Feedthrough *f = i;
    if (!f) return;
    free(f->bin);
    free(f);
}

EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance i, fmi3Boolean tolDefined, double tol,
                                              double start, fmi3Boolean stopDefined, double stop) {
    (void)tolDefined; (void)tol; (void)stopDefined; (void)stop;
    Feedthrough *f = i;
    if (f->state != INSTANTIATED) return fail(f, "fmi3EnterInitializationMode: not Instantiated");
    f->time = start;
    f->state = INITIALIZATION;
    return fmi3OK;
}

EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance i) {
    Feedthrough *f = i;
    if (f->state != INITIALIZATION) return fail(f, "fmi3ExitInitializationMode: not in Initialization Mode");
    f->state = STEP;
    return fmi3OK;
}

EXPORT fmi3Status fmi3Terminate(fmi3Instance i) {
    Feedthrough *f = i;
    if (f->state != STEP) return fail(f, "fmi3Terminate: not in Step Mode");
    f->state = TERMINATED;
    return fmi3OK;
}

EXPORT fmi3Status fmi3Reset(fmi3Instance i) {
    Feedthrough *f = i;
    f->state = INSTANTIATED;
    f->time = 0;
    f->f64_c = f->f64_d = 0;
    f->i64 = 0;
    f->u64 = 0;
    return set_binary(f, (const uint8_t *)"foo", 3);
}

EXPORT fmi3Status fmi3DoStep(fmi3Instance i, double t, double h, fmi3Boolean noSetPrior,
                             fmi3Boolean *eventHandlingNeeded, fmi3Boolean *terminate,
                             fmi3Boolean *earlyReturn, double *lastSuccessfulTime) {
    (void)noSetPrior;
    Feedthrough *f = i;
    if (f->state != STEP) return fail(f, "fmi3DoStep: not in Step Mode");
    if (h <= 0) return fail(f, "fmi3DoStep: step size %g is not positive", h);
    f->time = t + h;
    *eventHandlingNeeded = false;
    *terminate = false;
    *earlyReturn = false;
    *lastSuccessfulTime = f->time;
    return fmi3OK;
}

/* Values may be set in Instantiated, Initialization and Step Mode. */
static int settable(Feedthrough *f, const char *function) {
    if (f->state == TERMINATED) {
        fail(f, "%s: the instance is terminated", function);
        return 0;
    }
    return 1;
}

EXPORT fmi3Status fmi3GetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, double v[],
                                 size_t nv) {
    Feedthrough *f = i;
    if (nv != nvr) return fail(f, "fmi3GetFloat64: %zu values for %zu variables", nv, nvr);
    for (size_t k = 0; k < nvr; k++) {
        switch (vr[k]) {
        case VR_TIME: v[k] = f->time; break;
        case VR_F64_C_IN: case VR_F64_C_OUT: v[k] = f->f64_c; break;
        case VR_F64_D_IN: case VR_F64_D_OUT: v[k] = f->f64_d; break;
        default: return fail(f, "fmi3GetFloat64: no Float64 variable has value reference %u", vr[k]);
        }
    }
    return fmi3OK;
}

EXPORT fmi3Status fmi3SetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                 const double v[], size_t nv) {
    Feedthrough *f = i;
    if (!settable(f, "fmi3SetFloat64")) return fmi3Error;
    if (nv != nvr) return fail(f, "fmi3SetFloat64: %zu values for %zu variables", nv, nvr);
    for (size_t k = 0; k < nvr; k++) {
        if (vr[k] == VR_F64_C_IN) f->f64_c = v[k];
        else if (vr[k] == VR_F64_D_IN) f->f64_d = v[k];
        else return fail(f, "fmi3SetFloat64: value reference %u is no Float64 input", vr[k]);
    }
    return fmi3OK;
}

EXPORT fmi3Status fmi3GetInt64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, int64_t v[],
                               size_t nv) {
    Feedthrough *f = i;
    if (nv != nvr) return fail(f, "fmi3GetInt64: %zu values for %zu variables", nv, nvr);
    for (size_t k = 0; k < nvr; k++) {
        if (vr[k] == VR_I64_IN || vr[k] == VR_I64_OUT) v[k] = f->i64;
        else return fail(f, "fmi3GetInt64: no Int64 variable has value reference %u", vr[k]);
    }
    return fmi3OK;
}

EXPORT fmi3Status fmi3SetInt64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, const int64_t v[],
                               size_t nv) {
    Feedthrough *f = i;
    if (!settable(f, "fmi3SetInt64")) return fmi3Error;
    if (nv != nvr) return fail(f, "fmi3SetInt64: %zu values for %zu variables", nv, nvr);
    for (size_t k = 0; k < nvr; k++) {
        if (vr[k] == VR_I64_IN) f->i64 = v[k];
        else return fail(f, "fmi3SetInt64: value reference %u is no Int64 input", vr[k]);
    }
    return fmi3OK;
}

EXPORT fmi3Status fmi3GetUInt64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, uint64_t v[],
                                size_t nv) {
    Feedthrough *f = i;
    if (nv != nvr) return fail(f, "fmi3GetUInt64: %zu values for %zu variables", nv, nvr);
    for (size_t k = 0; k < nvr; k++) {
        if (vr[k] == VR_U64_IN || vr[k] == VR_U64_OUT) v[k] = f->u64;
        else return fail(f, "fmi3GetUInt64: no UInt64 variable has value reference %u", vr[k]);
    }
    return fmi3OK;
}

EXPORT fmi3Status fmi3SetUInt64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                const uint64_t v[], size_t nv) {
    Feedthrough *f = i;
    if (!settable(f, "fmi3SetUInt64")) return fmi3Error;
    if (nv != nvr) return fail(f, "fmi3SetUInt64: %zu values for %zu variables", nv, nvr);
    for (size_t k = 0; k < nvr; k++) {
        if (vr[k] == VR_U64_IN) f->u64 = v[k];
        else return fail(f, "fmi3SetUInt64: value reference %u is no UInt64 input", vr[k]);
    }
    return fmi3OK;
}

EXPORT fmi3Status fmi3GetBinary(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, size_t sizes[],
                                fmi3Binary v[], size_t nv) {
    Feedthrough *f = i;
    if (nv != nvr) return fail(f, "fmi3GetBinary: %zu values for %zu variables", nv, nvr);
    for (size_t k = 0; k < nvr; k++) {
        if (vr[k] != VR_BIN_IN && vr[k] != VR_BIN_OUT)
            return fail(f, "fmi3GetBinary: no Binary variable has value reference %u", vr[k]);
        sizes[k] = f->bin_size;
        v[k] = f->bin;
    }
    return fmi3OK;
}

EXPORT fmi3Status fmi3SetBinary(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                const size_t sizes[], const fmi3Binary v[], size_t nv) {
    Feedthrough *f = i;
    if (!settable(f, "fmi3SetBinary")) return fmi3Error;
    if (nv != nvr) return fail(f, "fmi3SetBinary: %zu values for %zu variables", nv, nvr);
    for (size_t k = 0; k < nvr; k++) {
        if (vr[k] != VR_BIN_IN) return fail(f, "fmi3SetBinary: value reference %u is no Binary input", vr[k]);
        if (!v[k] && sizes[k]) return fail(f, "fmi3SetBinary: a null value of %zu bytes", sizes[k]);
        fmi3Status s = set_binary(f, v[k], sizes[k]);
        if (s != fmi3OK) return s;
    }
    return fmi3OK;
}

/* ---- The types this FMU has no variables of: an error for any variable. */

#define NO_VARIABLES(get, set, T)                                                                        \
    EXPORT fmi3Status get(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, T v[], size_t nv) { \
        (void)vr; (void)v; (void)nv;                                                                    \
        return nvr == 0 ? fmi3OK : fail(i, #get ": this FMU has no variables of that type");            \
    }                                                                                                   \
    EXPORT fmi3Status set(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, const T v[],       \
                          size_t nv) {                                                                  \
        (void)vr; (void)v; (void)nv;                                                                    \
        return nvr == 0 ? fmi3OK : fail(i, #set ": this FMU has no variables of that type");            \
    }

NO_VARIABLES(fmi3GetFloat32, fmi3SetFloat32, float)
NO_VARIABLES(fmi3GetInt8, fmi3SetInt8, int8_t)
NO_VARIABLES(fmi3GetUInt8, fmi3SetUInt8, uint8_t)
NO_VARIABLES(fmi3GetInt16, fmi3SetInt16, int16_t)
NO_VARIABLES(fmi3GetUInt16, fmi3SetUInt16, uint16_t)
NO_VARIABLES(fmi3GetInt32, fmi3SetInt32, int32_t)
NO_VARIABLES(fmi3GetUInt32, fmi3SetUInt32, uint32_t)
NO_VARIABLES(fmi3GetBoolean, fmi3SetBoolean, fmi3Boolean)
NO_VARIABLES(fmi3GetString, fmi3SetString, fmi3String)

/* ---- What this FMU does not support: fmi3Error, saying so. */

#define UNSUPPORTED(name, ...)                                                  \
    EXPORT fmi3Status name(fmi3Instance i, __VA_ARGS__) {                       \
        return fail(i, #name ": not supported by this FMU");                    \
    }
#define UNSUPPORTED0(name)                                                      \
    EXPORT fmi3Status name(fmi3Instance i) {                                    \
        return fail(i, #name ": not supported by this FMU");                    \
    }

UNSUPPORTED0(fmi3EnterEventMode)
UNSUPPORTED0(fmi3EnterConfigurationMode)
UNSUPPORTED0(fmi3ExitConfigurationMode)
UNSUPPORTED0(fmi3EvaluateDiscreteStates)
UNSUPPORTED0(fmi3EnterContinuousTimeMode)
UNSUPPORTED0(fmi3EnterStepMode)
UNSUPPORTED(fmi3GetClock, const fmi3ValueReference vr[], size_t nvr, fmi3Clock v[])
UNSUPPORTED(fmi3SetClock, const fmi3ValueReference vr[], size_t nvr, const fmi3Clock v[])
UNSUPPORTED(fmi3GetNumberOfVariableDependencies, fmi3ValueReference vr, size_t *n)
UNSUPPORTED(fmi3GetVariableDependencies, fmi3ValueReference dependent, size_t elementsOfDependent[],
            fmi3ValueReference independents[], size_t elementsOfIndependents[],
            fmi3DependencyKind kinds[], size_t n)
UNSUPPORTED(fmi3GetFMUState, fmi3FMUState *state)
UNSUPPORTED(fmi3SetFMUState, fmi3FMUState state)
UNSUPPORTED(fmi3FreeFMUState, fmi3FMUState *state)
UNSUPPORTED(fmi3SerializedFMUStateSize, fmi3FMUState state, size_t *size)
UNSUPPORTED(fmi3SerializeFMUState, fmi3FMUState state, fmi3Byte bytes[], size_t size)
UNSUPPORTED(fmi3DeserializeFMUState, const fmi3Byte bytes[], size_t size, fmi3FMUState *state)
UNSUPPORTED(fmi3GetDirectionalDerivative, const fmi3ValueReference unknowns[], size_t nUnknowns,
            const fmi3ValueReference knowns[], size_t nKnowns, const double seed[], size_t nSeed,
            double sensitivity[], size_t nSensitivity)
UNSUPPORTED(fmi3GetAdjointDerivative, const fmi3ValueReference unknowns[], size_t nUnknowns,
            const fmi3ValueReference knowns[], size_t nKnowns, const double seed[], size_t nSeed,
            double sensitivity[], size_t nSensitivity)
UNSUPPORTED(fmi3GetIntervalDecimal, const fmi3ValueReference vr[], size_t nvr, double intervals[],
            fmi3IntervalQualifier qualifiers[])
UNSUPPORTED(fmi3GetIntervalFraction, const fmi3ValueReference vr[], size_t nvr, uint64_t counters[],
            uint64_t resolutions[], fmi3IntervalQualifier qualifiers[])
UNSUPPORTED(fmi3GetShiftDecimal, const fmi3ValueReference vr[], size_t nvr, double shifts[])
UNSUPPORTED(fmi3GetShiftFraction, const fmi3ValueReference vr[], size_t nvr, uint64_t counters[],
            uint64_t resolutions[])
UNSUPPORTED(fmi3SetIntervalDecimal, const fmi3ValueReference vr[], size_t nvr, const double intervals[])
UNSUPPORTED(fmi3SetIntervalFraction, const fmi3ValueReference vr[], size_t nvr, const uint64_t counters[],
            const uint64_t resolutions[])
UNSUPPORTED(fmi3SetShiftDecimal, const fmi3ValueReference vr[], size_t nvr, const double shifts[])
UNSUPPORTED(fmi3SetShiftFraction, const fmi3ValueReference vr[], size_t nvr, const uint64_t counters[],
            const uint64_t resolutions[])
UNSUPPORTED(fmi3UpdateDiscreteStates, fmi3Boolean *discreteStatesNeedUpdate, fmi3Boolean *terminate,
            fmi3Boolean *nominalsChanged, fmi3Boolean *valuesChanged, fmi3Boolean *nextEventTimeDefined,
            double *nextEventTime)
UNSUPPORTED(fmi3CompletedIntegratorStep, fmi3Boolean noSetPrior, fmi3Boolean *enterEventMode,
            fmi3Boolean *terminate)
UNSUPPORTED(fmi3SetTime, double time)
UNSUPPORTED(fmi3SetContinuousStates, const double x[], size_t nx)
UNSUPPORTED(fmi3GetContinuousStateDerivatives, double dx[], size_t nx)
UNSUPPORTED(fmi3GetEventIndicators, double indicators[], size_t n)
UNSUPPORTED(fmi3GetContinuousStates, double x[], size_t nx)
UNSUPPORTED(fmi3GetNominalsOfContinuousStates, double nominals[], size_t nx)
UNSUPPORTED(fmi3GetNumberOfEventIndicators, size_t *n)
UNSUPPORTED(fmi3GetNumberOfContinuousStates, size_t *n)
UNSUPPORTED(fmi3GetOutputDerivatives, const fmi3ValueReference vr[], size_t nvr, const int32_t orders[],
            double values[], size_t nValues)
UNSUPPORTED(fmi3ActivateModelPartition, fmi3ValueReference clock, double activationTime)
