// Package geo resolves a client IP address to a country, for the VAT rules.
package geo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

const lookupURL = "https://geoip.internal.example.com/v1/lookup?ip="

// Country returns the ISO 3166-1 alpha-2 code of the country ip is located in.
func Country(ctx context.Context, ip string) (string, error) {
	resp, err := http.Get(lookupURL + url.QueryEscape(ip))
	if err != nil {
		return "", fmt.Errorf("geo lookup: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("geo lookup: %s", resp.Status)
	}
	var body struct {
		Country string `json:"country"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "", fmt.Errorf("geo lookup: %w", err)
	}
	return body.Country, nil
}
