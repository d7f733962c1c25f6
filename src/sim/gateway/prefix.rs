//! AIBrix's `prefix-cache` routing algorithm and its per-pod prefix index.
//!
//! As AIBrix's `prefix_cache.go` does it (docs/protocol.md §4.3): the prompt's bytes are cut into blocks of
//! `block_bytes` (the incomplete tail dropped) and chain-hashed with xxhash64 (seed, parent
//! hash as 8 little-endian bytes, block bytes). If the gateway's in-flight counts differ by more
//! than `imbalance_abs`, the least-loaded pod wins (`load_imbalance`). Otherwise each pod's
//! match percent is `(i+1)*100/num_blocks` for the deepest consecutive block it holds; pods are
//! sorted by match percent (descending) then load (ascending) and the first whose load is at
//! most `mean + stddev_factor * sigma` wins (`prefix_match`); if none qualifies the
//! least-loaded pod wins (`prefix_match_skipped`), and with no match at all too
//! (`least_request_fallback`). The chosen pod then owns every block hash of the prompt.

use rand::Rng;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use xxhash_rust::xxh64::Xxh64;

/// Tunables of the prefix-cache router (AIBrix's shipped manifest values by default).
#[derive(Debug, Clone, PartialEq)]
pub struct PrefixParams {
    /// Prompt bytes per hashed block (`AIBRIX_PREFIX_CACHE_BLOCK_SIZE`).
    pub block_bytes: usize,
    /// Largest tolerated max-min in-flight spread (`..._POD_RUNNING_REQUEST_IMBALANCE_ABS_COUNT`).
    pub imbalance_abs: usize,
    /// Load ceiling in standard deviations above the mean (`..._STANDARD_DEVIATION_FACTOR`).
    pub stddev_factor: f64,
    /// Most block hashes the index keeps.
    pub capacity: usize,
    /// Index entries idle longer than this are evicted.
    pub ttl: Duration,
}

impl Default for PrefixParams {
    fn default() -> Self {
        Self {
            block_bytes: 128,
            imbalance_abs: 16,
            stddev_factor: 2.0,
            capacity: 200_000,
            ttl: Duration::from_secs(20 * 60),
        }
    }
}

/// How one request was routed, for the gateway's counters.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Chosen pod index.
    pub pod: usize,
    /// `match_percent_bucket` label: `0`, `1-25`, `26-50`, `51-75`, `76-100`.
    pub bucket: &'static str,
    /// `selection` label: `prefix_match`, `prefix_match_skipped`, `least_request_fallback`.
    pub selection: &'static str,
    /// The load-imbalance shortcut was taken.
    pub imbalance: bool,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    pods: u64,
    last: Instant,
}

/// Which pods hold which prompt-block hashes.
#[derive(Debug, Default)]
pub struct PrefixIndex {
    entries: HashMap<u64, Entry>,
}

/// Chained xxhash64 block hashes of a prompt's bytes.
pub(crate) fn byte_block_hashes(text: &[u8], block_bytes: usize) -> Vec<u64> {
    let mut parent = 0u64;
    text.chunks_exact(block_bytes.max(1))
        .map(|block| {
            let mut h = Xxh64::new(0);
            h.update(&parent.to_le_bytes());
            h.update(block);
            parent = h.digest();
            parent
        })
        .collect()
}

/// The `match_percent_bucket` label of a match percent.
pub(crate) fn bucket(percent: usize) -> &'static str {
    match percent {
        0 => "0",
        1..=25 => "1-25",
        26..=50 => "26-50",
        51..=75 => "51-75",
        _ => "76-100",
    }
}

/// Index of a least-loaded pod, ties taken in turn (`turn` counts the decisions so far), so
/// an idle cluster alternates pods instead of drifting with coin flips.
pub(crate) fn least_loaded_in_turn(load: &[usize], turn: usize) -> usize {
    let min = load.iter().copied().min().unwrap_or(0);
    let ties: Vec<usize> = (0..load.len()).filter(|&i| load[i] == min).collect();
    ties.get(turn % ties.len().max(1)).copied().unwrap_or(0)
}

/// Index of a least-loaded pod, ties broken at random.
pub(crate) fn least_loaded(load: &[usize], rng: &mut impl Rng) -> usize {
    let min = load.iter().copied().min().unwrap_or(0);
    let ties: Vec<usize> = (0..load.len()).filter(|&i| load[i] == min).collect();
    ties.get(rng.random_range(0..ties.len().max(1))).copied().unwrap_or(0)
}

impl PrefixIndex {
    /// Match percent of every pod for these hashes.
    pub fn match_percents(&self, hashes: &[u64], pods: usize) -> Vec<usize> {
        let mut depth = vec![0usize; pods];
        let mut alive: u64 = if pods >= 64 { u64::MAX } else { (1u64 << pods) - 1 };
        for (i, h) in hashes.iter().enumerate() {
            alive &= self.entries.get(h).map_or(0, |e| e.pods);
            if alive == 0 {
                break;
            }
            (0..pods).filter(|p| alive & (1 << p) != 0).for_each(|p| depth[p] = i + 1);
        }
        depth.iter().map(|d| if hashes.is_empty() { 0 } else { d * 100 / hashes.len() }).collect()
    }

    /// Records that `pod` now holds every block of the prompt.
    pub fn add(&mut self, hashes: &[u64], pod: usize, now: Instant, p: &PrefixParams) {
        for h in hashes {
            let e = self.entries.entry(*h).or_insert(Entry { pods: 0, last: now });
            e.pods |= 1 << pod.min(63);
            e.last = now;
        }
        if self.entries.len() > p.capacity {
            self.evict(now, p);
        }
    }

    fn evict(&mut self, now: Instant, p: &PrefixParams) {
        self.entries.retain(|_, e| now.duration_since(e.last) <= p.ttl);
        let excess = self.entries.len().saturating_sub(p.capacity);
        if excess > 0 {
            let mut by_age: Vec<(Instant, u64)> = self.entries.iter().map(|(h, e)| (e.last, *h)).collect();
            by_age.sort_unstable();
            for (_, h) in by_age.into_iter().take(excess) {
                self.entries.remove(&h);
            }
        }
    }

    /// Routes one request (see the module docs) and updates the index, now.
    pub fn route(&mut self, hashes: &[u64], load: &[usize], p: &PrefixParams, rng: &mut impl Rng) -> Decision {
        self.route_at(Instant::now(), hashes, load, p, rng)
    }

    /// [`PrefixIndex::route`] at `now` (the gateway's clock).
    pub fn route_at(
        &mut self,
        now: Instant,
        hashes: &[u64],
        load: &[usize],
        p: &PrefixParams,
        rng: &mut impl Rng,
    ) -> Decision {
        let d = decide(self, hashes, load, p, rng);
        self.add(hashes, d.pod, now, p);
        d
    }
}

fn decide(index: &PrefixIndex, hashes: &[u64], load: &[usize], p: &PrefixParams, rng: &mut impl Rng) -> Decision {
    let fallback = |rng: &mut _, selection, bucket, imbalance| Decision {
        pod: least_loaded(load, rng),
        bucket,
        selection,
        imbalance,
    };
    let (min, max) = (load.iter().min().copied().unwrap_or(0), load.iter().max().copied().unwrap_or(0));
    if max - min > p.imbalance_abs {
        return fallback(rng, "least_request_fallback", "0", true);
    }
    let pct = index.match_percents(hashes, load.len());
    let best = pct.iter().copied().max().unwrap_or(0);
    if best == 0 {
        return fallback(rng, "least_request_fallback", "0", false);
    }
    let mean = load.iter().sum::<usize>() as f64 / load.len() as f64;
    let var = load.iter().map(|&l| (l as f64 - mean).powi(2)).sum::<f64>() / load.len() as f64;
    let ceiling = mean + p.stddev_factor * var.sqrt();
    let mut order: Vec<usize> = (0..load.len()).filter(|&i| pct[i] > 0).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(pct[i]), load[i]));
    match order.into_iter().find(|&i| load[i] as f64 <= ceiling) {
        Some(pod) => Decision { pod, bucket: bucket(pct[pod]), selection: "prefix_match", imbalance: false },
        None => fallback(rng, "prefix_match_skipped", bucket(best), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn text(family: u8, len: usize) -> Vec<u8> {
        (0..len).map(|i| b'a' + ((i as u8).wrapping_mul(7).wrapping_add(family) % 26)).collect()
    }

    #[test]
    fn hashes_cover_full_blocks_and_chain() {
        let h = byte_block_hashes(&text(1, 300), 128);
        assert_eq!(h.len(), 2);
        assert_eq!(byte_block_hashes(&text(1, 256), 128), h);
        assert_ne!(byte_block_hashes(&text(2, 300), 128)[1], h[1]);
    }

    #[test]
    fn a_family_sticks_to_its_first_pod() {
        let (mut idx, p, mut rng) = (PrefixIndex::default(), PrefixParams::default(), StdRng::seed_from_u64(3));
        let h = byte_block_hashes(&text(1, 2000), 128);
        let first = idx.route(&h, &[0, 0], &p, &mut rng);
        assert_eq!((first.selection, first.bucket), ("least_request_fallback", "0"));
        for _ in 0..10 {
            let d = idx.route(&h, &[1, 0], &p, &mut rng);
            assert_eq!((d.pod, d.selection, d.bucket), (first.pod, "prefix_match", "76-100"));
        }
    }

    #[test]
    fn partial_match_and_buckets() {
        let (mut idx, p) = (PrefixIndex::default(), PrefixParams::default());
        let h = byte_block_hashes(&text(1, 128 * 8), 128);
        idx.add(&h[..2], 1, Instant::now(), &p);
        assert_eq!(idx.match_percents(&h, 2), vec![0, 25]);
        assert_eq!(bucket(25), "1-25");
        assert_eq!(bucket(26), "26-50");
        assert_eq!(bucket(100), "76-100");
    }

    #[test]
    fn imbalance_and_overload_fall_back_to_least_loaded() {
        let (mut idx, p, mut rng) = (PrefixIndex::default(), PrefixParams::default(), StdRng::seed_from_u64(4));
        let h = byte_block_hashes(&text(3, 1000), 128);
        idx.add(&h, 0, Instant::now(), &p);
        let d = idx.route(&h, &[20, 2], &p, &mut rng);
        assert_eq!((d.pod, d.imbalance), (1, true));
        let tight = PrefixParams { stddev_factor: 0.0, imbalance_abs: 100, ..p };
        let mut fresh = PrefixIndex::default();
        fresh.add(&h, 0, Instant::now(), &tight);
        let d = fresh.route(&h, &[9, 3, 3], &tight, &mut rng);
        assert_eq!(d.selection, "prefix_match_skipped");
    }

    #[test]
    fn least_request_ties_alternate() {
        let picks: Vec<usize> = (0..6).map(|t| least_loaded_in_turn(&[0, 0], t)).collect();
        assert_eq!(picks, vec![0, 1, 0, 1, 0, 1]);
        assert_eq!(least_loaded_in_turn(&[3, 1, 1], 1), 2);
        assert_eq!(least_loaded_in_turn(&[3, 1, 2], 7), 1);
    }

    #[test]
    fn index_evicts_beyond_capacity() {
        let p = PrefixParams { capacity: 10, ..PrefixParams::default() };
        let mut idx = PrefixIndex::default();
        let t0 = Instant::now();
        idx.add(&(0..8).collect::<Vec<u64>>(), 0, t0, &p);
        idx.add(&(100..108).collect::<Vec<u64>>(), 1, t0 + Duration::from_secs(1), &p);
        assert!(idx.entries.len() <= 10);
        assert_eq!(idx.match_percents(&(100..108).collect::<Vec<u64>>(), 2), vec![0, 100]);
    }
}
