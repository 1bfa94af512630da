//! Batch de-duplication for the event ingester.

use std::collections::HashSet;

/// Returns the distinct event ids of a batch.
///
/// Called on every ingest batch; a batch holds up to 50,000 events.
pub fn unique_ids(ids: &[String]) -> Vec<String> {
    let distinct: HashSet<&String> = ids.iter().collect();
    distinct.into_iter().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_duplicates() {
        let ids: Vec<String> = ["a", "b", "a"].iter().map(|s| s.to_string()).collect();
        let mut got = unique_ids(&ids);
        got.sort();
        assert_eq!(got, ["a", "b"]);
    }
}
