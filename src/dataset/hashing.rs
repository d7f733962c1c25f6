//! A reader that hashes what passes through it (SHA-256) and counts its bytes, so a dataset is
//! fingerprinted in the same single pass that parses it.

use sha2::{Digest, Sha256};
use std::io::{self, Read};

/// Wraps `inner`, hashing every byte read.
pub(super) struct HashingReader<R> {
    inner: R,
    hash: Sha256,
    bytes: u64,
}

impl<R: Read> HashingReader<R> {
    pub(super) fn new(inner: R) -> Self {
        Self { inner, hash: Sha256::new(), bytes: 0 }
    }

    /// Reads what the parser left (trailing whitespace) and returns the length and the
    /// lower-case hex SHA-256 of everything.
    pub(super) fn finish(mut self) -> io::Result<(u64, String)> {
        io::copy(&mut self, &mut io::sink())?;
        let digest = self.hash.finalize();
        Ok((self.bytes, digest.iter().map(|b| format!("{b:02x}")).collect()))
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_sha256_of_every_byte() {
        let mut r = HashingReader::new(&b"abc"[..]);
        let mut first = [0u8; 1];
        r.read_exact(&mut first).unwrap();
        let (bytes, hex) = r.finish().unwrap();
        assert_eq!(bytes, 3);
        // FIPS 180-2's test vector for "abc".
        assert_eq!(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
