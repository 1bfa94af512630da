//! Client for the Tidewater tide-prediction API.

use std::time::Duration;

use serde::Deserialize;

/// One predicted water level.
#[derive(Debug, Clone, Deserialize)]
pub struct Prediction {
    /// RFC 3339 timestamp.
    pub time: String,
    /// Height above chart datum, in metres.
    pub height_m: f64,
}

pub struct Client {
    http: reqwest::Client,
    base_url: String,
}

impl Client {
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            http: reqwest::Client::new(),
            base_url: base_url.into(),
        }
    }

    pub fn with_timeout(base_url: impl Into<String>, timeout: Duration) -> reqwest::Result<Self> {
        let http = reqwest::Client::builder().timeout(timeout).build()?;
        Ok(Self {
            http,
            base_url: base_url.into(),
        })
    }

    /// Predicted water levels at `station` for the next `hours` hours.
    pub async fn predictions(&self, station: &str, hours: u32) -> reqwest::Result<Vec<Prediction>> {
        self.http
            .get(format!("{}/stations/{station}/predictions", self.base_url))
            .query(&[("hours", hours)])
            .send()
            .await?
            .error_for_status()?
            .json()
            .await
    }
}
