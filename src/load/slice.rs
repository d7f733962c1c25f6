//! One shard's slice of a plan's load (`run --shard i/N`, issue 27): every shard builds the
//! same plan and keeps its part by these rules, so the shards together send exactly what one
//! process would have sent. Pure functions; `config::shard::ShardSpec` gives the slice.

/// Shard `index` (0-based) of `count`: which part of the plan's load this process sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Slice {
    /// This shard, below `count`.
    pub index: u32,
    /// Shards in the session, at least 1.
    pub count: u32,
}

impl Slice {
    /// The whole plan: one shard of one.
    pub const WHOLE: Slice = Slice { index: 0, count: 1 };

    /// True for the whole plan (no sharding).
    pub fn is_whole(self) -> bool {
        self.count <= 1
    }

    /// Closed loop: this shard's streams of `total`: floor(total / count), plus one for the
    /// first `total mod count` shards (the shares add up to `total`; 0 for a shard past them).
    pub fn share(self, total: u32) -> u32 {
        let n = self.count.max(1);
        total / n + u32::from(self.index < total % n)
    }

    /// An in-flight cap of `total` split as [`Self::share`], at least 1 so a shard with
    /// arrivals can send them.
    pub fn cap(self, total: u32) -> u32 {
        self.share(total).max(1)
    }

    /// True when arrival `k` of the one global schedule is this shard's (k mod count).
    pub fn takes(self, k: u64) -> bool {
        k % u64::from(self.count.max(1)) == u64::from(self.index)
    }

    /// How many of arrivals `0..n` are this shard's.
    pub fn count_of(self, n: u64) -> u64 {
        let c = u64::from(self.count.max(1));
        n / c + u64::from(u64::from(self.index) < n % c)
    }

    /// True for the shard that runs a plan's one-off steps (routing's priming): shard 0.
    pub fn is_first(self) -> bool {
        self.index == 0
    }
}

impl Default for Slice {
    fn default() -> Self {
        Self::WHOLE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn shards(count: u32) -> impl Iterator<Item = Slice> {
        (0..count).map(move |index| Slice { index, count })
    }

    #[test]
    fn ten_streams_over_four_shards_are_3_3_2_2() {
        let got: Vec<u32> = shards(4).map(|s| s.share(10)).collect();
        assert_eq!(got, [3, 3, 2, 2]);
        let few: Vec<u32> = shards(4).map(|s| s.share(2)).collect();
        assert_eq!(few, [1, 1, 0, 0]);
        assert_eq!(Slice { index: 3, count: 4 }.cap(2), 1, "a cap is never 0");
        assert_eq!(Slice::WHOLE.share(7), 7);
    }

    #[test]
    fn arrivals_go_round_robin() {
        let s = Slice { index: 1, count: 3 };
        let mine: Vec<u64> = (0..10).filter(|k| s.takes(*k)).collect();
        assert_eq!(mine, [1, 4, 7]);
        assert_eq!(s.count_of(10), 3);
        assert!(Slice::WHOLE.takes(5) && Slice::WHOLE.is_whole());
    }

    proptest! {
        #[test]
        fn shares_add_up_and_differ_by_at_most_one(total in 0u32..100_000, count in 1u32..64) {
            let shares: Vec<u32> = shards(count).map(|s| s.share(total)).collect();
            prop_assert_eq!(shares.iter().map(|&x| u64::from(x)).sum::<u64>(), u64::from(total));
            let (lo, hi) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
            prop_assert!(hi - lo <= 1);
            prop_assert!(shares.windows(2).all(|w| w[0] >= w[1]), "the first shards get the extra ones");
        }

        #[test]
        fn every_arrival_has_exactly_one_shard(n in 0u64..5_000, count in 1u32..64) {
            for k in 0..n {
                prop_assert_eq!(shards(count).filter(|s| s.takes(k)).count(), 1);
            }
            let counted: u64 = shards(count).map(|s| s.count_of(n)).sum();
            prop_assert_eq!(counted, n);
            for s in shards(count) {
                prop_assert_eq!(s.count_of(n), (0..n).filter(|k| s.takes(*k)).count() as u64);
            }
        }
    }
}
