// Package httpclient is the only way this service calls other services over HTTP.
package httpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Client calls one upstream service. Retries, tracing and metrics live in transport.go.
type Client struct {
	http    *http.Client
	baseURL string
}

func New(baseURL string) *Client {
	return &Client{http: &http.Client{Timeout: 5 * time.Second, Transport: newTransport()}, baseURL: baseURL}
}

// GetJSON fetches baseURL+path and decodes the JSON response body into out.
func (c *Client) GetJSON(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.baseURL+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
