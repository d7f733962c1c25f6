//! Fixed-capacity ring buffer holding the most recent values, e.g. for live sparklines.

/// A ring buffer that keeps the last `capacity` values pushed, dropping the oldest.
///
/// A ring created with capacity zero stays empty.
#[derive(Debug, Clone)]
pub struct Ring<T: Copy> {
    buf: Vec<T>,
    capacity: usize,
    /// Index in `buf` of the oldest value once the ring is full.
    start: usize,
}

impl<T: Copy> Ring<T> {
    /// Creates an empty ring holding at most `capacity` values.
    pub fn new(capacity: usize) -> Self {
        Self { buf: Vec::with_capacity(capacity), capacity, start: 0 }
    }

    /// Appends `value`, evicting the oldest value when full.
    pub fn push(&mut self, value: T) {
        if self.buf.len() < self.capacity {
            self.buf.push(value);
        } else if let Some(slot) = self.buf.get_mut(self.start) {
            *slot = value;
            self.start = (self.start + 1) % self.capacity;
        }
    }

    /// Number of values held (at most the capacity).
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when the ring holds no value.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Maximum number of values held.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Iterates from the oldest to the newest value.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = T> + '_ {
        let (newer, older) = self.buf.split_at(self.start);
        older.iter().chain(newer.iter()).copied()
    }

    /// The most recently pushed value.
    pub fn last(&self) -> Option<T> {
        if self.start == 0 { self.buf.last().copied() } else { self.buf.get(self.start - 1).copied() }
    }

    /// Removes every value, keeping the allocation.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.start = 0;
    }

    /// Copies the values into a new vector, oldest first.
    pub fn to_vec(&self) -> Vec<T> {
        self.iter().collect()
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn fills_then_wraps() {
        let mut r = Ring::new(3);
        assert!(r.is_empty());
        assert_eq!(r.last(), None);
        r.push(1);
        r.push(2);
        assert_eq!(r.to_vec(), vec![1, 2]);
        assert_eq!(r.last(), Some(2));
        r.push(3);
        r.push(4);
        assert_eq!(r.len(), 3);
        assert_eq!(r.to_vec(), vec![2, 3, 4]);
        assert_eq!(r.last(), Some(4));
        for v in 5..=9 {
            r.push(v);
        }
        assert_eq!(r.to_vec(), vec![7, 8, 9]);
        assert_eq!(r.iter().rev().collect::<Vec<_>>(), vec![9, 8, 7]);
        assert_eq!(r.last(), Some(9));
        assert_eq!(r.capacity(), 3);
        r.clear();
        assert!(r.is_empty());
        r.push(10);
        assert_eq!(r.to_vec(), vec![10]);
    }

    #[test]
    fn zero_capacity_stays_empty() {
        let mut r = Ring::new(0);
        r.push(1.5);
        assert!(r.is_empty());
        assert_eq!(r.last(), None);
        assert!(r.to_vec().is_empty());
    }

    #[test]
    fn capacity_one() {
        let mut r = Ring::new(1);
        r.push('a');
        r.push('b');
        assert_eq!(r.to_vec(), vec!['b']);
        assert_eq!(r.last(), Some('b'));
    }
}
