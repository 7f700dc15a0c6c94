//! The FMI 2 logger's C shim (`c/fmi2_logger.c`) against glibc's own
//! formatting, and against formats whose full expansion would cost
//! gigabytes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ffi::{c_char, c_int, c_long, c_void};

use super::{ShimEnv, cosim_fmi2_logger, log_sink};
use crate::ffi::log::LogContext;
use crate::text::LOG_MESSAGE_MAX;

/// What the shim hands the instance's log for one call of the logger made
/// by `call` (given the environment to pass): the message as kept.
fn logged(call: impl FnOnce(*mut c_void)) -> String {
    let log = LogContext::new("t");
    let mut env = ShimEnv {
        sink: log_sink,
        ctx: &log as *const LogContext as *mut c_void,
    };
    call(&mut env as *mut ShimEnv as *mut c_void);
    let mut lines = log.take_recent();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = lines.remove(0);
    line.strip_prefix("[Warning] cat: ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_string()
}

/// What the shim keeps of `format` logged with the arguments.
macro_rules! via_shim {
    ($format:expr $(, $arg:expr)* $(,)?) => {
        logged(|env| {
            // SAFETY: the environment is the shim's; the arguments match the
            // format's conversions.
            unsafe { cosim_fmi2_logger(env, c"t".as_ptr(), 1, c"cat".as_ptr(), $format.as_ptr() $(, $arg)*) }
        })
    };
}

/// Logs `format` with the arguments through the shim, and formats it with
/// glibc's `snprintf`; both must give the same text.
macro_rules! same_as_glibc {
    ($format:literal $(, $arg:expr)* $(,)?) => {{
        let mut reference = vec![0u8; 4096];
        // SAFETY: the arguments match the format's conversions; the
        // buffer holds 4096 bytes.
        let n = unsafe {
            libc::snprintf(reference.as_mut_ptr().cast::<c_char>(), reference.len(), $format.as_ptr() $(, $arg)*)
        };
        reference.truncate(usize::try_from(n).unwrap());
        let reference = String::from_utf8(reference).unwrap();
        let shim = via_shim!($format $(, $arg)*);
        assert_eq!(shim, reference, "{:?}", $format);
    }};
}

#[test]
fn ordinary_formats_give_what_glibc_gives() {
    let s = c"hello".as_ptr();
    same_as_glibc!(c"plain text, 100%% sure");
    same_as_glibc!(
        c"%d %i %u %o %x %X",
        -5 as c_int,
        7 as c_int,
        9 as c_int,
        8 as c_int,
        255 as c_int,
        255 as c_int
    );
    same_as_glibc!(
        c"%5d|%-5d|%05d|%+d|% d|%'d",
        42 as c_int,
        42 as c_int,
        42 as c_int,
        42 as c_int,
        42 as c_int,
        1234567 as c_int
    );
    same_as_glibc!(
        c"%hhd %hd %ld %lld %zu %jd %td",
        300 as c_int,
        70000 as c_int,
        -5 as c_long,
        -6i64,
        8usize,
        -7i64,
        -9isize
    );
    same_as_glibc!(
        c"%c%c|%5c|%-3c|",
        'a' as c_int,
        'b' as c_int,
        'c' as c_int,
        'd' as c_int
    );
    same_as_glibc!(c"%s %.2s %10s|%-10s|%.*s", s, s, s, s, 3 as c_int, s);
    same_as_glibc!(
        c"%f %.3f %10.2f %-10.1e|%g %G %a %E %F",
        1.23456f64,
        2.5f64,
        -1.25f64,
        1e10f64,
        1e-5f64,
        1e20f64,
        1.0f64,
        1e-300f64,
        1e300f64
    );
    same_as_glibc!(
        c"%p %#x %#o %#g",
        0x1234usize as *const c_void,
        255 as c_int,
        8 as c_int,
        1.0f64
    );
    same_as_glibc!(
        c"%*d|%-*d|%*d|%.*f|%.*f",
        6 as c_int,
        1 as c_int,
        6 as c_int,
        2 as c_int,
        -6 as c_int,
        3 as c_int,
        2 as c_int,
        1.23456f64,
        -1 as c_int,
        2.5f64
    );
    // Numbered arguments, used in any order and more than once.
    same_as_glibc!(c"%2$s, %1$s: %2$s", c"world".as_ptr(), s);
    same_as_glibc!(c"%1$*2$d|%1$-*2$d|%3$.*2$f", 5 as c_int, 8 as c_int, 3.5f64);
    same_as_glibc!(c"%s", std::ptr::null::<c_char>());
    same_as_glibc!(c"unknown %y conversion %d, and a trailing %", 5 as c_int);
}

/// `%n` would make the logger write into the FMU's memory: the shim
/// consumes its argument and writes nothing.
#[test]
fn percent_n_writes_nothing() {
    let mut n: c_int = -1;
    let text = via_shim!(c"ab%ncd %d", &mut n as *mut c_int, 7 as c_int);
    assert_eq!(text, "abcd 7");
    assert_eq!(n, -1);
}

/// Formats whose full expansion is 900 MB (glibc takes seconds walking a
/// width, and allocates 4.4 GB for a floating-point precision), through
/// literal widths and precisions and `*` arguments, and a 4 MB string: each
/// gives at most `LOG_MESSAGE_MAX` bytes of text, cut with a note, and the
/// process grows by far less than one expansion.
#[test]
fn a_huge_width_or_precision_is_not_expanded_and_the_message_is_cut() {
    let long = std::ffi::CString::new(vec![b'x'; 4 << 20]).unwrap();
    let note = format!(" ... [message cut at {LOG_MESSAGE_MAX} bytes]");
    let before = max_rss_kib();
    let messages = [
        via_shim!(c"w %900000000d", 42 as c_int),
        via_shim!(c"p %.900000000f", 3.25f64),
        via_shim!(c"pe %.900000000e", 3.25f64),
        via_shim!(c"sw %*d", 900000000 as c_int, 7 as c_int),
        via_shim!(
            c"sp %.*g %.*f",
            900000000 as c_int,
            1.5f64,
            900000000 as c_int,
            2.5f64
        ),
        via_shim!(c"n %2$.*1$f", 900000000 as c_int, 2.5f64),
        via_shim!(c"s %s END", long.as_ptr()),
        via_shim!(long.as_c_str()),
    ];
    let grown = max_rss_kib().saturating_sub(before);
    for (i, m) in messages.iter().enumerate() {
        assert!(
            m.ends_with(&note),
            "{i}: ...{}",
            &m[m.len().saturating_sub(80)..]
        );
        assert_eq!(m.len(), LOG_MESSAGE_MAX + note.len(), "{i}");
    }
    assert!(messages[0].starts_with("w      "), "{}", &messages[0][..20]);
    assert!(
        messages[1].starts_with("p 3.250000"),
        "{}",
        &messages[1][..20]
    );
    assert!(
        messages[6].starts_with("s xxxxxxxx"),
        "{}",
        &messages[6][..20]
    );
    assert!(grown < 256 * 1024, "the process grew by {grown} KiB");
}

/// The process's peak resident memory so far.
fn max_rss_kib() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    // SAFETY: zero-initialised, then filled.
    let usage = unsafe { usage.assume_init() };
    u64::try_from(usage.ru_maxrss).unwrap_or(0)
}

/// FMI 3's logger gets a finished string: it is read no further than the
/// bound (a message of 4 MB is cut with the note), and so is a category.
#[test]
fn an_fmi3_message_and_any_category_are_read_no_further_than_their_bound() {
    let long = std::ffi::CString::new(vec![b'y'; 4 << 20]).unwrap();
    let log = LogContext::new("t");
    // SAFETY: both strings are NUL-terminated and live during the call.
    unsafe {
        log.log_c(
            super::Status::Warning,
            long.as_ptr(),
            long.as_ptr(),
            None,
            false,
        )
    };
    let line = log.take_recent().remove(0);
    let category = format!("{} ... [category cut at 256 bytes]", "y".repeat(256));
    let message = format!(
        "{} ... [message cut at {LOG_MESSAGE_MAX} bytes]",
        "y".repeat(LOG_MESSAGE_MAX)
    );
    assert_eq!(line, format!("[Warning] {category}: {message}"));
}
