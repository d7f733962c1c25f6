//! Which slice of a sharded session this process runs (`run --shard i/N`, issue 27).

use std::fmt;
use std::str::FromStr;

/// One shard of a session split over `count` processes: shard `index` (0-based) runs its
/// slice of the plan every shard builds alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShardSpec {
    /// This shard, 0-based, below `count`.
    pub index: u32,
    /// Shards in the session, at least 1.
    pub count: u32,
}

impl ShardSpec {
    /// Shard `index` of `count`; an error unless `count >= 1` and `index < count`.
    pub fn new(index: u32, count: u32) -> Result<Self, String> {
        if count == 0 {
            return Err("a session has at least 1 shard".into());
        }
        if index >= count {
            return Err(format!("shard {index} is not below the shard count {count} (shards are 0-based)"));
        }
        Ok(Self { index, count })
    }
}

impl ShardSpec {
    /// The load slice this shard sends ([`crate::load::slice`]'s rules).
    pub fn slice(self) -> crate::load::slice::Slice {
        crate::load::slice::Slice { index: self.index, count: self.count }
    }
}

impl FromStr for ShardSpec {
    type Err = String;

    /// `i/N`, e.g. `0/4` (0-based index, shard count).
    fn from_str(s: &str) -> Result<Self, String> {
        let (i, n) = s.split_once('/').ok_or_else(|| format!("`{s}` is not i/N (e.g. 0/4)"))?;
        let num = |x: &str| x.trim().parse::<u32>().map_err(|_| format!("`{s}` is not i/N (e.g. 0/4)"));
        Self::new(num(i)?, num(n)?)
    }
}

impl fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_i_of_n() {
        let s: ShardSpec = "2/4".parse().unwrap();
        assert_eq!((s.index, s.count), (2, 4));
        assert_eq!(s.to_string(), "2/4");
    }

    #[test]
    fn refuses_out_of_range_and_malformed() {
        for bad in ["4/4", "0/0", "1", "a/2", "1/b", "-1/2", ""] {
            assert!(bad.parse::<ShardSpec>().is_err(), "{bad}");
        }
    }
}
