//! Chrome Native Messaging framing (SPEC N1): a 32-bit native-endian length followed by
//! that many bytes of UTF-8 JSON.
//!
//! [`FrameDecoder`] is a pure incremental decoder: feed it whatever chunks `read()` returns
//! and it yields the same frames however the byte stream was split or merged.
//!
//! Invariants:
//! - A frame whose declared length exceeds the cap is never buffered: the decoder reports
//!   [`Decoded::TooLarge`] as soon as the header is read, then discards exactly the
//!   declared number of body bytes and resumes on the next header.
//! - At end of input, [`FrameDecoder::finish`] reports a partially received frame (header
//!   or body) as [`TruncatedFrame`]; a stream that ends on a frame boundary is clean.

use thiserror::Error;

/// Largest frame the host accepts from the browser (1 MiB). Chrome allows up to 64 MiB
/// (REFERENCE §4); we set our own lower cap because no legitimate request is that big.
pub const MAX_INCOMING_FRAME: usize = 1024 * 1024;

/// Largest frame the host sends to the browser (1 MiB); Chrome closes the port above it.
pub const MAX_OUTGOING_FRAME: usize = 1024 * 1024;

/// One decoding outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// A complete frame body (not yet validated as JSON).
    Frame(Vec<u8>),
    /// A header declared a body larger than the cap; its body is being discarded.
    TooLarge {
        /// The length the header declared.
        declared_len: u64,
    },
}

/// The input ended in the middle of a frame.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("input ended inside a frame: {received} bytes of a {expected}")]
pub struct TruncatedFrame {
    /// Bytes of the unfinished header or body that did arrive.
    pub received: usize,
    /// What was still expected, in words ("4-byte header" or "N-byte body").
    pub expected: String,
}

/// A message too big to send to the browser.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("message of {len} bytes exceeds the {MAX_OUTGOING_FRAME}-byte Native Messaging limit")]
pub struct OutgoingTooLarge {
    /// Length of the JSON payload.
    pub len: usize,
}

/// Where the decoder is within the byte stream.
#[derive(Debug)]
enum DecoderState {
    /// Collecting the 4 length bytes; `filled` of them are in `bytes`.
    Header { bytes: [u8; 4], filled: usize },
    /// Collecting a body of `expected` bytes.
    Body { body: Vec<u8>, expected: usize },
    /// Skipping the body of an oversize frame; `remaining` bytes still to skip.
    Discard { remaining: u64, declared_len: u64 },
}

/// Incremental, allocation-bounded decoder for Native Messaging frames.
#[derive(Debug)]
pub struct FrameDecoder {
    /// Largest body accepted; bigger frames are reported and skipped.
    cap: usize,
    /// Current position in the stream.
    state: DecoderState,
}

impl FrameDecoder {
    /// A decoder that accepts bodies up to `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self { cap, state: DecoderState::Header { bytes: [0; 4], filled: 0 } }
    }

    /// Feeds the next chunk of input and appends every completed outcome to `out`.
    pub fn push(&mut self, mut input: &[u8], out: &mut Vec<Decoded>) {
        while !input.is_empty() {
            match &mut self.state {
                DecoderState::Header { bytes, filled } => {
                    let take = (4 - *filled).min(input.len());
                    bytes[*filled..*filled + take].copy_from_slice(&input[..take]);
                    *filled += take;
                    input = &input[take..];
                    if *filled == 4 {
                        let declared = u32::from_ne_bytes(*bytes) as u64;
                        self.state = self.after_header(declared, out);
                    }
                }
                DecoderState::Body { body, expected } => {
                    let take = (*expected - body.len()).min(input.len());
                    body.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    if body.len() == *expected {
                        out.push(Decoded::Frame(std::mem::take(body)));
                        self.state = Self::fresh_header();
                    }
                }
                DecoderState::Discard { remaining, .. } => {
                    let take = (*remaining).min(input.len() as u64);
                    *remaining -= take;
                    input = &input[take as usize..];
                    if *remaining == 0 {
                        self.state = Self::fresh_header();
                    }
                }
            }
        }
    }

    /// Declares end of input: `Err` when it cut a frame short.
    pub fn finish(&self) -> Result<(), TruncatedFrame> {
        match &self.state {
            DecoderState::Header { filled: 0, .. } => Ok(()),
            DecoderState::Header { filled, .. } => Err(TruncatedFrame { received: *filled, expected: "4-byte length header".to_owned() }),
            DecoderState::Body { body, expected } => {
                Err(TruncatedFrame { received: body.len(), expected: format!("{expected}-byte body") })
            }
            DecoderState::Discard { remaining, declared_len } => {
                Err(TruncatedFrame { received: (declared_len - remaining) as usize, expected: format!("{declared_len}-byte body") })
            }
        }
    }

    fn fresh_header() -> DecoderState {
        DecoderState::Header { bytes: [0; 4], filled: 0 }
    }

    fn after_header(&self, declared: u64, out: &mut Vec<Decoded>) -> DecoderState {
        if declared > self.cap as u64 {
            out.push(Decoded::TooLarge { declared_len: declared });
            return DecoderState::Discard { remaining: declared, declared_len: declared };
        }
        if declared == 0 {
            out.push(Decoded::Frame(Vec::new()));
            return Self::fresh_header();
        }
        DecoderState::Body { body: Vec::with_capacity(declared as usize), expected: declared as usize }
    }
}

/// Frames `payload` for the browser: native-endian length, then the bytes.
pub fn encode_frame(payload: &[u8]) -> Result<Vec<u8>, OutgoingTooLarge> {
    if payload.len() > MAX_OUTGOING_FRAME {
        return Err(OutgoingTooLarge { len: payload.len() });
    }
    let mut framed = Vec::with_capacity(payload.len() + 4);
    framed.extend_from_slice(&(payload.len() as u32).to_ne_bytes());
    framed.extend_from_slice(payload);
    Ok(framed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &[u8]) -> Vec<u8> {
        let mut v = (body.len() as u32).to_ne_bytes().to_vec();
        v.extend_from_slice(body);
        v
    }

    fn decode_in_chunks(stream: &[u8], cuts: &[usize], cap: usize) -> (Vec<Decoded>, bool) {
        let mut decoder = FrameDecoder::new(cap);
        let mut out = Vec::new();
        let mut start = 0;
        for &cut in cuts {
            decoder.push(&stream[start..cut], &mut out);
            start = cut;
        }
        decoder.push(&stream[start..], &mut out);
        (out, decoder.finish().is_ok())
    }

    /// N1: a stream of frames decodes to the same frames whether it arrives in one read,
    /// split at any single byte boundary, or split at every pair of boundaries.
    #[test]
    fn frames_split_at_every_boundary_decode_the_same() {
        let mut stream = frame(br#"{"id":"1","method":"hello","params":{}}"#);
        stream.extend(frame(b""));
        stream.extend(frame(br#"{"id":"2"}"#));
        stream.extend(frame(&[b'x'; 49])); // one byte over the cap
        stream.extend(frame(br#"[1]"#));
        let cap = 48;
        let (whole, clean) = decode_in_chunks(&stream, &[], cap);
        assert!(clean);
        assert_eq!(
            whole,
            vec![
                Decoded::Frame(br#"{"id":"1","method":"hello","params":{}}"#.to_vec()),
                Decoded::Frame(Vec::new()),
                Decoded::Frame(br#"{"id":"2"}"#.to_vec()),
                Decoded::TooLarge { declared_len: 49 },
                Decoded::Frame(b"[1]".to_vec()),
            ]
        );
        for a in 0..=stream.len() {
            assert_eq!(decode_in_chunks(&stream, &[a], cap), (whole.clone(), true), "cut {a}");
            for b in a..=stream.len() {
                assert_eq!(decode_in_chunks(&stream, &[a, b], cap), (whole.clone(), true), "cuts {a},{b}");
            }
        }
        // Byte by byte.
        let cuts: Vec<usize> = (1..stream.len()).collect();
        assert_eq!(decode_in_chunks(&stream, &cuts, cap), (whole, true));
    }

    /// N1: the end of input inside a header or a body is reported; on a boundary it is not.
    #[test]
    fn truncation_is_reported_at_every_cut_inside_a_frame() {
        let body = br#"{"id":"1"}"#;
        let stream = frame(body);
        for cut in 0..=stream.len() {
            let mut decoder = FrameDecoder::new(MAX_INCOMING_FRAME);
            let mut out = Vec::new();
            decoder.push(&stream[..cut], &mut out);
            let finished = decoder.finish();
            if cut == 0 || cut == stream.len() {
                assert!(finished.is_ok(), "cut {cut}");
            } else {
                let err = finished.expect_err("truncated");
                assert_eq!(err.received, if cut < 4 { cut } else { cut - 4 });
                assert!(out.is_empty());
            }
        }
    }

    /// An oversize frame is never buffered, and a stream cut inside its body is truncated.
    #[test]
    fn oversize_body_is_skipped_without_buffering() {
        let mut decoder = FrameDecoder::new(MAX_INCOMING_FRAME);
        let mut out = Vec::new();
        let declared = (MAX_INCOMING_FRAME + 1) as u32;
        decoder.push(&declared.to_ne_bytes(), &mut out);
        assert_eq!(out, vec![Decoded::TooLarge { declared_len: declared as u64 }]);
        decoder.push(&vec![b' '; 1000], &mut out);
        assert!(matches!(decoder.state, DecoderState::Discard { .. }));
        assert!(decoder.finish().is_err());
    }

    #[test]
    fn outgoing_frames_over_one_mebibyte_are_refused() {
        assert!(encode_frame(&vec![b'a'; MAX_OUTGOING_FRAME]).is_ok());
        assert_eq!(encode_frame(&vec![b'a'; MAX_OUTGOING_FRAME + 1]), Err(OutgoingTooLarge { len: MAX_OUTGOING_FRAME + 1 }));
        assert_eq!(encode_frame(b"{}").ok(), Some(frame(b"{}")));
    }
}
