//! Entries the central directory of an archive lists more than once.
//!
//! The zip reader keeps one entry per name (the last copy's data under the
//! first copy's position), so whether the copies agree is decided here.
//! Packers write the same file twice by accident (the Modelica Reference
//! FMUs' CMake names `extra` twice to `cmake -E tar`, so every file under
//! it is there twice, byte for byte): copies with the same bytes cannot
//! make two readers disagree, and count as one entry, with a warning.
//! Copies whose bytes differ can (one reader takes the first, another the
//! last): the archive is refused.
//!
//! The central directory is read record by record ("APPNOTE.TXT - .ZIP
//! File Format Specification", 4.3.12 central directory file header,
//! 4.5.3 Zip64 extended information extra field): the zip reader has
//! merged the records, and with them the copies' offsets. Each copy is then
//! read from its own local header with the zip crate's decompression and
//! CRC check, with the sizes and CRC the central directory gives it (a
//! copy written with a data descriptor has none in its local header).
//! Sizes are counted on the bytes decompressed, within the archive limits.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use zip::CompressionMethod;
use zip::read::{ZipReadOptions, read_zipfile_from_stream_with_options};

use super::{ArchiveLimits, DUPLICATE};
use crate::error::{FmiError, Result};

/// One record of the central directory: what a copy needs to be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Record {
    pub(super) name: Vec<u8>,
    /// The file type of the Unix mode in the external attributes (a
    /// regular file where the entry has none): a symbolic link and a file
    /// holding the link's target are different entries.
    kind: u32,
    method: u16,
    crc: u32,
    compressed: u64,
    size: u64,
    /// The local header's offset from the start of the zip data.
    offset: u64,
}

impl Record {
    /// A directory (its name ends with a separator): listed twice, it is
    /// created once, whatever else differs.
    fn is_dir(&self) -> bool {
        self.name.ends_with(b"/") || self.name.ends_with(b"\\")
    }
}

/// The records of the central directory that starts at `start`, in order;
/// `None` when there are more than `max_entries`.
pub(super) fn central_records<R: Read + Seek>(
    reader: &mut R,
    start: u64,
    max_entries: usize,
) -> io::Result<Option<Vec<Record>>> {
    const SIGNATURE: [u8; 4] = *b"PK\x01\x02";
    reader.seek(SeekFrom::Start(start))?;
    let mut records = Vec::new();
    for _ in 0..=max_entries {
        let mut signature = [0u8; 4];
        reader.read_exact(&mut signature)?;
        if signature != SIGNATURE {
            return Ok(Some(records));
        }
        // The 42 bytes after the signature (offsets below are the
        // specification's minus 4).
        let mut header = [0u8; 42];
        reader.read_exact(&mut header)?;
        let u16_at = |at: usize| {
            u16::from_le_bytes([
                header.get(at).copied().unwrap_or_default(),
                header.get(at + 1).copied().unwrap_or_default(),
            ])
        };
        let u32_at = |at: usize| u32::from(u16_at(at)) | (u32::from(u16_at(at + 2)) << 16);
        let mut name = vec![0u8; usize::from(u16_at(24))];
        reader.read_exact(&mut name)?;
        let mut extra = vec![0u8; usize::from(u16_at(26))];
        reader.read_exact(&mut extra)?;
        reader.seek(SeekFrom::Current(i64::from(u16_at(28))))?;
        // The upper byte of "version made by" is the system: 3 Unix, 19 OS X.
        let unix = matches!(u16_at(0) >> 8, 3 | 19);
        let mode = if unix {
            (u32_at(34) >> 16) & 0o170_000
        } else {
            0
        };
        let (size, compressed, offset) = zip64_values(&extra, [u32_at(20), u32_at(16), u32_at(38)]);
        records.push(Record {
            name,
            kind: if mode == 0 { 0o100_000 } else { mode },
            method: u16_at(6),
            crc: u32_at(12),
            compressed,
            size,
            offset,
        });
    }
    Ok(None)
}

/// The uncompressed size, the compressed size and the local header offset
/// of a record: the 32-bit values of its header, each replaced by the next
/// 64-bit value of its Zip64 extra field (id 1) where it is `0xFFFFFFFF`,
/// in that order.
fn zip64_values(extra: &[u8], values: [u32; 3]) -> (u64, u64, u64) {
    let mut wide = values.map(u64::from);
    let mut rest = extra;
    while let [a, b, c, d, tail @ ..] = rest {
        let id = u16::from_le_bytes([*a, *b]);
        let len = usize::from(u16::from_le_bytes([*c, *d]));
        let data = tail.get(..len).unwrap_or(tail);
        if id == 1 {
            let mut fields = data.chunks_exact(8).map(|chunk| {
                let mut eight = [0u8; 8];
                eight.copy_from_slice(chunk);
                u64::from_le_bytes(eight)
            });
            for (value, narrow) in wide.iter_mut().zip(values) {
                if narrow == u32::MAX
                    && let Some(v) = fields.next()
                {
                    *value = v;
                }
            }
            break;
        }
        rest = tail.get(len..).unwrap_or_default();
    }
    (wide[0], wide[1], wide[2])
}

/// For every file the central directory of `archive` lists more than once:
/// are its copies the same bytes? Returns the names of those that are (one
/// entry each; the zip reader kept one copy) and refuses, naming the
/// entry, one whose copies differ, or that cannot be compared within
/// `limits`. `records` are those of [`central_records`], `zip_offset` the
/// bytes before the zip data (a self-extracting archive's stub).
pub(super) fn identical_copies(
    archive: &Path,
    records: &[Record],
    zip_offset: u64,
    limits: &ArchiveLimits,
) -> Result<Vec<String>> {
    let mut copies: HashMap<&[u8], Vec<&Record>> = HashMap::new();
    let mut order: Vec<&[u8]> = Vec::new();
    for record in records.iter().filter(|r| !r.is_dir()) {
        let listed = copies.entry(&record.name).or_default();
        if listed.len() == 1 {
            order.push(&record.name);
        }
        listed.push(record);
    }
    let mut budget = Budget {
        left: limits.max_total_size,
        total: limits.max_total_size,
    };
    let mut identical = Vec::new();
    for name in order {
        let shown = String::from_utf8_lossy(name).into_owned();
        let refuse = |reason: String| FmiError::Archive {
            archive: archive.to_path_buf(),
            entry: Some(shown.clone()),
            reason,
        };
        let listed = copies.get(name).map(Vec::as_slice).unwrap_or_default();
        let Some((first, others)) = listed.split_first() else {
            continue;
        };
        for other in others {
            if other.kind != first.kind {
                return Err(refuse(DUPLICATE.to_string()));
            }
            match same_bytes(archive, zip_offset, first, other, limits, &mut budget)
                .map_err(&refuse)?
            {
                true => {}
                false => return Err(refuse(DUPLICATE.to_string())),
            }
        }
        warn_once(archive, &shown, listed.len());
        identical.push(shown);
    }
    Ok(identical)
}

/// Warns that `archive` holds `copies` identical copies of `entry`, once
/// per process: a sweep opens its FMUs for every run, and an SSP's are
/// read by the importer before the run opens them.
fn warn_once(archive: &Path, entry: &str, copies: usize) {
    static WARNED: Mutex<BTreeSet<(PathBuf, String)>> = Mutex::new(BTreeSet::new());
    let first = WARNED
        .lock()
        .map(|mut warned| warned.insert((archive.to_path_buf(), entry.to_string())))
        .unwrap_or(true);
    if first {
        tracing::warn!(
            "{}: entry '{entry}': the archive holds {copies} identical copies of this entry; using one",
            archive.display()
        );
    }
}

/// The decompressed bytes all comparisons of an archive may read.
struct Budget {
    left: u64,
    total: u64,
}

/// Whether the copies `a` and `b` decompress to the same bytes; `Err` is
/// the reason to refuse the entry (a copy corrupt, or past a limit).
fn same_bytes(
    archive: &Path,
    zip_offset: u64,
    a: &Record,
    b: &Record,
    limits: &ArchiveLimits,
    budget: &mut Budget,
) -> std::result::Result<bool, String> {
    let cannot_read = |e: &dyn std::fmt::Display| format!("corrupt entry (one of its copies): {e}");
    let open = || {
        File::open(archive)
            .map(BufReader::new)
            .map_err(|e| format!("cannot read the archive again: {e}"))
    };
    let (mut file_a, mut file_b) = (open()?, open()?);
    let mut copy_a = open_copy(&mut file_a, zip_offset, a).map_err(|e| cannot_read(&e))?;
    let mut copy_b = open_copy(&mut file_b, zip_offset, b).map_err(|e| cannot_read(&e))?;
    let mut buf_a = vec![0u8; 64 * 1024];
    let mut buf_b = vec![0u8; 64 * 1024];
    let mut read: u64 = 0;
    loop {
        let n = copy_a.read(&mut buf_a).map_err(|e| cannot_read(&e))?;
        let chunk_a = buf_a.get(..n).unwrap_or_default();
        let chunk_b = buf_b.get_mut(..n).unwrap_or_default();
        if n == 0 {
            // The same length too: `b` ends here (its CRC checked as it ends).
            let more = copy_b.read(&mut buf_b).map_err(|e| cannot_read(&e))?;
            return Ok(more == 0);
        }
        read += n as u64;
        if read > limits.max_entry_size {
            return Err(format!(
                "the entry decompresses to more than the limit of {} bytes per entry (zip bomb?)",
                limits.max_entry_size
            ));
        }
        let both = 2 * n as u64;
        if budget.left < both {
            return Err(format!(
                "the copies of the entries listed twice decompress to more than the limit of {} bytes in total (zip bomb?)",
                budget.total
            ));
        }
        budget.left -= both;
        match copy_b.read_exact(chunk_b) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(false),
            Err(e) => return Err(cannot_read(&e)),
        }
        if chunk_a != &*chunk_b {
            return Ok(false);
        }
    }
}

/// A reader of the decompressed bytes of the copy `record` describes, from
/// its local header on, with the sizes and CRC of its central directory
/// record; refused when the local header does not say the compression
/// method the central directory does.
fn open_copy<'a>(
    reader: &'a mut BufReader<File>,
    zip_offset: u64,
    record: &Record,
) -> std::result::Result<zip::read::ZipFile<'a, BufReader<File>>, String> {
    let at = zip_offset
        .checked_add(record.offset)
        .ok_or("its local header offset is out of range")?;
    reader
        .seek(SeekFrom::Start(at))
        .map_err(|e| e.to_string())?;
    let options = ZipReadOptions::new()
        .override_compressed_size(record.compressed)
        .override_uncompressed_size(record.size)
        .override_crc(record.crc);
    let copy = read_zipfile_from_stream_with_options(reader, options)
        .map_err(|e| e.to_string())?
        .ok_or("the central directory points at no local header")?;
    let method = match copy.compression() {
        CompressionMethod::Stored => Some(0),
        CompressionMethod::Deflated => Some(8),
        _ => None,
    };
    if method != Some(record.method) {
        return Err(format!(
            "compression method {} is not supported, or its local header says another",
            record.method
        ));
    }
    Ok(copy)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use std::io::Write;

    use zip::write::SimpleFileOptions;

    use super::*;

    /// A zip of `entries` (name, bytes, compression method) in which the
    /// names, written under same-length aliases `X...`, are then rewritten
    /// to `name` in the local headers and the central directory: the zip
    /// writer refuses duplicate names.
    fn zip_with_copies(path: &Path, name: &str, copies: &[(&[u8], CompressionMethod)]) {
        let mut zip = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        let stored = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
        zip.start_file("modelDescription.xml", stored).unwrap();
        zip.write_all(b"<fmiModelDescription/>").unwrap();
        let aliases: Vec<String> = (0..copies.len())
            .map(|i| format!("{}{i}", &name[..name.len() - 1]))
            .collect();
        for ((data, method), alias) in copies.iter().zip(&aliases) {
            let options = SimpleFileOptions::default().compression_method(*method);
            zip.start_file(alias.as_str(), options).unwrap();
            zip.write_all(data).unwrap();
        }
        let mut bytes = zip.finish().unwrap().into_inner();
        for alias in &aliases {
            let mut replaced = 0;
            let mut i = 0;
            while i + alias.len() <= bytes.len() {
                if &bytes[i..i + alias.len()] == alias.as_bytes() {
                    bytes[i..i + alias.len()].copy_from_slice(name.as_bytes());
                    replaced += 1;
                }
                i += 1;
            }
            assert_eq!(replaced, 2, "{alias}: local header and central directory");
        }
        std::fs::write(path, bytes).unwrap();
    }

    fn check(path: &Path, limits: &ArchiveLimits) -> Result<Vec<String>> {
        let mut reader = BufReader::new(File::open(path).unwrap());
        let zip = zip::ZipArchive::new(BufReader::new(File::open(path).unwrap())).unwrap();
        assert!(zip.has_duplicate_names());
        let records = central_records(&mut reader, zip.central_directory_start(), 100)
            .unwrap()
            .unwrap();
        identical_copies(path, &records, zip.offset(), limits)
    }

    fn refusal(result: Result<Vec<String>>) -> (Option<String>, String) {
        match result {
            Err(FmiError::Archive { entry, reason, .. }) => (entry, reason),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    const NAME: &str = "extra/x/fmi-ls-manifest.xml";

    /// A stored and a deflated copy of the same bytes are the same entry:
    /// the bytes are compared, not the headers.
    #[test]
    fn stored_and_deflated_copies_of_the_same_bytes_are_identical() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.fmu");
        let text = "<fmiLayeredStandardManifest/>\n".repeat(5000);
        zip_with_copies(
            &path,
            NAME,
            &[
                (text.as_bytes(), CompressionMethod::Stored),
                (text.as_bytes(), CompressionMethod::Deflated),
                (text.as_bytes(), CompressionMethod::Deflated),
            ],
        );
        assert_eq!(check(&path, &ArchiveLimits::default()).unwrap(), [NAME]);
    }

    /// Copies that differ anywhere (one byte in the middle, a byte more at
    /// the end, one empty) are refused naming the entry, whatever their
    /// compression.
    #[test]
    fn copies_that_differ_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let text = "<fmiLayeredStandardManifest/>\n".repeat(5000).into_bytes();
        let mut middle = text.clone();
        middle[70_000] ^= 1;
        let mut longer = text.clone();
        longer.push(b'\n');
        let cases: [(&[u8], CompressionMethod); 4] = [
            (&middle, CompressionMethod::Deflated),
            (&middle, CompressionMethod::Stored),
            (&longer, CompressionMethod::Deflated),
            (b"", CompressionMethod::Stored),
        ];
        for (i, (other, method)) in cases.into_iter().enumerate() {
            let path = dir.path().join(format!("d{i}.fmu"));
            zip_with_copies(
                &path,
                NAME,
                &[(&text, CompressionMethod::Deflated), (other, method)],
            );
            let (entry, reason) = refusal(check(&path, &ArchiveLimits::default()));
            assert_eq!(entry.as_deref(), Some(NAME), "case {i}");
            assert_eq!(reason, DUPLICATE, "case {i}");
        }
    }

    /// The same CRC and size are not enough: two different texts of one
    /// length and CRC (the first one's CRC forced onto the second's record,
    /// as a CRC collision would have it) are refused.
    #[test]
    fn copies_are_compared_by_their_bytes_not_their_headers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crc.fmu");
        zip_with_copies(
            &path,
            NAME,
            &[
                (b"first text", CompressionMethod::Stored),
                (b"other text", CompressionMethod::Stored),
            ],
        );
        let mut reader = BufReader::new(File::open(&path).unwrap());
        let zip = zip::ZipArchive::new(BufReader::new(File::open(&path).unwrap())).unwrap();
        let mut records = central_records(&mut reader, zip.central_directory_start(), 100)
            .unwrap()
            .unwrap();
        let crc = records[1].crc;
        records[2].crc = crc;
        let (entry, reason) = refusal(identical_copies(
            &path,
            &records,
            0,
            &ArchiveLimits::default(),
        ));
        assert_eq!(entry.as_deref(), Some(NAME));
        assert_eq!(reason, DUPLICATE);
    }

    /// The limits bound the comparison: a copy past the per-entry limit,
    /// or copies past the total, are refused as a zip bomb would be.
    #[test]
    fn the_comparison_keeps_to_the_limits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.fmu");
        let zeros = vec![0u8; 200_000];
        zip_with_copies(
            &path,
            NAME,
            &[
                (&zeros, CompressionMethod::Deflated),
                (&zeros, CompressionMethod::Deflated),
            ],
        );
        let per_entry = ArchiveLimits {
            max_entry_size: 100_000,
            ..ArchiveLimits::default()
        };
        let (entry, reason) = refusal(check(&path, &per_entry));
        assert_eq!(entry.as_deref(), Some(NAME));
        assert!(
            reason.contains("limit of 100000 bytes per entry"),
            "{reason}"
        );
        let total = ArchiveLimits {
            max_total_size: 300_000,
            ..ArchiveLimits::default()
        };
        let (_, reason) = refusal(check(&path, &total));
        assert!(
            reason.contains("limit of 300000 bytes in total"),
            "{reason}"
        );
        assert_eq!(check(&path, &ArchiveLimits::default()).unwrap(), [NAME]);
    }

    /// Zip64 sizes and offsets replace the 32-bit ones that are all ones,
    /// in their order, and only those.
    #[test]
    fn zip64_values_replace_the_saturated_ones() {
        let mut extra = vec![9, 0, 2, 0, 0xAA, 0xBB];
        extra.extend_from_slice(&[1, 0, 16, 0]);
        extra.extend_from_slice(&(5u64 << 32).to_le_bytes());
        extra.extend_from_slice(&(7u64 << 32).to_le_bytes());
        assert_eq!(
            zip64_values(&extra, [u32::MAX, 3, u32::MAX]),
            (5 << 32, 3, 7 << 32)
        );
        assert_eq!(zip64_values(&[], [1, 2, 3]), (1, 2, 3));
    }
}
