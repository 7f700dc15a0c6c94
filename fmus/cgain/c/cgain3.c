/* CGain, FMI 3.0 co-simulation: y = k * u, direct feed-through, nothing to
 * integrate; the same model as cgain2.c. Value references: 0 time, 1 u
 * (input), 2 y (output), 3 k (parameter).
 *
 * Exports every function of the FMI 3.0 C API, as the standard requires of
 * any binary whatever interfaces it implements (importers such as FMPy
 * resolve them all). Those of interfaces and capabilities CGain does not
 * have (Model Exchange, Scheduled Execution, Event Mode, clocks,
 * Configuration Mode, FMU state, derivatives, dependencies) return
 * fmi3Error and log why, as do the getters and setters of types it has no
 * variables of when asked for a value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmi_min.h"

#define CGAIN_TOKEN "cosim:CGain:fmi3:1"

typedef struct {
    double time;
    double u;
    double k;
    /* Only for the messages of refused calls; after the fields the calls
     * of a step read. */
    fmi3InstanceEnvironment env;
    fmi3LogMessageCallback log;
} CGain;

/* Logs "<function>: <why>" (status Error, category logStatusError, which
 * the FMU logs whether or not debug logging is on) and returns fmi3Error. */
static fmi3Status refuse(fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                         const char *function, const char *why) {
    if (log != NULL) {
        char message[256];
        snprintf(message, sizeof message, "%s: %s", function, why);
        log(env, fmi3Error, "logStatusError", message);
    }
    return fmi3Error;
}

static fmi3Status refuse_call(fmi3Instance c, const char *function, const char *why) {
    const CGain *m = c;
    return m == NULL ? fmi3Error : refuse(m->env, m->log, function, why);
}

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
    (void)early_return; (void)required; (void)n_required; (void)update;
    if (token == NULL || strcmp(token, CGAIN_TOKEN) != 0) {
        return NULL;
    }
    CGain *m = calloc(1, sizeof(CGain));
    if (m != NULL) {
        m->k = 1.0;
        m->env = env;
        m->log = log;
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

/* The refused functions below use only the instance (to log); their other
 * parameters are the API's. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"

/* No variable of these types: only empty calls succeed. */
#define CGAIN_NONE(T, Name)                                                                       \
    CGAIN_EXPORT fmi3Status fmi3Get##Name(fmi3Instance c, const fmi3ValueReference vr[],          \
                                          size_t n, T v[], size_t nv) {                           \
        return n == 0 ? fmi3OK                                                                    \
                      : refuse_call(c, "fmi3Get" #Name, "CGain has no " #Name " variables");      \
    }                                                                                             \
    CGAIN_EXPORT fmi3Status fmi3Set##Name(fmi3Instance c, const fmi3ValueReference vr[],          \
                                          size_t n, const T v[], size_t nv) {                     \
        return n == 0 ? fmi3OK                                                                    \
                      : refuse_call(c, "fmi3Set" #Name, "CGain has no " #Name " variables");      \
    }

CGAIN_NONE(fmi3Float32, Float32)
CGAIN_NONE(fmi3Int8, Int8)
CGAIN_NONE(fmi3UInt8, UInt8)
CGAIN_NONE(fmi3Int16, Int16)
CGAIN_NONE(fmi3UInt16, UInt16)
CGAIN_NONE(fmi3Int32, Int32)
CGAIN_NONE(fmi3UInt32, UInt32)
CGAIN_NONE(fmi3Int64, Int64)
CGAIN_NONE(fmi3UInt64, UInt64)
CGAIN_NONE(fmi3Boolean, Boolean)
CGAIN_NONE(fmi3String, String)

CGAIN_EXPORT fmi3Status fmi3GetBinary(fmi3Instance c, const fmi3ValueReference vr[], size_t n,
                                      size_t sizes[], fmi3Binary v[], size_t nv) {
    return n == 0 ? fmi3OK : refuse_call(c, "fmi3GetBinary", "CGain has no Binary variables");
}

CGAIN_EXPORT fmi3Status fmi3SetBinary(fmi3Instance c, const fmi3ValueReference vr[], size_t n,
                                      const size_t sizes[], const fmi3Binary v[], size_t nv) {
    return n == 0 ? fmi3OK : refuse_call(c, "fmi3SetBinary", "CGain has no Binary variables");
}

CGAIN_EXPORT fmi3Status fmi3GetClock(fmi3Instance c, const fmi3ValueReference vr[], size_t n,
                                     fmi3Clock v[]) {
    return n == 0 ? fmi3OK : refuse_call(c, "fmi3GetClock", "CGain has no clocks");
}

CGAIN_EXPORT fmi3Status fmi3SetClock(fmi3Instance c, const fmi3ValueReference vr[], size_t n,
                                     const fmi3Clock v[]) {
    return n == 0 ? fmi3OK : refuse_call(c, "fmi3SetClock", "CGain has no clocks");
}

/* A function refused whatever its arguments; `params` begins with
 * `fmi3Instance c`. */
#define CGAIN_REFUSED(name, why, params)                                                          \
    CGAIN_EXPORT fmi3Status name params { return refuse_call(c, #name, why); }

#define NO_ME "CGain implements Co-Simulation only, not Model Exchange"
#define NO_SE "CGain implements Co-Simulation only, not Scheduled Execution"
#define NO_EVENT_MODE "CGain has no Event Mode (hasEventMode=\"false\")"
#define NO_CLOCKS "CGain has no clocks"

CGAIN_EXPORT fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token,
                                                       fmi3String resources, fmi3Boolean visible,
                                                       fmi3Boolean logging,
                                                       fmi3InstanceEnvironment env,
                                                       fmi3LogMessageCallback log) {
    refuse(env, log, "fmi3InstantiateModelExchange", NO_ME);
    return NULL;
}

CGAIN_EXPORT fmi3Instance fmi3InstantiateScheduledExecution(
    fmi3String name, fmi3String token, fmi3String resources, fmi3Boolean visible,
    fmi3Boolean logging, fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
    fmi3ClockUpdateCallback clock_update, fmi3LockPreemptionCallback lock,
    fmi3UnlockPreemptionCallback unlock) {
    refuse(env, log, "fmi3InstantiateScheduledExecution", NO_SE);
    return NULL;
}

/* Event Mode and discrete states */
CGAIN_REFUSED(fmi3EnterEventMode, NO_EVENT_MODE, (fmi3Instance c))
CGAIN_REFUSED(fmi3EnterStepMode,
              NO_EVENT_MODE ": it is in Step Mode from fmi3ExitInitializationMode on",
              (fmi3Instance c))
CGAIN_REFUSED(fmi3EvaluateDiscreteStates, NO_EVENT_MODE, (fmi3Instance c))
CGAIN_REFUSED(fmi3UpdateDiscreteStates, NO_EVENT_MODE,
              (fmi3Instance c, fmi3Boolean *update_needed, fmi3Boolean *terminate,
               fmi3Boolean *nominals_changed, fmi3Boolean *values_changed,
               fmi3Boolean *next_defined, fmi3Float64 *next_time))

/* Configuration Mode */
CGAIN_REFUSED(fmi3EnterConfigurationMode,
              "CGain has no structural parameters, so no Configuration Mode",
              (fmi3Instance c))
CGAIN_REFUSED(fmi3ExitConfigurationMode,
              "CGain has no structural parameters, so no Configuration Mode",
              (fmi3Instance c))

/* Clocks */
CGAIN_REFUSED(fmi3GetIntervalDecimal, NO_CLOCKS,
              (fmi3Instance c, const fmi3ValueReference vr[], size_t n, fmi3Float64 intervals[],
               fmi3IntervalQualifier qualifiers[]))
CGAIN_REFUSED(fmi3GetIntervalFraction, NO_CLOCKS,
              (fmi3Instance c, const fmi3ValueReference vr[], size_t n, fmi3UInt64 counters[],
               fmi3UInt64 resolutions[], fmi3IntervalQualifier qualifiers[]))
CGAIN_REFUSED(fmi3GetShiftDecimal, NO_CLOCKS,
              (fmi3Instance c, const fmi3ValueReference vr[], size_t n, fmi3Float64 shifts[]))
CGAIN_REFUSED(fmi3GetShiftFraction, NO_CLOCKS,
              (fmi3Instance c, const fmi3ValueReference vr[], size_t n, fmi3UInt64 counters[],
               fmi3UInt64 resolutions[]))
CGAIN_REFUSED(fmi3SetIntervalDecimal, NO_CLOCKS,
              (fmi3Instance c, const fmi3ValueReference vr[], size_t n,
               const fmi3Float64 intervals[]))
CGAIN_REFUSED(fmi3SetIntervalFraction, NO_CLOCKS,
              (fmi3Instance c, const fmi3ValueReference vr[], size_t n, const fmi3UInt64 counters[],
               const fmi3UInt64 resolutions[]))
CGAIN_REFUSED(fmi3SetShiftDecimal, NO_CLOCKS,
              (fmi3Instance c, const fmi3ValueReference vr[], size_t n,
               const fmi3Float64 shifts[]))
CGAIN_REFUSED(fmi3SetShiftFraction, NO_CLOCKS,
              (fmi3Instance c, const fmi3ValueReference vr[], size_t n, const fmi3UInt64 counters[],
               const fmi3UInt64 resolutions[]))

/* Dependencies */
#define NO_DEPENDENCIES                                                                           \
    "CGain provides no per-element dependencies (providesPerElementDependencies=\"false\")"
CGAIN_REFUSED(fmi3GetNumberOfVariableDependencies, NO_DEPENDENCIES,
              (fmi3Instance c, fmi3ValueReference vr, size_t *n))
CGAIN_REFUSED(fmi3GetVariableDependencies, NO_DEPENDENCIES,
              (fmi3Instance c, fmi3ValueReference dependent, size_t element_of_dependent[],
               fmi3ValueReference independents[], size_t element_of_independents[],
               fmi3DependencyKind kinds[], size_t n))

/* FMU state */
#define NO_STATE "CGain cannot get and set its FMU state (canGetAndSetFMUState=\"false\")"
#define NO_SERIALIZE "CGain cannot serialize its FMU state (canSerializeFMUState=\"false\")"
CGAIN_REFUSED(fmi3GetFMUState, NO_STATE, (fmi3Instance c, fmi3FMUState *state))
CGAIN_REFUSED(fmi3SetFMUState, NO_STATE, (fmi3Instance c, fmi3FMUState state))
CGAIN_REFUSED(fmi3FreeFMUState, NO_STATE, (fmi3Instance c, fmi3FMUState *state))
CGAIN_REFUSED(fmi3SerializedFMUStateSize, NO_SERIALIZE,
              (fmi3Instance c, fmi3FMUState state, size_t *size))
CGAIN_REFUSED(fmi3SerializeFMUState, NO_SERIALIZE,
              (fmi3Instance c, fmi3FMUState state, fmi3Byte bytes[], size_t size))
CGAIN_REFUSED(fmi3DeserializeFMUState, NO_SERIALIZE,
              (fmi3Instance c, const fmi3Byte bytes[], size_t size, fmi3FMUState *state))

/* Derivatives */
CGAIN_REFUSED(fmi3GetDirectionalDerivative,
              "CGain provides no directional derivatives "
              "(providesDirectionalDerivatives=\"false\")",
              (fmi3Instance c, const fmi3ValueReference unknowns[], size_t n_unknowns,
               const fmi3ValueReference knowns[], size_t n_knowns, const fmi3Float64 seed[],
               size_t n_seed, fmi3Float64 sensitivity[], size_t n_sensitivity))
CGAIN_REFUSED(fmi3GetAdjointDerivative,
              "CGain provides no adjoint derivatives (providesAdjointDerivatives=\"false\")",
              (fmi3Instance c, const fmi3ValueReference unknowns[], size_t n_unknowns,
               const fmi3ValueReference knowns[], size_t n_knowns, const fmi3Float64 seed[],
               size_t n_seed, fmi3Float64 sensitivity[], size_t n_sensitivity))
CGAIN_REFUSED(fmi3GetOutputDerivatives,
              "CGain provides no output derivatives (maxOutputDerivativeOrder=\"0\")",
              (fmi3Instance c, const fmi3ValueReference vr[], size_t n, const fmi3Int32 orders[],
               fmi3Float64 values[], size_t n_values))

/* Model Exchange */
CGAIN_REFUSED(fmi3EnterContinuousTimeMode, NO_ME, (fmi3Instance c))
CGAIN_REFUSED(fmi3CompletedIntegratorStep, NO_ME,
              (fmi3Instance c, fmi3Boolean no_set_prior, fmi3Boolean *enter_event_mode,
               fmi3Boolean *terminate))
CGAIN_REFUSED(fmi3SetTime, NO_ME, (fmi3Instance c, fmi3Float64 time))
CGAIN_REFUSED(fmi3SetContinuousStates, NO_ME, (fmi3Instance c, const fmi3Float64 x[], size_t n))
CGAIN_REFUSED(fmi3GetContinuousStateDerivatives, NO_ME,
              (fmi3Instance c, fmi3Float64 dx[], size_t n))
CGAIN_REFUSED(fmi3GetEventIndicators, NO_ME, (fmi3Instance c, fmi3Float64 indicators[], size_t n))
CGAIN_REFUSED(fmi3GetContinuousStates, NO_ME, (fmi3Instance c, fmi3Float64 x[], size_t n))
CGAIN_REFUSED(fmi3GetNominalsOfContinuousStates, NO_ME,
              (fmi3Instance c, fmi3Float64 nominals[], size_t n))
CGAIN_REFUSED(fmi3GetNumberOfEventIndicators, NO_ME, (fmi3Instance c, size_t *n))
CGAIN_REFUSED(fmi3GetNumberOfContinuousStates, NO_ME, (fmi3Instance c, size_t *n))

/* Scheduled Execution */
CGAIN_REFUSED(fmi3ActivateModelPartition, NO_SE,
              (fmi3Instance c, fmi3ValueReference clock, fmi3Float64 time))

#pragma GCC diagnostic pop

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
