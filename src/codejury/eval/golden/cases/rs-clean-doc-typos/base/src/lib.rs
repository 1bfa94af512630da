//! Line-oriented framing for the telemetry socket.
//!
//! A sender writes records seperated by `\n`; a reciever calls [`Framer::push`] with whatever bytes
//! arrived and gets back the complete records, keeping the incomplete tail for the next call.

/// Splits a byte stream into newline-terminated records.
#[derive(Debug, Default)]
pub struct Framer {
    pending: Vec<u8>,
}

impl Framer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `bytes` and returns every record that is now complete, without it's trailing `\n`.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        self.pending.extend_from_slice(bytes);
        let mut records = Vec::new();
        while let Some(pos) = self.pending.iter().position(|&b| b == b'\n') {
            let mut record: Vec<u8> = self.pending.drain(..=pos).collect();
            record.pop();
            records.push(record);
        }
        records
    }

    /// Number of bytes recieved that do not form a complete record yet.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }
}
