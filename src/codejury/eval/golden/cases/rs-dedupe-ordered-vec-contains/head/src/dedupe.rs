//! Batch de-duplication for the event ingester.

/// Returns the distinct event ids of a batch, in first-seen order.
///
/// Called on every ingest batch; a batch holds up to 50,000 events.
pub fn unique_ids(ids: &[String]) -> Vec<String> {
    let mut distinct: Vec<String> = Vec::new();
    for id in ids {
        if !distinct.contains(id) {
            distinct.push(id.clone());
        }
    }
    distinct
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_duplicates_keeping_first_seen_order() {
        let ids: Vec<String> = ["b", "a", "b", "c", "a"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(unique_ids(&ids), ["b", "a", "c"]);
    }
}
