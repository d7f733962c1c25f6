//! Paged KV cache with prefix caching: chained block hashes, ref counts and an LRU free queue.
//!
//! Modelled on vLLM V1's block pool. A block is either in use (ref count > 0) or on the free
//! queue. A free block may still carry the hash of the full prompt block it held, so a later
//! request with the same prefix can take it back (a prefix-cache hit) until an allocation
//! evicts it. Allocation takes the least recently freed block first.
//!
//! The block table grows on first use: blocks never allocated are not stored (they would sit
//! at the head of the free queue, ahead of every freed block, so they are taken first in
//! index order, exactly as in a table built up front). An idle replica of a 64-replica
//! simulator costs no table.

use std::collections::HashMap;
use xxhash_rust::xxh64::Xxh64;

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone)]
struct Block {
    refs: u32,
    hash: Option<u64>,
    prev: u32,
    next: u32,
}

/// The block pool of one replica.
#[derive(Debug)]
pub(crate) struct KvCache {
    /// Blocks allocated at least once, by id; ids `blocks.len()..capacity` are untouched.
    blocks: Vec<Block>,
    capacity: usize,
    head: u32,
    tail: u32,
    free: usize,
    cached: HashMap<u64, u32>,
}

/// Chained hashes of the full blocks of `tokens`: each block's hash covers its parent's hash
/// and its own token ids, so equal hashes mean equal prefixes.
pub(crate) fn block_hashes(tokens: &[u32], block_size: usize) -> Vec<u64> {
    let mut parent = 0u64;
    tokens
        .chunks_exact(block_size.max(1))
        .map(|block| {
            let mut h = Xxh64::new(0x6b76);
            h.update(&parent.to_le_bytes());
            for t in block {
                h.update(&t.to_le_bytes());
            }
            parent = h.digest();
            parent
        })
        .collect()
}

impl KvCache {
    /// A pool of `num_blocks` free blocks (their size in tokens is the hashes' concern:
    /// [`block_hashes`]).
    pub(crate) fn new(num_blocks: usize) -> Self {
        let capacity = num_blocks.min(NIL as usize - 1);
        Self { blocks: Vec::new(), capacity, head: NIL, tail: NIL, free: capacity, cached: HashMap::new() }
    }

    /// Total blocks in the pool.
    pub(crate) fn num_blocks(&self) -> usize {
        self.capacity
    }

    /// Blocks on the free queue (cached or not).
    pub(crate) fn num_free(&self) -> usize {
        self.free
    }

    /// Fraction of blocks in use, 0..1 (vLLM `kv_cache_usage_perc`).
    pub(crate) fn usage(&self) -> f64 {
        if self.capacity == 0 {
            return 0.0;
        }
        (self.capacity - self.free) as f64 / self.capacity as f64
    }

    /// Number of leading `hashes` whose blocks are cached (in use or free).
    pub(crate) fn cached_prefix_len(&self, hashes: &[u64]) -> usize {
        hashes.iter().take_while(|h| self.cached.contains_key(h)).count()
    }

    /// Takes a reference on the blocks of the first `n` hashes, which must be cached.
    pub(crate) fn acquire_cached(&mut self, hashes: &[u64], n: usize, out: &mut Vec<u32>) {
        for h in &hashes[..n] {
            let Some(&id) = self.cached.get(h) else { return };
            if self.blocks[id as usize].refs == 0 {
                self.unlink(id);
            }
            self.blocks[id as usize].refs += 1;
            out.push(id);
        }
    }

    /// Allocates `n` fresh blocks (all or nothing), evicting the least recently freed.
    pub(crate) fn allocate(&mut self, n: usize, out: &mut Vec<u32>) -> bool {
        if n > self.free {
            return false;
        }
        for _ in 0..n {
            if self.blocks.len() < self.capacity {
                // An untouched block: first in line, as in a table built up front.
                out.push(self.blocks.len() as u32);
                self.blocks.push(Block { refs: 1, hash: None, prev: NIL, next: NIL });
                self.free -= 1;
                continue;
            }
            let id = self.head;
            self.unlink(id);
            let block = &mut self.blocks[id as usize];
            if let Some(h) = block.hash.take()
                && self.cached.get(&h) == Some(&id)
            {
                self.cached.remove(&h);
            }
            block.refs = 1;
            out.push(id);
        }
        true
    }

    /// Names block `id` by the hash of the full prompt block it now holds.
    pub(crate) fn commit_hash(&mut self, id: u32, hash: u64) {
        let block = &mut self.blocks[id as usize];
        if block.hash.is_none() {
            block.hash = Some(hash);
            self.cached.entry(hash).or_insert(id);
        }
    }

    /// Drops one reference on each block; blocks reaching zero join the free queue, the last
    /// block of a request first, so a request's prefix is evicted last.
    pub(crate) fn release(&mut self, ids: &[u32]) {
        for &id in ids.iter().rev() {
            let block = &mut self.blocks[id as usize];
            block.refs = block.refs.saturating_sub(1);
            if block.refs == 0 {
                self.push_back(id);
            }
        }
    }

    /// Forgets every cached prefix (vLLM `/reset_prefix_cache`); blocks in use stay in use.
    pub(crate) fn reset_prefix_cache(&mut self) {
        self.cached.clear();
        for b in &mut self.blocks {
            b.hash = None;
        }
    }

    fn unlink(&mut self, id: u32) {
        let (prev, next) = (self.blocks[id as usize].prev, self.blocks[id as usize].next);
        match prev {
            NIL => self.head = next,
            p => self.blocks[p as usize].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.blocks[n as usize].prev = prev,
        }
        self.blocks[id as usize].prev = NIL;
        self.blocks[id as usize].next = NIL;
        self.free -= 1;
    }

    fn push_back(&mut self, id: u32) {
        self.blocks[id as usize].prev = self.tail;
        self.blocks[id as usize].next = NIL;
        match self.tail {
            NIL => self.head = id,
            t => self.blocks[t as usize].next = id,
        }
        self.tail = id;
        self.free += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(seed: u32, n: usize) -> Vec<u32> {
        (0..n as u32).map(|i| i.wrapping_mul(31).wrapping_add(seed)).collect()
    }

    #[test]
    fn hashes_chain_over_full_blocks_only() {
        let a = block_hashes(&prompt(1, 40), 16);
        assert_eq!(a.len(), 2);
        let mut other = prompt(1, 40);
        other[0] = 999;
        let b = block_hashes(&other, 16);
        assert_ne!(a[1], b[1], "a changed first block changes every later hash");
        assert_eq!(block_hashes(&prompt(1, 33), 16), a);
    }

    #[test]
    fn freed_prefix_is_reused_until_evicted() {
        let mut kv = KvCache::new(4);
        let hashes = block_hashes(&prompt(1, 32), 16);
        let mut blocks = Vec::new();
        assert!(kv.allocate(2, &mut blocks));
        for (id, h) in blocks.iter().zip(&hashes) {
            kv.commit_hash(*id, *h);
        }
        kv.release(&blocks);
        assert_eq!(kv.num_free(), 4);
        assert_eq!(kv.cached_prefix_len(&hashes), 2);
        let mut again = Vec::new();
        kv.acquire_cached(&hashes, 2, &mut again);
        assert_eq!(again, blocks);
        assert_eq!(kv.num_free(), 2);
        kv.release(&again);
        // Allocating every block evicts the cached ones (least recently freed first).
        let mut all = Vec::new();
        assert!(kv.allocate(4, &mut all));
        assert_eq!(kv.cached_prefix_len(&hashes), 0);
        assert!(!kv.allocate(1, &mut Vec::new()));
        assert!((kv.usage() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn shared_blocks_count_references() {
        let mut kv = KvCache::new(3);
        let hashes = block_hashes(&prompt(2, 16), 16);
        let mut a = Vec::new();
        assert!(kv.allocate(1, &mut a));
        kv.commit_hash(a[0], hashes[0]);
        let mut b = Vec::new();
        kv.acquire_cached(&hashes, 1, &mut b);
        assert_eq!(a, b);
        kv.release(&a);
        assert_eq!(kv.num_free(), 2, "still referenced by b");
        kv.release(&b);
        assert_eq!(kv.num_free(), 3);
    }

    #[test]
    fn reset_forgets_prefixes() {
        let mut kv = KvCache::new(2);
        let hashes = block_hashes(&prompt(3, 4), 4);
        let mut a = Vec::new();
        assert!(kv.allocate(1, &mut a));
        kv.commit_hash(a[0], hashes[0]);
        kv.release(&a);
        kv.reset_prefix_cache();
        assert_eq!(kv.cached_prefix_len(&hashes), 0);
    }

    #[test]
    fn the_table_grows_on_first_use_in_the_order_a_full_table_would_give() {
        let kv = KvCache::new(22_528);
        assert_eq!(
            (kv.blocks.len(), kv.num_blocks(), kv.num_free()),
            (0, 22_528, 22_528),
            "an idle replica stores no table"
        );
        let mut kv = KvCache::new(4);
        let mut a = Vec::new();
        assert!(kv.allocate(2, &mut a));
        kv.release(&a);
        let mut b = Vec::new();
        assert!(kv.allocate(3, &mut b));
        // Up front the queue would be 2, 3, then the freed 1, 0 (a request's last block first).
        assert_eq!(b, vec![2, 3, 1]);
        assert_eq!(kv.blocks.len(), 4);
        assert!(!kv.allocate(2, &mut b), "one block left");
        assert!((kv.usage() - 0.75).abs() < 1e-9);
    }
}
