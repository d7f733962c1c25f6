//! A uniform sample of fixed size from a stream of unknown length (Vitter's algorithm R),
//! seeded: the same stream and seed give the same sample, in a seeded random order.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// Keeps `capacity` items, each of the items offered so far equally likely to be among them.
#[derive(Debug)]
pub struct Reservoir<T> {
    items: Vec<T>,
    capacity: usize,
    seen: u64,
    rng: StdRng,
}

impl<T> Reservoir<T> {
    /// An empty reservoir of `capacity` items, drawing from `seed`.
    pub fn new(capacity: usize, seed: u64) -> Self {
        Self { items: Vec::with_capacity(capacity.min(1 << 16)), capacity, seen: 0, rng: StdRng::seed_from_u64(seed) }
    }

    /// Offers the next item of the stream.
    pub fn offer(&mut self, item: T) {
        self.seen += 1;
        if self.items.len() < self.capacity {
            self.items.push(item);
            return;
        }
        let j = self.rng.random_range(0..self.seen);
        if let Some(slot) = usize::try_from(j).ok().and_then(|j| self.items.get_mut(j)) {
            *slot = item;
        }
    }

    /// Items offered so far.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// The sample, shuffled (the reservoir alone keeps the first items in stream order).
    pub fn into_shuffled(mut self) -> Vec<T> {
        self.items.shuffle(&mut self.rng);
        self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample(n: usize, of: u32, seed: u64) -> Vec<u32> {
        let mut r = Reservoir::new(n, seed);
        (0..of).for_each(|i| r.offer(i));
        assert_eq!(r.seen(), u64::from(of));
        r.into_shuffled()
    }

    #[test]
    fn every_item_is_about_equally_likely() {
        // 4,000 samples of 10 from 100: each item expected 400 times (sd about 19).
        let mut hits = [0u32; 100];
        for seed in 0..4_000 {
            sample(10, 100, seed).into_iter().for_each(|i| hits[i as usize] += 1);
        }
        assert!(hits.iter().all(|&h| (300..500).contains(&h)), "{hits:?}");
    }

    proptest! {
        #[test]
        fn a_sample_is_distinct_items_of_the_stream_seeded(n in 0usize..50, of in 0u32..500, seed: u64) {
            let s = sample(n, of, seed);
            prop_assert_eq!(s.len(), n.min(of as usize));
            let distinct: std::collections::BTreeSet<u32> = s.iter().copied().collect();
            prop_assert_eq!(distinct.len(), s.len());
            prop_assert!(s.iter().all(|&i| i < of));
            prop_assert_eq!(s, sample(n, of, seed));
        }
    }
}
