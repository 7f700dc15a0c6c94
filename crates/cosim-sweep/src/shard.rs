//! `--shard auto`: the shard of a sweep from the environment of the engine
//! running it (a Slurm job array, a Kubernetes indexed Job).
//!
//! The functions take the environment as a lookup function, so they are
//! tested without touching the process environment.

use crate::Shard;

/// Slurm: this task's index in its job array.
pub const SLURM_TASK_ID: &str = "SLURM_ARRAY_TASK_ID";
/// Slurm: the array's smallest task index.
pub const SLURM_TASK_MIN: &str = "SLURM_ARRAY_TASK_MIN";
/// Slurm: the array's largest task index.
pub const SLURM_TASK_MAX: &str = "SLURM_ARRAY_TASK_MAX";
/// Slurm: how many tasks the array has.
pub const SLURM_TASK_COUNT: &str = "SLURM_ARRAY_TASK_COUNT";
/// Slurm: the step between task indices (`--array=1-9:2`).
pub const SLURM_TASK_STEP: &str = "SLURM_ARRAY_TASK_STEP";
/// Kubernetes: the index of this pod's completion in an indexed Job
/// (`completionMode: Indexed`), from 0.
pub const KUBERNETES_INDEX: &str = "JOB_COMPLETION_INDEX";

/// `--shard` as given: a fixed slice `K/N`, or `auto` (`auto/N` with the
/// count given) to take it from the engine's environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardArg {
    /// `K/N`.
    Fixed(Shard),
    /// `auto` or `auto/N`.
    Auto {
        /// `N` of `auto/N`.
        count: Option<usize>,
    },
}

impl std::str::FromStr for ShardArg {
    type Err = String;

    /// Parses `K/N`, `auto` or `auto/N`.
    fn from_str(s: &str) -> Result<ShardArg, String> {
        let t = s.trim();
        if t == "auto" {
            return Ok(ShardArg::Auto { count: None });
        }
        if let Some(n) = t.strip_prefix("auto/") {
            return match n.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(ShardArg::Auto { count: Some(n) }),
                _ => Err(format!(
                    "'{s}' is not a shard: expected auto/N with N >= 1 shards, e.g. auto/8"
                )),
            };
        }
        s.parse::<Shard>().map(ShardArg::Fixed).map_err(|e| {
            format!("{e}, or auto (from a Slurm job array or a Kubernetes indexed Job)")
        })
    }
}

impl std::fmt::Display for ShardArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShardArg::Fixed(s) => write!(f, "{}/{}", s.k, s.n),
            ShardArg::Auto { count: None } => write!(f, "auto"),
            ShardArg::Auto { count: Some(n) } => write!(f, "auto/{n}"),
        }
    }
}

/// A shard and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The slice.
    pub shard: Shard,
    /// The variables it was read from (`SLURM_ARRAY_TASK_ID=2 ...`);
    /// empty for `K/N`.
    pub source: String,
}

impl ShardArg {
    /// The shard, reading the engine's variables through `var` (for the
    /// process: `|name| std::env::var(name).ok()`; an empty value counts
    /// as unset).
    ///
    /// - `K/N`: as given.
    /// - A Slurm job array (`SLURM_ARRAY_TASK_ID` set): with `auto/N`,
    ///   the task index is the shard (`--array=1-N`; a subset resubmitted
    ///   with `--array=3,5` keeps its shards); with `auto`, the shard is
    ///   the task's position in the array's range
    ///   (`SLURM_ARRAY_TASK_MIN`, `SLURM_ARRAY_TASK_STEP`) and the count
    ///   `SLURM_ARRAY_TASK_COUNT` (or from `SLURM_ARRAY_TASK_MAX`), so
    ///   `--array=0-7` and `--array=1-8` both make 8 shards.
    /// - A Kubernetes indexed Job (`JOB_COMPLETION_INDEX`, from 0): shard
    ///   index + 1 of `N`, which `auto/N` must give (a pod does not see
    ///   the Job's completions).
    ///
    /// # Errors
    ///
    /// No engine variable is set (the message names them), a variable is
    /// not a number, the index lies outside the shards.
    pub fn resolve(&self, var: impl Fn(&str) -> Option<String>) -> Result<Resolved, String> {
        let count = match *self {
            ShardArg::Fixed(shard) => {
                return Ok(Resolved {
                    shard,
                    source: String::new(),
                });
            }
            ShardArg::Auto { count } => count,
        };
        let get = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let number = |name: &str| -> Result<Option<i64>, String> {
            get(name)
                .map(|v| {
                    v.trim()
                        .parse::<i64>()
                        .map_err(|_| format!("--shard {self}: {name}={v} is not a whole number"))
                })
                .transpose()
        };
        if let Some(id) = number(SLURM_TASK_ID)? {
            return slurm(self, id, count, &number);
        }
        if let Some(index) = number(KUBERNETES_INDEX)? {
            let Some(n) = count else {
                return Err(format!(
                    "--shard auto: {KUBERNETES_INDEX}={index} (a Kubernetes indexed Job) gives \
                     the shard but not how many there are: give --shard auto/N with N the \
                     Job's completions"
                ));
            };
            if index < 0 || index as u64 >= n as u64 {
                return Err(format!(
                    "--shard auto/{n}: {KUBERNETES_INDEX}={index} is not one of the {n} \
                     shards' indices 0..{}: the Job's completions must be {n}",
                    n - 1
                ));
            }
            return Ok(Resolved {
                shard: Shard {
                    k: index as usize + 1,
                    n,
                },
                source: format!("{KUBERNETES_INDEX}={index}"),
            });
        }
        Err(format!(
            "--shard {self}: no engine gives a shard here: none of {SLURM_TASK_ID} (a Slurm job \
             array, with {SLURM_TASK_MIN} and {SLURM_TASK_MAX} or {SLURM_TASK_COUNT}) or \
             {KUBERNETES_INDEX} (a Kubernetes indexed Job, with --shard auto/N) is set; \
             elsewhere (a CI matrix, GNU parallel) give --shard K/N"
        ))
    }
}

fn slurm(
    arg: &ShardArg,
    id: i64,
    count: Option<usize>,
    number: &dyn Fn(&str) -> Result<Option<i64>, String>,
) -> Result<Resolved, String> {
    if let Some(n) = count {
        if id < 1 || id as u64 > n as u64 {
            return Err(format!(
                "--shard {arg}: {SLURM_TASK_ID}={id} is not a shard of 1..{n}: with --shard \
                 auto/N the array's task indices are the shards (#SBATCH --array=1-{n})"
            ));
        }
        return Ok(Resolved {
            shard: Shard { k: id as usize, n },
            source: format!("{SLURM_TASK_ID}={id}"),
        });
    }
    let min = number(SLURM_TASK_MIN)?;
    let max = number(SLURM_TASK_MAX)?;
    let step = number(SLURM_TASK_STEP)?.unwrap_or(1);
    let total = number(SLURM_TASK_COUNT)?;
    let vars = || {
        let show = |name: &str, v: Option<i64>| {
            v.map_or(format!("{name} unset"), |v| format!("{name}={v}"))
        };
        [
            show(SLURM_TASK_ID, Some(id)),
            show(SLURM_TASK_MIN, min),
            show(SLURM_TASK_MAX, max),
            show(SLURM_TASK_STEP, Some(step)),
            show(SLURM_TASK_COUNT, total),
        ]
        .join(", ")
    };
    let Some(min) = min else {
        return Err(format!(
            "--shard auto: {}: the array's range is not known; give --shard auto/N \
             (task indices 1..N are the shards) or --shard K/N",
            vars()
        ));
    };
    if step < 1 {
        return Err(format!("--shard auto: {}: bad array step", vars()));
    }
    let from_max = max.map(|max| (max - min) / step + 1);
    let n = match (total, from_max) {
        (Some(c), Some(m)) if c != m => {
            return Err(format!(
                "--shard auto: {}: the array's task indices are not a range (--array=1-N or \
                 A-B:S); give --shard auto/N (task indices 1..N are the shards) or --shard K/N",
                vars()
            ));
        }
        (Some(c), _) | (None, Some(c)) => c,
        (None, None) => {
            return Err(format!(
                "--shard auto: {}: the array's size is not known; give --shard auto/N or \
                 --shard K/N",
                vars()
            ));
        }
    };
    let offset = id - min;
    if n < 1 || offset < 0 || offset % step != 0 || offset / step >= n {
        return Err(format!(
            "--shard auto: {}: the task is not in the array's range",
            vars()
        ));
    }
    Ok(Resolved {
        shard: Shard {
            k: (offset / step) as usize + 1,
            n: n as usize,
        },
        source: vars(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_string())
        }
    }

    fn auto(count: Option<usize>, pairs: &[(&str, &str)]) -> Result<Shard, String> {
        ShardArg::Auto { count }
            .resolve(env(pairs))
            .map(|r| r.shard)
    }

    fn shard(k: usize, n: usize) -> Shard {
        Shard { k, n }
    }

    #[test]
    fn parses_fixed_auto_and_auto_with_a_count() {
        assert_eq!("2/3".parse(), Ok(ShardArg::Fixed(shard(2, 3))));
        assert_eq!("auto".parse(), Ok(ShardArg::Auto { count: None }));
        assert_eq!("auto/8".parse(), Ok(ShardArg::Auto { count: Some(8) }));
        for bad in ["auto/0", "auto/x", "automatic", "0/3", "4/3", ""] {
            assert!(bad.parse::<ShardArg>().is_err(), "{bad}");
        }
        let e = "3".parse::<ShardArg>().unwrap_err();
        assert!(e.contains("K/N") && e.contains("auto"), "{e}");
        assert_eq!(ShardArg::Auto { count: Some(4) }.to_string(), "auto/4");
    }

    #[test]
    fn fixed_ignores_the_environment() {
        let r = ShardArg::Fixed(shard(1, 2))
            .resolve(env(&[(SLURM_TASK_ID, "5")]))
            .unwrap();
        assert_eq!(r.shard, shard(1, 2));
    }

    #[test]
    fn slurm_array_from_min_and_max_or_count() {
        // --array=1-4: task 3 is shard 3/4.
        let a = [
            (SLURM_TASK_ID, "3"),
            (SLURM_TASK_MIN, "1"),
            (SLURM_TASK_MAX, "4"),
            (SLURM_TASK_COUNT, "4"),
            (SLURM_TASK_STEP, "1"),
        ];
        assert_eq!(auto(None, &a), Ok(shard(3, 4)));
        // --array=0-7 (0-based): task 0 is shard 1/8.
        let b = [
            (SLURM_TASK_ID, "0"),
            (SLURM_TASK_MIN, "0"),
            (SLURM_TASK_MAX, "7"),
        ];
        assert_eq!(auto(None, &b), Ok(shard(1, 8)));
        // Count only.
        let c = [
            (SLURM_TASK_ID, "12"),
            (SLURM_TASK_MIN, "10"),
            (SLURM_TASK_COUNT, "5"),
        ];
        assert_eq!(auto(None, &c), Ok(shard(3, 5)));
        // --array=1-9:2 -> 1,3,5,7,9: task 7 is shard 4/5.
        let d = [
            (SLURM_TASK_ID, "7"),
            (SLURM_TASK_MIN, "1"),
            (SLURM_TASK_MAX, "9"),
            (SLURM_TASK_STEP, "2"),
            (SLURM_TASK_COUNT, "5"),
        ];
        assert_eq!(auto(None, &d), Ok(shard(4, 5)));
    }

    #[test]
    fn slurm_with_the_count_given_takes_the_task_index_as_the_shard() {
        // A resubmission of shard 3 of 4 alone (sbatch --array=3): the
        // array's range is 3-3, the shard still 3/4.
        let a = [
            (SLURM_TASK_ID, "3"),
            (SLURM_TASK_MIN, "3"),
            (SLURM_TASK_MAX, "3"),
            (SLURM_TASK_COUNT, "1"),
        ];
        assert_eq!(auto(Some(4), &a), Ok(shard(3, 4)));
        assert_eq!(auto(None, &a), Ok(shard(1, 1)));
        let e = auto(Some(4), &[(SLURM_TASK_ID, "0")]).unwrap_err();
        assert!(
            e.contains("SLURM_ARRAY_TASK_ID=0") && e.contains("--array=1-4"),
            "{e}"
        );
        assert!(auto(Some(4), &[(SLURM_TASK_ID, "5")]).is_err());
    }

    #[test]
    fn slurm_lists_and_missing_ranges_are_errors_naming_the_variables() {
        // --array=1,5,7: not a range.
        let a = [
            (SLURM_TASK_ID, "5"),
            (SLURM_TASK_MIN, "1"),
            (SLURM_TASK_MAX, "7"),
            (SLURM_TASK_COUNT, "3"),
        ];
        let e = auto(None, &a).unwrap_err();
        assert!(
            e.contains("not a range") && e.contains("SLURM_ARRAY_TASK_COUNT=3"),
            "{e}"
        );
        assert!(e.contains("auto/N"), "{e}");
        let e = auto(None, &[(SLURM_TASK_ID, "2")]).unwrap_err();
        assert!(e.contains("SLURM_ARRAY_TASK_MIN unset"), "{e}");
        let e = auto(None, &[(SLURM_TASK_ID, "2"), (SLURM_TASK_MIN, "1")]).unwrap_err();
        assert!(e.contains("size is not known"), "{e}");
        let e = auto(None, &[(SLURM_TASK_ID, "two")]).unwrap_err();
        assert!(
            e.contains("SLURM_ARRAY_TASK_ID=two is not a whole number"),
            "{e}"
        );
    }

    #[test]
    fn kubernetes_indexed_job_needs_the_count() {
        assert_eq!(auto(Some(4), &[(KUBERNETES_INDEX, "0")]), Ok(shard(1, 4)));
        assert_eq!(auto(Some(4), &[(KUBERNETES_INDEX, "3")]), Ok(shard(4, 4)));
        let e = auto(Some(4), &[(KUBERNETES_INDEX, "4")]).unwrap_err();
        assert!(e.contains("completions must be 4"), "{e}");
        let e = auto(None, &[(KUBERNETES_INDEX, "1")]).unwrap_err();
        assert!(
            e.contains("JOB_COMPLETION_INDEX=1") && e.contains("auto/N"),
            "{e}"
        );
    }

    #[test]
    fn slurm_before_kubernetes_and_unset_or_empty_is_an_error_naming_every_variable() {
        let both = [
            (SLURM_TASK_ID, "2"),
            (SLURM_TASK_MIN, "1"),
            (SLURM_TASK_MAX, "2"),
            (KUBERNETES_INDEX, "0"),
        ];
        assert_eq!(auto(None, &both), Ok(shard(2, 2)));
        for pairs in [&[][..], &[(SLURM_TASK_ID, ""), (KUBERNETES_INDEX, " ")][..]] {
            let e = auto(None, pairs).unwrap_err();
            for name in [
                SLURM_TASK_ID,
                SLURM_TASK_MIN,
                SLURM_TASK_MAX,
                SLURM_TASK_COUNT,
                KUBERNETES_INDEX,
            ] {
                assert!(e.contains(name), "{name} in {e}");
            }
            assert!(e.contains("--shard K/N"), "{e}");
        }
    }

    #[test]
    fn the_source_names_the_variables_read() {
        let r = ShardArg::Auto { count: Some(3) }
            .resolve(env(&[(SLURM_TASK_ID, "2")]))
            .unwrap();
        assert_eq!(r.source, "SLURM_ARRAY_TASK_ID=2");
        let r = ShardArg::Auto { count: Some(3) }
            .resolve(env(&[(KUBERNETES_INDEX, "2")]))
            .unwrap();
        assert_eq!(
            (r.shard, r.source.as_str()),
            (shard(3, 3), "JOB_COMPLETION_INDEX=2")
        );
    }
}
