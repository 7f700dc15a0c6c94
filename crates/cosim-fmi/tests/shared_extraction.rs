//! The extraction the processes of a machine share
//! (`cosim_fmi::extraction::shared_dir`): made once, held by every user,
//! removed by the last; one nobody holds goes with the next cleanup; a
//! failed one leaves nothing. (Its own test process: the extractions go
//! into the temporary directory, under keys of their own. `flock` locks
//! belong to an open file, so two users in one process are as two
//! processes.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io;
use std::path::{Path, PathBuf};

use cosim_fmi::extraction::{SharedDir, remove_orphaned, shared_dir};

/// A key no other run of this test uses.
fn key(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("test{name}{}x{nanos}", std::process::id())
}

fn lock_of(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().unwrap().to_os_string();
    name.push(".lock");
    dir.with_file_name(name)
}

/// The shared extraction under `key`, counting the extractions in `made`.
fn share(key: &str, made: &mut usize) -> SharedDir {
    let mut extract = |dir: &Path| -> io::Result<()> {
        *made += 1;
        std::fs::write(dir.join("modelDescription.xml"), "<fmiModelDescription/>")
    };
    shared_dir(key, &mut extract, |e| e).unwrap().unwrap()
}

#[test]
fn a_shared_extraction_is_made_once_and_removed_by_its_last_user() {
    let k = key("once");
    let mut made = 0;
    let a = share(&k, &mut made);
    let b = share(&k, &mut made);
    assert_eq!(made, 1);
    assert_eq!(a.path(), b.path());
    assert!(a.path().join("modelDescription.xml").is_file());
    let path = a.path().to_path_buf();
    drop(a);
    assert!(path.join("modelDescription.xml").is_file(), "still used");
    // The cleanup after a dead process leaves one in use alone.
    remove_orphaned(&path);
    assert!(path.join("modelDescription.xml").is_file());
    drop(b);
    assert!(!path.exists());
    assert!(!lock_of(&path).exists());
    // Made anew after.
    let c = share(&k, &mut made);
    assert_eq!(made, 2);
    drop(c);
    assert!(!path.exists());
}

#[test]
fn one_nobody_holds_goes_with_the_next_cleanup() {
    // As a killed process leaves it: complete, its lock file free.
    let k = key("left");
    let mut made = 0;
    let a = share(&k, &mut made);
    let path = a.path().to_path_buf();
    let copy = path.with_file_name(format!("{}-copy", k));
    std::fs::create_dir(&copy).unwrap();
    for entry in std::fs::read_dir(&path).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
    }
    drop(a);
    std::fs::rename(&copy, &path).unwrap();
    std::fs::write(lock_of(&path), "").unwrap();
    // A new user takes it as it is.
    let b = share(&k, &mut made);
    assert_eq!(made, 1, "a complete one is not extracted again");
    drop(b);
    assert!(!path.exists());
    // Left again, then cleaned up.
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join(".cosim-extracted"), "").unwrap();
    std::fs::write(lock_of(&path), "").unwrap();
    remove_orphaned(&path);
    assert!(!path.exists());
    assert!(!lock_of(&path).exists());
}

#[test]
fn a_failed_extraction_leaves_nothing_and_says_why() {
    let k = key("fail");
    let mut failing = |_: &Path| -> io::Result<()> { Err(io::Error::other("a bad archive")) };
    let e = shared_dir(&k, &mut failing, |e| e).unwrap_err();
    assert_eq!(e.to_string(), "a bad archive");
    let path = std::env::temp_dir().join(format!("cosim-fmu-shared{k}"));
    assert!(!path.exists());
    assert!(!lock_of(&path).exists());
}
