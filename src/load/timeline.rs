//! A request's token timeline, stored compactly: each mark is two zigzag LEB128 varints, the
//! microseconds and the tokens since the mark before. A chunk of one token less than 64 us
//! after the previous one costs 2 bytes, one within 8 ms 3 bytes, where a [`Mark`] is 16: a
//! sustained stream's timeline grows about 6 times slower, with every mark kept exactly.
//!
//! Hot path cost of [`Timeline::push`]: two subtractions and at most a few byte pushes.

use super::sample::Mark;

/// A compact, exact sequence of [`Mark`]s; see the module documentation.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    bytes: Vec<u8>,
    len: usize,
    first: Option<Mark>,
    last: Option<Mark>,
}

fn put(out: &mut Vec<u8>, delta: i64) {
    let mut v = ((delta << 1) ^ (delta >> 63)) as u64;
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn take(bytes: &[u8], pos: &mut usize) -> i64 {
    let (mut v, mut shift) = (0u64, 0u32);
    while let Some(&b) = bytes.get(*pos) {
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            break;
        }
        shift += 7;
    }
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

impl Timeline {
    /// An empty timeline.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes room for `chunks` more marks of typical size (3 bytes each).
    pub fn reserve(&mut self, chunks: usize) {
        self.bytes.reserve(chunks.saturating_mul(3));
    }

    /// Appends one mark.
    pub fn push(&mut self, m: Mark) {
        let prev = self.last.unwrap_or(Mark { at_us: 0, tokens: 0 });
        put(&mut self.bytes, m.at_us.wrapping_sub(prev.at_us) as i64);
        put(&mut self.bytes, m.tokens.wrapping_sub(prev.tokens) as i64);
        self.first.get_or_insert(m);
        self.last = Some(m);
        self.len += 1;
    }

    /// Marks held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True without marks.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first mark.
    pub fn first(&self) -> Option<Mark> {
        self.first
    }

    /// The last mark.
    pub fn last(&self) -> Option<Mark> {
        self.last
    }

    /// The marks, oldest first.
    pub fn iter(&self) -> Iter<'_> {
        Iter { bytes: &self.bytes, pos: 0, prev: Mark { at_us: 0, tokens: 0 } }
    }

    /// Consecutive pairs of marks (what `windows(2)` gives on a slice).
    pub fn pairs(&self) -> impl Iterator<Item = (Mark, Mark)> + '_ {
        let mut it = self.iter();
        let mut prev = it.next();
        it.map(move |m| (prev.replace(m).expect("a first mark precedes"), m))
    }

    /// The same timeline with each mark's tokens replaced by `f(index, mark)`.
    pub fn map_tokens(&mut self, mut f: impl FnMut(usize, Mark) -> u64) {
        let marks: Vec<Mark> = self.iter().enumerate().map(|(i, m)| Mark { tokens: f(i, m), ..m }).collect();
        *self = marks.into_iter().collect();
    }

    /// Keeps only the first and the last mark and frees the rest.
    pub fn keep_ends(&mut self) {
        let ends: Vec<Mark> = match (self.first, self.last) {
            (Some(a), Some(b)) if self.len > 1 => vec![a, b],
            (Some(a), _) => vec![a],
            _ => Vec::new(),
        };
        *self = ends.into_iter().collect();
        self.bytes.shrink_to_fit();
    }

    /// Heap bytes held (capacity).
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
    }
}

/// The marks of a [`Timeline`], decoded in order.
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    bytes: &'a [u8],
    pos: usize,
    prev: Mark,
}

impl Iterator for Iter<'_> {
    type Item = Mark;

    fn next(&mut self) -> Option<Mark> {
        if self.pos >= self.bytes.len() {
            return None;
        }
        let dt = take(self.bytes, &mut self.pos);
        let dk = take(self.bytes, &mut self.pos);
        let m =
            Mark { at_us: self.prev.at_us.wrapping_add(dt as u64), tokens: self.prev.tokens.wrapping_add(dk as u64) };
        self.prev = m;
        Some(m)
    }
}

impl<'a> IntoIterator for &'a Timeline {
    type Item = Mark;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl FromIterator<Mark> for Timeline {
    fn from_iter<I: IntoIterator<Item = Mark>>(iter: I) -> Self {
        let mut t = Timeline::new();
        iter.into_iter().for_each(|m| t.push(m));
        t
    }
}

impl From<Vec<Mark>> for Timeline {
    fn from(marks: Vec<Mark>) -> Self {
        marks.into_iter().collect()
    }
}

impl std::fmt::Debug for Timeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks() -> Vec<Mark> {
        let mut at = 250_000u64;
        (1..=5000u64)
            .map(|i| {
                at += [40, 900, 12_000, 3, 2_000_000][(i % 5) as usize];
                Mark { at_us: at, tokens: i * 2 + i % 3 }
            })
            .collect()
    }

    #[test]
    fn every_mark_comes_back_exactly() {
        let all = marks();
        let t: Timeline = all.iter().copied().collect();
        assert_eq!(t.iter().collect::<Vec<_>>(), all);
        assert_eq!((t.len(), t.first(), t.last()), (all.len(), all.first().copied(), all.last().copied()));
        let pairs: Vec<_> = t.pairs().collect();
        let want: Vec<_> = all.windows(2).map(|w| (w[0], w[1])).collect();
        assert_eq!(pairs, want);
        // Out-of-order values (hand-made tests) survive too.
        let odd =
            vec![Mark { at_us: 10, tokens: 5 }, Mark { at_us: 3, tokens: 1 }, Mark { at_us: u64::MAX / 2, tokens: 0 }];
        assert_eq!(Timeline::from(odd.clone()).iter().collect::<Vec<_>>(), odd);
        assert_eq!(Timeline::new().pairs().count(), 0);
    }

    #[test]
    fn a_firehose_mark_takes_two_or_three_bytes() {
        let fast: Timeline = (1..=10_000u64).map(|i| Mark { at_us: 1_000 + i * 20, tokens: i }).collect();
        assert!(fast.bytes.len() <= 20_001, "20 us apart, one token each: 2 bytes a mark, {}", fast.bytes.len());
        let paced: Timeline = (1..=10_000u64).map(|i| Mark { at_us: i * 5_000, tokens: i }).collect();
        assert!(paced.bytes.len() <= 30_001, "5 ms apart: 3 bytes a mark, {}", paced.bytes.len());
    }

    #[test]
    fn tokens_can_be_rewritten_and_ends_kept() {
        let mut t: Timeline = marks().into_iter().collect();
        t.map_tokens(|i, _| i as u64 * 10);
        assert_eq!(t.last().map(|m| m.tokens), Some(49_990));
        assert_eq!(t.iter().nth(3).map(|m| m.tokens), Some(30));
        let (first, last) = (t.first(), t.last());
        t.keep_ends();
        assert_eq!(t.iter().collect::<Vec<_>>(), vec![first.unwrap(), last.unwrap()]);
        assert!(t.heap_bytes() <= 16);
    }
}
