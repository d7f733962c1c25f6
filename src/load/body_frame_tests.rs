//! Tests of the body framing: chunked bodies split anywhere decode to the same data, and
//! agree with hyper's decoder; lengths, close-delimited bodies and bad framing.

use super::*;
use proptest::prelude::*;

/// Decodes `wire` fed in the pieces `cuts` splits it into; the data, and the bytes after the
/// body's end (None: it never ended).
fn run(mut frame: BodyFrame, wire: &[u8], cuts: &[usize]) -> Result<(Vec<u8>, Option<usize>), FrameError> {
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
    bounds.push(0);
    bounds.push(wire.len());
    bounds.sort_unstable();
    let mut out = Vec::new();
    let mut extra = 0;
    for w in bounds.windows(2) {
        let mut piece = wire[w[0]..w[1]].to_vec();
        let got = frame.decode(&mut piece)?;
        out.extend_from_slice(&piece[..got.data]);
        extra += got.extra;
    }
    Ok((out, frame.is_done().then_some(extra)))
}

/// A chunked encoding of `chunks`, with an extension on odd chunks and `trailers`.
fn encode(chunks: &[Vec<u8>], upper: bool, trailers: &[String]) -> Vec<u8> {
    let mut wire = Vec::new();
    for (i, c) in chunks.iter().filter(|c| !c.is_empty()).enumerate() {
        let size = if upper { format!("{:X}", c.len()) } else { format!("{:x}", c.len()) };
        wire.extend_from_slice(size.as_bytes());
        if i % 2 == 1 {
            wire.extend_from_slice(b";name=value");
        }
        wire.extend_from_slice(b"\r\n");
        wire.extend_from_slice(c);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"0\r\n");
    for t in trailers {
        wire.extend_from_slice(format!("x-{t}: v\r\n").as_bytes());
    }
    wire.extend_from_slice(b"\r\n");
    wire
}

/// hyper's client decoding `wire` as the chunked body of a 200 answer.
fn hyper_decodes(wire: &[u8]) -> Vec<u8> {
    use http_body_util::BodyExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let (client, mut server) = tokio::io::duplex(1 << 20);
        let mut answer = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
        answer.extend_from_slice(wire);
        // The answer once the request's head is in (hyper refuses an answer before it).
        tokio::spawn(async move {
            let mut head = Vec::new();
            let mut piece = [0u8; 256];
            while !head.ends_with(b"\r\n\r\n") {
                let n = server.read(&mut piece).await.unwrap();
                head.extend_from_slice(&piece[..n]);
            }
            server.write_all(&answer).await.unwrap();
            server
        });
        let io = hyper_util::rt::TokioIo::new(client);
        let (mut send, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
        tokio::spawn(conn);
        let req = hyper::Request::get("/").body(http_body_util::Empty::<bytes::Bytes>::new()).unwrap();
        let resp = send.send_request(req).await.unwrap();
        resp.into_body().collect().await.unwrap().to_bytes().to_vec()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn any_split_of_a_chunked_body_decodes_as_hyper_does(
        chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..12),
        upper in any::<bool>(),
        trailers in prop::collection::vec("[a-z]{1,8}", 0..3),
        cuts in prop::collection::vec(any::<usize>(), 0..20),
        tail in prop::collection::vec(any::<u8>(), 0..8),
    ) {
        let want: Vec<u8> = chunks.concat();
        let mut wire = encode(&chunks, upper, &trailers);
        let body_len = wire.len();
        prop_assert_eq!(&hyper_decodes(&wire), &want);
        wire.extend_from_slice(&tail);
        let (got, extra) = run(BodyFrame::chunked(), &wire, &cuts).unwrap();
        prop_assert_eq!(got, want);
        prop_assert_eq!(extra, Some(wire.len() - body_len));
    }

    #[test]
    fn a_length_body_ends_at_its_length(
        body in prop::collection::vec(any::<u8>(), 1..2000),
        tail in prop::collection::vec(any::<u8>(), 0..8),
        cuts in prop::collection::vec(any::<usize>(), 0..20),
    ) {
        let mut wire = body.clone();
        wire.extend_from_slice(&tail);
        let (got, extra) = run(BodyFrame::Length(body.len() as u64), &wire, &cuts).unwrap();
        prop_assert_eq!(got, body);
        prop_assert_eq!(extra, Some(tail.len()));
    }

    #[test]
    fn a_truncated_chunked_body_never_ends(
        chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..100), 1..6),
        cut in any::<usize>(),
    ) {
        let wire = encode(&chunks, false, &[]);
        let end = cut % wire.len();
        let (got, extra) = run(BodyFrame::chunked(), &wire[..end], &[]).unwrap();
        prop_assert_eq!(extra, None);
        prop_assert!(chunks.concat().starts_with(&got));
    }
}

#[test]
fn a_close_delimited_body_is_all_data() {
    let (got, extra) = run(BodyFrame::Close, b"data: x\n\n", &[3]).unwrap();
    assert_eq!(got, b"data: x\n\n");
    assert_eq!(extra, None);
}

#[test]
fn bad_chunked_framing_is_an_error() {
    for (wire, want) in [
        (&b"zz\r\nab\r\n0\r\n\r\n"[..], FrameError::ChunkSize),
        (b"\r\n", FrameError::ChunkSize),
        (b"2\nab\r\n0\r\n\r\n", FrameError::ChunkSize),
        (b"2\r\nabX\r\n0\r\n\r\n", FrameError::LineEnd),
        (b"2\r\nab\r\n0\r\n\n", FrameError::LineEnd),
        (b"11111111111111111\r\n", FrameError::ChunkSize),
    ] {
        assert_eq!(run(BodyFrame::chunked(), wire, &[]), Err(want), "{:?}", String::from_utf8_lossy(wire));
    }
}

#[test]
fn whitespace_before_an_extension_is_skipped() {
    let (got, extra) = run(BodyFrame::chunked(), b"2 ;x=y\r\nab\r\n0\r\n\r\n", &[]).unwrap();
    assert_eq!(got, b"ab");
    assert_eq!(extra, Some(0));
}
