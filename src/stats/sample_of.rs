//! A bounded uniform sample of records of any kind (algorithm R, seeded, as
//! [`super::Reservoir`] does for numbers): every record while they fit, a uniform random
//! subset of fixed size after, and the exact number offered.

use super::reservoir::splitmix;

/// At most `capacity` of the items offered, uniformly chosen, in the order they were kept.
#[derive(Debug, Clone)]
pub struct SampleOf<T> {
    held: Vec<T>,
    capacity: usize,
    seen: u64,
    rng: u64,
}

impl<T> SampleOf<T> {
    /// An empty sample keeping at most `capacity` (at least 1) items.
    pub fn new(capacity: usize) -> Self {
        Self { held: Vec::new(), capacity: capacity.max(1), seen: 0, rng: 0x2545_F491_4F6C_DD1D }
    }

    /// An empty sample keeping at most `capacity` items (0: none), drawn from `seed`, so the
    /// same stream and seed keep the same items (a dataset's sample, `dataset::sample_file`).
    pub fn seeded(capacity: usize, seed: u64) -> Self {
        Self { held: Vec::new(), capacity, seen: 0, rng: seed ^ 0x2545_F491_4F6C_DD1D }
    }

    /// Offers one item.
    pub fn push(&mut self, item: T) {
        self.seen += 1;
        if self.held.len() < self.capacity {
            self.held.push(item);
            return;
        }
        let j = splitmix(&mut self.rng) % self.seen;
        if let Some(slot) = self.held.get_mut(j as usize) {
            *slot = item;
        }
    }

    /// Items offered, kept or not.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// The kept items.
    pub fn into_vec(self) -> Vec<T> {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: usize, of: u32, seed: u64) -> Vec<u32> {
        let mut r = SampleOf::seeded(n, seed);
        (0..of).for_each(|i| r.push(i));
        assert_eq!(r.seen(), u64::from(of));
        r.into_vec()
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

    proptest::proptest! {
        #[test]
        fn a_sample_is_distinct_items_of_the_stream_seeded(n in 0usize..50, of in 0u32..500, seed: u64) {
            let s = sample(n, of, seed);
            proptest::prop_assert_eq!(s.len(), n.min(of as usize));
            let distinct: std::collections::BTreeSet<u32> = s.iter().copied().collect();
            proptest::prop_assert_eq!(distinct.len(), s.len());
            proptest::prop_assert!(s.iter().all(|&i| i < of));
            proptest::prop_assert_eq!(s, sample(n, of, seed));
        }
    }

    #[test]
    fn keeps_everything_that_fits_in_order() {
        let mut s = SampleOf::new(10);
        (0..10).for_each(|i| s.push(i));
        assert_eq!(s.seen(), 10);
        assert_eq!(s.into_vec(), (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn beyond_capacity_it_is_bounded_and_uniform() {
        let mut s = SampleOf::new(1000);
        (0..100_000u32).for_each(|i| s.push(i));
        assert_eq!(s.seen(), 100_000);
        let kept = s.into_vec();
        assert_eq!(kept.len(), 1000);
        // Each tenth of the stream holds about a tenth of the sample.
        for decile in 0..10 {
            let n = kept.iter().filter(|&&v| v / 10_000 == decile).count();
            assert!((60..=140).contains(&n), "decile {decile}: {n} of 1000");
        }
    }
}
