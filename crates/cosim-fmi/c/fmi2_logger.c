/*
 * The FMI 2.0 logger callback is C-variadic (printf-style). Rust cannot define
 * a variadic function on stable, so this shim formats the message and hands
 * the finished text to a Rust sink.
 *
 * The component environment the FMU passes back is a `cosim_fmi2_env*`
 * (built by the Rust side); its `sink` receives the formatted message.
 *
 * A message is untrusted input, and so is its format: one message costs at
 * most COSIM_LOG_MAX bytes of text and a bounded amount of formatting work.
 * glibc's vsnprintf cannot promise that, even into a bounded buffer: it
 * walks a field width in full (`%900000000d`: 3 s, nothing stored), and a
 * floating-point precision allocates the whole expansion (`%.900000000f`:
 * 15 s and 4.4 GB, glibc 2.36). So the shim walks the format itself: each
 * conversion's arguments are fetched with the types the format gives them
 * (as vsnprintf would fetch them), its width and precision (literal or `*`)
 * are lowered to COSIM_LOG_MAX, a `%s` without a precision gets one (so
 * the string is read no further than that), and glibc's snprintf formats
 * that one conversion. The text stops at COSIM_LOG_MAX bytes (the sink is
 * told it was cut), and at most COSIM_LOG_MAX_CONVERSIONS conversions are
 * made. `%n` writes nothing. Numbered arguments (`%2$d`) are supported
 * up to COSIM_LOG_MAX_ARGS; a format that mixes numbered and unnumbered
 * ones, or numbers an argument whose type no conversion gives, is not
 * formatted past that point: the rest of the format is kept as it is.
 * A conversion glibc does not know is kept as text, as glibc keeps it.
 */
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <wchar.h>

/* Keep in step with `MESSAGE_MAX` in src/ffi/log.rs. */
#define COSIM_LOG_MAX 65536
#define COSIM_LOG_MAX_CONVERSIONS 4096
#define COSIM_LOG_MAX_ARGS 128

typedef void (*cosim_fmi2_sink)(void *ctx, const char *instance_name, int status,
                                const char *category, const char *message, size_t len,
                                int cut);

typedef struct {
    cosim_fmi2_sink sink;
    void *ctx;
} cosim_fmi2_env;

/* ----- the output buffer: on the stack while short, then on the heap ----- */

typedef struct {
    char *buf;
    size_t cap; /* bytes usable for text (the buffer has one more, for NUL) */
    size_t len;
    int cut;
    int on_heap;
    char small[1024];
} out_t;

static void out_init(out_t *o) {
    o->buf = o->small;
    o->cap = sizeof o->small - 1;
    o->len = 0;
    o->cut = 0;
    o->on_heap = 0;
    o->buf[0] = 0;
}

/* Makes room for `need` more bytes, up to COSIM_LOG_MAX in all; returns
 * the room there is. */
static size_t out_room(out_t *o, size_t need) {
    size_t want = o->len + need;
    if (want > COSIM_LOG_MAX) want = COSIM_LOG_MAX;
    if (want > o->cap) {
        size_t cap = o->cap;
        while (cap < want) cap *= 2;
        if (cap > COSIM_LOG_MAX) cap = COSIM_LOG_MAX;
        char *grown = o->on_heap ? realloc(o->buf, cap + 1) : malloc(cap + 1);
        if (grown != NULL) {
            if (!o->on_heap) memcpy(grown, o->buf, o->len + 1);
            o->buf = grown;
            o->cap = cap;
            o->on_heap = 1;
        }
    }
    return o->cap - o->len;
}

static void out_text(out_t *o, const char *s, size_t n) {
    size_t room = out_room(o, n);
    if (n > room) {
        n = room;
        o->cut = 1;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = 0;
}

static void out_free(out_t *o) {
    if (o->on_heap) free(o->buf);
}

/* ----- conversion specifications ----- */

typedef enum {
    A_NONE, /* %% and %m take no argument */
    A_INT,
    A_LONG,
    A_LLONG,
    A_INTMAX,
    A_SIZE,
    A_PTRDIFF,
    A_WINT,
    A_DOUBLE,
    A_LDOUBLE,
    A_PTR
} arg_kind;

typedef union {
    int i;
    long l;
    long long ll;
    intmax_t j;
    ssize_t z;
    ptrdiff_t t;
    wint_t wc;
    double d;
    long double ld;
    const void *p;
} value_t;

enum { NONE = 0, LITERAL = 1, STAR = 2 };

typedef struct {
    const char *end; /* one past the conversion character */
    char flags[8];
    int n_flags;
    int width_kind, prec_kind;
    long width, prec;  /* the literal values, saturated at LONG_MAX */
    int width_arg, prec_arg, value_arg; /* 0-based numbered arguments, or -1 */
    char length[3];
    char conv;
    arg_kind kind;
    int numbered; /* 1: `n$` forms, 0: unnumbered, -1: takes no argument */
} spec_t;

/* Reads decimal digits, saturating; returns the end. */
static const char *digits(const char *p, long *value) {
    long v = 0;
    while (*p >= '0' && *p <= '9') {
        int d = *p - '0';
        v = v > (LONG_MAX - d) / 10 ? LONG_MAX : v * 10 + d;
        p++;
    }
    *value = v;
    return p;
}

/* `n$` at p: the 0-based argument, or -1 (and p unchanged) when absent or
 * out of range (-2 then). */
static const char *numbered(const char *p, int *arg) {
    long n;
    const char *q = digits(p, &n);
    if (q == p || *q != '$') {
        *arg = -1;
        return p;
    }
    *arg = (n >= 1 && n <= COSIM_LOG_MAX_ARGS) ? (int)(n - 1) : -2;
    return q + 1;
}

static arg_kind int_kind(const char *length) {
    if (strcmp(length, "l") == 0) return A_LONG;
    if (strcmp(length, "ll") == 0 || strcmp(length, "q") == 0 || strcmp(length, "L") == 0)
        return A_LLONG;
    if (strcmp(length, "j") == 0) return A_INTMAX;
    if (strcmp(length, "z") == 0 || strcmp(length, "Z") == 0) return A_SIZE;
    if (strcmp(length, "t") == 0) return A_PTRDIFF;
    return A_INT; /* none, h, hh: promoted to int */
}

/* Parses the specification after a '%' at p. Returns 0 for a conversion
 * glibc does not know (the text is then kept as it is), -1 for a numbered
 * argument out of range, 1 otherwise. */
static int parse_spec(const char *p, spec_t *s) {
    memset(s, 0, sizeof *s);
    s->width_arg = s->prec_arg = -1;
    p = numbered(p, &s->value_arg);
    if (s->value_arg == -2) return -1;
    int any_numbered = s->value_arg >= 0;
    while (*p && strchr("-+ #0'I", *p)) {
        if (s->n_flags < (int)sizeof s->flags - 1) s->flags[s->n_flags++] = *p;
        p++;
    }
    if (*p == '*') {
        s->width_kind = STAR;
        p = numbered(p + 1, &s->width_arg);
        if (s->width_arg == -2) return -1;
        any_numbered |= s->width_arg >= 0;
    } else if (*p >= '0' && *p <= '9') {
        s->width_kind = LITERAL;
        p = digits(p, &s->width);
    }
    if (*p == '.') {
        p++;
        if (*p == '*') {
            s->prec_kind = STAR;
            p = numbered(p + 1, &s->prec_arg);
            if (s->prec_arg == -2) return -1;
            any_numbered |= s->prec_arg >= 0;
        } else {
            s->prec_kind = LITERAL;
            p = digits(p, &s->prec);
        }
    }
    int n = 0;
    if ((p[0] == 'h' && p[1] == 'h') || (p[0] == 'l' && p[1] == 'l')) {
        s->length[n++] = *p++;
        s->length[n++] = *p++;
    } else if (*p && strchr("hlLqjzZt", *p)) {
        s->length[n++] = *p++;
    }
    s->conv = *p;
    if (*p == 0) return 0;
    s->end = p + 1;
    switch (s->conv) {
    case 'd': case 'i': case 'u': case 'o': case 'x': case 'X':
        s->kind = int_kind(s->length);
        break;
    case 'c':
        s->kind = strcmp(s->length, "l") == 0 ? A_WINT : A_INT;
        break;
    case 'C':
        s->kind = A_WINT;
        break;
    case 's': case 'S': case 'p': case 'n':
        s->kind = A_PTR;
        break;
    case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
        s->kind = strcmp(s->length, "L") == 0 ? A_LDOUBLE : A_DOUBLE;
        break;
    case '%': case 'm':
        s->kind = A_NONE;
        break;
    default:
        return 0;
    }
    int takes_arguments = s->kind != A_NONE || s->width_kind == STAR || s->prec_kind == STAR;
    s->numbered = takes_arguments ? any_numbered : -1;
    return 1;
}

/* Whether the numbered forms of `s` are complete: every argument it takes
 * has a number (C does not allow mixing). */
static int fully_numbered(const spec_t *s) {
    return (s->kind == A_NONE || s->value_arg >= 0) &&
           (s->width_kind != STAR || s->width_arg >= 0) &&
           (s->prec_kind != STAR || s->prec_arg >= 0);
}

/* Fetches the next argument as `kind` (nothing for A_NONE). */
static void fetch(va_list *ap, arg_kind kind, value_t *v) {
    memset(v, 0, sizeof *v);
    switch (kind) {
    case A_NONE: break;
    case A_INT: v->i = va_arg(*ap, int); break;
    case A_LONG: v->l = va_arg(*ap, long); break;
    case A_LLONG: v->ll = va_arg(*ap, long long); break;
    case A_INTMAX: v->j = va_arg(*ap, intmax_t); break;
    case A_SIZE: v->z = va_arg(*ap, ssize_t); break;
    case A_PTRDIFF: v->t = va_arg(*ap, ptrdiff_t); break;
    case A_WINT: v->wc = va_arg(*ap, wint_t); break;
    case A_DOUBLE: v->d = va_arg(*ap, double); break;
    case A_LDOUBLE: v->ld = va_arg(*ap, long double); break;
    case A_PTR: v->p = va_arg(*ap, const void *); break;
    }
}

static long clamp(long v) { return v > COSIM_LOG_MAX ? COSIM_LOG_MAX : v; }

/* Formats one conversion with its argument `*v` and the width and
 * precision (`-1`: none) already fetched, lowered to COSIM_LOG_MAX. */
static void emit(out_t *o, const spec_t *s, const value_t *v, long width, long prec) {
    if (s->conv == 'n') return; /* writes nothing, into nothing */
    if (s->conv == '%') {
        out_text(o, "%", 1);
        return;
    }
    if ((s->conv == 's' || s->conv == 'S') && (prec < 0 || prec > COSIM_LOG_MAX))
        prec = COSIM_LOG_MAX; /* read no further than the text can hold */
    char fmt[64];
    int n = 0;
    fmt[n++] = '%';
    for (int i = 0; i < s->n_flags; i++) fmt[n++] = s->flags[i];
    if (width < 0) {
        /* A negative `*` width is the '-' flag and its magnitude. */
        fmt[n++] = '-';
        width = clamp(-width);
    }
    fmt[n] = 0;
    if (width > 0) n += snprintf(fmt + n, sizeof fmt - (size_t)n, "%ld", clamp(width));
    if (prec >= 0) n += snprintf(fmt + n, sizeof fmt - (size_t)n, ".%ld", clamp(prec));
    n += snprintf(fmt + n, sizeof fmt - (size_t)n, "%s%c", s->length, s->conv);
    /* Format into the room there is; with too little, once more into
     * what the buffer may grow to. */
    for (int attempt = 0; attempt < 2; attempt++) {
        size_t room = out_room(o, attempt == 0 ? 64 : (size_t)COSIM_LOG_MAX);
        char *dst = o->buf + o->len;
        int w;
        switch (s->kind) {
        case A_NONE: w = snprintf(dst, room + 1, fmt, 0); break;
        case A_INT: w = snprintf(dst, room + 1, fmt, v->i); break;
        case A_LONG: w = snprintf(dst, room + 1, fmt, v->l); break;
        case A_LLONG: w = snprintf(dst, room + 1, fmt, v->ll); break;
        case A_INTMAX: w = snprintf(dst, room + 1, fmt, v->j); break;
        case A_SIZE: w = snprintf(dst, room + 1, fmt, v->z); break;
        case A_PTRDIFF: w = snprintf(dst, room + 1, fmt, v->t); break;
        case A_WINT: w = snprintf(dst, room + 1, fmt, v->wc); break;
        case A_DOUBLE: w = snprintf(dst, room + 1, fmt, v->d); break;
        case A_LDOUBLE: w = snprintf(dst, room + 1, fmt, v->ld); break;
        default: w = snprintf(dst, room + 1, fmt, v->p); break;
        }
        if (w < 0) {
            /* Not representable (an invalid wide character): as glibc,
             * the conversion gives nothing. */
            dst[0] = 0;
            return;
        }
        if ((size_t)w <= room) {
            o->len += (size_t)w;
            return;
        }
        if (room == COSIM_LOG_MAX - o->len || attempt == 1) {
            o->len += room;
            o->buf[o->len] = 0;
            o->cut = 1;
            return;
        }
    }
}

/* The fetched arguments of a format with numbered arguments. */
typedef struct {
    value_t values[COSIM_LOG_MAX_ARGS];
} numbered_args;

/* Fetches every numbered argument of `format` in order of number, with
 * the type its conversions give it. Returns 0 if some argument up to the
 * highest number used has no type (it cannot be skipped) or two types. */
static int fetch_numbered(const char *format, va_list *ap, numbered_args *args) {
    arg_kind kinds[COSIM_LOG_MAX_ARGS];
    memset(kinds, 0, sizeof kinds); /* A_NONE: not seen */
    int top = 0, conversions = 0;
    for (const char *p = format; *p && conversions < COSIM_LOG_MAX_CONVERSIONS;) {
        if (*p != '%') {
            p++;
            continue;
        }
        spec_t s;
        int ok = parse_spec(p + 1, &s);
        if (ok <= 0) {
            if (ok < 0) break;
            p++;
            continue;
        }
        conversions++;
        p = s.end;
        if (s.numbered == 0 || (s.numbered == 1 && !fully_numbered(&s))) break;
        struct { int arg; arg_kind kind; } uses[3] = {
            {s.width_kind == STAR ? s.width_arg : -1, A_INT},
            {s.prec_kind == STAR ? s.prec_arg : -1, A_INT},
            {s.kind != A_NONE ? s.value_arg : -1, s.kind},
        };
        for (int i = 0; i < 3; i++) {
            int a = uses[i].arg;
            if (a < 0) continue;
            if (kinds[a] != A_NONE && kinds[a] != uses[i].kind) return 0;
            kinds[a] = uses[i].kind;
            if (a + 1 > top) top = a + 1;
        }
    }
    for (int a = 0; a < top; a++)
        if (kinds[a] == A_NONE) return 0;
    for (int a = 0; a < top; a++) fetch(ap, kinds[a], &args->values[a]);
    return 1;
}

/* Formats `format` with `ap` into `o`, within the bounds above. */
static void format_bounded(out_t *o, const char *format, va_list *ap) {
    numbered_args *args = NULL;
    int mode = -1; /* -1 not known yet, 0 unnumbered, 1 numbered */
    int conversions = 0;
    const char *p = format;
    while (*p && !o->cut) {
        const char *pct = strchr(p, '%');
        size_t literal = pct ? (size_t)(pct - p) : strlen(p);
        if (literal > COSIM_LOG_MAX) literal = COSIM_LOG_MAX + 1; /* cut anyway */
        out_text(o, p, literal);
        p += literal; /* (at the end when there is no '%': not cut then) */
        if (!pct || o->cut) break;
        spec_t s;
        int ok = parse_spec(p + 1, &s);
        if (ok == 0) {
            /* Unknown, or the format ends inside it: kept as text, as
             * glibc does. */
            out_text(o, "%", 1);
            p++;
            continue;
        }
        if (ok < 0 || conversions >= COSIM_LOG_MAX_CONVERSIONS) break;
        conversions++;
        if (s.numbered >= 0) {
            if (mode == -1) {
                mode = s.numbered;
                if (mode == 1) {
                    args = malloc(sizeof *args);
                    if (args == NULL || !fetch_numbered(format, ap, args)) break;
                }
            }
            if (s.numbered != mode || (mode == 1 && !fully_numbered(&s))) break;
        }
        long width = -1, prec = -1;
        value_t v;
        memset(&v, 0, sizeof v);
        if (mode == 1 && s.numbered == 1) {
            if (s.width_kind == STAR) width = args->values[s.width_arg].i;
            if (s.prec_kind == STAR) prec = args->values[s.prec_arg].i;
            if (s.kind != A_NONE) v = args->values[s.value_arg];
        } else {
            if (s.width_kind == STAR) width = va_arg(*ap, int);
            if (s.prec_kind == STAR) prec = va_arg(*ap, int);
            fetch(ap, s.kind, &v);
        }
        if (s.width_kind == LITERAL) width = s.width;
        if (s.prec_kind == LITERAL) prec = s.prec;
        if (prec < 0) prec = -1; /* a negative `*` precision: as if omitted */
        emit(o, &s, &v, width, prec);
        p = s.end;
    }
    if (*p && !o->cut) {
        /* Not formatted past here (mixed or unusable numbered arguments,
         * too many conversions): the rest as it is. */
        out_text(o, p, strnlen(p, COSIM_LOG_MAX + 1));
    }
    free(args);
}

void cosim_fmi2_logger(void *env, const char *instance_name, int status,
                       const char *category, const char *message, ...) {
    cosim_fmi2_env *e = (cosim_fmi2_env *)env;
    if (e == NULL || e->sink == NULL) {
        return;
    }
    if (message == NULL) {
        e->sink(e->ctx, instance_name, status, category, "", 0, 0);
        return;
    }
    out_t o;
    out_init(&o);
    va_list args;
    va_start(args, message);
    format_bounded(&o, message, &args);
    va_end(args);
    e->sink(e->ctx, instance_name, status, category, o.buf, o.len, o.cut);
    out_free(&o);
}
