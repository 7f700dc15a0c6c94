//! A queue of rows of numbers, each row the same width, from the stepping
//! thread to the writer thread ([`super::RowRing`]).
//!
//! Why not a general ring (`rtrb`, which the project used before): its
//! write of a chunk of any length, which may wrap around the end, took
//! about 50 instructions for a trace's row of two numbers written after
//! every quiet step, a third of what such a row cost the stepping thread
//! (`bench/results/issue42-trace-row-direct.md`). Here a row never wraps
//! (the slots are whole rows), the free rows are counted down without
//! looking at the reader, and a row is a relaxed store per number and one
//! release store of the row count; no `unsafe`: the slots are atomic words.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A counter alone on its cache line (the two sides' counters do not
/// share one).
#[repr(align(64))]
struct Padded(AtomicUsize);

struct Slots {
    /// `rows` rows of `width` numbers (their bits).
    values: Box<[AtomicU64]>,
    width: usize,
    rows: usize,
    /// Rows written, ever (the writer side's count).
    written: Padded,
    /// Rows read, ever (the reader side's count).
    read: Padded,
}

/// A ring of `rows` rows (at least one) of `width` numbers.
pub(super) fn row_ring(width: usize, rows: usize) -> (RowProducer, RowConsumer) {
    let rows = rows.max(1);
    let slots = Arc::new(Slots {
        values: (0..width * rows).map(|_| AtomicU64::new(0)).collect(),
        width,
        rows,
        written: Padded(AtomicUsize::new(0)),
        read: Padded(AtomicUsize::new(0)),
    });
    (
        RowProducer {
            slots: Arc::clone(&slots),
            written: 0,
            next: 0,
            free: rows,
        },
        RowConsumer {
            slots,
            read: 0,
            next: 0,
        },
    )
}

/// The writing side.
pub(super) struct RowProducer {
    slots: Arc<Slots>,
    /// Rows written.
    written: usize,
    /// The slot row the next row goes to.
    next: usize,
    /// Rows free as last seen (the reader may have freed more since).
    free: usize,
}

impl RowProducer {
    /// Writes `row` (its width) and publishes it; false, with nothing
    /// written, when the ring is full.
    #[inline(always)]
    pub(super) fn try_push(&mut self, row: &[f64]) -> bool {
        debug_assert_eq!(row.len(), self.slots.width);
        self.try_push_with(|cells| {
            for (cell, v) in cells.iter().zip(row) {
                cell.store(v.to_bits(), Ordering::Relaxed);
            }
        })
    }

    /// Has `fill` write a row into its cells (every one of them: a
    /// number's bits, relaxed), then publishes it; false, with `fill`
    /// not called, when the ring is full.
    #[inline(always)]
    pub(super) fn try_push_with(&mut self, fill: impl FnOnce(&[AtomicU64])) -> bool {
        if self.free == 0 && self.look() == 0 {
            return false;
        }
        let s = &*self.slots;
        let start = self.next * s.width;
        if let Some(cells) = s.values.get(start..start + s.width) {
            fill(cells);
        }
        self.next = if self.next + 1 == s.rows {
            0
        } else {
            self.next + 1
        };
        self.free -= 1;
        self.written += 1;
        // (The row's numbers become visible with the count: Release.)
        s.written.0.store(self.written, Ordering::Release);
        true
    }

    /// Rows free now (a look at the reader's count), remembered.
    #[inline(never)]
    pub(super) fn look(&mut self) -> usize {
        let read = self.slots.read.0.load(Ordering::Acquire);
        self.free = self.slots.rows - (self.written - read);
        self.free
    }

    /// The ring's size in rows.
    pub(super) fn rows(&self) -> usize {
        self.slots.rows
    }
}

/// The reading side.
pub(super) struct RowConsumer {
    slots: Arc<Slots>,
    /// Rows read.
    read: usize,
    /// The slot row the next row is read from.
    next: usize,
}

impl RowConsumer {
    /// Rows written and not yet read.
    pub(super) fn waiting(&self) -> usize {
        self.slots.written.0.load(Ordering::Acquire) - self.read
    }

    /// Hands each row waiting to `f` (through `row`, reused), then frees
    /// their slots.
    pub(super) fn drain(&mut self, row: &mut Vec<f64>, mut f: impl FnMut(&[f64])) {
        let n = self.waiting();
        let s = &*self.slots;
        for _ in 0..n {
            let start = self.next * s.width;
            row.clear();
            row.extend(
                s.values[start..start + s.width]
                    .iter()
                    .map(|c| f64::from_bits(c.load(Ordering::Relaxed))),
            );
            f(row);
            self.next = if self.next + 1 == s.rows {
                0
            } else {
                self.next + 1
            };
        }
        self.read += n;
        s.read.0.store(self.read, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drained(c: &mut RowConsumer) -> Vec<Vec<f64>> {
        let mut out = Vec::new();
        c.drain(&mut Vec::new(), |r| out.push(r.to_vec()));
        out
    }

    #[test]
    fn rows_come_out_whole_in_order_across_the_end_of_the_ring() {
        let (mut p, mut c) = row_ring(3, 4);
        for k in 0..4 {
            assert!(p.try_push(&[k as f64, -1.0, f64::NAN]));
        }
        assert!(!p.try_push(&[9.0, 9.0, 9.0]), "a full ring refuses a row");
        let first = drained(&mut c);
        assert_eq!(first.len(), 4);
        assert_eq!(first[3][0], 3.0);
        assert!(first[3][2].is_nan());
        for k in 4..10 {
            if !p.try_push(&[k as f64, 0.5, 0.25]) {
                assert_eq!(drained(&mut c).len(), 4, "at row {k}");
                assert!(p.try_push(&[k as f64, 0.5, 0.25]));
            }
        }
        let rest = drained(&mut c);
        assert_eq!(rest.len(), 2);
        assert_eq!(rest[1], vec![9.0, 0.5, 0.25]);
        assert_eq!(c.waiting(), 0);
    }

    #[test]
    fn rows_cross_threads_with_their_bits() {
        let (mut p, mut c) = row_ring(2, 8);
        let writer = std::thread::spawn(move || {
            for k in 0..10_000u64 {
                let row = [
                    k as f64,
                    f64::from_bits(k.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                ];
                while !p.try_push(&row) {
                    std::thread::yield_now();
                }
            }
        });
        let mut seen = 0u64;
        while seen < 10_000 {
            for r in drained(&mut c) {
                assert_eq!(r[0], seen as f64);
                assert_eq!(r[1].to_bits(), seen.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                seen += 1;
            }
        }
        writer.join().unwrap();
    }
}
